/**
 * One entry to every question set and corpus: {@linkcode readQuestions}
 * streams the {@linkcode QaRecord}s of a file of any format of
 * `io/datasets/` and {@linkcode readCorpus} the {@linkcode CorpusPassage}s
 * of a corpus (DPR's passage TSV, JSONL) or of the paragraphs of a SQuAD,
 * XQuAD, MLQA or MRQA file. The format is detected from the file's first
 * bytes (`detect.ts`) unless named (`format`, as a `--format` value). Files
 * may be gzip (told by their magic bytes), and `-` is stdin. Records stream:
 * a file is never held whole.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { FileError, InputError, UsageError } from "../errors.ts";
import { type ByteSource, openSource } from "../source.ts";
import { dprPassages, dprQuestions } from "./dpr.ts";
import {
  CORPUS_ONLY_FORMATS,
  type DatasetFormat,
  PARAGRAPH_FORMATS,
  parseFormatName,
  sniffFormat,
} from "./detect.ts";
import { csvQuestions, jsonlQuestions } from "./generic.ts";
import { mrqaPassages, mrqaQuestions } from "./mrqa.ts";
import { openQuestions } from "./open.ts";
import { jsonlPassages } from "./passages.ts";
import { langFromFileName, squadPassages, squadQuestionRecords } from "./squad.ts";
import type {
  CorpusPassage,
  DatasetReadError,
  FieldMap,
  QaReadOptions,
  QaRecord,
} from "./types.ts";

/** Options of {@linkcode readQuestions} and {@linkcode readCorpus}. */
export interface DatasetOptions extends QaReadOptions {
  /** The format, or a `--format` name for it (see `parseFormatName`); default: detected. */
  readonly format?: DatasetFormat | string;
  /** The field map of a generic `jsonl`/`csv`/`tsv` file (required for those). */
  readonly fields?: FieldMap;
  /** The column separator of a `dpr` or generic `csv` file. */
  readonly delimiter?: string;
  /** Told the format the file is read as (named or detected), before its first record. */
  readonly onFormat?: (format: DatasetFormat) => void;
}

const asError = (file: string) => (e: unknown): DatasetReadError =>
  e instanceof InputError || e instanceof FileError || e instanceof UsageError
    ? e
    : new InputError({ file, where: "", message: e instanceof Error ? e.message : String(e) });

/** Opens `path` and settles its format: the named one, else the detected one. */
const openWithFormat = (
  path: string,
  format: string | undefined,
): Effect.Effect<[DatasetFormat, ByteSource], DatasetReadError> =>
  Effect.gen(function* () {
    const named = format === undefined
      ? undefined
      : yield* Effect.try({ try: () => parseFormatName(format), catch: asError(path) });
    const src = yield* openSource(path);
    if (named !== undefined) return [named, src] as [DatasetFormat, ByteSource];
    return yield* Effect.tryPromise({ try: () => sniffFormat(src), catch: asError(path) });
  });

/**
 * The questions of a question set of any format, as {@linkcode QaRecord}s
 * in file order. `trec` marks every answer a regular expression; `xquad`
 * and `mlqa` need a language (`lang`, else the file name's); generic
 * `jsonl`/`csv`/`tsv` need `fields`. Bad input fails with one
 * {@linkcode InputError} (file, line or record path, id, what is wrong), a
 * missing file with {@linkcode FileError}, bad options (an unknown format
 * name, a corpus format, no field map, no language) with
 * {@linkcode UsageError}.
 *
 * @example
 * ```ts
 * import { Effect, Stream } from "effect";
 * import { readQuestions } from "./read.ts";
 * const path = await Deno.makeTempFile({ suffix: ".qa.csv" });
 * await Deno.writeTextFile(path, "who wrote hamlet\t['Shakespeare']\nwhere is rome\t['Italy']\n");
 * const qs = await Effect.runPromise(Stream.runCollect(readQuestions(path)));
 * if (qs.map((q) => `${q.id}:${q.question}`).join() !== "0:who wrote hamlet,1:where is rome") {
 *   throw new Error();
 * }
 * ```
 */
export const readQuestions = (
  path: string,
  opts: DatasetOptions = {},
): Stream.Stream<QaRecord, DatasetReadError> =>
  Stream.unwrap(
    Effect.flatMap(
      openWithFormat(path, opts.format),
      ([format, src]): Effect.Effect<Stream.Stream<QaRecord, DatasetReadError>, UsageError> => {
        opts.onFormat?.(format);
        const usage = (m: string) => {
          void src.stream.cancel().catch(() => {});
          return Effect.fail(new UsageError(`${path}: ${m}`));
        };
        switch (format) {
          case "squad":
          case "squad2":
            return Effect.succeed(squadQuestionRecords(src, opts));
          case "xquad":
          case "mlqa": {
            const lang = opts.lang ?? langFromFileName(path);
            if (lang === undefined) {
              return usage(`a ${format} file needs a language code (--lang)`);
            }
            return Effect.succeed(squadQuestionRecords(src, { ...opts, lang }));
          }
          case "mrqa":
            return Effect.succeed(mrqaQuestions(src, opts));
          case "dpr":
          case "trec":
            return Effect.succeed(
              dprQuestions(src, { ...opts, regex: format === "trec" || opts.regex }),
            );
          case "open":
            return Effect.succeed(openQuestions(src, opts));
          case "jsonl":
          case "csv":
          case "tsv": {
            const fields = opts.fields;
            if (fields === undefined) {
              return usage(
                `a generic ${format} file needs a field map ({question, answers, id, ...})`,
              );
            }
            if (format === "jsonl") return Effect.succeed(jsonlQuestions(src, { ...opts, fields }));
            const delimiter = opts.delimiter ?? (format === "tsv" ? "\t" : undefined);
            return Effect.succeed(csvQuestions(src, { ...opts, fields, delimiter }));
          }
          case "dpr-passages":
          case "passages":
            return usage(`${format} is a corpus, not a question set`);
        }
      },
    ),
  );

/**
 * The passages of a corpus, as {@linkcode CorpusPassage}s in file order:
 * DPR's passage TSV (`dpr-passages`), a JSONL corpus (`passages`), or the
 * paragraphs of a SQuAD, XQuAD, MLQA or MRQA file. Errors as
 * {@linkcode readQuestions}'s (a question set without paragraphs is a
 * {@linkcode UsageError}).
 *
 * @example
 * ```ts
 * import { Effect, Stream } from "effect";
 * import { readCorpus } from "./read.ts";
 * const path = await Deno.makeTempFile({ suffix: ".tsv" });
 * await Deno.writeTextFile(path, "id\ttext\ttitle\n1\t\"Aaron was a prophet.\"\tAaron\n");
 * const [p] = await Effect.runPromise(Stream.runCollect(readCorpus(path)));
 * if (p.id !== "1" || p.text !== "Aaron was a prophet." || p.title !== "Aaron") throw new Error();
 * ```
 */
export const readCorpus = (
  path: string,
  opts: Pick<DatasetOptions, "format" | "maxLineBytes"> = {},
): Stream.Stream<CorpusPassage, DatasetReadError> =>
  Stream.unwrap(
    Effect.flatMap(
      openWithFormat(path, opts.format),
      (
        [format, src],
      ): Effect.Effect<Stream.Stream<CorpusPassage, DatasetReadError>, UsageError> => {
        switch (format) {
          case "dpr-passages":
            return Effect.succeed(dprPassages(src, opts));
          case "passages":
            return Effect.succeed(jsonlPassages(src, opts));
          case "mrqa":
            return Effect.succeed(mrqaPassages(src, opts));
          default:
            if (PARAGRAPH_FORMATS.includes(format)) return Effect.succeed(squadPassages(src));
            void src.stream.cancel().catch(() => {});
            return Effect.fail(
              new UsageError(
                `${path}: a ${format} file has no paragraphs to search; corpora: ${
                  [...CORPUS_ONLY_FORMATS, ...PARAGRAPH_FORMATS].join(", ")
                }`,
              ),
            );
        }
      },
    ),
  );
