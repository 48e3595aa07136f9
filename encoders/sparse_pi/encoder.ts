/**
 * `sparse-pi`: the built-in sparse phrase encoder of phraseval, the default
 * encoder of `deno task full`.
 *
 * **Context side.** A paragraph is tokenized (runs of letters/marks/digits,
 * single punctuation characters; UTF-16 offsets), split into sentences, and
 * every span of at most 10 tokens inside one sentence that starts on a word
 * outside `NO_START_WORDS` and ends on a word outside `STOP_WORDS` (so never
 * on punctuation or an article) is a candidate phrase, in (start, end)
 * order. Its row holds, with value 1:
 *
 * - word keys `(group, stem)` for the Porter-stemmed, lower-cased content
 *   words inside the span (`IN`), at token distances 1, 2, 3, 4, 5–6, 7–9,
 *   10–13 to its left (`L1`..`L10`) and right (`R1`..`R10`), and elsewhere
 *   in its sentence up to 40 tokens away (`SENT`); the column of a key is
 *   `shapeDim + fnv1a32(utf8(group + "|" + stem)) % (dim - shapeDim)`;
 * - shape features in columns `[0, shapeDim)`: length, first/last/previous/
 *   next token (a frequent word or a token class), the class of the tokens
 *   two away, first/last token class, sentence index, suffix, and flags
 *   (all capitalised, has a number/year/month, splits a capitalised name,
 *   starts/ends the sentence, ...).
 *
 * Duplicate columns (hash collisions) are summed and columns are sorted
 * (scipy canonical CSR), values f32.
 *
 * **Question side** (text only, never a context). For each distinct content
 * stem `t` of the question and each group `g`, column `col(g, t)` gets
 * `idf(t) · A[g] + B[g] + [t = head] · idf(t) · H[g]`, and shape column `s`
 * gets `U[s]`, where `A, B, H, U` are the sums of the learned rows of the
 * question's classes (the always-on `*`, wh-word, wh + next one and two
 * words, the word before the wh-word, first word, head word) that occur at
 * least 10 times in the training questions. `idf` is from the SQuAD
 * training subset. The score of a phrase is the plain inner product.
 *
 * The model artifact (`data/sparse-pi/model.json.gz`, made by
 * `deno run -A baselines/sparse_pi/fit.ts`) holds a `context` section (the
 * lexical and suffix lists) and a `question` section (idf table, classes and
 * their weight rows); each half keeps only its own section.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { ContextEncoder, QuestionEncoder } from "../types.ts";
 * import { SPARSE_PI_MODEL, sparsePiLayers } from "./encoder.ts";
 * const program = Effect.gen(function* () {
 *   const ctx = yield* ContextEncoder;
 *   const qst = yield* QuestionEncoder;
 *   const [c] = yield* ctx.encode([{ id: "T_0", context: "Paris is the capital of France." }]);
 *   const [q] = yield* qst.encode([{ id: "q", question: "What is the capital of France?" }]);
 *   return [c.phrases.length, q.vector.cols];
 * });
 * const [phrases, cols] = await Effect.runPromise(
 *   Effect.provide(program, sparsePiLayers(SPARSE_PI_MODEL)),
 * );
 * if (phrases === 0 || cols !== 1 << 22) throw new Error(`${phrases} phrases, d=${cols}`);
 * ```
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import {
  contextFeatures,
  type ContextResources,
  contextResources,
  FEATURE_VERSION,
  GROUPS,
  N_GROUPS,
  questionFeatures,
  shapeVocabulary,
} from "./features.ts";
import { fnv1a32 } from "./text.ts";
import {
  ContextEncoder,
  type ContextInput,
  type CsrMatrix,
  type EncodedContext,
  type EncodedQuestion,
  EncoderError,
  type EncoderInfo,
  type Phrase,
  QuestionEncoder,
  type QuestionInput,
} from "../types.ts";

/** Encoder name. */
export const SPARSE_PI_NAME = "sparse-pi";
/** Artifact format tag. */
export const SPARSE_PI_FORMAT = "phraseval/sparse-pi";
/** Artifact format version. */
export const SPARSE_PI_VERSION = 1;
/** The bundled model artifact. */
export const SPARSE_PI_MODEL: string = decodeURIComponent(
  new URL("../../data/sparse-pi/model.json.gz", import.meta.url).pathname,
);

/** The artifact as stored (`data/sparse-pi/model.json.gz`, gzip of JSON). */
export interface SparsePiArtifact {
  /** Always {@linkcode SPARSE_PI_FORMAT}. */
  readonly format: string;
  /** Always {@linkcode SPARSE_PI_VERSION}. */
  readonly version: number;
  /** Feature definitions version (`FEATURE_VERSION` of the featurizer). */
  readonly featureVersion: number;
  /** Vector dimension d. */
  readonly dim: number;
  /** Number of shape columns (`[0, shapeDim)`). */
  readonly shapeDim: number;
  /** Word-key group names, in order. */
  readonly groups: readonly string[];
  /** Hash of word keys: `"fnv1a32"` over UTF-8 of `group|stem`. */
  readonly hash: string;
  /** Context-side data. */
  readonly context: {
    /** Lower-case words kept by the lexical shape families. */
    readonly lex: readonly string[];
    /** Suffixes of the `suf` family. */
    readonly suffixes: readonly string[];
  };
  /** Question-side data. */
  readonly question: {
    /** Question-class names, row order of the weights. */
    readonly classes: readonly string[];
    /** Stem → idf (training subset paragraphs). */
    readonly idf: Readonly<Record<string, number>>;
    /** idf of a stem absent from the table. */
    readonly idfUnknown: number;
    /** Base64 of little-endian f32, classes × (3 · groups): A, B, H rows. */
    readonly groupWeights: string;
    /** Base64 of little-endian f32, classes × shapeDim: U rows. */
    readonly shapeWeights: string;
  };
  /** How the artifact was made (free-form). */
  readonly provenance?: unknown;
}

/** The context half of a loaded model. */
export interface SparsePiContextModel {
  /** Vector dimension d. */
  readonly dim: number;
  /** Number of shape columns. */
  readonly shapeDim: number;
  /** Featurizer resources. */
  readonly resources: ContextResources;
  /** Memo: stem → its column in every group. */
  readonly columns: Map<string, Int32Array>;
}

/** The question half of a loaded model. */
export interface SparsePiQuestionModel {
  /** Vector dimension d. */
  readonly dim: number;
  /** Number of shape columns. */
  readonly shapeDim: number;
  /** Class name → row. */
  readonly classIndex: ReadonlyMap<string, number>;
  /** Stem → idf. */
  readonly idf: ReadonlyMap<string, number>;
  /** idf of unknown stems. */
  readonly idfUnknown: number;
  /** classes × 3G weights. */
  readonly groupWeights: Float32Array;
  /** classes × shapeDim weights. */
  readonly shapeWeights: Float32Array;
  /** Memo: stem → its column in every group. */
  readonly columns: Map<string, Int32Array>;
}

function fail(message: string): never {
  throw new EncoderError({ encoder: SPARSE_PI_NAME, message });
}

function checkHeader(a: SparsePiArtifact): void {
  if (a === null || typeof a !== "object") fail("model artifact is not a JSON object");
  if (a.format !== SPARSE_PI_FORMAT) fail(`not a sparse-pi model (format ${String(a.format)})`);
  if (a.version !== SPARSE_PI_VERSION) fail(`unsupported model version ${String(a.version)}`);
  if (a.featureVersion !== FEATURE_VERSION) {
    fail(`model features v${a.featureVersion}, this code has v${FEATURE_VERSION}; refit`);
  }
  if (a.hash !== "fnv1a32") fail(`unknown hash ${String(a.hash)}`);
  if (JSON.stringify(a.groups) !== JSON.stringify(GROUPS)) fail("model groups differ from code");
  if (!Number.isInteger(a.dim) || !Number.isInteger(a.shapeDim) || a.dim <= a.shapeDim) {
    fail("bad dim/shapeDim");
  }
}

/**
 * Column of word key `(group, stem)`: `shapeDim + fnv1a32(group|stem) mod
 * (dim - shapeDim)`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { keyColumn } from "./encoder.ts";
 * assert.deepEqual(keyColumn("IN", "denver", 1 << 22, 859) >= 859, true);
 * ```
 */
export function keyColumn(group: string, stem: string, dim: number, shapeDim: number): number {
  return shapeDim + (fnv1a32(`${group}|${stem}`) % (dim - shapeDim));
}

function stemColumns(
  memo: Map<string, Int32Array>,
  stem: string,
  dim: number,
  shapeDim: number,
): Int32Array {
  let cols = memo.get(stem);
  if (cols === undefined) {
    cols = new Int32Array(N_GROUPS);
    for (let g = 0; g < N_GROUPS; g++) cols[g] = keyColumn(GROUPS[g], stem, dim, shapeDim);
    if (memo.size > 500_000) memo.clear();
    memo.set(stem, cols);
  }
  return cols;
}

/**
 * The context half of a parsed artifact (reads only the header and the
 * `context` section). Throws {@linkcode EncoderError} on a bad artifact.
 *
 * @example
 * ```ts
 * import { contextModelFromArtifact, readArtifact, SPARSE_PI_MODEL } from "./encoder.ts";
 * const m = contextModelFromArtifact(await readArtifact(SPARSE_PI_MODEL));
 * if (typeof m !== "object" || m === null) throw new Error("a context model");
 * ```
 */
export function contextModelFromArtifact(a: SparsePiArtifact): SparsePiContextModel {
  checkHeader(a);
  const c = a.context;
  if (!c || !Array.isArray(c.lex) || !Array.isArray(c.suffixes)) fail("bad context section");
  const resources = contextResources(c.lex, c.suffixes);
  if (shapeVocabulary(c.lex, c.suffixes).length !== a.shapeDim) fail("shapeDim mismatch");
  return { dim: a.dim, shapeDim: a.shapeDim, resources, columns: new Map() };
}

function decodeF32(b64: string, length: number, what: string): Float32Array {
  if (typeof b64 !== "string") fail(`${what} missing`);
  const bin = atob(b64);
  if (bin.length !== length * 4) fail(`${what}: ${bin.length / 4} values, expected ${length}`);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  const view = new DataView(bytes.buffer);
  const out = new Float32Array(length);
  for (let i = 0; i < length; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}

/**
 * The question half of a parsed artifact (reads only the header and the
 * `question` section). Throws {@linkcode EncoderError} on a bad artifact.
 *
 * @example
 * ```ts
 * import { questionModelFromArtifact, readArtifact, SPARSE_PI_MODEL } from "./encoder.ts";
 * const m = questionModelFromArtifact(await readArtifact(SPARSE_PI_MODEL));
 * if (typeof m !== "object" || m === null) throw new Error("a question model");
 * ```
 */
export function questionModelFromArtifact(a: SparsePiArtifact): SparsePiQuestionModel {
  checkHeader(a);
  const q = a.question;
  if (!q || !Array.isArray(q.classes) || typeof q.idf !== "object") fail("bad question section");
  const C = q.classes.length;
  return {
    dim: a.dim,
    shapeDim: a.shapeDim,
    classIndex: new Map(q.classes.map((c, i) => [c, i])),
    idf: new Map(Object.entries(q.idf)),
    idfUnknown: q.idfUnknown,
    groupWeights: decodeF32(q.groupWeights, C * 3 * N_GROUPS, "groupWeights"),
    shapeWeights: decodeF32(q.shapeWeights, C * a.shapeDim, "shapeWeights"),
    columns: new Map(),
  };
}

/**
 * Reads a model file (`.json`, or `.json.gz`) and parses it.
 *
 * @example
 * ```ts
 * import { readArtifact, SPARSE_PI_FORMAT, SPARSE_PI_MODEL } from "./encoder.ts";
 * const artifact = await readArtifact(SPARSE_PI_MODEL);
 * if (artifact.format !== SPARSE_PI_FORMAT) throw new Error(String(artifact.format));
 * ```
 */
export async function readArtifact(path: string): Promise<SparsePiArtifact> {
  let text: string;
  if (path.endsWith(".gz")) {
    const file = await Deno.open(path);
    const stream = file.readable.pipeThrough(new DecompressionStream("gzip"));
    text = await new Response(stream).text();
  } else {
    text = await Deno.readTextFile(path);
  }
  return JSON.parse(text) as SparsePiArtifact;
}

const toEncoderError = (path: string) => (e: unknown): EncoderError =>
  e instanceof EncoderError ? e : new EncoderError({
    encoder: SPARSE_PI_NAME,
    message: `cannot load model ${path}: ${e instanceof Error ? e.message : String(e)}`,
  });

/**
 * Loads the context half of a model file.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { loadContextModel, SPARSE_PI_MODEL } from "./encoder.ts";
 * const model = await Effect.runPromise(loadContextModel(SPARSE_PI_MODEL));
 * if (typeof model !== "object" || model === null) throw new Error("a context model");
 * ```
 */
export const loadContextModel = (
  path: string,
): Effect.Effect<SparsePiContextModel, EncoderError> =>
  Effect.tryPromise({
    try: async () => contextModelFromArtifact(await readArtifact(path)),
    catch: toEncoderError(path),
  });

/**
 * Loads the question half of a model file.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { loadQuestionModel, SPARSE_PI_MODEL } from "./encoder.ts";
 * const model = await Effect.runPromise(loadQuestionModel(SPARSE_PI_MODEL));
 * if (typeof model !== "object" || model === null) throw new Error("a question model");
 * ```
 */
export const loadQuestionModel = (
  path: string,
): Effect.Effect<SparsePiQuestionModel, EncoderError> =>
  Effect.tryPromise({
    try: async () => questionModelFromArtifact(await readArtifact(path)),
    catch: toEncoderError(path),
  });

/**
 * Sorts each row's columns ascending and sums duplicates, in place over
 * `indices`/`data` (rows given by `ptr`); returns the compacted CSR arrays.
 */
function canonicalRows(
  indices: Int32Array,
  data: Float32Array,
  ptr: Int32Array,
  rows: number,
): { indices: Int32Array; data: Float32Array; indptr: Int32Array } {
  const indptr = new Int32Array(rows + 1);
  let w = 0;
  for (let r = 0; r < rows; r++) {
    const a = ptr[r];
    const b = ptr[r + 1];
    const row = indices.subarray(a, b);
    // Rows are binary before merging, so sorting indices alone is enough.
    row.sort();
    let last = -1;
    for (let k = a; k < b; k++) {
      const cidx = indices[k];
      if (cidx === last) {
        data[w - 1] += data[k];
      } else {
        indices[w] = cidx;
        data[w] = data[k];
        w++;
        last = cidx;
      }
    }
    indptr[r + 1] = w;
  }
  return { indices: indices.slice(0, w), data: data.slice(0, w), indptr };
}

/**
 * Encodes one paragraph: candidate phrases and their N×d CSR matrix.
 * Synchronous, for hot paths.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { encodeContext, loadContextModel, SPARSE_PI_MODEL } from "./encoder.ts";
 * import * as Effect from "effect/Effect";
 * const model = await Effect.runPromise(loadContextModel(SPARSE_PI_MODEL));
 * const enc = encodeContext(model, { id: "T_0", context: "Paris is in France." });
 * assert.deepEqual(enc.phrases.map((p) => p.text), ["Paris", "Paris is in France", "in France", "France"]);
 * ```
 */
export function encodeContext(model: SparsePiContextModel, input: ContextInput): EncodedContext {
  const f = contextFeatures(input.context, model.resources);
  const n = f.spanStart.length;
  const nS = f.stems.length;
  const local = new Int32Array(N_GROUPS * nS);
  for (let s = 0; s < nS; s++) {
    const cols = stemColumns(model.columns, f.stems[s], model.dim, model.shapeDim);
    for (let g = 0; g < N_GROUPS; g++) local[g * nS + s] = cols[g];
  }
  const total = f.keys.length + f.shapes.length;
  const indices = new Int32Array(total);
  const data = new Float32Array(total).fill(1);
  const ptr = new Int32Array(n + 1);
  const phrases: Phrase[] = new Array(n);
  const ts = f.tokens.start;
  const te = f.tokens.end;
  let w = 0;
  for (let r = 0; r < n; r++) {
    const start = ts[f.spanStart[r]];
    const end = te[f.spanEnd[r]];
    phrases[r] = { text: input.context.slice(start, end), start, end };
    for (let k = f.shapePtr[r]; k < f.shapePtr[r + 1]; k++) indices[w++] = f.shapes[k];
    for (let k = f.keyPtr[r]; k < f.keyPtr[r + 1]; k++) indices[w++] = local[f.keys[k]];
    ptr[r + 1] = w;
  }
  const csr = canonicalRows(indices, data, ptr, n);
  const matrix: CsrMatrix = { kind: "csr", rows: n, cols: model.dim, ...csr };
  return { id: input.id, phrases, matrix };
}

/**
 * Encodes one question into a 1×d CSR vector. Uses the question text only.
 * Synchronous, for hot paths.
 *
 * @example
 * ```ts
 * import { encodeQuestion, loadQuestionModel, SPARSE_PI_MODEL } from "./encoder.ts";
 * import * as Effect from "effect/Effect";
 * const model = await Effect.runPromise(loadQuestionModel(SPARSE_PI_MODEL));
 * const rows = encodeQuestion(model, { id: "q1", question: "Where is Paris?" }).vector.rows;
 * if (rows !== 1) throw new Error(`${rows} rows`);
 * ```
 */
export function encodeQuestion(
  model: SparsePiQuestionModel,
  input: QuestionInput,
): EncodedQuestion {
  const qf = questionFeatures(input.question);
  const G = N_GROUPS;
  const S = model.shapeDim;
  const z = new Float64Array(3 * G);
  const u = new Float64Array(S);
  const used = new Set<number>();
  for (const name of qf.classes) {
    const c = model.classIndex.get(name);
    if (c === undefined || used.has(c)) continue;
    used.add(c);
    const gw = model.groupWeights.subarray(c * 3 * G, (c + 1) * 3 * G);
    for (let k = 0; k < 3 * G; k++) z[k] += gw[k];
    const sw = model.shapeWeights.subarray(c * S, (c + 1) * S);
    for (let s = 0; s < S; s++) u[s] += sw[s];
  }
  // Word keys (columns >= S): summed on collisions, then sorted.
  const values = new Map<number, number>();
  const idfOf = (t: string): number => model.idf.get(t) ?? model.idfUnknown;
  for (const t of qf.stems) {
    const idf = idfOf(t);
    const head = t === qf.head;
    const cols = stemColumns(model.columns, t, model.dim, model.shapeDim);
    for (let g = 0; g < G; g++) {
      const v = idf * z[g] + z[G + g] + (head ? idf * z[2 * G + g] : 0);
      values.set(cols[g], (values.get(cols[g]) ?? 0) + v);
    }
  }
  const wordCols = Int32Array.from(values.keys()).sort();
  // Shape columns [0, S) come first, already in order; zeros are left out.
  const cols = new Int32Array(S + wordCols.length);
  const data = new Float32Array(cols.length);
  let w = 0;
  for (let s = 0; s < S; s++) {
    const v = Math.fround(u[s]);
    if (v !== 0) {
      cols[w] = s;
      data[w++] = v;
    }
  }
  for (const c of wordCols) {
    const v = Math.fround(values.get(c)!);
    if (v !== 0) {
      cols[w] = c;
      data[w++] = v;
    }
  }
  const vector: CsrMatrix = {
    kind: "csr",
    rows: 1,
    cols: model.dim,
    data: data.slice(0, w),
    indices: cols.slice(0, w),
    indptr: Int32Array.of(0, w),
  };
  return { id: input.id, vector };
}

const info = (modelPath: string, dim: number): EncoderInfo => ({
  name: SPARSE_PI_NAME,
  dim,
  sparse: true,
  files: [modelPath],
});

const encodeError = (e: unknown): EncoderError =>
  e instanceof EncoderError ? e : new EncoderError({
    encoder: SPARSE_PI_NAME,
    message: e instanceof Error ? e.message : String(e),
  });

/**
 * The {@linkcode ContextEncoder} of `sparse-pi`, loading the context half
 * of the model at `modelPath`.
 *
 * @example
 * ```ts
 * import * as Layer from "effect/Layer";
 * import { SPARSE_PI_MODEL, SparsePiContextEncoderLive } from "./encoder.ts";
 * const layer = SparsePiContextEncoderLive(SPARSE_PI_MODEL); // nothing is loaded until the layer is built
 * if (!Layer.isLayer(layer)) throw new Error("a Layer");
 * ```
 */
export const SparsePiContextEncoderLive = (
  modelPath: string,
): Layer.Layer<ContextEncoder, EncoderError> =>
  Layer.effect(
    ContextEncoder,
    Effect.map(loadContextModel(modelPath), (model) => ({
      info: info(modelPath, model.dim),
      encode: (batch: readonly ContextInput[]) =>
        Effect.try({ try: () => batch.map((x) => encodeContext(model, x)), catch: encodeError }),
    })),
  );

/**
 * The {@linkcode QuestionEncoder} of `sparse-pi`, loading the question half
 * of the model at `modelPath`.
 *
 * @example
 * ```ts
 * import * as Layer from "effect/Layer";
 * import { SPARSE_PI_MODEL, SparsePiQuestionEncoderLive } from "./encoder.ts";
 * const layer = SparsePiQuestionEncoderLive(SPARSE_PI_MODEL); // nothing is loaded until the layer is built
 * if (!Layer.isLayer(layer)) throw new Error("a Layer");
 * ```
 */
export const SparsePiQuestionEncoderLive = (
  modelPath: string,
): Layer.Layer<QuestionEncoder, EncoderError> =>
  Layer.effect(
    QuestionEncoder,
    Effect.map(loadQuestionModel(modelPath), (model) => ({
      info: info(modelPath, model.dim),
      encode: (batch: readonly QuestionInput[]) =>
        Effect.try({ try: () => batch.map((x) => encodeQuestion(model, x)), catch: encodeError }),
    })),
  );

/**
 * Both halves of `sparse-pi` as one Layer.
 *
 * @example
 * ```ts
 * import * as Layer from "effect/Layer";
 * import { SPARSE_PI_MODEL, sparsePiLayers } from "./encoder.ts";
 * const layer = sparsePiLayers(SPARSE_PI_MODEL); // nothing is loaded until the layer is built
 * if (!Layer.isLayer(layer)) throw new Error("a Layer");
 * ```
 */
export const sparsePiLayers = (
  modelPath: string,
): Layer.Layer<ContextEncoder | QuestionEncoder, EncoderError> =>
  Layer.merge(SparsePiContextEncoderLive(modelPath), SparsePiQuestionEncoderLive(modelPath));
