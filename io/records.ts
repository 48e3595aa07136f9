/**
 * A dataset or corpus as NDJSON records (`records FILE [--kind
 * question|paragraph] [--format NAME] [--lang CODE]`), one a line, for shell
 * pipes between stages. Question records carry the id, the question text and
 * the paragraph id when the set has one (never the context or the answers);
 * paragraph records the id, context and title, and for a SQuAD file the
 * paragraph's index in its article.
 *
 * A SQuAD-shaped file (SQuAD v1.1/v2.0, XQuAD, MLQA: `io/datasets/read.ts`
 * {@linkcode isSquadShaped}) is read by the SQuAD reader, as before other
 * formats were read (the same bytes). Any other question set is read by
 * `readQuestions` (ids as it gives them: a set without ids is numbered from
 * 0 in file order) and any other corpus by `readCorpus` (DPR's passage TSV,
 * a JSONL corpus, MRQA's contexts: the passage id is the record id, its
 * title the title, `""` when it has none). The format is detected from the
 * first bytes unless `format` names it; stdin too.
 *
 * ```sh
 * deno task records question.json --kind question | deno task embed_question - question_emb/
 * ```
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { FileError, InputError, type UsageError } from "./errors.ts";
import type { ParagraphRecord, QuestionRecord } from "./ndjson.ts";
import { openAtomicWriter } from "./fs.ts";
import { type SquadArticle, squadRecordStream } from "./squad.ts";
import {
  isSquadShaped,
  openDataset,
  passagesOfSource,
  questionsOfSource,
} from "./datasets/read.ts";

/** Options of {@linkcode records}. */
export interface RecordsOptions {
  /** A question set or corpus of any `io/datasets/` format (`-` for stdin). */
  readonly input: string;
  /** Which records. */
  readonly kind: "question" | "paragraph";
  /** Where to write (`-` for stdout). */
  readonly out: string;
  /** The input's format (a `--format` name, as `evaluate`'s); default: detected. */
  readonly format?: string;
  /** The language of an XQuAD/MLQA question set (as `evaluate --lang`). */
  readonly lang?: string;
}

/** Errors of {@linkcode records}: bad input, files, bad options. */
export type RecordsError = InputError | FileError | UsageError;

/** The NDJSON lines of one SQuAD article (the records before other formats were read). */
function articleLines(a: SquadArticle, questions: boolean): string[] {
  const lines: string[] = [];
  for (const p of a.paragraphs) {
    if (questions) {
      for (const q of p.questions) {
        const r: QuestionRecord = {
          kind: "question",
          id: q.id,
          question: q.question,
          paragraphId: p.id,
        };
        lines.push(JSON.stringify(r));
      }
    } else {
      const r: ParagraphRecord = {
        kind: "paragraph",
        id: p.id,
        context: p.context!,
        title: p.title,
        index: p.index,
      };
      lines.push(JSON.stringify(r));
    }
  }
  return lines;
}

/**
 * The records of `input` as NDJSON lines, in groups (a SQuAD article, or
 * one record of another format).
 */
const recordLines = (
  opts: RecordsOptions,
): Stream.Stream<string[], RecordsError> =>
  Stream.unwrap(
    Effect.flatMap(openDataset(opts.input, opts.format, true), ([format, src]) => {
      const questions = opts.kind === "question";
      if (isSquadShaped(format)) {
        return Effect.succeed(
          Stream.fromReadableStream({
            evaluate: () =>
              squadRecordStream(src, {
                context: questions ? "optional" : "required",
                qas: questions ? "required" : "optional",
              }),
            onError: (e): RecordsError =>
              e instanceof InputError || e instanceof FileError ? e : new InputError({
                file: opts.input,
                where: "",
                message: e instanceof Error ? e.message : String(e),
              }),
          }).pipe(
            Stream.map((r) => r.kind === "article" ? articleLines(r, questions) : []),
          ),
        );
      }
      if (questions) {
        return Effect.map(
          questionsOfSource(opts.input, format, src, { lang: opts.lang, answers: "optional" }),
          (s) =>
            Stream.map(s, (q) => {
              const r: QuestionRecord = {
                kind: "question",
                id: q.id,
                question: q.question,
                ...(q.paragraphId !== undefined ? { paragraphId: q.paragraphId } : {}),
              };
              return [JSON.stringify(r)];
            }),
        );
      }
      return Effect.map(passagesOfSource(opts.input, format, src), (s) =>
        Stream.map(s, (p) => {
          const r: ParagraphRecord = {
            kind: "paragraph",
            id: p.id,
            context: p.text,
            title: p.title,
          };
          return [JSON.stringify(r)];
        }));
    }),
  );

/**
 * Writes the NDJSON records of a SQuAD file; returns how many.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { records } from "./records.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/data.json`, JSON.stringify({
 *   version: "1.1",
 *   data: [{ title: "T", paragraphs: [{ context: "Paris is big.", qas: [
 *     { id: "q1", question: "Where?", answers: [{ text: "Paris", answer_start: 0 }] },
 *   ] }] }],
 * }));
 * const n = await Effect.runPromise(
 *   records({ input: `${dir}/data.json`, kind: "question", out: `${dir}/q.ndjson` }),
 * );
 * const text = await Deno.readTextFile(`${dir}/q.ndjson`);
 * const want = '{"kind":"question","id":"q1","question":"Where?","paragraphId":"T_0"}\n';
 * if (n !== 1 || text !== want) throw new Error(text);
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export const records = (opts: RecordsOptions): Effect.Effect<number, RecordsError> =>
  Effect.acquireUseRelease(
    Effect.tryPromise({
      try: () => openAtomicWriter(opts.out),
      catch: (e) =>
        new FileError({ file: opts.out, message: e instanceof Error ? e.message : String(e) }),
    }),
    (w) =>
      Effect.gen(function* () {
        let n = 0;
        // Lines are written a group at a time, 64 KiB at most in memory.
        let pending: string[] = [];
        let size = 0;
        const flush = () =>
          Effect.tryPromise({
            try: () => {
              const text = pending.length ? pending.join("\n") + "\n" : "";
              pending = [];
              size = 0;
              return text ? w.write(text) : Promise.resolve();
            },
            catch: (e) =>
              new FileError({
                file: opts.out,
                message: e instanceof Error ? e.message : String(e),
              }),
          });
        yield* Stream.runForEach(recordLines(opts), (lines) => {
          n += lines.length;
          for (const l of lines) {
            pending.push(l);
            size += l.length;
          }
          return size >= 1 << 16 ? flush() : Effect.void;
        });
        yield* flush();
        yield* Effect.promise(() => w.commit());
        return n;
      }),
    (w, exit) => exit._tag === "Success" ? Effect.void : Effect.promise(() => w.abort()),
  );
