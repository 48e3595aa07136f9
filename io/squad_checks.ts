/**
 * The `is` checks of the SQuAD record schemas (`io/_squad_schema.ts`),
 * written out in plain JavaScript: they run on every record, the schema
 * interpreter is several times slower, and this module loads without it
 * (`merge` parses its dataset with these alone unless something is wrong;
 * `evaluate`'s whole-file path, `metrics/evaluate_whole.ts`, checks with them).
 * The wording of a record's first problem is written out here too
 * ({@linkcode articleIssue}, {@linkcode paragraphIssue},
 * {@linkcode questionIssue}: what the schemas' decoders say, field by field
 * in their order), so a stage that reads SQuAD loads no Effect Schema.
 * `tests/squad_test.ts` checks that they agree with the schemas and with
 * `decodeArticle`.
 *
 * @module
 */
import type { PyObject } from "./pyjson.ts";

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

type Kind = "string" | "array" | "boolean";
const isKind = (v: unknown, kind: Kind): boolean =>
  kind === "string"
    ? typeof v === "string"
    : kind === "array"
    ? Array.isArray(v)
    : typeof v === "boolean";
/** A field's problem, worded as the schema's: `missing "key"` or `"key": expected kind`. */
const fieldIssue = (o: PyObject, key: string, kind: Kind, required: boolean) => {
  if (!(key in o)) return required ? `missing "${key}"` : undefined;
  return isKind(o[key], kind) ? undefined : `"${key}": expected ${kind}`;
};
/** The problem of an optional list of `{ text: string }` answers. */
const answersIssue = (o: PyObject, key: string): string | undefined => {
  if (!(key in o)) return undefined;
  const v = o[key];
  if (!Array.isArray(v)) return `"${key}": expected array`;
  for (let i = 0; i < v.length; i++) {
    const a = v[i];
    if (!isObject(a) || Array.isArray(a)) return `"${key}[${i}]": expected object`;
    const t = fieldIssue(a, "text", "string", true);
    if (t !== undefined) return t.replace('"text"', `"${key}[${i}].text"`);
  }
  return undefined;
};

/**
 * What is wrong with an article object, as `ArticleSchema`'s decoder words
 * it (the first problem; "invalid record" when it finds none).
 *
 * @example
 * ```ts
 * import { articleIssue } from "./squad_checks.ts";
 * if (articleIssue({ title: 5, paragraphs: [] }) !== '"title": expected string') throw new Error();
 * if (articleIssue({ title: "T" }) !== 'missing "paragraphs"') throw new Error();
 * ```
 */
export const articleIssue = (v: PyObject): string =>
  fieldIssue(v, "title", "string", true) ?? fieldIssue(v, "paragraphs", "array", true) ??
    "invalid record";

/** What is wrong with a paragraph object, as `ParagraphSchema`'s decoder words it. */
export const paragraphIssue = (v: PyObject): string =>
  fieldIssue(v, "context", "string", false) ?? fieldIssue(v, "qas", "array", false) ??
    "invalid record";

/**
 * What is wrong with a question object, as `QuestionSchema`'s decoder words
 * it.
 *
 * @example
 * ```ts
 * import { questionIssue } from "./squad_checks.ts";
 * const why = questionIssue({ id: "q", answers: [{ text: "x" }, {}] });
 * if (why !== 'missing "answers[1].text"') throw new Error(why);
 * ```
 */
export const questionIssue = (v: PyObject): string =>
  fieldIssue(v, "id", "string", true) ?? fieldIssue(v, "question", "string", false) ??
    answersIssue(v, "answers") ?? fieldIssue(v, "is_impossible", "boolean", false) ??
    answersIssue(v, "plausible_answers") ?? "invalid record";

/** Which parts of a record are optional (as `SquadReadOptions` in `io/squad.ts`). */
export interface ArticleParts {
  /** Paragraph `qas` (default required). */
  readonly qas?: "required" | "optional";
  /** Paragraph `context` (default required). */
  readonly context?: "required" | "optional";
  /** Question `answers` (default optional). */
  readonly answers?: "required" | "optional";
}

const isRecord = (v: unknown): v is PyObject => isObject(v) && !Array.isArray(v);

/**
 * Whether `decodeArticle` accepts `value` with these options (when it does
 * not, it throws the error that says why).
 *
 * @example
 * ```ts
 * import { isValidArticle } from "./squad_checks.ts";
 * if (!isValidArticle({ title: "T", paragraphs: [{ context: "c", qas: [] }] }, {})) throw new Error();
 * // No context: refused unless the context is optional.
 * if (isValidArticle({ title: "T", paragraphs: [{ qas: [] }] }, {})) throw new Error();
 * if (!isValidArticle({ title: "T", paragraphs: [{ qas: [] }] }, { context: "optional" })) {
 *   throw new Error();
 * }
 * ```
 */
export function isValidArticle(value: unknown, opts: ArticleParts): boolean {
  if (!isRecord(value) || !isArticle(value)) return false;
  for (const p of value.paragraphs as unknown[]) {
    if (!isRecord(p) || !isParagraph(p)) return false;
    if (opts.context !== "optional" && p.context === undefined) return false;
    if (opts.qas !== "optional" && p.qas === undefined) return false;
    for (const q of (p.qas ?? []) as unknown[]) {
      if (!isRecord(q) || !isQuestion(q)) return false;
      if (opts.answers === "required" && q.answers === undefined) return false;
    }
  }
  return true;
}
