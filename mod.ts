/**
 * phraseval: evaluation tools for phrase-indexed question answering
 * (PI-SQuAD) and QA answers in general, as Effect streams.
 *
 * The stages (`split`, `evaluate`, `inspect`, ...) are Effects that a
 * notebook or program can run; the `io/` readers and writers and the
 * `metrics/` folds are the building blocks.
 *
 * @example
 * ```ts
 * import { Effect, Stream } from "effect";
 * import { squadQuestions } from "./mod.ts";
 * await Effect.runPromise(Stream.runCount(squadQuestions("data/dev-v1.1.json.gz"))); // 10570
 * ```
 *
 * @module
 */
export * from "./io/errors.ts";
export * from "./io/pyjson.ts";
export * from "./io/squad.ts";
export * from "./io/squad_writer.ts";
export * from "./io/predictions.ts";
export { openAtomicWriter, openSource } from "./io/source.ts";
export type { AtomicWriter, ByteSource } from "./io/source.ts";
export * from "./metrics/squad.ts";
export * from "./encoders/types.ts";
export { split } from "./pipeline/split.ts";
export type { SplitOptions, SplitResult } from "./pipeline/split.ts";
export { evaluate } from "./pipeline/evaluate.ts";
export type {
  EvaluateError,
  EvaluateOptions,
  EvaluateResult,
  QuestionRow,
} from "./pipeline/evaluate.ts";
export { full } from "./pipeline/full.ts";
export type { FullOptions, FullReport } from "./pipeline/full.ts";
