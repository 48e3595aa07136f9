/**
 * The phrase index: its folder format (`format.ts`), the exact build
 * (`build.ts`, its folder `build_folder.ts`, its options and corpus walk
 * `build_input.ts`, a whole corpus's quantizer `train_quantizer.ts`), opening
 * one (`read.ts`), exact top-k scoring (`exact/score.ts`, sparse:
 * `exact/sparse_scorer.ts`), the IVF-PQ kind (`ivfpq/ivfpq.ts`, on
 * `ivfpq/kmeans.ts`) and hybrid
 * dense ⊕ sparse IVF-PQ indexes, searched dense-first (`ivfpq/hybrid.ts`), and
 * sharded indexes (`shards.ts`, `ivfpq/quantizer.ts`). Search over an index is
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
export { buildIndex } from "./build.ts";
export { trainQuantizer, type TrainQuantizerOptions } from "./train_quantizer.ts";
export type { BuildIndexError, BuildIndexOptions, BuildIndexResult } from "./build_input.ts";
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
export { QUANTIZER_MANIFEST, readQuantizer } from "./ivfpq/quantizer.ts";
export type { QuantizerManifest } from "./ivfpq/quantizer.ts";
export { openIndex, openIndexSync, paragraphOfRow, readIndexHeader } from "./read.ts";
export type { ExactIndex, OpenIndexOptions } from "./read.ts";
export type { DiskIndex } from "./disk.ts";
export { NonFiniteError, scoreDense, TopK } from "./exact/score.ts";
export type { DenseRowStats } from "./exact/score.ts";
export { SparseIndexScorer, SparseQueries } from "./exact/sparse_scorer.ts";
export type { SparseIndexScorerOptions } from "./exact/sparse_scorer.ts";
export { DEFAULT_NPROBE, IVF_FILES, ivfCandidates, loadIvf, nprobeProblem } from "./ivfpq/ivfpq.ts";
export { scoreIvf, scoreIvfSync } from "./ivfpq/ivf_search.ts";
export {
  DEFAULT_TRAIN_PARAGRAPHS,
  IVF_SEED,
  KMEANS_ITERATIONS,
  PQ4_COARSE_ITERATIONS,
  trainSample,
} from "./ivfpq/train.ts";
export type { IvfData, IvfIndexView, IvfPqParameters, IvfQueryOptions } from "./ivfpq/ivfpq.ts";
export { kmeans, splitmix32 } from "./ivfpq/kmeans.ts";
export type { KMeansOptions } from "./ivfpq/kmeans.ts";
export {
  candidatesProblem,
  csrDenseRows,
  DEFAULT_HYBRID_CANDIDATES,
  denseHead,
  hybridDenseDims,
  scoreHybrid,
} from "./ivfpq/hybrid.ts";
export type { CsrRows, HybridIndexView, HybridQueryOptions } from "./ivfpq/hybrid.ts";
