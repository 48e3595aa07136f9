/**
 * The nearest-centroid kernel of the IVF-PQ build (`search/index/ivfpq/kmeans.ts`,
 * `ivf_encode.ts`): every row's nearest of `k` centroids, the k-means
 * assignment and the encoding's list and code of each row, assembled here
 * from its instructions (no toolchain, no binary blob), as `wasm_simd.ts`
 * and `wasm_fastscan.ts` are.
 *
 * **What it computes**: exactly `kmeans.ts`'s `nearest`, bit for bit: for
 * row `x` and centroid `c_j`, `dist_j = ‖c_j‖² − 2·(s0 + s1)` in float64,
 * `s0` the float64 sum of `x_t·c_jt` over the even `t` in order and `s1`
 * over the odd `t` (each product of two float32 values exact in float64,
 * each sum rounded as float64), the last dimension of an odd `d` added to
 * `s0` last; the nearest is the first `j` with the smallest `dist_j`
 * (strict `<`, ties to the lower centroid). The two sums are the two lanes
 * of one `f64x2` (`f64x2.mul`, `f64x2.add`: IEEE float64, no fused
 * multiply-add), so every `dist_j` is the float64 number `nearest`
 * computes, and the answers are the same integers.
 *
 * - `rows(xp, n, d, cp, np, k, outp)`: `n` row-major float32 rows of `d`
 *   at `xp`, `k` float64 centroids (row-major) at `cp`, their float64
 *   squared norms at `np`; row `i`'s nearest as an i32 at `outp + 4·i`.
 *   Four centroids a pass share each row load (four independent sums).
 * - `small(xp, n, rs, d, cp, np, k, outp, os, sp)`: for short rows
 *   (sub-quantizers: `d` of 3 and 5 … 8) and `k` ≤ 256: rows `i` at
 *   `xp + 4·i·rs` (a row stride `rs`, so one sub-quantizer's columns of
 *   row-major residuals are read in place), two rows a pass (one per
 *   lane, their values promoted once into 16 bytes per dimension at
 *   `sp`), the running minimum and its index kept per lane by `f64x2.lt`
 *   and `v128.bitselect`; row `i`'s nearest as a byte at `outp + i·os`.
 * - `one`, `two`, `four(xp, n, rs, tp, k, outp, os)`: `small` for `d` = 1,
 *   2 and 4 (4-bit PQ's sub-quantizers, and 8-bit PQ's of 2 and 4
 *   dimensions), eight rows a pass (four `f64x2`, four independent running
 *   minimums), each entry's values and norm as splatted pairs at `tp`:
 *   `dist_j = ‖c_j‖² − 2·(s0 + s1)` with the same sums, which is `nearest`'s
 *   number: its sums start from 0, and `0 + x·c` and `+ 0` change nothing but
 *   a −0 to +0, and `‖c_j‖² − 2·(±0)` is the same number either way.
 * - `one32`, `two32`, `four32(xp, n, rs, tp, k, outp, os)`: their float32
 *   screens, sixteen rows a pass (four a `f32x4`): each row's smallest
 *   float32 distance's entry, and how many rows they leave undecided
 *   (`nearest.ts`, `nearestSub`, says when the entry is `nearest`'s answer;
 *   the caller takes a call with any undecided row again in float64).
 *
 * `search/kernels/nearest.ts` drives it (`NearestKernel`, `PairDistances`).
 *
 * @module
 */
import {
  block,
  br,
  brIf,
  f64c,
  get,
  i32,
  ifThen,
  loop,
  name,
  onceModule,
  section,
  set,
  simd,
  tee,
  uleb,
  vec,
} from "./wasm_encode.ts";

const I32 = 0x7f, F64 = 0x7c, V128 = 0x7b;

/**
 * The bytes of the nearest-centroid module: exports `memory` (its own) and
 * the functions `rows`, `small`, `one`, `two`, `four`, `one32`, `two32`,
 * `four32`, `list`, `flist` and `resid` (see the module notes).
 *
 * @example
 * ```ts
 * import { nearestModuleBytes } from "./wasm_nearest.ts";
 * if (!WebAssembly.validate(nearestModuleBytes())) throw new Error("invalid module");
 * ```
 */
export function nearestModuleBytes(): Uint8Array<ArrayBuffer> {
  const add = [0x6a], sub = [0x6b], mul = [0x6c], and = [0x71];
  const geU = [0x4f], gtU = [0x4b], ltU = [0x49];
  const fadd = [0xa0], fsub = [0xa1], fmul = [0xa2], flt = [0x63], promoteF32 = [0xbb];
  const f32Load = [0x2a, 2, 0], f64Load = [0x2b, 3, 0], i32Store = [0x36, 2, 0];
  const store8 = [0x3a, 0, 0], wrap = [0xa7], select = [0x1b];
  const vload = (off: number) => simd(0x00, 3, ...uleb(off));
  const vstore = simd(0x0b, 3, 0);
  const load64Zero = simd(0x5d, 3, 0), load64Splat = (off: number) => simd(0x0a, 3, ...uleb(off));
  const promote = simd(0x5f);
  const vadd = simd(0xf0), vsub = simd(0xf1), vmul = simd(0xf2), vlt = simd(0x49);
  const bitselect = simd(0x52), i64Add = simd(0xce);
  const fsplat = simd(0x14), lane = (l: number) => simd(0x21, l);
  const replace = (l: number) => simd(0x22, l), i64Lane = (l: number) => simd(0x1d, l);
  const zero = simd(0x0c, ...new Array(16).fill(0));
  const v64 = (lo: number[], hi: number[]) => simd(0x0c, ...lo, ...hi);
  const bytesOf = (v: number) => [...new Uint8Array(new Float64Array([v]).buffer)];
  const i64Bytes = (v: number) => [...new Uint8Array(new BigInt64Array([BigInt(v)]).buffer)];

  // rows(xp, n, d, cp, np, k, outp)
  const R = {
    xp: 0,
    n: 1,
    d: 2,
    cp: 3,
    np: 4,
    k: 5,
    outp: 6,
    i: 7,
    xo: 8,
    j: 9,
    t: 10,
    bi: 11,
    co: 12,
    d8: 13,
    p: 14,
    best: 15,
    s0: 16,
    s1: 17,
    dist: 18,
    a: 19, // a0 … a3: 19 … 22
    xv: 23,
  };
  // The distance of centroid j + g from accumulator a_g (see the module notes), kept if smaller.
  const finish = (g: number) => [
    ...get(R.a + g),
    ...lane(0),
    ...set(R.s0),
    ...get(R.a + g),
    ...lane(1),
    ...set(R.s1),
    ...get(R.d),
    ...i32(1),
    ...and,
    ...ifThen([
      ...get(R.s0),
      ...get(R.xo),
      ...get(R.d),
      ...i32(1),
      ...sub,
      ...i32(4),
      ...mul,
      ...add,
      ...f32Load,
      ...promoteF32,
      ...get(R.co),
      ...get(R.d8),
      ...i32(g),
      ...mul,
      ...add,
      ...get(R.d),
      ...i32(1),
      ...sub,
      ...i32(8),
      ...mul,
      ...add,
      ...f64Load,
      ...fmul,
      ...fadd,
      ...set(R.s0),
    ]),
    ...get(R.np),
    ...get(R.j),
    ...i32(g),
    ...add,
    ...i32(8),
    ...mul,
    ...add,
    ...f64Load,
    ...f64c(2),
    ...get(R.s0),
    ...get(R.s1),
    ...fadd,
    ...fmul,
    ...fsub,
    ...tee(R.dist),
    ...get(R.best),
    ...flt,
    ...ifThen([
      ...get(R.dist),
      ...set(R.best),
      ...get(R.j),
      ...i32(g),
      ...add,
      ...set(R.bi),
    ]),
  ];
  // The pair loop of `groups` centroids from R.co: a_g += x[t, t+1] · c_{j+g}[t, t+1].
  const pairs = (groups: number) => [
    ...i32(0),
    ...set(R.t),
    ...block(loop([
      ...get(R.t),
      ...i32(2),
      ...add,
      ...get(R.d),
      ...gtU,
      ...brIf(1),
      ...get(R.xo),
      ...get(R.t),
      ...i32(4),
      ...mul,
      ...add,
      ...load64Zero,
      ...promote,
      ...set(R.xv),
      ...get(R.co),
      ...get(R.t),
      ...i32(8),
      ...mul,
      ...add,
      ...set(R.p),
      ...Array.from({ length: groups }, (_, g) => [
        ...get(R.a + g),
        ...get(R.xv),
        ...get(R.p),
        ...(g === 0 ? [] : [...get(R.d8), ...i32(g), ...mul, ...add]),
        ...vload(0),
        ...vmul,
        ...vadd,
        ...set(R.a + g),
      ]).flat(),
      ...get(R.t),
      ...i32(2),
      ...add,
      ...set(R.t),
      ...br(0),
    ])),
  ];
  const startGroup = (groups: number) => [
    ...Array.from({ length: groups }, (_, g) => [...zero, ...set(R.a + g)]).flat(),
    ...get(R.cp),
    ...get(R.j),
    ...get(R.d8),
    ...mul,
    ...add,
    ...set(R.co),
  ];
  const rowsBody = [
    ...vec([[8, I32], [4, F64], [5, V128]]),
    ...get(R.d),
    ...i32(8),
    ...mul,
    ...set(R.d8),
    ...i32(0),
    ...set(R.i),
    ...block(loop([
      ...get(R.i),
      ...get(R.n),
      ...geU,
      ...brIf(1),
      ...get(R.xp),
      ...get(R.i),
      ...get(R.d),
      ...mul,
      ...i32(4),
      ...mul,
      ...add,
      ...set(R.xo),
      ...f64c(Infinity),
      ...set(R.best),
      ...i32(0),
      ...set(R.bi),
      ...i32(0),
      ...set(R.j),
      // four centroids a pass
      ...block(loop([
        ...get(R.j),
        ...i32(4),
        ...add,
        ...get(R.k),
        ...gtU,
        ...brIf(1),
        ...startGroup(4),
        ...pairs(4),
        ...finish(0),
        ...finish(1),
        ...finish(2),
        ...finish(3),
        ...get(R.j),
        ...i32(4),
        ...add,
        ...set(R.j),
        ...br(0),
      ])),
      // the rest one at a time
      ...block(loop([
        ...get(R.j),
        ...get(R.k),
        ...geU,
        ...brIf(1),
        ...startGroup(1),
        ...pairs(1),
        ...finish(0),
        ...get(R.j),
        ...i32(1),
        ...add,
        ...set(R.j),
        ...br(0),
      ])),
      ...get(R.outp),
      ...get(R.i),
      ...i32(4),
      ...mul,
      ...add,
      ...get(R.bi),
      ...i32Store,
      ...get(R.i),
      ...i32(1),
      ...add,
      ...set(R.i),
      ...br(0),
    ])),
    0x0b,
  ];

  // small(xp, n, rs, d, cp, np, k, outp, os, sp)
  const S = {
    xp: 0,
    n: 1,
    rs: 2,
    d: 3,
    cp: 4,
    np: 5,
    k: 6,
    outp: 7,
    os: 8,
    sp: 9,
    i: 10,
    r0: 11,
    r1: 12,
    t: 13,
    j: 14,
    co: 15,
    d8: 16,
    best: 17,
    bi: 18,
    jv: 19,
    s0: 20,
    s1: 21,
    dist: 22,
    m: 23,
  };
  const xs = (
    off: number,
  ) => [...get(S.sp), ...get(S.t), ...i32(16), ...mul, ...add, ...vload(off)];
  const cs = (
    off: number,
  ) => [...get(S.co), ...get(S.t), ...i32(8), ...mul, ...add, ...load64Splat(off)];
  const smallBody = [
    ...vec([[7, I32], [7, V128]]),
    ...get(S.d),
    ...i32(8),
    ...mul,
    ...set(S.d8),
    ...i32(0),
    ...set(S.i),
    ...block(loop([
      ...get(S.i),
      ...get(S.n),
      ...geU,
      ...brIf(1),
      // the pair's rows (the last row twice when n is odd)
      ...get(S.xp),
      ...get(S.i),
      ...get(S.rs),
      ...mul,
      ...i32(4),
      ...mul,
      ...add,
      ...set(S.r0),
      ...get(S.xp),
      ...get(S.i),
      ...i32(1),
      ...add,
      ...get(S.i),
      ...get(S.i),
      ...i32(1),
      ...add,
      ...get(S.n),
      ...ltU,
      ...select,
      ...get(S.rs),
      ...mul,
      ...i32(4),
      ...mul,
      ...add,
      ...set(S.r1),
      // their values promoted, dimension t at sp + 16·t
      ...i32(0),
      ...set(S.t),
      ...block(loop([
        ...get(S.t),
        ...get(S.d),
        ...geU,
        ...brIf(1),
        ...get(S.sp),
        ...get(S.t),
        ...i32(16),
        ...mul,
        ...add,
        ...get(S.r0),
        ...get(S.t),
        ...i32(4),
        ...mul,
        ...add,
        ...f32Load,
        ...promoteF32,
        ...fsplat,
        ...get(S.r1),
        ...get(S.t),
        ...i32(4),
        ...mul,
        ...add,
        ...f32Load,
        ...promoteF32,
        ...replace(1),
        ...vstore,
        ...get(S.t),
        ...i32(1),
        ...add,
        ...set(S.t),
        ...br(0),
      ])),
      ...v64(bytesOf(Infinity), bytesOf(Infinity)),
      ...set(S.best),
      ...zero,
      ...set(S.bi),
      ...zero,
      ...set(S.jv),
      ...get(S.cp),
      ...set(S.co),
      ...i32(0),
      ...set(S.j),
      ...block(loop([
        ...get(S.j),
        ...get(S.k),
        ...geU,
        ...brIf(1),
        ...zero,
        ...set(S.s0),
        ...zero,
        ...set(S.s1),
        ...i32(0),
        ...set(S.t),
        ...block(loop([
          ...get(S.t),
          ...i32(2),
          ...add,
          ...get(S.d),
          ...gtU,
          ...brIf(1),
          ...get(S.s0),
          ...xs(0),
          ...cs(0),
          ...vmul,
          ...vadd,
          ...set(S.s0),
          ...get(S.s1),
          ...xs(16),
          ...cs(8),
          ...vmul,
          ...vadd,
          ...set(S.s1),
          ...get(S.t),
          ...i32(2),
          ...add,
          ...set(S.t),
          ...br(0),
        ])),
        ...get(S.t),
        ...get(S.d),
        ...ltU,
        ...ifThen([...get(S.s0), ...xs(0), ...cs(0), ...vmul, ...vadd, ...set(S.s0)]),
        // dist = ‖c_j‖² − 2·(s0 + s1), per lane
        ...get(S.np),
        ...get(S.j),
        ...i32(8),
        ...mul,
        ...add,
        ...load64Splat(0),
        ...v64(bytesOf(2), bytesOf(2)),
        ...get(S.s0),
        ...get(S.s1),
        ...vadd,
        ...vmul,
        ...vsub,
        ...tee(S.dist),
        ...get(S.best),
        ...vlt,
        ...set(S.m),
        ...get(S.dist),
        ...get(S.best),
        ...get(S.m),
        ...bitselect,
        ...set(S.best),
        ...get(S.jv),
        ...get(S.bi),
        ...get(S.m),
        ...bitselect,
        ...set(S.bi),
        ...get(S.jv),
        ...v64(i64Bytes(1), i64Bytes(1)),
        ...i64Add,
        ...set(S.jv),
        ...get(S.co),
        ...get(S.d8),
        ...add,
        ...set(S.co),
        ...get(S.j),
        ...i32(1),
        ...add,
        ...set(S.j),
        ...br(0),
      ])),
      ...get(S.outp),
      ...get(S.i),
      ...get(S.os),
      ...mul,
      ...add,
      ...get(S.bi),
      ...i64Lane(0),
      ...wrap,
      ...store8,
      ...get(S.i),
      ...i32(1),
      ...add,
      ...get(S.n),
      ...ltU,
      ...ifThen([
        ...get(S.outp),
        ...get(S.i),
        ...i32(1),
        ...add,
        ...get(S.os),
        ...mul,
        ...add,
        ...get(S.bi),
        ...i64Lane(1),
        ...wrap,
        ...store8,
      ]),
      ...get(S.i),
      ...i32(2),
      ...add,
      ...set(S.i),
      ...br(0),
    ])),
    0x0b,
  ];

  // The address of row i + o of one, two, four and their float32 screens (locals L: xp, i, n and
  // the row stride rs): the last row's where i + o ≥ n.
  const rowAddress = (L: { xp: number; i: number; n: number; rs: number }, o: number) => [
    ...get(L.xp),
    ...get(L.i),
    ...i32(o),
    ...add,
    ...get(L.n),
    ...i32(1),
    ...sub,
    ...get(L.i),
    ...i32(o),
    ...add,
    ...get(L.n),
    ...ltU,
    ...select,
    ...get(L.rs),
    ...mul,
    ...i32(4),
    ...mul,
    ...add,
  ];
  // one, two, four(xp, n, rs, tp, k, outp, os): `small` for d = 1, 2, 4 (`dd`), eight rows a
  // pass (V f64x2 vectors of two rows: V independent running minimums, not one chain), each
  // entry's values and norm as splatted pairs at tp (16·(dd + 1) bytes an entry: c_0, c_0, …,
  // ‖c‖², ‖c‖²).
  const V = 4;
  const pairsBody = (dd: number) => {
    const O = {
      xp: 0,
      n: 1,
      rs: 2,
      tp: 3,
      k: 4,
      outp: 5,
      os: 6,
      i: 7,
      j: 8,
      q: 9,
      x: 10, // x_{v,t}: 10 + v·dd + t
      b: 10 + V * dd, // best_v
      bi: 10 + V * dd + V, // its index
      jv: 10 + V * dd + 2 * V,
      c: 11 + V * dd + 2 * V, // c_t: dd of them
      nn: 11 + V * dd + 2 * V + dd,
      dist: 12 + V * dd + 2 * V + dd,
      m: 13 + V * dd + 2 * V + dd,
    };
    const rowAt = (o: number) => rowAddress(O, o);
    // Dimension t of rows 2v and 2v + 1, promoted, one per lane.
    const loadPair = (v: number, t: number) => [
      ...rowAt(2 * v),
      ...[0x2a, 2, ...uleb(4 * t)],
      ...promoteF32,
      ...fsplat,
      ...rowAt(2 * v + 1),
      ...[0x2a, 2, ...uleb(4 * t)],
      ...promoteF32,
      ...replace(1),
      ...set(O.x + v * dd + t),
    ];
    // The sum of x_t·c_t over the dimensions t = first, first + 2, … (nearest's s0 or s1).
    const laneSum = (v: number, first: number) => {
      const out: number[] = [];
      for (let t = first; t < dd; t += 2) {
        out.push(...get(O.x + v * dd + t), ...get(O.c + t), ...vmul);
        if (t > first) out.push(...vadd);
      }
      return out;
    };
    // dist = ‖c‖² − 2·(s0 + s1) per lane (see the notes of nearestSub), kept where smaller.
    const step = (v: number) => [
      ...get(O.nn),
      ...laneSum(v, 0),
      ...(dd > 1 ? [...laneSum(v, 1), ...vadd] : []),
      ...tee(O.dist),
      ...get(O.dist),
      ...vadd,
      ...vsub,
      ...tee(O.dist),
      ...get(O.b + v),
      ...vlt,
      ...set(O.m),
      ...get(O.dist),
      ...get(O.b + v),
      ...get(O.m),
      ...bitselect,
      ...set(O.b + v),
      ...get(O.jv),
      ...get(O.bi + v),
      ...get(O.m),
      ...bitselect,
      ...set(O.bi + v),
    ];
    const put = (v: number, l: number) => {
      const o = 2 * v + l;
      const store = [
        ...get(O.outp),
        ...get(O.i),
        ...i32(o),
        ...add,
        ...get(O.os),
        ...mul,
        ...add,
        ...get(O.bi + v),
        ...i64Lane(l),
        ...wrap,
        ...store8,
      ];
      return o === 0
        ? store
        : [...get(O.i), ...i32(o), ...add, ...get(O.n), ...ltU, ...ifThen(store)];
    };
    return [
      ...vec([[3, I32], [V * dd + 2 * V + dd + 4, V128]]),
      ...i32(0),
      ...set(O.i),
      ...block(loop([
        ...get(O.i),
        ...get(O.n),
        ...geU,
        ...brIf(1),
        ...Array.from({ length: V * dd }, (_, e) => loadPair(Math.floor(e / dd), e % dd)).flat(),
        ...v64(bytesOf(Infinity), bytesOf(Infinity)),
        ...Array.from({ length: V - 1 }, (_, v) => tee(O.b + v)).flat(),
        ...set(O.b + V - 1),
        ...zero,
        ...Array.from({ length: V }, (_, v) => tee(O.bi + v)).flat(),
        ...set(O.jv),
        ...get(O.tp),
        ...set(O.q),
        ...i32(0),
        ...set(O.j),
        ...block(loop([
          ...get(O.j),
          ...get(O.k),
          ...geU,
          ...brIf(1),
          ...Array.from({ length: dd }, (_, t) => [...get(O.q), ...vload(16 * t), ...set(O.c + t)])
            .flat(),
          ...get(O.q),
          ...vload(16 * dd),
          ...set(O.nn),
          ...Array.from({ length: V }, (_, v) => step(v)).flat(),
          ...get(O.jv),
          ...v64(i64Bytes(1), i64Bytes(1)),
          ...i64Add,
          ...set(O.jv),
          ...get(O.q),
          ...i32(16 * (dd + 1)),
          ...add,
          ...set(O.q),
          ...get(O.j),
          ...i32(1),
          ...add,
          ...set(O.j),
          ...br(0),
        ])),
        ...Array.from({ length: 2 * V }, (_, o) => put(o >> 1, o & 1)).flat(),
        ...get(O.i),
        ...i32(2 * V),
        ...add,
        ...set(O.i),
        ...br(0),
      ])),
      0x0b,
    ];
  };
  const oneBody = pairsBody(1), twoBody = pairsBody(2), fourBody = pairsBody(4);

  // one32, two32, four32(xp, n, rs, tp, k, outp, os) → i32: a float32 screen of one, two
  // and four: sixteen rows a pass, four a vector (one per f32x4 lane), and per sub-quantizer at
  // tp a header of dd + 1 splatted float32 constants (K0, K1 … Kdd) then each entry's −2·c_t
  // and fround(‖c‖²), splatted (16·(dd + 1) bytes an entry). dist = ((‖c‖² + x_0·(−2c_0)) +
  // x_1·(−2c_1)) … in float32 (plain mul and add); per lane the smallest (its first entry: f32x4.lt)
  // and the second smallest (f32x4.pmin/pmax); B = (K0 + Σ_t |x_t|·K_t) + 2⁻¹²⁰. The row's code
  // is that entry, which is nearest's answer where second − best > B + B and B < 2⁶⁰ (see
  // nearest.ts, nearestSub); returns how many lanes are not (rows past n, copies of the last
  // row, included): the caller takes the whole call again in float64 when any is not.
  const F4 = { add: simd(0xe4), sub: simd(0xe5), mul: simd(0xe6), abs: simd(0xe0) };
  const f4lt = simd(0x43), f4gt = simd(0x44), pmin = simd(0xea), pmax = simd(0xeb);
  const f4splat = simd(0x13), f4replace = (l: number) => simd(0x20, l);
  const vand = simd(0x4e), vnot = simd(0x4d), bitmask = simd(0xa4), i4add = simd(0xae);
  const i4lane = (l: number) => simd(0x1b, l);
  const f32x4c = (bits: number) =>
    simd(0x0c, ...Array(4).fill([...new Uint8Array(new Uint32Array([bits]).buffer)]).flat());
  const pairs32Body = (dd: number) => {
    const W = 4; // vectors of four rows a pass
    const P = {
      xp: 0,
      n: 1,
      rs: 2,
      tp: 3,
      k: 4,
      outp: 5,
      os: 6,
      i: 7,
      j: 8,
      q: 9,
      cnt: 10,
      x: 11, // x_{v,t}: 11 + v·dd + t
      best: 11 + W * dd,
      second: 11 + W * dd + W,
      idx: 11 + W * dd + 2 * W,
      bnd: 11 + W * dd + 3 * W,
      jv: 11 + W * dd + 4 * W,
      c: 12 + W * dd + 4 * W, // c_t: dd of them
      nn: 12 + W * dd + 4 * W + dd,
      dist: 13 + W * dd + 4 * W + dd,
      m: 14 + W * dd + 4 * W + dd,
    };
    const rowAt = (o: number) => rowAddress(P, o);
    // Dimension t of rows 4v … 4v + 3, one per lane.
    const loadFour = (v: number, t: number) => [
      ...rowAt(4 * v),
      ...[0x2a, 2, ...uleb(4 * t)],
      ...f4splat,
      ...[1, 2, 3].flatMap((
        l,
      ) => [...rowAt(4 * v + l), ...[0x2a, 2, ...uleb(4 * t)], ...f4replace(l)]),
      ...set(P.x + v * dd + t),
    ];
    // B_v = (K0 + Σ_t |x_t|·K_t) + 2⁻¹²⁰.
    const bound = (v: number) => [
      ...get(P.tp),
      ...vload(0),
      ...Array.from({ length: dd }, (_, t) => [
        ...get(P.x + v * dd + t),
        ...F4.abs,
        ...get(P.tp),
        ...vload(16 * (t + 1)),
        ...F4.mul,
        ...F4.add,
      ]).flat(),
      ...f32x4c(0x03800000),
      ...F4.add,
      ...set(P.bnd + v),
    ];
    const step = (v: number) => [
      ...get(P.nn),
      ...Array.from({ length: dd }, (_, t) => [
        ...get(P.x + v * dd + t),
        ...get(P.c + t),
        ...F4.mul,
        ...F4.add,
      ]).flat(),
      ...tee(P.dist),
      ...get(P.best + v),
      ...f4lt,
      ...set(P.m),
      ...get(P.jv),
      ...get(P.idx + v),
      ...get(P.m),
      ...bitselect,
      ...set(P.idx + v),
      ...get(P.second + v),
      ...get(P.best + v),
      ...get(P.dist),
      ...pmax,
      ...pmin,
      ...set(P.second + v),
      ...get(P.best + v),
      ...get(P.dist),
      ...pmin,
      ...set(P.best + v),
    ];
    // The lanes where not (second − best > B + B and B < 2⁶⁰), counted.
    const decide = (v: number) => [
      ...get(P.second + v),
      ...get(P.best + v),
      ...F4.sub,
      ...get(P.bnd + v),
      ...get(P.bnd + v),
      ...F4.add,
      ...f4gt,
      ...get(P.bnd + v),
      ...f32x4c(0x5d800000),
      ...f4lt,
      ...vand,
      ...vnot,
      ...bitmask,
      0x69, // i32.popcnt
      ...get(P.cnt),
      ...add,
      ...set(P.cnt),
    ];
    const put = (v: number, l: number) => {
      const o = 4 * v + l;
      const at = [...get(P.outp), ...get(P.i), ...i32(o), ...add, ...get(P.os), ...mul, ...add];
      const store = [...at, ...get(P.idx + v), ...i4lane(l), ...store8];
      return o === 0
        ? store
        : [...get(P.i), ...i32(o), ...add, ...get(P.n), ...ltU, ...ifThen(store)];
    };
    return [
      ...vec([[4, I32], [W * dd + 4 * W + dd + 4, V128]]),
      ...i32(0),
      ...set(P.i),
      ...block(loop([
        ...get(P.i),
        ...get(P.n),
        ...geU,
        ...brIf(1),
        ...Array.from({ length: W * dd }, (_, e) => loadFour(Math.floor(e / dd), e % dd)).flat(),
        ...Array.from({ length: W }, (_, v) => bound(v)).flat(),
        ...f32x4c(0x7f800000),
        ...Array.from({ length: 2 * W - 1 }, (_, v) => tee(P.best + v)).flat(),
        ...set(P.best + 2 * W - 1),
        ...zero,
        ...Array.from({ length: W }, (_, v) => tee(P.idx + v)).flat(),
        ...set(P.jv),
        ...get(P.tp),
        ...i32(16 * (dd + 1)),
        ...add,
        ...set(P.q),
        ...i32(0),
        ...set(P.j),
        ...block(loop([
          ...get(P.j),
          ...get(P.k),
          ...geU,
          ...brIf(1),
          ...Array.from({ length: dd }, (_, t) => [...get(P.q), ...vload(16 * t), ...set(P.c + t)])
            .flat(),
          ...get(P.q),
          ...vload(16 * dd),
          ...set(P.nn),
          ...Array.from({ length: W }, (_, v) => step(v)).flat(),
          ...get(P.jv),
          ...f32x4c(1),
          ...i4add,
          ...set(P.jv),
          ...get(P.q),
          ...i32(16 * (dd + 1)),
          ...add,
          ...set(P.q),
          ...get(P.j),
          ...i32(1),
          ...add,
          ...set(P.j),
          ...br(0),
        ])),
        ...Array.from({ length: W }, (_, v) => [
          ...decide(v),
          ...[0, 1, 2, 3].flatMap((l) => put(v, l)),
        ]).flat(),
        ...get(P.i),
        ...i32(4 * W),
        ...add,
        ...set(P.i),
        ...br(0),
      ])),
      ...get(P.cnt),
      0x0b,
    ];
  };
  const one32Body = pairs32Body(1), two32Body = pairs32Body(2), four32Body = pairs32Body(4);
  // list(xo, d, cp, jp, m, outp): row xo's two lane sums with the m centroids listed at jp.
  const L = { xo: 0, d: 1, cp: 2, jp: 3, m: 4, outp: 5, q: 6, t: 7, d8: 8, p: 9, xv: 13, a: 14 };
  const i32Load = [0x28, 2, 0];
  // The body of list (float64, `bytes` 8) or flist (float32, `bytes` 4): four listed centroids a
  // pass (their rows at cp + j·d·bytes), the row's values `step` at a time (`loadX` puts them in
  // L.xv), `a_g += xv · c_g` lane by lane, then `store(g)` writes centroid g's result.
  const fourAtATime = (
    bytes: number,
    step: number,
    loadX: number[],
    vm: number[],
    va: number[],
    store: (g: number) => number[],
  ) => [
    ...vec([[7, I32], [5, V128]]),
    ...get(L.d),
    ...i32(bytes),
    ...mul,
    ...set(L.d8),
    ...i32(0),
    ...set(L.q),
    ...block(loop([
      ...get(L.q),
      ...get(L.m),
      ...geU,
      ...brIf(1),
      ...Array.from({ length: 4 }, (_, g) => [
        ...get(L.cp),
        ...get(L.jp),
        ...get(L.q),
        ...i32(g),
        ...add,
        ...i32(4),
        ...mul,
        ...add,
        ...i32Load,
        ...get(L.d8),
        ...mul,
        ...add,
        ...set(L.p + g),
        ...zero,
        ...set(L.a + g),
      ]).flat(),
      ...i32(0),
      ...set(L.t),
      ...block(loop([
        ...get(L.t),
        ...i32(step),
        ...add,
        ...get(L.d),
        ...gtU,
        ...brIf(1),
        ...get(L.xo),
        ...get(L.t),
        ...i32(4),
        ...mul,
        ...add,
        ...loadX,
        ...set(L.xv),
        ...Array.from({ length: 4 }, (_, g) => [
          ...get(L.a + g),
          ...get(L.xv),
          ...get(L.p + g),
          ...get(L.t),
          ...i32(bytes),
          ...mul,
          ...add,
          ...vload(0),
          ...vm,
          ...va,
          ...set(L.a + g),
        ]).flat(),
        ...get(L.t),
        ...i32(step),
        ...add,
        ...set(L.t),
        ...br(0),
      ])),
      ...Array.from({ length: 4 }, (_, g) => store(g)).flat(),
      ...get(L.q),
      ...i32(4),
      ...add,
      ...set(L.q),
      ...br(0),
    ])),
    0x0b,
  ];
  const listBody = fourAtATime(8, 2, [...load64Zero, ...promote], vmul, vadd, (g) => [
    ...get(L.outp),
    ...get(L.q),
    ...i32(g),
    ...add,
    ...i32(16),
    ...mul,
    ...add,
    ...get(L.a + g),
    ...vstore,
  ]);
  // flist(xo, d, cp, jp, m, outp): row xo's float32 dot products with the m centroids (float32
  // rows at cp) listed at jp: four lanes, each summing its products in order, then
  // ((l0 + l1) + (l2 + l3)), as the exact search's scores kernel sums (its error bound).
  const f4add = simd(0xe4), f4mul = simd(0xe6), f32Lane = (l: number) => simd(0x1f, l);
  const f32add = [0x92], f32Store = [0x38, 2, 0];
  const flistBody = fourAtATime(4, 4, vload(0), f4mul, f4add, (g) => [
    ...get(L.outp),
    ...get(L.q),
    ...i32(g),
    ...add,
    ...i32(4),
    ...mul,
    ...add,
    ...get(L.a + g),
    ...f32Lane(0),
    ...get(L.a + g),
    ...f32Lane(1),
    ...f32add,
    ...get(L.a + g),
    ...f32Lane(2),
    ...get(L.a + g),
    ...f32Lane(3),
    ...f32add,
    ...f32add,
    ...f32Store,
  ]);
  // resid(xp, n, d, cp, lp): row i at xp minus centroid lists[i] (float32 rows at cp, the
  // numbers at lp), in place, four lanes of f32x4.sub (IEEE single: x − c rounded once).
  const Rs = { xp: 0, n: 1, d: 2, cp: 3, lp: 4, i: 5, row: 6, cen: 7, t: 8, d4: 9 };
  const f4sub = simd(0xe5);
  const residBody = [
    ...vec([[5, I32]]),
    ...get(Rs.d),
    ...i32(4),
    ...mul,
    ...set(Rs.d4),
    ...i32(0),
    ...set(Rs.i),
    ...block(loop([
      ...get(Rs.i),
      ...get(Rs.n),
      ...geU,
      ...brIf(1),
      ...get(Rs.xp),
      ...get(Rs.i),
      ...get(Rs.d4),
      ...mul,
      ...add,
      ...set(Rs.row),
      ...get(Rs.cp),
      ...get(Rs.lp),
      ...get(Rs.i),
      ...i32(4),
      ...mul,
      ...add,
      ...i32Load,
      ...get(Rs.d4),
      ...mul,
      ...add,
      ...set(Rs.cen),
      ...i32(0),
      ...set(Rs.t),
      ...block(loop([
        ...get(Rs.t),
        ...get(Rs.d4),
        ...geU,
        ...brIf(1),
        ...get(Rs.row),
        ...get(Rs.t),
        ...add,
        ...get(Rs.row),
        ...get(Rs.t),
        ...add,
        ...vload(0),
        ...get(Rs.cen),
        ...get(Rs.t),
        ...add,
        ...vload(0),
        ...f4sub,
        ...vstore,
        ...get(Rs.t),
        ...i32(16),
        ...add,
        ...set(Rs.t),
        ...br(0),
      ])),
      ...get(Rs.i),
      ...i32(1),
      ...add,
      ...set(Rs.i),
      ...br(0),
    ])),
    0x0b,
  ];
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
    ...section(
      1,
      vec([
        [0x60, ...vec(Array(7).fill([I32])), ...vec([])],
        [0x60, ...vec(Array(10).fill([I32])), ...vec([])],
        [0x60, ...vec(Array(7).fill([I32])), ...vec([])],
        [0x60, ...vec(Array(6).fill([I32])), ...vec([])],
        [0x60, ...vec(Array(5).fill([I32])), ...vec([])],
        [0x60, ...vec(Array(7).fill([I32])), ...vec([[I32]])],
      ]),
    ),
    ...section(3, vec([[0], [1], [2], [3], [3], [4], [2], [2], [5], [5], [5]])),
    ...section(5, vec([[0x00, 1]])),
    ...section(
      7,
      vec([
        [...name("memory"), 0x02, 0],
        [...name("rows"), 0x00, 0],
        [...name("small"), 0x00, 1],
        [...name("one"), 0x00, 2],
        [...name("list"), 0x00, 3],
        [...name("flist"), 0x00, 4],
        [...name("resid"), 0x00, 5],
        [...name("two"), 0x00, 6],
        [...name("four"), 0x00, 7],
        [...name("one32"), 0x00, 8],
        [...name("two32"), 0x00, 9],
        [...name("four32"), 0x00, 10],
      ]),
    ),
    ...section(
      10,
      vec([
        [...uleb(rowsBody.length), ...rowsBody],
        [...uleb(smallBody.length), ...smallBody],
        [...uleb(oneBody.length), ...oneBody],
        [...uleb(listBody.length), ...listBody],
        [...uleb(flistBody.length), ...flistBody],
        [...uleb(residBody.length), ...residBody],
        [...uleb(twoBody.length), ...twoBody],
        [...uleb(fourBody.length), ...fourBody],
        [...uleb(one32Body.length), ...one32Body],
        [...uleb(two32Body.length), ...two32Body],
        [...uleb(four32Body.length), ...four32Body],
      ]),
    ),
  ]);
}

const compiled = onceModule(nearestModuleBytes);

/**
 * The compiled module (made once), or `undefined` where this runtime has no
 * WebAssembly SIMD (the callers then run `kmeans.ts`'s `nearest`, with the
 * same answers).
 */
export function nearestModule(): WebAssembly.Module | undefined {
  return compiled();
}
