/**
 * The float64 fast pass of dense scoring: float16 → float32 widening, row
 * sums of squares, and {@linkcode denseScores} (every row against a block of
 * questions in one pass over the matrix).
 *
 * @module
 */
import type { DenseMatrix } from "../io/matrix.ts";

/** float16 bits → float32 value (256 KiB; made on first use). */
let HALF: Float32Array | undefined;

/** The float32 value of every float16 bit pattern (a table made on first use). */
export function halfTable(): Float32Array {
  if (HALF === undefined) {
    HALF = new Float32Array(65536);
    const h = new Float16Array(new Uint16Array(65536).map((_, i) => i).buffer);
    for (let i = 0; i < 65536; i++) HALF[i] = h[i];
  }
  return HALF;
}

/** The bits of float16 values. */
export function halfBits(d: Float16Array): Uint16Array {
  return new Uint16Array(d.buffer, d.byteOffset, d.length);
}

/**
 * Float16 values (their bits) as float32, by table (several times faster
 * than `new Float32Array(float16Array)`): a new array, or the first
 * `bits.length` values of `into` (at least that long) written.
 *
 * @example
 * ```ts
 * import { widenHalf } from "./dense_f64.ts";
 * const w = widenHalf(new Uint16Array([0x3c00, 0xc000]));
 * if (w.join() !== "1,-2") throw new Error(w.join());
 * ```
 */
export function widenHalf(bits: Uint16Array, into?: Float32Array): Float32Array {
  const table = halfTable(), out = into ?? new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = table[bits[i]];
  return out.subarray(0, bits.length);
}

/** A dense matrix's values as float32 (float16 widened by table; float32 as is). */
export function asFloat32(m: DenseMatrix): Float32Array {
  return m.data instanceof Float32Array ? m.data : widenHalf(halfBits(m.data));
}

/** The float64 sum of squares of each row of an n×d float32 matrix. */
export function sumSquares(a: Float32Array, n: number, d: number): Float64Array {
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
 * import { denseScores } from "./dense_f64.ts";
 * const out = new Float64Array(2);
 * denseScores(new Float32Array([1, 2, 3, 4]), 2, 2, new Float64Array([1, 1]), 1, out);
 * if (out[0] !== 3 || out[1] !== 7) throw new Error(`got ${out}`);
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
