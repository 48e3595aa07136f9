/**
 * Deterministic k-means (squared L2), as faiss's `Clustering` does it, for
 * the IVF coarse quantizer and the PQ codebooks of `train.ts`.
 *
 * - **PRNG**: splitmix32 ({@linkcode splitmix32}), seeded by the caller.
 * - **Init**: a Fisher–Yates shuffle of the row numbers drawn from the PRNG;
 *   the first `k` rows of it are the initial centroids.
 * - **Iterations**: a fixed count (faiss: 25), each an assignment (every row
 *   to its nearest centroid by `‖c‖² − 2·x·c` in float64, ties to the lower
 *   centroid) and an update (each centroid the float64 mean of its rows in
 *   row order, stored as float32).
 * - **Empty clusters** (faiss's rule): an empty centroid `ci` takes a copy of
 *   a cluster `cj` chosen with probability proportional to its size − 1 (one
 *   PRNG draw), then the two are pushed apart: dimension `t` times
 *   `1 ± 1/1024` (`+` for `ci` at even `t`, `−` at odd `t`; the opposite for
 *   `cj`), and `cj`'s rows are split half and half between them (sizes only).
 * - **Fewer rows than centroids**: `n` centroids are trained and the rest
 *   are copies of the last one; since ties go to the lower centroid, the
 *   copies are never chosen.
 *
 * Every operation is plain float64 arithmetic in a fixed order, so the same
 * rows and seed give the same bytes on every run and machine. The
 * assignments run in the WebAssembly kernel of `search/kernels/wasm_nearest.ts`
 * where it can ({@linkcode nearestAll}): the same float64 operations in the
 * same order, so the same answers as {@linkcode nearest}, bit for bit.
 *
 * **Screened in float32** (long rows and many centroids: `d ≥ 32`, a
 * multiple of 4, `k ≥ 8`, where the SIMD kernels run): every row's dot
 * products with the centroids are first taken in float32 by the exact
 * search's kernel (`search/kernels/simd.ts` `scores`), whose error is at
 * most `4·(d+4)·2⁻²⁴·‖x‖·‖c‖ + (d+8)·2⁻¹⁴⁰` (the bound the exact search
 * relies on, `search/index/exact/score.ts`). Each distance is then known
 * within an interval (twice that bound, plus a margin far above the
 * float64 rounding of `nearest`'s own sum); the centroids whose interval
 * reaches below the smallest upper end are the only ones that can be
 * `nearest`'s answer, and only they get `nearest`'s float64 distance (the
 * same operations), the first smallest winning. A centroid left out has a
 * distance above that of the answer, so the answers are `nearest`'s, bit
 * for bit; a block of rows with a value that is not finite, or too large
 * for float32 products, is assigned by the float64 kernel instead.
 *
 * @module
 */
import { nearestKernel, SMALL_D } from "../../kernels/wasm_nearest.ts";
import { type SimdKernels, simdKernels } from "../../kernels/simd.ts";
import { F32_SAFE, TINY, U32 } from "../exact/score.ts";

/**
 * The splitmix32 generator: a function returning uint32 values.
 *
 * @example
 * ```ts
 * import { splitmix32 } from "./kmeans.ts";
 * const a = splitmix32(1), b = splitmix32(1);
 * if (a() !== b() || a() === a()) throw new Error("not deterministic");
 * ```
 */
export function splitmix32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

/** Options of {@linkcode kmeans}. */
export interface KMeansOptions {
  /** Iterations (assignment + update). */
  readonly iterations: number;
  /** The PRNG seed. */
  readonly seed: number;
}

/** Squared norms of the `k` rows of `c` (d columns), float64. */
export function rowNorms(c: Float32Array, k: number, d: number): Float64Array {
  const out = new Float64Array(k);
  for (let j = 0; j < k; j++) {
    let s = 0;
    const o = j * d;
    for (let t = 0; t < d; t++) s += c[o + t] * c[o + t];
    out[j] = s;
  }
  return out;
}

/**
 * {@linkcode nearest}'s distance of the vector `x[xo … xo+d)` to centroid
 * `j`: `‖c_j‖² − 2·(s0 + s1)` in float64, `s0` the sum over the even
 * dimensions in order, `s1` over the odd ones (an odd `d`'s last dimension
 * added to `s0` last).
 */
function distance(
  x: ArrayLike<number>,
  xo: number,
  c: Float32Array,
  cNorm: Float64Array,
  j: number,
  d: number,
): number {
  const o = j * d;
  let s0 = 0, s1 = 0, t = 0;
  for (; t + 1 < d; t += 2) {
    s0 += x[xo + t] * c[o + t];
    s1 += x[xo + t + 1] * c[o + t + 1];
  }
  if (t < d) s0 += x[xo + t] * c[o + t];
  return cNorm[j] - 2 * (s0 + s1);
}

/**
 * The nearest of `k` centroids to the vector `x[xo … xo+d)`: argmin of
 * `‖c‖² − 2·x·c` (float64, ties to the lower centroid).
 */
export function nearest(
  x: ArrayLike<number>,
  xo: number,
  c: Float32Array,
  cNorm: Float64Array,
  k: number,
  d: number,
): number {
  let best = 0, bestD = Infinity;
  for (let j = 0; j < k; j++) {
    const dist = distance(x, xo, c, cNorm, j, d);
    if (dist < bestD) {
      bestD = dist;
      best = j;
    }
  }
  return best;
}

/**
 * `out[i]` = {@linkcode nearest}`(x, i·d, c, cNorm, k, d)` for every row
 * `i < n` of `x`: in the WebAssembly kernel (`wasm_nearest.ts`, the same
 * answers bit for bit) where it can run, else in TypeScript.
 *
 * @example
 * ```ts
 * import { nearestAll, rowNorms } from "./kmeans.ts";
 * const c = new Float32Array([0, 0, 10, 10]), out = new Uint32Array(2);
 * nearestAll(new Float32Array([9, 9, 1, 0]), 2, 2, c, rowNorms(c, 2, 2), 2, out);
 * if (out.join() !== "1,0") throw new Error(out.join());
 * ```
 */
export function nearestAll(
  x: Float32Array,
  n: number,
  d: number,
  c: Float32Array,
  cNorm: Float64Array,
  k: number,
  out: Uint32Array,
): void {
  const kernel = nearestKernel();
  const simd = kernel !== undefined && d >= 32 && d % 4 === 0 && k >= 8 ? simdKernels() : undefined;
  if (simd !== undefined) {
    nearestScreened(simd, x, n, d, c, cNorm, k, out);
    return;
  }
  nearestExact(x, n, d, c, cNorm, k, out);
}

/** {@linkcode nearestAll} without the float32 screening: the float64 kernel (or TypeScript). */
function nearestExact(
  x: Float32Array,
  n: number,
  d: number,
  c: Float32Array,
  cNorm: Float64Array,
  k: number,
  out: Uint32Array,
): void {
  const kernel = nearestKernel();
  if (kernel === undefined) {
    for (let i = 0; i < n; i++) out[i] = nearest(x, i * d, c, cNorm, k, d);
  } else if (d <= SMALL_D && k <= 256) {
    const codes = new Uint8Array(n);
    kernel.nearestSub(x, n, 1, d, c, cNorm, k, codes);
    out.set(codes);
  } else {
    kernel.nearestRows(x, n, d, c, cNorm, k, out);
  }
}

/** {@linkcode nearestAll} screened in float32 (see the module notes), a block of rows at a time. */
function nearestScreened(
  simd: SimdKernels,
  x: Float32Array,
  n: number,
  d: number,
  c: Float32Array,
  cNorm: Float64Array,
  k: number,
  out: Uint32Array,
): void {
  const qs = Array.from({ length: k }, (_, j) => c.subarray(j * d, (j + 1) * d));
  const cLen = new Float64Array(k);
  let maxC = 0;
  for (let j = 0; j < k; j++) {
    cLen[j] = Math.sqrt(cNorm[j]);
    if (!(cLen[j] <= F32_SAFE)) maxC = Infinity;
    else if (cLen[j] > maxC) maxC = cLen[j];
  }
  // Twice the scores kernel's bound on a dot product (`score.ts` densePrep: the distance has 2·x·c).
  const factor = 2 * 4 * (d + 4) * U32, tiny = 2 * (d + 8) * TINY;
  const block = Math.max(64, Math.floor(2 ** 22 / k));
  const lo = new Float64Array(k);
  for (let a = 0; a < n; a += block) {
    const m = Math.min(block, n - a);
    const rows = x.subarray(a * d, (a + m) * d);
    if (!(maxC < Infinity)) {
      nearestExact(rows, m, d, c, cNorm, k, out.subarray(a, a + m));
      continue;
    }
    const r = simd.scores(rows, m, d, qs);
    const sc = r.scores, sq = r.squares;
    let ok = true;
    for (let i = 0; i < m && ok; i++) {
      ok = Number.isFinite(sq[i]) && Math.sqrt(sq[i]) * maxC <= F32_SAFE;
    }
    for (let q = 0; q < k * m && ok; q++) ok = Number.isFinite(sc[q]);
    if (!ok) {
      nearestExact(rows, m, d, c, cNorm, k, out.subarray(a, a + m));
      continue;
    }
    for (let i = 0; i < m; i++) {
      const xLen = Math.sqrt(sq[i]), xo = (a + i) * d;
      // Each distance within [est − b, est + b]; the smallest upper end.
      let top = Infinity;
      for (let j = 0; j < k; j++) {
        const est = cNorm[j] - 2 * sc[j * m + i];
        const dot = xLen * cLen[j];
        const b = factor * dot + tiny + 2 ** -40 * (dot + Math.abs(cNorm[j]));
        lo[j] = est - b;
        if (est + b < top) top = est + b;
      }
      // The candidates, in centroid order: nearest's float64 distance, the first smallest.
      let best = -1, bestD = Infinity;
      for (let j = 0; j < k; j++) {
        if (!(lo[j] <= top)) continue;
        const dist = distance(x, xo, c, cNorm, j, d);
        if (best < 0 || dist < bestD) {
          bestD = dist;
          best = j;
        }
      }
      out[a + i] = best;
    }
  }
}

/** One assignment step of a k-means: the centroids, their squared norms and where each row's nearest goes. */
interface AssignStep {
  readonly c: Float32Array;
  readonly cn: Float64Array;
  readonly k: number;
  readonly out: Uint32Array;
}

/**
 * The k-means of {@linkcode kmeans} as steps: each assignment (every row's
 * nearest centroid, {@linkcode nearestAll}'s numbers) is yielded for the
 * caller to fill; the centroids are returned at the end.
 */
function* kmeansSteps(
  x: Float32Array,
  n: number,
  d: number,
  k: number,
  o: KMeansOptions,
): Generator<AssignStep, Float32Array, void> {
  const out = new Float32Array(k * d);
  if (n === 0) return out;
  const kk = Math.min(k, n);
  const rng = splitmix32(o.seed);
  const perm = new Uint32Array(n);
  for (let i = 0; i < n; i++) perm[i] = i;
  for (let i = n - 1; i > 0; i--) {
    const j = rng() % (i + 1);
    const t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  const c = new Float32Array(kk * d);
  for (let j = 0; j < kk; j++) c.set(x.subarray(perm[j] * d, perm[j] * d + d), j * d);
  const assign = new Uint32Array(n);
  const size = new Float64Array(kk);
  const sums = new Float64Array(kk * d);
  for (let it = 0; it < o.iterations; it++) {
    yield { c, cn: rowNorms(c, kk, d), k: kk, out: assign };
    size.fill(0);
    sums.fill(0);
    for (let i = 0; i < n; i++) {
      const a = assign[i], so = a * d, xo = i * d;
      size[a]++;
      for (let t = 0; t < d; t++) sums[so + t] += x[xo + t];
    }
    for (let j = 0; j < kk; j++) {
      if (size[j] === 0) continue;
      for (let t = 0; t < d; t++) c[j * d + t] = sums[j * d + t] / size[j];
    }
    splitEmpty(c, size, kk, d, n, rng);
  }
  out.set(c);
  for (let j = kk; j < k; j++) out.set(c.subarray((kk - 1) * d, kk * d), j * d);
  return out;
}

/**
 * k-means of the `n` rows of `x` (`d` columns, row-major): `k` centroids,
 * row-major float32 (see the module notes).
 *
 * @example
 * ```ts
 * import { kmeans } from "./kmeans.ts";
 * const x = new Float32Array([0, 0, 0, 1, 10, 10, 10, 11]);
 * const c = kmeans(x, 4, 2, 2, { iterations: 5, seed: 1 });
 * const got = [[c[0], c[1]], [c[2], c[3]]].sort((a, b) => a[0] - b[0]);
 * if (JSON.stringify(got) !== "[[0,0.5],[10,10.5]]") throw new Error(JSON.stringify(got));
 * ```
 */
export function kmeans(
  x: Float32Array,
  n: number,
  d: number,
  k: number,
  o: KMeansOptions,
): Float32Array {
  const steps = kmeansSteps(x, n, d, k, o);
  for (let r = steps.next();; r = steps.next()) {
    if (r.done) return r.value;
    const s = r.value;
    nearestAll(x, n, d, s.c, s.cn, s.k, s.out);
  }
}

/**
 * {@linkcode kmeans} with each assignment made by `assign` (e.g. on worker
 * threads, a share of the rows each): the same centroids, bit for bit,
 * when `assign` gives {@linkcode nearestAll}'s answers.
 */
export async function kmeansWith(
  x: Float32Array,
  n: number,
  d: number,
  k: number,
  o: KMeansOptions,
  assign: (c: Float32Array, cn: Float64Array, k: number, out: Uint32Array) => Promise<void>,
): Promise<Float32Array> {
  const steps = kmeansSteps(x, n, d, k, o);
  for (let r = steps.next();; r = steps.next()) {
    if (r.done) return r.value;
    const s = r.value;
    await assign(s.c, s.cn, s.k, s.out);
  }
}

/** faiss's handling of empty clusters (see the module notes). */
function splitEmpty(
  c: Float32Array,
  size: Float64Array,
  k: number,
  d: number,
  n: number,
  rng: () => number,
): void {
  const EPS = 1 / 1024;
  for (let ci = 0; ci < k; ci++) {
    if (size[ci] !== 0) continue;
    let cj = 0;
    if (n > k) {
      let r = (rng() / 4294967296) * (n - k);
      for (cj = 0; cj < k - 1; cj++) {
        const w = size[cj] > 0 ? size[cj] - 1 : 0;
        if (r < w) break;
        r -= w;
      }
    }
    c.copyWithin(ci * d, cj * d, cj * d + d);
    for (let t = 0; t < d; t++) {
      if (t % 2 === 0) {
        c[ci * d + t] *= 1 + EPS;
        c[cj * d + t] *= 1 - EPS;
      } else {
        c[ci * d + t] *= 1 - EPS;
        c[cj * d + t] *= 1 + EPS;
      }
    }
    size[ci] = Math.floor(size[cj] / 2);
    size[cj] -= size[ci];
  }
}
