/**
 * The paired approximate-randomization test (Noreen 1989; the test of
 * Riezler and Maxwell 2005 for NLP) of the difference between two
 * systems' mean per-question scores.
 *
 * Exactly: with dᵢ = aᵢ − bᵢ, the observed statistic is T = Σᵢ dᵢ (n times
 * the mean difference). Each of R shuffles (default 10,000) swaps the two
 * systems' scores on question i with probability 1/2, i.e. replaces dᵢ by
 * −dᵢ; the coin flips of shuffle r are one call of
 * {@linkcode Xoshiro128StarStar.bits} for the n questions (generator seeded
 * with `seed`, default 0), flip 1 meaning swap. The test is two-sided:
 *
 *   p = (#{r : |T*ᵣ| ≥ |T|} + 1) / (R + 1),
 *
 * the +1's counting the observed assignment itself, so p is never 0. A tie
 * |T*ᵣ| = |T| must not be lost to rounding, so `≥` is judged with a slack
 * of n·2⁻⁵²·Σ|dᵢ| (a bound on the rounding error of either sum).
 * Identical systems give T = 0 and p = 1.
 *
 * @example
 * ```ts
 * import { pairedRandomization } from "./randomization.ts";
 * const f1 = [0.5, 1, 0, 0.25];
 * if (pairedRandomization(f1, f1).pValue !== 1) throw new Error("identical systems: p = 1");
 * ```
 *
 * @module
 */
import { scoresOf } from "./_scores.ts";
import { Xoshiro128StarStar } from "./prng.ts";
import { runSteps, STEP_WORK, type Steps } from "./steps.ts";

/** Options of {@linkcode pairedRandomization}. */
export interface RandomizationOptions {
  /** Number of shuffles R (a positive integer; default 10,000). */
  readonly shuffles?: number;
  /** The generator's seed (an integer in [0, 2⁶⁴); default 0). */
  readonly seed?: number | bigint;
}

/**
 * What {@linkcode pairedRandomization} returns.
 *
 * @example
 * ```ts
 * import type { RandomizationResult } from "./randomization.ts";
 * import { pairedRandomization } from "./randomization.ts";
 * const r: RandomizationResult = pairedRandomization([1, 1], [0, 0], { shuffles: 99 });
 * if (r.meanDifference !== 1 || r.shuffles !== 99) throw new Error(JSON.stringify(r));
 * ```
 */
export interface RandomizationResult {
  /** mean(a) − mean(b), i.e. T / n. */
  readonly meanDifference: number;
  /** Number of shuffles R. */
  readonly shuffles: number;
  /** The seed used. */
  readonly seed: number | bigint;
  /** Shuffles with |T*| ≥ |T|. */
  readonly atLeastAsExtreme: number;
  /** The two-sided p-value `(atLeastAsExtreme + 1) / (shuffles + 1)`. */
  readonly pValue: number;
}

/**
 * The paired approximate-randomization test of mean(a) = mean(b), two-sided
 * (see the module notes for the exact procedure and formula). `a` and `b`
 * are two systems' per-question scores on the same questions in the same
 * order. Throws a `RangeError` on unequal or zero lengths, a non-finite
 * score, or a bad `shuffles` or `seed`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pairedRandomization } from "./randomization.ts";
 * // Every one of the 2⁶ assignments of 6 discordant EM pairs: |T*| ≥ 6 only for 2 of them.
 * const r = pairedRandomization([1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0], { shuffles: 9999 });
 * assert.ok(Math.abs(r.pValue - 2 / 64) < 0.01);
 * assert.equal(r.meanDifference, 1);
 * ```
 */
export function pairedRandomization(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  opts: RandomizationOptions = {},
): RandomizationResult {
  return runSteps(pairedRandomizationSteps(a, b, opts));
}

/**
 * {@linkcode pairedRandomization} in steps (`steps.ts`): the same coin
 * flips, sums and result to the bit, pausing about every
 * {@linkcode STEP_WORK} operations. The arguments are checked, and the same
 * `RangeError`s thrown, at the first `next()`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pairedRandomization, pairedRandomizationSteps } from "./randomization.ts";
 * const a = [1, 1, 1, 1, 1, 1], b = [0, 0, 0, 0, 0, 0];
 * const steps = pairedRandomizationSteps(a, b, { shuffles: 200_000 });
 * let pauses = 0;
 * let r = steps.next();
 * for (; !r.done; r = steps.next()) pauses++;
 * assert.ok(pauses > 1);
 * assert.deepEqual(r.value, pairedRandomization(a, b, { shuffles: 200_000 }));
 * ```
 */
export function* pairedRandomizationSteps(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  opts: RandomizationOptions = {},
): Steps<RandomizationResult> {
  const R = opts.shuffles ?? 10000;
  const seed = opts.seed ?? 0;
  if (!Number.isSafeInteger(R) || R < 1) {
    throw new RangeError(`shuffles must be a positive integer, got ${R}`);
  }
  const [x, y] = scoresOf([a, b]);
  const n = x.length;
  const d = new Float64Array(n);
  let t0 = 0;
  let abs = 0;
  for (let i = 0; i < n; i++) {
    d[i] = x[i] - y[i];
    t0 += d[i];
    abs += Math.abs(d[i]);
  }
  const bound = Math.abs(t0) - n * 2 ** -52 * abs;
  const g = new Xoshiro128StarStar(seed);
  // Shuffles per step: about STEP_WORK coin flips and additions.
  const chunk = Math.max(1, Math.floor(STEP_WORK / n));
  let count = 0;
  for (let r0 = 0; r0 < R; r0 += chunk) {
    count += shuffles(d, bound, g, Math.min(R, r0 + chunk) - r0);
    yield;
  }
  return {
    meanDifference: t0 / n,
    shuffles: R,
    seed,
    atLeastAsExtreme: count,
    pValue: (count + 1) / (R + 1),
  };
}

/** `m` shuffles of the differences `d` (see the module notes): how many reach `bound`. */
function shuffles(d: Float64Array, bound: number, g: Xoshiro128StarStar, m: number): number {
  const n = d.length;
  let count = 0;
  for (let r = 0; r < m; r++) {
    let t = 0;
    let w = 0;
    for (let i = 0; i < n; i++) {
      const k = i & 31;
      if (k === 0) w = g.nextUint32();
      t += ((w >>> (31 - k)) & 1) === 1 ? -d[i] : d[i];
    }
    if (Math.abs(t) >= bound) count++;
  }
  return count;
}
