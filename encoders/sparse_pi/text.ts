/**
 * Text primitives of the `sparse-pi` encoder: a deterministic tokenizer with
 * UTF-16 offsets, a Porter stemmer, English stop-word lists, a rule-based
 * sentence splitter and the FNV-1a hash that places word keys in columns.
 * Internal to `encoders/sparse_pi/encoder.ts`; its rules are part of the model (a
 * change here changes the features and needs a refit).
 *
 * @module
 */

/** Token kind: a run of letters, marks and digits. */
export const WORD = 0;
/** Token kind: one punctuation or symbol character (a code point). */
export const PUNCT = 1;

/** Tokens of a text as parallel arrays (UTF-16 offsets, end exclusive). */
export interface Tokens {
  /** Token texts, exact substrings of the input. */
  readonly text: string[];
  /** Start offsets. */
  readonly start: Int32Array;
  /** End offsets (exclusive). */
  readonly end: Int32Array;
  /** {@linkcode WORD} or {@linkcode PUNCT} per token. */
  readonly kind: Uint8Array;
}

const TOKEN_RE = /[\p{L}\p{M}\p{N}]+|[^\s\p{L}\p{M}\p{N}]/gu;
const WORD_START_RE = /^[\p{L}\p{N}]/u;

/**
 * Splits a text into tokens: maximal runs of Unicode letters, marks and
 * digits are words; every other non-space code point is a token of its own.
 * Offsets are UTF-16 code units (`text.slice(start, end) === token`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tokenize } from "./text.ts";
 * assert.deepEqual(tokenize("Denver's 1,000 fans.").text, ["Denver", "'", "s", "1", ",", "000", "fans", "."]);
 * ```
 */
export function tokenize(text: string): Tokens {
  const out: string[] = [];
  const starts: number[] = [];
  const kinds: number[] = [];
  TOKEN_RE.lastIndex = 0;
  for (const m of text.matchAll(TOKEN_RE)) {
    out.push(m[0]);
    starts.push(m.index);
    kinds.push(WORD_START_RE.test(m[0]) ? WORD : PUNCT);
  }
  const n = out.length;
  const start = new Int32Array(n);
  const end = new Int32Array(n);
  const kind = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    start[i] = starts[i];
    end[i] = starts[i] + out[i].length;
    kind[i] = kinds[i];
  }
  return { text: out, start, end, kind };
}

/** Articles: never the first or last token of a candidate phrase. */
export const ARTICLES: ReadonlySet<string> = new Set(["a", "an", "the"]);

/**
 * English stop words (lower case): not content words (no word keys), and a
 * candidate phrase never ends on one. Number words and month names are
 * deliberately absent.
 */
export const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    "a an the of in on at to for from by with and or but nor as is was are were be been being am " +
    "that which who whom whose this these those it its itself their theirs them his her hers him " +
    "they he she we us our ours you your i me my mine not no than then so such into onto over " +
    "under about after before during between through within without also has have had having do " +
    "does did doing can could might will would shall should must there here when where why how " +
    "what while if because although though until unless upon per via both either neither each " +
    "any all some most more other another same own only very just too s t"
  ).split(" "),
);

/**
 * Words a candidate phrase may not start with: articles, conjunctions,
 * auxiliaries, relative and interrogative words. Prepositions, pronouns and
 * quantifiers may start a phrase (`in 1999`, `his father`, `over 50`).
 */
export const NO_START_WORDS: ReadonlySet<string> = new Set(
  (
    "a an the of and or but nor as is was are were be been being am that which who whom whose " +
    "than then so also has have had having do does did doing can could might will would shall " +
    "should must there here when where why how what while if because although though until " +
    "unless s t"
  ).split(" "),
);

/** Interrogative words that open a question class. */
export const WH_WORDS: ReadonlySet<string> = new Set([
  "what",
  "which",
  "who",
  "whom",
  "whose",
  "when",
  "where",
  "why",
  "how",
]);

// ---------------------------------------------------------------------------
// Porter stemmer (M. F. Porter, 1980, "An algorithm for suffix stripping"),
// following the reference ANSI-C/JavaScript implementation on tartarus.org.
// ---------------------------------------------------------------------------

const STEP2: Readonly<Record<string, string>> = {
  ational: "ate",
  tional: "tion",
  enci: "ence",
  anci: "ance",
  izer: "ize",
  bli: "ble",
  alli: "al",
  entli: "ent",
  eli: "e",
  ousli: "ous",
  ization: "ize",
  ation: "ate",
  ator: "ate",
  alism: "al",
  iveness: "ive",
  fulness: "ful",
  ousness: "ous",
  aliti: "al",
  iviti: "ive",
  biliti: "ble",
  logi: "log",
};
const STEP3: Readonly<Record<string, string>> = {
  icate: "ic",
  ative: "",
  alize: "al",
  iciti: "ic",
  ical: "ic",
  ful: "",
  ness: "",
};
const c = "[^aeiou]";
const v = "[aeiouy]";
const CC = c + "[^aeiouy]*";
const VV = v + "[aeiou]*";
const MGR0 = new RegExp("^(" + CC + ")?" + VV + CC);
const MEQ1 = new RegExp("^(" + CC + ")?" + VV + CC + "(" + VV + ")?$");
const MGR1 = new RegExp("^(" + CC + ")?" + VV + CC + VV + CC);
const S_V = new RegExp("^(" + CC + ")?" + v);
const CVC = new RegExp("^" + CC + v + "[^aeiouwxy]$");
const DOUBLE = /([^aeiouylsz])\1$/;
const S1A = /^(.+?)(ss|i)es$/;
const S1A2 = /^(.+?)([^s])s$/;
const S1B = /^(.+?)eed$/;
const S1B2 = /^(.+?)(ed|ing)$/;
const S1C = /^(.+?)y$/;
const S2 =
  /^(.+?)(ational|tional|enci|anci|izer|bli|alli|entli|eli|ousli|ization|ation|ator|alism|iveness|fulness|ousness|aliti|iviti|biliti|logi)$/;
const S3 = /^(.+?)(icate|ative|alize|iciti|ical|ful|ness)$/;
const S4 = /^(.+?)(al|ance|ence|er|ic|able|ible|ant|ement|ment|ent|ou|ism|ate|iti|ous|ive|ize)$/;
const S4B = /^(.+?)(s|t)(ion)$/;
const S5 = /^(.+?)e$/;

/**
 * The Porter stemmer on a lower-case ASCII word (`[a-z]+`); other input is
 * returned unchanged by {@linkcode stem}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { porterStem } from "./text.ts";
 * assert.deepEqual(porterStem("relational"), "relat");
 * assert.deepEqual(porterStem("ponies"), "poni");
 * ```
 */
export function porterStem(word: string): string {
  if (word.length < 3) return word;
  let w = word;
  const firstY = w[0] === "y";
  if (firstY) w = "Y" + w.slice(1);
  let m: RegExpExecArray | null;
  // Step 1a
  if (S1A.test(w)) w = w.replace(S1A, "$1$2");
  else if (S1A2.test(w)) w = w.replace(S1A2, "$1$2");
  // Step 1b
  if ((m = S1B.exec(w))) {
    if (MGR0.test(m[1])) w = w.slice(0, -1);
  } else if ((m = S1B2.exec(w))) {
    const stem = m[1];
    if (S_V.test(stem)) {
      w = stem;
      if (/(at|bl|iz)$/.test(w)) w += "e";
      else if (DOUBLE.test(w)) w = w.slice(0, -1);
      else if (CVC.test(w)) w += "e";
    }
  }
  // Step 1c
  if ((m = S1C.exec(w))) {
    if (S_V.test(m[1])) w = m[1] + "i";
  }
  // Step 2
  if ((m = S2.exec(w))) {
    if (MGR0.test(m[1])) w = m[1] + STEP2[m[2]];
  }
  // Step 3
  if ((m = S3.exec(w))) {
    if (MGR0.test(m[1])) w = m[1] + STEP3[m[2]];
  }
  // Step 4
  if ((m = S4.exec(w))) {
    if (MGR1.test(m[1])) w = m[1];
  } else if ((m = S4B.exec(w))) {
    const stem = m[1] + m[2];
    if (MGR1.test(stem)) w = stem;
  }
  // Step 5
  if ((m = S5.exec(w))) {
    const stem = m[1];
    if (MGR1.test(stem) || (MEQ1.test(stem) && !CVC.test(stem))) w = stem;
  }
  if (/ll$/.test(w) && MGR1.test(w)) w = w.slice(0, -1);
  if (firstY) w = "y" + w.slice(1);
  return w;
}

const ASCII_LOWER_RE = /^[a-z]+$/;
const stemCache = new Map<string, string>();

/**
 * The key form of a lower-cased word: Porter stem for `[a-z]+` words, the
 * word itself otherwise (numbers, non-ASCII words). Memoised.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { stem } from "./text.ts";
 * assert.deepEqual(stem("universities"), "univers");
 * assert.deepEqual(stem("1999"), "1999");
 * ```
 */
export function stem(lower: string): string {
  let s = stemCache.get(lower);
  if (s === undefined) {
    s = ASCII_LOWER_RE.test(lower) ? porterStem(lower) : lower;
    if (stemCache.size > 200_000) stemCache.clear();
    stemCache.set(lower, s);
  }
  return s;
}

// ---------------------------------------------------------------------------
// Sentences
// ---------------------------------------------------------------------------

const ABBREVIATIONS: ReadonlySet<string> = new Set(
  (
    "mr mrs ms dr st jr sr vs etc inc co ltd corp no gen col lt sgt capt cmdr adm prof rev mt ft " +
    "jan feb mar apr jun jul aug sep sept oct nov dec fig approx est dept univ ave blvd ch vol " +
    "op pp ca cf al e g i"
  ).split(" "),
);
const CLOSERS: ReadonlySet<string> = new Set(['"', "'", ")", "]", "”", "’", "»"]);
const UPPER_START_RE = /^[\p{Lu}\p{N}]/u;

/**
 * Sentence index of every token. A sentence ends after `.`, `!`, `?` or `…`
 * (and any closing quotes or brackets attached to it) when the next token
 * starts with an upper-case letter or a digit, or is an opening quote or
 * bracket; not after a `.` that follows a single letter (initials, `U.S.`) or
 * a known abbreviation.
 *
 * @example
 * ```ts
 * import { sentenceIds, tokenize } from "./text.ts";
 * const ids = sentenceIds(tokenize("Dr. Who lives. He is 9."));
 * if (ids.join() !== "0,0,0,0,0,1,1,1,1") throw new Error(ids.join());
 * ```
 */
export function sentenceIds(tokens: Tokens): Int32Array {
  const n = tokens.text.length;
  const ids = new Int32Array(n);
  let s = 0;
  let i = 0;
  while (i < n) {
    ids[i] = s;
    const t = tokens.text[i];
    if (t === "." || t === "!" || t === "?" || t === "…") {
      let j = i + 1;
      while (
        j < n && CLOSERS.has(tokens.text[j]) && tokens.start[j] === tokens.end[j - 1] && j - i <= 2
      ) {
        ids[j] = s;
        j++;
      }
      let ends = false;
      if (j < n) {
        const next = tokens.text[j];
        const opener = next === '"' || next === "(" || next === "“" || next === "'";
        ends = UPPER_START_RE.test(next) || (opener && j + 1 < n);
        if (
          ends && t === "." && i > 0 && tokens.kind[i - 1] === WORD &&
          tokens.end[i - 1] === tokens.start[i]
        ) {
          const prev = tokens.text[i - 1];
          if (prev.length === 1 || ABBREVIATIONS.has(prev.toLowerCase())) ends = false;
        }
      }
      if (ends) s++;
      i = j;
      continue;
    }
    i++;
  }
  return ids;
}

// ---------------------------------------------------------------------------
// Hash
// ---------------------------------------------------------------------------

/**
 * FNV-1a, 32 bit, over the UTF-8 bytes of `s` (offset basis 2166136261,
 * prime 16777619); an unsigned 32-bit integer.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fnv1a32 } from "./text.ts";
 * assert.deepEqual(fnv1a32(""), 2166136261);
 * assert.deepEqual(fnv1a32("a"), 3826002220);
 * ```
 */
export function fnv1a32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    let cp = s.charCodeAt(i);
    if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < s.length) {
      const lo = s.charCodeAt(i + 1);
      if (lo >= 0xdc00 && lo <= 0xdfff) {
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        i++;
      }
    } else if (cp >= 0xd800 && cp <= 0xdfff) {
      cp = 0xfffd;
    }
    if (cp < 0x80) {
      h = Math.imul(h ^ cp, 0x01000193);
    } else if (cp < 0x800) {
      h = Math.imul(h ^ (0xc0 | (cp >> 6)), 0x01000193);
      h = Math.imul(h ^ (0x80 | (cp & 63)), 0x01000193);
    } else if (cp < 0x10000) {
      h = Math.imul(h ^ (0xe0 | (cp >> 12)), 0x01000193);
      h = Math.imul(h ^ (0x80 | ((cp >> 6) & 63)), 0x01000193);
      h = Math.imul(h ^ (0x80 | (cp & 63)), 0x01000193);
    } else {
      h = Math.imul(h ^ (0xf0 | (cp >> 18)), 0x01000193);
      h = Math.imul(h ^ (0x80 | ((cp >> 12) & 63)), 0x01000193);
      h = Math.imul(h ^ (0x80 | ((cp >> 6) & 63)), 0x01000193);
      h = Math.imul(h ^ (0x80 | (cp & 63)), 0x01000193);
    }
  }
  return h >>> 0;
}
