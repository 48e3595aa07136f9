/**
 * The errors of the MRQA, MLQA and open-domain answer metrics (`mrqa.ts`,
 * `mlqa.ts`, `dpr.ts`, `open_answers.ts`): where the official script dies,
 * these name the question or the setting instead. Each is thrown by the plain
 * functions and is an Effect failure where a caller wraps them.
 *
 * @example
 * ```ts
 * import { UnknownLanguageError } from "./qa_errors.ts";
 * const e = new UnknownLanguageError({ lang: "el" });
 * if (!e.message.startsWith("MLQA has no normalisation for language 'el'")) throw e;
 * ```
 *
 * @module
 */
import * as Data from "effect/Data";
import type { PyRegexBudgetError } from "./pyregex_match.ts";

/** The rules a fold applies, as named in messages. */
export type AnswerRules = "MRQA" | "MLQA" | "open-domain";

/**
 * A scored question without any gold answer: the official scripts die there
 * in `max()` (`max() arg is an empty sequence`).
 *
 * @example
 * ```ts
 * import { NoAnswersError } from "./qa_errors.ts";
 * const e = new NoAnswersError({ id: "q7", index: 6, rules: "MRQA" });
 * if (!e.message.includes("q7")) throw e;
 * ```
 */
export class NoAnswersError extends Data.TaggedError("NoAnswersError")<{
  /** The question id. */
  readonly id: string;
  /** Its position in dataset order (0-based). */
  readonly index: number;
  /** The rules being applied. */
  readonly rules: AnswerRules;
}> {
  /** One line naming the question. */
  override get message(): string {
    return `question ${this.id} (#${this.index} in dataset order) has no gold answers; ` +
      `${this.rules} scoring needs at least one (the official script dies in max())`;
  }
}

/**
 * Nothing to average over (the official scripts die with
 * `ZeroDivisionError`).
 *
 * @example
 * ```ts
 * import { NothingScoredError } from "./qa_errors.ts";
 * const e = new NothingScoredError({ rules: "MLQA" });
 * if (e.message !== "no question to score; MLQA scores are undefined") throw e;
 * ```
 */
export class NothingScoredError extends Data.TaggedError("NothingScoredError")<{
  /** The rules being applied. */
  readonly rules: AnswerRules;
}> {
  /** One line saying why. */
  override get message(): string {
    return `no question to score; ${this.rules} scores are undefined`;
  }
}

/**
 * A language `mlqa_evaluation_v1.py` has no rules for (it raises
 * `Exception('Unknown Language ...')`): the XQuAD languages el, ru, th, tr, ro
 * among others.
 *
 * @example
 * ```ts
 * import { UnknownLanguageError } from "./qa_errors.ts";
 * const e = new UnknownLanguageError({ lang: "th" });
 * if (!e.message.includes("'th'")) throw e;
 * ```
 */
export class UnknownLanguageError extends Data.TaggedError("UnknownLanguageError")<{
  /** The language code given. */
  readonly lang: string;
}> {
  /** One line naming the language and the known ones. */
  override get message(): string {
    return `MLQA has no normalisation for language '${this.lang}' ` +
      "(mlqa_evaluation_v1.py knows en, es, de, ar, hi, vi, zh and raises 'Unknown Language')";
  }
}

/**
 * A teller of regex matches cut off ({@linkcode PyRegexBudgetError}: more
 * than the step budget), for `onCutOff`: each question whose pattern was cut
 * off is told once to `say`, in one line naming `file`, the question and
 * the pattern; the match counts as not matched.
 *
 * @example
 * ```ts
 * import { PyRegexBudgetError } from "./pyregex_match.ts";
 * import { cutOffTeller } from "./qa_errors.ts";
 * const lines: string[] = [];
 * const tell = cutOffTeller("trec.qa.csv", (l) => lines.push(l));
 * const e = new PyRegexBudgetError({ pattern: "(a+)+$", steps: 10, length: 41, why: "steps" });
 * tell(e, "7");
 * tell(e, "7");
 * if (lines.length !== 1 || !lines[0].startsWith('trec.qa.csv: question "7": ')) throw new Error();
 * ```
 */
export function cutOffTeller(
  file: string,
  say: (line: string) => void,
): (e: PyRegexBudgetError, id?: string) => void {
  const told = new Set<string>();
  return (e, id) => {
    const key = id ?? "";
    if (told.has(key)) return;
    told.add(key);
    const where = id === undefined ? "" : ` question ${JSON.stringify(id)}:`;
    say(`${file}:${where} ${e.message}; counted as not matched`);
  };
}
