/**
 * The MRQA 2019 shared task's official scoring (`mrqa_official_eval.py`,
 * `mrqa/MRQA-Shared-Task-2019`): the SQuAD v1.1 answer normalisation and
 * EM/F1 (`./squad_scores.ts`, CPython's string rules), the best score over a
 * question's answers, and the fold `100.0 * sum / total` over the dataset's
 * questions. `bench/reference/mrqa_eval.py` is the Python reference the
 * tests compare with digit for digit.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mrqaScores } from "./mrqa.ts";
 * assert.deepEqual(mrqaScores("the Broncos", ["Denver Broncos", "Broncos"]), { em: 1, f1: 1 });
 * ```
 *
 * @module
 */
import { pyFloatRepr } from "../io/pyjson.ts";
import { tokenF1 } from "./squad_scores.ts";
import { answerTokens } from "./squad_text.ts";
import { predictionLookup, type Predictions } from "./squad.ts";
import { NoAnswersError, NothingScoredError } from "./qa_errors.ts";

/** One question's scores: EM (0 or 1) and F1 in [0, 1], each the best over its answers. */
export interface AnswerScores {
  /** 1 when the prediction matches one answer after normalisation. */
  readonly em: 0 | 1;
  /** The best token F1 over the answers. */
  readonly f1: number;
}

/**
 * The script's `metric_max_over_ground_truths` of `exact_match_score` and of
 * `f1_score` for one prediction. `undefined` when there is no answer (where
 * the script dies in `max()`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mrqaScores } from "./mrqa.ts";
 * assert.deepEqual(mrqaScores("Denver", ["Denver Broncos"]), { em: 0, f1: 0.6666666666666666 });
 * assert.deepEqual(mrqaScores("x", []), undefined);
 * ```
 */
export function mrqaScores(
  prediction: string,
  answers: readonly string[],
): AnswerScores | undefined {
  if (answers.length === 0) return undefined;
  const pred = answerTokens(prediction);
  const predText = pred.join(" ");
  let em: 0 | 1 = 0;
  let f1 = 0;
  for (const a of answers) {
    const gold = answerTokens(a);
    if (gold.join(" ") === predText) em = 1;
    const f = tokenF1(pred, gold);
    if (f > f1) f1 = f;
  }
  return { em, f1 };
}

/** A question of an MRQA dataset: its `qid` and answer texts. */
export interface MrqaQuestion {
  /** `qa['qid']`. */
  readonly qid: string;
  /** `qa['answers']`. */
  readonly answers: readonly string[];
}

/** The fold's result: what the script prints, and the counts behind it. */
export interface MrqaResult {
  /** `100.0 * exact_match / total`. */
  readonly exact_match: number;
  /** `100.0 * f1 / total`. */
  readonly f1: number;
  /** The questions counted. */
  readonly total: number;
  /** Ids without a prediction, in dataset order (the script prints a line for each unless skipped). */
  readonly unanswered: readonly string[];
}

/** Options of {@linkcode mrqaEvaluate}. */
export interface MrqaOptions {
  /** The script's `--skip-no-answer`: a question without prediction is not counted at all. */
  readonly skipNoAnswer?: boolean;
}

/**
 * The script's `evaluate(read_answers(...), predictions, skip_no_answer)`:
 * questions keyed by `qid` as the script's dict (a repeated qid keeps its
 * first place and its last answers), every one counted (a missing prediction
 * scores 0) unless `skipNoAnswer`, EM and F1 summed in dataset order, then
 * `100.0 * sum / total`.
 *
 * @throws {NoAnswersError} for a question with a prediction and no answer.
 * @throws {NothingScoredError} when nothing is counted (`ZeroDivisionError`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatMrqa, mrqaEvaluate } from "./mrqa.ts";
 * const r = mrqaEvaluate(
 *   [{ qid: "a", answers: ["Broncos"] }, { qid: "b", answers: ["1999"] }],
 *   { a: "the Broncos" },
 * );
 * assert.deepEqual(formatMrqa(r), '{"exact_match": 50.0, "f1": 50.0}');
 * assert.deepEqual(r.unanswered, ["b"]);
 * ```
 */
export function mrqaEvaluate(
  questions: Iterable<MrqaQuestion>,
  predictions: Predictions,
  options: MrqaOptions = {},
): MrqaResult {
  const byQid = new Map<string, readonly string[]>();
  for (const q of questions) byQid.set(q.qid, q.answers);
  const get = predictionLookup(predictions);
  let em = 0;
  let f1 = 0;
  let total = 0;
  let index = 0;
  const unanswered: string[] = [];
  for (const [qid, answers] of byQid) {
    const prediction = get(qid);
    if (prediction === undefined) {
      unanswered.push(qid);
      if (!options.skipNoAnswer) total++;
    } else {
      total++;
      const s = mrqaScores(prediction, answers);
      if (s === undefined) throw new NoAnswersError({ id: qid, index, rules: "MRQA" });
      em += s.em;
      f1 += s.f1;
    }
    index++;
  }
  if (total === 0) throw new NothingScoredError({ rules: "MRQA" });
  return { exact_match: (100.0 * em) / total, f1: (100.0 * f1) / total, total, unanswered };
}

/**
 * The script's output line, `json.dumps({'exact_match': ..., 'f1': ...})`.
 *
 * @example
 * ```ts
 * import { formatMrqa } from "./mrqa.ts";
 * const line = formatMrqa({ exact_match: 100, f1: 1e-5 });
 * if (line !== '{"exact_match": 100.0, "f1": 1e-05}') throw new Error(line);
 * ```
 */
export function formatMrqa(result: { readonly exact_match: number; readonly f1: number }): string {
  return `{"exact_match": ${pyFloatRepr(result.exact_match)}, "f1": ${pyFloatRepr(result.f1)}}`;
}

/**
 * The line the script prints for a question without prediction (on stdout).
 *
 * @example
 * ```ts
 * import { mrqaUnansweredMessage } from "./mrqa.ts";
 * if (mrqaUnansweredMessage("q1") !== "Unanswered question q1 will receive score 0.") {
 *   throw new Error("message");
 * }
 * ```
 */
export function mrqaUnansweredMessage(qid: string): string {
  return `Unanswered question ${qid} will receive score 0.`;
}
