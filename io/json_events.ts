/**
 * Streaming decoder for a JSON document whose root is an object with one
 * large array-valued key (SQuAD's `data`). Top-level fields and the array's
 * elements come out one at a time, in source order, so memory is bounded by
 * the largest element, not by the file. Values keep what Python's `json`
 * keeps (key order, exact number text: see `pyjson.ts`). Input bytes must be
 * valid UTF-8; errors name the byte offset. Nesting is bounded by
 * {@linkcode MAX_JSON_DEPTH}.
 *
 * @module
 */
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
   * @param offset byte offset of the problem (-1 when unknown)
   * @param message what is wrong
   */
  constructor(readonly offset: number, message: string) {
    super(message);
  }
}

const SAFE_INT = /^-?(?:0|[1-9][0-9]{0,14})$/;

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
  #utf8 = new TextDecoder("utf-8", { fatal: true });
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
  readonly #maxString: number;
  readonly #maxStringWhy: string;
  /** The string being read, if any: where it began, its bytes so far, an escape pending. */
  #inString = false;
  #escape = false;
  #stringStart = 0;
  #stringBytes = 0;

  /**
   * @param arrayKey the top-level key whose array elements are streamed
   * @param options `repeatedKeys: true` lets a top-level key repeat (each
   *   occurrence is a `field` event, as Python's `json` keeps the last);
   *   by default a repeated top-level key is refused. `maxStringBytes`: a
   *   string (key or value) of more bytes in the input, quotes aside, is
   *   refused at its first byte before more of it is held (default: no
   *   limit); `maxStringWhy` ends that message (which limit it is).
   */
  constructor(
    readonly arrayKey: string,
    options: {
      readonly repeatedKeys?: boolean;
      readonly maxStringBytes?: number;
      readonly maxStringWhy?: string;
    } = {},
  ) {
    this.#repeatKeys = options.repeatedKeys === true;
    this.#maxString = options.maxStringBytes ?? Infinity;
    this.#maxStringWhy = options.maxStringWhy ?? "";
    this.#tok.onToken = ({ token, value, offset }) => this.#onToken(token, value as PyJson, offset);
    this.#tok.onError = (err) => {
      throw err;
    };
  }

  /** Decodes one chunk; returns the events completed by it. */
  push(chunk: Uint8Array): JsonEvent[] {
    this.#checkUtf8(chunk, false);
    if (this.#maxString !== Infinity) this.#checkStrings(chunk);
    try {
      this.#tok.write(chunk);
    } catch (e) {
      throw this.#wrap(e);
    }
    this.#bytes += chunk.byteLength;
    const out = this.#out;
    this.#out = [];
    return out;
  }

  /** Signals the end of input; returns the last events. */
  end(): JsonEvent[] {
    this.#checkUtf8(new Uint8Array(0), true);
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
    try {
      this.#utf8.decode(chunk, { stream: !final });
    } catch {
      // The bad sequence may have begun in the previous chunk: look from the
      // first byte of the character that chunk left incomplete.
      const at = final ? this.#bytes : this.#bytes - tail.byteLength + firstInvalidUtf8(joined());
      throw new JsonSyntaxError(at, "invalid UTF-8 byte sequence");
    }
    this.#tail = incompleteSuffix(chunk.byteLength >= 3 ? chunk : joined());
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
        this.#stack.push({
          array,
          value: streamed ? null : array ? [] : {},
          streamed,
          state: array ? S.ValueOrEnd : S.KeyOrEnd,
          key: "",
          start: offset,
        });
        if (streamed) this.#out.push({ kind: "array-start", key: top.key });
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
        this.#attach(parent, top.value as PyJson, top.start);
        return;
      }
      case TokenType.COLON:
        if (top.state !== S.Colon) this.#fail(offset, 'unexpected ":"');
        top.state = S.Value;
        return;
      case TokenType.COMMA:
        if (top.state !== S.CommaOrEnd) this.#fail(offset, 'unexpected ","');
        top.state = top.array ? S.Value : S.Key;
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
    let need: number, min: number;
    if (b >= 0xc2 && b <= 0xdf) [need, min] = [1, 0x80];
    else if (b >= 0xe0 && b <= 0xef) [need, min] = [2, 0x800];
    else if (b >= 0xf0 && b <= 0xf4) [need, min] = [3, 0x10000];
    else return i;
    let cp = b & (0x3f >> need);
    for (let k = 1; k <= need; k++) {
      if (i + k >= n) return n; // cut at the chunk end
      const c = bytes[i + k];
      if ((c & 0xc0) !== 0x80) return i;
      cp = (cp << 6) | (c & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += need + 1;
  }
  return n;
}
