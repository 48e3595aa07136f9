/**
 * Code point ranges as a regular-expression class body: the one helper the
 * SQuAD text rules (`squad_text.ts`) and BEM's tokenizer (`bem/tokenizer.ts`)
 * both build their Python-3.11 character classes with. Not part of the
 * public API.
 *
 * @module
 */

const hex = (cp: number): string => `\\u{${cp.toString(16)}}`;

/**
 * `[a0, b0, a1, b1, ...]` (inclusive pairs) as `\u{a0}-\u{b0}\u{a1}...` for
 * a `u`/`v` regular-expression class (a pair of one code point is written
 * once).
 *
 * @example
 * ```ts
 * import { rangesClass } from "./_ranges.ts";
 * if (rangesClass([0x41, 0x5a, 0x5f, 0x5f]) !== "\\u{41}-\\u{5a}\\u{5f}") throw new Error();
 * if (!new RegExp(`^[${rangesClass([0x41, 0x5a])}]$`, "u").test("Q")) throw new Error();
 * ```
 */
export function rangesClass(ranges: readonly number[]): string {
  let out = "";
  for (let i = 0; i < ranges.length; i += 2) {
    out += ranges[i] === ranges[i + 1] ? hex(ranges[i]) : `${hex(ranges[i])}-${hex(ranges[i + 1])}`;
  }
  return out;
}
