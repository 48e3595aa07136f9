/**
 * Decoding one dump `.npz` into a checked matrix ({@linkcode decodeDumpMatrix}):
 * dense `arr_0` (float32/float16, 2-d) or scipy sparse CSR/CSC, with fast
 * paths for numpy's own `.npy` headers and for data read into a caller's
 * buffer (moved into alignment in place, its CRC-32 checked on the way).
 *
 * @module
 */
import { InputError } from "../errors.ts";
import {
  type NdArray,
  npyDataStart,
  NpyError,
  type NpyHeader,
  type NumpyFloatHeader,
  numpyFloatHeader,
  parseNpy,
  stringsOf,
} from "../npy_format.ts";
import { npzEntryHeader, NpzError, parseNpzContent, readNpzEntry } from "../npz_format.ts";
import { readZipDirectory, type ZipEntry, ZipError, type ZipLimits } from "../zip.ts";
import * as zlib from "node:zlib";
import { crcMessage, inflateChecked, NATIVE, nativeCrc32 } from "../zip_file.ts";

const zlibCrc32 = (zlib as unknown as { crc32(data: Uint8Array, value?: number): number }).crc32;
import type { CsrMatrix, Matrix } from "../matrix.ts";
import {
  checkDenseF32,
  checkHalf,
  rowOfNonFinite,
  shapeText,
  toFloat32,
  toInt32,
} from "./checks.ts";

/** Options of {@linkcode decodeDumpMatrix}. */
export interface DecodeOptions {
  /** Matrices are scipy sparse (CSR/CSC); without it they must be dense. */
  readonly sparse?: boolean;
  /** Limits applied to the `.npz` archive. */
  readonly limits?: ZipLimits;
  /**
   * Leave dense float32 matrices unchecked for NaN and infinite values: the
   * result carries `checkFinite` instead, and the caller must run it, or
   * check the values on a pass of its own, before it trusts them.
   */
  readonly deferFiniteCheck?: boolean;
  /**
   * The rows the matrix must have (a paragraph's phrase count, 1 for a
   * question): checked on the `.npy` headers (and a sparse file's `shape`)
   * before any matrix data is inflated, so a file declaring a huge matrix is
   * refused for the price of its header.
   */
  readonly expectRows?: number;
  /**
   * The error for a matrix whose rows differ from `expectRows` (default: an
   * {@linkcode InputError} naming the file, its rows and the rows expected).
   */
  readonly rowsMismatch?: (rows: number, cols: number) => InputError;
  /**
   * A buffer reused from one decode to the next (of at least the length
   * asked for), to inflate a large deflated matrix into: the matrix then
   * views it, and is good until the next decode that uses the same buffer.
   */
  readonly inflateBuffer?: (length: number) => Uint8Array;
}

function mismatch(label: string, options: DecodeOptions, rows: number, cols: number): InputError {
  return options.rowsMismatch?.(rows, cols) ??
    new InputError({
      file: label,
      where: "",
      message: `${rows} rows, expected ${options.expectRows}`,
    });
}

/**
 * Reads a sparse dump's `format` and `shape` entries (tiny: their headers are
 * checked first) and checks the rows and the `indptr` length they imply
 * before the other entries are inflated; returns the check for their headers.
 */
function sparseHeaderCheck(
  bytes: Uint8Array,
  entries: readonly ZipEntry[],
  label: string,
  options: DecodeOptions,
): ((entry: string, h: NpyHeader) => string | undefined) | undefined {
  const formatEntry = entries.find((e) => e.name === "format.npy");
  const shapeEntry = entries.find((e) => e.name === "shape.npy");
  if (formatEntry === undefined || shapeEntry === undefined) return undefined;
  const small = (_: string, h: NpyHeader) =>
    h.count > 2 ? `${h.count} elements where at most 2 are expected` : undefined;
  const opts = { ...options.limits, codec: NATIVE, checkHeader: small };
  let format: string, shape: number[];
  try {
    const f = readNpzEntry(bytes, formatEntry, label, opts);
    if (!(f.dtype.startsWith("S") || f.dtype.startsWith("U")) || f.data.length === 0) {
      return undefined; // not a sparse file: decodeDumpMatrix says so
    }
    format = stringsOf(f)[0];
    const sh = readNpzEntry(bytes, shapeEntry, label, opts);
    shape = Array.from(sh.data as ArrayLike<number | bigint>, Number);
  } catch (e) {
    throw badNpz(label, e);
  }
  if (shape.length !== 2 || (format !== "csr" && format !== "csc")) return undefined;
  const [rows, cols] = shape;
  if (options.expectRows !== undefined && rows !== options.expectRows) {
    throw mismatch(label, options, rows, cols);
  }
  const major = format === "csr" ? rows : cols;
  return (entry, h) =>
    entry === "indptr.npy" && h.count !== major + 1
      ? `indptr has ${h.count} entries, expected ${major + 1} for shape (${rows}, ${cols})`
      : undefined;
}

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
  let crc = zlibCrc32(data.subarray(0, from));
  for (let s = from; s < data.length; s += CHUNK) {
    const e = Math.min(s + CHUNK, data.length);
    crc = zlibCrc32(data.subarray(s, e), crc);
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
  let h = knownHeader(data);
  if (h === undefined) {
    h = numpyFloatHeader(data);
    if (h !== undefined) remember(data, h);
  }
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
      remember(data, { dtype: arr.dtype, shape: [arr.shape[0], arr.shape[1]], start });
    }
  }
  return arr;
}

/** Remembers the header of `data` (its first `h.start` bytes) as a recent one. */
function remember(data: Uint8Array, h: NumpyFloatHeader): void {
  knownHeaders.unshift({ bytes: data.slice(0, h.start), dtype: h.dtype, shape: h.shape });
  if (knownHeaders.length > 8) knownHeaders.pop();
}

/** The header of `data` when it is byte for byte a recent file's, and the size fits. */
function knownHeader(data: Uint8Array): NumpyFloatHeader | undefined {
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

const SPARSE_KEYS = ["format.npy", "shape.npy", "data.npy"];

/** The arrays of a CSR/CSC matrix as `scipy.sparse.save_npz` writes it. */
const SPARSE_ARRAYS = ["format", "shape", "data", "indices", "indptr"];

/**
 * What is wrong with an archive that is not the matrix its mode reads (no
 * sparse matrix in it, or no `arr_0` when dense): said of what it holds, so
 * an archive with no arrays at all (`numpy.savez(path)`, a zip of nothing)
 * is not taken for the other kind of dump.
 */
function notTheMatrix(entries: readonly ZipEntry[], looksSparse: boolean, sparse: boolean): string {
  const arrays = entries.filter((e) => !e.isDirectory && e.name.endsWith(".npy"))
    .map((e) => e.name.slice(0, -4));
  if (arrays.length === 0) {
    return sparse
      ? `holds no arrays; a sparse dump holds ${SPARSE_ARRAYS.join(", ")} ` +
        "(written with scipy.sparse.save_npz(path, matrix))"
      : "holds no arrays; a dense dump holds arr_0 (written with numpy.savez(path, matrix))";
  }
  if (!sparse) return "no arr_0 array (dense dumps are written with numpy.savez(path, matrix))";
  if (arrays.includes("arr_0")) return "is a dense array; run merge without --sparse";
  if (looksSparse) {
    // format, shape and data are there, but parseNpzContent did not take it for a sparse matrix.
    return "format is not a string array naming the sparse format (csr or csc)";
  }
  const missing = SPARSE_ARRAYS.filter((k) => !arrays.includes(k));
  // A name that is not a plain word is quoted: the line stays one line.
  const shown = arrays.map((a) => /^[\w.-]+$/.test(a) ? a : JSON.stringify(a));
  return `holds ${shown.join(", ")} but no ${missing.join(", ")}: not a sparse matrix ` +
    "(sparse dumps are written with scipy.sparse.save_npz(path, matrix))";
}

/** Deflated entries of up to this many bytes are inflated once, whole (see {@linkcode decodeDumpMatrix}). */
const SMALL_ENTRY = 1 << 16;

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
 * import { decodeDumpMatrix } from "./decode.ts";
 * import { encodeNpz } from "../npz.ts";
 * import { ndarray } from "../npy.ts";
 * const bytes = encodeNpz({ arr_0: ndarray(new Float32Array([1, 2, 3]), [1, 3]) });
 * const { matrix } = decodeDumpMatrix(bytes, "q.npz", { sparse: false });
 * if (matrix.rows !== 1 || matrix.cols !== 3) throw new Error("wrong shape");
 * ```
 */
export function decodeDumpMatrix(
  bytes: Uint8Array,
  label: string,
  options: DecodeOptions = {},
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
    const checkHeader = sparseHeaderCheck(bytes, entries, label, options);
    let content;
    try {
      content = parseNpzContent(bytes, label, { ...limits, codec: NATIVE, checkHeader });
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
  const entry = entries.find((e) => e.name === "arr_0.npy");
  if (options.sparse || entry === undefined) {
    throw new InputError({
      file: label,
      where: "",
      message: notTheMatrix(entries, looksSparse, options.sparse === true),
    });
  }
  const raw = bytes.subarray(entry.dataOffset, entry.dataOffset + entry.compressedSize);
  // What the header declares is checked before the data is inflated; a small
  // deflated entry (a question vector) is inflated whole first, no further than
  // its declared size, and its header read from that (one inflation instead of
  // two). If that fails, the usual order says what is wrong first.
  let whole: Uint8Array | undefined;
  if (entry.method === 8 && entry.uncompressedSize <= SMALL_ENTRY) {
    try {
      const w = inflateChecked(raw, 8, entry.uncompressedSize, entry.crc32);
      if (typeof w !== "string") whole = w;
    } catch {
      // reported below, in the usual order
    }
  }
  let header: NpyHeader;
  try {
    header = npzEntryHeader(bytes, entry, label, NATIVE, whole);
  } catch (e) {
    throw badNpz(label, e);
  }
  if (header.shape.length !== 2) {
    throw new InputError({
      file: label,
      where: "",
      message: `arr_0 has shape ${shapeText(header.shape)}; expected a 2-d matrix`,
    });
  }
  if (header.dtype !== "f4" && header.dtype !== "f2") {
    throw new InputError({
      file: label,
      where: "",
      message:
        `arr_0 has dtype ${header.dtype}; phrase and question vectors must be float32 or float16`,
    });
  }
  if (options.expectRows !== undefined && header.shape[0] !== options.expectRows) {
    throw mismatch(label, options, header.shape[0], header.shape[1]);
  }
  // A stored entry in the reader's own buffer: its CRC is checked while its data is
  // moved into alignment (parseNpyCached).
  const crcLater = movable && entry.method === 0 && entry.compressedSize === entry.uncompressedSize;
  const data = whole ??
    (crcLater ? raw : inflateChecked(
      raw,
      entry.method,
      entry.uncompressedSize,
      entry.crc32,
      options.inflateBuffer,
    ));
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
