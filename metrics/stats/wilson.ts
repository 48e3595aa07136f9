/**
 * Wilson score intervals for a proportion (Wilson 1927), computed in the
 * same operation order as `statsmodels.stats.proportion.proportion_confint(
 * count, nobs, alpha, method="wilson")` and clipped to [0, 1] as it is; the
 * endpoints agree with SciPy's `binomtest(x, n).proportion_ci(1 - alpha,
 * method="wilson")` to 1e-12 (`tests/metrics/stats_test.ts`). With p̂ = x/n and
 * z = Φ⁻¹(1 − α/2) (from {@linkcode normalQuantile}):
 *
 *   centre = (p̂ + z²/(2n)) / (1 + z²/n),
 *   half   = z·√(p̂(1 − p̂)/n + z²/(4n²)) / (1 + z²/n),
 *
 * and the interval is [centre − half, centre + half].
 *
 * @example
 * ```ts
 * import { wilsonInterval } from "./wilson.ts";
 * const { low, high } = wilsonInterval(8, 10); // 80 % EM on 10 questions
 * if (!(low > 0.49 && low < 0.5 && high > 0.94 && high < 0.95)) throw new Error(`${low} ${high}`);
 * ```
 *
 * @module
 */
import { normalQuantile } from "./normal.ts";

/**
 * A proportion with its confidence interval.
 *
 * @example
 * ```ts
 * import type { ProportionInterval } from "./wilson.ts";
 * import { wilsonInterval } from "./wilson.ts";
 * const iv: ProportionInterval = wilsonInterval(0, 4);
 * if (iv.estimate !== 0 || iv.low !== 0) throw new Error(JSON.stringify(iv));
 * ```
 */
export interface ProportionInterval {
  /** The observed proportion `successes / trials`. */
  readonly estimate: number;
  /** The lower end. */
  readonly low: number;
  /** The upper end. */
  readonly high: number;
  /** The confidence level `1 − alpha`. */
  readonly level: number;
}

/**
 * The Wilson score interval for `successes` out of `trials` at level
 * `1 − alpha` (default `alpha = 0.05`, a 95 % interval). `successes` may be
 * any real in [0, trials] (statsmodels allows that too); `trials` must be
 * positive and `alpha` in (0, 1), else a `RangeError` is thrown.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { wilsonInterval } from "./wilson.ts";
 * // scipy: binomtest(1, 2).proportion_ci(method="wilson") == (0.09453120573423074, 0.9054687942657693)
 * const iv = wilsonInterval(1, 2);
 * assert.ok(Math.abs(iv.low - 0.09453120573423074) < 1e-15);
 * assert.ok(Math.abs(iv.high - 0.9054687942657693) < 1e-15);
 * assert.equal(wilsonInterval(5, 5, { alpha: 0.1 }).high, 1);
 * ```
 */
export function wilsonInterval(
  successes: number,
  trials: number,
  opts: { readonly alpha?: number } = {},
): ProportionInterval {
  const alpha = opts.alpha ?? 0.05;
  if (!(Number.isFinite(trials) && trials > 0)) {
    throw new RangeError(`trials must be a positive number, got ${trials}`);
  }
  if (!(Number.isFinite(successes) && successes >= 0 && successes <= trials)) {
    throw new RangeError(`successes must lie in [0, ${trials}], got ${successes}`);
  }
  if (!(alpha > 0 && alpha < 1)) throw new RangeError(`alpha must lie in (0, 1), got ${alpha}`);
  const q = successes / trials;
  const crit = -normalQuantile(0.5 * alpha);
  const crit2 = crit * crit;
  const denom = 1 + crit2 / trials;
  const center = (q + crit2 / (2 * trials)) / denom;
  let dist = crit * Math.sqrt((q * (1.0 - q)) / trials + crit2 / (4.0 * (trials * trials)));
  dist /= denom;
  const clip = (v: number) => Math.min(1, Math.max(0, v));
  return { estimate: q, low: clip(center - dist), high: clip(center + dist), level: 1 - alpha };
}
