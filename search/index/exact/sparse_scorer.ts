/**
 * Exact top-k scoring of CSR (sparse) rows: {@linkcode SparseQueries} (CSR
 * rows against a block of CSR questions, through an inverted list of the
 * questions' columns) and {@linkcode SparseIndexScorer} (open search over a
 * whole CSR index: its frequent columns as a dense block on the SIMD
 * kernels, the others as posting lists walked by row tiles, a running
 * threshold of lower bounds).
 *
 * Scores, bounds and ties are `score.ts`'s (merge's exact scores, `fsum` of
 * the float64 products, offered to a {@linkcode TopK} in row order), and so
 * is the `l2` metric's −‖q−p‖².
 *
 * @module
 */
import type { CsrMatrix } from "../../../io/matrix.ts";
import { fsum } from "../../fsum.ts";
import { simdKernels } from "../../kernels/simd.ts";
import type { IndexMetric } from "../format.ts";
import { EPS, F32_SAFE, NonFiniteError, room, TINY, type TopK, U32 } from "./score.ts";

let slots = new Int32Array(0);
let bits = new Int32Array(0);

/**
 * A block of 1×d CSR questions, indexed by column (an inverted list), to
 * score CSR rows against ({@linkcode SparseQueries.score}). Call
 * {@linkcode SparseQueries.dispose} when done (it clears shared tables).
 *
 * @example
 * ```ts
 * import { SparseQueries } from "./sparse_scorer.ts";
 * import { TopK } from "./score.ts";
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
        // The shared scratch, twice as large (`p` is it: room(np * 2) makes a new one).
        const old = p;
        p = room(np * 2);
        p.set(old);
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
/** Options of {@linkcode SparseIndexScorer}. */
export interface SparseIndexScorerOptions {
  /**
   * A column held by at least this share of the rows goes to the dense block
   * (default 1/16); `Infinity`: no dense block.
   */
  readonly denseShare?: number;
  /** At most this many dense columns, the most frequent first (default 1024). */
  readonly maxDense?: number;
}

/** Questions scored together on the dense block (the block's scores: this × rows float32). */
const QUESTION_BLOCK = 32;
/** Rows scored together (one call of the SIMD kernel; the posting lists walked tile by tile). */
const ROW_CHUNK = 16384;

/**
 * Exact top-k scoring of CSR questions against every row of a CSR index
 * (open search), built once per index:
 *
 * - the columns held by many rows (at least `denseShare` of them: the
 *   shape features of `sparse-pi`, the dense half of a hybrid encoder) are
 *   copied into a dense float32 block (rows × dd) and scored on the SIMD
 *   kernels of `search/kernels/simd.ts`, a block of questions at a time
 *   (float32, error bound 4·(dd+4)·u·‖q‖·‖x‖ as in {@linkcode scoreDense};
 *   float64 loops without SIMD or when the norms are too large for
 *   float32);
 * - the other columns are posting lists (row, value), accumulated per row
 *   in float64 (error bound 2·(m+2)·ε·‖row‖₁·max|q|, m the row's stored
 *   values);
 * - each row's fast score f and bound b give a lower bound f − b of its
 *   exact score; θ, the k-th largest lower bound, is at most the k-th best
 *   exact score, so only rows with f + b ≥ θ can be in the top k. Those
 *   (in row order) are re-scored exactly (`fsum` of the float64 products,
 *   merge's score) and offered to the question's {@linkcode TopK}: the
 *   result, ties included, is that of scoring every row exactly.
 *
 * Memory: the posting lists (8 bytes a value outside the dense block), the
 * dense block (rows × dd × 4), four float64 per row, and
 * `QUESTION_BLOCK` × rows float32 of block scores. A question with a
 * repeated column is scored by {@linkcode SparseQueries}.
 *
 * @example
 * ```ts
 * import { SparseIndexScorer } from "./sparse_scorer.ts";
 * import { TopK } from "./score.ts";
 * // Three rows over d = 8: column 0 in every row (dense), 5 in row 1, 6 in row 2.
 * const data = new Float32Array([1, 1, 3, 1, 1]);
 * const indices = new Int32Array([0, 0, 5, 0, 6]);
 * const indptr = new Float64Array([0, 1, 3, 5]);
 * const s = new SparseIndexScorer(data, indices, indptr, 3, 8);
 * const q = { kind: "csr", rows: 1, cols: 8, data: new Float32Array([0.5, 2]),
 *   indices: new Int32Array([0, 5]), indptr: new Int32Array([0, 2]) } as const;
 * const top = new TopK(2);
 * s.score(q, top, "ip");
 * if (top.rows.join() !== "1,0" || top.scores.join() !== "6.5,0.5") throw new Error(`${top.rows}`);
 * ```
 */
export class SparseIndexScorer {
  readonly #colPtr: Float64Array;
  readonly #postRow: Int32Array;
  readonly #postVal: Float32Array;
  readonly #rowL1: Float64Array;
  readonly #rowSq: Float64Array;
  readonly #nnz: Float64Array;
  /** Dense column of each index column, or −1. */
  readonly #denseOf: Int32Array;
  /** The dense block: rows × dd float32 (dd a multiple of 4), or empty. */
  readonly #dense: Float32Array;
  readonly #dd: number;
  readonly #denseNorm: Float64Array;
  readonly #maxDenseNorm: number;
  readonly #acc: Float64Array;
  readonly #dTile: Float64Array;
  readonly #rowStats: RowStats;

  /**
   * Indexes the columns of the CSR matrix (`indptr` float64, `rows` rows,
   * `d` columns). Throws {@linkcode NonFiniteError} on a NaN or infinite value.
   */
  constructor(
    readonly data: Float32Array,
    readonly indices: Int32Array,
    readonly indptr: Float64Array,
    readonly rows: number,
    readonly d: number,
    options: SparseIndexScorerOptions = {},
  ) {
    const nnz = indptr[rows];
    const counts = new Float64Array(d + 1);
    for (let k = 0; k < nnz; k++) counts[indices[k] + 1]++;
    // The dense block: the most frequent columns over the share.
    const share = options.denseShare ?? 1 / 16;
    const maxDense = options.maxDense ?? 1024;
    const frequent: number[] = [];
    if (Number.isFinite(share)) {
      const min = Math.max(1, share * rows);
      for (let c = 0; c < d; c++) if (counts[c + 1] >= min) frequent.push(c);
      frequent.sort((a, b) => counts[b + 1] - counts[a + 1] || a - b);
      frequent.length = Math.min(frequent.length, maxDense);
      frequent.sort((a, b) => a - b);
    }
    this.#denseOf = new Int32Array(d).fill(-1);
    frequent.forEach((c, t) => {
      this.#denseOf[c] = t;
      counts[c + 1] = 0;
    });
    const denseOf = this.#denseOf;
    // A dense column repeated in a row (CSR that is not canonical): the
    // repeats stay in the posting lists, so the block holds stored values only.
    const lastRow = new Float64Array(frequent.length).fill(-1);
    const repeat = (i: number, t: number): boolean => {
      if (lastRow[t] === i) return true;
      lastRow[t] = i;
      return false;
    };
    if (frequent.length > 0) {
      for (let i = 0; i < rows; i++) {
        for (let k = indptr[i]; k < indptr[i + 1]; k++) {
          const t = denseOf[indices[k]];
          if (t >= 0 && repeat(i, t)) counts[indices[k] + 1]++;
        }
      }
      lastRow.fill(-1);
    }
    const dd = frequent.length === 0 ? 0 : Math.max(4, (frequent.length + 3) & ~3);
    this.#dd = dd;
    for (let c = 0; c < d; c++) counts[c + 1] += counts[c];
    this.#colPtr = counts;
    const fill = counts.slice(0, d);
    const nPost = counts[d];
    this.#postRow = new Int32Array(nPost);
    this.#postVal = new Float32Array(nPost);
    this.#dense = new Float32Array(rows * dd);
    this.#denseNorm = new Float64Array(rows);
    this.#rowL1 = new Float64Array(rows);
    this.#rowSq = new Float64Array(rows);
    this.#nnz = new Float64Array(rows);
    let maxNorm = 0;
    for (let i = 0; i < rows; i++) {
      let l1 = 0, sq = 0, dsq = 0;
      for (let k = indptr[i]; k < indptr[i + 1]; k++) {
        const x = data[k], c = indices[k], t = denseOf[c];
        if (t >= 0 && !repeat(i, t)) {
          this.#dense[i * dd + t] = x;
          dsq += x * x;
        } else {
          const p = fill[c]++;
          this.#postRow[p] = i;
          this.#postVal[p] = x;
        }
        l1 += Math.abs(x);
        sq += x * x;
      }
      if (!Number.isFinite(sq)) throw new NonFiniteError(`row ${i}`);
      this.#rowL1[i] = l1;
      this.#rowSq[i] = sq;
      this.#nnz[i] = indptr[i + 1] - indptr[i];
      if (dd > 0) {
        this.#denseNorm[i] = Math.sqrt(dsq);
        if (this.#denseNorm[i] > maxNorm) maxNorm = this.#denseNorm[i];
      }
    }
    this.#maxDenseNorm = maxNorm;
    this.#acc = new Float64Array(ROW_CHUNK);
    this.#dTile = new Float64Array(ROW_CHUNK);
    this.#rowStats = {
      nnz: this.#nnz,
      sBound: this.#rowL1.map((l1, i) => 2 * (this.#nnz[i] + 2) * EPS * l1),
      rowSq: this.#rowSq,
      denseNorm: this.#denseNorm,
    };
  }

  /** Columns in the dense block (a multiple of 4, or 0). */
  get denseColumns(): number {
    return this.#dd;
  }

  /** Scores question `q` (1×d CSR) against every row, offering candidates to `top`. */
  score(q: CsrMatrix, top: TopK, metric: IndexMetric, simd = true): void {
    this.scoreMany([q], [top], metric, simd);
  }

  /**
   * Scores each question `qs[j]` (1×d CSR) against every row, offering
   * candidates to `tops[j]`. Uses the SIMD kernels for the dense block when
   * `simd` (default; the results are the same either way).
   */
  scoreMany(
    qs: readonly CsrMatrix[],
    tops: readonly TopK[],
    metric: IndexMetric,
    simd = true,
  ): void {
    for (let b = 0; b < qs.length; b += QUESTION_BLOCK) {
      this.#scoreBlock(
        qs.slice(b, b + QUESTION_BLOCK),
        tops.slice(b, b + QUESTION_BLOCK),
        metric,
        simd,
      );
    }
  }

  #scoreBlock(
    qs: readonly CsrMatrix[],
    tops: readonly TopK[],
    metric: IndexMetric,
    simd: boolean,
  ): void {
    const dd = this.#dd, rows = this.rows, l2 = metric === "l2";
    // Questions with a repeated column: the general scorer.
    const js: number[] = [];
    qs.forEach((q, j) => {
      const seen = new Set<number>();
      for (let k = q.indptr[0]; k < q.indptr[1]; k++) {
        if (seen.has(q.indices[k])) {
          const sq = new SparseQueries([q], this.d);
          try {
            sq.score(this.data, this.indices, this.indptr, 0, rows, [tops[j]], metric);
          } finally {
            sq.dispose();
          }
          return;
        }
        seen.add(q.indices[k]);
      }
      js.push(j);
    });
    const nq = js.length;
    if (nq === 0) return;
    // Per question: its dense-block part, the posting columns (cursors), norms.
    const qDense: Float32Array[] = [], qDenseNorm = new Float64Array(nq);
    const qMax = new Float64Array(nq), qSq = new Float64Array(nq), qnnz = new Float64Array(nq);
    const curFrom: number[] = [0];
    const cur: number[] = [], end: number[] = [], val: number[] = [];
    for (let u = 0; u < nq; u++) {
      const q = qs[js[u]];
      const v = new Float32Array(dd);
      let dsq = 0, sq = 0, mx = 0;
      for (let k = q.indptr[0]; k < q.indptr[1]; k++) {
        const c = q.indices[k], x = q.data[k], t = this.#denseOf[c];
        sq += x * x;
        mx = Math.max(mx, Math.abs(x));
        if (t >= 0) {
          v[t] = x;
          dsq += x * x;
        }
        if (this.#colPtr[c + 1] > this.#colPtr[c]) {
          cur.push(this.#colPtr[c]);
          end.push(this.#colPtr[c + 1]);
          val.push(x);
        }
      }
      curFrom.push(cur.length);
      qDense.push(v);
      qDenseNorm[u] = Math.sqrt(dsq);
      qMax[u] = mx;
      qSq[u] = sq;
      qnnz[u] = q.indptr[1] - q.indptr[0];
    }
    const cursor = new Float64Array(cur), ends = new Float64Array(end);
    const vals = new Float64Array(val);
    // The next row of each posting list, kept here: a list with nothing in a
    // tile is passed over without touching its postings.
    const next = cursor.map((p) => this.#postRow[p]);
    // The dense block on the SIMD kernels where float32 is safe, else float64 loops.
    const kernels = simd && dd > 0 ? simdKernels() : undefined;
    const simdU: number[] = [], slot = new Int32Array(nq).fill(-1);
    for (let u = 0; u < nq; u++) {
      if (kernels !== undefined && this.#maxDenseNorm * qDenseNorm[u] <= F32_SAFE) {
        slot[u] = simdU.length;
        simdU.push(u);
      }
    }
    const simdQs = simdU.map((u) => qDense[u]);
    // Each question's exact scorer (its column map made on first use).
    const exact = js.map((j) => {
      const q = qs[j];
      let cols: Map<number, number> | undefined;
      return (row: number) => this.#exact(q, cols ??= columnMap(q), row, l2);
    });
    const k = tops[0].k;
    const kth: Float64Array[] = js.map(() => new Float64Array(k).fill(-Infinity));
    const tile = this.#acc, dTile = this.#dTile;
    const postRow = this.#postRow, postVal = this.#postVal;
    const dense = this.#dense;
    for (let r0 = 0; r0 < rows; r0 += ROW_CHUNK) {
      const n = Math.min(ROW_CHUNK, rows - r0), r1 = r0 + n;
      const fast = simdQs.length > 0
        ? kernels!.scores(dense.subarray(r0 * dd, r1 * dd), n, dd, simdQs).scores
        : undefined;
      for (let u = 0; u < nq; u++) {
        // The posting columns' part of rows r0…r1-1, in float64.
        tile.fill(0, 0, n);
        const lists: Lists = { cursor, ends, vals, next };
        accumulate(tile, r0, r1, postRow, postVal, lists, curFrom[u], curFrom[u + 1]);
        // The dense block's part.
        const sl = slot[u];
        let dFactor = 0, dTiny = 0;
        if (dd === 0) dTile.fill(0, 0, n);
        else if (sl >= 0) {
          for (let i = 0, b = sl * n; i < n; i++) dTile[i] = fast![b + i];
          dFactor = 4 * (dd + 4) * U32 * qDenseNorm[u];
          dTiny = (dd + 8) * TINY;
        } else {
          denseTile(dense, dd, r0, n, qDense[u], dTile);
          dFactor = 2 * (dd + 2) * EPS * qDenseNorm[u];
        }
        rowPass(
          this.#rowStats,
          r0,
          n,
          tile,
          dTile,
          {
            qMax: qMax[u],
            qSq: qSq[u],
            qnnz: qnnz[u],
            dFactor,
            dTiny,
            l2,
          },
          kth[u],
          tops[js[u]],
          exact[u],
        );
      }
    }
  }

  /** The exact score of row `i` (merge's: the correctly rounded sum of the products). */
  #exact(q: CsrMatrix, cols: Map<number, number>, i: number, l2: boolean): number {
    const from = this.indptr[i], to = this.indptr[i + 1];
    const n = (to - from) * (l2 ? 2 : 1) + (l2 ? q.indptr[1] - q.indptr[0] : 0);
    const p = room(n);
    let np = 0;
    const data = this.data, indices = this.indices;
    for (let k = from; k < to; k++) {
      const v = cols.get(indices[k]);
      const x = data[k];
      if (v !== undefined) p[np++] = l2 ? 2 * x * v : x * v;
      if (l2) p[np++] = -(x * x);
    }
    if (l2) { for (let k = q.indptr[0]; k < q.indptr[1]; k++) p[np++] = -(q.data[k] * q.data[k]); }
    return fsum(p, np);
  }
}

/** Per-row figures of the index for the bounds. */
interface RowStats {
  /** Stored values. */
  readonly nnz: Float64Array;
  /** 2·(nnz+2)·ε·‖row‖₁: the posting part's bound over max|q|. */
  readonly sBound: Float64Array;
  readonly rowSq: Float64Array;
  readonly denseNorm: Float64Array;
}

/** Per-question figures for {@linkcode rowPass}. */
interface QuestionStats {
  readonly qMax: number;
  readonly qSq: number;
  readonly qnnz: number;
  readonly dFactor: number;
  readonly dTiny: number;
  readonly l2: boolean;
}

/** A block of questions' posting lists being walked: cursor, end, the question's value, next row. */
interface Lists {
  readonly cursor: Float64Array;
  readonly ends: Float64Array;
  readonly vals: Float64Array;
  readonly next: Float64Array;
}

/**
 * Adds the posting lists `from…to-1` of `lists` for rows `r0…r1-1` into
 * `tile` (float64), moving each cursor past them.
 */
function accumulate(
  tile: Float64Array,
  r0: number,
  r1: number,
  postRow: Int32Array,
  postVal: Float32Array,
  lists: Lists,
  from: number,
  to: number,
): void {
  const { cursor, ends, vals, next } = lists;
  for (let c = from; c < to; c++) {
    if (next[c] >= r1) continue;
    let p = cursor[c];
    const e = ends[c], v = vals[c];
    let row = next[c];
    for (;;) {
      tile[row - r0] += postVal[p] * v;
      if (++p === e) {
        row = Infinity;
        break;
      }
      row = postRow[p];
      if (row >= r1) break;
    }
    cursor[c] = p;
    next[c] = row;
  }
}

/** The dense block's part of rows `r0…r0+n-1` in float64 loops, into `out`. */
function denseTile(
  dense: Float32Array,
  dd: number,
  r0: number,
  n: number,
  q: Float32Array,
  out: Float64Array,
): void {
  for (let i = 0; i < n; i++) {
    let s = 0;
    const r = (r0 + i) * dd;
    for (let t = 0; t < dd; t++) s += dense[r + t] * q[t];
    out[i] = s;
  }
}

/**
 * Each row's fast score f (posting part `sAcc` + dense part `dAcc`) and
 * bound b, for rows `r0…r0+n-1` in order. f − b is a lower bound of the
 * row's exact score: `kth` keeps the k largest so far (ascending), and the
 * k-th of them (lowered by the rounding of f − b) is at most the k-th best
 * exact score of the rows so far. A row whose f + b reaches both that and
 * `top`'s threshold is scored exactly (`exact`) and offered to `top`; any
 * other cannot be in the top k.
 */
function rowPass(
  rs: RowStats,
  r0: number,
  n: number,
  sAcc: Float64Array,
  dAcc: Float64Array,
  qs: QuestionStats,
  kth: Float64Array,
  top: TopK,
  exact: (row: number) => number,
): void {
  const { nnz, sBound, rowSq, denseNorm } = rs;
  const { qMax, qSq, qnnz, dFactor, dTiny, l2 } = qs;
  const k = kth.length;
  let theta = Math.max(kth[0] - 4 * EPS * Math.abs(kth[0]), top.threshold);
  for (let i = 0; i < n; i++) {
    const row = r0 + i;
    const fs = sAcc[i], fd = dAcc[i];
    const ip = fs + fd;
    const bIp = sBound[row] * qMax + dFactor * denseNorm[row] + dTiny +
      2 * EPS * (Math.abs(fs) + Math.abs(fd));
    let f = ip, b = bIp;
    if (l2) {
      const s = rowSq[row];
      f = 2 * ip - s - qSq;
      b = 2 * bIp + 2 * (nnz[row] + qnnz + 4) * EPS * (s + qSq) +
        8 * EPS * (2 * Math.abs(ip) + s + qSq);
    }
    if (!(f + b >= theta)) continue;
    const lb = f - b;
    if (lb > kth[0]) {
      let p = 0;
      while (p + 1 < k && kth[p + 1] < lb) {
        kth[p] = kth[p + 1];
        p++;
      }
      kth[p] = lb;
    }
    top.offer(exact(row), row);
    theta = Math.max(kth[0] - 4 * EPS * Math.abs(kth[0]), top.threshold);
  }
}

/** A question's columns (no column repeated) → values. */
function columnMap(q: CsrMatrix): Map<number, number> {
  const m = new Map<number, number>();
  for (let k = q.indptr[0]; k < q.indptr[1]; k++) m.set(q.indices[k], q.data[k]);
  return m;
}
