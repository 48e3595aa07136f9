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
export * from "./metrics/bem/mod.ts";
export { evaluateBem, evaluateBemExtra, scoreDataset } from "./metrics/evaluate.ts";
export type { DatasetScores, EvaluateBemOptions, ScoreDatasetOptions } from "./metrics/evaluate.ts";
export * from "./io/dump/names.ts";
export * from "./io/dump/writer.ts";
export * from "./io/dump/reader.ts";
export * from "./io/ndjson.ts";
export * from "./io/npy.ts";
export * from "./io/npz.ts";
export * from "./io/zip.ts";
export * from "./encoders/types.ts";
export * from "./encoders/embed.ts";
export * from "./encoders/registry.ts";
export * from "./encoders/sparse_pi/encoder.ts";
export * from "./encoders/onnx/encoder.ts";
export * from "./encoders/hybrid.ts";
export { split } from "./io/squad_split.ts";
export type { SplitOptions, SplitResult } from "./io/squad_split.ts";
export { evaluate } from "./pipeline/evaluate.ts";
export type {
  EvaluateError,
  EvaluateOptions,
  EvaluateResult,
  QuestionRow,
} from "./pipeline/evaluate.ts";
export { embedContext } from "./pipeline/embed_context.ts";
export type { EmbedContextOptions } from "./pipeline/embed_context.ts";
export { embedQuestion } from "./pipeline/embed_question.ts";
export type { EmbedQuestionOptions } from "./pipeline/embed_question.ts";
export { merge } from "./search/merge.ts";
export type { MergeError, MergeOptions, MergeResult } from "./search/merge.ts";
export { formatValidateReport, validate } from "./io/dump/validate.ts";
export type { ValidateOptions, ValidateReport } from "./io/dump/validate.ts";
export { bem } from "./pipeline/bem.ts";
export type { BemStageOptions } from "./pipeline/bem.ts";
export { records } from "./pipeline/records.ts";
export type { RecordsOptions } from "./pipeline/records.ts";
export { inspectFile } from "./io/inspect.ts";
export type { InspectOptions, InspectResult } from "./io/inspect.ts";
export { run } from "./pipeline/run.ts";
export type { RunOptions } from "./pipeline/run.ts";
export { encoderPermissions, full } from "./pipeline/full.ts";
export type { FullOptions, FullSummary, StagePermissions } from "./pipeline/full.ts";
