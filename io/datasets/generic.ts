/**
 * Generic question sets read through a {@linkcode FieldMap}, as
 * OpenCompass's `reader_cfg` names a dataset's `input_columns` and
 * `output_column`: JSONL (one object a line; map values are keys) and
 * CSV/TSV with a header line (map values are column names; Python `csv`
 * rules, see `csv.ts`). The answers field is one string or a list of
 * strings (JSONL), or a cell holding one answer or a list literal starting
 * with `[` (JSON or Python, see `pyliteral.ts`; an empty cell is no answer).
 * Without an `id` field questions are numbered from 0 in file order; without
 * an `answers` field they have no gold answers.
 *
 * @module
 */
import type * as Stream from "effect/Stream";
import { InputError } from "../errors.ts";
import type { ByteSource } from "../source.ts";
import { CsvRowParser } from "./csv.ts";
import { lineRecords } from "./lines.ts";
import { parsePyStringList, PyLiteralError } from "../pyliteral.ts";
import {
  answerList,
  type FieldMap,
  IdRegistry,
  idText,
  MAX_LINE_BYTES,
  parseJsonLine,
  type QaReadOptions,
  type QaRecord,
  questionProblem,
  recordError,
} from "./types.ts";

/** Options of the generic readers. */
export interface GenericReadOptions extends QaReadOptions {
  /** Which field holds what. */
  readonly fields: FieldMap;
  /** CSV only: the separator (default a tab for a `.tsv`/`.tsv.gz` name, else a comma). */
  readonly delimiter?: string;
}

type Get = (field: string) => unknown;

/** Builds one record from a getter; `text` cells are CSV strings (`true` for CSV). */
function buildRecord(
  file: string,
  line: number,
  position: number,
  get: Get,
  csv: boolean,
  opts: GenericReadOptions,
  ids: IdRegistry,
): QaRecord {
  const f = opts.fields;
  let id: string | undefined = String(position);
  if (f.id !== undefined) {
    const v = get(f.id);
    id = v === undefined || v === "" ? undefined : idText(v);
    if (id === undefined) {
      throw recordError(
        file,
        line,
        undefined,
        v === undefined || v === ""
          ? `missing ${JSON.stringify(f.id)}`
          : `${JSON.stringify(f.id)} is not a string or an integer`,
      );
    }
  }
  const fail = (message: string): never => {
    throw recordError(file, line, id, message);
  };
  const question = get(f.question);
  const bad = questionProblem(question, f.question);
  if (bad !== undefined) fail(bad);
  let answers: string[] = [];
  if (f.answers !== undefined) {
    const v = get(f.answers);
    if (v === undefined) {
      if (opts.answers !== "optional") fail(`missing ${JSON.stringify(f.answers)}`);
    } else if (csv) {
      const cell = (v as string).trim();
      if (cell.startsWith("[")) {
        try {
          answers = parsePyStringList(cell);
        } catch (e) {
          if (!(e instanceof PyLiteralError)) throw e;
          fail(`${JSON.stringify(f.answers)} is not a list of strings: ${e.message}`);
        }
      } else if (cell !== "") answers = [v as string];
    } else {
      const a = answerList(v);
      if (a === undefined) {
        fail(`${JSON.stringify(f.answers)} is not a string or a list of strings`);
      }
      answers = a as string[];
    }
  }
  const text = (name: "context" | "paragraphId" | "title" | "lang"): string | undefined => {
    const key = f[name];
    if (key === undefined) return undefined;
    const v = get(key);
    if (v === undefined || (csv && v === "")) return undefined;
    if (typeof v !== "string") fail(`${JSON.stringify(key)} is not a string`);
    return v as string;
  };
  const context = text("context");
  const paragraphId = text("paragraphId");
  const title = text("title");
  const lang = text("lang") ?? opts.lang;
  let noAnswer: boolean | undefined;
  if (f.noAnswer !== undefined) {
    const v = get(f.noAnswer);
    if (typeof v === "boolean") noAnswer = v;
    else if (csv && /^(true|1|True|TRUE)$/.test(v as string)) noAnswer = true;
    else if (csv && /^(false|0|False|FALSE|)$/.test(v as string)) noAnswer = false;
    else if (v !== undefined) fail(`${JSON.stringify(f.noAnswer)} is not true or false`);
  }
  const seen = ids.add(id as string, line);
  if (seen !== undefined) fail(`duplicate id (first at ${seen})`);
  return {
    kind: "question",
    id: id as string,
    question: question as string,
    answers,
    ...(paragraphId !== undefined ? { paragraphId } : {}),
    ...(context !== undefined ? { context } : {}),
    ...(title !== undefined ? { title } : {}),
    ...(noAnswer === true ? { noAnswer } : {}),
    ...(opts.regex ? { regex: true } : {}),
    ...(lang !== undefined ? { lang } : {}),
  };
}

/**
 * The questions of a JSONL file read through a field map.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Stream from "effect/Stream";
 * import { jsonlQuestions } from "./generic.ts";
 * const text = '{"qid": "a", "q": "Who?", "gold": "Ann", "passage": "Ann came."}\n';
 * const src = { name: "x.jsonl", stream: new Blob([text]).stream() };
 * const fields = { id: "qid", question: "q", answers: "gold", context: "passage" };
 * const [r] = await Effect.runPromise(Stream.runCollect(jsonlQuestions(src, { fields })));
 * if (r.id !== "a" || r.answers[0] !== "Ann" || r.context !== "Ann came.") throw new Error();
 * ```
 */
export function jsonlQuestions(
  src: ByteSource,
  opts: GenericReadOptions,
): Stream.Stream<QaRecord, InputError> {
  const ids = new IdRegistry();
  let position = 0;
  return lineRecords<QaRecord>(src, opts.maxLineBytes ?? MAX_LINE_BYTES, (line, out) => {
    if (line.text.trim() === "") return;
    const rec = parseJsonLine(src.name, line.line, line.text);
    out.push(buildRecord(src.name, line.line, position++, (k) => rec[k], false, opts, ids));
  });
}

/**
 * The questions of a CSV/TSV file with a header line, read through a field
 * map (names of the header). A field the header does not have, or a row
 * whose column count is not the header's, is bad input.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Stream from "effect/Stream";
 * import { csvQuestions } from "./generic.ts";
 * const text = 'qid,q,gold\na,Who?,"[""Ann"", \'Anna\']"\nb,Where?,Rome\n';
 * const src = { name: "x.csv", stream: new Blob([text]).stream() };
 * const fields = { id: "qid", question: "q", answers: "gold" };
 * const rs = await Effect.runPromise(Stream.runCollect(csvQuestions(src, { fields })));
 * const got = rs.map((r) => `${r.id}:${r.answers.join("/")}`).join();
 * if (got !== "a:Ann/Anna,b:Rome") throw new Error(got);
 * ```
 */
export function csvQuestions(
  src: ByteSource,
  opts: GenericReadOptions,
): Stream.Stream<QaRecord, InputError> {
  const max = opts.maxLineBytes ?? MAX_LINE_BYTES;
  const delimiter = opts.delimiter ?? (/\.tsv(\.gz)?$/i.test(src.name) ? "\t" : ",");
  const csv = new CsvRowParser(src.name, delimiter, max);
  const ids = new IdRegistry();
  let header: Map<string, number> | undefined;
  let width = 0;
  let position = 0;
  return lineRecords<QaRecord>(src, max, (line, out) => {
    const row = csv.push(line);
    if (row === undefined) return;
    if (header === undefined) {
      header = new Map();
      for (const [i, name] of row.fields.entries()) {
        const first = header.get(name);
        if (first !== undefined) {
          // Which of the two a field map means cannot be told: refused, named.
          throw new InputError({
            file: src.name,
            where: `line ${row.line}`,
            message: `the header repeats column ${JSON.stringify(name)} (columns ${first + 1} and ${
              i + 1
            })`,
          });
        }
        header.set(name, i);
      }
      width = row.fields.length;
      for (const name of Object.values(opts.fields)) {
        if (name !== undefined && !header.has(name)) {
          throw new InputError({
            file: src.name,
            where: `line ${row.line}`,
            message: `no column ${JSON.stringify(name)} in the header (${row.fields.join(", ")})`,
          });
        }
      }
      return;
    }
    const cols = header;
    if (row.fields.length !== width) {
      throw recordError(
        src.name,
        row.line,
        opts.fields.id === undefined ? String(position) : undefined,
        `expected ${width} columns as the header, found ${row.fields.length}`,
      );
    }
    out.push(
      buildRecord(src.name, row.line, position++, (k) => row.fields[cols.get(k)!], true, opts, ids),
    );
  }, () => csv.end());
}
