/**
 * Private helpers the 8-bit screening's files share (not part of the
 * public API): the instructions and code pieces both of its WebAssembly
 * modules are assembled from (`wasm_i8.ts`, `wasm_i8_head.ts`), and the
 * slack and roundings of its bounds (`i8_rows.ts`, `i8_scan.ts`; see
 * `i8_scan.ts`'s module notes).
 *
 * @module
 */
import { brIf, get, i32, ifThen, name, section, set, simd, tee, uleb, vec } from "./wasm_encode.ts";

/** The relative slack of every float64 norm and product of the bounds (2⁻⁴⁰). */
export const REL = 2 ** -40;

// Opcodes and instruction helpers of the kernels (memory 0, the shared one).
/** The value types `i32` and `v128`. */
export const I32 = 0x7f, V128 = 0x7b;
/** `i32.add`, `i32.mul`, `i32.lt_u`. */
export const add = [0x6a], mul = [0x6c], ltu = [0x49];
const load = simd(0x00, 0, 0), store = simd(0x0b, 0, 0);
/** `v128.const` of sixteen zero bytes. */
export const zero = simd(0x0c, ...new Array(16).fill(0));
const shuffle = (lanes: number[]) =>
  simd(0x0d, ...lanes.flatMap((l) => [0, 1, 2, 3].map((b) => 4 * l + b)));
/** `i32x4.add`, `i32x4.sub`. */
export const i32x4Add = simd(0xae), i32x4Sub = simd(0xb1);
/** `f32x4.convert_i32x4_s`, `f32x4.mul`, `f32x4.ge`, `f32x4.splat`. */
export const cvt = simd(0xfa), f32x4Mul = simd(0xe6), f32x4Ge = simd(0x46), f32x4Splat = simd(0x13);
/** `f32x4.add`. */
export const f32x4Add = simd(0xe4);
/** `v128.any_true`, `i32x4.relaxed_dot_i8x16_i7x16_add_s`. */
export const anyTrue = simd(0x53), dotAdd = simd(0x113);
/** `f32.load` (offset 0), and `i32.store` at offset `off`. */
export const f32Load = [0x2a, 2, 0], i32Store = (off: number) => [0x36, 2, ...uleb(off)];

/** `[Σ A, Σ B, Σ C, Σ D]` of four i32x4 locals (`ab`, `cd`: scratch v128 locals). */
export const reduce4 = (A: number, B: number, C: number, D: number, ab: number, cd: number) => [
  ...get(A),
  ...get(B),
  ...shuffle([0, 1, 4, 5]),
  ...get(A),
  ...get(B),
  ...shuffle([2, 3, 6, 7]),
  ...i32x4Add,
  ...set(ab),
  ...get(C),
  ...get(D),
  ...shuffle([0, 1, 4, 5]),
  ...get(C),
  ...get(D),
  ...shuffle([2, 3, 6, 7]),
  ...i32x4Add,
  ...set(cd),
  ...get(ab),
  ...get(cd),
  ...shuffle([0, 2, 4, 6]),
  ...get(ab),
  ...get(cd),
  ...shuffle([1, 3, 5, 7]),
  ...i32x4Add,
];

/**
 * When any lane of `f32(dots)·spv ≥ u[j + t]`, a 24-byte record
 * `(g, j + t, dots)` at `out + cnt·24` and `cnt + 1` (locals by index;
 * `rec` an i32 scratch local).
 */
export const recordIf = (
  L: { u: number; j: number; out: number; cnt: number; rec: number; g: number },
  t: number,
  dots: number,
  spv: number,
) => [
  ...get(dots),
  ...cvt,
  ...get(spv),
  ...f32x4Mul,
  // u[j + t]
  ...get(L.u),
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
    ...get(L.out),
    ...get(L.cnt),
    ...i32(24),
    ...mul,
    ...add,
    ...tee(L.rec),
    ...get(L.g),
    ...i32Store(0),
    ...get(L.rec),
    ...get(L.j),
    ...i32(t),
    ...add,
    ...i32Store(4),
    ...get(L.rec),
    ...i32(8),
    ...add,
    ...get(dots),
    ...store,
    ...get(L.cnt),
    ...i32(1),
    ...add,
    ...set(L.cnt),
  ]),
];

/** `if … else … end` of two bodies (`wasm_encode.ts`' own). */
export { ifElse } from "./wasm_encode.ts";

/** `base + k + off` loaded as a v128 into local `into`. */
export const loadAt = (base: number, k: number, into: number, off = 0) => [
  ...get(base),
  ...get(k),
  ...add,
  ...simd(0x00, 0, ...uleb(off)),
  ...set(into),
];

/** The module's header, type, import (shared `env.memory`), function, export and code sections. */
export function moduleOf(
  funcs: readonly { name: string; params: number; result: boolean; body: number[] }[],
): Uint8Array<ArrayBuffer> {
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
    ...section(
      1,
      vec(
        funcs.map((
          f,
        ) => [0x60, ...vec(Array(f.params).fill([I32])), ...vec(f.result ? [[I32]] : [])]),
      ),
    ),
    // import env.memory: shared, 0 … 65536 pages
    ...section(2, vec([[...name("env"), ...name("memory"), 0x02, 0x03, 0, ...uleb(65536)]])),
    ...section(3, vec(funcs.map((_, i) => [i]))),
    ...section(7, vec(funcs.map((f, i) => [...name(f.name), 0x00, i]))),
    ...section(10, vec(funcs.map((f) => [...uleb(f.body.length), ...f.body]))),
  ]);
}

/** `r1, r2, r3 = rp + d16, + 2·d16, + 3·d16`: the rows of the quad at `rp`. */
export const quadRows = (L: { rp: number; r1: number; r2: number; r3: number }, d16: number) => [
  ...get(L.rp),
  ...get(d16),
  ...add,
  ...tee(L.r1),
  ...get(d16),
  ...add,
  ...tee(L.r2),
  ...get(d16),
  ...add,
  ...set(L.r3),
];

/** The quad's four 32-bit values of the per-row array at `base` into local `into`. */
export const quadLoad = (base: number, g: number, into: number) => [
  ...get(base),
  ...get(g),
  ...i32(16),
  ...mul,
  ...add,
  ...load,
  ...set(into),
];

/** `rp = r3 + d16; g += 1`, and round again while `g < nquads`. */
export const nextQuad = (L: { rp: number; r3: number; g: number }, d16: number, nquads: number) => [
  ...get(L.r3),
  ...get(d16),
  ...add,
  ...set(L.rp),
  ...get(L.g),
  ...i32(1),
  ...add,
  ...tee(L.g),
  ...get(nquads),
  ...ltu,
  ...brIf(0),
];

/** Rounds up to a multiple of `m`. */
export const up = (x: number, m: number) => Math.ceil(x / m) * m;

/** `γ_d` of a sum of `d` products in a format with unit roundoff `u`. */
export const gamma = (d: number, u: number) => (d * u) / (1 - d * u);

/** A float32 at least `x` (≥ 0). */
export const up32 = (x: number) => Math.fround(x * (1 + 2 ** -22) + 2 ** -140);
/** A float32 at most `x`, and at least 0. */
export const down32 = (x: number) => Math.max(0, Math.fround(x * (1 - 2 ** -22) - 2 ** -140));
