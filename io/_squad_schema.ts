/**
 * The shape of SQuAD records (internal to `io/squad.ts`): the schemas, which
 * word the errors, and their `is` checks written out in plain JavaScript,
 * which run on every record (the schema interpreter is several times slower;
 * `tests/squad_test.ts` checks that both agree).
 *
 * @module
 */
import * as Schema from "effect/Schema";
import type { PyObject } from "./pyjson.ts";

/** The `answer` record of a SQuAD file. */
export const AnswerSchema = Schema.Struct({ text: Schema.String });
/** The `article` record of a SQuAD file. */
export const ArticleSchema = Schema.Struct({
  title: Schema.String,
  paragraphs: Schema.Array(Schema.Unknown),
});
/** Any JSON object. */
export const ObjectSchema = Schema.Record(Schema.String, Schema.Unknown);
/** The `question` record of a SQuAD file. */
export const QuestionSchema = Schema.Struct({
  id: Schema.String,
  question: Schema.optionalKey(Schema.String),
  answers: Schema.optionalKey(Schema.Array(AnswerSchema)),
  is_impossible: Schema.optionalKey(Schema.Boolean),
  plausible_answers: Schema.optionalKey(Schema.Array(AnswerSchema)),
});
/** The `paragraph` record of a SQuAD file. */
export const ParagraphSchema = Schema.Struct({
  context: Schema.optionalKey(Schema.String),
  qas: Schema.optionalKey(Schema.Array(Schema.Unknown)),
});

// The schemas' `is` checks, written out: they run on every question of a file, and
// the schema interpreter is several times slower (tests/squad_test.ts checks that
// both agree). The schemas still word the errors.
/** `ObjectSchema`'s check (arrays pass too, as with the schema; callers exclude them). */
export const isObject = (v: unknown): v is PyObject => typeof v === "object" && v !== null;
const optional = (o: PyObject, key: string, ok: (v: unknown) => boolean): boolean =>
  !(key in o) || ok(o[key]);
const isString = (v: unknown): v is string => typeof v === "string";
const isAnswer = (v: unknown): boolean => isObject(v) && isString(v.text);
const isAnswers = (v: unknown): boolean => Array.isArray(v) && v.every(isAnswer);
/** `ArticleSchema`'s check. */
export const isArticle = (v: PyObject): boolean => isString(v.title) && Array.isArray(v.paragraphs);
/** `QuestionSchema`'s check. */
export const isQuestion = (v: PyObject): boolean =>
  isString(v.id) && optional(v, "question", isString) && optional(v, "answers", isAnswers) &&
  optional(v, "is_impossible", (x) => typeof x === "boolean") &&
  optional(v, "plausible_answers", isAnswers);
/** `ParagraphSchema`'s check. */
export const isParagraph = (v: PyObject): boolean =>
  optional(v, "context", isString) && optional(v, "qas", Array.isArray);
