/**
 * The PI-SQuAD split (`split data.json context.json question.json`). The
 * context file holds every paragraph without its `qas`; the question file
 * every paragraph without its `context` and every question without its
 * `answers`; all other fields stay, in order. Both are written streaming and
 * are byte-identical to the official tool's output (Python `json.dump`
 * defaults). Outputs appear atomically: a failure leaves neither file.
 *
 * Ids are checked as every dump stage checks them (`io/squad_ids.ts`): a
 * repeated paragraph id (two articles with one title) or question id is
 * bad input. With `uniqueIds` repeated titles are renamed by that module's
 * rule and both files carry the new titles, so any tool reading them (the
 * encoders, PIQA's own scripts) makes the same unique ids.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { type FileError, writeFailure } from "./errors.ts";
import type { PyObject } from "./pyjson.ts";
import { openAtomicWriter } from "./fs.ts";
import { type SquadArticle, type SquadReadError, squadRecords } from "./squad.ts";
import { contextArticle, omitKeys, questionArticle, SquadJsonWriter } from "./squad_writer.ts";

/** Options of {@linkcode split}. */
export interface SplitOptions {
  /** The SQuAD file (`.json`, `.json.gz` or `-`). */
  readonly data: string;
  /** Where the context-only file goes (`-` for stdout). */
  readonly context: string;
  /** Where the question-only file goes (`-` for stdout). */
  readonly question: string;
  /** Rename repeated titles (see `io/squad_ids.ts`) instead of refusing them. */
  readonly uniqueIds?: boolean;
  /** Called after each article with the paragraphs written so far. */
  readonly onProgress?: (paragraphs: number) => void;
  /**
   * The paragraph limit of the encoders, in characters (default
   * {@linkcode SPLIT_MAX_PARAGRAPH_CHARS}): a string of the file longer than
   * any such paragraph can be written (6 bytes a character, as `\uXXXX`)
   * is refused where it begins, before it is held.
   */
  readonly maxParagraphChars?: number;
}

/** Default of {@linkcode SplitOptions.maxParagraphChars}: the encoders' default limit. */
export const SPLIT_MAX_PARAGRAPH_CHARS = 100_000;

/** What {@linkcode split} wrote. */
export interface SplitResult {
  /** Articles written. */
  readonly articles: number;
  /** Paragraphs written. */
  readonly paragraphs: number;
  /** Questions written. */
  readonly questions: number;
}

/**
 * Splits a SQuAD file into PI-SQuAD context and question files.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { split } from "./squad_split.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/data.json`, JSON.stringify({
 *   version: "1.1",
 *   data: [{ title: "T", paragraphs: [{ context: "Paris is big.", qas: [
 *     { id: "q1", question: "Where?", answers: [{ text: "Paris", answer_start: 0 }] },
 *   ] }] }],
 * }));
 * const n = await Effect.runPromise(split({
 *   data: `${dir}/data.json`, context: `${dir}/c.json`, question: `${dir}/q.json`,
 * }));
 * if (n.articles !== 1 || n.paragraphs !== 1 || n.questions !== 1) throw new Error();
 * const c = await Deno.readTextFile(`${dir}/c.json`);
 * if (c !== '{"version": "1.1", "data": [{"title": "T", "paragraphs": [{"context": "Paris is big."}]}]}') {
 *   throw new Error(c);
 * }
 * const q = await Deno.readTextFile(`${dir}/q.json`);
 * if (q.includes("Paris")) throw new Error("the question file holds no context and no answers");
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export const split = (
  opts: SplitOptions,
): Effect.Effect<SplitResult, SquadReadError | FileError> =>
  Effect.acquireUseRelease(
    Effect.tryPromise({
      try: async () => {
        const c = await openAtomicWriter(opts.context);
        try {
          return [c, await openAtomicWriter(opts.question)] as const;
        } catch (e) {
          await c.abort();
          throw e;
        }
      },
      catch: (e) => writeFailure(`${opts.context}, ${opts.question}`, e, "cannot create output: "),
    }),
    ([cw, qw]) =>
      Effect.gen(function* () {
        // A renamed article is written with its new title.
        const renamed = (half: (a: SquadArticle) => PyObject) => (a: SquadArticle) =>
          half(
            a.title === a.raw.title
              ? a
              : { ...a, raw: omitKeys(a.raw, [], (k, v) => k === "title" ? a.title : v) },
          );
        const cOut = new SquadJsonWriter(cw, renamed(contextArticle));
        const qOut = new SquadJsonWriter(qw, renamed(questionArticle));
        const counts = { articles: 0, paragraphs: 0, questions: 0 };
        const write = (file: string, f: () => Promise<void>) =>
          Effect.tryPromise({
            try: f,
            catch: (e) => writeFailure(file, e),
          });
        const maxChars = opts.maxParagraphChars ?? SPLIT_MAX_PARAGRAPH_CHARS;
        yield* Stream.runForEach(
          squadRecords(opts.data, {
            context: "required",
            qas: "required",
            ids: opts.uniqueIds ? "unique" : "distinct",
            maxStringBytes: 6 * maxChars,
            maxStringWhy: ` (a paragraph of at most ${maxChars} characters: --max-paragraph-chars)`,
          }),
          (r) =>
            Effect.gen(function* () {
              if (r.kind === "article") {
                counts.articles++;
                counts.paragraphs += r.paragraphs.length;
                for (const p of r.paragraphs) counts.questions += p.questions.length;
                opts.onProgress?.(counts.paragraphs);
              }
              yield* write(opts.context, () => cOut.write(r));
              yield* write(opts.question, () => qOut.write(r));
            }),
        );
        yield* write(opts.context, () => cOut.end());
        yield* write(opts.question, () => qOut.end());
        yield* write(opts.context, () => cw.commit());
        yield* write(opts.question, () => qw.commit());
        return counts as SplitResult;
      }),
    ([cw, qw], exit) =>
      exit._tag === "Success"
        ? Effect.void
        : Effect.promise(() => Promise.all([cw.abort(), qw.abort()])),
  );
