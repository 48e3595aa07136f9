/**
 * BEM's tokenizer: BERT uncased WordPiece over the bert-base-uncased
 * vocabulary, giving the ids that Hugging Face's slow
 * `BertTokenizer(do_lower_case=True)` (transformers 4.x, CPython 3.11) gives
 * with `convert_tokens_to_ids(tokenize(text))`, which is what BEM's recipe
 * uses.
 *
 * The work is done by `@huggingface/tokenizers` (`BertNormalizer` with
 * `clean_text`, `handle_chinese_chars`, `lowercase` and accent stripping,
 * `BertPreTokenizer`, `WordPiece` with `##` continuation and 100 characters
 * per word at most), built in memory from the vocabulary file: no download.
 * Where the library and the Python tokenizer disagree, a pre-processing step
 * (`pythonBertPrepare`) rewrites the text first so that the library's result
 * is Python's. Each fix is there because the golden test
 * (`tests/metrics/bem/tokenizer_test.ts` against `tests/fixtures/bem_tokenizer_golden.ndjson.gz`)
 * failed without it:
 *
 * 1. **Special tokens.** Python splits `[PAD] [UNK] [CLS] [SEP] [MASK]`
 *    (case-sensitive, exactly as written in the raw text) out first and
 *    tokenizes the pieces between them; anything else is lower-cased before a
 *    special token could form (`"[MAS\u212A]"` with a Kelvin sign, or
 *    `"[SE\0P]"`, stay ordinary text). The library is built with no added
 *    tokens and this module does the split.
 * 2. **Deleted characters.** Python deletes every character of category `C*`
 *    in its Unicode version (14.0 in 3.11), unassigned ones (`Cn`) and lone
 *    surrogates included; the library deletes only `Cc`, `Cf`, `Co`, `Cs` in
 *    V8's newer Unicode and keeps unassigned code points as `[UNK]`. Deleted
 *    here: `\p{Cn}`, `\p{Cs}` and the generated list of code points assigned
 *    after Unicode 14.0 (plus U+1171E, `Mn` in 14.0), `metrics/bem/_unicode.ts`.
 * 3. **Supplementary-plane CJK.** The library puts spaces around CJK
 *    ideographs one UTF-16 unit at a time, so it never sees those above
 *    U+FFFF (CJK Extension B and later, U+2F800..U+2FA1F); spaces are put
 *    around every ideograph of Python's `_is_chinese_char` ranges here.
 * 4. **Final sigma.** transformers 4.x lower-cases the text one character at
 *    a time before tokenizing, so a word-final `Σ` becomes `σ`, not `ς` as in
 *    JavaScript's (context-sensitive) `toLowerCase`; `Σ` is mapped to `σ`
 *    here.
 * 5. **NFC.** Python composes the cleaned text (NFC) before splitting it into
 *    words; done here too (after the library's NFD it changes nothing the
 *    golden file can see, but it keeps the steps in Python's order).
 *
 * @module
 */
import { Tokenizer } from "@huggingface/tokenizers";
import { PY311_BERT_DELETE_RANGES } from "./_unicode.ts";
import { rangesClass } from "../_ranges.ts";

/** The special tokens of the bert-base-uncased vocabulary. */
export const BERT_SPECIAL_TOKENS: readonly string[] = [
  "[PAD]",
  "[UNK]",
  "[CLS]",
  "[SEP]",
  "[MASK]",
];

/** A WordPiece tokenizer that gives Hugging Face's slow `BertTokenizer` ids. */
export interface BertTokenizer {
  /** Number of entries in the vocabulary. */
  readonly vocabSize: number;
  /** Id of `[CLS]`. */
  readonly clsId: number;
  /** Id of `[SEP]`. */
  readonly sepId: number;
  /** Id of `[PAD]`. */
  readonly padId: number;
  /** Id of `[UNK]`. */
  readonly unkId: number;
  /** `convert_tokens_to_ids(tokenize(text))`. */
  ids(text: string): number[];
  /** `tokenize(text)`: the WordPiece strings. */
  tokens(text: string): string[];
}

/** Python's `BasicTokenizer._is_chinese_char` ranges. */
const CJK_RANGES: readonly number[] = [
  0x4e00,
  0x9fff,
  0x3400,
  0x4dbf,
  0x20000,
  0x2a6df,
  0x2a700,
  0x2b73f,
  0x2b740,
  0x2b81f,
  0x2b820,
  0x2ceaf,
  0xf900,
  0xfaff,
  0x2f800,
  0x2fa1f,
];

const DELETE_RE = new RegExp(`[\\p{Cn}\\p{Cs}${rangesClass(PY311_BERT_DELETE_RANGES)}]`, "gu");
const CJK_RE = new RegExp(`[${rangesClass(CJK_RANGES)}]`, "gu");
const SPECIAL_RE = /\[(?:PAD|UNK|CLS|SEP|MASK)\]/;
const SPECIAL_SPLIT_RE = /(\[(?:PAD|UNK|CLS|SEP|MASK)\])/;
/** Everything that may need a fix: non-ASCII, or a special token. */
const NEEDS_PREP_RE = /[^\0-\x7f]|\[(?:PAD|UNK|CLS|SEP|MASK)\]/;

/**
 * Fixes 2 to 5 of the module notes on one piece of text without special
 * tokens: the text whose library tokenization is Python's.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pythonBertPrepare } from "./tokenizer.ts";
 * assert.deepEqual(pythonBertPrepare("ΟΔΟΣ \u{20000}x"), "ΟΔΟσ  \u{20000} x");
 * ```
 */
export function pythonBertPrepare(text: string): string {
  return text.replace(DELETE_RE, "").replaceAll("\u03a3", "\u03c3").replace(CJK_RE, " $& ")
    .normalize("NFC");
}

/**
 * Splits `text` into pieces the library tokenizes and special tokens, the way
 * Python's slow tokenizer does (fix 1 of the module notes). Pieces are
 * already prepared ({@linkcode pythonBertPrepare}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { splitSpecial } from "./tokenizer.ts";
 * assert.deepEqual(splitSpecial("a[SEP]b"), [{ text: "a" }, { special: "[SEP]" }, { text: "b" }]);
 * ```
 */
export function splitSpecial(text: string): ({ text: string } | { special: string })[] {
  const out: ({ text: string } | { special: string })[] = [];
  const raw = SPECIAL_RE.test(text) ? text.split(SPECIAL_SPLIT_RE) : [text];
  raw.forEach((piece, i) => {
    if (i % 2 === 1) {
      out.push({ special: piece });
      return;
    }
    if (piece === "") return;
    out.push({ text: pythonBertPrepare(piece) });
  });
  return out;
}

/**
 * Builds the BEM tokenizer from the text of a BERT `vocab.txt` (one token a
 * line; the id of a token is its line number from 0; a repeated token keeps
 * its last line, as transformers' `load_vocab` does).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bertUncasedTokenizer } from "./tokenizer.ts";
 * const tok = bertUncasedTokenizer(Deno.readTextFileSync("data/bert/bert-base-uncased-vocab.txt"));
 * assert.deepEqual(tok.ids("Why is the sky blue?"), [2339, 2003, 1996, 3712, 2630, 1029]);
 * ```
 */
export function bertUncasedTokenizer(vocabText: string): BertTokenizer {
  const lines = vocabText.split("\n");
  if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  const vocab: Record<string, number> = Object.create(null);
  lines.forEach((t, i) => {
    vocab[t.replace(/\r$/, "")] = i;
  });
  const idOf = (t: string): number => {
    const id = vocab[t];
    if (id === undefined) throw new Error(`the vocabulary has no ${t} token`);
    return id;
  };
  const unkId = idOf("[UNK]");
  const lib = new Tokenizer({
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: [],
    normalizer: {
      type: "BertNormalizer",
      clean_text: true,
      handle_chinese_chars: true,
      strip_accents: null,
      lowercase: true,
    },
    pre_tokenizer: { type: "BertPreTokenizer" },
    post_processor: null,
    decoder: null,
    model: {
      type: "WordPiece",
      unk_token: "[UNK]",
      continuing_subword_prefix: "##",
      max_input_chars_per_word: 100,
      vocab,
    },
  }, {});
  const tokens = (text: string): string[] => {
    if (!NEEDS_PREP_RE.test(text)) return lib.tokenize(text);
    const out: string[] = [];
    for (const p of splitSpecial(text)) {
      if ("special" in p) out.push(p.special);
      else out.push(...lib.tokenize(p.text));
    }
    return out;
  };
  return {
    vocabSize: lines.length,
    clsId: idOf("[CLS]"),
    sepId: idOf("[SEP]"),
    padId: idOf("[PAD]"),
    unkId,
    tokens,
    ids: (text) => tokens(text).map((t) => vocab[t] ?? unkId),
  };
}
