/**
 * One entry to every question set and corpus: {@linkcode readQuestions}
 * streams the {@linkcode QaRecord}s of a file of any format of
 * `io/datasets/` and {@linkcode readCorpus} the {@linkcode CorpusPassage}s
 * of a corpus (DPR's passage TSV, JSONL) or of the paragraphs of a SQuAD,
 * XQuAD, MLQA or MRQA file. The format is detected from the file's first
 * bytes (`detect.ts`) unless named (`format`, as a `--format` value). Files
 * may be gzip (told by their magic bytes), and `-` is stdin. Records stream:
 * a file is never held whole. Each format's reader is its entry's in the
 * registry (`formats.ts`).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { FileError, InputError, UsageError } from "../errors.ts";
import { type ByteSource, openSource } from "../source.ts";
import { parseFormatName, settleFormat } from "./detect.ts";
import { allFormats, type DatasetFormat, type DatasetOptions, formatSpec } from "./formats.ts";
import type { CorpusPassage, DatasetReadError, QaRecord } from "./types.ts";

export type { DatasetOptions };
// Their homes are detect.ts and the registry; re-exported here, the entry of
// every reader, where their callers (search/, io/records.ts) import them.
export { isSquadShaped } from "./formats.ts";
export { settleFormat } from "./detect.ts";

const asError = (file: string) => (e: unknown): DatasetReadError =>
  e instanceof InputError || e instanceof FileError || e instanceof UsageError
    ? e
    : new InputError({ file, where: "", message: e instanceof Error ? e.message : String(e) });

/**
 * Opens `path` and settles its format: the one `format` names (a
 * `--format` value), else the one its first bytes tell (`detect.ts` `sniffFormat`).
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
 * await Deno.remove(path);
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

const openWithFormat = (path: string, format: string | undefined) => openDataset(path, format);

/**
 * The questions of `src`, read as `format` by the registry's reader
 * (`formats.ts`; see {@linkcode readQuestions}, which opens the file and
 * settles the format first; `path` names the file in errors).
 */
export const questionsOfSource = (
  path: string,
  format: DatasetFormat,
  src: ByteSource,
  opts: DatasetOptions = {},
): Effect.Effect<Stream.Stream<QaRecord, DatasetReadError>, UsageError> => {
  const reader = formatSpec(format)?.questions;
  if (reader === undefined) {
    void src.stream.cancel().catch(() => {});
    return Effect.fail(new UsageError(`${path}: ${format} is a corpus, not a question set`));
  }
  return reader(src, { path, format, opts });
};

/**
 * The passages of `src`, read as `format` by the registry's reader
 * (`formats.ts`; see {@linkcode readCorpus}, which opens the file and
 * settles the format first; `path` names the file in errors).
 */
export const passagesOfSource = (
  path: string,
  format: DatasetFormat,
  src: ByteSource,
  opts: Pick<DatasetOptions, "maxLineBytes"> = {},
): Effect.Effect<Stream.Stream<CorpusPassage, DatasetReadError>, UsageError> => {
  const reader = formatSpec(format)?.passages;
  if (reader === undefined) {
    void src.stream.cancel().catch(() => {});
    const corpora = allFormats().filter((f) => f.role === "corpus")
      .concat(allFormats().filter((f) => f.role !== "corpus" && f.passages !== undefined));
    return Effect.fail(
      new UsageError(
        `${path}: a ${format} file has no paragraphs to search; corpora: ${
          corpora.map((f) => f.name).join(", ")
        }`,
      ),
    );
  }
  return reader(src, { path, format, opts });
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
 * await Deno.remove(path);
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
 * await Deno.remove(path);
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
