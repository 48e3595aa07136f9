/**
 * Streaming decoder for a JSON document whose root is an object with one
 * large array-valued key (SQuAD's `data`). Top-level fields and the array's
 * elements come out one at a time, in source order, so memory is bounded by
 * the largest element, not by the file. Values keep what Python's `json`
 * keeps (key order, exact number text: see `pyjson.ts`). Input bytes must be
 * valid UTF-8; errors name the byte offset. Nesting is bounded by
 * {@linkcode MAX_JSON_DEPTH}.
 *
 * Speed: an element of the streamed array that is an object of at most
 * {@linkcode FAST_ITEM_BYTES} is found by a byte scan (strings, escapes,
 * brackets) and handed whole to the native `JSON.parse` when that gives
 * exactly the value the streaming tokenizer would (no number but a small
 * integer, no key that is an integer or holds an escape, no `"__proto__"`,
 * within the nesting bound, valid JSON). Any other element, and any element
 * with a problem, goes through the streaming tokenizer, which names it: the
 * events, values and errors are the same either way, and memory stays
 * bounded by the largest element.
 *
 * @module
 */
import { isUtf8 } from "node:buffer";
import { Tokenizer, TokenType } from "@streamparser/json";
import { type PyJson, type PyObject, RawNumber, setKey } from "./pyjson.ts";

/**
 * The deepest nesting of arrays and objects accepted (the root object is
 * level 1), as Python's `json` is bounded by its recursion limit (1000): a
 * deeper value is refused with the byte offset of the bracket that opens
 * level 1001.
 */
export const MAX_JSON_DEPTH = 1000;

/** One event of the decoded document, in source order. */
export type JsonEvent =
  | {
    /** A completed top-level field other than the streamed array. */
    readonly kind: "field";
    readonly key: string;
    readonly value: PyJson;
  }
  | {
    /** The streamed array's key was seen and its `[` opened. */
    readonly kind: "array-start";
    readonly key: string;
  }
  | {
    /** One completed element of the streamed array. */
    readonly kind: "item";
    readonly index: number;
    readonly value: PyJson;
    /** Byte offset of the element's first byte. */
    readonly offset: number;
  }
  | {
    /** The streamed array's `]`. */
    readonly kind: "array-end";
  }
  | {
    /**
     * A top-level field whose value the `readField` option declined on its
     * first byte: it was not read, and the decoder reads no further (this is
     * the last event).
     */
    readonly kind: "unread";
    readonly key: string;
    /** The first byte of the value. */
    readonly first: number;
    /** Byte offset of the value's first byte. */
    readonly offset: number;
  };

/**
 * A JSON syntax or encoding error at a byte offset.
 *
 * @example
 * ```ts
 * import { JsonEventDecoder, JsonSyntaxError } from "./json_events.ts";
 * const d = new JsonEventDecoder("data");
 * try {
 *   d.push(new TextEncoder().encode('{"data": [1,]}'));
 *   d.end();
 *   throw new Error("not refused");
 * } catch (e) {
 *   if (!(e instanceof JsonSyntaxError) || e.offset !== 12) throw e;
 * }
 * ```
 */
export class JsonSyntaxError extends Error {
  /**
   * The error, at its byte offset.
   *
   * @param offset byte offset of the problem (-1 when unknown)
   * @param message what is wrong
   */
  constructor(readonly offset: number, message: string) {
    super(message);
  }
}

const SAFE_INT = /^-?(?:0|[1-9][0-9]{0,14})$/;

/**
 * The largest element of the streamed array read by the fast path (8 MiB):
 * a larger one streams through the tokenizer, as every element did before.
 */
export const FAST_ITEM_BYTES = 8 << 20;

/** Thrown out of the tokenizer to hand the bytes from `at` on to the fast scan. */
class ToScan {
  constructor(readonly at: number) {}
}

/** Thrown out of the tokenizer when `readField` declines a value (see the constructor). */
class Declined {}

/** The private fields of @streamparser/json 0.0.26's Tokenizer that resuming it sets. */
interface TokenizerPosition {
  state: number;
  offset: number;
  streamByteLength: number;
}

class RawNumberTokenizer extends Tokenizer {
  constructor() {
    super();
    // @streamparser/json 0.0.26 decodes each run of multi-byte characters
    // with a TextDecoder that strips a leading U+FEFF as a byte-order mark,
    // so "\u00b0\ufeff" inside a string loses its U+FEFF. Keep it, as
    // Python's json does (tests/squad_test.ts checks the split's sha256,
    // which contains such strings).
    const str = (this as unknown as { bufferedString?: { decoder?: TextDecoder } })
      .bufferedString;
    if (str && str.decoder instanceof TextDecoder) {
      str.decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
    }
  }

  protected override parseNumber(text: string): number {
    if (SAFE_INT.test(text) && text !== "-0") return Number(text);
    return new RawNumber(text) as unknown as number;
  }
}

const enum S {
  KeyOrEnd,
  Key,
  Colon,
  Value,
  ValueOrEnd,
  CommaOrEnd,
}

interface Frame {
  readonly array: boolean;
  readonly value: PyObject | PyJson[] | null; // null: root or streamed array
  readonly streamed: boolean; // root object or the streamed array
  state: S;
  key: string;
  start: number;
}

/**
 * Whether `b` (1 to 3 bytes) can begin a valid UTF-8 character: what a streaming UTF-8 decoder
 * (WHATWG, fatal) accepts without an error before the character's last byte.
 */
function validUtf8Prefix(b: Uint8Array): boolean {
  const x = b[0];
  if (x < 0xc2 || x > 0xf4) return false;
  const need = x >= 0xf0 ? 4 : x >= 0xe0 ? 3 : 2;
  if (b.byteLength >= need) return false;
  if (b.byteLength > 1) {
    const y = b[1];
    const [lo, hi] = x === 0xe0
      ? [0xa0, 0xbf]
      : x === 0xed
      ? [0x80, 0x9f]
      : x === 0xf0
      ? [0x90, 0xbf]
      : x === 0xf4
      ? [0x80, 0x8f]
      : [0x80, 0xbf];
    if (y < lo || y > hi) return false;
  }
  return b.byteLength < 3 || (b[2] & 0xc0) === 0x80;
}

/** The trailing bytes of `b` that begin a UTF-8 character not yet complete (valid input). */
function incompleteSuffix(b: Uint8Array): Uint8Array {
  for (let k = 1; k <= 3 && k <= b.byteLength; k++) {
    const x = b[b.byteLength - k];
    if ((x & 0xc0) === 0x80) continue; // a continuation byte: look further back
    const need = x >= 0xf0 ? 4 : x >= 0xe0 ? 3 : x >= 0xc0 ? 2 : 1;
    return need > k ? b.slice(b.byteLength - k) : new Uint8Array(0);
  }
  return new Uint8Array(0);
}

/**
 * Push-style decoder: feed byte chunks with {@linkcode JsonEventDecoder.push},
 * collect the events each call returns, call `end()` at the end. Throws
 * {@linkcode JsonSyntaxError} on malformed input.
 *
 * @example
 * ```ts
 * import { JsonEventDecoder } from "./json_events.ts";
 * const d = new JsonEventDecoder("data");
 * const ev = d.push(new TextEncoder().encode('{"data": [1, 2], "version": "1.1"}'));
 * ev.push(...d.end());
 * const kinds = ev.map((e) => e.kind === "item" ? `item ${e.value}` : e.kind);
 * if (kinds.join() !== "array-start,item 1,item 2,array-end,field") throw new Error(kinds.join());
 * ```
 */
export class JsonEventDecoder {
  #tok = new RawNumberTokenizer();
  /** The bytes of a character that the last chunk left incomplete (0 to 3). */
  #tail: Uint8Array = new Uint8Array(0);
  #stack: Frame[] = [];
  #out: JsonEvent[] = [];
  #rootDone = false;
  #sawToken = false;
  #bytes = 0;
  #items = 0;
  #rootKeys = new Set<string>();

  readonly #repeatKeys: boolean;
  readonly #fast: boolean;
  readonly #maxString: number;
  readonly #maxStringWhy: string;
  readonly #maxItem: number;
  readonly #maxItemWhy: string;
  readonly #readField: ((key: string, first: number) => boolean) | undefined;
  /** After a top-level `:`: the value's first byte is still to come (see `readField`). */
  #peeking = false;
  /** The chunk `push` is decoding, and its offset in the input (for `readField`). */
  #chunk: Uint8Array = new Uint8Array(0);
  #chunkBase = 0;
  /** A top-level value was declined (an `unread` event): nothing more is read. */
  #stopped = false;
  /** Where the element of the streamed array the tokenizer reads began (-1: none open). */
  #elemStart = -1;
  /** The string being read, if any: where it began, its bytes so far, an escape pending. */
  #inString = false;
  #escape = false;
  #stringStart = 0;
  #stringBytes = 0;

  /** The fast scan reads the streamed array now (between or inside its elements). */
  #scanning = false;
  /** Inside an element (`true`) or between elements. */
  #inItem = false;
  /** Between elements: an element was just read (a `,` or `]` comes next). */
  #afterItem = false;
  /** The element being scanned: where it began, its bytes so far, its state. */
  #itemStart = 0;
  #itemParts: Uint8Array[] = [];
  #itemBytes = 0;
  #depth = 0;
  #sInString = false;
  #sEscape = false;
  /** The string being read: only digits so far, not empty, with an escape. */
  #strDigits = false;
  #strAny = false;
  #strEscaped = false;
  /** The same of the string last read (a key when a `:` follows). */
  #lastDigits = false;
  #lastEscaped = false;
  /** A number being read, its text so far ("" when none). */
  #number = "";
  /** The element needs the tokenizer (see the module doc). */
  #unsafe = false;
  #itemText = new TextDecoder("utf-8", { ignoreBOM: true });

  /**
   * A decoder of the JSON text whose array at `arrayKey` is streamed element by element.
   *
   * @param arrayKey the top-level key whose array elements are streamed
   * @param options `repeatedKeys: true` lets a top-level key repeat (each
   *   occurrence is a `field` event, as Python's `json` keeps the last);
   *   by default a repeated top-level key is refused. `maxStringBytes`: a
   *   string (key or value) of more bytes in the input, quotes aside, is
   *   refused at its first byte before more of it is held (default: no
   *   limit); `maxStringWhy` ends that message (which limit it is).
   *   `fastItems: false` reads every element with the tokenizer (the
   *   module doc's fast path is off; the events are the same).
   *   `maxItemBytes`: an element of the streamed array longer than this in
   *   the input is refused, at its first byte, once a chunk takes it past
   *   the bound (default: no limit); `maxItemWhy` ends that message.
   *   `readField`: asked, at the first byte of each top-level field's value
   *   (past the whitespace after its `:`), whether to read it; on `false` the
   *   value is not read (a wrong value of many megabytes is refused for the
   *   price of its first byte), `push` returns the events before it and an
   *   `unread` event, and the decoder reads no further (a later `push` or
   *   `end` throws). Default: every value is read.
   */
  constructor(
    readonly arrayKey: string,
    options: {
      readonly repeatedKeys?: boolean;
      readonly maxStringBytes?: number;
      readonly maxStringWhy?: string;
      readonly maxItemBytes?: number;
      readonly maxItemWhy?: string;
      readonly fastItems?: boolean;
      readonly readField?: (key: string, first: number) => boolean;
    } = {},
  ) {
    this.#readField = options.readField;
    this.#fast = options.fastItems !== false;
    this.#repeatKeys = options.repeatedKeys === true;
    this.#maxString = options.maxStringBytes ?? Infinity;
    this.#maxStringWhy = options.maxStringWhy ?? "";
    this.#maxItem = options.maxItemBytes ?? Infinity;
    this.#maxItemWhy = options.maxItemWhy ?? "";
    this.#tok.onToken = ({ token, value, offset }) => this.#onToken(token, value as PyJson, offset);
    this.#tok.onError = (err) => {
      throw err;
    };
  }

  /** Decodes one chunk; returns the events completed by it. */
  push(chunk: Uint8Array): JsonEvent[] {
    this.#refuseStopped();
    this.#checkUtf8(chunk, false);
    if (this.#maxString !== Infinity) this.#checkStrings(chunk);
    const base = this.#bytes;
    this.#chunk = chunk;
    this.#chunkBase = base;
    // A top-level value that begins in this chunk, after a `:` in an earlier one.
    let i = this.#peeking && !this.#peek(0) ? -1 : this.#scanning ? this.#scan(chunk, 0, base) : 0;
    while (i >= 0 && i < chunk.byteLength) {
      try {
        this.#tok.write(i === 0 ? chunk : chunk.subarray(i));
        i = chunk.byteLength;
      } catch (e) {
        if (e instanceof Declined) {
          i = -1;
          continue;
        }
        if (!(e instanceof ToScan)) throw this.#wrap(e);
        this.#scanning = true;
        this.#inItem = false;
        this.#afterItem = false;
        i = this.#scan(chunk, e.at - base, base);
      }
    }
    this.#bytes += chunk.byteLength;
    this.#chunk = new Uint8Array(0);
    if (this.#maxItem !== Infinity && !this.#stopped) this.#checkItem();
    const out = this.#out;
    this.#out = [];
    return out;
  }

  /** Throws when a value was declined: the decoder has read all it will. */
  #refuseStopped(): void {
    if (this.#stopped) throw new Error("JsonEventDecoder: input after an unread field");
  }

  /**
   * After a top-level `:`, from `this.#chunk[from]`: looks past whitespace
   * for the value's first byte, without consuming anything (the tokenizer
   * reads on as it would), and asks `readField`. Returns `false` when the
   * value is declined (an `unread` event; the decoder stops); when the chunk
   * ends first, the next one is looked at.
   */
  #peek(from: number): boolean {
    const chunk = this.#chunk;
    const n = chunk.byteLength;
    for (let i = from; i < n; i++) {
      const b = chunk[i];
      if (b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09) continue;
      this.#peeking = false;
      const key = this.#stack[0].key;
      if (this.#readField!(key, b)) return true;
      this.#stopped = true;
      this.#out.push({ kind: "unread", key, first: b, offset: this.#chunkBase + i });
      return false;
    }
    this.#peeking = true;
    return true;
  }

  /** Refuses the element open now when the input has taken it past the bound. */
  #checkItem(): void {
    const start = this.#scanning && this.#inItem ? this.#itemStart : this.#elemStart;
    if (start < 0 || this.#bytes - start <= this.#maxItem) return;
    throw new JsonSyntaxError(
      start,
      `an element of "${this.arrayKey}" longer than ${this.#maxItem} bytes${this.#maxItemWhy}`,
    );
  }

  /** Signals the end of input; returns the last events. */
  end(): JsonEvent[] {
    this.#refuseStopped();
    this.#checkUtf8(new Uint8Array(0), true);
    // The file may end after a top-level `:`: the tokenizer says how.
    this.#peeking = false;
    if (this.#scanning) {
      // The file ends in the streamed array: the tokenizer says how.
      this.#scanning = false;
      if (this.#inItem) this.#tokenizeItem();
      else this.#resume(this.#bytes);
    }
    try {
      this.#tok.end();
    } catch (e) {
      throw this.#wrap(e);
    }
    if (!this.#sawToken) throw new JsonSyntaxError(0, "empty file: no JSON value");
    if (!this.#rootDone) {
      throw new JsonSyntaxError(
        this.#bytes,
        "truncated JSON: unexpected end of file",
      );
    }
    const out = this.#out;
    this.#out = [];
    return out;
  }

  /** Makes the tokenizer go on at byte `at` (it was left between two tokens). */
  #resume(at: number): void {
    const t = this.#tok as unknown as TokenizerPosition;
    t.state = 0; // START: between tokens
    t.offset = at - 1;
    t.streamByteLength = at;
  }

  /** The element scanned so far, as one byte array. */
  #itemBytesJoined(): Uint8Array {
    const parts = this.#itemParts;
    if (parts.length === 1) return parts[0];
    const all = new Uint8Array(this.#itemBytes);
    let off = 0;
    for (const p of parts) {
      all.set(p, off);
      off += p.byteLength;
    }
    return all;
  }

  /** Hands the element scanned so far to the tokenizer (which goes on reading it). */
  #tokenizeItem(): void {
    const bytes = this.#itemBytesJoined();
    this.#itemParts = [];
    this.#inItem = false;
    this.#resume(this.#itemStart);
    try {
      this.#tok.write(bytes);
    } catch (e) {
      // The element ends where the scan ended it: no `,` of the array is within it.
      throw this.#wrap(e);
    }
  }

  /** The element just scanned is complete: its value, by JSON.parse or by the tokenizer. */
  #itemDone(): void {
    this.#afterItem = true;
    let value: PyJson | undefined;
    if (!this.#unsafe) {
      const text = this.#itemText.decode(this.#itemBytesJoined());
      if (!text.includes('"__proto__"')) {
        try {
          value = JSON.parse(text) as PyJson;
        } catch {
          value = undefined;
        }
      }
    }
    if (value === undefined) return this.#tokenizeItem();
    this.#itemParts = [];
    this.#inItem = false;
    this.#sawToken = true;
    const top = this.#stack[this.#stack.length - 1];
    this.#expectValue(top, this.#itemStart, TokenType.LEFT_BRACE);
    this.#attach(top, value, this.#itemStart);
  }

  /**
   * The fast scan of the streamed array, from `chunk[from]` (`base`: the
   * chunk's offset in the input). Returns where the tokenizer takes over
   * (the chunk's length when it does not).
   */
  #scan(chunk: Uint8Array, from: number, base: number): number {
    const n = chunk.byteLength;
    let i = from;
    while (i < n) {
      if (!this.#inItem) {
        const b = chunk[i];
        if (b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09) {
          i++;
          continue;
        }
        if (this.#afterItem && b === 0x2c) {
          // `,` between elements: what the tokenizer would do with it.
          this.#afterItem = false;
          this.#stack[this.#stack.length - 1].state = S.Value;
          i++;
          continue;
        }
        if (this.#afterItem || b !== 0x7b) {
          // `]`, an element not an object, or bad input: the tokenizer's.
          this.#scanning = false;
          this.#afterItem = false;
          this.#resume(base + i);
          return i;
        }
        this.#inItem = true;
        this.#itemStart = base + i;
        this.#itemParts = [];
        this.#itemBytes = 0;
        this.#depth = 0;
        this.#sInString = this.#sEscape = false;
        this.#lastDigits = this.#lastEscaped = false;
        this.#number = "";
        this.#unsafe = false;
      }
      const end = this.#scanItem(chunk, i);
      const piece = chunk.subarray(i, end < 0 ? n : end + 1);
      this.#itemParts.push(end < 0 ? piece.slice() : piece);
      this.#itemBytes += piece.byteLength;
      if (end >= 0) {
        this.#itemDone();
        i = end + 1;
      } else {
        if (this.#itemBytes > FAST_ITEM_BYTES) {
          // Too large to hold twice: the tokenizer reads it, as any element before.
          this.#tokenizeItem();
          this.#scanning = false;
        }
        return n;
      }
    }
    return n;
  }

  /**
   * Scans the element from `chunk[from]`; returns the index of its closing
   * bracket, or -1 when it goes on past the chunk.
   */
  #scanItem(chunk: Uint8Array, from: number): number {
    const n = chunk.byteLength;
    let inString = this.#sInString, escape = this.#sEscape, depth = this.#depth;
    let num = this.#number;
    const limit = MAX_JSON_DEPTH - this.#stack.length;
    // The next `"` at or after i (n: none in the chunk), found natively and
    // kept while a string's escapes are stepped over, so the scan stays linear.
    let quote = -1;
    for (let i = from; i < n; i++) {
      if (inString) {
        if (escape) {
          escape = false;
          this.#strAny = true;
          continue;
        }
        // The string's bytes up to its next `"` or `\\`, skipped natively.
        if (quote < i) {
          quote = chunk.indexOf(0x22, i);
          if (quote < 0) quote = n;
        }
        const slash = chunk.subarray(i, quote).indexOf(0x5c);
        const stop = slash < 0 ? quote : i + slash;
        if (stop > i) {
          this.#strAny = true;
          if (this.#strDigits) {
            for (let k = i; k < stop; k++) {
              const c = chunk[k];
              if (c < 0x30 || c > 0x39) {
                this.#strDigits = false;
                break;
              }
            }
          }
        }
        i = stop;
        if (i === n) break;
        if (chunk[i] === 0x5c) {
          escape = true;
          this.#strEscaped = true;
          this.#strAny = true;
          continue;
        }
        inString = false;
        this.#lastDigits = this.#strDigits && this.#strAny;
        this.#lastEscaped = this.#strEscaped;
        continue;
      }
      const b = chunk[i];
      if (num !== "") {
        if (
          (b >= 0x30 && b <= 0x39) || b === 0x2e || b === 0x65 || b === 0x45 || b === 0x2b ||
          b === 0x2d
        ) {
          num += String.fromCharCode(b);
          continue;
        }
        if (!SAFE_INT.test(num) || num === "-0") this.#unsafe = true;
        num = "";
      }
      if (b === 0x22) {
        inString = true;
        this.#strDigits = true;
        this.#strAny = false;
        this.#strEscaped = false;
      } else if (b === 0x3a) {
        // A key JavaScript would order first (an integer) or one with an escape.
        if (this.#lastDigits || this.#lastEscaped) this.#unsafe = true;
      } else if (b === 0x7b || b === 0x5b) {
        if (++depth > limit) this.#unsafe = true;
      } else if (b === 0x7d || b === 0x5d) {
        if (--depth === 0) {
          this.#sInString = false;
          this.#sEscape = false;
          this.#depth = 0;
          this.#number = "";
          return i;
        }
      } else if (b === 0x2d || (b >= 0x30 && b <= 0x39)) num = String.fromCharCode(b);
    }
    this.#sInString = inString;
    this.#sEscape = escape;
    this.#depth = depth;
    this.#number = num;
    return -1;
  }

  /**
   * Follows strings through `chunk` (a `"` outside a string opens one, `\\`
   * escapes the next byte) and refuses one longer than the limit, before the
   * tokenizer holds it.
   */
  #checkStrings(chunk: Uint8Array): void {
    let inString = this.#inString, escape = this.#escape, n = this.#stringBytes;
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i];
      if (!inString) {
        if (b === 0x22) {
          inString = true;
          n = 0;
          this.#stringStart = this.#bytes + i;
        }
        continue;
      }
      if (escape) escape = false;
      else if (b === 0x5c) escape = true;
      else if (b === 0x22) {
        inString = false;
        continue;
      }
      if (++n > this.#maxString) {
        throw new JsonSyntaxError(
          this.#stringStart,
          `a string longer than ${this.#maxString} bytes${this.#maxStringWhy}`,
        );
      }
    }
    this.#inString = inString;
    this.#escape = escape;
    this.#stringBytes = n;
  }

  #checkUtf8(chunk: Uint8Array, final: boolean): void {
    const tail = this.#tail;
    const joined = () => {
      const all = new Uint8Array(tail.byteLength + chunk.byteLength);
      all.set(tail);
      all.set(chunk, tail.byteLength);
      return all;
    };
    // The bytes up to the last character the chunk leaves incomplete must be valid UTF-8
    // (checked natively, without decoding them), and that character's bytes so far a valid
    // beginning: exactly what a fatal streaming TextDecoder accepts.
    const all = tail.byteLength === 0 ? chunk : joined();
    const suffix = final ? new Uint8Array(0) : incompleteSuffix(all);
    const body = all.subarray(0, all.byteLength - suffix.byteLength);
    if (!isUtf8(body) || (suffix.byteLength > 0 && !validUtf8Prefix(suffix))) {
      // The bad sequence may have begun in the previous chunk: look from the
      // first byte of the character that chunk left incomplete.
      const at = final ? this.#bytes : this.#bytes - tail.byteLength + firstInvalidUtf8(all);
      throw new JsonSyntaxError(at, "invalid UTF-8 byte sequence");
    }
    this.#tail = suffix;
  }

  #wrap(e: unknown): JsonSyntaxError {
    if (e instanceof JsonSyntaxError) return e;
    const msg = e instanceof Error ? e.message : String(e);
    const m = /absolute position "(\d+)"/.exec(msg);
    if (m) {
      const ch = /^Unexpected "(.*)" at/s.exec(msg)?.[1] ?? "?";
      return new JsonSyntaxError(
        Number(m[1]),
        `invalid JSON: unexpected ${describeChar(ch)}`,
      );
    }
    if (/ended in the middle of a token/.test(msg)) {
      return new JsonSyntaxError(
        this.#bytes,
        "truncated JSON: unexpected end of file inside a token",
      );
    }
    return new JsonSyntaxError(-1, `invalid JSON: ${msg}`);
  }

  #fail(offset: number, what: string): never {
    throw new JsonSyntaxError(offset, `invalid JSON: ${what}`);
  }

  #onToken(token: TokenType, value: PyJson, offset: number): void {
    this.#sawToken = true;
    if (this.#rootDone) this.#fail(offset, "extra data after the top-level value");
    const top = this.#stack[this.#stack.length - 1];
    if (top === undefined) {
      if (token !== TokenType.LEFT_BRACE) {
        throw new JsonSyntaxError(
          offset,
          `the top-level value must be an object with a "${this.arrayKey}" list`,
        );
      }
      this.#stack.push({
        array: false,
        value: null,
        streamed: true,
        state: S.KeyOrEnd,
        key: "",
        start: offset,
      });
      return;
    }
    switch (token) {
      case TokenType.STRING:
        if (top.state === S.KeyOrEnd || top.state === S.Key) {
          top.key = value as string;
          top.state = S.Colon;
          return;
        }
        return this.#value(top, value, offset, token);
      case TokenType.NUMBER:
      case TokenType.TRUE:
      case TokenType.FALSE:
      case TokenType.NULL:
        return this.#value(top, value, offset, token);
      case TokenType.LEFT_BRACE:
      case TokenType.LEFT_BRACKET: {
        this.#expectValue(top, offset, token);
        const array = token === TokenType.LEFT_BRACKET;
        const streamed = array && top.streamed && !top.array &&
          this.#stack.length === 1 && top.key === this.arrayKey;
        if (streamed) this.#rootKey(top.key, offset);
        if (this.#stack.length >= MAX_JSON_DEPTH) {
          // Deeper values could not be written back (or walked) without
          // exhausting the call stack: refused here, at the byte that opens one.
          throw new JsonSyntaxError(offset, `nesting deeper than ${MAX_JSON_DEPTH}`);
        }
        if (top.streamed && top.array) this.#elemStart = offset;
        this.#stack.push({
          array,
          value: streamed ? null : array ? [] : {},
          streamed,
          state: array ? S.ValueOrEnd : S.KeyOrEnd,
          key: "",
          start: offset,
        });
        if (streamed) {
          this.#out.push({ kind: "array-start", key: top.key });
          // The elements: the fast scan first (see the module doc).
          if (this.#fast) throw new ToScan(offset + 1);
        }
        return;
      }
      case TokenType.RIGHT_BRACE:
      case TokenType.RIGHT_BRACKET: {
        const closesArray = token === TokenType.RIGHT_BRACKET;
        if (
          top.array !== closesArray ||
          (top.state !== S.CommaOrEnd &&
            top.state !== (closesArray ? S.ValueOrEnd : S.KeyOrEnd))
        ) {
          this.#fail(offset, `unexpected "${closesArray ? "]" : "}"}"`);
        }
        this.#stack.pop();
        if (top.streamed) {
          if (top.array) {
            this.#out.push({ kind: "array-end" });
            this.#stack[this.#stack.length - 1].state = S.CommaOrEnd;
          } else this.#rootDone = true;
          return;
        }
        const parent = this.#stack[this.#stack.length - 1];
        if (parent.streamed && parent.array) this.#elemStart = -1;
        this.#attach(parent, top.value as PyJson, top.start);
        return;
      }
      case TokenType.COLON:
        if (top.state !== S.Colon) this.#fail(offset, 'unexpected ":"');
        top.state = S.Value;
        // A top-level value: its first byte is `readField`'s to look at (see the constructor).
        if (
          this.#readField !== undefined && this.#stack.length === 1 &&
          !this.#peek(offset + 1 - this.#chunkBase)
        ) throw new Declined();
        return;
      case TokenType.COMMA:
        if (top.state !== S.CommaOrEnd) this.#fail(offset, 'unexpected ","');
        top.state = top.array ? S.Value : S.Key;
        if (this.#fast && top.streamed && top.array) throw new ToScan(offset + 1);
        return;
      default:
        this.#fail(offset, "unexpected token");
    }
  }

  #expectValue(top: Frame, offset: number, token: TokenType): void {
    if (top.state !== S.Value && top.state !== S.ValueOrEnd) {
      const what = top.state === S.Colon
        ? 'expected ":"'
        : top.state === S.CommaOrEnd
        ? `expected "," or "${top.array ? "]" : "}"}"`
        : "expected a string key";
      this.#fail(offset, `${what}, found ${TokenType[token].toLowerCase()}`);
    }
  }

  #value(top: Frame, value: PyJson, offset: number, token: TokenType): void {
    this.#expectValue(top, offset, token);
    this.#attach(top, value, offset);
  }

  #rootKey(key: string, offset: number): void {
    if (this.#repeatKeys) return;
    if (this.#rootKeys.has(key)) {
      this.#fail(offset, `duplicate top-level key "${key}"`);
    }
    this.#rootKeys.add(key);
  }

  #attach(frame: Frame, value: PyJson, start: number): void {
    if (frame.streamed) {
      if (frame.array) {
        this.#out.push({ kind: "item", index: this.#items++, value, offset: start });
      } else {
        this.#rootKey(frame.key, start);
        if (frame.key === this.arrayKey) {
          throw new JsonSyntaxError(start, `"${this.arrayKey}" is not a list`);
        }
        this.#out.push({ kind: "field", key: frame.key, value });
      }
    } else if (frame.array) (frame.value as PyJson[]).push(value);
    else setKey(frame.value as PyObject, frame.key, value);
    frame.state = S.CommaOrEnd;
  }
}

function describeChar(ch: string): string {
  const c = ch.charCodeAt(0);
  if (c < 0x20 || c >= 0x7f) {
    return `byte 0x${c.toString(16).padStart(2, "0")}${c < 0x20 ? " (control character)" : ""}`;
  }
  return `"${ch}"`;
}

/**
 * Index of the first byte of `bytes` that starts an invalid UTF-8 sequence
 * (a sequence cut at the end of the chunk counts as valid).
 *
 * @example
 * ```ts
 * import { firstInvalidUtf8 } from "./json_events.ts";
 * if (firstInvalidUtf8(new Uint8Array([0x61, 0xff, 0x62])) !== 1) throw new Error();
 * if (firstInvalidUtf8(new Uint8Array([0x61, 0xc3])) !== 2) throw new Error(); // cut, not invalid
 * ```
 */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  const n = bytes.length;
  while (i < n) {
    const b = bytes[i];
    if (b < 0x80) {
      i++;
      continue;
    }
    if (b < 0xc2 || b > 0xf4) return i;
    const need = b >= 0xf0 ? 3 : b >= 0xe0 ? 2 : 1;
    // The second byte's range excludes overlong forms, surrogates and code points past U+10FFFF
    // (as a WHATWG decoder checks it, byte by byte).
    const lo = b === 0xe0 ? 0xa0 : b === 0xf0 ? 0x90 : 0x80;
    const hi = b === 0xed ? 0x9f : b === 0xf4 ? 0x8f : 0xbf;
    for (let k = 1; k <= need; k++) {
      if (i + k >= n) return n; // cut at the chunk end
      const c = bytes[i + k];
      if (k === 1 ? c < lo || c > hi : (c & 0xc0) !== 0x80) return i;
    }
    i += need + 1;
  }
  return n;
}
