/**
 * The search room: exact scoring of phrase matrices against question
 * vectors (fsum, float64 loops, WebAssembly SIMD kernels in `kernels/`),
 * the PI-SQuAD merge as an Effect with its plan and worker pool (`merge/`),
 * the phrase index (`index/`) and open search over it (`open/`; the
 * `search` stage as a library call, `searchStage` and `writeSearchRecord`).
 *
 * @example
 * ```ts
 * import { fsum } from "./mod.ts";
 * if (fsum([0.1, 0.2, 0.3]) !== 0.6) throw new Error("not correctly rounded");
 * ```
 *
 * @module
 */
export { fsum } from "./fsum.ts";
export { denseScores } from "./dense_f64.ts";
export { simdAvailable } from "./kernels/simd.ts";
export { bestDenseRows } from "./merge/best_dense.ts";
export { bestSparseRows } from "./merge/best_sparse.ts";
export { bestRows } from "./merge/best_rows.ts";
export type { ScoringOptions } from "./merge/best_rows.ts";
export { batchesOf, batchSize, planMerge } from "./merge/plan.ts";
export type { MergePlan, MergeUnit } from "./merge/plan.ts";
export { mergeBatch, mergeUnit } from "./merge/unit.ts";
export type { BatchResult, MergeOutcome } from "./merge/unit.ts";
export { MergeWorkerError } from "./merge/protocol.ts";
export { merge, readQ2c } from "./merge/merge.ts";
export type { MergeError, MergeOptions, MergeProgress, MergeResult } from "./merge/merge.ts";
export * from "./index/mod.ts";
export {
  acquireIndex,
  closeSearchWorkers,
  PhraseIndex,
  PhraseIndexLive,
  releaseIndex,
} from "./open/phrase_index.ts";
export { openSearch } from "./open/open.ts";
export {
  hitsOf,
  queryIndex,
  queryText,
  scoreQuestions,
  scoreQuestionsAsync,
  searchVector,
} from "./open/query.ts";
export { searchFormat, searchStage, writeSearchRecord } from "./open/stage.ts";
export type { SearchRecordOptions, SearchStageOptions, SearchStageResult } from "./open/stage.ts";
export { i8Available } from "./kernels/wasm_i8.ts";
export {
  compareHits,
  mergeHits,
  mergeShardHits,
  searchShard,
  SHARD_HITS_FORMAT,
  shardedOpenSearch,
} from "./open/sharded.ts";
export type { MergeShardHitsOptions, SearchShardOptions, ShardHit } from "./open/sharded.ts";
export type {
  Hit,
  OpenSearchError,
  OpenSearchOptions,
  OpenSearchResult,
  QueryOptions,
  SearchVectorOptions,
} from "./open/query.ts";
