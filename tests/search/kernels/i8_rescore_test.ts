/**
 * The 8-bit screening's exact re-scoring of candidates (`i8_pool.ts`
 * `rescoreI8`, best bound first): the same `TopK` as offering every
 * candidate's exact score in row order, on rows with many exact ties,
 * float32 and float16, both metrics, several k, into empty and non-empty
 * tops, with and without the screen's upper bounds given.
 */
import { assertEquals } from "../../_assert.ts";
import { rescoreI8 } from "../../../search/kernels/i8_pool.ts";
import { exactScore } from "../../../search/kernels/i8_scan.ts";
import { TopK } from "../../../search/index/exact/score.ts";
import { halfBits } from "../../../search/dense_f64.ts";

/** A seeded PRNG (mulberry32). */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

Deno.test("i8 rescore: best bound first leaves the TopK that every candidate offered in row order leaves (ties, f32/f16, ip/l2, k 1…200, with and without given bounds)", () => {
  const u = rng(7);
  const n = 600, d = 48;
  // Values from a few levels, and rows repeated: many exact ties.
  const vals = new Float32Array(n * d);
  for (let i = 0; i < n; i++) {
    if (i > 0 && u() < 0.2) {
      const from = Math.floor(u() * i);
      vals.copyWithin(i * d, from * d, from * d + d);
    } else {
      for (let c = 0; c < d; c++) vals[i * d + c] = Math.round((u() * 2 - 1) * 4) / 4;
    }
  }
  const f16 = halfBits(Float16Array.from(vals));
  let checked = 0, partial = 0;
  for (const dense of [vals, f16]) {
    for (const metric of ["ip", "l2"] as const) {
      for (const k of [1, 3, 10, 200]) {
        for (let trial = 0; trial < 6; trial++) {
          const q = new Float32Array(d);
          for (let c = 0; c < d; c++) {
            q[c] = trial % 3 === 0 ? Math.round(u() * 4) / 4 : u() * 2 - 1;
          }
          // Candidates: increasing rows, a random half of them from row 100 on.
          const cands = Int32Array.from(
            Array.from({ length: n - 100 }, (_, x) => x + 100).filter(() => u() < 0.5),
          );
          // Given upper bounds (the screen's): each exact score plus a random slack, some 0.
          const upper = Float64Array.from(
            cands,
            (i) => exactScore(dense, i, d, q, metric) + (u() < 0.3 ? 0 : u() * 2),
          );
          // Empty tops, and tops holding rows before the candidates.
          for (const before of [0, 40]) {
            for (const given of [undefined, upper]) {
              const want = new TopK(k), got = new TopK(k);
              for (let i = 0; i < before; i++) {
                const v = exactScore(dense, i, d, q, metric);
                want.offer(v, i);
                got.offer(v, i);
              }
              for (const i of cands) want.offer(exactScore(dense, i, d, q, metric), i);
              rescoreI8({ dense, phrases: n, d, metric }, q, cands, got, given);
              const what = `${dense.constructor.name} ${metric} k ${k} trial ${trial} ` +
                `before ${before} upper ${given !== undefined}`;
              assertEquals(got.rows, want.rows, what);
              assertEquals(got.scores, want.scores, what);
              checked++;
              if (want.rows.length === k && k < cands.length) partial++;
            }
          }
        }
      }
    }
  }
  assertEquals(checked, 2 * 2 * 4 * 6 * 2 * 2);
  // Most cases keep fewer rows than the candidates (so the early stop is exercised).
  assertEquals(partial >= 2 * 2 * 3 * 6 * 2 * 2, true, `${partial}`);
});
