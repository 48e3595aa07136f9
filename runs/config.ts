/**
 * Loading and validating run configs for `pipeline/run.ts`: the config
 * module is imported in a read-only Deno process (`_run_load.ts`), its
 * import graph is checked for cycles first, and the data it exports is
 * validated with Effect Schema, then against the checkout (known encoders,
 * existing files, unique `abbr`s). Every error is an {@linkcode InputError}
 * whose one line names the config file and the field path:
 * `configs/bad.ts: models[1].encoder: unknown encoder "nope" (known: sparse-pi)`.
 *
 * @module
 */
import { Effect, Result, Schema, SchemaIssue } from "effect";
import { InputError } from "../io/errors.ts";
import { ENCODER_NAMES, encoderSpec } from "../encoders/registry.ts";
import { NON_DATA } from "./_run_load.ts";

/** The repository root (no trailing slash). */
export const REPO_ROOT: string = decodeURIComponent(new URL("..", import.meta.url).pathname)
  .replace(/\/$/, "");

/** A metric name. */
export type Metric = "em" | "f1" | "bem";

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

/** Registered encoders that run any ONNX manifest (`onnx:` in a model config), in preference order. */
const ONNX_ENCODERS = ["onnx", "piqa-lstm"];

// ---------------------------------------------------------------------------
// Schema of the data a config module exports.

const Abbr = Schema.String.check(
  Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$/, {
    message: "expected a short name of letters, digits and ._+- (at most 64)",
  }),
);
const PathStr = Schema.String.check(Schema.isNonEmpty({ message: "expected a non-empty path" }));
const NonNegInt = Schema.Number.check(
  Schema.isInt({ message: "expected an integer >= 0" }),
  Schema.isGreaterThanOrEqualTo(0, { message: "expected an integer >= 0" }),
);
const PosInt = Schema.Number.check(
  Schema.isInt({ message: "expected an integer > 0" }),
  Schema.isGreaterThan(0, { message: "expected an integer > 0" }),
);

const DatasetSchema = Schema.Struct({
  abbr: Abbr,
  type: Schema.optionalKey(Schema.Literal("squad")),
  path: PathStr,
  reader: Schema.optionalKey(Schema.Struct({
    articles: Schema.optionalKey(Schema.Tuple([NonNegInt, NonNegInt])),
  })),
  eval: Schema.optionalKey(Schema.Struct({
    metrics: Schema.optionalKey(Schema.Array(Schema.Literals(["em", "f1", "bem"]))),
    bem: Schema.optionalKey(Schema.Struct({
      model: PathStr,
      report: Schema.optionalKey(Schema.Literals(["accuracy", "score"])),
    })),
  })),
});

const ModelSchema = Schema.Struct({
  abbr: Abbr,
  encoder: Schema.optionalKey(Schema.String),
  onnx: Schema.optionalKey(PathStr),
  model: Schema.optionalKey(PathStr),
  device: Schema.optionalKey(Schema.Literals(["cpu", "cuda", "webgpu", "auto"])),
  threads: Schema.optionalKey(PosInt),
  batch: Schema.optionalKey(Schema.Struct({
    context: Schema.optionalKey(PosInt),
    question: Schema.optionalKey(PosInt),
  })),
  dtype: Schema.optionalKey(Schema.Literals(["f32", "f16"])),
});

/** The Schema of a run config module's `config` export (after `URL`s became paths). */
export const RunConfigSchema = Schema.Struct({
  datasets: Schema.Array(DatasetSchema).check(
    Schema.isMinLength(1, { message: "expected at least one dataset" }),
  ),
  models: Schema.Array(ModelSchema).check(
    Schema.isMinLength(1, { message: "expected at least one model" }),
  ),
  workDir: Schema.optionalKey(PathStr),
  maxPartitionSize: Schema.optionalKey(PosInt),
  maxWorkers: Schema.optionalKey(PosInt),
  taskTimeout: Schema.optionalKey(PosInt),
  retries: Schema.optionalKey(NonNegInt),
});

type RawRunConfig = typeof RunConfigSchema.Type;

// ---------------------------------------------------------------------------
// Helpers.

/** `p` relative to the working folder when inside it, else absolute. */
export function displayPath(p: string): string {
  const cwd = Deno.cwd().replace(/\/$/, "");
  return p.startsWith(cwd + "/") ? p.slice(cwd.length + 1) : p;
}

const absPath = (p: string, base = Deno.cwd()) =>
  normalize(p.startsWith("/") ? p : `${base.replace(/\/$/, "")}/${p}`);

/** Removes `.` and `..` segments of an absolute path. */
function normalize(p: string): string {
  const out: string[] = [];
  for (const s of p.split("/")) {
    if (s === "" || s === ".") continue;
    if (s === "..") out.pop();
    else out.push(s);
  }
  return "/" + out.join("/");
}

const dirOf = (p: string) => p.slice(0, p.lastIndexOf("/")) || "/";
const baseOf = (p: string) => p.slice(p.lastIndexOf("/") + 1);

/** A field path as `models[1].batch.context`. */
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

// ---------------------------------------------------------------------------
// Import cycles.

/** Folders (and files) of the repository's library: not followed by the cycle check. */
const LIBRARY = ["io/", "encoders/", "metrics/", "pipeline/", "mod.ts"];

const IMPORT_RE =
  /(?:^|[;\s])(?:import|export)\s+(type\s+)?(?:[\w*{}\s,$]+?\s+from\s+)?["']([^"']+)["']|import\s*\(\s*["']([^"']+)["']\s*\)/g;

function localImports(file: string, text: string): string[] {
  const noComments = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:])\/\/.*$/gm, "$1");
  const out: string[] = [];
  for (const m of noComments.matchAll(IMPORT_RE)) {
    if (m[1]) continue; // `import type`: erased, cannot cycle at run time
    const spec = m[2] ?? m[3];
    let target: string | undefined;
    if (spec.startsWith("./") || spec.startsWith("../")) target = absPath(spec, dirOf(file));
    else if (spec.startsWith("/")) target = normalize(spec);
    else if (spec.startsWith("file://")) {
      target = normalize(decodeURIComponent(new URL(spec).pathname));
    }
    if (target && /\.(m?[jt]sx?)$/.test(target)) out.push(target);
  }
  return out;
}

/**
 * The first import cycle reachable from `file` through local module
 * imports, as the list of files around it (first = last), or `undefined`.
 * The repository's library modules (`io/`, `encoders/`, `metrics/`,
 * `pipeline/`, `mod.ts`) are not followed (they have no cycles by design);
 * `import type` lines are ignored.
 *
 * @example
 * ```ts
 * import { findImportCycle } from "./_run_config.ts";
 * await findImportCycle("configs/eval_two_models_mini.ts"); // undefined
 * ```
 */
export async function findImportCycle(file: string): Promise<string[] | undefined> {
  const state = new Map<string, "active" | "done">();
  const stack: string[] = [];
  const follow = (f: string) => !LIBRARY.some((d) => f.startsWith(`${REPO_ROOT}/${d}`));
  const visit = async (f: string): Promise<string[] | undefined> => {
    const s = state.get(f);
    if (s === "active") return [...stack.slice(stack.indexOf(f)), f];
    if (s === "done") return undefined;
    state.set(f, "active");
    stack.push(f);
    let text = "";
    try {
      text = await Deno.readTextFile(f);
    } catch { /* a missing file is reported by the import itself */ }
    for (const t of localImports(f, text)) {
      if (!follow(t) && t !== file) continue;
      const c = await visit(t);
      if (c) return c;
    }
    stack.pop();
    state.set(f, "done");
    return undefined;
  };
  return await visit(file);
}

// ---------------------------------------------------------------------------
// Loading.

/**
 * The ONNX Runtime Node-API addon file (in Deno's npm cache), or `null`
 * when it cannot be found. A process that may load it needs
 * `--allow-ffi=<this file>` (and nothing wider).
 */
export const ORT_ADDON: string | null = (() => {
  try {
    const main = decodeURIComponent(new URL(import.meta.resolve("onnxruntime-node")).pathname);
    const os = Deno.build.os === "windows" ? "win32" : Deno.build.os;
    const arch = ({ x86_64: "x64", aarch64: "arm64" } as Record<string, string>)[Deno.build.arch] ??
      Deno.build.arch;
    const f = `${
      main.slice(0, main.lastIndexOf("/dist/"))
    }/bin/napi-v6/${os}/${arch}/onnxruntime_binding.node`;
    return Deno.statSync(f).isFile ? f : null;
  } catch {
    return null;
  }
})();

/**
 * Imports the config module `file` in a read-only Deno process and returns
 * the data it exports (`config`, or `datasets`/`models`).
 */
const importConfig = (file: string, shown: string) =>
  Effect.tryPromise({
    try: async () => {
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--no-prompt",
          "--quiet",
          `--config=${REPO_ROOT}/deno.json`,
          "--allow-read",
          // A config may import the encoder registry, which may load ONNX Runtime's addon.
          ...(ORT_ADDON !== null ? [`--allow-ffi=${ORT_ADDON}`] : []),
          `${REPO_ROOT}/pipeline/_run_load.ts`,
          file,
        ],
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
        env: { NO_COLOR: "1" },
      }).output();
      const text = new TextDecoder().decode(out.stdout).trim().split("\n").pop() ?? "";
      let parsed: { ok?: unknown; error?: string };
      try {
        parsed = JSON.parse(text);
      } catch {
        const err = new TextDecoder().decode(out.stderr).trim().split("\n").filter(Boolean);
        throw new InputError({
          file: shown,
          where: "",
          message: `cannot load: ${
            err.find((l) => /error/i.test(l)) ?? err[0] ?? `exit ${out.code}`
          }`
            .replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g"), ""),
        });
      }
      if (parsed.error !== undefined) {
        const circular = /before initialization/.test(parsed.error) ? " (a circular import?)" : "";
        throw new InputError({
          file: shown,
          where: "",
          message: `cannot load: ${parsed.error}${circular}`,
        });
      }
      return parsed.ok;
    },
    catch: (e) =>
      e instanceof InputError
        ? e
        : new InputError({ file: shown, where: "", message: `cannot load: ${e}` }),
  });

const fileExists = (p: string) => {
  try {
    return Deno.statSync(p).isFile;
  } catch {
    return false;
  }
};

/**
 * Validates the data a run config module exported: structure by Schema,
 * then paths (relative strings are resolved against the config's folder),
 * encoders, files and `abbr` clashes.
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { validateRunConfig } from "./_run_config.ts";
 * await Effect.runPromise(validateRunConfig({
 *   datasets: [{ abbr: "d", path: "data/dev-v1.1.json.gz" }],
 *   models: [{ abbr: "m", encoder: "sparse-pi" }],
 * }, "/tmp/cfg.ts"));
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
      const path = absPath(d.path, base);
      if (!fileExists(path)) return yield* fail(`${where}.path`, `no such file "${path}"`);
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
        const model = absPath(bem.model, base);
        if (!fileExists(model)) {
          return yield* fail(`${where}.eval.bem.model`, `no such file "${model}"`);
        }
        bemResolved = { model, report: bem.report ?? "accuracy" };
      }
      datasets.push({
        abbr: d.abbr,
        type: "squad",
        path,
        articles: articles ? [articles[0], articles[1]] : null,
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
      let model: string | null = m.model !== undefined ? absPath(m.model, base) : null;
      if (m.onnx !== undefined) {
        const onnx = ONNX_ENCODERS.find((n) => ENCODER_NAMES.includes(n));
        if (onnx === undefined) {
          return yield* fail(
            `${where}.onnx`,
            `no ONNX encoder is registered in this checkout (known: ${ENCODER_NAMES.join(", ")})`,
          );
        }
        encoder = onnx;
        model = absPath(m.onnx, base);
      } else {
        encoder = m.encoder!;
        if (!ENCODER_NAMES.includes(encoder)) {
          return yield* fail(
            `${where}.encoder`,
            `unknown encoder "${encoder}" (known: ${ENCODER_NAMES.join(", ")})`,
          );
        }
      }
      if (model !== null && !fileExists(model) && !isFifo(model)) {
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
        f !== model && !fileExists(f) && !isDir(f) && !isFifo(f)
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
      workDir: raw.workDir !== undefined ? absPath(raw.workDir, base) : null,
      maxPartitionSize: raw.maxPartitionSize ?? null,
      maxWorkers: raw.maxWorkers ?? null,
      taskTimeout: raw.taskTimeout ?? null,
      retries: raw.retries ?? null,
    };
  });

function isDir(p: string): boolean {
  try {
    return Deno.statSync(p).isDirectory;
  } catch {
    return false;
  }
}

function isFifo(p: string): boolean {
  try {
    return Deno.statSync(p).isFifo === true;
  } catch {
    return false;
  }
}

/**
 * Loads and validates the run config module `path` (absolute, or relative
 * to the working folder).
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { loadRunConfig } from "./_run_config.ts";
 * const cfg = await Effect.runPromise(loadRunConfig("configs/eval_two_models_mini.ts"));
 * cfg.models.map((m) => m.abbr); // ["sparse-pi", "sparse-pi-b8"]
 * ```
 */
export const loadRunConfig = (path: string): Effect.Effect<ResolvedRunConfig, InputError> =>
  Effect.gen(function* () {
    const file = absPath(path);
    const shown = displayPath(file);
    if (!fileExists(file)) {
      return yield* Effect.fail(
        new InputError({ file: shown, where: "", message: "no such config file" }),
      );
    }
    const cycle = yield* Effect.promise(() => findImportCycle(file));
    if (cycle) {
      return yield* Effect.fail(
        new InputError({
          file: shown,
          where: "",
          message: `circular import: ${cycle.map((f) => displayPath(f)).join(" → ")}`,
        }),
      );
    }
    const data = yield* importConfig(file, shown);
    return yield* validateRunConfig(data, file);
  });
