/**
 * Tokenizers of the ONNX encoders. Both split a text into **units** (words
 * and single punctuation characters, with UTF-16 offsets) with the same rule
 * as `baselines/piqa_lstm/tokenizer.py`, then map units to model positions:
 *
 * - `word`: one position per unit, id = the line of the unit (lower-cased
 *   when the manifest says so) in a vocabulary file, else the unknown id;
 *   optional casing classes (`casing` input role).
 * - `wordpiece`: each unit is split into pieces by `@huggingface/tokenizers`
 *   (a `tokenizer.json` with a WordPiece model), `[CLS]`/`[SEP]` around the
 *   sequence; a phrase starts on the first piece of its first unit and ends
 *   on the last piece of its last unit.
 *
 * The unit rule: a maximal run of code points of general category L*, M* or
 * N* is one unit; any other code point that is not white space (JavaScript
 * `\s`) is a unit by itself.
 *
 * @module
 */
import { Tokenizer } from "@huggingface/tokenizers";

const UNIT = /[\p{L}\p{M}\p{N}]+|[^\s\p{L}\p{M}\p{N}]/gu;
const WORD_START = /^[\p{L}\p{M}\p{N}]/u;
const DIGIT = /\p{Nd}/u;

/** Units of a text: offsets and texts. */
export interface Units {
  /** Unit texts. */
  readonly texts: readonly string[];
  /** Start offsets (UTF-16). */
  readonly start: Int32Array;
  /** End offsets (UTF-16, exclusive). */
  readonly end: Int32Array;
}

/**
 * Splits a text into units (see the module doc).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { splitUnits } from "./tokenizer.ts";
 * assert.deepEqual(splitUnits("U.S. $5").texts, ["U", ".", "S", ".", "$", "5"]);
 * ```
 */
export function splitUnits(text: string): Units {
  const texts: string[] = [];
  const s: number[] = [];
  const e: number[] = [];
  for (const m of text.matchAll(UNIT)) {
    texts.push(m[0]);
    s.push(m.index);
    e.push(m.index + m[0].length);
  }
  return { texts, start: Int32Array.from(s), end: Int32Array.from(e) };
}

/** Whether a unit is a word (starts with a letter, mark or number). */
export function isWordUnit(unit: string): boolean {
  return WORD_START.test(unit);
}

/**
 * Casing class of a unit, as `baselines/piqa_lstm/tokenizer.py`'s
 * `casing`: 5 not a word; 4 a word with a decimal digit; 3 ALLCAPS (two or
 * more code points, each changed by lower-casing); 2 Capitalized (first code
 * point changed by lower-casing); 1 any other word. 0 is padding.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { casingClass } from "./tokenizer.ts";
 * assert.deepEqual([casingClass("USA"), casingClass("Paris"), casingClass("1990s"), casingClass(".")], [3, 2, 4, 5]);
 * ```
 */
export function casingClass(unit: string): number {
  if (!isWordUnit(unit)) return 5;
  if (DIGIT.test(unit)) return 4;
  const cps = [...unit];
  const upper = cps.map((c) => c.toLowerCase() !== c);
  if (cps.length >= 2 && upper.every((u) => u)) return 3;
  return upper[0] ? 2 : 1;
}

/** A text tokenized for a model. */
export interface Tokenized {
  /** The units (phrases are formed on units). */
  readonly units: Units;
  /** Token ids, one per model position. */
  readonly ids: readonly number[];
  /** Casing classes per position (word tokenizer only). */
  readonly casing?: readonly number[];
  /** Model position of each unit's first token (-1: truncated). */
  readonly first: Int32Array;
  /** Model position of each unit's last token (-1: truncated). */
  readonly last: Int32Array;
}

/** A tokenizer of the ONNX encoders. */
export interface OnnxTokenizer {
  /** Tokenizer kind. */
  readonly kind: "word" | "wordpiece";
  /** Padding id. */
  readonly padId: number;
  /** Tokenizes a text. */
  tokenize(text: string): Tokenized;
}

/** Options of {@linkcode wordTokenizer}. */
export interface WordTokenizerOptions {
  /** Vocabulary, one word a line, line number = id. */
  readonly vocab: readonly string[];
  /** Look units up lower-cased. */
  readonly lowercase: boolean;
  /** Padding id. */
  readonly pad: number;
  /** Unknown-word id. */
  readonly unk: number;
  /** Keep at most this many units (default: all). */
  readonly maxTokens?: number;
}

/**
 * The `word` tokenizer: one model position per unit.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { wordTokenizer } from "./tokenizer.ts";
 * const t = wordTokenizer({ vocab: ["<pad>", "<unk>", "paris"], lowercase: true, pad: 0, unk: 1 });
 * assert.deepEqual(t.tokenize("Paris, France").ids, [2, 1, 1]);
 * ```
 */
export function wordTokenizer(opts: WordTokenizerOptions): OnnxTokenizer {
  const index = new Map<string, number>();
  opts.vocab.forEach((w, i) => {
    if (!index.has(w)) index.set(w, i);
  });
  return {
    kind: "word",
    padId: opts.pad,
    tokenize(text) {
      let units = splitUnits(text);
      if (opts.maxTokens !== undefined && units.texts.length > opts.maxTokens) {
        const n = opts.maxTokens;
        units = {
          texts: units.texts.slice(0, n),
          start: units.start.slice(0, n),
          end: units.end.slice(0, n),
        };
      }
      const n = units.texts.length;
      const ids = new Array<number>(n);
      const casing = new Array<number>(n);
      for (let i = 0; i < n; i++) {
        const u = units.texts[i];
        ids[i] = index.get(opts.lowercase ? u.toLowerCase() : u) ?? opts.unk;
        casing[i] = casingClass(u);
      }
      const pos = Int32Array.from({ length: n }, (_, i) => i);
      return { units, ids, casing, first: pos, last: pos };
    },
  };
}

/** Options of {@linkcode wordpieceTokenizer}. */
export interface WordpieceTokenizerOptions {
  /** Parsed `tokenizer.json`. */
  readonly tokenizerJson: Record<string, unknown>;
  /** Parsed `tokenizer_config.json` (default `{}`). */
  readonly tokenizerConfig?: Record<string, unknown>;
  /** Token put first (default `[CLS]`; empty string: none). */
  readonly cls?: string;
  /** Token put last (default `[SEP]`; empty string: none). */
  readonly sep?: string;
  /** Padding token (default `[PAD]`). */
  readonly pad?: string;
  /** Most model positions, special tokens included (default 512). */
  readonly maxTokens?: number;
}

/**
 * The `wordpiece` tokenizer: units split into WordPiece pieces by
 * `@huggingface/tokenizers`, `[CLS] … [SEP]` around them, truncated to
 * `maxTokens` positions (whole units only).
 *
 * @example
 * ```ts ignore
 * import { wordpieceTokenizer } from "./tokenizer.ts";
 * const t = wordpieceTokenizer({ tokenizerJson: JSON.parse(Deno.readTextFileSync("tokenizer.json")) });
 * t.tokenize("unaffable").ids; // [101, 4895, 10354, 3085, 102] with a BERT vocabulary
 * ```
 */
export function wordpieceTokenizer(opts: WordpieceTokenizerOptions): OnnxTokenizer {
  const tok = new Tokenizer(opts.tokenizerJson, opts.tokenizerConfig ?? {});
  const idOf = (t: string, what: string): number => {
    const id = tok.token_to_id(t);
    if (id === undefined) {
      throw new Error(`${what} token ${JSON.stringify(t)} is not in the vocabulary`);
    }
    return id;
  };
  const cls = opts.cls ?? "[CLS]";
  const sep = opts.sep ?? "[SEP]";
  const clsId = cls === "" ? undefined : idOf(cls, "cls");
  const sepId = sep === "" ? undefined : idOf(sep, "sep");
  const padId = idOf(opts.pad ?? "[PAD]", "pad");
  const max = opts.maxTokens ?? 512;
  const memo = new Map<string, number[]>();
  const pieces = (u: string): number[] => {
    let p = memo.get(u);
    if (p === undefined) {
      p = tok.encode(u, { add_special_tokens: false }).ids;
      if (memo.size > 200_000) memo.clear();
      memo.set(u, p);
    }
    return p;
  };
  return {
    kind: "wordpiece",
    padId,
    tokenize(text) {
      const units = splitUnits(text);
      const n = units.texts.length;
      const ids: number[] = clsId === undefined ? [] : [clsId];
      const first = new Int32Array(n).fill(-1);
      const last = new Int32Array(n).fill(-1);
      const room = max - (sepId === undefined ? 0 : 1);
      for (let i = 0; i < n; i++) {
        const p = pieces(units.texts[i]);
        if (p.length === 0) continue; // a unit the normalizer deletes (control characters)
        if (ids.length + p.length > room) break;
        first[i] = ids.length;
        for (const id of p) ids.push(id);
        last[i] = ids.length - 1;
      }
      if (sepId !== undefined) ids.push(sepId);
      return { units, ids, first, last };
    },
  };
}
