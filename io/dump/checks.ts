/**
 * The one set of checks on dump files, used by the reader (so by `merge`)
 * and by `validate`: float dtypes, finite values (dense f32 and f16, CSR),
 * and the shapes that must agree (rows = phrases, 1×d questions, one d), and
 * the size per context word. Each caller words what it finds its own way
 * (merge stops at the first problem, validate lists them all).
 *
 * @module
 */
import { InputError } from "../errors.ts";
import type { NdArray } from "../npy_format.ts";
import type { Matrix } from "../matrix.ts";

/** A shape as numpy prints it: `(3,)`, `(2, 5)`. */
export function shapeText(shape: readonly number[]): string {
  return shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(", ")})`;
}

/** Sum of squares of each row of a dense f32 matrix, in float64 (plain loop). */
export function sumSquaresF32(data: Float32Array, rows: number, cols: number): Float64Array {
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
export function checkDenseF32(
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

/**
 * Fails with the first NaN or infinity of float16 values (`bits`, rows of
 * `cols`), naming its row and column in `label`.
 */
export function checkHalf(bits: Uint16Array, cols: number, label: string): void {
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

/**
 * The values of a float32 or float16 array as float32 (a float32 array's
 * own data, not a copy); any other dtype fails, naming `what` in `label`.
 */
export function toFloat32(arr: NdArray, label: string, what: string): Float32Array {
  if (arr.dtype === "f4") return arr.data as Float32Array;
  if (arr.dtype === "f2") return new Float32Array(arr.data as unknown as ArrayLike<number>);
  throw new InputError({
    file: label,
    where: "",
    message:
      `${what} has dtype ${arr.dtype}; phrase and question vectors must be float32 or float16`,
  });
}

/** The values of an integer array as int32 (an int32 array's own data, not a copy). */
export function toInt32(arr: NdArray): Int32Array {
  if (arr.data instanceof Int32Array) return arr.data;
  const d = arr.data as ArrayLike<number | bigint>;
  const out = new Int32Array(d.length);
  for (let i = 0; i < d.length; i++) out[i] = Number(d[i]);
  return out;
}

/**
 * Fails with the first non-finite value of a CSR matrix's `data`, naming the
 * row `indptr` puts it in (in `label`); returns when every value is finite.
 */
export function rowOfNonFinite(data: Float32Array, indptr: Int32Array, label: string): void {
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

/**
 * Whether a paragraph's matrix has one row per phrase.
 *
 * @example
 * ```ts
 * import { rowsMatchPhrases } from "./checks.ts";
 * const m = { kind: "dense", rows: 2, cols: 1, dtype: "f32", data: new Float32Array(2) } as const;
 * if (!rowsMatchPhrases(m, 2) || rowsMatchPhrases(m, 3)) throw new Error("wrong");
 * ```
 */
export function rowsMatchPhrases(m: Matrix, phrases: number): boolean {
  return m.rows === phrases;
}

/** Whether a question matrix is a single row (1×d). */
export function isQuestionShape(m: Matrix): boolean {
  return m.rows === 1;
}

/** Whether two matrices have the same d (columns). */
export function sameDim(a: Matrix, b: Matrix): boolean {
  return a.cols === b.cols;
}

/**
 * The words of a context (whitespace-separated; at least 1), what the size
 * per word of a paragraph's `.npz` is measured against.
 *
 * @example
 * ```ts
 * import { contextWords } from "./checks.ts";
 * if (contextWords(" Paris is  nice ") !== 3 || contextWords("") !== 1) throw new Error("wrong");
 * ```
 */
export function contextWords(context: string): number {
  return context.split(/\s+/).filter((w) => w !== "").length || 1;
}
