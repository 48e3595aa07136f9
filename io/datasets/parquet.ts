/**
 * Hugging Face Hub Parquet splits as the text formats the readers already
 * read: a `.parquet` file, or a folder of Parquet shards (the Hub's
 * `validation-00000-of-00002.parquet`, ..., read in name order as one
 * split), is opened by `openSource` as a byte stream of the equivalent
 * text, written one row group at a time ({@linkcode parquetSource}). So
 * every reader, detector and stage reads it unchanged, and the scores,
 * dumps and splits are those of the JSON.
 *
 * The kind is told from the schema's top-level columns
 * ({@linkcode parquetKind}):
 *
 * - `squad` (`squad`, `squad_v2`, `xquad`: `id, title?, context, question,
 *   answers {text[], answer_start[]}`): a SQuAD JSON document, consecutive
 *   rows of one title grouped into an article and of one context into a
 *   paragraph, as the JSON has them. It is v2.0 (`"version": "v2.0"`, and
 *   `is_impossible` on every question) when the path says
 *   `v2`/`squad2`, or when any question has no answer; else
 *   `"version": "1.1"` (last, where v1.1's files have it). (The Hub's `squad_v2` has no `plausible_answers`.)
 * - `mrqa` (`subset, context, qid, question, answers, detected_answers`):
 *   MRQA JSONL, a header line, then one line per run of rows of one context.
 * - `trivia_qa` (`question, question_id, answer {value, aliases, ...}`),
 *   `nq_open` (`question, answer[]`), `web_questions` (`question,
 *   answers[]`): open-domain JSONL (only those columns are read: TriviaQA's
 *   `entity_pages` and `search_results` are never decoded).
 * - `passages` (`id, title?, text`, no `question`): a JSONL corpus.
 * - any other schema: one JSON line per row, every column (a generic
 *   `jsonl` set: it needs a field map, as `reader.fields` or `--fields`).
 *
 * A row whose key column (an id, a question, a context, answers, a passage's
 * text) is null fails with one line naming the file, the row (from 0) and
 * the column; so does a string longer than the readers
 * read ({@linkcode MAX_LINE_BYTES}, 16 MiB, as JSON text: a SQuAD string,
 * or a JSONL kind's whole line), which the reader of the text would
 * otherwise name by a byte or line of the text, not by the row. For the kinds
 * written a JSON line a row (open-domain, passages, generic), and MRQA's (a
 * line a run of rows of one context), the source also says where each line
 * came from (`lineAt`), so a record the line readers refuse (an answer list
 * holding a null, a repeated id) is named by its shard and row (or rows) as
 * well (`lineRecords` of `lines.ts`).
 *
 * @module
 */
import { InputError } from "../errors.ts";
import type { ByteSource } from "../source.ts";
import { MAX_LINE_BYTES } from "./bounds.ts";
import { openParquet, type ParquetFile, readRowGroup } from "./parquet_file.ts";
import { parquetFiles } from "./parquet_path.ts";

/** The kinds of Hub Parquet schemas read. */
export type ParquetKind =
  | "squad"
  | "mrqa"
  | "trivia_qa"
  | "nq_open"
  | "web_questions"
  | "passages"
  | "generic";

/**
 * The kind of a Parquet split from its top-level column names.
 *
 * @example
 * ```ts
 * import { parquetKind } from "./parquet.ts";
 * if (parquetKind(["id", "title", "context", "question", "answers"]) !== "squad") throw new Error();
 * if (parquetKind(["question", "answer"]) !== "nq_open") throw new Error();
 * if (parquetKind(["id", "title", "text"]) !== "passages") throw new Error();
 * if (parquetKind(["x", "y"]) !== "generic") throw new Error();
 * ```
 */
export function parquetKind(columns: readonly string[]): ParquetKind {
  const has = (...names: string[]) => names.every((n) => columns.includes(n));
  if (has("qid", "question", "context", "answers", "detected_answers")) return "mrqa";
  if (has("id", "context", "question", "answers")) return "squad";
  if (has("question", "question_id", "answer")) return "trivia_qa";
  if (has("question", "answer")) return "nq_open";
  if (has("question", "answers") && !columns.includes("context")) return "web_questions";
  if (has("id", "text") && !columns.includes("question")) return "passages";
  return "generic";
}

const KIND_COLUMNS: Record<Exclude<ParquetKind, "generic">, readonly string[]> = {
  squad: ["id", "title", "context", "question", "answers"],
  mrqa: ["subset", "context", "qid", "question", "answers", "detected_answers"],
  trivia_qa: ["question_id", "question", "answer"],
  nq_open: ["question", "answer"],
  web_questions: ["question", "answers"],
  passages: ["id", "title", "text"],
};

function jsonOf(v: unknown): string {
  return JSON.stringify(
    v,
    (_k, x) =>
      typeof x === "bigint"
        ? (x >= BigInt(Number.MIN_SAFE_INTEGER) && x <= BigInt(Number.MAX_SAFE_INTEGER)
          ? Number(x)
          : x.toString())
        : x,
  );
}

/** The kinds written one JSON line a row (so a line of the text names a row). */
const LINE_KINDS: ReadonlySet<ParquetKind> = new Set([
  "trivia_qa",
  "nq_open",
  "web_questions",
  "passages",
  "generic",
]);

/** The text of one kind: a head, each row (given its position), and an end. */
interface Writer {
  head(): string;
  row(r: Record<string, unknown>, at: RowAt): string;
  end(): string;
}

/** Where a row is: its file, its row number from 0, across the shards. */
interface RowAt {
  readonly file: string;
  readonly row: number;
}

function need(r: Record<string, unknown>, col: string, at: RowAt, type: "string" | "list") {
  const v = r[col];
  const ok = type === "string" ? typeof v === "string" : Array.isArray(v);
  if (!ok) {
    throw new InputError({
      file: at.file,
      where: `row ${at.row}`,
      message: `column ${JSON.stringify(col)} is ${
        v === null || v === undefined ? "null" : `not a ${type}`
      }`,
    });
  }
  return v;
}

/** The bytes of `s` as JSON text between its quotes, as the readers count a string's length. */
function jsonTextBytes(s: string): number {
  return new TextEncoder().encode(JSON.stringify(s)).byteLength - 2;
}

/**
 * The first string of `v` (column `name`'s value), as a path like
 * `answers.text[0]`, longer than {@linkcode MAX_LINE_BYTES} as JSON text,
 * with its length; `undefined` when there is none. A string of at most
 * `MAX_LINE_BYTES / 6` characters is never measured (JSON writes a
 * character in at most 6 bytes).
 */
function longString(v: unknown, name: string): { at: string; bytes: number } | undefined {
  if (typeof v === "string") {
    if (v.length <= MAX_LINE_BYTES / 6) return undefined;
    const bytes = jsonTextBytes(v);
    return bytes > MAX_LINE_BYTES ? { at: name, bytes } : undefined;
  }
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const r = longString(v[i], `${name}[${i}]`);
      if (r !== undefined) return r;
    }
  } else if (typeof v === "object" && v !== null && !ArrayBuffer.isView(v)) {
    for (const [k, x] of Object.entries(v)) {
      const r = longString(x, `${name}.${k}`);
      if (r !== undefined) return r;
    }
  }
  return undefined;
}

/**
 * Refuses a row the reader of its text would refuse for its length, naming
 * the row: a SQuAD row with a string longer than {@linkcode MAX_LINE_BYTES}
 * as JSON text, or a JSONL row (`line`, its text without the newline)
 * longer than that in bytes. (MRQA's lines, one a run of rows of one
 * context, are left to the line reader.)
 */
function checkLength(r: Record<string, unknown>, at: RowAt, kind: ParquetKind, line: string) {
  if (kind === "squad") {
    for (const [c, v] of Object.entries(r)) {
      const long = longString(v, c);
      if (long !== undefined) {
        throw new InputError({
          file: at.file,
          where: `row ${at.row}`,
          message: `column ${JSON.stringify(long.at)} is a string of ${long.bytes} bytes as JSON ` +
            `text, longer than ${MAX_LINE_BYTES} (phraseval reads no string, as no line, ` +
            "longer than 16 MiB)",
        });
      }
    }
  } else if (kind !== "mrqa" && line.length > MAX_LINE_BYTES / 3) {
    const bytes = new TextEncoder().encode(line).byteLength - (line.endsWith("\n") ? 1 : 0);
    if (bytes > MAX_LINE_BYTES) {
      throw new InputError({
        file: at.file,
        where: `row ${at.row}`,
        message: `${bytes} bytes as a JSON line, longer than ${MAX_LINE_BYTES} ` +
          "(phraseval reads no line longer than 16 MiB)",
      });
    }
  }
}

/** Refuses a row whose column `col` (a key: the record is nothing without it) is null. */
function present(r: Record<string, unknown>, col: string, at: RowAt): void {
  if (r[col] === null || r[col] === undefined) {
    throw new InputError({
      file: at.file,
      where: `row ${at.row}`,
      message: `column ${JSON.stringify(col)} is null`,
    });
  }
}

function squadWriter(v2: boolean): Writer {
  let title: string | undefined;
  let context: string | undefined;
  let firstArticle = true;
  let firstQa = true;
  return {
    // Where the files put it: first in SQuAD v2.0's, last in v1.1's.
    head: () => (v2 ? `{"version": "v2.0", "data": [` : `{"data": [`),
    row(r, at) {
      const t = r.title === undefined || r.title === null ? "" : need(r, "title", at, "string");
      const c = need(r, "context", at, "string") as string;
      present(r, "id", at);
      present(r, "question", at);
      const answers = r.answers as { text?: unknown; answer_start?: unknown } | null;
      const texts = answers?.text;
      const starts = answers?.answer_start;
      if (!Array.isArray(texts) || !Array.isArray(starts) || texts.length !== starts.length) {
        throw new InputError({
          file: at.file,
          where: `row ${at.row}`,
          message: 'column "answers" is not {text[], answer_start[]} of one length',
        });
      }
      let out = "";
      if (t !== title) {
        if (title !== undefined) out += "]}]}";
        out += `${firstArticle ? "" : ", "}{"title": ${jsonOf(t)}, "paragraphs": [`;
        firstArticle = false;
        title = t as string;
        context = undefined;
      }
      if (c !== context) {
        if (context !== undefined) out += "]}, ";
        out += `{"context": ${jsonOf(c)}, "qas": [`;
        context = c;
        firstQa = true;
      }
      const list = texts.map((text, i) =>
        `{"answer_start": ${jsonOf(starts[i])}, "text": ${jsonOf(text)}}`
      );
      out += `${firstQa ? "" : ", "}{"answers": [${list.join(", ")}], "question": ${
        jsonOf(r.question)
      }, "id": ${jsonOf(r.id)}${v2 ? `, "is_impossible": ${texts.length === 0}` : ""}}`;
      firstQa = false;
      return out;
    },
    end: () => `${title === undefined ? "]" : "]}]}]"}${v2 ? "}" : `, "version": "1.1"}`}`,
  };
}

function mrqaWriter(): Writer {
  let context: string | undefined;
  let subset: unknown;
  let qas: string[] = [];
  let headDone = false;
  const flush = () => {
    if (context === undefined) return "";
    const line = `{"context": ${jsonOf(context)}, "qas": [${qas.join(", ")}]}\n`;
    qas = [];
    return line;
  };
  return {
    head: () => "",
    row(r, at) {
      const c = need(r, "context", at, "string") as string;
      present(r, "qid", at);
      present(r, "question", at);
      let out = "";
      if (!headDone) {
        out += `${jsonOf({ header: { dataset: r.subset ?? "", split: "parquet" } })}\n`;
        headDone = true;
      }
      if (c !== context || r.subset !== subset) {
        out += flush();
        context = c;
        subset = r.subset;
      }
      const d = (r.detected_answers ?? {}) as { text?: unknown; char_spans?: unknown };
      const texts = Array.isArray(d.text) ? d.text : [];
      const spans = Array.isArray(d.char_spans) ? d.char_spans : [];
      const detected = texts.map((text, i) => {
        const s = (spans[i] ?? {}) as { start?: unknown[]; end?: unknown[] };
        const starts = Array.isArray(s.start) ? s.start : [];
        const ends = Array.isArray(s.end) ? s.end : [];
        return { text, char_spans: starts.map((x, k) => [x, ends[k]]) };
      });
      qas.push(jsonOf({
        qid: r.qid,
        question: r.question,
        answers: need(r, "answers", at, "list"),
        detected_answers: detected,
      }));
      return out;
    },
    end: () => (headDone ? flush() : `{"header": {"dataset": "", "split": "parquet"}}\n`),
  };
}

function linesWriter(
  line: (r: Record<string, unknown>, at: RowAt) => unknown,
  keys: readonly string[] = [],
): Writer {
  return {
    head: () => "",
    row: (r, at) => {
      for (const k of keys) present(r, k, at);
      return `${jsonOf(line(r, at))}\n`;
    },
    end: () => "",
  };
}

function writerOf(kind: ParquetKind, v2: boolean): Writer {
  switch (kind) {
    case "squad":
      return squadWriter(v2);
    case "mrqa":
      return mrqaWriter();
    case "trivia_qa":
      return linesWriter((r) => {
        const a = (r.answer ?? null) as { value?: unknown; aliases?: unknown } | null;
        return {
          question_id: r.question_id,
          question: r.question,
          answer: a && { value: a.value, aliases: a.aliases },
        };
      }, ["question_id", "question", "answer"]);
    case "nq_open":
      return linesWriter((r) => ({ question: r.question, answer: r.answer }), [
        "question",
        "answer",
      ]);
    case "web_questions":
      return linesWriter((r) => ({ question: r.question, answers: r.answers }), [
        "question",
        "answers",
      ]);
    case "passages":
      return linesWriter((r) => ({ id: r.id, title: r.title ?? "", text: r.text }), ["id", "text"]);
    case "generic":
      return linesWriter((r) => r);
  }
}

/** Whether a split of SQuAD's shape has a question without answers (v2.0), reading `answers` only. */
async function hasNoAnswer(files: ParquetFile[]): Promise<boolean> {
  for (const pq of files) {
    for (let g = 0; g < pq.groupRows.length; g++) {
      for (const r of await readRowGroup(pq, g, ["answers"])) {
        const texts = (r.answers as { text?: unknown } | null)?.text;
        if (Array.isArray(texts) && texts.length === 0) return true;
      }
    }
  }
  return false;
}

/**
 * The text of the Parquet split at `path` (a `.parquet` file or a folder of
 * shards, see `parquetFiles` of `parquet_path.ts`) as a {@linkcode ByteSource}, written
 * one row group at a time; `undefined` when `path` is not Parquet. The
 * files are opened at the first read: a bad one errors the stream with one
 * {@linkcode InputError}.
 *
 * @example
 * ```ts
 * import { parquetSource } from "./parquet.ts";
 * const path = await Deno.makeTempFile({ suffix: ".parquet" });
 * await Deno.writeFile(path, new Uint8Array([0x50, 0x41, 0x52]));
 * const src = await parquetSource(path);
 * let msg = "";
 * try {
 *   await new Response(src?.stream).text();
 * } catch (e) {
 *   msg = String(e);
 * }
 * if (!msg.endsWith("not a Parquet file (no PAR1 magic at its start)")) throw new Error(msg);
 * await Deno.remove(path);
 * ```
 */
export async function parquetSource(path: string): Promise<ByteSource | undefined> {
  const paths = await parquetFiles(path);
  if (paths === undefined) return undefined;
  const files: ParquetFile[] = [];
  const close = () => {
    for (const f of files.splice(0)) f.close();
  };
  const encoder = new TextEncoder();
  let writer: Writer | undefined;
  let kind: ParquetKind = "generic";
  let columns: string[] = [];
  let file = 0;
  let group = 0;
  let row = 0;
  let ended = false;
  // Line kinds (one line a row): the text's line where each shard's first row is, and its file.
  const firstLines: { line: number; file: string }[] = [];
  let lines = 0;
  // MRQA: line 1 its header, then a line for each run of rows of one context (and subset).
  const runs: { file: string; first: number; lastFile: string; last: number }[] = [];
  let runContext: unknown, runSubset: unknown;
  const start = async (): Promise<string> => {
    for (const p of paths) files.push(await openParquet(p));
    kind = parquetKind(files[0].columns);
    for (const f of files.slice(1)) {
      const k = parquetKind(f.columns);
      if (k !== kind) {
        throw new InputError({
          file: f.path,
          where: "",
          message: `a ${k} shard in a ${kind} split (${files[0].path})`,
        });
      }
    }
    columns = kind === "generic"
      ? files[0].columns.slice()
      : KIND_COLUMNS[kind].filter((c) => files[0].columns.includes(c));
    const v2 = kind === "squad" &&
      (/(^|[^a-z0-9])(squad_?v?2|v2(\.0)?)([^a-z0-9]|$)/i.test(path) || await hasNoAnswer(files));
    writer = writerOf(kind, v2);
    return writer.head();
  };
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        let text = writer === undefined ? await start() : "";
        while (file < files.length && group >= files[file].groupRows.length) {
          file++;
          group = 0;
          row = 0;
        }
        if (file >= files.length) {
          if (!ended) text += writer!.end();
          ended = true;
          close();
          if (text !== "") controller.enqueue(encoder.encode(text));
          controller.close();
          return;
        }
        const pq = files[file];
        const parts: string[] = [text];
        for (const r of await readRowGroup(pq, group, columns)) {
          const at = { file: pq.path, row: row++ };
          const text = writer!.row(r, at);
          checkLength(r, at, kind, text);
          parts.push(text);
          if (LINE_KINDS.has(kind)) {
            if (at.row === 0) firstLines.push({ line: lines + 1, file: pq.path });
            lines++;
          } else if (kind === "mrqa") {
            const run = runs.at(-1);
            if (run === undefined || r.context !== runContext || r.subset !== runSubset) {
              runs.push({ file: pq.path, first: at.row, lastFile: pq.path, last: at.row });
              runContext = r.context;
              runSubset = r.subset;
            } else {
              run.lastFile = pq.path;
              run.last = at.row;
            }
          }
        }
        group++;
        controller.enqueue(encoder.encode(parts.join("")));
      } catch (e) {
        close();
        controller.error(e);
      }
    },
    cancel() {
      close();
    },
  }, { highWaterMark: 0 });
  // Line N of a line kind's text is a row: the last shard starting at or before it, N − its first line.
  // Line N ≥ 2 of MRQA's is run N − 2, by its rows.
  const lineAt = (n: number) => {
    if (kind === "mrqa") {
      const run = runs[n - 2];
      if (run === undefined) return undefined;
      const where = run.lastFile !== run.file
        ? `rows ${run.first} to ${run.last} of ${run.lastFile}`
        : run.last > run.first
        ? `rows ${run.first} to ${run.last}`
        : `row ${run.first}`;
      return { file: run.file, where };
    }
    let i = firstLines.length - 1;
    while (i >= 0 && firstLines[i].line > n) i--;
    return i < 0 || n > lines
      ? undefined
      : { file: firstLines[i].file, where: `row ${n - firstLines[i].line}` };
  };
  return { name: path, stream, lineAt };
}
