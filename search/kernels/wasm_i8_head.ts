/**
 * The head module of the 8-bit screening's first stage (see `i8_scan.ts`'s
 * module notes, "Two stages"): its bytes ({@linkcode i8HeadModuleBytes}:
 * the rows' projection and the gated scan), its columns
 * ({@linkcode I8_HEAD}) and the module compiled once
 * ({@linkcode headModule}).
 *
 * @module
 */
import {
  block,
  br,
  brIf,
  get,
  i32,
  ifThen,
  loop,
  onceModule,
  set,
  simd,
  tee,
  uleb,
  vec,
} from "./wasm_encode.ts";
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
  i32x4Add,
  i32x4Sub,
  ifElse,
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
 * - `filter_head_l2(…)`: the same with `G = f32(hd)·spH + τ·tq − π·pq`;
 * - `filter_head_list(…, list)` and `filter_head_list_l2(…, list)`: the
 *   same records and count, in the same order, made in two steps per quad:
 *   its heads with every question, the questions that pass appended to a
 *   list at `list` (one i32 each, without a branch), then the full dots of
 *   the listed questions two at a time (the quad's rows loaded once for
 *   both, eight independent sums), the last one alone (each row's sum in
 *   two chains). The gate's outcome is hard to predict, and a branch on it
 *   per question cost more than the head's dot products; `filter_head`
 *   takes the full dots of a pair's questions at once where both pass.
 *
 * @example
 * ```ts
 * import { i8HeadModuleBytes } from "./wasm_i8_head.ts";
 * if (!WebAssembly.validate(i8HeadModuleBytes())) console.log("no relaxed SIMD here");
 * ```
 */
export function i8HeadModuleBytes(UN = 4): Uint8Array<ArrayBuffer> {
  const HB = I8_HEAD, HS = HB / 16;
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
    list: 17,
  };
  // The body of filter_head (`listed` false: params 0…16) or filter_head_list (params 0…17), `l2`
  // with `pen`.
  const filterHead = (pen: boolean, listed: boolean) => {
    // i32 locals from `i0`, then the v128 locals.
    const i0 = listed ? 18 : 17;
    const L = {
      g: i0,
      j: i0 + 1,
      k: i0 + 2,
      r1: i0 + 3,
      r2: i0 + 4,
      r3: i0 + 5,
      qp: i0 + 6,
      cnt: i0 + 7,
      rp: i0 + 8,
      rh: i0 + 9,
      qhp: i0 + 10,
      q1: i0 + 11,
      p0: i0 + 12,
      p1: i0 + 13,
      n: i0 + 14,
      x: i0 + 15,
      ja: i0 + 16,
      jb: i0 + 17,
      passed: i0 + 18,
    };
    const NI = 19, v0 = i0 + NI;
    const acc = (r: number, t: number) => v0 + 2 * r + t;
    const X = v0 + 8, Y = (t: number) => v0 + 9 + t;
    const V = {
      dots: v0 + 11,
      corrv: v0 + 12,
      spv: v0 + 13,
      ab: v0 + 14,
      cd: v0 + 15,
      corrHv: v0 + 16,
      spHv: v0 + 17,
    };
    const hd = (t: number) => v0 + 18 + t;
    // The quad's per-row gate factors: τ, and π (a lower bound on ‖p‖², for l2).
    const rowv = (m: number) => v0 + 20 + m;
    const NV = 22;
    const rows = [L.rp, L.r1, L.r2, L.r3];
    // into = q + (question)·d16, the question in local `jl` (plus `t`).
    const qAt = (jl: number, t: number, into: number) => [
      ...get(P.q),
      ...get(jl),
      ...i32(t),
      ...add,
      ...get(P.d16),
      ...mul,
      ...add,
      ...set(into),
    ];
    // The full 8-bit dots of the quad with one or two questions (`qs`: [local, + t] each), d16
    // bytes in steps of 16·UN, each row's sum in acc(r, x) for the x-th question; one question
    // splits each row's sum in two chains (acc(r, 0) the even steps, acc(r, 1) the odd ones), so
    // that no chain of dot-adds is longer than d16/32.
    const dots = (qs: [number, number][]) => {
      const two = qs.length === 2, qps = [L.qp, L.q1];
      const chain = (x: number, h: number) => two ? x : h & 1;
      return [
        ...qs.flatMap(([jl, t], x) => qAt(jl, t, qps[x])),
        ...[0, 1, 2, 3].flatMap((r) => [0, 1].flatMap((c) => [...zero, ...set(acc(r, c))])),
        ...i32(0),
        ...set(L.k),
        ...loop([
          ...Array.from({ length: UN }, (_, h) => [
            ...qs.flatMap((_, x) => loadAt(qps[x], L.k, Y(x), 16 * h)),
            ...rows.flatMap((base, r) => [
              ...loadAt(base, L.k, X, 16 * h),
              ...qs.flatMap((_, x) => [
                ...get(X),
                ...get(Y(x)),
                ...get(acc(r, chain(x, h))),
                ...dotAdd,
                ...set(acc(r, chain(x, h))),
              ]),
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
        ...(two ? [] : [0, 1, 2, 3].flatMap((r) => [
          ...get(acc(r, 0)),
          ...get(acc(r, 1)),
          ...i32x4Add,
          ...set(acc(r, 0)),
        ])),
      ];
    };
    // The record test of question (local jl) + t on the dots in acc(·, c).
    const test = (jl: number, t: number, c: number) => [
      ...reduce4(acc(0, c), acc(1, c), acc(2, c), acc(3, c), V.ab, V.cd),
      ...get(V.corrv),
      ...i32x4Sub,
      ...set(V.dots),
      ...recordIf({ u: P.u, j: jl, out: P.out, cnt: L.cnt, rec: L.k, g: L.g }, t, V.dots, V.spv),
    ];
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
    // G = f32(hd)·spH + τ·tq (− π·pq with pen); p_t = some lane of G ≥ uh[j+t].
    const gate = (t: number) => [
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
      ...set(t === 0 ? L.p0 : L.p1),
    ];
    // filter_head: the full dots of the pair's questions whose head passed, at once where both
    // did; their records in question order.
    const fullNow = [
      ...get(L.p0),
      ...get(L.p1),
      0x71, // i32.and
      ...ifElse(
        [...dots([[L.j, 0], [L.j, 1]]), ...test(L.j, 0, 0), ...test(L.j, 1, 1)],
        [
          ...get(L.p0),
          ...ifThen([...dots([[L.j, 0]]), ...test(L.j, 0, 0)]),
          ...get(L.p1),
          ...ifThen([...dots([[L.j, 1]]), ...test(L.j, 1, 0)]),
        ],
      ),
    ];
    // filter_head_list: the questions that passed appended to the quad's list (no branch).
    const listNow = [0, 1].flatMap((t) => [
      ...get(P.list),
      ...get(L.n),
      ...i32(4),
      ...mul,
      ...add,
      ...get(L.j),
      ...i32(t),
      ...add,
      ...i32Store(0),
      ...get(L.n),
      ...get(t === 0 ? L.p0 : L.p1),
      ...add,
      ...set(L.n),
    ]);
    // list[x] into local `into`.
    const listAt = (x: number, into: number) => [
      ...get(P.list),
      ...get(L.x),
      ...i32(4),
      ...mul,
      ...add,
      0x28,
      2,
      ...uleb(4 * x),
      ...set(into),
    ];
    // filter_head_list, after the quad's heads: its list two questions at a time (the quad's rows
    // loaded once for both), then the last one alone; records in list order.
    const fullListed = [
      ...i32(0),
      ...set(L.x),
      ...block([
        ...loop([
          ...get(L.x),
          ...i32(1),
          ...add,
          ...get(L.n),
          ...ltu,
          0x45, // i32.eqz
          ...brIf(1),
          ...listAt(0, L.ja),
          ...listAt(1, L.jb),
          ...dots([[L.ja, 0], [L.jb, 0]]),
          ...test(L.ja, 0, 0),
          ...test(L.jb, 0, 1),
          ...get(L.x),
          ...i32(2),
          ...add,
          ...set(L.x),
          ...br(0),
        ]),
      ]),
      ...get(L.x),
      ...get(L.n),
      ...ltu,
      ...ifThen([...listAt(0, L.ja), ...dots([[L.ja, 0]]), ...test(L.ja, 0, 0)]),
    ];
    return [
      ...vec([[NI, I32], [NV, V128]]),
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
        ...i32(0),
        ...set(L.n),
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
          ...gate(0),
          ...gate(1),
          // the pairs that passed, counted
          ...get(L.passed),
          ...get(L.p0),
          ...add,
          ...get(L.p1),
          ...add,
          ...set(L.passed),
          ...(listed ? listNow : fullNow),
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
        ...(listed ? fullListed : []),
        ...get(L.rh),
        ...i32(4 * HB),
        ...add,
        ...set(L.rh),
        ...nextQuad(L, P.d16, P.nquads),
      ]),
      // stats += the pairs that passed (i32)
      ...get(P.stats),
      ...get(P.stats),
      0x28,
      2,
      0,
      ...get(L.passed),
      ...add,
      ...i32Store(0),
      ...get(L.cnt),
      0x0b,
    ];
  };
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
    { name: "filter_head", params: 17, result: true, body: filterHead(false, false) },
    { name: "filter_head_l2", params: 17, result: true, body: filterHead(true, false) },
    { name: "filter_head_list", params: 18, result: true, body: filterHead(false, true) },
    { name: "filter_head_list_l2", params: 18, result: true, body: filterHead(true, true) },
    { name: "project", params: 5, result: false, body: project },
  ]);
}

const compiled = onceModule(i8HeadModuleBytes);

/** The compiled head module (`i8HeadModuleBytes`), or `null` where it cannot run. */
export function headModule(): WebAssembly.Module | null {
  return compiled() ?? null;
}
