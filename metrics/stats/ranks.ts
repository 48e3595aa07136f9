/**
 * Bootstrap rank intervals for N systems scored on the same questions: how
 * sure is the ranking of the systems by mean score?
 *
 * Exactly: the B replicate means are those of {@linkcode pairedBootstrap}
 * (per-question resampling) or, with `clusters`, of
 * {@linkcode pairedClusterBootstrap} (the same draws, seed and order: the
 * module notes of `bootstrap.ts` and `clusters.ts`). In each replicate the
 * systems are ranked by mean, best first, with **competition ranking for
 * ties**: a system's rank is 1 + the number of systems whose replicate
 * mean is strictly higher (SciPy's `rankdata(-means, method="min")`), so
 * systems tied on a replicate share the better rank. For each system:
 *
 * - `rank`: its rank by the plain means over all questions (same rule);
 * - `low`, `high`: the `percentiles` (default [2.5, 97.5]) of its B replicate
 *   ranks, the lower end by NumPy's `method="lower"` (the order statistic
 *   at ⌊h⌋) and the upper end by `method="higher"` (at ⌈h⌉), h = (B − 1)·p/100,
 *   so both ends are whole ranks and the interval holds NumPy's linear one;
 * - `first`: the share of replicates in which it has rank 1 (systems tied
 *   for the best replicate mean each count that replicate, so the shares
 *   can add up to more than 1).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bootstrapRanks } from "./ranks.ts";
 * const strong = [1, 1, 1, 1, 1, 1, 1, 1, 0, 1], weak = [0, 0, 1, 0, 0, 0, 0, 0, 0, 0];
 * const r = bootstrapRanks([weak, strong, strong]);
 * assert.deepEqual(r.systems.map((s) => [s.rank, s.low, s.high, s.first]), [[3, 3, 3, 0], [1, 1, 1, 1], [1, 1, 1, 1]]);
 * ```
 *
 * @module
 */
import { bootstrapSettings, scoresOf } from "./_scores.ts";
import type { BootstrapOptions } from "./bootstrap.ts";
import {
  type ClusterId,
  clusterIndex,
  clusterReplicatesSteps,
  singletonIndex,
} from "./clusters.ts";
import { runSteps, STEP_WORK, type Steps } from "./steps.ts";

/** Options of {@linkcode bootstrapRanks}: the bootstrap's, and optional clusters. */
export interface RankOptions extends BootstrapOptions {
  /**
   * One cluster id per question: resample clusters (the cluster bootstrap
   * of `clusters.ts`) instead of questions.
   */
  readonly clusters?: ArrayLike<ClusterId>;
}

/**
 * One system's rank and its bootstrap interval (1 = best).
 *
 * @example
 * ```ts
 * import type { RankInterval } from "./ranks.ts";
 * import { bootstrapRanks } from "./ranks.ts";
 * const s: RankInterval = bootstrapRanks([[1, 1], [0, 0]]).systems[1];
 * if (s.rank !== 2 || s.low !== 2 || s.high !== 2 || s.first !== 0) throw new Error(JSON.stringify(s));
 * ```
 */
export interface RankInterval {
  /** The plain mean over all questions. */
  readonly mean: number;
  /** Its rank by the plain means (competition ranking, 1 = best). */
  readonly rank: number;
  /** The lower percentile of its replicate ranks (NumPy `method="lower"`). */
  readonly low: number;
  /** The upper percentile of its replicate ranks (NumPy `method="higher"`). */
  readonly high: number;
  /** The share of replicates in which it ranks first (ties included). */
  readonly first: number;
}

/**
 * What {@linkcode bootstrapRanks} returns.
 *
 * @example
 * ```ts
 * import type { RankResult } from "./ranks.ts";
 * import { bootstrapRanks } from "./ranks.ts";
 * const r: RankResult = bootstrapRanks([[1, 0], [0, 1], [1, 1]], { resamples: 10, clusters: ["p", "q"] });
 * if (r.systems.length !== 3 || r.clusters !== 2 || r.questions !== 2) throw new Error(JSON.stringify(r));
 * ```
 */
export interface RankResult {
  /** Number of questions n. */
  readonly questions: number;
  /** Number of clusters resampled (n without `clusters`). */
  readonly clusters: number;
  /** Number of resamples B. */
  readonly resamples: number;
  /** The seed used. */
  readonly seed: number | bigint;
  /** The percentiles the ends are. */
  readonly percentiles: readonly [number, number];
  /** One entry per system, in input order. */
  readonly systems: readonly RankInterval[];
}

/**
 * Bootstrap rank intervals of the systems (see the module notes). `systems`
 * holds one array of per-question scores per system (same length, same
 * question order). Throws a `RangeError` on what
 * {@linkcode pairedBootstrap} refuses and, with `clusters`, on what
 * {@linkcode pairedClusterBootstrap} refuses.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bootstrapRanks } from "./ranks.ts";
 * const a = [1, 1, 0, 1, 1, 0, 1, 1, 1, 0];
 * const b = [1, 1, 0, 1, 0, 0, 1, 1, 1, 0];
 * const c = [0, 0, 0, 1, 0, 0, 0, 1, 0, 0];
 * const r = bootstrapRanks([a, b, c], { resamples: 2000, seed: 1 });
 * assert.deepEqual(r.systems.map((s) => s.rank), [1, 2, 3]);
 * // a and b differ on one question: a is never behind b, and often tied with it
 * assert.equal(r.systems[0].low, 1);
 * assert.equal(r.systems[0].first, 1);
 * assert.ok(r.systems[1].first > 0.3 && r.systems[1].first < 0.4); // (9/10)^10 ≈ 0.35: the question missed
 * ```
 */
export function bootstrapRanks(
  systems: readonly ArrayLike<number>[],
  opts: RankOptions = {},
): RankResult {
  return runSteps(bootstrapRanksSteps(systems, opts));
}

/**
 * {@linkcode bootstrapRanks} in steps (`steps.ts`): the same result, pausing
 * about every {@linkcode STEP_WORK} operations. The arguments are checked,
 * and the same `RangeError`s thrown, at the first `next()`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bootstrapRanks, bootstrapRanksSteps } from "./ranks.ts";
 * const s = [[1, 0, 1, 1], [0, 0, 1, 1], [1, 1, 1, 0]];
 * const steps = bootstrapRanksSteps(s, { resamples: 300_000 });
 * let pauses = 0;
 * let r = steps.next();
 * for (; !r.done; r = steps.next()) pauses++;
 * assert.ok(pauses > 1);
 * assert.deepEqual(r.value, bootstrapRanks(s, { resamples: 300_000 }));
 * ```
 */
export function* bootstrapRanksSteps(
  systems: readonly ArrayLike<number>[],
  opts: RankOptions = {},
): Steps<RankResult> {
  const { B, seed, pct } = bootstrapSettings(opts);
  const cols = scoresOf(systems);
  const k = cols.length;
  const n = cols[0].length;
  if (opts.clusters !== undefined && opts.clusters.length !== n) {
    throw new RangeError(`${opts.clusters.length} cluster ids for ${n} questions`);
  }
  const ix = opts.clusters === undefined ? singletonIndex(n) : clusterIndex(opts.clusters);
  const reps = yield* clusterReplicatesSteps(cols, ix, B, seed);
  // counts[s][v]: replicates in which system s has rank v + 1
  const counts = cols.map(() => new Float64Array(k));
  const chunk = Math.max(1, Math.floor(STEP_WORK / (k * k)));
  for (let r0 = 0; r0 < B; r0 += chunk) {
    for (let r = r0; r < Math.min(B, r0 + chunk); r++) {
      for (let s = 0; s < k; s++) {
        const v = reps[s][r];
        let above = 0;
        for (let t = 0; t < k; t++) if (reps[t][r] > v) above++;
        counts[s][above]++;
      }
    }
    yield;
  }
  const means = cols.map((col) => {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += col[i];
    return sum / n;
  });
  /** The rank at sorted position j (0-based) of system s's B replicate ranks. */
  const at = (s: number, j: number): number => {
    let seen = 0;
    for (let v = 0; v < k; v++) {
      seen += counts[s][v];
      if (seen > j) return v + 1;
    }
    return k;
  };
  const out: RankInterval[] = cols.map((_, s) => {
    const hLow = (B - 1) * (pct[0] / 100);
    const hHigh = (B - 1) * (pct[1] / 100);
    return {
      mean: means[s],
      rank: 1 + means.filter((m) => m > means[s]).length,
      low: at(s, Math.floor(hLow)),
      high: at(s, Math.min(B - 1, Math.ceil(hHigh))),
      first: counts[s][0] / B,
    };
  });
  return {
    questions: n,
    clusters: ix.count,
    resamples: B,
    seed,
    percentiles: pct,
    systems: out,
  };
}
