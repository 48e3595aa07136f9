/**
 * Opening an index folder ({@linkcode openIndex}): the header checked, every
 * data file's size checked against it (and its sha256 with `verify`, the
 * default), the paragraph table parsed and checked, the vectors loaded into
 * memory (exact search keeps them memory-resident: phrases × d × 4 (or 2)
 * bytes dense, nnz × 8 + phrases × 8 sparse, plus the phrase texts).
 *
 * With `memoryBudget` ({@linkcode OpenIndexOptions}), a dense index is
 * opened with the same checks but not loaded: its vectors, IVF-PQ lists and
 * phrase texts are read from disk on demand within the budget (`disk.ts`).
 *
 * An `ivf-pq` index is opened the same way (its exact vectors serve
 * `--exact` and the re-scoring); its `ivf/` files are checked too (size,
 * and sha256 with `verify`), and loaded on the first approximate query
 * (`ivfpq/ivfpq.ts`). One built by LanceDB (an earlier phraseval) is refused.
 *
 * The contents are checked too, in one linear pass (a forged file whose
 * sha256 in `index.json` was recomputed passes the sha256 check): every
 * vector value finite (f32, f16, sparse), sparse row pointers and columns in
 * range, and for `ivf-pq` the list offsets, the list rows (each phrase in
 * exactly one list, increasing within a list) and finite centroids and
 * codebooks (`ivfContentProblem` in `format.ts`; `ivfpq/ivfpq.ts` checks them
 * again when it loads them for a query).
 *
 * A path that is a file, a folder without `index.json`, a header of another
 * format, kind or a newer version, a file missing, truncated or changed
 * (sha256), a paragraph table that does not add up, contents out of range
 * or not finite, a file of the folder that is a symbolic link (even to a
 * file inside it), a named pipe, a device or a socket (looked at by name,
 * never opened, `io/regular.ts`), an `ivf` that is not a real folder: each
 * is an {@linkcode InputError} naming the file.
 *
 * @module
 */
import { sharedRowsBytes } from "../kernels/wasm_gather.ts";
import { createHash } from "node:crypto";
import * as Effect from "effect/Effect";
import { FileError, InputError } from "../../io/errors.ts";
import { statRealFolder, statRegularFile } from "../../io/regular.ts";
import {
  f16Name,
  firstNonFinite,
  firstNonFiniteF16,
  headerProblem,
  INDEX_FILES_ONLY,
  INDEX_HEADER,
  type IndexHeader,
  ivfContentProblem,
  PARAGRAPHS_FILE,
} from "./format.ts";
import { isShardSet, openShardSet } from "./shards.ts";
import { parseParagraphLine } from "./paragraphs.ts";
import { DiskIndex } from "./disk.ts";
import { pq4CodesBytes } from "./ivfpq/fastscan.ts";

/** An open exact index, all in memory. */
export interface ExactIndex {
  /** The folder. */
  readonly dir: string;
  /** Its header. */
  readonly header: IndexHeader;
  /** Paragraph ids, in index order. */
  readonly ids: readonly string[];
  /** First row of each paragraph, and the row count at the end (paragraphs + 1 entries). */
  readonly starts: Float64Array;
  /** The phrase of each row. */
  readonly phrases: readonly string[];
  /** Code point offsets `[start, end]` of each row (`-1, -1` where unknown), or `null`. */
  readonly offsets: Int32Array | null;
  /** Each paragraph's article title (`null` where unknown), or `null` when none is known. */
  readonly titles: readonly (string | null)[] | null;
  /** Each paragraph's text (`null` where unknown), or `null` when none is known. */
  readonly contexts: readonly (string | null)[] | null;
  /**
   * A shard's paragraphs' places in the whole corpus (`position` in
   * `paragraphs.ndjson`; `shards.ts`), or `null` for an unsharded index.
   */
  readonly positions: Float64Array | null;
  /** Dense vectors: f32 values, or f16 bits. */
  readonly dense?: Float32Array | Uint16Array;
  /** Sparse vectors: one CSR matrix over all rows (row pointers as float64). */
  readonly csr?: {
    readonly data: Float32Array;
    readonly indices: Int32Array;
    readonly indptr: Float64Array;
  };
  /**
   * An index opened with a memory budget ({@linkcode OpenIndexOptions.memoryBudget}):
   * its vectors, IVF-PQ lists and phrase texts are read from disk on demand
   * (`disk.ts`). Then `dense` is absent, `phrases` empty and `offsets`,
   * `titles` and `contexts` `null`: read a row's phrase with
   * {@linkcode phraseAt} and its offsets with {@linkcode offsetsAt}; close
   * it with `disk.close()` (or {@linkcode closeIndex}) when done.
   */
  readonly disk?: DiskIndex;
}

/** Options of {@linkcode openIndex}. */
export interface OpenIndexOptions {
  /** Check every data file's sha256 against the header (default true). */
  readonly verify?: boolean;
  /**
   * Bytes the index's vectors, IVF-PQ lists and phrase texts may hold in
   * memory (see `disk.ts` for what is counted): they are then read from
   * disk on demand instead of loaded whole, for the same answers. Dense
   * indexes only (a sparse or hybrid one is refused). Default: no budget,
   * everything loaded.
   */
  readonly memoryBudget?: number;
}

const bad = (file: string, message: string) => new InputError({ file, where: "", message });

/**
 * The size of the index file `path`, checked by name before it is opened:
 * `undefined` when it is missing; a symbolic link (even to a file inside the
 * folder), a named pipe, a device or a socket is refused ({@linkcode InputError}).
 */
function indexFileSize(path: string): number | undefined {
  return statRegularFile(path, { links: "refuse", why: INDEX_FILES_ONLY })?.size;
}

function readFile(path: string, shared = false): Uint8Array {
  if (indexFileSize(path) === undefined) {
    throw bad(path, "missing (the index folder is incomplete)");
  }
  try {
    return shared ? readShared(path) : Deno.readFileSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw bad(path, "missing (the index folder is incomplete)");
    }
    throw new FileError({ file: path, message: e instanceof Error ? e.message : String(e) });
  }
}

/**
 * The file `path` read into shared memory, so that worker threads see it without a copy: a
 * shared `WebAssembly.Memory` where one can be had, whose rows the re-scoring reads in place
 * (`search/kernels/wasm_gather.ts`), else a `SharedArrayBuffer` (a file that ended early gives
 * the bytes read: the caller checks the size).
 */
function readShared(path: string): Uint8Array {
  const f = Deno.openSync(path, { read: true });
  try {
    const b = sharedRowsBytes(f.statSync().size);
    for (let o = 0; o < b.length;) {
      const n = f.readSync(b.subarray(o));
      if (n === null) return b.subarray(0, o);
      o += n;
    }
    return b;
  } finally {
    f.close();
  }
}

/** The header of the index folder `dir`, checked (see the module notes). */
export function readIndexHeader(dir: string): IndexHeader {
  let st: Deno.FileInfo;
  try {
    st = Deno.statSync(dir);
  } catch (e) {
    throw new FileError({ file: dir, message: e instanceof Error ? e.message : String(e) });
  }
  if (!st.isDirectory) throw bad(dir, "is a file, not an index folder");
  const path = `${dir}/${INDEX_HEADER}`;
  if (indexFileSize(path) === undefined) {
    throw bad(dir, `not an index folder (no ${INDEX_HEADER})`);
  }
  let bytes: Uint8Array;
  try {
    bytes = Deno.readFileSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw bad(dir, `not an index folder (no ${INDEX_HEADER})`);
    }
    throw new FileError({ file: path, message: e instanceof Error ? e.message : String(e) });
  }
  let h: unknown;
  try {
    h = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (e) {
    throw bad(path, `invalid JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  const why = headerProblem(h);
  if (why !== undefined) throw bad(path, why);
  return h as IndexHeader;
}

/**
 * Checks, without reading them, that every data file `h` lists is in `dir`,
 * a regular file of the size the header says: the first that is not is an
 * {@linkcode InputError} with {@linkcode openIndex}'s message (a caller
 * that starts processes over an index, such as `serve` over shards, checks
 * before it starts any).
 *
 * @example
 * ```ts
 * import { checkIndexFileSizes } from "./read.ts";
 * import type { IndexHeader } from "./format.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.writeTextFileSync(`${dir}/vectors.f32`, "12345678");
 * const h = { files: { "vectors.f32": { bytes: 4, sha256: "" } } } as unknown as IndexHeader;
 * let why = "";
 * try {
 *   checkIndexFileSizes(dir, h);
 * } catch (e) {
 *   why = String(e);
 * }
 * Deno.removeSync(dir, { recursive: true });
 * if (!why.includes("8 bytes but index.json says 4")) throw new Error(why);
 * ```
 */
export function checkIndexFileSizes(dir: string, h: IndexHeader): void {
  for (const [name, want] of Object.entries(h.files)) {
    const path = `${dir}/${name}`;
    const size = indexFileSize(path);
    if (size === undefined) throw bad(path, "missing (the index folder is incomplete)");
    if (size !== want.bytes) {
      throw bad(
        path,
        `${size} bytes but ${INDEX_HEADER} says ${want.bytes} (truncated or corrupt index)`,
      );
    }
  }
}

function loadFile(
  dir: string,
  h: IndexHeader,
  name: string,
  verify: boolean,
  shared = false,
): Uint8Array {
  const path = `${dir}/${name}`;
  const bytes = readFile(path, shared);
  const want = h.files[name];
  if (bytes.byteLength !== want.bytes) {
    throw bad(
      path,
      `${bytes.byteLength} bytes but ${INDEX_HEADER} says ${want.bytes} (truncated or corrupt index)`,
    );
  }
  if (verify && createHash("sha256").update(bytes).digest("hex") !== want.sha256) {
    throw bad(path, `sha256 differs from ${INDEX_HEADER} (corrupt index)`);
  }
  return bytes;
}

function parseParagraphs(bytes: Uint8Array, path: string, h: IndexHeader) {
  const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  const lines = text.split("\n");
  if (lines.pop() !== "") throw bad(path, "does not end with a newline (truncated)");
  if (lines.length !== h.paragraphs) {
    throw bad(path, `${lines.length} paragraphs but ${INDEX_HEADER} says ${h.paragraphs}`);
  }
  const ids: string[] = [];
  const starts = new Float64Array(h.paragraphs + 1);
  const phrases: string[] = [];
  const offsets = h.offsets === null ? null : new Int32Array(2 * h.phrases).fill(-1);
  const titles: (string | null)[] = [], contexts: (string | null)[] = [];
  const positions = h.shard !== undefined ? new Float64Array(h.paragraphs) : null;
  let row = 0;
  for (let p = 0; p < lines.length; p++) {
    const o = parseParagraphLine(lines[p], p, row, h, path, p > 0 ? positions?.[p - 1] ?? -1 : -1);
    if (positions !== null) positions[p] = o.position!;
    titles.push(o.title);
    contexts.push(o.context);
    starts[p] = row;
    ids.push(o.id);
    for (const s of o.phrases) phrases.push(s);
    if (o.offsets !== null) {
      o.offsets.forEach(([s, e], i) => {
        offsets![2 * (row + i)] = s;
        offsets![2 * (row + i) + 1] = e;
      });
    }
    row += o.rows;
  }
  if (row !== h.phrases) throw bad(path, `${row} rows but ${INDEX_HEADER} says ${h.phrases}`);
  starts[h.paragraphs] = row;
  return {
    ids,
    starts,
    phrases,
    offsets,
    titles: titles.some((t) => t !== null) ? titles : null,
    contexts: contexts.some((c) => c !== null) ? contexts : null,
    positions,
  };
}

/** {@linkcode openIndex} without Effect: throws {@linkcode InputError} / {@linkcode FileError}. */
export function openIndexSync(dir: string, options: OpenIndexOptions = {}): ExactIndex {
  const h = readIndexHeader(dir);
  const verify = options.verify !== false;
  if (options.memoryBudget !== undefined) {
    const budget = options.memoryBudget;
    if (!Number.isSafeInteger(budget) || budget < 1) {
      throw bad(dir, `bad memory budget ${budget} (a whole number of bytes, at least 1)`);
    }
    const { disk, table } = DiskIndex.open(dir, h, budget, verify);
    return {
      dir,
      header: h,
      ids: table.ids,
      starts: table.starts,
      phrases: [],
      offsets: null,
      titles: null,
      contexts: null,
      positions: table.positions,
      disk,
    };
  }
  const load = (name: string) => loadFile(dir, h, name, verify);
  const table = parseParagraphs(load(PARAGRAPHS_FILE), `${dir}/${PARAGRAPHS_FILE}`, h);
  if (h.kind === "ivf-pq") {
    statRealFolder(`${dir}/ivf`, INDEX_FILES_ONLY);
    const ivf = new Map<string, Uint8Array>();
    for (const name of Object.keys(h.files).filter((k) => k.startsWith("ivf/"))) {
      const path = `${dir}/${name}`;
      const size = indexFileSize(path);
      if (size === undefined) throw bad(path, "missing (the index folder is incomplete)");
      if (size !== h.files[name].bytes) {
        throw bad(
          path,
          `${size} bytes but ${INDEX_HEADER} says ${
            h.files[name].bytes
          } (truncated or corrupt index)`,
        );
      }
      // The codes are checked by their sha256 only (every byte is a valid code).
      if (name !== "ivf/codes.u8") ivf.set(name, verify ? load(name) : readFile(path));
      else if (verify) load(name);
    }
    checkIvfContent(dir, h, ivf);
  }
  if (h.vectors === "dense") {
    // An IVF-PQ index's vectors in shared memory: its search workers re-score from them
    // without a copy (`ivfpq/ivfpq.ts`).
    const b = loadFile(dir, h, `vectors.${h.dtype}`, verify, h.kind === "ivf-pq");
    const n = h.phrases * h.d;
    const dense = h.dtype === "f32"
      ? new Float32Array(b.buffer, b.byteOffset, n)
      : new Uint16Array(b.buffer, b.byteOffset, n);
    const at = dense instanceof Float32Array ? firstNonFinite(dense) : firstNonFiniteF16(dense);
    if (at >= 0) {
      const v = dense instanceof Float32Array ? String(dense[at]) : f16Name(dense[at]);
      throw bad(
        `${dir}/vectors.${h.dtype}`,
        `${v} at row ${Math.floor(at / h.d)}, column ${at % h.d} (corrupt index)`,
      );
    }
    return { dir, header: h, ...table, dense };
  }
  const d = load("data.f32"), ix = load("indices.i32"), p = load("indptr.i64");
  const nnz = h.nnz ?? 0;
  const data = new Float32Array(d.buffer, d.byteOffset, nnz);
  const indices = new Int32Array(ix.buffer, ix.byteOffset, nnz);
  const ptr64 = new BigInt64Array(p.buffer, p.byteOffset, h.phrases + 1);
  const indptr = new Float64Array(h.phrases + 1);
  for (let i = 0; i <= h.phrases; i++) {
    indptr[i] = Number(ptr64[i]);
    if (i > 0 && !(indptr[i] >= indptr[i - 1])) {
      throw bad(`${dir}/indptr.i64`, `row pointers decrease at row ${i - 1} (corrupt index)`);
    }
  }
  if (indptr[0] !== 0 || indptr[h.phrases] !== nnz) {
    throw bad(`${dir}/indptr.i64`, `row pointers do not span the ${nnz} values (corrupt index)`);
  }
  for (let k = 0; k < nnz; k++) {
    if (!(indices[k] >= 0 && indices[k] < h.d)) {
      throw bad(`${dir}/indices.i32`, `column ${indices[k]} at ${k} is outside d = ${h.d}`);
    }
  }
  const at = firstNonFinite(data);
  if (at >= 0) throw bad(`${dir}/data.f32`, `value ${at} is ${data[at]} (corrupt index)`);
  return { dir, header: h, ...table, csr: { data, indices, indptr } };
}

/** Refuses IVF-PQ files whose contents are out of range or not finite (`ivfContentProblem`). */
function checkIvfContent(dir: string, h: IndexHeader, files: Map<string, Uint8Array>): void {
  const f32 = (name: string) => {
    const b = files.get(name)!;
    return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
  };
  const off = files.get("ivf/list_offsets.i64")!, rw = files.get("ivf/list_rows.u32")!;
  const nlist = h.parameters.nlist as number;
  const offsets = Float64Array.from(
    new BigInt64Array(off.buffer, off.byteOffset, nlist + 1),
    (x) => Number(x),
  );
  const why = ivfContentProblem(h.phrases, nlist, {
    centroids: f32("ivf/centroids.f32"),
    codebooks: f32("ivf/codebooks.f32"),
    offsets,
    rows: new Uint32Array(rw.buffer, rw.byteOffset, h.phrases),
  });
  if (why !== undefined) throw bad(`${dir}/${why[0]}`, why[1]);
  if (h.parameters.bits === 4) {
    // A 4-bit index's codes are its lists padded to blocks of 32 rows.
    const want = pq4CodesBytes(offsets, nlist, h.parameters.bpv as number);
    const have = h.files["ivf/codes.u8"].bytes;
    if (have !== want) {
      throw bad(
        `${dir}/ivf/codes.u8`,
        `${have} bytes but the lists' blocks of 32 rows take ${want} (corrupt index)`,
      );
    }
  }
}

/**
 * Opens an index folder (see the module notes).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { openIndex } from "./read.ts";
 * const dir = Deno.makeTempDirSync();
 * const r = await Effect.runPromise(Effect.flip(openIndex(dir)));
 * if (!String(r).includes("not an index folder")) throw new Error(String(r));
 * Deno.removeSync(dir);
 * ```
 */
export const openIndex = (
  dir: string,
  options: OpenIndexOptions = {},
): Effect.Effect<ExactIndex, InputError | FileError> =>
  Effect.try({
    try: () => openIndexSync(dir, options),
    catch: (e) =>
      e instanceof InputError || e instanceof FileError
        ? e
        : new FileError({ file: dir, message: e instanceof Error ? e.message : String(e) }),
  });

/** The phrase of `row`: from memory, or read from disk for an index opened with a budget. */
export function phraseAt(index: ExactIndex, row: number): string {
  if (index.disk === undefined) return index.phrases[row];
  const p = paragraphOfRow(index, row);
  return index.disk.phrase(p, row - index.starts[p]);
}

/** The code point offsets `[start, end]` of `row`, or `undefined` where the index has none. */
export function offsetsAt(index: ExactIndex, row: number): [number, number] | undefined {
  if (index.disk === undefined) {
    const off = index.offsets;
    return off !== null && off[2 * row] >= 0 ? [off[2 * row], off[2 * row + 1]] : undefined;
  }
  const p = paragraphOfRow(index, row);
  const o = index.disk.offsets(p, row - index.starts[p]);
  return o[0] >= 0 ? o : undefined;
}

/**
 * Paragraph `p`'s article title and text (`null` where unknown): from
 * memory (`titles`, `contexts`), or read from disk for an index opened with
 * a budget.
 */
export function paragraphText(
  index: ExactIndex,
  p: number,
): { title: string | null; context: string | null } {
  if (index.disk !== undefined) return index.disk.paragraphText(p);
  return { title: index.titles?.[p] ?? null, context: index.contexts?.[p] ?? null };
}

/** Closes the files of an index opened with a memory budget (nothing for one in memory). */
export function closeIndex(index: ExactIndex): void {
  index.disk?.close();
}

/** The paragraph (index) a row belongs to, by binary search of `starts`. */
export function paragraphOfRow(index: Pick<ExactIndex, "starts">, row: number): number {
  const s = index.starts;
  let lo = 0, hi = s.length - 2;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (s[mid] <= row) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** The passages of an index (`paragraphs.ndjson`): what top-k passage accuracy reads. */
export interface IndexPassages {
  /** Paragraph ids, in index order. */
  readonly ids: readonly string[];
  /** Each paragraph's text, by id (paragraphs without a text are left out). */
  readonly text: ReadonlyMap<string, string>;
  /** Each paragraph's title, by id (paragraphs without a title are left out). */
  readonly titles: ReadonlyMap<string, string>;
  /** The file read (`<dir>/paragraphs.ndjson`), for messages. */
  readonly file: string;
}

/**
 * Reads the paragraph table of the index folder `dir` only (the header and
 * `paragraphs.ndjson`, checked as {@linkcode openIndexSync} checks them,
 * sha256 included; no vectors): each paragraph's id, title and text. A
 * folder of shards (`shards.ts`, checked as a search checks it) gives the
 * paragraphs of all its shards, in corpus order.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { writeContextDump } from "../../io/dump/writer.ts";
 * import { buildIndex } from "./build.ts";
 * import { readIndexPassages } from "./read.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.mkdirSync(`${dir}/c`);
 * await Effect.runPromise(writeContextDump(`${dir}/c`, {
 *   id: "T_0",
 *   phrases: [{ text: "Paris", start: 0, end: 5 }],
 *   matrix: { kind: "dense", rows: 1, cols: 2, dtype: "f32", data: new Float32Array([1, 0]) },
 * }, { sparse: false, compressed: false }, "Paris is big."));
 * await Effect.runPromise(buildIndex({ contextEmb: `${dir}/c`, out: `${dir}/ix` }));
 * const p = readIndexPassages(`${dir}/ix`);
 * Deno.removeSync(dir, { recursive: true });
 * if (p.text.get("T_0") !== "Paris is big." || p.titles.get("T_0") !== "T") throw new Error();
 * ```
 */
export function readIndexPassages(dir: string): IndexPassages {
  if (isShardSet(dir)) {
    // A folder of shards: every shard's paragraphs, in corpus order.
    const set = openShardSet(dir, readIndexHeader);
    const parts = set.shards.map((e) => {
      const file = `${e.dir}/${PARAGRAPHS_FILE}`;
      const t = parseParagraphs(loadFile(e.dir, e.header, PARAGRAPHS_FILE, true), file, e.header);
      return { t, file };
    });
    const all = parts.flatMap(({ t }) => t.ids.map((id, p) => ({ id, at: t.positions![p], t, p })));
    all.sort((a, b) => a.at - b.at);
    const text = new Map<string, string>(), titles = new Map<string, string>();
    for (const { id, t, p } of all) {
      const c = t.contexts?.[p], ti = t.titles?.[p];
      if (typeof c === "string") text.set(id, c);
      if (typeof ti === "string") titles.set(id, ti);
    }
    return { ids: all.map((x) => x.id), text, titles, file: set.dir };
  }
  const h = readIndexHeader(dir);
  const file = `${dir}/${PARAGRAPHS_FILE}`;
  const table = parseParagraphs(loadFile(dir, h, PARAGRAPHS_FILE, true), file, h);
  const text = new Map<string, string>(), titles = new Map<string, string>();
  table.ids.forEach((id, p) => {
    const c = table.contexts?.[p], t = table.titles?.[p];
    if (typeof c === "string") text.set(id, c);
    if (typeof t === "string") titles.set(id, t);
  });
  return { ids: table.ids, text, titles, file };
}
