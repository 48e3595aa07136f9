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
  const quick = fsumQuick(xs, n);
  return quick === quick ? quick : fsumPartials(xs, n);
}

const bits = new Float64Array(1), words = new Uint32Array(bits.buffer);
const LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const HI = LITTLE ? 1 : 0, LO = LITTLE ? 0 : 1;

/**
 * {@linkcode fsum}'s fast path: `xs[0..n)` summed once with each addition's
 * exact error kept (Knuth's TwoSum) and the errors summed, which leaves the
 * exact sum within a proven distance of `r + t` (`r` the rounded total, `t`
 * its exact remainder); `r` is returned when that distance and `|t|` cannot
 * reach half the spacing of doubles around `r` (so `r` is the correctly
 * rounded sum, the one `math.fsum` gives), else NaN (`fsum` then sums the
 * exact partials). NaN too for non-finite terms or totals, and totals
 * near zero or below 2^-900.
 *
 * @example
 * ```ts
 * import { fsumQuick } from "./fsum.ts";
 * if (fsumQuick([0.1, 0.2, 0.3], 3) !== 0.6) throw new Error("not correctly rounded");
 * // A sum that lies exactly half-way between two doubles is left to the partials.
 * if (!Number.isNaN(fsumQuick([1, 2 ** -53], 2))) throw new Error("a tie was decided");
 * ```
 */
export function fsumQuick(xs: ArrayLike<number>, n: number): number {
  let s = 0, e = 0, a = 0;
  for (let k = 0; k < n; k++) {
    const x = xs[k];
    const t = s + x, b = t - s;
    e += (s - (t - b)) + (x - b);
    s = t;
    a += Math.abs(x);
  }
  return fsumQuickEnd(s, e, a, n);
}

/**
 * {@linkcode fsumQuick}'s decision from its running sums over `n` terms:
 * `s` the rounded total, `e` the sum of the additions' exact errors, `a`
 * the sum of the terms' magnitudes, each as `fsumQuick` accumulates them
 * (in the terms' order). The correctly rounded sum, or NaN where `fsum`
 * must sum the exact partials. Sums made elsewhere (`kernels/wasm_exact.ts`,
 * lane by lane) in the same order give the same answer.
 *
 * @example
 * ```ts
 * import { fsumQuickEnd } from "./fsum.ts";
 * // 0.1, 0.2, 0.3 summed in order: s = 0.6000000000000001, the errors' sum e, a = Σ|x|.
 * if (fsumQuickEnd(0.6000000000000001, -8.326672684688674e-17, 0.6000000000000001, 3) !== 0.6) {
 *   throw new Error("not correctly rounded");
 * }
 * ```
 */
export function fsumQuickEnd(s: number, e: number, a: number, n: number): number {
  if (!(a < Infinity)) return NaN;
  const r = s + e, b = r - s;
  const t = Math.abs((s - (r - b)) + (e - b));
  bits[0] = r;
  const hi = words[HI], exp = (hi >>> 20) & 0x7ff;
  // r non-finite, zero, subnormal or below 2^-900: left to the partials.
  if (exp === 0x7ff || exp < 124) return NaN;
  // Half the smaller spacing of doubles next to r: 2^(e-53), 2^(e-54) where r is a power of two.
  const pow2 = (hi & 0xfffff) === 0 && words[LO] === 0;
  words[HI] = (exp - (pow2 ? 54 : 53)) << 20;
  words[LO] = 0;
  const half = bits[0];
  // |sum of the errors - e| <= n^2 u^2 (1 + o(1)) * (sum |x|), u = 2^-53; here 4 n^2 u^2 a, and
  // t's own rounding in the comparison covered by 2^-50 |t|.
  const slack = n * n * a * 2 ** -104 + t * 2 ** -50;
  return t + slack < half ? r : NaN;
}

/** {@linkcode fsum} by Shewchuk's exact partials (every input). */
function fsumPartials(xs: ArrayLike<number>, n: number): number {
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

/**
 * `γ(n) = n·u / (1 − n·u)` for float32's unit roundoff `u = 2⁻²⁴`: a
 * float32 dot product of `n` terms (each product rounded once, summed in
 * order) is within `γ(n)·Σ|x_t·y_t|` of the exact one, underflow aside.
 *
 * @example
 * ```ts
 * import { gamma32 } from "./fsum.ts";
 * if (!(gamma32(256) > 256 * 2 ** -24)) throw new Error();
 * ```
 */
export function gamma32(n: number): number {
  return n * 2 ** -24 / (1 - n * 2 ** -24);
}
