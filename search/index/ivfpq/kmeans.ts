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
 * same operations), the first smallest winning; where only one is left
 * (the centroid with the smallest upper end, always among them) it is the
 * answer without that distance, unless its distance is asked for (Elkan's
 * bounds, below). A centroid left out has a distance above that of the
 * answer, so the answers are `nearest`'s, bit for bit; a block of rows with
 * a value that is not finite, or too large for float32 products, is
 * assigned by the float64 kernel instead. The intervals themselves (the
 * smallest upper end, the two smallest lower ends, the first centroid of
 * the smallest) are taken two rows at a time in the same module (its
 * `screen`, the same float64 operations as the TypeScript loop, which
 * still decides the rare rows with more than one candidate), on blocks of
 * `2¹⁸ / k` rows, whose scores stay in the cache between the two passes.
 * With 1,000 centroids of 256 dimensions this takes a row's assignment
 * from 23.6 to 14.6 ns a centroid (the TypeScript loop over cold scores
 * cost as much as the float32 products).
 *
 * **Int16 products** (`k ≥ 64`: the encoding, and the first pass of Elkan's bounds):
 * the dot products are taken in int16 instead (`SimdKernels.quantize16`
 * and `scores16`: each row and centroid scaled by its largest value
 * over `Q`, `d·Q² < 2³¹`, so the integer sums are exact, then scaled back
 * in float32), about 1.5× the float32 kernel's speed. Their error is
 * bounded by Cauchy–Schwarz from each value's rounding error (at most
 * `s·(1/2 + 2⁻⁹)`) and three float32 roundings, and given to the same
 * screen as a row length widened to match ({@linkcode quantizeRows}): the
 * intervals are wider (on all of dev's `piqa-lstm` vectors, 8 % of rows
 * have more than one candidate with 1,000 centroids, 5 % with 100, against
 * 0.5 % and 0.3 % in float32), the answers the same. A block with a row
 * or centroid the int16 products cannot take (not finite, a scale below
 * 2⁻⁶⁰ or above 2⁶⁰, products beyond float32) takes the float32 products.
 * With 1,000 lists this takes the 64-byte build of all of dev's 1,068,162
 * phrases from 16.8 to 15.2 s. The bounds' first pass takes them too: its
 * lower bounds are the wider intervals' lower ends, yet on all of dev's
 * training rows (1,000 centroids) the later iterations took as long as
 * with float32's (143–147 ms against 145–155), and the pass 1.0–1.1 s
 * against 1.3 (one thread).
 *
 * **Elkan's bounds** ({@linkcode boundedAssign}; where the screen runs and
 * the bounds fit {@linkcode BOUNDED_MAX}, on finite rows): after the first
 * assignment, each row keeps an upper bound of its distance to its
 * centroid and a lower bound of its distance to every other one; an update
 * moves them by how far each centroid moved (the triangle inequality:
 * each lower bound is kept plus its centroid's total shift when it was
 * taken, and read less the total now, so an update writes none of them), and
 * a centroid whose lower bound, or half its distance from the row's
 * centroid, is at least the upper bound (plus a margin far above float64's
 * rounding of the distances) cannot be `nearest`'s answer and is skipped.
 * The test itself, a row's bounds against every centroid, runs two centroids
 * a step in WebAssembly (`search/kernels/wasm_bounds.ts`, the same float64
 * operations), after Hamerly's test (every other centroid at least twice the
 * upper bound away: nothing to look at).
 * The rest are screened in float32 as above (a `list` of them, not all),
 * and the few whose intervals overlap get `nearest`'s float64 distance.
 * Every bound is rounded the safe way, so the answers, hence the
 * centroids, are Lloyd's, bit for bit; on a quarter of SQuAD dev's phrases
 * (46,256 training rows, 100 centroids, 25 iterations) the k-means takes
 * about a twelfth of the distances. The lower bounds are float32 (each
 * stored at or below its float64 number, {@linkcode below32}), so 1,000
 * centroids over 50,000 training rows keep theirs in 200 MB. The half
 * distances between centroids an update needs ({@linkcode centroidMoves},
 * `k²/2` of them) are screened in float32 by the probing screen's module
 * (`search/kernels/wasm_screen.ts`, its l2 sums, whose error bound makes
 * each a lower bound), in shared memory that every worker reads in place.
 * The bounds start at iteration {@linkcode BOUNDED_FROM}: the iterations
 * before it are plain, since the first updates move the centroids too far
 * for the bounds to skip what their first pass costs.
 *
 * @module
 */
import { nearestKernel, PairDistances, SMALL_D } from "../../kernels/nearest.ts";
import { type SimdKernels, simdKernels } from "../../kernels/simd.ts";
import { F32_SAFE, TINY, U32 } from "../exact/score.ts";
import { ListScreen } from "../../kernels/wasm_screen.ts";
import { BoundsTest, unskippedReference } from "../../kernels/wasm_bounds.ts";
import { nearestProjected, type Projection } from "./projected.ts";

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
  /**
   * Every update's sums taken afresh in row order, even when they are
   * exact in any order ({@linkcode exactSums}; the same centroids, bit for
   * bit: a check of that).
   */
  readonly rowOrderSums?: boolean;
  /**
   * {@linkcode exactSums}'s answer for the rows, when the caller has it
   * (asked after the first assignment).
   */
  readonly exactSums?: () => boolean;
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
 * answers bit for bit) where it can run, else in TypeScript. With a
 * `projection` (`projected.ts`, the encoding's, of these centroids) each
 * row is screened on its few directions first: the same answers.
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
  projection?: Projection,
): void {
  const kernel = nearestKernel();
  const simd = kernel !== undefined && d >= 32 && d % 4 === 0 && k >= 8 ? simdKernels() : undefined;
  if (simd !== undefined && projection !== undefined && !projection.served.off) {
    nearestOnDirections(simd, projection, x, n, d, c, cNorm, k, out);
    return;
  }
  if (simd !== undefined) {
    nearestScreened(simd, x, n, d, c, cNorm, k, out);
    return;
  }
  nearestExact(x, n, d, c, cNorm, k, out);
}

/**
 * {@linkcode nearestAll} screened on a projection's directions
 * (`projected.ts`), a block of rows at a time; a block it cannot take goes
 * to {@linkcode nearestScreened}, and the rows it leaves undecided to the
 * float64 kernel.
 */
function nearestOnDirections(
  simd: SimdKernels,
  proj: Projection,
  x: Float32Array,
  n: number,
  d: number,
  c: Float32Array,
  cNorm: Float64Array,
  k: number,
  out: Uint32Array,
): void {
  const undecided = new Uint8Array(proj.block), left: number[] = [];
  for (let a = 0; a < n; a += proj.block) {
    const m = Math.min(proj.block, n - a);
    undecided.fill(0);
    if (proj.served.off || !nearestProjected(simd, proj, x, a, m, d, k, out, undecided)) {
      nearestScreened(
        simd,
        x.subarray(a * d, (a + m) * d),
        m,
        d,
        c,
        cNorm,
        k,
        out.subarray(a, a + m),
      );
      continue;
    }
    left.length = 0;
    for (let i = 0; i < m; i++) if (undecided[i] === 1) left.push(a + i);
    if (left.length === 0) continue;
    const rows = new Float32Array(left.length * d), got = new Uint32Array(left.length);
    left.forEach((r, i) => rows.set(x.subarray(r * d, (r + 1) * d), i * d));
    nearestExact(rows, left.length, d, c, cNorm, k, got);
    left.forEach((r, i) => out[r] = got[i]);
  }
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

/**
 * The float32 screen's numbers for `k` centroids of `d` dimensions (their
 * squared norms `cNorm`): each one's length, the largest (∞ when one is
 * beyond {@linkcode F32_SAFE}), and the half-width of a distance's interval.
 */
class Screen {
  /** `√cNorm[j]`. */
  readonly cLen: Float64Array;
  /** The largest length, or ∞ when one is too large for float32 products. */
  readonly maxC: number;
  /**
   * Twice the scores kernel's bound on a dot product, over `‖x‖·‖c‖`
   * (`score.ts` densePrep: the distance has 2·x·c).
   */
  readonly factor: number;
  /** The width's constant term. */
  readonly tiny: number;
  /** `F`, `T` and `E` of the module's screen (`SimdKernels.screenNearest`): {@linkcode width}'s numbers. */
  readonly constants: readonly [number, number, number];

  constructor(readonly cNorm: Float64Array, k: number, d: number) {
    this.cLen = new Float64Array(k);
    let maxC = 0;
    for (let j = 0; j < k; j++) {
      this.cLen[j] = Math.sqrt(cNorm[j]);
      if (!(this.cLen[j] <= F32_SAFE)) maxC = Infinity;
      else if (this.cLen[j] > maxC) maxC = this.cLen[j];
    }
    this.maxC = maxC;
    this.factor = 2 * 4 * (d + 4) * U32;
    this.tiny = 2 * (d + 8) * TINY;
    this.constants = [this.factor, this.tiny, 2 ** -40];
  }

  /** Each centroid's `‖c‖²`, `‖c‖` and `|‖c‖²|` in turn (the module's table). */
  table(): Float64Array {
    const k = this.cLen.length, t = new Float64Array(3 * k);
    for (let j = 0; j < k; j++) {
      t[3 * j] = this.cNorm[j];
      t[3 * j + 1] = this.cLen[j];
      t[3 * j + 2] = Math.abs(this.cNorm[j]);
    }
    return t;
  }

  /**
   * The half-width of centroid `j`'s distance interval for a row of length
   * `xLen`: the float32 error, plus a margin far above `nearest`'s float64
   * rounding.
   */
  width(xLen: number, j: number): number {
    const dot = xLen * this.cLen[j];
    return this.factor * dot + this.tiny + 2 ** -40 * (dot + Math.abs(this.cNorm[j]));
  }
}

/**
 * How many blocks of rows {@linkcode nearestAll}'s screen has taken on
 * this thread with int16 products and with float32 products (each then
 * decided as the module notes say): for tests and profiles.
 */
export const screenBlocks = { int16: 0, float32: 0 };

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
  bounds?: ScreenBounds,
): void {
  const qs = Array.from({ length: k }, (_, j) => c.subarray(j * d, (j + 1) * d));
  const screen = new Screen(cNorm, k, d), maxC = screen.maxC;
  const block = Math.max(64, Math.floor(2 ** 18 / k));
  const lo = new Float64Array(k), xl = new Float64Array(Math.min(n, block));
  let tab: Float64Array | undefined;
  // The int16 products (enough centroids, all of them quantized; with bounds asked too: on
  // all of dev's training rows, 1,000 centroids, the later iterations skip as many).
  const q16 = k >= I16_MIN_K && maxC < Infinity
    ? quantizeCentroids(simd, c, k, d, screen.cLen)
    : undefined;
  const rows16 = q16 && new Int16Array(Math.min(n, block) * q16.w);
  const rowScale = q16 && new Float32Array(Math.min(n, block));
  const rowSq = q16 && new Float32Array(Math.min(n, block));
  for (let a = 0; a < n; a += block) {
    const m = Math.min(block, n - a);
    const rows = x.subarray(a * d, (a + m) * d);
    if (!(maxC < Infinity)) {
      exactBlock(x, a, m, d, c, cNorm, k, out, bounds);
      continue;
    }
    let sc: Float32Array, ok = true;
    if (
      q16 !== undefined &&
      quantizeRows(simd, x, a, m, d, q16, rows16!, rowScale!, rowSq!, xl, screen.factor)
    ) {
      // `xl` holds each row's length widened to cover the int16 products' error.
      sc = simd.scores16(rows16!, m, q16.w, q16.q, k, rowScale!, q16.scale);
      screenBlocks.int16++;
    } else {
      screenBlocks.float32++;
      const r = simd.scores(rows, m, d, qs);
      sc = r.scores;
      const sq = r.squares;
      // The rows' lengths, kept here: `sq` (module memory) is detached if the screen grows it.
      for (let i = 0; i < m && ok; i++) {
        xl[i] = Math.sqrt(sq[i]);
        ok = Number.isFinite(sq[i]) && xl[i] * maxC <= F32_SAFE;
      }
    }
    // The module screens the rows two at a time (the same numbers as the loop below) and
    // says whether every score it read is finite; the loop checks the rest. Without bounds
    // its one candidate is the answer; with them, its smallest upper end serves screenBounded.
    const pairs = ok ? m >> 1 : 0;
    let sr: Float64Array | undefined;
    if (pairs > 0) {
      tab ??= screen.table();
      const s = simd.screenNearest(pairs, xl, tab, screen.constants);
      // The screen may have grown memory: the scores read again where they now lie.
      sr = s.screened;
      sc = s.scores;
      ok = sr[8 * pairs] === 0 && sr[8 * pairs + 1] === 0;
      // An odd last row: its scores checked here.
      for (let j = 0; j < k && ok && m % 2 === 1; j++) ok = Number.isFinite(sc[j * m + m - 1]);
    } else {
      for (let q = 0; q < k * m && ok; q++) ok = Number.isFinite(sc[q]);
    }
    if (!ok) {
      exactBlock(x, a, m, d, c, cNorm, k, out, bounds);
      continue;
    }
    for (let i = 0; i < m; i++) {
      const xLen = xl[i], xo = (a + i) * d;
      let top = Infinity;
      if (i < 2 * pairs) {
        // The module's screen: one candidate (the usual case) is the answer.
        const p8 = 8 * (i >> 1) + (i & 1);
        if (bounds === undefined && !(sr![p8 + 4] <= sr![p8])) {
          out[a + i] = sr![p8 + 6];
          continue;
        }
        top = sr![p8];
        if (bounds !== undefined) {
          // Every centroid's lower bound written as it is screened (the candidates':
          // nearest's float64 distance), the first smallest distance winning.
          out[a + i] = screenBounded(
            x,
            xo,
            c,
            cNorm,
            k,
            d,
            m,
            i,
            a + i,
            sc,
            xLen,
            top,
            screen,
            bounds,
          );
          continue;
        }
      }
      // Each distance within [est − b, est + b]; the smallest upper end, and the two
      // smallest lower ends (the first centroid with the smallest, j1).
      let lo1 = Infinity, lo2 = Infinity, j1 = -1;
      top = Infinity;
      for (let j = 0; j < k; j++) {
        const est = cNorm[j] - 2 * sc[j * m + i];
        const b = screen.width(xLen, j);
        const l = lo[j] = est - b;
        if (est + b < top) top = est + b;
        if (l < lo1) {
          lo2 = lo1;
          lo1 = l;
          j1 = j;
        } else if (l < lo2) lo2 = l;
      }
      // The centroid with the smallest upper end is a candidate: when no other one is,
      // it is the answer (no bounds asked: no distance needed).
      if (bounds === undefined && !(lo2 <= top)) {
        out[a + i] = j1;
        continue;
      }
      // The candidates, in centroid order: nearest's float64 distance, the first smallest.
      let best = -1, bestD = Infinity;
      const r = a + i, lb = r * k;
      for (let j = 0; j < k; j++) {
        if (!(lo[j] <= top)) {
          if (bounds !== undefined) bounds.lower[lb + j] = bounds.below(lo[j], r);
          continue;
        }
        const dist = distance(x, xo, c, cNorm, j, d);
        if (bounds !== undefined) bounds.lower[lb + j] = bounds.below(dist, r);
        if (best < 0 || dist < bestD) {
          bestD = dist;
          best = j;
        }
      }
      out[r] = best;
      if (bounds !== undefined) bounds.best[r] = bestD;
    }
  }
}

/**
 * Row `r` (`x` at `xo`; block row `i` of `m`, scores `sc[j·m + i]`, length
 * `xLen`, smallest upper end `top`) screened with its bounds written: each
 * centroid's interval lower end, or for a candidate (lower end at most
 * `top`) nearest's float64 distance, as `bounds.below` makes it a float32
 * lower bound of the distance; the nearest (the first smallest of the
 * candidates' distances) returned, its distance in `bounds.best[r]`. The
 * numbers of the loop in {@linkcode nearestScreened}, in one pass.
 */
function screenBounded(
  x: Float32Array,
  xo: number,
  c: Float32Array,
  cNorm: Float64Array,
  k: number,
  d: number,
  m: number,
  i: number,
  r: number,
  sc: Float32Array,
  xLen: number,
  top: number,
  screen: Screen,
  bounds: ScreenBounds,
): number {
  const lower = bounds.lower, lb = r * k, cLen = screen.cLen, F = screen.factor;
  const T = screen.tiny, E = 2 ** -40;
  // below(e) = below32(√(max(0, (e + ‖x‖² − g)·DN))·DN), inline.
  const s = bounds.sq[r], g = bounds.margin(r);
  let best = -1, bestD = Infinity;
  for (let j = 0; j < k; j++) {
    const cn = cNorm[j], est = cn - 2 * sc[j * m + i];
    const dot = xLen * cLen[j];
    const l = est - (F * dot + T + E * (dot + Math.abs(cn)));
    let e = l;
    if (l <= top) {
      e = distance(x, xo, c, cNorm, j, d);
      if (best < 0 || e < bestD) {
        bestD = e;
        best = j;
      }
    }
    const v = Math.sqrt(Math.max(0, (e + s - g) * DN)) * DN;
    lower[lb + j] = v < 2 ** -120 ? 0 : Math.min(v * (1 - 2 ** -23), 2 ** 127);
  }
  bounds.best[r] = bestD;
  return best;
}

/**
 * The fewest centroids for which {@linkcode nearestScreened} takes its
 * dot products in int16 (`SimdKernels.scores16`, about 1.4× the float32
 * kernel's speed): below it, quantizing the rows costs about what it saves.
 */
const I16_MIN_K = 64;

/**
 * Scales of the int16 products beyond which a block takes the float32
 * products (no underflow of their float32 product).
 */
const SCALE_MIN = 2 ** -60, SCALE_MAX = 2 ** 60;

/**
 * The centroids in int16 for {@linkcode nearestScreened}'s int16 products
 * (`SimdKernels.quantize16`: row `j` is `scale[j]·q[j·w + t]` plus an error
 * of at most `scale[j]·(1/2 + 2⁻⁹)` a value, see {@linkcode int16Error}),
 * with `Q` the largest value such that `d·Q² < 2³¹`, so every integer sum
 * of `scores16` stays within int32; `rho` at least every `ec_j / ‖c_j‖`
 * (`ec_j` the length of centroid `j`'s error) and `cqMax` every
 * `‖scale[j]·q_j‖`.
 */
export interface Int16Centroids {
  /** Values a row in `q` (`d` padded to a multiple of 8). */
  readonly w: number;
  /** The largest magnitude of a value. */
  readonly Q: number;
  /** The int16 values, `k` rows of `w`. */
  readonly q: Int16Array;
  /** Each row's scale. */
  readonly scale: Float32Array;
  /** At least every `ec_j / ‖c_j‖`. */
  readonly rho: number;
  /** At least every `‖scale[j]·q_j‖`. */
  readonly cqMax: number;
}

/**
 * The largest `‖x − s·q‖` of a row of `d` values quantized by
 * `quantize16` with scale `s` (a normal float32, `Q ≤ 2¹³`): with
 * `s ≥ (m/Q)(1 − 2⁻²⁴)`, `|x/s| ≤ Q(1 + 2⁻²³)`; the float32 `1/s` and
 * `x·(1/s)` are within `2⁻²³·|x/s| ≤ 2⁻¹⁰` of `x/s` and at most
 * `Q(1 + 2⁻²²) < Q + 1/2` in size, so rounding it to the nearest integer
 * (exactly, by adding `1.5·2²³` in float32) adds at most 1/2 and gives
 * at most `Q`: each value is within `s·(1/2 + 2⁻⁹)`.
 */
const int16Error = (s: number, d: number) => s * (0.5 + 2 ** -9) * Math.sqrt(d) * (1 + 2 ** -30);

/**
 * An upper bound of `‖x‖` from the float32 sum of its `d` squares `sq`
 * (each square and sum rounded: relative `(d + 2)·2⁻²³` is above their
 * error; squares below float32's normal range: `d·2⁻¹²⁶`).
 */
const lengthAbove = (sq: number, d: number) =>
  Math.sqrt(sq * (1 + (d + 2) * 2 ** -23) + d * 2 ** -126) * (1 + 2 ** -30);

/** Whether a row's scale `s` (and its float32 sum of squares `sq`) can take the int16 products. */
const scaleUsable = (s: number, sq: number) =>
  Number.isFinite(sq) && (s === 0 ? sq === 0 : s >= SCALE_MIN && s <= SCALE_MAX);

/**
 * {@linkcode Int16Centroids} of `k` centroids of `d` dimensions (lengths
 * `cLen`), or `undefined` where a centroid is not finite or its scale is
 * out of {@linkcode SCALE_MIN} … {@linkcode SCALE_MAX}, or where `d` is
 * below 32 (`Q` above 2¹³, beyond {@linkcode int16Error}'s proof): the
 * float32 products then.
 */
export function quantizeCentroids(
  simd: SimdKernels,
  c: Float32Array,
  k: number,
  d: number,
  cLen: Float64Array,
): Int16Centroids | undefined {
  const w = Math.ceil(d / 8) * 8, Q = Math.floor(Math.sqrt((2 ** 31 - 1) / d));
  // int16Error's proof needs Q ≤ 2¹³ (d ≥ 32, as nearestAll's screen asks).
  if (Q > 2 ** 13) return undefined;
  const q = new Int16Array(k * w), scale = new Float32Array(k), sq = new Float32Array(k);
  simd.quantize16(c, k, d, Q, q, scale, sq);
  let rho = 0, cqMax = 0;
  for (let j = 0; j < k; j++) {
    if (!scaleUsable(scale[j], sq[j])) return undefined;
    const ec = int16Error(scale[j], d);
    if (cLen[j] > 0) rho = Math.max(rho, ec / cLen[j]);
    else if (scale[j] !== 0) return undefined;
    cqMax = Math.max(cqMax, cLen[j] + ec);
  }
  // (1 + 2⁻³⁰): far above the float64 rounding of these numbers.
  return { w, Q, q, scale, rho: rho * (1 + 2 ** -30), cqMax: cqMax * (1 + 2 ** -30) };
}

/**
 * Rows `[a, a + m)` of `x` in int16 for `scores16` (`out`, `scale`; `sq`
 * scratch), and in `xl` each row's length widened so that the screen's
 * `factor·xl·‖c‖` covers twice the int16 products' error:
 * `|x·c − score| ≤ ‖c‖·g`, `g = ex + xq·ρ + 2⁻²²·xq·(1 + ρ)` (`ex` the
 * row's error, {@linkcode int16Error}; `xq ≤ ‖x‖ + ex` the length of
 * `s·q`; Cauchy–Schwarz on `x·c − (s·q)·(sc·qc) = (x − s·q)·c +
 * (s·q)·(c − sc·qc)`, and three float32 roundings of the score), so
 * `xl = max(‖x‖, 2g/factor)`. `false` (the float32 products then) for a
 * row that is not finite, a scale out of range or scores too large for
 * float32.
 */
function quantizeRows(
  simd: SimdKernels,
  x: Float32Array,
  a: number,
  m: number,
  d: number,
  q16: Int16Centroids,
  out: Int16Array,
  scale: Float32Array,
  sq: Float32Array,
  xl: Float64Array,
  factor: number,
): boolean {
  if (!quantizeRowsGap(simd, x, a, m, d, q16, out, scale, sq, xl)) return false;
  for (let i = 0; i < m; i++) {
    const len = lengthAbove(sq[i], d);
    xl[i] = Math.max(len, ((2 * xl[i]) / factor) * (1 + 2 ** -30));
  }
  return true;
}

/**
 * Rows `[a, a + m)` of `x` in int16 for `scores16` against `q16` (`out`,
 * `scale`; `sq` their float32 sums of squares), and in `gap` each row's
 * `g`: `|x·c − score| ≤ ‖c‖·g` for every centroid `c` of `q16` (see
 * {@linkcode quantizeRows}). `false` for a row that is not finite, a scale
 * out of range or scores too large for float32.
 */
export function quantizeRowsGap(
  simd: SimdKernels,
  x: Float32Array,
  a: number,
  m: number,
  d: number,
  q16: Int16Centroids,
  out: Int16Array,
  scale: Float32Array,
  sq: Float32Array,
  gap: Float64Array,
): boolean {
  simd.quantize16(x.subarray(a * d, (a + m) * d), m, d, q16.Q, out, scale, sq);
  const rho = q16.rho;
  for (let i = 0; i < m; i++) {
    if (!scaleUsable(scale[i], sq[i])) return false;
    const len = lengthAbove(sq[i], d), ex = int16Error(scale[i], d), xq = len + ex;
    if (!(xq * q16.cqMax <= F32_SAFE)) return false;
    gap[i] = ex + xq * rho + 2 ** -22 * xq * (1 + rho);
  }
  return true;
}

/**
 * What the float32 screen tells of each row `i` besides its nearest: `low[i·k + j]`
 * at most `nearest`'s float64 distance to centroid `j` (that distance itself
 * where it was taken), `best[i]` the distance to the nearest.
 */
interface ScreenBounds {
  /** Each row's lower bounds (`k` a row), written. */
  readonly lower: Float32Array;
  /** Each row's nearest distance (nearest's float64 number), written. */
  readonly best: Float64Array;
  /** Each row's squared norm. */
  readonly sq: Float64Array;
  /** Row `r`'s margin of the bounds ({@linkcode boundedAssign}'s). */
  margin(r: number): number;
  /** A float64 distance (or an interval's lower end) `e` of row `r` as its float32 lower bound. */
  below(e: number, r: number): number;
}

/** Rows `[a, a+m)` by the float64 kernel, their bounds (if asked) the least telling ones. */
function exactBlock(
  x: Float32Array,
  a: number,
  m: number,
  d: number,
  c: Float32Array,
  cNorm: Float64Array,
  k: number,
  out: Uint32Array,
  bounds: ScreenBounds | undefined,
): void {
  nearestExact(x.subarray(a * d, (a + m) * d), m, d, c, cNorm, k, out.subarray(a, a + m));
  if (bounds === undefined) return;
  bounds.lower.fill(0, a * k, (a + m) * k);
  for (let i = a; i < a + m; i++) bounds.best[i] = distance(x, i * d, c, cNorm, out[i], d);
}

/**
 * The per-row state of {@linkcode boundedAssign} (rows `[0, n)` of one
 * share; shared memory when workers fill it): each row's centroid, an upper
 * bound of its distance to it, lower bounds of its distances to every
 * centroid, and its squared norm (float64).
 */
export interface BoundedRows {
  /** `assign[i]`: row `i`'s centroid (`nearest`'s answer). */
  readonly assign: Uint32Array;
  /** `upper[i]` ≥ ‖x_i − c_assign[i]‖ (Euclidean, not squared). */
  readonly upper: Float64Array;
  /**
   * `lower[i·k + j] − total[j]` ≤ ‖x_i − c_j‖, `total` the last update's
   * {@linkcode CentroidMoves} `total` (0 before the first): each bound is
   * kept as it was taken plus the centroid's total shift then, so an
   * update moves every bound without writing it (float32, stored through
   * {@linkcode below32}).
   */
  readonly lower: Float32Array;
  /** `sq[i]`: ‖x_i‖² in float64 (row order of the dimensions). */
  readonly sq: Float64Array;
}

/** What every share needs to know of the centroids' last update ({@linkcode centroidMoves}). */
export interface CentroidMoves {
  /** `shift[j]` ≥ how far centroid `j` moved in the last update. */
  readonly shift: Float64Array;
  /** `half[a·k + j]` ≤ ½‖c_a − c_j‖. */
  readonly half: Float64Array;
  /** `near[a]` = the smallest `half[a·k + j]`, `j ≠ a`. */
  readonly near: Float64Array;
  /** `total[j]` ≥ the sum of centroid `j`'s shifts over every update so far. */
  readonly total: Float64Array;
}

/** Rounding slack of the bounds: `x·UP` is above, `x·DN` below, every rounded result they cover. */
const UP = 1 + 2 ** -50, DN = 1 - 2 ** -50, WIDE = 2 ** -40;
/**
 * The margin of the bounds, times `(‖x‖ + max‖c‖)²`: above twice the
 * largest error of `nearest`'s float64 distance (at most
 * `300·2⁻⁵³·(‖x‖ + ‖c‖)²`) plus the error of the row's squared norm.
 */
const ETA = 2 ** -42;

/**
 * The first iteration whose assignment keeps Elkan's bounds
 * ({@linkcode boundedAssign}); those before it are plain
 * ({@linkcode nearestAll}, the same answers). The bounds cost a pass
 * that writes every row's `k` lower bounds, and the first updates move
 * the centroids (at first, rows drawn at random) so far that they skip
 * almost nothing: on all of dev's 51,779 training rows with 1,000
 * centroids (10 iterations, one thread, 2-core AMD EPYC, 2026-12-08),
 * bounds from the first iteration took 4.6 s, the first two iterations
 * 1.3 and 1.5 s; from the third, 3.1 s.
 */
export const BOUNDED_FROM = 2;

/**
 * The largest `n·k` {@linkcode boundedAssign} keeps bounds for (256 MB of
 * them: 1,000 centroids over 64,000 training rows).
 */
export const BOUNDED_MAX = 2 ** 26;

/**
 * `v` (≥ 0, or NaN) as a lower bound that float32 holds: a number at most
 * `v` once rounded to float32 (`v·(1 − 2⁻²³)` rounds to at most `v`; 0
 * below float32's normal numbers, `2¹²⁷` above its range).
 */
export function below32(v: number): number {
  return v < 2 ** -120 ? 0 : Math.min(v * (1 - 2 ** -23), 2 ** 127);
}

/**
 * Whether {@linkcode boundedAssign} runs for `n` rows of `d` columns and
 * `k` centroids: where {@linkcode nearestAll} screens in float32 and the
 * bounds fit {@linkcode BOUNDED_MAX}.
 */
export function boundedApplies(n: number, d: number, k: number): boolean {
  return d >= 32 && d % 4 === 0 && k >= 8 && n * k <= BOUNDED_MAX &&
    nearestKernel() !== undefined && simdKernels() !== undefined;
}

/** Every `x[i]` finite. */
export function allFinite(x: Float32Array): boolean {
  // The exponent bits all set: an infinity or a NaN.
  const bits = new Uint32Array(x.buffer, x.byteOffset, x.length);
  for (let i = 0; i < bits.length; i++) if ((bits[i] & 0x7f800000) === 0x7f800000) return false;
  return true;
}

/** {@linkcode BoundedRows} for `n` rows and `k` centroids, in shared memory (for workers) or not. */
export function boundedRows(n: number, k: number, shared = false): BoundedRows {
  const B = shared ? SharedArrayBuffer : ArrayBuffer;
  return {
    assign: new Uint32Array(new B(4 * n)),
    upper: new Float64Array(new B(8 * n)),
    lower: new Float32Array(new B(4 * n * k)),
    sq: new Float64Array(new B(8 * n)),
  };
}

/** Rows `[a, a+m)` of `r` (views of the same memory). */
export function boundedShare(r: BoundedRows, a: number, m: number, k: number): BoundedRows {
  return {
    assign: r.assign.subarray(a, a + m),
    upper: r.upper.subarray(a, a + m),
    lower: r.lower.subarray(a * k, (a + m) * k),
    sq: r.sq.subarray(a, a + m),
  };
}

/**
 * How the `k` centroids `c` moved from `prev` (the same shape), and their
 * half distances from each other, each rounded the safe way (see
 * {@linkcode boundedAssign}): the half distances from float32 sums of
 * squared differences less their proven error (see the module notes),
 * or in float64 where such a sum is not finite; and each centroid's total
 * shift, `before`'s (the previous update's moves, none before the first)
 * plus this one's, rounded up. In shared memory.
 */
export function centroidMoves(
  prev: Float32Array,
  c: Float32Array,
  k: number,
  d: number,
  before?: CentroidMoves,
): CentroidMoves {
  const moves = centroidShifts(prev, c, k, d, before);
  halfDistances(c, k, d, moves.half, moves.near, 0, k);
  return moves;
}

/**
 * {@linkcode centroidMoves} without its half distances: each centroid's
 * shift and total shift, and `half` and `near` in shared memory for
 * {@linkcode halfDistances} to fill (shares of rows, on workers).
 */
export function centroidShifts(
  prev: Float32Array,
  c: Float32Array,
  k: number,
  d: number,
  before?: CentroidMoves,
): CentroidMoves {
  // In shared memory: every worker reads them where they lie (no copy a worker an update).
  const f64 = (n: number) => new Float64Array(new SharedArrayBuffer(8 * n));
  const shift = f64(k), half = f64(k * k), near = f64(k), total = f64(k);
  for (let j = 0; j < k; j++) {
    let s = 0;
    for (let t = j * d; t < (j + 1) * d; t++) {
      const e = c[t] - prev[t];
      s += e * e;
    }
    shift[j] = Math.sqrt(s) * (1 + WIDE);
  }
  for (let j = 0; j < k; j++) total[j] = ((before?.total[j] ?? 0) + shift[j]) * UP;
  return { shift, half, near, total };
}

/**
 * Rows `[a0, a1)` of {@linkcode centroidMoves}'s half distances of the `k`
 * centroids `c` (`half[a·k + j]`, a lower bound of half of `‖c_a − c_j‖`,
 * rounded the safe way) and `near[a]`, the smallest of row `a`'s.
 */
export function halfDistances(
  c: Float32Array,
  k: number,
  d: number,
  half: Float64Array,
  near: Float64Array,
  a0: number,
  a1: number,
): void {
  // The squared distances screened in float32 (wasm_screen.ts, its l2 sums): the exact D is at
  // least (v − d·2⁻¹⁵⁰)/(1 + γ(d+3)) for a finite sum v; a sum that is not finite (an
  // overflow) is taken again in float64, as without the module.
  const screen = k >= 2 ? ListScreen.create(c, k, d) : undefined;
  const u = 2 ** -24, g = 1 - 2 * ((d + 3) * u / (1 - (d + 3) * u)), tiny = (d + 1) * 2 ** -148;
  // Row a from a's own sums (written in order; half[a·k + j] and half[j·k + a] may differ by
  // a rounding, each a lower bound), and its nearest other one.
  for (let a = a0; a < a1; a++) {
    const v = screen?.sums(c.subarray(a * d, (a + 1) * d), true);
    const row = a * k;
    let m = Infinity;
    for (let j = 0; j < k; j++) {
      if (j === a) continue;
      let h: number;
      if (v !== undefined && Number.isFinite(v[j])) {
        h = 0.5 * Math.sqrt(Math.max(0, (v[j] - tiny) * g)) * (1 - WIDE);
      } else {
        let s = 0;
        for (let t = 0; t < d; t++) {
          const e = c[a * d + t] - c[j * d + t];
          s += e * e;
        }
        h = 0.5 * Math.sqrt(s) * (1 - WIDE);
      }
      half[row + j] = h;
      if (h < m) m = h;
    }
    near[a] = m;
  }
}

/**
 * {@linkcode nearestAll}'s answers for the `n` rows of `x`, found with
 * fewer distances by Elkan's bounds (2003): with `moves` undefined, every
 * row screened as `nearestAll` does, its bounds kept in `rows`; after an
 * update of the centroids (`moves`), a row whose upper bound to its
 * centroid is below the lower bound to another (or half their distance)
 * skips that centroid, the rest get `nearest`'s float64 distance. Every
 * bound is a true bound on the real distances, rounded the safe way, and
 * a skip needs a margin ({@linkcode ETA}) above twice the float64
 * distances' error: a skipped centroid's float64 distance is above the
 * answer's, so the answers are `nearest`'s, bit for bit. Rows must be
 * finite ({@linkcode allFinite}).
 */
export function boundedAssign(
  x: Float32Array,
  n: number,
  d: number,
  c: Float32Array,
  cNorm: Float64Array,
  k: number,
  rows: BoundedRows,
  moves: CentroidMoves | undefined,
  pairs: PairDistances,
): void {
  const { assign, upper, lower, sq } = rows;
  let cMax = 0;
  for (let j = 0; j < k; j++) cMax = Math.max(cMax, Math.sqrt(cNorm[j]) * (1 + WIDE));
  const margin = (i: number) => {
    const r = Math.sqrt(sq[i]) * (1 + WIDE) + cMax;
    return ETA * r * r;
  };
  const upperOf = (e: number, i: number, m: number) =>
    Math.sqrt(Math.max(0, (e + sq[i] + m) * UP)) * UP;
  const lowerOf = (e: number, i: number, m: number) =>
    Math.sqrt(Math.max(0, (e + sq[i] - m) * DN)) * DN;
  if (moves === undefined) {
    for (let i = 0; i < n; i++) {
      let s = 0;
      for (let t = i * d; t < (i + 1) * d; t++) s += x[t] * x[t];
      sq[i] = s;
    }
    const best = new Float64Array(n);
    const screenBounds: ScreenBounds = {
      lower,
      best,
      sq,
      margin,
      below: (e, r) => below32(lowerOf(e, r, margin(r))),
    };
    nearestScreened(simdKernels()!, x, n, d, c, cNorm, k, assign, screenBounds);
    for (let r = 0; r < n; r++) upper[r] = upperOf(best[r], r, margin(r));
    return;
  }
  const { shift, half, near, total } = moves;
  const cand = new Int32Array(k), held = new Int32Array(k), dist = new Float64Array(k + 4);
  const lo = new Float64Array(k), hi = new Float64Array(k);
  pairs.centroids(c, cNorm);
  // The bounds' test in the module where it runs (the same centroids), its half distances
  // copied there once a call.
  const test = boundsTestOf(k);
  test?.update(total, half);
  // The float32 screen's numbers (nearestScreened's).
  const screen = new Screen(cNorm, k, d), maxC = screen.maxC;
  // Row i's centroids list[0 … w) by nearest's float64 distance: the first smallest, its
  // upper bound; their lower bounds.
  let u = 0;
  const exactly = (i: number, w: number, g: number): number => {
    pairs.run(i, w, dist);
    let eB = Infinity, bestJ = -1;
    for (let r = 0; r < w; r++) {
      const j = pairs.list[r], e = dist[r];
      lower[i * k + j] = below32(lowerOf(e, i, g) + total[j]);
      if (bestJ < 0 || e < eB || (e === eB && j < bestJ)) {
        eB = e;
        bestJ = j;
      }
    }
    u = upperOf(eB, i, g);
    return bestJ;
  };
  for (let i = 0; i < n; i++) {
    const a = assign[i], lb = i * k, g = margin(i), ha = a * k;
    u = (upper[i] + shift[a]) * UP;
    // u′: the distance every skipped centroid is at least at (u² plus the margin).
    const up = Math.sqrt((u * u * UP + g) * UP) * UP;
    // Every other centroid at least twice u′ from a (Hamerly's test): none can win, and
    // none is looked at.
    if (up <= near[a]) {
      upper[i] = u;
      continue;
    }
    // The centroids the bounds cannot skip: a lower bound (lower − total) below u′, tested
    // as lower < (u′ + total)·UP (rounded up: a skip is sure), and half the distance too.
    // (The module's candidates are read where it wrote them.)
    const cs = test !== undefined ? test.cand : cand;
    const m = test !== undefined ? test.unskipped(lower, lb, a, up, UP) : unskippedReference(
      lower.subarray(lb, lb + k),
      total,
      half.subarray(ha, ha + k),
      up,
      a,
      k,
      UP,
      cand,
    );
    if (m === 0) {
      upper[i] = u;
      continue;
    }
    // a and the candidates: float32 dot products first, each distance then known within
    // an interval (nearestScreened's); nearest's float64 distance only for those whose
    // interval reaches below the smallest upper end, the first smallest winning.
    const list = pairs.list;
    list[0] = a;
    for (let r = 0; r < m; r++) list[r + 1] = cs[r];
    const mm = m + 1, xLen = Math.sqrt(sq[i]);
    let best = -1;
    if (xLen * maxC <= F32_SAFE) {
      pairs.dots(i, mm, dist);
      let top = Infinity, ok = true;
      for (let r = 0; r < mm && ok; r++) {
        const j = list[r], est = cNorm[j] - 2 * dist[r];
        const b = screen.width(xLen, j);
        lo[r] = est - b;
        hi[r] = est + b;
        ok = Number.isFinite(est);
        if (est + b < top) top = est + b;
      }
      if (ok) {
        let w = 0, first = -1;
        for (let r = 0; r < mm; r++) {
          if (lo[r] <= top) {
            if (first < 0) first = r;
            held[w++] = list[r];
          } else lower[lb + list[r]] = below32(lowerOf(lo[r], i, g) + total[list[r]]);
        }
        if (w === 1) {
          best = list[first];
          lower[lb + best] = below32(lowerOf(lo[first], i, g) + total[best]);
          u = upperOf(hi[first], i, g);
        } else {
          for (let r = 0; r < w; r++) list[r] = held[r];
          best = exactly(i, w, g);
        }
      }
    }
    // Too large for float32 products, or a product that is not finite: every one in float64.
    if (best < 0) {
      list[0] = a;
      for (let r = 0; r < m; r++) list[r + 1] = cs[r];
      best = exactly(i, mm, g);
    }
    assign[i] = best;
    upper[i] = u;
  }
}

/** The largest `k` whose half distances (`8·k²` bytes) the bounds' module takes: 64 MiB. */
const BOUNDS_TEST_MAX_K = 2896;

/** This thread's bounds test (`wasm_bounds.ts`) for `k` centroids, made once a `k`. */
let boundsTest: BoundsTest | null | undefined;
function boundsTestOf(k: number): BoundsTest | undefined {
  if (k > BOUNDS_TEST_MAX_K) return undefined;
  if (boundsTest === undefined || (boundsTest !== null && boundsTest.k !== k)) {
    boundsTest = BoundsTest.create(k) ?? null;
  }
  return boundsTest ?? undefined;
}

/** One assignment step of a k-means: the centroids, their squared norms and where each row's nearest goes. */
interface AssignStep {
  readonly c: Float32Array;
  readonly cn: Float64Array;
  readonly k: number;
  readonly out: Uint32Array;
  /**
   * Whether the update's sums follow the rows that moved (exact sums,
   * {@linkcode exactSums}): the caller then need not take them.
   */
  readonly moved: boolean;
  /**
   * The update's sums, if the caller took them ({@linkcode sumRows}'s
   * numbers for `out`); else the update takes them.
   */
  sums?: Float64Array;
}

/**
 * Whether every sum of the rows' values in one column, in any order and
 * any subset, is exact in float64: all values are whole multiples of
 * `2^g` (g the lowest bit set of any value) and `n` times the largest
 * magnitude is at most `2^(53+g)`, so every partial sum is a whole
 * multiple of `2^g` of at most `2^53` of them. Then adding the rows in row order
 * (Lloyd's update) and adding and taking away the rows that moved give the
 * same numbers; float16 rows (multiples of `2⁻²⁴`) of moderate size always
 * qualify.
 */
export function exactSums(x: Float32Array, n: number, d: number): boolean {
  const bits = new Uint32Array(x.buffer, x.byteOffset, n * d);
  let g = Infinity, top = 0;
  for (let o = 0; o < n * d; o++) {
    const b = bits[o], e = (b >>> 23) & 0xff;
    if (e === 0xff) return false;
    if (e > top) top = e;
    // The value's lowest set bit is at 2^(e−150) or above: it cannot lower g.
    if (e - 150 >= g) continue;
    const m = e === 0 ? b & 0x7fffff : (b & 0x7fffff) | 0x800000;
    if (m === 0) continue;
    // The lowest set bit of the value m·2^(e−150) (m·2⁻¹⁴⁹ for subnormals).
    const low = (e === 0 ? -149 : e - 150) + (31 - Math.clz32(m & -m));
    if (low < g) g = low;
  }
  // Every |value| is below 2^(top−126), every column's sum of them below n times that.
  return g === Infinity || n * 2 ** (top - 126) <= 2 ** (53 + g);
}

/**
 * The k-means update's sums of columns `[t0, t1)`: `sums[a·d + t]` = the
 * float64 sum, in row order from +0, of `x[i·d + t]` over the rows `i`
 * assigned to `a` (the other columns left alone: shares of the columns can
 * be summed apart, with the same numbers).
 */
export function sumRows(
  x: Float32Array,
  n: number,
  d: number,
  assign: Uint32Array,
  sums: Float64Array,
  k: number,
  t0 = 0,
  t1 = d,
): void {
  for (let j = 0; j < k; j++) sums.fill(0, j * d + t0, j * d + t1);
  for (let i = 0; i < n; i++) {
    const so = assign[i] * d, xo = i * d;
    for (let t = t0; t < t1; t++) sums[so + t] += x[xo + t];
  }
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
  // Sums that are exact in any order are kept up to date from the rows that moved.
  let exact: boolean | undefined, was = new Uint32Array(0);
  for (let it = 0; it < o.iterations; it++) {
    const moved = exact === true && it > 0;
    const step: AssignStep = { c, cn: rowNorms(c, kk, d), k: kk, out: assign, moved };
    yield step;
    if (exact === undefined) {
      exact = o.rowOrderSums !== true && (o.exactSums?.() ?? exactSums(x, n, d));
      if (exact) was = new Uint32Array(n);
    }
    size.fill(0);
    for (let i = 0; i < n; i++) size[assign[i]]++;
    if (moved) {
      for (let i = 0; i < n; i++) {
        const a = assign[i], b = was[i];
        if (a === b) continue;
        const xo = i * d, ao = a * d, bo = b * d;
        for (let t = 0; t < d; t++) {
          sums[bo + t] -= x[xo + t];
          sums[ao + t] += x[xo + t];
        }
      }
    } else if (step.sums !== undefined) sums.set(step.sums.subarray(0, kk * d));
    else sumRows(x, n, d, assign, sums, kk);
    if (exact) was.set(assign);
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
  // Elkan's bounds where they apply (the same answers, fewer distances).
  const kk = Math.min(k, n);
  const pairs = boundedApplies(n, d, kk) && allFinite(x.subarray(0, n * d))
    ? PairDistances.create(x, n, d, kk)
    : undefined;
  const rows = pairs !== undefined ? boundedRows(n, kk) : undefined;
  let prev: Float32Array | undefined, moves: CentroidMoves | undefined, it = 0;
  for (let r = steps.next();; r = steps.next()) {
    if (r.done) return r.value;
    const s = r.value;
    if (rows === undefined || it++ < BOUNDED_FROM) {
      nearestAll(x, n, d, s.c, s.cn, s.k, s.out);
      continue;
    }
    moves = prev === undefined ? undefined : centroidMoves(prev, s.c, s.k, d, moves);
    boundedAssign(x, n, d, s.c, s.cn, s.k, rows, moves, pairs!);
    s.out.set(rows.assign);
    prev = s.c.slice();
  }
}

/**
 * {@linkcode kmeans} with each assignment made by `assign` (e.g. on worker
 * threads, a share of the rows each) and, if `sum` gives them, the update's
 * sums (e.g. a share of the columns each): the same centroids, bit for bit,
 * when `assign` gives {@linkcode nearestAll}'s answers and `sum`
 * {@linkcode sumRows}'s.
 */
export async function kmeansWith(
  x: Float32Array,
  n: number,
  d: number,
  k: number,
  o: KMeansOptions,
  assign: (c: Float32Array, cn: Float64Array, k: number, out: Uint32Array) => Promise<void>,
  sum?: (k: number) => Promise<Float64Array | undefined>,
): Promise<Float32Array> {
  const steps = kmeansSteps(x, n, d, k, o);
  for (let r = steps.next();; r = steps.next()) {
    if (r.done) return r.value;
    const s = r.value;
    await assign(s.c, s.cn, s.k, s.out);
    const sums = s.moved ? undefined : await sum?.(s.k);
    if (sums !== undefined) s.sums = sums;
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
