/**
 * Clustered resampling: the paired **cluster bootstrap** of mean scores and
 * the paired **clustered randomization test**, for questions that are not
 * independent (SQuAD asks several questions about one paragraph, several
 * paragraphs about one article). Both take, next to the per-question scores,
 * one cluster id per question (strings or numbers, in any order: the
 * questions of a cluster need not be adjacent).
 *
 * Clusters are numbered by first appearance: cluster 0 holds question 0,
 * cluster 1 the first question of another cluster, and so on
 * ({@linkcode clusterIndex}; ids are told apart as a `Map` tells keys apart,
 * so `1` and `"1"` are two clusters). Each system's score sum `Sₛ[c]` over
 * cluster c is added in question order, and `m[c]` is the cluster's size.
 *
 * **Cluster bootstrap** ({@linkcode pairedClusterBootstrap}): with C
 * clusters and B resamples (default 1000) from a
 * {@linkcode Xoshiro128StarStar} seeded with `seed` (default 0), resample r
 * draws C cluster indices `c = g.below(C)` one after another (with
 * replacement; every cluster drawn brings all its questions); system s's
 * replicate mean is `Σ Sₛ[c] / Σ m[c]` over the drawn clusters, both sums
 * in draw order (the standard cluster bootstrap of a mean: the ratio of
 * the resampled score sum to the resampled number of questions). Paired:
 * every system is resampled on the same clusters. Differences, percentiles
 * (NumPy's linear definition, `bootstrap.ts` `percentile`) and point estimates
 * (plain means over the n questions) are those of
 * {@linkcode pairedBootstrap}.
 *
 * **Clustered randomization** ({@linkcode pairedClusterRandomization}):
 * with dᵢ = aᵢ − bᵢ, T = Σᵢ dᵢ (question order) and Dc = Σ_{i∈c} dᵢ, each
 * of R shuffles (default 10,000) swaps the two systems' scores on a whole
 * cluster at once with probability 1/2, i.e. replaces Dc by −Dc; the C coin
 * flips of a shuffle are one call of {@linkcode Xoshiro128StarStar.bits}
 * (flip 1: swap), and T* = Σ_c ±Dc in cluster order. The p-value is
 * {@linkcode pairedRandomization}'s: p = (#{r : |T*ᵣ| ≥ |T|} + 1) / (R + 1),
 * `≥` judged with the slack n·2⁻⁵²·Σ|dᵢ|.
 *
 * **Singleton clusters reproduce the per-question functions exactly.** When
 * every question is its own cluster, cluster c is question c, Sₛ[c] is the
 * score itself (0 + x = x), Σ m[c] = n, and the draws (`below(n)` n times
 * per resample; n coin flips per shuffle) are those of
 * {@linkcode pairedBootstrap} and {@linkcode pairedRandomization}, added
 * in the same order: the results are equal to the bit for the same seed
 * (plus the field `clusters`, here n). `tests/metrics/cluster_stats_test.ts`
 * checks this, and checks both against a NumPy reference
 * (`bench/reference/cluster_stats.py`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pairedClusterBootstrap } from "./clusters.ts";
 * import { pairedBootstrap } from "./bootstrap.ts";
 * const a = [1, 1, 0, 1, 0, 1], b = [1, 0, 0, 1, 0, 0];
 * // every question its own cluster: the per-question bootstrap, to the bit
 * const { clusters, ...same } = pairedClusterBootstrap([a, b], ["q1", "q2", "q3", "q4", "q5", "q6"]);
 * assert.equal(clusters, 6);
 * assert.deepEqual(same, pairedBootstrap([a, b]));
 * ```
 *
 * @module
 */
import { percentileIntervalsSteps } from "./bootstrap.ts";
import type { BootstrapOptions, BootstrapResult } from "./bootstrap.ts";
import { bootstrapSettings, scoresOf } from "./_scores.ts";
import { Xoshiro128StarStar } from "./prng.ts";
import type { RandomizationOptions, RandomizationResult } from "./randomization.ts";
import { runSteps, STEP_WORK, type Steps } from "./steps.ts";

/** A cluster id: any string or number (compared as `Map` keys are). */
export type ClusterId = string | number;

/**
 * Questions grouped into clusters, numbered by first appearance.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { clusterIndex, type ClusterIndex } from "./clusters.ts";
 * const ix: ClusterIndex = clusterIndex(["b", "a", "b"]);
 * assert.deepEqual([ix.count, [...ix.of], [...ix.sizes]], [2, [0, 1, 0], [2, 1]]);
 * ```
 */
export interface ClusterIndex {
  /** Number of clusters C. */
  readonly count: number;
  /** Per question, its cluster's number in [0, C). */
  readonly of: Int32Array;
  /** Per cluster, its number of questions (each ≥ 1). */
  readonly sizes: Int32Array;
}

/**
 * Numbers the clusters of `ids` (one id per question) by first appearance
 * (see the module notes). Throws a `RangeError` on an id that is neither a
 * string nor a number.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { clusterIndex } from "./clusters.ts";
 * const ix = clusterIndex([7, 3, 7, "7", 3]);
 * assert.equal(ix.count, 3); // 7, 3 and "7"
 * assert.deepEqual([...ix.of], [0, 1, 0, 2, 1]);
 * assert.deepEqual([...ix.sizes], [2, 2, 1]);
 * ```
 */
export function clusterIndex(ids: ArrayLike<ClusterId>): ClusterIndex {
  const n = ids.length;
  const seen = new Map<ClusterId, number>();
  const of = new Int32Array(n);
  const sizes: number[] = [];
  for (let i = 0; i < n; i++) {
    const id = ids[i];
    if (typeof id !== "string" && typeof id !== "number") {
      throw new RangeError(`cluster id at index ${i} is ${String(id)}, not a string or a number`);
    }
    let c = seen.get(id);
    if (c === undefined) {
      c = sizes.length;
      seen.set(id, c);
      sizes.push(0);
    }
    of[i] = c;
    sizes[c]++;
  }
  return { count: sizes.length, of, sizes: Int32Array.from(sizes) };
}

/** The checked cluster index for n questions. */
function indexFor(clusters: ArrayLike<ClusterId>, n: number): ClusterIndex {
  if (clusters.length !== n) {
    throw new RangeError(`${clusters.length} cluster ids for ${n} questions`);
  }
  return clusterIndex(clusters);
}

/** Per cluster, the sum of `col` over its questions, added in question order. */
function clusterSums(col: Float64Array, ix: ClusterIndex): Float64Array {
  const s = new Float64Array(ix.count);
  for (let i = 0; i < col.length; i++) s[ix.of[i]] += col[i];
  return s;
}

/**
 * The B replicate means of every system under the cluster bootstrap (see
 * the module notes), `reps[s][r]`, in steps. Used by this module and by
 * {@linkcode bootstrapRanks}; with {@linkcode singletonIndex} the replicates
 * are {@linkcode pairedBootstrap}'s.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { clusterIndex, clusterReplicatesSteps } from "./clusters.ts";
 * import { runSteps } from "./steps.ts";
 * const reps = runSteps(clusterReplicatesSteps([Float64Array.of(1, 1, 0)], clusterIndex([0, 0, 1]), 4, 0));
 * // each replicate mean is 0, 1/2, 2/3 or 1 (two draws of the clusters {1, 1} and {0})
 * assert.ok([...reps[0]].every((v) => [0, 0.5, 2 / 3, 1].includes(v)));
 * ```
 */
export function* clusterReplicatesSteps(
  cols: readonly Float64Array[],
  ix: ClusterIndex,
  B: number,
  seed: number | bigint,
): Steps<Float64Array[]> {
  const k = cols.length;
  const C = ix.count;
  const sums = cols.map((col) => clusterSums(col, ix));
  const sizes = ix.sizes;
  const reps = cols.map(() => new Float64Array(B));
  const idx = new Int32Array(C);
  const g = new Xoshiro128StarStar(seed);
  const reject = 4294967296 % C;
  // Resamples per step: about STEP_WORK draws and additions.
  const chunk = Math.max(1, Math.floor(STEP_WORK / (C * (k + 2))));
  for (let r0 = 0; r0 < B; r0 += chunk) {
    const r1 = Math.min(B, r0 + chunk);
    for (let r = r0; r < r1; r++) {
      let m = 0;
      for (let i = 0; i < C; i++) {
        let x = g.nextUint32();
        while (x < reject) x = g.nextUint32();
        // x mod C exactly (as g.below(C) computes it)
        const c = x - Math.floor(x / C) * C;
        idx[i] = c;
        m += sizes[c];
      }
      for (let s = 0; s < k; s++) {
        const col = sums[s];
        let sum = 0;
        for (let i = 0; i < C; i++) sum += col[idx[i]];
        reps[s][r] = sum / m;
      }
    }
    yield;
  }
  return reps;
}

/**
 * The cluster index of n questions each in its own cluster (cluster i is
 * question i).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { singletonIndex } from "./clusters.ts";
 * assert.deepEqual([...singletonIndex(3).of], [0, 1, 2]);
 * ```
 */
export function singletonIndex(n: number): ClusterIndex {
  return {
    count: n,
    of: Int32Array.from({ length: n }, (_, i) => i),
    sizes: new Int32Array(n).fill(1),
  };
}

/**
 * What {@linkcode pairedClusterBootstrap} returns: {@linkcode pairedBootstrap}'s
 * result and the number of clusters.
 *
 * @example
 * ```ts
 * import type { ClusterBootstrapResult } from "./clusters.ts";
 * import { pairedClusterBootstrap } from "./clusters.ts";
 * const r: ClusterBootstrapResult = pairedClusterBootstrap([[1, 0, 1]], ["p", "p", "q"]);
 * if (r.clusters !== 2 || r.questions !== 3) throw new Error(JSON.stringify(r));
 * ```
 */
export interface ClusterBootstrapResult extends BootstrapResult {
  /** Number of clusters C. */
  readonly clusters: number;
}

/**
 * Paired cluster bootstrap percentile intervals for each system's mean
 * score and for every pairwise difference (see the module notes). `systems`
 * holds one array of per-question scores per system (same length, same
 * question order), `clusters` one cluster id per question. Throws a
 * `RangeError` on what {@linkcode pairedBootstrap} refuses, on a number of
 * cluster ids other than the number of questions, or on an id that is
 * neither a string nor a number.
 *
 * Cost: B·C index draws and B·C·(k + 1) additions (C clusters, k systems),
 * less than the per-question bootstrap's.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pairedClusterBootstrap } from "./clusters.ts";
 * // three paragraphs: the questions of one paragraph are right or wrong together
 * const a = [1, 1, 1, 0, 0, 1, 1];
 * const b = [1, 1, 1, 0, 0, 0, 0];
 * const para = ["p1", "p1", "p1", "p2", "p2", "p3", "p3"];
 * const r = pairedClusterBootstrap([a, b], para, { resamples: 2000, seed: 7 });
 * assert.equal(r.clusters, 3);
 * assert.ok(Math.abs(r.differences[0].mean - 2 / 7) < 1e-15); // 5/7 − 3/7
 * assert.equal(r.differences[0].low, 0); // a resample without p3 has no difference
 * ```
 */
export function pairedClusterBootstrap(
  systems: readonly ArrayLike<number>[],
  clusters: ArrayLike<ClusterId>,
  opts: BootstrapOptions = {},
): ClusterBootstrapResult {
  return runSteps(pairedClusterBootstrapSteps(systems, clusters, opts));
}

/**
 * {@linkcode pairedClusterBootstrap} in steps (`steps.ts`): the same draws,
 * sums and result to the bit, pausing about every {@linkcode STEP_WORK}
 * operations. The arguments are checked, and the same `RangeError`s
 * thrown, at the first `next()`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pairedClusterBootstrap, pairedClusterBootstrapSteps } from "./clusters.ts";
 * const a = [1, 1, 0, 1, 1, 0, 1, 1], b = [1, 0, 0, 1, 0, 0, 1, 0];
 * const ids = [1, 1, 2, 2, 3, 3, 4, 4];
 * const steps = pairedClusterBootstrapSteps([a, b], ids, { resamples: 200_000 });
 * let pauses = 0;
 * let r = steps.next();
 * for (; !r.done; r = steps.next()) pauses++;
 * assert.ok(pauses > 1);
 * assert.deepEqual(r.value, pairedClusterBootstrap([a, b], ids, { resamples: 200_000 }));
 * ```
 */
export function* pairedClusterBootstrapSteps(
  systems: readonly ArrayLike<number>[],
  clusters: ArrayLike<ClusterId>,
  opts: BootstrapOptions = {},
): Steps<ClusterBootstrapResult> {
  const { B, seed, pct } = bootstrapSettings(opts);
  const cols = scoresOf(systems);
  const n = cols[0].length;
  const ix = indexFor(clusters, n);
  const reps = yield* clusterReplicatesSteps(cols, ix, B, seed);
  const { systems: intervals, differences } = yield* percentileIntervalsSteps(cols, reps, B, pct);
  return {
    questions: n,
    resamples: B,
    seed,
    percentiles: pct,
    systems: intervals,
    differences,
    clusters: ix.count,
  };
}

/**
 * What {@linkcode pairedClusterRandomization} returns:
 * {@linkcode pairedRandomization}'s result and the number of clusters.
 *
 * @example
 * ```ts
 * import type { ClusterRandomizationResult } from "./clusters.ts";
 * import { pairedClusterRandomization } from "./clusters.ts";
 * const r: ClusterRandomizationResult = pairedClusterRandomization([1, 1], [0, 0], ["p", "p"]);
 * if (r.clusters !== 1 || r.pValue !== 1) throw new Error(JSON.stringify(r));
 * ```
 */
export interface ClusterRandomizationResult extends RandomizationResult {
  /** Number of clusters C. */
  readonly clusters: number;
}

/**
 * The paired clustered approximate-randomization test of mean(a) = mean(b),
 * two-sided, swapping whole clusters (see the module notes). `a` and `b` are
 * two systems' per-question scores in the same question order, `clusters`
 * one cluster id per question. Throws a `RangeError` on what
 * {@linkcode pairedRandomization} refuses and on bad cluster ids.
 *
 * With C clusters there are only 2^C assignments: p can not go below about
 * 2^(1−C), however many shuffles.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pairedClusterRandomization } from "./clusters.ts";
 * import { pairedRandomization } from "./randomization.ts";
 * const a = [1, 1, 1, 1, 1, 1], b = [0, 0, 0, 0, 0, 0];
 * // 6 independent questions: p ≈ 2/2⁶; the same 6 in 2 paragraphs: p ≈ 2/2² = 0.5
 * assert.ok(pairedRandomization(a, b).pValue < 0.05);
 * const r = pairedClusterRandomization(a, b, ["x", "x", "x", "y", "y", "y"]);
 * assert.ok(Math.abs(r.pValue - 0.5) < 0.02);
 * ```
 */
export function pairedClusterRandomization(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  clusters: ArrayLike<ClusterId>,
  opts: RandomizationOptions = {},
): ClusterRandomizationResult {
  return runSteps(pairedClusterRandomizationSteps(a, b, clusters, opts));
}

/**
 * {@linkcode pairedClusterRandomization} in steps (`steps.ts`): the same coin
 * flips, sums and result to the bit, pausing about every
 * {@linkcode STEP_WORK} operations. The arguments are checked, and the same
 * `RangeError`s thrown, at the first `next()`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pairedClusterRandomization, pairedClusterRandomizationSteps } from "./clusters.ts";
 * const a = [1, 1, 0, 1, 1, 1], b = [0, 0, 0, 1, 0, 0], ids = [1, 2, 3, 4, 5, 6];
 * const steps = pairedClusterRandomizationSteps(a, b, ids, { shuffles: 200_000 });
 * let pauses = 0;
 * let r = steps.next();
 * for (; !r.done; r = steps.next()) pauses++;
 * assert.ok(pauses > 1);
 * assert.deepEqual(r.value, pairedClusterRandomization(a, b, ids, { shuffles: 200_000 }));
 * ```
 */
export function* pairedClusterRandomizationSteps(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  clusters: ArrayLike<ClusterId>,
  opts: RandomizationOptions = {},
): Steps<ClusterRandomizationResult> {
  const R = opts.shuffles ?? 10000;
  const seed = opts.seed ?? 0;
  if (!Number.isSafeInteger(R) || R < 1) {
    throw new RangeError(`shuffles must be a positive integer, got ${R}`);
  }
  const [x, y] = scoresOf([a, b]);
  const n = x.length;
  const ix = indexFor(clusters, n);
  const d = new Float64Array(n);
  let t0 = 0;
  let abs = 0;
  for (let i = 0; i < n; i++) {
    d[i] = x[i] - y[i];
    t0 += d[i];
    abs += Math.abs(d[i]);
  }
  const D = clusterSums(d, ix);
  const C = ix.count;
  // Σ_c ±Dc differs from the exact value by less than this (any order of
  // n additions); so does t0.
  const bound = Math.abs(t0) - n * 2 ** -52 * abs;
  const g = new Xoshiro128StarStar(seed);
  const chunk = Math.max(1, Math.floor(STEP_WORK / C));
  let count = 0;
  for (let r0 = 0; r0 < R; r0 += chunk) {
    const m = Math.min(R, r0 + chunk) - r0;
    for (let r = 0; r < m; r++) {
      let t = 0;
      let w = 0;
      for (let c = 0; c < C; c++) {
        const k = c & 31;
        if (k === 0) w = g.nextUint32();
        t += ((w >>> (31 - k)) & 1) === 1 ? -D[c] : D[c];
      }
      if (Math.abs(t) >= bound) count++;
    }
    yield;
  }
  return {
    meanDifference: t0 / n,
    shuffles: R,
    seed,
    atLeastAsExtreme: count,
    pValue: (count + 1) / (R + 1),
    clusters: C,
  };
}
