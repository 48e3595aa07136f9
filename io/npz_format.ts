/**
 * The `.npz` format on bytes: reader and writer, free of Effect so that
 * worker threads (merge) load it fast. `io/npz.ts` re-exports it and adds
 * reading and writing files as Effects.
 *
 * @module
 */
import * as Data from "effect/Data";
import {
  bytesArray,
  encodeNpy,
  MAX_NPY_HEADER,
  type NdArray,
  npyDataStart,
  NpyError,
  type NpyHeader,
  parseNpy,
  parseNpyHeader,
  stringsOf,
} from "./npy_format.ts";
import {
  encodeZip,
  extractZipEntry,
  readZipDirectory,
  type ZipCodec,
  type ZipEntry,
  zipEntryPrefix,
  ZipError,
  type ZipLimits,
} from "./zip.ts";

/**
 * An `.npz` file that cannot be read or written. `message` is one line:
 * `file: entry: reason` (the entry part only when one entry is concerned).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { readNpz } from "./npz.ts";
 * const r = readNpz("missing.npz").pipe(
 *   Effect.map(() => "read"),
 *   Effect.catchTag("NpzError", (e) => Effect.succeed(e.message)),
 * );
 * if (await Effect.runPromise(r) === "read") throw new Error("a missing file was read");
 * ```
 */
export class NpzError extends Data.TaggedError("NpzError")<{
  /** The archive (path or display name) given by the caller. */
  readonly file: string;
  /** The entry concerned (`arr_0.npy`), if any. */
  readonly entry?: string;
  /** What is wrong, without the file and entry. */
  readonly reason: string;
  /** One line: `file: entry: reason`. */
  readonly message: string;
}> {
  /** Builds the error and its one-line message. */
  static of(file: string, entry: string | undefined, reason: string): NpzError {
    const message = entry === undefined ? `${file}: ${reason}` : `${file}: ${entry}: ${reason}`;
    return entry === undefined
      ? new NpzError({ file, reason, message })
      : new NpzError({ file, entry, reason, message });
  }

  /** Wraps a {@linkcode ZipError} or {@linkcode NpyError} (other values are rethrown). */
  static from(file: string, e: unknown): NpzError {
    if (e instanceof NpzError) return e;
    if (e instanceof ZipError || e instanceof NpyError) return NpzError.of(file, e.entry, e.reason);
    throw e;
  }

  /** The one-line message. */
  override toString(): string {
    return this.message;
  }
}

/** Options for reading archives: the ZIP limits (see {@linkcode ZipLimits}). */
export interface NpzReadOptions extends ZipLimits {
  /** DEFLATE and CRC-32 to read entries with (default: the runtime's zlib). */
  readonly codec?: ZipCodec;
  /**
   * Checks what an entry's `.npy` header declares before the entry is
   * extracted (only its header is inflated by then): a reason refuses the
   * archive, naming the entry. Dump readers check shapes against the phrase
   * count here.
   */
  readonly checkHeader?: (entry: string, header: NpyHeader) => string | undefined;
}

function isNpyMagic(b: Uint8Array): boolean {
  return b.length >= 8 && b[0] === 0x93 && b[1] === 0x4e && b[2] === 0x55 && b[3] === 0x4d &&
    b[4] === 0x50 && b[5] === 0x59;
}

/** Bytes of an entry inflated first for its header (more only when the header is longer). */
const FIRST_HEADER_READ = 256;

/**
 * What the `.npy` entry `entry` of an archive declares, read by inflating
 * only its header (at most {@linkcode MAX_NPY_HEADER} bytes), or from
 * `inflated`, the entry's bytes when the caller has them already. The entry's
 * declared uncompressed size must not exceed what the header's shape and
 * dtype need: an entry is never trusted with more memory than its shape
 * declares (an entry declaring less fails later, as truncated data).
 *
 * @throws {NpyError} for a bad header or an entry larger than its shape.
 * @throws {ZipError} for corrupt deflate data.
 *
 * @example
 * ```ts
 * import { ndarray } from "./npy.ts";
 * import { encodeNpz, npzEntryHeader } from "./npz.ts";
 * import { readZipDirectory } from "./zip.ts";
 * const bytes = encodeNpz([ndarray(new Float32Array(6), [2, 3])], { compressed: true });
 * const [entry] = readZipDirectory(bytes, "a.npz");
 * if (npzEntryHeader(bytes, entry, "a.npz").shape.join() !== "2,3") throw new Error("shape");
 * ```
 */
export function npzEntryHeader(
  bytes: Uint8Array,
  entry: ZipEntry,
  file: string,
  codec?: ZipCodec,
  inflated?: Uint8Array,
): NpyHeader {
  // With the entry already inflated (and checked), its header is read from that.
  const prefix = (n: number) =>
    inflated === undefined
      ? zipEntryPrefix(bytes, entry, file, n, codec)
      : inflated.subarray(0, Math.min(n, inflated.length));
  // NumPy's headers take 128 bytes (64 for version 1.0's smallest): one read usually has it.
  const first = prefix(FIRST_HEADER_READ);
  const start = npyDataStart(first);
  if (isNpyMagic(first) && start > MAX_NPY_HEADER) {
    throw NpyError.of(
      file,
      entry.name,
      `header of ${start} bytes is larger than the ${MAX_NPY_HEADER} bytes read for one`,
    );
  }
  const pre = start > first.length ? prefix(start) : first;
  const h = parseNpyHeader(pre, file, { entry: entry.name });
  if (entry.uncompressedSize > h.dataStart + h.dataBytes) {
    const shape = h.shape.length === 1 ? `(${h.shape[0]},)` : `(${h.shape.join(", ")})`;
    throw NpyError.of(
      file,
      entry.name,
      `data size does not match the shape: shape ${shape} of ${h.descr} needs ${h.dataBytes} bytes, the entry declares ${
        entry.uncompressedSize - h.dataStart
      } (refused before inflating)`,
    );
  }
  return h;
}

/**
 * Reads one `.npy` entry of an archive: its header first
 * ({@linkcode npzEntryHeader}, then `options.checkHeader`), then its data,
 * inflated no further than the declared size.
 *
 * @throws {NpzError} naming the file and the entry.
 *
 * @example
 * ```ts
 * import { ndarray } from "./npy.ts";
 * import { encodeNpz, readNpzEntry } from "./npz.ts";
 * import { readZipDirectory } from "./zip.ts";
 * const bytes = encodeNpz([ndarray(new Float32Array(6), [2, 3])], { compressed: true });
 * const [entry] = readZipDirectory(bytes, "a.npz");
 * if (readNpzEntry(bytes, entry, "a.npz").data.length !== 6) throw new Error("not read");
 * ```
 */
export function readNpzEntry(
  bytes: Uint8Array,
  entry: ZipEntry,
  file: string,
  options: NpzReadOptions = {},
): NdArray {
  try {
    const h = npzEntryHeader(bytes, entry, file, options.codec);
    const why = options.checkHeader?.(entry.name, h);
    if (why !== undefined) throw NpzError.of(file, entry.name, why);
    const data = extractZipEntry(bytes, entry, file, options.codec);
    // Inflated buffers are ours: let the array view them without a copy.
    return parseNpy(data, file, { entry: entry.name, copy: entry.method === 0 });
  } catch (e) {
    throw NpzError.from(file, e);
  }
}

/** Options for writing archives. */
export interface NpzWriteOptions {
  /** Deflate the entries (`savez_compressed`) instead of storing them (`savez`). */
  readonly compressed?: boolean;
  /** Deflate level 0-9 (default 6, as NumPy through Python's zlib). */
  readonly level?: number;
  /** Name for error messages (default `<memory>`). */
  readonly file?: string;
}

/** Arrays to write: a record or map from key (without `.npy`), or a list (`arr_0`, ...). */
export type NpzEntries =
  | Readonly<Record<string, NdArray>>
  | ReadonlyMap<string, NdArray>
  | readonly NdArray[];

function entriesOf(entries: NpzEntries): [string, NdArray][] {
  if (Array.isArray(entries)) return entries.map((a, i) => [`arr_${i}`, a]);
  if (entries instanceof Map) return [...entries];
  return Object.entries(entries as Readonly<Record<string, NdArray>>);
}

// ---------------------------------------------------------------------------
// Dense.

/**
 * Parses a dense `.npz` archive into a map from key (entry name without
 * `.npy`) to array, in archive order. Every entry must be a `.npy` file, and
 * is read with {@linkcode readNpzEntry}: its header first, which bounds what
 * the entry may inflate to.
 *
 * @throws {NpzError} for anything `io/zip.ts` or `io/npy.ts` refuses, or an
 *   entry that is not `.npy`.
 *
 * @example
 * ```ts
 * import { ndarray } from "./npy.ts";
 * import { encodeNpz, parseNpz } from "./npz.ts";
 * const arrays = parseNpz(encodeNpz([ndarray(new Float32Array(4), [2, 2])]), "emb.npz");
 * if (arrays.get("arr_0")?.shape.join() !== "2,2") throw new Error("no arr_0");
 * ```
 */
export function parseNpz(
  bytes: Uint8Array,
  file: string,
  options: NpzReadOptions = {},
): Map<string, NdArray> {
  try {
    const entries = readZipDirectory(bytes, file, options);
    const maxTotal = options.maxTotalSize ?? 4 * 1024 ** 3;
    let total = 0;
    for (const e of entries) total += e.uncompressedSize;
    if (total > maxTotal) {
      throw NpzError.of(
        file,
        undefined,
        `entries declare ${total} bytes in all, above the limit of ${maxTotal}`,
      );
    }
    const out = new Map<string, NdArray>();
    for (const e of entries) {
      if (e.isDirectory) continue;
      if (!e.name.endsWith(".npy")) throw NpzError.of(file, e.name, "entry is not a .npy array");
      out.set(e.name.slice(0, -4), readNpzEntry(bytes, e, file, options));
    }
    return out;
  } catch (e) {
    throw NpzError.from(file, e);
  }
}

/**
 * Encodes arrays as a dense `.npz` archive (stored unless `compressed`).
 * numpy.load reads it like a `savez`/`savez_compressed` file.
 *
 * @throws {NpzError} for an invalid array or an unsafe key.
 *
 * @example
 * ```ts
 * import { ndarray } from "./npy.ts";
 * import { encodeNpz } from "./npz.ts";
 * const bytes = encodeNpz([ndarray(new Float32Array([1, 2]), [1, 2])], { compressed: true }); // key arr_0
 * if (bytes[0] !== 0x50 || bytes[1] !== 0x4b) throw new Error("not a zip");
 * ```
 */
export function encodeNpz(entries: NpzEntries, options: NpzWriteOptions = {}): Uint8Array {
  const file = options.file ?? "<memory>";
  try {
    const files = entriesOf(entries).map(([key, arr]) => {
      const name = `${key}.npy`;
      return { name, data: encodeNpy(arr, { file, entry: name }) };
    });
    return encodeZip(files, { compressed: options.compressed, level: options.level, file });
  } catch (e) {
    throw NpzError.from(file, e);
  }
}

// ---------------------------------------------------------------------------
// Sparse.

/** A CSR or CSC matrix as scipy stores it. */
export interface CompressedSparseMatrix {
  /** `csr`: rows compressed; `csc`: columns compressed. */
  readonly format: "csr" | "csc";
  /** `[rows, cols]`. */
  readonly shape: readonly [number, number];
  /** Stored values, 1-d, length nnz. */
  readonly data: NdArray;
  /** Column (CSR) or row (CSC) index of each value, 1-d integer array. */
  readonly indices: NdArray;
  /** Offsets into `indices`/`data` per row (CSR) or column (CSC): length major + 1. */
  readonly indptr: NdArray;
  /** A scipy `sparray` (`csr_array`) rather than an `spmatrix`; written as `_is_array`. */
  readonly isArray?: boolean;
}

/** A COO matrix as scipy stores it. */
export interface CooSparseMatrix {
  /** Coordinate format. */
  readonly format: "coo";
  /** `[rows, cols]`. */
  readonly shape: readonly [number, number];
  /** Stored values, 1-d, length nnz. */
  readonly data: NdArray;
  /** Row of each value, 1-d integer array. */
  readonly row: NdArray;
  /** Column of each value, 1-d integer array. */
  readonly col: NdArray;
  /** A scipy `sparray` (`coo_array`) rather than an `spmatrix`. */
  readonly isArray?: boolean;
}

/** A scipy sparse matrix (`scipy.sparse.save_npz` content). */
export type SparseMatrix = CompressedSparseMatrix | CooSparseMatrix;

/** What an `.npz` holds: dense arrays, or a scipy sparse matrix (plus its raw arrays). */
export type NpzContent =
  | { readonly kind: "dense"; readonly arrays: Map<string, NdArray> }
  | {
    readonly kind: "sparse";
    readonly matrix: SparseMatrix;
    readonly arrays: Map<string, NdArray>;
  };

const INT_DTYPES = new Set(["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"]);

/** Integer values as numbers (rejecting those beyond 2^53). */
function intValues(arr: NdArray, what: string, fail: (r: string) => never): ArrayLike<number> {
  if (!INT_DTYPES.has(arr.dtype)) fail(`${what} has dtype ${arr.dtype}, expected an integer dtype`);
  if (arr.shape.length !== 1) fail(`${what} is not 1-d (shape [${arr.shape.join(", ")}])`);
  const d = arr.data;
  if (d instanceof BigInt64Array || d instanceof BigUint64Array) {
    const out = new Float64Array(d.length);
    for (let i = 0; i < d.length; i++) {
      const v = d[i];
      if (v > 9007199254740991n || v < -9007199254740991n) {
        fail(`${what}[${i}] = ${v} is out of range`);
      }
      out[i] = Number(v);
    }
    return out;
  }
  return d as ArrayLike<number>;
}

/** The string of a 0-d (or 1-element) `S`/`U` array, or undefined. */
function scalarString(arr: NdArray | undefined): string | undefined {
  if (arr === undefined || !(arr.dtype.startsWith("S") || arr.dtype.startsWith("U"))) {
    return undefined;
  }
  if (elementCountOf(arr) !== 1) return undefined;
  return stringsOf(arr)[0];
}

function elementCountOf(arr: NdArray): number {
  return arr.shape.reduce((a, b) => a * b, 1);
}

/**
 * Validates the arrays of a scipy sparse archive and builds the matrix.
 * Structure is checked: shape is two non-negative integers; for CSR/CSC,
 * `indptr` has major+1 non-decreasing entries from 0 to nnz, and every index is
 * within the minor dimension; for COO, rows and columns are within bounds.
 */
function sparseFromArrays(arrays: Map<string, NdArray>, file: string): SparseMatrix {
  const fail = (reason: string, entry?: string): never => {
    throw NpzError.of(file, entry, reason);
  };
  const need = (key: string): NdArray =>
    arrays.get(key) ?? fail(`sparse archive has no '${key}' array`);
  const format = scalarString(arrays.get("format"));
  if (format === undefined) return fail("'format' is not a 0-d string array", "format.npy");
  if (format !== "csr" && format !== "csc" && format !== "coo") {
    return fail(`unsupported sparse format '${format}' (only csr, csc and coo)`, "format.npy");
  }
  const shapeArr = need("shape");
  const shapeV = intValues(shapeArr, "shape", (r) => fail(r, "shape.npy"));
  if (shapeV.length !== 2 || shapeV[0] < 0 || shapeV[1] < 0) {
    fail(
      `shape must be two non-negative integers, got [${Array.from(shapeV).join(", ")}]`,
      "shape.npy",
    );
  }
  const shape: [number, number] = [shapeV[0], shapeV[1]];
  const data = need("data");
  if (data.shape.length !== 1) {
    fail(`data is not 1-d (shape [${data.shape.join(", ")}])`, "data.npy");
  }
  if (data.dtype.startsWith("S") || data.dtype.startsWith("U")) {
    fail(`data has non-numeric dtype ${data.dtype}`, "data.npy");
  }
  const nnz = data.shape[0];
  const isArrayV = arrays.get("_is_array");
  const isArray = isArrayV !== undefined && isArrayV.data.length > 0 &&
    Number(isArrayV.data[0]) !== 0;
  if (format === "coo") {
    let row: NdArray, col: NdArray;
    if (arrays.has("row") || !arrays.has("coords")) {
      row = need("row");
      col = need("col");
    } else {
      const coords = need("coords");
      if (coords.shape.length !== 2 || coords.shape[0] !== 2) {
        return fail(
          `coords must have shape (2, nnz) for a matrix, got [${coords.shape.join(", ")}]`,
          "coords.npy",
        );
      }
      const n = coords.shape[1];
      row = { ...coords, shape: [n], data: coords.data.subarray(0, n) as typeof coords.data };
      col = { ...coords, shape: [n], data: coords.data.subarray(n, 2 * n) as typeof coords.data };
    }
    const r = intValues(row, "row", (x) => fail(x, "row.npy"));
    const c = intValues(col, "col", (x) => fail(x, "col.npy"));
    if (r.length !== nnz || c.length !== nnz) {
      fail(`row (${r.length}), col (${c.length}) and data (${nnz}) lengths differ`);
    }
    for (let i = 0; i < nnz; i++) {
      if (!(r[i] >= 0 && r[i] < shape[0])) {
        fail(`row[${i}] = ${r[i]} is outside 0..${shape[0] - 1}`, "row.npy");
      }
      if (!(c[i] >= 0 && c[i] < shape[1])) {
        fail(`col[${i}] = ${c[i]} is outside 0..${shape[1] - 1}`, "col.npy");
      }
    }
    return { format, shape, data, row, col, isArray };
  }
  const indices = need("indices");
  const indptr = need("indptr");
  const ind = intValues(indices, "indices", (x) => fail(x, "indices.npy"));
  const ptr = intValues(indptr, "indptr", (x) => fail(x, "indptr.npy"));
  const major = format === "csr" ? shape[0] : shape[1];
  const minor = format === "csr" ? shape[1] : shape[0];
  if (ptr.length !== major + 1) {
    fail(
      `indptr has ${ptr.length} entries, expected ${major + 1} for shape (${shape[0]}, ${
        shape[1]
      })`,
      "indptr.npy",
    );
  }
  if (ind.length !== nnz) {
    fail(`indices (${ind.length}) and data (${nnz}) lengths differ`, "indices.npy");
  }
  if (ptr[0] !== 0) fail(`indptr[0] is ${ptr[0]}, expected 0`, "indptr.npy");
  for (let i = 1; i <= major; i++) {
    if (ptr[i] < ptr[i - 1]) fail(`indptr decreases at ${i}`, "indptr.npy");
  }
  if (ptr[major] !== nnz) fail(`indptr ends at ${ptr[major]}, expected nnz = ${nnz}`, "indptr.npy");
  for (let i = 0; i < nnz; i++) {
    if (!(ind[i] >= 0 && ind[i] < minor)) {
      fail(`indices[${i}] = ${ind[i]} is outside 0..${minor - 1}`, "indices.npy");
    }
  }
  return { format, shape, data, indices, indptr, isArray };
}

/** Whether the arrays look like a scipy sparse archive (a string `format` plus `shape`). */
function looksSparse(arrays: Map<string, NdArray>): boolean {
  return scalarString(arrays.get("format")) !== undefined && arrays.has("shape") &&
    arrays.has("data");
}

/**
 * Parses any `.npz`: detects a scipy sparse archive (a 0-d string `format`
 * entry with `shape` and `data`) and validates it, else returns the dense
 * arrays.
 *
 * @throws {NpzError} as {@linkcode parseNpz}, or for an invalid sparse structure.
 *
 * @example
 * ```ts
 * import { ndarray } from "./npy.ts";
 * import { encodeNpz, parseNpzContent } from "./npz.ts";
 * const c = parseNpzContent(encodeNpz([ndarray(new Float32Array(6), [3, 2])]), "ctx.npz");
 * const rows = c.kind === "sparse" ? c.matrix.shape[0] : c.arrays.get("arr_0")!.shape[0];
 * if (rows !== 3) throw new Error(`${rows} rows`);
 * ```
 */
export function parseNpzContent(
  bytes: Uint8Array,
  file: string,
  options: NpzReadOptions = {},
): NpzContent {
  const arrays = parseNpz(bytes, file, options);
  if (!looksSparse(arrays)) return { kind: "dense", arrays };
  return { kind: "sparse", matrix: sparseFromArrays(arrays, file), arrays };
}

/**
 * Parses a `scipy.sparse.save_npz` archive (CSR, CSC or COO).
 *
 * @throws {NpzError} when it is not a sparse archive or its structure is invalid.
 *
 * @example
 * ```ts
 * import { ndarray } from "./npy.ts";
 * import { encodeSparseNpz, parseSparseNpz } from "./npz.ts";
 * const bytes = encodeSparseNpz({
 *   format: "csr", shape: [2, 3], data: ndarray(new Float32Array([1, 2])),
 *   indices: ndarray(new Int32Array([0, 2])), indptr: ndarray(new Int32Array([0, 1, 2])),
 * });
 * const m = parseSparseNpz(bytes, "ctx.npz");
 * if (m.format !== "csr" || m.indptr.data.length - 1 !== 2) throw new Error("not 2 rows");
 * ```
 */
export function parseSparseNpz(
  bytes: Uint8Array,
  file: string,
  options: NpzReadOptions = {},
): SparseMatrix {
  const arrays = parseNpz(bytes, file, options);
  if (!arrays.has("format")) {
    throw NpzError.of(file, undefined, "not a scipy sparse archive (no 'format' entry)");
  }
  return sparseFromArrays(arrays, file);
}

/**
 * Encodes a sparse matrix as `scipy.sparse.save_npz` does (same keys, same
 * order: `indices`, `indptr` (or `row`, `col`), `format`, `shape` (int64),
 * `data`, and `_is_array` for sparrays). Compressed by default, like scipy.
 * The structure is validated first.
 *
 * @throws {NpzError} for an invalid matrix.
 *
 * @example
 * ```ts
 * import { ndarray } from "./npy.ts";
 * import { encodeSparseNpz } from "./npz.ts";
 * const m = {
 *   format: "csr" as const, shape: [2, 3] as const,
 *   data: ndarray(new Float32Array([1, 2])), indices: ndarray(new Int32Array([0, 2])),
 *   indptr: ndarray(new Int32Array([0, 1, 2])),
 * };
 * const bytes = encodeSparseNpz(m);
 * if (bytes[0] !== 0x50 || bytes[1] !== 0x4b) throw new Error("not a zip");
 * ```
 */
export function encodeSparseNpz(matrix: SparseMatrix, options: NpzWriteOptions = {}): Uint8Array {
  const file = options.file ?? "<memory>";
  const shape: NdArray = {
    dtype: "i8",
    shape: [2],
    data: new BigInt64Array([BigInt(matrix.shape[0]), BigInt(matrix.shape[1])]),
  };
  const entries = new Map<string, NdArray>();
  if (matrix.format === "coo") {
    entries.set("row", matrix.row);
    entries.set("col", matrix.col);
  } else {
    entries.set("indices", matrix.indices);
    entries.set("indptr", matrix.indptr);
  }
  entries.set("format", bytesArray([matrix.format], []));
  entries.set("shape", shape);
  entries.set("data", matrix.data);
  if (matrix.isArray) {
    entries.set("_is_array", { dtype: "b1", shape: [], data: new Uint8Array([1]) });
  }
  try {
    if (!Number.isSafeInteger(matrix.shape[0]) || !Number.isSafeInteger(matrix.shape[1])) {
      throw NpzError.of(file, undefined, `invalid shape [${matrix.shape.join(", ")}]`);
    }
    sparseFromArrays(entries, file);
  } catch (e) {
    throw NpzError.from(file, e);
  }
  return encodeNpz(entries, { compressed: options.compressed ?? true, level: options.level, file });
}

/**
 * Expands a sparse matrix into a dense C-order array of its data dtype
 * (duplicates in COO/unsorted CSR are summed, as scipy's `toarray`).
 *
 * @example
 * ```ts
 * import { ndarray } from "./npy.ts";
 * import { encodeSparseNpz, parseSparseNpz, sparseToDense } from "./npz.ts";
 * const bytes = encodeSparseNpz({
 *   format: "csr", shape: [1, 4], data: ndarray(new Float32Array([5])),
 *   indices: ndarray(new Int32Array([2])), indptr: ndarray(new Int32Array([0, 1])),
 * });
 * const dense = sparseToDense(parseSparseNpz(bytes, "q.npz"));
 * if (dense.shape.join() !== "1,4" || dense.data[2] !== 5) throw new Error("wrong matrix");
 * ```
 */
export function sparseToDense(matrix: SparseMatrix): NdArray {
  const [rows, cols] = matrix.shape;
  const src = matrix.data.data;
  const out = new (src.constructor as new (n: number) => typeof src)(rows * cols);
  const o = out as unknown as { [i: number]: number | bigint };
  const s = src as unknown as { [i: number]: number | bigint };
  const add = (at: number, v: number | bigint) => {
    o[at] = matrix.data.dtype === "b1"
      ? (Number(o[at]) || Number(v) ? 1 : 0)
      : typeof v === "bigint"
      ? (o[at] as bigint) + v
      : (o[at] as number) + v;
  };
  const num = (a: NdArray): ArrayLike<number> =>
    a.data instanceof BigInt64Array || a.data instanceof BigUint64Array
      ? Float64Array.from(a.data as ArrayLike<bigint>, Number)
      : a.data as ArrayLike<number>;
  if (matrix.format === "coo") {
    const r = num(matrix.row), c = num(matrix.col);
    for (let i = 0; i < r.length; i++) add(r[i] * cols + c[i], s[i]);
  } else {
    const ind = num(matrix.indices), ptr = num(matrix.indptr);
    const major = matrix.format === "csr" ? rows : cols;
    for (let m = 0; m < major; m++) {
      for (let k = ptr[m]; k < ptr[m + 1]; k++) {
        add(matrix.format === "csr" ? m * cols + ind[k] : ind[k] * cols + m, s[k]);
      }
    }
  }
  return {
    dtype: matrix.data.dtype,
    shape: [rows, cols],
    data: out,
    byteOrder: matrix.data.byteOrder,
  };
}
