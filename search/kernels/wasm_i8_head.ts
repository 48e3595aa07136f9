/**
 * The head module of the 8-bit screening's first stage (see `i8_scan.ts`'s
 * module notes, "Two stages"): its bytes ({@linkcode i8HeadModuleBytes}:
 * the rows' projection and the gated scan), its columns
 * ({@linkcode I8_HEAD}) and the module compiled once
 * ({@linkcode headModule}).
 *
 * @module
 */
import { brIf, get, i32, ifThen, loop, set, simd, tee, uleb, vec } from "./wasm_encode.ts";
import {
  add,
  anyTrue,
  cvt,
  dotAdd,
  f32Load,
  f32x4Add,
  f32x4Ge,
  f32x4Mul,
  f32x4Splat,
  I32,
  i32Store,
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

/** Columns of the projected head the screening's first stage reads (a multiple of 16). */
export const I8_HEAD = 32;

/**
 * The bytes of the head module (see `i8_scan.ts`'s module notes, "Two
 * stages"): imports `env.memory`, exports
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
 * import { i8HeadModuleBytes } from "./wasm_i8_head.ts";
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

let headCache: WebAssembly.Module | null | undefined;

/** The compiled head module (`i8HeadModuleBytes`), or `null` where it cannot run. */
export function headModule(): WebAssembly.Module | null {
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
