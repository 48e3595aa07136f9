/**
 * `fsum`'s fast path (`fsumQuick`) against an exact reference: every term
 * as a BigInt multiple of 2^-1074, summed exactly, rounded half to even.
 * (The slow suite checks `fsum` bit for bit against Python's `math.fsum`.)
 */
import { mulberry32 as rng } from "../../bench/perturb.ts";
import { assert, assertEquals } from "../_assert.ts";
import { fsum, fsumQuick } from "../../search/fsum.ts";

const view = new DataView(new ArrayBuffer(8));

/** `x` (finite) as a BigInt count of 2^-1074. */
function units(x: number): bigint {
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  const exp = Number((bits >> 52n) & 0x7ffn), frac = bits & 0xfffffffffffffn;
  const m = exp === 0 ? frac : frac | (1n << 52n);
  const v = m << BigInt(Math.max(0, exp - 1));
  return bits >> 63n ? -v : v;
}

/** The double nearest `u` × 2^-1074 (ties to even), for normal results. */
function nearest(u: bigint): number {
  if (u === 0n) return 0;
  const neg = u < 0n, a = neg ? -u : u;
  const len = a.toString(2).length;
  if (len <= 53) return (neg ? -1 : 1) * Number(a) * 2 ** -1074;
  const shift = BigInt(len - 53);
  let q = a >> shift;
  const rem = a - (q << shift), half = 1n << (shift - 1n);
  if (rem > half || (rem === half && (q & 1n) === 1n)) q += 1n;
  // Number(q) is exact (q <= 2^53); the power of two in two steps (each exact).
  const k = Number(shift) - 1074;
  return (neg ? -1 : 1) * Number(q) * 2 ** Math.max(k, -1000) * 2 ** (k - Math.max(k, -1000));
}

const exactSum = (xs: ArrayLike<number>) => {
  let u = 0n;
  for (let i = 0; i < xs.length; i++) u += units(xs[i]);
  return nearest(u);
};

const half16 = (x: number) => {
  // x rounded to 11 significant bits (an f16 value in f16's normal range).
  const e = Math.floor(Math.log2(Math.abs(x)));
  return Math.round(x / 2 ** (e - 10)) * 2 ** (e - 10);
};

Deno.test("fsumQuick: the correctly rounded sum or NaN, on dot products and their l2 terms", () => {
  const r = rng(11);
  let quick = 0, all = 0;
  for (const kind of ["f16·f32", "f32·f32", "l2"]) {
    for (let c = 0; c < 400; c++) {
      const d = 256;
      const q = Array.from({ length: d }, () => Math.fround(r() - 0.5));
      const a = Array.from({ length: d }, () => {
        const v = (r() - 0.5) * 0.2 + 1e-9;
        return kind === "f16·f32" ? half16(v) : Math.fround(v);
      });
      const xs = kind === "l2"
        ? a.flatMap((x, i) => [2 * x * q[i], -(x * x), -(q[i] * q[i])])
        : a.map((x, i) => x * q[i]);
      const want = exactSum(xs), got = fsumQuick(xs, xs.length);
      all++;
      if (!Number.isNaN(got)) {
        quick++;
        assertEquals(got, want, `${kind} case ${c}`);
      }
      assertEquals(fsum(xs), want, `${kind} case ${c}`);
    }
  }
  // Nearly every such sum is decided by the fast path (ties and near-ties are not).
  assert(quick > 0.9 * all, `${quick} of ${all} by the fast path`);
});

Deno.test("fsumQuick: cancellation, wide exponents and near-ties", () => {
  const r = rng(5);
  let quick = 0, slow = 0;
  for (let c = 0; c < 2000; c++) {
    const n = 2 + Math.floor(r() * 40);
    const xs: number[] = [];
    for (let i = 0; i < n; i++) {
      const pick = r();
      if (pick < 0.4) xs.push((r() - 0.5) * 2 ** Math.floor(r() * 120 - 60));
      else if (pick < 0.7 && xs.length > 0) {
        xs.push(-xs[Math.floor(r() * xs.length)] * (1 + (r() < 0.5 ? 2 ** -52 : 0)));
      } else xs.push((r() < 0.5 ? 1 : -1) * 2 ** Math.floor(r() * 120 - 60));
    }
    const got = fsumQuick(xs, n), want = exactSum(xs);
    if (Number.isNaN(got)) slow++;
    else {
      quick++;
      assertEquals(got, want, `case ${c}: ${xs}`);
    }
    if (Math.abs(want) > 2 ** -1000 || want === 0) assertEquals(fsum(xs), want, `case ${c}`);
  }
  assert(quick > 500 && slow > 20, `${quick} quick, ${slow} left to the partials`);
});

Deno.test("fsumQuick: exact ties, zero, tiny and non-finite sums are left to the partials", () => {
  // Half-way between 1 and 1 + 2^-52: fsum rounds to the even one.
  assert(Number.isNaN(fsumQuick([1, 2 ** -53], 2)));
  assertEquals(fsum([1, 2 ** -53]), 1);
  assertEquals(fsum([1 + 2 ** -52, 2 ** -53]), 1 + 2 ** -51);
  // Just above the tie: decided by the partials, above 1.
  assertEquals(fsum([1, 2 ** -53, 2 ** -106]), 1 + 2 ** -52);
  assert(Number.isNaN(fsumQuick([1, -1], 2)));
  assert(Number.isNaN(fsumQuick([], 0)));
  assert(Number.isNaN(fsumQuick([2 ** -950, 2 ** -960], 2)));
  assert(Number.isNaN(fsumQuick([Infinity, 1], 2)));
  assert(Number.isNaN(fsumQuick([NaN, 1], 2)));
  assert(Number.isNaN(fsumQuick([1.7976931348623157e308, 1.7976931348623157e308], 2)));
  // A power of two: below it the doubles are twice as close.
  assertEquals(fsumQuick([1, -(2 ** -80)], 2), 1);
  assertEquals(fsum([1, -(2 ** -54)]), 1);
  assertEquals(fsum([1, -(2 ** -54), -(2 ** -90)]), 1 - 2 ** -53);
  // Where the summed errors lose a bit that decides the rounding: each a tie or a near-tie that
  // the fast path must leave alone (a wider spacing, a spacing not halved below a power of two,
  // or no allowance for the errors' own rounding would each return the wrong double).
  const cases: [number[], number][] = [
    [[1.5, 2 ** -53, 2 ** -106], 1.5 + 2 ** -52],
    [[1, -(2 ** -54), -(2 ** -107)], 1 - 2 ** -53],
    [[1.5, 2 ** -53 - 2 ** -105, ...Array(9).fill(2 ** -108)], 1.5 + 2 ** -52],
  ];
  for (const [xs, want] of cases) {
    assertEquals(exactSum(xs), want);
    assert(Number.isNaN(fsumQuick(xs, xs.length)), `${xs}`);
    assertEquals(fsum(xs), want);
  }
  // Only the first n terms.
  assertEquals(fsumQuick(new Float64Array([0.5, 0.25, 1e300]), 2), 0.75);
});
