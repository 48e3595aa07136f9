/**
 * The shape of SQuAD records (internal to `io/squad.ts`): the schemas, which
 * word the errors. Their `is` checks, written out in plain JavaScript, are in
 * `io/squad_checks.ts` (`tests/squad_test.ts` checks that both agree).
 *
 * @module
 */
import * as Schema from "effect/Schema";

/** The `answer` record of a SQuAD file. */
export const AnswerSchema = Schema.Struct({ text: Schema.String });
/** The `article` record of a SQuAD file. */
export const ArticleSchema = Schema.Struct({
  title: Schema.String,
  paragraphs: Schema.Array(Schema.Unknown),
});
/** Any JSON object. */
export const ObjectSchema = Schema.Record(Schema.String, Schema.Unknown);
/**
 * The `question` record of a SQuAD file.
 *
 * @example
 * ```ts
 * import * as Schema from "effect/Schema";
 * import { QuestionSchema } from "./_squad_schema.ts";
 * const is = Schema.is(QuestionSchema);
 * if (!is({ id: "q1", question: "Who?", answers: [{ text: "x", answer_start: 0 }] })) throw new Error();
 * if (is({ question: "no id" }) || is({ id: "q2", is_impossible: "yes" })) throw new Error();
 * ```
 */
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
