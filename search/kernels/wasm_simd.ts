/**
 * The WebAssembly SIMD scoring module, assembled from its instructions (no
 * toolchain, no binary blob): {@linkcode simdModuleBytes}.
 *
 * @module
 */
import {
  block,
  br,
  brIf,
  bump,
  f64c,
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
// WebAssembly SIMD kernels (the same rule, four float32 lanes at a time).
//
// The module is assembled here from its instructions (no toolchain, no binary
// blob). Five kernels, over a memory the module exports:
//
//   norms(a, n, d4, out): out[i] (f64) = Σ_k a[i][k]², each f32 promoted to f64
//   scores(a, n, d4, q, nq, out, sq, withSq): out[j*n + i] (f32) = a[i] · q[j]
//     in f32 (4 lanes of 4-byte floats, two rows × six questions at a
//     time, then three, two or one of those left; each lane sums its products
//     in order, then ((l0 + l1) + (l2 + l3))), and, when withSq ≠ 0,
//     norms(a[i..i+2), 2, d4, sq + 8i) for each pair of rows as it comes, so
//     the matrix is read from memory once (the squares give both the error
//     bound and the NaN/infinity check); withSq = 0 when the caller has
//     them already (they do not depend on the questions)
//   scores16(a, n, d2, q, nq, out, rs, cs): out[j*n + i] (f32) =
//     f32(S) · (rs[i] · cs[j]) (float32 products), S = Σ_t a[i][t]·q[j][t] over
//     int16 rows and questions (d2 the row stride in bytes, a multiple of
//     16), summed exactly in int32 (i32x4.dot_i16x8_s; the caller keeps every
//     sum within int32), with scores' loops but two rows × four questions at
//     a time (then three, two or one), each row's four sums reduced, scaled
//     and stored together (on the encoding's 64 projected values a row
//     against 1,000 centroids: 3.4 → 2.5 µs a row, 2-core AMD EPYC,
//     2026-12-08); rs and cs the rows' and questions' float32 scales
//   screen(sc, pairs, stride, k, tab, xl, out, cst): the nearest-centroid screen
//     of kmeans.ts over the scores `scores` wrote, two rows a pass in float64
//     lanes (see the comment at its code)
//   near(sc, pairs, stride, k, tab, xl, lo, out, cap): each row's
//     centroids whose interval reaches down to its smallest upper end (see
//     the comment at its code), for projected.ts
//   widen(src, n4, dst): the 4·n4 float16 values (bits) at src as float32 at
//     dst, exactly (subnormals, ±0, infinities and NaN included): each half
//     sign-extended, its sign, exponent and fraction shifted into a
//     float32's places (the sign's copies cleared) and scaled by 2^112 in
//     f32 (exact: a power of two; the sign kept), exponent 31 mapped to 255;
//     eight halves a step (one load, the constants splatted once), then an
//     odd last four
//
// d4 is the row stride in bytes (d·4, a multiple of 16). Float32 scores are
// only the fast pass:
// their error bound (below) selects the rows re-scored exactly, as in the
// float64 path, so results are identical.

const WASM = {
  i32: 0x7f,
  f64: 0x7c,
  v128: 0x7b,
};

/** The kernels' module bytes. */
/**
 * The bytes of the scoring module (see the notes above): with `fused`, its
 * multiply-adds are relaxed SIMD's fused ones.
 *
 * @example
 * ```ts
 * import { simdModuleBytes } from "./wasm_simd.ts";
 * if (!WebAssembly.validate(simdModuleBytes(false))) throw new Error("invalid module");
 * ```
 */
export function simdModuleBytes(fused: boolean): Uint8Array<ArrayBuffer> {
  // Questions a pass of `scores` (two rows against GROUP questions: 12 sums in registers).
  const GROUP = 6;
  // scores16's: two rows against four questions (8 sums), whose sums leave together.
  const GROUP16 = 4;
  const add = [0x6a], sub = [0x6b], mul = [0x6c], shl = [0x74];
  const ltu = [0x49], gtu = [0x4b], geu = [0x4f], ne = [0x47];
  const load = simd(0x00, 2, 0); // v128.load align=4 offset=0
  const f32x4Add = simd(0xe4), f32x4Mul = simd(0xe6);
  const f64x2Add = simd(0xf0), f64x2Mul = simd(0xf2), promote = simd(0x5f);
  const zero = simd(0x0c, ...new Array(16).fill(0));
  const highLanes = simd(0x0d, 8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15);
  const lane32 = (l: number) => simd(0x1f, l), lane64 = (l: number) => simd(0x21, l);
  const f32Add = [0x92], f64Add = [0xa0];
  const store = simd(0x0b, 2, 0); // v128.store align=4 offset=0
  const bitselect = simd(0x52);
  const f32Store = (off: number) => [0x38, 2, ...uleb(off)];
  const f64Store = [0x39, 3, 0];
  const hsum = (v: number) => [
    ...get(v),
    ...lane32(0),
    ...get(v),
    ...lane32(1),
    ...f32Add,
    ...get(v),
    ...lane32(2),
    ...get(v),
    ...lane32(3),
    ...f32Add,
    ...f32Add,
  ];
  // c += x·y: f32x4.relaxed_madd (one instruction where the CPU has FMA; fused or
  // not, the error bound below holds), or f32x4.mul then f32x4.add.
  const relaxedMadd = simd(0x105);
  const acc = (c: number, x: number, y: number) =>
    fused
      ? [...get(x), ...get(y), ...get(c), ...relaxedMadd, ...set(c)]
      : [...get(c), ...get(x), ...get(y), ...f32x4Mul, ...f32x4Add, ...set(c)];
  // scores16's step: c += dot(x, y) (i32x4.dot_i16x8_s: eight int16 products, pairs summed
  // into four i32 lanes; exact while every sum stays within int32, see kmeans.ts).
  const i16Dot = simd(0xba), i32x4Add = simd(0xae), lane32i = (l: number) => simd(0x1b, l);
  const accI16 = (c: number, x: number, y: number) => [
    ...get(c),
    ...get(x),
    ...get(y),
    ...i16Dot,
    ...i32x4Add,
    ...set(c),
  ];
  // scores16's way out: the four lanes' sum (i32), as float32, times (rs[i + row] · cs[j + t]).
  const f32Load = (off: number) => [0x2a, 2, ...uleb(off)];
  const scaled = (v: number, row: number, t: number) => [
    ...get(v),
    ...lane32i(0),
    ...get(v),
    ...lane32i(1),
    ...add,
    ...get(v),
    ...lane32i(2),
    ...get(v),
    ...lane32i(3),
    ...add,
    ...add,
    0xb2, // f32.convert_i32_s
    ...get(S.sq),
    ...get(S.i),
    ...i32(2),
    ...shl,
    ...add,
    ...f32Load(4 * row),
    ...get(S.withSq),
    ...get(S.j),
    ...i32(2),
    ...shl,
    ...add,
    ...f32Load(4 * t),
    0x94, // f32.mul
    0x94,
  ];
  const loadAt = (base: number, k: number, into: number) => [
    ...get(base),
    ...get(k),
    ...add,
    ...load,
    ...set(into),
  ];
  const next = (k: number, step: number, end: number) => [
    ...get(k),
    ...i32(step),
    ...add,
    ...tee(k),
    ...get(end),
    ...ltu,
    ...brIf(0),
  ];

  // norms(a, n, d4, out)
  const N = { a: 0, n: 1, d4: 2, out: 3, i: 4, r: 5, k: 6, s0: 7, s1: 8, v: 9 };
  const norms = [
    ...vec([[3, WASM.i32], [3, WASM.v128]]),
    ...i32(0),
    ...set(N.i),
    ...loop([
      ...get(N.a),
      ...get(N.i),
      ...get(N.d4),
      ...mul,
      ...add,
      ...set(N.r),
      ...zero,
      ...set(N.s0),
      ...zero,
      ...set(N.s1),
      ...i32(0),
      ...set(N.k),
      ...loop([
        ...loadAt(N.r, N.k, N.v),
        ...get(N.s0),
        ...get(N.v),
        ...promote,
        ...get(N.v),
        ...promote,
        ...f64x2Mul,
        ...f64x2Add,
        ...set(N.s0),
        ...get(N.s1),
        ...get(N.v),
        ...get(N.v),
        ...highLanes,
        ...promote,
        ...get(N.v),
        ...get(N.v),
        ...highLanes,
        ...promote,
        ...f64x2Mul,
        ...f64x2Add,
        ...set(N.s1),
        ...next(N.k, 16, N.d4),
      ]),
      ...get(N.out),
      ...get(N.i),
      ...i32(3),
      ...shl,
      ...add,
      ...get(N.s0),
      ...get(N.s1),
      ...f64x2Add,
      ...tee(N.s0),
      ...lane64(0),
      ...get(N.s0),
      ...lane64(1),
      ...f64Add,
      ...f64Store,
      ...next(N.i, 1, N.n),
    ]),
    0x0b,
  ];

  // scores(a, n, d4, q, nq, out, sq)
  const S = {
    a: 0,
    n: 1,
    d4: 2,
    q: 3,
    nq: 4,
    out: 5,
    sq: 6,
    withSq: 7,
    i: 8,
    j: 9,
    k: 10,
    r0: 11,
    r1: 12,
    o: 13,
    n4: 14,
    qs: [15, 16, 17, 18, 19, 20],
    c0: [21, 22, 23, 24, 25, 26],
    c1: [27, 28, 29, 30, 31, 32],
    x0: 33,
    x1: 34,
    y: 35,
  };
  // Rows i (and i+1) against questions j..j+w: w·(1 or 2) sums in registers.
  // With `i16` (scores16): the rows and questions are int16, each step's sums
  // i32x4.dot_i16x8_s then i32x4.add (exact integers), each sum scaled on the way out.
  const questionGroup = (w: number, twoRows: boolean, i16 = false) => {
    const ts = [...Array(w).keys()];
    const sum = i16 ? accI16 : acc, out = i16 ? scaled : (v: number) => hsum(v);
    return [
      ...get(S.q),
      ...get(S.j),
      ...get(S.d4),
      ...mul,
      ...add,
      ...set(S.qs[0]),
      ...ts.slice(1).flatMap((t) => [...get(S.qs[t - 1]), ...get(S.d4), ...add, ...set(S.qs[t])]),
      ...ts.flatMap((
        t,
      ) => [...zero, ...set(S.c0[t]), ...(twoRows ? [...zero, ...set(S.c1[t])] : [])]),
      ...i32(0),
      ...set(S.k),
      ...loop([
        ...loadAt(S.r0, S.k, S.x0),
        ...(twoRows ? loadAt(S.r1, S.k, S.x1) : []),
        // Each question's four values loaded just before its one or two sums (registers: the
        // sums, the rows' values and one question's).
        ...ts.flatMap((t) => [
          ...loadAt(S.qs[t], S.k, S.y),
          ...sum(S.c0[t], S.x0, S.y),
          ...(twoRows ? sum(S.c1[t], S.x1, S.y) : []),
        ]),
        ...next(S.k, 16, S.d4),
      ]),
      // o = out + (j·n + i)·4; question j+t is t·n·4 bytes further.
      ...get(S.out),
      ...get(S.j),
      ...get(S.n4),
      ...mul,
      ...add,
      ...get(S.i),
      ...i32(2),
      ...shl,
      ...add,
      ...set(S.o),
      ...(i16 && w === 4 ? scaled4(twoRows) : ts.flatMap((t) => {
        const at = [...get(S.o), ...Array(t).fill([...get(S.n4), ...add]).flat()];
        return [
          ...at,
          ...out(S.c0[t], 0, t),
          ...f32Store(0),
          ...(twoRows ? [...at, ...out(S.c1[t], 1, t), ...f32Store(4)] : []),
        ];
      })),
    ];
  };
  // scores16's way out for four questions j..j+3 at once: each row's four sums reduced
  // together (lanes moved by shuffles, then added: exact integers, as the lane by lane sum),
  // as float32 (f32x4.convert_i32x4_s), times rs[i + row] · cs[j + t] (f32x4: the same float32
  // products as `scaled`), each lane stored in its question's column (v128.store32_lane).
  const shuffle = (...lanes: number[]) =>
    simd(0x0d, ...lanes.flatMap((l) => [4 * l, 4 * l + 1, 4 * l + 2, 4 * l + 3]));
  const f32x4Convert = simd(0xfa), f32Splat4 = simd(0x13);
  const store32Lane = (off: number, lane: number) => simd(0x5a, 2, ...uleb(off), lane);
  // v128 locals free in a group of four: c0[4], c0[5] and c1[4].
  const T0 = S.c0[4], CS = S.c0[5], SUM = S.c1[4];
  // The lanes `first` of (a, b) plus the lanes `second`: with (0, 1, 4, 5) and (2, 3, 6, 7),
  // [a0 + a2, a1 + a3, b0 + b2, b1 + b3]; with (0, 2, 4, 6) and (1, 3, 5, 7), [a0 + a1, …].
  const laneSums = (a: number, b: number, first: number[], second: number[]) => [
    ...get(a),
    ...get(b),
    ...shuffle(...first),
    ...get(a),
    ...get(b),
    ...shuffle(...second),
    ...i32x4Add,
  ];
  const halves = [[0, 1, 4, 5], [2, 3, 6, 7]], odds = [[0, 2, 4, 6], [1, 3, 5, 7]];
  const rowOut4 = (c: readonly number[], row: number) => [
    ...laneSums(c[0], c[1], halves[0], halves[1]),
    ...set(T0),
    ...laneSums(c[2], c[3], halves[0], halves[1]),
    ...set(SUM),
    ...laneSums(T0, SUM, odds[0], odds[1]),
    ...f32x4Convert,
    // rs[i + row], splatted, times cs[j..j+4)
    ...get(S.sq),
    ...get(S.i),
    ...i32(2),
    ...shl,
    ...add,
    ...f32Load(4 * row),
    ...f32Splat4,
    ...get(CS),
    ...f32x4Mul,
    ...f32x4Mul,
    ...set(SUM),
    ...[0, 1, 2, 3].flatMap((t) => [
      ...get(S.o),
      ...Array(t).fill([...get(S.n4), ...add]).flat(),
      ...get(SUM),
      ...store32Lane(4 * row, t),
    ]),
  ];
  const scaled4 = (twoRows: boolean) => [
    ...get(S.withSq),
    ...get(S.j),
    ...i32(2),
    ...shl,
    ...add,
    ...load,
    ...set(CS),
    ...rowOut4(S.c0, 0),
    ...(twoRows ? rowOut4(S.c1, 1) : []),
  ];
  // Questions GROUP at a time, then three, two or one of those left.
  const questionGroups = (twoRows: boolean, i16 = false) => [
    ...i32(0),
    ...set(S.j),
    ...block([
      ...loop([
        ...get(S.j),
        ...i32(i16 ? GROUP16 : GROUP),
        ...add,
        ...get(S.nq),
        ...gtu,
        ...brIf(1),
        ...questionGroup(i16 ? GROUP16 : GROUP, twoRows, i16),
        ...get(S.j),
        ...i32(i16 ? GROUP16 : GROUP),
        ...add,
        ...set(S.j),
        ...br(0),
      ]),
    ]),
    ...[3, 2, 1].flatMap((w) => [
      ...get(S.nq),
      ...get(S.j),
      ...sub,
      ...i32(w),
      ...geu,
      ...ifThen([
        ...questionGroup(w, twoRows, i16),
        ...get(S.j),
        ...i32(w),
        ...add,
        ...set(S.j),
      ]),
    ]),
  ];
  const rowStart = (
    r: number,
  ) => [...get(S.a), ...get(S.i), ...get(S.d4), ...mul, ...add, ...tee(r)];
  // norms(r0, rows, d4, sq + 8i): function 0.
  const rowNorms = (rows: number) => [
    ...get(S.withSq),
    ...i32(0),
    ...ne,
    ...ifThen(rowNormsCall(rows)),
  ];
  const rowNormsCall = (rows: number) => [
    ...get(S.r0),
    ...i32(rows),
    ...get(S.d4),
    ...get(S.sq),
    ...get(S.i),
    ...i32(3),
    ...shl,
    ...add,
    0x10,
    0,
  ];
  // scores (with each pair's squares) and scores16 (int16, no squares): rows two at a time
  // against every question group, then the odd last row.
  const scoresBody = (i16: boolean) => [
    ...vec([[13, WASM.i32], [15, WASM.v128]]),
    ...get(S.n),
    ...i32(2),
    ...shl,
    ...set(S.n4),
    ...i32(0),
    ...set(S.i),
    ...block([
      ...loop([
        ...get(S.i),
        ...i32(1),
        ...add,
        ...get(S.n),
        ...geu,
        ...brIf(1),
        ...rowStart(S.r0),
        ...get(S.d4),
        ...add,
        ...set(S.r1),
        ...(i16 ? [] : rowNorms(2)),
        ...questionGroups(true, i16),
        ...get(S.i),
        ...i32(2),
        ...add,
        ...set(S.i),
        ...br(0),
      ]),
    ]),
    ...get(S.i),
    ...get(S.n),
    ...ltu,
    ...ifThen([
      ...rowStart(S.r0),
      0x1a, // drop
      ...(i16 ? [] : rowNorms(1)),
      ...questionGroups(false, i16),
    ]),
    0x0b,
  ];
  const scores = scoresBody(false);
  // scores16(a, n, d2, q, nq, out, rs, cs): scores' loops over int16 rows and questions (d2 the
  // row stride in bytes, a multiple of 16), no squares.
  const scores16 = scoresBody(true);
  // quant16(x, n, d4, w2, Q, out, sc, sq): for each float32 row i of x (stride d4 bytes, d4 a
  // multiple of 16): m = the largest |x_t| (f32x4.pmax: a NaN may be passed over; the sum of
  // squares is NaN then), s = m / Q (f32.div), the
  // row's int16 values x_t · (1 / s) (float32; 0 where s = 0) rounded to nearest, ties to even
  // (at most Q in size, kmeans.ts int16Error; not clamped), at
  // out + i·w2 (8 a store; four values left are stored with four zeros), s at sc + 4i and
  // the float32 sum of x_t² (four lanes, then ((l0 + l1) + (l2 + l3))) at sq + 4i.
  const Z = { x: 0, n: 1, d4: 2, w2: 3, q: 4, out: 5, sc: 6, sq: 7, i: 8, r: 9, o: 10, k: 11 };
  const Zf = { s: 12 }, Zv = { mx: 13, acc: 14, v: 15, inv: 16, lo: 17, hi: 18 };
  const f32x4Abs = simd(0xe0), f32x4Pmax = simd(0xeb), narrow = simd(0x85);
  const f32x4Splat = simd(0x13);
  // x·(1/s) rounded to the nearest integer, ties to even, by adding 1.5·2²³ in float32 (exact
  // for |x·(1/s)| < 2²²: here at most Q(1 + 2⁻²²), Q < 2¹⁴), that number's bits then taken off.
  const magic = simd(0x0c, ...Array(4).fill([0x00, 0x00, 0x40, 0x4b]).flat());
  const i32x4Sub = simd(0xb1);
  const quantLanes = (at: number) => [
    ...get(Z.r),
    ...get(Z.k),
    ...add,
    ...simd(0x00, 2, ...uleb(at)),
    ...get(Zv.inv),
    ...f32x4Mul,
    ...magic,
    ...f32x4Add,
    ...magic,
    ...i32x4Sub,
  ];
  const laneMax = (v: number) => [
    ...get(v),
    ...lane32(0),
    ...get(v),
    ...lane32(1),
    0x97, // f32.max
    ...get(v),
    ...lane32(2),
    ...get(v),
    ...lane32(3),
    0x97,
    0x97,
  ];
  const quant16 = [
    ...vec([[4, WASM.i32], [1, 0x7d], [6, WASM.v128]]),
    ...get(Z.n),
    ...i32(0),
    ...ne,
    ...ifThen([
      ...i32(0),
      ...set(Z.i),
      ...loop([
        ...get(Z.x),
        ...get(Z.i),
        ...get(Z.d4),
        ...mul,
        ...add,
        ...set(Z.r),
        ...get(Z.out),
        ...get(Z.i),
        ...get(Z.w2),
        ...mul,
        ...add,
        ...set(Z.o),
        ...zero,
        ...set(Zv.mx),
        ...zero,
        ...set(Zv.acc),
        ...i32(0),
        ...set(Z.k),
        ...loop([
          ...loadAt(Z.r, Z.k, Zv.v),
          ...get(Zv.mx),
          ...get(Zv.v),
          ...f32x4Abs,
          ...f32x4Pmax,
          ...set(Zv.mx),
          ...get(Zv.acc),
          ...get(Zv.v),
          ...get(Zv.v),
          ...f32x4Mul,
          ...f32x4Add,
          ...set(Zv.acc),
          ...next(Z.k, 16, Z.d4),
        ]),
        // s = m / Q; 1 / s splatted.
        ...laneMax(Zv.mx),
        ...get(Z.q),
        0xb2, // f32.convert_i32_s
        0x95, // f32.div
        ...set(Zf.s),
        // 1 / s, or 0 where s is 0 (a row of zeros: its values 0, not 0·∞).
        ...[0x43, 0, 0, 0x80, 0x3f], // f32.const 1
        ...get(Zf.s),
        0x95,
        ...[0x43, 0, 0, 0, 0], // f32.const 0
        ...get(Zf.s),
        ...[0x43, 0, 0, 0, 0],
        0x5c, // f32.ne
        0x1b, // select
        ...f32x4Splat,
        ...set(Zv.inv),
        ...get(Z.sc),
        ...get(Z.i),
        ...i32(2),
        ...shl,
        ...add,
        ...get(Zf.s),
        ...f32Store(0),
        ...get(Z.sq),
        ...get(Z.i),
        ...i32(2),
        ...shl,
        ...add,
        ...hsum(Zv.acc),
        ...f32Store(0),
        // Eight values a store while eight are left, then four (and four zeros).
        ...i32(0),
        ...set(Z.k),
        ...block([
          ...loop([
            ...get(Z.k),
            ...i32(32),
            ...add,
            ...get(Z.d4),
            ...gtu,
            ...brIf(1),
            ...get(Z.o),
            ...get(Z.k),
            ...i32(1),
            0x76, // i32.shr_u
            ...add,
            ...quantLanes(0),
            ...quantLanes(16),
            ...narrow,
            ...store,
            ...get(Z.k),
            ...i32(32),
            ...add,
            ...set(Z.k),
            ...br(0),
          ]),
        ]),
        ...get(Z.k),
        ...get(Z.d4),
        ...ltu,
        ...ifThen([
          ...get(Z.o),
          ...get(Z.k),
          ...i32(1),
          0x76,
          ...add,
          ...quantLanes(0),
          ...zero,
          ...narrow,
          ...store,
        ]),
        ...next(Z.i, 1, Z.n),
      ]),
    ]),
    0x0b,
  ];
  const widen = widenCode();
  // screen(sc, pairs, stride, k, tab, xl, out, cst): the float32 screen of the nearest
  // centroid (kmeans.ts, nearestScreened), two rows a pass (one per f64x2 lane). For rows
  // 2p and 2p + 1 (p < pairs; their scores at sc + 8p + j·stride for centroid j, as
  // `scores` wrote them), centroid j's entry of tab (48 bytes: ‖c_j‖², ‖c_j‖ and |‖c_j‖²|,
  // each splatted) and the rows' lengths at xl + 16p, the same float64 numbers as the
  // TypeScript loop: est = ‖c_j‖² − (s + s), dot = xLen·‖c_j‖,
  // b = (F·dot + T) + E·(dot + |‖c_j‖²|) (F, T, E splatted at cst), top = the smallest
  // est + b (f64x2.pmin: the first smaller one kept, as `<`), and the two smallest
  // est − b with the first centroid of the smallest. Written at out + 64p: top, lo1, lo2
  // and that centroid (a float64), each a pair of rows; then at out + 64·pairs the lanes'
  // sums of s·0 over every score read (NaN where one is not finite).
  const C = {
    sc: 0,
    pairs: 1,
    stride: 2,
    k: 3,
    tab: 4,
    xl: 5,
    out: 6,
    cst: 7,
    p: 8,
    j: 9,
    at: 10,
    q: 11,
    o: 12,
    x: 13,
    top: 14,
    lo1: 15,
    lo2: 16,
    j1: 17,
    jv: 18,
    fin: 19,
    F: 20,
    T: 21,
    E: 22,
    one: 23,
    s: 24,
    est: 25,
    dot: 26,
    b: 27,
    l: 28,
    m1: 29,
  };
  const vload = (off: number) => simd(0x00, 3, ...uleb(off));
  const vstore = (off: number) => simd(0x0b, 3, ...uleb(off));
  const load64Zero = simd(0x5d, 3, 0);
  const dSub = simd(0xf1), dLt = simd(0x49), dPmin = simd(0xf6);
  const f64Splat = simd(0x14);
  const screen = [
    ...vec([[5, WASM.i32], [17, WASM.v128]]),
    ...get(C.cst),
    ...vload(0),
    ...set(C.F),
    ...get(C.cst),
    ...vload(16),
    ...set(C.T),
    ...get(C.cst),
    ...vload(32),
    ...set(C.E),
    ...f64c(1),
    ...f64Splat,
    ...set(C.one),
    ...zero,
    ...set(C.fin),
    ...i32(0),
    ...set(C.p),
    ...block([
      ...get(C.p),
      ...get(C.pairs),
      ...geu,
      ...brIf(0),
      ...loop([
        ...get(C.xl),
        ...get(C.p),
        ...i32(4),
        ...shl,
        ...add,
        ...vload(0),
        ...set(C.x),
        ...f64c(Infinity),
        ...f64Splat,
        ...tee(C.top),
        ...tee(C.lo1),
        ...set(C.lo2),
        ...f64c(-1),
        ...f64Splat,
        ...set(C.j1),
        ...zero,
        ...set(C.jv),
        ...get(C.sc),
        ...get(C.p),
        ...i32(3),
        ...shl,
        ...add,
        ...set(C.at),
        ...get(C.tab),
        ...set(C.q),
        ...i32(0),
        ...set(C.j),
        ...block([
          ...get(C.j),
          ...get(C.k),
          ...geu,
          ...brIf(0),
          ...loop([
            ...get(C.at),
            ...load64Zero,
            ...promote,
            ...tee(C.s),
            ...zero,
            ...f64x2Mul,
            ...get(C.fin),
            ...f64x2Add,
            ...set(C.fin),
            // est = ‖c‖² − (s + s)
            ...get(C.q),
            ...vload(0),
            ...get(C.s),
            ...get(C.s),
            ...f64x2Add,
            ...dSub,
            ...set(C.est),
            // dot = xLen·‖c‖; b = (F·dot + T) + E·(dot + |‖c‖²|)
            ...get(C.x),
            ...get(C.q),
            ...vload(16),
            ...f64x2Mul,
            ...tee(C.dot),
            ...get(C.F),
            ...f64x2Mul,
            ...get(C.T),
            ...f64x2Add,
            ...get(C.E),
            ...get(C.dot),
            ...get(C.q),
            ...vload(32),
            ...f64x2Add,
            ...f64x2Mul,
            ...f64x2Add,
            ...set(C.b),
            // top = pmin(top, est + b): est + b where it is < top.
            ...get(C.top),
            ...get(C.est),
            ...get(C.b),
            ...f64x2Add,
            ...dPmin,
            ...set(C.top),
            // l = est − b; where l < lo1: lo2 = lo1, lo1 = l, j1 = j; else lo2 = pmin(lo2, l).
            ...get(C.est),
            ...get(C.b),
            ...dSub,
            ...tee(C.l),
            ...get(C.lo1),
            ...dLt,
            ...set(C.m1),
            ...get(C.lo1),
            ...get(C.lo2),
            ...get(C.l),
            ...dPmin,
            ...get(C.m1),
            ...bitselect,
            ...set(C.lo2),
            ...get(C.l),
            ...get(C.lo1),
            ...get(C.m1),
            ...bitselect,
            ...set(C.lo1),
            ...get(C.jv),
            ...get(C.j1),
            ...get(C.m1),
            ...bitselect,
            ...set(C.j1),
            ...get(C.jv),
            ...get(C.one),
            ...f64x2Add,
            ...set(C.jv),
            ...get(C.at),
            ...get(C.stride),
            ...add,
            ...set(C.at),
            ...get(C.q),
            ...i32(48),
            ...add,
            ...set(C.q),
            ...next(C.j, 1, C.k),
          ]),
        ]),
        ...get(C.out),
        ...get(C.p),
        ...i32(6),
        ...shl,
        ...add,
        ...tee(C.o),
        ...get(C.top),
        ...vstore(0),
        ...get(C.o),
        ...get(C.lo1),
        ...vstore(16),
        ...get(C.o),
        ...get(C.lo2),
        ...vstore(32),
        ...get(C.o),
        ...get(C.j1),
        ...vstore(48),
        ...next(C.p, 1, C.pairs),
      ]),
    ]),
    ...get(C.out),
    ...get(C.pairs),
    ...i32(6),
    ...shl,
    ...add,
    ...get(C.fin),
    ...vstore(0),
    0x0b,
  ];
  // near(sc, pairs, stride, k, tab, xl, lo, out, cap): the centroids each row cannot
  // rule out, for projected.ts's screen on a few directions. For rows 2p and 2p + 1
  // (p < pairs; their scores at sc + 8p + j·stride, as `scores` and `scores16` write them)
  // and centroid j (tab + 48j: ‖c_j‖², L_j and C_j, each splatted; the rows' widths at
  // xl + 16p), in float64: est = ‖c_j‖² − (s + s), b = xl·L_j + C_j; a first pass finds
  // each row's top (the smallest est + b, f64x2.pmin) and keeps every est − b at lo + 16j;
  // a second lists, in increasing order, each centroid j whose est − b is at
  // most the row's top (f64x2.le: never where either is NaN). Written at out: the lanes'
  // sums of s·0 over every score read (two float64, NaN where one is not finite), row r's
  // count at out + 16 + 4r (i32; more than cap when some were left out), its first cap
  // centroids at out + 16 + 8·pairs + 4·(r·cap + i).
  const B = {
    sc: 0,
    pairs: 1,
    stride: 2,
    k: 3,
    tab: 4,
    xl: 5,
    lo: 6,
    out: 7,
    cap: 8,
    p: 9,
    j: 10,
    at: 11,
    q: 12,
    c0: 13,
    c1: 14,
    r0: 15,
    x: 16,
    top: 17,
    s: 18,
    est: 19,
    b: 20,
    m: 21,
    fin: 22,
  };
  const dLe = simd(0x4b), anyTrue = simd(0x53), i64Lane = (l: number) => simd(0x1d, l);
  const wrapI64 = [0xa7], i32Store = [0x36, 2, 0];
  // Lane l of the mask set: centroid j appended to the row's list (if fewer than cap), counted.
  const appendIf = (l: number, count: number, row: number[]) => [
    ...get(B.m),
    ...i64Lane(l),
    ...wrapI64,
    ...ifThen([
      ...get(count),
      ...get(B.cap),
      ...ltu,
      ...ifThen([
        ...row,
        ...get(count),
        ...i32(2),
        ...shl,
        ...add,
        ...get(B.j),
        ...i32Store,
      ]),
      ...get(count),
      ...i32(1),
      ...add,
      ...set(count),
    ]),
  ];
  // for j in [0, k): body (j, and `at`/`q` stepping through the scores and the table when `walk`)
  const overCentroids = (body: number[], walk: boolean) => [
    ...(walk
      ? [
        ...get(B.sc),
        ...get(B.p),
        ...i32(3),
        ...shl,
        ...add,
        ...set(B.at),
        ...get(B.tab),
        ...set(B.q),
      ]
      : []),
    ...i32(0),
    ...set(B.j),
    ...block([
      ...get(B.j),
      ...get(B.k),
      ...geu,
      ...brIf(0),
      ...loop([
        ...body,
        ...(walk
          ? [
            ...get(B.at),
            ...get(B.stride),
            ...add,
            ...set(B.at),
            ...get(B.q),
            ...i32(48),
            ...add,
            ...set(B.q),
          ]
          : []),
        ...next(B.j, 1, B.k),
      ]),
    ]),
  ];
  // lo + 16j
  const loAt = [...get(B.lo), ...get(B.j), ...i32(4), ...shl, ...add];
  const near = [
    ...vec([[7, WASM.i32], [7, WASM.v128]]),
    ...zero,
    ...set(B.fin),
    ...i32(0),
    ...set(B.p),
    ...block([
      ...get(B.p),
      ...get(B.pairs),
      ...geu,
      ...brIf(0),
      ...loop([
        ...get(B.xl),
        ...get(B.p),
        ...i32(4),
        ...shl,
        ...add,
        ...vload(0),
        ...set(B.x),
        ...f64c(Infinity),
        ...f64Splat,
        ...set(B.top),
        // The first pass: top, and each est − b kept.
        ...overCentroids([
          ...get(B.at),
          ...load64Zero,
          ...promote,
          ...tee(B.s),
          ...zero,
          ...f64x2Mul,
          ...get(B.fin),
          ...f64x2Add,
          ...set(B.fin),
          ...get(B.q),
          ...vload(0),
          ...get(B.s),
          ...get(B.s),
          ...f64x2Add,
          ...dSub,
          ...set(B.est),
          // b = xl·L + C
          ...get(B.x),
          ...get(B.q),
          ...vload(16),
          ...f64x2Mul,
          ...get(B.q),
          ...vload(32),
          ...f64x2Add,
          ...set(B.b),
          ...get(B.top),
          ...get(B.est),
          ...get(B.b),
          ...f64x2Add,
          ...dPmin,
          ...set(B.top),
          ...loAt,
          ...get(B.est),
          ...get(B.b),
          ...dSub,
          ...vstore(0),
        ], true),
        ...i32(0),
        ...tee(B.c0),
        ...set(B.c1),
        // r0: row 2p's list (row 2p + 1's follows it, 4·cap bytes on).
        ...get(B.out),
        ...i32(16),
        ...add,
        ...get(B.pairs),
        ...i32(3),
        ...shl,
        ...add,
        ...get(B.p),
        ...get(B.cap),
        ...mul,
        ...i32(3),
        ...shl,
        ...add,
        ...set(B.r0),
        // The second: the centroids whose est − b reaches the top.
        ...overCentroids([
          ...loAt,
          ...vload(0),
          ...get(B.top),
          ...dLe,
          ...tee(B.m),
          ...anyTrue,
          ...ifThen([
            ...appendIf(0, B.c0, get(B.r0)),
            ...appendIf(1, B.c1, [...get(B.r0), ...get(B.cap), ...i32(2), ...shl, ...add]),
          ]),
        ], false),
        ...get(B.out),
        ...get(B.p),
        ...i32(3),
        ...shl,
        ...add,
        ...get(B.c0),
        ...[0x36, 2, 16],
        ...get(B.out),
        ...get(B.p),
        ...i32(3),
        ...shl,
        ...add,
        ...get(B.c1),
        ...[0x36, 2, 20],
        ...next(B.p, 1, B.pairs),
      ]),
    ]),
    ...get(B.out),
    ...get(B.fin),
    ...vstore(0),
    0x0b,
  ];
  const I = WASM.i32;
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
    ...section(
      1,
      vec([
        [0x60, ...vec([[I], [I], [I], [I]]), 0],
        [0x60, ...vec(Array(8).fill([I])), 0],
        [0x60, ...vec([[I], [I], [I]]), 0],
        [0x60, ...vec(Array(9).fill([I])), 0],
      ]),
    ),
    ...section(3, vec([[0], [1], [2], [1], [1], [1], [3]])),
    ...section(5, vec([[0x00, 1]])),
    ...section(
      7,
      vec([
        [...name("memory"), 0x02, 0],
        [...name("norms"), 0x00, 0],
        [...name("scores"), 0x00, 1],
        [...name("widen"), 0x00, 2],
        [...name("screen"), 0x00, 3],
        [...name("scores16"), 0x00, 4],
        [...name("quant16"), 0x00, 5],
        [...name("near"), 0x00, 6],
      ]),
    ),
    ...section(
      10,
      vec([
        [...uleb(norms.length), ...norms],
        [...uleb(scores.length), ...scores],
        [...uleb(widen.length), ...widen],
        [...uleb(screen.length), ...screen],
        [...uleb(scores16.length), ...scores16],
        [...uleb(quant16.length), ...quant16],
        [...uleb(near.length), ...near],
      ]),
    ),
  ]);
}

/** The locals (v128) {@linkcode halfFloatCode} uses: a value, a scratch, and its four constants. */
export interface HalfLocals {
  /** The four halves, sign-extended to i32 lanes (read). */
  readonly x: number;
  /** Scratch. */
  readonly y: number;
  /** `0x8fffe000` splatted (set by {@linkcode halfConstantsCode}, as the next three). */
  readonly bits: number;
  /** `0x7f800000` splatted. */
  readonly inf: number;
  /** `2^112` (`0x77800000`) splatted. */
  readonly pow: number;
  /** `0x1effffff` splatted. */
  readonly top: number;
}

/**
 * The instructions that set the constants of {@linkcode halfFloatCode}
 * (once, before a loop).
 *
 * @example
 * ```ts
 * import { halfConstantsCode } from "./wasm_simd.ts";
 * if (halfConstantsCode({ x: 0, y: 1, bits: 2, inf: 3, pow: 4, top: 5 }).length === 0) throw new Error();
 * ```
 */
export function halfConstantsCode(L: HalfLocals): number[] {
  const constant = (l: number, v: number) => [...i32(v), ...simd(0x11), ...set(l)];
  return [
    ...constant(L.bits, 0x8fffe000 | 0),
    ...constant(L.inf, 0x7f800000),
    ...constant(L.pow, 0x77800000),
    ...constant(L.top, 0x1effffff),
  ];
}

/**
 * The instructions that push the float32 (`f32x4`) of the four float16
 * values in local `x` (their bits sign-extended to i32 lanes), exactly:
 * `y = (x << 13) & 0x8fffe000` holds the sign, exponent and fraction in a
 * float32's places (the sign's copies cleared); exponent 31 (inf, NaN:
 * `(y << 1) > 0x1effffff`) gives `y | 0x7f800000`, any other `y·2^112`
 * (exact: a power of two; subnormals become normal, the sign is kept).
 *
 * @example
 * ```ts
 * import { halfFloatCode } from "./wasm_simd.ts";
 * if (halfFloatCode({ x: 0, y: 1, bits: 2, inf: 3, pow: 4, top: 5 }).length === 0) throw new Error();
 * ```
 */
export function halfFloatCode(L: HalfLocals): number[] {
  const shl = simd(0xab), gtS = simd(0x3b), mul = simd(0xe6);
  const and = simd(0x4e), or = simd(0x50), bitselect = simd(0x52);
  return [
    ...get(L.x),
    ...i32(13),
    ...shl,
    ...get(L.bits),
    ...and,
    ...tee(L.y),
    ...get(L.inf),
    ...or,
    ...get(L.y),
    ...get(L.pow),
    ...mul,
    ...get(L.y),
    ...i32(1),
    ...shl,
    ...get(L.top),
    ...gtS,
    ...bitselect,
  ];
}

/** The locals {@linkcode halfSpanCode} uses: its addresses (i32) and {@linkcode HalfLocals}. */
export interface HalfSpanLocals extends HalfLocals {
  /** The next float16 value's byte (memory 0), moved on. */
  readonly src: number;
  /** Where the next float32 goes (the memory `store` writes), moved on. */
  readonly dst: number;
  /** The byte after the last group of eight halves. */
  readonly end: number;
  /** Scratch (v128): eight halves. */
  readonly v: number;
}

/**
 * The instructions that widen the float16 values from `src` (memory 0)
 * up to `end` into float32 at `dst`, eight a step (one 16-byte load, then
 * {@linkcode halfFloatCode} for each half of it), `src` and `dst` moved
 * on; then, where `lastFour` (instructions pushing an i32) is not zero,
 * four more at `src` (`dst` moved on by 16). `store(off)`: a `v128.store`
 * at `dst + off` into the memory the caller writes. Shared by `widen`
 * ({@linkcode widenCode}) and `wasm_gather.ts`'s rows.
 *
 * @example
 * ```ts
 * import { halfSpanCode } from "./wasm_simd.ts";
 * import { simd } from "./wasm_encode.ts";
 * const L = { src: 0, dst: 1, end: 2, v: 3, x: 4, y: 5, bits: 6, inf: 7, pow: 8, top: 9 };
 * if (halfSpanCode(L, (off) => simd(0x0b, 2, off), [0x41, 0]).length === 0) throw new Error();
 * ```
 */
export function halfSpanCode(
  L: HalfSpanLocals,
  store: (off: number) => number[],
  lastFour: number[],
): number[] {
  const ltu = [0x49];
  const load = simd(0x00, 1, 0); // v128.load align=2 offset=0, memory 0
  const load16x4s = simd(0x03, 1, 0); // v128.load16x4_s align=2 offset=0, memory 0
  const extendLowS = simd(0xa7), extendHighS = simd(0xa8); // i32x4.extend_{low,high}_i16x8_s
  const four = halfFloatCode(L);
  return [
    ...get(L.src),
    ...get(L.end),
    ...ltu,
    ...ifThen([
      ...loop([
        ...get(L.dst),
        ...get(L.src),
        ...load,
        ...tee(L.v),
        ...extendLowS,
        ...set(L.x),
        ...four,
        ...store(0),
        ...get(L.dst),
        ...get(L.v),
        ...extendHighS,
        ...set(L.x),
        ...four,
        ...store(16),
        ...bump(L.dst, i32(32)),
        ...bump(L.src, i32(16)),
        ...get(L.src),
        ...get(L.end),
        ...ltu,
        ...brIf(0),
      ]),
    ]),
    ...lastFour,
    ...ifThen([
      ...get(L.dst),
      ...get(L.src),
      ...load16x4s,
      ...set(L.x),
      ...four,
      ...store(0),
      ...bump(L.dst, i32(16)),
    ]),
  ];
}

/**
 * The code of `widen(src, n4, dst)` (its locals, instructions and `end`):
 * the `4·n4` float16 values (bits) at byte `src` as float32 at `dst`,
 * exactly (see the notes above); shared by the modules that widen float16
 * rows in their own memory (`wasm_exact.ts`).
 *
 * @example
 * ```ts
 * import { widenCode } from "./wasm_simd.ts";
 * if (widenCode().at(-1) !== 0x0b) throw new Error("no end");
 * ```
 */
export function widenCode(): number[] {
  const add = [0x6a], shl = [0x74], and32 = [0x71], shrU = [0x76];
  const store = (off: number) => simd(0x0b, 2, ...uleb(off)); // v128.store align=4
  // widen(src, n4, dst); the constants splatted once, before the loop.
  const W = { src: 0, n4: 1, dst: 2, end: 3, x: 4, y: 5, v: 6, bits: 7, inf: 8, pow: 9, top: 10 };
  return [
    ...vec([[1, WASM.i32], [7, WASM.v128]]),
    ...halfConstantsCode(W),
    // end: src after the groups of eight; then an odd last four.
    ...get(W.src),
    ...get(W.n4),
    ...i32(1),
    ...shrU,
    ...i32(4),
    ...shl,
    ...add,
    ...set(W.end),
    ...halfSpanCode(W, store, [...get(W.n4), ...i32(1), ...and32]),
    0x0b,
  ];
}
