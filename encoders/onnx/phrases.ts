/**
 * Phrase formation of the ONNX context encoders: which unit spans are
 * phrases, and the phrase matrix of a `spans` model (row of phrase (i, j) =
 * `[start[first(i)] ; end[last(j)]]`).
 *
 * @module
 */
import { isWordUnit, type Tokenized } from "./tokenizer.ts";
import type { Phrase } from "../types.ts";

/** Which spans are phrases. */
export interface SpanRule {
  /** A span covers at most this many units (`j - i < maxTokens`). */
  readonly maxTokens: number;
  /** Spans start and end on word units only (not punctuation). */
  readonly wordBoundary: boolean;
  /** Lower-cased units a span may not start or end on. */
  readonly noBoundary: ReadonlySet<string>;
}

/** Phrase spans of a paragraph, in (i, j) order. */
export interface Spans {
  /** First unit of each phrase. */
  readonly i: Int32Array;
  /** Last unit of each phrase. */
  readonly j: Int32Array;
}

/**
 * The phrase spans of a tokenized text: every (i, j) with `i <= j`,
 * `j - i < maxTokens`, both units inside the model's window, both allowed
 * boundaries; in (i, j) order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { wordTokenizer } from "./tokenizer.ts";
 * import { enumerateSpans } from "./phrases.ts";
 * const t = wordTokenizer({ vocab: [], lowercase: true, pad: 0, unk: 1 }).tokenize("the big cat.");
 * const s = enumerateSpans(t, { maxTokens: 2, wordBoundary: true, noBoundary: new Set(["the"]) });
 * assert.deepEqual([...s.i].map((i, k) => [i, s.j[k]]), [[1, 1], [1, 2], [2, 2]]);
 * ```
 */
export function enumerateSpans(t: Tokenized, rule: SpanRule): Spans {
  const n = t.units.texts.length;
  const ok = new Uint8Array(n);
  for (let k = 0; k < n; k++) {
    const u = t.units.texts[k];
    ok[k] = t.first[k] >= 0 && (!rule.wordBoundary || isWordUnit(u)) &&
        !rule.noBoundary.has(u.toLowerCase())
      ? 1
      : 0;
  }
  const is: number[] = [];
  const js: number[] = [];
  for (let i = 0; i < n; i++) {
    if (!ok[i]) continue;
    const stop = Math.min(n, i + rule.maxTokens);
    for (let j = i; j < stop; j++) {
      if (ok[j]) {
        is.push(i);
        js.push(j);
      }
    }
  }
  return { i: Int32Array.from(is), j: Int32Array.from(js) };
}

/**
 * The phrases (exact substrings of `context`) of spans.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { splitUnits } from "./tokenizer.ts";
 * import { spanPhrases } from "./phrases.ts";
 * const ctx = "big cat";
 * const p = spanPhrases(ctx, splitUnits(ctx), { i: Int32Array.of(0), j: Int32Array.of(1) });
 * assert.deepEqual(p, [{ text: "big cat", start: 0, end: 7 }]);
 * ```
 */
export function spanPhrases(
  context: string,
  units: Tokenized["units"],
  spans: Spans,
): Phrase[] {
  const out: Phrase[] = new Array(spans.i.length);
  for (let r = 0; r < spans.i.length; r++) {
    const start = units.start[spans.i[r]];
    const end = units.end[spans.j[r]];
    out[r] = { text: context.slice(start, end), start, end };
  }
  return out;
}

/** A float array as ONNX Runtime returns it (f16 may come as raw bits). */
export type FloatData = Float32Array | Float16Array | Uint16Array;

/** As a plain float view (converts raw f16 bits). */
export function asFloats(data: FloatData): Float32Array | Float16Array {
  if (data instanceof Uint16Array) {
    return new Float16Array(data.buffer, data.byteOffset, data.length);
  }
  return data;
}

/**
 * Fills the N×(dS + dE) phrase matrix of a `spans` model for one batch row:
 * row r = `[start[b, first(i_r)] ; end[b, last(j_r)]]`, where `start` is
 * `[B, T, dS]` and `end` `[B, T, dE]` (row-major).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { spanMatrix } from "./phrases.ts";
 * const start = Float32Array.of(1, 2, 3, 4); // B=1, T=2, dS=2
 * const end = Float32Array.of(5, 6); // B=1, T=2, dE=1
 * const m = spanMatrix(
 *   { start, end, T: 2, dS: 2, dE: 1, b: 0 },
 *   { i: Int32Array.of(0), j: Int32Array.of(1) },
 *   Int32Array.of(0, 1), Int32Array.of(0, 1), "f32",
 * );
 * assert.deepEqual([...m], [1, 2, 6]);
 * ```
 */
export function spanMatrix(
  out: {
    readonly start: Float32Array | Float16Array;
    readonly end: Float32Array | Float16Array;
    readonly T: number;
    readonly dS: number;
    readonly dE: number;
    readonly b: number;
  },
  spans: Spans,
  first: Int32Array,
  last: Int32Array,
  dtype: "f32" | "f16",
): Float32Array | Float16Array {
  const { start, end, T, dS, dE, b } = out;
  const d = dS + dE;
  const n = spans.i.length;
  const m = dtype === "f16" ? new Float16Array(n * d) : new Float32Array(n * d);
  for (let r = 0; r < n; r++) {
    const ps = (b * T + first[spans.i[r]]) * dS;
    const pe = (b * T + last[spans.j[r]]) * dE;
    const o = r * d;
    m.set(start.subarray(ps, ps + dS), o);
    m.set(end.subarray(pe, pe + dE), o + dS);
  }
  return m;
}
