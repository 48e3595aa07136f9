/**
 * Batch scoring (`searchVectors`): a batch of question vectors in one pass
 * gives exactly what `searchVector` gives one vector at a time (ranks,
 * rows, scores, ties) on dense f32 and f16 indexes (ip and l2, rows across
 * several scoring chunks) and on a sparse index; the per-index row squares
 * keep the float64 path's answers and the corrupt-index error; the SIMD
 * module's float16 widening equals the table's for all 65,536 bit patterns.
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals } from "../_assert.ts";
import { writeContextDump } from "../../io/dump/writer.ts";
import type { Matrix } from "../../io/matrix.ts";
import { buildIndex } from "../../search/index/build.ts";
import type { IndexMetric } from "../../search/index/format.ts";
import { type ExactIndex, openIndexSync } from "../../search/index/read.ts";
import { denseRowStats, NonFiniteError, scoreDense, TopK } from "../../search/index/exact/score.ts";
import { type Hit, searchVector, searchVectors } from "../../search/open/open.ts";
import { halfTable } from "../../search/dense_f64.ts";
import { simdKernels } from "../../search/kernels/simd.ts";
import { InputError } from "../../io/errors.ts";

/** A small deterministic generator (mulberry32). */
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

const D = 16;
const PARAGRAPHS = [1100, 900, 1300]; // 3,300 rows: two chunk boundaries (2,048 rows a chunk)

/** Values with many ties: quarters in [-2, 2], every fifth row a copy of an earlier one. */
function denseRows(n: number, r: () => number): number[] {
  const v: number[] = [];
  for (let i = 0; i < n; i++) {
    if (i >= 5 && i % 5 === 0) v.push(...v.slice((i - 5) * D, (i - 4) * D));
    else for (let c = 0; c < D; c++) v.push(Math.round((r() * 4 - 2) * 4) / 4);
  }
  return v;
}

async function denseIndex(
  dir: string,
  dtype: "f32" | "f16",
  metric: IndexMetric,
): Promise<ExactIndex> {
  const r = rng(7);
  const c = `${dir}/c-${dtype}`;
  try {
    Deno.statSync(c);
  } catch {
    Deno.mkdirSync(c);
    for (const [p, n] of PARAGRAPHS.entries()) {
      const v = denseRows(n, r);
      await Effect.runPromise(writeContextDump(c, {
        id: `T_${p}`,
        phrases: Array.from({ length: n }, (_, i) => ({ text: `p${p}.${i}`, start: 0, end: 1 })),
        matrix: {
          kind: "dense",
          rows: n,
          cols: D,
          dtype,
          data: dtype === "f32" ? new Float32Array(v) : new Float16Array(v),
        },
      }, { sparse: false, compressed: false }));
    }
  }
  const out = `${dir}/ix-${dtype}-${metric}`;
  await Effect.runPromise(buildIndex({ contextEmb: c, out, metric }));
  return openIndexSync(out);
}

/** Questions: random quarters (ties), one equal to a row, one all zero, one of large values. */
function questions(): Matrix[] {
  const r = rng(11);
  const qs: number[][] = [];
  for (let j = 0; j < 9; j++) {
    qs.push(Array.from({ length: D }, () => Math.round((r() * 4 - 2) * 4) / 4));
  }
  qs.push(Array.from({ length: D }, () => r() - 0.5));
  qs.push(new Array(D).fill(0));
  qs.push(Array.from({ length: D }, (_, c) => (c % 3) * 1e6));
  return qs.map((v) => ({
    kind: "dense",
    rows: 1,
    cols: D,
    dtype: "f32",
    data: new Float32Array(v),
  }));
}

const view = (hs: readonly Hit[]) => hs.map((h) => [h.rank, h.row, h.score, h.paragraph, h.phrase]);

Deno.test("searchVectors: dense f32 and f16 (ip, l2): a batch = one vector at a time (ranks, rows, scores, ties) = the float64 path = the kernel with its own row squares", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "pv-batch-" });
  try {
    const qs = questions();
    for (const dtype of ["f32", "f16"] as const) {
      for (const metric of ["ip", "l2"] as const) {
        const ix = await denseIndex(dir, dtype, metric);
        const what = `${dtype} ${metric}`;
        const batch = await searchVectors(ix, qs, { topK: 9 });
        assertEquals(batch.length, qs.length);
        const plain = await searchVectors(ix, qs, { topK: 9, simd: false });
        for (const [j, q] of qs.entries()) {
          const one = await searchVector(ix, q, { topK: 9 });
          assertEquals(view(batch[j]), view(one), `${what} question ${j}`);
          assertEquals(view(plain[j]), view(one), `${what} question ${j} (float64 path)`);
          assertEquals(one.length, 9);
        }
        // Ties are there to be broken: the all-zero question scores every row equal (ip).
        if (metric === "ip") {
          assertEquals(
            batch[10].map((h) => [h.row, h.score]),
            [...Array(9).keys()].map((i) => [i, 0]),
          );
        }
        // The kernel computing each chunk's squares itself (no per-index stats) agrees.
        const q32 = qs.map((q) => q.data as Float32Array);
        const tops = qs.map(() => new TopK(9));
        const a = ix.dense!, n = ix.header.phrases;
        for (let r = 0; r < n; r += 2048) {
          const m = Math.min(2048, n - r);
          scoreDense(a.subarray(r * D, (r + m) * D), m, D, r, q32, tops, metric);
        }
        assertEquals(
          tops.map((t) => [t.rows, t.scores]),
          batch.map((hs) => [hs.map((h) => h.row), hs.map((h) => h.score)]),
          what,
        );
        // A batch of one, and an empty batch.
        assertEquals((await searchVectors(ix, [qs[3]], { topK: 2 })).map(view), [
          view(batch[3].slice(0, 2)),
        ]);
        assertEquals(await searchVectors(ix, [], { topK: 2 }), []);
      }
    }
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("searchVectors: a sparse index: a batch = one vector at a time; a bad vector is named by its position", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "pv-batch-sparse-" });
  try {
    const r = rng(3);
    const d = 64;
    Deno.mkdirSync(`${dir}/c`);
    for (let p = 0; p < 3; p++) {
      const n = 400;
      const data: number[] = [], indices: number[] = [], indptr = [0];
      for (let i = 0; i < n; i++) {
        // Column 0 in every row (the dense block), a few rare ones, small integer values.
        const cols = new Set([
          0,
          ...Array.from({ length: 3 }, () => 1 + Math.floor(r() * (d - 1))),
        ]);
        for (const c of [...cols].sort((x, y) => x - y)) {
          indices.push(c);
          data.push(Math.round(r() * 4) / 2);
        }
        indptr.push(indices.length);
      }
      await Effect.runPromise(writeContextDump(`${dir}/c`, {
        id: `S_${p}`,
        phrases: Array.from({ length: n }, (_, i) => ({ text: `s${p}.${i}`, start: 0, end: 1 })),
        matrix: {
          kind: "csr",
          rows: n,
          cols: d,
          data: new Float32Array(data),
          indices: new Int32Array(indices),
          indptr: new Int32Array(indptr),
        },
      }, { sparse: true, compressed: false }));
    }
    for (const metric of ["ip", "l2"] as const) {
      await Effect.runPromise(
        buildIndex({ contextEmb: `${dir}/c`, out: `${dir}/ix-${metric}`, sparse: true, metric }),
      );
      const ix = openIndexSync(`${dir}/ix-${metric}`);
      const qs: Matrix[] = Array.from({ length: 10 }, (_, j) => {
        const cols = [...new Set([0, j + 1, 2 * j + 5, 40 + j])].sort((x, y) => x - y);
        return {
          kind: "csr",
          rows: 1,
          cols: d,
          data: new Float32Array(cols.map((_, t) => (t + j) % 3 + 0.5)),
          indices: new Int32Array(cols),
          indptr: new Int32Array([0, cols.length]),
        };
      });
      const batch = await searchVectors(ix, qs, { topK: 6 });
      for (const [j, q] of qs.entries()) {
        assertEquals(
          view(batch[j]),
          view(await searchVector(ix, q, { topK: 6 })),
          `${metric} ${j}`,
        );
      }
      let err: unknown;
      try {
        await searchVectors(ix, [qs[0], { ...qs[1], cols: 8 } as Matrix], { topK: 1 });
      } catch (e) {
        err = e;
      }
      assert(err instanceof InputError, String(err));
      assertEquals(
        String(err),
        "question: vector 1: d = 8 but the index " + ix.dir + " has d = 64",
      );
    }
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("searchVectors: an infinite value in an f16 index is refused when it opens; one that goes bad in memory is the same corrupt-index error with the per-index row squares", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "pv-batch-inf-" });
  try {
    const ix0 = await denseIndex(dir, "f16", "ip");
    const file = `${ix0.dir}/vectors.f16`;
    const bytes = Deno.readFileSync(file);
    const clean = bytes.slice();
    new DataView(bytes.buffer).setUint16((2500 * D + 3) * 2, 0x7c00, true); // +inf in row 2500
    Deno.writeFileSync(file, bytes);
    // Opening checks every vector (issue 22 item 11): the index is refused before any search.
    let opened: unknown;
    try {
      openIndexSync(ix0.dir, { verify: false });
    } catch (e) {
      opened = e;
    }
    assertEquals(
      String(opened),
      `${ix0.dir}/vectors.f16: Infinity at row 2500, column 3 (corrupt index)`,
    );
    // The search's own check, for an index whose vectors went bad in memory.
    Deno.writeFileSync(file, clean);
    const messages: string[] = [];
    for (const simd of [true, false]) {
      const ix = openIndexSync(ix0.dir);
      (ix as { dense: Uint16Array }).dense[2500 * D + 3] = 0x7c00;
      try {
        await searchVectors(ix, questions().slice(0, 2), { topK: 3, simd });
        messages.push("no error");
      } catch (e) {
        messages.push(e instanceof InputError ? String(e) : `other: ${e}`);
      }
    }
    const want = `${ix0.dir}/vectors.f16: row 2500: NaN or infinite value (corrupt index)`;
    assertEquals(messages, [want, want]);
    let thrown: unknown;
    try {
      denseRowStats(new Uint16Array([0x3c00, 0, 0, 0, 0x7c00, 0, 0, 0]), 2, 4);
    } catch (e) {
      thrown = e;
    }
    assert(thrown instanceof NonFiniteError && thrown.message === "row 1", String(thrown));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("simd: the module widens every float16 bit pattern exactly as the table does", () => {
  const k = simdKernels();
  assert(k !== undefined, "WebAssembly SIMD kernels did not load");
  const bits = new Uint16Array(65536).map((_, i) => i);
  const wide = k.widen(bits), table = halfTable();
  const bad: number[] = [];
  for (let i = 0; i < 65536; i++) if (!Object.is(wide[i], table[i])) bad.push(i);
  assertEquals(bad, []);
  // Odd lengths (a tail of fewer than four values) too.
  assertEquals([...k.widen(new Uint16Array([0x3c00, 0xc000, 0x0001]))], [1, -2, 2 ** -24]);
});
