/**
 * The matrix types of PI-SQuAD dumps and encoders: a dense row-major matrix
 * (float32 or float16) and a compressed sparse row (CSR) matrix, as numpy's
 * `savez` and scipy's `save_npz` store them.
 *
 * @example
 * ```ts
 * import type { Matrix } from "./matrix.ts";
 * const m: Matrix = { kind: "dense", rows: 1, cols: 2, dtype: "f32", data: new Float32Array([1, 2]) };
 * if (m.data.length !== m.rows * m.cols) throw new Error("bad matrix");
 * ```
 *
 * @module
 */

/** A dense row-major matrix (f32, or f16 as a `Float16Array`). */
export interface DenseMatrix {
  /** Kind tag. */
  readonly kind: "dense";
  /** Rows. */
  readonly rows: number;
  /** Columns (d). */
  readonly cols: number;
  /** Element type. */
  readonly dtype: "f32" | "f16";
  /** `rows * cols` values, row-major. */
  readonly data: Float32Array | Float16Array;
}

/** A compressed sparse row matrix (scipy CSR). */
export interface CsrMatrix {
  /** Kind tag. */
  readonly kind: "csr";
  /** Rows. */
  readonly rows: number;
  /** Columns (d). */
  readonly cols: number;
  /** Non-zero values. */
  readonly data: Float32Array;
  /** Column index of each value. */
  readonly indices: Int32Array;
  /** Row pointers, `rows + 1` entries. */
  readonly indptr: Int32Array;
}

/** A phrase or question matrix. */
export type Matrix = DenseMatrix | CsrMatrix;
