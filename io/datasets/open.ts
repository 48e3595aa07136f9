/**
 * Open-domain question sets as JSONL, one question a line, as the community
 * ships them: NQ-open and EfficientQA (`{"question": ..., "answer": [...]}`,
 * google-research-datasets/natural-questions `nq_open/`), TriviaQA-open
 * (`answer` a list, or TriviaQA's answer object whose `aliases`, or
 * `Aliases`, are the gold answers, `value` when it has none), and the same
 * with `answers` for `answer`. The id is the record's `id`, `qid` or
 * `question_id` when it has one (a string or an integer), else the
 * question's position in the file from 0. Blank lines are passed over.
 *
 * @module
 */
import type * as Stream from "effect/Stream";
import type { InputError } from "../errors.ts";
import type { ByteSource } from "../source.ts";
import { lineRecords } from "./lines.ts";
import {
  answerList,
  IdRegistry,
  idText,
  isJsonObject,
  MAX_LINE_BYTES,
  parseJsonLine,
  type QaReadOptions,
  type QaRecord,
  questionProblem,
  recordError,
} from "./types.ts";

const ID_KEYS = ["id", "qid", "question_id"] as const;

/**
 * The gold answers of an open-domain record's answer value: a list of
 * strings, one string, or a TriviaQA answer object (`aliases`, else
 * `value`; either casing); `undefined` when it is none of these.
 *
 * @example
 * ```ts
 * import { openAnswers } from "./open.ts";
 * const t = openAnswers({ value: "Paris", aliases: ["Paris", "Paree"], normalized_value: "x" });
 * if (t?.join() !== "Paris,Paree") throw new Error();
 * if (openAnswers({ Value: "X" })?.join() !== "X") throw new Error();
 * if (openAnswers([1, 2]) !== undefined) throw new Error();
 * ```
 */
export function openAnswers(value: unknown): string[] | undefined {
  if (!isJsonObject(value)) return answerList(value);
  const aliases = value.aliases ?? value.Aliases;
  if (aliases !== undefined) {
    return Array.isArray(aliases) ? answerList(aliases) : undefined;
  }
  const v = value.value ?? value.Value;
  return typeof v === "string" ? [v] : undefined;
}

/**
 * The questions of an NQ-open / EfficientQA / TriviaQA-open JSONL file. A
 * bad line (not a JSON object, a missing or empty question, answers that
 * are not a list of strings, a bad or repeated id) fails with one
 * {@linkcode InputError} naming the line and the question id.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Stream from "effect/Stream";
 * import { openQuestions } from "./open.ts";
 * const text = [
 *   '{"question": "who wrote hamlet", "answer": ["Shakespeare"]}',
 *   '{"question": "capital of france", "answer": {"value": "Paris", "aliases": ["Paris"]}}',
 * ].join("\n");
 * const src = { name: "nq-open.jsonl", stream: new Blob([text]).stream() };
 * const qs = await Effect.runPromise(Stream.runCollect(openQuestions(src)));
 * const got = qs.map((q) => `${q.id}:${q.answers}`).join("|");
 * if (got !== "0:Shakespeare|1:Paris") throw new Error(got);
 * ```
 */
export function openQuestions(
  src: ByteSource,
  opts: QaReadOptions = {},
): Stream.Stream<QaRecord, InputError> {
  const max = opts.maxLineBytes ?? MAX_LINE_BYTES;
  const ids = new IdRegistry();
  let position = 0;
  return lineRecords<QaRecord>(src, max, (line, out) => {
    if (line.text.trim() === "") return;
    const rec = parseJsonLine(src.name, line.line, line.text);
    const key = ID_KEYS.find((k) => rec[k] !== undefined);
    const id = key === undefined ? String(position) : idText(rec[key]);
    position++;
    const fail = (message: string, known = id): never => {
      throw recordError(src.name, line.line, known, message);
    };
    if (id === undefined) fail(`"${key}" is not a string or an integer`);
    const bad = questionProblem(rec.question, "question");
    if (bad !== undefined) fail(bad);
    const field = rec.answer !== undefined ? "answer" : "answers";
    let answers: string[] = [];
    if (rec[field] !== undefined) {
      const a = openAnswers(rec[field]);
      if (a === undefined) fail(`"${field}" is not a list of strings`);
      answers = a as string[];
    } else if (opts.answers !== "optional") {
      fail('missing "answer"');
    }
    const seen = ids.add(id as string, line.line);
    if (seen !== undefined) fail(`duplicate id (first at ${seen})`);
    out.push({
      kind: "question",
      id: id as string,
      question: rec.question as string,
      answers,
      ...(opts.regex ? { regex: true } : {}),
      ...(opts.lang !== undefined ? { lang: opts.lang } : {}),
    });
  });
}
