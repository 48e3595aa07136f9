/**
 * Statistics for comparing systems on the same questions, Effect-free math
 * over plain and typed arrays, deterministic on every machine:
 *
 * - {@linkcode Xoshiro128StarStar}: the seedable generator every resampling
 *   here draws from (`prng.ts`);
 * - {@linkcode pairedBootstrap}: paired bootstrap percentile intervals for
 *   each system's mean score and for their differences (`bootstrap.ts`);
 * - {@linkcode pairedRandomization}: the paired approximate-randomization
 *   test of a mean difference (`randomization.ts`);
 * - {@linkcode mcnemarExact}, {@linkcode mcnemarPaired}: McNemar's exact test
 *   for binary scores such as EM (`mcnemar.ts`);
 * - {@linkcode pairedClusterBootstrap}, {@linkcode pairedClusterRandomization}:
 *   the same two resamplings over clusters of questions (SQuAD paragraphs or
 *   articles): whole clusters are resampled or swapped; singleton clusters
 *   give the per-question results to the bit (`clusters.ts`);
 * - {@linkcode bootstrapRanks}: bootstrap intervals of N systems' ranks and
 *   the share of resamples each ranks first, per question or clustered
 *   (`ranks.ts`);
 * - {@linkcode holm}, {@linkcode benjaminiHochberg}: adjusted p-values for
 *   many comparisons (`multiple.ts`);
 * - {@linkcode minimumDetectableEffect}, {@linkcode pairedMde},
 *   {@linkcode discordantMde}: the minimum detectable effect of a paired
 *   comparison at a level and power, and {@linkcode tied} for a difference
 *   interval that holds 0 (`power.ts`);
 * - {@linkcode wilsonInterval}: Wilson score intervals for a proportion
 *   (`wilson.ts`), on {@linkcode normalQuantile} (`normal.ts`);
 * - {@linkcode pairedBootstrapSteps}, {@linkcode pairedRandomizationSteps}:
 *   the two resamplings in steps, which pause every millisecond or so
 *   without changing a draw, so a caller can stay responsive (a command
 *   noticing SIGINT) while they run (`steps.ts`, {@linkcode runSteps}).
 *
 * Each is checked against NumPy or SciPy in
 * `tests/metrics/stats_test.ts` (reference: `tests/py/stats_ref.py`) and
 * `tests/metrics/cluster_stats_test.ts` (reference:
 * `bench/reference/cluster_stats.py`).
 *
 * @example
 * ```ts
 * import { mcnemarPaired, pairedBootstrap, pairedRandomization } from "./mod.ts";
 * const emA = [1, 1, 0, 1, 0, 1, 1, 0, 1, 1];
 * const emB = [1, 0, 0, 1, 0, 0, 1, 0, 1, 0];
 * const ci = pairedBootstrap([emA, emB]).differences[0]; // A − B: mean 0.3
 * const p = pairedRandomization(emA, emB).pValue;
 * const exact = mcnemarPaired(emA, emB).pValue; // b = 3, c = 0: 2·2⁻³ = 0.25
 * if (Math.abs(ci.mean - 0.3) > 1e-15 || exact !== 0.25 || !(p > 0.1)) throw new Error("stats");
 * ```
 *
 * @module
 */
export {
  type BootstrapOptions,
  type BootstrapResult,
  type DifferenceInterval,
  type MeanInterval,
  pairedBootstrap,
  pairedBootstrapSteps,
  percentile,
} from "./bootstrap.ts";
export {
  type ClusterBootstrapResult,
  type ClusterId,
  type ClusterIndex,
  clusterIndex,
  type ClusterRandomizationResult,
  pairedClusterBootstrap,
  pairedClusterBootstrapSteps,
  pairedClusterRandomization,
  pairedClusterRandomizationSteps,
} from "./clusters.ts";
export { binomialHalfPmf, mcnemarExact, mcnemarPaired, type McNemarResult } from "./mcnemar.ts";
export { benjaminiHochberg, holm } from "./multiple.ts";
export { normalQuantile } from "./normal.ts";
export {
  discordantMde,
  minimumDetectableEffect,
  type PairedMde,
  pairedMde,
  type PowerOptions,
  tied,
} from "./power.ts";
export { seedState, Xoshiro128StarStar } from "./prng.ts";
export {
  pairedRandomization,
  pairedRandomizationSteps,
  type RandomizationOptions,
  type RandomizationResult,
} from "./randomization.ts";
export {
  bootstrapRanks,
  bootstrapRanksSteps,
  type RankInterval,
  type RankOptions,
  type RankResult,
} from "./ranks.ts";
export { runSteps, sortedSteps, STEP_WORK, type Steps } from "./steps.ts";
export { type ProportionInterval, wilsonInterval } from "./wilson.ts";
