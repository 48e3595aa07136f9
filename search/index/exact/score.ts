/**
 * Exact top-k scoring over many phrases: {@linkcode TopK} (one question's
 * best rows) and {@linkcode scoreDense} (a block of dense rows on the SIMD
 * kernels of `search/kernels/simd.ts`, or the float64 loops of
 * `search/dense_f64.ts`); the sparse scorers (CSR rows and indexes) are
 * `sparse_scorer.ts`'s, on the same scores, bounds and {@linkcode TopK}.
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
import { denseScores, sumSquares, widenHalf } from "../../dense_f64.ts";
import { fsum } from "../../fsum.ts";
import { simdKernels } from "../../kernels/simd.ts";
import type { IndexMetric } from "../format.ts";

/** Float64's machine epsilon (2⁻⁵²): the unit of the float64 passes' error bounds. */
export const EPS = 2 ** -52;
/** Float32's unit roundoff (2⁻²⁴): the unit of the float32 (SIMD) passes' error bounds. */
export const U32 = 2 ** -24;
/** The largest ‖row‖·max|q| scored in float32 (beyond it, the float64 loops): no overflow. */
export const F32_SAFE = 2 ** 100;
/** The float32 pass's absolute error per term (what underflows float32's normal range). */
export const TINY = 2 ** -140;

/**
 * One question's best `k` rows, best first: by exact score, then by the
 * order they were offered (rows are offered in increasing order, so ties go
 * to the first row). A binary heap holds them while they are offered (each
 * offer O(log k), so a `k` of every phrase costs no more than sorting them);
 * {@linkcode TopK.scores} and {@linkcode TopK.rows} are sorted on first read.
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
  // The heap: its root is the worst kept row (the lowest score; of equal
  // scores, the one offered last), the one a better row replaces.
  readonly #score: number[] = [];
  readonly #row: number[] = [];
  readonly #seq: number[] = [];
  #offered = 0;
  #sorted: { scores: number[]; rows: number[] } | undefined;

  /**
   * An empty list that keeps the `k` best rows offered.
   *
   * @param k how many rows to keep (at least 1)
   */
  constructor(readonly k: number) {}

  /**
   * A list of `k` holding the pairs `scores[from … to]`, `rows[…]`, given
   * best first as a `TopK`'s {@linkcode TopK.scores} and {@linkcode
   * TopK.rows} give them (at most `k`; of equal scores, in the order they
   * were offered): the same kept pairs, order and threshold as that list,
   * without offering them one by one (a search worker's answer,
   * `ivf_search.ts` `unpackTops`). Rows offered later go after them, as
   * rows offered after those pairs would.
   *
   * @example
   * ```ts
   * import { TopK } from "./score.ts";
   * const t = new TopK(3);
   * for (const [s, r] of [[1, 0], [3, 1], [3, 2], [2, 3]]) t.offer(s, r);
   * const u = TopK.ofBest(3, t.scores, t.rows);
   * if (u.rows.join() !== "1,2,3" || u.threshold !== 2) throw new Error(u.rows.join());
   * u.offer(3, 4); // ties with rows 1 and 2: after them
   * if (u.rows.join() !== "1,2,4") throw new Error(u.rows.join());
   * ```
   */
  static ofBest(
    k: number,
    scores: ArrayLike<number>,
    rows: ArrayLike<number>,
    from = 0,
    to: number = scores.length,
  ): TopK {
    const t = new TopK(k), n = to - from;
    if (n > k) throw new RangeError(`${n} pairs for a TopK of ${k}`);
    // Worst first (the pair i of the list at n - 1 - i, offered i-th): a sorted array is a
    // heap whose root is the worst, each parent worse than (or tied and offered after) its
    // children.
    // (Arrays filled from the front, by push: packed, not holey.)
    const s = t.#score, r = t.#row, q = t.#seq;
    const best: { scores: number[]; rows: number[] } = { scores: [], rows: [] };
    for (let i = 0; i < n; i++) {
      const x = scores[from + i];
      if (i > 0 && !(x <= best.scores[i - 1])) throw new RangeError(`pairs not best first at ${i}`);
      best.scores.push(x);
      best.rows.push(rows[from + i]);
    }
    for (let w = 0; w < n; w++) {
      s.push(best.scores[n - 1 - w]);
      r.push(best.rows[n - 1 - w]);
      q.push(n - 1 - w);
    }
    t.#offered = n;
    t.#sorted = best;
    return t;
  }

  /** Exact scores, best first. */
  get scores(): number[] {
    return this.#order().scores;
  }

  /** Their rows. */
  get rows(): number[] {
    return this.#order().rows;
  }

  /** The score a new row must beat: the k-th best, or −∞ while fewer than k. */
  get threshold(): number {
    return this.#score.length < this.k ? -Infinity : this.#score[0];
  }

  /** Offers row `row` (larger than every row offered before) with its exact score. */
  offer(score: number, row: number): void {
    const s = this.#score, r = this.#row, q = this.#seq;
    const n = s.length, seq = this.#offered++;
    if (n >= this.k) {
      if (!(score > s[0])) return;
      this.#down(score, row, seq, n);
    } else {
      // Up from a new leaf: the parents better than the new row move down.
      let i = n;
      s.push(score), r.push(row), q.push(seq);
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (!(s[p] > score || (s[p] === score && q[p] < seq))) break;
        s[i] = s[p], r[i] = r[p], q[i] = q[p];
        i = p;
      }
      s[i] = score, r[i] = row, q[i] = seq;
    }
    this.#sorted = undefined;
  }

  /** Puts the row at the root (replacing the worst) and sifts it down a heap of `n`. */
  #down(score: number, row: number, seq: number, n: number): void {
    const s = this.#score, r = this.#row, q = this.#seq;
    let i = 0;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      // The worse child: lower score, or of equal scores the later offered.
      if (c + 1 < n && (s[c + 1] < s[c] || (s[c + 1] === s[c] && q[c + 1] > q[c]))) c++;
      if (!(s[c] < score || (s[c] === score && q[c] > seq))) break;
      s[i] = s[c], r[i] = r[c], q[i] = q[c];
      i = c;
    }
    s[i] = score, r[i] = row, q[i] = seq;
  }

  /** The kept rows best first (computed once after the last offer). */
  #order(): { scores: number[]; rows: number[] } {
    if (this.#sorted !== undefined) return this.#sorted;
    const s = this.#score, r = this.#row, q = this.#seq;
    const at = s.map((_, i) => i).sort((a, b) => s[b] - s[a] || q[a] - q[b]);
    this.#sorted = { scores: at.map((i) => s[i]), rows: at.map((i) => r[i]) };
    return this.#sorted;
  }
}

/** Thrown on a NaN or infinite value in the vectors (a corrupt index): the caller names the file. */
export class NonFiniteError extends Error {}

let prods = new Float64Array(1024);
/** A float64 scratch of at least `n` values, shared by the scorers (grown on demand, never shrunk). */
export function room(n: number): Float64Array {
  if (prods.length < n) prods = new Float64Array(Math.max(n, prods.length * 2));
  return prods;
}

/**
 * What the fast pass of {@linkcode scoreDense} needs of each row of a dense
 * matrix that does not depend on the question, computed once
 * ({@linkcode denseRowStats}) instead of on every call.
 */
export interface DenseRowStats {
  /** Each row's float64 sum of squares, as the SIMD kernel sums them. */
  readonly squares: Float64Array;
  /** Their square roots. */
  readonly norms: Float64Array;
}

/**
 * The row squares and norms of `rows` dense rows (`a`: f32 values or f16
 * bits, row-major, `d` columns) on the SIMD kernels, `chunk` rows at a time
 * (16 bytes a row; the same values {@linkcode scoreDense} computes per
 * call), or `undefined` where the kernels do not apply (no SIMD, d not a
 * multiple of 4). Throws {@linkcode NonFiniteError} on a NaN or infinite
 * value.
 *
 * @example
 * ```ts
 * import { denseRowStats } from "./score.ts";
 * const s = denseRowStats(new Float32Array([3, 4, 0, 0, 1, 1, 1, 1]), 2, 4);
 * if (s !== undefined && s.norms.join() !== "5,2") throw new Error(s.norms.join());
 * ```
 */
export function denseRowStats(
  a: Float32Array | Uint16Array,
  rows: number,
  d: number,
  chunk = 2048,
): DenseRowStats | undefined {
  const k = d >= 4 && d % 4 === 0 ? simdKernels() : undefined;
  if (k === undefined) return undefined;
  const squares = new Float64Array(rows), norms = new Float64Array(rows);
  for (let r = 0; r < rows; r += chunk) {
    const n = Math.min(chunk, rows - r);
    const sq = k.scores(a.subarray(r * d, (r + n) * d), n, d, []).squares;
    for (let i = 0; i < n; i++) {
      if (!Number.isFinite(sq[i])) throw new NonFiniteError(`row ${r + i}`);
      squares[r + i] = sq[i];
      norms[r + i] = Math.sqrt(sq[i]);
    }
  }
  return { squares, norms };
}

/** What the dense scorers' exact pass needs: float rows, squares, fast scores and their error terms. */
interface DensePrep {
  readonly A: Float32Array;
  readonly S: Float64Array;
  readonly F: Float32Array | Float64Array;
  readonly norms: Float64Array;
  readonly factor: number;
  readonly tiny: number;
  readonly qNorm: Float64Array;
  readonly qSq: Float64Array;
}

/** The fast scores of {@linkcode scoreDense} and the terms of their error bounds. */
function densePrep(
  a: Float32Array | Uint16Array,
  n: number,
  d: number,
  rowBase: number,
  qs: readonly Float32Array[],
  simd: boolean,
  rowStats: DenseRowStats | undefined,
): DensePrep {
  const nq = qs.length;
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
  let norms: Float64Array | undefined;
  let factor = 0, tiny = 0;
  const k = simd && d >= 4 && d % 4 === 0 ? simdKernels() : undefined;
  if (k !== undefined) {
    const r = k.scores(a, n, d, qs, { squares: rowStats === undefined });
    let maxNorm = 0;
    if (rowStats !== undefined) {
      sq = rowStats.squares.subarray(rowBase, rowBase + n);
      norms = rowStats.norms.subarray(rowBase, rowBase + n);
      for (let i = 0; i < n; i++) if (sq[i] > maxNorm) maxNorm = sq[i];
    } else {
      for (let i = 0; i < n; i++) {
        if (!Number.isFinite(r.squares[i])) throw new NonFiniteError(`row ${rowBase + i}`);
        if (r.squares[i] > maxNorm) maxNorm = r.squares[i];
      }
      sq = r.squares;
    }
    rows = r.rows;
    if (Math.sqrt(maxNorm) * maxQ <= F32_SAFE) {
      fast = r.scores;
      factor = 4 * (d + 4) * U32;
      tiny = (d + 8) * TINY;
    }
  }
  if (fast === undefined) {
    if (rows === undefined) {
      if (a instanceof Float32Array) rows = a;
      else rows = widenHalf(a.subarray(0, n * d));
    } else rows = rows.slice();
    sq = sumSquares(rows, n, d);
    norms = undefined;
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
  if (norms === undefined) {
    norms = new Float64Array(n);
    for (let i = 0; i < n; i++) norms[i] = Math.sqrt(sq![i]);
  }
  return { A: rows!, S: sq!, F: fast, norms, factor, tiny, qNorm, qSq };
}

/**
 * Scores `n` dense rows (`a`: f32 values or f16 bits, row-major, `d`
 * columns; global rows `rowBase…`) against the questions `qs` (float32,
 * length d each), offering candidates to `tops[j]` (see the module notes).
 * Uses the WebAssembly SIMD kernels when `simd` and d is a multiple of 4;
 * there, `rowStats` (of the whole matrix `a` is part of, by global row:
 * {@linkcode denseRowStats}) spares the kernel the row squares. The results
 * are the same with or without it.
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
  rowStats?: DenseRowStats,
): void {
  const nq = qs.length;
  if (n === 0 || nq === 0) return;
  const { A, S, F, norms, factor, tiny, qNorm, qSq } = densePrep(
    a,
    n,
    d,
    rowBase,
    qs,
    simd,
    rowStats,
  );
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

/**
 * The best `k` (score, row) pairs kept while re-scoring best bound first
 * ({@linkcode scoreDenseBest}, `search/kernels/i8_pool.ts` `rescoreI8`): by
 * exact score, then lower row, worst last; {@linkcode KeptBest.offerByRow}
 * then offers them to a {@linkcode TopK} by increasing row, which leaves it
 * as offering every candidate in row order would.
 *
 * @example
 * ```ts
 * import { KeptBest, TopK } from "./score.ts";
 * const kept = new KeptBest(2);
 * kept.add(1, 7);
 * kept.add(3, 9);
 * kept.add(3, 4); // ties with row 9: the lower row goes first
 * if (!kept.full || kept.worst !== 3) throw new Error(String(kept.worst));
 * const top = new TopK(2);
 * kept.offerByRow(top);
 * if (top.rows.join() !== "4,9") throw new Error(top.rows.join());
 * ```
 */
export class KeptBest {
  readonly #row: number[] = [];
  readonly #score: number[] = [];
  constructor(readonly k: number) {}

  /** Whether `k` pairs are kept. */
  get full(): boolean {
    return this.#row.length === this.k;
  }

  /** The `k`-th score kept (once {@linkcode KeptBest.full}): a row whose bound is below it cannot enter. */
  get worst(): number {
    return this.#score[this.k - 1];
  }

  /** Keeps (`score`, `row`) if it is among the best `k` so far. */
  add(score: number, row: number): void {
    const R = this.#row, S = this.#score, k = this.k;
    let at = R.length;
    while (at > 0 && (S[at - 1] < score || (S[at - 1] === score && R[at - 1] > row))) at--;
    if (at >= k) return;
    R.splice(at, 0, row);
    S.splice(at, 0, score);
    if (R.length > k) {
      R.pop();
      S.pop();
    }
  }

  /** Offers the kept pairs to `top` by increasing row. */
  offerByRow(top: TopK): void {
    const byRow = this.#row.map((r, x) => [r, this.#score[x]]).sort((a, b) => a[0] - b[0]);
    for (const [r, v] of byRow) top.offer(v, r);
  }
}

/**
 * {@linkcode scoreDense} for one question into an empty `top`, the rows
 * taken best bound first: each row's fast score plus its error bound (the
 * same terms), rows in decreasing order of it, the exact score (`fsum`)
 * of each until the next bound is below the `k`-th exact score kept; then
 * the `k` best by (exact score, lower row) offered to `top` by increasing
 * row. `top` ends as `scoreDense` leaves it (the same rows, scores and
 * order), with fewer exact sums when the best rows are not the first.
 *
 * @example
 * ```ts
 * import { scoreDenseBest, TopK } from "./score.ts";
 * const top = new TopK(1);
 * scoreDenseBest(new Float32Array([1, 0, 0, 1, 1, 1, 0, 0]), 4, 2, new Float32Array([1, 2]), top, "ip");
 * if (top.rows[0] !== 2 || top.scores[0] !== 3) throw new Error(`${top.rows}`);
 * ```
 */
export function scoreDenseBest(
  a: Float32Array | Uint16Array,
  n: number,
  d: number,
  q: Float32Array,
  top: TopK,
  metric: IndexMetric,
  simd = true,
): void {
  if (n === 0) return;
  const { A, S, F, norms, factor, tiny, qNorm, qSq } = densePrep(a, n, d, 0, [q], simd, undefined);
  const l2 = metric === "l2";
  const sqFactor = 4 * (d + 4) * U32;
  const scale = factor * qNorm[0], qs2 = qSq[0];
  const bound = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const ip = F[i];
    const bIp = scale * norms[i] + tiny;
    bound[i] = l2
      ? (2 * ip - S[i] - qs2) +
        (2 * bIp + sqFactor * (S[i] + qs2) + 8 * EPS * (2 * Math.abs(ip) + S[i] + qs2) + tiny)
      : ip + bIp;
  }
  // Rows whose bound is not ≥ anything (NaN) are never scored, as in scoreDense.
  const order: number[] = [];
  for (let i = 0; i < n; i++) if (bound[i] >= -Infinity) order.push(i);
  order.sort((x, y) => bound[y] - bound[x] || x - y);
  const kept = new KeptBest(top.k);
  for (const i of order) {
    if (kept.full && !(bound[i] >= kept.worst)) break;
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
    kept.add(v, i);
  }
  kept.offerByRow(top);
}
