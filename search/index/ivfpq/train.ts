/**
 * Training and building of the `ivf-pq` index kind (`ivfpq.ts` has the
 * files and the search): the training sample ({@linkcode trainSample}),
 * the quantizers ({@linkcode trainIvfPq}) and every row encoded
 * ({@linkcode buildIvfPq}), as faiss's `IndexIVFPQ` does it.
 *
 * **Training sample.** The `train_paragraphs` paragraphs (default
 * {@linkcode DEFAULT_TRAIN_PARAGRAPHS}, like PIQA's 100 training matrices;
 * all when fewer) whose `sha256(paragraph id)` (hex) sorts first, a rule any
 * tool can reproduce; all their rows are the training rows.
 *
 * **Coarse quantizer.** k-means (`kmeans.ts`: squared L2 for both metrics,
 * as faiss's IVF trains it) with `nlist` centroids on the training rows,
 * {@linkcode KMEANS_ITERATIONS} iterations, PRNG seed {@linkcode IVF_SEED}.
 * Every row goes to the list of its nearest centroid (L2, ties to the lower
 * list).
 *
 * **4-bit indexes** (`--pq-bits 4`) train their sub-quantizers as faiss's
 * `IndexIVFPQFastScan` does, on at most {@linkcode PQ4_ROWS_PER_CENTROID}
 * · 16 of the training rows' residuals: the rows a seeded shuffle draws
 * ({@linkcode subsetRows}, seed `IVF_SEED + 1`), in row order (the header
 * records `pq_rows_per_centroid`). Their coarse quantizer is the 8-bit
 * index's, on every training row, but in {@linkcode PQ4_COARSE_ITERATIONS}
 * iterations (faiss's `IndexIVF` trains its coarse quantizer in 10; its
 * 256 rows per list as well cost 0.7 points of R@1 on a quarter of dev).
 *
 * **Product quantizer** on residuals `r = x − c(x)` (float32): `bpv`
 * sub-quantizers of `d / bpv` dimensions, 256 centroids each (8-bit codes),
 * sub-quantizer `m` trained by the same k-means on the training rows'
 * residuals (seed `IVF_SEED + 1 + m`); code `m` of a row is the nearest
 * codebook entry to `r_m` (L2, ties to the lower entry).
 *
 * **Memory while building** does not grow with the number of rows beyond
 * what training needs (`ivf_encode.ts`): the training rows (and a few
 * sub-quantizers' columns of them, trained on {@linkcode ENCODE_THREADS}
 * worker threads); then the vectors streamed from the exact file in blocks
 * of {@linkcode ENCODE_BLOCK} rows, encoded on those threads (the same
 * arithmetic, results taken in block order; in the build's own thread
 * when the process may not read the workers' modules), each block's list
 * ids and codes appended to scratch files in the build's temporary folder;
 * then `list_rows.u32` and `codes.u8` assembled in windows of at most
 * {@linkcode WRITE_BUDGET} bytes, one pass over the scratch files per
 * window (a list larger than a window is spread over several), the scratch
 * files deleted before the folder is renamed into place. Per list and per
 * paragraph a few numbers.
 *
 * **Deterministic.** Pure float32/float64 arithmetic in a fixed order and a
 * seeded PRNG: two builds of one dump (or a killed build, rerun) write the
 * same bytes and give the same answers.
 *
 * @module
 */
import {
  encodeBlocks,
  encodePool,
  type EncodeWorkers,
  halfRows,
  IvfScratch,
  kmeansOnWorkers,
  KSUB,
  trainCodebooks,
} from "./ivf_encode.ts";
import { splitmix32 } from "./kmeans.ts";
import { PQ4_KSUB } from "./fastscan.ts";
import { DEFAULT_TRAIN_PARAGRAPHS } from "../defaults.ts";

export { DEFAULT_TRAIN_PARAGRAPHS };

/**
 * k-means iterations of the coarse quantizer and of each sub-quantizer
 * (faiss's default; a 4-bit index's coarse quantizer:
 * {@linkcode PQ4_COARSE_ITERATIONS}).
 */
export const KMEANS_ITERATIONS = 25;

/**
 * k-means iterations of a 4-bit index's coarse quantizer: faiss's
 * `IndexIVF` trains its coarse quantizer in 10 (`Level1Quantizer`'s
 * `cp.niter`), its sub-quantizers in 25. On all of dev (1,000 lists,
 * 64-byte codes, 2-core AMD EPYC, 2026-12-07) the build takes 11.4 s
 * against 14.1 with 25 (medians of four alternating pairs); R@1 of the
 * search barely moves, and not one way (nprobe 32 + 30: 0.9508 against
 * 0.9546; 28 + 50: 0.9574 against 0.9508; on a quarter of dev with 100
 * lists, nprobe 8 + 30, four seeds: −0.3, −0.3, +0.1 and +0.7 points,
 * where the seed alone moves it by 2.8).
 */
export const PQ4_COARSE_ITERATIONS = 10;

/** The PRNG seed of the coarse k-means (sub-quantizer `m` uses seed + 1 + m). */
export const IVF_SEED = 1234;

/**
 * A 4-bit index trains its sub-quantizers on at most this many rows per
 * entry (faiss's `max_points_per_centroid`: see the module notes).
 */
export const PQ4_ROWS_PER_CENTROID = 256;

/** Rows encoded per block read from the exact vectors. */
export const ENCODE_BLOCK = 4096;

/** Worker threads training the sub-quantizers and encoding the blocks of a build with more than one block. */
export const ENCODE_THREADS = 2;

/**
 * Bytes of `list_rows.u32` or `codes.u8` assembled in memory at a time
 * while writing them (see the module notes).
 */
export const WRITE_BUDGET = 64 * 1024 * 1024;

/** The sampling rule recorded in the header. */
export const TRAIN_SAMPLE_RULE =
  "the train_paragraphs paragraphs whose sha256(id) (hex) sorts first";

/** The float32 rows `[from, to)` of a dense vectors file (f32 values or f16 bits). */
function readRows(
  f: Deno.FsFile,
  dtype: "f32" | "f16",
  d: number,
  from: number,
  to: number,
): Float32Array {
  if (dtype === "f16") return halfRows(readHalf(f, d, from, to));
  return new Float32Array(readBytes(f, 4 * d, from, to).buffer);
}

/** Rows `[from, to)` of a float16 vectors file of `d` columns, as their bits. */
function readHalf(f: Deno.FsFile, d: number, from: number, to: number): Uint16Array {
  return new Uint16Array(readBytes(f, 2 * d, from, to).buffer);
}

/** Rows `[from, to)` of a file of rows of `w` bytes (in a buffer of their own). */
function readBytes(f: Deno.FsFile, w: number, from: number, to: number): Uint8Array {
  const bytes = new Uint8Array((to - from) * w);
  f.seekSync(from * w, Deno.SeekMode.Start);
  let o = 0;
  while (o < bytes.length) {
    const n = f.readSync(bytes.subarray(o));
    if (n === null) throw new Error("vectors file ended early");
    o += n;
  }
  return bytes;
}

/** The training paragraphs: indices (in index order) of the sample (see the module notes). */
export async function trainSample(ids: readonly string[], n: number): Promise<number[]> {
  const enc = new TextEncoder();
  const keyed = await Promise.all(ids.map(async (id, p) => {
    const h = new Uint8Array(await crypto.subtle.digest("SHA-256", enc.encode(id)));
    return { p, key: Array.from(h, (b) => b.toString(16).padStart(2, "0")).join("") };
  }));
  keyed.sort((a, b) => a.key < b.key ? -1 : a.key > b.key ? 1 : a.p - b.p);
  return keyed.slice(0, Math.min(n, ids.length)).map((k) => k.p).sort((a, b) => a - b);
}

/** Options of {@linkcode buildIvfPq}. */
export interface IvfBuildOptions {
  /** The exact vectors file (unless `rowsOf` gives the rows). */
  readonly vectors: string;
  /**
   * The float32 rows `[from, to)` (row-major, d columns), read from
   * elsewhere than a dense vectors file (a hybrid index's dense block of
   * its CSR rows); `vectors` and `dtype` are then not read.
   */
  readonly rowsOf?: (from: number, to: number) => Float32Array;
  /** Its dtype. */
  readonly dtype: "f32" | "f16";
  /** Vector dimension. */
  readonly d: number;
  /** Row ranges of the paragraphs: `starts[p]…starts[p+1]` (paragraphs + 1 entries). */
  readonly starts: readonly number[];
  /** Paragraph indices of the training sample (increasing). */
  readonly train: readonly number[];
  /** IVF lists. */
  readonly nlist: number;
  /** PQ sub-quantizers (bytes per vector). */
  readonly bpv: number;
  /**
   * Bits per code (default 8). 4: `2·bpv` sub-quantizers of 16 centroids,
   * the codes in the blocked layout of `fastscan.ts`.
   */
  readonly bits?: 4 | 8;
  /**
   * The folder of the encoding's scratch files (the build's temporary
   * folder): they are deleted by {@linkcode IvfBuilt.close}.
   */
  readonly scratch: string;
  /** k-means iterations (default {@linkcode KMEANS_ITERATIONS}). */
  readonly iterations?: number;
  /**
   * The coarse k-means's iterations (default `iterations`; a 4-bit index's
   * without either: {@linkcode PQ4_COARSE_ITERATIONS}).
   */
  readonly coarseIterations?: number;
  /** PRNG seed (default {@linkcode IVF_SEED}). */
  readonly seed?: number;
  /** Told the rows encoded so far (0 once training is done). */
  readonly onProgress?: (rows: number) => void;
  /**
   * Bytes of `list_rows.u32` or `codes.u8` assembled in memory at a time
   * (default {@linkcode WRITE_BUDGET}; the output does not depend on it).
   */
  readonly writeBudget?: number;
  /** Rows per encoded block (default {@linkcode ENCODE_BLOCK}; the output does not depend on it). */
  readonly encodeBlock?: number;
  /**
   * Worker threads training the sub-quantizers and encoding blocks
   * (default {@linkcode ENCODE_THREADS} when there is more than one block,
   * else 0: this thread; the output does not depend on it).
   */
  readonly encodeThreads?: number;
  /** Stops the build (rejecting, the scratch files removed) once aborted. */
  readonly signal?: AbortSignal;
  /**
   * Encode workers started by the caller (used when `encodeThreads` is
   * their number; not closed here).
   */
  readonly pool?: EncodeWorkers;
  /**
   * A quantizer trained before (a sharded index's, `index --train-only`):
   * the rows are encoded with it and nothing is trained (`train` is not read).
   */
  readonly quantizer?: IvfQuantizer;
}

/** The trained and encoded IVF-PQ, ready to be written (see the module notes for the layout). */
export interface IvfBuilt {
  /** Coarse centroids, nlist × d. */
  readonly centroids: Float32Array;
  /** PQ codebooks, bpv × 256 × d/bpv. */
  readonly codebooks: Float32Array;
  /** List offsets (nlist + 1). */
  readonly offsets: BigInt64Array;
  /** The global rows grouped by list (`list_rows.u32`), in consecutive pieces. */
  rows(): Iterable<Uint32Array>;
  /** The codes (`codes.u8`: list-major, sub-quantizer-major inside a list), in consecutive pieces. */
  codes(): Iterable<Uint8Array>;
  /** Deletes the scratch files (call it once written, or on failure). */
  close(): void;
}

/**
 * Trains the quantizers on the training rows and encodes every row into
 * scratch files in `scratch` (see the module notes and `ivf_encode.ts`).
 * Rejects on an unreadable vectors file (the scratch files then removed).
 */
export async function buildIvfPq(o: IvfBuildOptions): Promise<IvfBuilt> {
  const { d, nlist } = o;
  // Sub-quantizers and their centroids: bpv of 256, or 2·bpv of 16 (4-bit codes).
  const four = o.bits === 4, bpv = four ? 2 * o.bpv : o.bpv, ksub = four ? PQ4_KSUB : KSUB;
  const iterations = o.iterations ?? KMEANS_ITERATIONS, seed = o.seed ?? IVF_SEED;
  const total = o.starts[o.starts.length - 1];
  const block = Math.max(1, o.encodeBlock ?? ENCODE_BLOCK);
  const threads = o.encodeThreads ?? (total > block ? ENCODE_THREADS : 0);
  const budget = o.writeBudget ?? WRITE_BUDGET;
  const f = o.rowsOf === undefined ? Deno.openSync(o.vectors, { read: true }) : undefined;
  const rowsOf = o.rowsOf ?? ((a: number, b: number) => readRows(f!, o.dtype, d, a, b));
  let scratch: IvfScratch | undefined;
  // One pool of workers for the whole build (their start paid once): the caller's, if it
  // has that many.
  const given = o.pool !== undefined && o.pool.size === threads ? o.pool : undefined;
  const pool = given ?? encodePool(threads);
  try {
    const { centroids, codebooks } = o.quantizer ??
      await train(o, rowsOf, iterations, seed, threads, bpv, ksub, pool);
    o.onProgress?.(0);
    // Every row, streamed in blocks to the scratch files.
    const sc = scratch = new IvfScratch(o.scratch, nlist, bpv);
    await encodeBlocks({
      model: { d, bpv, nlist, centroids, codebooks, ...(four ? { ksub } : {}) },
      total,
      block,
      threads,
      rowsOf,
      ...(f !== undefined && o.dtype === "f16"
        ? { halfOf: (a: number, b: number) => readHalf(f, d, a, b) }
        : {}),
      signal: o.signal,
      ...(pool !== undefined ? { pool } : {}),
      onBlock: (a, lists, codes) => {
        sc.append(lists, codes);
        o.onProgress?.(a + lists.length);
      },
    });
    const offsets = BigInt64Array.from(sc.done(), (x) => BigInt(x));
    return {
      centroids,
      codebooks,
      offsets,
      rows: () => sc.rows(budget),
      codes: () => four ? sc.codes4(budget) : sc.codes(budget),
      close: () => sc.remove(),
    };
  } catch (e) {
    scratch?.remove();
    throw e;
  } finally {
    if (given === undefined) pool?.close();
    f?.close();
  }
}

/** The coarse centroids and the PQ codebooks, trained on the training rows (see the module notes). */
async function train(
  o: IvfBuildOptions,
  rowsOf: (from: number, to: number) => Float32Array,
  iterations: number,
  seed: number,
  threads: number,
  bpv: number,
  ksub: number,
  pool: EncodeWorkers | undefined,
): Promise<IvfQuantizer> {
  const { d } = o;
  // Training rows, in row order.
  let nt = 0;
  for (const p of o.train) nt += o.starts[p + 1] - o.starts[p];
  // In shared memory: the coarse k-means's workers read it there.
  const xt = new Float32Array(new SharedArrayBuffer(nt * d * 4));
  let at = 0;
  for (const p of o.train) {
    const rows = rowsOf(o.starts[p], o.starts[p + 1]);
    xt.set(rows, at * d);
    at += o.starts[p + 1] - o.starts[p];
  }
  return await trainIvfPq(xt, nt, d, o.nlist, bpv, {
    iterations,
    seed,
    threads,
    signal: o.signal,
    ...(pool !== undefined ? { pool } : {}),
    ...(o.coarseIterations !== undefined
      ? { coarseIterations: o.coarseIterations }
      : ksub !== KSUB && o.iterations === undefined
      ? { coarseIterations: PQ4_COARSE_ITERATIONS }
      : {}),
    ...(ksub !== KSUB
      ? {
        ksub,
        pqRows: PQ4_ROWS_PER_CENTROID * ksub,
      }
      : {}),
  });
}

/** A trained IVF-PQ quantizer: what every row is encoded with. */
export interface IvfQuantizer {
  /** Coarse centroids, nlist × d. */
  readonly centroids: Float32Array;
  /** PQ codebooks, bpv × 256 × d/bpv. */
  readonly codebooks: Float32Array;
}

/**
 * Trains the coarse quantizer and the PQ codebooks on `nt` training rows
 * `xt` (row-major float32, d columns, the training paragraphs' rows in
 * index order; `xt` is overwritten with the residuals): k-means with
 * `nlist` centroids, then one k-means per sub-quantizer on the residuals
 * (see the module notes). The same rows give the same bytes, whatever
 * `threads`.
 */
export async function trainIvfPq(
  xt: Float32Array,
  nt: number,
  d: number,
  nlist: number,
  bpv: number,
  o: {
    readonly iterations?: number;
    /** The coarse k-means's iterations (default `iterations`). */
    readonly coarseIterations?: number;
    readonly seed?: number;
    readonly threads?: number;
    readonly signal?: AbortSignal;
    /** Centroids per sub-quantizer (default 256; 16 for 4-bit codes). */
    readonly ksub?: number;
    /** The sub-quantizers on at most this many of the rows' residuals (default all). */
    readonly pqRows?: number;
    /** Workers to train on (`threads` is then their number): used, not closed. */
    readonly pool?: EncodeWorkers;
  } = {},
): Promise<IvfQuantizer> {
  const iterations = o.iterations ?? KMEANS_ITERATIONS, seed = o.seed ?? IVF_SEED;
  // The coarse k-means, its assignments on the workers (the same centroids), and each
  // training row's list; then the rows' residuals and one k-means per sub-quantizer.
  const lists = new Uint32Array(nt);
  const centroids = await kmeansOnWorkers(
    xt,
    nt,
    d,
    nlist,
    {
      iterations: o.coarseIterations ?? iterations,
      seed,
      threads: o.threads ?? 0,
      ...(o.pool !== undefined ? { pool: o.pool } : {}),
    },
    lists,
  );
  for (let i = 0; i < nt; i++) {
    const l = lists[i];
    for (let t = 0; t < d; t++) xt[i * d + t] -= centroids[l * d + t];
  }
  const [xp, np] = subsetRows(xt, nt, d, o.pqRows ?? nt, seed + 1);
  const codebooks = await trainCodebooks(xp, np, d, bpv, {
    iterations,
    seed,
    threads: o.threads ?? 0,
    signal: o.signal,
    ...(o.ksub !== undefined ? { ksub: o.ksub } : {}),
    ...(o.pool !== undefined ? { pool: o.pool } : {}),
  });
  return { centroids, codebooks };
}

/**
 * At most `max` of the `n` rows of `x` (d columns): all of them (`x`
 * itself) when `n ≤ max`, else the `max` row numbers a Fisher–Yates
 * shuffle drawn from splitmix32 (`seed`; the shuffle of `kmeans.ts`, its
 * last `max` steps) puts last, in row order.
 */
export function subsetRows(
  x: Float32Array,
  n: number,
  d: number,
  max: number,
  seed: number,
): [Float32Array, number] {
  if (n <= max) return [x, n];
  const rng = splitmix32(seed);
  const perm = new Uint32Array(n);
  for (let i = 0; i < n; i++) perm[i] = i;
  for (let i = n - 1; i >= n - max; i--) {
    const j = rng() % (i + 1);
    const t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  const pick = perm.subarray(n - max).sort();
  const out = new Float32Array(max * d);
  for (let r = 0; r < max; r++) out.set(x.subarray(pick[r] * d, pick[r] * d + d), r * d);
  return [out, max];
}
