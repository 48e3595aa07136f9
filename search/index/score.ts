/**
 * Exact top-k scoring over many phrases: {@linkcode TopK} (one question's
 * best rows), {@linkcode scoreDense} (a block of dense rows on the SIMD
 * kernels of `search/simd.ts`, or the float64 loops of `search/dense_f64.ts`)
 * and {@linkcode SparseQueries} (CSR rows against a block of CSR questions,
 * through an inverted list of the questions' columns).
 *
 * Scores are merge's: the exact value correctly rounded (`fsum` of the
 * float64 products, bit for bit Python's `math.fsum`). As in merge, a fast
 * pass scores every row with an error bound, and only a row whose fast score
 * plus its bound reaches the question's current k-th best exact score is
 * re-scored exactly; rows are offered in index order and a row enters only
 * with a strictly larger score than the one it would displace, so ties go to
 * the first row in (paragraph order, phrase order). Restricted to one
 * paragraph, the top row is exactly merge's answer.
 *
 * IndexMetric `l2`: the score is −‖q−p‖², computed exactly as the correctly
 * rounded sum of the terms 2·qₖpₖ, −pₖ², −qₖ² (each exact in float64); the
 * best phrase is the nearest.
 *
 * @module
 */
import type { CsrMatrix } from "../../io/matrix.ts";
import { denseScores, halfTable, sumSquares } from "../dense_f64.ts";
import { fsum } from "../fsum.ts";
import { simdKernels } from "../simd.ts";
import type { IndexMetric } from "./format.ts";

const EPS = 2 ** -52;
const U32 = 2 ** -24;
const F32_SAFE = 2 ** 100;
const TINY = 2 ** -140;

/**
 * One question's best `k` rows, best first: by exact score, then by row
 * (rows must be offered in increasing order).
 *
 * @example
 * ```ts
 * import { TopK } from "./score.ts";
 * const t = new TopK(2);
 * t.offer(1, 0);
 * t.offer(3, 1);
 * t.offer(3, 2); // ties with row 1: row 1 stays first, row 2 second
 * t.offer(2, 3); // below the second: out
 * if (t.rows.join() !== "1,2") throw new Error(t.rows.join());
 * ```
 */
export class TopK {
  /** Exact scores, best first. */
  readonly scores: number[] = [];
  /** Their rows. */
  readonly rows: number[] = [];

  /** @param k how many rows to keep (at least 1) */
  constructor(readonly k: number) {}

  /** The score a new row must beat: the k-th best, or −∞ while fewer than k. */
  get threshold(): number {
    return this.rows.length < this.k ? -Infinity : this.scores[this.k - 1];
  }

  /** Offers row `row` (larger than every row offered before) with its exact score. */
  offer(score: number, row: number): void {
    const n = this.rows.length;
    if (n === this.k && !(score > this.scores[n - 1])) return;
    let p = n;
    while (p > 0 && this.scores[p - 1] < score) p--;
    this.scores.splice(p, 0, score);
    this.rows.splice(p, 0, row);
    if (this.rows.length > this.k) {
      this.scores.pop();
      this.rows.pop();
    }
  }
}

/** Thrown on a NaN or infinite value in the vectors (a corrupt index): the caller names the file. */
export class NonFiniteError extends Error {}

let prods = new Float64Array(1024);
function room(n: number): Float64Array {
  if (prods.length < n) prods = new Float64Array(Math.max(n, prods.length * 2));
  return prods;
}

/**
 * Scores `n` dense rows (`a`: f32 values or f16 bits, row-major, `d`
 * columns; global rows `rowBase…`) against the questions `qs` (float32,
 * length d each), offering candidates to `tops[j]` (see the module notes).
 * Uses the WebAssembly SIMD kernels when `simd` and d is a multiple of 4.
 */
export function scoreDense(
  a: Float32Array | Uint16Array,
  n: number,
  d: number,
  rowBase: number,
  qs: readonly Float32Array[],
  tops: readonly TopK[],
  metric: IndexMetric,
  simd = true,
): void {
  const nq = qs.length;
  if (n === 0 || nq === 0) return;
  const qNorm = new Float64Array(nq), qSq = new Float64Array(nq);
  let maxQ = 0;
  for (let j = 0; j < nq; j++) {
    let s = 0;
    const v = qs[j];
    for (let t = 0; t < d; t++) s += v[t] * v[t];
    qSq[j] = s;
    qNorm[j] = Math.sqrt(s);
    if (qNorm[j] > maxQ) maxQ = qNorm[j];
  }
  let rows: Float32Array | undefined, sq: Float64Array | undefined;
  let fast: Float32Array | Float64Array | undefined;
  let factor = 0, tiny = 0;
  const k = simd && d >= 4 && d % 4 === 0 ? simdKernels() : undefined;
  if (k !== undefined) {
    const r = k.scores(a, n, d, qs);
    let maxNorm = 0;
    for (let i = 0; i < n; i++) {
      if (!Number.isFinite(r.squares[i])) throw new NonFiniteError(`row ${rowBase + i}`);
      if (r.squares[i] > maxNorm) maxNorm = r.squares[i];
    }
    rows = r.rows;
    sq = r.squares;
    if (Math.sqrt(maxNorm) * maxQ <= F32_SAFE) {
      fast = r.scores;
      factor = 4 * (d + 4) * U32;
      tiny = (d + 8) * TINY;
    }
  }
  if (fast === undefined) {
    if (rows === undefined) {
      if (a instanceof Float32Array) rows = a;
      else {
        const table = halfTable();
        rows = new Float32Array(n * d);
        for (let i = 0; i < rows.length; i++) rows[i] = table[a[i]];
      }
    } else rows = rows.slice();
    sq = sumSquares(rows, n, d);
    for (let i = 0; i < n; i++) {
      if (!Number.isFinite(sq[i])) throw new NonFiniteError(`row ${rowBase + i}`);
    }
    const q = new Float64Array(nq * d);
    for (let j = 0; j < nq; j++) for (let t = 0; t < d; t++) q[j * d + t] = qs[j][t];
    fast = new Float64Array(nq * n);
    denseScores(rows, n, d, q, nq, fast);
    factor = 2 * (d + 2) * EPS;
    tiny = 0;
  }
  const norms = new Float64Array(n);
  for (let i = 0; i < n; i++) norms[i] = Math.sqrt(sq![i]);
  const A = rows!, S = sq!, F = fast;
  const l2 = metric === "l2";
  // The squares' own error (float64 sums) is far below this float32-level term.
  const sqFactor = 4 * (d + 4) * U32;
  for (let j = 0; j < nq; j++) {
    const t = tops[j], q = qs[j], base = j * n;
    const scale = factor * qNorm[j], qs2 = qSq[j];
    let thr = t.threshold;
    for (let i = 0; i < n; i++) {
      const ip = F[base + i];
      const bIp = scale * norms[i] + tiny;
      let f: number, b: number;
      if (l2) {
        f = 2 * ip - S[i] - qs2;
        b = 2 * bIp + sqFactor * (S[i] + qs2) + 8 * EPS * (2 * Math.abs(ip) + S[i] + qs2) + tiny;
      } else {
        f = ip;
        b = bIp;
      }
      if (!(f + b >= thr)) continue;
      const r = i * d;
      let v: number;
      if (l2) {
        const p = room(3 * d);
        for (let c = 0; c < d; c++) {
          const x = A[r + c], y = q[c];
          p[3 * c] = 2 * x * y;
          p[3 * c + 1] = -(x * x);
          p[3 * c + 2] = -(y * y);
        }
        v = fsum(p, 3 * d);
      } else {
        const p = room(d);
        for (let c = 0; c < d; c++) p[c] = A[r + c] * q[c];
        v = fsum(p, d);
      }
      t.offer(v, rowBase + i);
      thr = t.threshold;
    }
  }
}

let slots = new Int32Array(0);
let bits = new Int32Array(0);

/**
 * A block of 1×d CSR questions, indexed by column (an inverted list), to
 * score CSR rows against ({@linkcode SparseQueries.score}). Call
 * {@linkcode SparseQueries.dispose} when done (it clears shared tables).
 *
 * @example
 * ```ts
 * import { SparseQueries, TopK } from "./score.ts";
 * const q = { kind: "csr", rows: 1, cols: 8, data: new Float32Array([1]),
 *   indices: new Int32Array([5]), indptr: new Int32Array([0, 1]) } as const;
 * const sq = new SparseQueries([q], 8);
 * const top = new TopK(1);
 * // Two rows: column 3 (value 1), column 5 (value 2).
 * sq.score(new Float32Array([1, 2]), new Int32Array([3, 5]), new Float64Array([0, 1, 2]), 0, 2, [top], "ip");
 * sq.dispose();
 * if (top.rows[0] !== 1 || top.scores[0] !== 2) throw new Error(`${top.rows} ${top.scores}`);
 * ```
 */
export class SparseQueries {
  readonly #used: number[] = [];
  readonly #start: Int32Array;
  readonly #postJ: Int32Array;
  readonly #postV: Float64Array;
  readonly #qSq: Float64Array;
  readonly #byCol: (Map<number, number[]> | undefined)[];

  /** Indexes `qs` (each 1×d); `d` is the index's dimension. */
  constructor(readonly qs: readonly CsrMatrix[], readonly d: number) {
    if (slots.length < d) {
      slots = new Int32Array(d).fill(-1);
      bits = new Int32Array((d + 31) >>> 5);
    }
    const counts: number[] = [];
    this.#qSq = new Float64Array(qs.length);
    for (let j = 0; j < qs.length; j++) {
      const m = qs[j];
      for (let k = m.indptr[0]; k < m.indptr[1]; k++) {
        const col = m.indices[k];
        let s = slots[col];
        if (s < 0) {
          s = this.#used.length;
          slots[col] = s;
          bits[col >>> 5] |= 1 << (col & 31);
          this.#used.push(col);
          counts.push(0);
        }
        counts[s]++;
        this.#qSq[j] += m.data[k] * m.data[k];
      }
    }
    this.#start = new Int32Array(this.#used.length + 1);
    for (let s = 0; s < counts.length; s++) this.#start[s + 1] = this.#start[s] + counts[s];
    this.#postJ = new Int32Array(this.#start[counts.length]);
    this.#postV = new Float64Array(this.#start[counts.length]);
    const fill = this.#start.slice(0, counts.length);
    for (let j = 0; j < qs.length; j++) {
      const m = qs[j];
      for (let k = m.indptr[0]; k < m.indptr[1]; k++) {
        const s = slots[m.indices[k]];
        this.#postJ[fill[s]] = j;
        this.#postV[fill[s]++] = m.data[k];
      }
    }
    this.#byCol = new Array(qs.length);
  }

  #cols(j: number): Map<number, number[]> {
    let m = this.#byCol[j];
    if (m === undefined) {
      m = new Map();
      const q = this.qs[j];
      for (let k = q.indptr[0]; k < q.indptr[1]; k++) {
        const list = m.get(q.indices[k]);
        if (list) list.push(q.data[k]);
        else m.set(q.indices[k], [q.data[k]]);
      }
      this.#byCol[j] = m;
    }
    return m;
  }

  #exact(
    j: number,
    data: Float32Array,
    indices: Int32Array,
    from: number,
    to: number,
    l2: boolean,
  ): number {
    const cols = this.#cols(j);
    let np = 0;
    let p = room(64);
    const push = (x: number) => {
      if (np === p.length) {
        const bigger = new Float64Array(np * 2);
        bigger.set(p);
        prods = p = bigger;
      }
      p[np++] = x;
    };
    for (let k = from; k < to; k++) {
      const vs = cols.get(indices[k]);
      const x = data[k];
      if (vs !== undefined) { for (const v of vs) push(l2 ? 2 * x * v : x * v); }
      if (l2) push(-(x * x));
    }
    if (l2) {
      const q = this.qs[j];
      for (let k = q.indptr[0]; k < q.indptr[1]; k++) push(-(q.data[k] * q.data[k]));
    }
    return fsum(p, np);
  }

  /**
   * Scores rows `from…to-1` of the CSR matrix (`indptr` global, float64)
   * against the questions, offering candidates to `tops[j]`.
   */
  score(
    data: Float32Array,
    indices: Int32Array,
    indptr: Float64Array,
    from: number,
    to: number,
    tops: readonly TopK[],
    metric: IndexMetric,
  ): void {
    const nq = this.qs.length;
    if (nq === 0) return;
    const l2 = metric === "l2";
    const acc = new Float64Array(nq), accAbs = new Float64Array(nq);
    const cnt = new Int32Array(nq), touched = new Int32Array(nq);
    const start = this.#start, postJ = this.#postJ, postV = this.#postV, qSq = this.#qSq;
    const qnnz = this.qs.map((q) => q.indptr[1] - q.indptr[0]);
    const S = slots, B = bits;
    let nonPositive = 0;
    for (const t of tops) if (t.threshold <= 0) nonPositive++;
    for (let i = from; i < to; i++) {
      let nt = 0;
      const e = indptr[i + 1];
      let rowSq = 0;
      for (let k = indptr[i]; k < e; k++) {
        const col = indices[k];
        const x = data[k];
        rowSq += x * x;
        if ((B[col >>> 5] & (1 << (col & 31))) === 0) continue;
        const s = S[col], ax = Math.abs(x);
        for (let p = start[s]; p < start[s + 1]; p++) {
          const j = postJ[p], v = postV[p];
          if (cnt[j] === 0) touched[nt++] = j;
          acc[j] += x * v;
          accAbs[j] += ax * Math.abs(v);
          cnt[j]++;
        }
      }
      if (!Number.isFinite(rowSq)) throw new NonFiniteError(`row ${i}`);
      const rowNnz = e - indptr[i];
      if (l2) {
        for (let j = 0; j < nq; j++) {
          const ip = acc[j];
          const f = 2 * ip - rowSq - qSq[j];
          const b = 4 * (cnt[j] + 2) * EPS * accAbs[j] +
            2 * (rowNnz + qnnz[j] + 4) * EPS * (rowSq + qSq[j]) +
            8 * EPS * (2 * Math.abs(ip) + rowSq + qSq[j]);
          const t = tops[j];
          if (f + b >= t.threshold) {
            t.offer(this.#exact(j, data, indices, indptr[i], e, true), i);
          }
        }
      } else {
        for (let u = 0; u < nt; u++) {
          const j = touched[u], t = tops[j];
          if (acc[j] + 2 * (cnt[j] + 2) * EPS * accAbs[j] >= t.threshold) {
            t.offer(this.#exact(j, data, indices, indptr[i], e, false), i);
          }
        }
        if (nonPositive > 0) {
          // Rows sharing no column with a question score exactly 0 for it.
          for (let j = 0; j < nq; j++) {
            if (cnt[j] === 0 && 0 >= tops[j].threshold) tops[j].offer(0, i);
          }
        }
      }
      for (let u = 0; u < nt; u++) {
        const j = touched[u];
        acc[j] = 0;
        accAbs[j] = 0;
        cnt[j] = 0;
      }
    }
  }

  /** Clears the shared column tables. */
  dispose(): void {
    for (const col of this.#used) {
      slots[col] = -1;
      bits[col >>> 5] = 0;
    }
    this.#used.length = 0;
  }
}

/**
 * Term-at-a-time exact scoring of one CSR question against every row of a
 * CSR index (open search): the index's columns as posting lists (built once,
 * nnz × 8 bytes more), one float64 accumulator per row, then one pass over
 * the rows in order offering the candidates to the question's {@linkcode TopK}.
 * The fast scores' error bound is 2·(m+2)·ε·‖row‖₁·max|q| (m: the terms
 * summed); rows near the k-th best are re-scored exactly as in
 * {@linkcode SparseQueries}, which also scores questions with a repeated
 * column.
 */
export class SparseIndexScorer {
  readonly #colPtr: Float64Array;
  readonly #postRow: Int32Array;
  readonly #postVal: Float32Array;
  readonly #rowL1: Float64Array;
  readonly #rowSq: Float64Array;
  readonly #acc: Float64Array;

  /** Indexes the columns of the CSR matrix (`indptr` float64, `rows` rows, `d` columns). */
  constructor(
    readonly data: Float32Array,
    readonly indices: Int32Array,
    readonly indptr: Float64Array,
    readonly rows: number,
    readonly d: number,
  ) {
    const nnz = indptr[rows];
    const counts = new Float64Array(d + 1);
    for (let k = 0; k < nnz; k++) counts[indices[k] + 1]++;
    for (let c = 0; c < d; c++) counts[c + 1] += counts[c];
    this.#colPtr = counts;
    const fill = counts.slice(0, d);
    this.#postRow = new Int32Array(nnz);
    this.#postVal = new Float32Array(nnz);
    this.#rowL1 = new Float64Array(rows);
    this.#rowSq = new Float64Array(rows);
    for (let i = 0; i < rows; i++) {
      let l1 = 0, sq = 0;
      for (let k = indptr[i]; k < indptr[i + 1]; k++) {
        const x = data[k], p = fill[indices[k]]++;
        this.#postRow[p] = i;
        this.#postVal[p] = x;
        l1 += Math.abs(x);
        sq += x * x;
      }
      if (!Number.isFinite(sq)) throw new NonFiniteError(`row ${i}`);
      this.#rowL1[i] = l1;
      this.#rowSq[i] = sq;
    }
    this.#acc = new Float64Array(rows);
  }

  /** Scores question `q` (1×d CSR) against every row, offering candidates to `top`. */
  score(q: CsrMatrix, top: TopK, metric: IndexMetric): void {
    const acc = this.#acc;
    acc.fill(0);
    const colPtr = this.#colPtr, postRow = this.#postRow, postVal = this.#postVal;
    let qMax = 0, qSq = 0;
    const seen = new Set<number>();
    for (let k = q.indptr[0]; k < q.indptr[1]; k++) {
      const c = q.indices[k], v = q.data[k];
      if (seen.has(c)) {
        // A repeated column: the general scorer.
        const sq = new SparseQueries([q], this.d);
        try {
          sq.score(this.data, this.indices, this.indptr, 0, this.rows, [top], metric);
        } finally {
          sq.dispose();
        }
        return;
      }
      seen.add(c);
      qMax = Math.max(qMax, Math.abs(v));
      qSq += v * v;
      for (let p = colPtr[c], e = colPtr[c + 1]; p < e; p++) acc[postRow[p]] += postVal[p] * v;
    }
    const one = new SparseQueries([q], this.d);
    try {
      const l2 = metric === "l2", indptr = this.indptr, rowL1 = this.#rowL1, rowSq = this.#rowSq;
      const qnnz = q.indptr[1] - q.indptr[0];
      let thr = top.threshold;
      for (let i = 0; i < this.rows; i++) {
        const m = indptr[i + 1] - indptr[i];
        const ip = acc[i];
        const bIp = 2 * (m + 2) * EPS * rowL1[i] * qMax;
        let f = ip, b = bIp;
        if (l2) {
          f = 2 * ip - rowSq[i] - qSq;
          b = 2 * bIp + 2 * (m + qnnz + 4) * EPS * (rowSq[i] + qSq) +
            8 * EPS * (2 * Math.abs(ip) + rowSq[i] + qSq);
        }
        if (f + b >= thr) {
          one.score(this.data, this.indices, indptr, i, i + 1, [top], metric);
          thr = top.threshold;
        }
      }
    } finally {
      one.dispose();
    }
  }
}
