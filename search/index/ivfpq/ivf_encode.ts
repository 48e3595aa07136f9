/**
 * Encoding every row of an IVF-PQ index (`train.ts`) with memory that does
 * not grow with the number of rows.
 *
 * **Encode** ({@linkcode encodeBlocks}): rows are read in blocks, each row
 * given its nearest coarse centroid (its list) and the nearest codebook
 * entry of each sub-quantizer on its residual ({@linkcode encodeRows}); in
 * this thread, or on worker threads (`ivf_encode_worker.ts`) running the
 * same function on the same float32/float64 arithmetic (float16 vectors sent
 * to them as their bits, widened there: {@linkcode halfRows}), the results
 * taken back in block order: the bytes do not depend on the thread count.
 *
 * **One pool of workers a build** ({@linkcode encodePool}; `index` starts
 * it while it writes the exact files): the coarse k-means
 * ({@linkcode kmeansOnWorkers}: each worker assigns a share of the rows,
 * in shared memory, by Elkan's bounds, `kmeans.ts` `boundedAssign`, and
 * sums a share of the columns for the update unless the sums follow the
 * rows that moved), the sub-quantizers' k-means ({@linkcode trainCodebooks})
 * and the encoding run on the same workers.
 *
 * **Scratch files** ({@linkcode IvfScratch}): each block's list ids and its
 * row-major codes are appended to two files in the build's temporary folder
 * (`.ivf_lists.scratch`, `.ivf_codes.scratch`); the list sizes are counted as
 * they go.
 *
 * **Written in windows**: `list_rows.u32` and `codes.u8` (list-major;
 * sub-quantizer-major inside a list: code `m` of list `l`'s `i`-th row at
 * `offsets[l]·bpv + m·n_l + i`) are produced as consecutive windows of at
 * most `budget` bytes of the output file, each filled by one pass over the
 * scratch files (rows in order, a counter per list giving each row's place
 * in its list). A window covers whole lists or parts of them: a list larger
 * than the budget is simply spread over several windows, and every byte of
 * the output is written by exactly one window. Memory: one window, one
 * read block and the per-list counters, whatever the number of rows.
 *
 * @module
 */
import {
  BOUNDED_FROM,
  boundedApplies,
  type BoundedRows,
  boundedRows,
  boundedShare,
  type CentroidMoves,
  centroidShifts,
  exactSums,
  kmeans,
  kmeansWith,
  nearest,
  nearestAll,
  rowNorms,
} from "./kmeans.ts";
import { nearestKernel, SMALL_D } from "../../kernels/nearest.ts";
import { simdKernels } from "../../kernels/simd.ts";
import { widenHalf } from "../../dense_f64.ts";
import { modulesReadable, RequestWorkers } from "../../workers.ts";
import { type Projection, projectionOf } from "./projected.ts";

/** Centroids per sub-quantizer (8-bit codes). */
export const KSUB = 256;

/** The trained quantizers, as an encoder needs them. */
export interface EncodeModel {
  /** Vector dimension. */
  readonly d: number;
  /** Sub-quantizers. */
  readonly bpv: number;
  /** Lists. */
  readonly nlist: number;
  /** Coarse centroids, nlist × d. */
  readonly centroids: Float32Array;
  /** Codebooks, bpv × ksub × d/bpv. */
  readonly codebooks: Float32Array;
  /** Centroids per sub-quantizer (default {@linkcode KSUB}; 16 for 4-bit codes). */
  readonly ksub?: number;
}

/** An encode model with the norms and per sub-quantizer views the search for nearest entries uses. */
export interface PreparedModel extends EncodeModel {
  /** Squared norms of the centroids. */
  readonly cNorm: Float64Array;
  /** Codebook of each sub-quantizer (256 × d/bpv). */
  readonly books: readonly Float32Array[];
  /** Squared norms of each codebook's entries. */
  readonly norms: readonly Float64Array[];
  /** The same norms, one after another (bpv × ksub). */
  readonly allNorms: Float64Array;
}

/** The model with its norms and views (pure arithmetic: the same in every thread). */
export function prepareModel(m: EncodeModel): PreparedModel {
  const dsub = m.d / m.bpv, ks = m.ksub ?? KSUB;
  const books: Float32Array[] = [], norms: Float64Array[] = [];
  for (let s = 0; s < m.bpv; s++) {
    const b = m.codebooks.subarray(s * ks * dsub, (s + 1) * ks * dsub);
    books.push(b);
    norms.push(rowNorms(b, ks, dsub));
  }
  const allNorms = new Float64Array(m.bpv * ks);
  norms.forEach((v, s) => allNorms.set(v, s * ks));
  return { ...m, cNorm: rowNorms(m.centroids, m.nlist, m.d), books, norms, allNorms };
}

/** Each model's projection for the nearest list (`projected.ts`), made on its first use. */
const projections = new WeakMap<PreparedModel, Projection | null>();

/** `m`'s {@linkcode Projection} (`undefined` where it cannot serve), made once a model. */
function projectionFor(m: PreparedModel): Projection | undefined {
  let p = projections.get(m);
  if (p === undefined) {
    p = projectionOf(m.centroids, m.cNorm, m.nlist, m.d) ?? null;
    projections.set(m, p);
  }
  return p ?? undefined;
}

/** The residuals of the rows being encoded by this thread's kernel (grown as needed). */
let residuals = new Float32Array(0);

/**
 * Encodes the `n` rows of `x` (row-major float32): `lists[i]` the nearest
 * centroid (L2, ties to the lower list), `codes[i·bpv + m]` the nearest
 * entry of sub-quantizer `m` to the residual (ties to the lower entry).
 * In the WebAssembly kernel of `search/kernels/wasm_nearest.ts` where it
 * can run (and `useKernel`), with the same answers, bit for bit.
 *
 * @example
 * ```ts
 * import { encodeRows, KSUB, prepareModel } from "./ivf_encode.ts";
 * const codebooks = new Float32Array(2 * KSUB).fill(9);
 * codebooks[0] = 1; // sub-quantizer 0, entry 0: the value 1
 * codebooks[KSUB] = -1; // sub-quantizer 1, entry 0: the value −1
 * const m = prepareModel({
 *   d: 2, bpv: 2, nlist: 2, centroids: new Float32Array([0, 0, 10, 10]), codebooks,
 * });
 * const lists = new Uint32Array(1), codes = new Uint8Array(2);
 * encodeRows(new Float32Array([11, 9]), 1, m, lists, codes);
 * if (lists[0] !== 1 || codes.join() !== "0,0") throw new Error(`${lists} ${codes}`);
 * ```
 */
export function encodeRows(
  x: Float32Array,
  n: number,
  m: PreparedModel,
  lists: Uint32Array,
  codes: Uint8Array,
  useKernel = true,
): void {
  const { d, bpv, nlist, centroids, cNorm, books, norms } = m;
  const dsub = d / bpv, ks = m.ksub ?? KSUB;
  const kernel = useKernel ? nearestKernel() : undefined;
  if (kernel !== undefined && dsub <= SMALL_D && ks <= 256) {
    // The same answers in the WebAssembly kernels: every row's list (screened
    // in float32, nearestAll), the residuals (float32, as below; one buffer
    // per thread, reused), then every sub-quantizer's codes.
    nearestAll(x, n, d, centroids, cNorm, nlist, lists, projectionFor(m));
    if (d % 4 === 0) {
      // The residuals taken in the kernel's memory (f32x4.sub: the same float32 numbers).
      kernel.nearestSub(x, n, bpv, dsub, m.codebooks, m.allNorms, ks, codes, { lists, centroids });
      return;
    }
    if (residuals.length < n * d) residuals = new Float32Array(n * d);
    const r = residuals;
    for (let i = 0; i < n; i++) {
      const l = lists[i], xo = i * d, lo = l * d;
      for (let t = 0; t < d; t++) r[xo + t] = x[xo + t] - centroids[lo + t];
    }
    kernel.nearestSub(r, n, bpv, dsub, m.codebooks, m.allNorms, ks, codes);
    return;
  }
  if (kernel !== undefined) {
    // Wider sub-vectors (dsub > SMALL_D): every row's list, then each sub-quantizer's slice of
    // the residuals (float32, as below) gathered and given its nearest entries, all through
    // nearestAll (its kernels give `nearest`'s answers, bit for bit).
    nearestAll(x, n, d, centroids, cNorm, nlist, lists, projectionFor(m));
    if (residuals.length < n * dsub) residuals = new Float32Array(n * dsub);
    const sub = residuals.subarray(0, n * dsub), best = new Uint32Array(n);
    for (let s = 0; s < bpv; s++) {
      const so = s * dsub;
      for (let i = 0; i < n; i++) {
        const xo = i * d + so, lo = lists[i] * d + so, o = i * dsub;
        for (let t = 0; t < dsub; t++) sub[o + t] = x[xo + t] - centroids[lo + t];
      }
      nearestAll(sub, n, dsub, books[s], norms[s], ks, best);
      for (let i = 0; i < n; i++) codes[i * bpv + s] = best[i];
    }
    return;
  }
  const r = new Float32Array(d);
  for (let i = 0; i < n; i++) {
    const l = nearest(x, i * d, centroids, cNorm, nlist, d);
    lists[i] = l;
    for (let t = 0; t < d; t++) r[t] = x[i * d + t] - centroids[l * d + t];
    const co = i * bpv;
    for (let s = 0; s < bpv; s++) {
      codes[co + s] = nearest(r, s * dsub, books[s], norms[s], ks, dsub);
    }
  }
}

/** A message to an encode worker: the model once, then blocks to encode or k-means to run. */
export type EncodeRequest =
  | { readonly init: EncodeModel }
  | { readonly id: number; readonly model: EncodeModel }
  | { readonly id: number; readonly release: true }
  | { readonly id: number; readonly warm: true }
  | {
    readonly id: number;
    /** The rows: float32, or float16 bits (widened by the worker, {@linkcode halfRows}). */
    readonly x: Float32Array | Uint16Array;
    readonly n: number;
  }
  | {
    readonly id: number;
    readonly kmeans: {
      readonly x: Float32Array;
      readonly n: number;
      readonly d: number;
      readonly k: number;
      readonly iterations: number;
      readonly seed: number;
    };
  }
  | {
    readonly id: number;
    /**
     * A share of rows `x` (n × d, from row `from`; shared memory) and the
     * centroids: each row's nearest by {@linkcode boundedAssign}, its
     * bounds in `rows` (shared memory), `moves` undefined the first time.
     */
    readonly bounded: NearestShare & {
      readonly from: number;
      readonly rows: BoundedRows;
      readonly moves?: CentroidMoves;
    };
  }
  | {
    readonly id: number;
    /** Rows `[a0, a1)` of `kmeans.ts` halfDistances of the centroids `c` into `half` and `near` (shared memory). */
    readonly halves: {
      readonly c: Float32Array;
      readonly k: number;
      readonly d: number;
      readonly half: Float64Array;
      readonly near: Float64Array;
      readonly a0: number;
      readonly a1: number;
    };
  }
  | {
    readonly id: number;
    /** Rows `x` and their centroids `assign` (shared memory): columns `[t0, t1)` of `kmeans.ts` sumRows into `sums` (shared). */
    readonly sum: {
      readonly x: Float32Array;
      readonly n: number;
      readonly d: number;
      readonly assign: Uint32Array;
      readonly sums: Float64Array;
      readonly k: number;
      readonly t0: number;
      readonly t1: number;
    };
  }
  | {
    readonly id: number;
    /** Rows `x` (n × d, shared memory) and centroids: each row's nearest ({@linkcode nearestAll}). */
    readonly nearest: NearestShare;
  };

/** A share of a k-means's rows and its centroids, for an encode worker to assign. */
export interface NearestShare {
  /** The rows (n × d, shared memory). */
  readonly x: Float32Array;
  /** Their number. */
  readonly n: number;
  /** Their dimension. */
  readonly d: number;
  /** The centroids (k × d). */
  readonly c: Float32Array;
  /** Their squared norms. */
  readonly cn: Float64Array;
  /** Their number. */
  readonly k: number;
}

/** An encode worker's answer: a block's results, k-means centroids, or an error. */
export type EncodeReply =
  | { readonly id: number; readonly lists: Uint32Array; readonly codes: Uint8Array }
  | {
    readonly id: number;
    readonly nearest: Uint32Array;
    /** A bounded request's rows were not all finite: assigned plainly, no bounds kept. */
    readonly unbounded?: true;
  }
  | { readonly id: number; readonly centroids: Float32Array }
  | { readonly id: number; readonly summed: true }
  | { readonly id: number; readonly ready: true }
  | { readonly id: number; readonly error: string };

/**
 * Worker threads running `ivf_encode_worker.ts`, each request answered by
 * a promise: one pool for a whole build ({@linkcode encodePool}: the coarse
 * k-means, the sub-quantizers, the encoding), or one for a step.
 */
export class EncodeWorkers {
  readonly #ws: RequestWorkers<EncodeReply>;
  #turn = 0;

  constructor(n: number, model?: EncodeModel) {
    this.#ws = new RequestWorkers(new URL("./ivf_encode_worker.ts", import.meta.url), n, {
      ...(model !== undefined ? { init: () => ({ init: model } satisfies EncodeRequest) } : {}),
      // One failure fails the whole encoding: every request waiting, and any after.
      sticky: true,
      describe: (text, answer) =>
        answer ? `IVF-PQ encode worker: ${text}` : `IVF-PQ encode worker failed: ${text}`,
    });
  }

  /**
   * Sends a request (its array transferred) to the next worker in turn; its
   * answer (awaited later, in order: a failure meanwhile is not an
   * unhandled rejection).
   */
  call(request: Record<string, unknown>, transfer?: ArrayBuffer): Promise<EncodeReply> {
    return this.#ws.ask(this.#turn++, request, transfer !== undefined ? [transfer] : []);
  }

  /** The number of workers. */
  get size(): number {
    return this.#ws.size;
  }

  /** Sends every worker `request` (no arrays moved), once all have answered. */
  async all(request: Record<string, unknown>): Promise<void> {
    const asks = Array.from({ length: this.size }, (_, i) => this.#ws.ask(i, request));
    for (const a of asks) await a;
  }

  /**
   * Has every worker compile its kernels now (not awaited: a build starts
   * its pool early, while it writes the exact files).
   */
  warm(): void {
    for (let i = 0; i < this.size; i++) this.#ws.ask(i, { warm: true });
  }

  /** Ends every worker. */
  close(): void {
    this.#ws.close();
  }
}

/**
 * A pool of `threads` encode workers for a whole build, or `undefined`
 * (the work then runs in this thread) with `threads` 0 or without the
 * permission to start them ({@linkcode encodeWorkersAllowed}).
 */
export function encodePool(threads: number): EncodeWorkers | undefined {
  return threads > 0 && encodeWorkersAllowed() ? new EncodeWorkers(threads) : undefined;
}

/** The modules an encode worker loads (its own and its imports). */
const WORKER_MODULES = [
  "./ivf_encode_worker.ts",
  "./ivf_encode.ts",
  "./kmeans.ts",
  "../../kernels/nearest.ts",
  "../../kernels/wasm_nearest.ts",
  "../../kernels/wasm_encode.ts",
  "../../kernels/simd.ts",
  "../../kernels/wasm_simd.ts",
  "../../dense_f64.ts",
  "../exact/score.ts",
  "../../fsum.ts",
  "../../workers.ts",
];

/**
 * Whether this process may start encode workers: a worker reads its
 * modules' files, which a permission-narrowed process (a sandboxed `index`
 * task may read only its dump and write its index) may not; then the work
 * runs in this thread, with the same bytes.
 */
export function encodeWorkersAllowed(): boolean {
  return modulesReadable(import.meta.url, WORKER_MODULES);
}

/** An array that owns its whole buffer (a copy when it is a view), to be transferred. */
const own = <T extends Float32Array | Uint16Array>(x: T): T =>
  x.byteOffset !== 0 || x.byteLength !== x.buffer.byteLength ? x.slice() as T : x;

/**
 * Float16 values (bits) as float32, exactly as `dense_f64.ts` `halfTable`
 * widens them (in this thread's WebAssembly SIMD kernels where they run):
 * a new array, or the first `bits.length` values of `into` (at least that
 * long), reused block after block by an encode worker.
 */
export function halfRows(bits: Uint16Array, into?: Float32Array): Float32Array {
  const simd = simdKernels();
  return simd !== undefined ? simd.widen(bits, into) : widenHalf(bits, into);
}

/** Options of {@linkcode encodeBlocks}. */
export interface EncodeBlocksOptions {
  /** The trained quantizers. */
  readonly model: EncodeModel;
  /** Rows to encode: `[0, total)`. */
  readonly total: number;
  /** Rows per block. */
  readonly block: number;
  /** Worker threads (0: this thread). */
  readonly threads: number;
  /** The float32 rows `[from, to)`, row-major. */
  readonly rowsOf: (from: number, to: number) => Float32Array;
  /**
   * The same rows as float16 bits, where the vectors are float16: the
   * workers are sent these (half the bytes, none widened in this thread)
   * and widen them ({@linkcode halfRows}: the same float32 values).
   */
  readonly halfOf?: (from: number, to: number) => Uint16Array;
  /** Given each block's results, in block order. */
  readonly onBlock: (from: number, lists: Uint32Array, codes: Uint8Array) => void;
  /** Stops the work (rejecting with its reason) between blocks once aborted. */
  readonly signal?: AbortSignal;
  /** The build's workers (`threads` is then their number): used, not closed. */
  readonly pool?: EncodeWorkers;
}

/**
 * Encodes rows `[0, total)` block by block (see the module notes): in this
 * thread with `threads` 0 (or without the permission to start workers:
 * {@linkcode encodeWorkersAllowed}), else on that many workers, at most
 * `threads + 1` blocks in flight; `onBlock` is called in block order
 * either way, with the same bytes.
 */
export async function encodeBlocks(o: EncodeBlocksOptions): Promise<void> {
  const { total, block, model, pool } = o;
  if (pool === undefined && (o.threads <= 0 || !encodeWorkersAllowed())) {
    const p = prepareModel(model);
    for (let a = 0; a < total; a += block) {
      o.signal?.throwIfAborted();
      const b = Math.min(total, a + block);
      const lists = new Uint32Array(b - a), codes = new Uint8Array((b - a) * model.bpv);
      encodeRows(o.rowsOf(a, b), b - a, p, lists, codes);
      o.onBlock(a, lists, codes);
    }
    return;
  }
  const workers = pool ?? new EncodeWorkers(o.threads, model);
  const threads = workers.size;
  try {
    if (pool !== undefined) await pool.all({ model });
    const inFlight: { from: number; result: Promise<EncodeReply> }[] = [];
    for (let next = 0; next < total || inFlight.length > 0;) {
      o.signal?.throwIfAborted();
      while (next < total && inFlight.length < threads + 1) {
        const a = next, b = Math.min(total, a + block);
        const x = own(o.halfOf !== undefined ? o.halfOf(a, b) : o.rowsOf(a, b));
        const result = workers.call({ x, n: b - a }, x.buffer as ArrayBuffer);
        inFlight.push({ from: a, result });
        next = b;
      }
      const head = inFlight.shift()!;
      const r = await head.result as { lists: Uint32Array; codes: Uint8Array };
      o.onBlock(head.from, r.lists, r.codes);
    }
  } finally {
    if (pool === undefined) workers.close();
  }
}

/**
 * The PQ codebooks (bpv × 256 × d/bpv): sub-quantizer `m` the k-means
 * (`kmeans.ts`, 256 centroids, seed `seed + 1 + m`) of columns
 * `[m·d/bpv, (m+1)·d/bpv)` of the `n` residual rows `r`; in this thread
 * with `threads` 0 (or without the permission to start workers), else the sub-quantizers shared among that many
 * workers (each k-means the same arithmetic wherever it runs: the same
 * bytes). Rejects between sub-quantizers once `signal` is aborted.
 */
export async function trainCodebooks(
  r: Float32Array,
  n: number,
  d: number,
  bpv: number,
  o: {
    readonly iterations: number;
    readonly seed: number;
    readonly threads: number;
    readonly signal?: AbortSignal;
    /** Centroids per sub-quantizer (default {@linkcode KSUB}). */
    readonly ksub?: number;
    /** The build's workers (`threads` is then their number): used, not closed. */
    readonly pool?: EncodeWorkers;
  },
): Promise<Float32Array> {
  const dsub = d / bpv, KS = o.ksub ?? KSUB;
  const codebooks = new Float32Array(bpv * KS * dsub);
  const column = (m: number) => {
    const sub = new Float32Array(n * dsub);
    for (let i = 0; i < n; i++) {
      for (let t = 0; t < dsub; t++) sub[i * dsub + t] = r[i * d + m * dsub + t];
    }
    return sub;
  };
  if (o.pool === undefined && (o.threads <= 0 || !encodeWorkersAllowed())) {
    for (let m = 0; m < bpv; m++) {
      o.signal?.throwIfAborted();
      const c = kmeans(column(m), n, dsub, KS, {
        iterations: o.iterations,
        seed: o.seed + 1 + m,
      });
      codebooks.set(c, m * KS * dsub);
    }
    return codebooks;
  }
  const workers = o.pool ?? new EncodeWorkers(o.threads);
  const threads = workers.size;
  try {
    const inFlight: { m: number; result: Promise<EncodeReply> }[] = [];
    for (let m = 0; m < bpv || inFlight.length > 0;) {
      o.signal?.throwIfAborted();
      while (m < bpv && inFlight.length < threads + 1) {
        const x = column(m), seed = o.seed + 1 + m;
        const kmeans = { x, n, d: dsub, k: KS, iterations: o.iterations, seed };
        inFlight.push({ m, result: workers.call({ kmeans }, x.buffer) });
        m++;
      }
      const head = inFlight.shift()!;
      const c = (await head.result as { centroids: Float32Array }).centroids;
      codebooks.set(c, head.m * KS * dsub);
    }
  } finally {
    if (o.pool === undefined) workers.close();
  }
  return codebooks;
}

/**
 * The k-means of `n` rows `x` (`d` columns; {@linkcode kmeans}'s
 * centroids, bit for bit) with each assignment cut into `threads` shares of
 * rows, one a worker (the rows copied once into shared memory), then
 * `lists`, each row's nearest of the centroids found, the same way. On this
 * thread where workers cannot start or `threads` < 2.
 */
export async function kmeansOnWorkers(
  x: Float32Array,
  n: number,
  d: number,
  k: number,
  o: {
    readonly iterations: number;
    readonly seed: number;
    readonly threads: number;
    /** The build's workers (`threads` is then their number): used, not closed. */
    readonly pool?: EncodeWorkers;
  },
  lists: Uint32Array,
): Promise<Float32Array> {
  const threads = o.pool?.size ?? o.threads;
  if (threads < 2 || n < 2 * threads || (o.pool === undefined && !encodeWorkersAllowed())) {
    const c = kmeans(x, n, d, k, o);
    nearestAll(x, n, d, c, rowNorms(c, k, d), k, lists);
    return c;
  }
  // The rows in shared memory (the caller's, if they are there already).
  const shared = x.buffer instanceof SharedArrayBuffer
    ? x.subarray(0, n * d)
    : new Float32Array(new SharedArrayBuffer(n * d * 4));
  if (shared.buffer !== x.buffer) shared.set(x.subarray(0, n * d));
  const workers = o.pool ?? new EncodeWorkers(threads);
  const share = Math.ceil(n / threads);
  // Elkan's bounds where they apply (kmeans.ts boundedAssign: the same answers); a worker
  // whose rows are not all finite assigns them plainly, and the bounds are dropped.
  const kk = Math.min(k, n);
  let rows = boundedApplies(n, d, kk) ? boundedRows(n, kk, true) : undefined;
  const sessions = rows !== undefined;
  let prev: Float32Array | undefined, exact: boolean | undefined;
  let moves: CentroidMoves | undefined, it = 0;
  const assign = async (c: Float32Array, cn: Float64Array, kk: number, out: Uint32Array) => {
    const asks: Promise<EncodeReply>[] = [];
    // The first iterations plain (kmeans.ts BOUNDED_FROM), their answers copied to the
    // bounds' assignments (which the update's sums read).
    const plain = rows !== undefined && it++ < BOUNDED_FROM ? rows : undefined;
    moves = rows !== undefined && prev !== undefined
      ? centroidShifts(prev, c, kk, d, moves)
      : undefined;
    if (moves !== undefined) {
      // The half distances between centroids, a share of rows a worker (kmeans.ts halfDistances).
      const cs = new Float32Array(new SharedArrayBuffer(4 * kk * d));
      cs.set(c.subarray(0, kk * d));
      const per = Math.ceil(kk / threads), halves: Promise<EncodeReply>[] = [];
      for (let a0 = 0; a0 < kk; a0 += per) {
        const a1 = Math.min(kk, a0 + per);
        halves.push(
          workers.call({ halves: { c: cs, k: kk, d, half: moves.half, near: moves.near, a0, a1 } }),
        );
      }
      for (const h of halves) await h;
    }
    for (let a = 0; a < n; a += share) {
      const m = Math.min(share, n - a), cc = c.slice(0, kk * d);
      const nearest = {
        x: shared.subarray(a * d, (a + m) * d),
        n: m,
        d,
        c: cc,
        cn: cn.slice(),
        k: kk,
      };
      asks.push(
        rows === undefined || plain !== undefined
          ? workers.call({ nearest }, cc.buffer)
          : workers.call({
            bounded: {
              ...nearest,
              from: a,
              rows: boundedShare(rows, a, m, kk),
              ...(moves !== undefined ? { moves } : {}),
            },
          }, cc.buffer),
      );
    }
    if (rows !== undefined && plain === undefined) prev = c.slice(0, kk * d);
    // Whether the update's sums are exact in any order, found while the workers assign.
    exact ??= exactSums(shared, n, d);
    for (let a = 0, i = 0; a < n; a += share, i++) {
      const r = await asks[i] as { nearest: Uint32Array; unbounded?: true };
      out.set(r.nearest, a);
      if (r.unbounded) rows = undefined;
    }
    plain?.assign.set(out.subarray(0, n));
  };
  // The update's sums, a share of the columns a worker (with the bounds: the assignments are shared).
  const sums = rows !== undefined ? new Float64Array(new SharedArrayBuffer(8 * kk * d)) : undefined;
  const sum = async (kk: number) => {
    if (rows === undefined || sums === undefined) return undefined;
    const asks: Promise<EncodeReply>[] = [];
    const cols = Math.ceil(d / threads / 2) * 2;
    for (let t0 = 0; t0 < d; t0 += cols) {
      const t1 = Math.min(d, t0 + cols);
      const sum = { x: shared, n, d, assign: rows.assign, sums, k: kk, t0, t1 };
      asks.push(workers.call({ sum }));
    }
    for (const a of asks) await a;
    return sums;
  };
  try {
    const c = await kmeansWith(
      shared,
      n,
      d,
      k,
      {
        ...o,
        exactSums: () => exact ?? exactSums(shared, n, d),
      },
      assign,
      sum,
    );
    await assign(c, rowNorms(c, k, d), k, lists);
    return c;
  } finally {
    // A pool's workers drop their copies of the rows (its next steps need the memory).
    if (o.pool === undefined) workers.close();
    else if (sessions) await o.pool.all({ release: true }).catch(() => {});
  }
}

/** Reads exactly `into.length` bytes of `f` from byte `at`. */
function readAt(f: Deno.FsFile, at: number, into: Uint8Array): void {
  f.seekSync(at, Deno.SeekMode.Start);
  for (let o = 0; o < into.length;) {
    const n = f.readSync(into.subarray(o));
    if (n === null) throw new Error("an IVF-PQ scratch file ended early");
    o += n;
  }
}

function writeAll(f: Deno.FsFile, b: Uint8Array): void {
  for (let o = 0; o < b.length;) o += f.writeSync(b.subarray(o));
}

/** The scratch files' names, in the build's temporary folder. */
export const SCRATCH_FILES = [".ivf_lists.scratch", ".ivf_codes.scratch"] as const;

/**
 * The encoded rows on disk (see the module notes): append blocks in row
 * order, then read `list_rows.u32` and `codes.u8` back in windows; `remove`
 * deletes the files.
 *
 * @example
 * ```ts
 * import { IvfScratch } from "./ivf_encode.ts";
 * const dir = Deno.makeTempDirSync();
 * const s = new IvfScratch(dir, 2, 2);
 * // Rows 0, 1, 2 in lists 1, 0, 1; codes [r, 10 + r] for row r.
 * s.append(new Uint32Array([1, 0, 1]), new Uint8Array([0, 10, 1, 11, 2, 12]));
 * s.done();
 * const rows = [...s.rows(4)].flatMap((w) => [...w]);
 * const codes = [...s.codes(3)].flatMap((w) => [...w]);
 * s.remove();
 * if (rows.join() !== "1,0,2" || codes.join() !== "1,11,0,2,10,12") throw new Error(`${rows} ${codes}`);
 * if ([...Deno.readDirSync(dir)].length !== 0) throw new Error("scratch files left");
 * Deno.removeSync(dir);
 * ```
 */
export class IvfScratch {
  readonly #lists: Deno.FsFile;
  readonly #codes: Deno.FsFile;
  readonly #paths: string[];
  readonly #count: Float64Array;
  #rows = 0;
  #offsets?: Float64Array;

  /** Creates the scratch files in `dir` (replacing old ones). */
  constructor(readonly dir: string, readonly nlist: number, readonly bpv: number) {
    this.#paths = SCRATCH_FILES.map((n) => `${dir}/${n}`);
    const open = (p: string) =>
      Deno.openSync(p, { read: true, write: true, create: true, truncate: true });
    this.#lists = open(this.#paths[0]);
    try {
      this.#codes = open(this.#paths[1]);
    } catch (e) {
      this.#lists.close();
      throw e;
    }
    this.#count = new Float64Array(nlist);
  }

  /** Appends the next rows: their list ids and row-major codes (bpv per row). */
  append(lists: Uint32Array, codes: Uint8Array): void {
    if (this.#offsets !== undefined) throw new Error("IvfScratch: append after done");
    for (let i = 0; i < lists.length; i++) this.#count[lists[i]]++;
    writeAll(this.#lists, new Uint8Array(lists.buffer, lists.byteOffset, lists.byteLength));
    writeAll(this.#codes, codes);
    this.#rows += lists.length;
  }

  /** Ends the appending; the list offsets (nlist + 1 positions). */
  done(): Float64Array {
    if (this.#offsets === undefined) {
      const off = new Float64Array(this.nlist + 1);
      for (let l = 0; l < this.nlist; l++) off[l + 1] = off[l] + this.#count[l];
      this.#offsets = off;
    }
    return this.#offsets;
  }

  /** Rows appended. */
  get total(): number {
    return this.#rows;
  }

  /** Passes over the scratch rows in blocks: `(first row, its lists, codes read?)`. */
  *#blocks(
    block: number,
    wantCodes: (lists: Uint32Array) => boolean,
  ): Generator<{ from: number; lists: Uint32Array; codes?: Uint8Array }> {
    const lb = new Uint8Array(block * 4), cb = new Uint8Array(block * this.bpv);
    for (let a = 0; a < this.#rows; a += block) {
      const n = Math.min(this.#rows, a + block) - a;
      readAt(this.#lists, a * 4, lb.subarray(0, n * 4));
      const lists = new Uint32Array(lb.buffer, 0, n);
      if (!wantCodes(lists)) {
        yield { from: a, lists };
        continue;
      }
      const codes = cb.subarray(0, n * this.bpv);
      readAt(this.#codes, a * this.bpv, codes);
      yield { from: a, lists, codes };
    }
  }

  /**
   * `list_rows.u32` in windows of at most `budget` bytes (at least one
   * row): the global row at each position, rows grouped by list, increasing
   * within a list.
   */
  *rows(budget: number, block = 16384): Generator<Uint32Array> {
    const off = this.done(), total = this.#rows;
    const per = Math.max(1, Math.floor(budget / 4));
    for (let p0 = 0; p0 < total; p0 += per) {
      const p1 = Math.min(total, p0 + per);
      const out = new Uint32Array(p1 - p0);
      const fill = off.slice(0, this.nlist);
      for (const { from, lists } of this.#blocks(block, () => false)) {
        for (let i = 0; i < lists.length; i++) {
          const p = fill[lists[i]]++;
          if (p >= p0 && p < p1) out[p - p0] = from + i;
        }
      }
      yield out;
    }
  }

  /**
   * `codes.u8` in windows of at most `budget` bytes (see the module notes):
   * each window one pass over the scratch files, reading the codes of a
   * block only when one of its rows has a byte in the window.
   */
  *codes(budget: number, block = 16384): Generator<Uint8Array> {
    const off = this.done(), bpv = this.bpv, nlist = this.nlist;
    const size = this.#rows * bpv, per = Math.max(1, Math.floor(budget));
    for (let w0 = 0; w0 < size; w0 += per) {
      const w1 = Math.min(size, w0 + per), width = w1 - w0;
      const out = new Uint8Array(width);
      // The lists with bytes in the window: [lo, hi).
      let lo = 0;
      while (lo < nlist && off[lo + 1] * bpv <= w0) lo++;
      let hi = lo;
      while (hi < nlist && off[hi] * bpv < w1) hi++;
      const seen = new Float64Array(nlist);
      const touches = (lists: Uint32Array) => {
        for (let i = 0; i < lists.length; i++) if (lists[i] >= lo && lists[i] < hi) return true;
        return false;
      };
      for (const { lists, codes } of this.#blocks(block, touches)) {
        if (codes === undefined) continue;
        for (let i = 0; i < lists.length; i++) {
          const l = lists[i];
          if (l < lo || l >= hi) continue;
          const n = off[l + 1] - off[l];
          // Code m of this row goes to base + m·n of the window.
          const base = off[l] * bpv + seen[l]++ - w0;
          const mlo = base >= 0 ? 0 : Math.ceil(-base / n);
          const mhi = Math.min(bpv, Math.ceil((width - base) / n));
          const co = i * bpv;
          for (let m = mlo; m < mhi; m++) out[base + m * n] = codes[co + m];
        }
      }
      yield out;
    }
  }

  /**
   * `codes.u8` of a 4-bit index (`--pq-bits 4`: the scratch holds one code
   * 0 … 15 a byte, `bpv` of them a row, here the sub-quantizers) in the
   * blocked layout of `search/kernels/wasm_fastscan.ts`: each list padded
   * to whole blocks of 32 rows (the padding's codes 0), block `b` of list
   * `l` at `(blockStart[l] + b) · 16 · bpv`, where `blockStart` counts the
   * blocks of the lists before; in windows of whole blocks, at most
   * `budget` bytes (at least one block), one pass over the scratch files
   * each.
   */
  *codes4(budget: number, block = 16384): Generator<Uint8Array> {
    const off = this.done(), M = this.bpv, nlist = this.nlist, bb = 16 * M;
    const start = new Float64Array(nlist + 1);
    for (let l = 0; l < nlist; l++) start[l + 1] = start[l] + Math.ceil((off[l + 1] - off[l]) / 32);
    const total = start[nlist], per = Math.max(1, Math.floor(budget / bb));
    for (let b0 = 0; b0 < total; b0 += per) {
      const b1 = Math.min(total, b0 + per);
      const out = new Uint8Array((b1 - b0) * bb);
      let lo = 0;
      while (lo < nlist && start[lo + 1] <= b0) lo++;
      let hi = lo;
      while (hi < nlist && start[hi] < b1) hi++;
      const seen = new Float64Array(nlist);
      const touches = (lists: Uint32Array) => {
        for (let i = 0; i < lists.length; i++) if (lists[i] >= lo && lists[i] < hi) return true;
        return false;
      };
      for (const { lists, codes } of this.#blocks(block, touches)) {
        if (codes === undefined) continue;
        for (let i = 0; i < lists.length; i++) {
          const l = lists[i];
          if (l < lo || l >= hi) continue;
          const p = seen[l]++, b = start[l] + (p >> 5);
          if (b < b0 || b >= b1) continue;
          const base = (b - b0) * bb + (p & 15), co = i * M;
          // A block's rows 0-15 come first (low nibbles, written), then 16-31 (high, or-ed in).
          if (p & 16) {
            for (let m = 0; m < M; m++) out[base + 16 * m] |= codes[co + m] << 4;
          } else {
            for (let m = 0; m < M; m++) out[base + 16 * m] = codes[co + m];
          }
        }
      }
      yield out;
    }
  }

  /** Closes and deletes the scratch files (idempotent). */
  remove(): void {
    for (const f of [this.#lists, this.#codes]) {
      try {
        f.close();
      } catch { /* closed */ }
    }
    for (const p of this.#paths) {
      try {
        Deno.removeSync(p);
      } catch (e) {
        if (!(e instanceof Deno.errors.NotFound)) throw e;
      }
    }
  }
}
