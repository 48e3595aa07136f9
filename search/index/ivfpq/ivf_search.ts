/**
 * The search of an `ivf-pq` index (`ivfpq.ts`: its files, its data and each
 * question's approximate candidates): {@linkcode scoreIvf} and
 * {@linkcode scoreIvfSync} take each question's candidates
 * (`ivfCandidatesBatch`) and, with `refine` > 0, re-score them exactly from
 * the index's vectors (merge's scores and tie rule: `search/kernels/wasm_exact.ts`'s
 * `ExactRows`, else `search/index/exact/score.ts`'s `scoreDenseBest`), keeping
 * the best `topK`. With `threads` > 1 the questions are cut into pieces
 * that `threads` search workers (`ivf_worker.ts`) take from one queue as
 * each is free, this thread only handing them out and gathering the
 * answers (the same answers); calls made before the last is answered wait
 * in the same queue (the `search` stage keeps blocks under way that way:
 * `search/in_order.ts`). {@linkcode closeIvfWorkers} ends the workers.
 *
 * @module
 */
import { NonFiniteError, scoreDenseBest, TopK } from "../exact/score.ts";
import { simdKernels } from "../../kernels/simd.ts";
import { ExactRows } from "../../kernels/wasm_exact.ts";
import { rowsMemoryOf } from "../../kernels/wasm_gather.ts";
import { defaultNprobe, MAX_SEARCH_THREADS } from "../defaults.ts";
import { modulesReadable, RequestWorkers } from "../../workers.ts";
import { InputError } from "../../../io/errors.ts";
import {
  type Cands,
  ivfCandidatesBatch,
  type IvfData,
  type IvfIndexView,
  type IvfQueryOptions,
  loadIvf,
  nprobeProblem,
  probeTauProblem,
} from "./ivfpq.ts";
import type { Probe } from "./fastscan.ts";
/**
 * The top rows of a block of questions as one search worker sends them
 * ({@linkcode ivfTopsPacked}): question `j`'s kept pairs are
 * `rows[at[j] … at[j+1]]` and `scores[…]`, best first (as its `TopK`'s
 * `rows` and `scores` give them).
 */
export interface PackedTops {
  /** Where each question's pairs start (questions + 1). */
  readonly at: Int32Array<ArrayBuffer>;
  /** The kept rows. */
  readonly rows: Float64Array<ArrayBuffer>;
  /** Their scores. */
  readonly scores: Float64Array<ArrayBuffer>;
}

/**
 * The top `k` rows of each question of `qs` ({@linkcode scoreIvfSync}'s
 * candidates and re-scoring, the same answers), packed best first for a
 * worker's answer ({@linkcode unpackTops} gives the `TopK`s back).
 */
export function ivfTopsPacked(
  index: IvfIndexView,
  qs: readonly Float32Array[],
  nprobe: Probe,
  cap: number,
  kernel: boolean,
  k: number,
  refine: number,
  simd?: boolean,
): PackedTops {
  const cands = ivfCandidatesBatch(index, qs, nprobe, cap, kernel);
  const tops = finish(index, qs, cands, k, refine, simd);
  const at = new Int32Array(qs.length + 1);
  tops.forEach((t, j) => at[j + 1] = at[j] + t.rows.length);
  const rows = new Float64Array(at[qs.length]), scores = new Float64Array(at[qs.length]);
  tops.forEach((t, j) => {
    rows.set(t.rows, at[j]);
    scores.set(t.scores, at[j]);
  });
  return { at, rows, scores };
}

/**
 * The `TopK`s of packed answers, each made from its question's pairs as
 * they lie, best first (`TopK.ofBest`: no pair offered one by one), so
 * each keeps and orders them as the one that was packed, with the same
 * threshold.
 *
 * @example
 * ```ts
 * import { unpackTops } from "./ivf_search.ts";
 * const [t] = unpackTops(
 *   { at: new Int32Array([0, 3]), rows: new Float64Array([5, 2, 9]), scores: new Float64Array([3, 1, 1]) },
 *   10,
 * );
 * if (t.rows.join() !== "5,2,9" || t.threshold !== -Infinity) throw new Error(t.rows.join());
 * ```
 */
export function unpackTops(p: PackedTops, k: number): TopK[] {
  const out: TopK[] = [];
  for (let j = 0; j + 1 < p.at.length; j++) {
    out.push(TopK.ofBest(k, p.scores, p.rows, p.at[j], p.at[j + 1]));
  }
  return out;
}

/** The index's dense vectors when they lie in shared memory (search workers read them in place). */
function sharedDense(index: IvfIndexView): Float32Array | Uint16Array | undefined {
  const a = index.dense;
  return a !== undefined && a.buffer instanceof SharedArrayBuffer ? a : undefined;
}

/** The most questions one request to a search worker holds (the `search` stage's block). */
export const WORKER_PIECE = 256;

/**
 * The sizes of the `pieces` pieces `nq` questions are cut into, in order:
 * as equal as can be, the first ones one larger (1 ≤ `pieces` ≤ `nq`).
 *
 * @example
 * ```ts
 * import { pieceSizes } from "./ivf_search.ts";
 * if (pieceSizes(10, 3).join() !== "4,3,3") throw new Error();
 * ```
 */
export function pieceSizes(nq: number, pieces: number): number[] {
  const base = Math.floor(nq / pieces), extra = nq % pieces;
  return Array.from({ length: pieces }, (_, i) => base + (i < extra ? 1 : 0));
}

/**
 * How many pieces a call of `nq` questions is cut into when `free` search
 * workers would otherwise wait: enough for every such worker (so that one
 * call alone keeps all of them busy), and pieces of at most
 * {@linkcode WORKER_PIECE} questions (fewer, larger pieces cost less a
 * question: two questions of a piece share a pass over a list's codes);
 * at most `nq`, at least one.
 *
 * @example
 * ```ts
 * import { pieceCount } from "./ivf_search.ts";
 * // One block of 256 on 2 idle workers: two halves; while both are busy: one piece.
 * if (pieceCount(256, 2) !== 2 || pieceCount(256, 0) !== 1) throw new Error();
 * if (pieceCount(1057, 2) !== 5 || pieceCount(1, 4) !== 1) throw new Error();
 * ```
 */
export function pieceCount(nq: number, free: number): number {
  return Math.max(1, Math.min(nq, Math.max(Math.ceil(nq / WORKER_PIECE), free)));
}

/**
 * The most questions a piece holds in a call marked `tail`
 * ({@linkcode IvfQueryOptions.tail}): at the end of a series of calls, a
 * worker handed a whole block of {@linkcode WORKER_PIECE} answers it alone
 * while the others, with nothing left, wait.
 */
export const TAIL_PIECE = 64;

/**
 * How many pieces a call of `nq` questions is cut into ({@linkcode
 * pieceCount}); with `tail`, pieces of at most {@linkcode TAIL_PIECE}.
 *
 * @example
 * ```ts
 * import { callPieces } from "./ivf_search.ts";
 * if (callPieces(256, 0, false) !== 1 || callPieces(256, 0, true) !== 4) throw new Error();
 * if (callPieces(33, 2, true) !== 2) throw new Error();
 * ```
 */
export function callPieces(nq: number, free: number, tail: boolean): number {
  const n = pieceCount(nq, free);
  return tail ? Math.min(nq, Math.max(n, Math.ceil(nq / TAIL_PIECE))) : n;
}

/**
 * How many pieces each of the calls made in one turn is cut into, in
 * order, with `free` search workers idle and nothing waiting: a call is
 * cut ({@linkcode callPieces}) for the idle workers left once the calls
 * after it have one each, so N calls on N idle workers go one to a worker
 * whole, and a call alone is cut for all of them.
 *
 * @example
 * ```ts
 * import { turnPieces } from "./ivf_search.ts";
 * const block = { nq: 256, tail: false };
 * if (turnPieces([block, block, block], 2).join() !== "1,1,1") throw new Error();
 * if (turnPieces([block], 2).join() !== "2" || turnPieces([block, block], 3).join() !== "2,1") {
 *   throw new Error();
 * }
 * ```
 */
export function turnPieces(
  calls: readonly { nq: number; tail: boolean }[],
  free: number,
): number[] {
  let avail = Math.max(0, free);
  return calls.map((c, i) => {
    const later = calls.length - i - 1;
    const n = callPieces(c.nq, Math.max(0, avail - later), c.tail);
    avail = Math.max(0, avail - n);
    return n;
  });
}

/** A worker's answer: candidates, or top rows; or a non-finite row's error. */
type WorkerAnswer =
  | { id: number; cands: Cands[] }
  | { id: number; tops: PackedTops }
  | { id: number; nonFinite: string };

/** One piece of a call's questions waiting for a worker. */
interface Piece {
  readonly message: Record<string, unknown>;
  /** The piece's questions, one after another (moved to the worker). */
  readonly q: Float32Array<ArrayBuffer>;
  readonly resolve: (r: WorkerAnswer) => void;
  readonly reject: (e: unknown) => void;
}

/**
 * Search workers of an index: with `n` threads, `n` workers answer the
 * questions while this thread only hands out pieces and gathers the
 * answers. A call's questions are cut into pieces ({@linkcode pieceCount})
 * that wait in one queue, each taken by the next worker to be free, so
 * no worker waits for another's share, and calls made before the last one
 * is answered (the `search` stage's next block) keep every worker busy.
 */
class IvfWorkers {
  readonly #ws: RequestWorkers<WorkerAnswer>;
  readonly #busy: boolean[];
  readonly #queue: Piece[] = [];

  constructor(readonly index: IvfIndexView, data: IvfData, readonly n: number) {
    const h = index.header;
    const header = { metric: h.metric, d: h.d, phrases: h.phrases, parameters: h.parameters };
    const dense = sharedDense(index);
    // (The vectors' WebAssembly.Memory too, where they lie in one: the workers re-score
    // their rows in place.)
    const rows = dense !== undefined ? rowsMemoryOf(dense.buffer) : undefined;
    this.#ws = new RequestWorkers(new URL("./ivf_worker.ts", import.meta.url), n, {
      init: () => ({
        init: {
          dir: index.dir,
          header,
          data,
          ...(dense ? { dense } : {}),
          ...(rows !== undefined ? { rows } : {}),
        },
      }),
    });
    this.#busy = Array.from({ length: n }, () => false);
  }

  /** Calls made in this turn of the event loop, not yet cut into pieces (`#plan`). */
  #pending: { nq: number; tail: boolean; resolve: (sizes: number[]) => void }[] = [];

  /**
   * The sizes of the pieces a call of `nq` questions is cut into, decided
   * once every call made in the same turn is known (a microtask later): a
   * call is cut for the workers that would otherwise wait (`callPieces`)
   * once the calls after it have one each. So the `search` stage's first N
   * blocks on N threads go one to a worker whole, where the first one alone
   * was cut into N pieces (two questions of a piece share a pass over a
   * list's codes; halves cost more a question), and a call alone is cut as
   * before.
   */
  #plan(nq: number, tail: boolean): Promise<number[]> {
    return new Promise((resolve) => {
      this.#pending.push({ nq, tail, resolve });
      if (this.#pending.length > 1) return;
      queueMicrotask(() => {
        const calls = this.#pending.splice(0);
        const free = this.#busy.filter((b) => !b).length - this.#queue.length;
        turnPieces(calls, free).forEach((n, i) => calls[i].resolve(pieceSizes(calls[i].nq, n)));
      });
    });
  }

  /** Hands waiting pieces to the free workers, the lowest-numbered first. */
  #deal(): void {
    for (let i = 0; i < this.n && this.#queue.length > 0; i++) {
      if (this.#busy[i]) continue;
      const p = this.#queue.shift()!;
      this.#busy[i] = true;
      this.#ws.ask(i, { ...p.message, q: p.q }, [p.q.buffer]).then(
        (r) => {
          this.#busy[i] = false;
          p.resolve(r);
          if (this.failed === undefined) this.#deal();
          else this.#closeIfIdle();
        },
        (e) => {
          this.#busy[i] = false;
          p.reject(e);
          this.#fail(e);
        },
      );
    }
  }

  /**
   * The first failure of a piece (an error in a worker, or a worker that
   * died), once there is one: the pool then takes no more pieces ({@linkcode
   * poolOf} starts a new one for the next call), so that no piece waits on a
   * worker that may be gone.
   */
  failed: unknown = undefined;

  /** Fails the pool: the waiting pieces with `e`; its workers end once none is busy. */
  #fail(e: unknown): void {
    this.failed ??= e;
    for (const p of this.#queue.splice(0)) p.reject(e);
    this.#closeIfIdle();
  }

  #closeIfIdle(): void {
    if (this.#busy.every((b) => !b)) this.#ws.close();
  }

  /**
   * Every question's answer, in question order: `qs` cut into pieces
   * ({@linkcode pieceCount}: as many as the workers free once the pieces
   * already waiting are taken), queued, each answered by the next free
   * worker and turned into `T`s by `answer`.
   */
  async #shares<T>(
    qs: readonly Float32Array[],
    message: Record<string, unknown>,
    answer: (r: WorkerAnswer) => T[],
    tail = false,
  ): Promise<T[]> {
    const d = this.index.header.d;
    const sizes = await this.#plan(qs.length, tail);
    const parts: Promise<T[]>[] = [];
    let at = 0;
    for (const size of sizes) {
      // The piece's questions packed into one buffer, moved (a question that is a view of a
      // larger buffer would copy all of it).
      const q = new Float32Array(size * d);
      for (let j = 0; j < size; j++) q.set(qs[at + j], j * d);
      at += size;
      parts.push(
        new Promise<WorkerAnswer>((resolve, reject) => {
          this.#queue.push({ message, q, resolve, reject });
        }).then((r) => {
          // (The error this thread's scoring throws, so callers tell it the same way.)
          if ("nonFinite" in r) throw new NonFiniteError(r.nonFinite);
          return answer(r);
        }),
      );
    }
    this.#deal();
    // Every piece is awaited (settled) before a failure is told: none is left failing unheard.
    const settled = await Promise.allSettled(parts);
    const failed = settled.find((s) => s.status === "rejected");
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
    return settled.flatMap((s) => (s as PromiseFulfilledResult<T[]>).value);
  }

  /**
   * The top `k` of every question, candidates and re-scoring in the workers
   * (the vectors shared).
   */
  tops(
    qs: readonly Float32Array[],
    nprobe: Probe,
    cap: number,
    kernel: boolean,
    top: { k: number; refine: number; simd?: boolean },
    tail = false,
  ): Promise<TopK[]> {
    return this.#shares(
      qs,
      { nprobe, cap, kernel, top },
      (r) => unpackTops((r as { tops: PackedTops }).tops, top.k),
      tail,
    );
  }

  /** The candidates of every question. */
  run(
    qs: readonly Float32Array[],
    nprobe: Probe,
    cap: number,
    kernel: boolean,
    tail = false,
  ): Promise<Cands[]> {
    const cands = (r: WorkerAnswer) => (r as { cands: Cands[] }).cands;
    return this.#shares(qs, { nprobe, cap, kernel }, cands, tail);
  }

  close(): void {
    // (Requests the workers hold are never answered; pieces still waiting are failed.)
    for (const p of this.#queue.splice(0)) p.reject(new Error("search workers closed"));
    this.#ws.close();
  }
}

const workers = new WeakMap<object, IvfWorkers>();

/** Ends the search workers of `index` (see {@linkcode IvfQueryOptions.threads}), if any. */
export function closeIvfWorkers(index: IvfIndexView): void {
  workers.get(index)?.close();
  workers.delete(index);
}

/** Whether the scan runs in the WebAssembly kernel (where it can). */
const useKernel = (o: IvfQueryOptions): boolean => o.scanKernel ?? o.simd !== false;

/** Checks the options; `[k, probe (nprobe and probeTau), refine, candidates per question]`. */
function settle(index: IvfIndexView, options: IvfQueryOptions): [number, Probe, number, number] {
  const k = Math.max(1, options.topK ?? 10);
  const nprobe = options.nprobe ?? defaultNprobe(index.header.parameters.nlist);
  const tau = options.probeTau;
  const why = nprobeProblem(index, nprobe) ??
    (tau !== undefined ? probeTauProblem(tau) : undefined);
  if (why !== undefined) throw new InputError({ file: index.dir, where: "", message: why });
  const refine = Math.max(0, options.refine ?? 0);
  const probe = tau !== undefined ? { nprobe, tau } : nprobe;
  return [k, probe, refine, refine > 0 ? Math.max(k, refine) : k];
}

/** Keeps {@linkcode prefetchRows}' loads from being dropped as unused. */
const prefetched = { last: 0 };

/**
 * Reads one value of each cache line of the candidates' rows, every load
 * independent of the others, so that the processor fetches them side by
 * side: the rows lie at random places in the index's vectors, and copied a
 * row at a time each one waits for its own misses (all of dev, 30
 * candidates: the copy took 11 µs a question, this and the copy 6.5).
 * Called for the next question while this one is re-scored.
 */
function prefetchRows(a: Float32Array | Uint16Array, list: Cands, d: number): void {
  const step = a instanceof Float32Array ? 16 : 32;
  let x = 0;
  for (let i = 0; i < list.length; i++) {
    const r = list[i].row * d;
    for (let c = 0; c < d; c += step) x |= a[r + c];
  }
  prefetched.last = x;
}

/** This thread's exact scorer of candidates (`null` where its module cannot run). */
let exactRows: ExactRows | null | undefined;

/**
 * The top `k` of each question from its candidates, re-scored exactly with
 * `refine` > 0: every candidate's exact score in the exact-sums module
 * (`kernels/wasm_exact.ts`), offered by increasing row; where that module
 * cannot run (or `simd` is false, `d` not a multiple of 4, a question not
 * finite), `scoreDenseBest`'s float32 screen and exact sums. The same rows,
 * scores and order either way: the best `k` by (exact score, lower row).
 */
function finish(
  index: IvfIndexView,
  qs: readonly Float32Array[],
  cands: readonly Cands[],
  k: number,
  refine: number,
  simd?: boolean,
): TopK[] {
  const tops = qs.map(() => new TopK(k));
  const h = index.header, d = h.d, a = index.dense, l2 = h.metric === "l2";
  if (refine > 0 && simd !== false && d % 4 === 0 && exactRows === undefined) {
    exactRows = ExactRows.create() ?? null;
  }
  const ex = refine > 0 && simd !== false && d % 4 === 0 ? exactRows ?? undefined : undefined;
  // One gather buffer for every question (the candidates' vectors, copied in row order):
  // in the SIMD kernels' memory where they score the rows (no second copy), else our own.
  let most = 0;
  for (const list of cands) most = Math.max(most, list.length);
  const kernels = ex === undefined && simd !== false && d >= 4 && d % 4 === 0
    ? simdKernels()
    : undefined;
  const f32 = a instanceof Float32Array, bytes = most * d * (f32 ? 4 : 2);
  const own = kernels === undefined && ex === undefined ? new ArrayBuffer(bytes) : undefined;
  const exact = new Float64Array(most), rows = new Float64Array(most);
  if (refine > 0 && a !== undefined && cands.length > 0) prefetchRows(a, cands[0], d);
  for (let j = 0; j < qs.length; j++) {
    const list = cands[j];
    if (refine > 0 && a !== undefined && j + 1 < cands.length) prefetchRows(a, cands[j + 1], d);
    if (refine > 0 && (a !== undefined || index.disk !== undefined)) {
      const n = list.length;
      if (ex !== undefined) {
        for (let i = 0; i < n; i++) rows[i] = list[i].row;
        const m = a ?? index.disk!.gather(list.map((x) => x.row));
        // (−∞: a row the module's screen shows cannot be among the best k.)
        if (ex.scores(m, rows, a === undefined, n, d, qs[j], l2, exact, k)) {
          for (let i = 0; i < n; i++) {
            if (exact[i] !== -Infinity) tops[j].offer(exact[i], list[i].row);
          }
          continue;
        }
      }
      let g: Float32Array | Uint16Array;
      if (a !== undefined) {
        // (A view of the kernels' memory is re-taken a question: their scoring may grow it.)
        const mem = own ?? (kernels ?? simdKernels()!).buffer(bytes).buffer;
        g = f32 ? new Float32Array(mem, 0, n * d) : new Uint16Array(mem, 0, n * d);
        for (let i = 0; i < n; i++) {
          g.set(a.subarray(list[i].row * d, (list[i].row + 1) * d), i * d);
        }
      } else g = index.disk!.gather(list.map((x) => x.row));
      // Best bound first: the exact sums of the rows that can still enter, the same top rows.
      const local = new TopK(k);
      scoreDenseBest(g, n, d, qs[j], local, h.metric, simd);
      const order = local.rows.map((r, i) => ({ r, s: local.scores[i] })).sort((x, y) => x.r - y.r);
      for (const { r, s } of order) tops[j].offer(s, list[r].row);
    } else {
      for (const x of list) tops[j].offer(x.score, x.row);
    }
  }
  return tops;
}

/**
 * The top rows of each question (float32 vectors of length d) by IVF-PQ
 * (see the module notes). Rows and ranks as `scoreQuestions` gives them;
 * the same with any number of `threads`.
 */
export async function scoreIvf(
  index: IvfIndexView,
  qs: readonly Float32Array[],
  options: IvfQueryOptions = {},
): Promise<TopK[]> {
  const threads = Math.min(MAX_SEARCH_THREADS, Math.max(1, Math.floor(options.threads ?? 1)));
  // Read on demand: the lists are scanned in this thread (one staging area).
  if (threads === 1 || qs.length < 2 || index.disk !== undefined) {
    return scoreIvfSync(index, qs, options);
  }
  const [k, nprobe, refine, cap] = settle(index, options);
  if ((refine === 0 || sharedDense(index) !== undefined) && searchWorkersAllowed()) {
    // Candidates and re-scoring in the workers (the vectors shared): the same answers.
    const top = { k, refine, ...(options.simd !== undefined ? { simd: options.simd } : {}) };
    const pool = poolOf(index, threads);
    return await pool.tops(qs, nprobe, cap, useKernel(options), top, options.tail === true);
  }
  const cands = await ivfCandidatesMany(
    index,
    qs,
    nprobe,
    cap,
    threads,
    useKernel(options),
    options.tail === true,
  );
  return finish(index, qs, cands, k, refine, options.simd);
}

/** The search workers of `index`, started on first use. */
function poolOf(index: IvfIndexView, threads: number): IvfWorkers {
  let pool = workers.get(index);
  // (A failed pool ends its workers itself once none is busy.)
  if (pool === undefined || pool.failed !== undefined) {
    const n = Math.min(MAX_SEARCH_THREADS, Math.floor(threads));
    pool = new IvfWorkers(index, loadIvf(index), n);
    workers.set(index, pool);
  }
  return pool;
}

/**
 * The approximate candidates of each question ({@linkcode ivfCandidates}:
 * the best `cap` rows by approximate score, by increasing row), on
 * `threads` search workers when more than 1 (the same candidates), the
 * scan in the WebAssembly kernel unless `kernel` is false (the same sums).
 * `tail`: the call is among the last of a series (`IvfQueryOptions.tail`).
 * `nprobe` is not checked here.
 */
export async function ivfCandidatesMany(
  index: IvfIndexView,
  qs: readonly Float32Array[],
  nprobe: Probe,
  cap: number,
  threads = 1,
  kernel = true,
  tail = false,
): Promise<{ row: number; score: number }[][]> {
  if (threads <= 1 || qs.length < 2 || index.disk !== undefined || !searchWorkersAllowed()) {
    return ivfCandidatesBatch(index, qs, nprobe, cap, kernel);
  }
  return await poolOf(index, threads).run(qs, nprobe, cap, kernel, tail);
}

/**
 * Whether this process may start search workers: a worker loads its
 * modules from this source tree, which a permission-narrowed process (a
 * sandboxed task) may not read; then the scan runs in this thread (the
 * same answers).
 */
function searchWorkersAllowed(): boolean {
  return modulesReadable(import.meta.url, ["../../../"]);
}

/** {@linkcode scoreIvf} in this thread. */
export function scoreIvfSync(
  index: IvfIndexView,
  qs: readonly Float32Array[],
  options: IvfQueryOptions = {},
): TopK[] {
  const [k, nprobe, refine, cap] = settle(index, options);
  const cands = ivfCandidatesBatch(index, qs, nprobe, cap, useKernel(options));
  return finish(index, qs, cands, k, refine, options.simd);
}
