/**
 * The 4-bit `ivf-pq` index (`index --pq-bits 4`): its codes' blocked layout
 * and the question's path through the fast-scan kernel
 * (`search/kernels/wasm_fastscan.ts`): {@linkcode ivf4Candidates}.
 *
 * **Codes.** `bpv` bytes a vector: `M = 2·bpv` sub-quantizers of
 * `d / M` dimensions and {@linkcode PQ4_KSUB} centroids each (trained and
 * encoded as the 8-bit ones, `train.ts`: seed `IVF_SEED + 1 + m`);
 * `codebooks.f32` is `M × 16 × d/M` float32; `codes.u8` holds each list
 * padded to whole blocks of 32 rows (two codes a byte, see the kernel's
 * notes), list `l`'s blocks after those of the lists before it
 * ({@linkcode blockStarts}), so its size is `Σ_l ⌈n_l / 32⌉ · 32 · bpv`
 * ({@linkcode pq4CodesBytes}).
 *
 * **Tables.** Per question (`ip`) or per question and probed list (`l2`),
 * the float64 tables `T_m[c] = q_m · book_m[c]` (`ip`) or
 * `−‖(q − c_l)_m − book_m[c]‖²` (`l2`), then quantized
 * ({@linkcode quantizeTables}): one scale `a` for all `M` tables (the
 * largest entry `⌊65535 / M⌋`, at most 63, `wasm_fastscan.ts` `fsQmax`: the
 * kernel adds four sub-quantizers' look-ups in 8 bits, and a row's sum fits
 * 16 bits), a bias per table (its smallest value), entries
 * `round((T_m[c] − min_m) · a)`. A row's approximate score is
 * `base + Σ_m min_m + S / a` with `S` the integer sum the kernel gives
 * (`base`: `q · c_l` for `ip`, 0 for `l2`); larger is better for both
 * metrics.
 *
 * **Scan and threshold.** The probed lists in probing order, each in runs
 * of blocks; before each run the candidates' floor (the worst of the best
 * `cap` kept) is turned into the integer sum a row must reach, and only
 * the blocks holding such a row leave the kernel; their rows are offered
 * to the candidates (padding rows skipped). The same integer sums with or
 * without the kernel ({@linkcode fastScanReference}), so the same
 * candidates.
 *
 * **A batch of questions** ({@linkcode ivf4CandidatesBatch}): list by
 * list, the questions probing a list two at a time in one pass over its
 * codes (the kernel's `scan2`: the codes loaded and split once for both),
 * each with its own tables and threshold. The candidates kept are the best
 * `cap` by (score, row) whatever the order rows are offered in, and a row is
 * let go only when its score is below the floor, so the batch gives each
 * question the candidates it gets alone. Each question's nearest list is
 * scanned first (a first pass over the lists for the questions whose
 * nearest list it is, then a second for the rest), so that its candidates
 * fill with its best rows and its threshold is high early.
 *
 * @module
 */
import {
  type FastScanHits,
  FastScanner,
  fastScanReference,
  FS_BLOCK,
  FS_OUT,
  FS_OUT2,
  fsQmax,
  laneRow,
} from "../../kernels/wasm_fastscan.ts";
import { probeScores, QuestionKernel } from "../../kernels/wasm_probe.ts";
import { ListScreen } from "../../kernels/wasm_screen.ts";
import { CandidateHeaps } from "../../kernels/wasm_select.ts";

/** Centroids per sub-quantizer of a 4-bit index. */
export const PQ4_KSUB = 16;

/**
 * Blocks scanned per kernel call while the candidates are not yet full
 * (offered one by one; the selection module's heaps take a full run
 * instead, their first offer's histogram setting the threshold).
 */
const WARM_RUN = 2;

/** Blocks scanned per kernel call once they are. */
const RUN = 32;

/**
 * The first block of each list (nlist + 1 entries: list `l`'s blocks are
 * `start[l] … start[l+1]`).
 *
 * @example
 * ```ts
 * import { blockStarts } from "./fastscan.ts";
 * if (blockStarts([0, 32, 33, 33], 3).join() !== "0,1,2,2") throw new Error();
 * ```
 */
export function blockStarts(offsets: ArrayLike<number>, nlist: number): Float64Array {
  const start = new Float64Array(nlist + 1);
  for (let l = 0; l < nlist; l++) {
    start[l + 1] = start[l] + Math.ceil((offsets[l + 1] - offsets[l]) / FS_BLOCK);
  }
  return start;
}

/** The size of a 4-bit index's `codes.u8` given its list offsets. */
export function pq4CodesBytes(offsets: ArrayLike<number>, nlist: number, bpv: number): number {
  return blockStarts(offsets, nlist)[nlist] * FS_BLOCK * bpv;
}

/**
 * Quantizes the `M` float tables `t` (16 entries each) into `lut` from
 * byte `at` (see the module notes); returns the scale `a` and the sum of
 * the tables' smallest values.
 *
 * @example
 * ```ts
 * import { quantizeTables } from "./fastscan.ts";
 * const lut = new Uint8Array(32);
 * const t = new Float64Array(32).map((_, i) => (i < 16 ? i : 2 * (i - 16)) - 1);
 * const { scale, bias } = quantizeTables(t, 2, lut, 0);
 * if (lut[15] !== 32 || lut[31] !== 63 || scale !== 63 / 30 || bias !== -2) throw new Error();
 * ```
 */
export function quantizeTables(
  t: Float64Array,
  M: number,
  lut: Uint8Array,
  at: number,
): { scale: number; bias: number } {
  const qmax = fsQmax(M);
  let range = 0, bias = 0;
  const mins = new Float64Array(M);
  for (let m = 0; m < M; m++) {
    // The even and the odd entries each in order, then the odd ones' against the even ones'
    // (the probing module's two lanes: the same value, ±0 included).
    let lo0 = Infinity, hi0 = -Infinity, lo1 = Infinity, hi1 = -Infinity;
    for (let c = 0; c < 16; c += 2) {
      const x = t[16 * m + c], y = t[16 * m + c + 1];
      if (x < lo0) lo0 = x;
      if (x > hi0) hi0 = x;
      if (y < lo1) lo1 = y;
      if (y > hi1) hi1 = y;
    }
    const lo = lo1 < lo0 ? lo1 : lo0, hi = hi1 > hi0 ? hi1 : hi0;
    mins[m] = lo;
    bias += lo;
    if (hi - lo > range) range = hi - lo;
  }
  const scale = range > 0 ? qmax / range : 1;
  for (let m = 0; m < M; m++) {
    for (let c = 0; c < 16; c++) {
      lut[at + 16 * m + c] = Math.min(qmax, Math.round((t[16 * m + c] - mins[m]) * scale));
    }
  }
  return { scale, bias };
}

/**
 * Fills `out` (M × 16) with the float64 tables of `v` (see the module
 * notes: inner products, or negated squared distances for `l2`).
 */
export function tables4(
  v: Float64Array,
  cb: Float32Array,
  M: number,
  dsub: number,
  l2: boolean,
  out: Float64Array,
): void {
  for (let m = 0; m < M; m++) {
    const vo = m * dsub, bo = m * PQ4_KSUB * dsub;
    for (let c = 0; c < PQ4_KSUB; c++) {
      let s = 0;
      const o = bo + c * dsub;
      if (l2) {
        for (let k = 0; k < dsub; k++) {
          const e = v[vo + k] - cb[o + k];
          s += e * e;
        }
        s = -s;
      } else {
        for (let k = 0; k < dsub; k++) s += v[vo + k] * cb[o + k];
      }
      out[16 * m + c] = s;
    }
  }
}

/** What the 4-bit scan needs of an index's IVF-PQ data (`ivfpq.ts` `IvfData`). */
export interface Ivf4Data {
  /** Lists. */
  readonly nlist: number;
  /** Bytes per vector (`M = 2·bpv` sub-quantizers). */
  readonly bpv: number;
  /** Coarse centroids, nlist × d. */
  readonly centroids: Float32Array;
  /** Codebooks, M × 16 × d/M. */
  readonly codebooks: Float32Array;
  /** List offsets (nlist + 1). */
  readonly offsets: Float64Array;
  /** Global rows grouped by list. */
  readonly rows: Uint32Array;
  /** The blocked codes. */
  readonly codes: Uint8Array;
  /** The shared memory the codes lie at the start of (the kernel's), if any. */
  readonly memory?: WebAssembly.Memory;
}

/** The candidates' heap as the scan uses it (`ivfpq.ts` `Candidates`). */
export interface CandidateSink {
  /** The score a row must reach to be kept (−∞ while not full). */
  readonly floor: number;
  /** Offers a row and its approximate score. */
  offer(score: number, row: number): void;
}

const scanners = new WeakMap<object, FastScanner | null>();
const questionKernels = new WeakMap<object, QuestionKernel | null>();
const heapModules = new WeakMap<object, CandidateHeaps | null>();

/** This thread's candidate heaps for `data` over its scan kernel's memory (`wasm_select.ts`), if they can run. */
function heapsOf(data: Ivf4Data, k: FastScanner): CandidateHeaps | undefined {
  let h = heapModules.get(data);
  if (h === undefined) {
    h = CandidateHeaps.create(k.scratch, data.rows) ?? null;
    heapModules.set(data, h);
  }
  return h ?? undefined;
}

/** This thread's probing and tables module for `data` (`wasm_probe.ts`), if it can run. */
function questionKernelOf(data: Ivf4Data, d: number): QuestionKernel | undefined {
  let k = questionKernels.get(data);
  if (k === undefined) {
    k = QuestionKernel.create(data.centroids, data.codebooks, data.nlist, d, 2 * data.bpv) ?? null;
    questionKernels.set(data, k);
  }
  return k ?? undefined;
}

/**
 * The `nprobe` best lists by `qc` (larger first, ties to the lower list),
 * as sorting all lists by `qc[b] − qc[a] || a − b` and keeping the first
 * `nprobe` gives them (that sort itself where a score is NaN). With `ids`
 * (ascending, their scores numbers) only those lists are ranked: the same
 * lists where every other list is beaten by `nprobe` of them
 * ({@linkcode screenedLists}).
 *
 * @example
 * ```ts
 * import { bestLists } from "./fastscan.ts";
 * if (bestLists(new Float64Array([1, 3, 2, 3]), 3).join() !== "1,3,2") throw new Error();
 * ```
 */
export function bestLists(qc: Float64Array, nprobe: number, ids?: readonly number[]): number[] {
  const nlist = qc.length, n = Math.min(nprobe, nlist), m = ids?.length ?? nlist;
  const top: number[] = [];
  for (let i = 0; i < m; i++) {
    const l = ids === undefined ? i : ids[i];
    const s = qc[l];
    if (s !== s) {
      const order = Array.from({ length: nlist }, (_, i) => i);
      order.sort((a, b) => qc[b] - qc[a] || a - b);
      return order.slice(0, nprobe);
    }
    // Insert l after the lists at least as good (those before it win ties).
    if (top.length === n && !(s > qc[top[n - 1]])) continue;
    let j = top.length === n ? n - 1 : top.length;
    while (j > 0 && s > qc[top[j - 1]]) {
      if (j < n) top[j] = top[j - 1];
      j--;
    }
    top[j] = l;
  }
  return top;
}

/**
 * How many lists a question probes: a number, the `nprobe` best lists
 * ({@linkcode bestLists}); or `{nprobe, tau}`, those lists cut to the ones
 * whose probing score is within `tau · ‖q‖ · mean‖c‖` of the best one's
 * (adaptive probing, {@linkcode cutLists}): at most `nprobe`, at least one.
 */
export type Probe = number | { readonly nprobe: number; readonly tau?: number };

/** The most lists `p` probes (its `nprobe`). */
export function probeCount(p: Probe): number {
  return typeof p === "number" ? p : p.nprobe;
}

/** The centroids' mean length per index data ({@linkcode meanNorm}). */
const meanNorms = new WeakMap<object, number>();

/**
 * `mean‖c‖` of `data`'s `nlist` centroids of `d` dimensions: each length
 * the square root of its float64 sum of squares in dimension order, summed
 * in list order, over `nlist` (the same bits in every thread).
 */
export function meanNorm(
  data: { readonly centroids: Float32Array; readonly nlist: number },
  d: number,
): number {
  let m = meanNorms.get(data);
  if (m === undefined) {
    const c = data.centroids;
    let sum = 0;
    for (let l = 0; l < data.nlist; l++) {
      let t = 0;
      for (let i = l * d; i < l * d + d; i++) t += c[i] * c[i];
      sum += Math.sqrt(t);
    }
    m = sum / data.nlist;
    meanNorms.set(data, m);
  }
  return m;
}

/**
 * Adaptive probing: of `lists` (the best first, as {@linkcode bestLists}
 * gives them) and their probing scores `qc`, the first list and every
 * following one whose score is at least `qc[lists[0]] − tau · ‖q‖ ·
 * mean‖c‖` (`‖q‖` the square root of the float64 sum of squares of `q` in
 * dimension order, `mean‖c‖` {@linkcode meanNorm}): a question whose best
 * lists stand out probes few, one whose best lists are close probes up to
 * all of them. The same lists in every thread and path. Without `tau` (or
 * a number `p`), `lists` unchanged. `slack`: {@linkcode tauSlack} of `q`
 * and `p.tau` where the caller has it already (the same double).
 *
 * @example
 * ```ts
 * import { cutLists } from "./fastscan.ts";
 * const data = { centroids: new Float32Array([1, 0, 0, 1, 0.6, 0.8]), nlist: 3 };
 * const q = new Float32Array([1, 0]), qc = new Float64Array([1, 0, 0.6]);
 * // ‖q‖ = 1, mean‖c‖ = 1: tau 0.5 keeps the lists scoring at least 0.5.
 * if (cutLists(data, 2, q, [0, 2, 1], qc, { nprobe: 3, tau: 0.5 }).join() !== "0,2") throw new Error();
 * ```
 */
export function cutLists(
  data: { readonly centroids: Float32Array; readonly nlist: number },
  d: number,
  q: Float32Array,
  lists: number[],
  qc: Float64Array,
  p: Probe,
  slack?: number,
): number[] {
  if (typeof p === "number" || p.tau === undefined || lists.length < 2) return lists;
  const floor = qc[lists[0]] - (slack ?? tauSlack(data, d, q, p.tau));
  let n = 1;
  while (n < lists.length && qc[lists[n]] >= floor) n++;
  return n === lists.length ? lists : lists.slice(0, n);
}

/**
 * `tau · ‖q‖ · mean‖c‖`, how far below the best list's probing score
 * {@linkcode cutLists} keeps lists (`‖q‖` the square root of the float64
 * sum of squares of `q` in dimension order, `mean‖c‖` {@linkcode
 * meanNorm}): the same double wherever it is taken.
 *
 * @example
 * ```ts
 * import { tauSlack } from "./fastscan.ts";
 * const data = { centroids: new Float32Array([3, 4, 0, 1]), nlist: 2 };
 * // ‖q‖ = 2, mean‖c‖ = (5 + 1) / 2 = 3.
 * if (tauSlack(data, 2, new Float32Array([0, 2]), 0.5) !== 3) throw new Error();
 * ```
 */
export function tauSlack(
  data: { readonly centroids: Float32Array; readonly nlist: number },
  d: number,
  q: Float32Array,
  tau: number,
): number {
  let qq = 0;
  for (let i = 0; i < d; i++) qq += q[i] * q[i];
  return tau * Math.sqrt(qq) * meanNorm(data, d);
}

const screens = new WeakMap<object, ListScreen | null>();

/**
 * The fewest lists {@linkcode screenedLists} screens: below, probing every
 * list costs about as little as the screen. With 100 lists of 256
 * dimensions (the quarter of dev, nprobe 8 + 30, 1 thread, 2-core AMD
 * EPYC, 2026-12-07, three alternations, fastest of eight passes) the
 * screen answers 8,721–8,799 q/s against 7,756–8,603 probing every list
 * (about 2.5 µs a question less); a single pass of the `search` stage over
 * the quarter's 3,468 questions, whose first thousand questions pay the
 * screen's warming (about 15 ms), took 1.03–1.07 s against 0.97–1.19.
 */
export const SCREEN_MIN_LISTS = 64;

/**
 * The probed lists of question `q` and their probing scores, by the float32
 * screen of `wasm_screen.ts` (float64 scores for the few lists it cannot
 * rule out): the lists {@linkcode bestLists} keeps from every list's
 * float64 score, in its order, and `qc[l]` the score of each list kept (NaN
 * for most others). `undefined` where the screen cannot run or cannot
 * tell (a non-finite value), where the index has fewer than
 * {@linkcode SCREEN_MIN_LISTS} lists, or where `nprobe` is more than an
 * eighth of them (there probing them all costs less): then probe every list.
 * `qc` is `into` where given (nlist entries; the caller's to reuse once it
 * is done with these scores), else a new array. `next`: the question the
 * next call will ask, screened now with `q` (`ListScreen.candidates`).
 * `slack` (adaptive probing's {@linkcode tauSlack}): the lists that
 * {@linkcode cutLists} is sure to cut, whose upper end lies below the
 * largest lower end less `slack`, are left out too (neither kept nor
 * scored in float64); the lists `cutLists` then keeps, and their scores,
 * are the same.
 */
export function screenedLists(
  data: { readonly centroids: Float32Array; readonly nlist: number },
  d: number,
  l2: boolean,
  q: Float32Array,
  nprobe: number,
  into?: Float64Array,
  next?: Float32Array,
  slack?: number,
): { lists: number[]; qc: Float64Array } | undefined {
  if (data.nlist < SCREEN_MIN_LISTS || 8 * nprobe > data.nlist) return undefined;
  let s = screens.get(data);
  if (s === undefined) {
    s = ListScreen.create(data.centroids, data.nlist, d) ?? null;
    screens.set(data, s);
  }
  const c = s?.candidates(q, l2, nprobe, into, next, slack);
  return c === undefined ? undefined : { lists: bestLists(c.qc, nprobe, c.ids), qc: c.qc };
}

/**
 * The probed lists of question `q` and its probing scores `qc` (`q · c_l`,
 * or `−‖q − c_l‖²` for `l2`): float64 sums in dimension order
 * (`wasm_probe.ts` `probeScores`), screened first ({@linkcode screenedLists}:
 * `qc` then holds the probed lists' scores, in `into` where given) and in
 * the probing module unless `kernel` is false or they cannot run here (the
 * same lists and numbers). `next`: the question the next call will ask, its
 * screen made with this one's ({@linkcode screenedLists}).
 */
export function probeLists4(
  data: Ivf4Data,
  d: number,
  l2: boolean,
  q: Float32Array,
  probe: Probe,
  kernel = true,
  into?: Float64Array,
  next?: Float32Array,
): { lists: number[]; qc: Float64Array } {
  const nprobe = probeCount(probe);
  // Adaptive probing: the lists sure to be cut are not scored in float64 either.
  const slack = kernel && typeof probe !== "number" && probe.tau !== undefined && nprobe >= 2
    ? tauSlack(data, d, q, probe.tau)
    : undefined;
  const screened = kernel ? screenedLists(data, d, l2, q, nprobe, into, next, slack) : undefined;
  if (screened !== undefined) {
    const lists = cutLists(data, d, q, screened.lists, screened.qc, probe, slack);
    return { lists, qc: screened.qc };
  }
  const k = kernel ? questionKernelOf(data, d) : undefined;
  let qc: Float64Array;
  if (k !== undefined) {
    k.question(q);
    qc = k.probe(l2);
  } else {
    qc = new Float64Array(data.nlist);
    probeScores(q, data.centroids, data.nlist, d, l2, qc);
  }
  return { lists: cutLists(data, d, q, bestLists(qc, nprobe), qc, probe, slack), qc };
}
const starts = new WeakMap<object, Float64Array>();

function scannerOf(data: Ivf4Data): FastScanner | undefined {
  let s = scanners.get(data);
  if (s === undefined) {
    s = (data.memory !== undefined ? FastScanner.create(data.memory) : undefined) ?? null;
    scanners.set(data, s);
  }
  return s ?? undefined;
}

function startsOf(data: Ivf4Data): Float64Array {
  let s = starts.get(data);
  if (s === undefined) {
    s = blockStarts(data.offsets, data.nlist);
    starts.set(data, s);
  }
  return s;
}

/**
 * Offers the rows of the blocks a scan let out (`sums`: 32 a block, block
 * `blocks[h]` relative to block `b0` of the list) that reach `thr` and the
 * floor, scores `base + sum / scale`, to `cands` (`n` rows in the list,
 * global rows from `rows[r0 …]`; padding rows skipped).
 */
function offerHits(
  count: number,
  blocks: Int32Array,
  sums: Uint16Array,
  b0: number,
  n: number,
  thr: number,
  base: number,
  scale: number,
  rows: Uint32Array,
  r0: number,
  cands: CandidateSink,
): void {
  for (let h = 0; h < count; h++) {
    const first = (b0 + blocks[h]) * FS_BLOCK;
    const last = Math.min(FS_BLOCK, n - first);
    for (let r = 0; r < last; r++) {
      const s = sums[h * FS_BLOCK + r];
      if (s < thr) continue;
      const score = base + s / scale;
      const floor = cands.floor;
      if (score >= floor) {
        cands.offer(score, rows[r0 + first + r]);
        // The floor rose (or the candidates filled): the sum a row now needs, as between runs.
        const f = cands.floor;
        if (f !== floor) thr = Math.max(thr, needOf(f, base, scale));
      }
    }
  }
}

/** Block row of each position of the kernel's written sums (`laneRow`). */
const LANE_ROW = Int32Array.from({ length: FS_BLOCK }, (_, p) => laneRow(p));

/**
 * {@linkcode offerHits} over the kernel's memory as `scanRaw`/`scan2Raw`
 * left it (no copy): `count` blocks of `per` 16-bit words, this question's
 * 32 sums from word `at` of a block (lane order), the block's index at
 * 32-bit word `idx` of it. The rows offered are the same (in another
 * order within a block: the candidates kept do not depend on it), less
 * those the risen floor already lets go (the threshold re-taken after each
 * offer that raises it, by the rule between runs).
 */
function offerWritten(
  sums: Uint16Array,
  index: Int32Array,
  count: number,
  per: number,
  at: number,
  idx: number,
  b0: number,
  n: number,
  thr: number,
  base: number,
  scale: number,
  rows: Uint32Array,
  r0: number,
  cands: CandidateSink,
): void {
  for (let h = 0; h < count; h++) {
    const o = h * per + at;
    const first = (b0 + index[(h * per >> 1) + idx]) * FS_BLOCK;
    const last = n - first;
    for (let p = 0; p < FS_BLOCK; p++) {
      const s = sums[o + p];
      if (s < thr) continue;
      const r = LANE_ROW[p];
      if (r >= last) continue;
      const score = base + s / scale;
      const floor = cands.floor;
      if (score >= floor) {
        cands.offer(score, rows[r0 + first + r]);
        // The floor rose (or the candidates filled): the sum a row now needs, as between runs.
        const f = cands.floor;
        if (f !== floor) thr = Math.max(thr, needOf(f, base, scale));
      }
    }
  }
}

/** The integer sum a row must reach to reach `floor` (one below, for rounding), or 65536: none can. */
function needOf(floor: number, base: number, scale: number): number {
  if (floor === -Infinity) return 0;
  const need = Math.ceil((floor - base) * scale) - 1;
  return need > 65535 ? 65536 : Math.max(0, need);
}

/**
 * Offers the approximate candidates of question `q` over the probed
 * `lists` (`qc[l]`: `q · c_l`, read for `ip`) to `cands` (see the module
 * notes); the scan in the kernel unless `kernel` is false or it cannot run
 * here (the same integer sums, the same candidates).
 */
export function ivf4Candidates(
  data: Ivf4Data,
  d: number,
  l2: boolean,
  q: Float32Array,
  lists: readonly number[],
  qc: Float64Array,
  cands: CandidateSink,
  kernel = true,
): void {
  const M = 2 * data.bpv, dsub = d / M, bb = 16 * M;
  const k = kernel ? scannerOf(data) : undefined;
  const start = startsOf(data);
  const t = new Float64Array(M * 16), v = new Float64Array(d);
  const own = k === undefined ? new Uint8Array(16 * M) : undefined;
  // The tables in the probing module where the scan kernel runs (the same bytes).
  const qk = k !== undefined ? questionKernelOf(data, d) : undefined;
  qk?.question(q);
  const make = (l: number) => {
    if (qk !== undefined) return qk.lut(l2, l, k!.tables(M), 0);
    if (l2) {
      const c = data.centroids;
      for (let j = 0; j < d; j++) v[j] = q[j] - c[l * d + j];
    } else for (let j = 0; j < d; j++) v[j] = q[j];
    tables4(v, data.codebooks, M, dsub, l2, t);
    return quantizeTables(t, M, own ?? k!.tables(M), 0);
  };
  let q8: { scale: number; bias: number } | undefined;
  if (!l2) q8 = make(-1);
  for (const l of lists) {
    const n = data.offsets[l + 1] - data.offsets[l];
    if (n === 0) continue;
    if (l2) q8 = make(l);
    const { scale, bias } = q8!;
    const base = (l2 ? 0 : qc[l]) + bias;
    const nb = start[l + 1] - start[l], co = start[l] * bb, r0 = data.offsets[l];
    for (let b0 = 0; b0 < nb;) {
      const run = Math.min(nb - b0, cands.floor === -Infinity ? WARM_RUN : RUN);
      const thr = needOf(cands.floor, base, scale);
      if (thr > 65535) break; // no row of this list can reach the floor
      const hits: FastScanHits = k !== undefined
        ? k.scan(co + b0 * bb, run, M, 0, thr)
        : fastScanReference(data.codes, co + b0 * bb, run, M, own!, 0, thr);
      offerHits(hits.count, hits.blocks, hits.sums, b0, n, thr, base, scale, data.rows, r0, cands);
      b0 += run;
    }
  }
}

/**
 * {@linkcode ivf4Candidates} for a batch of questions (see the module
 * notes), in the kernel: question `j` probes `probes[j].lists` and its
 * candidates go to `cands[j]`, the same as alone; with `cap` and `byRow`,
 * kept in the selection module's heaps of `cap` and given as `byRow[j]`
 * (by increasing row; `cands` may then be undefined). Returns false
 * (nothing offered) where the kernel cannot run, or where the heaps cannot
 * and there are no `cands`.
 */
export function ivf4CandidatesBatch(
  data: Ivf4Data,
  d: number,
  l2: boolean,
  qs: readonly Float32Array[],
  probes: readonly { readonly lists: readonly number[]; readonly qc: Float64Array }[],
  cands: readonly CandidateSink[] | undefined,
  cap?: number,
  byRow?: { row: number; score: number }[][],
): boolean {
  const k = scannerOf(data);
  if (k === undefined) return false;
  // With `cap` (each sink's size), the candidates are kept in the module's heaps
  // (`wasm_select.ts`) and handed to the sinks (or `byRow`) at the end: the same kept pairs.
  const heaps = cap !== undefined && cap > 0 ? heapsOf(data, k) : undefined;
  if (heaps === undefined && cands === undefined) return false;
  if (heaps !== undefined && byRow === undefined && cands === undefined) return false;
  const M = 2 * data.bpv, dsub = d / M, bb = 16 * M, per = 16 * M, nq = qs.length;
  heaps?.reset(qs.length, cap!, M * fsQmax(M));
  const start = startsOf(data);
  const t = new Float64Array(M * 16), v = new Float64Array(d);
  const q8: { scale: number; bias: number }[] = new Array(nq);
  // Each question's tables at j·16·M of the kernel's memory (a view re-taken after a scan,
  // which may grow that memory).
  const lut = () => k.tables(M, nq);
  const qk = questionKernelOf(data, d);
  const fill = (j: number, q: Float32Array, l: number) => {
    if (qk !== undefined) {
      qk.question(q);
      q8[j] = qk.lut(l2, l, lut(), j * per);
      return;
    }
    if (l2) {
      const c = data.centroids;
      for (let x = 0; x < d; x++) v[x] = q[x] - c[l * d + x];
    } else for (let x = 0; x < d; x++) v[x] = q[x];
    tables4(v, data.codebooks, M, dsub, l2, t);
    q8[j] = quantizeTables(t, M, lut(), j * per);
  };
  if (!l2) qs.forEach((q, j) => fill(j, q, -1));
  // Two passes over the lists: first each question's nearest list (its candidates fill with
  // good rows, so its threshold is high from the start), then the rest of its lists.
  // Each list's questions, and with each its probing score of the list (`q · c_l`, read here
  // while the question's scores are at hand: an array of nlist a question, which the scan
  // loop below would read out of cache).
  // Slot x < nlist: list x's questions whose nearest it is; slot nlist + l: list l's others.
  // Pairs (question, score) at js[2·at[x] …], counted then placed (typed arrays: two nlist
  // arrays of arrays a block cost about 2 µs a question).
  const slots = 2 * data.nlist, at = new Int32Array(slots + 1);
  let pairs = 0;
  // (Plain loops: `forEach` with a closure a list cost about 0.4 µs a question.)
  const nl = data.nlist;
  for (const p of probes) {
    const ls = p.lists;
    for (let i = 0; i < ls.length; i++) at[(i === 0 ? 0 : nl) + ls[i] + 1]++;
    pairs += ls.length;
  }
  for (let x = 0; x < slots; x++) at[x + 1] += at[x];
  const js = new Float64Array(2 * pairs), put = at.slice(0, slots);
  for (let j = 0; j < probes.length; j++) {
    const ls = probes[j].lists, qc = probes[j].qc;
    for (let i = 0; i < ls.length; i++) {
      const l = ls[i], o = 2 * put[(i === 0 ? 0 : nl) + l]++;
      js[o] = j;
      js[o + 1] = l2 ? 0 : qc[l];
    }
  }
  const floorOf = (j: number) => heaps !== undefined ? heaps.floor(j) : cands![j].floor;
  for (let x = 0; x < slots; x++) {
    const l = x % data.nlist;
    const n = data.offsets[l + 1] - data.offsets[l], g0 = 2 * at[x], g1 = 2 * at[x + 1];
    if (n === 0 || g0 === g1) continue;
    if (l2) { for (let g = g0; g < g1; g += 2) fill(js[g], qs[js[g]], l); }
    const nb = start[l + 1] - start[l], co = start[l] * bb, r0 = data.offsets[l];
    for (let g = g0; g < g1; g += 4) {
      const two = g + 2 < g1;
      const j0 = js[g], j1 = two ? js[g + 2] : j0;
      // (The sinks are read only without the heaps.)
      const c0 = cands?.[j0], c1 = cands?.[j1];
      const base0 = js[g + 1] + q8[j0].bias, base1 = two ? js[g + 3] + q8[j1].bias : base0;
      const scale0 = q8[j0].scale, scale1 = q8[j1].scale;
      for (let b0 = 0; b0 < nb;) {
        const f0 = floorOf(j0), f1 = two ? floorOf(j1) : 0;
        const warm = f0 === -Infinity || (two && f1 === -Infinity);
        // (With the heaps, a warm run is a full one too: their first offer's histogram
        // sets the threshold from all its rows.)
        const run = Math.min(nb - b0, warm && heaps === undefined ? WARM_RUN : RUN);
        const thr0 = needOf(f0, base0, scale0);
        const thr1 = two ? needOf(f1, base1, scale1) : 65536;
        if (thr0 > 65535 && thr1 > 65535) break; // no row of this list can reach either floor
        if (!two) {
          const count = k.scanRaw(co + b0 * bb, run, M, j0 * per, thr0);
          if (heaps !== undefined) {
            heaps.offer(j0, k.outAt, count, FS_OUT / 2, 0, 16, b0, n, thr0, base0, scale0, r0);
          } else {
            const w = k.written(count, FS_OUT);
            offerWritten(
              w.sums,
              w.index,
              count,
              FS_OUT / 2,
              0,
              16,
              b0,
              n,
              thr0,
              base0,
              scale0,
              data.rows,
              r0,
              c0!,
            );
          }
        } else {
          const count = k.scan2Raw(
            co + b0 * bb,
            run,
            M,
            j0 * per,
            j1 * per,
            Math.min(65535, thr0),
            Math.min(65535, thr1),
          );
          if (heaps !== undefined) {
            const out = k.outAt;
            if (thr0 <= 65535) {
              heaps.offer(j0, out, count, FS_OUT2 / 2, 0, 32, b0, n, thr0, base0, scale0, r0);
            }
            if (thr1 <= 65535) {
              heaps.offer(j1, out, count, FS_OUT2 / 2, 32, 32, b0, n, thr1, base1, scale1, r0);
            }
          } else {
            const w = k.written(count, FS_OUT2);
            if (thr0 <= 65535) {
              offerWritten(
                w.sums,
                w.index,
                count,
                FS_OUT2 / 2,
                0,
                32,
                b0,
                n,
                thr0,
                base0,
                scale0,
                data.rows,
                r0,
                c0!,
              );
            }
            if (thr1 <= 65535) {
              offerWritten(
                w.sums,
                w.index,
                count,
                FS_OUT2 / 2,
                32,
                32,
                b0,
                n,
                thr1,
                base1,
                scale1,
                data.rows,
                r0,
                c1!,
              );
            }
          }
        }
        b0 += run;
      }
    }
  }
  if (heaps !== undefined) {
    for (let j = 0; j < qs.length; j++) {
      if (byRow !== undefined) {
        // The kept pairs by increasing row, as the sink's `byRow` would give them.
        byRow[j] = heaps.pairsByRow(j);
      } else for (const x of heaps.kept(j)) cands![j].offer(x.score, x.row);
    }
  }
  return true;
}
