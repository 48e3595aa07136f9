/**
 * DPR's files (facebookresearch/DPR, `dpr/data/retriever_data.py`), read as
 * DPR's `csv.reader(f, delimiter="\t")` reads them:
 *
 * - question sets (`nq-test.qa.csv`, `trivia-test.qa.csv.gz`,
 *   `webquestions-test.qa.csv`, `curatedtrec-test.qa.csv`, ...): no
 *   header, two tab-separated columns, the question and its answers as a
 *   Python list literal (DPR `eval`s it; here it is parsed, see
 *   `pyliteral.ts`). There are no ids: questions are numbered from 0 in
 *   file order. CuratedTREC's answers are regular expressions
 *   (`regex: true`).
 * - the passage corpus (`psgs_w100.tsv`): `id<TAB>text<TAB>title`, with
 *   the header line `id	text	title`; as DPR does, quotes left around a
 *   text are stripped (`text.strip('"')`).
 *
 * @module
 */
import type * as Stream from "effect/Stream";
import type { InputError } from "../errors.ts";
import type { ByteSource } from "../source.ts";
import { CsvRowParser } from "./csv.ts";
import { lineRecords } from "./lines.ts";
import { parsePyStringList, PyLiteralError } from "../pyliteral.ts";
import {
  type CorpusPassage,
  IdRegistry,
  MAX_LINE_BYTES,
  type QaReadOptions,
  type QaRecord,
  questionProblem,
  recordError,
} from "./types.ts";

/** Options of {@linkcode dprQuestions}. */
export interface DprQaOptions extends QaReadOptions {
  /** The column separator (default a tab, as DPR's reader). */
  readonly delimiter?: string;
}

/**
 * The questions of a DPR question file (`question<TAB>['answer', ...]`),
 * numbered from 0. A bad row (not two columns, an empty question, answers
 * that are not a Python list of strings) fails with one
 * {@linkcode InputError} naming the line and the question number.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Stream from "effect/Stream";
 * import { dprQuestions } from "./dpr.ts";
 * const text = "who wrote hamlet\t['William Shakespeare', \"Shakespeare\"]\n";
 * const src = { name: "nq.qa.csv", stream: new Blob([text]).stream() };
 * const [q] = await Effect.runPromise(Stream.runCollect(dprQuestions(src)));
 * if (q.id !== "0" || q.answers[1] !== "Shakespeare") throw new Error(JSON.stringify(q));
 * ```
 */
export function dprQuestions(
  src: ByteSource,
  opts: DprQaOptions = {},
): Stream.Stream<QaRecord, InputError> {
  const max = opts.maxLineBytes ?? MAX_LINE_BYTES;
  const csv = new CsvRowParser(src.name, opts.delimiter ?? "\t", max);
  let position = 0;
  return lineRecords<QaRecord>(src, max, (line, out) => {
    const row = csv.push(line);
    if (row === undefined) return;
    const id = String(position++);
    const fail = (message: string): never => {
      throw recordError(src.name, row.line, id, message);
    };
    if (row.fields.length !== 2) {
      fail(
        `expected 2 ${
          csv.delimiter === "\t" ? "tab" : JSON.stringify(csv.delimiter)
        }-separated columns (question, answers), found ${row.fields.length}`,
      );
    }
    const [question, answerText] = row.fields;
    const bad = questionProblem(question, "question");
    if (bad !== undefined) fail(bad);
    let answers: string[] = [];
    try {
      answers = parsePyStringList(answerText);
    } catch (e) {
      if (!(e instanceof PyLiteralError)) throw e;
      fail(`answers are not a Python list of strings: ${e.message}`);
    }
    out.push({
      kind: "question",
      id,
      question,
      answers,
      ...(opts.regex ? { regex: true } : {}),
      ...(opts.lang !== undefined ? { lang: opts.lang } : {}),
    });
  }, () => csv.end());
}

/** Options of {@linkcode dprPassages}. */
export interface DprPassageOptions {
  /** The longest line read, in bytes (default {@linkcode MAX_LINE_BYTES}). */
  readonly maxLineBytes?: number;
}

/**
 * The passages of a DPR passage TSV (`id<TAB>text<TAB>title`, header line
 * `id	text	title` first). A row that is not three columns, a passage
 * without an id, an empty text (nothing but white space once DPR's quotes
 * are stripped: nothing to encode) and a repeated id (naming the line of
 * the first) each fail with one {@linkcode InputError}.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Stream from "effect/Stream";
 * import { dprPassages } from "./dpr.ts";
 * const text = 'id\ttext\ttitle\n1\t"Aaron is a ""prophet""."\tAaron\n';
 * const src = { name: "psgs_w100.tsv", stream: new Blob([text]).stream() };
 * const [p] = await Effect.runPromise(Stream.runCollect(dprPassages(src)));
 * if (p.id !== "1" || p.text !== 'Aaron is a "prophet".' || p.title !== "Aaron") throw new Error();
 * ```
 */
export function dprPassages(
  src: ByteSource,
  opts: DprPassageOptions = {},
): Stream.Stream<CorpusPassage, InputError> {
  const max = opts.maxLineBytes ?? MAX_LINE_BYTES;
  const csv = new CsvRowParser(src.name, "\t", max);
  const ids = new IdRegistry();
  let first = true;
  return lineRecords<CorpusPassage>(src, max, (line, out) => {
    const row = csv.push(line);
    if (row === undefined) return;
    const f = row.fields;
    if (first) {
      first = false;
      if (f.length === 3 && f[0] === "id" && f[1] === "text" && f[2] === "title") return;
    }
    const id = f[0] === "" ? undefined : f[0];
    const fail = (message: string): never => {
      throw recordError(src.name, row.line, id, message, "passage");
    };
    if (f.length !== 3) {
      fail(`expected 3 tab-separated columns (id, text, title), found ${f.length}`);
    }
    if (id === undefined) fail("passage without id");
    const text = stripQuotes(f[1]);
    if (text.trim() === "") fail("empty text");
    const seen = ids.add(id as string, row.line);
    if (seen !== undefined) fail(`duplicate id (first at ${seen})`);
    out.push({ id: id as string, title: f[2], text });
  }, () => csv.end());
}

/** Python's `s.strip('"')`. */
function stripQuotes(s: string): string {
  let a = 0, b = s.length;
  while (a < b && s[a] === '"') a++;
  while (b > a && s[b - 1] === '"') b--;
  return a === 0 && b === s.length ? s : s.slice(a, b);
}
