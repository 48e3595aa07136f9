/**
 * Python-compatible JSON: values that remember what Python's `json` module
 * would remember (key order, the exact text of numbers) and a writer that
 * formats them exactly like `json.dump`/`json.dumps` with default settings
 * (`ensure_ascii=True`, separators `", "` and `": "`).
 *
 * @module
 */

/**
 * A JSON number whose text does not survive a round trip through a JS
 * `number` the way Python prints it: a float literal (`1.0`, `2e5`), an
 * integer beyond 2^53, or `-0`. Python's `json.load` keeps ints exact and
 * turns every literal with `.`/`e` into a float; {@linkcode pyNumberText}
 * reproduces what `json.dump` then writes.
 *
 * @example
 * ```ts
 * import { RawNumber, pyDumps } from "./pyjson.ts";
 * if (pyDumps(new RawNumber("1e5")) !== "100000.0") throw new Error();
 * if (pyDumps(new RawNumber("-0")) !== "0") throw new Error();
 * if (new RawNumber("2.5").valueOf() !== 2.5) throw new Error();
 * ```
 */
export class RawNumber {
  /**
   * A number kept as its JSON source text.
   *
   * @param text the number exactly as it appeared in the JSON source
   */
  constructor(readonly text: string) {}
  /** The numeric value as a JS number (may lose precision for huge ints). */
  valueOf(): number {
    return Number(this.text);
  }
}

/** A parsed JSON value that keeps everything Python's `json` keeps. */
export type PyJson =
  | null
  | boolean
  | number
  | string
  | RawNumber
  | PyJson[]
  | PyObject;

/** A JSON object; key order is source order (see {@linkcode objectKeys}). */
export interface PyObject {
  /** The value at `key`. */
  [key: string]: PyJson;
}

/**
 * Symbol under which an object whose source key order differs from
 * JavaScript's own property order (integer-like keys come first in JS) keeps
 * its keys in source order.
 */
export const KEY_ORDER: unique symbol = Symbol("phraseval.keyOrder");

/**
 * The keys of a parsed object in the order Python's `dict` would keep them
 * (first occurrence; a repeated key keeps its first position and last value).
 *
 * @example
 * ```ts
 * import { objectKeys } from "./pyjson.ts";
 * if (objectKeys({ b: 1, a: 2 }).join() !== "b,a") throw new Error();
 * ```
 */
export function objectKeys(obj: PyObject): readonly string[] {
  const order = (obj as { [KEY_ORDER]?: string[] })[KEY_ORDER];
  return order ?? Object.keys(obj);
}

const INTEGER_LIKE = /^(?:0|[1-9][0-9]*)$/;

/**
 * Sets `key` on `obj` the way Python's dict does and records source order
 * when JavaScript would reorder it (integer-like keys).
 *
 * @example
 * ```ts
 * import { objectKeys, type PyObject, setKey } from "./pyjson.ts";
 * const o: PyObject = {};
 * setKey(o, "b", 1);
 * setKey(o, "10", 2); // JavaScript would list "10" first
 * setKey(o, "b", 3); // a repeated key keeps its first position
 * if (objectKeys(o).join() !== "b,10" || o.b !== 3) throw new Error();
 * ```
 */
export function setKey(obj: PyObject, key: string, value: PyJson): void {
  const holder = obj as { [KEY_ORDER]?: string[] };
  let order = holder[KEY_ORDER];
  if (order === undefined && INTEGER_LIKE.test(key)) {
    order = Object.keys(obj);
    Object.defineProperty(obj, KEY_ORDER, { value: order, enumerable: false });
  }
  if (order !== undefined && !Object.hasOwn(obj, key)) order.push(key);
  obj[key] = value;
}

/**
 * Python's `repr(float)` (which `json.dumps` uses): shortest round-trip
 * digits, fixed notation for 1e-4 <= |x| < 1e16 with a trailing `.0` for
 * integral values, otherwise `d.ddde+XX` with at least two exponent digits.
 * Non-finite values print as `NaN`, `Infinity`, `-Infinity` (as `json.dumps`).
 *
 * @example
 * ```ts
 * import { pyFloatRepr } from "./pyjson.ts";
 * const cases: [number, string][] = [
 *   [100, "100.0"],
 *   [1e-5, "1e-05"],
 *   [81.20151371807, "81.20151371807"],
 *   [1e16, "1e+16"],
 *   [-0, "-0.0"],
 * ];
 * for (const [x, want] of cases) {
 *   if (pyFloatRepr(x) !== want) throw new Error(`${x}: ${pyFloatRepr(x)}`);
 * }
 * ```
 */
export function pyFloatRepr(x: number): string {
  if (Number.isNaN(x)) return "NaN";
  if (x === Infinity) return "Infinity";
  if (x === -Infinity) return "-Infinity";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const sign = x < 0 ? "-" : "";
  const exp = Math.abs(x).toExponential(); // shortest round-trip digits
  const eAt = exp.indexOf("e");
  const digits = exp.slice(0, eAt).replace(".", "");
  const e = Number(exp.slice(eAt + 1));
  const decpt = e + 1; // value = 0.DIGITS * 10^decpt
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) return `${sign}0.${"0".repeat(-decpt)}${digits}`;
    if (decpt >= digits.length) {
      return `${sign}${digits}${"0".repeat(decpt - digits.length)}.0`;
    }
    return `${sign}${digits.slice(0, decpt)}.${digits.slice(decpt)}`;
  }
  const mant = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  const ae = Math.abs(e);
  return `${sign}${mant}e${e < 0 ? "-" : "+"}${ae < 10 ? "0" : ""}${ae}`;
}

/**
 * What Python's `json.dumps(json.loads(text))` prints for a JSON number
 * literal: integers exactly (`-0` becomes `0`), floats through
 * {@linkcode pyFloatRepr}.
 *
 * @example
 * ```ts
 * import { pyNumberText } from "./pyjson.ts";
 * if (pyNumberText("12345678901234567890") !== "12345678901234567890") throw new Error();
 * if (pyNumberText("2.50") !== "2.5" || pyNumberText("1E5") !== "100000.0") throw new Error();
 * ```
 */
export function pyNumberText(text: string): string {
  if (/^-?[0-9]+$/.test(text)) return BigInt(text).toString();
  return pyFloatRepr(Number(text));
}

const HEX = "0123456789abcdef";
const ESCAPES: Record<number, string> = {
  0x22: '\\"',
  0x5c: "\\\\",
  0x0a: "\\n",
  0x0d: "\\r",
  0x09: "\\t",
  0x08: "\\b",
  0x0c: "\\f",
};
// Characters json.dumps(ensure_ascii=True) writes as themselves.
const PLAIN = /^[ !#-\[\]-~]*$/;

/**
 * A string as Python's `json.dumps(s)` writes it with `ensure_ascii=True`:
 * printable ASCII as is, `"` and `\` escaped, `\n \r \t \b \f` short escapes,
 * everything else `\uXXXX` (lower-case hex; astral characters as surrogate
 * pairs, lone surrogates as themselves escaped).
 *
 * @example
 * ```ts
 * import { pyStringLiteral } from "./pyjson.ts";
 * if (pyStringLiteral("24–10") !== '"24\\u201310"') throw new Error();
 * if (pyStringLiteral('a"b\n😀') !== '"a\\"b\\n\\ud83d\\ude00"') throw new Error();
 * ```
 */
export function pyStringLiteral(s: string): string {
  if (PLAIN.test(s)) return `"${s}"`;
  let out = '"';
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c <= 0x7e && c !== 0x22 && c !== 0x5c) continue;
    if (start < i) out += s.slice(start, i);
    start = i + 1;
    const short = ESCAPES[c];
    if (short !== undefined) {
      out += short;
    } else {
      out += "\\u" + HEX[(c >> 12) & 15] + HEX[(c >> 8) & 15] +
        HEX[(c >> 4) & 15] + HEX[c & 15];
    }
  }
  if (start < s.length) out += s.slice(start);
  return out + '"';
}

/**
 * Serialises a value exactly as Python's `json.dumps(value)` would print
 * the value Python's `json.loads` made of the same source text.
 * JS numbers are written as Python writes an int when they are integral
 * (as `JSON.parse` loses the int/float distinction, keep floats as
 * {@linkcode RawNumber}), otherwise through {@linkcode pyFloatRepr}.
 *
 * @example
 * ```ts
 * import { pyDumps } from "./pyjson.ts";
 * const text = pyDumps({ data: [1, "é", 0.5, null], version: "1.1" });
 * if (text !== '{"data": [1, "\\u00e9", 0.5, null], "version": "1.1"}') throw new Error(text);
 * ```
 */
export function pyDumps(value: PyJson): string {
  const parts: string[] = [];
  writeValue(value, parts);
  return parts.join("");
}

/**
 * Appends the `json.dumps` text of `value` to `out` (used by streaming writers).
 *
 * @example
 * ```ts
 * import { writeValue } from "./pyjson.ts";
 * const out: string[] = [];
 * writeValue([true, { k: 1.5 }], out);
 * if (out.join("") !== '[true, {"k": 1.5}]') throw new Error(out.join(""));
 * ```
 */
export function writeValue(value: PyJson, out: string[]): void {
  if (value === null) out.push("null");
  else if (value === true) out.push("true");
  else if (value === false) out.push("false");
  else if (typeof value === "string") out.push(pyStringLiteral(value));
  else if (typeof value === "number") {
    out.push(
      Number.isInteger(value) && !Object.is(value, -0) &&
        Math.abs(value) < 1e21
        ? BigInt(value).toString()
        : pyFloatRepr(value),
    );
  } else if (value instanceof RawNumber) out.push(pyNumberText(value.text));
  else if (Array.isArray(value)) {
    out.push("[");
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out.push(", ");
      writeValue(value[i], out);
    }
    out.push("]");
  } else {
    out.push("{");
    let first = true;
    for (const k of objectKeys(value)) {
      if (!first) out.push(", ");
      first = false;
      out.push(pyStringLiteral(k), ": ");
      writeValue(value[k], out);
    }
    out.push("}");
  }
}

/**
 * `JSON.parse` of `text` as Python's `json.loads` reads it: the literals
 * `NaN`, `Infinity` and `-Infinity`, which `json.dumps` writes for such
 * floats (lm-evaluation-harness, OpenCompass and most Python scripts that
 * write JSON lines use it), are read as `null` (no answer, question or id
 * is a float). Any other
 * text that is not JSON fails as `JSON.parse` fails on it.
 *
 * @example
 * ```ts
 * import { parsePythonJson } from "./pyjson.ts";
 * const v = parsePythonJson('{"a": NaN, "b": [-Infinity, "NaN"], "c": Infinity}');
 * if (JSON.stringify(v) !== '{"a":null,"b":[null,"NaN"],"c":null}') throw new Error();
 * ```
 */
export function parsePythonJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    if (!/NaN|Infinity/.test(text)) throw e;
    const out: string[] = [];
    let last = 0;
    let inString = false;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (inString) {
        if (c === 0x5c) i++;
        else if (c === 0x22) inString = false;
        continue;
      }
      if (c === 0x22) {
        inString = true;
        continue;
      }
      const literal = c === 0x4e
        ? "NaN"
        : c === 0x49
        ? "Infinity"
        : c === 0x2d && text.startsWith("-Infinity", i)
        ? "-Infinity"
        : undefined;
      if (literal !== undefined && text.startsWith(literal, i)) {
        out.push(text.slice(last, i), "null");
        i += literal.length - 1;
        last = i + 1;
      }
    }
    out.push(text.slice(last));
    try {
      return JSON.parse(out.join(""));
    } catch {
      throw e;
    }
  }
}
