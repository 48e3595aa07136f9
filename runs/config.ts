/**
 * Validating a loaded run config: structure by Effect Schema
 * ({@linkcode RunConfigSchema}), then against the checkout (known encoders,
 * existing files, unique `abbr`s), giving a {@linkcode ResolvedRunConfig}
 * (absolute paths, defaults filled in). Every error is an
 * {@linkcode InputError} whose one line names the config file and the field
 * path: `configs/bad.ts: models[1].encoder: unknown encoder "nope" (known: sparse-pi)`.
 *
 * @module
 */
import { Effect, Result, Schema, SchemaIssue } from "effect";
import { InputError } from "../io/errors.ts";
import { ENCODER_NAMES, encoderSpec } from "../encoders/registry.ts";
import { absPath, baseOf, dirOf, displayPath, isDir, isFifo, isFile } from "./_fs.ts";
import { NON_DATA } from "./config_loader.ts";
import { type MetricName, RunConfigSchema } from "./schema.ts";

/** A metric name. */
export type Metric = typeof MetricName.Type;

/** A dataset after validation: absolute paths, defaults filled in. */
export interface ResolvedDataset {
  /** Unique short name. */
  readonly abbr: string;
  /** Reader type. */
  readonly type: "squad";
  /** Absolute path of the data file. */
  readonly path: string;
  /** Article range `[start, end)`, or `null` for all. */
  readonly articles: readonly [number, number] | null;
  /** Rename repeated article titles (`io/squad_ids.ts`); absent: refuse them. */
  readonly uniqueIds?: boolean;
  /** Open-domain search too (index and search tasks), keeping `topK` ranks; absent: closed only. */
  readonly open?: { readonly topK: number };
  /** Metrics, in table order. */
  readonly metrics: readonly Metric[];
  /** BEM options when `bem` is a metric. */
  readonly bem: {
    readonly model: string;
    readonly report: "accuracy" | "score";
  } | null;
}

/** A model after validation: a registered encoder and the files each half reads. */
export interface ResolvedModel {
  /** Unique short name. */
  readonly abbr: string;
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
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/**
 * Validates the data a run config module exported: structure by Schema,
 * then paths (relative strings are resolved against the config's folder),
 * encoders, files and `abbr` clashes.
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { REPO_ROOT } from "../io/repo.ts";
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
    const decoded = Schema.decodeUnknownResult(RunConfigSchema, { onExcessProperty: "error" })(
      data,
    );
    if (Result.isFailure(decoded)) {
      const issue = SchemaIssue.makeFormatterStandardSchemaV1()(decoded.failure.issue).issues[0];
      const path = (issue.path ?? []).map((k) =>
        typeof k === "object" && k !== null ? (k as { key: PropertyKey }).key : k
      ) as PropertyKey[];
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
      if (!isFile(path)) return yield* fail(`${where}.path`, `no such file "${path}"`);
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
        type: "squad",
        path,
        articles: articles ? [articles[0], articles[1]] : null,
        ...(d.uniqueIds === true ? { uniqueIds: true } : {}),
        ...(d.open === true || typeof d.open === "object"
          ? { open: { topK: (typeof d.open === "object" ? d.open.topK : undefined) ?? OPEN_TOP_K } }
          : {}),
        metrics,
        bem: bemResolved,
      });
    }
    // Names first (an unknown encoder is the first thing to fix), then files.
    for (const [i, m] of raw.models.entries()) {
      if (m.encoder !== undefined && m.onnx === undefined && !ENCODER_NAMES.includes(m.encoder)) {
        return yield* fail(
          `models[${i}].encoder`,
          `unknown encoder "${m.encoder}" (known: ${ENCODER_NAMES.join(", ")})`,
        );
      }
    }
    const models: ResolvedModel[] = [];
    for (const [i, m] of raw.models.entries()) {
      const where = `models[${i}]`;
      if (m.encoder !== undefined && m.onnx !== undefined) {
        return yield* fail(where, 'give "encoder" or "onnx", not both');
      }
      if (m.encoder === undefined && m.onnx === undefined) {
        return yield* fail(`${where}.encoder`, `missing (known: ${ENCODER_NAMES.join(", ")})`);
      }
      let encoder: string;
      let model: string | null = m.model !== undefined ? absPath(pathOf(m.model), base) : null;
      if (m.onnx !== undefined) {
        const onnx = ONNX_ENCODERS.find((n) => ENCODER_NAMES.includes(n));
        if (onnx === undefined) {
          return yield* fail(
            `${where}.onnx`,
            `no ONNX encoder is registered in this checkout (known: ${ENCODER_NAMES.join(", ")})`,
          );
        }
        encoder = onnx;
        model = absPath(pathOf(m.onnx), base);
      } else {
        encoder = m.encoder!;
        if (!ENCODER_NAMES.includes(encoder)) {
          return yield* fail(
            `${where}.encoder`,
            `unknown encoder "${encoder}" (known: ${ENCODER_NAMES.join(", ")})`,
          );
        }
      }
      if (model !== null && !isFile(model) && !isFifo(model)) {
        return yield* fail(
          `${where}.${m.onnx !== undefined ? "onnx" : "model"}`,
          `no such file "${model}"`,
        );
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
