/**
 * The 8-bit screening of exact dense open search (`search/i8_scan.ts`,
 * `search/i8_pool.ts`): its kernel's integer dot products, and its
 * results (rows, exact scores, ties) against scoring every row on the
 * float64 path, on random, tied, nearly tied, zero, huge and tiny rows,
 * float32 and float16, both metrics, one thread and worker threads.
 */
import { assert, assertEquals } from "../_assert.ts";
import { i8Available, i8ModuleBytes, I8NonFinite, I8Rows, i8Takes } from "../../search/i8_scan.ts";
import { closeI8Workers, scoreI8, scoreI8Threads } from "../../search/i8_pool.ts";
import { scoreDense, TopK } from "../../search/index/score.ts";
import type { IndexMetric } from "../../search/index/format.ts";

/** A seeded PRNG (mulberry32) and a normal sample. */
function rng(seed: number) {
  let a = seed >>> 0;
  const u = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const normal = () => Math.sqrt(-2 * Math.log(1 - u())) * Math.cos(2 * Math.PI * u());
  return { u, normal };
}

/** Every row scored exactly on the float64 path: the reference. */
function reference(
  a: Float32Array | Uint16Array,
  n: number,
  d: number,
  qs: Float32Array[],
  k: number,
  metric: IndexMetric,
): TopK[] {
  const tops = qs.map(() => new TopK(k));
  scoreDense(a, n, d, 0, qs, tops, metric, false);
  return tops;
}

/** A matrix with exact copies, near copies, zero, huge and tiny rows. */
function matrix(n: number, d: number, seed: number): Float32Array {
  const r = rng(seed);
  const a = new Float32Array(n * d);
  for (let i = 0; i < n; i++) {
    const kind = i % 17;
    for (let c = 0; c < d; c++) {
      if (kind === 3 && i >= 17) a[i * d + c] = a[(i - 17) * d + c]; // an exact copy: a tie
      else if (kind === 5 && i >= 1) a[i * d + c] = a[(i - 1) * d + c] * (1 + 2 ** -20); // near tie
      else if (kind === 7) a[i * d + c] = 0;
      else if (kind === 9) a[i * d + c] = r.normal() * 1e15;
      else if (kind === 11) a[i * d + c] = r.normal() * 1e-15;
      else a[i * d + c] = r.normal() * (0.5 + (i % 5));
    }
  }
  return a;
}

function questions(
  a: Float32Array,
  n: number,
  d: number,
  nq: number,
  seed: number,
): Float32Array[] {
  const r = rng(seed);
  return Array.from({ length: nq }, (_, j) => {
    const q = new Float32Array(d);
    // Some questions equal a row (its score is the top), the others random.
    if (j % 3 === 0) q.set(a.subarray(((j * 131) % n) * d, ((j * 131) % n + 1) * d));
    else for (let c = 0; c < d; c++) q[c] = r.normal() * (j % 4 === 1 ? 1e-3 : 1);
    return q;
  });
}

function toHalfBits(a: Float32Array): Uint16Array {
  const h = new Float16Array(a.length);
  for (let i = 0; i < a.length; i++) {
    const v = a[i];
    h[i] = Math.abs(v) > 60000 ? Math.sign(v) * 60000 : v;
  }
  return new Uint16Array(h.buffer);
}

Deno.test({
  name: "i8 kernel: its integer dot products are Σ a·(b+64) − corr, four rows by two questions",
  ignore: !i8Available(),
  fn: () => {
    const r = rng(7);
    const stride = 64, rows = 12, nq = 4;
    const mem = new WebAssembly.Memory({ initial: 2, maximum: 2, shared: true });
    const inst = new WebAssembly.Instance(new WebAssembly.Module(i8ModuleBytes()), {
      env: { memory: mem },
    });
    const filter = inst.exports.filter as (...a: number[]) => number;
    const a = new Int8Array(mem.buffer, 0, rows * stride);
    const qp = rows * stride, corr = qp + nq * stride, sp = corr + rows * 4;
    const u = sp + rows * 4, out = u + nq * 4;
    const b = new Uint8Array(mem.buffer, qp, nq * stride);
    for (let i = 0; i < a.length; i++) a[i] = Math.floor(r.u() * 255) - 127;
    for (let i = 0; i < b.length; i++) b[i] = 1 + Math.floor(r.u() * 127);
    const c = new Int32Array(mem.buffer, corr, rows);
    for (let i = 0; i < rows; i++) c[i] = Math.floor(r.u() * 1000) - 500;
    new Float32Array(mem.buffer, sp, rows).fill(1);
    new Float32Array(mem.buffer, u, nq).fill(-Infinity);
    const recs = filter(0, rows / 4, stride, qp, nq, corr, sp, u, out);
    assertEquals(recs, (rows / 4) * nq);
    const o = new Int32Array(mem.buffer, out, recs * 6);
    const seen = new Set<string>();
    for (let x = 0; x < recs; x++) {
      const g = o[6 * x], j = o[6 * x + 1];
      for (let l = 0; l < 4; l++) {
        const i = 4 * g + l;
        let s = 0;
        for (let t = 0; t < stride; t++) s += a[i * stride + t] * b[j * stride + t];
        assertEquals(o[6 * x + 2 + l], s - c[i], `row ${i} question ${j}`);
        seen.add(`${i}/${j}`);
      }
    }
    assertEquals(seen.size, rows * nq);
    // A threshold no row reaches: no records.
    new Float32Array(mem.buffer, u, nq).fill(Infinity);
    assertEquals(filter(0, rows / 4, stride, qp, nq, corr, sp, u, out), 0);
  },
});

Deno.test({
  name:
    "i8 screening: the same rows, exact scores and ties as every row scored exactly (f32/f16, ip/l2, many d)",
  ignore: !i8Available(),
  fn: () => {
    let cases = 0;
    for (const d of [1, 3, 16, 50, 256]) {
      const n = d === 256 ? 1500 : 2600;
      const a32 = matrix(n, d, 11 + d);
      const qs = questions(a32, n, d, 24, 5 + d);
      for (const dtype of ["f32", "f16"] as const) {
        const a = dtype === "f32" ? a32 : toHalfBits(a32);
        for (const metric of ["ip", "l2"] as const) {
          for (const k of [1, 10]) {
            const key = {};
            const src = { dense: a, phrases: n, d, metric };
            const tops = qs.map(() => new TopK(k));
            const left = scoreI8(key, src, qs, tops);
            assert(left !== undefined);
            assertEquals(left, []);
            const ref = reference(a, n, d, qs, k, metric);
            for (let j = 0; j < qs.length; j++) {
              const what = `d=${d} ${dtype} ${metric} k=${k} question ${j}`;
              assertEquals(tops[j].rows, ref[j].rows, what);
              assertEquals(tops[j].scores, ref[j].scores, what);
            }
            cases++;
          }
        }
      }
    }
    assertEquals(cases, 40);
  },
});

Deno.test({
  name:
    "i8 screening: worker threads give the same results; zero and non-finite questions are left to the float path",
  ignore: !i8Available(),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const n = 3001, d = 64;
    const a = matrix(n, d, 3);
    const qs = questions(a, n, d, 30, 9);
    qs[4] = new Float32Array(d);
    qs[8] = new Float32Array(d).fill(NaN);
    assert(!i8Takes(qs[4]) && !i8Takes(qs[8]) && i8Takes(qs[0]));
    const zero = qs.flatMap((q, j) => i8Takes(q) ? [] : [j]);
    assertEquals(zero.slice(0, 2), [4, 8]);
    const key = {};
    const src = { dense: a, phrases: n, d, metric: "ip" as const };
    const one = qs.map(() => new TopK(10));
    assertEquals(scoreI8(key, src, qs, one), zero);
    for (const threads of [2, 3]) {
      const many = qs.map(() => new TopK(10));
      try {
        assertEquals(await scoreI8Threads(key, src, qs, many, threads), zero);
      } finally {
        closeI8Workers(key);
      }
      for (let j = 0; j < qs.length; j++) {
        assertEquals(many[j].rows, one[j].rows, `threads ${threads} question ${j}`);
        assertEquals(many[j].scores, one[j].scores);
      }
    }
    const ref = reference(a, n, d, qs, 10, "ip");
    for (const j of [0, 1, 2, 3, 5]) assertEquals(one[j].rows, ref[j].rows);
  },
});

Deno.test({
  name: "i8 rows: a NaN or infinite value is refused with its row",
  ignore: !i8Available(),
  fn: () => {
    const a = new Float32Array(4 * 8).fill(1);
    a[2 * 8 + 5] = Infinity;
    let thrown: unknown;
    try {
      I8Rows.create(a, 4, 8, "ip");
    } catch (e) {
      thrown = e;
    }
    assert(thrown instanceof I8NonFinite);
    assertEquals(thrown.message, "row 2");
  },
});
