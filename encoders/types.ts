/**
 * The encoder services of PI-SQuAD. A {@linkcode ContextEncoder} turns a
 * paragraph into phrases (exact substrings of the context with their
 * character offsets) and an N×d matrix, one row per phrase; a
 * {@linkcode QuestionEncoder} turns a question (its id and text only; it
 * never receives a context) into a 1×d vector. The answer to a question is
 * the phrase whose row has the largest inner product with the question
 * vector. Both are Effect services, so a config or a notebook can swap them
 * with a Layer; both work on batches.
 *
 * @module
 */
import * as Context from "effect/Context";
import * as Data from "effect/Data";
import type * as Effect from "effect/Effect";
import type { Matrix } from "../io/matrix.ts";

export type { CsrMatrix, DenseMatrix, Matrix } from "../io/matrix.ts";

/** A candidate answer phrase: `context.slice(start, end) === text`. */
export interface Phrase {
  /** The phrase text, an exact substring of the context. */
  readonly text: string;
  /** Start offset in the context, in UTF-16 code units (JS string index). */
  readonly start: number;
  /** End offset (exclusive), in UTF-16 code units. */
  readonly end: number;
}

/** A paragraph to encode (what the context encoder sees). */
export interface ContextInput {
  /** PI-SQuAD paragraph id (`title_index`). */
  readonly id: string;
  /** The context text. */
  readonly context: string;
}

/** A question to encode (what the question encoder sees: no context). */
export interface QuestionInput {
  /** The SQuAD question id. */
  readonly id: string;
  /** The question text. */
  readonly question: string;
}

/** An encoded paragraph. */
export interface EncodedContext {
  /** Paragraph id. */
  readonly id: string;
  /** The N phrases. */
  readonly phrases: readonly Phrase[];
  /** N×d phrase matrix, row i for phrase i. */
  readonly matrix: Matrix;
}

/** An encoded question. */
export interface EncodedQuestion {
  /** Question id. */
  readonly id: string;
  /** 1×d question vector. */
  readonly vector: Matrix;
}

/** An encoder failed (bad model file, inference error). */
export class EncoderError extends Data.TaggedError("EncoderError")<{
  /** Encoder name. */
  readonly encoder: string;
  /** What went wrong. */
  readonly message: string;
}> {}

/** Description shared by both halves of an encoder. */
export interface EncoderInfo {
  /** Encoder name (`sparse-pi`, `piqa-lstm`, ...). */
  readonly name: string;
  /** Vector dimension d. */
  readonly dim: number;
  /** Whether matrices are CSR (otherwise dense). */
  readonly sparse: boolean;
  /** Files the encoder reads (model artifacts), for narrowed permissions. */
  readonly files: readonly string[];
}

/**
 * Encodes paragraphs into phrases and phrase vectors.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { ContextEncoder } from "./types.ts";
 * import { SPARSE_PI_MODEL, sparsePiLayers } from "./sparse_pi/encoder.ts";
 * const program = Effect.gen(function* () {
 *   const enc = yield* ContextEncoder;
 *   const [c] = yield* enc.encode([{ id: "T_0", context: "Paris is in France." }]);
 *   return c.phrases.map((p) => p.text);
 * });
 * const texts = await Effect.runPromise(Effect.provide(program, sparsePiLayers(SPARSE_PI_MODEL)));
 * if (!texts.includes("France")) throw new Error(texts.join("|"));
 * ```
 */
export class ContextEncoder extends Context.Service<ContextEncoder, {
  /** Name, dimension, sparsity, artifact files. */
  readonly info: EncoderInfo;
  /** Encodes a batch of paragraphs, results in input order. */
  encode(batch: readonly ContextInput[]): Effect.Effect<EncodedContext[], EncoderError>;
}>()("phraseval/encoders/ContextEncoder") {}

/**
 * Encodes questions into 1×d vectors. It is given question ids and texts
 * only; `full` runs it in a process that cannot read any context.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { QuestionEncoder } from "./types.ts";
 * import { SPARSE_PI_MODEL, sparsePiLayers } from "./sparse_pi/encoder.ts";
 * const program = Effect.gen(function* () {
 *   const enc = yield* QuestionEncoder;
 *   const [q] = yield* enc.encode([{ id: "q1", question: "Where is Paris?" }]);
 *   return [q.vector.rows, q.vector.cols, enc.info.dim];
 * });
 * const [rows, cols, dim] = await Effect.runPromise(
 *   Effect.provide(program, sparsePiLayers(SPARSE_PI_MODEL)),
 * );
 * if (rows !== 1 || cols !== dim) throw new Error(`${rows}x${cols}, d=${dim}`);
 * ```
 */
export class QuestionEncoder extends Context.Service<QuestionEncoder, {
  /** Name, dimension, sparsity, artifact files. */
  readonly info: EncoderInfo;
  /** Encodes a batch of questions, results in input order. */
  encode(batch: readonly QuestionInput[]): Effect.Effect<EncodedQuestion[], EncoderError>;
}>()("phraseval/encoders/QuestionEncoder") {}
