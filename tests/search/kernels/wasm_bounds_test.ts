/**
 * The k-means bounds test in WebAssembly (`search/kernels/wasm_bounds.ts`)
 * against its TypeScript reference: the same centroids, in the same order,
 * on random bounds, near ties (a bound equal to its threshold, rounded
 * either way), NaN and infinities, odd and even counts, and the row's own
 * centroid at every place.
 *
 * @module
 */
import { assert, assertEquals } from "../../_assert.ts";
import { BoundsTest, unskippedReference } from "../../../search/kernels/wasm_bounds.ts";
import { splitmix32 } from "../../../search/index/ivfpq/kmeans.ts";

const UP = 1 + 2 ** -50;

/** Uniform numbers in [0, 1) from the k-means's splitmix32. */
const rng = (seed: number) => {
  const next = splitmix32(seed);
  return () => next() / 2 ** 32;
};

Deno.test("bounds test kernel: the reference's centroids, in order, for random, tied and non-finite bounds", () => {
  let cases = 0, kept = 0, ties = 0;
  for (const k of [1, 2, 3, 7, 8, 64, 999, 1000]) {
    const t = BoundsTest.create(k);
    if (t === undefined) {
      console.log("wasm_bounds_test: the module cannot run here (the TypeScript loop is used)");
      return;
    }
    const r = rng(k);
    const lower = new Float32Array(3 * k), total = new Float64Array(k);
    const halves = new Float64Array(k * k);
    const want = new Int32Array(k), got = new Int32Array(k).fill(-7);
    for (let rep = 0; rep < 40; rep++) {
      const up = 1 + 3 * r();
      // The row's bounds at lower[lb…lb+k), its centroid's half distances at row a of halves.
      const lb = Math.floor(r() * 2) * k, a = Math.floor(r() * k);
      const half = halves.subarray(a * k, (a + 1) * k);
      lower.fill(-1);
      for (let j = 0; j < k; j++) {
        total[j] = r() < 0.1 ? 0 : 0.5 * r();
        const thr = (up + total[j]) * UP;
        const x = r();
        // A bound at its threshold (as float32, then one float32 step either side), else random.
        lower[lb + j] = x < 0.1
          ? Math.fround(thr)
          : x < 0.15
          ? Math.fround(thr) * (1 + 2 ** -23)
          : x < 0.2
          ? Math.fround(thr) * (1 - 2 ** -23)
          : x < 0.22
          ? NaN
          : x < 0.24
          ? Infinity
          : 2.5 * up * r();
        if (Math.fround(thr) === thr) ties++;
        const h = r();
        half[j] = h < 0.05 ? up : h < 0.07 ? NaN : h < 0.08 ? -Infinity : 1.2 * up * r();
      }
      const m = unskippedReference(lower.subarray(lb), total, half, up, a, k, UP, want);
      t.update(total, halves);
      got.fill(-7);
      const n = t.unskipped(lower, lb, a, up, UP);
      got.set(t.cand.subarray(0, n));
      assertEquals(n, m, `k ${k} rep ${rep}: how many`);
      assertEquals(
        Array.from(got.subarray(0, n)),
        Array.from(want.subarray(0, m)),
        `k ${k} rep ${rep}`,
      );
      assert(!Array.from(got.subarray(0, n)).includes(a), "the row's own centroid is never one");
      cases++;
      kept += m;
    }
  }
  assertEquals(cases, 320);
  assert(kept > 1000 && kept < 320 * 500, `${kept} centroids kept`);
  assert(ties >= 0);
});
