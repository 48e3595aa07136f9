/**
 * The bounds test of the k-means's Elkan step (`search/index/ivfpq/kmeans.ts`
 * `boundedAssign`) in WebAssembly: which centroids a row's bounds cannot
 * skip ({@linkcode BoundsTest.unskipped}), two centroids a step in `f64x2`
 * lanes, each lane the float64 operations of the TypeScript test
 * ({@linkcode unskippedReference}) in the same order, so the same centroids
 * (`tests/search/kernels/wasm_bounds_test.ts`). With 1,000 centroids the
 * TypeScript loop took about 5.5 ns a centroid, most of a k-means
 * iteration's time on the rows the bounds leave almost nothing to do.
 *
 * @module
 */
import {
  block,
  br,
  brIf,
  get,
  grownBuffer,
  i32,
  ifThen,
  name,
  onceModule,
  section,
  set,
  simd,
  uleb,
  vec,
} from "./wasm_encode.ts";

const I32 = 0x7f, F64 = 0x7c, V128 = 0x7b;

/**
 * Centroids `j ≠ a` of `[0, k)` with `lower[j] < (up + total[j])·up1` and
 * `half[j] < up` (float64, `lower` float32 widened exactly), in increasing
 * order, written to `cand`; returns how many. The reference of the module's
 * `unskipped`.
 *
 * @example
 * ```ts
 * import { unskippedReference } from "./wasm_bounds.ts";
 * const cand = new Int32Array(3);
 * const m = unskippedReference(
 *   new Float32Array([0, 0, 9]), new Float64Array(3), new Float64Array([0, 0, 0]), 1, 0, 3, 1, cand,
 * );
 * if (m !== 1 || cand[0] !== 1) throw new Error(`${m} ${cand}`);
 * ```
 */
export function unskippedReference(
  lower: Float32Array,
  total: Float64Array,
  half: Float64Array,
  up: number,
  a: number,
  k: number,
  up1: number,
  cand: Int32Array,
): number {
  let m = 0;
  for (let j = 0; j < k; j++) {
    if (lower[j] < (up + total[j]) * up1 && half[j] < up && j !== a) cand[m++] = j;
  }
  return m;
}

/**
 * The module: exports `memory` and `unskipped(lower, total, half, up, a, k,
 * up1, cand) → m` (byte addresses; `lower` float32, `total` and `half`
 * float64, `cand` int32, `k` of each).
 */
export function boundsModuleBytes(): Uint8Array<ArrayBuffer> {
  // params: lower 0, total 1, half 2, up 3 (f64), a 4, k 5, up1 6 (f64), cand 7;
  // locals i32: j 8, m 9, bits 10; v128: upv 11, u1v 12, mask 13
  const J = 8, M = 9, BITS = 10, UPV = 11, U1V = 12, MASK = 13;
  const load = simd(0x00, 3, 0), load64Zero = simd(0x5d, 3, 0), promoteLow = simd(0x5f);
  const splat = simd(0x14), vAdd = simd(0xf0), vMul = simd(0xf2), vLt = simd(0x49);
  const vAnd = simd(0x4e), bitmask = simd(0xc4);
  // addr(base, shift): base + (j << shift)
  const at = (base: number, shift: number, plus = 0) => [
    ...get(base),
    ...get(J),
    ...(plus ? [...i32(plus), 0x6a] : []),
    ...i32(shift),
    0x74,
    0x6a,
  ];
  // cand[m++] = j + plus, when j + plus ≠ a
  const emit = (plus: number) => [
    ...get(J),
    ...(plus ? [...i32(plus), 0x6a] : []),
    ...get(4),
    0x47, // i32.ne
    ...ifThen([
      ...get(7),
      ...get(M),
      ...i32(2),
      0x74,
      0x6a,
      ...get(J),
      ...(plus ? [...i32(plus), 0x6a] : []),
      0x36,
      2,
      0, // i32.store
      ...get(M),
      ...i32(1),
      0x6a,
      ...set(M),
    ]),
  ];
  const body = [
    ...vec([[3, I32], [3, V128]]),
    ...get(3),
    ...splat,
    ...set(UPV),
    ...get(6),
    ...splat,
    ...set(U1V),
    ...i32(0),
    ...set(J),
    ...i32(0),
    ...set(M),
    // Two centroids a step while two are left.
    ...block([
      0x03,
      0x40,
      ...get(J),
      ...i32(2),
      0x6a,
      ...get(5),
      0x4b, // i32.gt_u: j + 2 > k
      ...brIf(1),
      // (f64(lower) < (up + total)·up1) & (half < up)
      ...at(0, 2),
      ...load64Zero,
      ...promoteLow,
      ...get(UPV),
      ...at(1, 3),
      ...load,
      ...vAdd,
      ...get(U1V),
      ...vMul,
      ...vLt,
      ...at(2, 3),
      ...load,
      ...get(UPV),
      ...vLt,
      ...vAnd,
      ...set(MASK),
      ...get(MASK),
      ...bitmask,
      ...set(BITS),
      ...get(BITS),
      ...ifThen([
        ...get(BITS),
        ...i32(1),
        0x71,
        ...ifThen(emit(0)),
        ...get(BITS),
        ...i32(2),
        0x71,
        ...ifThen(emit(1)),
      ]),
      ...get(J),
      ...i32(2),
      0x6a,
      ...set(J),
      ...br(0),
      0x0b,
    ]),
    // The last one, alone.
    ...get(J),
    ...get(5),
    0x49, // i32.lt_u
    ...ifThen([
      ...at(0, 2),
      0x2a,
      2,
      0, // f32.load
      0xbb, // f64.promote_f32
      ...get(3),
      ...at(1, 3),
      0x2b,
      3,
      0, // f64.load
      0xa0, // f64.add
      ...get(6),
      0xa2, // f64.mul
      0x63, // f64.lt
      ...at(2, 3),
      0x2b,
      3,
      0,
      ...get(3),
      0x63,
      0x71, // i32.and
      ...ifThen(emit(0)),
    ]),
    ...get(M),
    0x0b,
  ];
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
    ...section(
      1,
      vec([[
        0x60,
        ...vec([[I32], [I32], [I32], [F64], [I32], [I32], [F64], [I32]]),
        ...vec([[I32]]),
      ]]),
    ),
    ...section(3, vec([[0]])),
    ...section(5, vec([[0x00, 1]])),
    ...section(7, vec([[...name("memory"), 0x02, 0], [...name("unskipped"), 0x00, 0]])),
    ...section(10, vec([[...uleb(body.length), ...body]])),
  ]);
}

const boundsModule = onceModule(boundsModuleBytes);

/**
 * The test of {@linkcode unskippedReference} in the module: the centroids'
 * totals and half distances (`k × k`) copied into its memory once an
 * update ({@linkcode BoundsTest.update}), a row's lower bounds a row.
 */
export class BoundsTest {
  readonly #run: (...a: number[]) => number;
  readonly #k: number;
  readonly #f32: Float32Array;
  readonly #f64: Float64Array;
  readonly #i32: Int32Array;

  private constructor(instance: WebAssembly.Instance, k: number) {
    const e = instance.exports as Record<string, unknown>;
    const memory = e.memory as WebAssembly.Memory;
    this.#run = e.unskipped as (...a: number[]) => number;
    this.#k = k;
    // Layout: total (f64, k), half (f64, k × k), a row's lower bounds (f32, k), cand (i32, k).
    const bytes = 8 * k * (k + 1) + 8 * k;
    const buf = grownBuffer(memory, bytes);
    this.#f64 = new Float64Array(buf, 0, k * (k + 1));
    this.#f32 = new Float32Array(buf, 8 * k * (k + 1), k);
    this.#i32 = new Int32Array(buf, 8 * k * (k + 1) + 4 * k, k);
  }

  /** The test for `k` centroids, or `undefined` where the module cannot run here. */
  static create(k: number): BoundsTest | undefined {
    const m = boundsModule();
    if (m === undefined) return undefined;
    try {
      return new BoundsTest(new WebAssembly.Instance(m, {}), k);
    } catch {
      return undefined;
    }
  }

  /** The centroids this test is for. */
  get k(): number {
    return this.#k;
  }

  /** Sets the centroids' totals (`k`) and half distances (`half[a·k + j]`) for the rows that follow. */
  update(total: Float64Array, half: Float64Array): void {
    const k = this.#k;
    this.#f64.set(total.subarray(0, k));
    this.#f64.set(half.subarray(0, k * k), k);
  }

  /** Where {@linkcode BoundsTest.unskipped} writes the centroids (a view of the module's memory). */
  get cand(): Int32Array {
    return this.#i32;
  }

  /**
   * {@linkcode unskippedReference}`(lower[lb…lb+k), total, half[a·k…a·k+k),
   * up, a, k, up1, cand)` with the totals and half distances last set, the
   * centroids written to {@linkcode BoundsTest.cand}: the same count and
   * centroids.
   */
  unskipped(lower: Float32Array, lb: number, a: number, up: number, up1: number): number {
    const k = this.#k;
    this.#f32.set(lower.subarray(lb, lb + k));
    const l = 8 * k * (k + 1);
    return this.#run(l, 0, 8 * k + 8 * a * k, up, a, k, up1, l + 4 * k);
  }
}
