/**
 * Dense scoring: {@linkcode bestDenseRows}, a fast pass (WebAssembly SIMD in
 * float32 lanes, or float64 loops) and the exact re-scoring of the rows near
 * the best.
 *
 * @module
 */
import type { DenseMatrix } from "../../io/matrix.ts";
import { asFloat32, denseScores, halfBits, sumSquares } from "../dense_f64.ts";
import { fsum } from "../fsum.ts";
import { pickRow } from "./pick.ts";
import { type SimdKernels, simdKernels } from "../kernels/simd.ts";

const EPS = 2 ** -52;

/** Float32 products and sums of values below this (in norm) neither overflow nor lose range. */
const F32_SAFE = 2 ** 100;
const U32 = 2 ** -24;

/**
 * {@linkcode bestDenseRows} on the SIMD kernels: `{ best }`, or, when the
 * values are out of the float32 pass's range, the matrix as it now lies in
 * memory (`a` may have been detached) and its row squares, for the float64
 * pass. A non-finite row sum means a NaN or infinite value: `checkFinite`
 * then throws the reader's error.
 */
function bestDenseRowsSimd(
  k: SimdKernels,
  a: Float32Array | Uint16Array,
  n: number,
  d: number,
  qs: readonly Float32Array[],
  checkFinite: ((data: Float32Array) => Float64Array) | undefined,
): { best: Int32Array } | { rows: Float32Array; squares?: Float64Array } {
  const nq = qs.length;
  const qNorm = new Float64Array(nq);
  let maxQ = 0;
  for (let j = 0; j < nq; j++) {
    let s = 0;
    const v = qs[j];
    for (let t = 0; t < d; t++) s += v[t] * v[t];
    qNorm[j] = Math.sqrt(s);
    if (qNorm[j] > maxQ) maxQ = qNorm[j];
  }
  const { scores, rows, squares } = k.scores(a, n, d, qs);
  const norms = new Float64Array(n);
  let maxNorm = 0;
  for (let i = 0; i < n; i++) {
    const sq = squares[i];
    // Squares of float32 values cannot overflow float64: Inf or NaN comes from the data.
    if (!Number.isFinite(sq)) return { rows, squares: checkFinite?.(rows) };
    norms[i] = Math.sqrt(sq);
    if (norms[i] > maxNorm) maxNorm = norms[i];
  }
  if (!(maxNorm * maxQ <= F32_SAFE)) return { rows, squares: squares.slice() };
  const fast = new Float64Array(scores);
  const out = new Int32Array(nq);
  const prods = new Float64Array(d);
  // A lane sums d/4 products (each rounded, or fused into its addition), then two more
  // additions: the error is at most γ(d/4+3)·Σ|a q| ≤ γ(d/4+3)·|a||q| (+ underflow);
  // the bound is 4 times more than that.
  const factor = 4 * (d + 4) * U32;
  const tiny = (d + 8) * 2 ** -140;
  for (let j = 0; j < nq; j++) {
    const scale = factor * qNorm[j];
    const q = qs[j];
    out[j] = pickRow(fast, j * n, n, (i) => scale * norms[i] + tiny, (i) => {
      const r = i * d;
      for (let t = 0; t < d; t++) prods[t] = rows[r + t] * q[t];
      return fsum(prods, d);
    });
  }
  return { best: out };
}

/** Options of the scoring functions. */
export interface ScoringOptions {
  /**
   * Use the WebAssembly SIMD kernels for the fast pass (default true; the
   * results are the same either way).
   */
  readonly simd?: boolean;
}

/**
 * For each question vector (1×d, dense), the index of the first row of the
 * dense phrase matrix with the largest exact inner product (see the module
 * notes), or -1 when the matrix has no rows. The fast pass runs on
 * WebAssembly SIMD (float32 lanes, with their own error bound; it sums each
 * row's squares on the same pass) when available and d is a multiple of 4,
 * else in float64; the exact re-scoring makes both give the same rows.
 * `rowSquares` (the sum of squares of each row, as `ContextDump`
 * carries for checked f32 dumps) saves the float64 pass one pass over the
 * matrix. `checkFinite` is for a matrix whose values were not checked yet
 * (`ContextDump.checkFinite`): it runs (and throws) when a row's squares
 * are not finite; without it, values must be finite.
 *
 * @example
 * ```ts
 * import { bestDenseRows } from "./best_dense.ts";
 * const c = { kind: "dense", rows: 3, cols: 2, dtype: "f32", data: new Float32Array([1, 0, 0, 1, 1, 0]) } as const;
 * const q = { kind: "dense", rows: 1, cols: 2, dtype: "f32", data: new Float32Array([1, 0]) } as const;
 * // Rows 0 and 2 tie: the first wins.
 * if (bestDenseRows(c, [q])[0] !== 0) throw new Error("not the first maximum");
 * ```
 */
export function bestDenseRows(
  c: DenseMatrix,
  questions: readonly DenseMatrix[],
  rowSquares?: Float64Array,
  options: ScoringOptions = {},
  checkFinite?: (data: Float32Array) => Float64Array,
): Int32Array {
  const n = c.rows, d = c.cols, nq = questions.length;
  const out = new Int32Array(nq).fill(-1);
  if (n === 0 || nq === 0) return out;
  if (c.data.length !== n * d) {
    throw new RangeError(`matrix data has ${c.data.length} values, not ${n}×${d}`);
  }
  let a: Float32Array | undefined;
  let sq = rowSquares;
  const k = options.simd === false || d < 4 || d % 4 !== 0 ? undefined : simdKernels();
  if (k !== undefined) {
    // float16 goes to the kernels as its bits (widened straight into their memory).
    const src = c.data instanceof Float32Array ? c.data : halfBits(c.data);
    const r = bestDenseRowsSimd(k, src, n, d, questions.map(asFloat32), checkFinite);
    if ("best" in r) return r.best;
    a = r.rows;
    sq ??= r.squares;
  }
  a ??= asFloat32(c);
  sq ??= checkFinite ? checkFinite(a) : sumSquares(a, n, d);
  const norms = new Float64Array(n);
  for (let i = 0; i < n; i++) norms[i] = Math.sqrt(sq[i]);
  const q = new Float64Array(nq * d);
  const qNorm = new Float64Array(nq);
  for (let j = 0; j < nq; j++) {
    const v = asFloat32(questions[j]);
    let s = 0;
    for (let k = 0; k < d; k++) {
      q[j * d + k] = v[k];
      s += v[k] * v[k];
    }
    qNorm[j] = Math.sqrt(s);
  }
  const fast = new Float64Array(nq * n);
  denseScores(a, n, d, q, nq, fast);
  const prods = new Float64Array(d);
  // |fast - exact| ≤ γ(d) Σ|a q| ≤ γ(d) |a| |q|: the bound below is 4× that, which
  // also covers the rounding of the norms and of the comparisons.
  const factor = 2 * (d + 2) * EPS;
  for (let j = 0; j < nq; j++) {
    const scale = factor * qNorm[j];
    const qo = j * d;
    out[j] = pickRow(fast, j * n, n, (i) => scale * norms[i], (i) => {
      const r = i * d;
      for (let k = 0; k < d; k++) prods[k] = a[r + k] * q[qo + k];
      return fsum(prods, d);
    });
  }
  return out;
}
