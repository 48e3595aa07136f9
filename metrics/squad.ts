/**
 * The official SQuAD scoring rules (v1.1 `evaluate-v1.1.py` and v2.0
 * `evaluate-v2.0.py`), reproduced number for number: answer normalisation,
 * exact match, token F1, and folds that consume questions in dataset order and
 * print exactly what the official scripts print.
 *
 * The official scripts run on CPython, whose string rules are not
 * JavaScript's. This module follows CPython 3.11 (Unicode 14.0) everywhere:
 *
 * - `str.lower()` is `String.prototype.toLowerCase()` (same full mapping and
 *   the same Final_Sigma rule) except for code points that this JavaScript
 *   engine knows from a newer Unicode version and CPython 3.11 does not
 *   (see {@linkcode PY311_INERT_RANGES}); those are handled on a slow path.
 * - `\b` in `re.sub(r'\b(a|an|the)\b', ' ', text)` is Unicode-aware in Python
 *   (a word character is `str.isalnum()` or `_`), while JavaScript's `\b` is
 *   ASCII-only: explicit look-arounds over `[\p{L}\p{N}_]` minus the newer
 *   code points are used instead.
 * - `str.split()` splits on `str.isspace()` characters, which include
 *   U+001C..U+001F and U+0085 and exclude U+FEFF, U+200B and U+180E, unlike
 *   JavaScript's `\s`.
 *
 * Pure-ASCII strings take a fast path with the same results.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatV1, SquadV1Accumulator } from "./squad.ts";
 * const acc = new SquadV1Accumulator();
 * acc.add({ id: "q1", answers: ["Denver Broncos"] }, "the Denver Broncos");
 * acc.add({ id: "q2", answers: ["1999", "in 1999"] }, "1998 or 1999");
 * assert.deepEqual(formatV1(acc.result()), '{"exact_match": 50.0, "f1": 75.0}');
 * ```
 *
 * @module
 */

import { Data, Effect } from "effect";
import { pyFloatRepr, pyNumberText, RawNumber } from "../io/pyjson.ts";

// ---------------------------------------------------------------------------
// Python 3.11 character classes
// ---------------------------------------------------------------------------

// BEGIN GENERATED: tests/fixtures/gen_squad_unicode.ts
/**
 * Inclusive code point ranges `[lo0, hi0, lo1, hi1, ...]` on which this
 * JavaScript engine (V8 15.0, Deno 2.9.6) and CPython 3.11 (Unicode 14.0)
 * disagree about `lower()`, the Final_Sigma context classes, or `\w`.
 * CPython treats every one of them as an unassigned character: it lowers to
 * itself, is no word character, no space, and neither cased nor
 * case-ignorable, except those listed in {@linkcode PY311_CASE_IGNORABLE}.
 * Regenerate with `deno run -A tests/fixtures/gen_squad_unicode.ts`.
 */
// deno-fmt-ignore
export const PY311_INERT_RANGES: readonly number[] = [
  0x897, 0x897, 0xece, 0xece, 0x1c89, 0x1c8a, 0xa7cb, 0xa7cd, 0xa7da, 0xa7dc,
  0x105c0, 0x105f3, 0x10d40, 0x10d65, 0x10d69, 0x10d6d, 0x10d6f, 0x10d85,
  0x10ec2, 0x10ec4, 0x10efc, 0x10eff, 0x1123f, 0x11241, 0x11380, 0x11389,
  0x1138b, 0x1138b, 0x1138e, 0x1138e, 0x11390, 0x113b5, 0x113b7, 0x113b7,
  0x113bb, 0x113c0, 0x113ce, 0x113ce, 0x113d0, 0x113d3, 0x113e1, 0x113e2,
  0x116d0, 0x116e3, 0x1171e, 0x1171e, 0x11bc0, 0x11be0, 0x11bf0, 0x11bf9,
  0x11f00, 0x11f02, 0x11f04, 0x11f10, 0x11f12, 0x11f33, 0x11f36, 0x11f3a,
  0x11f40, 0x11f40, 0x11f42, 0x11f42, 0x11f50, 0x11f5a, 0x1342f, 0x1342f,
  0x13439, 0x13455, 0x13460, 0x143fa, 0x16100, 0x16129, 0x1612d, 0x16139,
  0x16d40, 0x16d6c, 0x16d70, 0x16d79, 0x18cff, 0x18cff, 0x1b132, 0x1b132,
  0x1b155, 0x1b155, 0x1ccf0, 0x1ccf9, 0x1d2c0, 0x1d2d3, 0x1df25, 0x1df2a,
  0x1e030, 0x1e06d, 0x1e08f, 0x1e08f, 0x1e4d0, 0x1e4f9, 0x1e5d0, 0x1e5fa,
  0x2b739, 0x2b739, 0x2ebf0, 0x2ee5d, 0x31350, 0x323af,
];

/**
 * Code points of {@linkcode PY311_INERT_RANGES} that CPython 3.11 treats as
 * case-ignorable in the Final_Sigma rule (U+1171E was `Mn` in Unicode 14.0).
 */
export const PY311_CASE_IGNORABLE: readonly number[] = [0x1171e];
// END GENERATED

const hex = (cp: number): string => `\\u{${cp.toString(16)}}`;

function rangesClass(ranges: readonly number[]): string {
  let out = "";
  for (let i = 0; i < ranges.length; i += 2) {
    out += ranges[i] === ranges[i + 1] ? hex(ranges[i]) : `${hex(ranges[i])}-${hex(ranges[i + 1])}`;
  }
  return out;
}

const INERT_CLASS = rangesClass(PY311_INERT_RANGES);
/** Python's `\w` for `str` patterns (set subtraction needs the `v` flag). */
const PY_WORD_CLASS = `[[\\p{L}\\p{N}_]--[${INERT_CLASS}]]`;
const PY_WORD_RE = new RegExp(`^${PY_WORD_CLASS}$`, "v");
const INERT_RE = new RegExp(`[${INERT_CLASS}]`, "u");
const INERT_ONE_RE = new RegExp(`^[${INERT_CLASS}]$`, "u");
const PY_IGNORABLE_EXTRA: ReadonlySet<number> = new Set(PY311_CASE_IGNORABLE);
const CASE_IGNORABLE_RE = /^\p{Case_Ignorable}$/u;
const CASED_RE = /^\p{Cased}$/u;

/** Python `str.isspace()` characters, as a character class body. */
const PY_SPACE_CLASS =
  "\\t-\\r\\x1c- \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const PY_SPACE_RE = new RegExp(`^[${PY_SPACE_CLASS}]$`);

/**
 * Whether CPython 3.11's `re` treats the code point as a word character
 * (`\w` for a `str` pattern: `str.isalnum()` or `_`). Marks (Mn, Mc) are not.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isPythonWordChar } from "./squad.ts";
 * assert.deepEqual(isPythonWordChar(0xe9), true); // "é"
 * assert.deepEqual(isPythonWordChar(0x301), false); // combining acute accent
 * ```
 */
export function isPythonWordChar(cp: number): boolean {
  return PY_WORD_RE.test(String.fromCodePoint(cp));
}

/**
 * Whether CPython's `str.isspace()` is true for the code point, i.e. whether
 * `str.split()` splits there.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isPythonSpace } from "./squad.ts";
 * assert.deepEqual(isPythonSpace(0x85), true);
 * assert.deepEqual(isPythonSpace(0xfeff), false);
 * ```
 */
export function isPythonSpace(cp: number): boolean {
  return PY_SPACE_RE.test(String.fromCodePoint(cp));
}

/** Final_Sigma context classes of a code point. */
const CaseClass = { Other: 0, Ignorable: 1, Cased: 2 } as const;
type CaseClass = typeof CaseClass[keyof typeof CaseClass];

function caseClass(ch: string, cp: number): CaseClass {
  if (PY_IGNORABLE_EXTRA.has(cp)) return CaseClass.Ignorable;
  if (INERT_ONE_RE.test(ch)) return CaseClass.Other;
  if (CASE_IGNORABLE_RE.test(ch)) return CaseClass.Ignorable;
  return CASED_RE.test(ch) ? CaseClass.Cased : CaseClass.Other;
}

/** CPython's `handle_capital_sigma` over code points. */
function isFinalSigma(cps: readonly string[], i: number): boolean {
  let j = i - 1;
  let cls: CaseClass = CaseClass.Other;
  for (; j >= 0; j--) {
    cls = caseClass(cps[j], cps[j].codePointAt(0)!);
    if (cls !== CaseClass.Ignorable) break;
  }
  if (j < 0 || cls !== CaseClass.Cased) return false;
  for (j = i + 1; j < cps.length; j++) {
    cls = caseClass(cps[j], cps[j].codePointAt(0)!);
    if (cls !== CaseClass.Ignorable) break;
  }
  return j === cps.length || cls !== CaseClass.Cased;
}

function slowLower(s: string): string {
  const cps = Array.from(s);
  let out = "";
  for (let i = 0; i < cps.length; i++) {
    const ch = cps[i];
    const cp = ch.codePointAt(0)!;
    if (cp === 0x3a3) out += isFinalSigma(cps, i) ? "\u03c2" : "\u03c3";
    else if (INERT_ONE_RE.test(ch)) out += ch;
    else out += ch.toLowerCase();
  }
  return out;
}

/**
 * CPython 3.11's `str.lower()`: full lower-case mapping (`"İ"` becomes
 * `"i̇"`), Final_Sigma (`"ΟΔΟΣ"` becomes `"οδος"`), no locale.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pythonLower } from "./squad.ts";
 * assert.deepEqual(pythonLower("ΟΔΟΣ ẞ"), "οδος ß");
 * assert.deepEqual(pythonLower("\u{1C89}"), "\u{1C89}"); // unassigned in Unicode 14.0
 * ```
 */
export function pythonLower(s: string): string {
  return INERT_RE.test(s) ? slowLower(s) : s.toLowerCase();
}

// ---------------------------------------------------------------------------
// Normalisation
// ---------------------------------------------------------------------------

const ASCII_RE = /^[\0-\x7f]*$/;
/** Python's `string.punctuation`. */
const PUNCT_RE = /[!-\/:-@\[-`{-~]/g;
/** In a lower-cased ASCII string, JavaScript's `\b` is Python's. */
const ARTICLES_ASCII_RE = /\b(?:a|an|the)\b/g;
const ARTICLES_RE = new RegExp(
  `(?<!${PY_WORD_CLASS})(?:a|an|the)(?!${PY_WORD_CLASS})`,
  "gv",
);
// deno-lint-ignore no-control-regex -- U+001C..U+001F are Python spaces
const SPLIT_ASCII_RE = /[\t-\r\x1c- ]+/;
const SPLIT_RE = new RegExp(`[${PY_SPACE_CLASS}]+`);

function splitPython(text: string, re: RegExp): string[] {
  const parts = text.split(re);
  if (parts.length > 0 && parts[parts.length - 1] === "") parts.pop();
  if (parts.length > 0 && parts[0] === "") parts.shift();
  return parts;
}

/**
 * The tokens of `normalize_answer(s)`, i.e. Python's
 * `normalize_answer(s).split()`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { answerTokens } from "./squad.ts";
 * assert.deepEqual(answerTokens("The  Denver\u00a0Broncos!"), ["denver", "broncos"]);
 * ```
 */
export function answerTokens(s: string): string[] {
  if (ASCII_RE.test(s)) {
    const t = s.toLowerCase().replace(PUNCT_RE, "").replace(
      ARTICLES_ASCII_RE,
      " ",
    );
    return splitPython(t, SPLIT_ASCII_RE);
  }
  const t = pythonLower(s).replace(PUNCT_RE, "").replace(ARTICLES_RE, " ");
  return splitPython(t, SPLIT_RE);
}

/**
 * The official `normalize_answer`: lower case, drop ASCII punctuation, replace
 * the articles `a`, `an`, `the` (as whole Unicode words) by a space, collapse
 * whitespace.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { normalizeAnswer } from "./squad.ts";
 * assert.deepEqual(normalizeAnswer("The Denver Broncos!"), "denver broncos");
 * assert.deepEqual(normalizeAnswer("éthe an_ the\u0301"), "éthe \u0301");
 * ```
 */
export function normalizeAnswer(s: string): string {
  return answerTokens(s).join(" ");
}

/** Number of tokens two token lists share, as a multiset intersection. */
function commonCount(
  pred: readonly string[],
  gold: readonly string[],
): number {
  if (pred.length === 0 || gold.length === 0) return 0;
  if (pred.length === 1) return gold.includes(pred[0]) ? 1 : 0;
  const counts = new Map<string, number>();
  for (const t of gold) counts.set(t, (counts.get(t) ?? 0) + 1);
  let same = 0;
  for (const t of pred) {
    const c = counts.get(t);
    if (c !== undefined && c > 0) {
      counts.set(t, c - 1);
      same++;
    }
  }
  return same;
}

/** F1 from token lists, in the official float order. */
function tokenF1(pred: readonly string[], gold: readonly string[]): number {
  const same = commonCount(pred, gold);
  if (same === 0) return 0;
  const precision = same / pred.length;
  const recall = same / gold.length;
  return (2 * precision * recall) / (precision + recall);
}

/**
 * The official v1.1 `exact_match_score`: normalised strings are equal.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { exactMatchScore } from "./squad.ts";
 * assert.deepEqual(exactMatchScore("the Broncos.", "Broncos"), true);
 * ```
 */
export function exactMatchScore(prediction: string, groundTruth: string): boolean {
  return normalizeAnswer(prediction) === normalizeAnswer(groundTruth);
}

/**
 * The official v1.1 `f1_score` over normalised tokens (0 when no token is
 * shared, even if both normalise to nothing).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { f1Score } from "./squad.ts";
 * assert.deepEqual(f1Score("Denver Broncos win", "Broncos"), 0.5);
 * assert.deepEqual(f1Score("the", "a"), 0);
 * ```
 */
export function f1Score(prediction: string, groundTruth: string): number {
  return tokenF1(answerTokens(prediction), answerTokens(groundTruth));
}

/**
 * The official `metric_max_over_ground_truths`: the largest score (the first
 * one on ties, as Python's `max`). Python raises `ValueError` for an empty
 * list; this returns `undefined` instead.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { f1Score, metricMaxOverGroundTruths } from "./squad.ts";
 * metricMaxOverGroundTruths(f1Score, "Broncos", ["Panthers", "Denver Broncos"]);
 * // 0.6666666666666666
 * assert.deepEqual(metricMaxOverGroundTruths(f1Score, "Broncos", []), undefined);
 * ```
 */
export function metricMaxOverGroundTruths<T extends number | boolean>(
  metric: (prediction: string, groundTruth: string) => T,
  prediction: string,
  groundTruths: readonly string[],
): T | undefined {
  let best: T | undefined;
  for (const g of groundTruths) {
    const s = metric(prediction, g);
    if (best === undefined || s > best) best = s;
  }
  return best;
}

/**
 * The official v2.0 `compute_exact(a_gold, a_pred)` (note the argument order
 * of the official script: gold first).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { computeExact } from "./squad.ts";
 * assert.deepEqual(computeExact("", "an"), 1); // both normalise to ""
 * ```
 */
export function computeExact(aGold: string, aPred: string): 0 | 1 {
  return normalizeAnswer(aGold) === normalizeAnswer(aPred) ? 1 : 0;
}

/** v2 F1 from token lists. */
function tokenF1V2(gold: readonly string[], pred: readonly string[]): number {
  if (gold.length === 0 || pred.length === 0) {
    return gold.length === pred.length ? 1 : 0;
  }
  return tokenF1(pred, gold);
}

/**
 * The official v2.0 `compute_f1(a_gold, a_pred)`: when either side has no
 * tokens, 1 if both have none and 0 otherwise; else the v1.1 token F1.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { computeF1 } from "./squad.ts";
 * assert.deepEqual(computeF1("", "the"), 1);
 * assert.deepEqual(computeF1("Broncos", ""), 0);
 * assert.deepEqual(computeF1("Denver Broncos", "Broncos"), 0.6666666666666666);
 * ```
 */
export function computeF1(aGold: string, aPred: string): number {
  return tokenF1V2(answerTokens(aGold), answerTokens(aPred));
}

/**
 * The v2.0 gold answers of a question: the texts whose normalisation is not
 * empty, or `[""]` when there is none (an unanswerable question).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { goldAnswersV2 } from "./squad.ts";
 * assert.deepEqual(goldAnswersV2(["The", "Broncos"]), ["Broncos"]);
 * assert.deepEqual(goldAnswersV2([]), [""]);
 * ```
 */
export function goldAnswersV2(answers: readonly string[]): string[] {
  const out = answers.filter((a) => answerTokens(a).length > 0);
  return out.length > 0 ? out : [""];
}

// ---------------------------------------------------------------------------
// Errors and messages
// ---------------------------------------------------------------------------

/**
 * A question without any gold answer under the v1.1 rules (the official
 * script dies there with `max() arg is an empty sequence`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { NoGoldAnswersError, SquadV1Accumulator } from "./squad.ts";
 * assert.throws(
 *   () => new SquadV1Accumulator().add({ id: "q9", answers: [] }, "x"),
 *   (e) => e instanceof NoGoldAnswersError && e.id === "q9",
 * );
 * ```
 */
export class NoGoldAnswersError extends Data.TaggedError("NoGoldAnswersError")<{
  /** The question id. */
  readonly id: string;
  /** Position of the question in dataset order (0-based). */
  readonly index: number;
}> {
  /** One line naming the question. */
  override get message(): string {
    return `question ${this.id} (#${this.index} in dataset order) has no gold answers; SQuAD v1.1 scoring needs at least one`;
  }
}

/**
 * Nothing to average over: no question (v1.1) or no scored question (v2.0);
 * the official scripts die with `ZeroDivisionError`.
 *
 * @example
 * ```ts
 * import { EmptyDatasetError } from "./squad.ts";
 * const m = new EmptyDatasetError({ rules: "v1.1" }).message;
 * if (m !== "the dataset has no questions; SQuAD v1.1 scores are undefined") throw new Error(m);
 * ```
 */
export class EmptyDatasetError extends Data.TaggedError("EmptyDatasetError")<{
  /** Which rules were being applied. */
  readonly rules: "v1.1" | "v2.0";
}> {
  /** One line saying why. */
  override get message(): string {
    return this.rules === "v1.1"
      ? "the dataset has no questions; SQuAD v1.1 scores are undefined"
      : "no question has a prediction; SQuAD v2.0 scores are undefined";
  }
}

/**
 * A v2.0 question with a prediction but no entry in the no-answer probability
 * map (the official script dies with `KeyError`).
 *
 * @example
 * ```ts
 * import { MissingNaProbError } from "./squad.ts";
 * const m = new MissingNaProbError({ id: "q1" }).message;
 * if (!m.includes("q1")) throw new Error(m);
 * ```
 */
export class MissingNaProbError extends Data.TaggedError("MissingNaProbError")<{
  /** The question id. */
  readonly id: string;
}> {
  /** One line naming the question. */
  override get message(): string {
    return `question ${this.id} has a prediction but no no-answer probability`;
  }
}

/**
 * The official v1.1 stderr line for a question without prediction.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { unansweredMessage } from "./squad.ts";
 * assert.deepEqual(unansweredMessage("q1"), "Unanswered question q1 will receive score 0.");
 * ```
 */
export function unansweredMessage(id: string): string {
  return `Unanswered question ${id} will receive score 0.`;
}

/**
 * The official v2.0 line for a question without prediction (the official
 * script prints it to stdout; phraseval prints it to stderr).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { missingPredictionMessage } from "./squad.ts";
 * assert.deepEqual(missingPredictionMessage("q1"), "Missing prediction for q1");
 * ```
 */
export function missingPredictionMessage(id: string): string {
  return `Missing prediction for ${id}`;
}

/**
 * The official v1.1 stderr line for a dataset whose `version` is not `1.1`
 * (a warning: scoring goes on).
 *
 * @example
 * ```ts
 * import { versionMismatchMessage } from "./squad.ts";
 * const m = versionMismatchMessage("2.0");
 * if (m !== "Evaluation expects v-1.1, but got dataset with v-2.0") throw new Error(m);
 * ```
 */
export function versionMismatchMessage(version: string): string {
  return `Evaluation expects v-1.1, but got dataset with v-${version}`;
}

// ---------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------

/** One SQuAD question as the scorers need it: its id and gold answer texts. */
export interface ScoredQuestion {
  /** The SQuAD `id`. */
  readonly id: string;
  /** The `text` of every entry of `answers`, in order (duplicates kept). */
  readonly answers: readonly string[];
}

/**
 * Predictions by question id: a `Map`, a plain object (own keys only, so
 * `"constructor"` is not found by accident) or a lookup function.
 */
export type Predictions =
  | ReadonlyMap<string, string>
  | Readonly<Record<string, string>>
  | ((id: string) => string | undefined);

/**
 * A lookup function over {@linkcode Predictions}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { predictionLookup } from "./squad.ts";
 * const get = predictionLookup({ q1: "Broncos" });
 * assert.deepEqual(get("q1"), "Broncos");
 * assert.deepEqual(get("toString"), undefined);
 * ```
 */
export function predictionLookup(
  predictions: Predictions,
): (id: string) => string | undefined {
  if (typeof predictions === "function") return predictions;
  if (predictions instanceof Map) return (id) => predictions.get(id);
  const rec = predictions as Readonly<Record<string, string>>;
  return (id) => Object.hasOwn(rec, id) ? rec[id] : undefined;
}

/** Runs `f`, turning a thrown error of class `E` into a typed failure. */
function attempt<A, E>(
  f: () => A,
  isE: (u: unknown) => u is E,
): Effect.Effect<A, E> {
  return Effect.suspend(() => {
    try {
      return Effect.succeed(f());
    } catch (u) {
      if (isE(u)) return Effect.fail(u);
      throw u;
    }
  });
}

const isNoGold = (u: unknown): u is NoGoldAnswersError => u instanceof NoGoldAnswersError;
const isEmpty = (u: unknown): u is EmptyDatasetError => u instanceof EmptyDatasetError;
const isV2Error = (u: unknown): u is MissingNaProbError | EmptyDatasetError =>
  u instanceof MissingNaProbError || u instanceof EmptyDatasetError;

// ---------------------------------------------------------------------------
// v1.1 fold
// ---------------------------------------------------------------------------

/** The score of one question under the v1.1 rules. */
export interface PerQuestionScore {
  /** The question id. */
  readonly id: string;
  /** Whether a prediction was given (otherwise both scores are 0). */
  readonly answered: boolean;
  /** Exact match against the best gold answer. */
  readonly exactMatch: boolean;
  /** The best F1 over the gold answers (0..1). */
  readonly f1: number;
  /**
   * The first gold answer with the highest `(f1, exact match)`; `undefined`
   * when unanswered.
   */
  readonly reference: string | undefined;
}

/** The v1.1 summary (percentages, as the official script prints them). */
export interface SquadV1Result {
  /** `100 * exact matches / total`. */
  readonly exact_match: number;
  /** `100 * sum of F1 / total`. */
  readonly f1: number;
  /** Questions in the dataset (each occurrence counts). */
  readonly total: number;
  /** Questions that had a prediction. */
  readonly answered: number;
}

/**
 * Scores questions one by one in dataset order under the official v1.1 rules:
 * every question counts in the total; one without prediction scores 0.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatV1, SquadV1Accumulator, unansweredMessage } from "./squad.ts";
 * const acc = new SquadV1Accumulator();
 * const row = acc.add({ id: "q1", answers: ["Broncos"] }, undefined);
 * if (!row.answered) console.error(unansweredMessage(row.id));
 * acc.add({ id: "q2", answers: ["Carolina Panthers"] }, "Panthers");
 * assert.deepEqual(formatV1(acc.result()), '{"exact_match": 0.0, "f1": 33.33333333333333}');
 * ```
 */
export class SquadV1Accumulator {
  #total = 0;
  #answered = 0;
  #exact = 0;
  #f1 = 0;

  /** Questions added so far. */
  get total(): number {
    return this.#total;
  }

  /** Questions added so far that had a prediction. */
  get answered(): number {
    return this.#answered;
  }

  /** Exact matches so far (an integer count). */
  get exactMatchCount(): number {
    return this.#exact;
  }

  /** Sum of per-question F1 so far, added in dataset order. */
  get f1Sum(): number {
    return this.#f1;
  }

  /**
   * Scores one question and adds it to the totals.
   *
   * @throws {NoGoldAnswersError} when the question has a prediction and no
   * gold answer (nothing is added then).
   */
  add(question: ScoredQuestion, prediction: string | undefined): PerQuestionScore {
    const index = this.#total;
    if (prediction === undefined) {
      this.#total++;
      return {
        id: question.id,
        answered: false,
        exactMatch: false,
        f1: 0,
        reference: undefined,
      };
    }
    const golds = question.answers;
    if (golds.length === 0) {
      throw new NoGoldAnswersError({ id: question.id, index });
    }
    const predTokens = answerTokens(prediction);
    const predText = predTokens.join(" ");
    let bestF1 = -1;
    let bestEm = false;
    let anyEm = false;
    let reference = golds[0];
    for (let i = 0; i < golds.length; i++) {
      const goldTokens = answerTokens(golds[i]);
      const em = goldTokens.join(" ") === predText;
      const f1 = tokenF1(predTokens, goldTokens);
      if (em) anyEm = true;
      if (f1 > bestF1 || (f1 === bestF1 && em && !bestEm)) {
        bestF1 = f1;
        bestEm = em;
        reference = golds[i];
      }
    }
    this.#total++;
    this.#answered++;
    if (anyEm) this.#exact++;
    this.#f1 += bestF1;
    return {
      id: question.id,
      answered: true,
      exactMatch: anyEm,
      f1: bestF1,
      reference,
    };
  }

  /**
   * Adds a chunk of questions (for `Stream.runForEachArray`), failing with a
   * typed error at the first question without gold answers.
   */
  addAll(
    questions: Iterable<ScoredQuestion>,
    predictions: Predictions,
    onRow?: (row: PerQuestionScore) => void,
  ): Effect.Effect<void, NoGoldAnswersError> {
    const get = predictionLookup(predictions);
    return attempt(() => {
      for (const q of questions) {
        const row = this.add(q, get(q.id));
        if (onRow) onRow(row);
      }
    }, isNoGold);
  }

  /**
   * The summary: `100.0 * em / total`, `100.0 * f1 / total`.
   *
   * @throws {EmptyDatasetError} when no question was added.
   */
  result(): SquadV1Result {
    if (this.#total === 0) throw new EmptyDatasetError({ rules: "v1.1" });
    return {
      exact_match: (100.0 * this.#exact) / this.#total,
      f1: (100.0 * this.#f1) / this.#total,
      total: this.#total,
      answered: this.#answered,
    };
  }

  /** {@linkcode SquadV1Accumulator.result} as an Effect. */
  summary(): Effect.Effect<SquadV1Result, EmptyDatasetError> {
    return attempt(() => this.result(), isEmpty);
  }
}

/**
 * Python's `json.dumps({'exact_match': ..., 'f1': ...})`, the official v1.1
 * output line.
 *
 * @example
 * ```ts
 * import { formatV1 } from "./squad.ts";
 * const line = formatV1({ exact_match: 100, f1: 100, total: 1, answered: 1 });
 * if (line !== '{"exact_match": 100.0, "f1": 100.0}') throw new Error(line);
 * ```
 */
export function formatV1(result: SquadV1Result): string {
  return `{"exact_match": ${pyFloatRepr(result.exact_match)}, "f1": ${pyFloatRepr(result.f1)}}`;
}

/**
 * Scores a whole dataset under the v1.1 rules.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Effect } from "effect";
 * import { evaluateV1, formatV1 } from "./squad.ts";
 * const r = await Effect.runPromise(
 *   evaluateV1([{ id: "q1", answers: ["Broncos"] }], { q1: "broncos" }),
 * );
 * assert.deepEqual(formatV1(r), '{"exact_match": 100.0, "f1": 100.0}');
 * ```
 */
export function evaluateV1(
  questions: Iterable<ScoredQuestion>,
  predictions: Predictions,
  onRow?: (row: PerQuestionScore) => void,
): Effect.Effect<SquadV1Result, NoGoldAnswersError | EmptyDatasetError> {
  return Effect.suspend(() => {
    const acc = new SquadV1Accumulator();
    return Effect.flatMap(
      acc.addAll(questions, predictions, onRow),
      () => acc.summary(),
    );
  });
}

// ---------------------------------------------------------------------------
// v2.0 fold
// ---------------------------------------------------------------------------

/** The score of one question under the v2.0 rules (before thresholding). */
export interface PerQuestionScoreV2 {
  /** The question id. */
  readonly id: string;
  /** Whether a prediction was given (otherwise it is not scored at all). */
  readonly answered: boolean;
  /** Whether the question has any gold answer (`bool(qa['answers'])`). */
  readonly hasAns: boolean;
  /** Raw exact match, 0 or 1. */
  readonly exact: 0 | 1;
  /** Raw F1 (0..1). */
  readonly f1: number;
  /**
   * The first v2.0 gold answer (see {@linkcode goldAnswersV2}) with the
   * highest `(f1, exact)`; `undefined` when unanswered.
   */
  readonly reference: string | undefined;
}

/** A no-answer probability: a number, or its JSON text (keeps `1` vs `1.0`). */
export type NaProb = number | RawNumber;

/** Options of {@linkcode SquadV2Accumulator}. */
export interface SquadV2Options {
  /**
   * No-answer probabilities by question id, in the order of the na-prob file
   * (it breaks ties in the best-threshold search). Without it every
   * prediction gets 0.0 and no `best_*` keys are reported.
   */
  readonly naProbs?: ReadonlyMap<string, NaProb>;
  /** Predict "no answer" when the probability exceeds this (default 1.0). */
  readonly naProbThreshold?: number;
}

/** The v2.0 summary, in the order the official script prints it. */
export interface SquadV2Result {
  /** `100 * sum of (thresholded) exact / total`. */
  readonly exact: number;
  /** `100 * sum of (thresholded) F1 / total`. */
  readonly f1: number;
  /** Number of distinct scored question ids. */
  readonly total: number;
  /** `exact` over scored ids with gold answers. */
  readonly HasAns_exact?: number;
  /** `f1` over scored ids with gold answers. */
  readonly HasAns_f1?: number;
  /** Scored ids with gold answers. */
  readonly HasAns_total?: number;
  /** `exact` over scored ids without gold answers. */
  readonly NoAns_exact?: number;
  /** `f1` over scored ids without gold answers. */
  readonly NoAns_f1?: number;
  /** Scored ids without gold answers. */
  readonly NoAns_total?: number;
  /** Best exact over no-answer thresholds (only with `naProbs`). */
  readonly best_exact?: number;
  /** The threshold giving `best_exact` (an na-prob value, or 0.0). */
  readonly best_exact_thresh?: NaProb;
  /** Best F1 over no-answer thresholds (only with `naProbs`). */
  readonly best_f1?: number;
  /** The threshold giving `best_f1` (an na-prob value, or 0.0). */
  readonly best_f1_thresh?: NaProb;
}

interface V2Entry {
  exact: number;
  f1: number;
  naProb: number;
  predNonEmpty: boolean;
}

/**
 * Scores questions one by one in dataset order under the official v2.0 rules.
 * Scores are kept by question id (a repeated id overwrites its scores and
 * keeps its first position, as a Python dict); questions without prediction
 * are not scored (the caller prints {@linkcode missingPredictionMessage}).
 *
 * Difference from the official script: the `HasAns_*` / `NoAns_*` subsets
 * only count scored ids (the official script raises `KeyError` when one of
 * them has no prediction), and each block appears only when its subset is
 * not empty. With all predictions present the output is identical.
 *
 * Sums are plain left-to-right float additions in dict order, as `sum()` in
 * CPython <= 3.11. CPython >= 3.12 uses compensated (Neumaier) summation in
 * `sum()` of floats, so there the official F1 may differ in the last digit.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatV2, SquadV2Accumulator } from "./squad.ts";
 * const acc = new SquadV2Accumulator();
 * acc.add({ id: "q1", answers: ["Broncos"] }, "Broncos");
 * acc.add({ id: "q2", answers: [] }, "");
 * assert.deepEqual(JSON.parse(formatV2(acc.result())).NoAns_total, 1);
 * ```
 */
export class SquadV2Accumulator {
  readonly #naProbs: ReadonlyMap<string, NaProb> | undefined;
  readonly #threshold: number;
  readonly #hasAns = new Map<string, boolean>();
  readonly #scores = new Map<string, V2Entry>();

  /**
   * Creates an empty accumulator.
   *
   * @param options no-answer probabilities and threshold
   */
  constructor(options: SquadV2Options = {}) {
    this.#naProbs = options.naProbs;
    this.#threshold = options.naProbThreshold ?? 1.0;
  }

  /**
   * Scores one question.
   *
   * @throws {MissingNaProbError} when `naProbs` was given and lacks the id of
   * an answered question (nothing is added then).
   */
  add(question: ScoredQuestion, prediction: string | undefined): PerQuestionScoreV2 {
    const id = question.id;
    const hasAns = question.answers.length > 0;
    if (prediction === undefined) {
      this.#hasAns.set(id, hasAns);
      return { id, answered: false, hasAns, exact: 0, f1: 0, reference: undefined };
    }
    let naProb = 0.0;
    if (this.#naProbs !== undefined) {
      const p = this.#naProbs.get(id);
      if (p === undefined) throw new MissingNaProbError({ id });
      naProb = Number(p);
    }
    this.#hasAns.set(id, hasAns);
    const predTokens = answerTokens(prediction);
    const predText = predTokens.join(" ");
    let bestExact: 0 | 1 = 0;
    let bestF1 = -1;
    let bestRowExact = false;
    let reference = "";
    let anyGold = false;
    for (const a of question.answers) {
      const goldTokens = answerTokens(a);
      if (goldTokens.length === 0) continue;
      anyGold = true;
      const em = goldTokens.join(" ") === predText;
      const f1 = tokenF1V2(goldTokens, predTokens);
      if (em) bestExact = 1;
      if (f1 > bestF1 || (f1 === bestF1 && em && !bestRowExact)) {
        bestF1 = f1;
        bestRowExact = em;
        reference = a;
      }
    }
    if (!anyGold) {
      bestExact = predText === "" ? 1 : 0;
      bestF1 = predTokens.length === 0 ? 1 : 0;
      reference = "";
    }
    this.#scores.set(id, {
      exact: bestExact,
      f1: bestF1,
      naProb,
      predNonEmpty: prediction !== "",
    });
    return { id, answered: true, hasAns, exact: bestExact, f1: bestF1, reference };
  }

  /**
   * Adds a chunk of questions (for `Stream.runForEachArray`).
   */
  addAll(
    questions: Iterable<ScoredQuestion>,
    predictions: Predictions,
    onRow?: (row: PerQuestionScoreV2) => void,
  ): Effect.Effect<void, MissingNaProbError> {
    const get = predictionLookup(predictions);
    return attempt(() => {
      for (const q of questions) {
        const row = this.add(q, get(q.id));
        if (onRow) onRow(row);
      }
    }, (u): u is MissingNaProbError => u instanceof MissingNaProbError);
  }

  /** Distinct question ids scored so far. */
  get total(): number {
    return this.#scores.size;
  }

  /**
   * The summary with the official keys and order.
   *
   * @throws {EmptyDatasetError} when no question was scored.
   */
  result(): SquadV2Result {
    const total = this.#scores.size;
    if (total === 0) throw new EmptyDatasetError({ rules: "v2.0" });
    const thresh = this.#threshold;
    const hasAns = this.#hasAns;
    const exactT = new Map<string, number>();
    const f1T = new Map<string, number>();
    for (const [id, e] of this.#scores) {
      if (e.naProb > thresh) {
        const v = hasAns.get(id) ? 0.0 : 1.0;
        exactT.set(id, v);
        f1T.set(id, v);
      } else {
        exactT.set(id, e.exact);
        f1T.set(id, e.f1);
      }
    }
    let exactSum = 0;
    let f1Sum = 0;
    for (const v of exactT.values()) exactSum += v;
    for (const v of f1T.values()) f1Sum += v;
    const out: Record<string, NaProb> = {
      exact: (100.0 * exactSum) / total,
      f1: (100.0 * f1Sum) / total,
      total,
    };
    for (const [prefix, want] of [["HasAns", true], ["NoAns", false]] as const) {
      let n = 0;
      let es = 0;
      let fs = 0;
      for (const [id, h] of hasAns) {
        if (h !== want || !exactT.has(id)) continue;
        n++;
        es += exactT.get(id)!;
        fs += f1T.get(id)!;
      }
      if (n === 0) continue;
      out[`${prefix}_exact`] = (100.0 * es) / n;
      out[`${prefix}_f1`] = (100.0 * fs) / n;
      out[`${prefix}_total`] = n;
    }
    if (this.#naProbs !== undefined) {
      const [be, bet] = this.#bestThresh("exact");
      const [bf, bft] = this.#bestThresh("f1");
      out.best_exact = be;
      out.best_exact_thresh = bet;
      out.best_f1 = bf;
      out.best_f1_thresh = bft;
    }
    return out as unknown as SquadV2Result;
  }

  /** {@linkcode SquadV2Accumulator.result} as an Effect. */
  summary(): Effect.Effect<SquadV2Result, EmptyDatasetError> {
    return attempt(() => this.result(), isEmpty);
  }

  /** The official `find_best_thresh` over raw scores. */
  #bestThresh(key: "exact" | "f1"): [number, NaProb] {
    let numNoAns = 0;
    for (const h of this.#hasAns.values()) if (!h) numNoAns++;
    let cur = numNoAns;
    let best = cur;
    let bestThresh: NaProb = 0.0;
    const order = [...this.#naProbs!.entries()].map(
      ([id, p]) => ({ id, p, v: Number(p) }),
    );
    order.sort((x, y) => (x.v < y.v ? -1 : x.v > y.v ? 1 : 0));
    for (const { id, p } of order) {
      const e = this.#scores.get(id);
      if (e === undefined) continue;
      let diff: number;
      if (this.#hasAns.get(id)) diff = e[key];
      else diff = e.predNonEmpty ? -1 : 0;
      cur += diff;
      if (cur > best) {
        best = cur;
        bestThresh = p;
      }
    }
    return [(100.0 * best) / this.#scores.size, bestThresh];
  }
}

const V2_KEYS = [
  "exact",
  "f1",
  "total",
  "HasAns_exact",
  "HasAns_f1",
  "HasAns_total",
  "NoAns_exact",
  "NoAns_f1",
  "NoAns_total",
  "best_exact",
  "best_exact_thresh",
  "best_f1",
  "best_f1_thresh",
] as const;

const V2_INT_KEYS: ReadonlySet<string> = new Set([
  "total",
  "HasAns_total",
  "NoAns_total",
]);

/**
 * Python's `json.dumps(out_eval, indent=2)` of the official v2.0 output
 * (`indent: null` gives `json.dump(out_eval, f)`, used for `--out-file`).
 *
 * @example
 * ```ts
 * import { formatV2 } from "./squad.ts";
 * const text = formatV2({ exact: 50, f1: 62.5, total: 2 });
 * if (text !== '{\n  "exact": 50.0,\n  "f1": 62.5,\n  "total": 2\n}') throw new Error(text);
 * ```
 */
export function formatV2(
  result: SquadV2Result,
  options: { readonly indent?: number | null } = {},
): string {
  const indent = options.indent === undefined ? 2 : options.indent;
  const items: string[] = [];
  for (const key of V2_KEYS) {
    const v = result[key];
    if (v === undefined) continue;
    let text: string;
    if (v instanceof RawNumber) text = pyNumberText(v.text);
    else if (V2_INT_KEYS.has(key)) text = String(v);
    else text = pyFloatRepr(v);
    items.push(`"${key}": ${text}`);
  }
  if (indent === null) return `{${items.join(", ")}}`;
  const pad = " ".repeat(indent);
  return `{\n${pad}${items.join(`,\n${pad}`)}\n}`;
}

/**
 * Scores a whole dataset under the v2.0 rules.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Effect } from "effect";
 * import { evaluateV2 } from "./squad.ts";
 * const r = await Effect.runPromise(
 *   evaluateV2([{ id: "q1", answers: [] }], { q1: "" }),
 * );
 * assert.deepEqual(r.NoAns_exact, 100);
 * ```
 */
export function evaluateV2(
  questions: Iterable<ScoredQuestion>,
  predictions: Predictions,
  options: SquadV2Options & {
    readonly onRow?: (row: PerQuestionScoreV2) => void;
  } = {},
): Effect.Effect<SquadV2Result, MissingNaProbError | EmptyDatasetError> {
  return Effect.suspend(() => {
    const acc = new SquadV2Accumulator(options);
    return attempt(() => {
      const get = predictionLookup(predictions);
      for (const q of questions) {
        const row = acc.add(q, get(q.id));
        if (options.onRow) options.onRow(row);
      }
      return acc.result();
    }, isV2Error);
  });
}
