/**
 * Feature extraction of the `sparse-pi` encoder, shared by the encoder
 * (`encoders/sparse_pi/encoder.ts`) and the fitting pipeline
 * (`baselines/sparse_pi/export_features.ts`), so training and inference see
 * exactly the same candidates and keys.
 *
 * A paragraph yields candidate spans (token ranges inside one sentence, at
 * most {@linkcode MAX_SPAN_TOKENS} tokens, starting on a word not in
 * `NO_START_WORDS` and ending on a word not in `STOP_WORDS`), and for each
 * span:
 *
 * - word keys `(group, stem)`: the content stems inside the span (`IN`), at
 *   graded token distances to its left (`L1`..`L10`) and right (`R1`..`R10`)
 *   up to {@linkcode WINDOW} tokens, and elsewhere in its sentence (`SENT`, up
 *   to {@linkcode SENT_REACH} tokens away); each key at most once per span;
 * - shape features: one value per family (length, first/last/neighbouring
 *   token's word or class, ...) plus boolean flags, as indices into a shape
 *   vocabulary generated from the model's `lex` and `suffixes` lists.
 *
 * A question yields its distinct content stems, its head word, and class
 * names (the always-on `*`, the wh-word, wh + the next one and two words,
 * the word before the wh-word, the first word, the head word).
 *
 * @module
 */
import {
  NO_START_WORDS,
  PUNCT,
  sentenceIds,
  stem,
  STOP_WORDS,
  tokenize,
  type Tokens,
  WH_WORDS,
  WORD,
} from "./text.ts";

/** Version of the feature definitions; an artifact must match it. */
export const FEATURE_VERSION = 1;
/** Longest candidate span, in tokens (punctuation included). */
export const MAX_SPAN_TOKENS = 10;
/** Reach of the graded distance windows, in tokens. */
export const WINDOW = 13;
/** Reach of the `SENT` group, in tokens from the span. */
export const SENT_REACH = 40;

/** Word-key groups, in column-hash order (`IN`, left, right, sentence). */
export const GROUPS: readonly string[] = [
  "IN",
  "L1",
  "L2",
  "L3",
  "L4",
  "L5",
  "L7",
  "L10",
  "R1",
  "R2",
  "R3",
  "R4",
  "R5",
  "R7",
  "R10",
  "SENT",
];
/** Number of word-key groups. */
export const N_GROUPS: number = GROUPS.length;
const G_IN = 0;
const G_SENT = 15;

/** Distance (1..WINDOW) → bucket 0..6, then +1 for left, +8 for right. */
const BUCKET: Int32Array = (() => {
  const b = new Int32Array(WINDOW + 1);
  for (let d = 1; d <= WINDOW; d++) {
    b[d] = d <= 4 ? d - 1 : d <= 6 ? 4 : d <= 9 ? 5 : 6;
  }
  return b;
})();

// ---------------------------------------------------------------------------
// Token classes and the shape vocabulary
// ---------------------------------------------------------------------------

const MONTHS: ReadonlySet<string> = new Set(
  "january february march april may june july august september october november december".split(
    " ",
  ),
);
const NUMBER_WORDS: ReadonlySet<string> = new Set(
  (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen " +
    "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty " +
    "ninety hundred thousand million billion trillion dozen half first second third fourth fifth"
  ).split(" "),
);
const PUNCT_CLASS: Readonly<Record<string, string>> = {
  ",": "P:,",
  ".": "P:.",
  ";": "P:;",
  ":": "P::",
  "(": "P:(",
  ")": "P:)",
  "[": "P:(",
  "]": "P:)",
  '"': 'P:"',
  "“": 'P:"',
  "”": 'P:"',
  "'": "P:'",
  "‘": "P:'",
  "’": "P:'",
  "$": "P:$",
  "£": "P:$",
  "€": "P:$",
  "%": "P:%",
  "-": "P:-",
  "–": "P:-",
  "—": "P:-",
  "/": "P:/",
  "&": "P:&",
};

/** Token classes (values of the class-only shape families). */
export const TOKEN_CLASSES: readonly string[] = [
  "CAP",
  "LOW",
  "ACAPS",
  "NUM",
  "YEAR",
  "NUMW",
  "MONTH",
  "ALNUM",
  "OTHER",
  "P:,",
  "P:.",
  "P:;",
  "P::",
  "P:(",
  "P:)",
  'P:"',
  "P:'",
  "P:$",
  "P:%",
  "P:-",
  "P:/",
  "P:&",
  "P:other",
];

const DIGITS_RE = /^[0-9]+$/;
const HAS_DIGIT_RE = /\p{N}/u;
const UPPER_RE = /^\p{Lu}/u;
const LOWER_RE = /^\p{Ll}/u;

/**
 * Class of a token: punctuation `P:<c>`, `YEAR` (1000..2099), `NUM`,
 * `ALNUM`, `MONTH` (capitalised month name), `NUMW` (number word), `ACAPS`,
 * `CAP`, `LOW` or `OTHER`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tokenClass } from "./features.ts";
 * assert.deepEqual(tokenClass("1999", "1999", 0), "YEAR");
 * assert.deepEqual(tokenClass("NASA", "nasa", 0), "ACAPS");
 * ```
 */
export function tokenClass(text: string, lower: string, kind: number): string {
  if (kind === PUNCT) return PUNCT_CLASS[text] ?? "P:other";
  if (DIGITS_RE.test(text)) {
    if (text.length === 4) {
      const y = Number(text);
      if (y >= 1000 && y <= 2099) return "YEAR";
    }
    return "NUM";
  }
  if (HAS_DIGIT_RE.test(text)) return "ALNUM";
  const upper = UPPER_RE.test(text);
  if (upper && MONTHS.has(lower)) return "MONTH";
  if (NUMBER_WORDS.has(lower)) return "NUMW";
  if (upper) return text.length > 1 && text === text.toUpperCase() ? "ACAPS" : "CAP";
  return LOWER_RE.test(text) ? "LOW" : "OTHER";
}

/** Boolean shape flags, in vocabulary order. */
export const FLAGS: readonly string[] = [
  "allcap",
  "anylow",
  "hasnum",
  "hasyear",
  "hasmonth",
  "comma",
  "and",
  "paren",
  "quote",
  "hyphen",
  "inparen",
  "inquote",
  "capL",
  "capR",
  "sstart",
  "send",
  "stopin",
  "pct",
  "money",
];

/**
 * The shape vocabulary: every `family=value` name, in column order. It is
 * a pure function of the model's lexical list and suffix list.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { shapeVocabulary } from "./features.ts";
 * assert.deepEqual(shapeVocabulary(["in"], ["ion"]).slice(0, 3), ["len=1", "len=2", "len=3"]);
 * ```
 */
export function shapeVocabulary(lex: readonly string[], suffixes: readonly string[]): string[] {
  const out: string[] = [];
  for (const l of ["1", "2", "3", "4", "5", "6", "7+"]) out.push(`len=${l}`);
  const lexValues = [...lex.map((w) => `w:${w}`), ...TOKEN_CLASSES.map((c) => `c:${c}`)];
  for (const f of ["first", "last"]) for (const v of lexValues) out.push(`${f}=${v}`);
  for (const v of [...lexValues, "<s>"]) out.push(`prev=${v}`);
  for (const v of [...lexValues, "</s>"]) out.push(`next=${v}`);
  for (const v of [...TOKEN_CLASSES, "<s>"]) out.push(`prev2=${v}`);
  for (const v of [...TOKEN_CLASSES, "</s>"]) out.push(`next2=${v}`);
  for (const f of ["fcls", "lcls"]) for (const v of TOKEN_CLASSES) out.push(`${f}=${v}`);
  for (const v of ["0", "1", "2", "3+"]) out.push(`sidx=${v}`);
  for (const v of [...suffixes, "none"]) out.push(`suf=${v}`);
  for (const f of FLAGS) out.push(`flag=${f}`);
  return out;
}

/** What the context side of a model provides to the featurizer. */
export interface ContextResources {
  /** Lower-case words that the lexical families keep as themselves. */
  readonly lex: ReadonlySet<string>;
  /** Three-letter suffixes of the `suf` family. */
  readonly suffixes: ReadonlySet<string>;
  /** Shape name → column, from {@linkcode shapeVocabulary}. */
  readonly shapeIndex: ReadonlyMap<string, number>;
}

/**
 * Builds {@linkcode ContextResources} from the lists stored in a model.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { contextResources } from "./features.ts";
 * assert.deepEqual(contextResources(["in", "of"], ["ion"]).shapeIndex.get("len=1"), 0);
 * ```
 */
export function contextResources(
  lex: readonly string[],
  suffixes: readonly string[],
): ContextResources {
  const vocab = shapeVocabulary(lex, suffixes);
  return {
    lex: new Set(lex),
    suffixes: new Set(suffixes),
    shapeIndex: new Map(vocab.map((name, i) => [name, i])),
  };
}

// ---------------------------------------------------------------------------
// Context features
// ---------------------------------------------------------------------------

/** Everything the featurizer derives from one paragraph. */
export interface ContextFeatures {
  /** The paragraph's tokens. */
  readonly tokens: Tokens;
  /** Sentence index of each token. */
  readonly sentence: Int32Array;
  /** Distinct content stems of the paragraph (local ids are indices). */
  readonly stems: string[];
  /** Local stem id of each token, or -1 (punctuation, stop word). */
  readonly tokenStem: Int32Array;
  /** First token of each candidate span. */
  readonly spanStart: Int32Array;
  /** Last token (inclusive) of each candidate span. */
  readonly spanEnd: Int32Array;
  /** Row pointers into {@linkcode ContextFeatures.keys}, spans + 1. */
  readonly keyPtr: Int32Array;
  /** Word keys, `group * stems.length + stemId`, distinct within a span. */
  readonly keys: Int32Array;
  /** Row pointers into {@linkcode ContextFeatures.shapes}, spans + 1. */
  readonly shapePtr: Int32Array;
  /** Shape columns (vocabulary indices), distinct within a span. */
  readonly shapes: Int32Array;
}

class IntBuffer {
  data = new Int32Array(1024);
  length = 0;
  push(v: number): void {
    if (this.length === this.data.length) {
      const next = new Int32Array(this.data.length * 2);
      next.set(this.data);
      this.data = next;
    }
    this.data[this.length++] = v;
  }
  toArray(): Int32Array {
    return this.data.slice(0, this.length);
  }
}

const QUOTES: ReadonlySet<string> = new Set(['"', "“", "”", "'", "‘", "’"]);

/**
 * Tokenizes a paragraph, enumerates its candidate spans and extracts their
 * word keys and shape features.
 *
 * @example
 * ```ts
 * import { contextFeatures, contextResources } from "./features.ts";
 * const f = contextFeatures("The Broncos won in 2016.", contextResources([], []));
 * // Broncos, Broncos won, Broncos won in 2016, won, won in 2016, in 2016, 2016
 * if (f.spanStart.length !== 7) throw new Error(`${f.spanStart.length} spans`);
 * ```
 */
export function contextFeatures(context: string, res: ContextResources): ContextFeatures {
  const tokens = tokenize(context);
  const n = tokens.text.length;
  const sentence = sentenceIds(tokens);
  const lower = tokens.text.map((t) => t.toLowerCase());

  // Content stems.
  const stems: string[] = [];
  const stemIds = new Map<string, number>();
  const tokenStem = new Int32Array(n).fill(-1);
  for (let i = 0; i < n; i++) {
    if (tokens.kind[i] !== WORD || STOP_WORDS.has(lower[i])) continue;
    const s = stem(lower[i]);
    let id = stemIds.get(s);
    if (id === undefined) {
      id = stems.length;
      stems.push(s);
      stemIds.set(s, id);
    }
    tokenStem[i] = id;
  }

  // Sentence bounds and per-token shape values.
  const sentFirst = new Int32Array(n);
  const sentLast = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    sentFirst[i] = i > 0 && sentence[i - 1] === sentence[i] ? sentFirst[i - 1] : i;
  }
  for (let i = n - 1; i >= 0; i--) {
    sentLast[i] = i < n - 1 && sentence[i + 1] === sentence[i] ? sentLast[i + 1] : i;
  }
  const idx = res.shapeIndex;
  const col = (name: string): number => idx.get(name) ?? -1;
  const cls: string[] = new Array(n);
  const vFirst = new Int32Array(n);
  const vLast = new Int32Array(n);
  const vPrev = new Int32Array(n);
  const vNext = new Int32Array(n);
  const vPrev2 = new Int32Array(n);
  const vNext2 = new Int32Array(n);
  const vFcls = new Int32Array(n);
  const vLcls = new Int32Array(n);
  const vSuf = new Int32Array(n);
  // Cumulative counts for span flags.
  const cLow = new Int32Array(n + 1);
  const cUp = new Int32Array(n + 1);
  const cNum = new Int32Array(n + 1);
  const cYear = new Int32Array(n + 1);
  const cMonth = new Int32Array(n + 1);
  const cComma = new Int32Array(n + 1);
  const cAnd = new Int32Array(n + 1);
  const cParen = new Int32Array(n + 1);
  const cQuote = new Int32Array(n + 1);
  const cHyphen = new Int32Array(n + 1);
  const cStop = new Int32Array(n + 1);
  const cWord = new Int32Array(n + 1);
  for (let i = 0; i < n; i++) {
    const k = tokens.kind[i];
    const c = tokenClass(tokens.text[i], lower[i], k);
    cls[i] = c;
    const lexv = k === WORD && res.lex.has(lower[i]) ? `w:${lower[i]}` : `c:${c}`;
    vFirst[i] = col(`first=${lexv}`);
    vLast[i] = col(`last=${lexv}`);
    vPrev[i] = col(`prev=${lexv}`);
    vNext[i] = col(`next=${lexv}`);
    vPrev2[i] = col(`prev2=${c}`);
    vNext2[i] = col(`next2=${c}`);
    vFcls[i] = col(`fcls=${c}`);
    vLcls[i] = col(`lcls=${c}`);
    const suf = c === "LOW" && lower[i].length >= 5 ? lower[i].slice(-3) : "";
    vSuf[i] = col(`suf=${res.suffixes.has(suf) ? suf : "none"}`);
    const t = tokens.text[i];
    const isWord = k === WORD;
    cWord[i + 1] = cWord[i] + (isWord ? 1 : 0);
    cLow[i + 1] = cLow[i] + (isWord && (c === "LOW" || c === "NUMW") ? 1 : 0);
    cUp[i + 1] = cUp[i] +
      (c === "CAP" || c === "ACAPS" || c === "MONTH" || (c === "NUMW" && UPPER_RE.test(t)) ? 1 : 0);
    cNum[i + 1] = cNum[i] + (c === "NUM" || c === "YEAR" || c === "NUMW" ? 1 : 0);
    cYear[i + 1] = cYear[i] + (c === "YEAR" ? 1 : 0);
    cMonth[i + 1] = cMonth[i] + (c === "MONTH" ? 1 : 0);
    cComma[i + 1] = cComma[i] + (t === "," ? 1 : 0);
    cAnd[i + 1] = cAnd[i] + (lower[i] === "and" || lower[i] === "or" ? 1 : 0);
    cParen[i + 1] = cParen[i] + (c === "P:(" || c === "P:)" ? 1 : 0);
    cQuote[i + 1] = cQuote[i] + (QUOTES.has(t) ? 1 : 0);
    cHyphen[i + 1] = cHyphen[i] + (c === "P:-" ? 1 : 0);
    cStop[i + 1] = cStop[i] + (isWord && STOP_WORDS.has(lower[i]) ? 1 : 0);
  }
  // First and last word token of each token's sentence.
  const firstWord = new Int32Array(n).fill(-1);
  const lastWord = new Int32Array(n).fill(-1);
  for (let i = 0; i < n; i++) {
    const prev = i > 0 && sentence[i - 1] === sentence[i] ? firstWord[i - 1] : -1;
    firstWord[i] = prev >= 0 ? prev : tokens.kind[i] === WORD ? i : -1;
  }
  for (let i = n - 1; i >= 0; i--) {
    const next = i < n - 1 && sentence[i + 1] === sentence[i] ? lastWord[i + 1] : -1;
    lastWord[i] = next >= 0 ? next : tokens.kind[i] === WORD ? i : -1;
  }
  const isCapWord = (i: number): boolean => cls[i] === "CAP" || cls[i] === "ACAPS";
  const flagCol = FLAGS.map((f) => col(`flag=${f}`));
  const lenCol = ["1", "2", "3", "4", "5", "6", "7+"].map((l) => col(`len=${l}`));
  const prevStart = col("prev=<s>");
  const nextEnd = col("next=</s>");
  const prev2Start = col("prev2=<s>");
  const next2End = col("next2=</s>");
  const sidxCol = ["0", "1", "2", "3+"].map((v) => col(`sidx=${v}`));

  // Candidates and their features.
  const starts = new IntBuffer();
  const ends = new IntBuffer();
  const keys = new IntBuffer();
  const keyPtr = new IntBuffer();
  const shapes = new IntBuffer();
  const shapePtr = new IntBuffer();
  keyPtr.push(0);
  shapePtr.push(0);
  const nS = stems.length;
  const seen = new Int32Array(N_GROUPS * nS).fill(-1);
  let span = 0;
  const emit = (g: number, t: number): void => {
    const s = tokenStem[t];
    if (s < 0) return;
    const key = g * nS + s;
    if (seen[key] !== span) {
      seen[key] = span;
      keys.push(key);
    }
  };
  const shape = (c: number): void => {
    if (c >= 0) shapes.push(c);
  };
  for (let i = 0; i < n; i++) {
    if (tokens.kind[i] !== WORD || NO_START_WORDS.has(lower[i])) continue;
    const sFirst = sentFirst[i];
    const sLast = sentLast[i];
    const jMax = Math.min(sLast, i + MAX_SPAN_TOKENS - 1);
    for (let j = i; j <= jMax; j++) {
      if (tokens.kind[j] !== WORD || STOP_WORDS.has(lower[j])) continue;
      starts.push(i);
      ends.push(j);
      // Word keys.
      for (let t = i; t <= j; t++) emit(G_IN, t);
      for (let d = 1; d <= WINDOW && i - d >= 0; d++) emit(1 + BUCKET[d], i - d);
      for (let d = 1; d <= WINDOW && j + d < n; d++) emit(8 + BUCKET[d], j + d);
      for (let t = Math.max(sFirst, i - SENT_REACH); t < i - WINDOW; t++) emit(G_SENT, t);
      for (let t = j + WINDOW + 1; t <= Math.min(sLast, j + SENT_REACH); t++) emit(G_SENT, t);
      keyPtr.push(keys.length);
      // Shape features.
      const words = cWord[j + 1] - cWord[i];
      shape(lenCol[Math.min(words, 7) - 1]);
      shape(vFirst[i]);
      shape(vLast[j]);
      shape(i > sFirst ? vPrev[i - 1] : prevStart);
      shape(j < sLast ? vNext[j + 1] : nextEnd);
      shape(i - 1 > sFirst ? vPrev2[i - 2] : prev2Start);
      shape(j + 1 < sLast ? vNext2[j + 2] : next2End);
      shape(vFcls[i]);
      shape(vLcls[j]);
      shape(sidxCol[Math.min(sentence[i], 3)]);
      shape(vSuf[j]);
      const prevT = i > 0 ? tokens.text[i - 1] : "";
      const nextT = j + 1 < n ? tokens.text[j + 1] : "";
      if (cUp[j + 1] - cUp[i] === words) shape(flagCol[0]);
      if (cLow[j + 1] > cLow[i]) shape(flagCol[1]);
      if (cNum[j + 1] > cNum[i]) shape(flagCol[2]);
      if (cYear[j + 1] > cYear[i]) shape(flagCol[3]);
      if (cMonth[j + 1] > cMonth[i]) shape(flagCol[4]);
      if (cComma[j + 1] > cComma[i]) shape(flagCol[5]);
      if (cAnd[j + 1] > cAnd[i]) shape(flagCol[6]);
      if (cParen[j + 1] > cParen[i]) shape(flagCol[7]);
      if (cQuote[j + 1] > cQuote[i]) shape(flagCol[8]);
      if (cHyphen[j + 1] > cHyphen[i]) shape(flagCol[9]);
      if (prevT === "(" && nextT === ")") shape(flagCol[10]);
      if (QUOTES.has(prevT) && QUOTES.has(nextT)) shape(flagCol[11]);
      if (i > 0 && isCapWord(i - 1) && isCapWord(i)) shape(flagCol[12]);
      if (j + 1 < n && isCapWord(j + 1) && isCapWord(j)) shape(flagCol[13]);
      if (i === firstWord[i]) shape(flagCol[14]);
      if (j === lastWord[j]) shape(flagCol[15]);
      if (cStop[j + 1] > cStop[i]) shape(flagCol[16]);
      if (nextT === "%" || nextT.toLowerCase() === "percent") shape(flagCol[17]);
      if (prevT === "$" || prevT === "£" || prevT === "€") shape(flagCol[18]);
      shapePtr.push(shapes.length);
      span++;
    }
  }
  return {
    tokens,
    sentence,
    stems,
    tokenStem,
    spanStart: starts.toArray(),
    spanEnd: ends.toArray(),
    keyPtr: keyPtr.toArray(),
    keys: keys.toArray(),
    shapePtr: shapePtr.toArray(),
    shapes: shapes.toArray(),
  };
}

// ---------------------------------------------------------------------------
// Question features
// ---------------------------------------------------------------------------

/** What the featurizer derives from one question. */
export interface QuestionFeatures {
  /** Distinct content stems, in order of first occurrence. */
  readonly stems: string[];
  /** The head word's stem (first content word after the wh-word), or null. */
  readonly head: string | null;
  /** Question-class names (before the vocabulary filter). */
  readonly classes: string[];
}

/**
 * Extracts a question's content stems, head word and class names. Uses the
 * question text only.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { questionFeatures } from "./features.ts";
 * const q = questionFeatures("In what year did Denver win?");
 * assert.deepEqual(q.head, "year");
 * assert.deepEqual(q.classes.slice(0, 3), ["*", "wh=what", "wh1=what year"]);
 * ```
 */
export function questionFeatures(question: string): QuestionFeatures {
  const tokens = tokenize(question);
  const n = tokens.text.length;
  const lower = tokens.text.map((t) => t.toLowerCase());
  let wh = -1;
  for (let i = 0; i < n; i++) {
    if (WH_WORDS.has(lower[i])) {
      wh = i;
      break;
    }
  }
  const content = (i: number): boolean => tokens.kind[i] === WORD && !STOP_WORDS.has(lower[i]);
  const stems: string[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < n; i++) {
    if (!content(i)) continue;
    const s = stem(lower[i]);
    if (!seen.has(s)) {
      seen.add(s);
      stems.push(s);
    }
  }
  let head: string | null = null;
  for (let i = wh < 0 ? 0 : wh + 1; i < n; i++) {
    if (content(i)) {
      head = stem(lower[i]);
      break;
    }
  }
  const classes = ["*"];
  const at = (i: number): string => (i < n ? lower[i] : "</q>");
  if (wh >= 0) {
    const w = lower[wh];
    classes.push(`wh=${w}`, `wh1=${w} ${at(wh + 1)}`, `wh2=${w} ${at(wh + 1)} ${at(wh + 2)}`);
    if (wh > 0) classes.push(`pre=${lower[wh - 1]} ${w}`);
  } else {
    classes.push("wh=none");
  }
  if (n > 0) classes.push(`q0=${lower[0]}`);
  if (head !== null) classes.push(`head=${head}`);
  return { stems, head, classes };
}
