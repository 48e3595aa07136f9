/**
 * The 8-bit screening of exact dense open search (`search/kernels/`:
 * `i8_scan.ts`, its rows `i8_rows.ts`, its modules `wasm_i8.ts` and
 * `wasm_i8_head.ts`, its threads `i8_pool.ts`): its kernel's integer dot
 * products, and its results (rows, exact scores, ties) against scoring
 * every row on the float64 path, on random, tied, nearly tied, zero, huge
 * and tiny rows, float32 and float16, both metrics, one thread and worker
 * threads; the head stage's kernels, and its results where it skips most
 * of the full pass (rows near a low-rank subspace) and on degenerate rows.
 */
import { assert, assertEquals } from "../../_assert.ts";
import { I8NonFinite, I8Rows } from "../../../search/kernels/i8_rows.ts";
import { I8Screen, i8Takes } from "../../../search/kernels/i8_scan.ts";
import { i8Available, i8ModuleBytes } from "../../../search/kernels/wasm_i8.ts";
import { I8_HEAD, i8HeadModuleBytes } from "../../../search/kernels/wasm_i8_head.ts";
import { closeI8Workers, scoreI8, scoreI8Threads } from "../../../search/kernels/i8_pool.ts";
import { scoreDense, TopK } from "../../../search/index/exact/score.ts";
import type { IndexMetric } from "../../../search/index/format.ts";

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

/**
 * Rows near a low-rank subspace (most of their energy in a few directions,
 * as real phrase vectors), where the head stage skips most of the full
 * pass; some rows tied, some zero. (Huge rows among ordinary ones, which
 * make a block's largest bounds too wide to skip much, are in the test
 * over many d above.)
 */
function lowRank(n: number, d: number, rank: number, seed: number): Float32Array {
  const r = rng(seed);
  const basis = Array.from({ length: rank }, () => Float64Array.from({ length: d }, r.normal));
  const a = new Float32Array(n * d);
  for (let i = 0; i < n; i++) {
    const o = i * d;
    if (i % 97 === 13 && i >= 97) {
      a.copyWithin(o, o - 97 * d, o - 96 * d); // an exact copy of an earlier row: a tie
      continue;
    }
    if (i % 211 === 7) continue; // a zero row
    for (let b = 0; b < rank; b++) {
      const w = r.normal() * (rank - b);
      for (let c = 0; c < d; c++) a[o + c] += w * basis[b][c];
    }
    for (let c = 0; c < d; c++) a[o + c] += 0.05 * r.normal();
  }
  return a;
}

Deno.test({
  name:
    "i8 head stage: where it skips most of the full pass, the same rows, scores and ties (f32/f16, ip/l2, 1 and 2 threads)",
  ignore: !i8Available(),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const n = 6000, d = 128;
    const a32 = lowRank(n, d, 6, 21);
    const r = rng(4);
    const qs = Array.from({ length: 40 }, (_, j) => {
      const q = new Float32Array(d);
      if (j % 4 === 0) q.set(a32.subarray(((j * 37) % n) * d, ((j * 37) % n + 1) * d));
      else {
        const o = ((j * 53) % n) * d;
        for (let c = 0; c < d; c++) q[c] = a32[o + c] + 0.3 * r.normal();
      }
      return q;
    });
    let cases = 0;
    for (const dtype of ["f32", "f16"] as const) {
      const a = dtype === "f32" ? a32 : toHalfBits(a32);
      for (const metric of ["ip", "l2"] as const) {
        const rows = I8Rows.create(a, n, d, metric);
        assert(rows?.head !== undefined, "no head stage at d = 128");
        assert(rows.head.eNorm < 1e-5, `‖HᵀH − I‖ bound ${rows.head.eNorm}`);
        assert(Math.abs(rows.head.hF - Math.sqrt(I8_HEAD)) < 1e-3, `‖H‖_F ${rows.head.hF}`);
        const screen = new I8Screen(rows);
        screen.candidates(qs, 10);
        const { pairs, full } = screen.stats;
        assert(full < 0.5 * pairs, `${dtype} ${metric}: ${full} of ${pairs} went to the full pass`);
        for (const k of [1, 10]) {
          const ref = reference(a, n, d, qs, k, metric);
          const src = { dense: a, phrases: n, d, metric };
          for (const [what, head] of [["head", undefined], ["one stage", 0]] as const) {
            const key = {};
            const tops = qs.map(() => new TopK(k));
            assertEquals(scoreI8(key, { ...src, head }, qs, tops), []);
            for (let j = 0; j < qs.length; j++) {
              const at = `${what} ${dtype} ${metric} k=${k} question ${j}`;
              assertEquals(tops[j].rows, ref[j].rows, at);
              assertEquals(tops[j].scores, ref[j].scores, at);
            }
            cases++;
          }
          const key = {};
          const two = qs.map(() => new TopK(k));
          try {
            assertEquals(await scoreI8Threads(key, src, qs, two, 2), []);
          } finally {
            closeI8Workers(key);
          }
          for (let j = 0; j < qs.length; j++) {
            assertEquals(two[j].rows, ref[j].rows, `2 threads ${dtype} ${metric} k=${k} ${j}`);
            assertEquals(two[j].scores, ref[j].scores);
          }
        }
      }
    }
    assertEquals(cases, 16);
  },
});

Deno.test({
  name:
    "i8 head stage: rows of rank 1, or all zero, still screen exactly (the basis filled out with unit vectors)",
  ignore: !i8Available(),
  fn: () => {
    const n = 700, d = 128;
    const r = rng(8);
    const dir = Float32Array.from({ length: d }, r.normal);
    for (const kind of ["rank 1", "zero"] as const) {
      const a = new Float32Array(n * d);
      if (kind === "rank 1") {
        for (let i = 0; i < n; i++) {
          const w = r.normal();
          for (let c = 0; c < d; c++) a[i * d + c] = w * dir[c];
        }
      }
      const qs = Array.from({ length: 6 }, () => Float32Array.from({ length: d }, r.normal));
      for (const metric of ["ip", "l2"] as const) {
        const rows = I8Rows.create(a, n, d, metric)!;
        assert(rows.head !== undefined && rows.head.eNorm < 1e-5, `${kind}: ${rows.head?.eNorm}`);
        const tops = qs.map(() => new TopK(5));
        assertEquals(scoreI8({}, { dense: a, phrases: n, d, metric }, qs, tops), []);
        const ref = reference(a, n, d, qs, 5, metric);
        for (let j = 0; j < qs.length; j++) {
          assertEquals(tops[j].rows, ref[j].rows, `${kind} ${metric} ${j}`);
          assertEquals(tops[j].scores, ref[j].scores, `${kind} ${metric} ${j}`);
        }
      }
    }
  },
});

Deno.test({
  name:
    "i8 head kernel: project is the float32 sum in column order; filter_head keeps filter's records whose head passes",
  ignore: !i8Available(),
  fn: () => {
    const r = rng(12);
    const mem = new WebAssembly.Memory({ initial: 16, maximum: 16, shared: true });
    const head = new WebAssembly.Instance(new WebAssembly.Module(i8HeadModuleBytes()), {
      env: { memory: mem },
    }).exports as Record<string, (...a: number[]) => number>;
    const one = new WebAssembly.Instance(new WebAssembly.Module(i8ModuleBytes()), {
      env: { memory: mem },
    }).exports as Record<string, (...a: number[]) => number>;
    const buf = mem.buffer, H = I8_HEAD;
    // project: 5 rows of d = 40 against a 40 × H basis, against a float32 loop in the same order.
    const d = 40, nr = 5;
    const x = new Float32Array(buf, 0, nr * d), hm = new Float32Array(buf, 4096, d * H);
    for (let i = 0; i < x.length; i++) x[i] = r.normal();
    for (let i = 0; i < hm.length; i++) hm[i] = r.normal();
    head.project(0, nr, d, 4096, 16384);
    const y = new Float32Array(buf, 16384, nr * H);
    for (let i = 0; i < nr; i++) {
      for (let c = 0; c < H; c++) {
        let s = Math.fround(0);
        for (let k = 0; k < d; k++) s = Math.fround(s + Math.fround(x[i * d + k] * hm[k * H + c]));
        assert(Object.is(y[i * H + c], s), `row ${i} column ${c}: ${y[i * H + c]} ≠ ${s}`);
      }
    }
    // filter_head against filter: 8 quads, 4 questions, d16 64.
    const nq = 4, nquads = 8, d16 = 64;
    let at = 32768;
    const take = (bytes: number) => (at += bytes) - bytes;
    const A = take(nquads * 4 * d16), AH = take(nquads * 4 * H), Q = take(nq * d16);
    const QH = take(nq * H), CORR = take(nquads * 16), SP = take(nquads * 16);
    const CORRH = take(nquads * 16), SPH = take(nquads * 16), ROWV = take(nquads * 32);
    const QV = take(nq * 16), U = take(nq * 4), UH = take(nq * 4), STATS = take(16);
    const OUT = take(nquads * nq * 24), OUT1 = take(nquads * nq * 24);
    const i8 = new Int8Array(buf), u8 = new Uint8Array(buf);
    for (let i = 0; i < nquads * 4 * d16; i++) i8[A + i] = Math.floor(r.u() * 255) - 127;
    for (let i = 0; i < nquads * 4 * H; i++) i8[AH + i] = Math.floor(r.u() * 255) - 127;
    for (let i = 0; i < nq * d16; i++) u8[Q + i] = 1 + Math.floor(r.u() * 127);
    for (let i = 0; i < nq * H; i++) u8[QH + i] = 1 + Math.floor(r.u() * 127);
    const corr = new Int32Array(buf, CORR, nquads * 4);
    const corrH = new Int32Array(buf, CORRH, nquads * 4);
    for (let i = 0; i < nquads * 4; i++) {
      corr[i] = Math.floor(r.u() * 1000) - 500;
      let s = 0;
      for (let c = 0; c < H; c++) s += i8[AH + i * H + c];
      corrH[i] = 64 * s;
    }
    const sp = new Float32Array(buf, SP, nquads * 4), sph = new Float32Array(buf, SPH, nquads * 4);
    const rowv = new Float32Array(buf, ROWV, nquads * 8), qv = new Float32Array(buf, QV, nq * 4);
    for (let i = 0; i < nquads * 4; i++) {
      sp[i] = r.u();
      sph[i] = r.u() * 1e-3;
    }
    for (let i = 0; i < rowv.length; i++) rowv[i] = r.u() * (i % 8 < 4 ? 1 : 3);
    for (let i = 0; i < qv.length; i++) qv[i] = r.u();
    // The row's m-th factor (its quad's f32x4 m, lane i mod 4), the question's.
    const rf = (i: number, m: number) => rowv[(i >> 2) * 8 + 4 * m + (i & 3)];
    const qf = (j: number, m: number) => qv[4 * j + m];
    const u = new Float32Array(buf, U, nq), uh = new Float32Array(buf, UH, nq);
    const hd = (i: number, j: number) => {
      let s = 0;
      for (let c = 0; c < H; c++) s += i8[AH + i * H + c] * (u8[QH + j * H + c] - 64);
      return s;
    };
    const recs = (o: number, count: number) =>
      Array.from({ length: count }, (_, x) => Array.from(new Int32Array(buf, o + 24 * x, 6)));
    const f = Math.fround;
    for (const pen of [false, true]) {
      const kernel = pen ? head.filter_head_l2 : head.filter_head;
      for (const level of [-Infinity, -2, 0, 1, 1.5, 2, 3, Infinity]) {
        u.fill(-20);
        uh.fill(level);
        new Int32Array(buf, STATS, 1)[0] = 0;
        const got = kernel(
          A,
          AH,
          nquads,
          d16,
          Q,
          QH,
          nq,
          CORR,
          SP,
          CORRH,
          SPH,
          ROWV,
          QV,
          U,
          UH,
          OUT,
          STATS,
        );
        const all = one.filter(A, nquads, d16, Q, nq, CORR, SP, U, OUT1);
        const gate = (g: number, j: number) => {
          let any = false;
          for (let l = 0; l < 4; l++) {
            const i = 4 * g + l;
            // The kernel's float32 operations, in its order.
            let v = f(f(f(hd(i, j)) * sph[i]) + f(rf(i, 0) * qf(j, 0)));
            if (pen) v = f(v - f(rf(i, 1) * qf(j, 1)));
            if (v >= uh[j]) any = true;
          }
          return any;
        };
        let passed = 0;
        for (let g = 0; g < nquads; g++) for (let j = 0; j < nq; j++) if (gate(g, j)) passed++;
        const want = recs(OUT1, all).filter(([g, j]) => gate(g, j));
        assertEquals(recs(OUT, got), want, `pen ${pen} uh ${level}`);
        assertEquals(new Int32Array(buf, STATS, 1)[0], passed, `pen ${pen} uh ${level}: the count`);
        if (level === -Infinity) assertEquals(passed, nquads * nq);
        if (level === Infinity) assertEquals(got, 0);
        if (level === 1.5) assert(passed > 0 && passed < nquads * nq, `${passed} passed`);
      }
    }
  },
});

Deno.test({
  name:
    "i8 head stage: no row is skipped while the k-th lower bound is at most its exact score (the gate's slack ≥ 0 for every row, f32/f16, ip/l2)",
  ignore: !i8Available(),
  fn: () => {
    const cases = [
      { what: "low rank", n: 3000, d: 128, a: lowRank(3000, 128, 6, 31) },
      { what: "ties, zero, huge and tiny rows", n: 1500, d: 256, a: matrix(1500, 256, 41) },
    ];
    for (const { what, n, d, a: a32 } of cases) {
      const qs = questions(a32, n, d, 12, 7);
      for (const dtype of ["f32", "f16"] as const) {
        const a = dtype === "f32" ? a32 : toHalfBits(a32);
        for (const metric of ["ip", "l2"] as const) {
          const rows = I8Rows.create(a, n, d, metric)!;
          const exact = reference(a, n, d, qs, n, metric);
          // score(j, i): row i's exact score for question j (the reference lists every row).
          const scores = exact.map((t) => {
            const s = new Float64Array(n);
            t.rows.forEach((r, x) => (s[r] = t.scores[x]));
            return s;
          });
          const slack = new I8Screen(rows).headSlack(qs, (j, i) => scores[j][i])!;
          assertEquals(slack.length, qs.length);
          let min = Infinity;
          for (const s of slack) {
            assertEquals(s.length, n);
            for (const v of s) min = Math.min(min, v);
          }
          // (Leaving out the tail bound τ or the head error terms of the threshold makes this fail.)
          assert(min >= 0, `${what} ${dtype} ${metric}: a row would be skipped (slack ${min})`);
        }
      }
    }
  },
});

Deno.test("i8 screen: a thread's screening writes nothing in the next thread's scratch slot (with and without a head)", () => {
  if (!i8Available()) return;
  const { normal } = rng(11);
  for (const d of [32, 256]) {
    const n = 600;
    const a = Float32Array.from({ length: n * d }, normal);
    const rows = I8Rows.create(a, n, d, "ip", 3, 64)!;
    assert(rows !== undefined);
    const qs = Array.from({ length: 64 }, () => Float32Array.from({ length: d }, normal));
    for (const slot of [0, 1]) {
      const next = new Uint8Array(
        rows.memory.buffer,
        rows.scratchBase + (slot + 1) * rows.scratchSize,
        rows.scratchSize,
      );
      next.fill(0xab);
      new I8Screen(rows, slot).candidates(qs, 10);
      const touched = next.findIndex((b) => b !== 0xab);
      assertEquals(touched, -1, `d ${d}, slot ${slot}: byte ${touched} of slot ${slot + 1}`);
    }
  }
});

Deno.test({
  name:
    "i8 head kernel: filter_head_list's records and count are a TypeScript reference's, lane for lane (lists of every length, ip/l2, d16 128 and 256)",
  ignore: !i8Available(),
  fn: () => {
    const r = rng(40);
    const mem = new WebAssembly.Memory({ initial: 32, maximum: 32, shared: true });
    const head = new WebAssembly.Instance(new WebAssembly.Module(i8HeadModuleBytes()), {
      env: { memory: mem },
    }).exports as Record<string, (...a: number[]) => number>;
    const buf = mem.buffer, H = I8_HEAD, f = Math.fround;
    for (const d16 of [128, 256]) {
      const nq = 10, nquads = 7;
      let at = 0;
      const take = (bytes: number) => (at += bytes) - bytes;
      const A = take(nquads * 4 * d16), AH = take(nquads * 4 * H), Q = take(nq * d16);
      const QH = take(nq * H), CORR = take(nquads * 16), SP = take(nquads * 16);
      const CORRH = take(nquads * 16), SPH = take(nquads * 16), ROWV = take(nquads * 32);
      const QV = take(nq * 16), U = take(nq * 4), UH = take(nq * 4), STATS = take(16);
      const LIST = take(nq * 4), OUT = take(nquads * nq * 24), OUT0 = take(nquads * nq * 24);
      const i8 = new Int8Array(buf), u8 = new Uint8Array(buf);
      for (let i = 0; i < nquads * 4 * d16; i++) i8[A + i] = Math.floor(r.u() * 255) - 127;
      for (let i = 0; i < nquads * 4 * H; i++) i8[AH + i] = Math.floor(r.u() * 255) - 127;
      for (let i = 0; i < nq * d16; i++) u8[Q + i] = 1 + Math.floor(r.u() * 127);
      for (let i = 0; i < nq * H; i++) u8[QH + i] = 1 + Math.floor(r.u() * 127);
      const corr = new Int32Array(buf, CORR, nquads * 4);
      const corrH = new Int32Array(buf, CORRH, nquads * 4);
      for (let i = 0; i < nquads * 4; i++) {
        corr[i] = Math.floor(r.u() * 1000) - 500;
        corrH[i] = Math.floor(r.u() * 1000) - 500;
      }
      const sp = new Float32Array(buf, SP, nquads * 4);
      const sph = new Float32Array(buf, SPH, nquads * 4);
      const rowv = new Float32Array(buf, ROWV, nquads * 8), qv = new Float32Array(buf, QV, nq * 4);
      for (let i = 0; i < nquads * 4; i++) {
        sp[i] = r.u();
        sph[i] = r.u() * 1e-3;
      }
      for (let i = 0; i < rowv.length; i++) rowv[i] = r.u() * (i % 8 < 4 ? 1 : 3);
      for (let i = 0; i < qv.length; i++) qv[i] = r.u();
      // The reference: integer dots in TypeScript, the kernel's float32 operations in its order.
      const dot = (i: number, j: number) => {
        let s = 0;
        for (let c = 0; c < d16; c++) s += i8[A + i * d16 + c] * u8[Q + j * d16 + c];
        return s - corr[i];
      };
      const hdot = (i: number, j: number) => {
        let s = 0;
        for (let c = 0; c < H; c++) s += i8[AH + i * H + c] * u8[QH + j * H + c];
        return s - corrH[i];
      };
      const gv = (i: number, j: number, pen: boolean) => {
        const o = (i >> 2) * 8 + (i & 3);
        let v = f(f(f(hdot(i, j)) * sph[i]) + f(rowv[o] * qv[4 * j]));
        if (pen) v = f(v - f(rowv[o + 4] * qv[4 * j + 1]));
        return v;
      };
      const u = new Float32Array(buf, U, nq), uh = new Float32Array(buf, UH, nq);
      const quantile = (xs: number[], p: number) =>
        p <= 0
          ? -Infinity
          : p >= 1
          ? Infinity
          : xs.sort((x, y) => x - y)[Math.floor(p * xs.length)];
      // u: each question's 70th percentile of the row values, so some groups record and some not.
      for (let j = 0; j < nq; j++) {
        u[j] = quantile(Array.from({ length: 4 * nquads }, (_, i) => f(f(dot(i, j)) * sp[i])), 0.7);
      }
      for (const pen of [false, true]) {
        const kernel = pen ? head.filter_head_list_l2 : head.filter_head_list;
        const one = pen ? head.filter_head_l2 : head.filter_head;
        const lengths = new Set<number>();
        for (let trial = 0; trial < 12; trial++) {
          // uh: per question a quantile of its gate values (none, all, or some groups pass; in
          // the first two trials every question none, then all).
          for (let j = 0; j < nq; j++) {
            const p = trial < 2 ? 1 - trial : [0, 1, 0.2, 0.5, 0.8][Math.floor(r.u() * 5)];
            uh[j] = quantile(Array.from({ length: 4 * nquads }, (_, i) => gv(i, j, pen)), p);
          }
          const want: number[][] = [];
          let passed = 0;
          for (let g = 0; g < nquads; g++) {
            let listed = 0;
            for (let j = 0; j < nq; j++) {
              if (![0, 1, 2, 3].some((l) => gv(4 * g + l, j, pen) >= uh[j])) continue;
              passed++;
              listed++;
              const dots = [0, 1, 2, 3].map((l) => dot(4 * g + l, j));
              if (dots.some((x, l) => f(f(x) * sp[4 * g + l]) >= u[j])) want.push([g, j, ...dots]);
            }
            lengths.add(listed);
          }
          const stats = new Int32Array(buf, STATS, 1);
          stats[0] = 5;
          const args = [A, AH, nquads, d16, Q, QH, nq, CORR, SP, CORRH, SPH, ROWV, QV, U, UH];
          const got = kernel(...args, OUT, STATS, LIST);
          const recs = (o: number, count: number) =>
            Array.from({ length: count }, (_, x) => Array.from(new Int32Array(buf, o + 24 * x, 6)));
          assertEquals(recs(OUT, got), want, `d16 ${d16} pen ${pen} trial ${trial}`);
          assertEquals(stats[0], 5 + passed, `d16 ${d16} pen ${pen} trial ${trial}: the count`);
          // filter_head (one pass, no list) gives the same records.
          const got0 = one(...args, OUT0, STATS);
          assertEquals(recs(OUT0, got0), want, `d16 ${d16} pen ${pen} trial ${trial}: filter_head`);
        }
        // Lists of odd and even lengths, empty and full, were met.
        for (const n of [0, nq]) assert(lengths.has(n), `no group listed ${n} questions`);
        assert(
          [...lengths].some((n) => n % 2 === 1) && [...lengths].some((n) => n > 0 && n % 2 === 0),
        );
      }
    }
  },
});
