/**
 * Exact dense open search with the 8-bit screening pass (`i8_scan.ts`):
 * {@linkcode i8RowsOf} (an index's quantized rows, made on first use and
 * kept with the index), {@linkcode scoreI8} (screening on this thread) and
 * {@linkcode scoreI8Threads} (screening on worker threads, each taking a
 * share of the questions). Either way the candidates are scored exactly
 * here, in row order, into the questions' `TopK`: the same rows, scores
 * and ties as scoring every row.
 *
 * @module
 */
import { halfTable } from "../dense_f64.ts";
import { type I8Metric, I8NonFinite, I8Rows } from "./i8_rows.ts";
import { exactScore, I8Screen, i8Takes } from "./i8_scan.ts";
import { KeptBest, type TopK } from "../index/exact/score.ts";
import { modulesReadable, RequestWorkers } from "../workers.ts";

/** What the 8-bit path needs of an index. */
export interface I8Source {
  /** The dense vectors: f32 values or f16 bits, row-major. */
  readonly dense: Float32Array | Uint16Array;
  /** Rows. */
  readonly phrases: number;
  /** Columns. */
  readonly d: number;
  /** Metric. */
  readonly metric: I8Metric;
  /**
   * Columns of the screening's head stage (`i8_scan.ts`, "Two stages"):
   * 0 screens in one stage; absent, the default for d.
   */
  readonly head?: number;
}

/** Scratch slots: this thread's, then up to this many workers'. */
export const I8_MAX_WORKERS = 8;
/** Questions screened in one call. */
const MAX_Q = 256;

const cache = new WeakMap<object, { rows: I8Rows; screen: I8Screen } | null>();

/**
 * The quantized rows of `key`'s vectors (made on first use, then kept
 * while `key` lives) and this thread's screen, or `undefined` where the
 * kernel cannot run. Throws `I8NonFinite` on a NaN or infinite value.
 */
export function i8RowsOf(
  key: object,
  src: I8Source,
): { rows: I8Rows; screen: I8Screen } | undefined {
  let c = cache.get(key);
  if (c === undefined) {
    const rows = I8Rows.create(
      src.dense,
      src.phrases,
      src.d,
      src.metric,
      1 + I8_MAX_WORKERS,
      MAX_Q,
      src.head,
    );
    c = rows === undefined ? null : { rows, screen: new I8Screen(rows, 0) };
    cache.set(key, c);
  }
  return c ?? undefined;
}

/**
 * Scores question `q`'s candidates (increasing rows) exactly into `top`,
 * as offering each one's exact score in row order would leave it: best
 * bound first. Each candidate's float64 sum of its exact products (the
 * terms of {@linkcode exactScore}) plus that sum's error bound is an upper
 * bound on its exact score; candidates are taken in decreasing order of
 * it, the exact score of each until the next bound is below the `k`-th
 * exact score kept, and the `k` best by (exact score, lower row) are
 * offered to `top` by increasing row. A candidate not among them has `k`
 * candidates ahead of it, so it could not stay in `top` either. With
 * `upper` (the screen's bound of each candidate, {@linkcode I8Screen}
 * `upper`), candidates are taken in decreasing order of it instead, and
 * the float64 bound is computed only for those it does not rule out.
 */
export function rescoreI8(
  src: I8Source,
  q: Float32Array,
  cands: Int32Array,
  top: TopK,
  upper?: Float64Array,
): void {
  const n = cands.length, k = top.k, { d, dense, metric } = src;
  if (n <= k) {
    for (let x = 0; x < n; x++) top.offer(exactScore(dense, cands[x], d, q, metric), cands[x]);
    return;
  }
  const ub = upper ?? Float64Array.from(cands, (i) => upperBound(src, q, i));
  const order = Array.from({ length: n }, (_, x) => x);
  order.sort((x, y) => ub[y] - ub[x] || x - y);
  const kept = new KeptBest(k);
  for (const x of order) {
    if (kept.full && !(ub[x] >= kept.worst)) break;
    if (upper !== undefined && kept.full && !(upperBound(src, q, cands[x]) >= kept.worst)) continue;
    const i = cands[x];
    kept.add(exactScore(dense, i, d, q, metric), i);
  }
  kept.offerByRow(top);
}

/**
 * A number at least row `row`'s exact score against `q`
 * ({@linkcode exactScore}): the float64 sum, in column order, of the same
 * terms (each exact in float64: a float32 or float16 value times a float32
 * one, or squared), plus `(m + 2)·2⁻⁵²` times the float64 sum of their
 * magnitudes (`m` terms; recursive summation errs by at most `γ_{m−1}` of
 * the exact sum of magnitudes, and the computed sum of magnitudes by as
 * much again), plus 2⁻¹⁰⁰⁰.
 */
function upperBound(src: I8Source, q: Float32Array, row: number): number {
  const { d, dense } = src, l2 = src.metric === "l2";
  const h = dense instanceof Uint16Array ? halfTable() : undefined;
  const m = l2 ? 3 * d : d, o = row * d;
  let s = 0, a = 0;
  for (let c = 0; c < d; c++) {
    const v = h !== undefined ? h[dense[o + c]] : dense[o + c], w = q[c];
    if (l2) {
      const t = 2 * v * w, vv = v * v, ww = w * w;
      s = s + t - vv - ww;
      a = a + Math.abs(t) + vv + ww;
    } else {
      const t = v * w;
      s += t;
      a += Math.abs(t);
    }
  }
  return s + a * ((m + 2) * 2 ** -52) + 2 ** -1000;
}

/**
 * Scores the questions `qs` with the 8-bit screening on this thread, into
 * `tops` (each `TopK` of the same k); returns the indices of the
 * questions it did not take ({@linkcode i8Takes}), for the float kernels.
 */
export function scoreI8(
  key: object,
  src: I8Source,
  qs: readonly Float32Array[],
  tops: readonly TopK[],
): number[] | undefined {
  const c = i8RowsOf(key, src);
  if (c === undefined) return undefined;
  const { taken, left } = split(qs);
  for (let b = 0; b < taken.length; b += MAX_Q) {
    const js = taken.slice(b, b + MAX_Q);
    const cands = c.screen.candidates(js.map((j) => qs[j]), tops[js[0]].k);
    const upper = c.screen.upper;
    js.forEach((j, x) => rescoreI8(src, qs[j], cands[x], tops[j], upper[x]));
  }
  return left;
}

function split(qs: readonly Float32Array[]): { taken: number[]; left: number[] } {
  const taken: number[] = [], left: number[] = [];
  qs.forEach((q, j) => (i8Takes(q) ? taken : left).push(j));
  return { taken, left };
}

/** Screening workers of one {@linkcode I8Rows}. */
class I8Workers {
  readonly #ws: RequestWorkers<{ id: number; cands: Int32Array[]; upper: Float64Array[] }>;

  constructor(rows: I8Rows, n: number) {
    this.#ws = new RequestWorkers(new URL("./i8_worker.ts", import.meta.url), n, {
      init: (i) => ({ init: { shared: rows.shared, slot: 1 + i } }),
    });
  }

  get size(): number {
    return this.#ws.size;
  }

  /**
   * The candidates of each question and their upper bounds
   * (`I8Screen.upper`), the questions dealt out in turn (worker `i` takes
   * questions `i, i + n, …`: neighbouring questions, often about one
   * article, cost alike, so the shares take about as long).
   */
  async run(
    qs: readonly Float32Array[],
    k: number,
  ): Promise<{ cands: Int32Array; upper: Float64Array }[]> {
    const n = Math.min(this.#ws.size, qs.length);
    const parts: Promise<{ cands: Int32Array[]; upper: Float64Array[] }>[] = [];
    for (let i = 0; i < n; i++) {
      parts.push(this.#ws.ask(i, { qs: qs.filter((_, j) => j % n === i), k }));
    }
    const got = await Promise.all(parts);
    return qs.map((_, j) => {
      const part = got[j % n], x = Math.floor(j / n);
      return { cands: part.cands[x], upper: part.upper[x] };
    });
  }

  close(): void {
    this.#ws.close();
  }
}

/** The files a screening worker loads (its module and its imports, type-only ones aside). */
const WORKER_MODULES = [
  "./i8_worker.ts",
  "./i8_scan.ts",
  "./i8_rows.ts",
  "./wasm_i8.ts",
  "./wasm_i8_head.ts",
  "./_i8.ts",
  "../dense_f64.ts",
  "../fsum.ts",
  "./wasm_encode.ts",
];

/** Whether this process may read the worker's modules (a worker loads them from disk). */
const workersAllowed = (): boolean => modulesReadable(import.meta.url, WORKER_MODULES);

const pools = new WeakMap<object, I8Workers>();

/**
 * {@linkcode scoreI8} with the screening on `threads` worker threads (at
 * most {@linkcode I8_MAX_WORKERS}; they stay until
 * {@linkcode closeI8Workers}). The same results. A process that may not
 * read the worker's module files (a permission-narrowed task) screens on
 * this thread.
 */
export async function scoreI8Threads(
  key: object,
  src: I8Source,
  qs: readonly Float32Array[],
  tops: readonly TopK[],
  threads: number,
): Promise<number[] | undefined> {
  const c = i8RowsOf(key, src);
  if (c === undefined) return undefined;
  // A process that may not read the worker's modules (a sandboxed task) screens here.
  if (!workersAllowed()) return scoreI8(key, src, qs, tops);
  const n = Math.min(I8_MAX_WORKERS, Math.max(1, Math.floor(threads)));
  let pool = pools.get(key);
  if (pool === undefined || pool.size !== n) {
    pool?.close();
    pool = new I8Workers(c.rows, n);
    pools.set(key, pool);
  }
  const { taken, left } = split(qs);
  const k = taken.length > 0 ? tops[taken[0]].k : 1;
  for (let b = 0; b < taken.length; b += MAX_Q * n) {
    const js = taken.slice(b, b + MAX_Q * n);
    const got = await pool.run(js.map((j) => qs[j]), k);
    js.forEach((j, x) => rescoreI8(src, qs[j], got[x].cands, tops[j], got[x].upper));
  }
  return left;
}

/** Ends the screening workers of `key` ({@linkcode scoreI8Threads}), if any. */
export function closeI8Workers(key: object): void {
  pools.get(key)?.close();
  pools.delete(key);
}

export { I8NonFinite };
