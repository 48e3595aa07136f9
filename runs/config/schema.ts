/**
 * The Schema of an evaluation-run config (`deno task run <config.ts>`): what
 * a config module exports as `config`. The config types in
 * `configs/types.ts` are derived from these schemas, so the checked shape
 * and the typed shape are one.
 *
 * A path is a `URL` (`new URL("../data/x.json.gz", import.meta.url)`,
 * resolved against the file that wrote it, so a spread keeps it right) or a
 * string (absolute, or relative to the RUN config file being loaded). The
 * loader turns `URL`s into path strings before validation.
 *
 * @example
 * ```ts
 * import * as Schema from "effect/Schema";
 * import { RunConfigSchema } from "./schema.ts";
 * const ok = Schema.is(RunConfigSchema)({
 *   datasets: [{ abbr: "d", path: new URL("file:///d.json") }],
 *   models: [{ abbr: "m", encoder: "sparse-pi" }],
 * });
 * if (!ok) throw new Error("a valid config was refused");
 * if (Schema.is(RunConfigSchema)({ datasets: [], models: [] })) throw new Error("no datasets");
 * ```
 *
 * @module
 */
import * as Schema from "effect/Schema";
import { DATASET_KINDS } from "../../io/datasets/formats.ts";
import { MAX_RETRIES } from "./defaults.ts";

/** A short unique name: letters, digits and `._+-`, at most 64. */
export const Abbr = Schema.String.check(
  Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$/, {
    message: "expected a short name of letters, digits and ._+- (at most 64)",
  }),
);

const PathStr = Schema.String.check(Schema.isNonEmpty({ message: "expected a non-empty path" }));

/** A file path: a non-empty string (absolute or relative to the run config) or a `file:` `URL`. */
export const PathLike = Schema.Union([PathStr, Schema.URL]);

const NonNegInt = Schema.Number.check(
  Schema.isInt({ message: "expected an integer >= 0" }),
  Schema.isGreaterThanOrEqualTo(0, { message: "expected an integer >= 0" }),
);
const PosInt = Schema.Number.check(
  Schema.isInt({ message: "expected an integer > 0" }),
  Schema.isGreaterThan(0, { message: "expected an integer > 0" }),
);
const PosNumber = Schema.Number.check(
  Schema.isFinite({ message: "expected a number > 0" }),
  Schema.isGreaterThan(0, { message: "expected a number > 0" }),
);

/** An evaluation metric of a dataset. */
export const MetricName = Schema.Literals(["em", "f1", "bem"]);

/** BEM answer-equivalence options (scored by `pipeline/evaluate.ts --bem`). */
export const BemOptionsSchema = Schema.Struct({
  /** The BEM ONNX model file. */
  model: PathLike,
  /**
   * Which BEM number the summary shows: `accuracy` (share of questions whose
   * BEM score is above 0.5, the default) or `score` (mean BEM score); x100.
   */
  report: Schema.optionalKey(Schema.Literals(["accuracy", "score"])),
});

/**
 * The kind of a dataset, which says how it is read and scored:
 * `squad` (SQuAD v1.1, the default), `squad2` (SQuAD v2.0), `mrqa`
 * (MRQA 2019 JSONL), `xquad` / `mlqa` (SQuAD-shaped, MLQA's per-language
 * rules), `open` (open-domain question sets: DPR CSV/TSV, CuratedTREC
 * regexes, NQ-open/TriviaQA JSONL; top-1 EM/F1) and `jsonl` (a generic
 * JSONL/CSV/TSV set read with a field map, scored as `open`). The kinds and
 * the formats of each are the registry's (`io/datasets/formats.ts`).
 */
export const DatasetKind = Schema.Literals(DATASET_KINDS);

/** The field map of a generic `jsonl`/`csv`/`tsv` question set (`FieldMap` of `io/datasets/`). */
export const FieldMapSchema = Schema.Struct({
  /** Field of the question id (without it questions are numbered from 0). */
  id: Schema.optionalKey(Schema.String),
  /** Field of the question text. */
  question: Schema.String,
  /** Field of the gold answers (a string or a list of strings). */
  answers: Schema.optionalKey(Schema.String),
  /** Field of the paragraph text. */
  context: Schema.optionalKey(Schema.String),
  /** Field of the paragraph id. */
  paragraphId: Schema.optionalKey(Schema.String),
  /** Field of the title. */
  title: Schema.optionalKey(Schema.String),
  /** Field of the language code. */
  lang: Schema.optionalKey(Schema.String),
  /** Field of the no-answer flag. */
  noAnswer: Schema.optionalKey(Schema.String),
});

/**
 * The IVF-PQ index of a dataset's open search (`index --nlist --bpv`,
 * `search --nprobe --probe-tau --candidates`).
 */
export const IvfOptionsSchema = Schema.Struct({
  /** IVF lists. */
  nlist: PosInt,
  /** PQ bytes per vector (must divide d, or `denseDims`). */
  bpv: PosInt,
  /** Paragraphs the quantizer is trained on (default 100). */
  trainParagraphs: Schema.optionalKey(PosInt),
  /** A hybrid dense ⊕ sparse model's dense block (`index --dense-dims`). */
  denseDims: Schema.optionalKey(PosInt),
  /**
   * Bits per PQ code (`index --pq-bits`, default 8; 4: the fast-scan index,
   * also with `denseDims` and `shards`, whose quantizer task trains it).
   */
  pqBits: Schema.optionalKey(Schema.Literals([4, 8])),
  /** Lists probed per question (default 10); with `probeTau`, the most. */
  nprobe: Schema.optionalKey(PosInt),
  /**
   * Adaptive probing (`search --probe-tau`): of the `nprobe` best lists,
   * only those whose probing score is within `probeTau · ‖q‖ · mean‖c‖` of
   * the best one's (at least one; a number > 0). Default: all `nprobe`.
   */
  probeTau: Schema.optionalKey(PosNumber),
  /** Approximate candidates re-scored exactly (default: `search`'s). */
  candidates: Schema.optionalKey(NonNegInt),
});

/** A dataset: a question set and how to read and score it. */
export const DatasetSchema = Schema.Struct({
  /** Short unique name (folder and table name): letters, digits, `._+-`. */
  abbr: Abbr,
  /**
   * Its kind (default `"squad"`): how it is read and which metric its eval
   * task applies (`squad`, `squad2`: the official SQuAD script; the others:
   * their official metric, `metrics/qa_eval.ts`). Encoder models run on
   * `squad` sets only; every kind takes `type: "predictions"` models.
   */
  type: Schema.optionalKey(DatasetKind),
  /**
   * The file format as `evaluate --format` names it (`dpr`, `trec`, `open`,
   * `csv`, `tsv`, ...), when the file's own shape does not say it; it must
   * be a format of the dataset's `type`.
   */
  format: Schema.optionalKey(Schema.String),
  /** The language of an `xquad`/`mlqa` set (default: from its file name); a label elsewhere. */
  lang: Schema.optionalKey(Schema.String),
  /** The data file. */
  path: PathLike,
  /** An `open` set's passage corpus (checked to exist; kept in the resolved config). */
  corpus: Schema.optionalKey(PathLike),
  /** Reader options. */
  reader: Schema.optionalKey(Schema.Struct({
    /** Only the articles with index in `[start, end)` (0-based; `squad`/`squad2`). */
    articles: Schema.optionalKey(Schema.Tuple([NonNegInt, NonNegInt])),
    /** The field map of a `jsonl` set (and of an `open` set in a generic CSV/TSV). */
    fields: Schema.optionalKey(FieldMapSchema),
  })),
  /**
   * Rename repeated article titles (`<title>#2`, ...; the rule is in
   * `io/squad_ids.ts`) instead of refusing the dataset: every task passes
   * `--unique-ids`.
   */
  uniqueIds: Schema.optionalKey(Schema.Boolean),
  /**
   * Open-domain search beside the closed (merge) answers: `true` or
   * `{ topK }` adds, per model, an exact phrase index of the context dump
   * and a search of every question against every phrase of it (`index` and
   * `search` tasks), scored with top-k EM/F1, gold-paragraph recall and
   * MRR@k in the same eval task (`topK`: ranks kept, default 10).
   */
  open: Schema.optionalKey(Schema.Union([
    Schema.Boolean,
    Schema.Struct({
      /** Ranks kept per question (default 10). */
      topK: Schema.optionalKey(PosInt),
      /**
       * A sharded index of N shards (`search/index/shards.ts`): an `index`
       * task per shard and a `search` task per shard (Slurm: one job array
       * each), then a `search_merge` task (the exact merge of the shards'
       * top k); an IVF-PQ index first trains its quantizer once
       * (`index_train`). At most 65536.
       */
      shards: Schema.optionalKey(PosInt.check(
        Schema.isLessThanOrEqualTo(65536, { message: "expected at most 65536 shards" }),
      )),
      /** An IVF-PQ index instead of an exact one (dense models, or hybrid with `denseDims`). */
      ivf: Schema.optionalKey(IvfOptionsSchema),
    }),
  ])),
  /** Metrics (default `em`, `f1`). */
  eval: Schema.optionalKey(Schema.Struct({
    /** Which metrics; `bem` needs `bem` options. */
    metrics: Schema.optionalKey(Schema.Array(MetricName)),
    /** BEM options. */
    bem: Schema.optionalKey(BemOptionsSchema),
  })),
});

/** Batch sizes of the two encoder halves. */
export const BatchSizesSchema = Schema.Struct({
  /** Paragraphs per encoder call. */
  context: Schema.optionalKey(PosInt),
  /** Questions per encoder call. */
  question: Schema.optionalKey(PosInt),
});

/**
 * A model: a registered encoder (or an ONNX manifest) and how to run it, or
 * (`type: "predictions"`) answers that already exist: a generative
 * reader's, an API's or an earlier run's, scored without running anything.
 */
export const ModelSchema = Schema.Struct({
  /** Short unique name (folder and table name): letters, digits, `._+-`. */
  abbr: Abbr,
  /**
   * `"encoder"` (the default: `encoder` or `onnx` runs) or `"predictions"`
   * (`predictions` names the answers; no other field applies).
   */
  type: Schema.optionalKey(Schema.Literals(["encoder", "predictions"])),
  /**
   * A predictions model's answers (`{id: answer}` JSON, an
   * lm-evaluation-harness `samples_<task>_<date>.jsonl` or an OpenCompass
   * `predictions/<model>/<dataset>.json`, told from the content, matched to
   * the dataset's questions and checked, see `io/predictions_harness.ts`;
   * the run copies them as `{id: answer}`): a folder holding
   * `<dataset abbr>.json` for each dataset of the run, or one file when the
   * run has a single dataset.
   */
  predictions: Schema.optionalKey(PathLike),
  /** A registered encoder name (`ENCODER_NAMES` in `encoders/registry.ts`). */
  encoder: Schema.optionalKey(Schema.String),
  /**
   * An ONNX encoder manifest, instead of `encoder`: runs the registered
   * manifest-driven ONNX encoder (`onnx`, else `piqa-lstm`) with it.
   */
  onnx: Schema.optionalKey(PathLike),
  /** The encoder's model artifact (default: its bundled one). */
  model: Schema.optionalKey(PathLike),
  /**
   * ONNX encoders' execution provider (`--device`; default `cpu`). With
   * `cuda` a Slurm task asks for a GPU (`--gres=gpu:1`).
   */
  device: Schema.optionalKey(Schema.Literals(["cpu", "cuda", "webgpu", "auto"])),
  /** ONNX encoders: intra-op threads (`--threads`). */
  threads: Schema.optionalKey(PosInt),
  /** Batch sizes. */
  batch: Schema.optionalKey(BatchSizesSchema),
  /** Dense element type to store (sparse encoders ignore it). */
  dtype: Schema.optionalKey(Schema.Literals(["f32", "f16"])),
});

/** A run: models × datasets, plus optional defaults for the runner flags. */
export const RunConfigSchema = Schema.Struct({
  /** The datasets. */
  datasets: Schema.Array(DatasetSchema).check(
    Schema.isMinLength(1, { message: "expected at least one dataset" }),
  ),
  /** The models. */
  models: Schema.Array(ModelSchema).check(
    Schema.isMinLength(1, { message: "expected at least one model" }),
  ),
  /** Default `--work-dir`. */
  workDir: Schema.optionalKey(PathLike),
  /** Default `--max-partition-size`. */
  maxPartitionSize: Schema.optionalKey(PosInt),
  /** Default `--max-workers`. */
  maxWorkers: Schema.optionalKey(PosInt),
  /** Default `--task-timeout` (seconds). */
  taskTimeout: Schema.optionalKey(PosInt),
  /** Default `--retries` (at most {@linkcode MAX_RETRIES}). */
  retries: Schema.optionalKey(NonNegInt.check(
    Schema.isLessThanOrEqualTo(MAX_RETRIES, {
      message: `expected at most ${MAX_RETRIES} retries`,
    }),
  )),
});
