/**
 * The record types every dataset and corpus reader of `io/datasets/` yields,
 * their options, and the bad-record messages they share: one
 * {@linkcode InputError} line naming the file, the line (or the record path
 * of a SQuAD file), the record id when known, and what is wrong.
 *
 * @module
 */
import { type FileError, InputError, type UsageError } from "../errors.ts";
import type { QuestionRecord } from "../ndjson.ts";
import { isJsonObject, MAX_LINE_BYTES } from "./bounds.ts";
import { parsePythonJson } from "../pyjson.ts";

export { isJsonObject };

/**
 * One question of any question set, as the rest of the code understands it:
 * a {@linkcode QuestionRecord} (`kind`, `id`, `question`, `paragraphId`)
 * with its gold answers and what the format says about them.
 */
export interface QaRecord extends QuestionRecord {
  /** Record kind, as the NDJSON question records. */
  readonly kind: "question";
  /**
   * The question id: the file's own (`id` of SQuAD, `qid` of MRQA, ...), or,
   * for a set without ids (DPR's CSV/TSV, NQ-open JSONL), the question's
   * position in the file from 0, as a string.
   */
  readonly id: string;
  /** The question text, as read (never empty). */
  readonly question: string;
  /** Gold answers as read, duplicates kept (empty for a no-answer question). */
  readonly answers: readonly string[];
  /** The answers are regular expressions (CuratedTREC); matching is the metrics' work. */
  readonly regex?: boolean;
  /** The question has no answer in its paragraph (SQuAD v2.0 / MRQA `is_impossible`). */
  readonly noAnswer?: boolean;
  /** SQuAD v2.0: plausible but wrong answers of a no-answer question. */
  readonly plausibleAnswers?: readonly string[];
  /** Language code (`de`, `zh`, ...), from the options or the file name (XQuAD, MLQA). */
  readonly lang?: string;
  /** The paragraph's id, when the question set has paragraphs. */
  readonly paragraphId?: string;
  /** The paragraph text, when the question set has paragraphs. */
  readonly context?: string;
  /** The article title, when known. */
  readonly title?: string;
}

/** One passage of a corpus for open-domain search. */
export interface CorpusPassage {
  /** The passage id (DPR: the `id` column; SQuAD/MRQA: the paragraph id). */
  readonly id: string;
  /** The title (`""` when the corpus has none). */
  readonly title: string;
  /** The passage text. */
  readonly text: string;
}

/**
 * A field map for the generic JSONL/CSV readers, as OpenCompass's
 * `reader_cfg` (`input_columns`, `output_column`): record field (JSONL key
 * or CSV header name) of each part of a {@linkcode QaRecord}. Only
 * `question` is required; without `id` questions are numbered from 0.
 *
 * @example
 * ```ts
 * import type { FieldMap } from "./types.ts";
 * const fields: FieldMap = { id: "qid", question: "q", answers: "gold", context: "passage" };
 * if (fields.question !== "q") throw new Error();
 * ```
 */
export interface FieldMap {
  /** Field of the question id (a string or an integer). */
  readonly id?: string;
  /** Field of the question text. */
  readonly question: string;
  /** Field of the gold answers: one string, or a list of strings. */
  readonly answers?: string;
  /** Field of the paragraph text. */
  readonly context?: string;
  /** Field of the paragraph id. */
  readonly paragraphId?: string;
  /** Field of the title. */
  readonly title?: string;
  /** Field of the language code. */
  readonly lang?: string;
  /** Field of the no-answer flag (JSON `true`/`false`; CSV `true`/`false`/`1`/`0`). */
  readonly noAnswer?: string;
}

/** Options of the question-set readers. */
export interface QaReadOptions {
  /** Language code given to every record (overrides the one of an XQuAD/MLQA file name). */
  readonly lang?: string;
  /** Mark every record's answers as regular expressions (CuratedTREC). */
  readonly regex?: boolean;
  /**
   * Gold answers: `"required"` (default: a record without its answers
   * field is bad input) or `"optional"` (it gets `answers: []`, as DPR's
   * JSONL reader does).
   */
  readonly answers?: "required" | "optional";
  /** The longest line read, in bytes (default {@linkcode MAX_LINE_BYTES}). */
  readonly maxLineBytes?: number;
}

export { MAX_LINE_BYTES };

/** Errors of the dataset readers: bad input, a file that cannot be read, bad options. */
export type DatasetReadError = InputError | FileError | UsageError;

/**
 * The `where` of a bad record: `line N` and, when known, `question "id"`
 * (or `passage "id"`); the id is quoted as JSON so the message stays one
 * line.
 *
 * @example
 * ```ts
 * import { recordWhere } from "./types.ts";
 * if (recordWhere(3, "q\n1") !== 'line 3 question "q\\n1"') throw new Error();
 * if (recordWhere(3, undefined, "passage") !== "line 3") throw new Error();
 * ```
 */
export function recordWhere(
  line: number,
  id: string | undefined,
  kind: "question" | "passage" = "question",
): string {
  return id === undefined ? `line ${line}` : `line ${line} ${kind} ${JSON.stringify(id)}`;
}

/**
 * The one-line error of a bad record of a line-based file.
 *
 * @example
 * ```ts
 * import { recordError } from "./types.ts";
 * const e = recordError("nq.jsonl", 4, "3", "empty question");
 * if (e.toString() !== 'nq.jsonl: line 4 question "3": empty question') {
 *   throw new Error(e.toString());
 * }
 * ```
 */
export function recordError(
  file: string,
  line: number,
  id: string | undefined,
  message: string,
  kind: "question" | "passage" = "question",
): InputError {
  return new InputError({ file, where: recordWhere(line, id, kind), message });
}

/** Ids below this are kept in the compact table (see {@linkcode IdRegistry}). */
const COMPACT_IDS = 1 << 26;
const DECIMAL_ID = /^(?:0|[1-9][0-9]{0,7})$/;

/**
 * Remembers the ids seen so far and where, to refuse a repeated one naming
 * both places. Decimal ids at line positions (DPR passage ids, question
 * numbers) that are dense (no larger than twice the count of ids seen, plus
 * 4096) are kept in a table of line numbers indexed by id: 4 to 6 bytes an
 * id, so a 21-million-passage corpus costs about 100 MB, not a map of
 * strings; other ids go to a map.
 *
 * @example
 * ```ts
 * import { IdRegistry } from "./types.ts";
 * const ids = new IdRegistry();
 * if (ids.add("q1", 2) !== undefined || ids.add("7", 3) !== undefined) throw new Error();
 * if (ids.add("q1", 9) !== "line 2" || ids.add("7", 10) !== "line 3") throw new Error();
 * if (ids.add("99999999", 11) !== undefined) throw new Error();
 * if (ids.add("99999999", 12) !== "line 11") throw new Error();
 * if (ids.add("x", 'article "T" paragraph 0') !== undefined) throw new Error();
 * if (ids.add("x", "later") !== 'article "T" paragraph 0') throw new Error();
 * ```
 */
export class IdRegistry {
  #map = new Map<string, number | string>();
  #lines = new Int32Array(0);
  #count = 0;

  /**
   * Records `id` at `at` (a line number, or a record path). Returns where it
   * was first seen (`line N` or the path) if it was seen before, else
   * `undefined`.
   */
  add(id: string, at: number | string): string | undefined {
    const n = DECIMAL_ID.test(id) ? Number(id) : -1;
    const inTable = n >= 0 && n < this.#lines.length ? this.#lines[n] : 0;
    if (inTable !== 0) return `line ${inTable}`;
    const inMap = this.#map.get(id);
    if (inMap !== undefined) return typeof inMap === "number" ? `line ${inMap}` : inMap;
    const line = typeof at === "number" && at > 0 && at <= 0x7fffffff;
    if (line && n >= 0 && n < COMPACT_IDS && n <= 2 * this.#count + 4096) {
      if (n >= this.#lines.length) {
        const size = Math.min(
          COMPACT_IDS,
          Math.max(n + 1, 1024, Math.floor(this.#lines.length * 1.5)),
        );
        const grown = new Int32Array(size);
        grown.set(this.#lines);
        this.#lines = grown;
      }
      this.#lines[n] = at as number;
    } else {
      this.#map.set(id, at);
    }
    this.#count++;
    return undefined;
  }
}

/**
 * A record id as read: a string, or an integer written as a JSON number
 * (as `str()` would write it); `undefined` for anything else.
 *
 * @example
 * ```ts
 * import { idText } from "./types.ts";
 * if (idText("a") !== "a" || idText(7) !== "7" || idText(1.5) !== undefined) throw new Error();
 * ```
 */
export function idText(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (typeof value === "number" && Number.isSafeInteger(value)) return String(value);
  return undefined;
}

/**
 * The gold answers of a field value: a list of strings as is, one string as
 * a list of one; `undefined` for anything else.
 *
 * @example
 * ```ts
 * import { answerList } from "./types.ts";
 * if (answerList(["a", "b"])?.join() !== "a,b") throw new Error();
 * if (answerList("c")?.join() !== "c") throw new Error();
 * if (answerList([1]) !== undefined || answerList(null) !== undefined) throw new Error();
 * ```
 */
export function answerList(value: unknown): string[] | undefined {
  if (typeof value === "string") return [value];
  if (Array.isArray(value) && value.every((a) => typeof a === "string")) return value as string[];
  return undefined;
}

/**
 * Why `question` is not a usable question text (`missing "question"`, not a
 * string, or `empty question` when only white space), or `undefined`.
 *
 * @example
 * ```ts
 * import { questionProblem } from "./types.ts";
 * if (questionProblem(" \t", "q") !== "empty question") throw new Error();
 * if (questionProblem(undefined, "q") !== 'missing "q"') throw new Error();
 * if (questionProblem(3, "q") !== '"q" is not a string') throw new Error();
 * if (questionProblem("Why?", "q") !== undefined) throw new Error();
 * ```
 */
export function questionProblem(question: unknown, field: string): string | undefined {
  if (question === undefined) return `missing ${JSON.stringify(field)}`;
  if (typeof question !== "string") return `${JSON.stringify(field)} is not a string`;
  if (question.trim() === "") return "empty question";
  return undefined;
}

/**
 * Parses one JSONL line; throws the line's {@linkcode InputError} when it is
 * not JSON or not an object.
 *
 * @example
 * ```ts
 * import { parseJsonLine } from "./types.ts";
 * if (parseJsonLine("f", 1, '{"a": 1}').a !== 1) throw new Error();
 * let msg = "";
 * try {
 *   parseJsonLine("f", 2, "[1]");
 * } catch (e) {
 *   msg = String(e);
 * }
 * if (msg !== "f: line 2: not a JSON object") throw new Error(msg);
 * ```
 */
export function parseJsonLine(file: string, line: number, text: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = parsePythonJson(text);
  } catch (e) {
    throw new InputError({
      file,
      where: `line ${line}`,
      message: `invalid JSON (${e instanceof Error ? e.message : e})`,
    });
  }
  if (!isJsonObject(v)) {
    throw new InputError({ file, where: `line ${line}`, message: "not a JSON object" });
  }
  return v;
}
