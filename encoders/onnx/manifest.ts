/**
 * The manifest of an ONNX encoder pair (`manifest.json` beside the models),
 * validated with Effect Schema, and the checks of a manifest against the
 * files on disk and the graphs ONNX Runtime loaded. Every failure is an
 * {@linkcode OnnxConfigError} (exit code 2) whose message is one line:
 * `manifest <path>: <field>: <what is wrong>`.
 *
 * @module
 */
import * as Result from "effect/Result";
import * as Schema from "effect/Schema";
import { EncoderError } from "../types.ts";

/** Manifest format tag. */
export const ONNX_MANIFEST_FORMAT = "phraseval/onnx-encoder";

/** Element types a manifest may name. */
export const TENSOR_DTYPES = ["int64", "int32", "float32", "float16", "bool"] as const;

/** What the encoder feeds an input with. */
export const INPUT_ROLES = [
  "ids",
  "mask",
  "lengths",
  "casing",
  "token_type",
  "span_start",
  "span_end",
] as const;

const PositiveInt = Schema.Int.check(Schema.isGreaterThan(0));
const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0));

/** The schema of one input of a manifest's half. */
export const OnnxInputSchema = Schema.Struct({
  name: Schema.String,
  role: Schema.Literals(INPUT_ROLES),
  dtype: Schema.Literals(TENSOR_DTYPES),
});

/** The schema of one output of a manifest's half. */
export const OnnxOutputSchema = Schema.Struct({
  name: Schema.String,
  dtype: Schema.Literals(["float32", "float16"]),
});

const WordTokenizerSchema = Schema.Struct({
  kind: Schema.Literal("word"),
  vocab: Schema.String,
  lowercase: Schema.Boolean,
  pad: NonNegativeInt,
  unk: NonNegativeInt,
  size: Schema.optionalKey(PositiveInt),
  maxTokens: Schema.optionalKey(PositiveInt),
});

const WordpieceTokenizerSchema = Schema.Struct({
  kind: Schema.Literal("wordpiece"),
  tokenizer: Schema.String,
  config: Schema.optionalKey(Schema.String),
  cls: Schema.optionalKey(Schema.String),
  sep: Schema.optionalKey(Schema.String),
  pad: Schema.optionalKey(Schema.String),
  maxTokens: Schema.optionalKey(PositiveInt),
});

const PhrasesSchema = Schema.Struct({
  kind: Schema.Literals(["spans", "direct"]),
  maxTokens: PositiveInt,
  wordBoundary: Schema.optionalKey(Schema.Boolean),
  noBoundary: Schema.optionalKey(Schema.Array(Schema.String)),
});

const ContextSchema = Schema.Struct({
  model: Schema.String,
  inputs: Schema.Array(OnnxInputSchema),
  outputs: Schema.Struct({
    start: Schema.optionalKey(OnnxOutputSchema),
    end: Schema.optionalKey(OnnxOutputSchema),
    phrases: Schema.optionalKey(OnnxOutputSchema),
  }),
});

const QuestionSchema = Schema.Struct({
  model: Schema.String,
  inputs: Schema.Array(OnnxInputSchema),
  outputs: Schema.Struct({ vector: OnnxOutputSchema }),
});

/** The manifest schema. */
export const OnnxManifestSchema = Schema.Struct({
  format: Schema.Literal(ONNX_MANIFEST_FORMAT),
  version: Schema.Literal(1),
  name: Schema.String,
  description: Schema.optionalKey(Schema.String),
  dim: PositiveInt,
  store: Schema.Literals(["f32", "f16"]),
  tokenizer: Schema.Union([WordTokenizerSchema, WordpieceTokenizerSchema]),
  phrases: PhrasesSchema,
  context: ContextSchema,
  question: QuestionSchema,
  provenance: Schema.optionalKey(Schema.Unknown),
});

/** A manifest as decoded. */
export type OnnxManifest = Schema.Schema.Type<typeof OnnxManifestSchema>;
/** A manifest input entry. */
export type OnnxInputSpec = Schema.Schema.Type<typeof OnnxInputSchema>;
/** A manifest output entry. */
export type OnnxOutputSpec = Schema.Schema.Type<typeof OnnxOutputSchema>;
/** Which half of the pair. */
export type OnnxHalf = "context" | "question";

/**
 * A bad manifest, a missing file, or a manifest that does not fit its
 * graphs, or a device that cannot be used: bad input, exit code 2.
 */
export class OnnxConfigError extends EncoderError {
  /** Exit code of a stage that fails with it. */
  readonly exitCode = 2;
}

/** A loaded manifest with its paths resolved. */
export interface ResolvedManifest {
  /** Absolute path of the manifest. */
  readonly path: string;
  /** The manifest. */
  readonly manifest: OnnxManifest;
  /** Absolute path of a manifest-relative file. */
  resolve(rel: string): string;
}

const dirname = (p: string) => p.includes("/") ? p.slice(0, p.lastIndexOf("/")) || "/" : ".";
const absolute = (p: string) => p.startsWith("/") ? p : `${Deno.cwd()}/${p}`;

/** `["a"]["b"][0]` → `a.b[0]`. */
function dotted(path: string): string {
  return path.replace(/\["([^"]*)"\]/g, ".$1").replace(/^\./, "");
}

/**
 * Decodes a parsed manifest; throws {@linkcode OnnxConfigError} naming the
 * first bad field, then checks the rules the schema cannot express (a
 * `spans` model has `start` and `end` outputs, a `direct` one a `phrases`
 * output and span inputs, the question half has an ids input, ...).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeManifest } from "./manifest.ts";
 * assert.throws(
 *   () => decodeManifest({ format: "phraseval/onnx-encoder", version: 1 }, "/m/manifest.json"),
 *   { message: "manifest /m/manifest.json: name: missing key" },
 * );
 * ```
 */
export function decodeManifest(value: unknown, path: string): OnnxManifest {
  const fail = (field: string, what: string): never => {
    throw new OnnxConfigError({
      encoder: "onnx",
      message: `manifest ${path}: ${field ? `${field}: ` : ""}${what}`,
    });
  };
  const r = Schema.decodeUnknownResult(OnnxManifestSchema)(value);
  if (Result.isFailure(r)) {
    const lines = r.failure.message.split("\n").map((l) => l.trim());
    const at = lines.find((l) => l.startsWith("at "));
    const what = lines.filter((l) => !l.startsWith("at ")).join(" ");
    fail(at ? dotted(at.slice(3)) : "", what.charAt(0).toLowerCase() + what.slice(1));
  }
  const m = (r as Result.Success<OnnxManifest, unknown>).success;
  const roles = (half: OnnxHalf) => m[half].inputs.map((i) => i.role);
  for (const half of ["context", "question"] as const) {
    const rs = roles(half);
    if (!rs.includes("ids")) fail(`${half}.inputs`, `no input with role "ids"`);
    const seen = new Set<string>();
    m[half].inputs.forEach((inp, k) => {
      if (seen.has(inp.role)) fail(`${half}.inputs[${k}].role`, `role "${inp.role}" given twice`);
      seen.add(inp.role);
      if (inp.role === "casing" && m.tokenizer.kind !== "word") {
        fail(`${half}.inputs[${k}].role`, `"casing" needs the word tokenizer`);
      }
      const ints = ["ids", "lengths", "casing", "token_type", "span_start", "span_end"];
      if (ints.includes(inp.role) && inp.dtype !== "int64" && inp.dtype !== "int32") {
        fail(
          `${half}.inputs[${k}].dtype`,
          `role "${inp.role}" takes int64 or int32, not ${inp.dtype}`,
        );
      }
    });
    if (half === "question" && (seen.has("span_start") || seen.has("span_end"))) {
      fail(`question.inputs`, `span inputs belong to the context model`);
    }
  }
  const out = m.context.outputs;
  if (m.phrases.kind === "spans") {
    if (!out.start) fail("context.outputs.start", `missing key (phrases.kind "spans")`);
    if (!out.end) fail("context.outputs.end", `missing key (phrases.kind "spans")`);
  } else {
    if (!out.phrases) fail("context.outputs.phrases", `missing key (phrases.kind "direct")`);
    const rs = roles("context");
    if (!rs.includes("span_start") || !rs.includes("span_end")) {
      fail(
        "context.inputs",
        `phrases.kind "direct" needs inputs with roles span_start and span_end`,
      );
    }
  }
  return m;
}

/** The manifest-relative files one half reads (tokenizer files and its model). */
export function halfFiles(m: OnnxManifest, half: OnnxHalf): { field: string; file: string }[] {
  const files = [{ field: `${half}.model`, file: m[half].model }];
  if (m.tokenizer.kind === "word") {
    files.push({ field: "tokenizer.vocab", file: m.tokenizer.vocab });
  } else {
    files.push({ field: "tokenizer.tokenizer", file: m.tokenizer.tokenizer });
    if (m.tokenizer.config) files.push({ field: "tokenizer.config", file: m.tokenizer.config });
  }
  return files;
}

/**
 * The files one half of the manifest at `path` names, each with its field,
 * as written and resolved against the manifest's folder; `undefined` when
 * `path` is not a readable manifest. (Read synchronously: the planner of a
 * run checks these before it grants them to an encoder process.)
 *
 * @example
 * ```ts
 * import { PIQA_LSTM_MANIFEST } from "./encoder.ts";
 * import { manifestFiles } from "./manifest.ts";
 * const f = manifestFiles(PIQA_LSTM_MANIFEST, "question")!;
 * if (f.map((x) => `${x.field}=${x.file}`).join() !== "question.model=question.onnx,tokenizer.vocab=vocab.txt") {
 *   throw new Error(JSON.stringify(f));
 * }
 * ```
 */
export function manifestFiles(
  path: string,
  half: OnnxHalf,
): { field: string; file: string; path: string }[] | undefined {
  const abs = absolute(path);
  const dir = dirname(abs);
  try {
    const m = decodeManifest(JSON.parse(Deno.readTextFileSync(abs)), abs);
    return halfFiles(m, half).map(({ field, file }) => ({
      field,
      file,
      path: file.startsWith("/") ? file : `${dir}/${file}`,
    }));
  } catch {
    return undefined;
  }
}

/**
 * Reads and decodes a manifest, and checks that the files `half` reads exist
 * (only that half's: the question process may not even look at the context
 * model). Throws {@linkcode OnnxConfigError}.
 *
 * @example
 * ```ts
 * import { PIQA_LSTM_MANIFEST } from "./encoder.ts";
 * import { readManifest } from "./manifest.ts";
 * const m = await readManifest(PIQA_LSTM_MANIFEST, "question");
 * const model = m.resolve(m.manifest.question.model);
 * if (!model.endsWith("/data/models/piqa-lstm/question.onnx")) throw new Error(model);
 * ```
 */
export async function readManifest(
  path: string,
  half: OnnxHalf | "both",
): Promise<ResolvedManifest> {
  const abs = absolute(path);
  let text: string;
  try {
    text = await Deno.readTextFile(abs);
  } catch (e) {
    throw new OnnxConfigError({
      encoder: "onnx",
      message: e instanceof Deno.errors.NotFound
        ? `manifest ${abs}: file not found`
        : `manifest ${abs}: ${e instanceof Error ? e.message : String(e)}`,
    });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new OnnxConfigError({
      encoder: "onnx",
      message: `manifest ${abs}: invalid JSON (${e instanceof Error ? e.message : e})`,
    });
  }
  const manifest = decodeManifest(json, abs);
  const dir = dirname(abs);
  const resolve = (rel: string) => rel.startsWith("/") ? rel : `${dir}/${rel}`;
  const halves: OnnxHalf[] = half === "both" ? ["context", "question"] : [half];
  for (const h of halves) {
    for (const { field, file } of halfFiles(manifest, h)) {
      const p = resolve(file);
      try {
        const st = await Deno.stat(p);
        if (!st.isFile) throw new Deno.errors.NotFound();
      } catch (e) {
        throw new OnnxConfigError({
          encoder: manifest.name,
          message: e instanceof Deno.errors.NotFound
            ? `manifest ${abs}: ${field}: file not found: ${p}`
            : `manifest ${abs}: ${field}: cannot read ${p} (${e instanceof Error ? e.message : e})`,
        });
      }
    }
  }
  return { path: abs, manifest, resolve };
}

/** What a graph declares about one input or output. */
export interface GraphValue {
  /** Name. */
  readonly name: string;
  /** Element type (`float32`, `int64`, ...) when ONNX Runtime reports it. */
  readonly type?: string;
  /** Shape (numbers fixed, strings symbolic) when reported. */
  readonly shape?: readonly (number | string)[];
}

/** The interface of a loaded graph. */
export interface GraphInterface {
  /** Inputs in graph order. */
  readonly inputs: readonly GraphValue[];
  /** Outputs in graph order. */
  readonly outputs: readonly GraphValue[];
}

/**
 * Checks one half of a manifest against the graph ONNX Runtime loaded:
 * every manifest tensor exists in the graph with the declared dtype, every
 * graph input is fed, and fixed output widths add up to `dim`. Throws
 * {@linkcode OnnxConfigError}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PIQA_LSTM_MANIFEST } from "./encoder.ts";
 * import { checkGraph, OnnxConfigError, readManifest } from "./manifest.ts";
 * const rm = await readManifest(PIQA_LSTM_MANIFEST, "question");
 * // A graph without the manifest's inputs is refused.
 * assert.throws(() => checkGraph(rm, "question", { inputs: [], outputs: [] }), OnnxConfigError);
 * ```
 */
export function checkGraph(rm: ResolvedManifest, half: OnnxHalf, g: GraphInterface): void {
  const m = rm.manifest;
  const model = m[half].model.split("/").pop()!;
  const fail = (field: string, what: string): never => {
    throw new OnnxConfigError({
      encoder: m.name,
      message: `manifest ${rm.path}: ${field}: ${what}`,
    });
  };
  const list = (vs: readonly GraphValue[]) => vs.map((v) => v.name).join(", ");
  const byName = (vs: readonly GraphValue[], name: string) => vs.find((v) => v.name === name);
  m[half].inputs.forEach((inp, k) => {
    const v = byName(g.inputs, inp.name);
    if (!v) {
      fail(
        `${half}.inputs[${k}].name`,
        `"${inp.name}" is not an input of ${model} (its inputs: ${list(g.inputs)})`,
      );
    }
    if (v!.type !== undefined && v!.type !== inp.dtype) {
      fail(
        `${half}.inputs[${k}].dtype`,
        `${inp.dtype} in the manifest, ${v!.type} in ${model} (input "${inp.name}")`,
      );
    }
  });
  for (const v of g.inputs) {
    if (!m[half].inputs.some((i) => i.name === v.name)) {
      fail(`${half}.inputs`, `${model} has an input "${v.name}" the manifest does not feed`);
    }
  }
  const outs = Object.entries(m[half].outputs) as [string, OnnxOutputSpec | undefined][];
  let width = 0;
  let fixed = true;
  for (const [key, o] of outs) {
    if (!o) continue;
    if (m.phrases.kind === "spans" && key === "phrases") continue;
    if (m.phrases.kind === "direct" && (key === "start" || key === "end")) continue;
    const v = byName(g.outputs, o.name);
    if (!v) {
      fail(
        `${half}.outputs.${key}.name`,
        `"${o.name}" is not an output of ${model} (its outputs: ${list(g.outputs)})`,
      );
    }
    if (v!.type !== undefined && v!.type !== o.dtype) {
      fail(
        `${half}.outputs.${key}.dtype`,
        `${o.dtype} in the manifest, ${v!.type} in ${model} (output "${o.name}")`,
      );
    }
    const last = v!.shape?.[v!.shape.length - 1];
    if (typeof last === "number") width += last;
    else fixed = false;
  }
  if (fixed && width !== m.dim) {
    fail("dim", `${m.dim} in the manifest, ${width} from the outputs of ${model}`);
  }
}
