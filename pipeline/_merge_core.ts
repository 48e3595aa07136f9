/**
 * The work of `merge` that runs in its worker threads: exact scoring (float64
 * loops and WebAssembly SIMD kernels, with the exactly rounded re-check),
 * the plan, one paragraph's questions ({@linkcode mergeUnit}), and the
 * worker's message loop. `pipeline/merge.ts` re-exports the public part.
 *
 * Free of Effect (only its small `Data` module comes in, through the
 * errors), so a worker is ready in a few tens of milliseconds.
 *
 * @module
 */
import type { CsrMatrix, DenseMatrix, Matrix } from "../encoders/types.ts";
import { dumpStem } from "../io/dump/names.ts";
import {
  type ContextDump,
  type DumpOptions,
  type DumpSourceSync,
  type MissingFile,
  openDumpSync,
} from "../io/dump/reader_sync.ts";
import { FileError, InputError } from "../io/errors.ts";
import { batchesOf, type MergePlan, planMerge, WORKER_NAME } from "./_merge_plan.ts";

export {
  batchesOf,
  batchSize,
  type MergePlan,
  type MergeUnit,
  planMerge,
  WORKER_NAME,
} from "./_merge_plan.ts";
import { isValidArticle } from "../io/_squad_checks.ts";
import * as zlib from "node:zlib";

// ---------------------------------------------------------------------------
// Exact summation.

let partials = new Float64Array(64);

/**
 * The correctly rounded sum of `xs[0..n)`, bit for bit what Python's
 * `math.fsum` returns (Shewchuk's exact partials, then CPython's half-even
 * fix-up across partials). Infinities and NaNs follow `math.fsum` too:
 * `inf + -inf` and an intermediate overflow throw a `RangeError` (Python
 * raises ValueError / OverflowError).
 *
 * @example
 * ```ts
 * import { fsum } from "./merge.ts";
 * fsum([0.1, 0.2, 0.3]); // 0.6 (plain addition gives 0.6000000000000001)
 * fsum([1e16, 1, 1e-16]); // 10000000000000002
 * ```
 */
export function fsum(xs: ArrayLike<number>, n: number = xs.length): number {
  let p = partials;
  let np = 0;
  let specialSum = 0;
  let infSum = 0;
  for (let k = 0; k < n; k++) {
    let x = xs[k];
    const xsave = x;
    let i = 0;
    for (let j = 0; j < np; j++) {
      let y = p[j];
      if (Math.abs(x) < Math.abs(y)) {
        const t = x;
        x = y;
        y = t;
      }
      const hi = x + y;
      const yr = hi - x;
      const lo = y - yr;
      if (lo !== 0) p[i++] = lo;
      x = hi;
    }
    np = i;
    if (x !== 0) {
      if (!Number.isFinite(x)) {
        if (Number.isFinite(xsave)) throw new RangeError("intermediate overflow in fsum");
        if (xsave === Infinity || xsave === -Infinity) infSum += xsave;
        specialSum += xsave;
        np = 0;
      } else {
        if (np === p.length) {
          const bigger = new Float64Array(p.length * 2);
          bigger.set(p);
          partials = p = bigger;
        }
        p[np++] = x;
      }
    }
  }
  if (specialSum !== 0) {
    if (Number.isNaN(infSum)) throw new RangeError("-inf + inf in fsum");
    return specialSum;
  }
  let hi = 0;
  let lo = 0;
  if (np > 0) {
    hi = p[--np];
    while (np > 0) {
      const x = hi;
      const y = p[--np];
      hi = x + y;
      const yr = hi - x;
      lo = y - yr;
      if (lo !== 0) break;
    }
    if (np > 0 && ((lo < 0 && p[np - 1] < 0) || (lo > 0 && p[np - 1] > 0))) {
      const y = lo * 2;
      const x = hi + y;
      const yr = x - hi;
      if (y === yr) hi = x;
    }
  }
  return hi;
}

// ---------------------------------------------------------------------------
// Scoring.

const EPS = 2 ** -52;

/** float16 bits → float32 value (256 KiB; made on first use). */
let HALF: Float32Array | undefined;

function halfTable(): Float32Array {
  if (HALF === undefined) {
    HALF = new Float32Array(65536);
    const h = new Float16Array(new Uint16Array(65536).map((_, i) => i).buffer);
    for (let i = 0; i < 65536; i++) HALF[i] = h[i];
  }
  return HALF;
}

/** The bits of float16 values. */
function halfBits(d: Float16Array): Uint16Array {
  return new Uint16Array(d.buffer, d.byteOffset, d.length);
}

function asFloat32(m: DenseMatrix): Float32Array {
  if (m.data instanceof Float32Array) return m.data;
  // By table: several times faster than new Float32Array(float16Array).
  const d = m.data;
  const bits = halfBits(d);
  const table = halfTable();
  const out = new Float32Array(d.length);
  for (let i = 0; i < out.length; i++) out[i] = table[bits[i]];
  return out;
}

function sumSquares(a: Float32Array, n: number, d: number): Float64Array {
  const sq = new Float64Array(n);
  for (let i = 0, o = 0; i < n; i++, o += d) {
    let s0 = 0, s1 = 0;
    let k = 0;
    for (; k + 1 < d; k += 2) {
      s0 += a[o + k] * a[o + k];
      s1 += a[o + k + 1] * a[o + k + 1];
    }
    if (k < d) s0 += a[o + k] * a[o + k];
    sq[i] = s0 + s1;
  }
  return sq;
}

// Three questions against two rows at a time: the accumulators stay in registers.
function block3(
  a: Float32Array,
  n: number,
  d: number,
  q: Float64Array,
  j: number,
  out: Float64Array,
): void {
  const q0 = j * d, q1 = q0 + d, q2 = q1 + d;
  const o0 = j * n, o1 = o0 + n, o2 = o1 + n;
  let i = 0;
  for (; i + 1 < n; i += 2) {
    const r0 = i * d, r1 = r0 + d;
    let s00 = 0, s01 = 0, s02 = 0, s10 = 0, s11 = 0, s12 = 0;
    for (let k = 0; k < d; k++) {
      const x0 = a[r0 + k], x1 = a[r1 + k];
      const y0 = q[q0 + k], y1 = q[q1 + k], y2 = q[q2 + k];
      s00 += x0 * y0;
      s01 += x0 * y1;
      s02 += x0 * y2;
      s10 += x1 * y0;
      s11 += x1 * y1;
      s12 += x1 * y2;
    }
    out[o0 + i] = s00;
    out[o1 + i] = s01;
    out[o2 + i] = s02;
    out[o0 + i + 1] = s10;
    out[o1 + i + 1] = s11;
    out[o2 + i + 1] = s12;
  }
  if (i < n) {
    const r0 = i * d;
    let s0 = 0, s1 = 0, s2 = 0;
    for (let k = 0; k < d; k++) {
      const x = a[r0 + k];
      s0 += x * q[q0 + k];
      s1 += x * q[q1 + k];
      s2 += x * q[q2 + k];
    }
    out[o0 + i] = s0;
    out[o1 + i] = s1;
    out[o2 + i] = s2;
  }
}

function block2(
  a: Float32Array,
  n: number,
  d: number,
  q: Float64Array,
  j: number,
  out: Float64Array,
): void {
  const q0 = j * d, q1 = q0 + d;
  const o0 = j * n, o1 = o0 + n;
  let i = 0;
  for (; i + 1 < n; i += 2) {
    const r0 = i * d, r1 = r0 + d;
    let s00 = 0, s01 = 0, s10 = 0, s11 = 0;
    let t00 = 0, t01 = 0, t10 = 0, t11 = 0;
    let k = 0;
    for (; k + 1 < d; k += 2) {
      const x0 = a[r0 + k], x1 = a[r1 + k], y0 = q[q0 + k], y1 = q[q1 + k];
      s00 += x0 * y0;
      s01 += x0 * y1;
      s10 += x1 * y0;
      s11 += x1 * y1;
      const u0 = a[r0 + k + 1], u1 = a[r1 + k + 1], v0 = q[q0 + k + 1], v1 = q[q1 + k + 1];
      t00 += u0 * v0;
      t01 += u0 * v1;
      t10 += u1 * v0;
      t11 += u1 * v1;
    }
    if (k < d) {
      const x0 = a[r0 + k], x1 = a[r1 + k], y0 = q[q0 + k], y1 = q[q1 + k];
      s00 += x0 * y0;
      s01 += x0 * y1;
      s10 += x1 * y0;
      s11 += x1 * y1;
    }
    out[o0 + i] = s00 + t00;
    out[o1 + i] = s01 + t01;
    out[o0 + i + 1] = s10 + t10;
    out[o1 + i + 1] = s11 + t11;
  }
  if (i < n) {
    const r0 = i * d;
    let s0 = 0, s1 = 0;
    for (let k = 0; k < d; k++) {
      const x = a[r0 + k];
      s0 += x * q[q0 + k];
      s1 += x * q[q1 + k];
    }
    out[o0 + i] = s0;
    out[o1 + i] = s1;
  }
}

function block1(
  a: Float32Array,
  n: number,
  d: number,
  q: Float64Array,
  j: number,
  out: Float64Array,
): void {
  const q0 = j * d;
  const o0 = j * n;
  let i = 0;
  for (; i + 1 < n; i += 2) {
    const r0 = i * d, r1 = r0 + d;
    let s0 = 0, s1 = 0, t0 = 0, t1 = 0;
    let k = 0;
    for (; k + 1 < d; k += 2) {
      const y = q[q0 + k], v = q[q0 + k + 1];
      s0 += a[r0 + k] * y;
      s1 += a[r1 + k] * y;
      t0 += a[r0 + k + 1] * v;
      t1 += a[r1 + k + 1] * v;
    }
    if (k < d) {
      s0 += a[r0 + k] * q[q0 + k];
      s1 += a[r1 + k] * q[q0 + k];
    }
    out[o0 + i] = s0 + t0;
    out[o0 + i + 1] = s1 + t1;
  }
  if (i < n) {
    const r0 = i * d;
    let s = 0;
    for (let k = 0; k < d; k++) s += a[r0 + k] * q[q0 + k];
    out[o0 + i] = s;
  }
}

/**
 * Fast float64 scores of every row of the dense N×d matrix `a` against the
 * Q questions stacked in `q` (Q×d, row-major): `out[j * n + i]` = row i ·
 * question j. One pass over `a`, three (or two) questions at a time.
 *
 * @example
 * ```ts
 * import { denseScores } from "./merge.ts";
 * const out = new Float64Array(2);
 * denseScores(new Float32Array([1, 2, 3, 4]), 2, 2, new Float64Array([1, 1]), 1, out);
 * out; // Float64Array [3, 7]
 * ```
 */
export function denseScores(
  a: Float32Array,
  n: number,
  d: number,
  q: Float64Array,
  nq: number,
  out: Float64Array,
): void {
  let j = 0;
  while (j < nq) {
    const left = nq - j;
    const w = left === 4 ? 2 : left >= 3 ? 3 : left;
    if (w === 3) block3(a, n, d, q, j, out);
    else if (w === 2) block2(a, n, d, q, j, out);
    else block1(a, n, d, q, j, out);
    j += w;
  }
}

// ---------------------------------------------------------------------------
// WebAssembly SIMD kernels (the same rule, four float32 lanes at a time).
//
// The module is assembled here from its instructions (no toolchain, no binary
// blob). Two kernels, over a memory the module exports:
//
//   norms(a, n, d4, out): out[i] (f64) = Σ_k a[i][k]², each f32 promoted to f64
//   scores(a, n, d4, q, nq, out, sq): out[j*n + i] (f32) = a[i] · q[j] in f32
//     (4 lanes of 4-byte floats, two rows × three questions at a time, then
//     the one or two questions left; each lane sums its products in order,
//     then ((l0 + l1) + (l2 + l3))), and
//     norms(a[i..i+2), 2, d4, sq + 8i) for each pair of rows as it comes, so
//     the matrix is read from memory once (the squares give both the error
//     bound and the NaN/infinity check)
//
// d4 is the row stride in bytes (d·4, a multiple of 16). Float32 scores are
// only the fast pass:
// their error bound (below) selects the rows re-scored exactly, as in the
// float64 path, so results are identical.

const WASM = {
  i32: 0x7f,
  f64: 0x7c,
  v128: 0x7b,
};

function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return out;
}

function sleb(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && !(b & 0x40)) || (n === -1 && (b & 0x40))) {
      out.push(b);
      return out;
    }
    out.push(b | 0x80);
  }
}

const vec = (items: number[][]): number[] => [...uleb(items.length), ...items.flat()];
const section = (id: number, body: number[]) => [id, ...uleb(body.length), ...body];
const name = (s: string) => vec([...s].map((c) => [c.charCodeAt(0)]));

/** The kernels' module bytes. */
function simdModuleBytes(fused: boolean): Uint8Array<ArrayBuffer> {
  const get = (i: number) => [0x20, ...uleb(i)];
  const set = (i: number) => [0x21, ...uleb(i)];
  const tee = (i: number) => [0x22, ...uleb(i)];
  const i32 = (v: number) => [0x41, ...sleb(v)];
  const add = [0x6a], sub = [0x6b], mul = [0x6c], shl = [0x74];
  const ltu = [0x49], gtu = [0x4b], geu = [0x4f];
  const simd = (op: number, ...imm: number[]) => [0xfd, ...uleb(op), ...imm];
  const load = simd(0x00, 2, 0); // v128.load align=4 offset=0
  const f32x4Add = simd(0xe4), f32x4Mul = simd(0xe6);
  const f64x2Add = simd(0xf0), f64x2Mul = simd(0xf2), promote = simd(0x5f);
  const zero = simd(0x0c, ...new Array(16).fill(0));
  const highLanes = simd(0x0d, 8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15);
  const lane32 = (l: number) => simd(0x1f, l), lane64 = (l: number) => simd(0x21, l);
  const f32Add = [0x92], f64Add = [0xa0];
  const f32Store = (off: number) => [0x38, 2, ...uleb(off)];
  const f64Store = [0x39, 3, 0];
  const block = (body: number[]) => [0x02, 0x40, ...body, 0x0b];
  const loop = (body: number[]) => [0x03, 0x40, ...body, 0x0b];
  const brIf = (l: number) => [0x0d, ...uleb(l)];
  const br = (l: number) => [0x0c, ...uleb(l)];
  const ifThen = (body: number[]) => [0x04, 0x40, ...body, 0x0b];
  const hsum = (v: number) => [
    ...get(v),
    ...lane32(0),
    ...get(v),
    ...lane32(1),
    ...f32Add,
    ...get(v),
    ...lane32(2),
    ...get(v),
    ...lane32(3),
    ...f32Add,
    ...f32Add,
  ];
  // c += x·y: f32x4.relaxed_madd (one instruction where the CPU has FMA; fused or
  // not, the error bound below holds), or f32x4.mul then f32x4.add.
  const relaxedMadd = simd(0x105);
  const acc = (c: number, x: number, y: number) =>
    fused
      ? [...get(x), ...get(y), ...get(c), ...relaxedMadd, ...set(c)]
      : [...get(c), ...get(x), ...get(y), ...f32x4Mul, ...f32x4Add, ...set(c)];
  const loadAt = (base: number, k: number, into: number) => [
    ...get(base),
    ...get(k),
    ...add,
    ...load,
    ...set(into),
  ];
  const next = (k: number, step: number, end: number) => [
    ...get(k),
    ...i32(step),
    ...add,
    ...tee(k),
    ...get(end),
    ...ltu,
    ...brIf(0),
  ];

  // norms(a, n, d4, out)
  const N = { a: 0, n: 1, d4: 2, out: 3, i: 4, r: 5, k: 6, s0: 7, s1: 8, v: 9 };
  const norms = [
    ...vec([[3, WASM.i32], [3, WASM.v128]]),
    ...i32(0),
    ...set(N.i),
    ...loop([
      ...get(N.a),
      ...get(N.i),
      ...get(N.d4),
      ...mul,
      ...add,
      ...set(N.r),
      ...zero,
      ...set(N.s0),
      ...zero,
      ...set(N.s1),
      ...i32(0),
      ...set(N.k),
      ...loop([
        ...loadAt(N.r, N.k, N.v),
        ...get(N.s0),
        ...get(N.v),
        ...promote,
        ...get(N.v),
        ...promote,
        ...f64x2Mul,
        ...f64x2Add,
        ...set(N.s0),
        ...get(N.s1),
        ...get(N.v),
        ...get(N.v),
        ...highLanes,
        ...promote,
        ...get(N.v),
        ...get(N.v),
        ...highLanes,
        ...promote,
        ...f64x2Mul,
        ...f64x2Add,
        ...set(N.s1),
        ...next(N.k, 16, N.d4),
      ]),
      ...get(N.out),
      ...get(N.i),
      ...i32(3),
      ...shl,
      ...add,
      ...get(N.s0),
      ...get(N.s1),
      ...f64x2Add,
      ...tee(N.s0),
      ...lane64(0),
      ...get(N.s0),
      ...lane64(1),
      ...f64Add,
      ...f64Store,
      ...next(N.i, 1, N.n),
    ]),
    0x0b,
  ];

  // scores(a, n, d4, q, nq, out, sq)
  const S = {
    a: 0,
    n: 1,
    d4: 2,
    q: 3,
    nq: 4,
    out: 5,
    sq: 6,
    i: 7,
    j: 8,
    k: 9,
    r0: 10,
    r1: 11,
    o: 12,
    n4: 13,
    qs: [14, 15, 16],
    c0: [17, 18, 19],
    c1: [20, 21, 22],
    x0: 23,
    x1: 24,
    ys: [25, 26, 27],
  };
  // Rows i (and i+1) against questions j..j+w: w·(1 or 2) sums in registers.
  const questionGroup = (w: number, twoRows: boolean) => {
    const ts = [...Array(w).keys()];
    return [
      ...get(S.q),
      ...get(S.j),
      ...get(S.d4),
      ...mul,
      ...add,
      ...set(S.qs[0]),
      ...ts.slice(1).flatMap((t) => [...get(S.qs[t - 1]), ...get(S.d4), ...add, ...set(S.qs[t])]),
      ...ts.flatMap((
        t,
      ) => [...zero, ...set(S.c0[t]), ...(twoRows ? [...zero, ...set(S.c1[t])] : [])]),
      ...i32(0),
      ...set(S.k),
      ...loop([
        ...loadAt(S.r0, S.k, S.x0),
        ...(twoRows ? loadAt(S.r1, S.k, S.x1) : []),
        ...ts.flatMap((t) => loadAt(S.qs[t], S.k, S.ys[t])),
        ...ts.flatMap((t) => [
          ...acc(S.c0[t], S.x0, S.ys[t]),
          ...(twoRows ? acc(S.c1[t], S.x1, S.ys[t]) : []),
        ]),
        ...next(S.k, 16, S.d4),
      ]),
      // o = out + (j·n + i)·4; question j+t is t·n·4 bytes further.
      ...get(S.out),
      ...get(S.j),
      ...get(S.n4),
      ...mul,
      ...add,
      ...get(S.i),
      ...i32(2),
      ...shl,
      ...add,
      ...set(S.o),
      ...ts.flatMap((t) => {
        const at = [...get(S.o), ...Array(t).fill([...get(S.n4), ...add]).flat()];
        return [
          ...at,
          ...hsum(S.c0[t]),
          ...f32Store(0),
          ...(twoRows ? [...at, ...hsum(S.c1[t]), ...f32Store(4)] : []),
        ];
      }),
    ];
  };
  // Questions three at a time, then the two or one left.
  const questionGroups = (twoRows: boolean) => [
    ...i32(0),
    ...set(S.j),
    ...block([
      ...loop([
        ...get(S.j),
        ...i32(3),
        ...add,
        ...get(S.nq),
        ...gtu,
        ...brIf(1),
        ...questionGroup(3, twoRows),
        ...get(S.j),
        ...i32(3),
        ...add,
        ...set(S.j),
        ...br(0),
      ]),
    ]),
    ...get(S.nq),
    ...get(S.j),
    ...sub,
    ...i32(2),
    ...geu,
    ...ifThen([...questionGroup(2, twoRows), ...get(S.j), ...i32(2), ...add, ...set(S.j)]),
    ...get(S.nq),
    ...get(S.j),
    ...sub,
    ...i32(1),
    ...geu,
    ...ifThen(questionGroup(1, twoRows)),
  ];
  const rowStart = (
    r: number,
  ) => [...get(S.a), ...get(S.i), ...get(S.d4), ...mul, ...add, ...tee(r)];
  // norms(r0, rows, d4, sq + 8i): function 0.
  const rowNorms = (rows: number) => [
    ...get(S.r0),
    ...i32(rows),
    ...get(S.d4),
    ...get(S.sq),
    ...get(S.i),
    ...i32(3),
    ...shl,
    ...add,
    0x10,
    0,
  ];
  const scores = [
    ...vec([[10, WASM.i32], [11, WASM.v128]]),
    ...get(S.n),
    ...i32(2),
    ...shl,
    ...set(S.n4),
    ...i32(0),
    ...set(S.i),
    ...block([
      ...loop([
        ...get(S.i),
        ...i32(1),
        ...add,
        ...get(S.n),
        ...geu,
        ...brIf(1),
        ...rowStart(S.r0),
        ...get(S.d4),
        ...add,
        ...set(S.r1),
        ...rowNorms(2),
        ...questionGroups(true),
        ...get(S.i),
        ...i32(2),
        ...add,
        ...set(S.i),
        ...br(0),
      ]),
    ]),
    ...get(S.i),
    ...get(S.n),
    ...ltu,
    ...ifThen([...rowStart(S.r0), 0x1a, /* drop */ ...rowNorms(1), ...questionGroups(false)]),
    0x0b,
  ];
  const I = WASM.i32;
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
    ...section(
      1,
      vec([[0x60, ...vec([[I], [I], [I], [I]]), 0], [0x60, ...vec(Array(7).fill([I])), 0]]),
    ),
    ...section(3, vec([[0], [1]])),
    ...section(5, vec([[0x00, 1]])),
    ...section(
      7,
      vec([[...name("memory"), 0x02, 0], [...name("norms"), 0x00, 0], [
        ...name("scores"),
        0x00,
        1,
      ]]),
    ),
    ...section(10, vec([[...uleb(norms.length), ...norms], [...uleb(scores.length), ...scores]])),
  ]);
}

const PAGE = 65536;

/**
 * The kernels and their memory: the paragraph matrix (read straight into it
 * by the dump reader, see {@linkcode simdDumpOptions}, or copied in), the
 * questions, the scores and the row squares.
 */
class SimdKernels {
  readonly #memory: WebAssembly.Memory;
  readonly #scores: (...args: number[]) => void;

  private constructor(instance: WebAssembly.Instance) {
    const e = instance.exports as Record<string, unknown>;
    this.#memory = e.memory as WebAssembly.Memory;
    this.#scores = e.scores as (...args: number[]) => void;
  }

  /** The kernels, or `undefined` where WebAssembly SIMD is not available. */
  static create(): SimdKernels | undefined {
    // Relaxed SIMD's fused multiply-add where the runtime has it, else plain SIMD.
    for (const fused of [true, false]) {
      try {
        const bytes = simdModuleBytes(fused);
        if (!WebAssembly.validate(bytes)) continue;
        return new SimdKernels(new WebAssembly.Instance(new WebAssembly.Module(bytes), {}));
      } catch {
        // try the next
      }
    }
    return undefined;
  }

  #ensure(bytes: number): ArrayBuffer {
    const have = this.#memory.buffer.byteLength;
    if (bytes > have) this.#memory.grow(Math.ceil((bytes - have) / PAGE));
    return this.#memory.buffer as ArrayBuffer;
  }

  /**
   * The first `size` bytes of memory (grown as needed), for the dump reader
   * to read a paragraph into. A later growth detaches the view, not the data.
   */
  buffer = (size: number): Uint8Array => new Uint8Array(this.#ensure(size), 0, size);

  /**
   * Float32 scores of every row of `a` (n×d) against each question, in
   * memory: `scores[j * n + i]`; float64 sums of squares of each row,
   * `squares[i]`; `rows`, a view of the matrix in memory (for the exact
   * re-scoring: `a` itself may have been detached by a growth of memory).
   * A matrix already in memory (read there through {@linkcode buffer}) is
   * used where it lies; any other is copied to the start of memory.
   */
  scores(
    a: Float32Array | Uint16Array,
    n: number,
    d: number,
    qs: readonly Float32Array[],
  ): { scores: Float32Array; rows: Float32Array; squares: Float64Array } {
    const nq = qs.length, d4 = d * 4;
    // float16 (`a` holds the bits) is widened into memory: after `a` when `a` is there.
    const half = a instanceof Uint16Array;
    const inMemory = a.buffer === this.#memory.buffer;
    const inPlace = !half && inMemory && a.byteOffset % 4 === 0;
    const aPtr = inPlace
      ? a.byteOffset
      : half && inMemory
      ? (a.byteOffset + a.byteLength + 63) & ~63
      : 0;
    const from = a.byteOffset;
    // Layout: the matrix, the questions, the scores, the squares.
    const qPtr = (aPtr + n * d4 + 63) & ~63;
    const outPtr = qPtr + nq * d4;
    const sqPtr = (outPtr + nq * n * 4 + 63) & ~63;
    const buf = this.#ensure(sqPtr + n * 8);
    if (half) {
      // (A growth of memory detached `a`, not its bytes.)
      const bits = inMemory ? new Uint16Array(buf, from, n * d) : a;
      const table = halfTable(), to = new Float32Array(buf, aPtr, n * d);
      for (let i = 0; i < to.length; i++) to[i] = table[bits[i]];
    } else if (!inPlace) new Float32Array(buf, 0, n * d).set(a);
    const q = new Float32Array(buf, qPtr, nq * d);
    for (let j = 0; j < nq; j++) q.set(qs[j], j * d);
    this.#scores(aPtr, n, d4, qPtr, nq, outPtr, sqPtr);
    return {
      scores: new Float32Array(buf, outPtr, nq * n),
      rows: new Float32Array(buf, aPtr, n * d),
      squares: new Float64Array(buf, sqPtr, n),
    };
  }
}

let kernels: SimdKernels | null | undefined;

/** This thread's SIMD kernels (created on first use), or `undefined` without SIMD. */
function simdKernels(): SimdKernels | undefined {
  if (kernels === undefined) kernels = SimdKernels.create() ?? null;
  return kernels ?? undefined;
}

/**
 * Whether this runtime runs the WebAssembly SIMD scoring kernels (otherwise
 * scoring uses the float64 loops; results are the same).
 *
 * @example
 * ```ts
 * import { simdAvailable } from "./merge.ts";
 * simdAvailable(); // true on Deno 2
 * ```
 */
export function simdAvailable(): boolean {
  return simdKernels() !== undefined;
}

/**
 * Options for the context dump that merge scores on this thread's SIMD
 * kernels: paragraph files are read straight into the kernels' memory, and
 * their NaN/infinity check is left to the scoring kernel's row squares (one
 * pass over the matrix instead of three). Empty without SIMD.
 */
export function simdDumpOptions(): Pick<DumpOptions, "contextBuffer" | "deferFiniteCheck"> {
  const k = simdKernels();
  return k === undefined ? {} : { contextBuffer: k.buffer, deferFiniteCheck: true };
}

/** Float32 products and sums of values below this (in norm) neither overflow nor lose range. */
const F32_SAFE = 2 ** 100;
const U32 = 2 ** -24;

/**
 * {@linkcode bestDenseRows} on the SIMD kernels: `{ best }`, or, when the
 * values are out of the float32 pass's range, the matrix as it now lies in
 * memory (`a` may have been detached) and its row squares, for the float64
 * pass. A non-finite row sum means a NaN or infinite value: `checkFinite`
 * then throws the reader's error.
 */
function bestDenseRowsSimd(
  k: SimdKernels,
  a: Float32Array | Uint16Array,
  n: number,
  d: number,
  qs: readonly Float32Array[],
  checkFinite: ((data: Float32Array) => Float64Array) | undefined,
): { best: Int32Array } | { rows: Float32Array; squares?: Float64Array } {
  const nq = qs.length;
  const qNorm = new Float64Array(nq);
  let maxQ = 0;
  for (let j = 0; j < nq; j++) {
    let s = 0;
    const v = qs[j];
    for (let t = 0; t < d; t++) s += v[t] * v[t];
    qNorm[j] = Math.sqrt(s);
    if (qNorm[j] > maxQ) maxQ = qNorm[j];
  }
  const { scores, rows, squares } = k.scores(a, n, d, qs);
  const norms = new Float64Array(n);
  let maxNorm = 0;
  for (let i = 0; i < n; i++) {
    const sq = squares[i];
    // Squares of float32 values cannot overflow float64: Inf or NaN comes from the data.
    if (!Number.isFinite(sq)) return { rows, squares: checkFinite?.(rows) };
    norms[i] = Math.sqrt(sq);
    if (norms[i] > maxNorm) maxNorm = norms[i];
  }
  if (!(maxNorm * maxQ <= F32_SAFE)) return { rows, squares: squares.slice() };
  const fast = new Float64Array(scores);
  const out = new Int32Array(nq);
  const prods = new Float64Array(d);
  // A lane sums d/4 products (each rounded, or fused into its addition), then two more
  // additions: the error is at most γ(d/4+3)·Σ|a q| ≤ γ(d/4+3)·|a||q| (+ underflow);
  // the bound is 4 times more than that.
  const factor = 4 * (d + 4) * U32;
  const tiny = (d + 8) * 2 ** -140;
  for (let j = 0; j < nq; j++) {
    const scale = factor * qNorm[j];
    const q = qs[j];
    out[j] = pickRow(fast, j * n, n, (i) => scale * norms[i] + tiny, (i) => {
      const r = i * d;
      for (let t = 0; t < d; t++) prods[t] = rows[r + t] * q[t];
      return fsum(prods, d);
    });
  }
  return { best: out };
}

/**
 * Picks the first row with the largest exact score for one question, given
 * the fast scores `fast[base..base+n)` and an error bound per row
 * `bound(i)` (|fast - exact| ≤ bound / 4 or less); `exact(i)` computes the
 * correctly rounded score. Only rows within the bounds of the best fast
 * score are re-scored; when that is the best row alone, nothing is.
 */
function pickRow(
  fast: Float64Array,
  base: number,
  n: number,
  bound: (i: number) => number,
  exact: (i: number) => number,
): number {
  let m = 0;
  let fm = fast[base];
  for (let i = 1; i < n; i++) {
    const f = fast[base + i];
    if (f > fm) {
      fm = f;
      m = i;
    }
  }
  const threshold = fm - bound(m);
  let count = 0;
  let first = -1;
  for (let i = 0; i < n; i++) {
    if (fast[base + i] + bound(i) >= threshold) {
      count++;
      if (first < 0) first = i;
      if (count > 1) break;
    }
  }
  if (count === 1) return first;
  let best = -1;
  let bestV = -Infinity;
  for (let i = first; i < n; i++) {
    if (fast[base + i] + bound(i) >= threshold) {
      const v = exact(i);
      if (best < 0 || v > bestV) {
        best = i;
        bestV = v;
      }
    }
  }
  return best;
}

/** Options of the scoring functions. */
export interface ScoringOptions {
  /**
   * Use the WebAssembly SIMD kernels for the fast pass (default true; the
   * results are the same either way).
   */
  readonly simd?: boolean;
}

/**
 * For each question vector (1×d, dense), the index of the first row of the
 * dense phrase matrix with the largest exact inner product (see the module
 * notes), or -1 when the matrix has no rows. The fast pass runs on
 * WebAssembly SIMD (float32 lanes, with their own error bound; it sums each
 * row's squares on the same pass) when available and d is a multiple of 4,
 * else in float64; the exact re-scoring makes both give the same rows.
 * `rowSquares` (the sum of squares of each row, as {@linkcode ContextDump}
 * carries for checked f32 dumps) saves the float64 pass one pass over the
 * matrix. `checkFinite` is for a matrix whose values were not checked yet
 * (`ContextDump.checkFinite`): it runs (and throws) when a row's squares
 * are not finite; without it, values must be finite.
 *
 * @example
 * ```ts
 * import { bestDenseRows } from "./merge.ts";
 * const c = { kind: "dense", rows: 3, cols: 2, dtype: "f32", data: new Float32Array([1, 0, 0, 1, 1, 0]) } as const;
 * const q = { kind: "dense", rows: 1, cols: 2, dtype: "f32", data: new Float32Array([1, 0]) } as const;
 * bestDenseRows(c, [q]); // Int32Array [0]: rows 0 and 2 tie, the first wins
 * ```
 */
export function bestDenseRows(
  c: DenseMatrix,
  questions: readonly DenseMatrix[],
  rowSquares?: Float64Array,
  options: ScoringOptions = {},
  checkFinite?: (data: Float32Array) => Float64Array,
): Int32Array {
  const n = c.rows, d = c.cols, nq = questions.length;
  const out = new Int32Array(nq).fill(-1);
  if (n === 0 || nq === 0) return out;
  if (c.data.length !== n * d) {
    throw new RangeError(`matrix data has ${c.data.length} values, not ${n}×${d}`);
  }
  let a: Float32Array | undefined;
  let sq = rowSquares;
  const k = options.simd === false || d < 4 || d % 4 !== 0 ? undefined : simdKernels();
  if (k !== undefined) {
    // float16 goes to the kernels as its bits (widened straight into their memory).
    const src = c.data instanceof Float32Array ? c.data : halfBits(c.data);
    const r = bestDenseRowsSimd(k, src, n, d, questions.map(asFloat32), checkFinite);
    if ("best" in r) return r.best;
    a = r.rows;
    sq ??= r.squares;
  }
  a ??= asFloat32(c);
  sq ??= checkFinite ? checkFinite(a) : sumSquares(a, n, d);
  const norms = new Float64Array(n);
  for (let i = 0; i < n; i++) norms[i] = Math.sqrt(sq[i]);
  const q = new Float64Array(nq * d);
  const qNorm = new Float64Array(nq);
  for (let j = 0; j < nq; j++) {
    const v = asFloat32(questions[j]);
    let s = 0;
    for (let k = 0; k < d; k++) {
      q[j * d + k] = v[k];
      s += v[k] * v[k];
    }
    qNorm[j] = Math.sqrt(s);
  }
  const fast = new Float64Array(nq * n);
  denseScores(a, n, d, q, nq, fast);
  const prods = new Float64Array(d);
  // |fast - exact| ≤ γ(d) Σ|a q| ≤ γ(d) |a| |q|: the bound below is 4× that, which
  // also covers the rounding of the norms and of the comparisons.
  const factor = 2 * (d + 2) * EPS;
  for (let j = 0; j < nq; j++) {
    const scale = factor * qNorm[j];
    const qo = j * d;
    out[j] = pickRow(fast, j * n, n, (i) => scale * norms[i], (i) => {
      const r = i * d;
      for (let k = 0; k < d; k++) prods[k] = a[r + k] * q[qo + k];
      return fsum(prods, d);
    });
  }
  return out;
}

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
 * import { bestSparseRows } from "./merge.ts";
 * const c = { kind: "csr", rows: 2, cols: 8, data: new Float32Array([1, 2]),
 *   indices: new Int32Array([3, 5]), indptr: new Int32Array([0, 1, 2]) } as const;
 * const q = { kind: "csr", rows: 1, cols: 8, data: new Float32Array([1]),
 *   indices: new Int32Array([5]), indptr: new Int32Array([0, 1]) } as const;
 * bestSparseRows(c, [q]); // Int32Array [1]
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

/**
 * For each question, the index of the first phrase with the largest exact
 * score, or -1 when the paragraph has no phrases. Dense and sparse matrices
 * cannot be mixed; every question must be 1×d with the paragraph's d.
 *
 * @example
 * ```ts
 * import { bestRows } from "./merge.ts";
 * const c = { kind: "dense", rows: 2, cols: 2, dtype: "f32", data: new Float32Array([1, 0, 0, 1]) } as const;
 * const q = { kind: "dense", rows: 1, cols: 2, dtype: "f32", data: new Float32Array([0, 2]) } as const;
 * bestRows({ matrix: c }, [q]); // Int32Array [1]
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

// ---------------------------------------------------------------------------
// The dataset.

/** The options `merge` reads the dataset with (as PIQA: paragraphs need no context). */
export const SQUAD_OPTS = { context: "optional" } as const;

/**
 * The question → paragraph map of a whole dataset's bytes (`.json`, or
 * gzipped), when `decodeArticle` accepts every article; `undefined`
 * otherwise (the caller then reads it with the streaming reader, which
 * words the error).
 *
 * @example
 * ```ts
 * import { datasetQ2c } from "./_merge_core.ts";
 * const bytes = new TextEncoder().encode('{"data": [{"title": "T", "paragraphs": [{"qas": [{"id": "q"}]}]}]}');
 * datasetQ2c(bytes); // Map { "q" => "T_0" }
 * ```
 */
export function datasetQ2c(bytes: Uint8Array): Map<string, string> | undefined {
  if (bytes.length > WHOLE_DATASET_LIMIT) return undefined;
  try {
    if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
      const r = zlib.gunzipSync(bytes, { maxOutputLength: WHOLE_DATASET_LIMIT + 1 });
      if (r.byteLength > WHOLE_DATASET_LIMIT) return undefined;
      bytes = new Uint8Array(r.buffer, r.byteOffset, r.byteLength);
    }
    const v = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    if (typeof v !== "object" || v === null || !Array.isArray(v.data)) return undefined;
    if (!v.data.every((a: unknown) => isValidArticle(a, SQUAD_OPTS))) return undefined;
    const q2c = new Map<string, string>();
    for (const a of v.data as { title: string; paragraphs: { qas: { id: string }[] }[] }[]) {
      a.paragraphs.forEach((p, i) => {
        const pid = `${a.title}_${i}`;
        for (const q of p.qas) q2c.set(q.id, pid);
      });
    }
    return q2c;
  } catch {
    return undefined;
  }
}

/** Datasets up to this size (decompressed) are parsed in one go, larger ones streamed. */
export const WHOLE_DATASET_LIMIT = 256 * 1024 * 1024;

// ---------------------------------------------------------------------------
// One paragraph.

/** One question's outcome: an answer, a `Missing` path, or neither (no phrases). */
export interface MergeOutcome {
  /** The question id. */
  readonly qid: string;
  /** The answer phrase. */
  readonly answer?: string;
  /** The path of the missing file (printed as `Missing <path>`). */
  readonly missing?: string;
}

const isMissing = (x: unknown): x is MissingFile =>
  typeof x === "object" && x !== null && "missing" in x;

function shapeOf(m: Matrix): string {
  return `(${m.rows}, ${m.cols})`;
}

/**
 * The error to throw about a paragraph, unless its matrix has a NaN or
 * infinite value not checked yet (a deferred check): that error comes first,
 * as when the reader checks.
 */
function checkedFirst(
  ctx: ContextDump,
  e: { file: string; where: string; message: string },
): InputError {
  if (ctx.checkFinite !== undefined && ctx.matrix.kind === "dense") {
    ctx.checkFinite(asFloat32(ctx.matrix));
  }
  return new InputError(e);
}

/**
 * Answers the questions of one paragraph: reads each question vector and
 * (once) the paragraph's matrix and phrases, checks them, and scores all the
 * questions in one pass. Throws the first bad input in question order
 * ({@linkcode InputError} / {@linkcode FileError}).
 *
 * @example
 * ```ts
 * import { openDumpSync } from "../io/dump/reader.ts";
 * import { mergeUnit } from "./merge.ts";
 * const c = openDumpSync("out/context_emb"), q = openDumpSync("out/question_emb");
 * mergeUnit(c, q, { cid: "Super_Bowl_50_0", qids: ["56be4db0acb8001400a502ec"] });
 * // [{ qid: "56be4db0acb8001400a502ec", answer: "Denver Broncos" }]
 * ```
 */
export function mergeUnit(
  c: DumpSourceSync,
  q: DumpSourceSync,
  unit: { readonly cid: string; readonly qids: readonly string[] },
  options: ScoringOptions = {},
): MergeOutcome[] {
  const outcomes: MergeOutcome[] = [];
  const todo: number[] = [];
  const vectors: Matrix[] = [];
  let ctx: ContextDump | MissingFile | undefined;
  for (const qid of unit.qids) {
    const qm = q.readQuestion(qid);
    if (isMissing(qm)) {
      outcomes.push({ qid, missing: qm.missing });
      continue;
    }
    if (ctx === undefined) {
      ctx = c.readContext(unit.cid);
      if (!isMissing(ctx) && ctx.phrases.length !== ctx.matrix.rows) {
        const stem = dumpStem(unit.cid);
        throw checkedFirst(ctx, {
          file: c.label(`${stem}.json`),
          where: "",
          message: `${ctx.phrases.length} phrases but ${
            c.label(`${stem}.npz`)
          } has ${ctx.matrix.rows} rows`,
        });
      }
    }
    if (isMissing(ctx)) {
      outcomes.push({ qid, missing: ctx.missing });
      continue;
    }
    const qLabel = q.label(`${dumpStem(qid)}.npz`);
    if (qm.rows !== 1) {
      throw checkedFirst(ctx, {
        file: qLabel,
        where: "",
        message: `shape ${shapeOf(qm)}; a question vector must be 1×d`,
      });
    }
    if (qm.cols !== ctx.matrix.cols) {
      throw checkedFirst(ctx, {
        file: qLabel,
        where: "",
        message: `d = ${qm.cols} but ${
          c.label(`${dumpStem(unit.cid)}.npz`)
        } has d = ${ctx.matrix.cols}`,
      });
    }
    todo.push(outcomes.length);
    outcomes.push({ qid });
    vectors.push(qm);
  }
  if (ctx !== undefined && !isMissing(ctx) && ctx.matrix.rows > 0 && vectors.length > 0) {
    const best = bestRows(ctx, vectors, options);
    for (let k = 0; k < todo.length; k++) {
      outcomes[todo[k]] = { qid: outcomes[todo[k]].qid, answer: ctx.phrases.at(best[k]) };
    }
  }
  return outcomes;
}

/** What {@linkcode mergeBatch} returns. */
export interface BatchResult {
  /** Each unit's outcomes, in order, up to the unit that failed. */
  readonly ok: MergeOutcome[][];
  /** The error of the unit that failed (the units after it were not run). */
  readonly err?: InputError | FileError;
}

/**
 * {@linkcode mergeUnit} on each unit in turn, stopping at the first bad
 * input (other errors are thrown).
 *
 * @example
 * ```ts
 * import { openDumpSync } from "../io/dump/reader.ts";
 * import { mergeBatch } from "./merge.ts";
 * const c = openDumpSync("out/context_emb"), q = openDumpSync("out/question_emb");
 * const r = mergeBatch(c, q, [{ cid: "Super_Bowl_50_0", qids: ["56be4db0acb8001400a502ec"] }]);
 * r.ok[0]; // [{ qid: "56be4db0acb8001400a502ec", answer: "Denver Broncos" }]
 * ```
 */
export function mergeBatch(
  c: DumpSourceSync,
  q: DumpSourceSync,
  units: readonly { readonly cid: string; readonly qids: readonly string[] }[],
  options: ScoringOptions = {},
): BatchResult {
  const ok: MergeOutcome[][] = [];
  for (const unit of units) {
    try {
      ok.push(mergeUnit(c, q, unit, options));
    } catch (e) {
      if (e instanceof InputError || e instanceof FileError) return { ok, err: e };
      throw e;
    }
  }
  return { ok };
}

// ---------------------------------------------------------------------------
// The worker side.

/** An error as it crosses from a worker to the main thread (plain data). */
export interface WireError {
  readonly tag: "InputError" | "FileError" | "Error";
  readonly file: string;
  readonly where: string;
  readonly message: string;
}

/** A thrown value as a {@linkcode WireError}. */
export function toWire(e: unknown): WireError {
  if (e instanceof InputError) {
    return { tag: "InputError", file: e.file, where: e.where, message: e.message };
  }
  if (e instanceof FileError) {
    return { tag: "FileError", file: e.file, where: "", message: e.message };
  }
  return {
    tag: "Error",
    file: "",
    where: "",
    message: e instanceof Error ? (e.stack ?? e.message) : String(e),
  };
}

/** The first message to a worker: which dumps to open, and how. */
export interface WorkerInit {
  readonly contextEmb: string;
  readonly questionEmb: string;
  readonly sparse: boolean;
  readonly simd: boolean;
  /**
   * Workers started before the main thread has read the dataset plan by
   * themselves. The first (`ports` set) reads `dataset` (a file), makes the
   * plan and sends it to the main thread (seq -2; `null`: it could not) and
   * through each of `ports` to the others (whose `ports` holds the one port
   * they listen on). Then each cuts the plan into batches as
   * `batchesOf(plan, batch, workers)` and answers batch after batch, each
   * taken from `counter` (an Int32 shared by all: the next batch), the
   * batch's index as seq.
   */
  readonly plan?: {
    readonly dataset: string;
    readonly batch: number;
    readonly workers: number;
    readonly counter: SharedArrayBuffer;
    readonly planner: boolean;
    readonly ports: readonly MessagePort[];
  };
}

/**
 * A worker's reply: a batch's outcomes and its error (seq: the batch's
 * number), "ready" (seq -1), or the plan the first worker made (seq -2;
 * `null`: it could not make one).
 */
export type WorkerReply =
  | { readonly seq: number; readonly ok: MergeOutcome[][]; readonly err?: WireError }
  | { readonly seq: -1; readonly ready: true }
  | { readonly seq: -2; readonly plan: MergePlan | null };

/** A message to a worker after its {@linkcode WorkerInit}: paragraphs to answer. */
export interface WorkerBatch {
  /** Echoed in the reply. */
  readonly seq: number;
  /** The paragraphs and their questions, answered in this order. */
  readonly units: readonly { readonly cid: string; readonly qids: readonly string[] }[];
}

/**
 * A planning worker's part (see {@linkcode WorkerInit.plan}): the first makes
 * the plan and hands it on; each answers batches until none are left.
 */
function answerAll(
  init: NonNullable<WorkerInit["plan"]>,
  dumps: { c: DumpSourceSync; q: DumpSourceSync; simd: boolean } | WireError,
  post: (m: WorkerReply) => void,
): void {
  if (!init.planner) {
    const port = init.ports[0];
    port.onmessage = (ev: MessageEvent<MergePlan | null>) => {
      port.close();
      if (ev.data !== null) answerBatches(init, ev.data, dumps, post);
    };
    return;
  }
  let plan: MergePlan | null = null;
  try {
    const q2c = datasetQ2c(Deno.readFileSync(init.dataset));
    if (q2c !== undefined) plan = planMerge(q2c);
  } catch {
    // the main thread reads the dataset itself, and says what is wrong
  }
  post({ seq: -2, plan });
  for (const port of init.ports) {
    port.postMessage(plan);
    port.close();
  }
  if (plan !== null) answerBatches(init, plan, dumps, post);
}

function answerBatches(
  init: NonNullable<WorkerInit["plan"]>,
  plan: MergePlan,
  dumps: { c: DumpSourceSync; q: DumpSourceSync; simd: boolean } | WireError,
  post: (m: WorkerReply) => void,
): void {
  const batches = batchesOf(plan, init.batch, init.workers);
  const next = new Int32Array(init.counter);
  for (;;) {
    const b = Atomics.add(next, 0, 1);
    if (b >= batches.length) return;
    if ("tag" in dumps) {
      post({ seq: b, ok: [], err: dumps });
      continue;
    }
    try {
      const r = mergeBatch(dumps.c, dumps.q, batches[b], { simd: dumps.simd });
      post(r.err === undefined ? { seq: b, ok: r.ok } : { seq: b, ok: r.ok, err: toWire(r.err) });
    } catch (e) {
      post({ seq: b, ok: [], err: toWire(e) });
    }
  }
}

function isMergeWorker(): boolean {
  return (globalThis as { name?: unknown }).name === WORKER_NAME &&
    typeof (globalThis as { WorkerGlobalScope?: unknown }).WorkerGlobalScope === "function";
}

/** The worker side: opens the dumps, then answers one paragraph per message. */
function serveMergeWorker(): void {
  const scope = globalThis as unknown as {
    onmessage: ((ev: MessageEvent) => void) | null;
    postMessage(m: WorkerReply): void;
  };
  let dumps: { c: DumpSourceSync; q: DumpSourceSync; simd: boolean } | WireError | undefined;
  scope.onmessage = (ev) => {
    const msg = ev.data as { init: WorkerInit } | WorkerBatch;
    if ("init" in msg) {
      try {
        const { sparse, simd } = msg.init;
        dumps = {
          c: openDumpSync(msg.init.contextEmb, {
            sparse,
            reuseBuffers: true,
            ...(simd ? simdDumpOptions() : {}),
          }),
          q: openDumpSync(msg.init.questionEmb, { sparse }),
          simd,
        };
      } catch (e) {
        dumps = toWire(e);
      }
      scope.postMessage({ seq: -1, ready: true });
      if (msg.init.plan !== undefined) answerAll(msg.init.plan, dumps, (m) => scope.postMessage(m));
      return;
    }
    if (dumps === undefined || "tag" in dumps) {
      const err = dumps ?? toWire(new Error("not initialised"));
      scope.postMessage({ seq: msg.seq, ok: [], err });
      return;
    }
    try {
      const r = mergeBatch(dumps.c, dumps.q, msg.units, { simd: dumps.simd });
      scope.postMessage(
        r.err === undefined
          ? { seq: msg.seq, ok: r.ok }
          : { seq: msg.seq, ok: r.ok, err: toWire(r.err) },
      );
    } catch (e) {
      scope.postMessage({ seq: msg.seq, ok: [], err: toWire(e) });
    }
  };
}

if (isMergeWorker()) serveMergeWorker();
