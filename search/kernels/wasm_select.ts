/**
 * The candidates of the 4-bit search in WebAssembly, assembled here from
 * its instructions (as `wasm_fastscan.ts`): `offer` reads the blocks the
 * fast-scan kernel wrote (its memory, imported: memory 0), scores the rows
 * whose integer sum reaches the threshold and keeps the best `cap` of
 * each question in a heap in this module's own memory (memory 1):
 * {@linkcode selectModuleBytes}, {@linkcode CandidateHeaps}.
 *
 * **The same as the TypeScript** (`fastscan.ts` `offerWritten` into
 * `ivfpq.ts` `Candidates`): a row of block `h` at position `p` (row
 * `laneRow(p)`) with sum `s ≥ thr` and not padding is scored
 * `base + s / scale` (float64, the same operations) and offered when the
 * heap is not full or its score is at least the worst kept; the heap keeps
 * the best `cap` by (score, lower global row), its worst at the root,
 * moved by a hole (the same comparisons). The kept pairs do not depend on
 * the order rows are offered in.
 *
 * **Fewer rows looked at.** Before each block, when the heap is full, the
 * threshold rises to the sum a row needs to reach the worst kept score
 * (`fastscan.ts` `needOf`, as `offerWritten` re-takes it: a row below it
 * scores below the worst kept and would be let go); a block none of whose
 * 32 sums reaches the threshold (four `i16x8.ge_u` compares: often a block
 * the two-question kernel wrote for the other question) is passed over,
 * and in the others only the positions whose sum reaches it are visited
 * (the compares narrowed to a 32-bit mask, its lowest set bit first).
 * Only rows the heap would let go are skipped, so the kept pairs are the
 * same.
 *
 * **The first rows a heap is offered.** While a heap is not yet full, an
 * offer first counts its own rows' sums (those reaching `thr`, not padding)
 * in 256 buckets of `2^shift` (`CandidateHeaps.reset`'s `maxSum`): where
 * at least `cap` rows reach bucket `B`'s start `T`, a row scoring below
 * `base + T / scale` is beaten by `cap` rows of this offer, so `thr` rises
 * to the sum a row needs to reach that score (`needOf`'s rule, one below
 * for rounding). A question's first list (a whole run of blocks, not two)
 * then puts about `cap` rows into its heap instead of a few hundred one by
 * one (the quarter of dev, 400 lists, nprobe 16 + 30: `offer` 9.2–9.7 →
 * 7.0–7.1 µs a question).
 *
 * Heap `j` at `heap`: its size (i32), then `cap` scores (f64) from
 * `heap + 8`, then `cap` rows (f64). The index's global rows (u32) are
 * copied once into this module's memory, after the histogram's shift (i32
 * at byte 0) and its 256 counts (from byte 16).
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
  grownBuffer,
  i32,
  ifElse,
  loop,
  name,
  onceModule,
  section,
  set,
  tee,
  uleb,
  vec,
} from "./wasm_encode.ts";

const I32 = 0x7f, F64 = 0x7c;

const m1 = (align: number, off = 0) => [align | 0x40, 1, ...uleb(off)];
const i32Load0 = (off = 0) => [0x28, 2, ...uleb(off)];
const u16Load0 = [0x2f, 1, 0];
const i32Load1 = (off = 0) => [0x28, ...m1(2, off)];
const i32Store1 = (off = 0) => [0x36, ...m1(2, off)];
const f64Load1 = (off = 0) => [0x2b, ...m1(3, off)];
const f64Store1 = (off = 0) => [0x39, ...m1(3, off)];
const iAdd = [0x6a], iSub = [0x6b], iMul = [0x6c], iAnd = [0x71], iShl = [0x74], iShrU = [0x76];
const iLtU = [0x49], iGeU = [0x4f], iGeS = [0x4e], iLtS = [0x48], iEqz = [0x45];
const fAdd = [0xa0], fDiv = [0xa3], fLt = [0x63], fGt = [0x64], fEq = [0x61];
const fromU = [0xb8], iOr = [0x72];
const ifThen = (body: number[]) => [0x04, 0x40, ...body, 0x0b];

function offerBody(): number[] {
  // params: out 0, count 1, per 2, at 3, idx 4, b0 5, n 6, thr 7, base 8 (f64), scale 9 (f64),
  // r0 10, heap 11, cap 12, rows 13
  // locals i32: h 14, p 15, o 16, first 17, last 18, s 19, r 20, size 21, i 22, c 23, sb 24, rb 25
  // locals f64: score 26, row 27, sc 28, rc 29, s2 30, r2 31, need 32; v128: T 33
  const [h, p, o, first, last, s, r, size, i, c, sb, rb] = [
    14,
    15,
    16,
    17,
    18,
    19,
    20,
    21,
    22,
    23,
    24,
    25,
  ];
  const score = 26, row = 27, sc = 28, rc = 29, s2 = 30, r2 = 31;
  const S = (x: number[]) => [...get(sb), ...x, ...i32(3), ...iShl, ...iAdd]; // address of S[x]
  const R = (x: number[]) => [...get(rb), ...x, ...i32(3), ...iShl, ...iAdd];
  // (a, b) worse than (score, row)-style comparisons written inline below.
  const loadRow = [
    ...get(13),
    ...get(10),
    ...get(first),
    ...iAdd,
    ...get(r),
    ...iAdd,
    ...i32(2),
    ...iShl,
    ...iAdd,
    ...i32Load1(),
    ...fromU,
    ...set(row),
  ];
  const push = [
    // i = size++; up while (score, row) is worse than the parent
    ...get(size),
    ...set(i),
    ...bump(size, i32(1)),
    ...block([
      ...loop([
        ...get(i),
        ...iEqz,
        ...brIf(1),
        ...get(i),
        ...i32(1),
        ...iSub,
        ...i32(1),
        ...iShrU,
        ...set(c),
        // worse = score < S[c] || (score == S[c] && row > R[c])
        ...get(score),
        ...S(get(c)),
        ...f64Load1(),
        ...fLt,
        ...get(score),
        ...S(get(c)),
        ...f64Load1(),
        ...fEq,
        ...get(row),
        ...R(get(c)),
        ...f64Load1(),
        ...fGt,
        ...iAnd,
        ...iOr,
        ...iEqz,
        ...brIf(1),
        ...S(get(i)),
        ...S(get(c)),
        ...f64Load1(),
        ...f64Store1(),
        ...R(get(i)),
        ...R(get(c)),
        ...f64Load1(),
        ...f64Store1(),
        ...get(c),
        ...set(i),
        ...br(0),
      ]),
    ]),
    ...S(get(i)),
    ...get(score),
    ...f64Store1(),
    ...R(get(i)),
    ...get(row),
    ...f64Store1(),
  ];
  const replace = [
    // at least the root (score ≥ S[0]; an equal score with a larger row is not kept)
    ...get(score),
    ...S(i32(0)),
    ...f64Load1(),
    ...fLt,
    ...brIf(1), // to the next position
    ...loadRow,
    ...get(score),
    ...S(i32(0)),
    ...f64Load1(),
    ...fEq,
    ...get(row),
    ...R(i32(0)),
    ...f64Load1(),
    ...fGt,
    ...iAnd,
    ...brIf(1),
    ...i32(0),
    ...set(i),
    ...block([
      ...loop([
        // c = 2i + 1; stop at a leaf
        ...get(i),
        ...i32(1),
        ...iShl,
        ...i32(1),
        ...iAdd,
        ...tee(c),
        ...get(size),
        ...iGeS,
        ...brIf(1),
        // sc, rc = S[c], R[c]; the worse child: c + 1 when S[c+1] < sc || (== && R[c+1] > rc)
        ...S(get(c)),
        ...f64Load1(),
        ...set(sc),
        ...R(get(c)),
        ...f64Load1(),
        ...set(rc),
        ...get(c),
        ...i32(1),
        ...iAdd,
        ...get(size),
        ...iLtS,
        ...ifThen([
          ...S([...get(c), ...i32(1), ...iAdd]),
          ...f64Load1(),
          ...set(s2),
          ...R([...get(c), ...i32(1), ...iAdd]),
          ...f64Load1(),
          ...set(r2),
          ...get(s2),
          ...get(sc),
          ...fLt,
          ...get(s2),
          ...get(sc),
          ...fEq,
          ...get(r2),
          ...get(rc),
          ...fGt,
          ...iAnd,
          ...iOr,
          ...ifThen([...bump(c, i32(1)), ...get(s2), ...set(sc), ...get(r2), ...set(rc)]),
        ]),
        // stop unless the child is worse than (score, row): sc < score || (== && rc > row)
        ...get(sc),
        ...get(score),
        ...fLt,
        ...get(sc),
        ...get(score),
        ...fEq,
        ...get(rc),
        ...get(row),
        ...fGt,
        ...iAnd,
        ...iOr,
        ...iEqz,
        ...brIf(1),
        ...S(get(i)),
        ...get(sc),
        ...f64Store1(),
        ...R(get(i)),
        ...get(rc),
        ...f64Store1(),
        ...get(c),
        ...set(i),
        ...br(0),
      ]),
    ]),
    ...S(get(i)),
    ...get(score),
    ...f64Store1(),
    ...R(get(i)),
    ...get(row),
    ...f64Store1(),
  ];
  // Before each block: when the heap is full, the sum a row now needs to reach its worst kept
  // score (`fastscan.ts` needOf: ⌈(S[0] − base) · scale⌉ − 1) raises `thr`; then the block is
  // passed over unless one of this question's 32 sums reaches `thr` (four 16-bit compares).
  const need = 32; // f64 local
  const T = 33; // v128 local
  const v128Load0 = (off: number) => [0xfd, 0x00, 4, ...uleb(off)];
  const i16GeU = [0xfd, 0x36], i16Splat = [0xfd, 0x10];
  const narrowS = [0xfd, 0x65], bitmask = [0xfd, 0x64], ctz = [0x68];
  const mask = 34; // i32 local: the block's positions left to look at
  const fSub = [0xa1], fMul = [0xa2], fCeil = [0x9b], truncS = [0xaa];
  const raise = [
    ...get(size),
    ...get(12),
    ...iGeS,
    ...ifThen([
      ...S(i32(0)),
      ...f64Load1(),
      ...get(8),
      ...fSub,
      ...get(9),
      ...fMul,
      ...fCeil,
      ...f64c(1),
      ...fSub,
      ...tee(need),
      ...f64c(65535),
      ...fGt,
      ...ifElse(
        [...i32(65536), ...set(7)],
        [
          ...get(need),
          ...get(7),
          ...fromU,
          ...fGt,
          ...ifThen([...get(need), ...truncS, ...set(7)]),
        ],
      ),
    ]),
  ];
  const geT = (off: number) => [...get(o), ...v128Load0(off), ...get(T), ...i16GeU];
  const skip = [
    // no row of this list can reach the floor any more, or none of this block's
    ...get(7),
    ...i32(65535),
    ...[0x4b], // i32.gt_u
    ...brIf(0),
    ...get(7),
    ...i16Splat,
    ...set(T),
    // the positions whose sum reaches thr, a bit each (16-bit masks narrowed to bytes)
    ...geT(0),
    ...geT(16),
    ...narrowS,
    ...bitmask,
    ...geT(32),
    ...geT(48),
    ...narrowS,
    ...bitmask,
    ...i32(16),
    ...iShl,
    ...iOr,
    ...tee(mask),
    ...iEqz,
    ...brIf(0),
  ];
  // A heap not yet full (the first rows a question is offered): the threshold first rises
  // to what `cap` of this call's own rows reach. A histogram of their sums (256 buckets of
  // 2^shift, the shift at byte 0 of memory 1, the counts from byte 16) gives the largest
  // bucket start T that `cap` rows reach; a row scoring below base + T / scale is beaten by
  // `cap` rows of this call, so thr rises to the sum a row needs to reach that score
  // (needOf's rule: one below, for rounding).
  const [B, cnt, valid] = [35, 36, 37];
  const HIST = 16;
  const rowOf = [
    // r = 16·(p >> 4) + 2·(p & 7) + ((p >> 3) & 1)
    ...get(p),
    ...i32(4),
    ...iShrU,
    ...i32(4),
    ...iShl,
    ...get(p),
    ...i32(7),
    ...iAnd,
    ...i32(1),
    ...iShl,
    ...iAdd,
    ...get(p),
    ...i32(3),
    ...iShrU,
    ...i32(1),
    ...iAnd,
    ...iAdd,
  ];
  const blockAt = [
    // o = out + 2·(h·per + at); first = (b0 + index) · 32; last = n − first
    ...get(0),
    ...get(h),
    ...get(2),
    ...iMul,
    ...get(3),
    ...iAdd,
    ...i32(1),
    ...iShl,
    ...iAdd,
    ...set(o),
    ...get(5),
    ...get(0),
    ...get(h),
    ...get(2),
    ...iMul,
    ...i32(1),
    ...iShrU,
    ...get(4),
    ...iAdd,
    ...i32(2),
    ...iShl,
    ...iAdd,
    ...i32Load0(),
    ...iAdd,
    ...i32(5),
    ...iShl,
    ...set(first),
    ...get(6),
    ...get(first),
    ...iSub,
    ...set(last),
  ];
  const shift = [...i32(0), ...i32Load1()]; // the histogram's shift, at byte 0
  const v128Store1 = (off: number) => [0xfd, 0x0b, 4 | 0x40, 1, ...uleb(off)];
  const zero16 = [0xfd, 0x0c, ...new Array(16).fill(0)];
  const warm = [
    ...get(size),
    ...get(12),
    ...iLtS,
    ...ifThen([
      // the counts cleared
      ...[...Array(64).keys()].flatMap((k) => [...i32(0), ...zero16, ...v128Store1(HIST + 16 * k)]),
      ...i32(0),
      ...set(valid),
      ...i32(0),
      ...set(h),
      ...block([
        ...loop([
          ...get(h),
          ...get(1),
          ...iGeU,
          ...brIf(1),
          ...blockAt,
          ...i32(0),
          ...set(p),
          ...block([
            ...loop([
              ...get(p),
              ...i32(32),
              ...iGeU,
              ...brIf(1),
              ...block([
                // a padding row, or a sum below thr: not counted
                ...rowOf,
                ...get(last),
                ...iGeS,
                ...brIf(0),
                ...get(o),
                ...get(p),
                ...i32(1),
                ...iShl,
                ...iAdd,
                ...u16Load0,
                ...tee(s),
                ...get(7),
                ...iLtU,
                ...brIf(0),
                // counts[min(255, s >> shift)]++
                ...i32(255),
                ...get(s),
                ...shift,
                ...iShrU,
                ...tee(B),
                ...i32(255),
                ...get(B),
                ...iLtU,
                0x1b, // select
                ...i32(2),
                ...iShl,
                ...tee(B),
                ...get(B),
                ...i32Load1(HIST),
                ...i32(1),
                ...iAdd,
                ...i32Store1(HIST),
                ...bump(valid, i32(1)),
              ]),
              ...bump(p, i32(1)),
              ...br(0),
            ]),
          ]),
          ...bump(h, i32(1)),
          ...br(0),
        ]),
      ]),
      ...i32(0),
      ...set(h),
      // with at least cap rows: the largest bucket B whose count from the top reaches cap
      ...get(valid),
      ...get(12),
      ...iGeS,
      ...ifThen([
        ...i32(256),
        ...set(B),
        ...i32(0),
        ...set(cnt),
        ...block([
          ...loop([
            ...bump(B, i32(-1)),
            ...get(cnt),
            ...get(B),
            ...i32(2),
            ...iShl,
            ...i32Load1(HIST),
            ...iAdd,
            ...tee(cnt),
            ...get(12),
            ...iLtS,
            ...brIf(0),
          ]),
        ]),
        // need = ⌈((base + T / scale) − base) · scale⌉ − 1, T = B << shift
        ...get(8),
        ...get(B),
        ...shift,
        ...iShl,
        ...fromU,
        ...get(9),
        ...fDiv,
        ...fAdd,
        ...get(8),
        ...fSub,
        ...get(9),
        ...fMul,
        ...fCeil,
        ...f64c(1),
        ...fSub,
        ...tee(need),
        ...get(7),
        ...fromU,
        ...fGt,
        ...ifThen([...get(need), ...truncS, ...set(7)]),
      ]),
    ]),
  ];
  return [
    ...vec([[12, I32], [7, F64], [1, 0x7b], [1, I32], [3, I32]]),
    ...get(11),
    ...i32(8),
    ...iAdd,
    ...tee(sb),
    ...get(12),
    ...i32(3),
    ...iShl,
    ...iAdd,
    ...set(rb),
    ...get(11),
    ...i32Load1(),
    ...set(size),
    ...warm,
    ...block([
      ...loop([
        ...get(h),
        ...get(1),
        ...iGeU,
        ...brIf(1),
        ...blockAt,
        ...i32(0),
        ...set(p),
        ...block([
          ...raise,
          ...skip,
          ...loop([
            // p = the lowest position left; cleared from the mask
            ...get(mask),
            ...iEqz,
            ...brIf(1),
            ...get(mask),
            ...ctz,
            ...set(p),
            ...get(mask),
            ...get(mask),
            ...i32(1),
            ...iSub,
            ...iAnd,
            ...set(mask),
            ...block([
              ...get(o),
              ...get(p),
              ...i32(1),
              ...iShl,
              ...iAdd,
              ...u16Load0,
              ...tee(s),
              ...get(7),
              ...iLtU,
              ...brIf(0),
              // the block row r (padding rows skipped)
              ...rowOf,
              ...tee(r),
              ...get(last),
              ...iGeS,
              ...brIf(0),
              ...get(8),
              ...get(s),
              ...fromU,
              ...get(9),
              ...fDiv,
              ...fAdd,
              ...set(score),
              ...get(size),
              ...get(12),
              ...iLtS,
              ...ifElse([...loadRow, ...push], [...block(replace)]),
            ]),
            ...br(0),
          ]),
        ]),
        ...bump(h, i32(1)),
        ...br(0),
      ]),
    ]),
    ...get(11),
    ...get(size),
    ...i32Store1(),
    0x0b,
  ];
}

/**
 * The bytes of the selection module: imports `env.out` (the fast-scan
 * kernel's memory), exports `heaps` (its own) and `offer` (see the module
 * notes).
 *
 * @example
 * ```ts
 * import { selectModuleBytes } from "./wasm_select.ts";
 * if (!WebAssembly.validate(selectModuleBytes())) throw new Error("invalid module");
 * ```
 */
export function selectModuleBytes(): Uint8Array<ArrayBuffer> {
  const body = offerBody();
  const params = [...Array(8).fill([I32]), [F64], [F64], ...Array(4).fill([I32])];
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
    ...section(1, vec([[0x60, ...vec(params), ...vec([])]])),
    ...section(2, vec([[...name("env"), ...name("out"), 0x02, 0x00, 0]])),
    ...section(3, vec([[0]])),
    ...section(5, vec([[0x00, 1]])),
    ...section(7, vec([[...name("heaps"), 0x02, 1], [...name("offer"), 0x00, 0]])),
    ...section(10, vec([[...uleb(body.length), ...body]])),
  ]);
}

const compiled = onceModule(selectModuleBytes);

/**
 * One batch's candidate heaps in WebAssembly, over a fast-scan kernel's
 * memory `out` and the index's global rows: {@linkcode CandidateHeaps.offer}
 * is `offerWritten` into question `j`'s heap.
 */
export class CandidateHeaps {
  readonly #heaps: WebAssembly.Memory;
  readonly #offer: (...a: number[]) => void;
  /** The histogram's shift (i32) at byte 0, its 256 counts from 16, then the rows. */
  readonly #rowsAt = 16 + 1024;
  #heapAt = 0;
  #cap = 0;
  #count = 0;

  private constructor(instance: WebAssembly.Instance, rows: Uint32Array) {
    const e = instance.exports as Record<string, unknown>;
    this.#heaps = e.heaps as WebAssembly.Memory;
    this.#offer = e.offer as (...a: number[]) => void;
    this.#heapAt = this.#rowsAt + Math.ceil((4 * rows.length) / 8) * 8;
    this.#ensure(this.#heapAt);
    new Uint32Array(this.#heaps.buffer, this.#rowsAt, rows.length).set(rows);
  }

  /** The module over the kernel memory `out` and these global rows, or `undefined` where it cannot run. */
  static create(out: WebAssembly.Memory, rows: Uint32Array): CandidateHeaps | undefined {
    const m = compiled();
    if (m === undefined) return undefined;
    try {
      return new CandidateHeaps(new WebAssembly.Instance(m, { env: { out } }), rows);
    } catch {
      return undefined;
    }
  }

  #ensure(bytes: number): void {
    grownBuffer(this.#heaps, bytes);
    this.#views();
  }

  #at(j: number): number {
    return this.#heapAt + j * (8 + 16 * this.#cap);
  }

  /**
   * Empties `count` heaps of `cap` pairs; `maxSum`: the largest sum the
   * kernel can write (its tables' entries at most qmax each), which sizes
   * the first offer's histogram (256 buckets up to it).
   */
  reset(count: number, cap: number, maxSum = 65535): void {
    this.#cap = cap;
    this.#count = count;
    this.#ensure(this.#at(count));
    const sizes = new Int32Array(this.#heaps.buffer);
    for (let j = 0; j < count; j++) sizes[this.#at(j) >> 2] = 0;
    sizes[0] = Math.max(0, Math.ceil(Math.log2(Math.min(65535, maxSum) + 1)) - 8);
  }

  #i32: Int32Array<ArrayBufferLike> = new Int32Array(0);
  #f64: Float64Array<ArrayBufferLike> = new Float64Array(0);

  /**
   * Views of the heaps' memory, re-taken when a growth has replaced its
   * buffer: after each `#ensure`, the only place the memory grows
   * (the module never grows it), so the calls that read them need not ask
   * (a `buffer` read a call cost `floor` about 0.1 µs, 2.5 % of a search).
   */
  #views(): void {
    const buf = this.#heaps.buffer;
    if (this.#i32.buffer !== buf) {
      this.#i32 = new Int32Array(buf);
      this.#f64 = new Float64Array(buf);
    }
  }

  /** The worst score kept by heap `j`, or −∞ while it holds fewer than `cap`. */
  floor(j: number): number {
    const at = this.#at(j);
    if (this.#i32[at >> 2] < this.#cap) return -Infinity;
    return this.#f64[(at + 8) >> 3];
  }

  /**
   * Offers to heap `j` the rows of the `count` blocks the kernel wrote at
   * byte `out` of its memory (`per` 16-bit words a block, this question's
   * sums from word `at`, the block's index at 32-bit word `idx`), blocks
   * from `b0` of a list of `n` rows whose global rows start at `r0`.
   */
  offer(
    j: number,
    out: number,
    count: number,
    per: number,
    at: number,
    idx: number,
    b0: number,
    n: number,
    thr: number,
    base: number,
    scale: number,
    r0: number,
  ): void {
    this.#offer(
      out,
      count,
      per,
      at,
      idx,
      b0,
      n,
      thr,
      base,
      scale,
      r0,
      this.#at(j),
      this.#cap,
      this.#rowsAt,
    );
  }

  /** Heap `j`'s kept pairs (in heap order). */
  kept(j: number): { row: number; score: number }[] {
    const at = this.#at(j), buf = this.#heaps.buffer, cap = this.#cap;
    const size = new Int32Array(buf, at, 1)[0];
    const s = new Float64Array(buf, at + 8, cap), r = new Float64Array(buf, at + 8 + 8 * cap, cap);
    const out: { row: number; score: number }[] = [];
    for (let i = 0; i < size; i++) out.push({ row: r[i], score: s[i] });
    return out;
  }

  /**
   * Heap `j`'s kept pairs by increasing row (rows are distinct, so the
   * order is total).
   */
  pairsByRow(j: number): { row: number; score: number }[] {
    const at = this.#at(j), cap = this.#cap;
    const size = this.#i32[at >> 2], s0 = (at + 8) >> 3, r0 = s0 + cap;
    // Sorted as keys row · 2^b + position, a typed sort without a comparator, where the keys are
    // exact doubles (rows are u32: b ≤ 21); else positions sorted by row. (The keys' array is
    // kept: a new one a question costs more than the sort.)
    const b = Math.max(1, Math.ceil(Math.log2(size + 1))), span = 2 ** b;
    const f64 = this.#f64;
    if (b > 21) {
      const pos = Array.from({ length: size }, (_, i) => i);
      pos.sort((x, y) => f64[r0 + x] - f64[r0 + y]);
      return pos.map((at) => ({ row: f64[r0 + at], score: f64[s0 + at] }));
    }
    if (this.#keys.length < size) this.#keys = new Float64Array(size);
    const keys = this.#keys.subarray(0, size);
    for (let i = 0; i < size; i++) keys[i] = f64[r0 + i] * span + i;
    keys.sort();
    const out: { row: number; score: number }[] = new Array(size);
    for (let i = 0; i < size; i++) {
      // key = row · span + position: the row by an exact division by a power of two.
      const key = keys[i], row = Math.floor(key / span);
      out[i] = { row, score: f64[s0 + key - row * span] };
    }
    return out;
  }
  #keys = new Float64Array(0);

  /** Heaps reset last. */
  get count(): number {
    return this.#count;
  }
}
