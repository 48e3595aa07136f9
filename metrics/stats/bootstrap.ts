/**
 * Paired bootstrap confidence intervals (percentile method) for the mean of
 * per-question scores (EM, F1, BEM, anything) of one or more systems on the
 * same questions, and for the difference of every two systems' means.
 *
 * Exactly: with n questions and B resamples (default 1000) from a
 * {@linkcode Xoshiro128StarStar} seeded with `seed` (default 0), resample r
 * draws n question indices `j = g.below(n)` one after another (with
 * replacement); every system is scored on the *same* indices (paired), its
 * replicate mean being the sum of its scores at the drawn indices, added in
 * draw order, divided by n; the replicate difference of systems s and t is
 * `mean*_s − mean*_t`. The interval's ends are the `percentiles` (default
 * [2.5, 97.5]) of the B replicate values by NumPy's default definition
 * (`numpy.percentile(..., method="linear")`, Hyndman and Fan's type 7; see
 * {@linkcode percentile}). The point estimates are the plain means over the
 * n questions (and their differences), not bootstrap means.
 *
 * Identical systems give a difference of exactly 0 with the interval [0, 0].
 *
 * @example
 * ```ts
 * import { pairedBootstrap } from "./bootstrap.ts";
 * const em = [1, 0, 1, 1, 0, 1, 0, 1];
 * const r = pairedBootstrap([em, em]);
 * const d = r.differences[0];
 * if (d.mean !== 0 || d.low !== 0 || d.high !== 0) throw new Error(JSON.stringify(d));
 * ```
 *
 * @module
 */
import { bootstrapSettings, scoresOf } from "./_scores.ts";
import { Xoshiro128StarStar } from "./prng.ts";
import { runSteps, sortedSteps, STEP_WORK, type Steps } from "./steps.ts";

/**
 * The `p`-th percentile (0 ≤ p ≤ 100) of values sorted ascending, as
 * `numpy.percentile(values, p)` computes it (method `"linear"`): q = p/100,
 * h = (m − 1)·q, i = ⌊h⌋, g = h − i, and with a = v[i], b = v[i+1] the
 * result is `a + (b − a)·g` when g < 0.5 and `b − (b − a)·(1 − g)` otherwise
 * (NumPy's `_lerp`, so even the rounding is the same); h ≥ m − 1 gives the
 * largest value. Throws a `RangeError` on an empty array or p outside
 * [0, 100].
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { percentile } from "./bootstrap.ts";
 * const v = Float64Array.of(1, 2, 3, 4, 10);
 * assert.equal(percentile(v, 50), 3);
 * assert.equal(percentile(v, 97.5), 9.399999999999999); // numpy.percentile([1, 2, 3, 4, 10], 97.5), to the bit
 * assert.equal(percentile(v, 100), 10);
 * ```
 */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  const m = sorted.length;
  if (m === 0) throw new RangeError("percentile of no values");
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile must lie in [0, 100], got ${p}`);
  const q = p / 100;
  const h = (m - 1) * q;
  if (h >= m - 1) return sorted[m - 1];
  const i = Math.floor(h);
  const g = h - i;
  const a = sorted[i];
  const b = sorted[i + 1];
  const diff = b - a;
  return g >= 0.5 ? b - diff * (1 - g) : a + diff * g;
}

/** Options of {@linkcode pairedBootstrap}. */
export interface BootstrapOptions {
  /** Number of resamples B (a positive integer; default 1000). */
  readonly resamples?: number;
  /** The generator's seed (an integer in [0, 2⁶⁴); default 0). */
  readonly seed?: number | bigint;
  /** The interval's ends as percentiles (default `[2.5, 97.5]`, a 95 % interval). */
  readonly percentiles?: readonly [number, number];
}

/**
 * A mean with its bootstrap interval.
 *
 * @example
 * ```ts
 * import type { MeanInterval } from "./bootstrap.ts";
 * import { pairedBootstrap } from "./bootstrap.ts";
 * const iv: MeanInterval = pairedBootstrap([[1, 1, 1]]).systems[0];
 * if (iv.mean !== 1 || iv.low !== 1 || iv.high !== 1) throw new Error(JSON.stringify(iv));
 * ```
 */
export interface MeanInterval {
  /** The mean over all questions (for a difference: the difference of the means). */
  readonly mean: number;
  /** The lower percentile of the replicates. */
  readonly low: number;
  /** The upper percentile of the replicates. */
  readonly high: number;
}

/**
 * The interval of `mean(systems[a]) − mean(systems[b])`.
 *
 * @example
 * ```ts
 * import type { DifferenceInterval } from "./bootstrap.ts";
 * import { pairedBootstrap } from "./bootstrap.ts";
 * const d: DifferenceInterval = pairedBootstrap([[1, 1], [0, 0]]).differences[0];
 * if (d.a !== 0 || d.b !== 1 || d.mean !== 1 || d.low !== 1) throw new Error(JSON.stringify(d));
 * ```
 */
export interface DifferenceInterval extends MeanInterval {
  /** Index of the first system (the minuend). */
  readonly a: number;
  /** Index of the second system (the subtrahend). */
  readonly b: number;
}

/**
 * What {@linkcode pairedBootstrap} returns.
 *
 * @example
 * ```ts
 * import type { BootstrapResult } from "./bootstrap.ts";
 * import { pairedBootstrap } from "./bootstrap.ts";
 * const r: BootstrapResult = pairedBootstrap([[1, 0], [0, 0], [1, 1]], { resamples: 10 });
 * if (r.differences.length !== 3 || r.questions !== 2) throw new Error(JSON.stringify(r));
 * ```
 */
export interface BootstrapResult {
  /** Number of questions n. */
  readonly questions: number;
  /** Number of resamples B. */
  readonly resamples: number;
  /** The seed used. */
  readonly seed: number | bigint;
  /** The percentiles the ends are. */
  readonly percentiles: readonly [number, number];
  /** One interval per system, in input order. */
  readonly systems: readonly MeanInterval[];
  /** One interval per pair `a < b` of systems, ordered (0,1), (0,2), …, (1,2), …. */
  readonly differences: readonly DifferenceInterval[];
}

/** Sum in index order, then divided by n. */
function mean(xs: Float64Array): number {
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += xs[i];
  return s / xs.length;
}

/**
 * Paired bootstrap percentile intervals for each system's mean score and
 * for every pairwise difference (see the module notes for the exact
 * procedure). `systems` holds one array of per-question scores per system,
 * all of the same length and question order. Throws a `RangeError` on no
 * systems, no questions, unequal lengths, a non-finite score, a bad
 * `resamples`, `seed` or `percentiles`.
 *
 * Cost: B·n index draws and B·n·k additions (k systems); B = 20,000 over the
 * 10,570 dev questions takes a few seconds.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pairedBootstrap } from "./bootstrap.ts";
 * const a = [1, 1, 0, 1, 1, 0, 1, 1];
 * const b = [1, 0, 0, 1, 0, 0, 1, 0];
 * const r = pairedBootstrap([a, b], { resamples: 2000, seed: 7 });
 * assert.equal(r.systems[0].mean, 0.75);
 * assert.equal(r.differences[0].mean, 0.375);
 * assert.ok(r.differences[0].low <= 0.375 && 0.375 <= r.differences[0].high);
 * ```
 */
export function pairedBootstrap(
  systems: readonly ArrayLike<number>[],
  opts: BootstrapOptions = {},
): BootstrapResult {
  return runSteps(pairedBootstrapSteps(systems, opts));
}

/**
 * {@linkcode pairedBootstrap} in steps (`steps.ts`): the same draws, sums
 * and result to the bit, pausing about every {@linkcode STEP_WORK}
 * operations (during the resampling and the sorts of the replicates). The
 * arguments are checked, and the same `RangeError`s thrown, at the first
 * `next()`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pairedBootstrap, pairedBootstrapSteps } from "./bootstrap.ts";
 * const a = [1, 1, 0, 1, 1, 0, 1, 1];
 * const b = [1, 0, 0, 1, 0, 0, 1, 0];
 * const steps = pairedBootstrapSteps([a, b], { resamples: 200_000, seed: 7 });
 * let pauses = 0;
 * let r = steps.next();
 * for (; !r.done; r = steps.next()) pauses++;
 * assert.ok(pauses > 1);
 * assert.deepEqual(r.value, pairedBootstrap([a, b], { resamples: 200_000, seed: 7 }));
 * ```
 */
export function* pairedBootstrapSteps(
  systems: readonly ArrayLike<number>[],
  opts: BootstrapOptions = {},
): Steps<BootstrapResult> {
  const { B, seed, pct } = bootstrapSettings(opts);
  const cols = scoresOf(systems);
  const k = cols.length;
  const n = cols[0].length;
  const reps = cols.map(() => new Float64Array(B));
  const idx = new Int32Array(n);
  const g = new Xoshiro128StarStar(seed);
  // Resamples per step: about STEP_WORK draws and additions.
  const chunk = Math.max(1, Math.floor(STEP_WORK / (n * (k + 1))));
  for (let r0 = 0; r0 < B; r0 += chunk) {
    resample(cols, reps, idx, g, r0, Math.min(B, r0 + chunk));
    yield;
  }
  const { systems: intervals, differences } = yield* percentileIntervalsSteps(cols, reps, B, pct);
  return {
    questions: n,
    resamples: B,
    seed,
    percentiles: pct,
    systems: intervals,
    differences,
  };
}

/**
 * The percentile intervals of a (cluster) bootstrap's replicates: per
 * system, its mean over the questions and the percentiles `pct` of its
 * `B` replicate means `reps[s]`; per pair `a < b`, the difference of their
 * means and the percentiles of the replicate differences. Pauses (yields)
 * about every `STEP_WORK` values, as the resampling does.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { percentileIntervalsSteps } from "./bootstrap.ts";
 * import { runSteps } from "./steps.ts";
 * const cols = [Float64Array.of(1, 0), Float64Array.of(0, 0)];
 * const reps = [Float64Array.of(0, 0.5, 1), Float64Array.of(0, 0, 0)];
 * const r = runSteps(percentileIntervalsSteps(cols, reps, 3, [0, 100]));
 * assert.deepEqual(r.systems[0], { mean: 0.5, low: 0, high: 1 });
 * assert.deepEqual(r.differences, [{ a: 0, b: 1, mean: 0.5, low: 0, high: 1 }]);
 * ```
 */
export function* percentileIntervalsSteps(
  cols: readonly Float64Array[],
  reps: readonly Float64Array[],
  B: number,
  pct: readonly [number, number],
): Steps<{ systems: MeanInterval[]; differences: DifferenceInterval[] }> {
  const k = cols.length;
  function* interval(values: Float64Array, point: number): Steps<MeanInterval> {
    const sorted = yield* sortedSteps(values);
    return { mean: point, low: percentile(sorted, pct[0]), high: percentile(sorted, pct[1]) };
  }
  const means = cols.map(mean);
  const differences: DifferenceInterval[] = [];
  for (let a = 0; a < k; a++) {
    for (let b = a + 1; b < k; b++) {
      const d = new Float64Array(B);
      for (let r0 = 0; r0 < B; r0 += STEP_WORK) {
        for (let r = r0; r < Math.min(B, r0 + STEP_WORK); r++) d[r] = reps[a][r] - reps[b][r];
        yield;
      }
      differences.push({ a, b, ...(yield* interval(d, means[a] - means[b])) });
    }
  }
  const systems: MeanInterval[] = [];
  for (let s = 0; s < k; s++) systems.push(yield* interval(reps[s], means[s]));
  return { systems, differences };
}

/**
 * Resamples `r0` to `r1 - 1`: for each, n indices drawn from `g` (see the
 * module notes), and each system's mean at them into `reps[s][r]`.
 */
function resample(
  cols: readonly Float64Array[],
  reps: readonly Float64Array[],
  idx: Int32Array,
  g: Xoshiro128StarStar,
  r0: number,
  r1: number,
): void {
  const k = cols.length;
  const n = idx.length;
  const reject = 4294967296 % n;
  for (let r = r0; r < r1; r++) {
    for (let i = 0; i < n; i++) {
      let x = g.nextUint32();
      while (x < reject) x = g.nextUint32();
      // x mod n, exactly (x / n is off by less than 1/n, so the floor is right),
      // and much faster than `%` on values past 2³¹
      idx[i] = x - Math.floor(x / n) * n;
    }
    for (let s = 0; s < k; s++) {
      const col = cols[s];
      let sum = 0;
      for (let i = 0; i < n; i++) sum += col[idx[i]];
      reps[s][r] = sum / n;
    }
  }
}
