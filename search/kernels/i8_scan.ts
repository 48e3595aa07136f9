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
 * **Two stages** (d ≥ {@linkcode I8_HEAD_MIN_D}). Most of the scan is the
 * 8-bit dot products, d bytes per row and question. Real phrase vectors
 * have most of their energy in a few directions, so a first stage looks at
 * `h` = {@linkcode I8_HEAD} projected columns only, and the full 8-bit dot
 * is taken only for the 4-row groups and questions that pass it:
 *
 * - *Basis.* `H` (d × h, float32): the leading eigenvectors of the
 *   second-moment matrix `Σ ppᵀ` of {@linkcode BASIS_SAMPLE} evenly spaced
 *   rows, by subspace iteration from a fixed start, orthonormalized in
 *   float64 (the same `H` for the same rows). Nothing below needs `H` to be
 *   those eigenvectors or exactly orthonormal: `‖E‖ ≥ ‖HᵀH − I‖₂` and
 *   `‖H‖_F` are bounded from the stored float32 values.
 * - *Rows.* `y = Hᵀp` in float32 (the `project` kernel: error at most
 *   `η = γ_d·‖H‖_F·‖p‖`), quantized as the rows are (`y = s·aₕ + eₕ`, 127
 *   levels); per row `ρ ≥ ‖eₕ‖ + η ≥ ‖Hᵀp − s·aₕ‖`, `σ ≥ ‖s·aₕ‖`, and the
 *   tail bound `τ ≥ ‖(I − HHᵀ)p‖`, from `‖(I−HHᵀ)p‖² ≤ ‖p‖² − (1 −
 *   ‖E‖)·‖Hᵀp‖²` with `‖Hᵀp‖ ≥ σ − ρ`.
 * - *Questions.* `Hᵀq` in float64 (error at most `γ_d·‖H‖_F·‖q‖` with
 *   γ of float64), quantized to `tₕ·bₕ` (63 levels), and `ρ_q`, `ν_q ≥
 *   ‖Hᵀq‖`, `τ_q` as for the rows.
 * - *Bound.* `q·p = (Hᵀq)·(Hᵀp) + q·(I − HHᵀ)p`, and
 *   `|q·(I−HHᵀ)p| ≤ τ_q·τ + ‖E‖·ν_q·ν` (as `(I−HHᵀ)ᵀ(I−HHᵀ) = (I − HHᵀ) +
 *   H(HᵀH − I)Hᵀ`), `(Hᵀq)·(Hᵀp) ≤ tₕ·s·(aₕ·bₕ) + ‖tₕbₕ‖·ρ + ρ_q·σ +
 *   ρ_q·ρ`. So `q·p ≤ tₕ·[s·hd + τ·τ_q/tₕ] + ρ·(‖tₕbₕ‖ + ρ_q + ‖E‖ν_q) +
 *   σ·(ρ_q + ‖E‖ν_q)` with `hd = aₕ·bₕ`; for `l2`, `α = 2` and `−‖p‖²`
 *   bounded by the row's own `π ≤ ‖p‖²`.
 * - *Gate.* Per block, with the block's largest ρ and σ, a question's
 *   threshold `uh` follows from its current `L`; the kernel
 *   (`filter_head`) computes a group's four head dots and goes on to the
 *   full 8-bit dot, and the test of `filter`, only where some row has
 *   `f32(hd)·s + τ·tq (− π·pq) ≥ uh`. Every float32 and float64 rounding is
 *   paid for in `uh` (a relative 2⁻²⁰ of the largest sizes of the terms,
 *   2⁻⁴⁰ of the float64 ones), and the stored factors are rounded the
 *   safe way, so a row that can reach the top k always passes.
 *
 * The gate only decides which dot products are taken; the candidates, and
 * so the results, are a superset of the exact top k either way. On the
 * piqa-lstm dev index, with the question batch's running `L`, about a
 * quarter of the groups and questions (`ip`; `l2` a sixth) go on to the
 * full pass ({@linkcode I8Screen.stats}).
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
import { halfTable } from "../dense_f64.ts";
import { fsum } from "../fsum.ts";
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

// Opcodes and instruction helpers of the kernels (memory 0, the shared one).
const I32 = 0x7f, V128 = 0x7b;
const add = [0x6a], mul = [0x6c], ltu = [0x49];
const load = simd(0x00, 0, 0), store = simd(0x0b, 0, 0);
const zero = simd(0x0c, ...new Array(16).fill(0));
const shuffle = (lanes: number[]) =>
  simd(0x0d, ...lanes.flatMap((l) => [0, 1, 2, 3].map((b) => 4 * l + b)));
const i32x4Add = simd(0xae), i32x4Sub = simd(0xb1);
const cvt = simd(0xfa), f32x4Mul = simd(0xe6), f32x4Ge = simd(0x46), f32x4Splat = simd(0x13);
const f32x4Add = simd(0xe4);
const anyTrue = simd(0x53), dotAdd = simd(0x113);
const f32Load = [0x2a, 2, 0], i32Store = (off: number) => [0x36, 2, ...uleb(off)];

/** `[Σ A, Σ B, Σ C, Σ D]` of four i32x4 locals (`ab`, `cd`: scratch v128 locals). */
const reduce4 = (A: number, B: number, C: number, D: number, ab: number, cd: number) => [
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
const recordIf = (
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

/** `base + k + off` loaded as a v128 into local `into`. */
const loadAt = (base: number, k: number, into: number, off = 0) => [
  ...get(base),
  ...get(k),
  ...add,
  ...simd(0x00, 0, ...uleb(off)),
  ...set(into),
];

/** The module's header, type, import (shared `env.memory`), function, export and code sections. */
function moduleOf(
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

/** `r1, r2, r3 = rp + d16, + 2·d16, + 3·d16`: the rows of the quad at `rp`. */
const quadRows = (L: { rp: number; r1: number; r2: number; r3: number }, d16: number) => [
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
const quadLoad = (base: number, g: number, into: number) => [
  ...get(base),
  ...get(g),
  ...i32(16),
  ...mul,
  ...add,
  ...load,
  ...set(into),
];

/** `rp = r3 + d16; g += 1`, and round again while `g < nquads`. */
const nextQuad = (L: { rp: number; r3: number; g: number }, d16: number, nquads: number) => [
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

/** Columns of the projected head the screening's first stage reads (a multiple of 16). */
export const I8_HEAD = 32;

/**
 * The bytes of the head module (see the module notes, "Two stages"):
 * imports `env.memory`, exports
 *
 * - `project(x, nrows, d, h, out)`: for each of `nrows` float32 rows at `x`
 *   (`d` values each), its `I8_HEAD` values `Σ_k x_k · H[k][c]` (H, d ×
 *   I8_HEAD float32, at `h`; per column a float32 product then a float32
 *   sum, `k` = 0 … d−1 in order) at `out + 4·I8_HEAD·row`;
 * - `filter_head(a, ah, nquads, d16, q, qh, nq, corr, sp, corrH, spH, rowv, qv, u, uh, out, stats) → records`:
 *   `filter`'s records, for a quad and a question only where its head
 *   passes: `hd = aₕ·(bₕ+64) − corrH` over the quad's `I8_HEAD` head bytes
 *   (at `ah + 4·I8_HEAD·g`) and the question's (at `qh + I8_HEAD·j`), the
 *   quad's factors `τ` and `π` (two f32x4 at `rowv + 32·g`), the
 *   question's `tq` and `pq` (float32 at `qv + 16·j` and `+ 4`), and in
 *   some lane `f32(hd)·spH + τ·tq ≥ uh[j]` (float32); the i32 at `stats`
 *   counts the (quad, question) pairs that passed;
 * - `filter_head_l2(…)`: the same with `G = f32(hd)·spH + τ·tq − π·pq`.
 *
 * @example
 * ```ts
 * import { i8HeadModuleBytes } from "./i8_scan.ts";
 * if (!WebAssembly.validate(i8HeadModuleBytes())) console.log("no relaxed SIMD here");
 * ```
 */
export function i8HeadModuleBytes(UN = 4): Uint8Array<ArrayBuffer> {
  const HB = I8_HEAD, HS = HB / 16;
  // filter_head: params 0…15, i32 locals 16…, v128 locals after.
  const P = {
    a: 0,
    ah: 1,
    nquads: 2,
    d16: 3,
    q: 4,
    qh: 5,
    nq: 6,
    corr: 7,
    sp: 8,
    corrH: 9,
    spH: 10,
    rowv: 11,
    qv: 12,
    u: 13,
    uh: 14,
    out: 15,
    stats: 16,
  };
  const L = {
    g: 17,
    j: 18,
    k: 19,
    r1: 20,
    r2: 21,
    r3: 22,
    qp: 23,
    cnt: 24,
    rp: 25,
    rh: 26,
    qhp: 27,
  };
  const acc = (r: number, t: number) => 28 + 2 * r + t;
  const X = 36, Y = (t: number) => 37 + t;
  const V = { dots: 39, corrv: 40, spv: 41, ab: 42, cd: 43, corrHv: 44, spHv: 45 };
  const hd = (t: number) => 46 + t;
  // The quad's per-row gate factors: τ, and π (a lower bound on ‖p‖², for l2).
  const rowv = (m: number) => 48 + m;
  const R = { u: P.u, j: L.j, out: P.out, cnt: L.cnt, rec: L.k, g: L.g };
  const rows = [L.rp, L.r1, L.r2, L.r3];
  // The full dot of the quad with question j + t, after its head passed.
  const full = (t: number) => [
    ...get(P.q),
    ...get(L.j),
    ...i32(t),
    ...add,
    ...get(P.d16),
    ...mul,
    ...add,
    ...set(L.qp),
    ...[0, 1, 2, 3].flatMap((r) => [...zero, ...set(acc(r, 0))]),
    ...i32(0),
    ...set(L.k),
    ...loop([
      ...Array.from({ length: UN }, (_, h) => [
        ...loadAt(L.qp, L.k, Y(0), 16 * h),
        ...rows.flatMap((base, r) => [
          ...loadAt(base, L.k, X, 16 * h),
          ...get(X),
          ...get(Y(0)),
          ...get(acc(r, 0)),
          ...dotAdd,
          ...set(acc(r, 0)),
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
    ...reduce4(acc(0, 0), acc(1, 0), acc(2, 0), acc(3, 0), V.ab, V.cd),
    ...get(V.corrv),
    ...i32x4Sub,
    ...set(V.dots),
    ...recordIf(R, t, V.dots, V.spv),
  ];
  // f32(hd_t)·spH + tx·tq[j+t] ≥ uh[j+t] in some lane → the full dot.
  // Question j+t's factor m (0: tq = τ_q/t, 1: pq = 1/(α·t)), splat.
  const qFactor = (t: number, m: number) => [
    ...get(P.qv),
    ...get(L.j),
    ...i32(t),
    ...add,
    ...i32(16),
    ...mul,
    ...add,
    ...simd(0x09, 2, ...uleb(4 * m)), // v128.load32_splat
  ];
  const f32x4Sub = simd(0xe5);
  // G = f32(hd)·spH + τ·tq (− π·pq with pen); some lane of G ≥ uh[j+t] → the full dot.
  const gate = (t: number, pen: boolean) => [
    ...get(hd(t)),
    ...cvt,
    ...get(V.spHv),
    ...f32x4Mul,
    ...get(rowv(0)),
    ...qFactor(t, 0),
    ...f32x4Mul,
    ...f32x4Add,
    ...(pen ? [...get(rowv(1)), ...qFactor(t, 1), ...f32x4Mul, ...f32x4Sub] : []),
    ...get(P.uh),
    ...get(L.j),
    ...i32(t),
    ...add,
    ...i32(4),
    ...mul,
    ...add,
    ...simd(0x09, 2, 0),
    ...f32x4Ge,
    ...anyTrue,
    // the full dot, counted at stats (i32)
    ...ifThen([
      ...get(P.stats),
      ...get(P.stats),
      0x28,
      2,
      0,
      ...i32(1),
      ...add,
      ...i32Store(0),
      ...full(t),
    ]),
  ];
  const filterHead = (pen: boolean) => [
    ...vec([[11, I32], [22, V128]]),
    ...get(P.a),
    ...set(L.rp),
    ...get(P.ah),
    ...set(L.rh),
    ...loop([
      ...quadRows(L, P.d16),
      ...quadLoad(P.corr, L.g, V.corrv),
      ...quadLoad(P.sp, L.g, V.spv),
      ...quadLoad(P.corrH, L.g, V.corrHv),
      ...quadLoad(P.spH, L.g, V.spHv),
      ...[0, 1].flatMap((m) => [
        ...get(P.rowv),
        ...get(L.g),
        ...i32(32),
        ...mul,
        ...add,
        ...simd(0x00, 0, ...uleb(16 * m)),
        ...set(rowv(m)),
      ]),
      ...i32(0),
      ...set(L.j),
      ...get(P.qh),
      ...set(L.qhp),
      ...loop([
        ...[0, 1, 2, 3].flatMap((r) => [0, 1].flatMap((t) => [...zero, ...set(acc(r, t))])),
        ...Array.from({ length: HS }, (_, s) => [
          ...[0, 1].flatMap((t) => [
            ...get(L.qhp),
            ...simd(0x00, 0, ...uleb(HB * t + 16 * s)),
            ...set(Y(t)),
          ]),
          ...[0, 1, 2, 3].flatMap((r) => [
            ...get(L.rh),
            ...simd(0x00, 0, ...uleb(HB * r + 16 * s)),
            ...set(X),
            ...[0, 1].flatMap((t) => [
              ...get(X),
              ...get(Y(t)),
              ...get(acc(r, t)),
              ...dotAdd,
              ...set(acc(r, t)),
            ]),
          ]),
        ]).flat(),
        ...[0, 1].flatMap((t) => [
          ...reduce4(acc(0, t), acc(1, t), acc(2, t), acc(3, t), V.ab, V.cd),
          ...get(V.corrHv),
          ...i32x4Sub,
          ...set(hd(t)),
        ]),
        ...gate(0, pen),
        ...gate(1, pen),
        ...get(L.qhp),
        ...i32(2 * HB),
        ...add,
        ...set(L.qhp),
        ...get(L.j),
        ...i32(2),
        ...add,
        ...tee(L.j),
        ...get(P.nq),
        ...ltu,
        ...brIf(0),
      ]),
      ...get(L.rh),
      ...i32(4 * HB),
      ...add,
      ...set(L.rh),
      ...nextQuad(L, P.d16, P.nquads),
    ]),
    ...get(L.cnt),
    0x0b,
  ];
  // project(x, nrows, d, h, out)
  const J = { x: 0, nrows: 1, d: 2, h: 3, out: 4, i: 5, k: 6, xp: 7, hp: 8, xs: 9 };
  const pacc = (c: number) => 10 + c;
  const C = HB / 4;
  const project = [
    ...vec([[4, I32], [1 + C, V128]]),
    ...get(J.x),
    ...set(J.xp),
    ...loop([
      ...Array.from({ length: C }, (_, c) => [...zero, ...set(pacc(c))]).flat(),
      ...i32(0),
      ...set(J.k),
      ...get(J.h),
      ...set(J.hp),
      ...loop([
        ...get(J.xp),
        ...get(J.k),
        ...i32(4),
        ...mul,
        ...add,
        ...f32Load,
        ...f32x4Splat,
        ...set(J.xs),
        ...Array.from({ length: C }, (_, c) => [
          ...get(pacc(c)),
          ...get(J.xs),
          ...get(J.hp),
          ...simd(0x00, 0, ...uleb(16 * c)),
          ...f32x4Mul,
          ...f32x4Add,
          ...set(pacc(c)),
        ]).flat(),
        ...get(J.hp),
        ...i32(4 * HB),
        ...add,
        ...set(J.hp),
        ...get(J.k),
        ...i32(1),
        ...add,
        ...tee(J.k),
        ...get(J.d),
        ...ltu,
        ...brIf(0),
      ]),
      ...Array.from({ length: C }, (_, c) => [
        ...get(J.out),
        ...get(J.i),
        ...i32(4 * HB),
        ...mul,
        ...add,
        ...get(pacc(c)),
        ...simd(0x0b, 0, ...uleb(16 * c)),
      ]).flat(),
      ...get(J.xp),
      ...get(J.d),
      ...i32(4),
      ...mul,
      ...add,
      ...set(J.xp),
      ...get(J.i),
      ...i32(1),
      ...add,
      ...tee(J.i),
      ...get(J.nrows),
      ...ltu,
      ...brIf(0),
    ]),
    0x0b,
  ];
  return moduleOf([
    { name: "filter_head", params: 17, result: true, body: filterHead(false) },
    { name: "filter_head_l2", params: 17, result: true, body: filterHead(true) },
    { name: "project", params: 5, result: false, body: project },
  ]);
}

let moduleCache: WebAssembly.Module | null | undefined;
let headCache: WebAssembly.Module | null | undefined;

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

/** The compiled head module (`i8HeadModuleBytes`), or `null` where it cannot run. */
function headModule(): WebAssembly.Module | null {
  if (headCache === undefined) {
    try {
      const bytes = i8HeadModuleBytes();
      headCache = WebAssembly.validate(bytes) ? new WebAssembly.Module(bytes) : null;
    } catch {
      headCache = null;
    }
  }
  return headCache;
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
  /** Columns of the projected head (0: one stage, see the module notes). */
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

/** The head part of an {@linkcode I8Rows} (see the module notes, "Two stages"). */
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

/** `γ_d` of a sum of `d` products in a format with unit roundoff `u`. */
const gamma = (d: number, u: number) => (d * u) / (1 - d * u);

/**
 * The 8-bit screening copy of a dense matrix (see the module notes), all
 * in one shared WebAssembly memory (so search workers use it without a
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
   * none) the rows' heads for the first stage are made too (see the module
   * notes); the candidates are supersets of the exact top k either way.
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
   * The head basis (see the module notes): the leading `h` eigenvectors of
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
 * are quantized here (see the module notes, "Two stages").
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

/** A float32 at least `x` (≥ 0). */
const up32 = (x: number) => Math.fround(x * (1 + 2 ** -22) + 2 ** -140);
/** A float32 at most `x`, and at least 0. */
const down32 = (x: number) => Math.max(0, Math.fround(x * (1 - 2 ** -22) - 2 ** -140));

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

/** Scratch bytes of one thread: questions, thresholds, records; with a head, its questions too. */
function scratchBytes(stride: number, maxQ: number, head = 0): number {
  const nq = up(maxQ, 2);
  const base = up(nq * stride, 64) + up(nq * 4, 64) + up((I8_BLOCK / 4) * nq * 24, 64);
  return head > 0 ? base + up(nq * head, 64) + up(nq * 16, 64) + 2 * up(nq * 4, 64) : base;
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
  readonly #filterHead?: (...args: number[]) => number;
  readonly #qPtr: number;
  readonly #uPtr: number;
  readonly #outPtr: number;
  readonly #qhPtr: number;
  readonly #qvPtr: number;
  readonly #uhPtr: number;
  readonly #statsPtr: number;
  #stats = { pairs: 0, full: 0 };

  /** The kernel of scratch slot `slot` (0 … threads − 1 of {@linkcode I8Rows.create}). */
  constructor(readonly rows: I8Rows, slot = 0) {
    const inst = new WebAssembly.Instance(kernelModule()!, { env: { memory: rows.memory } });
    this.#filter = inst.exports.filter as (...args: number[]) => number;
    if (rows.head !== undefined) {
      const hi = new WebAssembly.Instance(headModule()!, { env: { memory: rows.memory } });
      this.#filterHead =
        (rows.metric === "l2" ? hi.exports.filter_head_l2 : hi.exports.filter_head) as (
          ...args: number[]
        ) => number;
    }
    const nq = up(rows.shared.maxQ, 2);
    this.#qPtr = rows.scratchBase + slot * rows.scratchSize;
    this.#uPtr = this.#qPtr + up(nq * rows.stride, 64);
    this.#outPtr = this.#uPtr + up(nq * 4, 64);
    this.#qhPtr = this.#outPtr + up((I8_BLOCK / 4) * nq * 24, 64);
    this.#qvPtr = this.#qhPtr + up(nq * (rows.head?.h ?? 0), 64);
    this.#uhPtr = this.#qvPtr + up(nq * 16, 64);
    this.#statsPtr = this.#uhPtr + up(nq * 4, 64);
  }

  /**
   * Of the (4-row group, question) pairs the last {@linkcode candidates}
   * call screened, how many went on to the full 8-bit pass (all of them
   * without a head; see the module notes, "Two stages").
   */
  get stats(): { readonly pairs: number; readonly full: number } {
    return this.#stats;
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
    const heads = R.head !== undefined ? this.#questionHeads(qs, alpha) : undefined;
    const uh = heads !== undefined ? new Float32Array(buf, this.#uhPtr, nq2) : undefined;
    uh?.fill(Infinity);
    const out = new Int32Array(buf, this.#outPtr, (I8_BLOCK / 4) * nq2 * 6);
    const lows = qs.map(() => new LowerBounds(k));
    const cand: number[][] = qs.map(() => []);
    const upper: number[][] = qs.map(() => []);
    const { scale, resid, qnorm, pen, penErr } = R;
    const stats = new Int32Array(buf, this.#statsPtr, 1);
    stats[0] = 0;
    let pairs = 0;
    for (let b0 = 0, blk = 0; b0 < n; b0 += I8_BLOCK, blk++) {
      const rowsHere = Math.min(I8_BLOCK, n - b0);
      const eMax = R.blockResid[blk], pMax = R.blockNorm[blk], penLo = R.blockPen[blk];
      for (let j = 0; j < nq; j++) {
        const L = lows[j].floor;
        if (L === -Infinity) {
          u[j] = -Infinity;
          if (uh !== undefined) uh[j] = -Infinity;
          continue;
        }
        // A row can matter only if α·s·t·dot ≥ L + pen + qPen − α·bound − errors.
        const slack = alpha * (qn[j] * eMax + fq[j] * pMax) * (1 + REL) + qPenErr[j];
        const U = (L + penLo + qPen[j] - slack) / (alpha * t[j]);
        u[j] = Math.fround(U - Math.abs(U) * 2 ** -20 - 2 ** -100);
        if (u[j] > U) u[j] = -Infinity;
        if (uh !== undefined) {
          uh[j] = headThreshold(R.head!, heads!, j, blk, L, qPen[j], qPenErr[j], alpha);
        }
      }
      const recs = heads !== undefined
        ? this.#filterHead!(
          b0 * stride,
          R.head!.codesPtr + b0 * R.head!.h,
          Math.ceil(rowsHere / 4),
          stride,
          this.#qPtr,
          this.#qhPtr,
          nq2,
          R.corrPtr + b0 * 4,
          R.spPtr + b0 * 4,
          R.head!.corrPtr + b0 * 4,
          R.head!.spPtr + b0 * 4,
          R.head!.rowvPtr + b0 * 8,
          this.#qvPtr,
          this.#uPtr,
          this.#uhPtr,
          this.#outPtr,
          this.#statsPtr,
        )
        : this.#filter(
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
      pairs += Math.ceil(rowsHere / 4) * nq;
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
    this.#stats = { pairs, full: heads !== undefined ? stats[0] : pairs };
    return cand.map((c, j) => {
      const L = lows[j].floor, hi = upper[j];
      const keep: number[] = [];
      for (let x = 0; x < c.length; x++) if (hi[x] >= L) keep.push(c[x]);
      return Int32Array.from(keep);
    });
  }

  /**
   * The head gate's slack (for tests; see the module notes, "Two stages"):
   * for each question `j` and row `i`, the float32 value the kernel
   * compares (`f32(hd)·spH + τ·tq`, `− π·pq` for `l2`, in the kernel's
   * order) less the threshold that `L = score(j, i)`, the row's own exact
   * score, would set. It must never be negative: the gate skips a row only
   * when the question's k-th lower bound is above the row's exact score.
   * `undefined` without a head stage.
   */
  headSlack(
    qs: readonly Float32Array[],
    score: (j: number, i: number) => number,
  ): Float64Array[] | undefined {
    const R = this.rows, hd = R.head;
    if (hd === undefined) return undefined;
    const { n, d } = R, h = hd.h, l2 = R.metric === "l2", alpha = l2 ? 2 : 1;
    const hq = this.#questionHeads(qs, alpha);
    const buf = R.memory.buffer;
    const codes = new Int8Array(buf, hd.codesPtr, R.nPad * h);
    const qh = new Uint8Array(buf, this.#qhPtr, up(qs.length, 2) * h);
    const sp = new Float32Array(buf, hd.spPtr, R.nPad);
    const rowv = new Float32Array(buf, hd.rowvPtr, R.nPad * 2);
    const f = Math.fround;
    return qs.map((q, j) => {
      let n2 = 0;
      for (let c = 0; c < d; c++) n2 += q[c] * q[c];
      const qPen = l2 ? n2 : 0, qPenErr = l2 ? n2 * (d + 2) * 2 ** -52 : 0;
      const tq = hq.qv[4 * j], pq = hq.qv[4 * j + 1];
      const out = new Float64Array(n);
      for (let i = 0; i < n; i++) {
        let dot = 0;
        for (let c = 0; c < h; c++) dot += codes[i * h + c] * (qh[j * h + c] - 64);
        const o = (i >> 2) * 8 + (i & 3);
        let g = f(f(f(dot) * sp[i]) + f(rowv[o] * tq));
        if (l2) g = f(g - f(rowv[o + 4] * pq));
        const blk = (i / I8_BLOCK) | 0;
        out[i] = g - headThreshold(hd, hq, j, blk, score(j, i), qPen, qPenErr, alpha);
      }
      return out;
    });
  }

  /**
   * The questions' heads (see the module notes, "Two stages"): `Hᵀq` in
   * float64, quantized to `bₕ` in [−63, 63] (written as `bₕ + 64` for the
   * kernel), the gate's factors `tq = τ_q/tₕ` (rounded up) and
   * `pq = 1/(α·tₕ)` (rounded down) for the kernel, and the threshold's.
   */
  #questionHeads(qs: readonly Float32Array[], alpha: number): HeadQuestions {
    const R = this.rows, hd = R.head!, h = hd.h, d = R.d, H = hd.basis;
    const nq = qs.length, nq2 = up(nq, 2), buf = R.memory.buffer;
    const qh = new Uint8Array(buf, this.#qhPtr, nq2 * h);
    qh.fill(64);
    const qv = new Float32Array(buf, this.#qvPtr, nq2 * 4);
    qv.fill(0);
    const ts = new Float64Array(nq);
    const hq: HeadQuestions = {
      t: ts,
      ce: new Float64Array(nq),
      cs: new Float64Array(nq),
      bn: new Float64Array(nq),
      qv,
    };
    const g64 = gamma(d, 2 ** -53), keep = 1 - hd.eNorm, y = new Float64Array(h);
    for (let j = 0; j < nq; j++) {
      const q = qs[j];
      y.fill(0);
      let n2 = 0;
      for (let k = 0; k < d; k++) {
        const v = q[k];
        n2 += v * v;
        const o = k * h;
        for (let c = 0; c < h; c++) y[c] += v * H[o + c];
      }
      let max = 0;
      for (let c = 0; c < h; c++) max = Math.max(max, Math.abs(y[c]));
      const t = max / 63, inv = max > 0 ? 63 / max : 0;
      let b2 = 0, f2 = 0;
      for (let c = 0; c < h; c++) {
        const b = Math.round(y[c] * inv);
        qh[j * h + c] = b + 64;
        b2 += b * b;
        const f = y[c] - t * b;
        f2 += f * f;
      }
      ts[j] = t;
      if (!(t > 0)) continue;
      const n2up = n2 * (1 + (d + 2) * 2 ** -52);
      // ρ_q ≥ ‖Hᵀq − tₕ·bₕ‖ (quantization and the float64 projection's error), ν_q ≥ ‖Hᵀq‖,
      // τ_q ≥ ‖(I − HHᵀ)q‖.
      const eta = g64 * hd.hF * Math.sqrt(n2up) * (1 + REL);
      const rho = (Math.sqrt(f2) * (1 + REL) + eta) * (1 + REL);
      const tb = t * Math.sqrt(b2) * (1 + REL), tbLo = t * Math.sqrt(b2) * (1 - REL);
      const nu = (tb + rho) * (1 + REL);
      const lo = Math.max(0, (tbLo - rho) * (1 - REL));
      const tau = Math.sqrt(Math.max(0, n2up - keep * lo * lo) + (n2up + lo * lo) * REL) *
        (1 + REL);
      const e = hd.eNorm * nu;
      qv[4 * j] = up32((tau / t) * (1 + REL));
      qv[4 * j + 1] = R.metric === "l2" ? down32((1 / (alpha * t)) * (1 - REL)) : 0;
      // The block terms of the threshold (headThreshold), and the size of ‖bₕ‖.
      hq.ce[j] = (tb + rho + e) * (1 + REL);
      hq.cs[j] = (rho + e) * (1 + REL);
      hq.bn[j] = Math.sqrt(b2) * (1 + REL);
    }
    return hq;
  }
}

/** The questions' head factors ({@linkcode I8Screen} `#questionHeads`). */
interface HeadQuestions {
  /** `tₕ`, the scale of the head's codes (0: an all-zero head). */
  readonly t: Float64Array;
  /** `tb + ρ_q + ‖E‖·ν_q`, rounded up: the factor of a row's ρ. */
  readonly ce: Float64Array;
  /** `ρ_q + ‖E‖·ν_q`, rounded up: the factor of a row's σ. */
  readonly cs: Float64Array;
  /** `‖bₕ‖`, rounded up. */
  readonly bn: Float64Array;
  /** The kernel's `[tq, pq, 0, 0]` per question. */
  readonly qv: Float32Array;
}

/**
 * The head gate's threshold of question `j` over block `blk` (see the
 * module notes, "Two stages"): a row of the block can reach `L` only if
 * `s·hd + τ·tq − π·pq ≥ (L + ‖q‖² − err)/(α·tₕ) − (ρmax·ce + σmax·cs)/tₕ`
 * (in exact arithmetic), and then the kernel's float32 value is at least
 * the value returned (that bound less its float64 and float32 rounding);
 * −∞ where no threshold can be given (every group goes on to the full
 * pass).
 */
function headThreshold(
  hd: I8Head,
  hq: HeadQuestions,
  j: number,
  blk: number,
  L: number,
  qPen: number,
  qPenErr: number,
  alpha: number,
): number {
  const t = hq.t[j];
  if (!(t > 0) || L === -Infinity) return -Infinity;
  const cb = (hd.blockRho[blk] * hq.ce[j] + hd.blockSa[blk] * hq.cs[j]) * (1 + REL);
  const UH = (L + qPen - qPenErr) / (alpha * t) - cb / t;
  // float64: a relative 2⁻⁴⁰ of every magnitude; float32 (the kernel's products and sums, the
  // scale and the hd conversion): a relative 2⁻²⁰ of the largest sizes its terms can have.
  const f64 = ((Math.abs(L) + qPen + qPenErr) / (alpha * t) + cb / t) * REL;
  const f32 = (hd.blockSa[blk] * hq.bn[j] + hd.blockTau[blk] * hq.qv[4 * j] +
    hd.blockPi[blk] * hq.qv[4 * j + 1] + Math.abs(UH)) * 2 ** -20;
  const lo = UH - f64 - f32 - 2 ** -100;
  const uh = Math.fround(lo - Math.abs(lo) * 2 ** -22);
  return uh > lo || !Number.isFinite(uh) ? -Infinity : uh;
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
