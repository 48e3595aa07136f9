/**
 * {@linkcode bestRows}: the first phrase with the largest exact score for
 * each question, dense or sparse.
 *
 * @module
 */
import type { ContextDump } from "../../io/dump/reader_sync.ts";
import type { CsrMatrix, DenseMatrix, Matrix } from "../../io/matrix.ts";
import { bestDenseRows, type ScoringOptions } from "./best_dense.ts";
import { bestSparseRows } from "./best_sparse.ts";

export type { ScoringOptions } from "./best_dense.ts";

/**
 * For each question, the index of the first phrase with the largest exact
 * score, or -1 when the paragraph has no phrases. Dense and sparse matrices
 * cannot be mixed; every question must be 1×d with the paragraph's d.
 *
 * @example
 * ```ts
 * import { bestRows } from "./best_rows.ts";
 * const c = { kind: "dense", rows: 2, cols: 2, dtype: "f32", data: new Float32Array([1, 0, 0, 1]) } as const;
 * const q = { kind: "dense", rows: 1, cols: 2, dtype: "f32", data: new Float32Array([0, 2]) } as const;
 * if (bestRows({ matrix: c }, [q])[0] !== 1) throw new Error("wrong row");
 * ```
 */
export function bestRows(
  context: Pick<ContextDump, "matrix" | "rowSquares" | "checkFinite">,
  questions: readonly Matrix[],
  options: ScoringOptions = {},
): Int32Array {
  const c = context.matrix;
  for (const q of questions) {
    if (q.kind !== c.kind || q.rows !== 1 || q.cols !== c.cols) {
      throw new RangeError(
        `question ${q.kind} ${q.rows}×${q.cols} does not fit the ${c.kind} ${c.rows}×${c.cols} phrase matrix`,
      );
    }
  }
  return c.kind === "dense"
    ? bestDenseRows(
      c,
      questions as DenseMatrix[],
      context.rowSquares,
      options,
      context.checkFinite,
    )
    : bestSparseRows(c, questions as CsrMatrix[]);
}
