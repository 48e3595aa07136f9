/**
 * The encoding's nearest list screened on a few directions first
 * ({@linkcode projectionOf}, {@linkcode nearestProjected}): every row's
 * nearest of `k` centroids, `kmeans.ts`'s `nearest` bit for bit, with most
 * of the `k·d` products of a row left out.
 *
 * **Why.** With many lists the build's encoding spends most of its time on
 * each row's `k` dot products of `d` values (all of dev's 1,068,162 phrases
 * against 1,000 centroids of 256 dimensions: 273 G multiply-adds). The
 * centroids lie mostly in a few directions: on the first 64 principal
 * directions of the centroids of all of dev's `piqa-lstm` index, the part of
 * each centroid outside them is 8–27 % of its length, and of a row 24–35 %
 * (median 30 %, 80 % of 20,000 rows between). A row's distance to every centroid is then known within an
 * interval from 64 products, and only the few centroids whose intervals
 * reach below the smallest upper end (14 on average there, measured on
 * 20,000 rows) can be the nearest; only they get their full float32
 * products (the float32 screen of `kmeans.ts`, which almost always leaves
 * one), and those it cannot tell apart `nearest`'s float64 distance.
 * Since the listed centroids cost little, {@linkcode PROJECTED_DIMS} is 48
 * directions: on 50,000 of all of dev's rows, 24.5 centroids listed a row
 * on average against 12.8 with 64, and 5.2 µs a row against 5.4; on a
 * quarter of dev's (400 lists) 9.4 against 5.4, and 2.7 µs against 2.9
 * (2-core AMD EPYC, 2026-12-08).
 *
 * **The bound.** `B` holds `p` directions (float32 rows `b_i`, about
 * orthonormal: `G = BᵀB`, `‖G − I‖₂ ≤ ε_G`, computed), `â_c` the float32
 * rounding of `Bᵀc` and `â_x` the scores kernel's float32 `Bᵀx` (each
 * within `e_i ≤ 4(d+4)·2⁻²⁴·‖x‖·‖b_i‖ + (d+8)·2⁻¹⁴⁰`, the exact search's
 * bound). With `r_c = c − B·â_c` and `r_x = x − B·â_x` (exact),
 * `x·c = â_xᵀG·â_c + (Bᵀr_c)·â_x + (Bᵀr_x)·â_c + r_x·r_c`, so
 * `|x·c − â_x·â_c| ≤ ε_G‖â_x‖‖â_c‖ + ‖â_x‖·β_c + V_x·‖â_c‖ + R_x·ρ_c`,
 * where `ρ_c ≥ ‖r_c‖` and `β_c ≥ ‖Bᵀr_c‖ ≤ ‖Bᵀc − â_c‖ + ε_G‖â_c‖` are
 * each centroid's (computed in float64 with their roundings' bounds),
 * `V_x = ‖e‖ + ε_G‖â_x‖ ≥ ‖Bᵀr_x‖` and, since
 * `‖r_x‖² = ‖x‖² − ‖â_x‖² − 2(Bᵀx − â_x)·â_x + â_xᵀ(G − I)â_x`,
 * `R_x² ≤ ‖x‖² − ‖â_x‖² + 2‖e‖‖â_x‖ + ε_G‖â_x‖²`. The products `â_x·â_c`
 * themselves come from the scores kernel (its bound again, on `p`
 * values). With `L_c = max(ρ_c, τ·‖â_c‖, τ·β_c/κ)` (`τ` = 1/16,
 * `κ` = 2⁻²⁰) every term is at most `L_c` times a number of the row's, so
 * each distance `‖c‖² − 2·x·c` lies within `xl_x·L_c` (plus `nearest`'s
 * float64 margin) of `‖c‖² − 2·â_x·â_c`: the form of the float32 screen's
 * interval in `kmeans.ts`, whose module then finds each row's smallest
 * upper end (`screen`) and lists the centroids whose lower end reaches it
 * (`below`). The nearest (the first smallest of `nearest`'s float64
 * distances) is always listed, so the listed centroids' float64
 * distances, in centroid order, give `nearest`'s answer.
 *
 * The directions are the centroids' own (a few steps of subspace iteration
 * on `Σ c cᵀ` from its first columns, deterministic); how good they are
 * changes only how many centroids are listed, never the answers. A block
 * of rows with a value that is not finite or too large for float32
 * products is left to the caller (`kmeans.ts`'s screen), and so is a
 * row with more than {@linkcode PROJECTED_CAP} centroids listed.
 *
 * @module
 */
import { PairDistances } from "../../kernels/nearest.ts";
import { type SimdKernels, simdKernels } from "../../kernels/simd.ts";
import { F32_SAFE, TINY, U32 } from "../exact/score.ts";
import { type Int16Centroids, quantizeCentroids, quantizeRowsGap } from "./kmeans.ts";

/** Directions a row is screened on. */
export const PROJECTED_DIMS = 48;

/** The fewest centroids for which the encoding screens on {@linkcode PROJECTED_DIMS} directions. */
export const PROJECTED_MIN_K = 256;

/** The most centroids a row's list holds; a row with more is decided by the caller. */
export const PROJECTED_CAP = 256;

/**
 * What {@linkcode nearestProjected} did on this thread: blocks taken, and
 * of their rows those it decided (by one centroid listed, or by the listed
 * ones' float32 and then float64 distances; of those, `screened`: one
 * kept by the float32 products) and those it left; blocks it gave back (a
 * value not finite or too large). For tests and profiles.
 */
export const projectedRows = {
  blocks: 0,
  single: 0,
  listed: 0,
  screened: 0,
  left: 0,
  refused: 0,
};

/**
 * The float32 screen's width constants (`kmeans.ts`'s `Screen`): twice
 * the scores kernel's bound on a dot product of `d` values over
 * `‖x‖·‖c‖`, and its underflow term.
 */
const widthOf = (d: number) => ({ F: 2 * 4 * (d + 4) * U32, T: 2 * (d + 8) * TINY });

/** `τ` and `κ` of the bound (see the module notes). */
const TAU = 1 / 16, KAPPA = 2 ** -20;

/** Subspace iteration's steps. */
const STEPS = 8;

/** Room for float64 roundings of the bounds' own numbers (far above them). */
const UP = 1 + 2 ** -40;

/** What {@linkcode nearestProjected} needs of `k` centroids of `d` dimensions. */
export interface Projection {
  /** Directions (`p` float32 rows of `d`). */
  readonly basis: readonly Float32Array[];
  /** Each centroid's `â_c` in int16 (`kmeans.ts`'s int16 products). */
  readonly q16: Int16Centroids;
  /** Each centroid's `‖c‖²`, `L_c` and `C_c` (the module's table: `b = xl·L_c + C_c`). */
  readonly table: Float64Array;
  /** `ε_G`. */
  readonly epsG: number;
  /** An upper bound of `√(Σ ‖b_i‖²)`. */
  readonly bNorm: number;
  /** The largest `‖b_i‖` (an upper bound). */
  readonly bMax: number;
  /** Rows a block (the module's scores stay in cache). */
  readonly block: number;
  /** `nearest`'s float64 distances of the listed centroids (rows loaded a block at a time). */
  readonly pairs: PairDistances;
  /** Each centroid's `√‖c‖²` (the float32 screen's width, `kmeans.ts`). */
  readonly cLen: Float64Array;
  /** The largest of them. */
  readonly cMax: number;
  /** A block's numbers, reused block after block. */
  readonly scratch: Scratch;
  /**
   * How it has served (rows decided, rows left, centroids listed); `off`
   * once it lists too many to pay ({@linkcode worthIt}): the caller's
   * screen then takes every later block (the same answers).
   */
  readonly served: { rows: number; left: number; listed: number; off: boolean };
}

/**
 * Whether a projection still pays after a block: at least
 * {@linkcode PROJECTED_TRIAL} rows taken, and of them at most a tenth left
 * undecided and 64 centroids listed a row on average (on all of dev's
 * `piqa-lstm` rows, 25 with 48 directions).
 */
function worthIt(s: Projection["served"]): boolean {
  return s.rows < PROJECTED_TRIAL || (s.left <= 0.1 * s.rows && s.listed <= 64 * s.rows);
}

/** Rows a projection is tried on before {@linkcode worthIt} may turn it off. */
export const PROJECTED_TRIAL = 2048;

/** {@linkcode nearestProjected}'s buffers for a block of rows. */
interface Scratch {
  readonly ax: Float32Array;
  readonly xl: Float64Array;
  readonly xLen: Float64Array;
  readonly rows16: Int16Array;
  readonly rowScale: Float32Array;
  readonly rowSq: Float32Array;
  readonly gap: Float64Array;
  readonly dist: Float64Array;
  /** The listed centroids' float32 interval ends, then those kept. */
  readonly lo: Float64Array;
  readonly kept: Int32Array;
}

/** `√(Σ v²)` of a float64 vector, rounded up by {@linkcode UP}. */
const normUp = (v: Float64Array | Float32Array, from = 0, to = v.length): number => {
  let s = 0;
  for (let t = from; t < to; t++) s += v[t] * v[t];
  return Math.sqrt(s) * UP * UP;
};

/**
 * The {@linkcode Projection} of `k` centroids `c` (row-major, `d` a multiple
 * of 4, squared norms `cNorm` as `rowNorms` gives them), or `undefined`
 * where it cannot serve: fewer than {@linkcode PROJECTED_MIN_K} centroids,
 * `d` not above {@linkcode PROJECTED_DIMS}, a centroid that is not finite
 * or too large, or no kernel.
 *
 * @example
 * ```ts
 * import { projectionOf } from "./projected.ts";
 * import { rowNorms } from "./kmeans.ts";
 * const c = new Float32Array(8 * 4);
 * if (projectionOf(c, rowNorms(c, 8, 4), 8, 4) !== undefined) throw new Error("too few centroids");
 * ```
 */
export function projectionOf(
  c: Float32Array,
  cNorm: Float64Array,
  k: number,
  d: number,
): Projection | undefined {
  const p = PROJECTED_DIMS;
  if (k < PROJECTED_MIN_K || d <= p || d % 4 !== 0) return undefined;
  for (let j = 0; j < k; j++) {
    if (!(Math.sqrt(cNorm[j]) <= F32_SAFE)) return undefined;
  }
  const simd = simdKernels();
  if (simd === undefined) return undefined;
  const block = Math.max(64, Math.floor(2 ** 18 / k));
  const pairs = PairDistances.create(new Float32Array(block * d), block, d, k);
  if (pairs === undefined) return undefined;
  pairs.centroids(c, cNorm);
  const basis = directions(simd, c, k, d, p);
  // ε_G ≥ ‖BᵀB − I‖₂: the computed matrix's Frobenius norm, plus each entry's rounding.
  const bLen = basis.map((b) => normUp(b));
  const bMax = Math.max(...bLen);
  let fro = 0;
  for (let i = 0; i < p; i++) {
    for (let l = 0; l < p; l++) {
      let s = 0;
      const bi = basis[i], bl = basis[l];
      for (let t = 0; t < d; t++) s += bi[t] * bl[t];
      const e = s - (i === l ? 1 : 0);
      fro += e * e;
    }
  }
  const epsG = (Math.sqrt(fro) * UP + p * d * 2 ** -51 * bMax * bMax) * UP;
  if (!(epsG <= 2 ** -10)) return undefined;
  let bSq = 0;
  for (const l of bLen) bSq += l * l;
  const bNorm = Math.sqrt(bSq) * UP * UP;
  // Each centroid: â_c, α = ‖â_c‖, ρ ≥ ‖c − B·â_c‖, β ≥ ‖Bᵀ(c − B·â_c)‖, L = max(ρ, τα, τβ/κ).
  const projected = new Float32Array(k * p), aLen = new Float64Array(k);
  const table = new Float64Array(3 * k);
  const v = new Float64Array(p), r = new Float64Array(d), gap = new Float64Array(p);
  for (let j = 0; j < k; j++) {
    const co = j * d, a = projected.subarray(j * p, (j + 1) * p);
    for (let i = 0; i < p; i++) {
      const b = basis[i];
      let s = 0;
      for (let t = 0; t < d; t++) s += b[t] * c[co + t];
      v[i] = s;
      a[i] = Math.fround(s);
      gap[i] = s - a[i];
    }
    for (let t = 0; t < d; t++) {
      let s = 0;
      for (let i = 0; i < p; i++) s += basis[i][t] * a[i];
      r[t] = c[co + t] - s;
    }
    const cLen = Math.sqrt(cNorm[j]) * UP * UP, alpha = normUp(a);
    const rho = (normUp(r) + 2 ** -40 * (cLen + Math.sqrt(p) * bMax * alpha)) * UP;
    const beta = (normUp(gap) + Math.sqrt(p) * d * 2 ** -52 * bMax * cLen + epsG * alpha) * UP;
    if (!Number.isFinite(rho + beta + alpha)) return undefined;
    let a2 = 0;
    for (let i = 0; i < p; i++) a2 += a[i] * a[i];
    aLen[j] = Math.sqrt(a2);
    table[3 * j] = cNorm[j];
    table[3 * j + 1] = Math.max(rho, TAU * alpha, (TAU * beta) / KAPPA);
    // C: nearest's float64 margin for ‖c‖² (as kmeans.ts's screen), and the products' underflow.
    table[3 * j + 2] = (2 ** -40 * Math.abs(cNorm[j]) + 2 * (p + 8) * TINY) * UP;
  }
  const q16 = quantizeCentroids(simd, projected, k, p, aLen);
  if (q16 === undefined) return undefined;
  const scratch: Scratch = {
    ax: new Float32Array(block * p),
    xl: new Float64Array(block),
    xLen: new Float64Array(block),
    rows16: new Int16Array(block * q16.w),
    rowScale: new Float32Array(block),
    rowSq: new Float32Array(block),
    gap: new Float64Array(block),
    dist: new Float64Array(PROJECTED_CAP + 4),
    lo: new Float64Array(PROJECTED_CAP + 4),
    kept: new Int32Array(PROJECTED_CAP + 4),
  };
  const served = { rows: 0, left: 0, listed: 0, off: false };
  const cLen = cNorm.map(Math.sqrt).subarray(0, k);
  let cMax = 0;
  for (let j = 0; j < k; j++) cMax = Math.max(cMax, cLen[j]);
  return { basis, q16, table, epsG, bNorm, bMax, block, pairs, cLen, cMax, scratch, served };
}

/**
 * `p` directions of `k` centroids of `d` dimensions as float32 rows: a few
 * steps of subspace iteration on `M = Σ c cᵀ` (float32, in the scores
 * kernel, as the products `M·V`) from its first `p` columns,
 * each step orthonormalized (Gram–Schmidt twice; a column that vanishes is
 * replaced by the next unit vector). Deterministic; their quality only
 * changes how many centroids a row keeps.
 */
function directions(
  simd: SimdKernels,
  c: Float32Array,
  k: number,
  d: number,
  p: number,
): Float32Array[] {
  // M = Σ c cᵀ in float32 (the scores kernel on the columns of the centroids; k padded to 4).
  const kp = Math.ceil(k / 4) * 4, ct = new Float32Array(d * kp);
  for (let j = 0; j < k; j++) for (let t = 0; t < d; t++) ct[t * kp + j] = c[j * d + t];
  const cols = Array.from({ length: d }, (_, t) => ct.subarray(t * kp, (t + 1) * kp));
  const M = Float32Array.from(simd.scores(ct, d, kp, cols, { squares: false }).scores);
  // V: p columns of d, stored column by column; the first columns of M to start.
  const V = new Float64Array(p * d);
  for (let i = 0; i < p; i++) for (let t = 0; t < d; t++) V[i * d + t] = M[i * d + t];
  orthonormalize(V, p, d);
  const v32 = Array.from({ length: p }, () => new Float32Array(d));
  for (let step = 0; step < STEPS; step++) {
    for (let i = 0; i < p; i++) for (let t = 0; t < d; t++) v32[i][t] = V[i * d + t];
    // (M V)_i: the scores of M's rows (M is symmetric) against column i.
    const mv = simd.scores(M, d, d, v32, { squares: false }).scores;
    for (let i = 0; i < p * d; i++) V[i] = mv[i];
    orthonormalize(V, p, d);
  }
  return Array.from({ length: p }, (_, i) => Float32Array.from(V.subarray(i * d, (i + 1) * d)));
}

/** Gram–Schmidt (twice) on `p` columns of `d`, in place; a vanishing column becomes the next unit vector. */
function orthonormalize(V: Float64Array, p: number, d: number): void {
  let unit = 0;
  for (let i = 0; i < p; i++) {
    const vo = i * d;
    for (let tries = 0; tries <= d; tries++) {
      const before = normUp(V, vo, vo + d);
      for (let pass = 0; pass < 2; pass++) {
        for (let l = 0; l < i; l++) {
          const lo = l * d;
          let dot = 0;
          for (let t = 0; t < d; t++) dot += V[lo + t] * V[vo + t];
          for (let t = 0; t < d; t++) V[vo + t] -= dot * V[lo + t];
        }
      }
      const len = normUp(V, vo, vo + d);
      if (len > 1e-6 * before && len > 0 && Number.isFinite(len)) {
        for (let t = 0; t < d; t++) V[vo + t] /= len;
        break;
      }
      V.fill(0, vo, vo + d);
      V[vo + (unit++ % d)] = 1;
    }
  }
}

/** Counts a block given back ({@linkcode projectedRows}): `false`. */
function refused(): false {
  projectedRows.refused++;
  return false;
}

/**
 * Rows `[a, a + m)` of `x` (m at most the projection's block): `out[a + i]`
 * the nearest centroid (`nearest`'s answer) of each row it decides, and
 * `false` for a row it leaves (`undecided[i]` set: more than
 * {@linkcode PROJECTED_CAP} centroids listed, or the odd last row), or
 * `false` for the whole block (nothing written) where a value is not
 * finite or too large for float32 products.
 */
export function nearestProjected(
  simd: SimdKernels,
  proj: Projection,
  x: Float32Array,
  a: number,
  m: number,
  d: number,
  k: number,
  out: Uint32Array,
  undecided: Uint8Array,
): boolean {
  const p = proj.basis.length, rows = x.subarray(a * d, (a + m) * d);
  // â_x: the scores kernel's products with the directions (and each row's squares).
  const pr = simd.scores(rows, m, d, proj.basis);
  const { ax, xl, xLen: g, rows16, rowScale, rowSq, gap, dist, lo, kept } = proj.scratch;
  const sc = pr.scores, sq = pr.squares;
  const eFactor = 4 * (d + 4) * U32 * proj.bNorm * UP, eTiny = Math.sqrt(p) * (d + 8) * TINY;
  const epsG = proj.epsG, { F: wF, T: wT } = widthOf(d);
  for (let i = 0; i < m; i++) {
    let a2 = 0;
    for (let j = 0; j < p; j++) {
      const v = sc[j * m + i];
      ax[i * p + j] = v;
      a2 += v * v;
    }
    const x2 = sq[i] * UP, xLen = Math.sqrt(x2) * UP;
    if (!Number.isFinite(x2 + a2) || !(xLen * proj.bMax <= F32_SAFE)) return refused();
    const aLen = Math.sqrt(a2) * UP * UP;
    const e = (eFactor * xLen + eTiny) * UP;
    const v = (e + epsG * aLen) * UP;
    const r2 = x2 - a2 * (1 - 2 ** -40) + 2 * e * aLen + epsG * a2 * UP + 2 ** -40 * (x2 + a2);
    const r = Math.sqrt(Math.max(0, r2) * UP) * UP;
    // (the int16 products' gap is added below)
    xl[i] = r + (aLen * (epsG + KAPPA) + v) / TAU;
    g[i] = xLen;
  }
  // The products â_x·â_c in int16 (kmeans.ts's), each within ‖â_c‖·gap of â_x·â_c.
  const q16 = proj.q16;
  if (!quantizeRowsGap(simd, ax, 0, m, p, q16, rows16, rowScale, rowSq, gap)) return refused();
  for (let i = 0; i < m; i++) {
    const w = xl[i] + gap[i] / TAU;
    xl[i] = (2 * w + 2 ** -38 * g[i] * (1 + 2 / TAU)) * (1 + 2 ** -30);
  }
  simd.scores16(rows16, m, q16.w, q16.q, k, rowScale, q16.scale);
  const pairs = m >> 1;
  let listed: Int32Array = new Int32Array(0);
  if (pairs > 0) {
    const s = simd.screenList(pairs, xl, proj.table, PROJECTED_CAP);
    if (!s.ok) return refused();
    listed = s.lists;
  }
  // Taken (a block given back above is counted as refused only).
  projectedRows.blocks++;
  if (m % 2 === 1) {
    undecided[m - 1] = 1;
    projectedRows.left++;
  }
  if (pairs === 0) return true;
  const pd = proj.pairs, list = pd.list;
  pd.rows(rows, m);
  for (let i = 0; i < 2 * pairs; i++) {
    const n = listed[i], at = 2 * pairs + i * PROJECTED_CAP;
    if (n === 1) {
      out[a + i] = listed[at];
      projectedRows.single++;
      continue;
    }
    if (n < 1 || n > PROJECTED_CAP) {
      undecided[i] = 1;
      projectedRows.left++;
      continue;
    }
    projectedRows.listed++;
    for (let r = 0; r < n; r++) list[r] = listed[at + r];
    // The listed centroids' full float32 products first (kmeans.ts's screen: each
    // distance within est ± b); those whose interval reaches below the smallest upper
    // end are kept, and one kept is the answer without its float64 distance.
    let w = n;
    if (g[i] * proj.cMax <= F32_SAFE) {
      pd.dots(i, n, dist);
      let top = Infinity, ok = true;
      for (let r = 0; r < n && ok; r++) {
        const j = list[r], cn = proj.table[3 * j], est = cn - 2 * dist[r];
        const dot = g[i] * proj.cLen[j];
        const b = wF * dot + wT + 2 ** -40 * (dot + Math.abs(cn));
        lo[r] = est - b;
        if (est + b < top) top = est + b;
        ok = Number.isFinite(est);
      }
      if (ok) {
        w = 0;
        for (let r = 0; r < n; r++) if (lo[r] <= top) kept[w++] = list[r];
        if (w === 1) {
          out[a + i] = kept[0];
          projectedRows.screened++;
          continue;
        }
        for (let r = 0; r < w; r++) list[r] = kept[r];
      }
    }
    pd.run(i, w, dist);
    // The first smallest: the list is in centroid order.
    let best = list[0], bestD = dist[0];
    for (let r = 1; r < w; r++) {
      if (dist[r] < bestD) {
        bestD = dist[r];
        best = list[r];
      }
    }
    out[a + i] = best;
  }
  const served = proj.served;
  served.rows += m;
  for (let i = 0; i < m; i++) {
    if (undecided[i] === 1) served.left++;
    else served.listed += listed[i];
  }
  if (!worthIt(served)) served.off = true;
  return true;
}
