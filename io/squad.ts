/**
 * Lazy SQuAD reader. A SQuAD file (`.json`, `.json.gz`, or `-` for stdin) is
 * parsed as it streams in and turned into a `Stream` of articles, each with
 * its paragraphs and their questions, validated against the record schemas
 * (`io/_squad_schema.ts`, by their plain checks in `io/squad_checks.ts`). Only one
 * article is held in memory at a time (an article whose `title` comes after
 * its `paragraphs`, as in key-sorted files, is buffered until it is
 * complete). Unknown fields and SQuAD v2.0 fields (`is_impossible`,
 * `plausible_answers`) are kept: each record carries its `raw` object.
 *
 * Paragraph ids are PI-SQuAD's `'%s_%d' % (title, paragraph_index)`. With
 * the `ids` option a reader also checks that they (and the question ids)
 * are unique and name dump files, or renames repeated titles: see
 * `io/squad_ids.ts`.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { FileError, InputError } from "./errors.ts";
import { type JsonEvent, JsonEventDecoder, JsonSyntaxError } from "./json_events.ts";
import type { PyJson, PyObject } from "./pyjson.ts";
import {
  articleIssue,
  isArticle,
  isObject,
  isParagraph,
  isQuestion,
  paragraphIssue,
  questionIssue,
} from "./squad_checks.ts";
import { type ByteSource, openSource } from "./source.ts";
import { HEAD_BYTES, MAX_ARTICLE_BYTES, MAX_LINE_BYTES } from "./datasets/detect_json.ts";
import { notSquadHint } from "./datasets/detect.ts";
import { DatasetIds, type IdMode, isIdProblem } from "./squad_ids.ts";

/** One gold answer. */
export interface SquadAnswer {
  /** The answer text. */
  readonly text: string;
  /** Character offset into the context (kept as read; not checked). */
  readonly answer_start?: unknown;
}

/** A question with its place in the dataset. */
export interface SquadQuestion {
  /** Record kind, for NDJSON streams. */
  readonly kind: "question";
  /** The SQuAD question id. */
  readonly id: string;
  /** The paragraph's PI-SQuAD id (`title_index`). */
  readonly paragraphId: string;
  /** The question text (`""` if the record has none). */
  readonly question: string;
  /** Gold answers, when the file has them. */
  readonly answers?: readonly SquadAnswer[];
  /** SQuAD v2.0: the question has no answer in its paragraph. */
  readonly is_impossible?: boolean;
  /** SQuAD v2.0: plausible but wrong answers of an impossible question. */
  readonly plausible_answers?: readonly SquadAnswer[];
  /** The record as read, every field in source order. */
  readonly raw: PyObject;
}

/** A paragraph with its questions. */
export interface SquadParagraph {
  /** Record kind, for NDJSON streams. */
  readonly kind: "paragraph";
  /** PI-SQuAD paragraph id: `'%s_%d' % (title, index)`. */
  readonly id: string;
  /** The article title the id is made from (see {@linkcode SquadArticle.title}). */
  readonly title: string;
  /** Index of the article in the file. */
  readonly articleIndex: number;
  /** Index of the paragraph in its article. */
  readonly index: number;
  /** The context, when the file has it (a question-only file has not). */
  readonly context?: string;
  /** The questions (empty for a context-only file). */
  readonly questions: readonly SquadQuestion[];
  /** The record as read. */
  readonly raw: PyObject;
}

/** An article with its paragraphs. */
export interface SquadArticle {
  /** Record kind, for NDJSON streams. */
  readonly kind: "article";
  /**
   * The title the paragraph ids are made from: as read, or its new name
   * when the reader renames repeated titles (`ids: "unique"`, see
   * `io/squad_ids.ts`); `raw.title` is always as read.
   */
  readonly title: string;
  /** Index of the article in the file. */
  readonly index: number;
  /** The paragraphs. */
  readonly paragraphs: readonly SquadParagraph[];
  /** The record as read. */
  readonly raw: PyObject;
}

/**
 * A top-level field of the file other than `data` (`version`, ...), in
 * source order relative to the articles.
 */
export interface SquadField {
  /** Record kind. */
  readonly kind: "field";
  /** The key. */
  readonly key: string;
  /** The value as read. */
  readonly value: PyJson;
}

/** Marks where the `data` list opens and closes among the fields. */
export interface SquadDataMark {
  /** Record kind. */
  readonly kind: "data-start" | "data-end";
}

/** What {@linkcode squadRecords} emits, in source order. */
export type SquadRecord = SquadArticle | SquadField | SquadDataMark;

/** Which parts a reader requires; missing required parts are bad input. */
export interface SquadReadOptions {
  /** Paragraph `context`: required (default), optional, or ignored. */
  readonly context?: "required" | "optional";
  /** Paragraph `qas`: required (default) or optional (context-only files). */
  readonly qas?: "required" | "optional";
  /** Question `answers`: required, or optional (default; question-only files). */
  readonly answers?: "required" | "optional";
  /**
   * Id checks over the whole file (`io/squad_ids.ts`): `"as-read"`
   * (default: none), `"distinct"` (a repeated paragraph or question id, two
   * ids with one dump file name, or an id that cannot name a dump file is
   * bad input) or `"unique"` (as `"distinct"`, but repeated titles are
   * renamed instead of refused).
   */
  readonly ids?: IdMode;
  /**
   * The longest string (any key or value) accepted, in bytes as written in
   * the file: a longer one is bad input, refused before it is held
   * (default: `MAX_LINE_BYTES`, 16 MiB, the line bound of the line-based
   * formats). `maxStringWhy` ends the message (which limit).
   */
  readonly maxStringBytes?: number;
  /** See {@linkcode SquadReadOptions.maxStringBytes}. */
  readonly maxStringWhy?: string;
}

/**
 * Validates one article object and builds typed records from it. Throws
 * {@linkcode InputError} naming the article, paragraph or question. `ids`
 * (the dataset's id checks so far, see `io/squad_ids.ts`) checks the ids
 * against the articles before, and may rename the title.
 */
export function decodeArticle(
  file: string,
  index: number,
  value: PyJson,
  opts: SquadReadOptions = {},
  ids?: DatasetIds,
): SquadArticle {
  const fail = (where: string, message: string): never => {
    throw new InputError({ file, where, message });
  };
  if (!isObject(value) || Array.isArray(value) || value === null) {
    return fail(`article ${index}`, "not an object");
  }
  const raw = value as PyObject;
  if (!isArticle(raw)) {
    const t = typeof raw.title === "string" ? `article "${raw.title}"` : `article ${index}`;
    return fail(t, articleIssue(raw));
  }
  const rawTitle = raw.title as string;
  const rawParagraphs = raw.paragraphs as PyJson[];
  const named = ids?.article(index, rawTitle, rawParagraphs.length) ?? rawTitle;
  if (isIdProblem(named)) return fail(named.where, named.message);
  const title = named;
  const paragraphs: SquadParagraph[] = [];
  for (let p = 0; p < rawParagraphs.length; p++) {
    const pid = `${title}_${p}`;
    const where = `article "${rawTitle}" paragraph ${p}`;
    const rp = rawParagraphs[p];
    if (!isObject(rp) || Array.isArray(rp) || rp === null) fail(where, "not an object");
    const para = rp as PyObject;
    if (!isParagraph(para)) fail(where, paragraphIssue(para));
    if (opts.context !== "optional" && para.context === undefined) {
      fail(where, 'missing "context"');
    }
    if (opts.qas !== "optional" && para.qas === undefined) fail(where, 'missing "qas"');
    const questions: SquadQuestion[] = [];
    const qas = (para.qas ?? []) as PyJson[];
    for (let q = 0; q < qas.length; q++) {
      const rq = qas[q];
      const qraw = rq as PyObject;
      const qwhere = typeof qraw?.id === "string"
        ? `${where} question "${qraw.id}"`
        : `${where} question ${q}`;
      if (!isObject(rq) || Array.isArray(rq) || rq === null) fail(qwhere, "not an object");
      if (!isQuestion(qraw)) fail(qwhere, questionIssue(qraw));
      if (opts.answers === "required" && qraw.answers === undefined) {
        fail(qwhere, 'missing "answers"');
      }
      const clash = ids?.question(qraw.id as string, index, rawTitle, p);
      if (clash !== undefined) fail(clash.where, clash.message);
      questions.push({
        kind: "question",
        id: qraw.id as string,
        paragraphId: pid,
        question: (qraw.question as string | undefined) ?? "",
        answers: qraw.answers as SquadAnswer[] | undefined,
        is_impossible: qraw.is_impossible as boolean | undefined,
        plausible_answers: qraw.plausible_answers as SquadAnswer[] | undefined,
        raw: qraw,
      });
    }
    paragraphs.push({
      kind: "paragraph",
      id: pid,
      title,
      articleIndex: index,
      index: p,
      context: para.context as string | undefined,
      questions,
      raw: para,
    });
  }
  return { kind: "article", title, index, paragraphs, raw };
}

export { MAX_ARTICLE_BYTES };

/** The end of the message of a string over the default bound. */
const SQUAD_STRING_WHY = " (phraseval reads no string, as no line, longer than 16 MiB)";

/**
 * Turns a byte stream into SQuAD records (articles, top-level fields and the
 * `data` marks) as a Web `ReadableStream`; errors are {@linkcode InputError}.
 */
export function squadRecordStream(
  source: ByteSource,
  opts: SquadReadOptions = {},
): ReadableStream<SquadRecord> {
  const decoder = new JsonEventDecoder("data", {
    maxStringBytes: opts.maxStringBytes ?? MAX_LINE_BYTES,
    maxStringWhy: opts.maxStringWhy ?? SQUAD_STRING_WHY,
    maxItemBytes: MAX_ARTICLE_BYTES,
    maxItemWhy: " (an article: phraseval reads none longer than 32 MiB)",
  });
  const ids = opts.ids === undefined || opts.ids === "as-read"
    ? undefined
    : new DatasetIds(opts.ids);
  const convert = (events: JsonEvent[], out: SquadRecord[]) => {
    for (const e of events) {
      if (e.kind === "item") out.push(decodeArticle(source.name, e.index, e.value, opts, ids));
      else if (e.kind === "field") out.push({ kind: "field", key: e.key, value: e.value });
      else out.push({ kind: e.kind === "array-start" ? "data-start" : "data-end" });
    }
  };
  // The first bytes, to say what a file that is no JSON object at all reads as.
  let head: Uint8Array | undefined;
  const toInputError = (e: unknown): unknown => {
    if (!(e instanceof JsonSyntaxError)) return e;
    const hint = e.offset === 0 && head !== undefined
      ? notSquadHint(new TextDecoder().decode(head), source.name)
      : undefined;
    return new InputError({
      file: source.name,
      where: e.offset >= 0 ? `byte ${e.offset}` : "",
      message: hint === undefined ? e.message : `${e.message} (${hint})`,
    });
  };
  let sawData = false;
  const track = (out: SquadRecord[]) => {
    for (const r of out) if (r.kind === "data-start") sawData = true;
    return out;
  };
  // The file's first bytes, held until there are three: a UTF-8 byte-order mark there (a
  // Windows editor's) is read as three spaces, so every byte offset stays the file's.
  let first: Uint8Array | undefined = new Uint8Array(0);
  const unmarked = (chunk: Uint8Array): Uint8Array | undefined => {
    if (first === undefined) return chunk;
    const all = new Uint8Array(first.byteLength + chunk.byteLength);
    all.set(first);
    all.set(chunk, first.byteLength);
    if (all.byteLength < 3) {
      first = all;
      return undefined;
    }
    first = undefined;
    if (all[0] === 0xef && all[1] === 0xbb && all[2] === 0xbf) all.fill(0x20, 0, 3);
    return all;
  };
  return source.stream.pipeThrough(
    new TransformStream<Uint8Array, SquadRecord>({
      transform(piece, controller) {
        const chunk = unmarked(piece);
        if (chunk === undefined) return;
        const out: SquadRecord[] = [];
        head ??= chunk.slice(0, HEAD_BYTES);
        try {
          // In pieces of at most 1 MiB: the bounds are checked between two.
          for (let o = 0; o < chunk.byteLength; o += 1 << 20) {
            convert(decoder.push(chunk.subarray(o, o + (1 << 20))), out);
          }
        } catch (e) {
          throw toInputError(e);
        }
        for (const r of track(out)) controller.enqueue(r);
      },
      flush(controller) {
        const out: SquadRecord[] = [];
        try {
          // A file of fewer than three bytes: no mark, its bytes as they are.
          if (first !== undefined && first.byteLength > 0) {
            head ??= first.slice();
            convert(decoder.push(first), out);
          }
          convert(decoder.end(), out);
        } catch (e) {
          throw toInputError(e);
        }
        for (const r of track(out)) controller.enqueue(r);
        if (!sawData) {
          throw new InputError({ file: source.name, where: "", message: 'missing "data"' });
        }
      },
    }),
  );
}

/** Errors of the SQuAD reader. */
export type SquadReadError = InputError | FileError;

const asReadError = (name: string) => (e: unknown): SquadReadError =>
  e instanceof InputError || e instanceof FileError ? e : new InputError({
    file: name,
    where: "",
    message: e instanceof Error ? e.message : String(e),
  });

/**
 * All records of a SQuAD file in source order: articles, top-level fields
 * (`version`, ...) and the `data` marks. Use it when the file's other
 * fields matter (split, version checks); otherwise use
 * {@linkcode squadArticles}.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Stream from "effect/Stream";
 * import { squadRecords } from "./squad.ts";
 * const path = await Deno.makeTempFile({ suffix: ".json" });
 * await Deno.writeTextFile(path, JSON.stringify({
 *   version: "1.1",
 *   data: [{ title: "T", paragraphs: [{ context: "Paris is big.", qas: [
 *     { id: "q1", question: "Where?", answers: [{ text: "Paris", answer_start: 0 }] },
 *     { id: "q2", question: "Size?", answers: [{ text: "big", answer_start: 9 }] },
 *   ] }] }],
 * }));
 * const kinds = await Effect.runPromise(
 *   Stream.runCollect(Stream.map(squadRecords(path), (r) => r.kind)),
 * );
 * if (kinds.join() !== "field,data-start,article,data-end") throw new Error(kinds.join());
 * await Deno.remove(path);
 * ```
 */
export const squadRecords = (
  path: string,
  opts: SquadReadOptions = {},
): Stream.Stream<SquadRecord, SquadReadError> =>
  Stream.unwrap(
    Effect.map(openSource(path), (src) =>
      Stream.fromReadableStream({
        evaluate: () => squadRecordStream(src, opts),
        onError: asReadError(path),
      })),
  );

/**
 * The articles of a SQuAD file, one at a time.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Stream from "effect/Stream";
 * import { squadArticles } from "./squad.ts";
 * const path = await Deno.makeTempFile({ suffix: ".json" });
 * await Deno.writeTextFile(path, JSON.stringify({
 *   version: "1.1",
 *   data: [{ title: "T", paragraphs: [{ context: "Paris is big.", qas: [
 *     { id: "q1", question: "Where?", answers: [{ text: "Paris", answer_start: 0 }] },
 *     { id: "q2", question: "Size?", answers: [{ text: "big", answer_start: 9 }] },
 *   ] }] }],
 * }));
 * const titles = await Effect.runPromise(
 *   Stream.runCollect(Stream.map(squadArticles(path), (a) => a.title)),
 * );
 * if (titles.join() !== "T") throw new Error(titles.join());
 * await Deno.remove(path);
 * ```
 */
export const squadArticles = (
  path: string,
  opts: SquadReadOptions = {},
): Stream.Stream<SquadArticle, SquadReadError> =>
  Stream.filter(
    squadRecords(path, opts),
    (r): r is SquadArticle => r.kind === "article",
  );

/**
 * The paragraphs of a SQuAD file (each with its questions), lazily.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Stream from "effect/Stream";
 * import { squadParagraphs } from "./squad.ts";
 * const path = await Deno.makeTempFile({ suffix: ".json" });
 * await Deno.writeTextFile(path, JSON.stringify({
 *   version: "1.1",
 *   data: [{ title: "T", paragraphs: [{ context: "Paris is big.", qas: [
 *     { id: "q1", question: "Where?", answers: [{ text: "Paris", answer_start: 0 }] },
 *     { id: "q2", question: "Size?", answers: [{ text: "big", answer_start: 9 }] },
 *   ] }] }],
 * }));
 * const [p] = await Effect.runPromise(Stream.runCollect(squadParagraphs(path)));
 * if (p.id !== "T_0" || p.questions.length !== 2) throw new Error(p.id);
 * await Deno.remove(path);
 * ```
 */
export const squadParagraphs = (
  path: string,
  opts: SquadReadOptions = {},
): Stream.Stream<SquadParagraph, SquadReadError> =>
  Stream.flattenIterable(Stream.map(squadArticles(path, opts), (a) => a.paragraphs));

/**
 * The questions of a SQuAD file, lazily, each with its paragraph id.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Stream from "effect/Stream";
 * import { squadQuestions } from "./squad.ts";
 * const path = await Deno.makeTempFile({ suffix: ".json" });
 * await Deno.writeTextFile(path, JSON.stringify({
 *   version: "1.1",
 *   data: [{ title: "T", paragraphs: [{ context: "Paris is big.", qas: [
 *     { id: "q1", question: "Where?", answers: [{ text: "Paris", answer_start: 0 }] },
 *     { id: "q2", question: "Size?", answers: [{ text: "big", answer_start: 9 }] },
 *   ] }] }],
 * }));
 * const ids = await Effect.runPromise(
 *   Stream.runCollect(Stream.map(squadQuestions(path), (q) => `${q.id}@${q.paragraphId}`)),
 * );
 * if (ids.join() !== "q1@T_0,q2@T_0") throw new Error(ids.join());
 * await Deno.remove(path);
 * ```
 */
export const squadQuestions = (
  path: string,
  opts: SquadReadOptions = {},
): Stream.Stream<SquadQuestion, SquadReadError> =>
  Stream.flattenIterable(
    Stream.map(squadArticles(path, opts), (a) => a.paragraphs.flatMap((p) => p.questions)),
  );

/** Counts of a SQuAD file. */
export interface SquadCounts {
  /** Articles. */
  readonly articles: number;
  /** Paragraphs. */
  readonly paragraphs: number;
  /** Questions. */
  readonly questions: number;
  /** Gold answers (all questions). */
  readonly answers: number;
  /** The `version` field, if any. */
  readonly version?: string;
}

/**
 * Counts articles, paragraphs, questions and answers of a SQuAD file in one
 * streaming pass.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { countSquad } from "./squad.ts";
 * const path = await Deno.makeTempFile({ suffix: ".json" });
 * await Deno.writeTextFile(path, JSON.stringify({
 *   version: "1.1",
 *   data: [{ title: "T", paragraphs: [{ context: "Paris is big.", qas: [
 *     { id: "q1", question: "Where?", answers: [{ text: "Paris", answer_start: 0 }] },
 *     { id: "q2", question: "Size?", answers: [{ text: "big", answer_start: 9 }] },
 *   ] }] }],
 * }));
 * const c = await Effect.runPromise(countSquad(path));
 * if (c.articles !== 1 || c.paragraphs !== 1 || c.questions !== 2 || c.answers !== 2) {
 *   throw new Error(JSON.stringify(c));
 * }
 * if (c.version !== "1.1") throw new Error(c.version);
 * await Deno.remove(path);
 * ```
 */
export const countSquad = (
  path: string,
  opts: SquadReadOptions = { qas: "optional", context: "optional" },
): Effect.Effect<SquadCounts, SquadReadError> =>
  Stream.runFold(
    squadRecords(path, opts),
    (): SquadCounts => ({ articles: 0, paragraphs: 0, questions: 0, answers: 0 }),
    (c, r) => {
      if (r.kind === "field" && r.key === "version") {
        return { ...c, version: typeof r.value === "string" ? r.value : String(r.value) };
      }
      if (r.kind !== "article") return c;
      let questions = c.questions, answers = c.answers;
      for (const p of r.paragraphs) {
        questions += p.questions.length;
        for (const q of p.questions) answers += q.answers?.length ?? 0;
      }
      return {
        ...c,
        articles: c.articles + 1,
        paragraphs: c.paragraphs + r.paragraphs.length,
        questions,
        answers,
      };
    },
  );
