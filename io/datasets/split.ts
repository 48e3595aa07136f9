/**
 * The split of a question set or corpus that is not a PI-SQuAD split: what
 * an encoder process may be granted, written by content, whatever the file
 * was named.
 *
 * - {@linkcode writeQuestionsOnly}: the questions of any question set
 *   (DPR's CSV/TSV, CuratedTREC, NQ-open/TriviaQA JSONL, generic
 *   JSONL/CSV/TSV, MRQA, SQuAD-shaped files) as NDJSON question records,
 *   `{"kind": "question", "id", "question"}` a line: no answer, no context,
 *   no other field of the file. The question encoder of an open set reads
 *   this file, never the set.
 * - {@linkcode writePassagesOnly}: the passages of any corpus (DPR's
 *   passage TSV, a JSONL corpus, the paragraphs of a SQuAD, XQuAD, MLQA or
 *   MRQA file) as a JSONL corpus (`passages.ts`), `{"id", "title",
 *   "text"}` a line: no question, no answer. The context
 *   encoder of a corpus reads this file, never the corpus (a SQuAD file
 *   given as its own corpus, a copy or a hard link of it, is split here
 *   like any other corpus).
 *
 * Both read the file with the readers every stage uses (`read.ts`: the
 * same ids, in the same order, as the plan's scan and the index), stream,
 * and write atomically (nothing at `out` unless the whole file was read).
 * The question records are those `embed_question` reads first
 * (`io/ndjson.ts`) and `records` writes; the passages a corpus every stage
 * reads (`embed_context`, `index --context`, `records`), with the same ids.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { FileError } from "../errors.ts";
import { openAtomicWriter } from "../fs.ts";
import type { QuestionRecord } from "../ndjson.ts";
import { type DatasetOptions, readCorpus, readQuestions } from "./read.ts";
import type { CorpusPassage, DatasetReadError } from "./types.ts";

/** Writes `lines` (one record each) to `out` atomically; returns how many. */
const writeLines = (
  out: string,
  lines: Stream.Stream<string, DatasetReadError>,
): Effect.Effect<number, DatasetReadError> =>
  Effect.acquireUseRelease(
    Effect.tryPromise({
      try: () => openAtomicWriter(out),
      catch: (e) =>
        new FileError({ file: out, message: e instanceof Error ? e.message : String(e) }),
    }),
    (w) =>
      Effect.gen(function* () {
        let n = 0;
        yield* Stream.runForEachArray(lines, (chunk) => {
          n += chunk.length;
          return Effect.tryPromise({
            try: () => w.write(chunk.join("\n") + "\n"),
            catch: (e) =>
              new FileError({ file: out, message: e instanceof Error ? e.message : String(e) }),
          });
        });
        yield* Effect.tryPromise({
          try: () => w.commit(),
          catch: (e) =>
            new FileError({ file: out, message: e instanceof Error ? e.message : String(e) }),
        });
        return n;
      }),
    (w, exit) => exit._tag === "Success" ? Effect.void : Effect.promise(() => w.abort()),
  );

/** Options of {@linkcode writeQuestionsOnly}. */
export interface QuestionsOnlyOptions
  extends Pick<DatasetOptions, "format" | "lang" | "fields" | "delimiter"> {
  /** The question set (any format of `read.ts`). */
  readonly data: string;
  /** The NDJSON question records to write. */
  readonly out: string;
}

/**
 * Writes the questions of a question set, ids and texts only, as NDJSON
 * question records; returns how many. A bad record fails as the set's
 * reader fails (one line), and nothing is written.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { writeQuestionsOnly } from "./split.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/nq.qa.csv`, "who built the bridge\t['Ada Lovelace']\n");
 * const n = await Effect.runPromise(
 *   writeQuestionsOnly({ data: `${dir}/nq.qa.csv`, out: `${dir}/q.ndjson` }),
 * );
 * const text = await Deno.readTextFile(`${dir}/q.ndjson`);
 * if (n !== 1 || text !== '{"kind":"question","id":"0","question":"who built the bridge"}\n') {
 *   throw new Error(text);
 * }
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export const writeQuestionsOnly = (
  opts: QuestionsOnlyOptions,
): Effect.Effect<number, DatasetReadError> =>
  writeLines(
    opts.out,
    Stream.map(
      readQuestions(opts.data, {
        ...(opts.format !== undefined ? { format: opts.format } : {}),
        ...(opts.lang !== undefined ? { lang: opts.lang } : {}),
        ...(opts.fields !== undefined ? { fields: opts.fields } : {}),
        ...(opts.delimiter !== undefined ? { delimiter: opts.delimiter } : {}),
      }),
      (q) => {
        const r: QuestionRecord = { kind: "question", id: q.id, question: q.question };
        return JSON.stringify(r);
      },
    ),
  );

/** Options of {@linkcode writePassagesOnly}. */
export interface PassagesOnlyOptions {
  /** The corpus (any corpus format of `read.ts`, or a file with paragraphs). */
  readonly corpus: string;
  /** The JSONL corpus to write. */
  readonly out: string;
  /** The corpus's format (a `--format` name); default: detected from its first bytes. */
  readonly format?: string;
}

/**
 * Writes the passages of a corpus, ids, titles and texts only, as a JSONL
 * corpus; returns how many. A SQuAD or MRQA file loses its questions and
 * answers here.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { writePassagesOnly } from "./split.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/d.json`, JSON.stringify({ version: "1.1", data: [{
 *   title: "Paris", paragraphs: [{ context: "Paris is big.", qas: [{ id: "q1",
 *     question: "What is big?", answers: [{ text: "Paris", answer_start: 0 }] }] }] }] }));
 * const n = await Effect.runPromise(writePassagesOnly({ corpus: `${dir}/d.json`, out: `${dir}/p.jsonl` }));
 * const text = await Deno.readTextFile(`${dir}/p.jsonl`);
 * const want = '{"id":"Paris_0","title":"Paris","text":"Paris is big."}\n';
 * if (n !== 1 || text !== want) throw new Error(text);
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export const writePassagesOnly = (
  opts: PassagesOnlyOptions,
): Effect.Effect<number, DatasetReadError> =>
  writeLines(
    opts.out,
    Stream.map(
      readCorpus(opts.corpus, opts.format !== undefined ? { format: opts.format } : {}),
      (p) => {
        const r: CorpusPassage = { id: p.id, title: p.title, text: p.text };
        return JSON.stringify(r);
      },
    ),
  );
