/**
 * The phrase index: its folder format (`format.ts`), the exact build
 * (`build.ts`), opening one (`read.ts`), exact top-k scoring
 * (`score.ts`), the IVF-PQ kind (`ivfpq.ts`, on `kmeans.ts`) and hybrid
 * dense ⊕ sparse IVF-PQ indexes, searched dense-first (`hybrid.ts`), and
 * sharded indexes (`shards.ts`, `quantizer.ts`). Search over an index is
 * `search/open/open.ts`, over a folder of shards `search/open/sharded.ts`.
 *
 * @example
 * ```ts
 * import { headerProblem, INDEX_VERSION } from "./mod.ts";
 * if (INDEX_VERSION !== 1) throw new Error("format version");
 * if (headerProblem({}) === undefined) throw new Error("an empty header passed");
 * ```
 *
 * @module
 */
export {
  exactFiles,
  expectedBytes,
  headerJson,
  headerProblem,
  INDEX_FORMAT,
  INDEX_HEADER,
  INDEX_KINDS,
  INDEX_VERSION,
  PARAGRAPHS_FILE,
} from "./format.ts";
export type { IndexFile, IndexHeader, IndexMetric } from "./format.ts";
export { buildIndex, trainQuantizer } from "./build.ts";
export type {
  BuildIndexError,
  BuildIndexOptions,
  BuildIndexResult,
  TrainQuantizerOptions,
} from "./build.ts";
export {
  isShardSet,
  MAX_SHARDS,
  openShardSet,
  parseShardFolderName,
  QUANTIZER_FOLDER,
  sha256Head,
  SHARD_RULE,
  shardFolderName,
  shardHitsFile,
  shardOf,
} from "./shards.ts";
export type { ShardEntry, ShardInfo, ShardSet } from "./shards.ts";
export { QUANTIZER_MANIFEST, readQuantizer } from "./quantizer.ts";
export type { QuantizerManifest } from "./quantizer.ts";
export { openIndex, openIndexSync, paragraphOfRow, readIndexHeader } from "./read.ts";
export type { ExactIndex, OpenIndexOptions } from "./read.ts";
export { NonFiniteError, scoreDense, SparseIndexScorer, SparseQueries, TopK } from "./score.ts";
export type { SparseIndexScorerOptions } from "./score.ts";
export {
  DEFAULT_NPROBE,
  DEFAULT_TRAIN_PARAGRAPHS,
  IVF_FILES,
  IVF_SEED,
  ivfCandidates,
  KMEANS_ITERATIONS,
  loadIvf,
  nprobeProblem,
  scoreIvf,
  scoreIvfSync,
  trainSample,
} from "./ivfpq.ts";
export type { IvfData, IvfIndexView, IvfPqParameters, IvfQueryOptions } from "./ivfpq.ts";
export { kmeans, splitmix32 } from "./kmeans.ts";
export {
  candidatesProblem,
  csrDenseRows,
  DEFAULT_HYBRID_CANDIDATES,
  denseHead,
  hybridDenseDims,
  scoreHybrid,
} from "./hybrid.ts";
export type { CsrRows, HybridIndexView, HybridQueryOptions } from "./hybrid.ts";
