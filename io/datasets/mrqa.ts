/**
 * MRQA 2019 shared-task JSONL (mrqa/MRQA-Shared-Task-2019, README "Dataset
 * Format"): a header line `{"header": {"dataset": ..., ...}}`, then one
 * context a line: `{"context", "qas": [{"qid", "question", "answers",
 * "detected_answers": [{"text", "char_spans": [[start, end], ...]}],
 * "is_impossible"?}], ...}`. The gold answers are `answers` (what the
 * official evaluation scores against); `detected_answers` is checked (its
 * inclusive `char_spans` must lie in the context, counted in code points as
 * Python counts them) but not returned. The paragraph id is the context's
 * `id` when it has one, else its position among the contexts from 0; the
 * question id is `qid`.
 *
 * @module
 */
import * as Stream from "effect/Stream";
import { InputError } from "../errors.ts";
import type { ByteSource } from "../source.ts";
import { lineRecords } from "./lines.ts";
import {
  answerList,
  type CorpusPassage,
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

/** One context line of an MRQA file, checked. */
export interface MrqaContext {
  /** The line. */
  readonly line: number;
  /** The paragraph id (the context's `id`, else its position from 0). */
  readonly id: string;
  /** The context text. */
  readonly context: string;
  /** Its questions. */
  readonly questions: readonly QaRecord[];
}

function codePoints(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/** Why `spans` is not a list of `[start, end]` inside `length` code points, or undefined. */
function spansProblem(spans: unknown, length: number): string | undefined {
  if (!Array.isArray(spans)) return "is not a list";
  for (let k = 0; k < spans.length; k++) {
    const s = spans[k];
    if (
      !Array.isArray(s) || s.length !== 2 || !Number.isSafeInteger(s[0]) ||
      !Number.isSafeInteger(s[1])
    ) {
      return `span ${k} is not [start, end]`;
    }
    if (s[0] < 0 || s[1] < s[0] || s[1] >= length) {
      return `span ${k} [${s[0]}, ${s[1]}] is outside the context (${length} characters)`;
    }
  }
  return undefined;
}

/**
 * Parses the MRQA lines of `src` into contexts (the header line is checked
 * and passed over). Every check of {@linkcode mrqaQuestions} is made here.
 */
function mrqaContexts(
  src: ByteSource,
  opts: QaReadOptions,
): Stream.Stream<MrqaContext, InputError> {
  const max = opts.maxLineBytes ?? MAX_LINE_BYTES;
  const qids = new IdRegistry();
  const pids = new IdRegistry();
  let sawHeader = false;
  let position = 0;
  return lineRecords<MrqaContext>(src, max, (line, out) => {
    if (line.text.trim() === "") return;
    const rec = parseJsonLine(src.name, line.line, line.text);
    if (!sawHeader) {
      if (!isJsonObject(rec.header)) {
        throw recordError(
          src.name,
          line.line,
          undefined,
          'not the MRQA header line ({"header": ...})',
        );
      }
      sawHeader = true;
      return;
    }
    const fail = (message: string, id?: string): never => {
      throw recordError(src.name, line.line, id, message);
    };
    const pid = rec.id === undefined ? String(position) : idText(rec.id);
    position++;
    if (pid === undefined) fail('context "id" is not a string or an integer');
    if (typeof rec.context !== "string") {
      fail(rec.context === undefined ? 'missing "context"' : '"context" is not a string');
    }
    if (!Array.isArray(rec.qas)) {
      fail(rec.qas === undefined ? 'missing "qas"' : '"qas" is not a list');
    }
    const seenP = pids.add(pid as string, line.line);
    if (seenP !== undefined) {
      fail(`duplicate context id ${JSON.stringify(pid)} (first at ${seenP})`);
    }
    const context = rec.context as string;
    let length = -1;
    const questions: QaRecord[] = [];
    const qas = rec.qas as unknown[];
    for (let k = 0; k < qas.length; k++) {
      const qa = qas[k];
      if (!isJsonObject(qa)) fail(`question ${k} of the context is not an object`);
      const q = qa as Record<string, unknown>;
      const id = idText(q.qid);
      if (id === undefined) {
        fail(
          q.qid === undefined
            ? `question ${k} of the context: missing "qid"`
            : `question ${k} of the context: "qid" is not a string`,
        );
      }
      const bad = questionProblem(q.question, "question");
      if (bad !== undefined) fail(bad, id);
      let answers: string[] = [];
      if (q.answers !== undefined) {
        const a = answerList(q.answers);
        if (a === undefined || !Array.isArray(q.answers)) {
          fail('"answers" is not a list of strings', id);
        }
        answers = a as string[];
      } else if (opts.answers !== "optional") fail('missing "answers"', id);
      if (q.detected_answers !== undefined) {
        if (!Array.isArray(q.detected_answers)) fail('"detected_answers" is not a list', id);
        const detected = q.detected_answers as unknown[];
        for (let d = 0; d < detected.length; d++) {
          const da = detected[d];
          if (!isJsonObject(da)) fail(`detected answer ${d} is not an object`, id);
          const spans = (da as Record<string, unknown>).char_spans;
          if (spans === undefined) continue;
          if (length < 0) length = codePoints(context);
          const p = spansProblem(spans, length);
          if (p !== undefined) fail(`detected answer ${d}: "char_spans" ${p}`, id);
        }
      }
      if (q.is_impossible !== undefined && typeof q.is_impossible !== "boolean") {
        fail('"is_impossible" is not true or false', id);
      }
      const seen = qids.add(id as string, line.line);
      if (seen !== undefined) fail(`duplicate id (first at ${seen})`, id);
      questions.push({
        kind: "question",
        id: id as string,
        question: q.question as string,
        answers,
        paragraphId: pid as string,
        context,
        ...(q.is_impossible === true ? { noAnswer: true } : {}),
        ...(opts.regex ? { regex: true } : {}),
        ...(opts.lang !== undefined ? { lang: opts.lang } : {}),
      });
    }
    out.push({ line: line.line, id: pid as string, context, questions });
  }, () => {
    if (!sawHeader) {
      throw new InputError({
        file: src.name,
        where: "",
        message: 'empty file: no MRQA header line ({"header": ...})',
      });
    }
    if (position === 0) {
      // As an empty file is refused: nothing to read, nothing to score (records and evaluate agree).
      throw new InputError({
        file: src.name,
        where: "",
        message: "holds only its MRQA header line: no context, no question",
      });
    }
  });
}

/**
 * The questions of an MRQA JSONL file (plain or gzip), each with its
 * context and paragraph id. A bad line (no header line first, a context
 * that is not a string, a question without `qid` or with an empty question,
 * answers that are not a list of strings, a `char_spans` outside its
 * context, a repeated question or context id) fails with one
 * {@linkcode InputError} naming the line and the question id.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Stream from "effect/Stream";
 * import { mrqaQuestions } from "./mrqa.ts";
 * const text = [
 *   '{"header": {"dataset": "SQuAD", "split": "dev"}}',
 *   JSON.stringify({ context: "Paris is big.", qas: [{ qid: "a1", question: "Where?",
 *     answers: ["Paris"], detected_answers: [{ text: "Paris", char_spans: [[0, 4]] }] }] }),
 * ].join("\n");
 * const src = { name: "SQuAD.jsonl", stream: new Blob([text]).stream() };
 * const [q] = await Effect.runPromise(Stream.runCollect(mrqaQuestions(src)));
 * if (q.id !== "a1" || q.paragraphId !== "0" || q.answers[0] !== "Paris") throw new Error();
 * ```
 */
export function mrqaQuestions(
  src: ByteSource,
  opts: QaReadOptions = {},
): Stream.Stream<QaRecord, InputError> {
  return Stream.flattenIterable(Stream.map(mrqaContexts(src, opts), (c) => c.questions));
}

/**
 * The contexts of an MRQA JSONL file as corpus passages (`title` is `""`:
 * MRQA contexts carry their titles inline, after `[TLE]`), checked as
 * {@linkcode mrqaQuestions} checks them.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Stream from "effect/Stream";
 * import { mrqaPassages } from "./mrqa.ts";
 * const text = '{"header": {}}\n{"id": "c9", "context": "Paris.", "qas": []}\n';
 * const [p] = await Effect.runPromise(
 *   Stream.runCollect(mrqaPassages({ name: "m.jsonl", stream: new Blob([text]).stream() })),
 * );
 * if (p.id !== "c9" || p.text !== "Paris." || p.title !== "") throw new Error();
 * ```
 */
export function mrqaPassages(
  src: ByteSource,
  opts: QaReadOptions = {},
): Stream.Stream<CorpusPassage, InputError> {
  return Stream.map(
    mrqaContexts(src, { ...opts, answers: "optional" }),
    (c) => ({ id: c.id, title: "", text: c.context }),
  );
}
