/**
 * A 4-bit index's training subsets (`search/index/ivfpq/train.ts`): at
 * most `max` rows drawn by a seeded shuffle, in row order, the same on
 * every call; `trainIvfPq` with `pqRows` gives the coarse quantizer of
 * every row and sub-quantizers that are exactly the k-means of the
 * residuals' subset drawn with seed + 1, as the module notes say;
 * `coarseIterations` set the coarse k-means's iterations alone.
 */
import { subsetRows, trainIvfPq } from "../../../../search/index/ivfpq/train.ts";
import { kmeans, nearest, rowNorms, splitmix32 } from "../../../../search/index/ivfpq/kmeans.ts";
import { trainCodebooks } from "../../../../search/index/ivfpq/ivf_encode.ts";
import { assert, assertEquals } from "../../../_assert.ts";

Deno.test("4-bit training subsets: at most max rows by a seeded shuffle, in row order, reproducible", () => {
  const n = 1000, d = 3;
  // Row i holds the values i, i + 0.25, i + 0.5: a row tells its number.
  const x = new Float32Array(n * d).map((_, k) => Math.floor(k / d) + (k % d) / 4);
  const [same, ns] = subsetRows(x, n, d, n, 5);
  assert(same === x && ns === n, "all rows when n ≤ max");
  const [a, na] = subsetRows(x, n, d, 300, 5);
  assertEquals(na, 300);
  const picked = Array.from({ length: na }, (_, r) => a[r * d]);
  for (let r = 0; r < na; r++) {
    assertEquals(
      [a[r * d + 1], a[r * d + 2]],
      [picked[r] + 0.25, picked[r] + 0.5],
      `row ${r} whole`,
    );
    if (r > 0) assert(picked[r] > picked[r - 1], "increasing row order, no row twice");
  }
  assert(
    picked[0] < 100 && picked[na - 1] > 900,
    `spread over the rows: ${picked[0]} … ${picked[na - 1]}`,
  );
  assertEquals(subsetRows(x, n, d, 300, 5)[0], a);
  const other = subsetRows(x, n, d, 300, 6)[0];
  assert(other.some((v, k) => v !== a[k]), "another seed, another subset");
});

Deno.test("4-bit training: trainIvfPq's coarse quantizer is every row's k-means, its codebooks the k-means of the residuals' seeded subset", async () => {
  const u = splitmix32(4);
  const nt = 2000, d = 8, nlist = 4, bpv = 8, ksub = 16, seed = 77, iterations = 6;
  const x = new Float32Array(nt * d).map(() => u() / 2 ** 32 - 0.5);
  const got = await trainIvfPq(x.slice(), nt, d, nlist, bpv, {
    iterations,
    seed,
    threads: 0,
    ksub,
    pqRows: 700,
  });
  const centroids = kmeans(x.slice(), nt, d, nlist, { iterations, seed });
  assertEquals(got.centroids, centroids);
  const r = x.slice(), cn = rowNorms(centroids, nlist, d);
  for (let i = 0; i < nt; i++) {
    const l = nearest(r, i * d, centroids, cn, nlist, d);
    for (let t = 0; t < d; t++) r[i * d + t] -= centroids[l * d + t];
  }
  const [rp, np] = subsetRows(r, nt, d, 700, seed + 1);
  assertEquals(np, 700);
  const books = await trainCodebooks(rp, np, d, bpv, { iterations, seed, threads: 0, ksub });
  assertEquals(got.codebooks, books);
  // Not the k-means of every residual: the subset matters.
  const all = await trainCodebooks(r, nt, d, bpv, { iterations, seed, threads: 0, ksub });
  assert(all.some((v, k) => v !== books[k]), "the subset's codebooks differ from all rows'");
});

Deno.test("4-bit training: trainIvfPq's coarseIterations are the coarse k-means's alone", async () => {
  const u = splitmix32(9);
  const nt = 1500, d = 8, nlist = 24, bpv = 4, ksub = 16, seed = 5;
  const x = new Float32Array(nt * d).map(() => u() / 2 ** 32 - 0.5);
  const o = { seed, threads: 0, ksub, pqRows: 500 };
  const both = await trainIvfPq(x.slice(), nt, d, nlist, bpv, { ...o, iterations: 9 });
  const fewer = await trainIvfPq(x.slice(), nt, d, nlist, bpv, {
    ...o,
    iterations: 9,
    coarseIterations: 3,
  });
  assertEquals(fewer.centroids, kmeans(x.slice(), nt, d, nlist, { iterations: 3, seed }));
  assert(fewer.centroids.some((v, k) => v !== both.centroids[k]), "3 iterations, other centroids");
  // The codebooks: 9 iterations on the residuals of the coarse quantizer of 3.
  const r = x.slice(), cn = rowNorms(fewer.centroids, nlist, d);
  for (let i = 0; i < nt; i++) {
    const l = nearest(r, i * d, fewer.centroids, cn, nlist, d);
    for (let t = 0; t < d; t++) r[i * d + t] -= fewer.centroids[l * d + t];
  }
  const [rp, np] = subsetRows(r, nt, d, 500, seed + 1);
  assertEquals(
    fewer.codebooks,
    await trainCodebooks(rp, np, d, bpv, { iterations: 9, seed, threads: 0, ksub }),
  );
});
