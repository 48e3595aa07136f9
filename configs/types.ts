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
 * These are types only, derived from the Effect Schema that checks a loaded
 * config (`runs/config/schema.ts`): `import type` them. Errors name the config
 * file and the field path.
 *
 * @example
 * ```ts
 * import type { RunConfig } from "./types.ts";
 * import { squadDevMini } from "./datasets/squad_dev_mini.ts";
 * import { sparsePi } from "./models/sparse_pi.ts";
 * export const config: RunConfig = { datasets: [squadDevMini], models: [sparsePi] };
 * if (config.models[0].encoder !== "sparse-pi") throw new Error("wrong model");
 * ```
 *
 * @module
 */
import type {
  BatchSizesSchema,
  BemOptionsSchema,
  DatasetKind as DatasetKindSchema,
  DatasetSchema,
  FieldMapSchema,
  MetricName as MetricNameSchema,
  ModelSchema,
  PathLike as PathLikeSchema,
  RunConfigSchema,
} from "../runs/config/schema.ts";

/** A file path: a `URL` (`file:`) or a string (absolute or relative to the run config). */
export type PathLike = typeof PathLikeSchema.Type;

/** An evaluation metric of a dataset. */
export type MetricName = typeof MetricNameSchema.Type;

/** BEM answer-equivalence options (scored by `pipeline/evaluate.ts --bem`). */
export type BemOptions = typeof BemOptionsSchema.Type;

/** The kind of a dataset (`squad`, `squad2`, `mrqa`, `xquad`, `mlqa`, `open`, `jsonl`). */
export type DatasetKind = typeof DatasetKindSchema.Type;

/** The field map of a generic `jsonl`/`csv`/`tsv` question set. */
export type FieldMapConfig = typeof FieldMapSchema.Type;

/** A dataset: a question set and how to read and score it. */
export type DatasetConfig = typeof DatasetSchema.Type;

/** Batch sizes of the two encoder halves. */
export type BatchSizes = typeof BatchSizesSchema.Type;

/** A model: a registered encoder (or an ONNX manifest), or existing predictions. */
export type ModelConfig = typeof ModelSchema.Type;

/** A run: models × datasets, plus optional defaults for the runner flags. */
export type RunConfig = typeof RunConfigSchema.Type;
