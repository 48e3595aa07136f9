/**
 * CSV/TSV records as Python's `csv.reader` reads them (the `excel` dialect
 * with a chosen delimiter, which is how DPR reads its question and passage
 * files): a field that starts with `"` is quoted (`""` inside is one `"`,
 * the field may run over line ends, and text after its closing quote is
 * kept); `"` anywhere else is an ordinary character. Blank lines are passed
 * over. A record's length, quoted line ends included, is bounded like a
 * line.
 *
 * @module
 */
import { InputError } from "../errors.ts";
import type { TextLine } from "./lines.ts";

/** One CSV record. */
export interface CsvRow {
  /** The line it starts on. */
  readonly line: number;
  /** The fields. */
  readonly fields: readonly string[];
}

// The states of Python's csv reader this dialect uses.
const State = { StartField: 0, InField: 1, InQuoted: 2, QuoteInQuoted: 3 } as const;
type State = (typeof State)[keyof typeof State];

/**
 * Turns lines into CSV records with Python's `csv` rules, one line at a
 * time; a quoted field still open at a line's end continues on the next
 * line.
 *
 * @example
 * ```ts
 * import { CsvRowParser } from "./csv.ts";
 * const p = new CsvRowParser("q.tsv", "\t", 1000);
 * const line = (n: number, text: string) => ({ line: n, offset: 0, bytes: text.length, text });
 * const a = p.push(line(1, 'who\t["a", "b"]'));
 * const b = p.push(line(2, '"say ""hi"" twice\tx'));
 * const c = p.push(line(3, 'y"\t[]'));
 * p.end();
 * if (JSON.stringify(a?.fields) !== '["who","[\\"a\\", \\"b\\"]"]') throw new Error();
 * if (b !== undefined || c?.line !== 2) throw new Error();
 * if (JSON.stringify(c.fields) !== '["say \\"hi\\" twice\\tx\\ny","[]"]') throw new Error();
 * ```
 */
export class CsvRowParser {
  #fields: string[] = [];
  #field = "";
  #state: State = State.StartField;
  #startLine = 0;
  #bytes = 0;

  /**
   * @param file the file, for messages
   * @param delimiter one character (`"\t"`, `","`)
   * @param maxRecordBytes the longest record, quoted line ends included
   */
  constructor(
    readonly file: string,
    readonly delimiter: string,
    readonly maxRecordBytes: number,
  ) {}

  /** Whether a quoted field is open (the record continues on the next line). */
  get open(): boolean {
    return this.#state === State.InQuoted;
  }

  /**
   * Feeds one line; returns the record it completes, or `undefined` (a
   * blank line, or a quoted field that goes on).
   */
  push(line: TextLine): CsvRow | undefined {
    const continuing = this.open;
    if (!continuing) {
      if (line.text === "") return undefined;
      this.#startLine = line.line;
      this.#bytes = 0;
    } else {
      this.#field += "\n";
    }
    this.#bytes += line.bytes + (continuing ? 1 : 0);
    if (this.#bytes > this.maxRecordBytes) {
      throw new InputError({
        file: this.file,
        where: `line ${this.#startLine}`,
        message: `record longer than ${this.maxRecordBytes} bytes (a quoted field open since` +
          ` line ${this.#startLine})`,
      });
    }
    const d = this.delimiter;
    const t = line.text;
    // Runs of ordinary characters are copied as slices, not one by one.
    let i = 0;
    while (i < t.length) {
      switch (this.#state) {
        case State.StartField:
          if (t[i] === '"') {
            this.#state = State.InQuoted;
            i++;
          } else if (t[i] === d) {
            this.#save();
            i++;
          } else this.#state = State.InField;
          break;
        case State.InField: {
          // Outside quotes a `"` is an ordinary character.
          const j = t.indexOf(d, i);
          this.#field += t.slice(i, j < 0 ? t.length : j);
          if (j < 0) i = t.length;
          else {
            this.#save();
            i = j + 1;
          }
          break;
        }
        case State.InQuoted: {
          const j = t.indexOf('"', i);
          this.#field += t.slice(i, j < 0 ? t.length : j);
          if (j < 0) i = t.length;
          else {
            this.#state = State.QuoteInQuoted;
            i = j + 1;
          }
          break;
        }
        case State.QuoteInQuoted:
          if (t[i] === '"') {
            this.#field += '"';
            this.#state = State.InQuoted;
            i++;
          } else if (t[i] === d) {
            this.#save();
            i++;
          } else this.#state = State.InField; // text after a closing quote is kept
          break;
      }
    }
    if (this.#state === State.InQuoted) return undefined;
    this.#fields.push(this.#field);
    const row = { line: this.#startLine, fields: this.#fields };
    this.#fields = [];
    this.#field = "";
    this.#state = State.StartField;
    return row;
  }

  /** At the end of the input: fails if a quoted field is still open. */
  end(): void {
    if (this.open) {
      throw new InputError({
        file: this.file,
        where: `line ${this.#startLine}`,
        message: "quoted field not closed before the end of the file",
      });
    }
  }

  #save() {
    this.#fields.push(this.#field);
    this.#field = "";
    this.#state = State.StartField;
  }
}
