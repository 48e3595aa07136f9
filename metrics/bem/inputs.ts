/**
 * BEM's inputs, the authors' recipe followed exactly (Bulian et al. 2022,
 * "Tomayto, Tomahto. Beyond Token-level Answer Equivalence for Question
 * Answering Evaluation"):
 *
 * - Tokenizer: BERT uncased WordPiece, bert-base-uncased vocabulary
 *   (`data/bert/`), the ids of Hugging Face's `BertTokenizer(do_lower_case=True)`
 *   (`./tokenizer.ts`).
 * - Sequence `[CLS] candidate [SEP] reference [SEP] question [SEP]`; segment
 *   ids 0 for `[CLS]`, the candidate and its `[SEP]`, 1 for the reference and
 *   its `[SEP]`, 2 for the question and its `[SEP]`.
 * - `input_ids` and `segment_ids` zero-padded to 512; no attention mask unless
 *   the model declares that input (then 1 on tokens, 0 on padding).
 * - Two logits per pair; score = softmax(logits)[1]. A pair is "equivalent"
 *   when its score is above 0.5.
 *
 * **Truncation** (not in the recipe, which never meets it on short answers):
 * when `candidate + reference + question + 4` tokens exceed 512, tokens are
 * cut from the end of the question first, then from the end of the
 * reference, then from the end of the candidate, until the triple fits; the
 * three `[SEP]` and `[CLS]` always stay. Every truncated pair is counted.
 *
 * @module
 */
import { type BertTokenizer, bertUncasedTokenizer } from "./tokenizer.ts";

/** Positions BEM's inputs are padded to (and truncated at). */
export const BEM_MAX_LENGTH = 512;

/** One question to judge: is `candidate` equivalent to `reference`? */
export interface BemTriple {
  /** The answer being judged (a prediction). */
  readonly candidate: string;
  /** The answer it is compared with (a gold answer). */
  readonly reference: string;
  /** The question both answer. */
  readonly question: string;
}

/** The model inputs of one triple, unpadded. */
export interface BemInputs {
  /** `[CLS] candidate [SEP] reference [SEP] question [SEP]` token ids. */
  readonly inputIds: Int32Array;
  /** 0 (`[CLS]`, candidate, `[SEP]`), 1 (reference, `[SEP]`), 2 (question, `[SEP]`). */
  readonly segmentIds: Int32Array;
  /** Whether tokens were cut to fit 512. */
  readonly truncated: boolean;
  /** Tokens cut from the end of each part. */
  readonly cut: {
    readonly candidate: number;
    readonly reference: number;
    readonly question: number;
  };
}

// ---------------------------------------------------------------------------
// Pure functions
// ---------------------------------------------------------------------------

let defaultTokenizer: BertTokenizer | undefined;

/**
 * The BEM tokenizer over the bundled `data/bert/bert-base-uncased-vocab.txt`
 * (read once; needs read permission on it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultBemTokenizer } from "./inputs.ts";
 * assert.deepEqual(defaultBemTokenizer().ids("scattering of light"), [17501, 1997, 2422]);
 * ```
 */
export function defaultBemTokenizer(): BertTokenizer {
  if (!defaultTokenizer) {
    const url = new URL("../../data/bert/bert-base-uncased-vocab.txt", import.meta.url);
    defaultTokenizer = bertUncasedTokenizer(Deno.readTextFileSync(url));
  }
  return defaultTokenizer;
}

/**
 * The BEM tokenizer over another `vocab.txt`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bemTokenizerFromFile } from "./inputs.ts";
 * const tok = bemTokenizerFromFile("data/bert/bert-base-uncased-vocab.txt");
 * assert.deepEqual(tok.ids("light scattering"), [2422, 17501]);
 * ```
 */
export function bemTokenizerFromFile(path: string): BertTokenizer {
  return bertUncasedTokenizer(Deno.readTextFileSync(path));
}

/**
 * Assembles token ids of the three parts into BEM's sequence and segment
 * ids, truncating (question first, then reference, then candidate, each from
 * its end) when the triple exceeds `maxLength`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bemAssemble } from "./inputs.ts";
 * const x = bemAssemble([17501, 1997, 2422], [2422, 17501], [2339, 2003, 1996, 3712, 2630]);
 * assert.deepEqual(Array.from(x.segmentIds), [0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2, 2]);
 * ```
 */
export function bemAssemble(
  candidate: readonly number[],
  reference: readonly number[],
  question: readonly number[],
  maxLength: number = BEM_MAX_LENGTH,
  special: { cls: number; sep: number } = { cls: 101, sep: 102 },
): BemInputs {
  if (maxLength < 4) throw new RangeError("maxLength must leave room for [CLS] and three [SEP]");
  let excess = candidate.length + reference.length + question.length + 4 - maxLength;
  const take = (n: number) => {
    const k = Math.max(0, Math.min(excess, n));
    excess -= k;
    return k;
  };
  const cutQ = take(question.length);
  const cutR = take(reference.length);
  const cutC = take(candidate.length);
  const c = candidate.length - cutC, r = reference.length - cutR, q = question.length - cutQ;
  const n = c + r + q + 4;
  const ids = new Int32Array(n);
  const seg = new Int32Array(n);
  let o = 0;
  ids[o++] = special.cls;
  for (let i = 0; i < c; i++) ids[o++] = candidate[i];
  ids[o++] = special.sep;
  const s1 = o;
  for (let i = 0; i < r; i++) ids[o++] = reference[i];
  ids[o++] = special.sep;
  const s2 = o;
  for (let i = 0; i < q; i++) ids[o++] = question[i];
  ids[o++] = special.sep;
  seg.fill(1, s1, s2);
  seg.fill(2, s2, n);
  return {
    inputIds: ids,
    segmentIds: seg,
    truncated: cutQ + cutR + cutC > 0,
    cut: { candidate: cutC, reference: cutR, question: cutQ },
  };
}

/**
 * The model inputs of a triple, unpadded (see {@linkcode padBemInputs}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bemInputs } from "./inputs.ts";
 * const x = bemInputs({
 *   question: "why is the sky blue",
 *   reference: "light scattering",
 *   candidate: "scattering of light",
 * });
 * assert.deepEqual(
 *   Array.from(x.inputIds),
 *   [101, 17501, 1997, 2422, 102, 2422, 17501, 102, 2339, 2003, 1996, 3712, 2630, 102],
 * );
 * ```
 */
export function bemInputs(
  triple: BemTriple,
  tokenizer: BertTokenizer = defaultBemTokenizer(),
  maxLength: number = BEM_MAX_LENGTH,
): BemInputs {
  return bemAssemble(
    tokenizer.ids(triple.candidate),
    tokenizer.ids(triple.reference),
    tokenizer.ids(triple.question),
    maxLength,
    { cls: tokenizer.clsId, sep: tokenizer.sepId },
  );
}

/**
 * Zero-pads inputs to `maxLength` (what the model is fed).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bemAssemble, padBemInputs } from "./inputs.ts";
 * const p = padBemInputs(bemAssemble([7], [8], [9]));
 * assert.deepEqual(p.inputIds.length, 512);
 * ```
 */
export function padBemInputs(
  inputs: BemInputs,
  maxLength: number = BEM_MAX_LENGTH,
): { inputIds: Int32Array; segmentIds: Int32Array } {
  const ids = new Int32Array(maxLength);
  const seg = new Int32Array(maxLength);
  ids.set(inputs.inputIds);
  seg.set(inputs.segmentIds);
  return { inputIds: ids, segmentIds: seg };
}

/**
 * `softmax([l0, l1])[1]`, computed stably: BEM's score from its two logits.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { softmax1 } from "./inputs.ts";
 * assert.deepEqual(softmax1(0, 0), 0.5);
 * assert.deepEqual(softmax1(-1000, 1000), 1);
 * ```
 */
export function softmax1(l0: number, l1: number): number {
  const m = Math.max(l0, l1);
  const e0 = Math.exp(l0 - m), e1 = Math.exp(l1 - m);
  return e1 / (e0 + e1);
}

/**
 * A key that is equal for equal model inputs (the service scores each key
 * once).
 *
 * @example
 * ```ts
 * import { bemAssemble, bemInputKey } from "./inputs.ts";
 * const a = bemInputKey(bemAssemble([7], [8], [9]));
 * if (a !== bemInputKey(bemAssemble([7], [8], [9]))) throw new Error("same inputs, same key");
 * if (a === bemInputKey(bemAssemble([7, 8], [], [9]))) throw new Error("segments count");
 * ```
 */
export function bemInputKey(x: BemInputs): string {
  let s1 = 0;
  while (s1 < x.segmentIds.length && x.segmentIds[s1] === 0) s1++;
  let s2 = s1;
  while (s2 < x.segmentIds.length && x.segmentIds[s2] === 1) s2++;
  return `${s1},${s2}:${x.inputIds.join(",")}`;
}
