/**
 * Context and question encoders backed by ONNX Runtime sessions, described
 * by a manifest (`manifest.json` beside the models):
 *
 * ```json
 * {
 *   "format": "phraseval/onnx-encoder", "version": 1, "name": "piqa-lstm",
 *   "dim": 256, "store": "f16",
 *   "tokenizer": { "kind": "word", "vocab": "vocab.txt", "lowercase": true, "pad": 0, "unk": 1 },
 *   "phrases": { "kind": "spans", "maxTokens": 10, "wordBoundary": true, "noBoundary": ["the"] },
 *   "context": {
 *     "model": "context.onnx",
 *     "inputs": [{ "name": "input_ids", "role": "ids", "dtype": "int64" },
 *                { "name": "lengths", "role": "lengths", "dtype": "int32" }],
 *     "outputs": { "start": { "name": "start", "dtype": "float32" },
 *                  "end": { "name": "end", "dtype": "float32" } }
 *   },
 *   "question": {
 *     "model": "question.onnx",
 *     "inputs": [{ "name": "input_ids", "role": "ids", "dtype": "int64" },
 *                { "name": "mask", "role": "mask", "dtype": "float32" }],
 *     "outputs": { "vector": { "name": "question", "dtype": "float32" } }
 *   }
 * }
 * ```
 *
 * - **Tokenizer**: `word` (a vocabulary file, one word a line, looked up
 *   lower-cased when `lowercase`; optional casing classes) or `wordpiece`
 *   (a `tokenizer.json` run by `@huggingface/tokenizers`). Both split texts
 *   into units first (see `tokenizer.ts`); phrases are unit spans,
 *   exact substrings of the context.
 * - **Inputs** are fed by role: `ids`, `mask` (1 on tokens, 0 on padding),
 *   `lengths`, `casing`, `token_type` (zeros), and for `direct` models
 *   `span_start`/`span_end` (token positions of each phrase).
 * - **Phrases**: `spans` — the context model gives per-token `start` [B,T,dS]
 *   and `end` [B,T,dE] vectors; phrase (i, j) (j − i < `maxTokens`, both
 *   ends allowed boundaries) is `[start_i ; end_j]` (PIQA). `direct` — the
 *   model gives the phrase vectors [B,N,d] of the spans it is fed.
 * - **Question**: a [B,d] `vector` output.
 * - **store**: element type of the dumps (`f16` or `f32`).
 *
 * Each half opens one session per process (a Layer) and runs padded
 * batches: items are sorted by length and cut into runs of at most
 * `maxBatch` items and `maxPositions` padded positions; results come back in
 * input order. A run's results do not depend on the other items of the run
 * (the test suite checks batch 1 against batch N).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { ContextEncoder, QuestionEncoder } from "../types.ts";
 * import { onnxLayers, PIQA_LSTM_MANIFEST } from "./encoder.ts";
 * const program = Effect.gen(function* () {
 *   const [c] = yield* (yield* ContextEncoder).encode([{ id: "T_0", context: "Paris is in France." }]);
 *   const [q] = yield* (yield* QuestionEncoder).encode([{ id: "q", question: "Where is Paris?" }]);
 *   return [c.phrases.length, q.vector.cols];
 * });
 * const [phrases, cols] = await Effect.runPromise(
 *   Effect.provide(program, onnxLayers(PIQA_LSTM_MANIFEST, { threads: 2 })),
 * );
 * if (phrases === 0 || cols !== 256) throw new Error(`${phrases} phrases, d=${cols}`);
 * ```
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import {
  checkGraph,
  decodeManifest,
  halfFiles,
  type OnnxHalf,
  type OnnxInputSpec,
  readManifest,
  type ResolvedManifest,
} from "./manifest.ts";
import { asFloats, enumerateSpans, spanMatrix, spanPhrases, type SpanRule } from "./phrases.ts";
import {
  makeTensor,
  type OnnxSessionOptions,
  type OpenedSession,
  openSession,
  type OrtTensor,
} from "./session.ts";
import {
  type OnnxTokenizer,
  type Tokenized,
  wordpieceTokenizer,
  wordTokenizer,
} from "./tokenizer.ts";
import {
  ContextEncoder,
  type ContextInput,
  type DenseMatrix,
  type EncodedContext,
  type EncodedQuestion,
  EncoderError,
  type EncoderInfo,
  QuestionEncoder,
  type QuestionInput,
} from "../types.ts";

export {
  checkGraph,
  decodeManifest,
  type GraphInterface,
  ONNX_MANIFEST_FORMAT,
  OnnxConfigError,
  type OnnxManifest,
  OnnxManifestSchema,
} from "./manifest.ts";
export {
  cudaProviderProblem,
  elfNeeded,
  ONNX_DEVICES,
  type OnnxDevice,
  onnxPermissions,
  type OnnxSessionOptions,
  ortBindingPath,
  ortBinDir,
} from "./session.ts";

/** The bundled piqa-lstm baseline's manifest. */
export const PIQA_LSTM_MANIFEST: string = decodeURIComponent(
  new URL("../../data/models/piqa-lstm/manifest.json", import.meta.url).pathname,
);

/** The bundled piqa-lstm-sa baseline's manifest (LSTM+SA: PIQA's `--num_heads 2`). */
export const PIQA_LSTM_SA_MANIFEST: string = decodeURIComponent(
  new URL("../../data/models/piqa-lstm-sa/manifest.json", import.meta.url).pathname,
);

/**
 * The bundled piqa-lstm-open encoder's manifest (piqa-lstm fine-tuned for
 * open-domain phrase search: `baselines/piqa_lstm/train_open.py`).
 */
export const PIQA_LSTM_OPEN_MANIFEST: string = decodeURIComponent(
  new URL("../../data/models/piqa-lstm-open/manifest.json", import.meta.url).pathname,
);

/** Options of the ONNX encoders. */
export interface OnnxEncoderOptions extends OnnxSessionOptions {
  /** Most items per session run (default 64). */
  readonly maxBatch?: number;
  /** Most padded positions (items × longest) per run (default 32768). */
  readonly maxPositions?: number;
  /** Encoder name reported in `info` (default: the manifest's `name`). */
  readonly name?: string;
  /** Element type of the matrices returned (default: the manifest's `store`). */
  readonly store?: "f32" | "f16";
}

/** A loaded question half; a context half has the same and its {@linkcode OnnxContextModel.rule}. */
export interface OnnxQuestionModel {
  /** The half's manifest, its paths resolved. */
  readonly rm: ResolvedManifest;
  /** The half's tokenizer. */
  readonly tokenizer: OnnxTokenizer;
  /** The ONNX session and where it runs. */
  readonly opened: OpenedSession;
  /** What the encoder says of itself (name, dimension, model hash, ...). */
  readonly info: EncoderInfo;
  /** Most items per session run. */
  readonly maxBatch: number;
  /** Most padded positions (items × longest) per run. */
  readonly maxPositions: number;
  /** The element type its dumps are stored in. */
  readonly store: "f32" | "f16";
}

/** A loaded context half. */
export interface OnnxContextModel extends OnnxQuestionModel {
  /** Which spans are phrases. */
  readonly rule: SpanRule;
}

const message = (e: unknown) => e instanceof Error ? e.message : String(e);

const toEncoderError = (name: string) => (e: unknown): EncoderError =>
  e instanceof EncoderError ? e : new EncoderError({ encoder: name, message: message(e) });

/**
 * The files one half of a manifest reads (the manifest, the model, the
 * tokenizer files), absolute; read synchronously, for permission lists.
 * A manifest that cannot be read lists only itself (loading will say why).
 *
 * @example
 * ```ts
 * import { onnxFiles, PIQA_LSTM_MANIFEST } from "./encoder.ts";
 * const names = onnxFiles(PIQA_LSTM_MANIFEST, "question").map((f) => f.split("/").pop());
 * if (names.join() !== "manifest.json,question.onnx,vocab.txt") throw new Error(names.join());
 * ```
 */
export function onnxFiles(manifestPath: string, half: OnnxHalf): string[] {
  const abs = manifestPath.startsWith("/") ? manifestPath : `${Deno.cwd()}/${manifestPath}`;
  const dir = abs.slice(0, abs.lastIndexOf("/"));
  try {
    const m = decodeManifest(JSON.parse(Deno.readTextFileSync(abs)), abs);
    return [
      abs,
      ...halfFiles(m, half).map((f) => f.file.startsWith("/") ? f.file : `${dir}/${f.file}`),
    ];
  } catch {
    return [abs];
  }
}

async function loadTokenizer(rm: ResolvedManifest): Promise<OnnxTokenizer> {
  const t = rm.manifest.tokenizer;
  if (t.kind === "word") {
    const lines = (await Deno.readTextFile(rm.resolve(t.vocab))).split("\n");
    if (lines.at(-1) === "") lines.pop();
    if (t.size !== undefined && lines.length !== t.size) {
      throw new EncoderError({
        encoder: rm.manifest.name,
        message:
          `manifest ${rm.path}: tokenizer.size: ${t.size} in the manifest, ${lines.length} ` +
          `lines in ${t.vocab}`,
      });
    }
    return wordTokenizer({
      vocab: lines,
      lowercase: t.lowercase,
      pad: t.pad,
      unk: t.unk,
      maxTokens: t.maxTokens,
    });
  }
  const json = JSON.parse(await Deno.readTextFile(rm.resolve(t.tokenizer)));
  const config = t.config ? JSON.parse(await Deno.readTextFile(rm.resolve(t.config))) : {};
  return wordpieceTokenizer({
    tokenizerJson: json,
    tokenizerConfig: config,
    cls: t.cls,
    sep: t.sep,
    pad: t.pad,
    maxTokens: t.maxTokens,
  });
}

async function loadHalf(
  manifestPath: string,
  half: OnnxHalf,
  opts: OnnxEncoderOptions,
): Promise<OnnxQuestionModel> {
  const rm = await readManifest(manifestPath, half);
  const m = rm.manifest;
  const tokenizer = await loadTokenizer(rm);
  const modelPath = rm.resolve(m[half].model);
  const opened = await openSession(await Deno.readFile(modelPath), m[half].model, m.name, opts);
  checkGraph(rm, half, opened.graph);
  const files = [rm.path, ...halfFiles(m, half).map((f) => rm.resolve(f.file))];
  return {
    rm,
    tokenizer,
    opened,
    info: { name: opts.name ?? m.name, dim: m.dim, sparse: false, files },
    maxBatch: opts.maxBatch ?? 64,
    maxPositions: opts.maxPositions ?? 32768,
    store: opts.store ?? m.store,
  };
}

/**
 * Loads the context half of a manifest: reads and validates the manifest,
 * the tokenizer and the model, opens the session on the requested device,
 * and checks the graph against the manifest.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { loadOnnxContext, PIQA_LSTM_MANIFEST } from "./encoder.ts";
 * const model = await Effect.runPromise(loadOnnxContext(PIQA_LSTM_MANIFEST, { threads: 2 }));
 * if (model.opened.device !== "cpu") throw new Error(model.opened.device);
 * ```
 */
export const loadOnnxContext = (
  manifestPath: string,
  opts: OnnxEncoderOptions = {},
): Effect.Effect<OnnxContextModel, EncoderError> =>
  Effect.tryPromise({
    try: async () => {
      const h = await loadHalf(manifestPath, "context", opts);
      const p = h.rm.manifest.phrases;
      const rule: SpanRule = {
        maxTokens: p.maxTokens,
        wordBoundary: p.wordBoundary ?? true,
        noBoundary: new Set((p.noBoundary ?? []).map((w) => w.toLowerCase())),
      };
      return { ...h, rule };
    },
    catch: toEncoderError(opts.name ?? "onnx"),
  });

/**
 * Loads the question half of a manifest (never reads the context model).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { loadOnnxQuestion, PIQA_LSTM_MANIFEST } from "./encoder.ts";
 * const model = await Effect.runPromise(loadOnnxQuestion(PIQA_LSTM_MANIFEST, { threads: 2 }));
 * if (model.opened.device !== "cpu") throw new Error(model.opened.device);
 * ```
 */
export const loadOnnxQuestion = (
  manifestPath: string,
  opts: OnnxEncoderOptions = {},
): Effect.Effect<OnnxQuestionModel, EncoderError> =>
  Effect.tryPromise({
    try: () => loadHalf(manifestPath, "question", opts),
    catch: toEncoderError(opts.name ?? "onnx"),
  });

/**
 * Groups item indices into runs: sorted by length (longest first, ties in
 * input order), each run at most `maxBatch` items and `maxPositions` padded
 * positions (a single longer item still gets a run of its own).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { planRuns } from "./encoder.ts";
 * assert.deepEqual(planRuns([3, 10, 4, 9], 2, 100), [[1, 3], [2, 0]]);
 * ```
 */
export function planRuns(
  lengths: readonly number[],
  maxBatch: number,
  maxPositions: number,
): number[][] {
  const order = lengths.map((_, i) => i).sort((a, b) => lengths[b] - lengths[a] || a - b);
  const runs: number[][] = [];
  let cur: number[] = [];
  let width = 0;
  for (const i of order) {
    const w = Math.max(width, lengths[i], 1);
    if (cur.length > 0 && (cur.length + 1 > maxBatch || (cur.length + 1) * w > maxPositions)) {
      runs.push(cur);
      cur = [];
    }
    if (cur.length === 0) width = Math.max(lengths[i], 1);
    cur.push(i);
  }
  if (cur.length) runs.push(cur);
  return runs;
}

/** Builds the feeds of one run. */
function feeds(
  inputs: readonly OnnxInputSpec[],
  items: readonly Tokenized[],
  padId: number,
  spans?: readonly { i: Int32Array; j: Int32Array }[],
): Record<string, OrtTensor> {
  const B = items.length;
  const T = Math.max(1, ...items.map((t) => t.ids.length));
  const N = spans ? Math.max(1, ...spans.map((s) => s.i.length)) : 0;
  const out: Record<string, OrtTensor> = {};
  for (const inp of inputs) {
    let values: number[] | Float64Array;
    let dims: number[];
    switch (inp.role) {
      case "ids":
      case "casing":
      case "token_type":
      case "mask": {
        values = new Float64Array(B * T);
        if (inp.role === "ids" && padId !== 0) values.fill(padId);
        items.forEach((t, b) => {
          const src = inp.role === "ids" ? t.ids : inp.role === "casing" ? t.casing : undefined;
          for (let k = 0; k < t.ids.length; k++) {
            (values as Float64Array)[b * T + k] = inp.role === "mask"
              ? 1
              : inp.role === "token_type"
              ? 0
              : src
              ? src[k]
              : 0;
          }
        });
        dims = [B, T];
        break;
      }
      case "lengths":
        values = items.map((t) => t.ids.length);
        dims = [B];
        break;
      case "span_start":
      case "span_end": {
        values = new Float64Array(B * N);
        spans!.forEach((s, b) => {
          const t = items[b];
          for (let r = 0; r < s.i.length; r++) {
            (values as Float64Array)[b * N + r] = inp.role === "span_start"
              ? t.first[s.i[r]]
              : t.last[s.j[r]];
          }
        });
        dims = [B, N];
        break;
      }
    }
    out[inp.name] = makeTensor(inp.dtype, values, dims);
  }
  return out;
}

/** Per-token boundary vectors of one paragraph (a `spans` model). */
export interface ContextTokenVectors {
  /** The tokenized paragraph. */
  readonly tokenized: Tokenized;
  /** Model positions of this paragraph in its run (row-major `[T, dS]` slice below). */
  readonly positions: number;
  /** Start vectors, `positions × dS`. */
  readonly start: Float32Array | Float16Array;
  /** End vectors, `positions × dE`. */
  readonly end: Float32Array | Float16Array;
  /** Width of a start vector. */
  readonly dS: number;
  /** Width of an end vector. */
  readonly dE: number;
}

function outputOf(
  res: Record<string, OrtTensor>,
  name: string,
  encoder: string,
): { data: Float32Array | Float16Array; dims: readonly number[] } {
  const t = res[name];
  if (!t) throw new EncoderError({ encoder, message: `the model gave no output "${name}"` });
  return { data: asFloats(t.data as Float32Array | Uint16Array), dims: t.dims };
}

/**
 * Runs a `spans` context model and returns each paragraph's start and end
 * vectors per model position (in input order). Used by
 * {@linkcode encodeContexts} and by hybrid encoders that form their own
 * phrases.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { contextTokenVectors, loadOnnxContext, PIQA_LSTM_MANIFEST } from "./encoder.ts";
 * const model = await Effect.runPromise(loadOnnxContext(PIQA_LSTM_MANIFEST, { threads: 2 }));
 * const [v] = await contextTokenVectors(model, ["Paris is in France."]);
 * if (v.positions !== 5) throw new Error(`${v.positions} positions`); // Paris, is, in, France, .
 * ```
 */
export async function contextTokenVectors(
  model: OnnxContextModel,
  contexts: readonly string[],
): Promise<ContextTokenVectors[]> {
  const m = model.rm.manifest;
  if (m.phrases.kind !== "spans") {
    throw new EncoderError({ encoder: model.info.name, message: "not a spans model" });
  }
  const toks = contexts.map((c) => model.tokenizer.tokenize(c));
  const out = new Array<ContextTokenVectors>(contexts.length);
  const runs = planRuns(toks.map((t) => t.ids.length), model.maxBatch, model.maxPositions);
  for (const run of runs) {
    const items = run.map((k) => toks[k]);
    const res = await model.opened.session.run(
      feeds(m.context.inputs, items, model.tokenizer.padId),
    );
    const s = outputOf(res, m.context.outputs.start!.name, model.info.name);
    const e = outputOf(res, m.context.outputs.end!.name, model.info.name);
    const T = s.dims[1], dS = s.dims[2], dE = e.dims[2];
    if (dS + dE !== m.dim) {
      throw new EncoderError({
        encoder: model.info.name,
        message: `start (${dS}) + end (${dE}) widths do not make dim ${m.dim}`,
      });
    }
    run.forEach((k, b) => {
      const n = toks[k].ids.length;
      out[k] = {
        tokenized: toks[k],
        positions: n,
        start: s.data.slice(b * T * dS, (b * T + n) * dS),
        end: e.data.slice(b * T * dE, (b * T + n) * dE),
        dS,
        dE,
      };
    });
  }
  return out;
}

/**
 * Encodes paragraphs with a loaded context half: phrases and their N×d
 * matrix in the manifest's `store` type, in input order.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { encodeContexts, loadOnnxContext, PIQA_LSTM_MANIFEST } from "./encoder.ts";
 * const model = await Effect.runPromise(loadOnnxContext(PIQA_LSTM_MANIFEST, { threads: 2 }));
 * const [c] = await encodeContexts(model, [{ id: "T_0", context: "Paris is in France." }]);
 * const texts = c.phrases.map((p) => p.text);
 * if (texts[0] !== "Paris" || !texts.includes("France")) throw new Error(texts.join("|"));
 * ```
 */
export async function encodeContexts(
  model: OnnxContextModel,
  batch: readonly ContextInput[],
): Promise<EncodedContext[]> {
  const m = model.rm.manifest;
  const store = model.store;
  if (m.phrases.kind === "spans") {
    const vecs = await contextTokenVectors(model, batch.map((b) => b.context));
    return batch.map((p, k) => {
      const v = vecs[k];
      const spans = enumerateSpans(v.tokenized, model.rule);
      const data = spanMatrix(
        { start: v.start, end: v.end, T: v.positions, dS: v.dS, dE: v.dE, b: 0 },
        spans,
        v.tokenized.first,
        v.tokenized.last,
        store,
      );
      const matrix: DenseMatrix = {
        kind: "dense",
        rows: spans.i.length,
        cols: m.dim,
        dtype: store,
        data,
      };
      return { id: p.id, phrases: spanPhrases(p.context, v.tokenized.units, spans), matrix };
    });
  }
  const toks = batch.map((p) => model.tokenizer.tokenize(p.context));
  const spans = toks.map((t) => enumerateSpans(t, model.rule));
  const out = new Array<EncodedContext>(batch.length);
  const runs = planRuns(
    toks.map((t, k) => Math.max(t.ids.length, spans[k].i.length)),
    model.maxBatch,
    model.maxPositions,
  );
  for (const run of runs) {
    const res = await model.opened.session.run(
      feeds(
        m.context.inputs,
        run.map((k) => toks[k]),
        model.tokenizer.padId,
        run.map((k) => spans[k]),
      ),
    );
    const o = outputOf(res, m.context.outputs.phrases!.name, model.info.name);
    const N = o.dims[1], d = o.dims[2];
    if (d !== m.dim) {
      throw new EncoderError({
        encoder: model.info.name,
        message: `phrase width ${d}, dim ${m.dim}`,
      });
    }
    run.forEach((k, b) => {
      const n = spans[k].i.length;
      const src = o.data.subarray(b * N * d, (b * N + n) * d);
      const data = store === "f16" ? new Float16Array(src) : new Float32Array(src);
      out[k] = {
        id: batch[k].id,
        phrases: spanPhrases(batch[k].context, toks[k].units, spans[k]),
        matrix: { kind: "dense", rows: n, cols: d, dtype: store, data },
      };
    });
  }
  return out;
}

/**
 * Encodes questions with a loaded question half: 1×d vectors in the
 * manifest's `store` type, in input order (an empty question gets zeros).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { encodeQuestions, loadOnnxQuestion, PIQA_LSTM_MANIFEST } from "./encoder.ts";
 * const model = await Effect.runPromise(loadOnnxQuestion(PIQA_LSTM_MANIFEST, { threads: 2 }));
 * const [q] = await encodeQuestions(model, [{ id: "q1", question: "Where is Paris?" }]);
 * if (q.vector.rows !== 1 || q.vector.cols !== 256) throw new Error("1×256");
 * ```
 */
export async function encodeQuestions(
  model: OnnxQuestionModel,
  batch: readonly QuestionInput[],
): Promise<EncodedQuestion[]> {
  const m = model.rm.manifest;
  const store = model.store;
  const toks = batch.map((q) => model.tokenizer.tokenize(q.question));
  const out = new Array<EncodedQuestion>(batch.length);
  const zero = (k: number): EncodedQuestion => ({
    id: batch[k].id,
    vector: {
      kind: "dense",
      rows: 1,
      cols: m.dim,
      dtype: store,
      data: store === "f16" ? new Float16Array(m.dim) : new Float32Array(m.dim),
    },
  });
  const live = toks.map((_, k) => k).filter((k) => toks[k].units.texts.length > 0);
  for (const k of toks.keys()) if (toks[k].units.texts.length === 0) out[k] = zero(k);
  const runs = planRuns(live.map((k) => toks[k].ids.length), model.maxBatch, model.maxPositions);
  for (const run of runs) {
    const ks = run.map((r) => live[r]);
    const res = await model.opened.session.run(
      feeds(m.question.inputs, ks.map((k) => toks[k]), model.tokenizer.padId),
    );
    const o = outputOf(res, m.question.outputs.vector.name, model.info.name);
    const d = o.dims[o.dims.length - 1];
    if (d !== m.dim) {
      throw new EncoderError({
        encoder: model.info.name,
        message: `question width ${d}, dim ${m.dim}`,
      });
    }
    ks.forEach((k, b) => {
      const src = o.data.subarray(b * d, (b + 1) * d);
      out[k] = {
        id: batch[k].id,
        vector: {
          kind: "dense",
          rows: 1,
          cols: d,
          dtype: store,
          data: store === "f16" ? new Float16Array(src) : new Float32Array(src),
        },
      };
    });
  }
  return out;
}

/**
 * The {@linkcode ContextEncoder} of an ONNX manifest (one session per
 * process, opened when the Layer is built).
 *
 * @example
 * ```ts
 * import * as Layer from "effect/Layer";
 * import { OnnxContextEncoderLive, PIQA_LSTM_MANIFEST } from "./encoder.ts";
 * const layer = OnnxContextEncoderLive(PIQA_LSTM_MANIFEST, { device: "cpu", threads: 2 }); // nothing is loaded until the layer is built
 * if (!Layer.isLayer(layer)) throw new Error("a Layer");
 * ```
 */
export const OnnxContextEncoderLive = (
  manifestPath: string,
  opts: OnnxEncoderOptions = {},
): Layer.Layer<ContextEncoder, EncoderError> =>
  Layer.effect(
    ContextEncoder,
    Effect.map(loadOnnxContext(manifestPath, opts), (model) => ({
      info: model.info,
      encode: (batch: readonly ContextInput[]) =>
        Effect.tryPromise({
          try: () => encodeContexts(model, batch),
          catch: toEncoderError(model.info.name),
        }),
    })),
  );

/**
 * The {@linkcode QuestionEncoder} of an ONNX manifest.
 *
 * @example
 * ```ts
 * import * as Layer from "effect/Layer";
 * import { OnnxQuestionEncoderLive, PIQA_LSTM_MANIFEST } from "./encoder.ts";
 * const layer = OnnxQuestionEncoderLive(PIQA_LSTM_MANIFEST, { threads: 2 }); // nothing is loaded until the layer is built
 * if (!Layer.isLayer(layer)) throw new Error("a Layer");
 * ```
 */
export const OnnxQuestionEncoderLive = (
  manifestPath: string,
  opts: OnnxEncoderOptions = {},
): Layer.Layer<QuestionEncoder, EncoderError> =>
  Layer.effect(
    QuestionEncoder,
    Effect.map(loadOnnxQuestion(manifestPath, opts), (model) => ({
      info: model.info,
      encode: (batch: readonly QuestionInput[]) =>
        Effect.tryPromise({
          try: () => encodeQuestions(model, batch),
          catch: toEncoderError(model.info.name),
        }),
    })),
  );

/**
 * Both halves of an ONNX manifest as one Layer.
 *
 * @example
 * ```ts
 * import * as Layer from "effect/Layer";
 * import { onnxLayers, PIQA_LSTM_MANIFEST } from "./encoder.ts";
 * const layer = onnxLayers(PIQA_LSTM_MANIFEST, { threads: 2 }); // nothing is loaded until the layer is built
 * if (!Layer.isLayer(layer)) throw new Error("a Layer");
 * ```
 */
export const onnxLayers = (
  manifestPath: string,
  opts: OnnxEncoderOptions = {},
): Layer.Layer<ContextEncoder | QuestionEncoder, EncoderError> =>
  Layer.merge(
    OnnxContextEncoderLive(manifestPath, opts),
    OnnxQuestionEncoderLive(manifestPath, opts),
  );
