/**
 * The `.npy` format on bytes: reader and writer, free of Effect so that
 * worker threads (merge) load it fast. `io/npy.ts` re-exports it and adds
 * reading and writing files as Effects. A header's dictionary is read by
 * `io/pyliteral.ts`'s `parsePyLiteral` (Python literals, never evaluated).
 *
 * @module
 */
import * as Data from "effect/Data";
import { LiteralError, parsePyLiteral, PyTuple, type PyValue } from "./pyliteral.ts";

// ---------------------------------------------------------------------------
// Types.

/** Numeric dtypes (kind letter + item size in bytes, as in NumPy's `dtype.str`). */
export type NumericDtype =
  | "f2"
  | "f4"
  | "f8"
  | "i1"
  | "i2"
  | "i4"
  | "i8"
  | "u1"
  | "u2"
  | "u4"
  | "u8"
  | "b1";

/**
 * A supported dtype without its byte-order character: a {@linkcode NumericDtype},
 * `S<n>` (byte strings of n bytes) or `U<n>` (unicode strings of n code points).
 */
export type Dtype = NumericDtype | `S${number}` | `U${number}`;

/** Byte order as written in a descr: little `<`, big `>`, not applicable `|`. */
export type ByteOrder = "<" | ">" | "|";

/** The typed arrays that hold array data (see the module notes for the mapping). */
export type NdData =
  | Float16Array
  | Float32Array
  | Float64Array
  | Int8Array
  | Int16Array
  | Int32Array
  | BigInt64Array
  | Uint8Array
  | Uint16Array
  | Uint32Array
  | BigUint64Array;

/**
 * An n-dimensional array. `data` is ALWAYS in C (row-major) order and host
 * byte order; `fortranOrder` and `byteOrder` describe the file layout (set by
 * the reader, optional for the writer).
 */
export interface NdArray<D extends NdData = NdData> {
  /** Element type, e.g. `"f4"`, `"i8"`, `"S3"`. */
  readonly dtype: Dtype;
  /** Dimensions; `[]` for a 0-d scalar. */
  readonly shape: readonly number[];
  /** Elements in C order (for `S<n>`/`U<n>`: n units per element). */
  readonly data: D;
  /** File byte order (reader) or wanted byte order (writer, default `<`). */
  readonly byteOrder?: ByteOrder;
  /**
   * The file stored the data in Fortran (column-major) order (reader), or
   * write it that way (writer; NumPy's rule applies: only when the array has
   * at least two dimensions longer than 1, otherwise the header says False).
   */
  readonly fortranOrder?: boolean;
}

/**
 * An `.npy` file (or an array in memory) that cannot be read or written.
 * `message` is one line: `file: entry: reason` (the entry part only for
 * arrays inside an archive).
 *
 * @example
 * ```ts
 * import { NpyError, parseNpy } from "./npy.ts";
 * try {
 *   parseNpy(new Uint8Array(4), "x.npy");
 * } catch (e) {
 *   if (e instanceof NpyError) console.log(e.message); // "x.npy: file is too short ..."
 * }
 * ```
 */
export class NpyError extends Data.TaggedError("NpyError")<{
  /** The file (path or display name) given by the caller. */
  readonly file: string;
  /** The archive entry, when the array came from one. */
  readonly entry?: string;
  /** What is wrong, without the file and entry. */
  readonly reason: string;
  /** One line: `file: entry: reason`. */
  readonly message: string;
}> {
  /** Builds the error and its one-line message. */
  static of(file: string, entry: string | undefined, reason: string): NpyError {
    const message = entry === undefined ? `${file}: ${reason}` : `${file}: ${entry}: ${reason}`;
    return entry === undefined
      ? new NpyError({ file, reason, message })
      : new NpyError({ file, entry, reason, message });
  }

  /** The one-line message. */
  override toString(): string {
    return this.message;
  }
}

// ---------------------------------------------------------------------------
// Dtype table.

type Ctor = {
  new (length: number): NdData;
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): NdData;
};

interface DtypeInfo {
  /** Normalised dtype. */
  readonly dtype: Dtype;
  /** Bytes per element. */
  readonly itemsize: number;
  /** Bytes per typed-array unit (the byte-swap width). */
  readonly unit: number;
  /** Typed-array units per element. */
  readonly units: number;
  /** Typed-array constructor. */
  readonly ctor: Ctor;
}

const NUMERIC: Record<NumericDtype, Ctor> = {
  f2: Float16Array as unknown as Ctor,
  f4: Float32Array as unknown as Ctor,
  f8: Float64Array as unknown as Ctor,
  i1: Int8Array as unknown as Ctor,
  i2: Int16Array as unknown as Ctor,
  i4: Int32Array as unknown as Ctor,
  i8: BigInt64Array as unknown as Ctor,
  u1: Uint8Array as unknown as Ctor,
  u2: Uint16Array as unknown as Ctor,
  u4: Uint32Array as unknown as Ctor,
  u8: BigUint64Array as unknown as Ctor,
  b1: Uint8Array as unknown as Ctor,
};

const HOST_LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const HOST_ORDER: "<" | ">" = HOST_LITTLE ? "<" : ">";

/** Information on a normalised dtype, or `undefined` when unsupported. */
function dtypeInfo(dtype: string): DtypeInfo | undefined {
  if (Object.hasOwn(NUMERIC, dtype)) {
    const ctor = NUMERIC[dtype as NumericDtype];
    const size = Number(dtype.slice(1));
    return { dtype: dtype as Dtype, itemsize: size, unit: size, units: 1, ctor };
  }
  const m = /^([SU])([1-9][0-9]{0,9})$/.exec(dtype);
  if (m === null) return undefined;
  const n = Number(m[2]);
  if (m[1] === "S") {
    return {
      dtype: dtype as Dtype,
      itemsize: n,
      unit: 1,
      units: n,
      ctor: Uint8Array as unknown as Ctor,
    };
  }
  return {
    dtype: dtype as Dtype,
    itemsize: 4 * n,
    unit: 4,
    units: n,
    ctor: Uint32Array as unknown as Ctor,
  };
}

/**
 * Parses a NumPy descr string (`'<f4'`, `'|b1'`, `'>i8'`, `'S3'`, `'?'`) into
 * a dtype and byte order, or returns why it is not supported.
 */
function parseDescr(descr: string): { info: DtypeInfo; order: ByteOrder } | string {
  const m = /^([<>=|]?)([a-zA-Z?])([0-9]*)$/.exec(descr);
  if (m === null) return `unsupported dtype '${descr}'`;
  const [, orderChar, kind, size] = m;
  let name: string;
  if (kind === "?" && size === "") name = "b1";
  else if ((kind === "b" && size === "1") || "fiuSU".includes(kind)) name = kind + size;
  else return `unsupported dtype '${descr}'`;
  const info = dtypeInfo(name);
  if (info === undefined) return `unsupported dtype '${descr}'`;
  const order: ByteOrder = info.unit === 1
    ? "|"
    : orderChar === "<" || orderChar === ">"
    ? orderChar
    : HOST_ORDER;
  return { info, order };
}

/** The descr NumPy writes for `arr` (`'<f4'`, `'|b1'`, `'>i8'`, `'|S3'` ...). */
export function descrOf(arr: Pick<NdArray, "dtype" | "byteOrder">): string {
  const info = dtypeInfo(arr.dtype);
  if (info === undefined) return arr.dtype;
  return (info.unit === 1 ? "|" : arr.byteOrder === ">" ? ">" : "<") + arr.dtype;
}

// ---------------------------------------------------------------------------
// Helpers.

function shapeRepr(shape: readonly number[]): string {
  if (shape.length === 1) return `(${shape[0]},)`;
  return `(${shape.join(", ")})`;
}

/** Product of dims, or -1 when it is not a safe integer. */
function elementCount(shape: readonly number[]): number {
  let c = 1;
  for (const d of shape) {
    c *= d;
    if (!Number.isSafeInteger(c)) return -1;
  }
  return c;
}

function swapBytes(b: Uint8Array, width: number): void {
  if (width === 2) {
    for (let i = 0; i + 1 < b.length; i += 2) {
      const t = b[i];
      b[i] = b[i + 1];
      b[i + 1] = t;
    }
  } else if (width === 4) {
    for (let i = 0; i + 3 < b.length; i += 4) {
      let t = b[i];
      b[i] = b[i + 3];
      b[i + 3] = t;
      t = b[i + 1];
      b[i + 1] = b[i + 2];
      b[i + 2] = t;
    }
  } else if (width === 8) {
    for (let i = 0; i + 7 < b.length; i += 8) {
      for (let k = 0; k < 4; k++) {
        const t = b[i + k];
        b[i + k] = b[i + 7 - k];
        b[i + 7 - k] = t;
      }
    }
  }
}

/**
 * Reorders elements between Fortran and C order. `toC`: `src` holds the
 * Fortran layout of `shape`, the result the C layout; otherwise the reverse.
 */
function reorder(src: NdData, shape: readonly number[], units: number, toC: boolean): NdData {
  const out = new (src.constructor as Ctor)(src.length);
  const o = out as unknown as { [i: number]: number | bigint };
  const s = src as unknown as { [i: number]: number | bigint };
  const nd = shape.length;
  if (nd === 2 && units === 1) {
    const r = shape[0], c = shape[1];
    if (toC) {
      for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) o[i * c + j] = s[j * r + i];
    } else {
      for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) o[j * r + i] = s[i * c + j];
    }
    return out;
  }
  const count = elementCount(shape);
  if (count === 0) return out;
  const fStride = new Array<number>(nd);
  let acc = 1;
  for (let a = 0; a < nd; a++) {
    fStride[a] = acc;
    acc *= shape[a];
  }
  const idx = new Array<number>(nd).fill(0);
  let f = 0;
  for (let c = 0; c < count; c++) {
    const from = (toC ? f : c) * units;
    const to = (toC ? c : f) * units;
    for (let k = 0; k < units; k++) o[to + k] = s[from + k];
    for (let a = nd - 1; a >= 0; a--) {
      if (++idx[a] < shape[a]) {
        f += fStride[a];
        break;
      }
      f -= (shape[a] - 1) * fStride[a];
      idx[a] = 0;
    }
  }
  return out;
}

/** Whether NumPy would mark an F-contiguous array of `shape` as Fortran order. */
function fortranMatters(shape: readonly number[]): boolean {
  if (elementCount(shape) === 0) return false;
  return shape.filter((d) => d > 1).length >= 2;
}

function latin1(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 8192) {
    s += String.fromCharCode(...bytes.subarray(i, i + 8192));
  }
  return s;
}

// ---------------------------------------------------------------------------
// Reading.

/** Options of {@linkcode parseNpy}. */
export interface ParseNpyOptions {
  /** Archive entry name, for error messages. */
  readonly entry?: string;
  /**
   * Copy the data out of `bytes` (default true). With false, and when the
   * data is suitably aligned and already in host order and C order, the
   * result is a view into `bytes`' buffer (no copy).
   */
  readonly copy?: boolean;
}

/** What a `.npy` header declares (see {@linkcode parseNpyHeader}). */
export interface NpyHeader {
  /** Normalised dtype. */
  readonly dtype: Dtype;
  /** Bytes per element. */
  readonly itemsize: number;
  /** The descr as written (`<f4`). */
  readonly descr: string;
  /** Byte order of the data. */
  readonly order: ByteOrder;
  /** Whether the data is in Fortran order. */
  readonly fortranOrder: boolean;
  /** Dimensions. */
  readonly shape: readonly number[];
  /** Elements (product of the dimensions). */
  readonly count: number;
  /** Offset of the data (magic, version, length field and header). */
  readonly dataStart: number;
  /** Bytes of data the shape and dtype need. */
  readonly dataBytes: number;
}

/** The most header bytes {@linkcode parseNpyHeader} is asked to read from an archive entry. */
export const MAX_NPY_HEADER = 1 << 20;

/**
 * Parses the preamble and header of `.npy` bytes, which need hold no more
 * than that: what the array declares (dtype, shape, where the data starts
 * and how many bytes it needs), so that a reader can check it, and bound
 * what it reads, before it reads the data.
 *
 * @throws {NpyError} as {@linkcode parseNpy} for everything but the data.
 *
 * @example
 * ```ts
 * import { encodeNpy, ndarray, parseNpyHeader } from "./npy.ts";
 * const h = parseNpyHeader(encodeNpy(ndarray(new Float32Array(6), [2, 3])).subarray(0, 128), "a.npy");
 * if (h.dataStart !== 128 || h.dataBytes !== 24 || h.shape.join() !== "2,3") throw new Error();
 * ```
 */
export function parseNpyHeader(
  bytes: Uint8Array,
  file: string,
  options: { readonly entry?: string } = {},
): NpyHeader {
  const { info: _, ...header } = readHeader(bytes, file, options);
  return header;
}

function readHeader(
  bytes: Uint8Array,
  file: string,
  options: { readonly entry?: string },
): NpyHeader & { readonly info: DtypeInfo } {
  const fail = (reason: string): never => {
    throw NpyError.of(file, options.entry, reason);
  };
  if (bytes.length < 10) fail(`file is too short to be an NPY file (${bytes.length} bytes)`);
  if (
    bytes[0] !== 0x93 || bytes[1] !== 0x4e || bytes[2] !== 0x55 || bytes[3] !== 0x4d ||
    bytes[4] !== 0x50 || bytes[5] !== 0x59
  ) {
    fail("not an NPY file (bad magic bytes)");
  }
  const major = bytes[6], minor = bytes[7];
  if (!((major === 1 || major === 2 || major === 3) && minor === 0)) {
    fail(`unsupported NPY format version ${major}.${minor} (supported: 1.0, 2.0, 3.0)`);
  }
  let headerLen: number, start: number;
  if (major === 1) {
    headerLen = bytes[8] | (bytes[9] << 8);
    start = 10;
  } else {
    if (bytes.length < 12) fail(`file is too short to be an NPY file (${bytes.length} bytes)`);
    headerLen = (bytes[8] | (bytes[9] << 8) | (bytes[10] << 16) | (bytes[11] << 24)) >>> 0;
    start = 12;
  }
  if (start + headerLen > bytes.length) {
    fail(`corrupt header: declares ${headerLen} bytes but only ${bytes.length - start} follow`);
  }
  const dataStart = start + headerLen;
  const known = recentHeader(bytes, dataStart);
  if (known !== undefined) return { ...known, shape: known.shape.slice() };
  const raw = bytes.subarray(start, dataStart);
  let text: string;
  if (major === 3) {
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(raw);
    } catch {
      return fail("corrupt header: not valid UTF-8");
    }
  } else {
    text = latin1(raw);
  }
  const parsed = parseHeaderText(text, fail, dataStart);
  if (dataStart <= 4096) {
    recentHeaders.unshift({ bytes: bytes.slice(0, dataStart), parsed });
    if (recentHeaders.length > RECENT_HEADERS) recentHeaders.pop();
  }
  return { ...parsed, shape: parsed.shape.slice() };
}

/** How many headers {@linkcode readHeader} remembers parsed (dumps repeat a few). */
const RECENT_HEADERS = 8;
/** Headers (preamble and text, byte for byte) recently parsed without fault, and what they declare. */
const recentHeaders: { bytes: Uint8Array; parsed: NpyHeader & { readonly info: DtypeInfo } }[] = [];

/** What `bytes`' header declares when its first `dataStart` bytes are a recent header's. */
function recentHeader(
  bytes: Uint8Array,
  dataStart: number,
): (NpyHeader & { readonly info: DtypeInfo }) | undefined {
  for (const h of recentHeaders) {
    if (h.bytes.length !== dataStart) continue;
    let i = dataStart - 1;
    while (i >= 0 && bytes[i] === h.bytes[i]) i--;
    if (i < 0) return h.parsed;
  }
  return undefined;
}

/** The header dictionary `text` parsed and checked (`fail` throws); the data starts at `dataStart`. */
function parseHeaderText(
  text: string,
  fail: (reason: string) => never,
  dataStart: number,
): NpyHeader & { readonly info: DtypeInfo } {
  let lit: PyValue;
  try {
    lit = parsePyLiteral(text);
  } catch (e) {
    if (e instanceof LiteralError) return fail(`corrupt header: ${e.message}`);
    throw e;
  }
  if (!(lit instanceof Map)) return fail("corrupt header: not a dictionary");
  const keys = [...lit.keys()].sort();
  if (keys.join(",") !== "descr,fortran_order,shape") {
    fail(`corrupt header: keys are [${keys.join(", ")}], expected [descr, fortran_order, shape]`);
  }
  const descr = lit.get("descr");
  const fortran = lit.get("fortran_order");
  const shapeV = lit.get("shape");
  if (typeof fortran !== "boolean") {
    return fail("corrupt header: fortran_order is not True or False");
  }
  if (
    !(shapeV instanceof PyTuple) ||
    !shapeV.items.every((d) => typeof d === "number" && Number.isSafeInteger(d))
  ) {
    return fail("corrupt header: shape is not a tuple of integers");
  }
  const shape = shapeV.items as number[];
  if (shape.some((d) => d < 0)) {
    fail(`corrupt header: negative dimension in shape ${shapeRepr(shape)}`);
  }
  if (shape.length > 64) fail(`shape has ${shape.length} dimensions (at most 64 are supported)`);
  if (typeof descr !== "string") {
    return fail(
      Array.isArray(descr)
        ? "unsupported dtype: structured (record) dtypes are not supported"
        : "corrupt header: descr is not a string",
    );
  }
  const parsed = parseDescr(descr);
  if (typeof parsed === "string") return fail(parsed);
  const { info, order } = parsed;
  const count = elementCount(shape);
  if (count < 0) return fail(`shape ${shapeRepr(shape)} is too large`);
  const dataBytes = count * info.itemsize;
  if (!Number.isSafeInteger(dataBytes)) return fail(`shape ${shapeRepr(shape)} is too large`);
  return {
    info,
    dtype: info.dtype,
    itemsize: info.itemsize,
    descr,
    order,
    fortranOrder: fortran,
    shape,
    count,
    dataStart,
    dataBytes,
  };
}

/**
 * Parses `.npy` bytes. `file` names the source in errors. Values come back in
 * C order and host byte order (see {@linkcode NdArray}).
 *
 * @throws {NpyError} for a bad magic, unsupported version, corrupt header,
 *   unsupported dtype, invalid shape, or data whose size does not match.
 *
 * @example
 * ```ts
 * import { encodeNpy, ndarray, parseNpy } from "./npy.ts";
 * const arr = parseNpy(encodeNpy(ndarray(new Float32Array(6), [2, 3])), "emb.npy");
 * if (arr.dtype !== "f4" || arr.shape.join() !== "2,3" || arr.data.length !== 6) throw new Error();
 * ```
 */
export function parseNpy(bytes: Uint8Array, file: string, options: ParseNpyOptions = {}): NdArray {
  const fail = (reason: string): never => {
    throw NpyError.of(file, options.entry, reason);
  };
  const { info, descr, order, fortranOrder: fortran, shape, count, dataStart } = readHeader(
    bytes,
    file,
    options,
  );
  const have = bytes.length - dataStart;
  const need = count * info.itemsize;
  const wrongSize = npyDataSizeProblem({ shape, descr, dataBytes: need }, have);
  if (wrongSize !== undefined) fail(wrongSize);
  const swap = order !== "|" && order !== HOST_ORDER;
  const fortranLayout = fortran && shape.length >= 2;
  const length = count * info.units;
  let data: NdData;
  const absOffset = bytes.byteOffset + dataStart;
  if (options.copy === false && !swap && absOffset % info.unit === 0) {
    data = new info.ctor(bytes.buffer, absOffset, length);
  } else {
    const copy = bytes.slice(dataStart, dataStart + need);
    if (swap) swapBytes(copy, info.unit);
    data = new info.ctor(copy.buffer, 0, length);
  }
  if (fortranLayout) data = reorder(data, shape, info.units, true);
  return { dtype: info.dtype, shape, data, byteOrder: order, fortranOrder: fortran };
}

/**
 * Why `have` bytes of data cannot be the data of an array whose header is
 * `h` (too few: truncated; too many: not its shape), or `undefined` when
 * they are as many as it needs.
 *
 * @example
 * ```ts
 * import { npyDataSizeProblem } from "./npy.ts";
 * const h = { shape: [2, 3], descr: "<f4", dataBytes: 24 };
 * if (npyDataSizeProblem(h, 24) !== undefined) throw new Error();
 * if (npyDataSizeProblem(h, 20) !== "data is truncated: shape (2, 3) of <f4 needs 24 bytes, found 20") {
 *   throw new Error();
 * }
 * ```
 */
export function npyDataSizeProblem(
  h: Pick<NpyHeader, "shape" | "descr" | "dataBytes">,
  have: number,
): string | undefined {
  if (have === h.dataBytes) return undefined;
  return `${have < h.dataBytes ? "data is truncated" : "data size does not match the shape"}: ` +
    `shape ${shapeRepr(h.shape)} of ${h.descr} needs ${h.dataBytes} bytes, found ${have}`;
}

// ---------------------------------------------------------------------------
// Writing.

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59];

/**
 * Offset of the data of a `.npy` inside `npy` (from its header length
 * field), or -1 when it is too short to say.
 *
 * @example
 * ```ts
 * import { encodeNpy, ndarray, npyDataStart } from "./npy.ts";
 * const bytes = encodeNpy(ndarray(new Float32Array(2)));
 * if (npyDataStart(bytes) !== bytes.length - 8) throw new Error("wrong offset");
 * ```
 */
export function npyDataStart(npy: Uint8Array): number {
  if (npy.length < 12) return -1;
  return npy[6] === 1
    ? 10 + (npy[8] | (npy[9] << 8))
    : 12 + ((npy[8] | (npy[9] << 8) | (npy[10] << 16) | (npy[11] << 24)) >>> 0);
}

/** A 2-d C-order little-endian float32/float16 array's header, as {@linkcode numpyFloatHeader} reads it. */
export interface NumpyFloatHeader {
  /** Element type. */
  readonly dtype: "f4" | "f2";
  /** Rows and columns. */
  readonly shape: readonly [number, number];
  /** Where the data starts. */
  readonly start: number;
}

/** A header exactly as `numpy.save` writes a 2-d C-order little-endian float32/16 array. */
const NUMPY_FLOAT_HEADER =
  /^\{'descr': '<(f4|f2)', 'fortran_order': False, 'shape': \((0|[1-9][0-9]{0,9}), (0|[1-9][0-9]{0,9})\), \} *\n$/;

/**
 * The header of `data` when it is written exactly as `numpy.save` writes a
 * 2-d C-order little-endian float32/float16 array and the data size fits
 * (the fast path of dump readers: one regular expression instead of the
 * full parse); otherwise `undefined`, and {@linkcode parseNpy} decides.
 *
 * @example
 * ```ts
 * import { encodeNpy, ndarray, numpyFloatHeader } from "./npy.ts";
 * const h = numpyFloatHeader(encodeNpy(ndarray(new Float32Array(6), [2, 3])));
 * if (h?.dtype !== "f4" || h.shape[0] !== 2 || h.shape[1] !== 3) throw new Error("not read");
 * ```
 */
export function numpyFloatHeader(data: Uint8Array): NumpyFloatHeader | undefined {
  if (
    data.length < 12 || data[0] !== 0x93 || data[1] !== 0x4e || data[2] !== 0x55 ||
    data[3] !== 0x4d || data[4] !== 0x50 || data[5] !== 0x59
  ) {
    return undefined; // not "\x93NUMPY"
  }
  const major = data[6];
  if ((major !== 1 && major !== 2 && major !== 3) || data[7] !== 0) return undefined;
  const from = major === 1 ? 10 : 12;
  const start = npyDataStart(data);
  if (start <= from || start > data.length || start - from > 4096) return undefined;
  const m = NUMPY_FLOAT_HEADER.exec(String.fromCharCode(...data.subarray(from, start)));
  if (m === null) return undefined;
  const dtype = m[1] as "f4" | "f2";
  const rows = Number(m[2]), cols = Number(m[3]);
  if (data.length - start !== rows * cols * (dtype === "f4" ? 4 : 2)) return undefined;
  return { dtype, shape: [rows, cols], start };
}

/**
 * The NPY preamble (magic, version, header length, header text padded with
 * spaces and a final newline so that the data starts on a 64-byte boundary)
 * for a header dictionary text, exactly as NumPy's `_wrap_header`. Without
 * `version`, the oldest version that can hold the header is used (1.0; 2.0
 * when the header exceeds 65535 bytes; 3.0 when it is not Latin-1).
 *
 * @example
 * ```ts
 * import { npyPreamble } from "./npy.ts";
 * const p = npyPreamble("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }");
 * p.length % 64; // 0
 * ```
 */
export function npyPreamble(header: string, version?: 1 | 2 | 3): Uint8Array {
  const wrap = (v: 1 | 2 | 3): Uint8Array | undefined => {
    let enc: Uint8Array;
    if (v === 3) enc = new TextEncoder().encode(header);
    else {
      enc = new Uint8Array(header.length);
      for (let i = 0; i < header.length; i++) {
        const c = header.charCodeAt(i);
        if (c > 0xff) return undefined;
        enc[i] = c;
      }
    }
    const prefix = v === 1 ? 10 : 12;
    const hlen = enc.length + 1;
    const pad = 64 - ((prefix + hlen) % 64);
    const total = hlen + pad;
    if (v === 1 ? total > 0xffff : total > 0xffffffff) return undefined;
    const out = new Uint8Array(prefix + total);
    out.set(MAGIC, 0);
    out[6] = v;
    out[7] = 0;
    out[8] = total & 0xff;
    out[9] = (total >>> 8) & 0xff;
    if (v !== 1) {
      out[10] = (total >>> 16) & 0xff;
      out[11] = (total >>> 24) & 0xff;
    }
    out.set(enc, prefix);
    out.fill(0x20, prefix + enc.length, out.length - 1);
    out[out.length - 1] = 0x0a;
    return out;
  };
  if (version !== undefined) {
    const r = wrap(version);
    if (r === undefined) {
      throw new RangeError(`NPY header does not fit format version ${version}.0`);
    }
    return r;
  }
  return wrap(1) ?? wrap(2) ?? wrap(3)!;
}

/** Options of {@linkcode encodeNpy}. */
export interface EncodeNpyOptions {
  /** Force a format version (default: the oldest that fits, as NumPy). */
  readonly version?: 1 | 2 | 3;
  /** Name for error messages (default `<memory>`). */
  readonly file?: string;
  /** Archive entry name for error messages. */
  readonly entry?: string;
}

interface Checked {
  info: DtypeInfo;
  count: number;
}

function checkArray(arr: NdArray, file: string, entry: string | undefined): Checked {
  const fail = (reason: string): never => {
    throw NpyError.of(file, entry, reason);
  };
  const info = dtypeInfo(arr.dtype);
  if (info === undefined) return fail(`unsupported dtype '${arr.dtype}'`);
  if (
    !Array.isArray(arr.shape) || arr.shape.length > 64 ||
    !arr.shape.every((d) => Number.isSafeInteger(d) && d >= 0)
  ) {
    return fail(`invalid shape ${JSON.stringify(arr.shape)}`);
  }
  const count = elementCount(arr.shape);
  if (count < 0) return fail(`shape ${shapeRepr(arr.shape)} is too large`);
  if (!(arr.data instanceof (info.ctor as unknown as typeof Uint8Array))) {
    return fail(`dtype ${arr.dtype} needs a ${info.ctor.name}, got ${arr.data?.constructor?.name}`);
  }
  if (arr.data.length !== count * info.units) {
    fail(
      `shape ${shapeRepr(arr.shape)} has ${count} elements (${
        count * info.units
      } ${info.ctor.name} units) but data has ${arr.data.length}`,
    );
  }
  return { info, count };
}

/**
 * Encodes an array as `.npy` bytes, byte-identical to `numpy.save` for the
 * same array (same dtype, byte order and memory layout).
 *
 * @throws {NpyError} when `arr` is inconsistent (unknown dtype, wrong typed
 *   array, or a data length that does not match the shape).
 *
 * @example
 * ```ts
 * import { encodeNpy } from "./npy.ts";
 * const bytes = encodeNpy({ dtype: "i8", shape: [2], data: new BigInt64Array([1n, -1n]), byteOrder: ">" });
 * // Big-endian int64: the header says ">i8", then 1 as 8 bytes, most significant first.
 * if (!new TextDecoder().decode(bytes).includes("'descr': '>i8'")) throw new Error("descr");
 * if (bytes[bytes.length - 9] !== 1) throw new Error("byte order");
 * ```
 */
export function encodeNpy(arr: NdArray, options: EncodeNpyOptions = {}): Uint8Array {
  const file = options.file ?? "<memory>";
  const { info } = checkArray(arr, file, options.entry);
  const descr = descrOf(arr);
  const fortran = arr.fortranOrder === true && fortranMatters(arr.shape);
  const shape = arr.shape;
  let header = `{'descr': '${descr}', 'fortran_order': ${fortran ? "True" : "False"}, 'shape': ${
    shapeRepr(shape)
  }, }`;
  if (shape.length > 0) {
    const growth = String(shape[fortran ? shape.length - 1 : 0]).length;
    header += " ".repeat(Math.max(0, 21 - growth));
  }
  let pre: Uint8Array;
  try {
    pre = npyPreamble(header, options.version);
  } catch (e) {
    throw NpyError.of(file, options.entry, e instanceof Error ? e.message : String(e));
  }
  let data: NdData = arr.data;
  if (fortran) data = reorder(data, shape, info.units, false);
  const byteLength = data.length * info.unit;
  const out = new Uint8Array(pre.length + byteLength);
  out.set(pre, 0);
  out.set(new Uint8Array(data.buffer, data.byteOffset, byteLength), pre.length);
  const order = descr[0];
  if (order !== "|" && order !== HOST_ORDER) swapBytes(out.subarray(pre.length), info.unit);
  return out;
}

// ---------------------------------------------------------------------------
// Construction and conversion helpers.

function inferDtype(data: NdData): NumericDtype {
  if (data instanceof Float16Array) return "f2";
  if (data instanceof Float32Array) return "f4";
  if (data instanceof Float64Array) return "f8";
  if (data instanceof Int8Array) return "i1";
  if (data instanceof Int16Array) return "i2";
  if (data instanceof Int32Array) return "i4";
  if (data instanceof BigInt64Array) return "i8";
  if (data instanceof Uint16Array) return "u2";
  if (data instanceof Uint32Array) return "u4";
  if (data instanceof BigUint64Array) return "u8";
  return "u1";
}

/**
 * Builds an {@linkcode NdArray} from a typed array (C order), inferring the
 * dtype from its class (`Uint8Array` → `u1`; pass `dtype: "b1"` for booleans).
 * `shape` defaults to 1-d.
 *
 * @throws {NpyError} when the data length does not match the shape or the dtype.
 *
 * @example
 * ```ts
 * import { ndarray } from "./npy.ts";
 * const m = ndarray(new Float32Array(6), [2, 3]);
 * const flags = ndarray(new Uint8Array([1, 0]), [2], { dtype: "b1" });
 * ```
 */
export function ndarray<D extends NdData>(
  data: D,
  shape?: readonly number[],
  options: { dtype?: Dtype; byteOrder?: ByteOrder; fortranOrder?: boolean } = {},
): NdArray<D> {
  const arr: NdArray<D> = {
    dtype: options.dtype ?? inferDtype(data),
    shape: shape ?? [data.length],
    data,
    byteOrder: options.byteOrder,
    fortranOrder: options.fortranOrder,
  };
  checkArray(arr, "<memory>", undefined);
  return arr;
}

/**
 * Builds an `S<n>` array (NumPy bytes strings) from strings (UTF-8 encoded)
 * or byte arrays; n is the longest item (at least 1, as NumPy). `shape`
 * defaults to 1-d; pass `[]` with one value for a 0-d scalar.
 *
 * @example
 * ```ts
 * import { bytesArray } from "./npy.ts";
 * const fmt = bytesArray(["csr"], []); // numpy.array(b"csr"), dtype |S3
 * ```
 */
export function bytesArray(
  values: readonly (string | Uint8Array)[],
  shape?: readonly number[],
): NdArray<Uint8Array> {
  const enc = new TextEncoder();
  const items = values.map((v) => typeof v === "string" ? enc.encode(v) : v);
  const n = Math.max(1, ...items.map((b) => b.length));
  const data = new Uint8Array(items.length * n);
  items.forEach((b, i) => data.set(b, i * n));
  return ndarray(data, shape ?? [items.length], { dtype: `S${n}` });
}

/**
 * The elements of an `S<n>` or `U<n>` array as strings, in C order. Trailing
 * NULs are dropped (as NumPy does); `S` bytes are decoded as UTF-8, or as
 * Latin-1 when they are not valid UTF-8.
 *
 * @example
 * ```ts
 * import { bytesArray, stringsOf } from "./npy.ts";
 * stringsOf(bytesArray(["csr"], [])); // ["csr"]
 * ```
 */
export function stringsOf(arr: NdArray): string[] {
  const info = dtypeInfo(arr.dtype);
  if (info === undefined || !(arr.dtype.startsWith("S") || arr.dtype.startsWith("U"))) {
    throw new TypeError(`stringsOf: dtype ${arr.dtype} is not a string dtype`);
  }
  const n = info.units;
  const count = n === 0 ? 0 : arr.data.length / n;
  const out: string[] = [];
  const utf8 = new TextDecoder("utf-8", { fatal: true });
  for (let i = 0; i < count; i++) {
    let end = (i + 1) * n;
    const start = i * n;
    const d = arr.data as Uint8Array | Uint32Array;
    while (end > start && d[end - 1] === 0) end--;
    if (arr.dtype.startsWith("U")) {
      let s = "";
      for (let k = start; k < end; k++) s += String.fromCodePoint(Math.min(d[k], 0x10ffff));
      out.push(s);
    } else {
      const b = (d as Uint8Array).subarray(start, end);
      try {
        out.push(utf8.decode(b));
      } catch {
        out.push(latin1(b));
      }
    }
  }
  return out;
}

/**
 * The values of a numeric array as a `Float64Array` in C order (`i8`/`u8`
 * beyond 2^53 lose precision; booleans become 0/1).
 *
 * @example
 * ```ts
 * import { asFloat64, ndarray } from "./npy.ts";
 * asFloat64(ndarray(new BigInt64Array([3n]))); // Float64Array [3]
 * ```
 */
export function asFloat64(arr: NdArray): Float64Array {
  if (arr.dtype.startsWith("S") || arr.dtype.startsWith("U")) {
    throw new TypeError(`asFloat64: dtype ${arr.dtype} is not numeric`);
  }
  const d = arr.data;
  if (d instanceof BigInt64Array || d instanceof BigUint64Array) {
    const out = new Float64Array(d.length);
    for (let i = 0; i < d.length; i++) out[i] = Number(d[i]);
    return out;
  }
  return new Float64Array(d as ArrayLike<number>);
}

/** A JSON value of {@linkcode toJsonValues}: nested arrays of scalars. */
export type JsonValue = number | string | boolean | JsonValue[];

/**
 * The array as JSON-able nested lists in C (row-major) order; a 0-d array
 * gives a scalar. Floats are numbers, except non-finite ones, which become
 * the strings `"NaN"`, `"Infinity"`, `"-Infinity"` (JSON has no such
 * numbers; `-0` prints as `0`). 64-bit integers are numbers when
 * safe, else decimal strings. Booleans are `true`/`false`; `S`/`U` elements are
 * strings (see {@linkcode stringsOf}).
 *
 * @example
 * ```ts
 * import { ndarray, toJsonValues } from "./npy.ts";
 * toJsonValues(ndarray(new Float32Array([1, NaN, 3, 4]), [2, 2])); // [[1, "NaN"], [3, 4]]
 * ```
 */
export function toJsonValues(arr: NdArray): JsonValue {
  let flat: JsonValue[];
  if (arr.dtype.startsWith("S") || arr.dtype.startsWith("U")) flat = stringsOf(arr);
  else if (arr.dtype === "b1") flat = Array.from(arr.data as Uint8Array, (x) => x !== 0);
  else if (arr.data instanceof BigInt64Array || arr.data instanceof BigUint64Array) {
    flat = Array.from(
      arr.data as ArrayLike<bigint>,
      (x) => (x >= -9007199254740991n && x <= 9007199254740991n ? Number(x) : x.toString()),
    );
  } else {
    flat = Array.from(
      arr.data as ArrayLike<number>,
      (x) => Number.isFinite(x) ? x : Number.isNaN(x) ? "NaN" : x > 0 ? "Infinity" : "-Infinity",
    );
  }
  const shape = arr.shape;
  if (shape.length === 0) return flat[0];
  const build = (axis: number, offset: number): JsonValue[] => {
    const n = shape[axis];
    if (axis === shape.length - 1) return flat.slice(offset, offset + n);
    let stride = 1;
    for (let a = axis + 1; a < shape.length; a++) stride *= shape[a];
    const out: JsonValue[] = [];
    for (let i = 0; i < n; i++) out.push(build(axis + 1, offset + i * stride));
    return out;
  };
  return build(0, 0);
}
