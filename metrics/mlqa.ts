/**
 * MLQA's official scoring (`mlqa_evaluation_v1.py`, `facebookresearch/MLQA`),
 * which XQuAD evaluations reuse: the answer normalisation depends on the
 * answer language. `bench/reference/mlqa_eval.py` is the Python reference the
 * tests compare with digit for digit.
 *
 * `normalize_answer(s, lang)`, on CPython 3.11's string rules:
 *
 * 1. `str.lower()` (full mapping, Final_Sigma);
 * 2. delete every character of `PUNCT`: each code point whose Unicode 14.0
 *    category is `P*`, and the ASCII `string.punctuation` (which adds the
 *    symbols `$+<=>^`|~`);
 * 3. articles, replaced by a space: en `\b(a|an|the)\b`, es
 *    `un|una|unos|unas|el|la|los|las`, de
 *    `ein|eine|einen|einem|eines|einer|der|die|das|den|dem|des`, vi
 *    `của|là|cái|chiếc|những` (precomposed, as in the script; each as a whole
 *    word, where `\b` is Python's Unicode word boundary); ar: every `ال`
 *    anywhere (the script's pattern `'\sال^|ال'`, whose first branch can never
 *    match); hi and zh: none; any other language raises in the script and
 *    {@linkcode UnknownLanguageError} here (XQuAD's el, ru, th, tr, ro
 *    included);
 * 4. tokens: `str.split()` for en, es, hi, vi, de, ar; for zh the script's
 *    `mixed_segmentation`: every character of U+4E00..U+9FA5 (or of `PUNCT`)
 *    is a token of its own, the runs between are split on whitespace;
 * 5. the tokens joined by one space.
 *
 * EM compares normalised strings; F1 is the SQuAD token F1 over
 * `normalize_answer(...).split()`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mlqaNormalize } from "./mlqa.ts";
 * assert.deepEqual(mlqaNormalize("¿El Niño?", "es"), "niño");
 * assert.deepEqual(mlqaNormalize("北京大学 «x»", "zh"), "北 京 大 学 x");
 * ```
 *
 * @module
 */
import { pyFloatRepr } from "../io/pyjson.ts";
import { tokenF1 } from "./squad_scores.ts";
import { pythonLower } from "./squad_text.ts";
import { predictionLookup, type Predictions } from "./squad.ts";
import { NoAnswersError, NothingScoredError, UnknownLanguageError } from "./qa_errors.ts";
import { pyCategoryClass } from "./_py311_unicode.ts";
import type { AnswerScores } from "./mrqa.ts";

/** The languages `mlqa_evaluation_v1.py` has rules for. */
export const MLQA_LANGUAGES: readonly string[] = ["en", "es", "hi", "vi", "de", "ar", "zh"];

const ASCII_PUNCT = [..."!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"].map((c) => c.codePointAt(0)!);

let punctRe: RegExp | undefined;
let articles: Map<string, RegExp> | undefined;
let spaceRe: RegExp | undefined;

const SPACE_CLASS =
  "\\t-\\r\\x1c- \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";

function init(): void {
  punctRe = new RegExp(pyCategoryClass((c) => c[0] === "P", ASCII_PUNCT), "gv");
  const word = pyCategoryClass((c) => c[0] === "L" || c[0] === "N", [0x5f]);
  const words = (alts: string) => new RegExp(`(?<!${word})(?:${alts})(?!${word})`, "gv");
  articles = new Map([
    ["en", words("a|an|the")],
    ["es", words("un|una|unos|unas|el|la|los|las")],
    ["vi", words("c\u1ee7a|l\u00e0|c\u00e1i|chi\u1ebfc|nh\u1eefng")],
    ["de", words("ein|eine|einen|einem|eines|einer|der|die|das|den|dem|des")],
  ]);
  spaceRe = new RegExp(`[${SPACE_CLASS}]+`);
}

/** Python's `str.split()`. */
function pySplit(s: string): string[] {
  if (spaceRe === undefined) init();
  const parts = s.split(spaceRe!);
  if (parts.length > 0 && parts[parts.length - 1] === "") parts.pop();
  if (parts.length > 0 && parts[0] === "") parts.shift();
  return parts;
}

const CJK_RE = /^[\u4e00-\u9fa5]$/;

function isPunct(ch: string): boolean {
  punctRe!.lastIndex = 0;
  return punctRe!.test(ch);
}

function mixedSegmentation(text: string): string[] {
  const out: string[] = [];
  let temp = "";
  for (const ch of text) {
    if (CJK_RE.test(ch) || isPunct(ch)) {
      if (temp !== "") {
        out.push(...pySplit(temp));
        temp = "";
      }
      out.push(ch);
    } else temp += ch;
  }
  if (temp !== "") out.push(...pySplit(temp));
  return out;
}

/**
 * The script's `normalize_answer(s, lang)` (see the module notes).
 *
 * @throws {UnknownLanguageError} for a language the script has no rules for.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mlqaNormalize } from "./mlqa.ts";
 * assert.deepEqual(mlqaNormalize("Die Katze (der Hund)", "de"), "katze hund");
 * assert.deepEqual(mlqaNormalize("الكتاب", "ar"), "كتاب");
 * assert.throws(() => mlqaNormalize("x", "el"), /language 'el'/);
 * ```
 */
export function mlqaNormalize(s: string, lang: string): string {
  if (punctRe === undefined) init();
  let t = pythonLower(s).replace(punctRe!, "");
  const art = articles!.get(lang);
  if (art !== undefined) t = t.replace(art, " ");
  else if (lang === "ar") t = t.replaceAll("\u0627\u0644", " ");
  else if (lang !== "hi" && lang !== "zh") throw new UnknownLanguageError({ lang });
  const tokens = lang === "zh" ? mixedSegmentation(t) : pySplit(t);
  // `' '.join([t for t in tokens if t.strip() != ''])`
  return tokens.filter((x) => pySplit(x).length > 0).join(" ");
}

/**
 * The script's `metric_max_over_ground_truths` of `exact_match_score` and
 * `f1_score` under `lang`. `undefined` when there is no answer (where the
 * script dies in `max()`).
 *
 * @throws {UnknownLanguageError} for a language the script has no rules for.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mlqaScores } from "./mlqa.ts";
 * assert.deepEqual(mlqaScores("la casa", ["casa"], "es"), { em: 1, f1: 1 });
 * assert.deepEqual(mlqaScores("北京", ["北京大学"], "zh"), { em: 0, f1: 0.6666666666666666 });
 * ```
 */
export function mlqaScores(
  prediction: string,
  answers: readonly string[],
  lang: string,
): AnswerScores | undefined {
  if (answers.length === 0) return undefined;
  const predText = mlqaNormalize(prediction, lang);
  const pred = pySplit(predText);
  let em: 0 | 1 = 0;
  let f1 = 0;
  for (const a of answers) {
    const goldText = mlqaNormalize(a, lang);
    if (goldText === predText) em = 1;
    const f = tokenF1(pred, pySplit(goldText));
    if (f > f1) f1 = f;
  }
  return { em, f1 };
}

/** A question of an MLQA (or XQuAD) dataset. */
export interface MlqaQuestion {
  /** `qa['id']`. */
  readonly id: string;
  /** The texts of `qa['answers']`. */
  readonly answers: readonly string[];
}

/** The fold's result: what the script prints, and the counts behind it. */
export interface MlqaResult {
  /** `100.0 * exact_match / total`. */
  readonly exact_match: number;
  /** `100.0 * f1 / total`. */
  readonly f1: number;
  /** The questions (all count). */
  readonly total: number;
  /** Ids without a prediction, in dataset order (the script warns on stderr for each). */
  readonly unanswered: readonly string[];
}

/**
 * The script's `evaluate(dataset, predictions, lang)`: every question counts
 * (a missing prediction scores 0), EM and F1 summed in dataset order, then
 * `100.0 * sum / total`. The language is checked where the script checks it:
 * at the first scored answer.
 *
 * @throws {NoAnswersError} for a question with a prediction and no answer.
 * @throws {UnknownLanguageError} for a language the script has no rules for.
 * @throws {NothingScoredError} for an empty dataset (`ZeroDivisionError`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatMlqa, mlqaEvaluate } from "./mlqa.ts";
 * const r = mlqaEvaluate(
 *   [{ id: "a", answers: ["der Hund"] }, { id: "b", answers: ["Katze"] }],
 *   { a: "Hund", b: "eine Maus" },
 *   "de",
 * );
 * assert.deepEqual(formatMlqa(r), '{"exact_match": 50.0, "f1": 50.0}');
 * ```
 */
export function mlqaEvaluate(
  questions: Iterable<MlqaQuestion>,
  predictions: Predictions,
  lang: string,
): MlqaResult {
  const get = predictionLookup(predictions);
  let em = 0;
  let f1 = 0;
  let total = 0;
  const unanswered: string[] = [];
  for (const q of questions) {
    const index = total++;
    const prediction = get(q.id);
    if (prediction === undefined) {
      unanswered.push(q.id);
      continue;
    }
    const s = mlqaScores(prediction, q.answers, lang);
    if (s === undefined) throw new NoAnswersError({ id: q.id, index, rules: "MLQA" });
    em += s.em;
    f1 += s.f1;
  }
  if (total === 0) throw new NothingScoredError({ rules: "MLQA" });
  return { exact_match: (100.0 * em) / total, f1: (100.0 * f1) / total, total, unanswered };
}

/**
 * The script's output line, `json.dumps(evaluate(...))`.
 *
 * @example
 * ```ts
 * import { formatMlqa } from "./mlqa.ts";
 * const line = formatMlqa({ exact_match: 0, f1: 12.5 });
 * if (line !== '{"exact_match": 0.0, "f1": 12.5}') throw new Error(line);
 * ```
 */
export function formatMlqa(result: { readonly exact_match: number; readonly f1: number }): string {
  return `{"exact_match": ${pyFloatRepr(result.exact_match)}, "f1": ${pyFloatRepr(result.f1)}}`;
}
