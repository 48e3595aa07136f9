/**
 * `scoreDenseBest` (the re-scoring of an IVF-PQ search's candidates, best
 * bound first) leaves its TopK as `scoreDense` does: the same rows, exact
 * scores and order, for ip and l2, float32 and float16 rows, with and
 * without the SIMD kernel, rows repeated (exact ties, broken by the lower
 * row), k from 1 to more than the rows.
 */
import { scoreDense, scoreDenseBest, TopK } from "../../../../search/index/exact/score.ts";
import { splitmix32 } from "../../../../search/index/ivfpq/kmeans.ts";
import { assert, assertEquals } from "../../../_assert.ts";

Deno.test("scoreDenseBest: the same top rows, exact scores and order as scoreDense (ip, l2, f32, f16, ties)", () => {
  const u = splitmix32(3);
  const r = () => u() / 2 ** 32 - 0.5;
  let cases = 0, ties = 0;
  for (const d of [4, 8, 64, 256, 6]) {
    for (const n of [1, 2, 10, 100, 257]) {
      for (const half of [false, true]) {
        const f = new Float32Array(n * d).map(r);
        // Repeat some rows: equal exact scores, ties by row.
        for (let i = 1; i < n; i += 3) f.copyWithin(i * d, (i - 1) * d, i * d);
        let a: Float32Array | Uint16Array = f;
        if (half) {
          // float16 bits of small values (sign, exponent 14 or less, random mantissa).
          a = new Uint16Array(n * d).map(() =>
            ((u() & 1) << 15) | ((8 + (u() % 7)) << 10) | (u() & 1023)
          );
          for (let i = 1; i < n; i += 3) a.copyWithin(i * d, (i - 1) * d, i * d);
        }
        const q = new Float32Array(d).map(r);
        for (const metric of ["ip", "l2"] as const) {
          for (const simd of [true, false]) {
            for (const k of [1, 3, 10, n, n + 2]) {
              const want = new TopK(k), got = new TopK(k);
              scoreDense(a, n, d, 0, [q], [want], metric, simd);
              scoreDenseBest(a, n, d, q, got, metric, simd);
              assertEquals(
                got.rows,
                want.rows,
                `d ${d} n ${n} half ${half} ${metric} simd ${simd} k ${k}`,
              );
              assertEquals(got.scores, want.scores);
              const s = want.scores;
              for (let i = 1; i < s.length; i++) if (s[i] === s[i - 1]) ties++;
              cases++;
            }
          }
        }
      }
    }
  }
  assert(cases >= 400, `${cases} cases`);
  assert(ties > 0, "no tie among the kept rows");
});

Deno.test("scoreDenseBest: a longer buffer than n rows reads only the n rows", () => {
  const d = 8, n = 5;
  const a = new Float32Array(2 * n * d).map((_, i) => (i % 7) - 3);
  const q = new Float32Array(d).fill(1);
  const want = new TopK(2), got = new TopK(2);
  scoreDense(a.subarray(0, n * d), n, d, 0, [q], [want], "ip");
  scoreDenseBest(a.subarray(0, n * d), n, d, q, got, "ip");
  assertEquals(got.rows, want.rows);
  assertEquals(got.scores, want.scores);
});
