/**
 * The official SQuAD scoring rules (v1.1 `evaluate-v1.1.py` and v2.0
 * `evaluate-v2.0.py`), reproduced number for number: folds that consume
 * questions in dataset order and print exactly what the official scripts
 * print, with the errors and messages of the scripts. The answer
 * normalisation (CPython's string rules) is `./squad_text.ts`, exact match
 * and F1 of one answer `./squad_scores.ts`; both are re-exported here.
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

import * as Effect from "effect/Effect";
import { pyFloatRepr, pyNumberText, RawNumber } from "../io/pyjson.ts";
import { tokenF1V2 } from "./squad_scores.ts";
import { answerTokens } from "./squad_text.ts";
import {
  EmptyDatasetError,
  MissingNaProbError,
  NoGoldAnswersError,
  type PerQuestionScore,
  predictionLookup,
  type Predictions,
  type ScoredQuestion,
  SquadV1Fold,
  type SquadV1Result,
} from "./squad_rules.ts";

export {
  EmptyDatasetError,
  formatV1,
  MissingNaProbError,
  missingPredictionMessage,
  NoGoldAnswersError,
  type PerQuestionScore,
  predictionLookup,
  type Predictions,
  type ScoredQuestion,
  SquadV1Fold,
  type SquadV1Result,
  unansweredMessage,
  versionMismatchMessage,
} from "./squad_rules.ts";

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

/**
 * {@linkcode SquadV1Fold} with Effect-typed steps: scores questions one by
 * one in dataset order under the official v1.1 rules (every question counts
 * in the total; one without prediction scores 0), adding chunks for
 * `Stream.runForEachArray` and a typed summary.
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
export class SquadV1Accumulator extends SquadV1Fold {
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

  /** {@linkcode SquadV1Accumulator.result} as an Effect. */
  summary(): Effect.Effect<SquadV1Result, EmptyDatasetError> {
    return attempt(() => this.result(), isEmpty);
  }
}

/**
 * Scores a whole dataset under the v1.1 rules.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import * as Effect from "effect/Effect";
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
 * import * as Effect from "effect/Effect";
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
