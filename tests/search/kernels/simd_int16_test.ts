/**
 * The int16 products of the nearest-centroid screen (`search/kernels/wasm_simd.ts`'s
 * `quant16` and `scores16`, driven by `SimdKernels.quantize16` and
 * `SimdKernels.scores16`; used by `kmeans.ts`'s `nearestAll` from 64
 * centroids on): the quantized values, scales and float32 sums of squares
 * are a TypeScript reference's, bit for bit (rounding half to even, zero
 * rows, NaN, the padding of a `d` that is not a multiple of 8), and within
 * `s·(1/2 + 2⁻⁹)` of the values (the bound the screen relies on); every
 * score is `f32(S)·f32(rs·cs)` with `S` the exact integer sum, up to sums of
 * `d·Q²`; and `nearestAll` on the int16 path (counted) answers as
 * `nearest()` does, bit for bit, on near ties, zero rows and centroids,
 * rows too small or too large for it, and rows that are not finite.
 */
import { simdKernels } from "../../../search/kernels/simd.ts";
import {
  nearest,
  nearestAll,
  rowNorms,
  screenBlocks,
  splitmix32,
} from "../../../search/index/ivfpq/kmeans.ts";
import { assert, assertEquals } from "../../_assert.ts";

const u = splitmix32(1616);
const uniform = () => u() / 2 ** 32;

/** Round half to even (f32x4.nearest). */
function nearestEven(v: number): number {
  const f = Math.floor(v), r = v - f;
  if (r > 0.5) return f + 1;
  if (r < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/** quant16's numbers for one row, in TypeScript: scale, values (padded to w), sum of squares. */
function quantRef(x: Float32Array, d: number, Q: number): [number, number[], number] {
  let m = 0, nan = false;
  const lanes = [0, 0, 0, 0];
  for (let t = 0; t < d; t++) {
    const a = Math.abs(x[t]);
    if (Number.isNaN(a)) nan = true;
    else if (a > m) m = a;
    lanes[t % 4] = Math.fround(lanes[t % 4] + Math.fround(x[t] * x[t]));
  }
  const s = nan ? NaN : Math.fround(m / Q), inv = Math.fround(1 / s);
  const w = Math.ceil(d / 8) * 8, q: number[] = [];
  for (let t = 0; t < w; t++) {
    if (t >= d) {
      q.push(0);
      continue;
    }
    const p = Math.fround(x[t] * inv);
    // A NaN row's values are not specified (skipped below); the rest are within ±Q (the clamp
    // changes none of them: the kernel does not clamp).
    const r = Number.isNaN(p) ? 0 : nearestEven(p);
    q.push(Math.max(-Q, Math.min(Q, r)));
  }
  const sq = Math.fround(Math.fround(lanes[0] + lanes[1]) + Math.fround(lanes[2] + lanes[3]));
  return [s, q, sq];
}

Deno.test("quant16: scales, int16 values and float32 sums of squares are the TypeScript reference's, bit for bit, each value within s·(1/2 + 2⁻⁹)", () => {
  const simd = simdKernels();
  assert(simd !== undefined, "WebAssembly SIMD is available here");
  let rowsChecked = 0, halves = 0;
  for (const d of [32, 36, 100, 256]) {
    const Q = Math.floor(Math.sqrt((2 ** 31 - 1) / d)), w = Math.ceil(d / 8) * 8, n = 41;
    const x = new Float32Array(n * d).map(() => (uniform() - 0.5) * 3);
    // Row 0: zeros; row 1: a NaN; row 2: halves (m = Q/2 so x·(1/s) = x·2 lands on k + 1/2);
    // row 3: tiny values; row 4: large ones; row 5: one value far above the rest.
    x.fill(0, 0, d);
    x[d + 7] = NaN;
    for (let t = 0; t < d; t++) x[2 * d + t] = t === 0 ? Q / 2 : (t % 7) - 3 + 0.25;
    for (let t = 0; t < d; t++) x[3 * d + t] *= 1e-30;
    for (let t = 0; t < d; t++) x[4 * d + t] *= 1e30;
    x[5 * d + 3] = 1e4;
    const out = new Int16Array(n * w).fill(-1),
      scale = new Float32Array(n),
      sq = new Float32Array(n);
    simd.quantize16(x, n, d, Q, out, scale, sq);
    for (let i = 0; i < n; i++) {
      const row = x.subarray(i * d, (i + 1) * d);
      const [s, q, sum] = quantRef(row, d, Q);
      assertEquals(Object.is(sq[i], sum) || sq[i] === sum, true, `d ${d} row ${i} squares`);
      // A row with NaN (its sum of squares NaN, refused by the screen): scale and values not specified.
      if (Number.isNaN(s)) continue;
      assertEquals(scale[i], s, `d ${d} row ${i} scale`);
      assertEquals([...out.subarray(i * w, (i + 1) * w)], q, `d ${d} row ${i} values`);
      for (let t = 0; t < d; t++) {
        const err = Math.abs(row[t] - s * q[t]);
        assert(err <= s * (0.5 + 2 ** -9), `d ${d} row ${i} value ${t}: error ${err}, scale ${s}`);
        if (i === 2 && Math.abs(Math.fround(row[t] * Math.fround(1 / s)) % 1) === 0.5) halves++;
      }
      rowsChecked++;
    }
    assertEquals(scale[0], 0, "a zero row's scale");
    assert(Number.isNaN(sq[1]), "a row with NaN has a NaN sum of squares");
  }
  assertEquals(rowsChecked, 4 * 40);
  assert(halves > 100, `${halves} values exactly half-way (rounded to even)`);
});

Deno.test("scores16: every score is f32(S)·f32(rs·cs), S the exact integer sum (odd row counts, 1 to 13 questions, sums up to d·Q²)", () => {
  const simd = simdKernels();
  assert(simd !== undefined, "WebAssembly SIMD is available here");
  let checked = 0;
  for (const [n, w, nq] of [[1, 8, 1], [7, 16, 13], [6, 264, 5], [31, 256, 7], [4, 256, 2]]) {
    const Q = Math.floor(Math.sqrt((2 ** 31 - 1) / w));
    const a = new Int16Array(n * w).map(() => Math.round((uniform() * 2 - 1) * Q));
    const q = new Int16Array(nq * w).map(() => Math.round((uniform() * 2 - 1) * Q));
    if (n === 4) {
      // The largest sums: ±Q everywhere (d·Q² < 2³¹), both signs.
      a.fill(Q);
      q.fill(Q);
      q.fill(-Q, 0, w);
    }
    const rs = new Float32Array(n).map(() => Math.fround(uniform() * 2 ** -10));
    const cs = new Float32Array(nq).map(() => Math.fround(uniform() * 3));
    const out = simd.scores16(a, n, w, q, nq, rs, cs).slice();
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < nq; j++) {
        let S = 0;
        for (let t = 0; t < w; t++) S += a[i * w + t] * q[j * w + t];
        const want = Math.fround(Math.fround(S) * Math.fround(rs[i] * cs[j]));
        assertEquals(out[j * n + i], want, `n ${n} w ${w} row ${i} question ${j} (S ${S})`);
        checked++;
      }
    }
    if (n === 4) assertEquals(Math.abs(Math.fround(out[0] / (rs[0] * cs[0]))) > 2 ** 30, true);
  }
  assertEquals(checked, 1 + 91 + 30 + 217 + 8);
});

Deno.test("nearestAll on the int16 path (k ≥ 64): nearest()'s answers, bit for bit, near ties, zero rows and centroids, rows too small, too large or not finite", () => {
  let rows = 0;
  const before = { ...screenBlocks };
  for (const [d, k] of [[256, 100], [36, 64], [100, 300]]) {
    const n = 700;
    const c = new Float32Array(k * d).map(() => (uniform() - 0.5) * 2);
    // Centroids a float32 step apart; a zero centroid; one repeated.
    for (let j = 1; j < k; j += 2) {
      const t = j % d;
      c.copyWithin(j * d, (j - 1) * d, j * d);
      c[j * d + t] += Math.abs(c[j * d + t]) * 2 ** -23 + 2 ** -30;
    }
    c.fill(0, 4 * d, 5 * d);
    c.copyWithin((k - 1) * d, 0, d);
    const x = new Float32Array(n * d).map(() => (uniform() - 0.5) * 2);
    for (let i = 0; i < n; i += 3) {
      // On top of a centroid, or half-way between two (within a float32 step).
      const j = i % k, j2 = (i * 7 + 1) % k;
      for (let t = 0; t < d; t++) {
        x[i * d + t] = i % 2 === 0 ? c[j * d + t] : Math.fround((c[j * d + t] + c[j2 * d + t]) / 2);
      }
    }
    x.fill(0, 10 * d, 11 * d);
    const cn = rowNorms(c, k, d), out = new Uint32Array(n);
    nearestAll(x, n, d, c, cn, k, out);
    for (let i = 0; i < n; i++) {
      assertEquals(out[i], nearest(x, i * d, c, cn, k, d), `d ${d} k ${k} row ${i}`);
    }
    rows += n;
  }
  const int16 = screenBlocks.int16 - before.int16;
  assert(int16 >= 3, `${int16} blocks took the int16 products`);
  // Blocks the int16 path refuses (they take the float32 products or the float64 kernel):
  // a row too small for its scale, one beyond float32's products, one not finite.
  const d = 64, k = 80, n = 90;
  const c = new Float32Array(k * d).map(() => uniform() - 0.5);
  const cn = rowNorms(c, k, d);
  for (
    const [what, v] of [["tiny", 1e-25], ["huge", 1e35], ["NaN", NaN], [
      "infinite",
      -Infinity,
    ]] as const
  ) {
    const x = new Float32Array(n * d).map(() => uniform() - 0.5);
    for (let t = 0; t < d; t++) {
      x[17 * d + t] = what === "tiny" || what === "huge" ? x[17 * d + t] * v : x[17 * d + t];
    }
    if (what === "NaN" || what === "infinite") x[17 * d + 5] = v;
    const f32 = screenBlocks.float32, i16 = screenBlocks.int16;
    const out = new Uint32Array(n);
    nearestAll(x, n, d, c, cn, k, out);
    for (let i = 0; i < n; i++) {
      assertEquals(out[i], nearest(x, i * d, c, cn, k, d), `${what} row ${i}`);
    }
    assertEquals(
      [screenBlocks.int16 - i16, screenBlocks.float32 - f32],
      [0, 1],
      `${what}: the block's products`,
    );
    rows += n;
  }
  assertEquals(rows, 2100 + 360);
});
