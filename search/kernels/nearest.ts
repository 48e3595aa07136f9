/**
 * The drivers of the nearest-centroid module (`wasm_nearest.ts`, which
 * says what it computes): {@linkcode NearestKernel} runs it over rows in
 * chunks (its memory does not grow with the rows), {@linkcode PairDistances}
 * gives one row's distances to a few listed centroids (Elkan's k-means).
 * {@linkcode nearestKernel} gives `undefined` where WebAssembly SIMD is
 * missing, and the callers then run `nearest`, with the same answers.
 *
 * @module
 */
import { nearestModule } from "./wasm_nearest.ts";
import { grownBuffer } from "./wasm_encode.ts";

const PAGE = 65536;

/** Rows the kernel takes per call (bounds its memory). */
export const NEAREST_CHUNK = 4096;

/**
 * Rows' centroids for {@linkcode NearestKernel.nearestSub}: row `i` is
 * first taken minus centroid `lists[i]` (float32, row-major), in the module.
 */
export interface Centre {
  /** Each row's centroid. */
  readonly lists: Uint32Array;
  /** The centroids (float32, row-major, the rows' `d` columns). */
  readonly centroids: Float32Array;
}

/**
 * How many calls of the float32 screens of `one`, `two` and `four`
 * ({@linkcode NearestKernel.nearestSub}) this thread made, and how many it
 * took again in float64 (a row left undecided): for tests and profiles.
 */
export const subScreen = { calls: 0, again: 0 };

/** The smallest float32 number at or above `v` ≥ 0 (or above it by at most 2⁻²¹ of it; ∞ beyond float32). */
const above32 = (v: number) => Math.fround(v * (1 + 2 ** -22));

/** Rows `one`, `two`, `four` take through every sub-quantizer before the next rows (see `nearestSub`). */
const PAIRS_ROWS = 64;

/** The largest `d` the `small` function is used for (sub-quantizers' dimensions). */
export const SMALL_D = 8;

/** Rounds up to a multiple of 16. */
const up16 = (n: number) => Math.ceil(n / 16) * 16;

/**
 * The nearest-centroid kernel of one thread (what it computes: `wasm_nearest.ts`). Its
 * methods give `nearest`'s answers, bit for bit.
 */
export class NearestKernel {
  readonly #memory: WebAssembly.Memory;
  readonly #rows: (...args: number[]) => void;
  readonly #small: (...args: number[]) => void;
  /** `one`, `two` and `four` by their d (see the module notes). */
  readonly #pairs: Map<number, (...args: number[]) => void>;
  /** Their float32 screens `one32`, `two32` and `four32`: how many lanes they left undecided. */
  readonly #pairs32: Map<number, (...args: number[]) => number>;
  readonly #resid: (...args: number[]) => void;

  private constructor(instance: WebAssembly.Instance) {
    const e = instance.exports as Record<string, unknown>;
    this.#memory = e.memory as WebAssembly.Memory;
    this.#rows = e.rows as (...args: number[]) => void;
    this.#small = e.small as (...args: number[]) => void;
    this.#pairs = new Map(
      ([[1, "one"], [2, "two"], [4, "four"]] as const).map((
        [dd, f],
      ) => [dd, e[f] as (...args: number[]) => void]),
    );
    this.#pairs32 = new Map(
      ([[1, "one32"], [2, "two32"], [4, "four32"]] as const).map((
        [dd, f],
      ) => [dd, e[f] as (...args: number[]) => number]),
    );
    this.#resid = e.resid as (...args: number[]) => void;
  }

  /** A kernel, or `undefined` where it cannot run. */
  static create(): NearestKernel | undefined {
    const m = nearestModule();
    if (m === undefined) return undefined;
    try {
      return new NearestKernel(new WebAssembly.Instance(m, {}));
    } catch {
      return undefined;
    }
  }

  #ensure(bytes: number): ArrayBuffer {
    return grownBuffer(this.#memory, bytes);
  }

  /**
   * `out[i]` = the nearest of the `k` centroids `c` (row-major, `d`
   * columns; `cNorm` their squared norms) to row `i` of the `n` rows `x`
   * (row-major), for every `i < n`: `nearest(x, i·d, c, cNorm, k, d)`.
   */
  nearestRows(
    x: Float32Array,
    n: number,
    d: number,
    c: Float32Array,
    cNorm: Float64Array,
    k: number,
    out: Uint32Array,
  ): void {
    const chunk = Math.min(n, NEAREST_CHUNK);
    const cp = 0, np = up16(cp + 8 * k * d), xp = up16(np + 8 * k), op = up16(xp + 4 * chunk * d);
    const buf = this.#ensure(op + 4 * chunk);
    new Float64Array(buf, cp, k * d).set(c.subarray(0, k * d));
    new Float64Array(buf, np, k).set(cNorm.subarray(0, k));
    const xv = new Float32Array(buf, xp, chunk * d), ov = new Uint32Array(buf, op, chunk);
    for (let a = 0; a < n; a += chunk) {
      const b = Math.min(n, a + chunk);
      xv.set(x.subarray(a * d, b * d));
      this.#rows(xp, b - a, d, cp, np, k, op);
      out.set(b - a === chunk ? ov : ov.subarray(0, b - a), a);
    }
  }

  /**
   * With `centre`: its centroids copied after the module's numbers, and a
   * function that turns rows `[a, b)` (at `xp`) into their residuals in
   * place (`resid`); else one that does nothing.
   */
  #centred(
    buf: ArrayBuffer,
    tl: { cen: number; lp: number; end: number },
    centre: Centre | undefined,
    xp: number,
    D: number,
  ): (a: number, b: number) => void {
    if (centre === undefined) return () => {};
    new Float32Array(buf, tl.cen, centre.centroids.length).set(centre.centroids);
    const lv = new Uint32Array(buf, tl.lp, (tl.end - tl.lp) / 4);
    return (a, b) => {
      lv.set(centre.lists.subarray(a, b));
      this.#resid(xp, b - a, D, tl.cen, tl.lp);
    };
  }

  /**
   * The codes of `n` rows of `M` sub-quantizers (`k` ≤ 256 entries of
   * `dsub` dimensions each): `codes[i·M + s]` = the nearest entry of
   * codebook `s` (`books`, M × k × dsub; `norms` their squared norms, M × k)
   * to columns `[s·dsub, (s+1)·dsub)` of row `i` of `x` (row-major, `M·dsub`
   * columns): `nearest(x, i·M·dsub + s·dsub, books_s, norms_s, k, dsub)`.
   *
   * For `dsub` 1, 2 and 4 a float32 screen runs first (`one32`, `two32`,
   * `four32`): each distance `‖c‖² − 2·x·c` in float32 is within
   * `(dsub + 2)·2⁻²⁴·(N + 2·Σ_t |x_t|·C_t)` of the real one (`N` the
   * largest `|‖c‖²|` of the codebook, `C_t` its largest `|c_t|`; `‖c‖²`
   * rounded once, each product and sum once; `2⁻¹²⁰` more for what
   * underflows), and `nearest`'s float64 distance far closer; so where the
   * second smallest float32 distance is above the smallest by more than
   * twice `B = 2⁻²⁰·(N + 2·Σ_t |x_t|·C_t) + 2⁻¹²⁰` (and `B < 2⁶⁰`: no
   * overflow), the smallest's entry is `nearest`'s answer. A call of the
   * screen (64 rows of one sub-quantizer) with a row it leaves undecided
   * (a near tie, a value that is not finite, one too large) is taken again
   * by the float64 kernel; the codes are `nearest`'s either way.
   */
  nearestSub(
    x: Float32Array,
    n: number,
    M: number,
    dsub: number,
    books: Float32Array,
    norms: Float64Array,
    k: number,
    codes: Uint8Array,
    centre?: Centre,
  ): void {
    if (k > 256) throw new Error(`nearestSub: ${k} entries do not fit a byte`);
    const D = M * dsub, chunk = Math.min(n, NEAREST_CHUNK);
    if (centre !== undefined && D % 4 !== 0) {
      throw new Error("nearestSub: residuals need d % 4 = 0");
    }
    // After the module's own numbers: the centroids and a chunk's lists (with `centre`).
    const tail = (end: number) => {
      const cen = up16(end), lp = up16(cen + 4 * (centre?.centroids.length ?? 0));
      return { cen, lp, end: lp + 4 * chunk };
    };
    const pairs = this.#pairs.get(dsub), pairs32 = this.#pairs32.get(dsub)!;
    if (pairs !== undefined) {
      // `one`, `two`, `four`: each entry's values and norm as splatted pairs; their float32
      // screens' tables after them: a sub-quantizer's bound constants, then each entry's
      // −2·c_t and fround(‖c‖²), splatted (see the notes of the float32 screen below).
      const e = 16 * (dsub + 1), tp = 0, fp = up16(e * M * k), fe = e / 4;
      const xp = up16(fp + 4 * fe * M * (k + 1)), op = up16(xp + 4 * chunk * D);
      const tl = tail(op + chunk * M);
      const buf = this.#ensure(tl.end);
      const t = new Float64Array(buf, tp, 2 * (dsub + 1) * M * k);
      for (let q = 0, at = 0; q < M * k; q++) {
        for (let u = 0; u < dsub; u++, at += 2) t[at] = t[at + 1] = books[q * dsub + u];
        t[at] = t[at + 1] = norms[q];
        at += 2;
      }
      const f = new Float32Array(buf, fp, fe * M * (k + 1));
      const splat = (at: number, v: number) => f.fill(v, at, at + 4);
      for (let sq = 0; sq < M; sq++) {
        const h = fe * (k + 1) * sq;
        let nMax = 0;
        for (let j = 0; j < k; j++) nMax = Math.max(nMax, Math.abs(norms[sq * k + j]));
        splat(h, above32(nMax * 2 ** -20));
        for (let u = 0; u < dsub; u++) {
          let cMax = 0;
          for (let j = 0; j < k; j++) {
            cMax = Math.max(cMax, Math.abs(books[(sq * k + j) * dsub + u]));
          }
          splat(h + 4 * (u + 1), above32(cMax * 2 ** -19));
        }
        for (let j = 0, at = h + fe; j < k; j++, at += fe) {
          for (let u = 0; u < dsub; u++) splat(at + 4 * u, -2 * books[(sq * k + j) * dsub + u]);
          splat(at + 4 * dsub, norms[sq * k + j]);
        }
      }
      const xv = new Float32Array(buf, xp, chunk * D), ov = new Uint8Array(buf, op, chunk * M);
      const toResiduals = this.#centred(buf, tl, centre, xp, D);
      for (let a = 0; a < n; a += chunk) {
        const b = Math.min(n, a + chunk);
        xv.set(x.subarray(a * D, b * D));
        toResiduals(a, b);
        // PAIRS_ROWS rows at a time through every sub-quantizer: their values stay in
        // the cache (a sub-quantizer's columns of a whole chunk are a cache line a row).
        for (let r = 0; r < b - a; r += PAIRS_ROWS) {
          const m = Math.min(PAIRS_ROWS, b - a - r), xr = xp + 4 * r * D, or = op + r * M;
          for (let s = 0; s < M; s++) {
            // The float32 screen; where it leaves a row undecided, the call again in float64.
            const xs = xr + 4 * s * dsub;
            subScreen.calls++;
            if (pairs32(xs, m, D, fp + 4 * fe * (k + 1) * s, k, or + s, M) > 0) {
              subScreen.again++;
              pairs(xs, m, D, tp + e * s * k, k, or + s, M);
            }
          }
        }
        codes.set(b - a === chunk ? ov : ov.subarray(0, (b - a) * M), a * M);
      }
      return;
    }
    const sp = 0, cp = up16(16 * dsub), np = up16(cp + 8 * M * k * dsub);
    const xp = up16(np + 8 * M * k), op = up16(xp + 4 * chunk * D);
    const tl = tail(op + chunk * M);
    const buf = this.#ensure(tl.end);
    new Float64Array(buf, cp, M * k * dsub).set(books.subarray(0, M * k * dsub));
    new Float64Array(buf, np, M * k).set(norms.subarray(0, M * k));
    const xv = new Float32Array(buf, xp, chunk * D), ov = new Uint8Array(buf, op, chunk * M);
    const toResiduals = this.#centred(buf, tl, centre, xp, D);
    for (let a = 0; a < n; a += chunk) {
      const b = Math.min(n, a + chunk);
      xv.set(x.subarray(a * D, b * D));
      toResiduals(a, b);
      for (let s = 0; s < M; s++) {
        this.#small(
          xp + 4 * s * dsub,
          b - a,
          D,
          dsub,
          cp + 8 * s * k * dsub,
          np + 8 * s * k,
          k,
          op + s,
          M,
          sp,
        );
      }
      codes.set(b - a === chunk ? ov : ov.subarray(0, (b - a) * M), a * M);
    }
  }
}

/**
 * `nearest`'s float64 distances of one row to a few listed centroids
 * (Elkan's k-means, `kmeans.ts` `boundedAssign`): the rows copied once into
 * an instance of the module of their own, the centroids once an iteration,
 * then four centroids a pass (the `list` function: `rows`'s sums, lane 0
 * the even dimensions, lane 1 the odd ones).
 */
export class PairDistances {
  readonly #list: (...args: number[]) => void;
  readonly #flist: (...args: number[]) => void;
  readonly #d: number;
  readonly #k: number;
  readonly #cp = 0;
  readonly #c32p: number;
  readonly #jp: number;
  readonly #outp: number;
  readonly #xp: number;
  readonly #c: Float64Array;
  readonly #c32: Float32Array;
  readonly #dots: Float32Array;
  readonly #norms: Float64Array;
  readonly #sums: Float64Array;
  readonly #n: number;
  readonly #rows: Float32Array;
  /** Where to write the listed centroids' numbers before {@linkcode PairDistances.run}. */
  readonly list: Int32Array;

  private constructor(
    instance: WebAssembly.Instance,
    x: Float32Array,
    n: number,
    d: number,
    k: number,
  ) {
    const e = instance.exports as Record<string, unknown>;
    const memory = e.memory as WebAssembly.Memory;
    this.#list = e.list as (...args: number[]) => void;
    this.#flist = e.flist as (...args: number[]) => void;
    this.#d = d;
    this.#k = k;
    const slots = k + 4;
    this.#c32p = up16(8 * k * d);
    this.#jp = up16(this.#c32p + 4 * k * d);
    this.#outp = up16(this.#jp + 4 * slots);
    this.#xp = up16(this.#outp + 16 * slots);
    const bytes = this.#xp + 4 * n * d, have = memory.buffer.byteLength;
    if (bytes > have) memory.grow(Math.ceil((bytes - have) / PAGE));
    const buf = memory.buffer as ArrayBuffer;
    this.#n = n;
    this.#rows = new Float32Array(buf, this.#xp, n * d);
    this.#rows.set(x.subarray(0, n * d));
    this.#c = new Float64Array(buf, this.#cp, k * d);
    this.#c32 = new Float32Array(buf, this.#c32p, k * d);
    this.list = new Int32Array(buf, this.#jp, slots);
    this.#sums = new Float64Array(buf, this.#outp, 2 * slots);
    this.#dots = new Float32Array(buf, this.#outp, slots);
    this.#norms = new Float64Array(k);
  }

  /** The kernel for the `n` rows `x` (`d` even) and `k` centroids, or `undefined` where it cannot run. */
  static create(x: Float32Array, n: number, d: number, k: number): PairDistances | undefined {
    const m = nearestModule();
    if (m === undefined || d % 2 !== 0) return undefined;
    try {
      return new PairDistances(new WebAssembly.Instance(m, {}), x, n, d, k);
    } catch {
      return undefined;
    }
  }

  /**
   * Other rows in place of the first `n` (at most the rows it was made
   * for): `x`'s `n` rows of `d`, row `i` of {@linkcode dots} and
   * {@linkcode run} after this call.
   */
  rows(x: Float32Array, n: number): void {
    if (n > this.#n || x.length < n * this.#d) {
      throw new RangeError(`rows: ${n} rows for a kernel of ${this.#n}`);
    }
    this.#rows.set(x.subarray(0, n * this.#d));
  }

  /** This iteration's centroids (`k` × `d`) and their squared norms. */
  centroids(c: Float32Array, cNorm: Float64Array): void {
    this.#c.set(c.subarray(0, this.#k * this.#d));
    this.#c32.set(c.subarray(0, this.#k * this.#d));
    this.#norms.set(cNorm.subarray(0, this.#k));
  }

  /**
   * `out[r]` = row `i`'s float32 dot product with centroid `list[r]`, for
   * `r < m`, summed as the exact search's scores kernel sums (`d` a
   * multiple of 4; its error bound holds).
   */
  dots(i: number, m: number, out: Float64Array): void {
    const list = this.list, dots = this.#dots;
    const padded = (m + 3) & ~3;
    for (let r = m; r < padded; r++) list[r] = list[0];
    this.#flist(this.#xp + 4 * i * this.#d, this.#d, this.#c32p, this.#jp, padded, this.#outp);
    for (let r = 0; r < m; r++) out[r] = dots[r];
  }

  /**
   * `out[r]` = `nearest`'s distance of row `i` to centroid `list[r]`, for
   * `r < m` (`m` ≤ k; the list is padded here with its first entry).
   */
  run(i: number, m: number, out: Float64Array): void {
    const list = this.list, sums = this.#sums;
    const padded = (m + 3) & ~3;
    for (let r = m; r < padded; r++) list[r] = list[0];
    this.#list(this.#xp + 4 * i * this.#d, this.#d, this.#cp, this.#jp, padded, this.#outp);
    for (let r = 0; r < m; r++) out[r] = this.#norms[list[r]] - 2 * (sums[2 * r] + sums[2 * r + 1]);
  }
}

let shared: NearestKernel | null | undefined;

/** This thread's kernel (made once), or `undefined` where WebAssembly SIMD is missing. */
export function nearestKernel(): NearestKernel | undefined {
  if (shared === undefined) shared = NearestKernel.create() ?? null;
  return shared ?? undefined;
}
