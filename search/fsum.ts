/**
 * Exact summation: {@linkcode fsum}, the correctly rounded sum that decides
 * merge's ties and near-ties (bit for bit Python's `math.fsum`).
 *
 * @module
 */
let partials = new Float64Array(64);

/**
 * The correctly rounded sum of `xs[0..n)`, bit for bit what Python's
 * `math.fsum` returns (Shewchuk's exact partials, then CPython's half-even
 * fix-up across partials). Infinities and NaNs follow `math.fsum` too:
 * `inf + -inf` and an intermediate overflow throw a `RangeError` (Python
 * raises ValueError / OverflowError).
 *
 * @example
 * ```ts
 * import { fsum } from "./fsum.ts";
 * // Plain addition gives 0.6000000000000001.
 * if (fsum([0.1, 0.2, 0.3]) !== 0.6) throw new Error("not correctly rounded");
 * if (fsum([1e16, 1, 1e-16]) !== 10000000000000002) throw new Error("not correctly rounded");
 * ```
 */
export function fsum(xs: ArrayLike<number>, n: number = xs.length): number {
  let p = partials;
  let np = 0;
  let specialSum = 0;
  let infSum = 0;
  for (let k = 0; k < n; k++) {
    let x = xs[k];
    const xsave = x;
    let i = 0;
    for (let j = 0; j < np; j++) {
      let y = p[j];
      if (Math.abs(x) < Math.abs(y)) {
        const t = x;
        x = y;
        y = t;
      }
      const hi = x + y;
      const yr = hi - x;
      const lo = y - yr;
      if (lo !== 0) p[i++] = lo;
      x = hi;
    }
    np = i;
    if (x !== 0) {
      if (!Number.isFinite(x)) {
        if (Number.isFinite(xsave)) throw new RangeError("intermediate overflow in fsum");
        if (xsave === Infinity || xsave === -Infinity) infSum += xsave;
        specialSum += xsave;
        np = 0;
      } else {
        if (np === p.length) {
          const bigger = new Float64Array(p.length * 2);
          bigger.set(p);
          partials = p = bigger;
        }
        p[np++] = x;
      }
    }
  }
  if (specialSum !== 0) {
    if (Number.isNaN(infSum)) throw new RangeError("-inf + inf in fsum");
    return specialSum;
  }
  let hi = 0;
  let lo = 0;
  if (np > 0) {
    hi = p[--np];
    while (np > 0) {
      const x = hi;
      const y = p[--np];
      hi = x + y;
      const yr = hi - x;
      lo = y - yr;
      if (lo !== 0) break;
    }
    if (np > 0 && ((lo < 0 && p[np - 1] < 0) || (lo > 0 && p[np - 1] > 0))) {
      const y = lo * 2;
      const x = hi + y;
      const yr = x - hi;
      if (y === yr) hi = x;
    }
  }
  return hi;
}
