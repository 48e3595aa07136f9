/**
 * The float32 screen of the nearest centroid in the scoring module
 * (`search/kernels/wasm_simd.ts`'s `screen`, driven by
 * `SimdKernels.screenNearest`): for every pair of rows, the smallest upper
 * end `top`, the two smallest lower ends and the first centroid of the
 * smallest are the float64 numbers of the TypeScript loop they replace
 * (`kmeans.ts`, `nearestScreened`), bit for bit: on random values, on
 * small integers (exact ties: the first centroid), with a centroid
 * repeated, and the finite check NaN exactly where a score read is not
 * finite.
 */
import { simdKernels } from "../../../search/kernels/simd.ts";
import { splitmix32 } from "../../../search/index/ivfpq/kmeans.ts";
import { F32_SAFE, TINY, U32 } from "../../../search/index/exact/score.ts";
import { assert, assertEquals } from "../../_assert.ts";

const u = splitmix32(77);
const values = (len: number, ints: boolean) =>
  new Float32Array(len).map(() => ints ? (u() % 5) - 2 : (u() / 2 ** 32 - 0.5) * 3);

/** The TypeScript loop of `nearestScreened` for row `i`: top, lo1, lo2, j1. */
function reference(
  sc: Float32Array,
  m: number,
  i: number,
  k: number,
  cn: Float64Array,
  xLen: number,
  d: number,
): [number, number, number, number] {
  const factor = 2 * 4 * (d + 4) * U32, tiny = 2 * (d + 8) * TINY;
  let top = Infinity, lo1 = Infinity, lo2 = Infinity, j1 = -1;
  for (let j = 0; j < k; j++) {
    const est = cn[j] - 2 * sc[j * m + i];
    const dot = xLen * Math.sqrt(cn[j]);
    const b = factor * dot + tiny + 2 ** -40 * (dot + Math.abs(cn[j]));
    const l = est - b;
    if (est + b < top) top = est + b;
    if (l < lo1) {
      lo2 = lo1;
      lo1 = l;
      j1 = j;
    } else if (l < lo2) lo2 = l;
  }
  return [top, lo1, lo2, j1];
}

Deno.test("the module's nearest-centroid screen: top, the two lowest ends and the first centroid are the TypeScript loop's float64 numbers, bit for bit", () => {
  const simd = simdKernels();
  assert(simd !== undefined, "WebAssembly SIMD is available here");
  let pairsChecked = 0, ties = 0;
  for (const [d, k, m] of [[32, 8, 70], [256, 100, 131], [64, 257, 64], [36, 13, 3]]) {
    for (const kind of ["random", "ints"]) {
      const x = values(m * d, kind === "ints"), c = values(k * d, kind === "ints");
      // A centroid repeated: the same numbers, the first one kept.
      c.copyWithin((k - 1) * d, 0, d);
      const qs = Array.from({ length: k }, (_, j) => c.subarray(j * d, (j + 1) * d));
      const cn = new Float64Array(k);
      for (let j = 0; j < k; j++) {
        for (let t = 0; t < d; t++) cn[j] += c[j * d + t] * c[j * d + t];
      }
      const r = simd.scores(x, m, d, qs);
      const sc = r.scores.slice(), xl = Float64Array.from(r.squares, Math.sqrt);
      const tab = new Float64Array(3 * k);
      for (let j = 0; j < k; j++) tab.set([cn[j], Math.sqrt(cn[j]), Math.abs(cn[j])], 3 * j);
      const cst = [2 * 4 * (d + 4) * U32, 2 * (d + 8) * TINY, 2 ** -40] as const;
      const pairs = m >> 1;
      const s = simd.screenNearest(pairs, xl, tab, cst);
      // The scores again, where they lie after the call (it may have grown memory).
      assertEquals(s.scores, sc, `d ${d} k ${k} ${kind}: the scores view`);
      const out = s.screened.slice();
      for (let i = 0; i < 2 * pairs; i++) {
        const p = 8 * (i >> 1) + (i & 1);
        const got = [out[p], out[p + 2], out[p + 4], out[p + 6]];
        const want = reference(sc, m, i, k, cn, xl[i], d);
        assertEquals(got, want, `d ${d} k ${k} ${kind} row ${i}`);
        if (want[1] === want[2]) ties++;
      }
      assertEquals([out[8 * pairs], out[8 * pairs + 1]], [0, 0], "every score finite");
      pairsChecked += pairs;
      assert(xl.every((v) => v * 10 < F32_SAFE));
    }
  }
  assert(
    pairsChecked === 266 && ties > 0,
    `${pairsChecked} pairs, ${ties} rows with tied lowest ends`,
  );
});

Deno.test("the module's nearest-centroid screen: a score that is not finite makes its lane's check NaN, the other lane's stays 0", () => {
  const simd = simdKernels()!;
  const d = 32, k = 9, m = 6;
  const x = values(m * d, false), c = values(k * d, false);
  const qs = Array.from({ length: k }, (_, j) => c.subarray(j * d, (j + 1) * d));
  const tab = new Float64Array(3 * k).fill(1);
  const cst = [0, 0, 0] as const;
  for (const [row, value] of [[3, Infinity], [4, NaN], [5, -Infinity]] as const) {
    const xs = x.slice();
    xs[row * d + 7] = value;
    const r = simd.scores(xs, m, d, qs);
    const xl = new Float64Array(m).fill(1);
    const out = simd.screenNearest(m >> 1, xl, tab, cst).screened;
    const lane = row & 1, p = 8 * (m >> 1);
    assert(Number.isNaN(out[p + lane]), `row ${row}: lane ${lane} NaN`);
    assertEquals(out[p + 1 - lane], 0, `row ${row}: the other lane`);
    assert(!Number.isFinite(r.scores[row]), "the score itself is not finite");
  }
  // Fewer rows than pairs ask for: refused.
  simd.scores(x.subarray(0, 3 * d), 3, d, qs);
  let refused = false;
  try {
    simd.screenNearest(2, new Float64Array(4), tab, cst);
  } catch (e) {
    refused = e instanceof RangeError;
  }
  assert(refused, "2 pairs of 3 rows refused");
  // widen writes over the start of memory, the scores among it: no screen after it.
  simd.scores(x, m, d, qs);
  simd.widen(new Uint16Array(8));
  refused = false;
  try {
    simd.screenNearest(1, new Float64Array(2), tab, cst);
  } catch (e) {
    refused = e instanceof RangeError;
  }
  assert(refused, "no screen after widen");
});
