/**
 * Adjusted p-values for many comparisons at once (N ≥ 3 systems give
 * N − 1 comparisons with a baseline, or N(N − 1)/2 pairs): pure functions
 * from an array of p-values to an array of adjusted p-values **in the same
 * order**, each ≥ its p-value, capped at 1, and monotone (a smaller p never
 * gets a larger adjusted p). With m p-values sorted ascending,
 * p₍₁₎ ≤ … ≤ p₍ₘ₎ (ties in input order; tied p-values get equal adjusted
 * values either way):
 *
 * - **Holm** (1979), step-down, controls the family-wise error rate:
 *   p̃₍ᵢ₎ = min(1, max_{j ≤ i} (m − j + 1)·p₍ⱼ₎);
 * - **Benjamini–Hochberg** (1995), step-up, controls the false discovery
 *   rate (independent or positively dependent tests):
 *   p̃₍ᵢ₎ = min(1, min_{j ≥ i} p₍ⱼ₎·(m / j)), computed as
 *   `scipy.stats.false_discovery_control(ps, method="bh")` computes it.
 *
 * Reject at level α where the adjusted p ≤ α.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { benjaminiHochberg, holm } from "./multiple.ts";
 * const p = [0.01, 0.04, 0.03, 0.005];
 * assert.deepEqual(holm(p), [0.03, 0.06, 0.06, 0.02]);
 * // 0.03·(4/3) is 0.039999999999999994 in floating point, as in SciPy
 * assert.deepEqual(benjaminiHochberg(p).map((x) => +x.toFixed(12)), [0.02, 0.04, 0.04, 0.02]);
 * ```
 *
 * @module
 */

/** The p-values checked, and their indices sorted by p (ties by index). */
function sortedOrder(pValues: ArrayLike<number>): { p: Float64Array; order: number[] } {
  const p = Float64Array.from(pValues);
  p.forEach((v, i) => {
    if (!(v >= 0 && v <= 1)) throw new RangeError(`p-value at index ${i} is ${v}, not in [0, 1]`);
  });
  const order = Array.from({ length: p.length }, (_, i) => i);
  order.sort((i, j) => p[i] - p[j] || i - j);
  return { p, order };
}

/**
 * Holm's step-down adjusted p-values (module notes), in input order.
 * Throws a `RangeError` on a p-value outside [0, 1] (or NaN); no p-values
 * give `[]`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { holm } from "./multiple.ts";
 * // sorted: 0.01·3 = 0.03, max(0.03, 0.02·2) = 0.04, max(0.04, 0.5·1) = 0.5
 * assert.deepEqual(holm([0.5, 0.01, 0.02]), [0.5, 0.03, 0.04]);
 * assert.deepEqual(holm([0.4, 0.4, 1]), [1, 1, 1]);
 * ```
 */
export function holm(pValues: ArrayLike<number>): number[] {
  const { p, order } = sortedOrder(pValues);
  const m = p.length;
  const out = new Array<number>(m);
  let run = 0;
  order.forEach((i, j) => {
    run = Math.max(run, (m - j) * p[i]);
    out[i] = Math.min(1, run);
  });
  return out;
}

/**
 * Benjamini–Hochberg adjusted p-values (module notes), in input order, as
 * `scipy.stats.false_discovery_control` gives them. Throws a `RangeError`
 * on a p-value outside [0, 1] (or NaN); no p-values give `[]`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { benjaminiHochberg } from "./multiple.ts";
 * // sorted 0.01, 0.02, 0.5: 0.01·3 = 0.03, 0.02·3/2 = 0.03, 0.5·3/3 = 0.5
 * assert.deepEqual(benjaminiHochberg([0.5, 0.01, 0.02]), [0.5, 0.03, 0.03]);
 * assert.deepEqual(benjaminiHochberg([1, 1]), [1, 1]);
 * ```
 */
export function benjaminiHochberg(pValues: ArrayLike<number>): number[] {
  const { p, order } = sortedOrder(pValues);
  const m = p.length;
  const out = new Array<number>(m);
  let run = Infinity;
  for (let j = m - 1; j >= 0; j--) {
    const i = order[j];
    run = Math.min(run, p[i] * (m / (j + 1)));
    out[i] = Math.min(1, run);
  }
  return out;
}
