/**
 * Open-domain answer EM/F1 over candidate lists, as DrQA and DensePhrases
 * score them (DensePhrases' `evaluate_results`, on DrQA's
 * `regex_match_score` and `metric_max_over_ground_truths`): the top-1
 * candidate's best score over the answers, and the best over the first k
 * candidates. Candidates and answers are NFD-normalised first (DrQA's
 * `normalize`, CPython 3.11). EM is the SQuAD v1.1 exact match, or with
 * `regex` the answer is a Python pattern and EM is
 * `re.compile(p, IGNORECASE | UNICODE | MULTILINE).match(candidate)`
 * (anchored at the start only; `./pyregex.ts`); F1 is the SQuAD v1.1 token F1
 * and is not computed in regex mode. An empty candidate list scores as `[""]`.
 * A pattern whose match is cut off (more than its step budget: catastrophic
 * backtracking, on which Python would run for ages) counts as not matching
 * that candidate, and is told (`onCutOff`).
 * `bench/reference/dpr_eval.py` is the Python reference the tests compare with.
 *
 * DensePhrases' own `f1_score` also zeroes a pair where one side normalises
 * to `yes`, `no` or `noanswer` and the other differs; that HotpotQA rule is
 * not applied here (DrQA's F1 is the SQuAD one).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openAnswerScores } from "./open_answers.ts";
 * assert.deepEqual(openAnswerScores(["Paris, France", "Paris"], ["Paris"]), {
 *   emTop1: 0, emTopK: 1, f1Top1: 0.6666666666666666, f1TopK: 1,
 * });
 * ```
 *
 * @module
 */
import { pyNfd } from "./_py311_unicode.ts";
import { exactMatchScore, f1Score } from "./squad_scores.ts";
import { compilePyRegex } from "./pyregex.ts";
import { PyRegexBudgetError } from "./pyregex_match.ts";
import { NoAnswersError, NothingScoredError } from "./qa_errors.ts";

/** Options of the open answer scores. */
export interface OpenAnswerOptions {
  /** Answers are Python regular expressions (CuratedTREC); EM is their `match`. */
  readonly regex?: boolean;
  /** How many candidates count for top-k (default: all). */
  readonly k?: number;
  /**
   * Regex mode: told each match cut off ({@linkcode PyRegexBudgetError},
   * with the question's id in {@linkcode openAnswerEvaluate}); such a match
   * counts as not matched whether or not this is given.
   */
  readonly onCutOff?: (e: PyRegexBudgetError, id?: string) => void;
}

/** One question's open answer scores (EM 0 or 1, F1 in [0, 1]; F1 `undefined` in regex mode). */
export interface OpenAnswerScores {
  /** EM of the first candidate. */
  readonly emTop1: 0 | 1;
  /** Best EM of the first k candidates. */
  readonly emTopK: 0 | 1;
  /** F1 of the first candidate. */
  readonly f1Top1: number | undefined;
  /** Best F1 of the first k candidates. */
  readonly f1TopK: number | undefined;
}

function best(metric: (p: string, a: string) => number, p: string, answers: string[]): number {
  let b = -Infinity;
  for (const a of answers) b = Math.max(b, metric(p, a));
  return b;
}

/**
 * One question's top-1 and top-k EM/F1 (see the module notes); `undefined`
 * when there is no answer (where the scripts die in `max()`).
 *
 * @throws {PyRegexError} in regex mode, for a pattern refused.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openAnswerScores } from "./open_answers.ts";
 * const s = openAnswerScores(["in 1984", "1984"], ["19[0-9]{2}"], { regex: true });
 * assert.deepEqual(s, { emTop1: 0, emTopK: 1, f1Top1: undefined, f1TopK: undefined });
 * ```
 */
export function openAnswerScores(
  candidates: readonly string[],
  answers: readonly string[],
  options: OpenAnswerOptions = {},
): OpenAnswerScores | undefined {
  if (answers.length === 0) return undefined;
  const k = options.k ?? candidates.length;
  const preds = candidates.length > 0 ? candidates.slice(0, k).map(pyNfd) : [""];
  if (preds.length === 0) preds.push(""); // k = 0 keeps DensePhrases' `[:0]`: nothing, then max([]) would die
  const golds = answers.map(pyNfd);
  const em = options.regex
    ? (p: string, a: string) => {
      try {
        return compilePyRegex(a).match(p) ? 1 : 0;
      } catch (e) {
        if (!(e instanceof PyRegexBudgetError)) throw e;
        options.onCutOff?.(e);
        return 0;
      }
    }
    : (p: string, a: string) => exactMatchScore(p, a) ? 1 : 0;
  // Each candidate matched once (a cut-off match is not run twice).
  const ems = preds.map((p) => best(em, p, golds));
  const emTop1 = ems[0] as 0 | 1;
  const emTopK: 0 | 1 = ems.includes(1) ? 1 : 0;
  if (options.regex) return { emTop1, emTopK, f1Top1: undefined, f1TopK: undefined };
  const f1Top1 = best(f1Score, preds[0], golds);
  let f1TopK = 0;
  for (const p of preds) f1TopK = Math.max(f1TopK, best(f1Score, p, golds));
  return { emTop1, emTopK, f1Top1, f1TopK };
}

/** A question for {@linkcode openAnswerEvaluate}. */
export interface OpenAnswerRow {
  /** The question id (named in errors). */
  readonly id: string;
  /** Its ranked candidate answers. */
  readonly candidates: readonly string[];
  /** Its gold answers (patterns in regex mode). */
  readonly answers: readonly string[];
}

/** The fold's result, ×100 as DensePhrases logs it (`null` F1 in regex mode). */
export interface OpenAnswerResult {
  /** `100.0 * sum(em_top1) / total`. */
  readonly exact_match_top1: number;
  /** `100.0 * sum(f1_top1) / total`. */
  readonly f1_score_top1: number | null;
  /** `100.0 * sum(em_topk) / total`. */
  readonly exact_match_topk: number;
  /** `100.0 * sum(f1_topk) / total`. */
  readonly f1_score_topk: number | null;
  /** The questions. */
  readonly total: number;
}

/**
 * DensePhrases' top-1/top-k fold: per-question scores summed in order, then
 * `100.0 * sum / total`.
 *
 * @throws {NoAnswersError} for a question without answers.
 * @throws {NothingScoredError} when there is no question.
 * @throws {PyRegexError} in regex mode, for a pattern refused.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openAnswerEvaluate } from "./open_answers.ts";
 * const r = openAnswerEvaluate([
 *   { id: "q1", candidates: ["Paris", "Lyon"], answers: ["Paris"] },
 *   { id: "q2", candidates: ["Rome", "Milan"], answers: ["Milan"] },
 * ], { k: 2 });
 * assert.deepEqual(r.exact_match_top1, 50);
 * assert.deepEqual(r.exact_match_topk, 100);
 * ```
 */
export function openAnswerEvaluate(
  rows: Iterable<OpenAnswerRow>,
  options: OpenAnswerOptions = {},
): OpenAnswerResult {
  const steps = openAnswerSteps(rows, options);
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/**
 * {@linkcode openAnswerEvaluate} in steps, one question each, so a caller
 * can go back to the event loop between two (signals, interruption) while
 * a long regex set is scored; the generator's return value is the result.
 *
 * @throws {NoAnswersError} for a question without answers.
 * @throws {NothingScoredError} when there is no question.
 *
 * @example
 * ```ts
 * import { openAnswerSteps } from "./open_answers.ts";
 * const steps = openAnswerSteps([{ id: "q", candidates: ["Paris"], answers: ["Paris"] }]);
 * let r = steps.next();
 * let n = 0;
 * while (!r.done) {
 *   n++;
 *   r = steps.next();
 * }
 * if (n !== 1 || r.value.exact_match_top1 !== 100) throw new Error();
 * ```
 */
export function* openAnswerSteps(
  rows: Iterable<OpenAnswerRow>,
  options: OpenAnswerOptions = {},
): Generator<void, OpenAnswerResult> {
  let em1 = 0;
  let emk = 0;
  let f11 = 0;
  let f1k = 0;
  let total = 0;
  for (const row of rows) {
    const onCutOff = options.onCutOff;
    const s = openAnswerScores(row.candidates, row.answers, {
      ...options,
      onCutOff: onCutOff && ((e) => onCutOff(e, row.id)),
    });
    if (s === undefined) {
      throw new NoAnswersError({ id: row.id, index: total, rules: "open-domain" });
    }
    total++;
    em1 += s.emTop1;
    emk += s.emTopK;
    f11 += s.f1Top1 ?? 0;
    f1k += s.f1TopK ?? 0;
    yield;
  }
  if (total === 0) throw new NothingScoredError({ rules: "open-domain" });
  const regex = options.regex === true;
  return {
    exact_match_top1: (100.0 * em1) / total,
    f1_score_top1: regex ? null : (100.0 * f11) / total,
    exact_match_topk: (100.0 * emk) / total,
    f1_score_topk: regex ? null : (100.0 * f1k) / total,
    total,
  };
}
