/**
 * Hybrid dense ⊕ sparse indexes, DenSPI's dense-first search: an `ivf-pq`
 * index over CSR rows whose first `dense_dims` columns (D) are a dense
 * block (the `piqa-lstm+sparse` encoder: D = 256 dense columns, then
 * sparse-pi's), built by `deno task index … --sparse --nlist N --bpv B
 * --dense-dims D`.
 *
 * **Build** (`search/index/build.ts`): the exact CSR index as for any sparse dump, then
 * phraseval's IVF-PQ (`train.ts`, `ivfpq.ts`: the same training sample, k-means, PQ,
 * determinism) trained and encoded on the dense block, columns `[0, D)` of
 * each row as float32 ({@linkcode csrDenseRows}: a missing entry is 0, a
 * column stored twice in a row is summed). The header keeps `vectors:
 * "csr"` and d; `parameters` gains `dense_dims`; the `ivf/` files are those
 * of a dense index of dimension D.
 *
 * **Search** ({@linkcode scoreHybrid}): the question's first D entries (its
 * CSR vector made dense, float32) go to the IVF-PQ: `nprobe` lists probed,
 * the best `candidates` rows by approximate dense score kept (ties to the
 * lower row); those rows are re-scored EXACTLY with the full hybrid
 * question vector — the sparse scorer's exact score (`search/index/exact/score.ts`: the
 * correctly rounded sum of the float64 products, `fsum`), so the scores and
 * the tie rule (first row in paragraph order, phrase order) are those of
 * `--exact` — and the best `topK` kept. A float64 pass with an error bound
 * spares the exact sum for rows that cannot enter the top k (only the
 * speed depends on it). With `nprobe` = nlist and `candidates` ≥ the
 * phrase count every row is a candidate: the answers are exactly
 * `--exact`'s. Default candidates: {@linkcode DEFAULT_HYBRID_CANDIDATES}.
 *
 * @module
 */
import { InputError } from "../../../io/errors.ts";
import type { CsrMatrix } from "../../../io/matrix.ts";
import { fsum } from "../../fsum.ts";
import type { IndexMetric } from "../format.ts";
import { type IvfIndexView, nprobeProblem, probeTauProblem } from "./ivfpq.ts";
import { ivfCandidatesMany } from "./ivf_search.ts";
import { NonFiniteError, TopK } from "../exact/score.ts";
import { DEFAULT_HYBRID_CANDIDATES, defaultNprobe } from "../defaults.ts";

export { DEFAULT_HYBRID_CANDIDATES };

const EPS = 2 ** -52;

/** The dense block's width of a hybrid index (`parameters.dense_dims`), or `undefined`. */
export function hybridDenseDims(
  header: { readonly parameters: Readonly<Record<string, unknown>> },
): number | undefined {
  const d = header.parameters.dense_dims;
  return typeof d === "number" ? d : undefined;
}

/**
 * A reader of the dense block of CSR rows written to files
 * (`data.f32`, `indices.i32`, `indptr.i64` in `dir`): `(from, to)` → the
 * rows `[from, to)` as a float32 `(to − from) × D` matrix, columns `[0, D)`
 * (missing entries 0; a column stored twice in a row is summed). Call
 * `close` when done.
 *
 * @example
 * ```ts
 * import { csrDenseRows } from "./hybrid.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.writeFileSync(`${dir}/data.f32`, new Uint8Array(new Float32Array([1, 2, 3]).buffer));
 * Deno.writeFileSync(`${dir}/indices.i32`, new Uint8Array(new Int32Array([0, 5, 1]).buffer));
 * Deno.writeFileSync(`${dir}/indptr.i64`, new Uint8Array(new BigInt64Array([0n, 2n, 3n]).buffer));
 * const r = csrDenseRows(dir, 2, 2);
 * if (r.read(0, 2).join() !== "1,0,0,3") throw new Error(r.read(0, 2).join());
 * r.close();
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export function csrDenseRows(
  dir: string,
  rows: number,
  D: number,
): { read: (from: number, to: number) => Float32Array; close: () => void } {
  // The row pointers are read per call (memory does not grow with the rows).
  const fp = Deno.openSync(`${dir}/indptr.i64`, { read: true });
  const fd = Deno.openSync(`${dir}/data.f32`, { read: true });
  const fi = Deno.openSync(`${dir}/indices.i32`, { read: true });
  const readAt = (f: Deno.FsFile, at: number, bytes: number): Uint8Array => {
    const b = new Uint8Array(bytes);
    f.seekSync(at, Deno.SeekMode.Start);
    for (let o = 0; o < b.length;) {
      const got = f.readSync(b.subarray(o));
      if (got === null) throw new Error("CSR file ended early");
      o += got;
    }
    return b;
  };
  return {
    read(from: number, to: number): Float32Array {
      if (from < 0 || to > rows || to < from) throw new RangeError(`rows ${from}…${to} of ${rows}`);
      const out = new Float32Array((to - from) * D);
      const ptr = Float64Array.from(
        new BigInt64Array(readAt(fp, from * 8, (to - from + 1) * 8).buffer),
        (x) => Number(x),
      );
      const a = ptr[0], n = ptr[to - from] - a;
      const data = new Float32Array(readAt(fd, a * 4, n * 4).buffer);
      const indices = new Int32Array(readAt(fi, a * 4, n * 4).buffer);
      for (let i = 0; i < to - from; i++) {
        const o = i * D;
        for (let k = ptr[i] - a; k < ptr[i + 1] - a; k++) {
          const c = indices[k];
          if (c < D) out[o + c] += data[k];
        }
      }
      return out;
    },
    close(): void {
      fp.close();
      fd.close();
      fi.close();
    },
  };
}

/** The first `D` entries of a 1×d CSR question as a dense float32 vector (repeats summed). */
export function denseHead(q: CsrMatrix, D: number): Float32Array {
  const v = new Float32Array(D);
  for (let k = q.indptr[0]; k < q.indptr[1]; k++) {
    if (q.indices[k] < D) v[q.indices[k]] += q.data[k];
  }
  return v;
}

/** The CSR vectors of an index (row pointers float64). */
export interface CsrRows {
  /** Values. */
  readonly data: Float32Array;
  /** Column of each value. */
  readonly indices: Int32Array;
  /** Row pointers (rows + 1). */
  readonly indptr: Float64Array;
}

/** What {@linkcode scoreHybrid} needs of an open hybrid index. */
export interface HybridIndexView {
  /** The index folder. */
  readonly dir: string;
  /** Its header. */
  readonly header: {
    readonly metric: IndexMetric;
    readonly d: number;
    readonly phrases: number;
    readonly parameters: Readonly<Record<string, unknown>>;
  };
  /** Its CSR vectors. */
  readonly csr?: CsrRows;
}

const views = new WeakMap<object, IvfIndexView>();

/** The IVF-PQ view of a hybrid index: its dense block as a dense index of d = D (cached). */
function denseView(index: HybridIndexView, D: number): IvfIndexView {
  let v = views.get(index);
  if (v === undefined) {
    const h = index.header;
    v = {
      dir: index.dir,
      header: { metric: h.metric, d: D, phrases: h.phrases, parameters: h.parameters },
    };
    views.set(index, v);
  }
  return v;
}

/** Options of {@linkcode scoreHybrid}. */
export interface HybridQueryOptions {
  /** Ranks kept (default 10). */
  readonly topK?: number;
  /** Lists probed (default 10, at most nlist); with `probeTau`, the most lists probed. */
  readonly nprobe?: number;
  /** Adaptive probing of the dense block's lists (`IvfQueryOptions.probeTau`). */
  readonly probeTau?: number;
  /**
   * Approximate dense candidates re-scored exactly (default
   * {@linkcode DEFAULT_HYBRID_CANDIDATES}; fewer than `topK` count as
   * `topK`; 0 is refused: the approximate scores are the dense block's only).
   */
  readonly candidates?: number;
  /** Worker threads scanning the lists (default 1; same answers). */
  readonly threads?: number;
}

/** What is wrong with `candidates` for a hybrid index, or `undefined`. */
export function candidatesProblem(candidates: number): string | undefined {
  if (!Number.isSafeInteger(candidates) || candidates < 1) {
    return `--candidates must be at least 1 on a hybrid index (its approximate scores are ` +
      `the dense block's only), got ${candidates}`;
  }
  return undefined;
}

/** One question's exact scorer over CSR rows: its columns marked in shared tables. */
class RowScorer {
  readonly #val: Float64Array;
  readonly #mark: Uint8Array;
  readonly #multi?: Map<number, number[]>;
  readonly #qSq: number;
  readonly #qnnz: number;

  constructor(readonly q: CsrMatrix, val: Float64Array, mark: Uint8Array) {
    this.#val = val;
    this.#mark = mark;
    let sq = 0, repeated = false;
    for (let k = q.indptr[0]; k < q.indptr[1]; k++) {
      const c = q.indices[k], x = q.data[k];
      sq += x * x;
      if (mark[c] === 1) repeated = true;
      mark[c] = 1;
      val[c] = x;
    }
    if (repeated) {
      const m = new Map<number, number[]>();
      for (let k = q.indptr[0]; k < q.indptr[1]; k++) {
        const list = m.get(q.indices[k]);
        if (list) list.push(q.data[k]);
        else m.set(q.indices[k], [q.data[k]]);
      }
      this.#multi = m;
    }
    this.#qSq = sq;
    this.#qnnz = q.indptr[1] - q.indptr[0];
  }

  /** Unmarks the question's columns. */
  dispose(): void {
    const q = this.q;
    for (let k = q.indptr[0]; k < q.indptr[1]; k++) {
      this.#mark[q.indices[k]] = 0;
      this.#val[q.indices[k]] = 0;
    }
  }

  /** Offers the rows (increasing) to `top` with their exact scores (see the module notes). */
  offerRows(rows: readonly number[], csr: CsrRows, top: TopK, l2: boolean): void {
    const { data, indices, indptr } = csr;
    const val = this.#val, mark = this.#mark, multi = this.#multi;
    const qSq = this.#qSq, qnnz = this.#qnnz;
    for (const row of rows) {
      const from = indptr[row], to = indptr[row + 1];
      let ip = 0, abs = 0, cnt = 0, rowSq = 0;
      for (let k = from; k < to; k++) {
        const x = data[k];
        rowSq += x * x;
        const c = indices[k];
        if (mark[c] === 0) continue;
        if (multi === undefined) {
          const p = x * val[c];
          ip += p;
          abs += Math.abs(p);
          cnt++;
        } else {
          for (const v of multi.get(c)!) {
            ip += x * v;
            abs += Math.abs(x * v);
            cnt++;
          }
        }
      }
      if (!Number.isFinite(rowSq)) throw new NonFiniteError(`row ${row}`);
      let f = ip, b = 2 * (cnt + 2) * EPS * abs + Number.MIN_VALUE;
      if (l2) {
        const rowNnz = to - from;
        f = 2 * ip - rowSq - qSq;
        b = 2 * b + 2 * (rowNnz + qnnz + 4) * EPS * (rowSq + qSq) +
          8 * EPS * (2 * Math.abs(ip) + rowSq + qSq);
      }
      if (!(f + b >= top.threshold)) continue;
      top.offer(this.#exact(from, to, csr, l2), row);
    }
  }

  /** The exact score of the row `[from, to)`: `fsum` of the products, as `search/index/exact/score.ts`'s scorers. */
  #exact(from: number, to: number, csr: CsrRows, l2: boolean): number {
    const { data, indices } = csr;
    const p: number[] = [];
    for (let k = from; k < to; k++) {
      const x = data[k], c = indices[k];
      if (this.#mark[c] === 1) {
        if (this.#multi === undefined) p.push(l2 ? 2 * x * this.#val[c] : x * this.#val[c]);
        else for (const v of this.#multi.get(c)!) p.push(l2 ? 2 * x * v : x * v);
      }
      if (l2) p.push(-(x * x));
    }
    if (l2) {
      const q = this.q;
      for (let k = q.indptr[0]; k < q.indptr[1]; k++) p.push(-(q.data[k] * q.data[k]));
    }
    return fsum(p, p.length);
  }
}

let scratch: { val: Float64Array; mark: Uint8Array } | undefined;

/**
 * The top rows of each question (1×d CSR vectors of the index's d) on a
 * hybrid index, dense-first (see the module notes); `TopK`s as
 * `scoreQuestions` gives them. A bad `nprobe` or `candidates` is an
 * {@linkcode InputError}; a NaN or infinite value in the index a
 * {@linkcode NonFiniteError}.
 */
export async function scoreHybrid(
  index: HybridIndexView,
  qs: readonly CsrMatrix[],
  options: HybridQueryOptions = {},
): Promise<TopK[]> {
  const h = index.header, D = hybridDenseDims(h);
  if (D === undefined || index.csr === undefined) {
    throw new InputError({ file: index.dir, where: "", message: "is not a hybrid ivf-pq index" });
  }
  const k = Math.max(1, options.topK ?? 10);
  const view = denseView(index, D);
  const nprobe = options.nprobe ?? defaultNprobe(view.header.parameters.nlist);
  const tau = options.probeTau;
  const why = nprobeProblem(view, nprobe) ??
    (tau !== undefined ? probeTauProblem(tau) : undefined) ??
    candidatesProblem(options.candidates ?? DEFAULT_HYBRID_CANDIDATES);
  if (why !== undefined) throw new InputError({ file: index.dir, where: "", message: why });
  const cap = Math.max(k, options.candidates ?? DEFAULT_HYBRID_CANDIDATES);
  const heads = qs.map((q) => denseHead(q, D));
  const probe = tau !== undefined ? { nprobe, tau } : nprobe;
  const cands = await ivfCandidatesMany(view, heads, probe, cap, options.threads ?? 1);
  if (scratch === undefined || scratch.val.length < h.d) {
    scratch = { val: new Float64Array(h.d), mark: new Uint8Array(h.d) };
  }
  const l2 = h.metric === "l2";
  return qs.map((q, j) => {
    const top = new TopK(k);
    const s = new RowScorer(q, scratch!.val, scratch!.mark);
    try {
      s.offerRows(cands[j].map((c) => c.row), index.csr!, top, l2);
    } finally {
      s.dispose();
    }
    return top;
  });
}
