/**
 * The `ivf-pq` index kind: an exact index (`search/index/format.ts`) plus phraseval's own
 * deterministic IVF-PQ, as faiss's `IndexIVFPQ` does it: built by
 * `buildIvfPq` (`train.ts`: training sample, quantizers, encoding), searched by `scoreIvf` (`ivf_search.ts`).
 *
 * **Files** (`ivf/`, little-endian, each listed in `index.json` with its
 * sha256): `centroids.f32` (nlist × d), `codebooks.f32` (bpv × 256 × d/bpv),
 * `list_offsets.i64` (nlist + 1: list `l` holds positions
 * `offsets[l] … offsets[l+1]`), `list_rows.u32` (the global row at each
 * position: rows grouped by list, increasing within a list), `codes.u8`
 * (position-major per list and sub-quantizer-major inside a list: the code
 * `m` of the list's `i`-th row is at `offsets[l]·bpv + m·n_l + i`, so a scan
 * reads each sub-quantizer's codes sequentially).
 *
 * **Search.** The `nprobe` best lists (`ip`: largest `q·c`; `l2`: smallest
 * `‖q−c‖²`; ties to the lower list) are scanned with asymmetric distances:
 * `ip`: score ≈ `q·c + Σ_m T_m[code_m]`, `T_m = q_m · codebook_m` computed
 * once per question; `l2`: score ≈ `−Σ_m ‖(q−c)_m − codebook_m[code_m]‖²`,
 * tables per probed list (sums of float32 table values, added in
 * sub-quantizer order; the scan runs in the WebAssembly kernel of
 * `pq_scan.ts` where it can, in TypeScript otherwise, the same sums; a
 * batch of questions is scanned list by list, the tables of up to four
 * questions that probe a list summed in one pass over its codes, in
 * f32x4 lanes: {@linkcode ivfCandidatesBatch}, the same sums). The
 * `C = max(topK, refine)` best rows by approximate score (ties to the
 * lower row) are kept; with `refine` > 0 they are re-scored exactly
 * (`search/index/exact/score.ts`, merge's scores and tie rule) from the index's exact vectors
 * and the best `topK` kept, with `refine` 0 the approximate scores are
 * reported.
 *
 * @module
 */
import { InputError } from "../../../io/errors.ts";
import { statRealFolder, statRegularFile } from "../../../io/regular.ts";
import { INDEX_FILES_ONLY, type IndexMetric, ivfContentProblem } from "../format.ts";
import { KSUB } from "./ivf_encode.ts";
import { codesMemory, PqScanner, SCAN_LANES } from "./pq_scan.ts";
import {
  bestLists,
  cutLists,
  ivf4Candidates,
  ivf4CandidatesBatch,
  PQ4_KSUB,
  pq4CodesBytes,
  type Probe,
  probeCount,
  probeLists4,
  screenedLists,
} from "./fastscan.ts";
import { ivf4CandidatesSliced, type Ivf4Slices } from "./fastscan_slices.ts";
import { probeScores } from "../../kernels/wasm_probe.ts";

/** Centroids per sub-quantizer (8-bit codes). */
export { KSUB };

/** The engine recorded in the header. */
export const IVF_ENGINE = "phraseval";

/** The library an old, no longer supported `ivf-pq` index recorded. */
export const LANCE_LIBRARY = "@lancedb/lancedb@0.31.0";

/** The data files of the IVF-PQ part of an index, by role. */
export const IVF_FILES = {
  centroids: "ivf/centroids.f32",
  codebooks: "ivf/codebooks.f32",
  offsets: "ivf/list_offsets.i64",
  rows: "ivf/list_rows.u32",
  codes: "ivf/codes.u8",
} as const;

/** The sizes the IVF-PQ files of an index of this shape must have, by file name. */
export function ivfFileSizes(
  h: { readonly d: number; readonly phrases: number },
  nlist: number,
  bpv: number,
  bits = 8,
): Record<string, number> {
  // A 4-bit index's codes.u8 depends on its list sizes (`fastscan.ts` `pq4CodesBytes`): the
  // entry here is that of unpadded lists, replaced once the offsets are read.
  return {
    [IVF_FILES.centroids]: nlist * h.d * 4,
    [IVF_FILES.codebooks]: (bits === 4 ? PQ4_KSUB : KSUB) * h.d * 4,
    [IVF_FILES.offsets]: (nlist + 1) * 8,
    [IVF_FILES.rows]: h.phrases * 4,
    [IVF_FILES.codes]: h.phrases * bpv,
  };
}

/** Parameters of an `ivf-pq` index, as stored in the header's `parameters`. */
export interface IvfPqParameters {
  /** IVF lists (clusters). */
  readonly nlist: number;
  /** PQ sub-quantizers (bytes per vector at 8 bits). */
  readonly bpv: number;
  /** Bits per PQ code: 8, or 4 (`--pq-bits 4`: 2·bpv sub-quantizers, `fastscan.ts`). */
  readonly bits: number;
  /** Paragraphs in the training sample. */
  readonly train_paragraphs: number;
  /** Phrases (rows) in the training sample. */
  readonly train_phrases: number;
  /** The sampling rule, in words. */
  readonly train_sample: string;
  /** k-means iterations (of the sub-quantizers, and of the coarse quantizer unless the next says otherwise). */
  readonly kmeans_iterations: number;
  /** A 4-bit index's coarse k-means's iterations (`PQ4_COARSE_ITERATIONS` of `train.ts`; absent: `kmeans_iterations`). */
  readonly coarse_kmeans_iterations?: number;
  /** A 4-bit index's most training rows per sub-quantizer entry (`PQ4_ROWS_PER_CENTROID` of `train.ts`). */
  readonly pq_rows_per_centroid?: number;
  /** The PRNG seed. */
  readonly seed: number;
  /** The engine that built it ({@linkcode IVF_ENGINE}). */
  readonly engine: string;
}

/** The vectors and metric search needs from an open index. */
export interface IvfIndexView {
  /** The index folder. */
  readonly dir: string;
  /** Its header's metric, d and parameters. */
  readonly header: {
    readonly metric: IndexMetric;
    readonly d: number;
    readonly phrases: number;
    readonly parameters: Readonly<Record<string, unknown>>;
  };
  /** Dense vectors: f32 values, or f16 bits. */
  readonly dense?: Float32Array | Uint16Array;
  /** An index read on demand under a memory budget (`search/index/disk.ts`): its lists and vectors. */
  readonly disk?: IvfOnDisk;
}

/**
 * The IVF-PQ lists and vectors of an index read from disk on demand
 * (`search/index/disk.ts`): the scan asks for one slice of a list at a time (a list
 * larger than the cache is never held whole).
 */
export interface IvfOnDisk {
  /** Centroids, codebooks and offsets; `codes` the staging area of one list (`rows` empty). */
  ivfData(): IvfData;
  /** The most rows of one slice of a list (the staging area's size). */
  readonly sliceRows: number;
  /**
   * Puts the codes of rows `from … from + n` of list `l` (n at most
   * `sliceRows`) at the start of the staging area (`codes`); their global rows.
   */
  list(l: number, from: number, n: number): Uint32Array;
  /** The vectors of `rows` (increasing), one after another: f32 values or f16 bits. */
  gather(rows: readonly number[]): Float32Array | Uint16Array;
}

/**
 * Where rows `from … from + n` of list `l` are: `[codes offset, rows, first
 * of its rows]` (in memory: their place in the whole arrays; read on
 * demand: that slice just read into the staging area).
 */
function listAt(
  index: IvfIndexView,
  data: IvfData,
  l: number,
  from: number,
  n: number,
): [number, Uint32Array, number] {
  if (index.disk !== undefined) return [0, index.disk.list(l, from, n), 0];
  const s = data.offsets[l] + from;
  return [s * data.bpv, data.rows, s];
}

/** Rows of one slice of a list: the whole list in memory, the staging area's size on disk. */
function sliceOf(index: IvfIndexView, maxN: number): number {
  return index.disk !== undefined ? Math.min(maxN, index.disk.sliceRows) : maxN;
}

/** The IVF-PQ data of an index, in memory. */
export interface IvfData {
  /** Lists. */
  readonly nlist: number;
  /** Sub-quantizers. */
  readonly bpv: number;
  /** Coarse centroids, nlist × d. */
  readonly centroids: Float32Array;
  /** Codebooks, bpv × 256 × d/bpv. */
  readonly codebooks: Float32Array;
  /** List offsets (nlist + 1). */
  readonly offsets: Float64Array;
  /** Global rows grouped by list. */
  readonly rows: Uint32Array;
  /** Codes (see the module notes for the layout; a 4-bit index's: `fastscan.ts`). */
  readonly codes: Uint8Array;
  /** Bits per code: 4 for a `--pq-bits 4` index, absent for 8. */
  readonly bits?: 4;
  /**
   * The shared WebAssembly memory the codes lie at the start of, for the
   * scan kernel (`pq_scan.ts`); absent where the kernel cannot run.
   */
  readonly memory?: WebAssembly.Memory;
}

const loaded = new WeakMap<object, IvfData>();

/**
 * The IVF-PQ files of an index, read and checked (sizes; offsets, rows and
 * finite centroids and codebooks by `ivfContentProblem` of `search/index/format.ts`;
 * their sha256 is checked by `openIndexSync`), cached per index object.
 * A file missing, of the wrong size, a symbolic link or not a regular file
 * (looked at by name before it is opened), or with offsets or rows out of
 * range or values not finite is an {@linkcode InputError} naming it.
 */
export function loadIvf(index: IvfIndexView): IvfData {
  const have = loaded.get(index);
  if (have !== undefined) return have;
  if (index.disk !== undefined) {
    // Read on demand: checked at open; the lists come one at a time (`listAt`).
    const data = index.disk.ivfData();
    loaded.set(index, data);
    return data;
  }
  const h = index.header, p = h.parameters;
  const nlist = p.nlist as number, bpv = p.bpv as number, four = p.bits === 4;
  const sizes = ivfFileSizes(h, nlist, bpv, four ? 4 : 8);
  const bad = (name: string, message: string) =>
    new InputError({ file: `${index.dir}/${name}`, where: "", message });
  // Read into shared memory, so that search workers see the same bytes without a copy; the
  // codes into the scan kernel's memory where it can run.
  statRealFolder(`${index.dir}/ivf`, INDEX_FILES_ONLY);
  const read = (name: string, into?: WebAssembly.Memory) => {
    let f: Deno.FsFile;
    try {
      if (
        statRegularFile(`${index.dir}/${name}`, { links: "refuse", why: INDEX_FILES_ONLY }) ===
          undefined
      ) {
        throw new Deno.errors.NotFound(name);
      }
      f = Deno.openSync(`${index.dir}/${name}`, { read: true });
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) {
        throw bad(name, "missing (the index folder is incomplete)");
      }
      throw e;
    }
    try {
      const size = f.statSync().size;
      if (size !== sizes[name]) {
        throw bad(
          name,
          `${size} bytes but index.json says ${sizes[name]} (truncated or corrupt index)`,
        );
      }
      const b = into !== undefined
        ? new Uint8Array(into.buffer, 0, size)
        : new Uint8Array(new SharedArrayBuffer(size));
      for (let o = 0; o < size;) {
        const n = f.readSync(b.subarray(o));
        if (n === null) throw bad(name, "ended early (truncated or corrupt index)");
        o += n;
      }
      return b;
    } finally {
      f.close();
    }
  };
  const c = read(IVF_FILES.centroids), cb = read(IVF_FILES.codebooks);
  const off = read(IVF_FILES.offsets), rw = read(IVF_FILES.rows);
  const o64 = new BigInt64Array(off.buffer, off.byteOffset, nlist + 1);
  const offsets = Float64Array.from(o64, (x) => Number(x));
  const rows = new Uint32Array(rw.buffer, rw.byteOffset, h.phrases);
  const centroids = new Float32Array(c.buffer, c.byteOffset, nlist * h.d);
  const codebooks = new Float32Array(
    cb.buffer,
    cb.byteOffset,
    (four ? PQ4_KSUB : KSUB) * h.d,
  );
  if (four) {
    // The codes' size follows from the list sizes: the offsets are checked first.
    const why = ivfContentProblem(h.phrases, nlist, { centroids, codebooks, offsets, rows });
    if (why !== undefined) throw bad(why[0], why[1]);
    sizes[IVF_FILES.codes] = pq4CodesBytes(offsets, nlist, bpv);
  }
  const memory = codesMemory(sizes[IVF_FILES.codes]);
  const codes = read(IVF_FILES.codes, memory);
  const why = ivfContentProblem(h.phrases, nlist, { centroids, codebooks, offsets, rows });
  if (why !== undefined) throw bad(why[0], why[1]);
  const data: IvfData = {
    nlist,
    bpv,
    centroids,
    codebooks,
    offsets,
    rows,
    codes,
    ...(memory !== undefined ? { memory } : {}),
    ...(four ? { bits: 4 as const } : {}),
  };
  loaded.set(index, data);
  return data;
}

/** Gives `index` its IVF-PQ data (a search worker's copy of the main thread's view). */
export function setIvfData(index: IvfIndexView, data: IvfData): void {
  loaded.set(index, data);
}

/** How many lists a question probes (`fastscan.ts`): a count, or with adaptive probing's tau. */
export type { Probe };

/** Options of `scoreIvf` (`ivf_search.ts`). */
export interface IvfQueryOptions {
  /** Ranks kept (default 10). */
  readonly topK?: number;
  /** Lists probed (default 10, at most nlist); with `probeTau`, the most lists probed. */
  readonly nprobe?: number;
  /**
   * Adaptive probing (`fastscan.ts` `cutLists`): of the `nprobe` best
   * lists, only those whose probing score is within `probeTau · ‖q‖ ·
   * mean‖c‖` of the best one's (at least one). Unset: all `nprobe`.
   */
  readonly probeTau?: number;
  /** Approximate candidates re-scored exactly (0: none, the approximate scores are kept). */
  readonly refine?: number;
  /**
   * Use the WebAssembly kernels: the ADC scan (`pq_scan.ts`) and the SIMD
   * re-scoring (default true; false: plain TypeScript loops, same results).
   */
  readonly simd?: boolean;
  /**
   * Run the ADC scan in the WebAssembly kernel (default: `simd`); false: the
   * TypeScript loop (`scanLists`). The same sums either way (for benchmarks
   * and tests).
   */
  readonly scanKernel?: boolean;
  /**
   * Threads searching (default 1: this thread). With more, that many
   * workers answer pieces of the questions while this thread hands them out
   * (same answers); call `closeIvfWorkers` (`ivf_search.ts`) when done with
   * the index.
   */
  readonly threads?: number;
  /**
   * This call is among the last of a series on N > 1 threads (no more
   * questions will be asked after the calls already made): its questions
   * are cut into smaller pieces (`ivf_search.ts` `TAIL_PIECE`),
   * so that the workers run out of work together instead of one answering
   * a whole block while the others wait. The same answers.
   */
  readonly tail?: boolean;
}

/** Default lists probed (PIQA's `--nprobe 10`): `../defaults.ts`'s, the one value. */
export { DEFAULT_NPROBE } from "../defaults.ts";

/** What is wrong with an adaptive probing's `tau` (`--probe-tau`), or `undefined`. */
export function probeTauProblem(tau: number): string | undefined {
  return Number.isFinite(tau) && tau > 0
    ? undefined
    : `--probe-tau must be a number above 0, got ${tau}`;
}

/** What is wrong with `nprobe` for this index, or `undefined`. */
export function nprobeProblem(index: IvfIndexView, nprobe: number): string | undefined {
  const nlist = index.header.parameters.nlist as number;
  if (!Number.isSafeInteger(nprobe) || nprobe < 1) {
    return `--nprobe must be at least 1, got ${nprobe}`;
  }
  if (nprobe > nlist) {
    return `--nprobe ${nprobe} is larger than the index's nlist ${nlist} (${index.dir})`;
  }
  return undefined;
}

/**
 * The best `cap` (score, row) pairs: larger score first, ties to the lower
 * row. A binary heap with the worst kept pair at its root.
 */
class Candidates {
  readonly scores: Float64Array;
  readonly rows: Float64Array;
  size = 0;
  constructor(readonly cap: number) {
    this.scores = new Float64Array(cap);
    this.rows = new Float64Array(cap);
  }
  /** The score a pair must reach (ties then go by row): the worst kept, or −∞ while not full. */
  get floor(): number {
    return this.size < this.cap ? -Infinity : this.scores[0];
  }
  offer(score: number, row: number): void {
    const S = this.scores, R = this.rows;
    if (this.size < this.cap) {
      // Up from a new leaf: the parents worse than (score, row) move down into the hole.
      let i = this.size++;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (!(score < S[p] || (score === S[p] && row > R[p]))) break;
        S[i] = S[p];
        R[i] = R[p];
        i = p;
      }
      S[i] = score;
      R[i] = row;
      return;
    }
    const s0 = S[0];
    if (score < s0 || (score === s0 && row > R[0])) return;
    // Down from the root: the worse child moves up into the hole while it is worse than (score, row).
    const n = this.size;
    let i = 0;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && (S[c + 1] < S[c] || (S[c + 1] === S[c] && R[c + 1] > R[c]))) c++;
      if (!(S[c] < score || (S[c] === score && R[c] > row))) break;
      S[i] = S[c];
      R[i] = R[c];
      i = c;
    }
    S[i] = score;
    R[i] = row;
  }
  /** The kept pairs, by increasing row. */
  byRow(): { row: number; score: number }[] {
    const out: { row: number; score: number }[] = [];
    for (let i = 0; i < this.size; i++) out.push({ row: this.rows[i], score: this.scores[i] });
    return out.sort((a, b) => a.row - b.row);
  }
}

/** Fills `t` (bpv × 256) with `Σ_t v[m·dsub+t] · book_m[j][t]` (`ip`) or `‖v_m − book_m[j]‖²` (`l2`). */
function tables(
  v: Float64Array,
  cb: Float32Array,
  bpv: number,
  dsub: number,
  l2: boolean,
  t: Float32Array,
): void {
  for (let m = 0; m < bpv; m++) {
    const vo = m * dsub, bo = m * KSUB * dsub, to = m * KSUB;
    for (let j = 0; j < KSUB; j++) {
      let s = 0;
      const o = bo + j * dsub;
      if (l2) {
        for (let k = 0; k < dsub; k++) {
          const e = v[vo + k] - cb[o + k];
          s += e * e;
        }
      } else {
        for (let k = 0; k < dsub; k++) s += v[vo + k] * cb[o + k];
      }
      t[to + j] = s;
    }
  }
}

/**
 * Sums the table values of the `n` rows of one list into `acc` (codes
 * sub-quantizer-major from `co`): the plain TypeScript scan, and the
 * reference the kernel of `pq_scan.ts` matches bit for bit.
 */
export function scanLists(
  codes: Uint8Array,
  co: number,
  n: number,
  bpv: number,
  t: Float32Array,
  acc: Float32Array,
): void {
  for (let i = 0; i < n; i++) acc[i] = t[codes[co + i]];
  for (let m = 1; m < bpv; m++) {
    const base = co + m * n, to = m * KSUB;
    let i = 0;
    for (; i + 3 < n; i += 4) {
      acc[i] += t[to + codes[base + i]];
      acc[i + 1] += t[to + codes[base + i + 1]];
      acc[i + 2] += t[to + codes[base + i + 2]];
      acc[i + 3] += t[to + codes[base + i + 3]];
    }
    for (; i < n; i++) acc[i] += t[to + codes[base + i]];
  }
}

/**
 * The lists to probe for `q`: the `nprobe` best by `q·c` (ip) or `‖q−c‖²`
 * (l2), ties to the lower list; screened first unless `kernel` is false
 * (`fastscan.ts` `screenedLists`: `qc` then holds the probed lists' scores;
 * the same lists). `next`: the question the next call will ask, screened
 * with this one.
 */
function probeLists(
  q: Float32Array,
  data: IvfData,
  d: number,
  l2: boolean,
  probe: Probe,
  kernel = true,
  next?: Float32Array,
): { lists: number[]; qc: Float64Array } {
  const nprobe = probeCount(probe);
  const screened = kernel ? screenedLists(data, d, l2, q, nprobe, undefined, next) : undefined;
  if (screened !== undefined) {
    return { lists: cutLists(data, d, q, screened.lists, screened.qc, probe), qc: screened.qc };
  }
  const { nlist, centroids: c } = data;
  const qc = new Float64Array(nlist);
  probeScores(q, c, nlist, d, l2, qc);
  return { lists: cutLists(data, d, q, bestLists(qc, nprobe), qc, probe), qc };
}

/** This thread's array of a batch's probing scores, per IVF-PQ data ({@linkcode qcArrayOf}). */
const qcArrays = new WeakMap<object, Float64Array>();

/**
 * This thread's array of at least `n` probing scores for `data`'s batches,
 * reused from batch to batch (a new array each question costs more than
 * probing: the allocator's and the collector's work).
 */
function qcArrayOf(data: object, n: number): Float64Array {
  let a = qcArrays.get(data);
  if (a === undefined || a.length < n) {
    a = new Float64Array(n);
    qcArrays.set(data, a);
  }
  return a;
}

/** This thread's scan kernel per IVF-PQ data (`null`: none, the TypeScript scan). */
const scanners = new WeakMap<IvfData, PqScanner | null>();

function scannerOf(data: IvfData): PqScanner | undefined {
  let s = scanners.get(data);
  if (s === undefined) {
    s = (data.memory !== undefined ? PqScanner.create(data.memory) : undefined) ?? null;
    scanners.set(data, s);
  }
  return s ?? undefined;
}

/**
 * The approximate candidates of one question: the best `cap` rows by
 * approximate score over the `nprobe` probed lists (see the module notes).
 * The scan runs in the WebAssembly kernel where it can (`kernel`, default
 * true), else in TypeScript: the same sums, bit for bit.
 */
export function ivfCandidates(
  index: IvfIndexView,
  q: Float32Array,
  nprobe: Probe,
  cap: number,
  kernel = true,
): { row: number; score: number }[] {
  const data = loadIvf(index);
  const d = index.header.d, bpv = data.bpv, dsub = d / bpv;
  const l2 = index.header.metric === "l2";
  if (data.bits === 4) {
    // 4-bit codes: the fast scan (`fastscan.ts`); read on demand, a slice at a time.
    const { lists, qc } = probeLists4(data, d, l2, q, nprobe, kernel);
    const c4 = new Candidates(cap);
    if (index.disk !== undefined) {
      ivf4CandidatesSliced(slicesOf(index.disk), d, l2, [q], [{ lists, qc }], [c4], kernel);
    } else ivf4Candidates(data, d, l2, q, lists, qc, c4, kernel);
    return c4.byRow();
  }
  const { lists, qc } = probeLists(q, data, d, l2, nprobe, kernel);
  const k = kernel ? scannerOf(data) : undefined;
  // The kernel's tables live in its memory (a view re-taken before each use: a growth of
  // that memory detaches views, not data).
  const own = k === undefined ? new Float32Array(bpv * KSUB) : undefined;
  const v = new Float64Array(d);
  if (!l2) {
    for (let j = 0; j < d; j++) v[j] = q[j];
    tables(v, data.codebooks, bpv, dsub, false, own ?? k!.tables(bpv));
  }
  let maxN = 0;
  for (const l of lists) maxN = Math.max(maxN, data.offsets[l + 1] - data.offsets[l]);
  const slice = sliceOf(index, maxN);
  const mine = k === undefined ? new Float32Array(slice) : undefined;
  const cands = new Candidates(cap);
  for (const l of lists) {
    const all = data.offsets[l + 1] - data.offsets[l];
    if (all === 0) continue;
    if (l2) {
      const c = data.centroids;
      for (let j = 0; j < d; j++) v[j] = q[j] - c[l * d + j];
      tables(v, data.codebooks, bpv, dsub, true, own ?? k!.tables(bpv));
    }
    // A slice at a time (the whole list in memory): each row's sum the same, offered in order.
    for (let from = 0; from < all; from += slice) {
      const n = Math.min(slice, all - from);
      const [co, rows, s] = listAt(index, data, l, from, n);
      let acc: Float32Array;
      if (k !== undefined) acc = k.scan(co, n, bpv);
      else {
        scanLists(data.codes, co, n, bpv, own!, mine!);
        acc = mine!;
      }
      offerRows(cands, acc, 1, 0, n, l2 ? 0 : qc[l], l2, rows, s);
    }
  }
  return cands.byRow();
}

/**
 * Offers the `n` rows of one list (global rows `rows[s …]`) to `cands`:
 * row `i`'s approximate score `base + sum` (`ip`) or `−sum` (`l2`), its
 * sum at `sums[stride·i + lane]`.
 */
function offerRows(
  cands: Candidates,
  sums: Float32Array,
  stride: number,
  lane: number,
  n: number,
  base: number,
  l2: boolean,
  rows: Uint32Array,
  s: number,
): void {
  const sign = l2 ? -1 : 1;
  let floor = cands.floor;
  for (let i = 0, a = lane; i < n; i++, a += stride) {
    const score = base + sign * sums[a];
    if (score >= floor) {
      cands.offer(score, rows[s + i]);
      floor = cands.floor;
    }
  }
}

/** A 4-bit index read on demand as the sliced fast scan sees it. */
function slicesOf(disk: IvfOnDisk): Ivf4Slices {
  return {
    data: disk.ivfData(),
    sliceRows: disk.sliceRows,
    list: (l, from, n) => disk.list(l, from, n),
  };
}

/** A question's approximate candidates, as {@linkcode ivfCandidates} gives them (by increasing row). */
export type Cands = { row: number; score: number }[];

/** Questions whose tables a batch scan ({@linkcode ivfCandidatesBatch}) holds at once (128 KiB each at bpv 128). */
export const IVF_BATCH = 256;

/**
 * The approximate candidates of each question, as {@linkcode ivfCandidates}
 * gives them (the same rows and scores), list by list: every question's
 * tables are made once, then each list's codes are read once per
 * {@linkcode SCAN_LANES} questions that probe it, their sums added in
 * f32x4 lanes (`PqScanner.scanLanes`: each lane the same float32
 * additions as the one-question scan). Up to {@linkcode IVF_BATCH}
 * questions at a time. Where the lane-parallel kernel cannot run (or
 * `kernel` is false), one question at a time.
 */
export function ivfCandidatesBatch(
  index: IvfIndexView,
  qs: readonly Float32Array[],
  nprobe: Probe,
  cap: number,
  kernel = true,
): { row: number; score: number }[][] {
  const data = loadIvf(index);
  if (data.bits === 4 && index.disk !== undefined && qs.length >= 2) {
    // 4-bit codes read on demand: list by list, a slice at a time (`fastscan_slices.ts`), in
    // blocks of IVF_BATCH questions (their tables in the kernel's memory).
    const d = index.header.d, l2 = index.header.metric === "l2";
    const out: { row: number; score: number }[][] = [];
    for (let b = 0; b < qs.length; b += IVF_BATCH) {
      const part = qs.slice(b, b + IVF_BATCH);
      const probes = part.map((q, j) =>
        probeLists(q, data, d, l2, nprobe, kernel, j % 2 === 0 ? part[j + 1] : undefined)
      );
      const cands = part.map(() => new Candidates(cap));
      ivf4CandidatesSliced(slicesOf(index.disk), d, l2, part, probes, cands, kernel);
      out.push(...cands.map((c) => c.byRow()));
    }
    return out;
  }
  if (data.bits === 4 && kernel && qs.length >= 2) {
    // 4-bit codes: list by list, two questions a pass (`fastscan.ts`), the same candidates.
    const out: { row: number; score: number }[][] = [];
    const d = index.header.d, l2 = index.header.metric === "l2";
    for (let b = 0; b < qs.length; b += IVF_BATCH) {
      const part = qs.slice(b, b + IVF_BATCH);
      // The probing scores of the part's questions in one reused array (dead after the part).
      const qcs = qcArrayOf(data, part.length * data.nlist), nl = data.nlist;
      // Two questions a screen of the lists (the second's sums kept for its own call).
      const probes = part.map((q, j) =>
        probeLists4(
          data,
          d,
          l2,
          q,
          nprobe,
          true,
          qcs.subarray(j * nl, (j + 1) * nl),
          j % 2 === 0 ? part[j + 1] : undefined,
        )
      );
      // The selection module's heaps give the kept pairs by row (where it cannot run, one
      // question at a time, the same pairs).
      const byRow: Cands[] = new Array(part.length);
      if (!ivf4CandidatesBatch(data, d, l2, part, probes, undefined, cap, byRow)) {
        return qs.map((q) => ivfCandidates(index, q, nprobe, cap, kernel));
      }
      out.push(...byRow);
    }
    return out;
  }
  const k = kernel && data.bits !== 4 ? scannerOf(data) : undefined;
  if (k === undefined || !k.lanes || qs.length < 2) {
    return qs.map((q) => ivfCandidates(index, q, nprobe, cap, kernel));
  }
  const out: { row: number; score: number }[][] = [];
  for (let b = 0; b < qs.length; b += IVF_BATCH) {
    out.push(...laneBatch(index, data, k, qs.slice(b, b + IVF_BATCH), nprobe, cap));
  }
  return out;
}

/** {@linkcode ivfCandidatesBatch} for at most {@linkcode IVF_BATCH} questions. */
function laneBatch(
  index: IvfIndexView,
  data: IvfData,
  k: PqScanner,
  qs: readonly Float32Array[],
  nprobe: Probe,
  cap: number,
): { row: number; score: number }[][] {
  const d = index.header.d, bpv = data.bpv, dsub = d / bpv, per = bpv * KSUB;
  const l2 = index.header.metric === "l2";
  const probes = qs.map((q, j) =>
    probeLists(q, data, d, l2, nprobe, true, j % 2 === 0 ? qs[j + 1] : undefined)
  );
  // The questions probing each list, in question order.
  const byList: number[][] = Array.from({ length: data.nlist }, () => []);
  let maxN = 0;
  probes.forEach((p, j) => {
    for (const l of p.lists) {
      byList[l].push(j);
      maxN = Math.max(maxN, data.offsets[l + 1] - data.offsets[l]);
    }
  });
  const slice = sliceOf(index, maxN);
  const t = k.batch(qs.length, bpv, slice);
  const slot = (j: number) => t.subarray(j * per, (j + 1) * per);
  const v = new Float64Array(d);
  if (!l2) {
    qs.forEach((q, j) => {
      for (let x = 0; x < d; x++) v[x] = q[x];
      tables(v, data.codebooks, bpv, dsub, false, slot(j));
    });
  }
  const cands = qs.map(() => new Candidates(cap));
  const c = data.centroids;
  for (let l = 0; l < data.nlist; l++) {
    const all = data.offsets[l + 1] - data.offsets[l], js = byList[l];
    if (all === 0 || js.length === 0) continue;
    if (l2) {
      // Each question's tables for this list in its own slot, made once for all the slices.
      for (const j of js) {
        const q = qs[j];
        for (let x = 0; x < d; x++) v[x] = q[x] - c[l * d + x];
        tables(v, data.codebooks, bpv, dsub, true, slot(j));
      }
    }
    // A slice at a time (the whole list in memory), each read once for all its questions.
    for (let from = 0; from < all; from += slice) {
      const n = Math.min(slice, all - from);
      const [co, rows, s] = listAt(index, data, l, from, n);
      for (let g0 = 0; g0 < js.length; g0 += SCAN_LANES) {
        const group = js.slice(g0, g0 + SCAN_LANES);
        if (group.length === 1) {
          const j = group[0];
          const sums = k.scanOne(j, co, n);
          offerRows(cands[j], sums, 1, 0, n, l2 ? 0 : probes[j].qc[l], l2, rows, s);
          continue;
        }
        const sums = k.scanLanes(group, co, n);
        group.forEach((j, g) => {
          offerRows(cands[j], sums, SCAN_LANES, g, n, l2 ? 0 : probes[j].qc[l], l2, rows, s);
        });
      }
    }
  }
  return cands.map((x) => x.byRow());
}
