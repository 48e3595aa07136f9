/**
 * Python literals, parsed as Python parses them, never evaluated.
 *
 * {@linkcode parsePyStringList}: a list-of-strings literal, the answers column of
 * DPR's question files (`['Paris', "Don't"]`), which DPR reads with Python's
 * `eval`. The value is parsed as `eval` would parse it, never evaluated:
 * string literals in single or double quotes with Python's escapes
 * (`\\n`, `\\t`, `\\xhh`, `\\uhhhh`, `\\Uhhhhhhhh`, octal, an unknown escape
 * such as a regular expression's `\\s` kept as written), `u`/`r` prefixes,
 * adjacent literals joined, a trailing comma. JSON lists of strings are
 * Python literals too. Anything else (a number, `None`, a nested list, a
 * tuple, bytes, an expression) is refused.
 *
 * Also {@linkcode parsePyLiteral}: the dictionary literal of a `.npy` file's
 * header (`io/npy_format.ts`), strings, integers, booleans, `None`, tuples,
 * lists and dicts, parsed as `ast.literal_eval` would, never evaluated.
 *
 * @module
 */

/** A Python literal that is not a list of strings; the message names the column. */
export class PyLiteralError extends Error {}

const SIMPLE_ESCAPES: Record<string, string> = {
  "\\": "\\",
  "'": "'",
  '"': '"',
  a: "\x07",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
  v: "\v",
};

/**
 * The strings of a Python list literal. Throws {@linkcode PyLiteralError}
 * (`expected '[' at column 1`, `item 2 is not a string (column 9)`, ...)
 * for anything that is not one; columns count from 1.
 *
 * @example
 * ```ts
 * import { parsePyStringList } from "./pyliteral.ts";
 * const got = parsePyStringList(String.raw`['a\'b', "c\"d", u'\u00e9', 'x' 'y', r'\d+\s', '\s',]`);
 * if (JSON.stringify(got) !== JSON.stringify(["a'b", 'c"d', "é", "xy", "\\d+\\s", "\\s"])) {
 *   throw new Error(JSON.stringify(got));
 * }
 * let msg = "";
 * try {
 *   parsePyStringList("['a', 3]");
 * } catch (e) {
 *   msg = (e as Error).message;
 * }
 * if (msg !== "item 2 is not a string (column 7)") throw new Error(msg);
 * ```
 */
export function parsePyStringList(text: string): string[] {
  let i = 0;
  const n = text.length;
  const fail = (what: string, at = i): never => {
    throw new PyLiteralError(`${what} (column ${at + 1})`);
  };
  const ws = () => {
    while (i < n && (text[i] === " " || text[i] === "\t" || text[i] === "\f")) i++;
  };
  const isQuote = (c: string | undefined) => c === "'" || c === '"';
  /** The literal at `i` (after its prefix), `raw` for r-strings. */
  const literal = (raw: boolean): string => {
    const q = text[i];
    if (text[i + 1] === q && text[i + 2] === q) fail("triple-quoted strings are not supported");
    const open = i++;
    let s = "";
    while (true) {
      if (i >= n || text[i] === "\n") fail("unterminated string", open);
      const ch = text[i++];
      if (ch === q) return s;
      if (ch !== "\\") {
        s += ch;
        continue;
      }
      if (i >= n) fail("unterminated string", open);
      const e = text[i++];
      if (raw) {
        // A raw string keeps the backslash; it only stops a quote from ending the string.
        s += "\\" + e;
        continue;
      }
      const simple = SIMPLE_ESCAPES[e];
      if (simple !== undefined) {
        s += simple;
      } else if (e === "x" || e === "u" || e === "U") {
        const len = e === "x" ? 2 : e === "u" ? 4 : 8;
        const h = text.slice(i, i + len);
        if (!/^[0-9a-fA-F]+$/.test(h) || h.length !== len) fail(`bad \\${e} escape`, i - 2);
        const cp = parseInt(h, 16);
        if (cp > 0x10ffff) fail(`bad \\${e} escape`, i - 2);
        s += String.fromCodePoint(cp);
        i += len;
      } else if (e >= "0" && e <= "7") {
        let oct = e;
        while (oct.length < 3 && text[i] >= "0" && text[i] <= "7") oct += text[i++];
        s += String.fromCodePoint(parseInt(oct, 8));
      } else if (e === "N") {
        fail("\\N{...} escapes are not supported", i - 2);
      } else {
        // Python keeps an unknown escape as written (regular expressions: `\s`, `\d`).
        s += "\\" + e;
      }
    }
  };
  /** One string item (prefix, literal, adjacent literals), or `undefined` if none starts here. */
  const item = (): string | undefined => {
    let out: string | undefined;
    while (true) {
      let raw = false;
      const start = i;
      let p = "";
      while (/[uUrRbBfF]/.test(text[i] ?? "") && p.length < 2) p += text[i++];
      if (!isQuote(text[i])) {
        i = start;
        return out;
      }
      const lower = p.toLowerCase();
      if (lower.includes("b")) fail("bytes literals are not strings", start);
      if (lower.includes("f")) fail("f-strings are not literals", start);
      if (lower === "ur" || lower === "ru" || lower === "uu" || lower === "rr") {
        fail("bad string prefix", start);
      }
      raw = lower.includes("r");
      out = (out ?? "") + literal(raw);
      ws();
    }
  };
  ws();
  if (text[i] !== "[") fail("expected '['");
  i++;
  const items: string[] = [];
  ws();
  while (text[i] !== "]") {
    if (i >= n) fail("expected ']'");
    const at = i;
    const s = item();
    if (s === undefined) fail(`item ${items.length + 1} is not a string`, at);
    items.push(s as string);
    ws();
    if (text[i] === ",") {
      i++;
      ws();
    } else if (text[i] !== "]") fail("expected ',' or ']'");
  }
  i++;
  ws();
  if (i < n) fail("unexpected text after the list");
  return items;
}

// ---------------------------------------------------------------------------
// A .npy header: a Python dict literal (`io/npy_format.ts`); never eval'd.

/** A Python tuple, told apart from a list (a `.npy` header's `shape` is one). */
export class PyTuple {
  /** Its items. */
  constructor(readonly items: PyValue[]) {}
}
/** A value of a Python literal: str, int, bool, None, tuple, list or dict (str keys). */
export type PyValue = string | number | boolean | null | PyTuple | PyValue[] | Map<string, PyValue>;

/** A text that is not such a literal; the message names the header offset. */
export class LiteralError extends Error {}

/**
 * The value of a Python literal of strings, integers, `True`, `False`,
 * `None`, tuples, lists and dicts with string keys (a `.npy` header's
 * dictionary), parsed as `ast.literal_eval` would, never evaluated; nesting
 * deeper than 16 is refused. Throws {@linkcode LiteralError}.
 */
export function parsePyLiteral(text: string): PyValue {
  let i = 0;
  const n = text.length;
  const ws = () => {
    while (i < n && " \t\n\r\f\v".includes(text[i])) i++;
  };
  const fail = (what: string): never => {
    throw new LiteralError(`${what} at header offset ${i}`);
  };
  const value = (depth: number): PyValue => {
    if (depth > 16) fail("nesting too deep");
    ws();
    if (i >= n) fail("unexpected end of header");
    const c = text[i];
    if (c === "{") {
      i++;
      const map = new Map<string, PyValue>();
      ws();
      while (text[i] !== "}") {
        const k = value(depth + 1);
        if (typeof k !== "string") fail("dictionary key is not a string");
        ws();
        if (text[i] !== ":") fail("expected ':'");
        i++;
        const v = value(depth + 1);
        if (map.has(k as string)) fail(`duplicate key '${k}'`);
        map.set(k as string, v);
        ws();
        if (text[i] === ",") {
          i++;
          ws();
        } else if (text[i] !== "}") fail("expected ',' or '}'");
      }
      i++;
      return map;
    }
    if (c === "(" || c === "[") {
      const close = c === "(" ? ")" : "]";
      i++;
      const items: PyValue[] = [];
      let trailingComma = false;
      ws();
      while (text[i] !== close) {
        items.push(value(depth + 1));
        ws();
        trailingComma = false;
        if (text[i] === ",") {
          i++;
          trailingComma = true;
          ws();
        } else if (text[i] !== close) fail(`expected ',' or '${close}'`);
      }
      i++;
      if (c === "[") return items;
      // `(3)` is just 3 in Python; `(3,)` is a tuple.
      if (items.length === 1 && !trailingComma) return items[0];
      return new PyTuple(items);
    }
    if (
      c === "'" || c === '"' ||
      ((c === "u" || c === "U") && (text[i + 1] === "'" || text[i + 1] === '"'))
    ) {
      if (c === "u" || c === "U") i++;
      const q = text[i++];
      let s = "";
      while (true) {
        if (i >= n || text[i] === "\n") fail("unterminated string");
        const ch = text[i++];
        if (ch === q) break;
        if (ch !== "\\") {
          s += ch;
          continue;
        }
        const e = text[i++];
        const hex = (len: number) => {
          const h = text.slice(i, i + len);
          if (!new RegExp(`^[0-9a-fA-F]{${len}}$`).test(h)) fail("bad escape in string");
          i += len;
          return String.fromCodePoint(parseInt(h, 16));
        };
        if (e === "\\" || e === "'" || e === '"') s += e;
        else if (e === "n") s += "\n";
        else if (e === "t") s += "\t";
        else if (e === "r") s += "\r";
        else if (e === "0") s += "\0";
        else if (e === "x") s += hex(2);
        else if (e === "u") s += hex(4);
        else if (e === "U") s += hex(8);
        else s += "\\" + e;
      }
      return s;
    }
    const m = /^[-+]?[0-9]+[lL]?/.exec(text.slice(i, i + 40));
    if (m !== null) {
      i += m[0].length;
      const v = Number(m[0].replace(/[lL]$/, ""));
      return v;
    }
    for (const [word, v] of [["True", true], ["False", false], ["None", null]] as const) {
      if (text.startsWith(word, i) && !/[A-Za-z0-9_]/.test(text[i + word.length] ?? "")) {
        i += word.length;
        return v;
      }
    }
    return fail(`unexpected character ${JSON.stringify(c)}`);
  };
  const v = value(0);
  ws();
  if (i < n) fail("unexpected text after the dictionary");
  return v;
}
