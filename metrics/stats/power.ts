/**
 * Power of a paired comparison of two systems on the same n questions: the
 * **minimum detectable effect** (MDE), and whether a difference is a tie.
 *
 * MDE, by the normal approximation: a two-sided test at level α of a mean
 * paired difference δ̂ = mean(dᵢ), dᵢ = aᵢ − bᵢ, whose standard error is
 * sd(d)/√n, detects a true difference of size Δ with probability `power`
 * (ignoring the far tail) when
 *
 *   Δ ≥ MDE = (z₁₋α/₂ + z_power) · sd(d) / √n,
 *
 * z_q the standard normal q-quantile ({@linkcode normalQuantile}); at the
 * defaults α = 0.05 and power 0.8, z₁₋α/₂ + z_power = 1.959964 + 0.841621 =
 * 2.801585. sd(d) is the plug-in (population, ddof = 0) standard deviation
 * of the observed differences, √(Σ(dᵢ − δ̂)²/n).
 *
 * For binary scores (EM), dᵢ ∈ {−1, 0, 1}: dᵢ² = 1 exactly on the
 * discordant questions (one system right, the other wrong), so with the
 * discordance rate p_disc = (b + c)/n (McNemar's b and c) and δ̂ = (b − c)/n,
 *
 *   sd(d)² = mean(dᵢ²) − δ̂² = p_disc − δ̂²,
 *
 * the same plug-in variance ({@linkcode discordantMde}); {@linkcode pairedMde}
 * gives both for 0/1 scores, equal up to rounding.
 *
 * The MDE ignores clustering: on clustered questions (SQuAD paragraphs)
 * the true standard error is larger and so is the real MDE.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { minimumDetectableEffect } from "./power.ts";
 * // 10,570 dev questions, sd(d) = 0.3: about 0.82 points of EM
 * const mde = minimumDetectableEffect(10570, 0.3);
 * assert.ok(Math.abs(mde - 2.801585218 * 0.3 / Math.sqrt(10570)) < 1e-9);
 * ```
 *
 * @module
 */
import { scoresOf } from "./_scores.ts";
import { normalQuantile } from "./normal.ts";

/** The test's level and the power wanted. */
export interface PowerOptions {
  /** Two-sided level α, in (0, 1) (default 0.05). */
  readonly alpha?: number;
  /** Power 1 − β, in (0, 1) (default 0.8). */
  readonly power?: number;
}

/** z₁₋α/₂ + z_power, checking both. */
function zSum(opts: PowerOptions): number {
  const alpha = opts.alpha ?? 0.05;
  const power = opts.power ?? 0.8;
  if (!(alpha > 0 && alpha < 1)) throw new RangeError(`alpha must lie in (0, 1), got ${alpha}`);
  if (!(power > 0 && power < 1)) throw new RangeError(`power must lie in (0, 1), got ${power}`);
  return -normalQuantile(alpha / 2) + normalQuantile(power);
}

/**
 * The minimum detectable effect `(z₁₋α/₂ + z_power) · sd / √n` (module
 * notes), in the units of the scores (a fraction for EM/F1 in [0, 1]).
 * Throws a `RangeError` unless n is a positive integer, sd a finite number
 * ≥ 0 and α and power lie in (0, 1).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { minimumDetectableEffect } from "./power.ts";
 * assert.equal(minimumDetectableEffect(100, 0), 0);
 * // 90 % power at α = 0.01 needs a bigger effect than the default
 * assert.ok(minimumDetectableEffect(400, 0.5, { alpha: 0.01, power: 0.9 }) > minimumDetectableEffect(400, 0.5));
 * ```
 */
export function minimumDetectableEffect(n: number, sd: number, opts: PowerOptions = {}): number {
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new RangeError(`n must be a positive integer, got ${n}`);
  }
  if (!(Number.isFinite(sd) && sd >= 0)) {
    throw new RangeError(`sd must be a finite number >= 0, got ${sd}`);
  }
  return (zSum(opts) * sd) / Math.sqrt(n);
}

/**
 * The MDE for binary scores from the discordance rate `p_disc` (the share
 * of questions on which exactly one system is right) and the observed mean
 * difference δ̂: sd(d) = √(p_disc − δ̂²) (module notes). Throws a
 * `RangeError` unless 0 ≤ |δ̂| ≤ p_disc ≤ 1, and as
 * {@linkcode minimumDetectableEffect} does.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { discordantMde, minimumDetectableEffect } from "./power.ts";
 * // 1,000 questions, b = 60 only A right, c = 40 only B right
 * const mde = discordantMde(1000, 0.1, 0.02);
 * assert.equal(mde, minimumDetectableEffect(1000, Math.sqrt(0.1 - 0.02 * 0.02)));
 * ```
 */
export function discordantMde(
  n: number,
  discordanceRate: number,
  meanDifference: number,
  opts: PowerOptions = {},
): number {
  const p = discordanceRate;
  const delta = meanDifference;
  if (!(p >= 0 && p <= 1)) throw new RangeError(`discordance rate must lie in [0, 1], got ${p}`);
  if (!(Math.abs(delta) <= p)) {
    throw new RangeError(`|mean difference| ${delta} exceeds the discordance rate ${p}`);
  }
  return minimumDetectableEffect(n, Math.sqrt(p - delta * delta), opts);
}

/**
 * What {@linkcode pairedMde} returns.
 *
 * @example
 * ```ts
 * import type { PairedMde } from "./power.ts";
 * import { pairedMde } from "./power.ts";
 * const r: PairedMde = pairedMde([1, 0.5], [1, 0.5]);
 * if (r.mde !== 0 || r.discordanceRate !== undefined) throw new Error(JSON.stringify(r));
 * ```
 */
export interface PairedMde {
  /** Number of questions n. */
  readonly questions: number;
  /** δ̂ = mean(a) − mean(b) (sum of the dᵢ in order, divided by n). */
  readonly meanDifference: number;
  /** sd(d), the plug-in standard deviation of the differences (ddof = 0). */
  readonly sd: number;
  /** The MDE from `sd` ({@linkcode minimumDetectableEffect}). */
  readonly mde: number;
  /** The level α used. */
  readonly alpha: number;
  /** The power used. */
  readonly power: number;
  /** Only when every score is 0 or 1: the share of discordant questions. */
  readonly discordanceRate?: number;
  /** Only when every score is 0 or 1: the MDE from the discordance rate ({@linkcode discordantMde}). */
  readonly discordantMde?: number;
}

/**
 * The minimum detectable effect of comparing `a` with `b` (two systems'
 * per-question scores, same questions, same order) at level α and the given
 * power, from the observed differences (module notes); for 0/1 scores also
 * from the discordance rate. Throws a `RangeError` on unequal or zero
 * lengths, non-finite scores or bad options.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pairedMde } from "./power.ts";
 * const a = [1, 1, 0, 1, 0, 1, 1, 0], b = [1, 0, 0, 1, 1, 1, 0, 0];
 * const r = pairedMde(a, b);
 * // d = [0, 1, 0, 0, −1, 0, 1, 0]: δ = 1/8, p_disc = 3/8, sd² = 3/8 − 1/64
 * assert.equal(r.meanDifference, 0.125);
 * assert.equal(r.discordanceRate, 0.375);
 * assert.ok(Math.abs(r.sd - Math.sqrt(23 / 64)) < 1e-15);
 * assert.ok(Math.abs(r.mde - r.discordantMde!) < 1e-15);
 * ```
 */
export function pairedMde(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  opts: PowerOptions = {},
): PairedMde {
  const [x, y] = scoresOf([a, b]);
  const n = x.length;
  const d = new Float64Array(n);
  let sum = 0;
  let binary = true;
  let disc = 0;
  for (let i = 0; i < n; i++) {
    d[i] = x[i] - y[i];
    sum += d[i];
    if ((x[i] !== 0 && x[i] !== 1) || (y[i] !== 0 && y[i] !== 1)) binary = false;
    if (d[i] !== 0) disc++;
  }
  const delta = sum / n;
  let ss = 0;
  for (let i = 0; i < n; i++) ss += (d[i] - delta) * (d[i] - delta);
  const sd = Math.sqrt(ss / n);
  const alpha = opts.alpha ?? 0.05;
  const power = opts.power ?? 0.8;
  const out: PairedMde = {
    questions: n,
    meanDifference: delta,
    sd,
    mde: minimumDetectableEffect(n, sd, opts),
    alpha,
    power,
  };
  if (!binary) return out;
  const rate = disc / n;
  return { ...out, discordanceRate: rate, discordantMde: discordantMde(n, rate, delta, opts) };
}

/**
 * Whether a difference interval (a bootstrap `DifferenceInterval`
 * or any `{ low, high }`) contains 0, ends included: the two systems are
 * tied at that level. Throws a `RangeError` on NaN ends or `low > high`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tied } from "./power.ts";
 * assert.equal(tied({ low: -0.004, high: 0.011 }), true);
 * assert.equal(tied({ low: 0, high: 0.02 }), true);
 * assert.equal(tied({ low: 0.001, high: 0.02 }), false);
 * ```
 */
export function tied(interval: { readonly low: number; readonly high: number }): boolean {
  const { low, high } = interval;
  if (!(low <= high)) throw new RangeError(`not an interval: [${low}, ${high}]`);
  return low <= 0 && 0 <= high;
}
