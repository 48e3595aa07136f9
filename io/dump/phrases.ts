/**
 * A fast, validating index over a paragraph's phrase list (a JSON list of
 * strings): one pass over the bytes checks the whole list and notes where
 * its strings lie, and a phrase is decoded only when asked for. `merge`
 * needs one or a few phrases of each of thousands of lists, so this skips
 * decoding and `JSON.parse` of everything else.
 *
 * The contract is exact equivalence with {@linkcode parsePhrases} (decode,
 * `JSON.parse`, check), also here: the scanner accepts only input it fully
 * understands (a list of strings with valid UTF-8, valid escapes and JSON
 * whitespace); on anything else it hands the bytes to `parsePhrases`, which
 * throws its error, or (should it succeed) backs the returned list.
 *
 * @module
 */
import { InputError } from "../errors.ts";

/**
 * A validated JSON list of strings, decoded one element at a time.
 *
 * @example
 * ```ts
 * import { indexPhrases, type PhraseList } from "./phrases.ts";
 * const list: PhraseList = indexPhrases(new TextEncoder().encode('["a", "b"]'), "T_0.json");
 * if (list.length !== 2 || list.at(1) !== "b") throw new Error("wrong list");
 * ```
 */
export interface PhraseList {
  /** Number of phrases. */
  readonly length: number;
  /** Phrase i (0 <= i < length), decoded on demand; equals JSON.parse's element i. */
  at(i: number): string;
}

/** JavaScript's longest string (V8: 2^29 - 24 UTF-16 code units). */
const MAX_STRING = (1 << 29) - 24;

/**
 * The longest phrase list file that can be read (about 1.5 GiB): its text must
 * be one JavaScript string, and UTF-8 takes at most 3 bytes per UTF-16 code
 * unit, so a longer file never fits.
 */
export const MAX_PHRASE_LIST_BYTES = 3 * MAX_STRING;

/**
 * The refusal of a phrase list file of `size` bytes, more text than one
 * JavaScript string holds.
 *
 * @example
 * ```ts
 * import { phraseListTooLong } from "./phrases.ts";
 * const e = phraseListTooLong("T_0.json", 3e9);
 * if (!String(e).startsWith("T_0.json: invalid phrase list (3000000000 bytes")) throw e;
 * ```
 */
export function phraseListTooLong(label: string, size: number): InputError {
  return new InputError({
    file: label,
    where: "",
    message:
      `invalid phrase list (${size} bytes: more text than one JavaScript string holds, ${MAX_STRING} characters)`,
  });
}

// ---------------------------------------------------------------------------
// The plain parser (the reference the scanner must agree with).

const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Parses a paragraph's phrase list (a JSON list of strings) in full.
 *
 * @throws {InputError} naming `label` when it is not one.
 *
 * @example
 * ```ts
 * import { parsePhrases } from "./phrases.ts";
 * const list = parsePhrases(new TextEncoder().encode('["a", "b c"]'), "T_0.json");
 * if (list.join("|") !== "a|b c") throw new Error("wrong list");
 * ```
 */
export function parsePhrases(bytes: Uint8Array, label: string): string[] {
  let value: unknown;
  try {
    value = JSON.parse(STRICT_UTF8.decode(bytes));
  } catch (e) {
    const m = e instanceof Error ? e.message : "";
    if (bytes.length > MAX_STRING && /maximum length|string length/i.test(m)) {
      throw phraseListTooLong(label, bytes.length);
    }
    throw new InputError({
      file: label,
      where: "",
      message: `invalid phrase list (${e instanceof Error ? e.message : String(e)})`,
    });
  }
  if (!Array.isArray(value)) {
    throw new InputError({ file: label, where: "", message: "not a JSON list of phrases" });
  }
  for (let i = 0; i < value.length; i++) {
    if (typeof value[i] !== "string") {
      throw new InputError({
        file: label,
        where: `phrase ${i}`,
        message: "not a string (the phrase list must hold strings)",
      });
    }
  }
  return value as string[];
}

// ---------------------------------------------------------------------------
// The fast scanner.
//
// The grammar, as a state machine over the bytes (after one optional BOM,
// which TextDecoder strips):
//
//   START  -ws-> START   -[-> OPEN
//   OPEN   -ws-> OPEN    -"-> IN     -]-> END
//   IN     -"-> AFTER    (anything else: string content, below)
//   AFTER  -ws-> AFTER   -,-> COMMA  -]-> END
//   COMMA  -ws-> COMMA   -"-> IN
//   END    -ws-> END     (and the input must end in END)
//
// String content is printable ASCII but `"` and `\`, a valid escape, or a
// valid UTF-8 sequence of 2 to 4 bytes; ws is space, tab, LF, CR.
// `scanBytes` runs this machine byte by byte. The main loop runs it 32 bytes
// at a time over the aligned middle of the input, when all 32 are printable
// ASCII but `\` (almost always) and the state is IN, AFTER or COMMA: it looks
// up each byte pair as two 2-bit classes (plain, `"`, space, `,`), then the
// 16 class bits of each 8 bytes as the state reached from each of the three
// states, plus the number of quotes. Where that does not apply (another
// byte, another state, no valid transition, a `]`), `scanUnit` takes the 32
// bytes 8 at a time, and `scanBytes`, which decides, those 8 that do not fit.
//
// No offsets are stored per phrase: a checkpoint every 64 bytes (a position
// outside any escape or UTF-8 sequence, and the number of string quotes
// before it) lets `at` find a phrase by walking at most 64 bytes plus the
// phrase itself.

/** States. The tables cover IN, AFTER and COMMA; OTHER: they do not apply. */
const IN = 0;
const AFTER = 1;
const COMMA = 2;
const OTHER = 3;
const START = 4;
const OPEN = 5;
const END = 6;

/**
 * Inputs this long or longer go the slow way: positions stay well within an
 * int32, and the decoded text stays far below V8's maximum string length, so
 * that `parsePhrases` cannot fail where the scanner succeeds.
 */
const MAX_FAST_BYTES = 1 << 28;

/** The main loop's units: 32 bytes (1 << UNIT_SHIFT); 2 units per checkpoint. */
const UNIT_SHIFT = 5;
const CHUNK_UNITS = 2;

/** Byte kinds for {@linkcode scanBytes}. */
const B_PLAIN = 0; // printable ASCII (0x20..0x7f) but the next ones
const B_SPACE = 1; // the space
const B_COMMA = 2;
const B_OPEN = 3; // [
const B_CLOSE = 4; // ]  (B_PLAIN..B_CLOSE: plain string content)
const B_QUOTE = 5;
const B_BACKSLASH = 6;
const B_WS = 7; // tab, LF, CR
const B_OTHER = 8; // other control characters; 0x80 and above

const BYTE_KIND = (() => {
  const t = new Uint8Array(256).fill(B_OTHER);
  t.fill(B_PLAIN, 0x20, 0x80);
  t[0x20] = B_SPACE;
  t[0x2c] = B_COMMA;
  t[0x5b] = B_OPEN;
  t[0x5d] = B_CLOSE;
  t[0x22] = B_QUOTE;
  t[0x5c] = B_BACKSLASH;
  t[0x09] = t[0x0a] = t[0x0d] = B_WS;
  return t;
})();

/** 2-bit byte classes for the tables. */
const C_PLAIN = 0; // printable ASCII but `"`, space, `,` and `\`
const C_QUOTE = 1;
const C_SPACE = 2;
const C_COMMA = 3;
/**
 * In PAIR: either byte is none of the four (a control character, `\`,
 * non-ASCII). Bit 19: in the STEP8 index of 4 pairs (shifted by 0, 4, 8 and
 * 12 bits) the flags land in bits 19, 23, 27 and 31, clear of the 16 class
 * bits, so one test of the bits above 16 finds any of them.
 */
const F_SPECIAL = 1 << 19;

/** Transitions of the tables' states on a class: TRANSITION[4 * state + class]. */
const TRANSITION = [
  [IN, AFTER, IN, IN], // IN: a quote ends the string
  [OTHER, OTHER, AFTER, COMMA], // AFTER: space, `,` (`]` is left to scanBytes)
  [OTHER, IN, COMMA, OTHER], // COMMA: space, a quote starts a string
  [OTHER, OTHER, OTHER, OTHER],
].flat();

/**
 * PAIR[b0 | b1 << 8]: the classes of bytes b0 and b1 (bits 0-1, 2-3), or
 * F_SPECIAL.
 * STEP8[classes of 8 bytes, 2 bits each, first byte lowest]: bits 2s..2s+1
 * the state reached from state s (IN, AFTER, COMMA; OTHER, and from OTHER,
 * when the bytes do not fit), bits 8-11 the number of quotes.
 * Allocated at load (384 KiB, zeroed) and filled on first use (about 1 ms):
 * arrays that are module constants let the JIT drop their bounds checks.
 */
const PAIR = new Uint32Array(65536);
const STEP8 = new Uint16Array(65536);
let tablesFilled = false;

function fillTables(): void {
  const cls = Array.from(
    BYTE_KIND,
    (k) =>
      k === B_QUOTE
        ? C_QUOTE
        : k === B_SPACE
        ? C_SPACE
        : k === B_COMMA
        ? C_COMMA
        : k <= B_CLOSE
        ? C_PLAIN
        : F_SPECIAL,
  );
  const rows = [0, 1, 2, 3].map((c1) => Uint32Array.from(cls, (c0) => c0 | (c1 << 2)));
  for (let b1 = 0; b1 < 256; b1++) {
    if (cls[b1] === F_SPECIAL) PAIR.fill(F_SPECIAL, b1 << 8, (b1 + 1) << 8);
    else PAIR.set(rows[cls[b1]], b1 << 8);
  }
  const step4 = new Uint16Array(256);
  for (let e = 0; e < 256; e++) {
    let map = 0, quotes = 0;
    for (let j = 0; j < 4; j++) if (((e >> (2 * j)) & 3) === C_QUOTE) quotes++;
    for (let s0 = 0; s0 < 4; s0++) {
      let s = s0;
      for (let j = 0; j < 4; j++) s = TRANSITION[4 * s + ((e >> (2 * j)) & 3)];
      map |= s << (2 * s0);
    }
    step4[e] = map | (quotes << 8);
  }
  // 8 bytes: the low 4, then the high 4. step4 has few distinct values (about
  // 25): compose each pair of them once, then fill the table row by row.
  const values = [...new Set(step4)];
  const nv = values.length;
  const which = step4.map((v) => values.indexOf(v));
  const composed = new Uint16Array(nv * nv);
  for (let l = 0; l < nv; l++) {
    for (let h = 0; h < nv; h++) {
      const lo = values[l], hi = values[h];
      let map = 0;
      for (let s0 = 0; s0 < 4; s0++) map |= ((hi >> (2 * ((lo >> (2 * s0)) & 3))) & 3) << (2 * s0);
      composed[l * nv + h] = map | (((lo >> 8) + (hi >> 8)) << 8);
    }
  }
  const row = new Uint16Array(256);
  for (let h = 0; h < nv; h++) {
    for (let e0 = 0; e0 < 256; e0++) row[e0] = composed[which[e0] * nv + h];
    for (let e1 = 0; e1 < 256; e1++) if (which[e1] === h) STEP8.set(row, e1 << 8);
  }
  tablesFilled = true;
}

/** 1 for the hex digits 0-9 a-f A-F. */
const HEX = (() => {
  const t = new Uint8Array(256);
  for (const c of "0123456789abcdefABCDEF") t[c.charCodeAt(0)] = 1;
  return t;
})();

/** 1 for the characters that may follow `\` but `u`: `" \ / b f n r t`. */
const SIMPLE_ESCAPE = (() => {
  const t = new Uint8Array(256);
  for (const c of '"\\/bfnrt') t[c.charCodeAt(0)] = 1;
  return t;
})();

/** The main loop reads little-endian int32 words (every common platform). */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** True when `b` is a UTF-8 continuation byte (80..BF). */
function isCont(b: number): boolean {
  return (b & 0xc0) === 0x80;
}

/**
 * The length of the valid UTF-8 sequence (2 to 4 bytes) that starts with
 * byte `c` (0x80 or above) at `i`, as WHATWG's fatal decoder defines it: no
 * overlong forms, no surrogates, nothing above U+10FFFF, none truncated; 0
 * when there is none.
 */
function utf8Length(bytes: Uint8Array, i: number, c: number): number {
  const n = bytes.length;
  if (c < 0xc2) return 0; // a continuation byte, or C0/C1 (overlong)
  if (c < 0xe0) return i + 1 < n && isCont(bytes[i + 1]) ? 2 : 0;
  if (c < 0xf0) {
    if (i + 2 >= n) return 0;
    const b1 = bytes[i + 1];
    const lo = c === 0xe0 ? 0xa0 : 0x80; // E0 80..9F: overlong
    const hi = c === 0xed ? 0x9f : 0xbf; // ED A0..BF: surrogates
    return b1 >= lo && b1 <= hi && isCont(bytes[i + 2]) ? 3 : 0;
  }
  if (c < 0xf5) {
    if (i + 3 >= n) return 0;
    const b1 = bytes[i + 1];
    const lo = c === 0xf0 ? 0x90 : 0x80; // F0 80..8F: overlong
    const hi = c === 0xf4 ? 0x8f : 0xbf; // F4 90..: above U+10FFFF
    return b1 >= lo && b1 <= hi && isCont(bytes[i + 2]) && isCont(bytes[i + 3]) ? 4 : 0;
  }
  return 0; // F5..FF
}

/**
 * The length of the valid escape (2 or 6 bytes) that starts with `\` at `i`;
 * 0 when there is none.
 */
function escapeLength(bytes: Uint8Array, i: number): number {
  const n = bytes.length;
  if (i + 1 >= n) return 0;
  const e = bytes[i + 1];
  if (e === 0x75) { // u
    return i + 5 < n && HEX[bytes[i + 2]] && HEX[bytes[i + 3]] && HEX[bytes[i + 4]] &&
        HEX[bytes[i + 5]]
      ? 6
      : 0;
  }
  return SIMPLE_ESCAPE[e] ? 2 : 0;
}

/**
 * The scan state between {@linkcode scanBytes} calls: the state, the number
 * of string quotes so far, and the first byte not yet consumed.
 */
let state = START;
let quotes = 0;
let resumeAt = 0;

/**
 * Runs the state machine over `bytes[from, to)`, less what an escape or
 * UTF-8 sequence already consumed; may consume past `to` (to the end of a
 * sequence). False on bytes the grammar does not allow.
 */
function scanBytes(bytes: Uint8Array, from: number, to: number): boolean {
  let i = from > resumeAt ? from : resumeAt;
  let s = state;
  let k = quotes;
  while (i < to) {
    const c = bytes[i];
    const kind = BYTE_KIND[c];
    if (s === IN) {
      if (kind <= B_CLOSE) {
        i++;
      } else if (kind === B_QUOTE) {
        s = AFTER;
        k++;
        i++;
      } else {
        let len = 0; // a control character
        if (kind === B_BACKSLASH) len = escapeLength(bytes, i);
        else if (c >= 0x80) len = utf8Length(bytes, i, c);
        if (len === 0) return false;
        i += len;
      }
      continue;
    }
    i++;
    if (kind === B_SPACE || kind === B_WS) continue;
    if (s === AFTER) {
      if (kind === B_COMMA) s = COMMA;
      else if (kind === B_CLOSE) s = END;
      else return false;
    } else if (s === COMMA || s === OPEN) {
      if (kind === B_QUOTE) {
        s = IN;
        k++;
      } else if (kind === B_CLOSE && s === OPEN) {
        s = END;
      } else {
        return false;
      }
    } else if (s === START && kind === B_OPEN) {
      s = OPEN;
    } else {
      return false; // START but `[`, END
    }
  }
  state = s;
  quotes = k;
  resumeAt = i;
  return true;
}

/**
 * A 32-byte unit the main loop could not take whole (from int32 `w` of
 * `words`, at byte `base`): 8 bytes at a time by the tables where they fit,
 * else byte by byte. False on bytes the grammar does not allow.
 */
function scanUnit(bytes: Uint8Array, words: Int32Array, w: number, base: number): boolean {
  for (let j = 0; j < 4; j++, w += 2, base += 8) {
    const s = state;
    if (s <= COMMA && base >= resumeAt) {
      const x = words[w], y = words[w + 1];
      const a = PAIR[x & 0xffff], b = PAIR[x >>> 16], d = PAIR[y & 0xffff], e = PAIR[y >>> 16];
      if (((a | b | d | e) & F_SPECIAL) === 0) {
        const m = STEP8[(a | (b << 4) | (d << 8) | (e << 12)) & 0xffff];
        const next = (m >>> (s << 1)) & 3;
        if (next !== OTHER) {
          state = next;
          quotes += m >>> 8;
          continue;
        }
      }
    }
    if (!scanBytes(bytes, base, base + 8)) return false;
  }
  return true;
}

/** A list {@linkcode scan} accepted: its length and checkpoints. */
interface Scanned {
  count: number;
  /** Pairs (position, string quotes before it), both ascending; the first is (0, 0). */
  checkpoints: Int32Array;
}

/** Scans `bytes` as a JSON list of strings; undefined on anything it does not accept. */
function scan(bytes: Uint8Array): Scanned | undefined {
  if (!tablesFilled) fillTables();
  const n = bytes.length;
  state = START;
  quotes = 0;
  // TextDecoder strips one leading byte order mark.
  resumeAt = n >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  // Units: the int32 view of bytes [head, head + 32 * units).
  const head = (4 - (bytes.byteOffset & 3)) & 3;
  const units = LITTLE_ENDIAN && n > head ? (n - head) >> UNIT_SHIFT : 0;
  const chunks = Math.ceil(units / CHUNK_UNITS);
  // Checkpoint 0: the start; checkpoint c + 1: the start of chunk c.
  const cp = new Int32Array(2 * chunks + 2);
  if (units === 0) {
    if (!scanBytes(bytes, 0, n)) return undefined;
  } else {
    if (!scanBytes(bytes, 0, head)) return undefined;
    const words = new Int32Array(bytes.buffer, bytes.byteOffset + head, 8 * units);
    let s = state <= COMMA ? state : OTHER;
    let k = quotes;
    let resume = resumeAt;
    for (let c = 0, u = 0; c < chunks; c++) {
      const chunkStart = head + (u << UNIT_SHIFT);
      if (chunkStart >= resume) {
        cp[2 * c + 2] = chunkStart;
        cp[2 * c + 3] = k;
      } else { // inside a sequence: repeat the previous checkpoint
        cp[2 * c + 2] = cp[2 * c];
        cp[2 * c + 3] = cp[2 * c + 1];
      }
      const last = u + CHUNK_UNITS < units ? u + CHUNK_UNITS : units;
      for (; u < last; u++) {
        const w = 8 * u;
        const w0 = words[w], w1 = words[w + 1], w2 = words[w + 2], w3 = words[w + 3];
        const w4 = words[w + 4], w5 = words[w + 5], w6 = words[w + 6], w7 = words[w + 7];
        const p0 = PAIR[w0 & 0xffff], p1 = PAIR[w0 >>> 16], p2 = PAIR[w1 & 0xffff];
        const p3 = PAIR[w1 >>> 16], p4 = PAIR[w2 & 0xffff], p5 = PAIR[w2 >>> 16];
        const p6 = PAIR[w3 & 0xffff], p7 = PAIR[w3 >>> 16], p8 = PAIR[w4 & 0xffff];
        const p9 = PAIR[w4 >>> 16], p10 = PAIR[w5 & 0xffff], p11 = PAIR[w5 >>> 16];
        const p12 = PAIR[w6 & 0xffff], p13 = PAIR[w6 >>> 16], p14 = PAIR[w7 & 0xffff];
        const p15 = PAIR[w7 >>> 16];
        const i0 = p0 | (p1 << 4) | (p2 << 8) | (p3 << 12);
        const i1 = p4 | (p5 << 4) | (p6 << 8) | (p7 << 12);
        const i2 = p8 | (p9 << 4) | (p10 << 8) | (p11 << 12);
        const i3 = p12 | (p13 << 4) | (p14 << 8) | (p15 << 12);
        const m0 = STEP8[i0 & 0xffff], m1 = STEP8[i1 & 0xffff];
        const m2 = STEP8[i2 & 0xffff], m3 = STEP8[i3 & 0xffff];
        // The state after each 8 bytes (OTHER stays OTHER).
        const s0 = (m0 >>> (s << 1)) & 3, s1 = (m1 >>> (s0 << 1)) & 3;
        const s2 = (m2 >>> (s1 << 1)) & 3, next = (m3 >>> (s2 << 1)) & 3;
        const special = (i0 | i1 | i2 | i3) >>> 16; // any F_SPECIAL
        const base = head + (u << UNIT_SHIFT);
        if (next !== OTHER && special === 0 && base >= resume) {
          s = next;
          k += (m0 >>> 8) + (m1 >>> 8) + (m2 >>> 8) + (m3 >>> 8);
        } else {
          if (s !== OTHER) state = s;
          quotes = k;
          resumeAt = resume;
          if (!scanUnit(bytes, words, w, base)) return undefined;
          s = state <= COMMA ? state : OTHER;
          k = quotes;
          resume = resumeAt;
        }
      }
    }
    if (s !== OTHER) state = s;
    quotes = k;
    resumeAt = resume;
    if (!scanBytes(bytes, head + (units << UNIT_SHIFT), n)) return undefined;
  }
  if (state !== END) return undefined;
  return { count: quotes >> 1, checkpoints: cp };
}

// ---------------------------------------------------------------------------
// The lists.

const UTF8 = new TextDecoder("utf-8");
/** One UTF-16 code unit per byte (windows-1252), so byte and string positions agree. */
const BYTEWISE = new TextDecoder("latin1");

/** Longest ASCII phrase built with one `String.fromCharCode.apply` call. */
const APPLY_MAX = 4096;
/** After this many calls of `at` on a list, it decodes the whole input once and slices it. */
const SLICE_AFTER = 16;

function changed(): Error {
  return new Error("the phrase list's bytes changed after indexPhrases (the buffer was reused)");
}

function outOfRange(i: number, length: number): RangeError {
  return new RangeError(`phrase index ${i} out of range (the list has ${length} phrases)`);
}

/** A list {@linkcode scan} accepted: finds and decodes its phrases in the bytes. */
class ScannedPhrases implements PhraseList {
  readonly length: number;
  readonly #bytes: Uint8Array;
  readonly #cp: Int32Array;
  /** Just past the closing quote of the phrase found last, and the quotes before that. */
  #curPos = 0;
  #curQuotes = 0;
  /** Calls of `at` so far, and the whole input decoded byte for byte once there were many. */
  #calls = 0;
  #text: string | undefined;

  constructor(bytes: Uint8Array, scanned: Scanned) {
    this.#bytes = bytes;
    this.#cp = scanned.checkpoints;
    this.length = scanned.count;
  }

  at(i: number): string {
    if (!(Number.isInteger(i) && i >= 0 && i < this.length)) throw outOfRange(i, this.length);
    const bytes = this.#bytes, cp = this.#cp;
    const open = 2 * i; // quotes before phrase i's opening quote
    // The cursor when phrase i is the next one, else the last checkpoint with
    // at most `open` quotes before it (or the cursor when that is nearer).
    let p = this.#curPos, k = this.#curQuotes;
    if (k !== open) {
      let lo = 0, hi = (cp.length >> 1) - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (cp[2 * mid + 1] <= open) lo = mid;
        else hi = mid - 1;
      }
      if (!(k <= open && p > cp[2 * lo])) {
        p = cp[2 * lo];
        k = cp[2 * lo + 1];
      }
    }
    // To the opening quote. The list is valid: only quotes and escapes matter.
    const n = bytes.length;
    for (;;) {
      if (p >= n) throw changed();
      const c = bytes[p];
      if (c === 0x22) {
        if (k === open) break;
        k++;
      } else if (c === 0x5c && (k & 1) === 1) {
        p++; // the escaped byte (of \uXXXX, hex digits follow)
      }
      p++;
    }
    // To the closing quote, noting escapes and non-ASCII bytes.
    const start = p + 1;
    let escaped = false, any = 0;
    p = start;
    for (;;) {
      if (p >= n) throw changed();
      const c = bytes[p];
      if (c === 0x22) break;
      if (c === 0x5c) {
        escaped = true;
        p += 2;
      } else {
        any |= c;
        p++;
      }
    }
    this.#curPos = p + 1;
    this.#curQuotes = open + 2;
    let text = this.#text;
    if (text === undefined && ++this.#calls === SLICE_AFTER) {
      text = this.#text = BYTEWISE.decode(bytes);
    }
    if (any >= 0x80) {
      const token = bytes.subarray(escaped ? start - 1 : start, escaped ? p + 1 : p);
      return escaped ? JSON.parse(UTF8.decode(token)) as string : UTF8.decode(token);
    }
    // ASCII: the bytes are the UTF-16 code units.
    if (escaped) {
      const token = text !== undefined
        ? text.slice(start - 1, p + 1)
        : UTF8.decode(bytes.subarray(start - 1, p + 1));
      return JSON.parse(token) as string;
    }
    if (text !== undefined) return text.slice(start, p);
    if (p - start > APPLY_MAX) return UTF8.decode(bytes.subarray(start, p));
    return String.fromCharCode.apply(null, bytes.subarray(start, p) as unknown as number[]);
  }
}

/** A list parsed by `parsePhrases` (the scanner declined it, yet it is valid). */
class ArrayPhrases implements PhraseList {
  readonly #items: string[];

  constructor(items: string[]) {
    this.#items = items;
  }

  get length(): number {
    return this.#items.length;
  }

  at(i: number): string {
    if (!(Number.isInteger(i) && i >= 0 && i < this.#items.length)) {
      throw outOfRange(i, this.#items.length);
    }
    return this.#items[i];
  }
}

/**
 * Validates a paragraph's phrase list (a JSON list of strings) in one pass
 * and indexes it, decoding a phrase only when {@linkcode PhraseList.at} asks
 * for it. Accepts and rejects exactly what `parsePhrases` (`./dump_reader.ts`)
 * does, with the identical error, and `at(i)` equals its element `i`.
 *
 * The list keeps `bytes` by reference (no copy): the caller must not modify
 * or reuse the buffer (a scratch read buffer, say) while the list is in use.
 * It also holds a checkpoint (8 bytes) per 64 bytes of input; `at` walks from
 * the nearest one (usually under 64 bytes away) through the phrase, or on
 * from the previous phrase when called in ascending order. From its 16th
 * call on one list, `at` decodes the whole input once (a string as long as
 * the input, kept with the list) and slices ASCII phrases out of it.
 *
 * @throws {InputError} naming `label` when `bytes` is not a JSON list of strings.
 *
 * @example
 * ```ts
 * import { indexPhrases } from "./phrases.ts";
 * const list = indexPhrases(new TextEncoder().encode('["a", "b c", "\\u00e9"]'), "T_0.json");
 * if (list.length !== 3 || list.at(1) !== "b c" || list.at(2) !== "é") throw new Error("wrong");
 * ```
 */
export function indexPhrases(bytes: Uint8Array, label: string): PhraseList {
  const scanned = bytes.length < MAX_FAST_BYTES ? scan(bytes) : undefined;
  if (scanned === undefined) return new ArrayPhrases(parsePhrases(bytes, label));
  return new ScannedPhrases(bytes, scanned);
}
