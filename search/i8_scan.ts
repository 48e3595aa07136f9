/**
 * A screening pass for exact dense open search on 8-bit integers
 * ({@linkcode I8Rows}): it finds, for each question, a small superset of
 * the rows that can be in its exact top k, so that only those are scored
 * exactly (`score.ts`: merge's `fsum` scores and tie rule). Results are
 * therefore identical to scoring every row exactly; the pass only decides
 * which rows need it.
 *
 * **Quantization.** Row `p` (its float32 values, or the float16 values
 * widened) is `p = s·a + e` with `s = max|pₖ| / 127`, `aₖ = round(pₖ / s)`
 * in [−127, 127] and the residual `e`; question `q = t·b + f` with
 * `t = max|qₖ| / 63`, `bₖ = round(qₖ / t)` in [−63, 63]. The integer dot
 * product `a·b` is exact, and the exact score obeys
 * `|q·p − s·t·(a·b)| ≤ ‖q‖·‖e‖ + ‖f‖·‖s·a‖` (as `q·p − q̃·p̃ = q·e + f·p̃`,
 * Cauchy–Schwarz twice). Every norm is computed in float64 and inflated by
 * a relative 2⁻⁴⁰, far above its rounding error, and the float64 product
 * `s·t·(a·b)` gets a relative 2⁻⁴⁰ too.
 *
 * **Screening.** Scanning rows in index order, a question keeps the k
 * largest lower bounds `approx − bound` seen so far; the smallest of them,
 * `L`, is at most the k-th best exact score of the rows seen, hence of all
 * rows. A row whose upper bound `approx + bound` is below `L` cannot reach
 * the top k (its exact score is below the final k-th best, ties included);
 * every other row is a candidate. Candidates are re-checked against the
 * final `L` and scored exactly in row order. The kernel tests four rows at
 * a time against a per-block threshold that uses the block's largest
 * `‖e‖` and `‖s·a‖` (a weaker test, so a superset), and this module then
 * applies the per-row test.
 *
 * **Kernel.** A hand-assembled WebAssembly module (relaxed SIMD's
 * `i32x4.relaxed_dot_i8x16_i7x16_add_s`: sixteen 8-bit products a step; the
 * question's bytes are stored as `b + 64`, in [1, 127], where the
 * instruction's result is the same on every implementation, and the row's
 * `64·Σa` is subtracted). Four rows by two questions a step, sums in
 * registers. Where relaxed SIMD is missing, {@linkcode I8Rows.create}
 * returns `undefined` and callers use the float32 kernels.
 *
 * @module
 */
import { halfTable } from "./dense_f64.ts";
import { fsum } from "./fsum.ts";
import {
  brIf,
  get,
  i32,
  ifThen,
  loop,
  name,
  section,
  set,
  simd,
  tee,
  uleb,
  vec,
} from "./wasm_encode.ts";

const PAGE = 65536;
/** Row stride multiple in bytes (the kernel takes four 16-byte steps a turn). */
const STRIDE = 64;
/** Rows per screening block (a multiple of 4). */
export const I8_BLOCK = 512;
/** Largest d the 8-bit pass takes (its integer sums stay exact far beyond). */
export const I8_MAX_D = 16384;
const REL = 2 ** -40;
const TINY = 2 ** -1000;

/**
 * The module bytes: imports `env.memory` (shared, up to 65536 pages),
 * exports `filter(a, nquads, d16, q, nq, corr, sp, u, out) → records`.
 * For each 4-row group `g` of the block at `a` (rows `d16` bytes apart,
 * int8) and each question `j` (bytes `b + 64` at `q + j·d16`, nq even):
 * `dots = a·(b+64) − corr[4g…4g+3]` (i32), and when any lane has
 * `f32(dots)·sp[4g+l] ≥ u[j]`, a 24-byte record `(g, j, dots)` at `out`.
 * Returns the number of records.
 *
 * @example
 * ```ts
 * import { i8ModuleBytes } from "./i8_scan.ts";
 * if (!WebAssembly.validate(i8ModuleBytes())) console.log("no relaxed SIMD here");
 * ```
 */
export function i8ModuleBytes(QG = 2, UN = 4): Uint8Array<ArrayBuffer> {
  const I32 = 0x7f, V128 = 0x7b;
  const add = [0x6a], mul = [0x6c], ltu = [0x49];
  const load = simd(0x00, 0, 0), store = simd(0x0b, 0, 0);
  const zero = simd(0x0c, ...new Array(16).fill(0));
  const shuffle = (lanes: number[]) =>
    simd(0x0d, ...lanes.flatMap((l) => [0, 1, 2, 3].map((b) => 4 * l + b)));
  const i32x4Add = simd(0xae), i32x4Sub = simd(0xb1);
  const cvt = simd(0xfa), f32x4Mul = simd(0xe6), f32x4Ge = simd(0x46), f32x4Splat = simd(0x13);
  const anyTrue = simd(0x53), dotAdd = simd(0x113);
  const f32Load = [0x2a, 2, 0], i32Store = (off: number) => [0x36, 2, ...uleb(off)];
  // params
  const P = { a: 0, nquads: 1, d16: 2, q: 3, nq: 4, corr: 5, sp: 6, u: 7, out: 8 };
  // i32 locals 9…
  const L = {
    g: 9,
    j: 10,
    k: 11,
    r1: 12,
    r2: 13,
    r3: 14,
    qp: 15,
    q1: 16,
    cnt: 17,
    rp: 18,
    q2: 19,
    q3: 20,
  };
  const QP = [L.qp, L.q1, L.q2, L.q3];
  // v128 locals 19…: acc[row][question] = 19 + 2·row + question, x0…x3, y0, y1, dots, corrv, spv, t
  const acc = (r: number, t: number) => 21 + QG * r + t;
  const X = 21 + 4 * QG, Y = (t: number) => X + 1 + t;
  const v0 = X + 1 + QG;
  const V = { dots: v0, corrv: v0 + 1, spv: v0 + 2, ab: v0 + 3, cd: v0 + 4 };
  const QS = Array.from({ length: QG }, (_, t) => t);
  const loadAt = (base: number, into: number, off = 0) => [
    ...get(base),
    ...get(L.k),
    ...add,
    ...simd(0x00, 0, ...uleb(off)),
    ...set(into),
  ];
  // [Σ A, Σ B, Σ C, Σ D] of four i32x4 locals.
  const reduce4 = (A: number, B: number, C: number, D: number) => [
    ...get(A),
    ...get(B),
    ...shuffle([0, 1, 4, 5]),
    ...get(A),
    ...get(B),
    ...shuffle([2, 3, 6, 7]),
    ...i32x4Add,
    ...set(V.ab),
    ...get(C),
    ...get(D),
    ...shuffle([0, 1, 4, 5]),
    ...get(C),
    ...get(D),
    ...shuffle([2, 3, 6, 7]),
    ...i32x4Add,
    ...set(V.cd),
    ...get(V.ab),
    ...get(V.cd),
    ...shuffle([0, 2, 4, 6]),
    ...get(V.ab),
    ...get(V.cd),
    ...shuffle([1, 3, 5, 7]),
    ...i32x4Add,
  ];
  const test = (t: number) => [
    ...reduce4(acc(0, t), acc(1, t), acc(2, t), acc(3, t)),
    ...get(V.corrv),
    ...i32x4Sub,
    ...set(V.dots),
    ...get(V.dots),
    ...cvt,
    ...get(V.spv),
    ...f32x4Mul,
    // u[j + t]
    ...get(P.u),
    ...get(L.j),
    ...i32(t),
    ...add,
    ...i32(4),
    ...mul,
    ...add,
    ...f32Load,
    ...f32x4Splat,
    ...f32x4Ge,
    ...anyTrue,
    ...ifThen([
      // rec = out + cnt·24
      ...get(P.out),
      ...get(L.cnt),
      ...i32(24),
      ...mul,
      ...add,
      ...tee(L.k),
      ...get(L.g),
      ...i32Store(0),
      ...get(L.k),
      ...get(L.j),
      ...i32(t),
      ...add,
      ...i32Store(4),
      ...get(L.k),
      ...i32(8),
      ...add,
      ...get(V.dots),
      ...store,
      ...get(L.cnt),
      ...i32(1),
      ...add,
      ...set(L.cnt),
    ]),
  ];
  const body = [
    ...vec([[12, I32], [4 * QG + 1 + QG + 5, V128]]),
    ...i32(0),
    ...set(L.cnt),
    ...i32(0),
    ...set(L.g),
    ...get(P.a),
    ...set(L.rp),
    ...loop([
      ...get(L.rp),
      ...get(P.d16),
      ...add,
      ...tee(L.r1),
      ...get(P.d16),
      ...add,
      ...tee(L.r2),
      ...get(P.d16),
      ...add,
      ...set(L.r3),
      ...get(P.corr),
      ...get(L.g),
      ...i32(16),
      ...mul,
      ...add,
      ...load,
      ...set(V.corrv),
      ...get(P.sp),
      ...get(L.g),
      ...i32(16),
      ...mul,
      ...add,
      ...load,
      ...set(V.spv),
      ...i32(0),
      ...set(L.j),
      ...get(P.q),
      ...set(L.qp),
      ...loop([
        ...QS.slice(1).flatMap((t) => [...get(QP[t - 1]), ...get(P.d16), ...add, ...set(QP[t])]),
        ...[0, 1, 2, 3].flatMap((r) => QS.flatMap((t) => [...zero, ...set(acc(r, t))])),
        ...i32(0),
        ...set(L.k),
        ...loop([
          ...Array.from({ length: UN }, (_, h) => [
            ...QS.flatMap((t) => loadAt(QP[t], Y(t), 16 * h)),
            ...[L.rp, L.r1, L.r2, L.r3].flatMap((base, r) => [
              ...loadAt(base, X, 16 * h),
              ...QS.flatMap((
                t,
              ) => [...get(X), ...get(Y(t)), ...get(acc(r, t)), ...dotAdd, ...set(acc(r, t))]),
            ]),
          ]).flat(),
          ...get(L.k),
          ...i32(16 * UN),
          ...add,
          ...tee(L.k),
          ...get(P.d16),
          ...ltu,
          ...brIf(0),
        ]),
        ...QS.flatMap((t) => test(t)),
        ...get(L.qp),
        ...i32(QG),
        ...get(P.d16),
        ...mul,
        ...add,
        ...set(L.qp),
        ...get(L.j),
        ...i32(QG),
        ...add,
        ...tee(L.j),
        ...get(P.nq),
        ...ltu,
        ...brIf(0),
      ]),
      ...get(L.r3),
      ...get(P.d16),
      ...add,
      ...set(L.rp),
      ...get(L.g),
      ...i32(1),
      ...add,
      ...tee(L.g),
      ...get(P.nquads),
      ...ltu,
      ...brIf(0),
    ]),
    ...get(L.cnt),
    0x0b,
  ];
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
    ...section(1, vec([[0x60, ...vec(Array(9).fill([I32])), ...vec([[I32]])]])),
    // import env.memory: shared, 0 … 65536 pages
    ...section(2, vec([[...name("env"), ...name("memory"), 0x02, 0x03, 0, ...uleb(65536)]])),
    ...section(3, vec([[0]])),
    ...section(7, vec([[...name("filter"), 0x00, 0]])),
    ...section(10, vec([[...uleb(body.length), ...body]])),
  ]);
}

let moduleCache: WebAssembly.Module | null | undefined;

/** The compiled kernel module, or `null` where relaxed SIMD is missing. */
function kernelModule(): WebAssembly.Module | null {
  if (moduleCache === undefined) {
    try {
      const bytes = i8ModuleBytes();
      moduleCache = WebAssembly.validate(bytes) ? new WebAssembly.Module(bytes) : null;
    } catch {
      moduleCache = null;
    }
  }
  return moduleCache;
}

/** Rounds up to a multiple of `m`. */
const up = (x: number, m: number) => Math.ceil(x / m) * m;

/** Whether this runtime runs the 8-bit screening kernel (relaxed SIMD). */
export function i8Available(): boolean {
  return kernelModule() !== null;
}

/** Thrown on a NaN or infinite value in the rows: the caller names the file. */
export class I8NonFinite extends Error {}

/** The metric of the scores screened: inner product, or `−‖q−p‖²`. */
export type I8Metric = "ip" | "l2";

/** What a worker needs to attach to an {@linkcode I8Rows} ({@linkcode I8Rows.attach}). */
export interface I8Shared {
  /** The shared memory. */
  readonly memory: WebAssembly.Memory;
  /** Rows. */
  readonly n: number;
  /** Columns. */
  readonly d: number;
  /** Metric. */
  readonly metric: I8Metric;
  /** Scratch slots. */
  readonly threads: number;
  /** Questions a call, at most. */
  readonly maxQ: number;
}

/**
 * The 8-bit screening copy of a dense matrix (see the module notes), all
 * in one shared WebAssembly memory (so search workers use it without a
 * copy): the quantized rows; per row `64·Σa` (i32) and the scale (f32) for
 * the kernel, and in float64 the scale, `‖e‖`, `‖s·a‖`, and for `l2` the
 * row's `‖p‖²` and its error; per block of {@linkcode I8_BLOCK} rows the
 * largest `‖e‖` and `‖s·a‖` and the smallest `‖p‖²` less its error; then
 * one scratch slot per searching thread. One byte a value plus 56 bytes a
 * row.
 */
export class I8Rows {
  /** Byte stride of a row (d rounded up to 64). */
  readonly stride: number;
  /** Rows rounded up to {@linkcode I8_BLOCK}. */
  readonly nPad: number;
  /** Per row: scale `s`. */
  readonly scale: Float64Array;
  /** Per row: `‖e‖`, inflated. */
  readonly resid: Float64Array;
  /** Per row: `‖s·a‖`, inflated. */
  readonly qnorm: Float64Array;
  /** Per row (`l2`): `‖p‖²` as a float64 sum; 0 for `ip`. */
  readonly pen: Float64Array;
  /** Per row (`l2`): a bound on the error of `pen`. */
  readonly penErr: Float64Array;
  /** Per block: largest `‖e‖`. */
  readonly blockResid: Float64Array;
  /** Per block: largest `‖s·a‖`. */
  readonly blockNorm: Float64Array;
  /** Per block: smallest `pen − penErr`. */
  readonly blockPen: Float64Array;
  /** Byte offset of `64·Σa` (i32 per padded row). */
  readonly corrPtr: number;
  /** Byte offset of the kernel's scales (f32 per padded row). */
  readonly spPtr: number;
  /** Where the scratch slots start. */
  readonly scratchBase: number;
  /** Bytes of one scratch slot. */
  readonly scratchSize: number;

  private constructor(readonly shared: I8Shared) {
    const { n, d, memory, maxQ } = shared;
    this.stride = up(d, STRIDE);
    this.nPad = up(Math.max(n, 1), I8_BLOCK);
    const blocks = this.nPad / I8_BLOCK;
    this.corrPtr = this.nPad * this.stride;
    this.spPtr = this.corrPtr + this.nPad * 4;
    let at = this.spPtr + this.nPad * 4;
    const f64 = (count: number) => {
      const v = new Float64Array(memory.buffer, at, count);
      at += count * 8;
      return v;
    };
    this.scale = f64(this.nPad);
    this.resid = f64(this.nPad);
    this.qnorm = f64(this.nPad);
    this.pen = f64(this.nPad);
    this.penErr = f64(this.nPad);
    this.blockResid = f64(blocks);
    this.blockNorm = f64(blocks);
    this.blockPen = f64(blocks);
    this.scratchBase = up(at, 64);
    this.scratchSize = scratchBytes(this.stride, maxQ);
  }

  /** The shared memory. */
  get memory(): WebAssembly.Memory {
    return this.shared.memory;
  }

  /** Rows. */
  get n(): number {
    return this.shared.n;
  }

  /** Columns. */
  get d(): number {
    return this.shared.d;
  }

  /** The metric. */
  get metric(): I8Metric {
    return this.shared.metric;
  }

  /** Bytes of memory for `n` rows of `d` columns, `threads` slots of `maxQ` questions. */
  static bytes(n: number, d: number, threads: number, maxQ: number): number {
    const stride = up(d, STRIDE), nPad = up(Math.max(n, 1), I8_BLOCK);
    const blocks = nPad / I8_BLOCK;
    const base = up(nPad * stride + nPad * 8 + nPad * 40 + blocks * 24, 64);
    return base + threads * scratchBytes(stride, maxQ);
  }

  /**
   * Quantizes `n` rows of `a` (f32 values or f16 bits, row-major, `d`
   * columns) for `metric`, with scratch for `threads` searching threads of
   * up to `maxQ` questions each, or `undefined` where the kernel cannot run
   * (no relaxed SIMD, d over {@linkcode I8_MAX_D}, over 4 GiB). Throws
   * {@linkcode I8NonFinite} on a NaN or infinite value.
   *
   * @example
   * ```ts
   * import { I8Rows, I8Screen } from "./i8_scan.ts";
   * const a = new Float32Array([1, 0, 0, 1, 0.5, 0.5, -1, 2]); // 4 rows × 2
   * const rows = I8Rows.create(a, 4, 2, "ip");
   * if (rows !== undefined) {
   *   const [c] = new I8Screen(rows).candidates([new Float32Array([0, 1])], 1);
   *   if (!c.includes(3)) throw new Error(`${c}`); // row 3 scores 2, the best
   * }
   * ```
   */
  static create(
    a: Float32Array | Uint16Array,
    n: number,
    d: number,
    metric: I8Metric,
    threads = 1,
    maxQ = 256,
  ): I8Rows | undefined {
    if (kernelModule() === null || d < 1 || d > I8_MAX_D) return undefined;
    const total = I8Rows.bytes(n, d, threads, maxQ);
    if (total > 65536 * PAGE) return undefined;
    const pages = Math.ceil(total / PAGE);
    const memory = new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true });
    const r = new I8Rows({ memory, n, d, metric, threads, maxQ });
    r.#quantize(a);
    return r;
  }

  /** The rows another thread quantized ({@linkcode I8Rows.shared}). */
  static attach(shared: I8Shared): I8Rows {
    return new I8Rows(shared);
  }

  #quantize(a: Float32Array | Uint16Array): void {
    const { n, d, stride } = this;
    const buf = this.memory.buffer;
    const codes = new Int8Array(buf, 0, this.nPad * stride);
    const corr = new Int32Array(buf, this.corrPtr, this.nPad);
    const sp = new Float32Array(buf, this.spPtr, this.nPad);
    const half = a instanceof Uint16Array ? halfTable() : undefined;
    const l2 = this.metric === "l2";
    const row = new Float32Array(d);
    this.blockPen.fill(l2 ? Infinity : 0);
    for (let i = 0; i < n; i++) {
      let max = 0, p2 = 0;
      const o = i * d;
      if (half !== undefined) { for (let k = 0; k < d; k++) row[k] = half[a[o + k]]; }
      else row.set(a.subarray(o, o + d));
      for (let k = 0; k < d; k++) {
        const v = row[k];
        const m = v < 0 ? -v : v;
        if (m > max) max = m;
        p2 += v * v;
      }
      if (!Number.isFinite(p2)) throw new I8NonFinite(`row ${i}`);
      const s = max / 127, inv = max > 0 ? 127 / max : 0;
      let sum = 0, e2 = 0, a2 = 0;
      const co = i * stride;
      for (let k = 0; k < d; k++) {
        const q = Math.round(row[k] * inv);
        codes[co + k] = q;
        sum += q;
        a2 += q * q;
        const r = row[k] - s * q;
        e2 += r * r;
      }
      corr[i] = 64 * sum;
      sp[i] = s;
      this.scale[i] = s;
      const e = Math.sqrt(e2) * (1 + REL), pn = s * Math.sqrt(a2) * (1 + REL);
      this.resid[i] = e;
      this.qnorm[i] = pn;
      const b = (i / I8_BLOCK) | 0;
      if (e > this.blockResid[b]) this.blockResid[b] = e;
      if (pn > this.blockNorm[b]) this.blockNorm[b] = pn;
      if (l2) {
        const err = p2 * (d + 2) * 2 ** -52;
        this.pen[i] = p2;
        this.penErr[i] = err;
        if (p2 - err < this.blockPen[b]) this.blockPen[b] = p2 - err;
      }
    }
  }
}

/** Scratch bytes of one thread: questions, thresholds, records. */
function scratchBytes(stride: number, maxQ: number): number {
  const nq = up(maxQ, 2);
  return up(nq * stride, 64) + up(nq * 4, 64) + up((I8_BLOCK / 4) * nq * 24, 64);
}

/** A min-heap of the k largest values offered (its root: the k-th largest). */
class LowerBounds {
  readonly #h: Float64Array;
  #n = 0;
  constructor(readonly k: number) {
    this.#h = new Float64Array(k);
  }
  /** The k-th largest value offered, or −∞ while fewer than k. */
  get floor(): number {
    return this.#n < this.k ? -Infinity : this.#h[0];
  }
  offer(v: number): void {
    const h = this.#h;
    if (this.#n < this.k) {
      let i = this.#n++;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (h[p] <= v) break;
        h[i] = h[p];
        i = p;
      }
      h[i] = v;
      return;
    }
    if (!(v > h[0])) return;
    let i = 0;
    const n = this.#n;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && h[c + 1] < h[c]) c++;
      if (h[c] >= v) break;
      h[i] = h[c];
      i = c;
    }
    h[i] = v;
  }
}

/**
 * Whether the 8-bit screening takes question `q`: finite and not all
 * zero (others are scored by the float kernels).
 */
export function i8Takes(q: Float32Array): boolean {
  let max = 0;
  for (let c = 0; c < q.length; c++) {
    const m = Math.abs(q[c]);
    if (!Number.isFinite(m)) return false;
    if (m > max) max = m;
  }
  return max > 0;
}

/**
 * One thread's screening kernel over an {@linkcode I8Rows} (its own
 * instance over the shared memory, its own scratch slot).
 */
export class I8Screen {
  readonly #filter: (...args: number[]) => number;
  readonly #qPtr: number;
  readonly #uPtr: number;
  readonly #outPtr: number;

  /** The kernel of scratch slot `slot` (0 … threads − 1 of {@linkcode I8Rows.create}). */
  constructor(readonly rows: I8Rows, slot = 0) {
    const inst = new WebAssembly.Instance(kernelModule()!, { env: { memory: rows.memory } });
    this.#filter = inst.exports.filter as (...args: number[]) => number;
    const nq = up(rows.shared.maxQ, 2);
    this.#qPtr = rows.scratchBase + slot * rows.scratchSize;
    this.#uPtr = this.#qPtr + up(nq * rows.stride, 64);
    this.#outPtr = this.#uPtr + up(nq * 4, 64);
  }

  /**
   * The candidate rows of each question (float32, length d, accepted by
   * {@linkcode i8Takes}; at most `maxQ` of them): increasing rows, a
   * superset of the rows that can be in the question's exact top `k` (see
   * the module notes).
   */
  candidates(qs: readonly Float32Array[], k: number): Int32Array[] {
    const R = this.rows, { d, stride, n } = R;
    const nq = qs.length, nq2 = up(nq, 2);
    if (nq > R.shared.maxQ) throw new Error(`at most ${R.shared.maxQ} questions a call`);
    const l2 = R.metric === "l2", alpha = l2 ? 2 : 1;
    const buf = R.memory.buffer;
    const qb = new Uint8Array(buf, this.#qPtr, nq2 * stride);
    qb.fill(64);
    const t = new Float64Array(nq), qn = new Float64Array(nq), fq = new Float64Array(nq);
    const qPen = new Float64Array(nq), qPenErr = new Float64Array(nq);
    for (let j = 0; j < nq; j++) {
      const q = qs[j];
      let max = 0, n2 = 0;
      for (let c = 0; c < d; c++) {
        const m = Math.abs(q[c]);
        if (m > max) max = m;
        n2 += q[c] * q[c];
      }
      const s = max / 63, inv = 63 / max;
      let e2 = 0;
      for (let c = 0; c < d; c++) {
        const b = Math.round(q[c] * inv);
        qb[j * stride + c] = b + 64;
        const r = q[c] - s * b;
        e2 += r * r;
      }
      t[j] = s;
      qn[j] = Math.sqrt(n2) * (1 + REL);
      fq[j] = Math.sqrt(e2) * (1 + REL);
      if (l2) {
        qPen[j] = n2;
        qPenErr[j] = n2 * (d + 2) * 2 ** -52;
      }
    }
    const u = new Float32Array(buf, this.#uPtr, nq2);
    u.fill(Infinity);
    const out = new Int32Array(buf, this.#outPtr, (I8_BLOCK / 4) * nq2 * 6);
    const lows = qs.map(() => new LowerBounds(k));
    const cand: number[][] = qs.map(() => []);
    const upper: number[][] = qs.map(() => []);
    const { scale, resid, qnorm, pen, penErr } = R;
    for (let b0 = 0, blk = 0; b0 < n; b0 += I8_BLOCK, blk++) {
      const rowsHere = Math.min(I8_BLOCK, n - b0);
      const eMax = R.blockResid[blk], pMax = R.blockNorm[blk], penLo = R.blockPen[blk];
      for (let j = 0; j < nq; j++) {
        const L = lows[j].floor;
        if (L === -Infinity) {
          u[j] = -Infinity;
          continue;
        }
        // A row can matter only if α·s·t·dot ≥ L + pen + qPen − α·bound − errors.
        const slack = alpha * (qn[j] * eMax + fq[j] * pMax) * (1 + REL) + qPenErr[j];
        const U = (L + penLo + qPen[j] - slack) / (alpha * t[j]);
        u[j] = Math.fround(U - Math.abs(U) * 2 ** -20 - 2 ** -100);
        if (u[j] > U) u[j] = -Infinity;
      }
      const recs = this.#filter(
        b0 * stride,
        Math.ceil(rowsHere / 4),
        stride,
        this.#qPtr,
        nq2,
        R.corrPtr + b0 * 4,
        R.spPtr + b0 * 4,
        this.#uPtr,
        this.#outPtr,
      );
      for (let r = 0; r < recs; r++) {
        const g = out[6 * r], j = out[6 * r + 1];
        if (j >= nq) continue;
        const tj = t[j], qj = qn[j], fj = fq[j], lb = lows[j], qp = qPen[j], qe = qPenErr[j];
        for (let l = 0; l < 4; l++) {
          const i = b0 + 4 * g + l;
          if (i >= n) break;
          const ip = scale[i] * tj * out[6 * r + 2 + l];
          const approx = alpha * ip - pen[i] - qp;
          const bound = alpha * (qj * resid[i] + fj * qnorm[i]) * (1 + REL) + penErr[i] + qe +
            (alpha * Math.abs(ip) + pen[i] + qp) * REL + TINY;
          const hi = approx + bound;
          if (!(hi >= lb.floor)) continue;
          cand[j].push(i);
          upper[j].push(hi);
          lb.offer(approx - bound);
        }
      }
    }
    return cand.map((c, j) => {
      const L = lows[j].floor, hi = upper[j];
      const keep: number[] = [];
      for (let x = 0; x < c.length; x++) if (hi[x] >= L) keep.push(c[x]);
      return Int32Array.from(keep);
    });
  }
}

let prods = new Float64Array(1024);

/**
 * The exact score of row `row` of `a` (f32 values or f16 bits, `d`
 * columns) against `q`, merge's: for `ip` the correctly rounded sum of the
 * float64 products (`fsum`); for `l2` that of the terms `2·qₖpₖ`, `−pₖ²`,
 * `−qₖ²`.
 *
 * @example
 * ```ts
 * import { exactScore } from "./i8_scan.ts";
 * const a = new Float32Array([1, 2, 3, 4]);
 * if (exactScore(a, 1, 2, new Float32Array([1, 1]), "ip") !== 7) throw new Error();
 * if (exactScore(a, 0, 2, new Float32Array([1, 1]), "l2") !== -1) throw new Error();
 * ```
 */
export function exactScore(
  a: Float32Array | Uint16Array,
  row: number,
  d: number,
  q: Float32Array,
  metric: I8Metric,
): number {
  const o = row * d, h = a instanceof Uint16Array ? halfTable() : undefined;
  if (metric === "ip") {
    if (prods.length < d) prods = new Float64Array(d);
    const p = prods;
    if (h !== undefined) { for (let c = 0; c < d; c++) p[c] = h[a[o + c]] * q[c]; }
    else for (let c = 0; c < d; c++) p[c] = a[o + c] * q[c];
    return fsum(p, d);
  }
  if (prods.length < 3 * d) prods = new Float64Array(3 * d);
  const p = prods;
  for (let c = 0; c < d; c++) {
    const x = h !== undefined ? h[a[o + c]] : a[o + c], y = q[c];
    p[3 * c] = 2 * x * y;
    p[3 * c + 1] = -(x * x);
    p[3 * c + 2] = -(y * y);
  }
  return fsum(p, 3 * d);
}
