/**
 * The exact decision of a scoring pass: {@linkcode pickRow} re-scores only
 * the rows whose fast score may be the best and keeps the first maximum.
 *
 * @module
 */
/**
 * Picks the first row with the largest exact score for one question, given
 * the fast scores `fast[base..base+n)` and an error bound per row
 * `bound(i)` (|fast - exact| ≤ bound / 4 or less); `exact(i)` computes the
 * correctly rounded score. Only rows within the bounds of the best fast
 * score are re-scored; when that is the best row alone, nothing is.
 *
 * @example
 * ```ts
 * import { pickRow } from "./pick.ts";
 * const fast = new Float64Array([1, 3, 3]);
 * const best = pickRow(fast, 0, 3, () => 0.5, (i) => fast[i]);
 * if (best !== 1) throw new Error(`got ${best}`); // the first of the tied rows
 * ```
 */
export function pickRow(
  fast: Float64Array,
  base: number,
  n: number,
  bound: (i: number) => number,
  exact: (i: number) => number,
): number {
  let m = 0;
  let fm = fast[base];
  for (let i = 1; i < n; i++) {
    const f = fast[base + i];
    if (f > fm) {
      fm = f;
      m = i;
    }
  }
  const threshold = fm - bound(m);
  let count = 0;
  let first = -1;
  for (let i = 0; i < n; i++) {
    if (fast[base + i] + bound(i) >= threshold) {
      count++;
      if (first < 0) first = i;
      if (count > 1) break;
    }
  }
  if (count === 1) return first;
  let best = -1;
  let bestV = -Infinity;
  for (let i = first; i < n; i++) {
    if (fast[base + i] + bound(i) >= threshold) {
      const v = exact(i);
      if (best < 0 || v > bestV) {
        best = i;
        bestV = v;
      }
    }
  }
  return best;
}
