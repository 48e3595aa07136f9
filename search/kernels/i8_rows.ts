/**
 * The 8-bit screening copy of a dense matrix ({@linkcode I8Rows}: the
 * quantized rows and their bounds, per row and per block of
 * {@linkcode I8_BLOCK} rows; with a head, the basis and the rows'
 * projected heads, made on the head module's `project` kernel; the
 * searching threads' scratch slots; all in one shared WebAssembly memory),
 * and the types the screening shares ({@linkcode I8Metric},
 * {@linkcode I8Shared}, {@linkcode I8Head}, {@linkcode I8NonFinite}). What
 * the bounds are, and why they hold, is in `i8_scan.ts`'s module notes
 * ("Quantization", "Two stages").
 *
 * @module
 */
import { halfTable } from "../dense_f64.ts";
import { down32, gamma, REL, up, up32 } from "./_i8.ts";
import { kernelModule } from "./wasm_i8.ts";
import { headModule, I8_HEAD } from "./wasm_i8_head.ts";

const PAGE = 65536;
/** Row stride multiple in bytes (the kernel takes four 16-byte steps a turn). */
const STRIDE = 64;
/** Rows per screening block (a multiple of 4). */
export const I8_BLOCK = 512;
/** Largest d the 8-bit pass takes (its integer sums stay exact far beyond). */
export const I8_MAX_D = 16384;

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
  /** Columns of the projected head (0: one stage, see `i8_scan.ts`'s module notes). */
  readonly head: number;
}

/** Rows projected by one `project` call while the rows are quantized. */
const PREP_ROWS = 64;
/** Rows sampled for the head basis's second-moment matrix. */
export const BASIS_SAMPLE = 4096;
/** Subspace iterations of the head basis. */
export const BASIS_ITERATIONS = 24;
/** The smallest d given a head (below it one stage screens as fast). */
export const I8_HEAD_MIN_D = 128;

/** Byte offsets of everything in an {@linkcode I8Rows}'s memory, and its size. */
function layoutOf(n: number, d: number, threads: number, maxQ: number, head: number) {
  const stride = up(d, STRIDE), nPad = up(Math.max(n, 1), I8_BLOCK);
  const blocks = nPad / I8_BLOCK;
  let at = 0;
  const take = (bytes: number, align = 8) => {
    at = up(at, align);
    const o = at;
    at += bytes;
    return o;
  };
  const codes = take(nPad * stride, 64);
  const corr = take(nPad * 4), sp = take(nPad * 4);
  const f64s = take(nPad * 40 + blocks * 24);
  const h = head > 0
    ? {
      codes: take(nPad * head, 64),
      corr: take(nPad * 4, 16),
      sp: take(nPad * 4, 16),
      rowv: take(nPad * 8, 16),
      blocks: take(blocks * 4 * 8),
      basis: take(d * head * 4, 16),
      consts: take(4 * 8),
      prep: take(PREP_ROWS * (d + head) * 4, 16),
    }
    : undefined;
  const scratchBase = up(at, 64);
  const scratchSize = scratchBytes(stride, maxQ, head);
  return {
    stride,
    nPad,
    blocks,
    codes,
    corr,
    sp,
    f64s,
    h,
    scratchBase,
    scratchSize,
    total: scratchBase + threads * scratchSize,
  };
}

/**
 * The head part of an {@linkcode I8Rows} (see `i8_scan.ts`'s module notes,
 * "Two stages").
 */
export interface I8Head {
  /** Columns (`I8_HEAD`). */
  readonly h: number;
  /** Byte offset of the rows' head codes (int8, `h` a row). */
  readonly codesPtr: number;
  /** Byte offset of `64·Σaₕ` (i32 per padded row). */
  readonly corrPtr: number;
  /**
   * Byte offset of the head scales (f32 per padded row).
   */
  readonly spPtr: number;
  /**
   * Byte offset of the rows' gate factors, 32 bytes per 4-row group: τ
   * (≥ the tail's norm `‖(I − HHᵀ)p‖`, rounded up) and π (≤ `‖p‖²` for
   * `l2`, rounded down; 0 for `ip`), as two f32x4.
   */
  readonly rowvPtr: number;
  /** Per block: largest ρ (≥ the head's error `‖Hᵀp − s·aₕ‖`). */
  readonly blockRho: Float64Array;
  /** Per block: largest σ (≥ `‖s·aₕ‖`). */
  readonly blockSa: Float64Array;
  /** Per block: largest stored τ. */
  readonly blockTau: Float64Array;
  /** Per block: largest stored π. */
  readonly blockPi: Float64Array;
  /** The basis H, d × h float32, row `k` (column `k` of the rows) first. */
  readonly basis: Float32Array;
  /** A bound on `‖HᵀH − I‖₂`. */
  readonly eNorm: number;
  /** A bound on `‖H‖_F`. */
  readonly hF: number;
}

/**
 * The 8-bit screening copy of a dense matrix (see `i8_scan.ts`'s module
 * notes), all in one shared WebAssembly memory (so search workers use it without a
 * copy): the quantized rows; per row `64·Σa` (i32) and the scale (f32) for
 * the kernel, and in float64 the scale, `‖e‖`, `‖s·a‖`, and for `l2` the
 * row's `‖p‖²` and its error; per block of {@linkcode I8_BLOCK} rows the
 * largest `‖e‖` and `‖s·a‖` and the smallest `‖p‖²` less its error; with
 * a head ({@linkcode I8Head}) the rows' projected heads and their bounds;
 * then one scratch slot per searching thread. One byte a value plus 56
 * bytes a row, and 44 more a row with a head.
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
  /** The head stage's data, or `undefined` (one stage). */
  readonly head: I8Head | undefined;
  /** Where the scratch slots start. */
  readonly scratchBase: number;
  /** Bytes of one scratch slot. */
  readonly scratchSize: number;

  private constructor(readonly shared: I8Shared) {
    const { n, d, memory, maxQ, threads, head } = shared;
    const lay = layoutOf(n, d, threads, maxQ, head);
    this.stride = lay.stride;
    this.nPad = lay.nPad;
    this.corrPtr = lay.corr;
    this.spPtr = lay.sp;
    let at = lay.f64s;
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
    this.blockResid = f64(lay.blocks);
    this.blockNorm = f64(lay.blocks);
    this.blockPen = f64(lay.blocks);
    if (lay.h !== undefined) {
      const c = new Float64Array(memory.buffer, lay.h.consts, 4);
      const hb = new Float64Array(memory.buffer, lay.h.blocks, lay.blocks * 4);
      const per = lay.blocks;
      this.head = {
        h: head,
        codesPtr: lay.h.codes,
        corrPtr: lay.h.corr,
        spPtr: lay.h.sp,
        rowvPtr: lay.h.rowv,
        blockRho: hb.subarray(0, per),
        blockSa: hb.subarray(per, 2 * per),
        blockTau: hb.subarray(2 * per, 3 * per),
        blockPi: hb.subarray(3 * per, 4 * per),
        basis: new Float32Array(memory.buffer, lay.h.basis, d * head),
        get eNorm() {
          return c[0];
        },
        get hF() {
          return c[1];
        },
      };
    } else this.head = undefined;
    this.scratchBase = lay.scratchBase;
    this.scratchSize = lay.scratchSize;
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

  /**
   * Bytes of memory for `n` rows of `d` columns, `threads` slots of `maxQ`
   * questions, and a head of `head` columns (0: none).
   */
  static bytes(n: number, d: number, threads: number, maxQ: number, head = 0): number {
    return layoutOf(n, d, threads, maxQ, head).total;
  }

  /**
   * Quantizes `n` rows of `a` (f32 values or f16 bits, row-major, `d`
   * columns) for `metric`, with scratch for `threads` searching threads of
   * up to `maxQ` questions each, or `undefined` where the kernel cannot run
   * (no relaxed SIMD, d over {@linkcode I8_MAX_D}, over 4 GiB). Throws
   * {@linkcode I8NonFinite} on a NaN or infinite value. With `head` (the
   * default where d ≥ {@linkcode I8_HEAD_MIN_D}: {@linkcode I8_HEAD}; 0:
   * none) the rows' heads for the first stage are made too (see
   * `i8_scan.ts`'s module notes); the candidates are supersets of the exact top k either way.
   *
   * @example
   * ```ts
   * import { I8Rows } from "./i8_rows.ts";
   * import { I8Screen } from "./i8_scan.ts";
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
    head: number = d >= I8_HEAD_MIN_D ? I8_HEAD : 0,
  ): I8Rows | undefined {
    if (kernelModule() === null || d < 1 || d > I8_MAX_D) return undefined;
    if (head !== 0 && (head !== I8_HEAD || headModule() === null || n < 1)) head = 0;
    const total = I8Rows.bytes(n, d, threads, maxQ, head);
    if (total > 65536 * PAGE) return undefined;
    const pages = Math.ceil(total / PAGE);
    const memory = new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true });
    const r = new I8Rows({ memory, n, d, metric, threads, maxQ, head });
    if (r.head !== undefined) r.#basis(a);
    r.#quantize(a);
    return r;
  }

  /** The rows another thread quantized ({@linkcode I8Rows.shared}). */
  static attach(shared: I8Shared): I8Rows {
    return new I8Rows(shared);
  }

  /**
   * The head basis (see `i8_scan.ts`'s module notes): the leading `h` eigenvectors of
   * the second-moment matrix of a sample of rows, by subspace iteration
   * from a fixed start, orthonormalized in float64, stored as float32;
   * then bounds on `‖HᵀH − I‖₂` and `‖H‖_F` of the stored float32 values.
   */
  #basis(a: Float32Array | Uint16Array): void {
    const { n, d } = this, hd = this.head!, h = hd.h;
    const half = a instanceof Uint16Array ? halfTable() : undefined;
    const m = Math.min(n, BASIS_SAMPLE);
    const M = new Float64Array(d * d), x = new Float64Array(d);
    for (let k = 0; k < m; k++) {
      const o = Math.floor((k * n) / m) * d;
      for (let c = 0; c < d; c++) x[c] = half !== undefined ? half[a[o + c]] : a[o + c];
      for (let r = 0; r < d; r++) {
        const xr = x[r];
        if (xr === 0) continue;
        const ro = r * d;
        for (let c = r; c < d; c++) M[ro + c] += xr * x[c];
      }
    }
    for (let r = 0; r < d; r++) for (let c = 0; c < r; c++) M[r * d + c] = M[c * d + r];
    // Q: d × h, column-major in `q` (column c at c·d).
    const q = new Float64Array(d * h);
    let state = 0x9e3779b9;
    for (let i = 0; i < q.length; i++) {
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      q[i] = (state >>> 0) / 2 ** 32 - 0.5;
    }
    orthonormalize(q, d, h);
    const z = new Float64Array(d * h);
    for (let it = 0; it < BASIS_ITERATIONS; it++) {
      z.fill(0);
      for (let c = 0; c < h; c++) {
        const qo = c * d, zo = c * d;
        for (let r = 0; r < d; r++) {
          let sum = 0;
          const ro = r * d;
          for (let k = 0; k < d; k++) sum += M[ro + k] * q[qo + k];
          z[zo + r] = sum;
        }
      }
      q.set(z);
      orthonormalize(q, d, h);
    }
    const H = hd.basis;
    for (let k = 0; k < d; k++) for (let c = 0; c < h; c++) H[k * h + c] = q[c * d + k];
    // ‖E‖_F of E = HᵀH − I over the float32 values (each product exact in float64; a sum's
    // error at most d·2⁻⁵³ of its terms' sum, at most 1 here), and ‖H‖_F.
    let e2 = 0, f2 = 0;
    for (let i = 0; i < h; i++) {
      for (let j = 0; j < h; j++) {
        let sum = 0;
        for (let k = 0; k < d; k++) sum += H[k * h + i] * H[k * h + j];
        const e = Math.abs(sum - (i === j ? 1 : 0)) + d * 2 ** -52;
        e2 += e * e;
        if (i === j) f2 += sum;
      }
    }
    const c = new Float64Array(this.memory.buffer, this.#layout().h!.consts, 4);
    c[0] = Math.sqrt(e2) * (1 + REL);
    c[1] = Math.sqrt(f2 * (1 + 2 ** -30) + d * h * 2 ** -52) * (1 + REL);
  }

  #layout() {
    const { n, d, threads, maxQ, head } = this.shared;
    return layoutOf(n, d, threads, maxQ, head);
  }

  #quantize(a: Float32Array | Uint16Array): void {
    const { n, d, stride } = this;
    const buf = this.memory.buffer;
    const codes = new Int8Array(buf, 0, this.nPad * stride);
    const corr = new Int32Array(buf, this.corrPtr, this.nPad);
    const sp = new Float32Array(buf, this.spPtr, this.nPad);
    const half = a instanceof Uint16Array ? halfTable() : undefined;
    const l2 = this.metric === "l2";
    const hp = this.head !== undefined ? new HeadPrep(this, this.#layout().h!.prep) : undefined;
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
      hp?.add(i, row, p2);
    }
    hp?.flush();
  }
}

/**
 * The heads of the rows being quantized (`I8Rows.#quantize`): each row's
 * float32 values are kept in the prep area of the memory, and every
 * {@linkcode PREP_ROWS} rows the `project` kernel gives their heads, which
 * are quantized here (see `i8_scan.ts`'s module notes, "Two stages").
 */
class HeadPrep {
  readonly #rows: I8Rows;
  readonly #project: (...args: number[]) => void;
  readonly #x: Float32Array;
  readonly #y: Float32Array;
  readonly #xPtr: number;
  readonly #yPtr: number;
  readonly #p2 = new Float64Array(PREP_ROWS);
  #first = 0;
  #count = 0;

  constructor(rows: I8Rows, prep: number) {
    this.#rows = rows;
    const inst = new WebAssembly.Instance(headModule()!, { env: { memory: rows.memory } });
    this.#project = inst.exports.project as (...args: number[]) => void;
    const { d } = rows, h = rows.head!.h;
    this.#xPtr = prep;
    this.#yPtr = prep + PREP_ROWS * d * 4;
    this.#x = new Float32Array(rows.memory.buffer, this.#xPtr, PREP_ROWS * d);
    this.#y = new Float32Array(rows.memory.buffer, this.#yPtr, PREP_ROWS * h);
  }

  /** Row `i`'s float32 values and `‖row‖²` (float64), kept for the next projection. */
  add(i: number, row: Float32Array, p2: number): void {
    if (this.#count === 0) this.#first = i;
    this.#x.set(row, this.#count * this.#rows.d);
    this.#p2[this.#count] = p2;
    if (++this.#count === PREP_ROWS) this.flush();
  }

  /** Projects and quantizes the rows gathered. */
  flush(): void {
    const count = this.#count;
    if (count === 0) return;
    const R = this.#rows, hd = R.head!, h = hd.h, d = R.d, l2 = R.metric === "l2";
    this.#project(this.#xPtr, count, d, hd.basis.byteOffset, this.#yPtr);
    const buf = R.memory.buffer;
    const codes = new Int8Array(buf, hd.codesPtr, R.nPad * h);
    const corr = new Int32Array(buf, hd.corrPtr, R.nPad);
    const sp = new Float32Array(buf, hd.spPtr, R.nPad);
    const rowv = new Float32Array(buf, hd.rowvPtr, R.nPad * 2);
    const g32 = gamma(d, 2 ** -24), keep = 1 - hd.eNorm;
    for (let r = 0; r < count; r++) {
      const i = this.#first + r, y = this.#y.subarray(r * h, (r + 1) * h);
      let max = 0;
      for (let c = 0; c < h; c++) max = Math.max(max, Math.abs(y[c]));
      const s = max / 127, inv = max > 0 ? 127 / max : 0;
      let sum = 0, a2 = 0, e2 = 0;
      for (let c = 0; c < h; c++) {
        const q = Math.round(y[c] * inv);
        codes[i * h + c] = q;
        sum += q;
        a2 += q * q;
        const e = y[c] - s * q;
        e2 += e * e;
      }
      const p2 = this.#p2[r], p2up = p2 * (1 + (d + 2) * 2 ** -52);
      // The projection's float32 error, then ρ ≥ ‖Hᵀp − s·aₕ‖, σ ≥ ‖s·aₕ‖, τ ≥ ‖(I − HHᵀ)p‖.
      const eta = g32 * hd.hF * Math.sqrt(p2up) * (1 + REL);
      const rho = (Math.sqrt(e2) * (1 + REL) + eta) * (1 + REL);
      const sa = s * Math.sqrt(a2) * (1 + REL), saLo = s * Math.sqrt(a2) * (1 - REL);
      const lo = Math.max(0, (saLo - rho) * (1 - REL));
      const v = p2up - keep * lo * lo;
      const tau = Math.sqrt(Math.max(0, v) + (p2up + lo * lo) * REL) * (1 + REL);
      corr[i] = 64 * sum;
      sp[i] = s;
      const o = (i >> 2) * 8 + (i & 3), t32 = up32(tau);
      const pi = l2 ? down32(p2 - p2 * (d + 2) * 2 ** -52) : 0;
      rowv[o] = t32;
      rowv[o + 4] = pi;
      const b = (i / I8_BLOCK) | 0;
      if (rho > hd.blockRho[b]) hd.blockRho[b] = rho;
      if (sa > hd.blockSa[b]) hd.blockSa[b] = sa;
      if (t32 > hd.blockTau[b]) hd.blockTau[b] = t32;
      if (pi > hd.blockPi[b]) hd.blockPi[b] = pi;
    }
    this.#count = 0;
  }
}

/**
 * Orthonormalizes the `h` columns of length `d` of `q` (column-major, h ≤
 * d): modified Gram–Schmidt, twice; a column left (near) zero is replaced
 * by the first unit vector that is not (near) in the span of the earlier
 * ones.
 */
function orthonormalize(q: Float64Array, d: number, h: number): void {
  const against = (c: number) => {
    const co = c * d;
    for (let pass = 0; pass < 2; pass++) {
      for (let p = 0; p < c; p++) {
        const po = p * d;
        let dot = 0;
        for (let k = 0; k < d; k++) dot += q[po + k] * q[co + k];
        for (let k = 0; k < d; k++) q[co + k] -= dot * q[po + k];
      }
    }
    let n2 = 0;
    for (let k = 0; k < d; k++) n2 += q[co + k] * q[co + k];
    return Math.sqrt(n2);
  };
  for (let c = 0; c < h; c++) {
    const co = c * d;
    let before = 0;
    for (let k = 0; k < d; k++) before += q[co + k] * q[co + k];
    let norm = against(c);
    for (let t = 0; !(norm > 1e-6 * Math.sqrt(before)) || norm === 0; t++) {
      for (let k = 0; k < d; k++) q[co + k] = k === t ? 1 : 0;
      before = 1;
      norm = against(c);
    }
    for (let k = 0; k < d; k++) q[co + k] /= norm;
  }
}

/**
 * Scratch bytes of one thread, as `I8Screen` lays its slot out: questions,
 * thresholds, records, the head's questions (none without a head), the
 * questions' head values and thresholds, the stats word, which the
 * screen writes with or without a head (counted without a head too: it
 * used to fall in the next slot's questions, and a screening worker zeroed
 * 4 bytes of its neighbour's while that one screened), and the head
 * kernel's list of a 4-row group's questions (one i32 a question).
 */
function scratchBytes(stride: number, maxQ: number, head = 0): number {
  const nq = up(maxQ, 2);
  const base = up(nq * stride, 64) + up(nq * 4, 64) + up((I8_BLOCK / 4) * nq * 24, 64);
  return base + up(nq * head, 64) + up(nq * 16, 64) + 3 * up(nq * 4, 64);
}
