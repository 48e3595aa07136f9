/**
 * Validating a loaded run config: structure by Effect Schema
 * ({@linkcode RunConfigSchema}), then against the checkout (known encoders,
 * existing files, unique `abbr`s), giving a {@linkcode ResolvedRunConfig}
 * (absolute paths, defaults filled in). A dataset's `type` (its kind) is
 * checked against its file (the format detected, or the `format` named,
 * must be one of the kind's) and its options; a `predictions` model's
 * answer file of every dataset must exist; an encoder model on a set that
 * is not SQuAD v1.1 is refused; an `onnx` manifest (the `model` of every
 * encoder but sparse-pi) must decode as one (`encoders/onnx/manifest.ts`);
 * an object that contains itself is refused as cyclic. Every error is an
 * {@linkcode InputError} whose one line names the config file and the field
 * path: `configs/bad.ts: models[1].encoder: unknown encoder "nope" (known:
 * sparse-pi, piqa-lstm, ...)`, every registered encoder named.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Result from "effect/Result";
import * as Schema from "effect/Schema";
import * as SchemaIssue from "effect/SchemaIssue";
import { InputError } from "../../io/errors.ts";
import { ENCODER_NAMES, encoderSpec } from "../../encoders/registry.ts";
import { absPath, baseOf, dirOf, displayPath, isDir, isFifo, isFile } from "../../io/fs.ts";
import { isDataPath } from "../../io/datasets/parquet_path.ts";
import { CIRCULAR, NON_DATA } from "./config_loader.ts";
import { decodeManifest } from "../../encoders/onnx/manifest.ts";
import {
  type DatasetKind as DatasetKindSchema,
  type MetricName,
  RunConfigSchema,
} from "./schema.ts";
import { detectFormat, parseFormatName } from "../../io/datasets/detect.ts";
import {
  DATASET_KINDS,
  type DatasetFormat,
  formatsOfKind,
  formatSpec,
  kindTakes,
} from "../../io/datasets/formats.ts";
import type { FieldMap } from "../../io/datasets/types.ts";
import { MLQA_LANGUAGES } from "../../metrics/mlqa.ts";

/** A metric name. */
export type Metric = typeof MetricName.Type;

/** A dataset kind (`type` of a dataset config). */
export type DatasetKind = typeof DatasetKindSchema.Type;

/** The kinds whose files are SQuAD JSON (articles, the official SQuAD script). */
export const SQUAD_KINDS: readonly DatasetKind[] = DATASET_KINDS.filter((k) =>
  kindTakes(k, "articles")
);

/** A dataset's open search after validation. */
export interface OpenOptions {
  /** Ranks kept per question. */
  readonly topK: number;
  /** Shards of the index (absent: one unsharded index). */
  readonly shards?: number;
  /** An IVF-PQ index (absent: exact). */
  readonly ivf?: {
    readonly nlist: number;
    readonly bpv: number;
    readonly trainParagraphs?: number;
    readonly denseDims?: number;
    readonly pqBits?: 4 | 8;
    readonly nprobe?: number;
    /** Adaptive probing's tau (`search --probe-tau`; absent: all `nprobe` lists). */
    readonly probeTau?: number;
    readonly candidates?: number;
  };
}

/** A dataset after validation: absolute paths, defaults filled in. */
export interface ResolvedDataset {
  /** Unique short name. */
  readonly abbr: string;
  /** Its kind: how it is read and scored. */
  readonly type: DatasetKind;
  /** Absolute path of the data file. */
  readonly path: string;
  /** The format its reader is told (`evaluate --format`); absent: detected from the file. */
  readonly format?: DatasetFormat;
  /** The language of an `xquad`/`mlqa` set (absent: its file name's); a label elsewhere. */
  readonly lang?: string;
  /** The field map of a generic `jsonl`/`csv`/`tsv` set. */
  readonly fields?: FieldMap;
  /** An `open` set's passage corpus (absolute). */
  readonly corpus?: string;
  /** Article range `[start, end)`, or `null` for all. */
  readonly articles: readonly [number, number] | null;
  /** Rename repeated article titles (`io/squad_ids.ts`); absent: refuse them. */
  readonly uniqueIds?: boolean;
  /** Open-domain search too (index and search tasks), keeping `topK` ranks; absent: closed only. */
  readonly open?: OpenOptions;
  /** Metrics, in table order. */
  readonly metrics: readonly Metric[];
  /** BEM options when `bem` is a metric. */
  readonly bem: {
    readonly model: string;
    readonly report: "accuracy" | "score";
  } | null;
}

/**
 * A model after validation: a registered encoder and the files each half
 * reads, or (`predictions` present) existing answers, one file per dataset,
 * where the encoder fields are empty (`encoder: "predictions"`, no files).
 */
export interface ResolvedModel {
  /** Unique short name. */
  readonly abbr: string;
  /** A predictions model's answer file of each dataset (abbr → absolute path); absent: an encoder. */
  readonly predictions?: Readonly<Record<string, string>>;
  /** Registered encoder name. */
  readonly encoder: string;
  /** Model artifact (`--model`), or `null` for the encoder's bundled one. */
  readonly model: string | null;
  /** ONNX execution provider. */
  readonly device: "cpu" | "cuda" | "webgpu" | "auto";
  /** ONNX intra-op threads, or `null` for the default. */
  readonly threads: number | null;
  /** Batch sizes (`null`: the encoder's default). */
  readonly batch: { readonly context: number | null; readonly question: number | null };
  /** Dense element type to store, or `null` for the encoder's. */
  readonly dtype: "f32" | "f16" | null;
  /** Whether the encoder writes sparse matrices (`--sparse`). */
  readonly sparse: boolean;
  /** Files the context half reads. */
  readonly contextFiles: readonly string[];
  /** Files the question half reads. */
  readonly questionFiles: readonly string[];
  /** Extra Deno permission flags its processes need (ONNX: `--allow-ffi=<addon>`). */
  readonly permissions: readonly string[];
}

/** A validated run config (what `configs/<name>.json` in a run folder holds). */
export interface ResolvedRunConfig {
  /** Absolute path of the config module. */
  readonly file: string;
  /** Its base name without extension. */
  readonly name: string;
  /** Datasets. */
  readonly datasets: readonly ResolvedDataset[];
  /** Models. */
  readonly models: readonly ResolvedModel[];
  /** Default work dir, or `null`. */
  readonly workDir: string | null;
  /** Default partition size, or `null`. */
  readonly maxPartitionSize: number | null;
  /** Default worker count, or `null`. */
  readonly maxWorkers: number | null;
  /** Default task timeout (s), or `null`. */
  readonly taskTimeout: number | null;
  /** Default retries, or `null`. */
  readonly retries: number | null;
}

/** Ranks an open search keeps by default (a dataset's `open: true`). */
export const OPEN_TOP_K = 10;

/** Registered encoders that run any ONNX manifest (`onnx:` in a model config), in preference order. */
const ONNX_ENCODERS = ["onnx", "piqa-lstm"];

type RawRunConfig = typeof RunConfigSchema.Type;

/** A path of the config as a string (the loader turns `URL`s into paths; a `URL` given directly works too). */
const pathOf = (p: string | URL): string =>
  typeof p === "string" ? p : decodeURIComponent(p.pathname);

/**
 * A field path as `models[1].batch.context`.
 *
 * @example
 * ```ts
 * import { formatPath } from "./config.ts";
 * if (formatPath(["models", 1, "batch", "context"]) !== "models[1].batch.context") throw new Error();
 * ```
 */
export function formatPath(path: readonly PropertyKey[]): string {
  let s = "";
  for (const k of path) {
    s += typeof k === "number" ? `[${k}]` : s === "" ? String(k) : `.${String(k)}`;
  }
  return s;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): { found: boolean; value: unknown } {
  let v: unknown = root;
  for (const k of path) {
    if (v === null || typeof v !== "object" || !(k in (v as object))) {
      return { found: false, value: undefined };
    }
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return { found: true, value: v };
}

function describeValue(v: unknown): string {
  if (v !== null && typeof v === "object" && NON_DATA in v) {
    return `a ${(v as Record<string, unknown>)[NON_DATA]}`;
  }
  // NaN and ±Infinity as themselves (JSON writes them null).
  if (typeof v === "number" && !Number.isFinite(v)) return String(v);
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/**
 * The field path of the first cyclic object in a loaded config (the
 * loader's {@linkcode CIRCULAR} marker where an object contains itself), or
 * `undefined`.
 */
function cyclePath(v: unknown, path: PropertyKey[] = []): PropertyKey[] | undefined {
  if (v === null || typeof v !== "object") return undefined;
  if (Array.isArray(v)) {
    for (const [i, x] of v.entries()) {
      const p = cyclePath(x, [...path, i]);
      if (p) return p;
    }
    return undefined;
  }
  const o = v as Record<string, unknown>;
  if (o[NON_DATA] === CIRCULAR) return path;
  for (const [k, x] of Object.entries(o)) {
    const p = cyclePath(x, [...path, k]);
    if (p) return p;
  }
  return undefined;
}

/** A file larger than this is not an ONNX encoder manifest (a small JSON file naming its graphs). */
const MAX_MANIFEST_BYTES = 16 * 1024 * 1024;

/**
 * What is wrong with the ONNX encoder manifest at `path` (absolute, a
 * regular file), read and decoded as the encoder will
 * (`encoders/onnx/manifest.ts`), or `undefined` when it is one.
 */
function manifestProblem(path: string): string | undefined {
  const not = `"${path}" is not an ONNX encoder manifest`;
  let text: string;
  try {
    const size = Deno.statSync(path).size;
    if (size > MAX_MANIFEST_BYTES) {
      return `${not} (${size} bytes; a manifest is a small JSON file that names the .onnx graphs)`;
    }
    text = Deno.readTextFileSync(path);
  } catch (e) {
    return `cannot read "${path}": ${e instanceof Error ? e.message : String(e)}`;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return `${not}: invalid JSON (${e instanceof Error ? e.message : String(e)})`;
  }
  try {
    decodeManifest(json, path);
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    const prefix = `manifest ${path}: `;
    return `${not}: ${msg.startsWith(prefix) ? msg.slice(prefix.length) : msg}`;
  }
  return undefined;
}

/** The encoder fields a predictions model does not use. */
const ENCODER_ONLY = ["encoder", "onnx", "model", "device", "threads", "batch", "dtype"] as const;

/**
 * A predictions model resolved against the datasets, or `"<where>\0<message>"`
 * for the one thing wrong with it.
 */
function predictionsModel(
  m: RawRunConfig["models"][number],
  where: string,
  base: string,
  datasets: readonly ResolvedDataset[],
): ResolvedModel | string {
  const bad = (w: string, msg: string) => `${w}\u0000${msg}`;
  const extra = ENCODER_ONLY.find((k) => m[k] !== undefined);
  if (extra !== undefined) {
    return bad(`${where}.${extra}`, 'a "predictions" model takes "predictions" only');
  }
  if (m.predictions === undefined) {
    return bad(`${where}.predictions`, "missing (a folder of <dataset abbr>.json, or one file)");
  }
  const p = absPath(pathOf(m.predictions), base);
  const files: Record<string, string> = {};
  if (isDir(p)) {
    for (const d of datasets) {
      const f = `${p}/${d.abbr}.json`;
      if (!isFile(f)) {
        return bad(`${where}.predictions`, `no "${d.abbr}.json" in ${p} for dataset "${d.abbr}"`);
      }
      files[d.abbr] = f;
    }
  } else if (isFile(p)) {
    if (datasets.length !== 1) {
      return bad(
        `${where}.predictions`,
        `one file answers one dataset and the run has ${datasets.length}: ` +
          `give a folder holding <dataset abbr>.json for each`,
      );
    }
    files[datasets[0].abbr] = p;
  } else {
    return bad(`${where}.predictions`, `no such file or folder "${p}"`);
  }
  return {
    abbr: m.abbr,
    predictions: files,
    encoder: "predictions",
    model: null,
    device: "cpu",
    threads: null,
    batch: { context: null, question: null },
    dtype: null,
    sparse: false,
    contextFiles: [],
    questionFiles: [],
    permissions: [],
  };
}

/**
 * Validates the data a run config module exported: structure by Schema,
 * then paths (relative strings are resolved against the config's folder),
 * encoders, files and `abbr` clashes.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { REPO_ROOT } from "../../io/repo.ts";
 * import { validateRunConfig } from "./config.ts";
 * // "data/..." is relative to the config file, here one at the repository root.
 * const cfg = await Effect.runPromise(validateRunConfig({
 *   datasets: [{ abbr: "d", path: "data/dev-v1.1.json.gz" }],
 *   models: [{ abbr: "m", encoder: "sparse-pi" }],
 * }, `${REPO_ROOT}/cfg.ts`));
 * if (cfg.datasets[0].path !== `${REPO_ROOT}/data/dev-v1.1.json.gz`) throw new Error();
 * const bad = await Effect.runPromise(Effect.flip(validateRunConfig({
 *   datasets: [{ abbr: "d", path: "data/dev-v1.1.json.gz" }],
 *   models: [{ abbr: "m", encoder: "nope" }],
 * }, `${REPO_ROOT}/cfg.ts`)));
 * if (bad.where !== "models[0].encoder") throw new Error(bad.message);
 * ```
 */
export const validateRunConfig = (
  data: unknown,
  file: string,
): Effect.Effect<ResolvedRunConfig, InputError> =>
  Effect.gen(function* () {
    const shown = displayPath(file);
    const fail = (where: string, message: string) =>
      Effect.fail(new InputError({ file: shown, where, message }));
    // A cyclic object can be nothing a config holds: said as such, wherever it is.
    const cycle = cyclePath(data);
    if (cycle !== undefined) {
      return yield* fail(formatPath(cycle) || "config", "a cyclic object (it contains itself)");
    }
    const decoded = Schema.decodeUnknownResult(RunConfigSchema, { onExcessProperty: "error" })(
      data,
    );
    if (Result.isFailure(decoded)) {
      const issue = SchemaIssue.makeFormatterStandardSchemaV1()(decoded.failure.issue).issues[0];
      let path = (issue.path ?? []).map((k) =>
        typeof k === "object" && k !== null ? (k as { key: PropertyKey }).key : k
      ) as PropertyKey[];
      // A value that is not data (a function, a class instance) where an object belongs:
      // named at its own path, not by the loader's marker inside it.
      const marker = path.indexOf(NON_DATA);
      if (marker >= 0) {
        path = path.slice(0, marker);
        const v = valueAt(data, path).value;
        return yield* fail(
          formatPath(path) || "config",
          `expected an object, got ${describeValue(v)}`,
        );
      }
      const at = valueAt(data, path);
      let msg = issue.message;
      if (msg === "Expected no excess property") msg = "unknown field";
      else if (msg === "Missing key") msg = "missing";
      else {
        msg = msg.replace(/^Expected /, "expected ");
        if (at.found && !/, got /.test(msg)) msg += `, got ${describeValue(at.value)}`;
      }
      return yield* fail(formatPath(path) || "config", msg);
    }
    const raw: RawRunConfig = decoded.success;
    const base = dirOf(file);
    const datasets: ResolvedDataset[] = [];
    for (const [i, d] of raw.datasets.entries()) {
      const where = `datasets[${i}]`;
      const path = absPath(pathOf(d.path), base);
      if (!isDataPath(path)) return yield* fail(`${where}.path`, `no such file "${path}"`);
      const kind: DatasetKind = d.type ?? "squad";
      const squadKind = SQUAD_KINDS.includes(kind);
      let format: DatasetFormat | undefined;
      if (d.format !== undefined) {
        try {
          format = parseFormatName(d.format);
        } catch (e) {
          return yield* fail(`${where}.format`, (e as Error).message);
        }
        if (!formatsOfKind(kind).includes(format)) {
          return yield* fail(
            `${where}.format`,
            `"${d.format}" is not a format of type "${kind}" (its formats: ${
              formatsOfKind(kind).join(", ")
            })`,
          );
        }
      } else if (squadKind) {
        format = formatsOfKind(kind)[0];
      } else if (formatsOfKind(kind).every((f) => formatSpec(f)?.fields === true)) {
        // A generic set is read with its field map, as its extension says.
        const kinds = formatsOfKind(kind);
        format = kinds.find((f) => {
          const ext = formatSpec(f)?.extension;
          return ext !== undefined && (path.endsWith(ext) || path.endsWith(`${ext}.gz`));
        }) ?? kinds[0];
      } else {
        // The file's own shape says its format; it must be one of the kind's.
        const found = yield* Effect.result(detectFormat(path));
        if (Result.isFailure(found)) {
          const e = found.failure;
          return yield* fail(`${where}.path`, "message" in e ? String(e.message) : String(e));
        }
        format = found.success;
        if (!formatsOfKind(kind).includes(format)) {
          return yield* fail(
            `${where}.type`,
            `"${kind}", but the file reads as ${format} (type "${kind}" reads ${
              formatsOfKind(kind).join(", ")
            }; name one with "format")`,
          );
        }
      }
      const fields = d.reader?.fields;
      const generic = formatSpec(format)?.fields === true;
      if (generic && fields === undefined) {
        return yield* fail(
          `${where}.reader.fields`,
          `missing (a ${format} set is read with a field map, e.g. { question: "q", answers: "a" })`,
        );
      }
      if (fields !== undefined && !kindTakes(kind, "fields")) {
        const takers = DATASET_KINDS.filter((k) => kindTakes(k, "fields")).sort();
        return yield* fail(
          `${where}.reader.fields`,
          `only ${takers.map((k) => `"${k}"`).join(" and ")} sets take a field map`,
        );
      }
      if (d.reader?.articles !== undefined && !squadKind) {
        return yield* fail(
          `${where}.reader.articles`,
          `only SQuAD sets (type "squad" or "squad2") have articles, not type "${kind}"`,
        );
      }
      if (
        kindTakes(kind, "lang") && d.lang !== undefined &&
        !MLQA_LANGUAGES.includes(d.lang)
      ) {
        return yield* fail(
          `${where}.lang`,
          `"${d.lang}" is not an MLQA language (${MLQA_LANGUAGES.join(", ")})`,
        );
      }
      let corpus: string | undefined;
      if (d.corpus !== undefined) {
        if (kind !== "open" && kind !== "squad") {
          return yield* fail(
            `${where}.corpus`,
            `only "open" and "squad" sets take a corpus, not type "${kind}"`,
          );
        }
        if (kind === "squad" && (d.open === undefined || d.open === false)) {
          return yield* fail(
            `${where}.corpus`,
            `a SQuAD set searches a corpus only with the open search: add open: true`,
          );
        }
        corpus = absPath(pathOf(d.corpus), base);
        if (!isDataPath(corpus)) return yield* fail(`${where}.corpus`, `no such file "${corpus}"`);
      }
      // An open set with a corpus is searched by encoder models (its open
      // option: the ranks kept; default OPEN_TOP_K, `runs/plan/plan.ts`).
      const openSearched = kind === "open" && corpus !== undefined;
      if (kind !== "squad") {
        const only = d.open !== undefined && !openSearched
          ? "open"
          : d.uniqueIds !== undefined && !kindTakes(kind, "uniqueIds")
          ? "uniqueIds"
          : d.eval?.metrics?.includes("bem") || d.eval?.bem !== undefined
          ? "eval.bem"
          : undefined;
        if (only !== undefined) {
          return yield* fail(`${where}.${only}`, `a SQuAD v1.1 option; type "${kind}" has none`);
        }
      }
      const articles = d.reader?.articles;
      if (articles && articles[0] >= articles[1]) {
        return yield* fail(
          `${where}.reader.articles`,
          `expected [start, end) with start < end, got [${articles[0]}, ${articles[1]}]`,
        );
      }
      const metrics = [...new Set(d.eval?.metrics ?? ["em", "f1"])] as Metric[];
      const bem = d.eval?.bem;
      if (metrics.includes("bem") && !bem) {
        return yield* fail(`${where}.eval.bem`, 'missing (metric "bem" needs { model: ... })');
      }
      let bemResolved: ResolvedDataset["bem"] = null;
      if (bem && metrics.includes("bem")) {
        const model = absPath(pathOf(bem.model), base);
        if (!isFile(model)) {
          return yield* fail(`${where}.eval.bem.model`, `no such file "${model}"`);
        }
        bemResolved = { model, report: bem.report ?? "accuracy" };
      }
      datasets.push({
        abbr: d.abbr,
        type: kind,
        path,
        ...(format !== undefined && (d.format !== undefined || !squadKind) ? { format } : {}),
        ...(d.lang !== undefined ? { lang: d.lang } : {}),
        ...(fields !== undefined ? { fields: { ...fields } } : {}),
        ...(corpus !== undefined ? { corpus } : {}),
        articles: articles ? [articles[0], articles[1]] : null,
        ...(d.uniqueIds === true ? { uniqueIds: true } : {}),
        ...(d.open === true || typeof d.open === "object"
          ? {
            open: {
              topK: (typeof d.open === "object" ? d.open.topK : undefined) ?? OPEN_TOP_K,
              ...(typeof d.open === "object" && d.open.shards !== undefined
                ? { shards: d.open.shards }
                : {}),
              ...(typeof d.open === "object" && d.open.ivf !== undefined
                ? { ivf: { ...d.open.ivf } }
                : {}),
            },
          }
          : {}),
        metrics,
        bem: bemResolved,
      });
    }
    // Names first (an unknown encoder is the first thing to fix), then files.
    const known = `known: ${ENCODER_NAMES.join(", ")}`;
    for (const [i, m] of raw.models.entries()) {
      if (m.type === "predictions") continue;
      if (m.encoder !== undefined && m.onnx === undefined && !ENCODER_NAMES.includes(m.encoder)) {
        return yield* fail(`models[${i}].encoder`, `unknown encoder "${m.encoder}" (${known})`);
      }
    }
    const models: ResolvedModel[] = [];
    for (const [i, m] of raw.models.entries()) {
      const where = `models[${i}]`;
      if (m.type === "predictions" || (m.type === undefined && m.predictions !== undefined)) {
        const r = predictionsModel(m, where, base, datasets);
        if (typeof r === "string") return yield* fail(r.split("\u0000")[0], r.split("\u0000")[1]);
        models.push(r);
        continue;
      }
      if (m.predictions !== undefined) {
        return yield* fail(`${where}.predictions`, 'only a type "predictions" model takes it');
      }
      const sq = datasets.find((d) => d.type !== "squad" && d.corpus === undefined);
      if (sq !== undefined) {
        return yield* fail(
          where,
          `"${m.abbr}" is an encoder model and dataset "${sq.abbr}" is type "${sq.type}": ` +
            `encoders run on SQuAD v1.1 sets and on sets with a corpus only; score such a set ` +
            `with { type: "predictions", predictions: ... }`,
        );
      }
      if (m.encoder !== undefined && m.onnx !== undefined) {
        return yield* fail(where, 'give "encoder" or "onnx", not both');
      }
      if (m.encoder === undefined && m.onnx === undefined) {
        return yield* fail(`${where}.encoder`, `missing (${known})`);
      }
      let encoder: string;
      let model: string | null = m.model !== undefined ? absPath(pathOf(m.model), base) : null;
      if (m.onnx !== undefined) {
        const onnx = ONNX_ENCODERS.find((n) => ENCODER_NAMES.includes(n));
        if (onnx === undefined) {
          return yield* fail(
            `${where}.onnx`,
            `no ONNX encoder is registered in this checkout (${known})`,
          );
        }
        encoder = onnx;
        model = absPath(pathOf(m.onnx), base);
      } else encoder = m.encoder!; // a registered name: checked in the loop above
      if (model !== null && !isFile(model) && !isFifo(model)) {
        return yield* fail(
          `${where}.${m.onnx !== undefined ? "onnx" : "model"}`,
          `no such file "${model}"`,
        );
      }
      // Every encoder but sparse-pi runs an ONNX manifest (`encoders/registry.ts`): one
      // that is not a manifest is refused now, not by each encode task (a named pipe is
      // read by the encoder alone).
      if (model !== null && encoder !== "sparse-pi" && isFile(model)) {
        const why = manifestProblem(model);
        if (why !== undefined) {
          return yield* fail(`${where}.${m.onnx !== undefined ? "onnx" : "model"}`, why);
        }
      }
      const device = m.device ?? "cpu";
      const spec = yield* encoderSpec(encoder, {
        ...(model !== null ? { model } : {}),
        device,
        ...(m.threads !== undefined ? { threads: m.threads } : {}),
      }).pipe(
        Effect.mapError((e) =>
          new InputError({ file: shown, where: `${where}.encoder`, message: e.message })
        ),
      );
      const absent = [...spec.contextFiles, ...spec.questionFiles].find((f) =>
        f !== model && !isFile(f) && !isDir(f) && !isFifo(f)
      );
      if (absent !== undefined) {
        return yield* fail(
          `${where}.${m.onnx !== undefined ? "onnx" : "encoder"}`,
          `${encoder}: its model file "${absent}" does not exist`,
        );
      }
      models.push({
        abbr: m.abbr,
        encoder,
        model,
        device,
        threads: m.threads ?? null,
        batch: { context: m.batch?.context ?? null, question: m.batch?.question ?? null },
        dtype: m.dtype ?? null,
        sparse: spec.sparse,
        contextFiles: [...spec.contextFiles],
        questionFiles: [...spec.questionFiles],
        permissions: [...(spec.permissions ?? [])],
      });
    }
    const clash = (list: readonly { abbr: string }[], kind: string) => {
      const seen = new Map<string, number>();
      for (const [i, x] of list.entries()) {
        const j = seen.get(x.abbr);
        if (j !== undefined) {
          return {
            where: `${kind}[${i}].abbr`,
            message: `"${x.abbr}" is also the abbr of ${kind}[${j}]`,
          };
        }
        seen.set(x.abbr, i);
      }
      return undefined;
    };
    const c = clash(raw.models, "models") ?? clash(raw.datasets, "datasets");
    if (c) return yield* fail(c.where, c.message);
    for (const [i, m] of raw.models.entries()) {
      const j = raw.datasets.findIndex((d) => d.abbr === m.abbr);
      if (j >= 0) {
        return yield* fail(`models[${i}].abbr`, `"${m.abbr}" is also the abbr of datasets[${j}]`);
      }
    }
    return {
      file,
      name: baseOf(file).replace(/\.[^.]+$/, ""),
      datasets,
      models,
      workDir: raw.workDir !== undefined ? absPath(pathOf(raw.workDir), base) : null,
      maxPartitionSize: raw.maxPartitionSize ?? null,
      maxWorkers: raw.maxWorkers ?? null,
      taskTimeout: raw.taskTimeout ?? null,
      retries: raw.retries ?? null,
    };
  });
