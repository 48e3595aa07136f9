/**
 * A SQuAD file as NDJSON records (`records data.json [--kind
 * question|paragraph]`), one a line, for shell pipes between stages. Question
 * records carry the id, the question text and the paragraph id (never the
 * context or the answers); paragraph records the id, title, index and
 * context.
 *
 * ```sh
 * deno task records question.json --kind question | deno task embed_question - question_emb/
 * ```
 *
 * @module
 */
import { Effect, Stream } from "effect";
import { FileError } from "./errors.ts";
import type { ParagraphRecord, QuestionRecord } from "./ndjson.ts";
import { openAtomicWriter } from "./source.ts";
import { squadArticles, type SquadReadError } from "./squad.ts";

/** Options of {@linkcode records}. */
export interface RecordsOptions {
  /** SQuAD file (`-` for stdin). */
  readonly input: string;
  /** Which records. */
  readonly kind: "question" | "paragraph";
  /** Where to write (`-` for stdout). */
  readonly out: string;
}

/**
 * Writes the NDJSON records of a SQuAD file; returns how many.
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
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
 * ```
 */
export const records = (opts: RecordsOptions): Effect.Effect<number, SquadReadError | FileError> =>
  Effect.acquireUseRelease(
    Effect.tryPromise({
      try: () => openAtomicWriter(opts.out),
      catch: (e) => new FileError({ file: opts.out, message: String(e) }),
    }),
    (w) =>
      Effect.gen(function* () {
        let n = 0;
        const questions = opts.kind === "question";
        yield* Stream.runForEach(
          squadArticles(opts.input, {
            context: questions ? "optional" : "required",
            qas: questions ? "required" : "optional",
          }),
          (a) =>
            Effect.tryPromise({
              try: () => {
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
                n += lines.length;
                return lines.length ? w.write(lines.join("\n") + "\n") : Promise.resolve();
              },
              catch: (e) => new FileError({ file: opts.out, message: String(e) }),
            }),
        );
        yield* Effect.promise(() => w.commit());
        return n;
      }),
    (w, exit) => exit._tag === "Success" ? Effect.void : Effect.promise(() => w.abort()),
  );
