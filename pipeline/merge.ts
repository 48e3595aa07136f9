/**
 * `merge data.json context_emb question_emb pred.json [--sparse]`: the
 * PI-SQuAD merge. For each question of the dataset, the answer is the phrase
 * of its paragraph whose vector has the largest inner product with the
 * question vector (the first one on a tie). Dumps are folders or `.zip`s of
 * them; `pred.json` may be `-` (stdout); the dataset `.json`, `.json.gz` or
 * `-`.
 *
 * Semantics are those of PIQA's `merge.py`: the question → paragraph map is a
 * dict (a repeated question id keeps its first position and its last
 * paragraph); a missing question `.npz`, paragraph `.npz` or paragraph
 * `.json` prints `Missing <path>` on stderr (in dataset order) and leaves the
 * question unanswered; so does a paragraph without phrases. `pred.json` is
 * written streaming in Python `json.dump` format, atomically.
 *
 * Unlike `merge.py`, each paragraph's dump is read once and all its questions
 * are scored together (a Q×d block against the N×d phrase matrix in one
 * pass). Paragraphs are read and scored by worker threads (`--workers`, one
 * per CPU up to 4), a few in flight at a time (`--concurrency`), so memory
 * stays flat: the dataset's ids, and a few paragraphs.
 *
 * **Exact scores.** A score is the exact inner product. A fast pass scores
 * every row: in float64 (float32/float16 values and their products are exact
 * in float64), or on WebAssembly SIMD in float32 lanes; every row whose fast
 * score lies within a safe error bound of the best fast score (a bound
 * derived for the arithmetic used) is re-scored exactly ({@linkcode fsum},
 * bit for bit Python's `math.fsum` of the float64 products), and the first
 * row with the largest exact score wins. So the fast pass never decides a
 * tie or a near-tie, and the result does not depend on it: the float64 and
 * SIMD passes, and the reference (`bench/reference/merge.py`, float64 with
 * numpy), agree to the last digit. The SIMD kernels are assembled in this
 * file from their instructions (`--no-simd` turns them off).
 *
 * @module
 */
import { Effect, Stream } from "effect";
import type { CsrMatrix, DenseMatrix, Matrix } from "../encoders/types.ts";
import { dumpStem } from "../io/dump_names.ts";
import {
  type ContextDump,
  type DumpError,
  type DumpOptions,
  type DumpSourceSync,
  type MissingFile,
  openDump,
  openDumpSync,
} from "../io/dump_reader.ts";
import { FileError, InputError } from "../io/errors.ts";
import { type PyJson, pyStringLiteral } from "../io/pyjson.ts";
import { type AtomicWriter, openAtomicWriter, openSource } from "../io/source.ts";
import {
  decodeArticle,
  type SquadArticle,
  type SquadReadError,
  squadRecordStream,
} from "../io/squad.ts";
import { type CommandSpec, progress, runMain, UsageError, WorkError } from "./_cli.ts";

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

function asFloat32(m: DenseMatrix): Float32Array {
  return m.data instanceof Float32Array ? m.data : new Float32Array(m.data);
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
//   scores(a, n, d4, q, nq, out): out[j*n + i] (f32) = a[i] · q[j] in f32
//     (4 lanes of 4-byte floats, two rows × two questions at a time; each lane
//     sums its products in order, then ((l0 + l1) + (l2 + l3)))
//
// d4 is the row stride in bytes (d·4, a multiple of 16); nq is even (the
// caller pads with a zero question). Float32 scores are only the fast pass:
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
function simdModuleBytes(): Uint8Array<ArrayBuffer> {
  const get = (i: number) => [0x20, ...uleb(i)];
  const set = (i: number) => [0x21, ...uleb(i)];
  const tee = (i: number) => [0x22, ...uleb(i)];
  const i32 = (v: number) => [0x41, ...sleb(v)];
  const add = [0x6a], mul = [0x6c], shl = [0x74], ltu = [0x49], geu = [0x4f];
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
  const acc = (c: number, x: number, y: number) => [
    ...get(c),
    ...get(x),
    ...get(y),
    ...f32x4Mul,
    ...f32x4Add,
    ...set(c),
  ];
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

  // scores(a, n, d4, q, nq, out)
  const S = {
    a: 0,
    n: 1,
    d4: 2,
    q: 3,
    nq: 4,
    out: 5,
    i: 6,
    j: 7,
    k: 8,
    r0: 9,
    r1: 10,
    q0: 11,
    q1: 12,
    o: 13,
    n4: 14,
    c00: 15,
    c01: 16,
    c10: 17,
    c11: 18,
    x0: 19,
    x1: 20,
    y0: 21,
    y1: 22,
  };
  const questionPairs = (twoRows: boolean) => [
    ...i32(0),
    ...set(S.j),
    ...loop([
      ...get(S.q),
      ...get(S.j),
      ...get(S.d4),
      ...mul,
      ...add,
      ...tee(S.q0),
      ...get(S.d4),
      ...add,
      ...set(S.q1),
      ...zero,
      ...set(S.c00),
      ...zero,
      ...set(S.c01),
      ...zero,
      ...set(S.c10),
      ...zero,
      ...set(S.c11),
      ...i32(0),
      ...set(S.k),
      ...loop([
        ...loadAt(S.r0, S.k, S.x0),
        ...(twoRows ? loadAt(S.r1, S.k, S.x1) : []),
        ...loadAt(S.q0, S.k, S.y0),
        ...loadAt(S.q1, S.k, S.y1),
        ...acc(S.c00, S.x0, S.y0),
        ...acc(S.c01, S.x0, S.y1),
        ...(twoRows ? [...acc(S.c10, S.x1, S.y0), ...acc(S.c11, S.x1, S.y1)] : []),
        ...next(S.k, 16, S.d4),
      ]),
      // o = out + (j·n + i)·4; question j+1 is n·4 bytes further.
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
      ...get(S.o),
      ...hsum(S.c00),
      ...f32Store(0),
      ...get(S.o),
      ...get(S.n4),
      ...add,
      ...hsum(S.c01),
      ...f32Store(0),
      ...(twoRows
        ? [
          ...get(S.o),
          ...hsum(S.c10),
          ...f32Store(4),
          ...get(S.o),
          ...get(S.n4),
          ...add,
          ...hsum(S.c11),
          ...f32Store(4),
        ]
        : []),
      ...next(S.j, 2, S.nq),
    ]),
  ];
  const rowStart = (
    r: number,
  ) => [...get(S.a), ...get(S.i), ...get(S.d4), ...mul, ...add, ...tee(r)];
  const scores = [
    ...vec([[9, WASM.i32], [8, WASM.v128]]),
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
        ...questionPairs(true),
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
    ...ifThen([...rowStart(S.r0), 0x1a, /* drop */ ...questionPairs(false)]),
    0x0b,
  ];
  const I = WASM.i32;
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
    ...section(
      1,
      vec([[0x60, ...vec([[I], [I], [I], [I]]), 0], [0x60, ...vec(Array(6).fill([I])), 0]]),
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
 * The kernels and their memory: the paragraph matrix (copied in by
 * `rowSquares` while the reader checks it), the questions, the scores.
 */
class SimdKernels {
  readonly #memory: WebAssembly.Memory;
  readonly #norms: (a: number, n: number, d4: number, out: number) => void;
  readonly #scores: (a: number, n: number, d4: number, q: number, nq: number, out: number) => void;
  /** The matrix `rowSquares` copied to the start of memory last (`scores` reuses it). */
  #copied: Float32Array | undefined;

  private constructor(instance: WebAssembly.Instance) {
    const e = instance.exports as Record<string, unknown>;
    this.#memory = e.memory as WebAssembly.Memory;
    this.#norms = e.norms as (a: number, n: number, d4: number, out: number) => void;
    this.#scores = e.scores as (...a: number[]) => void;
  }

  /** The kernels, or `undefined` where WebAssembly SIMD is not available. */
  static create(): SimdKernels | undefined {
    try {
      const bytes = simdModuleBytes();
      if (!WebAssembly.validate(bytes)) return undefined;
      return new SimdKernels(new WebAssembly.Instance(new WebAssembly.Module(bytes), {}));
    } catch {
      return undefined;
    }
  }

  #ensure(bytes: number): ArrayBuffer {
    const have = this.#memory.buffer.byteLength;
    if (bytes > have) this.#memory.grow(Math.ceil((bytes - have) / PAGE));
    return this.#memory.buffer as ArrayBuffer;
  }

  /** Row sums of squares in float64 (the reader's finiteness check). */
  rowSquares = (data: Float32Array, rows: number, cols: number): Float64Array => {
    this.#copied = undefined;
    if (
      rows === 0 || cols === 0 || cols % 4 !== 0 || data.buffer === this.#memory.buffer ||
      data.length !== rows * cols
    ) {
      return sumSquares(data, rows, cols);
    }
    // Copied to the start of memory, where `scores` will want it: each paragraph is
    // copied in once.
    const o = (data.byteLength + 63) & ~63;
    const mem = this.#ensure(o + rows * 8);
    new Float32Array(mem, 0, data.length).set(data);
    this.#copied = data;
    this.#norms(0, rows, cols * 4, o);
    return new Float64Array(mem, o, rows).slice();
  };

  /**
   * Float32 scores of every row of `a` (n×d) against each question, in
   * memory: `scores[j * n + i]`; `rows` is a view of the matrix in memory
   * (for the exact re-scoring). Grows memory as needed.
   */
  scores(
    a: Float32Array,
    n: number,
    d: number,
    qs: readonly Float32Array[],
  ): { scores: Float32Array; rows: Float32Array } {
    const nq = qs.length, nqPad = nq + (nq & 1), d4 = d * 4;
    // Layout: the matrix at 0 (already there if `rowSquares` just copied it), the
    // questions (padded to an even count with zeros), the scores.
    const qPtr = (n * d4 + 63) & ~63;
    const outPtr = qPtr + nqPad * d4;
    const buf = this.#ensure(outPtr + nqPad * n * 4);
    if (this.#copied !== a) new Float32Array(buf, 0, n * d).set(a);
    this.#copied = undefined;
    const aPtr = 0;
    const q = new Float32Array(buf, qPtr, nqPad * d);
    for (let j = 0; j < nq; j++) q.set(qs[j], j * d);
    if (nqPad > nq) q.fill(0, nq * d);
    this.#scores(aPtr, n, d4, qPtr, nqPad, outPtr);
    return {
      scores: new Float32Array(buf, outPtr, nq * n),
      rows: new Float32Array(buf, aPtr, n * d),
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
 * Dumps opened with these options check paragraph matrices with the SIMD
 * sum-of-squares kernel, which copies each matrix into the kernels' memory
 * once, where the scoring kernel then finds it.
 */
function simdDumpOptions(): Pick<DumpOptions, "rowSquares"> {
  const k = simdKernels();
  return k === undefined ? {} : { rowSquares: k.rowSquares };
}

/** Float32 products and sums of values below this (in norm) neither overflow nor lose range. */
const F32_SAFE = 2 ** 100;
const U32 = 2 ** -24;

/** {@linkcode bestDenseRows} on the SIMD kernels; `undefined` when values are out of their range. */
function bestDenseRowsSimd(
  k: SimdKernels,
  a: Float32Array,
  n: number,
  d: number,
  qs: readonly Float32Array[],
  sq: Float64Array | undefined,
): Int32Array | undefined {
  const nq = qs.length;
  const squares = sq ?? k.rowSquares(a, n, d);
  const norms = new Float64Array(n);
  let maxNorm = 0;
  for (let i = 0; i < n; i++) {
    norms[i] = Math.sqrt(squares[i]);
    if (norms[i] > maxNorm) maxNorm = norms[i];
  }
  const qNorm = new Float64Array(nq);
  let maxQ = 0;
  for (let j = 0; j < nq; j++) {
    let s = 0;
    const v = qs[j];
    for (let t = 0; t < d; t++) s += v[t] * v[t];
    qNorm[j] = Math.sqrt(s);
    if (qNorm[j] > maxQ) maxQ = qNorm[j];
  }
  if (!(maxNorm * maxQ <= F32_SAFE)) return undefined;
  const { scores, rows } = k.scores(a, n, d, qs);
  const fast = new Float64Array(scores);
  const out = new Int32Array(nq);
  const prods = new Float64Array(d);
  // A lane sums d/4 rounded products, then two more additions: the error is at most
  // γ(d/4+3)·Σ|a q| ≤ γ(d/4+3)·|a||q| (+ underflow); the bound is 4 times more than that.
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
  return out;
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
 * notes), or -1 when the matrix has no rows. `rowSquares` (the sum of
 * squares of each row, as {@linkcode ContextDump} carries for f32 dumps)
 * saves a pass when given. The fast pass runs on WebAssembly SIMD (float32
 * lanes, with their own error bound) when available and d is a multiple of
 * 4, else in float64; the exact re-scoring makes both give the same rows.
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
): Int32Array {
  const n = c.rows, d = c.cols, nq = questions.length;
  const out = new Int32Array(nq).fill(-1);
  if (n === 0 || nq === 0) return out;
  const a = asFloat32(c);
  if (a.length !== n * d) throw new RangeError(`matrix data has ${a.length} values, not ${n}×${d}`);
  const k = options.simd === false || d < 4 || d % 4 !== 0 ? undefined : simdKernels();
  if (k !== undefined) {
    const best = bestDenseRowsSimd(k, a, n, d, questions.map(asFloat32), rowSquares);
    if (best !== undefined) return best;
  }
  const sq = rowSquares ?? sumSquares(a, n, d);
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
  if (colSlots.length < c.cols) colSlots = new Int32Array(c.cols).fill(-1);
  const slots = colSlots;
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
        const s = slots[indices[k]];
        if (s < 0) continue;
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
    for (const col of used) slots[col] = -1;
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
 * bestRows({ matrix: c, phrases: ["a", "b"] }, [q]); // Int32Array [1]
 * ```
 */
export function bestRows(
  context: ContextDump,
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
    ? bestDenseRows(c, questions as DenseMatrix[], context.rowSquares, options)
    : bestSparseRows(c, questions as CsrMatrix[]);
}

// ---------------------------------------------------------------------------
// The plan: PIQA's question → paragraph dict, grouped by paragraph.

/** A paragraph and the questions that take their answer from it. */
export interface MergeUnit {
  /** The paragraph id (`title_index`). */
  readonly cid: string;
  /** Each question's position in the predictions (dataset order of first occurrence). */
  readonly slots: readonly number[];
  /** The question ids, in the same order. */
  readonly qids: readonly string[];
}

/** The dataset's questions grouped by the paragraph that answers them. */
export interface MergePlan {
  /** Paragraphs in the order of their first question. */
  readonly units: readonly MergeUnit[];
  /** Distinct question ids. */
  readonly questions: number;
}

/**
 * Groups a question → paragraph map (a `Map` has Python's dict semantics: a
 * repeated key keeps its first position and its last value) by paragraph, in
 * the order of each paragraph's first question.
 *
 * @example
 * ```ts
 * import { planMerge } from "./merge.ts";
 * const plan = planMerge(new Map([["q1", "T_0"], ["q2", "T_1"], ["q3", "T_0"]]));
 * plan.units.map((u) => [u.cid, u.slots]); // [["T_0", [0, 2]], ["T_1", [1]]]
 * ```
 */
export function planMerge(q2c: ReadonlyMap<string, string>): MergePlan {
  const units: { cid: string; slots: number[]; qids: string[] }[] = [];
  const byCid = new Map<string, (typeof units)[number]>();
  let slot = 0;
  for (const [qid, cid] of q2c) {
    let u = byCid.get(cid);
    if (u === undefined) {
      u = { cid, slots: [], qids: [] };
      byCid.set(cid, u);
      units.push(u);
    }
    u.slots.push(slot++);
    u.qids.push(qid);
  }
  return { units, questions: slot };
}

const SQUAD_OPTS = { context: "optional" } as const;
/** Datasets up to this size (decompressed) are parsed in one go, larger ones streamed. */
const WHOLE_DATASET_LIMIT = 256 * 1024 * 1024;

function addArticle(q2c: Map<string, string>, a: SquadArticle): void {
  for (const p of a.paragraphs) for (const q of p.questions) q2c.set(q.id, p.id);
}

/** JSON.parse path; `undefined` sends the caller to the streaming reader (exact errors). */
function wholeQ2c(bytes: Uint8Array, name: string): Map<string, string> | undefined {
  try {
    const v = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    if (typeof v !== "object" || v === null || !Array.isArray(v.data)) return undefined;
    const q2c = new Map<string, string>();
    v.data.forEach((a: PyJson, i: number) =>
      addArticle(q2c, decodeArticle(name, i, a, SQUAD_OPTS))
    );
    return q2c;
  } catch {
    return undefined;
  }
}

/**
 * The dataset's question → paragraph map (dict semantics, as PIQA's
 * `get_q2c`). A dataset of up to 256 MiB is parsed in one go (it is small
 * next to the dumps); a larger one, or one with an error, goes through the
 * streaming reader, which names the error's place.
 */
const readQ2c = (path: string): Effect.Effect<Map<string, string>, SquadReadError> =>
  Effect.flatMap(openSource(path), (src) =>
    Effect.tryPromise({
      try: async () => {
        const reader = src.stream.getReader();
        const chunks: Uint8Array[] = [];
        let total = 0;
        let done = false;
        while (total <= WHOLE_DATASET_LIMIT) {
          const r = await reader.read();
          if (r.done) {
            done = true;
            break;
          }
          chunks.push(r.value);
          total += r.value.byteLength;
        }
        if (done) {
          const bytes = new Uint8Array(total);
          let o = 0;
          for (const c of chunks) {
            bytes.set(c, o);
            o += c.byteLength;
          }
          const q2c = wholeQ2c(bytes, src.name);
          if (q2c !== undefined) return q2c;
        }
        const replay = new ReadableStream<Uint8Array>({
          async pull(c) {
            const next = chunks.shift();
            if (next !== undefined) c.enqueue(next);
            else if (done) c.close();
            else {
              const r = await reader.read();
              if (r.done) c.close();
              else c.enqueue(r.value);
            }
          },
          cancel: (reason) => reader.cancel(reason),
        });
        const q2c = new Map<string, string>();
        for await (const rec of squadRecordStream({ name: src.name, stream: replay }, SQUAD_OPTS)) {
          if (rec.kind === "article") addArticle(q2c, rec);
        }
        return q2c;
      },
      catch: (e) =>
        e instanceof InputError || e instanceof FileError ? e : new InputError({
          file: src.name,
          where: "",
          message: e instanceof Error ? e.message : String(e),
        }),
    }));

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
 * Answers the questions of one paragraph: reads each question vector and
 * (once) the paragraph's matrix and phrases, checks them, and scores all the
 * questions in one pass. Throws the first bad input in question order
 * ({@linkcode InputError} / {@linkcode FileError}).
 *
 * @example
 * ```ts
 * import { openDumpSync } from "../io/dump_reader.ts";
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
        throw new InputError({
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
      throw new InputError({
        file: qLabel,
        where: "",
        message: `shape ${shapeOf(qm)}; a question vector must be 1×d`,
      });
    }
    if (qm.cols !== ctx.matrix.cols) {
      throw new InputError({
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
      outcomes[todo[k]] = { qid: outcomes[todo[k]].qid, answer: ctx.phrases[best[k]] };
    }
  }
  return outcomes;
}

// ---------------------------------------------------------------------------
// Running paragraphs: in this thread, or in a pool of workers.

type Reply = { readonly ok: MergeOutcome[] } | { readonly err: MergeError | WorkError };

interface UnitRunner {
  run(unit: MergeUnit): Promise<Reply>;
  close(): void;
}

interface WireError {
  readonly tag: "InputError" | "FileError" | "Error";
  readonly file: string;
  readonly where: string;
  readonly message: string;
}

function toWire(e: unknown): WireError {
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

function fromWire(w: WireError): MergeError | WorkError {
  if (w.tag === "InputError") {
    return new InputError({ file: w.file, where: w.where, message: w.message });
  }
  if (w.tag === "FileError") return new FileError({ file: w.file, message: w.message });
  return new WorkError(`merge worker failed: ${w.message}`);
}

function attempt(
  c: DumpSourceSync,
  q: DumpSourceSync,
  unit: MergeUnit,
  options: ScoringOptions,
): Reply {
  try {
    return { ok: mergeUnit(c, q, unit, options) };
  } catch (e) {
    if (e instanceof InputError || e instanceof FileError) return { err: e };
    throw e;
  }
}

function inThread(c: DumpSourceSync, q: DumpSourceSync, options: ScoringOptions): UnitRunner {
  return { run: (unit) => Promise.resolve(attempt(c, q, unit, options)), close() {} };
}

const WORKER_NAME = "phraseval-merge-worker";

interface WorkerInit {
  readonly contextEmb: string;
  readonly questionEmb: string;
  readonly sparse: boolean;
  readonly simd: boolean;
}

type WorkerReply =
  | { readonly seq: number; readonly ok: MergeOutcome[] }
  | { readonly seq: number; readonly err: WireError }
  | { readonly seq: -1; readonly ready: true };

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
    const msg = ev.data as { init: WorkerInit } | { seq: number; unit: MergeUnit };
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
      return;
    }
    if (dumps === undefined || "tag" in dumps) {
      scope.postMessage({ seq: msg.seq, err: dumps ?? toWire(new Error("not initialised")) });
      return;
    }
    try {
      scope.postMessage({
        seq: msg.seq,
        ok: mergeUnit(dumps.c, dumps.q, msg.unit, { simd: dumps.simd }),
      });
    } catch (e) {
      scope.postMessage({ seq: msg.seq, err: toWire(e) });
    }
  };
}

/**
 * Paragraphs go to the least busy worker that is ready; until one is (they
 * take a moment to load), to `local` in this thread.
 */
function workerPool(n: number, init: WorkerInit, local: UnitRunner): UnitRunner {
  const waiting = new Map<number, (r: Reply) => void>();
  const load: number[] = [];
  const ready: boolean[] = [];
  // After a paragraph done here, let the event loop run (a worker may have said it
  // is ready): a message through a channel is a task without setTimeout's delay.
  const channel = new MessageChannel();
  const ticks: (() => void)[] = [];
  channel.port1.onmessage = () => ticks.shift()?.();
  const tick = () =>
    new Promise<void>((resolve) => {
      ticks.push(resolve);
      channel.port2.postMessage(null);
    });
  const owner = new Map<number, number>();
  let seq = 0;
  const workers = Array.from({ length: n }, (_, i) => {
    const w = new Worker(import.meta.url, { type: "module", name: WORKER_NAME });
    load.push(0);
    ready.push(false);
    w.onmessage = (ev: MessageEvent<WorkerReply>) => {
      const r = ev.data;
      if ("ready" in r) {
        ready[i] = true;
        return;
      }
      const resolve = waiting.get(r.seq);
      waiting.delete(r.seq);
      owner.delete(r.seq);
      load[i]--;
      resolve?.("ok" in r ? { ok: r.ok } : { err: fromWire(r.err) });
    };
    w.onerror = (ev: ErrorEvent) => {
      ev.preventDefault();
      const err = new WorkError(`merge worker failed: ${ev.message}`);
      for (const [s, resolve] of waiting) {
        if (owner.get(s) === i) {
          waiting.delete(s);
          resolve({ err });
        }
      }
    };
    w.postMessage({ init });
    return w;
  });
  return {
    run(unit) {
      let best = -1;
      for (let i = 0; i < n; i++) if (ready[i] && (best < 0 || load[i] < load[best])) best = i;
      if (best < 0) return local.run(unit).then(async (r) => (await tick(), r));
      const s = seq++;
      load[best]++;
      owner.set(s, best);
      return new Promise<Reply>((resolve) => {
        waiting.set(s, resolve);
        workers[best].postMessage({ seq: s, unit: { cid: unit.cid, slots: [], qids: unit.qids } });
      });
    },
    close() {
      channel.port1.close();
      channel.port2.close();
      for (const w of workers) w.terminate();
    },
  };
}

// ---------------------------------------------------------------------------
// The stage.

/** Options of {@linkcode merge}. */
export interface MergeOptions {
  /** The SQuAD dataset (`.json`, `.json.gz`, `-`). */
  readonly data: string;
  /** The context dump: a folder or a `.zip` of one. */
  readonly contextEmb: string;
  /** The question dump: a folder or a `.zip` of one. */
  readonly questionEmb: string;
  /** Where the predictions go (`-` for stdout). */
  readonly predictions: string;
  /** The dumps are scipy sparse (CSR/CSC); otherwise they must be dense. */
  readonly sparse?: boolean;
  /**
   * Worker threads that read and score paragraphs (default: the number of
   * CPUs, at most 4); 0 does everything in this thread. Small datasets (under
   * 16 paragraphs) always run in this thread.
   */
  readonly workers?: number;
  /** Paragraphs in flight: read or scored ahead of the output (default 4 per worker, at least 2). */
  readonly concurrency?: number;
  /**
   * Run the fast scoring pass on WebAssembly SIMD where available (default
   * true). Results are identical either way (see the module notes).
   */
  readonly simd?: boolean;
  /** Show a progress line on stderr (only on a terminal). */
  readonly progress?: boolean;
  /** Receives each `Missing <path>` line (default: printed on stderr). */
  readonly onMissing?: (line: string) => void;
}

/** What {@linkcode merge} did. */
export interface MergeResult {
  /** Distinct question ids in the dataset. */
  readonly questions: number;
  /** Questions answered (entries of pred.json). */
  readonly answered: number;
  /** `Missing` lines printed. */
  readonly missing: number;
  /** Paragraphs (distinct paragraph ids with questions). */
  readonly paragraphs: number;
  /** Worker threads used (0: this thread). */
  readonly workers: number;
}

/** Errors of {@linkcode merge}. */
export type MergeError = SquadReadError | DumpError | InputError | FileError;

/** Writes outcomes in dataset order as they become known. */
class OrderedOutput {
  #pending = new Map<number, MergeOutcome>();
  #next = 0;
  #first = true;
  answered = 0;
  missing = 0;
  readonly #writer: AtomicWriter;
  readonly #onMissing: (line: string) => void;

  constructor(writer: AtomicWriter, onMissing: (line: string) => void) {
    this.#writer = writer;
    this.#onMissing = onMissing;
  }

  async add(unit: MergeUnit, outcomes: readonly MergeOutcome[]): Promise<void> {
    for (let t = 0; t < outcomes.length; t++) this.#pending.set(unit.slots[t], outcomes[t]);
    let text = "";
    for (;;) {
      const o = this.#pending.get(this.#next);
      if (o === undefined) break;
      this.#pending.delete(this.#next++);
      if (o.missing !== undefined) {
        this.missing++;
        this.#onMissing(`Missing ${o.missing}`);
      } else if (o.answer !== undefined) {
        this.answered++;
        text += `${this.#first ? "{" : ", "}${pyStringLiteral(o.qid)}: ${
          pyStringLiteral(o.answer)
        }`;
        this.#first = false;
      }
    }
    if (text !== "") await this.#writer.write(text);
  }

  async finish(): Promise<void> {
    await this.#writer.write(this.#first ? "{}" : "}");
    await this.#writer.commit();
  }
}

const writeError = (file: string) => (e: unknown): FileError | InputError =>
  e instanceof InputError || e instanceof FileError
    ? e
    : new FileError({ file, message: e instanceof Error ? e.message : String(e) });

function defaultWorkers(): number {
  const n = typeof navigator !== "undefined" ? navigator.hardwareConcurrency ?? 1 : 1;
  return Math.max(1, Math.min(4, n));
}

/**
 * Merges context and question dumps into predictions (see the module notes).
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { merge } from "./merge.ts";
 * const r = await Effect.runPromise(merge({
 *   data: "data/dev-v1.1.json.gz",
 *   contextEmb: "out/context_emb",
 *   questionEmb: "out/question_emb.zip",
 *   predictions: "out/pred.json",
 * }));
 * console.log(r.answered, r.missing);
 * ```
 */
export const merge = (
  opts: MergeOptions,
): Effect.Effect<MergeResult, MergeError | WorkError> =>
  Effect.gen(function* () {
    const onMissing = opts.onMissing ?? ((line: string) => console.error(line));
    const dumpOpts = { sparse: opts.sparse === true };
    const simd = opts.simd !== false;
    const requested = Math.max(0, opts.workers ?? defaultWorkers());
    return yield* Effect.acquireUseRelease(
      Effect.gen(function* () {
        // The dumps are opened here even when workers read them: a bad archive fails
        // once, before any work. Workers start loading while the dataset is parsed.
        const c = yield* openDump(opts.contextEmb, {
          ...dumpOpts,
          reuseBuffers: true,
          ...(simd ? simdDumpOptions() : {}),
        });
        const q = yield* Effect.onError(openDump(opts.questionEmb, dumpOpts), () => c.close());
        const writer = yield* Effect.onError(
          Effect.tryPromise({
            try: () => openAtomicWriter(opts.predictions),
            catch: writeError(opts.predictions),
          }),
          () => Effect.all([c.close(), q.close()]),
        );
        const local = inThread(c.sync, q.sync, { simd });
        const pool = requested === 0 ? undefined : workerPool(requested, {
          contextEmb: opts.contextEmb,
          questionEmb: opts.questionEmb,
          sparse: dumpOpts.sparse,
          simd,
        }, local);
        return { c, q, writer, pool, local };
      }),
      ({ writer, pool, local }) =>
        Effect.gen(function* () {
          const plan = planMerge(yield* readQ2c(opts.data));
          // Small datasets are not worth the workers' start-up.
          const runner = pool === undefined || plan.units.length < 16 ? local : pool;
          const workers = runner === local ? 0 : requested;
          const concurrency = opts.concurrency ?? Math.max(2, 4 * workers);
          const out = new OrderedOutput(writer, onMissing);
          const bar = opts.progress ? progress("merge") : { update() {}, done() {} };
          let done = 0;
          yield* Stream.fromIterable(plan.units).pipe(
            Stream.mapEffect(
              (unit) => Effect.map(Effect.promise(() => runner.run(unit)), (r) => ({ unit, r })),
              { concurrency },
            ),
            Stream.runForEach(({ unit, r }) =>
              "err" in r ? Effect.fail(r.err) : Effect.tryPromise({
                try: async () => {
                  await out.add(unit, r.ok);
                  done += unit.qids.length;
                  bar.update(done, "questions");
                },
                catch: writeError(opts.predictions),
              })
            ),
          );
          yield* Effect.tryPromise({
            try: () => out.finish(),
            catch: writeError(opts.predictions),
          });
          bar.done();
          return {
            questions: plan.questions,
            answered: out.answered,
            missing: out.missing,
            paragraphs: plan.units.length,
            workers,
          } satisfies MergeResult;
        }),
      ({ c, q, writer, pool }) =>
        Effect.all([
          Effect.sync(() => pool?.close()),
          c.close(),
          q.close(),
          Effect.promise(() => writer.abort()),
        ]),
    );
  });

const SPEC: CommandSpec = {
  name: "merge",
  summary:
    "Answers each question with the phrase of its paragraph whose vector has the largest inner " +
    "product with the question vector (the first on a tie), as PIQA's merge.py, and writes the " +
    "predictions (Python json.dump format). Missing dump files print 'Missing <path>' on stderr " +
    "and leave the question unanswered. Scores are exact inner products (a fast pass, then the " +
    "rows near the best re-scored with a correctly rounded sum), so ties and near-ties are " +
    "decided the same way everywhere.",
  args: [
    { name: "data.json", description: "SQuAD dataset (.json, .json.gz, or - for stdin)" },
    { name: "context_emb", description: "context dump: a folder or a .zip of one" },
    { name: "question_emb", description: "question dump: a folder or a .zip of one" },
    { name: "pred.json", description: "predictions to write (- for stdout)" },
  ],
  flags: [
    {
      name: "sparse",
      type: "boolean",
      description: "the dumps are scipy sparse matrices (CSR or CSC)",
    },
    { name: "progress", type: "boolean", description: "show progress on stderr (on a terminal)" },
    {
      name: "concurrency",
      type: "int",
      metavar: "N",
      description: "paragraphs in flight (default: 4 per worker)",
    },
    {
      name: "no-simd",
      type: "boolean",
      description: "score in plain float64 loops instead of WebAssembly SIMD (same results)",
    },
    {
      name: "workers",
      type: "int",
      metavar: "N",
      description: "threads reading and scoring paragraphs (default: CPUs, at most 4; 0: none)",
    },
  ],
  epilog:
    "Example:\n  merge data/dev-v1.1.json.gz out/context_emb out/question_emb.zip out/pred.json",
};

if (isMergeWorker()) serveMergeWorker();
else if (import.meta.main) {
  await runMain<MergeError | WorkError | UsageError>(SPEC, Deno.args, (a) => {
    const concurrency = a.flags.concurrency as number | undefined;
    const workers = a.flags.workers as number | undefined;
    if (concurrency !== undefined && concurrency < 1) {
      return Effect.fail(new UsageError(`--concurrency must be at least 1, got ${concurrency}`));
    }
    if (workers !== undefined && workers < 0) {
      return Effect.fail(new UsageError(`--workers must be 0 or more, got ${workers}`));
    }
    return merge({
      data: a.positional["data.json"],
      contextEmb: a.positional["context_emb"],
      questionEmb: a.positional["question_emb"],
      predictions: a.positional["pred.json"],
      sparse: a.flags.sparse === true,
      concurrency,
      workers,
      progress: a.flags.progress === true,
      simd: a.flags["no-simd"] !== true,
    });
  });
}
