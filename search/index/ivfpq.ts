/**
 * The `ivf-pq` index kind: an exact index (`format.ts`) plus a LanceDB
 * table (`lance/`) holding every phrase vector with an IVF-PQ index over
 * it, built by `@lancedb/lancedb` ({@linkcode buildLanceTable}) and searched
 * by {@linkcode scoreIvf}.
 *
 * **Build.** `Index.ivfPq({ numPartitions: nlist, numSubVectors: bpv,
 * numBits: 8, distanceType })` with distance `dot` for the `ip` metric
 * (LanceDB's `_distance` is then `1 − q·p`) and `l2` for `l2` (`_distance`
 * is `‖q−p‖²`). The index is **trained on a sample of paragraphs**: the
 * `train_paragraphs` paragraphs (default {@linkcode DEFAULT_TRAIN_PARAGRAPHS},
 * like PIQA's 100 training matrices; all when fewer) whose
 * `sha256(paragraph id)` (hex) sorts first, a rule that any tool can
 * reproduce. Their rows make the table on which LanceDB trains the IVF
 * centroids and the PQ codebooks (LanceDB samples `nlist × 256` vectors of
 * them for k-means and `256 × 256` for PQ); the other rows are then added in
 * blocks of {@linkcode ADD_BLOCK} and encoded with the trained quantizers by
 * `optimize()`, so memory holds the training rows and one block. Vectors are
 * stored as float32 (f16 dumps are widened); each row carries its global row
 * number (`row`), the numbering of `paragraphs.ndjson`.
 *
 * **Not byte-reproducible.** LanceDB 0.31 seeds its k-means and samplers
 * from entropy and offers no seed in its JavaScript API, and its file names
 * are UUIDs: two builds of one dump give different `lance/` files and
 * slightly different approximate answers (the exact files are identical).
 * With `nprobe = nlist` and `refine` at least the phrase count, answers are
 * the exact ones whatever the training.
 *
 * **Search.** Per question, LanceDB returns the `C = max(topK, refine)`
 * approximate nearest rows from `nprobe` partitions. With `refine` > 0 these
 * candidates are re-scored exactly (`score.ts`, merge's scores and tie rule)
 * from the index's exact vectors and the best `topK` kept; with `refine` 0
 * the approximate score is reported (`1 − _distance` for `ip`,
 * `−_distance` for `l2`), ties to the smaller row.
 *
 * @module
 */
import { FileError, InputError } from "../../io/errors.ts";
import { halfTable } from "../dense_f64.ts";
import type { IndexMetric } from "./format.ts";
import { scoreDense, TopK } from "./score.ts";

/** Paragraphs the IVF-PQ quantizers are trained on, by default. */
export const DEFAULT_TRAIN_PARAGRAPHS = 100;

/** Rows per block added to the table after training. */
export const ADD_BLOCK = 65536;

/** The table's folder inside the index folder. */
export const LANCE_DIR = "lance";

/** The table's name in that folder. */
export const LANCE_TABLE = "phrases";

/** Parameters of an `ivf-pq` index, as stored in the header's `parameters`. */
export interface IvfPqParameters {
  /** IVF partitions (clusters). */
  readonly nlist: number;
  /** PQ sub-vectors (bytes per vector at 8 bits). */
  readonly bpv: number;
  /** Bits per PQ code (8). */
  readonly bits: number;
  /** Paragraphs in the training sample. */
  readonly train_paragraphs: number;
  /** Phrases (rows) in the training sample. */
  readonly train_phrases: number;
  /** The sampling rule, in words. */
  readonly train_sample: string;
  /** The library that built the table. */
  readonly library: string;
}

/** The sampling rule recorded in the header. */
export const TRAIN_SAMPLE_RULE =
  "the train_paragraphs paragraphs whose sha256(id) (hex) sorts first";

/** The library recorded in the header. */
export const LANCE_LIBRARY = "@lancedb/lancedb@0.31.0";

// Minimal views of the LanceDB and Arrow objects used here.
interface ArrowCtor {
  new (...args: unknown[]): unknown;
}
interface ArrowTableLike {
  readonly schema: { readonly fields: { readonly type: { children?: { type: unknown }[] } }[] };
  readonly batches: {
    readonly data: { readonly type: unknown; constructor: ArrowCtor };
    constructor: unknown;
  }[];
  constructor: ArrowCtor;
}
interface LanceQuery {
  addQueryVector(v: Float32Array): LanceQuery;
  distanceType(t: "dot" | "l2"): LanceQuery;
  nprobes(n: number): LanceQuery;
  select(cols: string[]): LanceQuery;
  limit(n: number): LanceQuery;
  toArray(): Promise<{ row: number; _distance: number; query_index?: number }[]>;
}
interface LanceTable {
  createIndex(col: string, opts: unknown): Promise<void>;
  add(data: unknown): Promise<unknown>;
  optimize(opts?: unknown): Promise<unknown>;
  listIndices(): Promise<{ numUnindexedRows: number }[]>;
  countRows(): Promise<number>;
  vectorSearch(v: Float32Array): LanceQuery;
  close(): void;
}
interface LanceConnection {
  createTable(name: string, data: unknown): Promise<LanceTable>;
  openTable(name: string): Promise<LanceTable>;
  close(): void;
}
interface LanceModule {
  connect(uri: string): Promise<LanceConnection>;
  makeArrowTable(rows: unknown[], opts: unknown): unknown;
  Index: { ivfPq(opts: unknown): unknown };
}

let lanceModule: Promise<LanceModule> | undefined;

/** LanceDB, loaded on first use (the exact kind never loads it). */
function lance(): Promise<LanceModule> {
  if (lanceModule === undefined) {
    try {
      // LanceDB's warnings (deprecations, statistics) would break one-line stderr.
      if (Deno.env.get("LANCE_LOG") === undefined) Deno.env.set("LANCE_LOG", "error");
    } catch { /* no --allow-env: its warnings may show */ }
    lanceModule = import("@lancedb/lancedb") as unknown as Promise<LanceModule>;
  }
  return lanceModule;
}

/**
 * Arrow classes of LanceDB's own Arrow instance, for the schema
 * `{row: int32, vector: fixed_size_list<float32>[d]}`: objects of another
 * Arrow instance lose their data on LanceDB's way in, so a one-row table
 * made by LanceDB (from a plain-object schema) gives the classes and types.
 */
async function arrowKit(d: number): Promise<ArrowTableLike> {
  const ldb = await lance();
  const schema = {
    fields: [
      { name: "row", nullable: false, type: { typeId: 2, bitWidth: 32, isSigned: true } },
      {
        name: "vector",
        nullable: false,
        type: {
          typeId: 16,
          listSize: d,
          children: [{ name: "item", nullable: true, type: { typeId: 3, precision: 1 } }],
        },
      },
    ],
    metadata: new Map(),
  };
  return ldb.makeArrowTable([{ row: 0, vector: new Array(d).fill(0) }], {
    schema,
  }) as ArrowTableLike;
}

/** The float32 rows `[from, to)` of a dense vectors file (f32 values or f16 bits). */
function readRows(
  f: Deno.FsFile,
  dtype: "f32" | "f16",
  d: number,
  from: number,
  to: number,
): Float32Array {
  const w = dtype === "f32" ? 4 : 2;
  const bytes = new Uint8Array((to - from) * d * w);
  f.seekSync(from * d * w, Deno.SeekMode.Start);
  let o = 0;
  while (o < bytes.length) {
    const n = f.readSync(bytes.subarray(o));
    if (n === null) throw new Error("vectors file ended early");
    o += n;
  }
  if (dtype === "f32") return new Float32Array(bytes.buffer);
  const bits = new Uint16Array(bytes.buffer), t = halfTable();
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = t[bits[i]];
  return out;
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

/** Options of {@linkcode buildLanceTable}. */
export interface LanceBuildOptions {
  /** The folder to create the table in (`INDEX_DIR.tmp/lance`). */
  readonly dir: string;
  /** The exact vectors file. */
  readonly vectors: string;
  /** Its dtype. */
  readonly dtype: "f32" | "f16";
  /** Vector dimension. */
  readonly d: number;
  /** Row ranges of the paragraphs: `starts[p]…starts[p+1]` (paragraphs + 1 entries). */
  readonly starts: readonly number[];
  /** Paragraph indices of the training sample (increasing). */
  readonly train: readonly number[];
  /** IVF partitions. */
  readonly nlist: number;
  /** PQ sub-vectors. */
  readonly bpv: number;
  /** Ranking metric. */
  readonly metric: IndexMetric;
  /** Told the rows added so far. */
  readonly onProgress?: (rows: number) => void;
}

/** Builds the LanceDB table and its IVF-PQ index (see the module notes). */
export async function buildLanceTable(o: LanceBuildOptions): Promise<void> {
  const ldb = await lance();
  const seed = await arrowKit(o.d);
  const schema = seed.schema, b0 = seed.batches[0];
  const DataC = b0.data.constructor, structType = b0.data.type;
  const RB = b0.constructor as unknown as ArrowCtor, TB = seed.constructor;
  const rowType = schema.fields[0].type, vecType = schema.fields[1].type;
  const f32Type = vecType.children![0].type;
  const batch = (rows: Int32Array, vecs: Float32Array) => {
    const n = rows.length;
    const r = new DataC(rowType, 0, n, 0, { 1: rows });
    const child = new DataC(f32Type, 0, n * o.d, 0, { 1: vecs });
    const v = new DataC(vecType, 0, n, 0, {}, [child]);
    return new RB(schema, new DataC(structType, 0, n, 0, {}, [r, v]));
  };
  const table = (batches: unknown[]) => new TB(schema, batches);
  const f = Deno.openSync(o.vectors, { read: true });
  const db = await ldb.connect(o.dir);
  let t: LanceTable | undefined;
  try {
    const blocks = (ranges: [number, number][]) => {
      // Ranges split into blocks of at most ADD_BLOCK rows.
      const out: [number, number][] = [];
      for (const [a, b] of ranges) {
        for (let s = a; s < b; s += ADD_BLOCK) out.push([s, Math.min(b, s + ADD_BLOCK)]);
      }
      return out;
    };
    const make = ([a, b]: [number, number]) =>
      batch(Int32Array.from({ length: b - a }, (_, i) => a + i), readRows(f, o.dtype, o.d, a, b));
    const inTrain = new Set(o.train);
    const trainRanges: [number, number][] = [], restRanges: [number, number][] = [];
    for (let p = 0; p + 1 < o.starts.length; p++) {
      const list = inTrain.has(p) ? trainRanges : restRanges;
      const last = list[list.length - 1];
      if (last !== undefined && last[1] === o.starts[p]) last[1] = o.starts[p + 1];
      else list.push([o.starts[p], o.starts[p + 1]]);
    }
    t = await db.createTable(LANCE_TABLE, table(blocks(trainRanges).map(make)));
    let done = await t.countRows();
    o.onProgress?.(done);
    await t.createIndex("vector", {
      config: ldb.Index.ivfPq({
        numPartitions: o.nlist,
        numSubVectors: o.bpv,
        numBits: 8,
        distanceType: o.metric === "ip" ? "dot" : "l2",
      }),
    });
    for (const r of blocks(restRanges)) {
      await t.add(table([make(r)]));
      done += r[1] - r[0];
      o.onProgress?.(done);
    }
    await t.optimize({ cleanupOlderThan: new Date(Date.now() + 1000), deleteUnverified: true });
    const [ix] = await t.listIndices();
    if (ix === undefined || ix.numUnindexedRows !== 0) {
      throw new Error(`LanceDB left ${ix?.numUnindexedRows ?? "all"} rows out of the index`);
    }
  } finally {
    t?.close();
    db.close();
    f.close();
  }
}

/** The files of the table folder, relative to `dir`, sorted (every file under it). */
export function lanceFiles(dir: string, sub = LANCE_DIR): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(`${dir}/${sub}`)) {
    const rel = `${sub}/${e.name}`;
    if (e.isDirectory) out.push(...lanceFiles(dir, rel));
    else out.push(rel);
  }
  return out.sort();
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
}

/** Options of {@linkcode scoreIvf}. */
export interface IvfQueryOptions {
  /** Ranks kept (default 10). */
  readonly topK?: number;
  /** Partitions probed (default 10, at most nlist). */
  readonly nprobe?: number;
  /** Approximate candidates re-scored exactly (0: none, the approximate scores are kept). */
  readonly refine?: number;
  /** Use the SIMD kernels for the re-scoring (default true). */
  readonly simd?: boolean;
}

/** Default partitions probed (PIQA's `--nprobe 10`). */
export const DEFAULT_NPROBE = 10;

const tables = new WeakMap<object, Promise<LanceTable>>();

async function tableOf(index: IvfIndexView): Promise<LanceTable> {
  let t = tables.get(index);
  if (t === undefined) {
    t = lance().then(async (ldb) => {
      const db = await ldb.connect(`${index.dir}/${LANCE_DIR}`);
      return db.openTable(LANCE_TABLE);
    });
    tables.set(index, t);
  }
  try {
    return await t;
  } catch (e) {
    tables.delete(index);
    throw new FileError({
      file: `${index.dir}/${LANCE_DIR}`,
      message: `cannot open the LanceDB table (${e instanceof Error ? e.message : String(e)})`,
    });
  }
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
 * The top rows of each question (float32 vectors of length d) by IVF-PQ
 * (see the module notes). Rows and ranks as `scoreQuestions` gives them.
 */
export async function scoreIvf(
  index: IvfIndexView,
  qs: readonly Float32Array[],
  options: IvfQueryOptions = {},
): Promise<TopK[]> {
  const k = Math.max(1, options.topK ?? 10);
  const nprobe = options.nprobe ?? DEFAULT_NPROBE;
  const why = nprobeProblem(index, nprobe);
  if (why !== undefined) throw new InputError({ file: index.dir, where: "", message: why });
  const refine = Math.max(0, options.refine ?? 0);
  const c = refine > 0 ? Math.max(k, refine) : k;
  const tops = qs.map(() => new TopK(k));
  if (qs.length === 0) return tops;
  const h = index.header;
  const t = await tableOf(index);
  let q = t.vectorSearch(qs[0]);
  for (let j = 1; j < qs.length; j++) q = q.addQueryVector(qs[j]);
  const res = await q.distanceType(h.metric === "ip" ? "dot" : "l2").nprobes(nprobe)
    .select(["row", "_distance"]).limit(c).toArray();
  const cands: { row: number; dist: number }[][] = qs.map(() => []);
  for (const r of res) cands[r.query_index ?? 0].push({ row: r.row, dist: r._distance });
  const d = h.d, a = index.dense!;
  for (let j = 0; j < qs.length; j++) {
    const list = cands[j].sort((x, y) => x.row - y.row);
    if (refine > 0) {
      const n = list.length;
      const g = a instanceof Float32Array ? new Float32Array(n * d) : new Uint16Array(n * d);
      list.forEach((x, i) => g.set(a.subarray(x.row * d, (x.row + 1) * d), i * d));
      const local = new TopK(k);
      scoreDense(g, n, d, 0, [qs[j]], [local], h.metric, options.simd);
      const order = local.rows.map((r, i) => ({ r, s: local.scores[i] })).sort((x, y) => x.r - y.r);
      for (const { r, s } of order) tops[j].offer(s, list[r].row);
    } else {
      for (const x of list) tops[j].offer(h.metric === "ip" ? 1 - x.dist : -x.dist, x.row);
    }
  }
  return tops;
}
