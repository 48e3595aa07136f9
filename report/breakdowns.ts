/**
 * The groups of a report's breakdowns: a question's type by its wh-word
 * ({@linkcode questionType}; English sets only), its gold answer's length
 * in tokens ({@linkcode answerLengthBin}), and a question's F1 bin
 * ({@linkcode f1Bin}) for the F1 histograms and BEM by F1.
 *
 * @module
 */
import { answerTokens } from "../metrics/squad_text.ts";

/** The wh-words of {@linkcode questionType}, in table order, then `other`. */
export const QUESTION_TYPES = [
  "what",
  "who",
  "when",
  "where",
  "why",
  "how",
  "which",
  "other",
] as const;

/** The gold answer length bins of {@linkcode answerLengthBin}, in table order. */
export const LENGTH_BINS = ["0", "1", "2–3", "4–6", "7+"] as const;

/** The F1 histogram's bins: exactly 0, four ranges, exactly 1. */
export const F1_BINS = ["0", "0–.25", ".25–.5", ".5–.75", ".75–1", "1"] as const;

/**
 * The question's type: its first word (maximal run of ASCII letters, case
 * ignored) that is one of what, who, when, where, why, how, which; `other`
 * when there is none. Only these exact words count: "whom", "whose" and
 * "whatever" are not "who" or "what".
 *
 * @example
 * ```ts
 * import { questionType } from "./breakdowns.ts";
 * if (questionType("In which year did WHO start?") !== "which") throw new Error();
 * if (questionType("Whose idea was it?") !== "other") throw new Error();
 * if (questionType("The Broncos played who?") !== "who") throw new Error();
 * ```
 */
export function questionType(question: string): typeof QUESTION_TYPES[number] {
  for (const w of question.toLowerCase().match(/[a-z]+/g) ?? []) {
    if ((QUESTION_TYPES as readonly string[]).includes(w) && w !== "other") {
      return w as typeof QUESTION_TYPES[number];
    }
  }
  return "other";
}

/**
 * The length bin of a question's gold answer: the number of tokens of its
 * **first** gold answer after the official SQuAD normalization (lower case,
 * punctuation and the articles a/an/the removed, split on white space;
 * {@linkcode answerTokens}): `1`, `2–3`, `4–6`, `7+`, and `0` for an answer
 * that normalizes to nothing (e.g. "the") or a question without answers.
 *
 * @example
 * ```ts
 * import { answerLengthBin } from "./breakdowns.ts";
 * if (answerLengthBin(["the Denver Broncos", "Broncos"]) !== "2–3") throw new Error();
 * if (answerLengthBin(["1,000"]) !== "1") throw new Error();
 * ```
 */
export function answerLengthBin(golds: readonly string[]): typeof LENGTH_BINS[number] {
  const n = golds.length === 0 ? 0 : answerTokens(golds[0]).length;
  return n === 0 ? "0" : n === 1 ? "1" : n <= 3 ? "2–3" : n <= 6 ? "4–6" : "7+";
}

/** The F1 histogram bin of a score (see {@linkcode F1_BINS}). */
export function f1Bin(f1: number): typeof F1_BINS[number] {
  return f1 === 0
    ? "0"
    : f1 === 1
    ? "1"
    : f1 <= 0.25
    ? "0–.25"
    : f1 <= 0.5
    ? ".25–.5"
    : f1 <= 0.75
    ? ".5–.75"
    : ".75–1";
}
