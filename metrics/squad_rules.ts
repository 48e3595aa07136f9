/**
 * The pure parts of the official SQuAD rules (`./squad.ts`): the errors and
 * messages of the official scripts, the inputs of the folds, and the v1.1
 * fold ({@linkcode SquadV1Fold}), with no Effect runtime: what `evaluate`'s
 * whole-file path (`./evaluate_whole.ts`) loads, so that scoring a small
 * file costs little more than start-up. `./squad.ts` re-exports all of it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatV1, SquadV1Fold } from "./squad_rules.ts";
 * const acc = new SquadV1Fold();
 * acc.add({ id: "q1", answers: ["Denver Broncos"] }, "the Denver Broncos");
 * acc.add({ id: "q2", answers: ["1999", "in 1999"] }, "1998 or 1999");
 * assert.deepEqual(formatV1(acc.result()), '{"exact_match": 50.0, "f1": 75.0}');
 * ```
 *
 * @module
 */

import * as Data from "effect/Data";
import { pyFloatRepr } from "../io/pyjson.ts";
import { tokenF1 } from "./squad_scores.ts";
import { answerTokens } from "./squad_text.ts";

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
 * import { NoGoldAnswersError, SquadV1Fold } from "./squad_rules.ts";
 * assert.throws(
 *   () => new SquadV1Fold().add({ id: "q9", answers: [] }, "x"),
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
 * import { EmptyDatasetError } from "./squad_rules.ts";
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
 * import { MissingNaProbError } from "./squad_rules.ts";
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
 * import { unansweredMessage } from "./squad_rules.ts";
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
 * import { missingPredictionMessage } from "./squad_rules.ts";
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
 * import { versionMismatchMessage } from "./squad_rules.ts";
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
 * import { predictionLookup } from "./squad_rules.ts";
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
 * import { formatV1, SquadV1Fold, unansweredMessage } from "./squad_rules.ts";
 * const acc = new SquadV1Fold();
 * const row = acc.add({ id: "q1", answers: ["Broncos"] }, undefined);
 * if (!row.answered) console.error(unansweredMessage(row.id));
 * acc.add({ id: "q2", answers: ["Carolina Panthers"] }, "Panthers");
 * assert.deepEqual(formatV1(acc.result()), '{"exact_match": 0.0, "f1": 33.33333333333333}');
 * ```
 */
export class SquadV1Fold {
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
      // A gold answer equal to an earlier one scores as it did, which changes
      // neither the best (ties keep the first) nor any-EM: skip it.
      if (golds.indexOf(golds[i]) < i) continue;
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
}

/**
 * Python's `json.dumps({'exact_match': ..., 'f1': ...})`, the official v1.1
 * output line.
 *
 * @example
 * ```ts
 * import { formatV1 } from "./squad_rules.ts";
 * const line = formatV1({ exact_match: 100, f1: 100, total: 1, answered: 1 });
 * if (line !== '{"exact_match": 100.0, "f1": 100.0}') throw new Error(line);
 * ```
 */
export function formatV1(result: SquadV1Result): string {
  return `{"exact_match": ${pyFloatRepr(result.exact_match)}, "f1": ${pyFloatRepr(result.f1)}}`;
}
