/**
 * The exact sparse open-search scorer (`SparseIndexScorer` of
 * `search/index/exact/sparse_scorer.ts`): the columns most rows hold are scored on a dense
 * block (SIMD kernels, or float64 loops), the rest through posting lists
 * walked by row tiles, and only rows whose fast score plus bound reaches the
 * running threshold are scored exactly. Each configuration must give exactly
 * the top k of scoring every row with `fsum` (ties to the first row): over
 * several tiles, with exact ties, one-ulp near-ties at the k-th place, negative values, l2, a
 * question with a repeated column, and norms too large for float32.
 */
import { assert, assertEquals } from "../../../_assert.ts";
import type { CsrMatrix } from "../../../../io/matrix.ts";
import { fsum } from "../../../../search/fsum.ts";
import {
  SparseIndexScorer,
  type SparseIndexScorerOptions,
} from "../../../../search/index/exact/sparse_scorer.ts";
import { TopK } from "../../../../search/index/exact/score.ts";

/** A seeded generator (mulberry32). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Index {
  data: Float32Array;
  indices: Int32Array;
  indptr: Float64Array;
  rows: number;
  d: number;
}

/**
 * `rows` rows over `d` columns: columns 0–11 in most rows (small integers,
 * so many rows tie exactly), a few random rarer columns, every 7th row a copy
 * of an earlier one, every 11th a copy with one value moved by one float32
 * ulp; `huge` puts 1e30 in one row's dense column.
 */
function makeIndex(rows: number, d: number, seed: number, huge = false): Index {
  const r = rng(seed);
  const data: number[] = [], indices: number[] = [], indptr = [0];
  const rowsCols: [number, number][][] = [];
  for (let i = 0; i < rows; i++) {
    let row: [number, number][];
    if (i > 0 && i % 7 === 0) row = rowsCols[Math.floor(r() * i)].map(([c, v]) => [c, v]);
    else if (i > 0 && i % 11 === 0) {
      row = rowsCols[i - 1].map(([c, v]) => [c, v]);
      const u = new Float32Array([row[0][1]]);
      new Uint32Array(u.buffer)[0] += 1;
      row[0][1] = u[0];
    } else {
      const m = new Map<number, number>();
      for (let c = 0; c < 12; c++) if (r() < 0.7) m.set(c, 1 + Math.floor(r() * 2));
      const extra = 1 + Math.floor(r() * 6);
      for (let t = 0; t < extra; t++) {
        const c = 12 + Math.floor(r() * r() * (d - 12));
        m.set(c, r() < 0.2 ? -(0.5 + r()) : 1 + Math.floor(r() * 3));
      }
      row = [...m].sort((a, b) => a[0] - b[0]);
    }
    if (huge && i === 3) row = [[0, 1e35], ...row.filter(([c]) => c !== 0)];
    if (i >= 1000 && (i - 1000) % 1300 === 0 && i < 1000 + 30 * 1300) row = star((i - 1000) / 1300);
    rowsCols.push(row);
    for (const [c, v] of row) {
      indices.push(c);
      data.push(v);
    }
    indptr.push(indices.length);
  }
  return {
    data: new Float32Array(data),
    indices: new Int32Array(indices),
    indptr: new Float64Array(indptr),
    rows,
    d,
  };
}

/**
 * Row t of 30 near-copies of one row over the frequent columns (values that
 * make float32 products inexact): t < 24 moves value t % 12 by one float32
 * ulp up or down, the rest are exact copies. With {@linkcode starQuestion}
 * they are the best rows, and the k-th place falls among them.
 */
function star(t: number): [number, number][] {
  const v = new Float32Array(12).map((_, c) => 1.37 + c * 0.11);
  if (t < 24) {
    const bits = new Uint32Array(v.buffer);
    bits[t % 12] += t < 12 ? 1 : -1;
  }
  return [...v].map((x, c) => [c, x]);
}

/** A question on the frequent columns only, for which the {@linkcode star} rows score highest. */
function starQuestion(d: number): CsrMatrix {
  const v = new Float32Array(12).map((_, c) => 3.7 + c * 0.29);
  return {
    kind: "csr",
    rows: 1,
    cols: d,
    data: v,
    indices: new Int32Array(12).map((_, c) => c),
    indptr: new Int32Array([0, 12]),
  };
}

/** A question: most of the frequent columns, some rarer ones (some of the index's), mixed signs. */
function makeQuestion(ix: Index, seed: number, repeat = false): CsrMatrix {
  const r = rng(seed);
  const m = new Map<number, number>();
  for (let c = 0; c < 12; c++) if (r() < 0.8) m.set(c, (r() - 0.3) * 2);
  for (let t = 0; t < 25; t++) {
    const k = Math.floor(r() * ix.indices.length);
    m.set(ix.indices[k], r() < 0.25 ? -r() : r() * 3);
  }
  const cols = [...m].sort((a, b) => a[0] - b[0]);
  if (repeat) cols.push([cols[0][0], 0.5]);
  return {
    kind: "csr",
    rows: 1,
    cols: ix.d,
    data: new Float32Array(cols.map(([, v]) => v)),
    indices: new Int32Array(cols.map(([c]) => c)),
    indptr: new Int32Array([0, cols.length]),
  };
}

/** Every row scored exactly (fsum of the float64 products), then the first k by (score desc, row asc). */
function bruteForce(ix: Index, q: CsrMatrix, k: number, l2: boolean): [number[], number[]] {
  const qv = new Map<number, number[]>();
  for (let t = 0; t < q.data.length; t++) {
    qv.set(q.indices[t], [...(qv.get(q.indices[t]) ?? []), q.data[t]]);
  }
  const scores: number[] = [];
  for (let i = 0; i < ix.rows; i++) {
    const terms: number[] = [];
    for (let t = ix.indptr[i]; t < ix.indptr[i + 1]; t++) {
      const x = ix.data[t];
      for (const v of qv.get(ix.indices[t]) ?? []) terms.push(l2 ? 2 * x * v : x * v);
      if (l2) terms.push(-(x * x));
    }
    if (l2) { for (const v of q.data) terms.push(-(v * v)); }
    scores.push(fsum(terms));
  }
  const order = scores.map((_, i) => i).sort((a, b) => scores[b] - scores[a] || a - b);
  const top = order.slice(0, k);
  return [top, top.map((i) => scores[i])];
}

const configs: [string, SparseIndexScorerOptions, boolean][] = [
  ["dense block on SIMD", {}, true],
  ["dense block in float64 loops", {}, false],
  ["no dense block", { denseShare: Infinity }, true],
  ["a 5-column block", { maxDense: 5 }, true],
];

Deno.test("sparse open search: dense block + posting tiles + threshold = fsum brute force over every row (ties, near-ties, ip, l2)", () => {
  // 40,000 rows: three row tiles.
  const ix = makeIndex(40_000, 5_000, 1);
  const qs = Array.from({ length: 12 }, (_, j) => makeQuestion(ix, 100 + j, j === 5));
  qs.push(starQuestion(ix.d));
  for (const metric of ["ip", "l2"] as const) {
    const want = qs.map((q) => bruteForce(ix, q, 10, metric === "l2"));
    for (const [name, opts, simd] of configs) {
      const s = new SparseIndexScorer(ix.data, ix.indices, ix.indptr, ix.rows, ix.d, opts);
      if (name !== "no dense block") assert(s.denseColumns > 0, `${name}: no dense block`);
      if (name === "a 5-column block") assertEquals(s.denseColumns, 8);
      const tops = qs.map(() => new TopK(10));
      s.scoreMany(qs, tops, metric, simd);
      tops.forEach((t, j) => {
        assertEquals([t.rows, t.scores], want[j], `${metric}, ${name}, question ${j}`);
      });
    }
  }
});

Deno.test("sparse open search: the frequent columns (12 of 5,000) make the dense block; a norm too large for float32 is scored in float64", () => {
  const ix = makeIndex(3_000, 5_000, 2, true);
  const s = new SparseIndexScorer(ix.data, ix.indices, ix.indptr, ix.rows, ix.d);
  assertEquals(s.denseColumns, 12);
  const qs = Array.from({ length: 4 }, (_, j) => makeQuestion(ix, 300 + j));
  for (const metric of ["ip", "l2"] as const) {
    const tops = qs.map(() => new TopK(5));
    s.scoreMany(qs, tops, metric);
    tops.forEach((t, j) => {
      assertEquals([t.rows, t.scores], bruteForce(ix, qs[j], 5, metric === "l2"), `${metric} ${j}`);
    });
  }
});
