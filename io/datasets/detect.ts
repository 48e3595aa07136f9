/**
 * Which dataset or corpus format a file is, from its first bytes (at most
 * {@linkcode HEAD_BYTES} of the decompressed input: `.gz` is told by its
 * magic bytes) and its name, and the format names a `--format` option
 * takes ({@linkcode parseFormatName}).
 *
 * The rules, in order: a first line that is a JSON object with `header` is
 * MRQA; with `data` or `version` (or a head that opens so, for a SQuAD file
 * on one huge line or pretty-printed) SQuAD: `squad2` when the head holds
 * a `"version": "v2..."` or an `"is_impossible"`, `xquad`/`mlqa` when the
 * name is XQuAD's or MLQA's, else `squad`; with `context` and `qas` MRQA
 * (without its header, which its reader then reports); with `question` and
 * no `context` `open` (NQ-open, EfficientQA, TriviaQA-open); with `text`
 * or `contents` and no `question` a JSONL corpus (`passages`); any other
 * object generic `jsonl` (it needs a field map). A text line `id	text	title`
 * is DPR's passage TSV; `question<TAB>[...]` with a Python list is a DPR
 * question file (`trec` when the file name says `trec`: CuratedTREC's
 * answers are regular expressions); another line with a tab is generic
 * `tsv`, with a comma generic `csv`. Anything else cannot be told: name the
 * format. A format registered in `formats.ts` with a `sniff` is asked
 * first. (`squad` and `squad2` files are read alike, `is_impossible` kept
 * either way; the name tells which official rules score them.)
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { FileError, InputError, UsageError } from "../errors.ts";
import { type ByteSource, openSource, peekBytes, peekUntil } from "../source.ts";
import { CsvRowParser } from "./csv.ts";
import { parsePyStringList } from "../pyliteral.ts";
import {
  baseName,
  formatOfJsonHead,
  HEAD_BYTES,
  headText,
  MAX_LINE_BYTES,
  opensJsonDocument,
} from "./detect_json.ts";
import {
  allFormats,
  BUILTIN_FORMATS,
  type DatasetFormat,
  formatSpec,
  lookupFormat,
} from "./formats.ts";
import type { DatasetReadError } from "./types.ts";

export type { DatasetFormat };

/** The built-in question-set formats. */
export const QUESTION_FORMATS: readonly DatasetFormat[] = BUILTIN_FORMATS
  .filter((f) => f.role === "questions").map((f) => f.name);

/** The built-in formats of corpora only (question sets with paragraphs are corpora too). */
export const CORPUS_ONLY_FORMATS: readonly DatasetFormat[] = BUILTIN_FORMATS
  .filter((f) => f.role === "corpus").map((f) => f.name);

/** The built-in formats whose files also give a corpus (their paragraphs). */
export const PARAGRAPH_FORMATS: readonly DatasetFormat[] = BUILTIN_FORMATS
  .filter((f) => f.paragraphs === true).map((f) => f.name);

/**
 * The format a `--format` value names (a format or one of its aliases:
 * `nq-open`, `efficientqa`, `triviaqa-open` for `open`, `curatedtrec` for
 * `trec`, `psgs_w100` for `dpr-passages`, ...); case does not matter.
 * Throws {@linkcode UsageError} listing the formats for any other name.
 *
 * @example
 * ```ts
 * import { parseFormatName } from "./detect.ts";
 * if (parseFormatName("NQ-open") !== "open" || parseFormatName("squad2") !== "squad2") {
 *   throw new Error();
 * }
 * let msg = "";
 * try {
 *   parseFormatName("hotpot");
 * } catch (e) {
 *   msg = (e as Error).message;
 * }
 * if (!msg.startsWith('unknown dataset format "hotpot"; the formats: squad, squad2,')) {
 *   throw new Error(msg);
 * }
 * ```
 */
export function parseFormatName(name: string): DatasetFormat {
  const found = lookupFormat(name);
  if (found !== undefined) return found.name;
  const all = allFormats();
  throw new UsageError(
    `unknown dataset format ${JSON.stringify(name)}; the formats: ${
      all.map((f) => f.name).join(", ")
    } (aliases: ${all.flatMap((f) => f.aliases ?? []).join(", ")})`,
  );
}

export { HEAD_BYTES };

/**
 * The format of a file whose first bytes are `head` (decoded) and whose
 * name is `name`, or `undefined` when the head does not tell.
 *
 * @example
 * ```ts
 * import { formatOfHead } from "./detect.ts";
 * if (formatOfHead('{"header": {"dataset": "SQuAD"}}\n', "a.jsonl") !== "mrqa") throw new Error();
 * if (formatOfHead('{"version": "v2.0", "data": [', "dev.json") !== "squad2") throw new Error();
 * if (formatOfHead("who is\t['x']\n", "curatedtrec-test.qa.csv") !== "trec") throw new Error();
 * if (formatOfHead("id\ttext\ttitle\n1\tA\tB\n", "psgs.tsv") !== "dpr-passages") throw new Error();
 * if (formatOfHead('{"question": "q", "answer": ["a"]}', "nq.jsonl") !== "open") throw new Error();
 * ```
 */
export function formatOfHead(head: string, name: string): DatasetFormat | undefined {
  const text = headText(head);
  for (const f of allFormats()) if (f.sniff?.(text, name)) return f.name;
  if (text.startsWith("{")) return formatOfJsonHead(text, name);
  // The first line that is not blank, as written: a tab that begins it is a column (DPR's
  // question left empty), not white space to skip.
  const lines = head.replace(/^\uFEFF/, "").split("\n");
  const at = lines.findIndex((l) => l.trim() !== "");
  const first = (at < 0 ? "" : lines[at]).replace(/\r$/, "");
  // A JSON array (WebQuestions' own `*.examples.*.json`, a list of records): no format read here.
  if (text.startsWith("[") && !first.includes("\t")) return undefined;
  if (first === "id\ttext\ttitle") return "dpr-passages";
  if (first.includes("\t")) {
    const row = new CsvRowParser(name, "\t", MAX_LINE_BYTES).push({
      line: 1,
      offset: 0,
      bytes: first.length,
      text: first,
    });
    const qaName = /\.qa\.[ct]sv(\.gz)?$/i.test(baseName(name));
    if (qaName && row !== undefined && row.fields.length !== 2) {
      // DPR's file by its name, its first line broken: its reader names the line.
      return /trec/i.test(baseName(name)) ? "trec" : "dpr";
    }
    if (row !== undefined && row.fields.length === 2 && row.fields[1].trim().startsWith("[")) {
      // A question and a bracketed list: DPR's layout, even when the list is bad (its reader
      // then names the line), or a file name saying so (`.qa.csv`, `.qa.tsv`).
      let list = true;
      try {
        parsePyStringList(row.fields[1]);
      } catch {
        list = false;
      }
      if (list || qaName) {
        return /trec/i.test(baseName(name)) ? "trec" : "dpr";
      }
    }
    return "tsv";
  }
  if (first.includes(",")) return "csv";
  return undefined;
}

/**
 * The text the detector reads of `src` (its first {@linkcode HEAD_BYTES},
 * and on to the end of the first line when they do not hold it and do not
 * open a JSON document), and `src` with those bytes put back. A first line
 * longer than {@linkcode MAX_LINE_BYTES} is refused as the line readers
 * refuse it (`line 1: line longer than 16777216 bytes`), read no further.
 *
 * @example
 * ```ts
 * import { readHead } from "./detect.ts";
 * const line = JSON.stringify({ question: "q".repeat(100_000), answer: ["a"] }) + "\n";
 * const [head, src] = await readHead({ name: "-", stream: new Blob([line]).stream() });
 * if (head !== line || (await new Response(src.stream).text()) !== line) throw new Error();
 * ```
 */
export async function readHead(src: ByteSource): Promise<[string, ByteSource]> {
  const dec = (b: Uint8Array) => new TextDecoder().decode(b);
  const limit = MAX_LINE_BYTES + 4; // a byte-order mark and a `\r` do not count
  let [bytes, stream] = await peekBytes(src.stream.getReader(), HEAD_BYTES);
  // A JSON document (SQuAD, MRQA's header) may be one long line: its strings are bounded.
  if (opensJsonDocument(headText(dec(bytes.subarray(0, HEAD_BYTES))))) {
    return [dec(bytes.subarray(0, HEAD_BYTES)), { ...src, stream }];
  }
  if (bytes.byteLength >= HEAD_BYTES && !bytes.includes(0x0a)) {
    [bytes, stream] = await peekUntil(
      stream.getReader(),
      (have, chunk) => chunk.includes(0x0a) || have > limit,
    );
  }
  const nl = bytes.indexOf(0x0a);
  if (nl < 0 ? bytes.byteLength > limit : nl > limit) {
    await stream.cancel().catch(() => {});
    throw new InputError({
      file: src.name,
      where: "line 1",
      message: `line longer than ${MAX_LINE_BYTES} bytes`,
    });
  }
  const end = nl < 0 ? bytes.byteLength : Math.max(Math.min(HEAD_BYTES, bytes.byteLength), nl + 1);
  return [dec(bytes.subarray(0, end)), { ...src, stream }];
}

/**
 * Why a file whose head is `head` is not SQuAD JSON, naming the format its
 * start reads as (for a message: `its start reads as a dpr file, not SQuAD
 * JSON`), or `undefined` when it may be SQuAD (it opens a JSON object).
 *
 * @example
 * ```ts
 * import { notSquadHint } from "./detect.ts";
 * const hint = notSquadHint("who wrote hamlet\t['Shakespeare']\n", "nq-test.qa.csv");
 * if (hint !== "its start reads as a dpr file, not SQuAD JSON") {
 *   throw new Error(hint);
 * }
 * if (notSquadHint('{"data": []}', "d.json") !== undefined) throw new Error();
 * ```
 */
export function notSquadHint(head: string, name: string): string | undefined {
  const text = headText(head);
  if (text === "" || text.startsWith("{")) return undefined;
  let f: DatasetFormat | undefined;
  try {
    f = formatOfHead(head, name);
  } catch {
    f = undefined;
  }
  return f === undefined
    ? "not SQuAD JSON, and its start tells no other format"
    : `its start reads as a${/^[aeiou]/.test(f) ? "n" : ""} ${f} file, not SQuAD JSON`;
}

/**
 * Looks at the first bytes of `src` and tells its format; returns the
 * source with those bytes put back, so it can still be read whole (stdin
 * too). An empty input, or one whose start does not tell, fails with
 * {@linkcode InputError}.
 *
 * @example
 * ```ts
 * import { sniffFormat } from "./detect.ts";
 * const text = "who wrote hamlet\t['Shakespeare']\n";
 * const [format, src] = await sniffFormat({ name: "-", stream: new Blob([text]).stream() });
 * if (format !== "dpr" || (await new Response(src.stream).text()) !== text) throw new Error();
 * ```
 */
export async function sniffFormat(src: ByteSource): Promise<[DatasetFormat, ByteSource]> {
  const [head, rest] = await readHead(src);
  const stream = rest.stream;
  if (head.trim() === "" || head.replace(/^\uFEFF/, "").trim() === "") {
    await stream.cancel().catch(() => {});
    throw new InputError({ file: src.name, where: "", message: "empty file" });
  }
  const format = formatOfHead(head, src.name);
  if (format === undefined) {
    await stream.cancel().catch(() => {});
    throw new InputError({
      file: src.name,
      where: "line 1",
      message: "cannot tell the dataset format from the start of the file; name it (--format)",
    });
  }
  return [format, rest];
}

/**
 * The format of the file at `path` (`-` is stdin, which this consumes: use
 * {@linkcode sniffFormat} to read it afterwards), from its first bytes
 * only.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { detectFormat } from "./detect.ts";
 * const path = await Deno.makeTempFile({ suffix: ".jsonl.gz" });
 * const gz = new Blob(['{"question": "q?", "answer": ["a"]}\n']).stream()
 *   .pipeThrough(new CompressionStream("gzip"));
 * await Deno.writeFile(path, gz);
 * if (await Effect.runPromise(detectFormat(path)) !== "open") throw new Error();
 * await Deno.remove(path);
 * ```
 */
export const detectFormat = (path: string): Effect.Effect<DatasetFormat, InputError | FileError> =>
  Effect.flatMap(openSource(path), (src) =>
    Effect.tryPromise({
      try: async () => {
        const [format, rest] = await sniffFormat(src);
        await rest.stream.cancel().catch(() => {});
        return format;
      },
      catch: (e) =>
        e instanceof InputError || e instanceof FileError ? e : new InputError({
          file: path,
          where: "",
          message: e instanceof Error ? e.message : String(e),
        }),
    }));

const asError = (file: string) => (e: unknown): DatasetReadError =>
  e instanceof InputError || e instanceof FileError || e instanceof UsageError
    ? e
    : new InputError({ file, where: "", message: e instanceof Error ? e.message : String(e) });

/**
 * `read.ts` `openDataset` on a source already open (its first bytes are
 * put back): the format `format` names, else the detected one (with
 * `squadFallback`, `"squad"` when the start does not tell).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { settleFormat } from "./detect.ts";
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
        const told = f === undefined || formatSpec(f)?.fields === true ? "squad" : f;
        return [told, { ...src, stream }];
      },
      catch: asError(src.name),
    });
  });
