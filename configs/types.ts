/**
 * The shapes of evaluation-run configs (`deno task run <config.ts>`), in the
 * style of OpenCompass: a config is a TypeScript module, a run config
 * inherits datasets and models by `import` and spread.
 *
 * A path is a `URL` (recommended: `new URL("../data/x.json.gz",
 * import.meta.url)`, resolved relative to the file that wrote it, so a
 * spread keeps it right) or a string (absolute, or relative to the RUN
 * config file being loaded). Configs load from any folder.
 *
 * These are types only (no runtime code): `import type` them. A loaded
 * config is validated with Effect Schema by `pipeline/_run_config.ts`;
 * errors name the config file and the field path.
 *
 * @example
 * ```ts
 * import type { RunConfig } from "./types.ts";
 * import { squadDevMini } from "./datasets/squad_dev_mini.ts";
 * import { sparsePi } from "./models/sparse_pi.ts";
 * export const config: RunConfig = { datasets: [squadDevMini], models: [sparsePi] };
 * ```
 *
 * @module
 */

/** A file path: a `URL` (`file:`) or a string (absolute or relative to the run config). */
export type PathLike = string | URL;

/** An evaluation metric of a dataset. */
export type MetricName = "em" | "f1" | "bem";

/** BEM answer-equivalence options (scored by `pipeline/evaluate.ts --bem`). */
export interface BemOptions {
  /** The BEM ONNX model file. */
  readonly model: PathLike;
  /**
   * Which BEM number the summary shows: `accuracy` (share of questions whose
   * BEM score is above 0.5, the default) or `score` (mean BEM score); x100.
   */
  readonly report?: "accuracy" | "score";
}

/** A dataset: a SQuAD v1.1 file and how to read and score it. */
export interface DatasetConfig {
  /** Short unique name (folder and table name): letters, digits, `._+-`. */
  readonly abbr: string;
  /** Reader: only `"squad"` (SQuAD v1.1 JSON, `.json` or `.json.gz`). */
  readonly type?: "squad";
  /** The data file. */
  readonly path: PathLike;
  /** Reader options. */
  readonly reader?: {
    /** Only the articles with index in `[start, end)` (0-based). */
    readonly articles?: readonly [number, number];
  };
  /** Metrics (default `em`, `f1`). */
  readonly eval?: {
    /** Which metrics; `bem` needs `bem` options. */
    readonly metrics?: readonly MetricName[];
    /** BEM options. */
    readonly bem?: BemOptions;
  };
}

/** Batch sizes of the two encoder halves. */
export interface BatchSizes {
  /** Paragraphs per encoder call. */
  readonly context?: number;
  /** Questions per encoder call. */
  readonly question?: number;
}

/** A model: a registered encoder (or an ONNX manifest) and how to run it. */
export interface ModelConfig {
  /** Short unique name (folder and table name): letters, digits, `._+-`. */
  readonly abbr: string;
  /** A registered encoder name (`ENCODER_NAMES` in `encoders/registry.ts`). */
  readonly encoder?: string;
  /**
   * An ONNX encoder manifest, instead of `encoder`: runs the registered
   * manifest-driven ONNX encoder (`onnx`, else `piqa-lstm`) with it.
   */
  readonly onnx?: PathLike;
  /** The encoder's model artifact (default: its bundled one). */
  readonly model?: PathLike;
  /**
   * ONNX encoders' execution provider (`--device`; default `cpu`). With
   * `cuda` a Slurm task asks for a GPU (`--gres=gpu:1`).
   */
  readonly device?: "cpu" | "cuda" | "webgpu" | "auto";
  /** ONNX encoders: intra-op threads (`--threads`). */
  readonly threads?: number;
  /** Batch sizes. */
  readonly batch?: BatchSizes;
  /** Dense element type to store (sparse encoders ignore it). */
  readonly dtype?: "f32" | "f16";
}

/** A run: models × datasets, plus optional defaults for the runner flags. */
export interface RunConfig {
  /** The datasets. */
  readonly datasets: readonly DatasetConfig[];
  /** The models. */
  readonly models: readonly ModelConfig[];
  /** Default `--work-dir`. */
  readonly workDir?: PathLike;
  /** Default `--max-partition-size`. */
  readonly maxPartitionSize?: number;
  /** Default `--max-workers`. */
  readonly maxWorkers?: number;
  /** Default `--task-timeout` (seconds). */
  readonly taskTimeout?: number;
  /** Default `--retries`. */
  readonly retries?: number;
}
