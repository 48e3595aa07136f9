/**
 * McNemar's exact test for two systems' binary scores (EM) on the same
 * questions. Only the discordant questions count: `b` (the first system right,
 * the second wrong) and `c` (the reverse). Under the null hypothesis each
 * discordant question goes either way with probability 1/2, so with
 * X ~ Binomial(b + c, 1/2) the two-sided p-value is
 *
 *   p = min(1, 2·P[X ≤ min(b, c)])        (p = 1 when b + c = 0),
 *
 * which equals `scipy.stats.binomtest(b, b + c, 0.5).pvalue`.
 *
 * Accuracy: each binomial probability is computed by Loader's saddle-point
 * formula (C. Loader, "Fast and accurate computation of binomial
 * probabilities", 2000; R's `dbinom`), which keeps its relative accuracy
 * near 1e-15 for any n (no `C(n, k)` and no `2⁻ⁿ` that would overflow or
 * underflow), and the tail is summed from `min(b, c)` downwards with
 * compensated (Neumaier) summation until the terms no longer change the
 * sum. `tests/metrics/stats_test.ts` checks it against SciPy to 1e-12 for
 * b + c up to 30,000.
 *
 * @example
 * ```ts
 * import { mcnemarExact } from "./mcnemar.ts";
 * // 2·P[Bin(10, 1/2) ≤ 2] = 2·56/1024
 * if (Math.abs(mcnemarExact(2, 8).pValue - 0.109375) > 1e-15) throw new Error("p");
 * ```
 *
 * @module
 */

const LN_2PI = 1.8378770664093454836; // log(2π)

/** `stirlerr(n) = log(n!) − log(√(2π) (n/e)ⁿ √n)` for n = 1..15 (40-digit values, rounded). */
const STIRLERR_SMALL = [
  0,
  0.08106146679532726,
  0.0413406959554093,
  0.02767792568499834,
  0.020790672103765093,
  0.016644691189821193,
  0.013876128823070748,
  0.01189670994589177,
  0.010411265261972096,
  0.009255462182712733,
  0.00833056343336287,
  0.007573675487951841,
  0.00694284010720953,
  0.006408994188004207,
  0.0059513701127588475,
  0.005554733551962801,
];

/** The error of Stirling's formula for log(n!), n ≥ 1 an integer (Loader 2000). */
function stirlerr(n: number): number {
  if (n <= 15) return STIRLERR_SMALL[n];
  const S0 = 1 / 12, S1 = 1 / 360, S2 = 1 / 1260, S3 = 1 / 1680, S4 = 1 / 1188;
  const nn = n * n;
  if (n > 500) return (S0 - S1 / nn) / n;
  if (n > 80) return (S0 - (S1 - S2 / nn) / nn) / n;
  if (n > 35) return (S0 - (S1 - (S2 - S3 / nn) / nn) / nn) / n;
  return (S0 - (S1 - (S2 - (S3 - S4 / nn) / nn) / nn) / nn) / n;
}

/** The deviance term `x log(x/np) + np − x`, without cancellation near x = np (Loader 2000). */
function bd0(x: number, np: number): number {
  if (Math.abs(x - np) < 0.1 * (x + np)) {
    let v = (x - np) / (x + np);
    let s = (x - np) * v;
    if (Math.abs(s) < Number.MIN_VALUE) return s;
    let ej = 2 * x * v;
    v = v * v;
    for (let j = 1; j < 1000; j++) {
      ej *= v;
      const s1 = s + ej / (2 * j + 1);
      if (s1 === s) return s1;
      s = s1;
    }
  }
  return x * Math.log(x / np) + np - x;
}

/**
 * P[X = k] for X ~ Binomial(n, 1/2), integers 0 ≤ k ≤ n, by Loader's
 * saddle-point formula (relative error about 1e-15; exactly `2⁻ⁿ` at k = 0 or
 * n, which underflows to 0 past n = 1074 as it should).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { binomialHalfPmf } from "./mcnemar.ts";
 * assert.ok(Math.abs(binomialHalfPmf(2, 4) - 0.375) < 1e-16);
 * assert.equal(binomialHalfPmf(0, 3), 0.125);
 * ```
 */
export function binomialHalfPmf(k: number, n: number): number {
  if (k === 0 || k === n) return Math.pow(0.5, n);
  const half = n * 0.5;
  const lc = stirlerr(n) - stirlerr(k) - stirlerr(n - k) - bd0(k, half) - bd0(n - k, half);
  const lf = LN_2PI + Math.log(k) + Math.log1p(-k / n);
  return Math.exp(lc - 0.5 * lf);
}

/**
 * P[X ≤ k] for X ~ Binomial(n, 1/2) and k < n/2, summed from k downwards
 * (the terms fall) with Neumaier compensation until a term no longer moves
 * the sum.
 */
function lowerTail(k: number, n: number): number {
  let sum = 0;
  let comp = 0;
  for (let i = k; i >= 0; i--) {
    const t = binomialHalfPmf(i, n);
    const s = sum + t;
    comp += Math.abs(sum) >= Math.abs(t) ? (sum - s) + t : (t - s) + sum;
    sum = s;
    if (t <= sum * 2 ** -60) break;
  }
  return sum + comp;
}

/** The result of McNemar's exact test. */
export interface McNemarResult {
  /** Questions the first system gets right and the second wrong. */
  readonly b: number;
  /** Questions the second system gets right and the first wrong. */
  readonly c: number;
  /** The two-sided exact p-value `min(1, 2·P[X ≤ min(b, c)])`, X ~ Binomial(b + c, 1/2). */
  readonly pValue: number;
}

/**
 * McNemar's exact two-sided test from the discordant counts `b` and `c`
 * (non-negative integers; a `RangeError` otherwise). See the module notes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mcnemarExact } from "./mcnemar.ts";
 * assert.equal(mcnemarExact(0, 0).pValue, 1);
 * assert.equal(mcnemarExact(7, 7).pValue, 1);
 * assert.equal(mcnemarExact(0, 5).pValue, 0.0625); // 2·2⁻⁵
 * ```
 */
export function mcnemarExact(b: number, c: number): McNemarResult {
  for (const [name, v] of [["b", b], ["c", c]] as const) {
    if (!Number.isSafeInteger(v) || v < 0) {
      throw new RangeError(`${name} must be a non-negative integer, got ${v}`);
    }
  }
  const n = b + c;
  const k = Math.min(b, c);
  // 2k ≥ n − 1: the lower tail holds at least half the mass, so p = 1.
  if (2 * k >= n - 1) return { b, c, pValue: 1 };
  return { b, c, pValue: Math.min(1, 2 * lowerTail(k, n)) };
}

/**
 * McNemar's exact test on two systems' per-question binary scores (EM as
 * 0/1 or booleans, the same questions in the same order): counts the
 * discordant questions and calls {@linkcode mcnemarExact}. Throws a
 * `RangeError` when the lengths differ or a score is not 0, 1, `false` or
 * `true`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mcnemarPaired } from "./mcnemar.ts";
 * const r = mcnemarPaired([1, 1, 0, 1, 0], [0, 1, 0, 0, 1]);
 * assert.deepEqual([r.b, r.c], [2, 1]);
 * assert.equal(r.pValue, 1);
 * ```
 */
export function mcnemarPaired(
  a: ArrayLike<number | boolean>,
  b: ArrayLike<number | boolean>,
): McNemarResult {
  if (a.length !== b.length) {
    throw new RangeError(`the two systems score ${a.length} and ${b.length} questions`);
  }
  let nb = 0;
  let nc = 0;
  for (let i = 0; i < a.length; i++) {
    const x = binary(a[i], "first", i);
    const y = binary(b[i], "second", i);
    if (x && !y) nb++;
    else if (y && !x) nc++;
  }
  return mcnemarExact(nb, nc);
}

function binary(v: number | boolean, which: string, i: number): boolean {
  if (v === true || v === 1) return true;
  if (v === false || v === 0) return false;
  throw new RangeError(`the ${which} system's score at index ${i} is ${v}, not 0 or 1`);
}
