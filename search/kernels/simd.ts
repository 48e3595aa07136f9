/**
 * The WebAssembly SIMD kernels of this thread and their memory
 * ({@linkcode simdKernels}), and the dump-reader options that read a
 * paragraph matrix straight into that memory ({@linkcode simdReadOptions}).
 *
 * @module
 */
import type { DumpOptions } from "../../io/dump/reader_sync.ts";
import { widenHalf } from "../dense_f64.ts";
import { simdModuleBytes } from "./wasm_simd.ts";
import { grownBuffer } from "./wasm_encode.ts";

/**
 * The kernels and their memory: the paragraph matrix (read straight into it
 * by the dump reader, see {@linkcode simdDumpOptions}, or copied in), the
 * questions, the scores and the row squares.
 */
export class SimdKernels {
  readonly #memory: WebAssembly.Memory;
  readonly #scores: (...args: number[]) => void;
  readonly #widen: (src: number, n4: number, dst: number) => void;
  readonly #screen: (...args: number[]) => void;
  readonly #scores16: (...args: number[]) => void;
  readonly #quant16: (...args: number[]) => void;
  readonly #near: (...args: number[]) => void;
  /** Where the last {@linkcode scores} put its scores, their row count and the end of its squares. */
  #last = { out: 0, n: 0, nq: 0, end: 0 };

  private constructor(instance: WebAssembly.Instance) {
    const e = instance.exports as Record<string, unknown>;
    this.#memory = e.memory as WebAssembly.Memory;
    this.#scores = e.scores as (...args: number[]) => void;
    this.#widen = e.widen as (src: number, n4: number, dst: number) => void;
    this.#screen = e.screen as (...args: number[]) => void;
    this.#scores16 = e.scores16 as (...args: number[]) => void;
    this.#quant16 = e.quant16 as (...args: number[]) => void;
    this.#near = e.near as (...args: number[]) => void;
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
    return grownBuffer(this.#memory, bytes);
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
   * used where it lies; any other is copied to the start of memory. Float16
   * (`a` holds the bits) is widened exactly in the module (the bits copied
   * into memory first when they are not there). With `squares: false` the
   * squares are not computed (the caller has them: they do not depend on
   * the questions) and `squares` is empty.
   */
  scores(
    a: Float32Array | Uint16Array,
    n: number,
    d: number,
    qs: readonly Float32Array[],
    options: { readonly squares?: boolean } = {},
  ): { scores: Float32Array; rows: Float32Array; squares: Float64Array } {
    const nq = qs.length, d4 = d * 4;
    const withSq = options.squares !== false;
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
    // float16 bits not in memory are copied after the squares, then widened.
    const bitsPtr = half && !inMemory ? (sqPtr + n * 8 + 63) & ~63 : from;
    const buf = this.#ensure(half && !inMemory ? bitsPtr + n * d * 2 : sqPtr + n * 8);
    if (half) {
      // (A growth of memory detached `a`, not its bytes.)
      if (!inMemory) new Uint16Array(buf, bitsPtr, n * d).set(a);
      if (bitsPtr % 2 === 0 && (n * d) % 4 === 0) this.#widen(bitsPtr, (n * d) / 4, aPtr);
      else {
        const bits = new Uint16Array(buf.slice(bitsPtr, bitsPtr + n * d * 2));
        widenHalf(bits, new Float32Array(buf, aPtr, n * d));
      }
    } else if (!inPlace) new Float32Array(buf, 0, n * d).set(a);
    const q = new Float32Array(buf, qPtr, nq * d);
    for (let j = 0; j < nq; j++) q.set(qs[j], j * d);
    this.#scores(aPtr, n, d4, qPtr, nq, outPtr, sqPtr, withSq ? 1 : 0);
    this.#last = { out: outPtr, n, nq, end: sqPtr + n * 8 };
    return {
      scores: new Float32Array(buf, outPtr, nq * n),
      rows: new Float32Array(buf, aPtr, n * d),
      squares: new Float64Array(buf, sqPtr, withSq ? n : 0),
    };
  }

  /**
   * Float32 scores of int16 rows against int16 questions, in memory as
   * {@linkcode scores} puts them (`scores[j * n + i]`, and the same last
   * call for {@linkcode screenNearest}): `f32(S) · (rowScale[i] ·
   * qScale[j])` in float32, `S` the exact integer `Σ_t a[i·w + t]·q[j·w + t]`
   * over the `w` columns of each row (`w` a multiple of 8; pad with zeros).
   * The caller keeps every `|S|` and each partial sum within int32 (`w·max|a|·max|q|
   * < 2³¹`). `a` and `q` are copied into memory.
   */
  scores16(
    a: Int16Array,
    n: number,
    w: number,
    q: Int16Array,
    nq: number,
    rowScale: Float32Array,
    qScale: Float32Array,
  ): Float32Array {
    if (w % 8 !== 0 || a.length < n * w || q.length < nq * w) {
      throw new RangeError(`scores16: ${n}×${w} rows, ${nq} questions (w a multiple of 8)`);
    }
    const qPtr = (n * w * 2 + 63) & ~63, rsPtr = (qPtr + nq * w * 2 + 63) & ~63;
    const csPtr = rsPtr + 4 * n, outPtr = (csPtr + 4 * nq + 63) & ~63, end = outPtr + 4 * nq * n;
    const buf = this.#ensure(end);
    new Int16Array(buf, 0, n * w).set(a.subarray(0, n * w));
    new Int16Array(buf, qPtr, nq * w).set(q.subarray(0, nq * w));
    new Float32Array(buf, rsPtr, n).set(rowScale.subarray(0, n));
    new Float32Array(buf, csPtr, nq).set(qScale.subarray(0, nq));
    this.#scores16(0, n, w * 2, qPtr, nq, outPtr, rsPtr, csPtr);
    this.#last = { out: outPtr, n, nq, end };
    return new Float32Array(buf, outPtr, nq * n);
  }

  /**
   * The `n` float32 rows of `x` (`d` values each, `d` a multiple of 4) in
   * int16 for {@linkcode scores16}, by the module's `quant16`: row `i`'s
   * scale `s = m / Q` (float32 division; `m` the largest `|x_it|`) in
   * `scale[i]`, its values `round(x_it · fround(1 / s))` (float32 product,
   * rounded to nearest, ties to even; 0 where `s` is 0; at most `Q` in
   * size, `Q < 2¹⁴`) at `out[i·w …]` with `w` = `d` rounded up to 8 (the
   * rest zeros), and the float32 sum of its squares in `squares[i]`. A row
   * with a NaN or an infinity has a sum of squares that is not finite, and
   * its scale and values are not specified (nor are the values where `s`
   * is not a normal float32): the caller refuses such rows. Writes over the
   * scores of the last {@linkcode scores} call.
   */
  quantize16(
    x: Float32Array,
    n: number,
    d: number,
    Q: number,
    out: Int16Array,
    scale: Float32Array,
    squares: Float32Array,
  ): void {
    const w = Math.ceil(d / 8) * 8;
    if (d % 4 !== 0 || x.length < n * d || out.length < n * w || !(Q >= 1 && Q < 2 ** 14)) {
      throw new RangeError(`quantize16: ${n}×${d} rows into ${out.length} values, Q ${Q}`);
    }
    const outPtr = (n * d * 4 + 63) & ~63, scPtr = outPtr + n * w * 2, sqPtr = scPtr + 4 * n;
    const buf = this.#ensure(sqPtr + 4 * n);
    this.#last = { out: 0, n: 0, nq: 0, end: 0 };
    new Float32Array(buf, 0, n * d).set(x.subarray(0, n * d));
    this.#quant16(0, n, d * 4, w * 2, Q, outPtr, scPtr, sqPtr);
    out.set(new Int16Array(buf, outPtr, n * w));
    scale.set(new Float32Array(buf, scPtr, n));
    squares.set(new Float32Array(buf, sqPtr, n));
  }

  /**
   * The float32 screen of the nearest centroid (`kmeans.ts`) over the
   * scores of the last {@linkcode scores} call, its questions the `k`
   * centroids: for rows `2p` and `2p + 1`, `p < pairs` (at most half its
   * rows), with `xLen` their lengths (`2·pairs` values), `tab` each
   * centroid's `‖c‖²`, `‖c‖` and `|‖c‖²|` (`3·k` values) and `cst` the
   * bound's `F`, `T` and `E`, in float64 as the TypeScript loop does:
   * `est = ‖c‖² − 2s`, `b = (F·xLen·‖c‖ + T) + E·(xLen·‖c‖ + |‖c‖²|)`,
   * the smallest `est + b` (`top`), the two smallest `est − b` (`lo1`,
   * `lo2`) and the first centroid of the smallest (`j1`). Returns views
   * of memory (valid until the next call): `screened`, where row
   * `r = 2p + l` has `top` at `8p + l`, `lo1` at `8p + 2 + l`, `lo2` at
   * `8p + 4 + l`, `j1` at `8p + 6 + l`, and the two values at `8·pairs`
   * are 0 when every score read was finite (else NaN); and `scores`, the
   * last call's scores again: this call may grow memory, which detaches
   * the views {@linkcode scores} gave. Refused (`RangeError`) for more
   * pairs than those rows hold, and after a {@linkcode widen}, which
   * writes over them.
   */
  screenNearest(
    pairs: number,
    xLen: Float64Array,
    tab: Float64Array,
    cst: readonly [number, number, number],
  ): { screened: Float64Array; scores: Float32Array } {
    const { out, n, nq, end } = this.#last;
    if (2 * pairs > n) throw new RangeError(`screenNearest: ${pairs} pairs of ${n} rows`);
    const k = nq;
    const tabPtr = (end + 63) & ~63, xlPtr = tabPtr + 48 * k, cstPtr = xlPtr + 16 * pairs;
    const outPtr = cstPtr + 48;
    const buf = this.#ensure(outPtr + 64 * pairs + 16);
    const t = new Float64Array(buf, tabPtr, 6 * k);
    for (let j = 0; j < k; j++) {
      for (let v = 0; v < 3; v++) t[6 * j + 2 * v] = t[6 * j + 2 * v + 1] = tab[3 * j + v];
    }
    new Float64Array(buf, xlPtr, 2 * pairs).set(xLen.subarray(0, 2 * pairs));
    const c = new Float64Array(buf, cstPtr, 6);
    for (let v = 0; v < 3; v++) c[2 * v] = c[2 * v + 1] = cst[v];
    this.#screen(out, pairs, 4 * n, k, tabPtr, xlPtr, outPtr, cstPtr);
    return {
      screened: new Float64Array(buf, outPtr, 8 * pairs + 2),
      scores: new Float32Array(buf, out, nq * n),
    };
  }

  /**
   * Each row's centroids that the last call's scores cannot rule out as its
   * nearest (the module's `near`): for row `i` (`i < 2·pairs`), score
   * `s_ij`, `est = tab[3j] − 2·s_ij` and `b = xl[i]·tab[3j+1] + tab[3j+2]`
   * in float64, each centroid `j` whose `est − b` is at most the smallest
   * `est + b` of the row, in increasing order. Returns a view of memory
   * (valid until the next call): `ok` (every score read was finite), row
   * `i`'s count at `lists[i]` (more than `cap` when some were left out), its
   * first `cap` centroids from `lists[2·pairs + i·cap]`.
   */
  screenList(
    pairs: number,
    xl: Float64Array,
    tab: Float64Array,
    cap: number,
  ): { ok: boolean; lists: Int32Array } {
    const { out, n, nq, end } = this.#last;
    if (2 * pairs > n || !(cap >= 1)) {
      throw new RangeError(`screenList: ${pairs} pairs of ${n} rows`);
    }
    const k = nq;
    const tabPtr = (end + 63) & ~63,
      xlPtr = tabPtr + 48 * k,
      loPtr = (xlPtr + 16 * pairs + 63) & ~63;
    const outPtr = loPtr + 16 * k, len = 2 * pairs * (1 + cap);
    const buf = this.#ensure(outPtr + 16 + 4 * len);
    const t = new Float64Array(buf, tabPtr, 6 * k);
    for (let j = 0; j < k; j++) {
      for (let v = 0; v < 3; v++) t[6 * j + 2 * v] = t[6 * j + 2 * v + 1] = tab[3 * j + v];
    }
    new Float64Array(buf, xlPtr, 2 * pairs).set(xl.subarray(0, 2 * pairs));
    this.#near(out, pairs, 4 * n, k, tabPtr, xlPtr, loPtr, outPtr, cap);
    const fin = new Float64Array(buf, outPtr, 2);
    return { ok: fin[0] === 0 && fin[1] === 0, lists: new Int32Array(buf, outPtr + 16, len) };
  }

  /**
   * The float16 values (bits) `bits` as float32, widened by the module
   * (exactly as `halfTable` does): a new array, or the first
   * `bits.length` values of `into` (at least that long) written.
   */
  widen(bits: Uint16Array, into?: Float32Array): Float32Array {
    const n = bits.length, n4 = Math.ceil(n / 4);
    if (into !== undefined && into.length < n) throw new RangeError("widen: `into` is too short");
    const buf = this.#ensure(n4 * 8 + n4 * 16 + 64);
    // It writes over the start of memory: no scores left for screenNearest.
    this.#last = { out: 0, n: 0, nq: 0, end: 0 };
    const src = new Uint16Array(buf, 0, n4 * 4);
    src.fill(0);
    src.set(bits);
    const dst = (n4 * 8 + 63) & ~63;
    this.#widen(0, n4, dst);
    const wide = new Float32Array(buf, dst, n);
    if (into === undefined) return wide.slice();
    into.set(wide);
    return into.subarray(0, n);
  }
}

let kernels: SimdKernels | null | undefined;

/** This thread's SIMD kernels (created on first use), or `undefined` without SIMD. */
export function simdKernels(): SimdKernels | undefined {
  if (kernels === undefined) kernels = SimdKernels.create() ?? null;
  return kernels ?? undefined;
}

/**
 * Whether this runtime runs the WebAssembly SIMD scoring kernels (otherwise
 * scoring uses the float64 loops; results are the same).
 *
 * @example
 * ```ts
 * import { simdAvailable } from "./simd.ts";
 * if (typeof simdAvailable() !== "boolean") throw new Error("no answer"); // true on Deno 2
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
