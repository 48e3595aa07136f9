/**
 * `piqa-lstm+sparse` (and `piqa-lstm-sa+sparse`, `piqa-lstm-open+sparse`): a
 * dense ONNX phrase encoder (`spans` kind: piqa-lstm, piqa-lstm-sa,
 * piqa-lstm-open) joined with the sparse
 * `sparse-pi` encoder into one vector per phrase, as DenSPI joins dense and
 * sparse phrase vectors.
 *
 * **Phrases**: the candidate spans of sparse-pi (both halves agree on them:
 * the sparse-pi rules). Each span gets the dense vector `[start_i ; end_j]`
 * of the ONNX model, where i is the ONNX unit at the span's first character
 * and j the unit at its last character (the two tokenizers split texts the
 * same way, so these are the span's first and last units).
 *
 * **Vectors**: CSR with `dDense + dSparse` columns; the dense block is in
 * columns `[0, dDense)`, sparse-pi's columns follow, shifted by `dDense`.
 * The question vector is `[w · q_dense ; q_sparse]`, so a phrase's score is
 * `w · (dense score) + (sparse score)`; `w` (`denseWeight` in the hybrid
 * config beside the dense model, `data/models/piqa-lstm/hybrid.json` and
 * `data/models/piqa-lstm-sa/hybrid.json`, `data/models/piqa-lstm-open/hybrid.json`)
 * was chosen on held-out articles of the training subset by
 * `baselines/piqa_lstm/hybrid_weight.ts` (piqa-lstm-open's for the open task).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { hybridLayers } from "./hybrid.ts";
 * import { ContextEncoder } from "./types.ts";
 * const [c] = await Effect.runPromise(Effect.provide(
 *   Effect.flatMap(ContextEncoder, (c) => c.encode([{ id: "T_0", context: "Paris is in France." }])),
 *   hybridLayers({ threads: 2 }),
 * ));
 * if (c.matrix.kind !== "csr" || c.matrix.rows !== c.phrases.length) throw new Error("a CSR row a phrase");
 * ```
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import {
  contextTokenVectors,
  encodeQuestions,
  loadOnnxContext,
  loadOnnxQuestion,
  onnxFiles,
  type OnnxSessionOptions,
  PIQA_LSTM_MANIFEST,
} from "./onnx/encoder.ts";
import {
  encodeContext,
  encodeQuestion,
  loadContextModel,
  loadQuestionModel,
  SPARSE_PI_MODEL,
} from "./sparse_pi/encoder.ts";
import {
  ContextEncoder,
  type ContextInput,
  type CsrMatrix,
  type EncodedContext,
  type EncodedQuestion,
  EncoderError,
  QuestionEncoder,
  type QuestionInput,
} from "./types.ts";
import { HYBRID_NAME, OPEN_HYBRID_NAME, SA_HYBRID_NAME } from "./names.ts";

export { HYBRID_NAME, OPEN_HYBRID_NAME, SA_HYBRID_NAME };

/** The bundled hybrid config of `piqa-lstm+sparse` (the dense weight). */
export const PIQA_LSTM_HYBRID_CONFIG: string = decodeURIComponent(
  new URL("../data/models/piqa-lstm/hybrid.json", import.meta.url).pathname,
);

/** The bundled hybrid config of `piqa-lstm-sa+sparse` (the dense weight). */
export const PIQA_LSTM_SA_HYBRID_CONFIG: string = decodeURIComponent(
  new URL("../data/models/piqa-lstm-sa/hybrid.json", import.meta.url).pathname,
);

/**
 * The bundled hybrid config of `piqa-lstm-open+sparse` (the dense weight,
 * fitted for the open task).
 */
export const PIQA_LSTM_OPEN_HYBRID_CONFIG: string = decodeURIComponent(
  new URL("../data/models/piqa-lstm-open/hybrid.json", import.meta.url).pathname,
);

/** The hybrid config file. */
export interface HybridConfig {
  /** Always `phraseval/hybrid`. */
  readonly format: "phraseval/hybrid";
  /** Weight of the dense block on the question side. */
  readonly denseWeight: number;
  /** How it was chosen (free-form). */
  readonly provenance?: unknown;
}

/** Where the parts of a hybrid encoder are. */
export interface HybridOptions extends OnnxSessionOptions {
  /** ONNX manifest of the dense part (default piqa-lstm's). */
  readonly manifest?: string;
  /** sparse-pi model artifact (default the bundled one). */
  readonly sparseModel?: string;
  /** Hybrid config with the dense weight (default piqa-lstm's `hybrid.json`). */
  readonly config?: string;
  /** Dense weight, overriding the config (then the config is not read). */
  readonly denseWeight?: number;
  /** Encoder name in `info` and errors (default `piqa-lstm+sparse`). */
  readonly name?: string;
}

/**
 * The files each half of a hybrid encoder reads (ONNX manifest, model and
 * vocabulary; sparse-pi artifact; hybrid config for the question half).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hybridFiles } from "./hybrid.ts";
 * assert.deepEqual(hybridFiles({}).question.length, 5);
 * ```
 */
export function hybridFiles(o: HybridOptions): { context: string[]; question: string[] } {
  const manifest = o.manifest ?? PIQA_LSTM_MANIFEST;
  const sparse = o.sparseModel ?? SPARSE_PI_MODEL;
  const config = o.denseWeight === undefined ? [o.config ?? PIQA_LSTM_HYBRID_CONFIG] : [];
  return {
    context: [...onnxFiles(manifest, "context"), sparse],
    question: [...onnxFiles(manifest, "question"), sparse, ...config],
  };
}

const fail = (message: string, encoder: string = HYBRID_NAME) =>
  new EncoderError({ encoder, message });
const toError = (encoder: string) => (e: unknown) =>
  e instanceof EncoderError ? e : fail(e instanceof Error ? e.message : String(e), encoder);

/**
 * Reads the dense weight from a hybrid config file (`encoder`: the name its
 * errors carry, default `piqa-lstm+sparse`).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { PIQA_LSTM_HYBRID_CONFIG, readHybridWeight } from "./hybrid.ts";
 * const w = await Effect.runPromise(readHybridWeight(PIQA_LSTM_HYBRID_CONFIG));
 * if (!(w > 0)) throw new Error(`dense weight ${w}`);
 * ```
 */
export const readHybridWeight = (
  path: string,
  encoder: string = HYBRID_NAME,
): Effect.Effect<number, EncoderError> =>
  Effect.tryPromise({
    try: async () => {
      const c = JSON.parse(await Deno.readTextFile(path)) as HybridConfig;
      if (
        c.format !== "phraseval/hybrid" || typeof c.denseWeight !== "number" ||
        !(c.denseWeight >= 0)
      ) {
        throw fail(
          `${path}: not a hybrid config (format "phraseval/hybrid", denseWeight ≥ 0)`,
          encoder,
        );
      }
      return c.denseWeight;
    },
    catch: (e) =>
      e instanceof EncoderError ? e : fail(`cannot read hybrid config ${path}: ${e}`, encoder),
  });

/** Unit index at each UTF-16 position of a text (-1 between units). */
function unitIndex(length: number, start: Int32Array, end: Int32Array): Int32Array {
  const at = new Int32Array(length).fill(-1);
  for (let u = 0; u < start.length; u++) at.fill(u, start[u], end[u]);
  return at;
}

/**
 * Joins a dense block (`rows × dDense`, row-major) and a CSR matrix into one
 * CSR with the dense block in the first columns (exact zeros of the dense
 * block are not stored).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { joinDenseSparse } from "./hybrid.ts";
 * const m = joinDenseSparse(Float32Array.of(1, 0), 2, {
 *   kind: "csr", rows: 1, cols: 3, data: Float32Array.of(5), indices: Int32Array.of(1), indptr: Int32Array.of(0, 1),
 * });
 * assert.deepEqual([m.cols, [...m.indices], [...m.data]], [5, [0, 3], [1, 5]]);
 * ```
 */
export function joinDenseSparse(
  dense: Float32Array | Float16Array,
  dDense: number,
  sparse: CsrMatrix,
): CsrMatrix {
  const rows = sparse.rows;
  let nnz = sparse.data.length;
  for (let k = 0; k < rows * dDense; k++) if (dense[k] !== 0) nnz++;
  const data = new Float32Array(nnz);
  const indices = new Int32Array(nnz);
  const indptr = new Int32Array(rows + 1);
  let w = 0;
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < dDense; c++) {
      const v = dense[r * dDense + c];
      if (v !== 0) {
        data[w] = v;
        indices[w++] = c;
      }
    }
    for (let k = sparse.indptr[r]; k < sparse.indptr[r + 1]; k++) {
      data[w] = sparse.data[k];
      indices[w++] = sparse.indices[k] + dDense;
    }
    indptr[r + 1] = w;
  }
  return { kind: "csr", rows, cols: dDense + sparse.cols, data, indices, indptr };
}

/**
 * The hybrid's {@linkcode ContextEncoder}.
 *
 * @example
 * ```ts
 * import * as Layer from "effect/Layer";
 * import { HybridContextEncoderLive } from "./hybrid.ts";
 * const layer = HybridContextEncoderLive({ threads: 2 }); // nothing is loaded until the layer is built
 * if (!Layer.isLayer(layer)) throw new Error("a Layer");
 * ```
 */
export const HybridContextEncoderLive = (
  o: HybridOptions = {},
): Layer.Layer<ContextEncoder, EncoderError> =>
  Layer.effect(
    ContextEncoder,
    Effect.gen(function* () {
      const name = o.name ?? HYBRID_NAME;
      const dense = yield* loadOnnxContext(o.manifest ?? PIQA_LSTM_MANIFEST, {
        ...o,
        name,
        store: "f32",
      });
      const sparse = yield* loadContextModel(o.sparseModel ?? SPARSE_PI_MODEL);
      const dDense = dense.info.dim;
      const encode = async (batch: readonly ContextInput[]): Promise<EncodedContext[]> => {
        const vecs = await contextTokenVectors(dense, batch.map((p) => p.context));
        return batch.map((p, k) => {
          const sp = encodeContext(sparse, p);
          const v = vecs[k];
          const t = v.tokenized;
          const at = unitIndex(p.context.length, t.units.start, t.units.end);
          const n = sp.phrases.length;
          const block = new Float32Array(n * dDense);
          for (let r = 0; r < n; r++) {
            const ph = sp.phrases[r];
            let ui = ph.start, uj = ph.end - 1;
            while (ui < ph.end && at[ui] < 0) ui++;
            while (uj >= ph.start && at[uj] < 0) uj--;
            if (ui >= ph.end) continue; // no unit inside (cannot happen with sparse-pi spans)
            const pi = t.first[at[ui]], pj = t.last[at[uj]];
            if (pi < 0 || pj < 0) continue; // outside the model's window: dense block stays zero
            block.set(v.start.subarray(pi * v.dS, (pi + 1) * v.dS), r * dDense);
            block.set(v.end.subarray(pj * v.dE, (pj + 1) * v.dE), r * dDense + v.dS);
          }
          const matrix = joinDenseSparse(block, dDense, sp.matrix as CsrMatrix);
          return { id: p.id, phrases: sp.phrases, matrix };
        });
      };
      const files = hybridFiles(o).context;
      return {
        info: { name, dim: dDense + sparse.dim, sparse: true, files },
        encode: (batch: readonly ContextInput[]) =>
          Effect.tryPromise({ try: () => encode(batch), catch: toError(name) }),
      };
    }),
  );

/**
 * The hybrid's {@linkcode QuestionEncoder}: `[w · q_dense ; q_sparse]`.
 *
 * @example
 * ```ts
 * import * as Layer from "effect/Layer";
 * import { HybridQuestionEncoderLive } from "./hybrid.ts";
 * const layer = HybridQuestionEncoderLive({ denseWeight: 0.5 }); // nothing is loaded until the layer is built
 * if (!Layer.isLayer(layer)) throw new Error("a Layer");
 * ```
 */
export const HybridQuestionEncoderLive = (
  o: HybridOptions = {},
): Layer.Layer<QuestionEncoder, EncoderError> =>
  Layer.effect(
    QuestionEncoder,
    Effect.gen(function* () {
      const name = o.name ?? HYBRID_NAME;
      const w = o.denseWeight ??
        (yield* readHybridWeight(o.config ?? PIQA_LSTM_HYBRID_CONFIG, name));
      const dense = yield* loadOnnxQuestion(o.manifest ?? PIQA_LSTM_MANIFEST, {
        ...o,
        name,
        store: "f32",
      });
      const sparse = yield* loadQuestionModel(o.sparseModel ?? SPARSE_PI_MODEL);
      const dDense = dense.info.dim;
      const encode = async (batch: readonly QuestionInput[]): Promise<EncodedQuestion[]> => {
        const dq = await encodeQuestions(dense, batch);
        return batch.map((q, k) => {
          const sq = encodeQuestion(sparse, q).vector as CsrMatrix;
          const d = dq[k].vector.data as Float32Array;
          const scaled = new Float32Array(dDense);
          for (let c = 0; c < dDense; c++) scaled[c] = w * d[c];
          return { id: q.id, vector: joinDenseSparse(scaled, dDense, sq) };
        });
      };
      const files = hybridFiles(o).question;
      return {
        info: { name, dim: dDense + sparse.dim, sparse: true, files },
        encode: (batch: readonly QuestionInput[]) =>
          Effect.tryPromise({ try: () => encode(batch), catch: toError(name) }),
      };
    }),
  );

/**
 * Both halves of the hybrid as one Layer.
 *
 * @example
 * ```ts
 * import * as Layer from "effect/Layer";
 * import { hybridLayers } from "./hybrid.ts";
 * const layer = hybridLayers({ threads: 2 }); // nothing is loaded until the layer is built
 * if (!Layer.isLayer(layer)) throw new Error("a Layer");
 * ```
 */
export const hybridLayers = (
  o: HybridOptions = {},
): Layer.Layer<ContextEncoder | QuestionEncoder, EncoderError> =>
  Layer.merge(HybridContextEncoderLive(o), HybridQuestionEncoderLive(o));
