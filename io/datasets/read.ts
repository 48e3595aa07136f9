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
  formatOfHead,
  PARAGRAPH_FORMATS,
  parseFormatName,
  readHead,
  sniffFormat,
} from "./detect.ts";
import { headText } from "./detect_json.ts";
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

/**
 * The formats read as SQuAD files (a JSON document with `data`): SQuAD
 * v1.1 and v2.0, XQuAD and MLQA. The stages keep their SQuAD reader (PI-SQuAD
 * paragraph ids `title_index`, `--unique-ids`) for these, and read every
 * other format with {@linkcode readQuestions} / {@linkcode readCorpus}.
 *
 * @example
 * ```ts
 * import { isSquadShaped } from "./read.ts";
 * if (!isSquadShaped("xquad") || isSquadShaped("dpr-passages")) throw new Error();
 * ```
 */
export function isSquadShaped(format: DatasetFormat): boolean {
  return format === "squad" || format === "squad2" || format === "xquad" || format === "mlqa";
}

/**
 * Opens `path` and settles its format: the one `format` names (a
 * `--format` value), else the one its first bytes tell ({@linkcode sniffFormat}).
 * Returns the format and the source with those bytes put back, so stdin
 * (`-`) can be told and still read whole. With `squadFallback`, an input
 * whose start does not tell (or an empty one), and one detected as a
 * generic `jsonl`/`csv`/`tsv` file (which needs a field map, so it must be
 * named), is `"squad"`, so the SQuAD reader names what is wrong with it, as
 * the stages did before they read other formats.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { openDataset } from "./read.ts";
 * const path = await Deno.makeTempFile({ suffix: ".tsv" });
 * await Deno.writeTextFile(path, "id\ttext\ttitle\n1\tA text.\tA\n");
 * const [format, src] = await Effect.runPromise(openDataset(path));
 * if (format !== "dpr-passages" || !(await new Response(src.stream).text()).startsWith("id")) {
 *   throw new Error(format);
 * }
 * ```
 */
export const openDataset = (
  path: string,
  format?: string,
  squadFallback = false,
): Effect.Effect<[DatasetFormat, ByteSource], DatasetReadError> =>
  Effect.gen(function* () {
    // A bad format name is told before the file is opened.
    const named = format === undefined
      ? undefined
      : yield* Effect.try({ try: () => parseFormatName(format), catch: asError(path) });
    const src = yield* openSource(path);
    return yield* settleFormat(src, named, squadFallback);
  });

/**
 * {@linkcode openDataset} on a source already open (its first bytes are
 * put back): the format `format` names, else the detected one (with
 * `squadFallback`, `"squad"` when the start does not tell).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { settleFormat } from "./read.ts";
 * const src = { name: "-", stream: new Blob(["not a dataset"]).stream() };
 * const [format] = await Effect.runPromise(settleFormat(src, undefined, true));
 * if (format !== "squad") throw new Error(format);
 * ```
 */
export const settleFormat = (
  src: ByteSource,
  format?: string,
  squadFallback = false,
): Effect.Effect<[DatasetFormat, ByteSource], DatasetReadError> =>
  Effect.gen(function* () {
    const named = format === undefined
      ? undefined
      : yield* Effect.try({ try: () => parseFormatName(format), catch: asError(src.name) });
    if (named !== undefined) return [named, src] as [DatasetFormat, ByteSource];
    if (!squadFallback) {
      return yield* Effect.tryPromise({ try: () => sniffFormat(src), catch: asError(src.name) });
    }
    return yield* Effect.tryPromise({
      try: async (): Promise<[DatasetFormat, ByteSource]> => {
        const [head, rest] = await readHead(src);
        const stream = rest.stream;
        const f = formatOfHead(head, src.name);
        // A generic file needs a field map the stages do not take: the SQuAD reader names it.
        const told = f === undefined || f === "jsonl" || f === "csv" || f === "tsv" ? "squad" : f;
        return [told, { name: src.name, stream }];
      },
      catch: asError(src.name),
    });
  });

const openWithFormat = (path: string, format: string | undefined) => openDataset(path, format);

/**
 * The questions of `src`, read as `format` (see {@linkcode readQuestions},
 * which opens the file and settles the format first; `path` names the file
 * in errors).
 */
export const questionsOfSource = (
  path: string,
  format: DatasetFormat,
  src: ByteSource,
  opts: DatasetOptions = {},
): Effect.Effect<Stream.Stream<QaRecord, DatasetReadError>, UsageError> => {
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
      // Every open-domain layout: NQ-open/TriviaQA JSONL, and DPR's question CSV/TSV (its
      // answers plain strings: `trec` reads CuratedTREC's as patterns).
      return Effect.succeed(Stream.unwrap(
        Effect.map(
          Effect.tryPromise({ try: () => readHead(src), catch: asError(path) }),
          ([head, rest]) => {
            const text = headText(head);
            const dpr = text !== "" && !text.startsWith("{") &&
              (formatOfHead(head, path) === "dpr" || formatOfHead(head, path) === "trec");
            return dpr ? dprQuestions(rest, opts) : openQuestions(rest, opts);
          },
        ),
      ));
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
};

/**
 * The passages of `src`, read as `format` (see {@linkcode readCorpus},
 * which opens the file and settles the format first; `path` names the file
 * in errors).
 */
export const passagesOfSource = (
  path: string,
  format: DatasetFormat,
  src: ByteSource,
  opts: Pick<DatasetOptions, "maxLineBytes"> = {},
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
};

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
 * import * as Effect from "effect/Effect";
 * import * as Stream from "effect/Stream";
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
    Effect.flatMap(openWithFormat(path, opts.format), ([format, src]) => {
      opts.onFormat?.(format);
      return questionsOfSource(path, format, src, opts);
    }),
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
 * import * as Effect from "effect/Effect";
 * import * as Stream from "effect/Stream";
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
      ([format, src]) => passagesOfSource(path, format, src, opts),
    ),
  );
