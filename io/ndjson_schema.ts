/**
 * The NDJSON record kinds as Effect Schemas (`RecordSchemas`): the shapes
 * `io/ndjson.ts` checks, field by field, without loading Schema
 * (`tests/io/ndjson_test.ts` checks that its plain decoder and these agree on
 * what they accept, what they return and how they word a problem).
 *
 * @module
 */
import * as Schema from "effect/Schema";

const ParagraphRecordSchema = Schema.Struct({
  kind: Schema.Literal("paragraph"),
  id: Schema.String,
  context: Schema.String,
  title: Schema.optionalKey(Schema.String),
  index: Schema.optionalKey(Schema.Number),
});
const QuestionRecordSchema = Schema.Struct({
  kind: Schema.Literal("question"),
  id: Schema.String,
  question: Schema.String,
  paragraphId: Schema.optionalKey(Schema.String),
});

/**
 * Schemas of the record kinds, by kind.
 *
 * @example
 * ```ts
 * import * as Schema from "effect/Schema";
 * import { RecordSchemas } from "./ndjson_schema.ts";
 * if (!Schema.is(RecordSchemas.question)({ kind: "question", id: "q1", question: "Who?" })) {
 *   throw new Error();
 * }
 * ```
 */
export const RecordSchemas = {
  paragraph: ParagraphRecordSchema,
  question: QuestionRecordSchema,
} as const;
