/**
 * The SQuAD answer normalisation of the official scripts, on CPython's
 * string rules rather than JavaScript's. This module follows CPython 3.11
 * (Unicode 14.0) everywhere:
 *
 * - `str.lower()` is `String.prototype.toLowerCase()` (same full mapping and
 *   the same Final_Sigma rule) except for code points that this JavaScript
 *   engine knows from a newer Unicode version and CPython 3.11 does not
 *   (see {@linkcode PY311_INERT_RANGES}); those are handled on a slow path.
 * - `\b` in `re.sub(r'\b(a|an|the)\b', ' ', text)` is Unicode-aware in Python
 *   (a word character is `str.isalnum()` or `_`), while JavaScript's `\b` is
 *   ASCII-only: explicit look-arounds over `[\p{L}\p{N}_]` minus the newer
 *   code points are used instead.
 * - `str.split()` splits on `str.isspace()` characters, which include
 *   U+001C..U+001F and U+0085 and exclude U+FEFF, U+200B and U+180E, unlike
 *   JavaScript's `\s`.
 *
 * Pure-ASCII strings take a fast path with the same results.
 *
 * @example
 * ```ts
 * import { normalizeAnswer } from "./squad_text.ts";
 * if (normalizeAnswer("The  Denver Broncos!") !== "denver broncos") throw new Error("normalised");
 * ```
 *
 * @module
 */
import { rangesClass } from "./_ranges.ts";

// ---------------------------------------------------------------------------
// Python 3.11 character classes
// ---------------------------------------------------------------------------

// BEGIN GENERATED: tests/fixtures/gen_squad_unicode.ts
/**
 * Inclusive code point ranges `[lo0, hi0, lo1, hi1, ...]` on which this
 * JavaScript engine (V8 15.0, Deno 2.9.6) and CPython 3.11 (Unicode 14.0)
 * disagree about `lower()`, the Final_Sigma context classes, or `\w`.
 * CPython treats every one of them as an unassigned character: it lowers to
 * itself, is no word character, no space, and neither cased nor
 * case-ignorable, except those listed in {@linkcode PY311_CASE_IGNORABLE}.
 * Regenerate with `deno run -A tests/fixtures/gen_squad_unicode.ts`.
 */
// deno-fmt-ignore
export const PY311_INERT_RANGES: readonly number[] = [
  0x897, 0x897, 0xece, 0xece, 0x1c89, 0x1c8a, 0xa7cb, 0xa7cd, 0xa7da, 0xa7dc,
  0x105c0, 0x105f3, 0x10d40, 0x10d65, 0x10d69, 0x10d6d, 0x10d6f, 0x10d85,
  0x10ec2, 0x10ec4, 0x10efc, 0x10eff, 0x1123f, 0x11241, 0x11380, 0x11389,
  0x1138b, 0x1138b, 0x1138e, 0x1138e, 0x11390, 0x113b5, 0x113b7, 0x113b7,
  0x113bb, 0x113c0, 0x113ce, 0x113ce, 0x113d0, 0x113d3, 0x113e1, 0x113e2,
  0x116d0, 0x116e3, 0x1171e, 0x1171e, 0x11bc0, 0x11be0, 0x11bf0, 0x11bf9,
  0x11f00, 0x11f02, 0x11f04, 0x11f10, 0x11f12, 0x11f33, 0x11f36, 0x11f3a,
  0x11f40, 0x11f40, 0x11f42, 0x11f42, 0x11f50, 0x11f5a, 0x1342f, 0x1342f,
  0x13439, 0x13455, 0x13460, 0x143fa, 0x16100, 0x16129, 0x1612d, 0x16139,
  0x16d40, 0x16d6c, 0x16d70, 0x16d79, 0x18cff, 0x18cff, 0x1b132, 0x1b132,
  0x1b155, 0x1b155, 0x1ccf0, 0x1ccf9, 0x1d2c0, 0x1d2d3, 0x1df25, 0x1df2a,
  0x1e030, 0x1e06d, 0x1e08f, 0x1e08f, 0x1e4d0, 0x1e4f9, 0x1e5d0, 0x1e5fa,
  0x2b739, 0x2b739, 0x2ebf0, 0x2ee5d, 0x31350, 0x323af,
];

/**
 * Code points of {@linkcode PY311_INERT_RANGES} that CPython 3.11 treats as
 * case-ignorable in the Final_Sigma rule (U+1171E was `Mn` in Unicode 14.0).
 */
export const PY311_CASE_IGNORABLE: readonly number[] = [0x1171e];
// END GENERATED

const INERT_CLASS = rangesClass(PY311_INERT_RANGES);
/** Python's `\w` for `str` patterns (set subtraction needs the `v` flag). */
const PY_WORD_CLASS = `[[\\p{L}\\p{N}_]--[${INERT_CLASS}]]`;
const PY_WORD_RE = new RegExp(`^${PY_WORD_CLASS}$`, "v");
const INERT_RE = new RegExp(`[${INERT_CLASS}]`, "u");
const INERT_ONE_RE = new RegExp(`^[${INERT_CLASS}]$`, "u");
const PY_IGNORABLE_EXTRA: ReadonlySet<number> = new Set(PY311_CASE_IGNORABLE);
const CASE_IGNORABLE_RE = /^\p{Case_Ignorable}$/u;
const CASED_RE = /^\p{Cased}$/u;

/** Python `str.isspace()` characters, as a character class body. */
const PY_SPACE_CLASS =
  "\\t-\\r\\x1c- \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const PY_SPACE_RE = new RegExp(`^[${PY_SPACE_CLASS}]$`);

/**
 * Whether CPython 3.11's `re` treats the code point as a word character
 * (`\w` for a `str` pattern: `str.isalnum()` or `_`). Marks (Mn, Mc) are not.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isPythonWordChar } from "./squad_text.ts";
 * assert.deepEqual(isPythonWordChar(0xe9), true); // "é"
 * assert.deepEqual(isPythonWordChar(0x301), false); // combining acute accent
 * ```
 */
export function isPythonWordChar(cp: number): boolean {
  return PY_WORD_RE.test(String.fromCodePoint(cp));
}

/**
 * Whether CPython's `str.isspace()` is true for the code point, i.e. whether
 * `str.split()` splits there.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isPythonSpace } from "./squad_text.ts";
 * assert.deepEqual(isPythonSpace(0x85), true);
 * assert.deepEqual(isPythonSpace(0xfeff), false);
 * ```
 */
export function isPythonSpace(cp: number): boolean {
  return PY_SPACE_RE.test(String.fromCodePoint(cp));
}

/** Final_Sigma context classes of a code point. */
const CaseClass = { Other: 0, Ignorable: 1, Cased: 2 } as const;
type CaseClass = typeof CaseClass[keyof typeof CaseClass];

function caseClass(ch: string, cp: number): CaseClass {
  if (PY_IGNORABLE_EXTRA.has(cp)) return CaseClass.Ignorable;
  if (INERT_ONE_RE.test(ch)) return CaseClass.Other;
  if (CASE_IGNORABLE_RE.test(ch)) return CaseClass.Ignorable;
  return CASED_RE.test(ch) ? CaseClass.Cased : CaseClass.Other;
}

/** CPython's `handle_capital_sigma` over code points. */
function isFinalSigma(cps: readonly string[], i: number): boolean {
  let j = i - 1;
  let cls: CaseClass = CaseClass.Other;
  for (; j >= 0; j--) {
    cls = caseClass(cps[j], cps[j].codePointAt(0)!);
    if (cls !== CaseClass.Ignorable) break;
  }
  if (j < 0 || cls !== CaseClass.Cased) return false;
  for (j = i + 1; j < cps.length; j++) {
    cls = caseClass(cps[j], cps[j].codePointAt(0)!);
    if (cls !== CaseClass.Ignorable) break;
  }
  return j === cps.length || cls !== CaseClass.Cased;
}

function slowLower(s: string): string {
  const cps = Array.from(s);
  let out = "";
  for (let i = 0; i < cps.length; i++) {
    const ch = cps[i];
    const cp = ch.codePointAt(0)!;
    if (cp === 0x3a3) out += isFinalSigma(cps, i) ? "\u03c2" : "\u03c3";
    else if (INERT_ONE_RE.test(ch)) out += ch;
    else out += ch.toLowerCase();
  }
  return out;
}

/**
 * CPython 3.11's `str.lower()`: full lower-case mapping (`"İ"` becomes
 * `"i̇"`), Final_Sigma (`"ΟΔΟΣ"` becomes `"οδος"`), no locale.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pythonLower } from "./squad_text.ts";
 * assert.deepEqual(pythonLower("ΟΔΟΣ ẞ"), "οδος ß");
 * assert.deepEqual(pythonLower("\u{1C89}"), "\u{1C89}"); // unassigned in Unicode 14.0
 * ```
 */
export function pythonLower(s: string): string {
  return INERT_RE.test(s) ? slowLower(s) : s.toLowerCase();
}

// ---------------------------------------------------------------------------
// Normalisation
// ---------------------------------------------------------------------------

const ASCII_RE = /^[\0-\x7f]*$/;
/** Python's `string.punctuation`. */
const PUNCT_RE = /[!-\/:-@\[-`{-~]/g;
/** In a lower-cased ASCII string, JavaScript's `\b` is Python's. */
const ARTICLES_ASCII_RE = /\b(?:a|an|the)\b/g;
const ARTICLES_RE = new RegExp(
  `(?<!${PY_WORD_CLASS})(?:a|an|the)(?!${PY_WORD_CLASS})`,
  "gv",
);
// deno-lint-ignore no-control-regex -- U+001C..U+001F are Python spaces
const SPLIT_ASCII_RE = /[\t-\r\x1c- ]+/;
const SPLIT_RE = new RegExp(`[${PY_SPACE_CLASS}]+`);

function splitPython(text: string, re: RegExp): string[] {
  const parts = text.split(re);
  if (parts.length > 0 && parts[parts.length - 1] === "") parts.pop();
  if (parts.length > 0 && parts[0] === "") parts.shift();
  return parts;
}

/**
 * The tokens of `normalize_answer(t)` for an ASCII string `t`, in one pass,
 * or `undefined` when `t` holds a character outside ASCII or a control
 * character that is not Python white space. Then the only characters left
 * after dropping punctuation are word characters and white space, so the
 * articles `\b(a|an|the)\b` are exactly the tokens `a`, `an` and `the`: the
 * regular expressions' result, without their four passes.
 */
function asciiTokens(t: string): string[] | undefined {
  const out: string[] = [];
  let tok = "", start = -1, seg = 0, upper = false;
  const n = t.length;
  for (let i = 0; i <= n; i++) {
    const c = i < n ? t.charCodeAt(i) : 32;
    if (c === 32 || (c >= 9 && c <= 13) || (c >= 28 && c <= 31)) {
      if (start >= 0) {
        tok += t.slice(seg, i);
        if (upper) tok = tok.toLowerCase();
        if (tok !== "" && tok !== "a" && tok !== "an" && tok !== "the") out.push(tok);
        tok = "";
        start = -1;
        upper = false;
      }
    } else if (c < 32 || c >= 127) {
      return undefined;
    } else {
      if (start < 0) start = seg = i;
      if (c >= 65 && c <= 90) upper = true;
      // string.punctuation: !-/ :-@ [-` {-~
      else if (
        (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
        (c >= 123 && c <= 126)
      ) {
        tok += t.slice(seg, i);
        seg = i + 1;
      }
    }
  }
  return out;
}

/**
 * The tokens of `normalize_answer(s)`, i.e. Python's
 * `normalize_answer(s).split()`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { answerTokens } from "./squad_text.ts";
 * assert.deepEqual(answerTokens("The  Denver\u00a0Broncos!"), ["denver", "broncos"]);
 * ```
 */
export function answerTokens(s: string): string[] {
  const fast = asciiTokens(s);
  if (fast !== undefined) return fast;
  if (ASCII_RE.test(s)) {
    const t = s.toLowerCase().replace(PUNCT_RE, "").replace(
      ARTICLES_ASCII_RE,
      " ",
    );
    return splitPython(t, SPLIT_ASCII_RE);
  }
  const t = pythonLower(s).replace(PUNCT_RE, "").replace(ARTICLES_RE, " ");
  return splitPython(t, SPLIT_RE);
}

/**
 * The official `normalize_answer`: lower case, drop ASCII punctuation, replace
 * the articles `a`, `an`, `the` (as whole Unicode words) by a space, collapse
 * whitespace.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { normalizeAnswer } from "./squad_text.ts";
 * assert.deepEqual(normalizeAnswer("The Denver Broncos!"), "denver broncos");
 * assert.deepEqual(normalizeAnswer("éthe an_ the\u0301"), "éthe \u0301");
 * ```
 */
export function normalizeAnswer(s: string): string {
  return answerTokens(s).join(" ");
}

/**
 * Names the revision of the SQuAD answer normalizer above
 * ({@linkcode normalizeAnswer}, {@linkcode answerTokens}): the official
 * `evaluate-v1.1.py` / `evaluate-v2.0.py` `normalize_answer` on CPython
 * 3.11's string rules (Unicode 14.0). Recorded in every provenance block
 * (`runs/summary/provenance.ts`), so two runs scored by different normalizers show
 * it; a change to what these functions return for any string gives a new
 * revision number.
 *
 * @example
 * ```ts
 * import { NORMALIZER_VERSION } from "./squad_text.ts";
 * if (!NORMALIZER_VERSION.startsWith("squad-normalize_answer/")) throw new Error();
 * ```
 */
export const NORMALIZER_VERSION = "squad-normalize_answer/cpython-3.11-unicode-14.0/r1";
