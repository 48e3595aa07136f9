/**
 * The encoding's nearest list screened on a few directions
 * (`search/index/ivfpq/projected.ts`, from 256 centroids on): the module's
 * `near` lists exactly the centroids a TypeScript loop over the same
 * float64 numbers lists (in order, with the cap, ties at the top, a score
 * that is not finite); and `nearestAll` with a projection answers as
 * `nearest()` does, bit for bit, on rows of low rank and of full rank,
 * rows on a centroid, duplicated centroids, rows half-way between two
 * centroids, rows too small or too large for float32 products, and rows
 * that are not finite, while deciding most rows itself (counted).
 */
import { simdKernels } from "../../../../search/kernels/simd.ts";
import {
  nearest,
  nearestAll,
  rowNorms,
  splitmix32,
} from "../../../../search/index/ivfpq/kmeans.ts";
import {
  PROJECTED_CAP,
  PROJECTED_DIMS,
  PROJECTED_MIN_K,
  projectedRows,
  projectionOf,
} from "../../../../search/index/ivfpq/projected.ts";
import { encodeRows, KSUB, prepareModel } from "../../../../search/index/ivfpq/ivf_encode.ts";
import { assert, assertEquals } from "../../../_assert.ts";

const u = splitmix32(4242);
const uniform = () => u() / 2 ** 32;
const gauss = () => {
  const a = Math.max(uniform(), 2 ** -32), b = uniform();
  return Math.sqrt(-2 * Math.log(a)) * Math.cos(2 * Math.PI * b);
};

/** `n` rows of `d`: `rank` shared directions with decaying weights, plus `noise`. */
function lowRank(
  n: number,
  d: number,
  rank: number,
  noise: number,
  dirs: Float64Array,
): Float32Array {
  const x = new Float32Array(n * d);
  for (let i = 0; i < n; i++) {
    for (let r = 0; r < rank; r++) {
      const w = gauss() / (1 + r / 4);
      for (let t = 0; t < d; t++) x[i * d + t] += w * dirs[r * d + t];
    }
    for (let t = 0; t < d; t++) x[i * d + t] = Math.fround(x[i * d + t] + noise * gauss());
  }
  return x;
}

function randomDirs(rank: number, d: number): Float64Array {
  const dirs = new Float64Array(rank * d);
  for (let i = 0; i < dirs.length; i++) dirs[i] = gauss() / Math.sqrt(d);
  return dirs;
}

/** `nearest()`'s answer for every row. */
function reference(x: Float32Array, n: number, d: number, c: Float32Array, k: number): Uint32Array {
  const cn = rowNorms(c, k, d), out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = nearest(x, i * d, c, cn, k, d);
  return out;
}

/** nearestAll with the projection of `c`, asserted to be `nearest()`'s answers. */
function check(label: string, x: Float32Array, n: number, d: number, c: Float32Array, k: number) {
  const cn = rowNorms(c, k, d);
  const proj = projectionOf(c, cn, k, d);
  assert(proj !== undefined, `${label}: no projection`);
  const got = new Uint32Array(n);
  nearestAll(x, n, d, c, cn, k, got, proj);
  const want = reference(x, n, d, c, k);
  for (let i = 0; i < n; i++) assertEquals(got[i], want[i], `${label}: row ${i}`);
}

Deno.test("near: each row's listed centroids are a TypeScript loop's over the same float64 numbers (order, cap, ties at the top, a score that is not finite)", () => {
  const simd = simdKernels()!;
  for (const [n, k, cap] of [[2, 5, 8], [7, 300, 16], [64, 257, 4], [33, 1000, 256]]) {
    const d = 8;
    const x = new Float32Array(n * d).map(() => gauss());
    const cs = Array.from({ length: k }, () => new Float32Array(d).map(() => gauss()));
    const sc = Float32Array.from(simd.scores(x, n, d, cs).scores);
    const tab = new Float64Array(3 * k), xl = new Float64Array(n);
    for (let j = 0; j < k; j++) {
      tab[3 * j] = 1 + uniform();
      tab[3 * j + 1] = uniform();
      tab[3 * j + 2] = uniform() * 0.01;
    }
    for (let i = 0; i < n; i++) xl[i] = uniform() * 2;
    // A tie: row 0's centroids 0 and 1 have the same number, far below every other one, and no
    // width, so the lower end of each is exactly the row's top.
    if (k >= 2) {
      tab[0] = tab[3] = -100;
      tab[1] =
        tab[2] =
        tab[4] =
        tab[5] =
          0;
      sc[0 * n + 0] = sc[1 * n + 0];
    }
    const pairs = n >> 1;
    // The scores written again (where screenList reads them), with the tie.
    simd.scores(x, n, d, cs).scores.set(sc);
    const { ok, lists } = simd.screenList(pairs, xl, tab, cap);
    assert(ok);
    for (let i = 0; i < 2 * pairs; i++) {
      let top = Infinity;
      const lo: number[] = [];
      for (let j = 0; j < k; j++) {
        const est = tab[3 * j] - (sc[j * n + i] + sc[j * n + i]);
        const b = xl[i] * tab[3 * j + 1] + tab[3 * j + 2];
        if (est + b < top) top = est + b;
        lo.push(est - b);
      }
      const want = lo.flatMap((l, j) => l <= top ? [j] : []);
      assertEquals(lists[i], want.length, `n ${n} k ${k} row ${i}: count`);
      const got = Array.from(
        lists.subarray(2 * pairs + i * cap, 2 * pairs + i * cap + Math.min(cap, want.length)),
      );
      assertEquals(got, want.slice(0, cap), `n ${n} k ${k} row ${i}`);
      if (i === 0 && k >= 2) assert(want.includes(0) && want.includes(1), "the tie is listed");
    }
  }
  // A score that is not finite: not ok.
  const x = new Float32Array(4 * 4).fill(1);
  const cs = Array.from({ length: 6 }, () => new Float32Array(4).fill(1));
  simd.scores(x, 4, 4, cs).scores[3 * 4 + 2] = NaN;
  const tab = new Float64Array(18).fill(1);
  assert(!simd.screenList(2, new Float64Array(4), tab, 4).ok);
});

Deno.test("nearestAll on a projection (k ≥ 256): nearest()'s answers, bit for bit, rows of low and full rank; most decided by the projection on low rank, which turns itself off where it does not pay", () => {
  for (
    const [d, k, rank, noise] of [[128, 256, 12, 0.05], [256, 400, 40, 0.1], [96, 300, 96, 1], [
      256,
      1000,
      64,
      0.3,
    ]]
  ) {
    const dirs = randomDirs(rank, d);
    const c = lowRank(k, d, rank, noise, dirs);
    const n = 3000;
    const x = lowRank(n, d, rank, noise * 1.5, dirs);
    const cn = rowNorms(c, k, d), proj = projectionOf(c, cn, k, d)!;
    const before = { ...projectedRows };
    const got = new Uint32Array(n);
    nearestAll(x, n, d, c, cn, k, got, proj);
    assertEquals(
      Array.from(got),
      Array.from(reference(x, n, d, c, k)),
      `d ${d} k ${k} rank ${rank}`,
    );
    const decided = projectedRows.single + projectedRows.listed - before.single - before.listed;
    const screened = projectedRows.screened - before.screened;
    assertEquals(projectedRows.refused, before.refused);
    if (rank === 12) {
      // Low rank: every row of every block decided by the few directions (odd rows apart),
      // and of those listed, most by the listed centroids' float32 products.
      assert(decided >= 0.99 * n && !proj.served.off, `decided ${decided} of ${n}`);
      const listed = projectedRows.listed - before.listed;
      assert(screened >= 0.9 * listed, `screened ${screened} of ${listed}`);
    } else if (k === 1000) {
      // Isotropic noise as large as the signal: most rows listed more than the cap, so the
      // projection turned itself off after its trial and the screen answered the rest.
      assert(proj.served.off, "still on");
      assert(proj.served.rows < n, `${proj.served.rows} rows taken`);
    }
  }
});

Deno.test("nearestAll on a projection: ties (rows on a centroid, duplicated centroids, rows half-way between two), rows too small, too large or not finite", () => {
  const d = 64 + 4, k = PROJECTED_MIN_K, rank = 10;
  const dirs = randomDirs(rank, d);
  const c = lowRank(k, d, rank, 0.02, dirs);
  // Duplicated centroids: the lower one wins a tie.
  for (let j = 0; j < 20; j++) c.copyWithin((k - 1 - j) * d, j * d, (j + 1) * d);
  const n = 700, x = lowRank(n, d, rank, 0.03, dirs);
  // Rows on a centroid (and on a duplicated one).
  for (let i = 0; i < 60; i++) x.set(c.subarray(((i * 7) % k) * d, ((i * 7) % k + 1) * d), i * d);
  // Rows half-way between two centroids whose sum halves exactly (values multiples of 2⁻¹⁰).
  const cq = c.map((v) => Math.round(v * 1024) / 1024);
  for (let i = 60; i < 160; i++) {
    const a = (i * 13) % k, b = (i * 29 + 5) % k;
    for (let t = 0; t < d; t++) x[i * d + t] = (cq[a * d + t] + cq[b * d + t]) / 2;
  }
  // (Rows on a duplicated centroid keep both after the float32 products: float64 decides.)
  const fromF64 = projectedRows.listed - projectedRows.screened;
  check("ties", x, n, d, cq, k);
  check("ties, centroids as they were", x, n, d, c, k);
  assert(projectedRows.listed - projectedRows.screened > fromF64, "no row left to float64");
  // Rows too small for float32 products' normal range, and far too large: their blocks go
  // to the screen of kmeans.ts (or the float64 kernel), the answers the same.
  const small = x.map((v) => v * 2 ** -120), large = x.map((v) => v * 2 ** 100);
  const before = projectedRows.refused;
  check("tiny rows", small, n, d, c, k);
  check("huge rows", large, n, d, c, k);
  assert(projectedRows.refused > before, "the huge rows' blocks were given back");
  // Rows that are not finite (a NaN, an infinity) among finite ones.
  const bad = x.slice();
  bad[5 * d + 3] = NaN;
  bad[400 * d] = Infinity;
  const cn = rowNorms(c, k, d), proj = projectionOf(c, cn, k, d)!;
  const got = new Uint32Array(n), want = new Uint32Array(n);
  nearestAll(bad, n, d, c, cn, k, got, proj);
  nearestAll(bad, n, d, c, cn, k, want);
  assertEquals(Array.from(got), Array.from(want));
});

Deno.test("nearestAll on a projection: near twins (centroids a float32 rounding apart), decided by float64 where float32 products cannot tell them", () => {
  // Pairs of centroids that differ in one value by about 2⁻²⁰ of it, and rows beside the
  // first of a pair: the two distances differ by less than the float32 products' error, so
  // the float32 screen must keep both, and float64 tells them apart.
  const d = 128, rank = 12, k = PROJECTED_MIN_K;
  const dirs = randomDirs(rank, d);
  const c = lowRank(k, d, rank, 0.05, dirs);
  for (let j = 0; j + 1 < k; j += 2) {
    c.copyWithin((j + 1) * d, j * d, (j + 1) * d);
    const t = (j * 7) % d;
    c[(j + 1) * d + t] = c[j * d + t] * (1 + 2 ** -20) + 2 ** -30;
  }
  const n = 600, x = new Float32Array(n * d);
  for (let i = 0; i < n; i++) {
    const j = 2 * ((i * 5) % (k / 2));
    for (let t = 0; t < d; t++) x[i * d + t] = c[j * d + t] + 2 ** -12 * gauss();
  }
  const want = reference(x, n, d, c, k), twins = new Set<number>();
  for (let i = 0; i < n; i++) twins.add(want[i] % 2);
  assertEquals(twins.size, 2, "rows nearest to both twins");
  const fromF64 = projectedRows.listed - projectedRows.screened;
  check("twins", x, n, d, c, k);
  assert(projectedRows.listed - projectedRows.screened > fromF64 + n / 2, "float64 decided few");
});

Deno.test("nearestAll on a projection: a row whose nearest the directions rank behind another, found only through the residuals' term of the bound", () => {
  // 300 centroids on the first 64 coordinates (the directions found), and 20 pairs: c_a = ρ·e_(64+i),
  // outside them, and c_b = Δ·e_i, inside. Row i, R·e_(64+i): ‖c_a‖² − 2x·c_a = ρ² − 2Rρ = −0.75
  // (the nearest) against Δ² = 0.01 for c_b, while on the directions alone c_a's is ρ² = 2.25.
  // Only the term R_x·ρ_c of the bound (the rows' and centroids' parts outside the directions)
  // keeps c_a listed: with either half as large, c_b would be the answer.
  const d = 128, strong = 300, pairs = 20, k = strong + 2 * pairs, R = 1, rho = 1.5, delta = 0.1;
  const c = new Float32Array(k * d);
  for (let j = 0; j < strong; j++) for (let t = 0; t < 64; t++) c[j * d + t] = 10 * gauss();
  for (let i = 0; i < pairs; i++) {
    c[(strong + 2 * i) * d + 64 + i] = rho;
    c[(strong + 2 * i + 1) * d + i] = delta;
  }
  const n = 2 * pairs, x = new Float32Array(n * d);
  for (let i = 0; i < pairs; i++) {
    x[i * d + 64 + i] = R;
    // and a row a little further out (its nearest still c_a)
    x[(pairs + i) * d + 64 + i] = 1.25 * R;
  }
  const want = reference(x, n, d, c, k);
  for (let i = 0; i < n; i++) {
    assertEquals(want[i], strong + 2 * (i % pairs), `the construction, row ${i}`);
  }
  const before = projectedRows.listed + projectedRows.single;
  check("residuals' term", x, n, d, c, k);
  assert(
    projectedRows.listed + projectedRows.single - before >= n - 1,
    "decided by the projection",
  );
});

Deno.test("projectionOf: none for fewer than 256 centroids, d not above the directions, or centroids too large; the bound's numbers are finite and tight on low rank", () => {
  const d = 128, dirs = randomDirs(8, d);
  const c = lowRank(PROJECTED_MIN_K, d, 8, 0.01, dirs);
  const cn = rowNorms(c, PROJECTED_MIN_K, d);
  assertEquals(projectionOf(c, cn, PROJECTED_MIN_K - 1, d), undefined);
  // d not above the directions' number.
  const dp = PROJECTED_DIMS, cp = lowRank(PROJECTED_MIN_K, dp, 8, 0.01, randomDirs(8, dp));
  assertEquals(projectionOf(cp, rowNorms(cp, PROJECTED_MIN_K, dp), PROJECTED_MIN_K, dp), undefined);
  const big = c.slice();
  big[7] = 2 ** 110;
  assertEquals(projectionOf(big, rowNorms(big, PROJECTED_MIN_K, d), PROJECTED_MIN_K, d), undefined);
  const p = projectionOf(c, cn, PROJECTED_MIN_K, d)!;
  assertEquals(p.basis.length, PROJECTED_DIMS);
  assert(p.epsG > 0 && p.epsG < 1e-5, `epsG ${p.epsG}`);
  // On rank 8 plus small noise every centroid's part outside the directions is small.
  for (let j = 0; j < PROJECTED_MIN_K; j++) {
    const L = p.table[3 * j + 1], len = Math.sqrt(cn[j]);
    assert(L < 0.2 * len, `centroid ${j}: L ${L} of ${len}`);
  }
  assert(PROJECTED_CAP >= 64);
});

Deno.test("encodeRows with 256 lists: the same lists and codes as the TypeScript path", () => {
  const d = 128, bpv = 32, nlist = 256, dirs = randomDirs(24, d);
  const centroids = lowRank(nlist, d, 24, 0.05, dirs);
  const codebooks = new Float32Array(bpv * KSUB * (d / bpv)).map(() => 0.2 * gauss());
  const m = prepareModel({ d, bpv, nlist, centroids, codebooks });
  const n = 900, x = lowRank(n, d, 24, 0.08, dirs);
  const lists = new Uint32Array(n), codes = new Uint8Array(n * bpv);
  const lists2 = new Uint32Array(n), codes2 = new Uint8Array(n * bpv);
  const before = projectedRows.blocks;
  encodeRows(x, n, m, lists, codes);
  assert(projectedRows.blocks > before, "the projection served");
  encodeRows(x, n, m, lists2, codes2, false);
  assertEquals(Array.from(lists), Array.from(lists2));
  assertEquals(Array.from(codes), Array.from(codes2));
});
