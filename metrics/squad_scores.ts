/**
 * Exact match and token F1 of one answer against gold answers, as the
 * official scripts compute them: v1.1 (`exact_match_score`, `f1_score`,
 * `metric_max_over_ground_truths`) and v2.0 (`compute_exact`,
 * `compute_f1`, the gold answers of a question), on the normalisation of
 * `./squad_text.ts`, with floats in the scripts' operation order.
 *
 * @example
 * ```ts
 * import { exactMatchScore, f1Score } from "./squad_scores.ts";
 * if (!exactMatchScore("the Broncos.", "Broncos")) throw new Error("EM");
 * if (f1Score("Denver Broncos win", "Broncos") !== 0.5) throw new Error("F1");
 * ```
 *
 * @module
 */
import { answerTokens, normalizeAnswer } from "./squad_text.ts";

/** Number of tokens two token lists share, as a multiset intersection. */
function commonCount(
  pred: readonly string[],
  gold: readonly string[],
): number {
  if (pred.length === 0 || gold.length === 0) return 0;
  if (pred.length === 1) return gold.includes(pred[0]) ? 1 : 0;
  if (gold.length <= 32) {
    // Few gold tokens: mark each one used by a bit, no Map.
    let used = 0, same = 0;
    for (const t of pred) {
      for (let j = 0; j < gold.length; j++) {
        if ((used & (1 << j)) === 0 && gold[j] === t) {
          used |= 1 << j;
          same++;
          break;
        }
      }
    }
    return same;
  }
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

/**
 * v1.1 F1 from token lists (`answerTokens` of the prediction and of a gold
 * answer), in the official float order; the folds tokenize each answer once.
 *
 * @example
 * ```ts
 * import { tokenF1 } from "./squad_scores.ts";
 * if (tokenF1(["denver", "broncos", "win"], ["broncos"]) !== 0.5) throw new Error("F1");
 * ```
 */
export function tokenF1(pred: readonly string[], gold: readonly string[]): number {
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
 * import { exactMatchScore } from "./squad_scores.ts";
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
 * import { f1Score } from "./squad_scores.ts";
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
 * import { f1Score, metricMaxOverGroundTruths } from "./squad_scores.ts";
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
 * import { computeExact } from "./squad_scores.ts";
 * assert.deepEqual(computeExact("", "an"), 1); // both normalise to ""
 * ```
 */
export function computeExact(aGold: string, aPred: string): 0 | 1 {
  return normalizeAnswer(aGold) === normalizeAnswer(aPred) ? 1 : 0;
}

/**
 * v2.0 F1 from token lists (gold first, as `compute_f1`), in the official
 * float order.
 *
 * @example
 * ```ts
 * import { tokenF1V2 } from "./squad_scores.ts";
 * if (tokenF1V2([], []) !== 1 || tokenF1V2(["broncos"], []) !== 0) throw new Error("F1");
 * ```
 */
export function tokenF1V2(gold: readonly string[], pred: readonly string[]): number {
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
 * import { computeF1 } from "./squad_scores.ts";
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
 * import { goldAnswersV2 } from "./squad_scores.ts";
 * assert.deepEqual(goldAnswersV2(["The", "Broncos"]), ["Broncos"]);
 * assert.deepEqual(goldAnswersV2([]), [""]);
 * ```
 */
export function goldAnswersV2(answers: readonly string[]): string[] {
  const out = answers.filter((a) => answerTokens(a).length > 0);
  return out.length > 0 ? out : [""];
}
