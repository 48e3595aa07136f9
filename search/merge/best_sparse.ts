/**
 * Sparse scoring: {@linkcode bestSparseRows}, CSR phrase rows against CSR
 * question vectors, with the same exact decision as dense scoring.
 *
 * @module
 */
import type { CsrMatrix } from "../../io/matrix.ts";
import { fsum } from "../fsum.ts";
import { pickRow } from "./pick.ts";

const EPS = 2 ** -52;

let colSlots = new Int32Array(0);
/** One bit per column: the questions use it (a 2^20-column matrix: 128 KiB, cache-resident). */
let colBits = new Int32Array(0);

/**
 * The sparse counterpart of {@linkcode bestDenseRows}: a CSR phrase matrix
 * against 1×d CSR question vectors. Scores are sums of the products of the
 * stored values in the row's stored order (duplicate column indices, in the
 * row or in the question, each contribute their products).
 *
 * @example
 * ```ts
 * import { bestSparseRows } from "./best_sparse.ts";
 * const c = { kind: "csr", rows: 2, cols: 8, data: new Float32Array([1, 2]),
 *   indices: new Int32Array([3, 5]), indptr: new Int32Array([0, 1, 2]) } as const;
 * const q = { kind: "csr", rows: 1, cols: 8, data: new Float32Array([1]),
 *   indices: new Int32Array([5]), indptr: new Int32Array([0, 1]) } as const;
 * if (bestSparseRows(c, [q])[0] !== 1) throw new Error("wrong row");
 * ```
 */
export function bestSparseRows(c: CsrMatrix, questions: readonly CsrMatrix[]): Int32Array {
  const n = c.rows, nq = questions.length;
  const out = new Int32Array(nq).fill(-1);
  if (n === 0 || nq === 0) return out;
  if (colSlots.length < c.cols) {
    colSlots = new Int32Array(c.cols).fill(-1);
    colBits = new Int32Array((c.cols + 31) >>> 5);
  }
  const slots = colSlots, bits = colBits;
  // The union of the questions' columns, each with a slot of nq merged values.
  const used: number[] = [];
  let total = 0;
  for (const qm of questions) total += qm.indptr[1] - qm.indptr[0];
  const qv = new Float64Array(Math.max(1, total) * nq);
  const qa = new Float64Array(Math.max(1, total) * nq);
  for (let j = 0; j < nq; j++) {
    const qm = questions[j];
    for (let k = qm.indptr[0]; k < qm.indptr[1]; k++) {
      const col = qm.indices[k];
      let s = slots[col];
      if (s < 0) {
        s = used.length;
        slots[col] = s;
        bits[col >>> 5] |= 1 << (col & 31);
        used.push(col);
      }
      qv[s * nq + j] += qm.data[k];
      qa[s * nq + j] += Math.abs(qm.data[k]);
    }
  }
  try {
    const fast = new Float64Array(nq * n);
    const abs = new Float64Array(nq * n);
    const { data, indices, indptr } = c;
    const acc = new Float64Array(nq);
    const accAbs = new Float64Array(nq);
    for (let i = 0; i < n; i++) {
      acc.fill(0);
      accAbs.fill(0);
      for (let k = indptr[i], e = indptr[i + 1]; k < e; k++) {
        const col = indices[k];
        if ((bits[col >>> 5] & (1 << (col & 31))) === 0) continue;
        const s = slots[col];
        const x = data[k], ax = Math.abs(x), o = s * nq;
        for (let j = 0; j < nq; j++) {
          acc[j] += x * qv[o + j];
          accAbs[j] += ax * qa[o + j];
        }
      }
      for (let j = 0; j < nq; j++) {
        fast[j * n + i] = acc[j];
        abs[j * n + i] = accAbs[j];
      }
    }
    let prods = new Float64Array(64);
    for (let j = 0; j < nq; j++) {
      const qm = questions[j];
      let byCol: Map<number, number[]> | undefined;
      const base = j * n;
      out[j] = pickRow(
        fast,
        base,
        n,
        (i) => 2 * (indptr[i + 1] - indptr[i] + 2) * EPS * abs[base + i],
        (i) => {
          if (byCol === undefined) {
            byCol = new Map();
            for (let k = qm.indptr[0]; k < qm.indptr[1]; k++) {
              const list = byCol.get(qm.indices[k]);
              if (list) list.push(qm.data[k]);
              else byCol.set(qm.indices[k], [qm.data[k]]);
            }
          }
          let np = 0;
          for (let k = indptr[i]; k < indptr[i + 1]; k++) {
            const vs = byCol.get(indices[k]);
            if (vs === undefined) continue;
            for (const v of vs) {
              if (np === prods.length) {
                const bigger = new Float64Array(np * 2);
                bigger.set(prods);
                prods = bigger;
              }
              prods[np++] = data[k] * v;
            }
          }
          return fsum(prods, np);
        },
      );
    }
  } finally {
    for (const col of used) {
      slots[col] = -1;
      bits[col >>> 5] = 0;
    }
  }
  return out;
}
