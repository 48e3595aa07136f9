/**
 * The scan module of the 8-bit screening (see `i8_scan.ts`'s module
 * notes): its bytes ({@linkcode i8ModuleBytes}), the module compiled once
 * ({@linkcode kernelModule}) and whether this runtime runs it
 * ({@linkcode i8Available}).
 *
 * **Kernel.** A hand-assembled WebAssembly module (relaxed SIMD's
 * `i32x4.relaxed_dot_i8x16_i7x16_add_s`: sixteen 8-bit products a step; the
 * question's bytes are stored as `b + 64`, in [1, 127], where the
 * instruction's result is the same on every implementation, and the row's
 * `64·Σa` is subtracted). Four rows by two questions a step, sums in
 * registers. Where relaxed SIMD is missing, `I8Rows.create` (`i8_rows.ts`)
 * returns `undefined` and callers use the float32 kernels.
 *
 * @module
 */
import { brIf, get, i32, loop, onceModule, set, tee, vec } from "./wasm_encode.ts";
import {
  add,
  dotAdd,
  I32,
  i32x4Sub,
  loadAt,
  ltu,
  moduleOf,
  mul,
  nextQuad,
  quadLoad,
  quadRows,
  recordIf,
  reduce4,
  V128,
  zero,
} from "./_i8.ts";

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
 * import { i8ModuleBytes } from "./wasm_i8.ts";
 * if (!WebAssembly.validate(i8ModuleBytes())) console.log("no relaxed SIMD here");
 * ```
 */
export function i8ModuleBytes(QG = 2, UN = 4): Uint8Array<ArrayBuffer> {
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
  // v128 locals 21…: acc[row][question] = 21 + QG·row + question, x, y…, dots, corrv, spv, ab, cd
  const acc = (r: number, t: number) => 21 + QG * r + t;
  const X = 21 + 4 * QG, Y = (t: number) => X + 1 + t;
  const v0 = X + 1 + QG;
  const V = { dots: v0, corrv: v0 + 1, spv: v0 + 2, ab: v0 + 3, cd: v0 + 4 };
  const QS = Array.from({ length: QG }, (_, t) => t);
  const R = { u: P.u, j: L.j, out: P.out, cnt: L.cnt, rec: L.k, g: L.g };
  const test = (t: number) => [
    ...reduce4(acc(0, t), acc(1, t), acc(2, t), acc(3, t), V.ab, V.cd),
    ...get(V.corrv),
    ...i32x4Sub,
    ...set(V.dots),
    ...recordIf(R, t, V.dots, V.spv),
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
      ...quadRows(L, P.d16),
      ...quadLoad(P.corr, L.g, V.corrv),
      ...quadLoad(P.sp, L.g, V.spv),
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
            ...QS.flatMap((t) => loadAt(QP[t], L.k, Y(t), 16 * h)),
            ...[L.rp, L.r1, L.r2, L.r3].flatMap((base, r) => [
              ...loadAt(base, L.k, X, 16 * h),
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
      ...nextQuad(L, P.d16, P.nquads),
    ]),
    ...get(L.cnt),
    0x0b,
  ];
  return moduleOf([{ name: "filter", params: 9, result: true, body }]);
}

const compiled = onceModule(i8ModuleBytes);

/** The compiled kernel module, or `null` where relaxed SIMD is missing. */
export function kernelModule(): WebAssembly.Module | null {
  return compiled() ?? null;
}

/** Whether this runtime runs the 8-bit screening kernel (relaxed SIMD). */
export function i8Available(): boolean {
  return kernelModule() !== null;
}
