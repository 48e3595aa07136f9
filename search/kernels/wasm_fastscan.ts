/**
 * The 4-bit fast-scan kernel of the `ivf-pq` index built with `--pq-bits 4`
 * (`search/index/ivfpq/fastscan.ts`), assembled here from its instructions
 * (no toolchain, no binary blob), as `wasm_simd.ts` and `pq_scan.ts` are:
 * {@linkcode fastScanModuleBytes}, {@linkcode FastScanner}, and the plain
 * TypeScript reference every lane is tested against,
 * {@linkcode fastScanReference}.
 *
 * **Codes** (the blocked layout, faiss's idea of 32 rows a block and two
 * codes a byte, arranged for 128-bit lanes): a block holds 32 rows and `M`
 * sub-quantizers in `16·M` bytes; the 16 bytes of sub-quantizer `m` are at
 * `16·m` of the block, byte `j` holding the code of row `j` in its low
 * nibble and the code of row `16 + j` in its high nibble.
 *
 * **Tables**: per question (and list, for `l2`) `M` look-up tables of 16
 * unsigned bytes, table `m` in one `v128` at `lut + 16·m` of the kernel's
 * memory: the question's float tables quantized with one scale and a bias
 * per table (`fastscan.ts` `quantizeTables`), each entry at most
 * {@linkcode FS_QMAX} (63) and at most `⌊65535 / M⌋` ({@linkcode fsQmax}),
 * so that four entries add in 8 bits and a row's sum of `M` entries fits 16
 * bits (the kernel's contract; the sums are exact within it).
 *
 * **What it computes.** `scan(co, nb, M, lut, thr, out)`: for each of the
 * `nb` blocks whose codes start at byte `co` of the codes memory, the 32
 * integer sums `S_r = Σ_m lut_m[code_m(r)]`; a block with a sum `≥ thr`
 * (unsigned 16-bit) is written out (its 32 sums and its index), the others
 * never leave the kernel. Returns the number of blocks written; block `k`
 * written at `out + 80·k`: four `i16x8` vectors (rows 0, 2, …, 14; rows
 * 1, 3, …, 15; rows 16, 18, …, 30; rows 17, 19, …, 31), then the block's
 * index (i32).
 *
 * **How.** Per block and sub-quantizer: one 16-byte load of codes, the
 * nibbles split (`v128.and`; `i16x8.shr_u` by 4 then `v128.and`), two look-ups in the table's
 * `v128` (`i8x16.relaxed_swizzle` where the runtime has relaxed SIMD, else
 * `i8x16.swizzle`: with indices below 16 both give the same bytes); the
 * look-ups of four sub-quantizers are added in 8 bits (`i8x16.add`, at most
 * 252), then with four 16-bit additions: each such vector is added as eight 16-bit
 * lanes (even row + 256 · odd row) and, shifted right by 8, as the odd
 * rows alone; at the end of the block the even rows are the first minus
 * the second shifted left by 8 (all modulo 2^16, exact since every sum
 * fits 16 bits). Integer sums: the same as the reference, bit for bit.
 *
 * **Two questions a pass** (`scan2`): the same for two questions' tables
 * and thresholds, each code vector loaded and its nibbles split once for
 * both (faiss's several questions a pass), a block written when a row of
 * either reaches its threshold; each question's sums are `scan`'s.
 *
 * **Memories.** The codes are memory 0, imported (the index's shared
 * `WebAssembly.Memory`, `pq_scan.ts` `codesMemory`); memory 1 is the
 * kernel's own (tables and output), per thread.
 *
 * @module
 */
import {
  block,
  br,
  brIf,
  bump,
  firstModule,
  get,
  heldBuffer,
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

const I32 = 0x7f, V128 = 0x7b;

/** Rows of a block of the blocked 4-bit layout. */
export const FS_BLOCK = 32;

/**
 * The largest table entry the kernel takes (also at most `⌊65535 / M⌋`):
 * four sub-quantizers' look-ups add in 8 bits (at most 252). 63 rather
 * than 127 (two a byte) costs no recall@1 on `piqa-lstm` vectors (all of
 * dev, 1,000 lists, 64 bytes, `nprobe` 32 + 30: 0.955 against 0.954; + 50:
 * 0.958 both) and saves a sixth of the kernel's vector operations.
 */
export const FS_QMAX = 63;

/** The largest table entry for `M` sub-quantizers: {@linkcode FS_QMAX}, and a row's sum within 16 bits. */
export function fsQmax(M: number): number {
  return Math.min(FS_QMAX, Math.floor(65535 / M));
}

/**
 * Sub-quantizers a pass of the kernel's inner loop looks up (constant
 * offsets, one branch), four at a time added in bytes (a multiple of 4).
 * 16 rather than 4: `scan` 108–110 µs a question instead of 123 (1,063
 * blocks of 128 sub-quantizers, `bench/fastscan_kernel_speed.ts`; `scan2`
 * unchanged, 99.5–100 µs). Four sub-quantizers a byte sum instead of two
 * (tables of at most {@linkcode FS_QMAX}): `scan` 102 µs, `scan2` 79–80 µs
 * (2026-12-06, two alternating runs).
 */
const UNROLL = 16;

/** Bytes a written block takes in the kernel's output (four `i16x8` sums and its index). */
export const FS_OUT = 80;

/**
 * The bytes of the fast-scan module: imports `env.codes` (shared memory),
 * exports `scratch` (its own memory) and `scan(co, nb, M, lut, thr, out)`
 * (see the module notes). `relaxed`: the look-ups are
 * `i8x16.relaxed_swizzle` (else `i8x16.swizzle`).
 *
 * @example
 * ```ts
 * import { fastScanModuleBytes } from "./wasm_fastscan.ts";
 * if (!WebAssembly.validate(fastScanModuleBytes(false))) throw new Error("invalid module");
 * ```
 */
export function fastScanModuleBytes(relaxed: boolean): Uint8Array<ArrayBuffer> {
  const add = [0x6a], mul = [0x6c], geU = [0x4f], gtU = [0x4b];
  const load0 = (off: number) => simd(0x00, 4, ...uleb(off)); // v128.load, memory 0
  const load1 = (off: number) => simd(0x00, 4 | 0x40, 1, ...uleb(off)); // memory 1
  const store1 = (off: number) => simd(0x0b, 4 | 0x40, 1, ...uleb(off));
  const i32Store1 = (off: number) => [0x36, 2 | 0x40, 1, ...uleb(off)];
  const swizzle = relaxed ? simd(0x100) : simd(0x0e);
  const and = simd(0x4e), or = simd(0x50), anyTrue = simd(0x53);
  const i16Add = simd(0x8e), i16Sub = simd(0x91), i16Shl = simd(0x8b), i16ShrU = simd(0x8d);
  const i16GeU = simd(0x36), i16Splat = simd(0x10), i8Add = simd(0x6e);
  const nib = simd(0x0c, ...new Array(16).fill(0x0f));
  const zero = simd(0x0c, ...new Array(16).fill(0));
  const L = {
    co: 0,
    nb: 1,
    M: 2,
    lut: 3,
    thr: 4,
    out: 5,
    b: 6,
    m: 7,
    p: 8,
    t: 9,
    cnt: 10,
    o: 11,
    c: 12,
    tab: 13,
    r0: 14,
    r1: 15,
    le: 16,
    lo: 17,
    he: 18,
    ho: 19,
    T: 20,
    mask: 21,
    s0: 22,
    s1: 23,
  };
  const accum = (acc: number, r: number, shift: boolean) => [
    ...get(acc),
    ...get(r),
    ...(shift ? [...i32(8), ...i16ShrU] : []),
    ...i16Add,
    ...set(acc),
  ];
  const ge = (v: number) => [...get(v), ...get(L.T), ...i16GeU];
  // Sub-quantizer p/16 + u of the block: its codes at p + 16u, its table at t + 16u; the low
  // nibbles and the high ones (shifted in 16-bit lanes, then masked) looked up, and added.
  const step = (u: number) => [
    ...get(L.p),
    ...load0(16 * u),
    ...set(L.c),
    ...get(L.t),
    ...load1(16 * u),
    ...tee(L.tab),
    ...get(L.c),
    ...get(L.mask),
    ...and,
    ...swizzle,
    ...set(L.r0),
    ...get(L.tab),
    ...get(L.c),
    ...i32(4),
    ...i16ShrU,
    ...get(L.mask),
    ...and,
    ...swizzle,
    ...set(L.r1),
    ...accum(L.le, L.r0, false),
    ...accum(L.lo, L.r0, true),
    ...accum(L.he, L.r1, false),
    ...accum(L.ho, L.r1, true),
  ];
  const look = (u: number, r0: number, r1: number) => [
    ...get(L.p),
    ...load0(16 * u),
    ...set(L.c),
    ...get(L.t),
    ...load1(16 * u),
    ...tee(L.tab),
    ...get(L.c),
    ...get(L.mask),
    ...and,
    ...swizzle,
    ...set(r0),
    ...get(L.tab),
    ...get(L.c),
    ...i32(4),
    ...i16ShrU,
    ...get(L.mask),
    ...and,
    ...swizzle,
    ...set(r1),
  ];
  // Sub-quantizers u … u + 3: their look-ups added in 8 bits first (each entry at most
  // FS_QMAX, so four add to at most 252), then accumulated in 16 bits.
  const quad = (u: number) => [
    ...look(u, L.r0, L.r1),
    ...[1, 2, 3].flatMap((v) => [
      ...look(u + v, L.s0, L.s1),
      ...[...get(L.r0), ...get(L.s0), ...i8Add, ...set(L.r0)],
      ...[...get(L.r1), ...get(L.s1), ...i8Add, ...set(L.r1)],
    ]),
    ...accum(L.le, L.r0, false),
    ...accum(L.lo, L.r0, true),
    ...accum(L.he, L.r1, false),
    ...accum(L.ho, L.r1, true),
  ];
  const advance = (by: number) => [
    ...bump(L.p, i32(16 * by)),
    ...bump(L.t, i32(16 * by)),
    ...bump(L.m, i32(by)),
  ];
  const body = [
    ...vec([[6, I32], [12, V128]]),
    ...get(L.thr),
    ...i16Splat,
    ...set(L.T),
    ...nib,
    ...set(L.mask),
    ...get(L.co),
    ...set(L.p),
    ...block([
      ...loop([
        ...get(L.b),
        ...get(L.nb),
        ...geU,
        ...brIf(1),
        ...zero,
        ...tee(L.le),
        ...tee(L.lo),
        ...tee(L.he),
        ...set(L.ho),
        ...get(L.lut),
        ...set(L.t),
        ...i32(0),
        ...set(L.m),
        // UNROLL sub-quantizers at a time while they last, then one at a time.
        ...block([
          ...loop([
            ...get(L.m),
            ...i32(UNROLL),
            ...add,
            ...get(L.M),
            ...gtU,
            ...brIf(1),
            ...[...Array(UNROLL / 4).keys()].flatMap((k) => quad(4 * k)),
            ...advance(UNROLL),
            ...br(0),
          ]),
        ]),
        ...block([
          ...loop([
            ...get(L.m),
            ...get(L.M),
            ...geU,
            ...brIf(1),
            ...step(0),
            ...advance(1),
            ...br(0),
          ]),
        ]),
        // The even rows: (even + 256·odd) − 256·odd, modulo 2^16.
        ...get(L.le),
        ...get(L.lo),
        ...i32(8),
        ...i16Shl,
        ...i16Sub,
        ...set(L.le),
        ...get(L.he),
        ...get(L.ho),
        ...i32(8),
        ...i16Shl,
        ...i16Sub,
        ...set(L.he),
        ...ge(L.le),
        ...ge(L.lo),
        ...or,
        ...ge(L.he),
        ...ge(L.ho),
        ...or,
        ...or,
        ...anyTrue,
        ...ifThen([
          ...get(L.out),
          ...get(L.cnt),
          ...i32(FS_OUT),
          ...mul,
          ...add,
          ...tee(L.o),
          ...get(L.le),
          ...store1(0),
          ...get(L.o),
          ...get(L.lo),
          ...store1(16),
          ...get(L.o),
          ...get(L.he),
          ...store1(32),
          ...get(L.o),
          ...get(L.ho),
          ...store1(48),
          ...get(L.o),
          ...get(L.b),
          ...i32Store1(64),
          ...get(L.cnt),
          ...i32(1),
          ...add,
          ...set(L.cnt),
        ]),
        ...get(L.b),
        ...i32(1),
        ...add,
        ...set(L.b),
        ...br(0),
      ]),
    ]),
    ...get(L.cnt),
    0x0b,
  ];
  const body2 = scan2Body(relaxed);
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
    ...section(
      1,
      vec([
        [0x60, ...vec(Array(6).fill([I32])), ...vec([[I32]])],
        [0x60, ...vec(Array(8).fill([I32])), ...vec([[I32]])],
      ]),
    ),
    // import env.codes: memory, shared with a maximum (flag 3), 0 … 65536 pages
    ...section(2, vec([[...name("env"), ...name("codes"), 0x02, 0x03, 0, ...uleb(65536)]])),
    ...section(3, vec([[0], [1]])),
    ...section(5, vec([[0x00, 1]])),
    ...section(
      7,
      vec([
        [...name("scratch"), 0x02, 1],
        [...name("scan"), 0x00, 0],
        [...name("scan2"), 0x00, 1],
      ]),
    ),
    ...section(10, vec([[...uleb(body.length), ...body], [...uleb(body2.length), ...body2]])),
  ]);
}

/** Bytes a block written by `scan2` takes: two questions' four `i16x8` sums, then its index. */
export const FS_OUT2 = 144;

/**
 * The body of `scan2(co, nb, M, lut0, lut1, thr0, thr1, out)`: `scan` for
 * two questions at once (tables at `lut0` and `lut1`, thresholds `thr0`,
 * `thr1`), the codes loaded and their nibbles split once for both; a
 * block is written (`FS_OUT2` bytes: question 0's four sums, question 1's,
 * the block's index) when a row of either question reaches its threshold.
 * The same sums as `scan` for each question.
 */
function scan2Body(relaxed: boolean): number[] {
  const add = [0x6a], mul = [0x6c], geU = [0x4f], gtU = [0x4b];
  const load0 = (off: number) => simd(0x00, 4, ...uleb(off));
  const load1 = (off: number) => simd(0x00, 4 | 0x40, 1, ...uleb(off));
  const store1 = (off: number) => simd(0x0b, 4 | 0x40, 1, ...uleb(off));
  const i32Store1 = (off: number) => [0x36, 2 | 0x40, 1, ...uleb(off)];
  const swizzle = relaxed ? simd(0x100) : simd(0x0e);
  const and = simd(0x4e), or = simd(0x50), anyTrue = simd(0x53);
  const i16Add = simd(0x8e), i16Sub = simd(0x91), i16Shl = simd(0x8b), i16ShrU = simd(0x8d);
  const i16GeU = simd(0x36), i16Splat = simd(0x10), i8Add = simd(0x6e);
  const nib = simd(0x0c, ...new Array(16).fill(0x0f));
  const zero = simd(0x0c, ...new Array(16).fill(0));
  const L = {
    co: 0,
    nb: 1,
    M: 2,
    lut0: 3,
    lut1: 4,
    thr0: 5,
    thr1: 6,
    out: 7,
    b: 8,
    m: 9,
    p: 10,
    t0: 11,
    t1: 12,
    cnt: 13,
    o: 14,
    l0: 15,
    h0: 16,
    l1: 17,
    h1: 18,
    tab: 19,
    r0: 20,
    r1: 21,
    mask: 22,
    acc: 23, // 23 … 30: question g's four sums at 23 + 4g
  };
  const A = (g: number, k: number) => L.acc + 4 * g + k;
  const accum = (acc: number, r: number, shift: boolean) => [
    ...get(acc),
    ...get(r),
    ...(shift ? [...i32(8), ...i16ShrU] : []),
    ...i16Add,
    ...set(acc),
  ];
  // The nibbles of sub-quantizer u's codes (at p + 16u) into lo, hi.
  const nibbles = (u: number, lo: number, hi: number) => [
    ...get(L.p),
    ...load0(16 * u),
    ...tee(L.tab),
    ...get(L.mask),
    ...and,
    ...set(lo),
    ...get(L.tab),
    ...i32(4),
    ...i16ShrU,
    ...get(L.mask),
    ...and,
    ...set(hi),
  ];
  const tOf = (g: number) => (g === 0 ? L.t0 : L.t1);
  // Question g's look-ups of sub-quantizer u (nibbles l0/h0) into r0/r1.
  const look = (g: number, u: number, lo: number, hi: number) => [
    ...get(tOf(g)),
    ...load1(16 * u),
    ...tee(L.tab),
    ...get(lo),
    ...swizzle,
    ...set(L.r0),
    ...get(L.tab),
    ...get(hi),
    ...swizzle,
    ...set(L.r1),
  ];
  const sums = (g: number, r0: number, r1: number) => [
    ...accum(A(g, 0), r0, false),
    ...accum(A(g, 1), r0, true),
    ...accum(A(g, 2), r1, false),
    ...accum(A(g, 3), r1, true),
  ];
  // Sub-quantizers u … u + 3 for both questions: each sub-quantizer's nibbles split once,
  // looked up in each question's table and added in 8 bits to that question's two byte sums
  // (question 0's in r0/r1, question 1's in l1/h1; four entries of at most FS_QMAX add to at
  // most 252), which are then accumulated in 16 bits.
  const quad = (u: number) => [
    ...[0, 1, 2, 3].flatMap((v) => [
      ...nibbles(u + v, L.l0, L.h0),
      ...[0, 1].flatMap((g) => {
        const [lo, hi] = g === 0 ? [L.r0, L.r1] : [L.l1, L.h1];
        return [
          ...get(tOf(g)),
          ...load1(16 * (u + v)),
          ...tee(L.tab),
          ...get(L.l0),
          ...swizzle,
          ...(v === 0 ? [] : [...get(lo), ...i8Add]),
          ...set(lo),
          ...get(L.tab),
          ...get(L.h0),
          ...swizzle,
          ...(v === 0 ? [] : [...get(hi), ...i8Add]),
          ...set(hi),
        ];
      }),
    ]),
    ...sums(0, L.r0, L.r1),
    ...sums(1, L.l1, L.h1),
  ];
  const single = [
    ...nibbles(0, L.l0, L.h0),
    ...[0, 1].flatMap((g) => [...look(g, 0, L.l0, L.h0), ...sums(g, L.r0, L.r1)]),
  ];
  const advance = (by: number) => [
    ...[L.p, L.t0, L.t1].flatMap((x) => bump(x, i32(16 * by))),
    ...bump(L.m, i32(by)),
  ];
  const ge = (v: number, thr: number) => [...get(v), ...get(thr), ...i16Splat, ...i16GeU];
  return [
    ...vec([[7, I32], [16, V128]]),
    ...nib,
    ...set(L.mask),
    ...get(L.co),
    ...set(L.p),
    ...block([
      ...loop([
        ...get(L.b),
        ...get(L.nb),
        ...geU,
        ...brIf(1),
        ...[...Array(8).keys()].flatMap((k) => [...zero, ...set(L.acc + k)]),
        ...get(L.lut0),
        ...set(L.t0),
        ...get(L.lut1),
        ...set(L.t1),
        ...i32(0),
        ...set(L.m),
        ...block([
          ...loop([
            ...get(L.m),
            ...i32(UNROLL),
            ...add,
            ...get(L.M),
            ...gtU,
            ...brIf(1),
            ...[...Array(UNROLL / 4).keys()].flatMap((k) => quad(4 * k)),
            ...advance(UNROLL),
            ...br(0),
          ]),
        ]),
        ...block([
          ...loop([
            ...get(L.m),
            ...get(L.M),
            ...geU,
            ...brIf(1),
            ...single,
            ...advance(1),
            ...br(0),
          ]),
        ]),
        ...[0, 1].flatMap((g) => [
          ...get(A(g, 0)),
          ...get(A(g, 1)),
          ...i32(8),
          ...i16Shl,
          ...i16Sub,
          ...set(A(g, 0)),
          ...get(A(g, 2)),
          ...get(A(g, 3)),
          ...i32(8),
          ...i16Shl,
          ...i16Sub,
          ...set(A(g, 2)),
        ]),
        ...ge(A(0, 0), L.thr0),
        ...ge(A(0, 1), L.thr0),
        ...or,
        ...ge(A(0, 2), L.thr0),
        ...or,
        ...ge(A(0, 3), L.thr0),
        ...or,
        ...ge(A(1, 0), L.thr1),
        ...or,
        ...ge(A(1, 1), L.thr1),
        ...or,
        ...ge(A(1, 2), L.thr1),
        ...or,
        ...ge(A(1, 3), L.thr1),
        ...or,
        ...anyTrue,
        ...ifThen([
          ...get(L.out),
          ...get(L.cnt),
          ...i32(FS_OUT2),
          ...mul,
          ...add,
          ...set(L.o),
          ...[...Array(8).keys()].flatMap((k) => [
            ...get(L.o),
            ...get(L.acc + k),
            ...store1(16 * k),
          ]),
          ...get(L.o),
          ...get(L.b),
          ...i32Store1(128),
          ...get(L.cnt),
          ...i32(1),
          ...add,
          ...set(L.cnt),
        ]),
        ...get(L.b),
        ...i32(1),
        ...add,
        ...set(L.b),
        ...br(0),
      ]),
    ]),
    ...get(L.cnt),
    0x0b,
  ];
}

const compiled = firstModule([true, false], fastScanModuleBytes);

/**
 * The compiled fast-scan module (relaxed SIMD's swizzle where this runtime
 * has it, else the plain one), or `undefined` where it cannot run.
 */
function fastScanModule(): { module: WebAssembly.Module; relaxed: boolean } | undefined {
  const c = compiled();
  return c === undefined ? undefined : { module: c.module, relaxed: c.variant };
}

/** The blocks a scan wrote out: their indices and each one's 32 sums in row order. */
export interface FastScanHits {
  /** Blocks written, in increasing order. */
  readonly count: number;
  /** Block indices (relative to the first block scanned), `count` of them. */
  readonly blocks: Int32Array;
  /** The sums, 32 a block in row order (`count · 32`). */
  readonly sums: Uint16Array;
}

/**
 * The fast scan in plain TypeScript (see the module notes): the blocks of
 * `nb` at `codes[co …]` with a sum `≥ thr` and their 32 sums. The reference
 * the kernel matches bit for bit, and the scan where the kernel cannot run.
 *
 * @example
 * ```ts
 * import { fastScanReference } from "./wasm_fastscan.ts";
 * // One block, one sub-quantizer: row j has code j & 15 (low nibbles), rows 16… code 1.
 * const codes = new Uint8Array(16).map((_, j) => j | 0x10);
 * const lut = new Uint8Array(16).map((_, c) => 10 * c);
 * const hits = fastScanReference(codes, 0, 1, 1, lut, 0, 150);
 * if (hits.count !== 1 || hits.sums[15] !== 150 || hits.sums[16] !== 10) throw new Error();
 * ```
 */
export function fastScanReference(
  codes: Uint8Array,
  co: number,
  nb: number,
  M: number,
  lut: Uint8Array,
  lo: number,
  thr: number,
): FastScanHits {
  const blocks: number[] = [], sums: number[] = [];
  const s = new Uint16Array(FS_BLOCK);
  for (let b = 0; b < nb; b++) {
    s.fill(0);
    const p = co + b * 16 * M;
    for (let m = 0; m < M; m++) {
      const t = lo + 16 * m, q = p + 16 * m;
      for (let j = 0; j < 16; j++) {
        const c = codes[q + j];
        s[j] += lut[t + (c & 15)];
        s[j + 16] += lut[t + (c >> 4)];
      }
    }
    let hit = false;
    for (let r = 0; r < FS_BLOCK; r++) if (s[r] >= thr) hit = true;
    if (hit) {
      blocks.push(b);
      sums.push(...s);
    }
  }
  return {
    count: blocks.length,
    blocks: Int32Array.from(blocks),
    sums: Uint16Array.from(sums),
  };
}

/**
 * The row of a block that position `p` (0 … 31) of the kernel's written
 * sums holds: four `i16x8` vectors of rows 0, 2, …, 14; 1, 3, …, 15;
 * 16, 18, …, 30; 17, 19, …, 31.
 *
 * @example
 * ```ts
 * import { laneRow } from "./wasm_fastscan.ts";
 * if ([0, 7, 8, 16, 24, 31].map(laneRow).join() !== "0,14,1,16,17,31") throw new Error();
 * ```
 */
export function laneRow(p: number): number {
  return 16 * (p >> 4) + 2 * (p & 7) + ((p >> 3) & 1);
}

/** The fast-scan kernel of one thread over one codes memory ({@linkcode FastScanner.create}). */
export class FastScanner {
  readonly #scratch: WebAssembly.Memory;
  readonly #scan: (...args: number[]) => number;
  readonly #scan2: (...args: number[]) => number;
  /** Whether the look-ups are relaxed SIMD's swizzle. */
  readonly relaxed: boolean;
  #lutBytes = 0;

  private constructor(instance: WebAssembly.Instance, relaxed: boolean) {
    const e = instance.exports as Record<string, unknown>;
    this.#scratch = e.scratch as WebAssembly.Memory;
    this.#scan = e.scan as (...args: number[]) => number;
    this.#scan2 = e.scan2 as (...args: number[]) => number;
    this.relaxed = relaxed;
  }

  /** The kernel's own memory (tables and output), for a module that reads its output in place. */
  get scratch(): WebAssembly.Memory {
    return this.#scratch;
  }

  /** The byte of {@linkcode FastScanner.scratch} where `scanRaw`/`scan2Raw` write. */
  get outAt(): number {
    return this.#lutBytes;
  }

  /** The kernel over `codes` (a shared memory), or `undefined` where it cannot run. */
  static create(codes: WebAssembly.Memory): FastScanner | undefined {
    const m = fastScanModule();
    if (m === undefined) return undefined;
    try {
      return new FastScanner(new WebAssembly.Instance(m.module, { env: { codes } }), m.relaxed);
    } catch {
      return undefined;
    }
  }

  /** The kernel memory's buffer as last taken (a `memory.buffer` read costs more than a scan's share). */
  #buf: ArrayBuffer | undefined;

  #ensure(bytes: number): ArrayBuffer {
    return this.#buf = heldBuffer(this.#scratch, this.#buf, bytes);
  }

  /**
   * Room for `count` questions' tables of `M` sub-quantizers (question `j`'s
   * at `j·16·M`), to be filled by the caller: a view of the kernel's
   * memory, valid until the next `tables` or `scan` call that grows it.
   */
  tables(M: number, count = 1): Uint8Array {
    this.#lutBytes = 16 * M * count;
    return new Uint8Array(this.#ensure(this.#lutBytes), 0, this.#lutBytes);
  }

  /**
   * Scans `nb` blocks from byte `co` of the codes memory with the tables at
   * byte `lut` of the kernel's memory (question `j`: `j·16·M`) against the
   * threshold `thr` (0 … 65535): the blocks with a sum `≥ thr`, as
   * {@linkcode fastScanReference} gives them (views valid until the next call).
   */
  scan(co: number, nb: number, M: number, lut: number, thr: number): FastScanHits {
    const out = this.#lutBytes;
    const buf = this.#ensure(out + nb * FS_OUT);
    const count = this.#scan(co, nb, M, lut, thr, out);
    const blocks = new Int32Array(count), sums = new Uint16Array(count * FS_BLOCK);
    const v = new Uint16Array(buf, out, count * (FS_OUT / 2));
    const iv = new Int32Array(buf, out, count * (FS_OUT / 4));
    for (let k = 0; k < count; k++) {
      const o = k * (FS_OUT / 2), s = k * FS_BLOCK;
      for (let i = 0; i < 8; i++) {
        sums[s + 2 * i] = v[o + i];
        sums[s + 2 * i + 1] = v[o + 8 + i];
        sums[s + 16 + 2 * i] = v[o + 16 + i];
        sums[s + 17 + 2 * i] = v[o + 24 + i];
      }
      blocks[k] = iv[k * (FS_OUT / 4) + 16];
    }
    return { count, blocks, sums };
  }

  /**
   * {@linkcode FastScanner.scan} without copying out: the number of blocks
   * written, left in the kernel's memory as {@linkcode FastScanner.written}
   * shows them (block `k`'s 32 sums at `40·k` of its 16-bit view, in the
   * kernel's lane order, its index at `20·k + 16` of its 32-bit view).
   */
  scanRaw(co: number, nb: number, M: number, lut: number, thr: number): number {
    const out = this.#lutBytes;
    this.#ensure(out + nb * FS_OUT);
    return this.#scan(co, nb, M, lut, thr, out);
  }

  /**
   * {@linkcode FastScanner.scan2} without copying out: the number of blocks
   * written (block `k`: question 0's 32 sums at `72·k`, question 1's at
   * `72·k + 32` of the 16-bit view, in the kernel's lane order; its index
   * at `36·k + 32` of the 32-bit view).
   */
  scan2Raw(
    co: number,
    nb: number,
    M: number,
    lut0: number,
    lut1: number,
    thr0: number,
    thr1: number,
  ): number {
    const out = this.#lutBytes;
    this.#ensure(out + nb * FS_OUT2);
    return this.#scan2(co, nb, M, lut0, lut1, thr0, thr1, out);
  }

  /**
   * Views of what the last `scanRaw`/`scan2Raw` wrote (valid until the
   * next call). The 32 sums of a block are in lane order: position `p`
   * holds row `16·(p >> 4) + 2·(p & 7) + ((p >> 3) & 1)`
   * ({@linkcode laneRow}).
   */
  written(count: number, perBlock: number): { sums: Uint16Array; index: Int32Array } {
    const out = this.#lutBytes, buf = this.#ensure(0);
    return {
      sums: new Uint16Array(buf, out, (count * perBlock) / 2),
      index: new Int32Array(buf, out, (count * perBlock) / 4),
    };
  }

  /**
   * {@linkcode FastScanner.scan} for two questions in one pass over the
   * codes (tables at `lut0` and `lut1`, thresholds `thr0`, `thr1`): the
   * blocks where a row of either reaches its threshold, with both
   * questions' sums (each as `scan` gives it; views valid until the next call).
   */
  scan2(
    co: number,
    nb: number,
    M: number,
    lut0: number,
    lut1: number,
    thr0: number,
    thr1: number,
  ): { count: number; blocks: Int32Array; sums: [Uint16Array, Uint16Array] } {
    const out = this.#lutBytes;
    const buf = this.#ensure(out + nb * FS_OUT2);
    const count = this.#scan2(co, nb, M, lut0, lut1, thr0, thr1, out);
    const blocks = new Int32Array(count);
    const sums: [Uint16Array, Uint16Array] = [
      new Uint16Array(count * FS_BLOCK),
      new Uint16Array(count * FS_BLOCK),
    ];
    const v = new Uint16Array(buf, out, count * (FS_OUT2 / 2));
    const iv = new Int32Array(buf, out, count * (FS_OUT2 / 4));
    for (let k = 0; k < count; k++) {
      const s = k * FS_BLOCK;
      for (let g = 0; g < 2; g++) {
        const o = k * (FS_OUT2 / 2) + 32 * g, w = sums[g];
        for (let i = 0; i < 8; i++) {
          w[s + 2 * i] = v[o + i];
          w[s + 2 * i + 1] = v[o + 8 + i];
          w[s + 16 + 2 * i] = v[o + 16 + i];
          w[s + 17 + 2 * i] = v[o + 24 + i];
        }
      }
      blocks[k] = iv[k * (FS_OUT2 / 4) + 32];
    }
    return { count, blocks, sums };
  }
}
