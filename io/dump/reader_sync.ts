/**
 * The synchronous dump reader behind `io/dump/reader.ts` (which re-exports
 * its public part and adds the Effect API). Free of Effect, so the merge
 * workers start quickly.
 *
 * @module
 */
import { inflateSync } from "fflate";
import * as zlib from "node:zlib";
import { dumpStem, unsafeIdReason } from "./names.ts";
import { FileError, InputError } from "../errors.ts";
import { indexPhrases, type PhraseList } from "./phrases.ts";
import { type NdArray, NpyError, parseNpy } from "../_npy_core.ts";
import { NpzError, parseNpzContent } from "../_npz_core.ts";
import {
  type CentralEntry,
  readCentralDirectory,
  readZipDirectory,
  readZipEnd,
  type ZipCodec,
  type ZipEnd,
  type ZipEntry,
  ZipError,
  type ZipLimits,
} from "../zip.ts";
import { escapeName, osMessage, u16, u32 } from "../_zip_internal.ts";
import type { CsrMatrix, Matrix } from "../matrix.ts";

// ---------------------------------------------------------------------------
// Types.

/** A file the dump does not have: `missing` is the path as PIQA's merge.py prints it. */
export interface MissingFile {
  /** `<folder>/<name>` (for a zip: the zip's path without `.zip`, then `/<name>`). */
  readonly missing: string;
}

/** A paragraph's phrases and their vectors. */
export interface ContextDump {
  /** N×d phrase matrix (finite values). */
  readonly matrix: Matrix;
  /**
   * The N phrases (validated as a whole, each decoded when asked for; with
   * `reuseBuffers`, ask before the next `readContext` of the same source).
   */
  readonly phrases: PhraseList;
  /**
   * Dense f32 matrices: the sum of squares of each row (computed while
   * checking that every value is finite, so a scorer need not pass over the
   * matrix again). Absent for other matrices.
   */
  readonly rowSquares?: Float64Array;
  /**
   * Set when the reader was opened with {@linkcode DumpOptions.deferFiniteCheck}
   * and the matrix is dense float32: its values are not checked yet. Returns
   * the sum of squares of each row of `data` (the matrix's values, possibly
   * through a newer view of the same memory) or throws the
   * {@linkcode InputError} naming the first NaN or infinite value.
   */
  readonly checkFinite?: (data: Float32Array) => Float64Array;
}

/** Errors of the dump reader: bad input, or a file that cannot be read. */
export type DumpError = InputError | FileError;

/** Options of {@linkcode openDumpSync} and `openDump`. */
export interface DumpOptions {
  /** Matrices are scipy sparse (CSR/CSC); without it they must be dense. */
  readonly sparse?: boolean;
  /** Limits applied to zip archives and to the `.npz` files. */
  readonly limits?: ZipLimits;
  /**
   * Read paragraph files into buffers reused from one read to the next (no
   * allocation per file). A {@linkcode ContextDump}'s matrix may then view
   * that buffer: use it before the next `readContext` of the same source.
   */
  readonly reuseBuffers?: boolean;
  /**
   * With `reuseBuffers`: where paragraph `.npz` files are read, a buffer of
   * at least `size` bytes (a view of the start of a WebAssembly memory, say,
   * where a kernel then finds the matrix without a copy). Called for every
   * read; may return a new view each time.
   */
  readonly contextBuffer?: (size: number) => Uint8Array;
  /**
   * Leave dense float32 paragraph matrices unchecked for NaN and infinite
   * values: the {@linkcode ContextDump} carries `checkFinite` instead, and
   * the caller must run it, or check the values on a pass of its own, before
   * it trusts them. (Merge's scoring kernel sums each row's squares anyway.)
   */
  readonly deferFiniteCheck?: boolean;
}

// ---------------------------------------------------------------------------
// Helpers.

function joinPath(dir: string, name: string): string {
  return dir === "" ? name : dir.endsWith("/") ? dir + name : `${dir}/${name}`;
}

/** Turns anything thrown by a read into a {@linkcode DumpError}. */
export const asDumpError = (file: string) => (e: unknown): DumpError =>
  e instanceof InputError || e instanceof FileError
    ? e
    : new FileError({ file, message: osMessage(e) });

const crc32 = (zlib as unknown as { crc32(data: Uint8Array, value?: number): number }).crc32;

/**
 * CRC-32 of `data` in the runtime's zlib (about 25 times faster than the
 * JavaScript table version).
 *
 * @example
 * ```ts
 * import { nativeCrc32 } from "./reader.ts";
 * nativeCrc32(new TextEncoder().encode("123456789")); // 0xcbf43926
 * ```
 */
export function nativeCrc32(data: Uint8Array): number {
  return crc32(data) >>> 0;
}

/**
 * The runtime's zlib for the `.npz` parser: several times faster than fflate
 * and a table CRC on large entries; small ones stay with fflate (a call into
 * zlib costs more than it saves there).
 */
const NATIVE: ZipCodec = {
  inflateRaw(raw, size) {
    if (raw.length < 4096) return inflateSync(raw, { out: new Uint8Array(size) });
    const r = zlib.inflateRawSync(raw, { maxOutputLength: Math.max(1, size) });
    return new Uint8Array(r.buffer, r.byteOffset, r.byteLength);
  },
  crc32: nativeCrc32,
};

/**
 * Turns stored or deflated entry data into the entry's bytes, checking the
 * size and the CRC-32 declared by the central directory. Throws the reason.
 */
function inflateChecked(
  raw: Uint8Array,
  method: 0 | 8,
  size: number,
  crc: number,
): Uint8Array | string {
  let out: Uint8Array;
  if (method === 0) out = raw;
  else {
    try {
      const r = zlib.inflateRawSync(raw, { maxOutputLength: Math.max(1, size) });
      out = new Uint8Array(r.buffer, r.byteOffset, r.byteLength);
    } catch (e) {
      return `corrupt deflate data or more than the declared ${size} bytes (${
        e instanceof Error ? e.message : String(e)
      })`;
    }
    if (out.length !== size) {
      return `inflated to ${out.length} bytes but the directory declares ${size}`;
    }
  }
  const got = nativeCrc32(out);
  return got === crc ? out : crcMessage(crc, got);
}

// ---------------------------------------------------------------------------
// Matrices.

function badNpz(label: string, e: unknown): InputError {
  if (e instanceof ZipError || e instanceof NpyError || e instanceof NpzError) {
    return new InputError({
      file: label,
      where: e.entry ?? "",
      message: `unreadable npz: ${e.reason}`,
    });
  }
  if (e instanceof InputError) return e;
  throw e;
}

function shapeText(shape: readonly number[]): string {
  return shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(", ")})`;
}

/** Sum of squares of each row of a dense f32 matrix, in float64 (plain loop). */
function sumSquaresF32(data: Float32Array, rows: number, cols: number): Float64Array {
  const sq = new Float64Array(rows);
  for (let i = 0, o = 0; i < rows; i++, o += cols) {
    let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    let k = 0;
    for (; k + 3 < cols; k += 4) {
      const a = data[o + k], b = data[o + k + 1], c = data[o + k + 2], d = data[o + k + 3];
      s0 += a * a;
      s1 += b * b;
      s2 += c * c;
      s3 += d * d;
    }
    for (; k < cols; k++) s0 += data[o + k] * data[o + k];
    sq[i] = (s0 + s1) + (s2 + s3);
  }
  return sq;
}

/** Sum of squares per row of a dense f32 matrix; fails on a non-finite value. */
function checkDenseF32(
  data: Float32Array,
  rows: number,
  cols: number,
  label: string,
): Float64Array {
  const sq = sumSquaresF32(data, rows, cols);
  for (let i = 0; i < rows; i++) {
    // f32 squares cannot overflow float64: a non-finite sum means NaN or Inf.
    if (Number.isFinite(sq[i])) continue;
    for (let j = 0, o = i * cols; j < cols; j++) {
      if (!Number.isFinite(data[o + j])) {
        throw new InputError({
          file: label,
          where: `row ${i}`,
          message: `${data[o + j]} at column ${j} (vectors must be finite)`,
        });
      }
    }
  }
  return sq;
}

function checkHalf(bits: Uint16Array, cols: number, label: string): void {
  // Two values a step where the data allows (a NaN or infinity has all exponent bits set).
  let k = 0;
  if (bits.byteOffset % 4 === 0) {
    const pairs = new Uint32Array(bits.buffer, bits.byteOffset, bits.length >>> 1);
    let p = 0;
    for (; p < pairs.length; p++) {
      const w = pairs[p];
      if ((w & 0x7c00) === 0x7c00 || (w & 0x7c000000) === 0x7c000000) break;
    }
    k = 2 * p;
  }
  for (; k < bits.length; k++) {
    if ((bits[k] & 0x7c00) === 0x7c00) {
      const v = bits[k] & 0x3ff ? "NaN" : bits[k] & 0x8000 ? "-Infinity" : "Infinity";
      throw new InputError({
        file: label,
        where: `row ${Math.floor(k / cols)}`,
        message: `${v} at column ${k % cols} (vectors must be finite)`,
      });
    }
  }
}

function toFloat32(arr: NdArray, label: string, what: string): Float32Array {
  if (arr.dtype === "f4") return arr.data as Float32Array;
  if (arr.dtype === "f2") return new Float32Array(arr.data as unknown as ArrayLike<number>);
  throw new InputError({
    file: label,
    where: "",
    message:
      `${what} has dtype ${arr.dtype}; phrase and question vectors must be float32 or float16`,
  });
}

function toInt32(arr: NdArray): Int32Array {
  if (arr.data instanceof Int32Array) return arr.data;
  const d = arr.data as ArrayLike<number | bigint>;
  const out = new Int32Array(d.length);
  for (let i = 0; i < d.length; i++) out[i] = Number(d[i]);
  return out;
}

function rowOfNonFinite(data: Float32Array, indptr: Int32Array, label: string): void {
  for (let k = 0; k < data.length; k++) {
    if (!Number.isFinite(data[k])) {
      let lo = 0, hi = indptr.length - 1; // last row r with indptr[r] <= k
      while (hi - lo > 1) {
        const mid = (lo + hi) >> 1;
        if (indptr[mid] <= k) lo = mid;
        else hi = mid;
      }
      while (lo + 1 < indptr.length - 1 && indptr[lo + 1] <= k) lo++;
      throw new InputError({
        file: label,
        where: `row ${lo}`,
        message: `${data[k]} (vectors must be finite)`,
      });
    }
  }
}

/** CSC (column-compressed) → CSR, a stable counting sort by row. */
function cscToCsr(
  rows: number,
  cols: number,
  data: Float32Array,
  indices: Int32Array,
  indptr: Int32Array,
): CsrMatrix {
  const nnz = data.length;
  const ptr = new Int32Array(rows + 1);
  for (let k = 0; k < nnz; k++) ptr[indices[k] + 1]++;
  for (let r = 0; r < rows; r++) ptr[r + 1] += ptr[r];
  const next = ptr.slice(0, rows);
  const outData = new Float32Array(nnz);
  const outIdx = new Int32Array(nnz);
  for (let c = 0; c < cols; c++) {
    for (let k = indptr[c]; k < indptr[c + 1]; k++) {
      const at = next[indices[k]]++;
      outData[at] = data[k];
      outIdx[at] = c;
    }
  }
  return { kind: "csr", rows, cols, data: outData, indices: outIdx, indptr: ptr };
}

/** A recently seen `.npy` header (magic to padding) and what it declares. */
interface KnownHeader {
  readonly bytes: Uint8Array;
  readonly dtype: "f4" | "f2";
  readonly shape: readonly [number, number];
}

const knownHeaders: KnownHeader[] = [];

/**
 * The CRC-32 of `data`, while its bytes from `from` on are moved down `r`
 * bytes: a chunk at a time, summed then moved while it is in the cache (one
 * pass over the memory instead of two).
 */
function crcMovingDown(data: Uint8Array, from: number, r: number): number {
  const CHUNK = 1 << 15;
  let crc = crc32(data.subarray(0, from));
  for (let s = from; s < data.length; s += CHUNK) {
    const e = Math.min(s + CHUNK, data.length);
    crc = crc32(data.subarray(s, e), crc);
    data.copyWithin(s - r, s, e);
  }
  return crc >>> 0;
}

function crcMismatch(label: string, entry: string, want: number, got: number): InputError {
  return new InputError({
    file: label,
    where: entry,
    message: `unreadable npz: ${crcMessage(want, got)}`,
  });
}

function crcMessage(want: number, got: number): string {
  const hex = (v: number) => v.toString(16).padStart(8, "0");
  return `CRC-32 mismatch (directory says ${hex(want)}, data has ${hex(got)})`;
}

/**
 * `parseNpy` (no copy), skipping the header parse when the header bytes are
 * those of a recent file (dumps repeat a handful of headers: one per question
 * shape, one per paragraph size). Only little-endian C-order float32/float16
 * 2-d headers are remembered; the data size is checked every time. When
 * the data is not aligned for its element type, it is copied, or with
 * `movable` moved down a few bytes within `data` (over the end of the header,
 * already parsed). With `crc`, the CRC-32 of `data` is checked too (while
 * it is moved, when it is).
 */
function parseNpyCached(
  data: Uint8Array,
  label: string,
  entry: string,
  movable: boolean,
  crc?: number,
): NdArray {
  const h = knownHeader(data) ?? numpyHeader(data);
  if (h !== undefined) {
    const n = h.start;
    const size = h.dtype === "f4" ? 4 : 2;
    const count = h.shape[0] * h.shape[1];
    const at = data.byteOffset + n;
    const Ctor = h.dtype === "f4" ? Float32Array : Float16Array;
    const r = at % size;
    if (crc !== undefined) {
      const got = r !== 0 && movable ? crcMovingDown(data, n, r) : nativeCrc32(data);
      if (got !== crc) throw crcMismatch(label, entry, crc, got);
    } else if (r !== 0 && movable) data.copyWithin(n - r, n);
    const values = r === 0 || movable
      ? new Ctor(data.buffer as ArrayBuffer, at - r, count)
      : new Ctor(data.slice(n).buffer, 0, count);
    return { dtype: h.dtype, shape: h.shape, data: values, byteOrder: "<", fortranOrder: false };
  }
  if (crc !== undefined) {
    const got = nativeCrc32(data);
    if (got !== crc) throw crcMismatch(label, entry, crc, got);
  }
  const arr = parseNpy(data, label, { entry, copy: false });
  if (
    (arr.dtype === "f4" || arr.dtype === "f2") && arr.byteOrder === "<" && !arr.fortranOrder &&
    arr.shape.length === 2
  ) {
    const start = npyDataStart(data);
    if (start > 0 && start <= data.length) {
      knownHeaders.unshift({
        bytes: data.slice(0, start),
        dtype: arr.dtype,
        shape: [arr.shape[0], arr.shape[1]],
      });
      if (knownHeaders.length > 8) knownHeaders.pop();
    }
  }
  return arr;
}

/** A 2-d little-endian float array's header as far as the reader needs it. */
interface PlainHeader {
  readonly dtype: "f4" | "f2";
  readonly shape: readonly [number, number];
  /** Where the data starts. */
  readonly start: number;
}

/** The header of `data` when it is byte for byte a recent file's, and the size fits. */
function knownHeader(data: Uint8Array): PlainHeader | undefined {
  for (const h of knownHeaders) {
    const n = h.bytes.length;
    if (data.length < n) continue;
    let same = true;
    for (let i = n - 1; i >= 0; i--) {
      if (data[i] !== h.bytes[i]) {
        same = false;
        break;
      }
    }
    if (!same) continue;
    const size = h.dtype === "f4" ? 4 : 2;
    if (data.length - n !== h.shape[0] * h.shape[1] * size) return undefined;
    return { dtype: h.dtype, shape: h.shape, start: n };
  }
  return undefined;
}

/** A header exactly as `numpy.save` writes a 2-d C-order little-endian float32/16 array. */
const NUMPY_HEADER =
  /^\{'descr': '<(f4|f2)', 'fortran_order': False, 'shape': \((0|[1-9][0-9]{0,9}), (0|[1-9][0-9]{0,9})\), \} *\n$/;

/**
 * The header of `data` when it is written exactly as numpy writes a 2-d
 * float array (paragraph matrices differ only in their row count, so they
 * rarely match a recent header byte for byte), and the size fits; otherwise
 * `undefined` (the full parser decides).
 */
function numpyHeader(data: Uint8Array): PlainHeader | undefined {
  if (data.length < 12 || data[0] !== 0x93 || u32(data, 1) !== 0x504d554e || data[5] !== 0x59) {
    return undefined; // not "\x93NUMPY"
  }
  const major = data[6];
  if ((major !== 1 && major !== 2 && major !== 3) || data[7] !== 0) return undefined;
  const from = major === 1 ? 10 : 12;
  const start = npyDataStart(data);
  if (start <= from || start > data.length || start - from > 4096) return undefined;
  const m = NUMPY_HEADER.exec(String.fromCharCode(...data.subarray(from, start)));
  if (m === null) return undefined;
  const dtype = m[1] as "f4" | "f2";
  const rows = Number(m[2]), cols = Number(m[3]);
  if (data.length - start !== rows * cols * (dtype === "f4" ? 4 : 2)) return undefined;
  return { dtype, shape: [rows, cols], start };
}

const SPARSE_KEYS = ["format.npy", "shape.npy", "data.npy"];

/** Result of {@linkcode decodeDumpMatrix}. */
export interface DecodedMatrix {
  /** The matrix (finite values). */
  readonly matrix: Matrix;
  /** Dense f32: sum of squares of each row (absent with `deferFiniteCheck`). */
  readonly rowSquares?: Float64Array;
  /** Dense f32 with `deferFiniteCheck`: the check to run (see {@linkcode ContextDump}). */
  readonly checkFinite?: (data: Float32Array) => Float64Array;
}

/**
 * Decodes and validates one dump `.npz` (see the module notes). `label`
 * names the file in errors. A dense matrix may view `bytes` (no copy) when
 * its data is aligned; with `movable` (the caller needs `bytes` for nothing
 * else), misaligned data is moved into alignment within `bytes` instead of
 * copied out.
 *
 * @throws {InputError} for anything wrong with the file.
 *
 * @example
 * ```ts
 * import { decodeDumpMatrix } from "./reader.ts";
 * const { matrix } = decodeDumpMatrix(await Deno.readFile("q.npz"), "q.npz", { sparse: false });
 * matrix.rows; // 1
 * ```
 */
export function decodeDumpMatrix(
  bytes: Uint8Array,
  label: string,
  options: DumpOptions = {},
  movable = false,
): DecodedMatrix {
  const limits = options.limits ?? {};
  let entries: ZipEntry[];
  try {
    entries = readZipDirectory(bytes, label, limits);
  } catch (e) {
    throw badNpz(label, e);
  }
  const names = new Set(entries.map((e) => e.name));
  const looksSparse = SPARSE_KEYS.every((k) => names.has(k));
  if (looksSparse) {
    let content;
    try {
      content = parseNpzContent(bytes, label, { ...limits, codec: NATIVE });
    } catch (e) {
      throw badNpz(label, e);
    }
    if (content.kind === "sparse") {
      if (!options.sparse) {
        throw new InputError({
          file: label,
          where: "",
          message: "is a scipy sparse matrix; run merge with --sparse",
        });
      }
      const m = content.matrix;
      if (m.format === "coo") {
        throw new InputError({
          file: label,
          where: "",
          message: "sparse format coo is not supported (save CSR or CSC)",
        });
      }
      const [rows, cols] = m.shape;
      if (rows > 0x7fffffff || cols > 0x7fffffff) {
        throw new InputError({
          file: label,
          where: "",
          message: `shape ${shapeText(m.shape)} is too large`,
        });
      }
      const data = toFloat32(m.data, label, "data");
      const indices = toInt32(m.indices);
      const indptr = toInt32(m.indptr);
      const csr: CsrMatrix = m.format === "csr"
        ? { kind: "csr", rows, cols, data, indices, indptr }
        : cscToCsr(rows, cols, data, indices, indptr);
      rowOfNonFinite(csr.data, csr.indptr, label);
      return { matrix: csr };
    }
  }
  if (options.sparse) {
    throw new InputError({
      file: label,
      where: "",
      message: "is a dense array; run merge without --sparse",
    });
  }
  const entry = entries.find((e) => e.name === "arr_0.npy");
  if (entry === undefined) {
    throw new InputError({
      file: label,
      where: "",
      message: "no arr_0 array (dense dumps are written with numpy.savez(path, matrix))",
    });
  }
  const raw = bytes.subarray(entry.dataOffset, entry.dataOffset + entry.compressedSize);
  // A stored entry in the reader's own buffer: its CRC is checked while its data is
  // moved into alignment (parseNpyCached).
  const crcLater = movable && entry.method === 0 && entry.compressedSize === entry.uncompressedSize;
  const data = crcLater
    ? raw
    : inflateChecked(raw, entry.method, entry.uncompressedSize, entry.crc32);
  if (typeof data === "string") {
    throw new InputError({ file: label, where: entry.name, message: `unreadable npz: ${data}` });
  }
  let arr: NdArray;
  try {
    arr = parseNpyCached(data, label, entry.name, movable, crcLater ? entry.crc32 : undefined);
  } catch (e) {
    throw badNpz(label, e);
  }
  if (arr.shape.length !== 2) {
    throw new InputError({
      file: label,
      where: "",
      message: `arr_0 has shape ${shapeText(arr.shape)}; expected a 2-d matrix`,
    });
  }
  const [rows, cols] = arr.shape;
  if (arr.dtype === "f4") {
    const d = arr.data as Float32Array;
    const matrix = { kind: "dense", rows, cols, dtype: "f32", data: d } as const;
    const checks = options.deferFiniteCheck
      ? { checkFinite: (v: Float32Array) => checkDenseF32(v, rows, cols, label) }
      : { rowSquares: checkDenseF32(d, rows, cols, label) };
    return { matrix, ...checks };
  }
  if (arr.dtype === "f2") {
    const h = arr.data as Float16Array;
    checkHalf(new Uint16Array(h.buffer, h.byteOffset, h.length), cols, label);
    return { matrix: { kind: "dense", rows, cols, dtype: "f16", data: h } };
  }
  throw new InputError({
    file: label,
    where: "",
    message: `arr_0 has dtype ${arr.dtype}; phrase and question vectors must be float32 or float16`,
  });
}

// ---------------------------------------------------------------------------
// Reusable read buffers.

/**
 * A growable read buffer, or one a `provider` lends (see
 * {@linkcode DumpOptions.contextBuffer}). Files are read at its start
 * (64-byte aligned: the kernel copies fastest there); a misaligned matrix is
 * then moved into alignment in place (see `parseNpyCached`).
 */
class Scratch {
  #buf: Uint8Array = new Uint8Array(0);
  readonly #provider?: (size: number) => Uint8Array;

  constructor(provider?: (size: number) => Uint8Array) {
    this.#provider = provider;
  }

  /** A view of `size` bytes, growing the buffer as needed. */
  take(size: number): Uint8Array {
    if (this.#provider) this.#buf = this.#provider(size);
    else if (this.#buf.length < size) {
      this.#buf = new Uint8Array(Math.max(size, this.#buf.length * 2, 1 << 16));
    }
    return this.#buf.subarray(0, size);
  }
}

/** Reads a whole file, into `scratch` when given; `undefined` when it does not exist. */
function readFileSyncInto(path: string, scratch?: Scratch): Uint8Array | undefined {
  if (scratch === undefined) {
    // One call instead of open, stat, read and close (small files: the calls dominate).
    try {
      return Deno.readFileSync(path);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return undefined;
      throw new FileError({ file: path, message: osMessage(e) });
    }
  }
  let f: Deno.FsFile;
  try {
    f = Deno.openSync(path, { read: true });
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw new FileError({ file: path, message: osMessage(e) });
  }
  try {
    const info = f.statSync();
    if (info.isDirectory) throw new FileError({ file: path, message: "is a directory" });
    const size = info.size;
    const out = scratch ? scratch.take(size) : new Uint8Array(size);
    let n = 0;
    while (n < size) {
      const r = f.readSync(out.subarray(n));
      if (r === null || r === 0) break;
      n += r;
    }
    return out.subarray(0, n);
  } catch (e) {
    if (e instanceof FileError) throw e;
    throw new FileError({ file: path, message: osMessage(e) });
  } finally {
    f.close();
  }
}

// ---------------------------------------------------------------------------
// Zip archives read from the file.

interface IndexedEntry {
  readonly name: string;
  readonly nameBytes: Uint8Array;
  readonly method: 0 | 8;
  readonly crc32: number;
  readonly compressedSize: number;
  readonly uncompressedSize: number;
  /** Absolute offset of the local header in the file. */
  readonly localHeaderOffset: number;
  /** Where the next entry (or the central directory) starts. */
  end: number;
}

function readAt(file: Deno.FsFile, pos: number, out: Uint8Array, path: string): Uint8Array {
  file.seekSync(pos, Deno.SeekMode.Start);
  let off = 0;
  while (off < out.length) {
    const n = file.readSync(out.subarray(off));
    if (n === null || n === 0) {
      throw new InputError({
        file: path,
        where: `byte ${pos + off}`,
        message: "unexpected end of file (truncated zip?)",
      });
    }
    off += n;
  }
  return out;
}

/** A zip archive on disk: its validated central directory, and entries read by offset. */
class ZipFileIndex {
  readonly #file: Deno.FsFile;
  readonly entries: Map<string, IndexedEntry>;
  readonly path: string;

  constructor(path: string, file: Deno.FsFile, entries: Map<string, IndexedEntry>) {
    this.path = path;
    this.#file = file;
    this.entries = entries;
  }

  close(): void {
    try {
      this.#file.close();
    } catch {
      // already closed
    }
  }

  /** The checked bytes of an entry (read into `scratch` when given). */
  extract(e: IndexedEntry, scratch?: Scratch): Uint8Array {
    const fail = (reason: string) =>
      new InputError({ file: this.path, where: `entry "${escapeName(e.name)}"`, message: reason });
    // One read covers the local header and the data in the usual case.
    const want = Math.min(
      e.end - e.localHeaderOffset,
      30 + e.nameBytes.length + 512 + e.compressedSize,
    );
    const buf = readAt(
      this.#file,
      e.localHeaderOffset,
      scratch ? scratch.take(want) : new Uint8Array(want),
      this.path,
    );
    if (buf.length < 30 || u32(buf, 0) !== 0x04034b50) {
      throw fail(`no local header at offset ${e.localHeaderOffset}`);
    }
    const lName = u16(buf, 26), lExtra = u16(buf, 28);
    if (lName !== e.nameBytes.length || 30 + lName > buf.length) {
      throw fail("local header name differs from the central directory");
    }
    for (let i = 0; i < lName; i++) {
      if (buf[30 + i] !== e.nameBytes[i]) {
        throw fail("local header name differs from the central directory");
      }
    }
    const dataStart = 30 + lName + lExtra;
    if (e.localHeaderOffset + dataStart + e.compressedSize > e.end) {
      throw fail(
        `data (${e.compressedSize} bytes at offset ${
          e.localHeaderOffset + dataStart
        }) overlaps the next entry or the central directory`,
      );
    }
    const raw = dataStart + e.compressedSize <= buf.length
      ? buf.subarray(dataStart, dataStart + e.compressedSize)
      : readAt(
        this.#file,
        e.localHeaderOffset + dataStart,
        new Uint8Array(e.compressedSize),
        this.path,
      );
    const out = inflateChecked(raw, e.method, e.uncompressedSize, e.crc32);
    if (typeof out === "string") throw fail(out);
    return out;
  }
}

/** Opens a zip file and validates its central directory (read from the tail). */
function openZipIndex(path: string, limits: ZipLimits): ZipFileIndex {
  const file = Deno.openSync(path, { read: true });
  try {
    return new ZipFileIndex(path, file, readIndex(path, file, limits));
  } catch (e) {
    file.close();
    throw e;
  }
}

function readIndex(
  path: string,
  file: Deno.FsFile,
  limits: ZipLimits,
): Map<string, IndexedEntry> {
  const fail = (reason: string, entry?: string) =>
    new InputError({
      file: path,
      where: entry === undefined ? "" : `entry "${entry}"`,
      message: reason,
    });
  const size = file.statSync().size;
  const tailLen = Math.min(size, 22 + 0xffff + 20);
  let end: ZipEnd, central: CentralEntry[];
  try {
    const tail = readAt(file, size - tailLen, new Uint8Array(tailLen), path);
    end = readZipEnd(tail, size, (at, n) => readAt(file, at, new Uint8Array(n), path), path);
    const cd = readAt(file, end.cdStart, new Uint8Array(end.cdSize), path);
    central = readCentralDirectory(cd, end.count, path, limits);
  } catch (e) {
    if (e instanceof ZipError) throw fail(e.reason, e.entry);
    throw e;
  }
  const list: IndexedEntry[] = central.map((c) => ({
    name: c.name,
    nameBytes: c.nameBytes,
    method: c.method,
    crc32: c.crc32,
    compressedSize: c.compressedSize,
    uncompressedSize: c.uncompressedSize,
    localHeaderOffset: c.recordedOffset + end.shift,
    end: end.cdStart,
  }));
  // Entries may not overlap: each one must end before the next one (by offset) begins.
  const sorted = [...list].sort((a, b) => a.localHeaderOffset - b.localHeaderOffset);
  for (let k = 0; k < sorted.length; k++) {
    const cur = sorted[k];
    cur.end = k + 1 < sorted.length ? sorted[k + 1].localHeaderOffset : end.cdStart;
    if (cur.localHeaderOffset + 30 + cur.nameBytes.length + cur.compressedSize > cur.end) {
      throw fail(
        k + 1 < sorted.length
          ? `overlaps entry '${escapeName(sorted[k + 1].name)}'`
          : "data runs past the start of the central directory (truncated archive?)",
        escapeName(cur.name),
      );
    }
  }
  return new Map(list.map((e) => [e.name, e]));
}

/** The folder all file entries sit under (`top/`), or `""` when they are not all under one. */
function detectRoot(names: Iterable<string>): string {
  let top: string | undefined;
  for (const n of names) {
    if (n.endsWith("/")) continue;
    const i = n.indexOf("/");
    if (i < 0) return "";
    const t = n.slice(0, i + 1);
    if (top === undefined) top = t;
    else if (t !== top) return "";
  }
  return top ?? "";
}

// ---------------------------------------------------------------------------
// Dump sources.

/** An open dump read synchronously (the core under {@linkcode DumpSource}). */
export interface DumpSourceSync {
  /** The path given to {@linkcode openDumpSync}. */
  readonly path: string;
  /** Whether it is a folder or a zip. */
  readonly kind: "folder" | "zip";
  /** For a zip: the top folder its entries sit under (`context_emb/`), or `""`. */
  readonly root: string;
  /** Where PIQA's merge.py looks for `name` (used in `Missing` lines). */
  shownPath(name: string): string;
  /** How errors name the file `name` of this dump (`dir/name` or `x.zip:entry`). */
  label(name: string): string;
  /** The bytes of `name`, or `undefined` when the dump has no such file. */
  readFile(name: string): Uint8Array | undefined;
  /** A paragraph's matrix and phrases, or which of the two files is missing (`.npz` first). */
  readContext(id: string): ContextDump | MissingFile;
  /** A question's matrix (checked as any matrix; 1×d is the caller's check), or missing. */
  readQuestion(id: string): Matrix | MissingFile;
  /** The file names of the dump (its top level), sorted, side files included. */
  list(): string[];
  /** Releases the zip's file handle (no-op for folders). */
  close(): void;
}

/** Reads the entries of an archive or the files of a folder. */
interface Backend {
  readonly kind: "folder" | "zip";
  readonly root: string;
  shownPath(name: string): string;
  label(name: string): string;
  read(name: string, scratch?: Scratch): Uint8Array | undefined;
  names(): string[];
  close(): void;
}

function stemOf(id: string, path: string): string {
  const why = unsafeIdReason(id);
  if (why !== undefined) {
    throw new InputError({
      file: path,
      where: `id ${JSON.stringify(id)}`,
      message: `${why}; it cannot name a dump file`,
    });
  }
  return dumpStem(id);
}

/** Offset of the data of a `.npy` inside `bytes` (or -1 if the header is unreadable). */
function npyDataStart(npy: Uint8Array): number {
  if (npy.length < 12) return -1;
  return npy[6] === 1 ? 10 + u16(npy, 8) : 12 + u32(npy, 8);
}

function sourceOf(path: string, b: Backend, options: DumpOptions): DumpSourceSync {
  const reuse = options.reuseBuffers === true;
  const matrixScratch = reuse ? new Scratch(options.contextBuffer) : undefined;
  const jsonScratch = reuse ? new Scratch() : undefined;
  // Question vectors are always checked here; only paragraph matrices may be deferred.
  const questionOptions = { ...options, deferFiniteCheck: false };
  const decode = (bytes: Uint8Array, name: string, o: DumpOptions, movable = false) =>
    decodeDumpMatrix(bytes, b.label(name), o, movable);
  return {
    path,
    kind: b.kind,
    root: b.root,
    shownPath: (name) => b.shownPath(name),
    label: (name) => b.label(name),
    readFile: (name) => b.read(name),
    readContext(id) {
      const stem = stemOf(id, path);
      const npz = `${stem}.npz`, json = `${stem}.json`;
      const m = b.read(npz, matrixScratch);
      if (m === undefined) return { missing: b.shownPath(npz) };
      const j = b.read(json, jsonScratch);
      if (j === undefined) return { missing: b.shownPath(json) };
      const phrases = indexPhrases(j, b.label(json));
      const decoded = decode(m, npz, options, matrixScratch !== undefined);
      const { matrix, rowSquares, checkFinite } = decoded;
      return rowSquares !== undefined
        ? { matrix, phrases, rowSquares }
        : checkFinite !== undefined
        ? { matrix, phrases, checkFinite }
        : { matrix, phrases };
    },
    readQuestion(id) {
      const npz = `${stemOf(id, path)}.npz`;
      const m = b.read(npz);
      if (m === undefined) return { missing: b.shownPath(npz) };
      return decode(m, npz, questionOptions).matrix;
    },
    list: () => b.names(),
    close: () => b.close(),
  };
}

function folderBackend(path: string): Backend {
  return {
    kind: "folder",
    root: "",
    shownPath: (name) => joinPath(path, name),
    label: (name) => joinPath(path, name),
    read: (name, scratch) => readFileSyncInto(joinPath(path, name), scratch),
    names: () => {
      const out: string[] = [];
      try {
        for (const e of Deno.readDirSync(path)) if (!e.isDirectory) out.push(e.name);
      } catch (e) {
        throw new FileError({ file: path, message: osMessage(e) });
      }
      return out.sort();
    },
    close: () => {},
  };
}

function zipBackend(path: string, index: ZipFileIndex): Backend {
  const root = detectRoot(index.entries.keys());
  const shownDir = /\.zip$/i.test(path) ? path.slice(0, -4) : path;
  return {
    kind: "zip",
    root,
    shownPath: (name) => joinPath(shownDir, name),
    label: (name) => `${path}:${root}${name}`,
    read: (name, scratch) => {
      const e = index.entries.get(root + name);
      return e === undefined ? undefined : index.extract(e, scratch);
    },
    names: () => {
      const out: string[] = [];
      for (const n of index.entries.keys()) {
        if (!n.startsWith(root)) continue;
        const rest = n.slice(root.length);
        if (rest !== "" && !rest.includes("/")) out.push(rest);
      }
      return out.sort();
    },
    close: () => index.close(),
  };
}

/**
 * Opens a dump folder or a zip of one, synchronously. For a zip, the central
 * directory is read and validated now (an unsafe entry name refuses the
 * archive). Methods throw {@linkcode InputError} / {@linkcode FileError}.
 *
 * @example
 * ```ts
 * import { openDumpSync } from "./reader.ts";
 * const ctx = openDumpSync("context_emb.zip");
 * const c = ctx.readContext("Super_Bowl_50_0");
 * if (!("missing" in c)) console.log(c.matrix.rows === c.phrases.length); // true
 * ctx.close();
 * ```
 */
export function openDumpSync(path: string, options: DumpOptions = {}): DumpSourceSync {
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(path);
  } catch (e) {
    throw new FileError({ file: path, message: osMessage(e) });
  }
  if (info.isDirectory) return sourceOf(path, folderBackend(path), options);
  let index: ZipFileIndex;
  try {
    index = openZipIndex(path, options.limits ?? {});
  } catch (e) {
    throw asDumpError(path)(e);
  }
  return sourceOf(path, zipBackend(path, index), options);
}
