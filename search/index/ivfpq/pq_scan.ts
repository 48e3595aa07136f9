/**
 * The ADC scan of the `ivf-pq` index (`ivfpq.ts`) as a WebAssembly kernel,
 * assembled here from its instructions (no toolchain, no binary blob), as
 * `search/kernels/wasm_simd.ts` does its kernels:
 * {@linkcode pqScanModuleBytes}, {@linkcode PqScanner}.
 *
 * **What it computes.** For the `n` rows of one list whose codes start at
 * `co` (sub-quantizer-major: code `m` of row `i` at `co + m·n + i`), the
 * float32 sum `T_0[c_0] + T_1[c_1] + … + T_{bpv−1}[c_{bpv−1}]`, added left to
 * right in float32 — exactly the sums of the plain TypeScript scan (`scan`
 * in `ivfpq.ts`, which accumulates a Float32Array in the same order), bit
 * for bit. The tables `T_m` (bpv × 256 float32) lie in the kernel's own
 * memory; the sums are written there too.
 *
 * **How.** Eight rows at a time, each row's sum in a register for the whole
 * pass over the sub-quantizers: per sub-quantizer two 32-bit loads give the
 * eight rows' codes, and eight table loads and float32 adds follow; the
 * sums are stored once per row (the TypeScript scan loads and stores each
 * row's sum once per sub-quantizer). The rows left (n mod 8) go one at a
 * time.
 *
 * **Four questions at once** (`scan4`, where the runtime has WebAssembly
 * SIMD). Most of the scan's time is the table lookups, one per code byte
 * per question, which WebAssembly cannot gather. When several questions
 * probe the same list (a batch of questions: `ivfCandidatesBatch`), their
 * tables are interleaved (`interleave`: entry `c` of sub-quantizer `m`
 * holds the four questions' `T_m[c]` side by side, 16 bytes), and one pass
 * over the list's codes does one 16-byte load and one `f32x4.add` per code
 * byte for all four: each lane adds the same float32 values in the same
 * order as the one-question scan, so every question's sums are the same
 * bit for bit, at about a third of the cost per question (measured on the
 * piqa-lstm dev index, README "Dense open search").
 *
 * **Memories.** The codes are memory 0, imported (a shared
 * `WebAssembly.Memory`, so that search workers scan the same bytes without
 * a copy: {@linkcode codesMemory}); memory 1 is the kernel's own (tables and
 * sums), per thread. Multi-memory WebAssembly; where it is missing the
 * scan stays in TypeScript (same results).
 *
 * @module
 */
import {
  block,
  br,
  brIf,
  firstModule,
  get,
  grownBuffer,
  i32,
  loop,
  name,
  section,
  set,
  simd,
  tee,
  uleb,
  vec,
} from "../../kernels/wasm_encode.ts";

const PAGE = 65536;

/** Sub-quantizers summed per pass over a list (their tables, 1 KiB each, stay in L1). */
export const SCAN_PASS = 16;

/** Rows summed at a time in registers. */
export const SCAN_ROWS = 8;

/** Questions whose tables one lane-parallel scan sums at once (`scan4`: f32x4 lanes). */
export const SCAN_LANES = 4;

/** WebAssembly opcodes and helpers of the scan module (memory 0: codes; memory 1: scratch). */
const I32 = 0x7f, V128 = 0x7b;
const add = [0x6a], and = [0x71], shl = [0x74], shrU = [0x76], mul = [0x6c];
const gtU = [0x4b], geU = [0x4f], ltU = [0x49];
const f32Add = [0x92];
// memargs: memory 0 (codes) plain; memory 1 (scratch) with the memory-index bit.
const load32 = (off: number) => [0x28, 2, ...uleb(off)];
const load8u = [0x2d, 0, 0];
const f32Load1 = (off: number) => [0x2a, 2 | 0x40, 1, ...uleb(off)];
const f32Store1 = (off: number) => [0x38, 2 | 0x40, 1, ...uleb(off)];
const v128Load1 = (off: number) => simd(0x00, 4 | 0x40, 1, ...uleb(off));
const v128Store1 = (off: number) => simd(0x0b, 4 | 0x40, 1, ...uleb(off));
const f32x4Add = simd(0xe4);
/** `i8x16.shuffle` picking float32 lanes (0–3: first operand, 4–7: second). */
const shuffle32 = (lanes: number[]) =>
  simd(0x0d, ...lanes.flatMap((l) => [4 * l, 4 * l + 1, 4 * l + 2, 4 * l + 3]));

/**
 * The body of `scan(co, n, m0, m1, tab, acc, first)` (`lanes` 1: float32
 * sums, tables of 1 KiB per sub-quantizer from byte `tab`, sums at `acc`,
 * 4 bytes a row) or of `scan4` with the same parameters (`lanes` 4: f32x4
 * sums of four questions' interleaved tables, 4 KiB per sub-quantizer, 16
 * bytes an entry and a row). One pass over sub-quantizers `m0 … m1−1` of
 * every row; `first` 1 starts each sum from its first table value, 0 from
 * the stored partial sum.
 */
function scanBody(lanes: 1 | 4): number[] {
  const L = {
    co: 0,
    n: 1,
    m0: 2,
    m1: 3,
    tab: 4,
    acc: 5,
    first: 6,
    i: 7,
    p: 8,
    tp: 9,
    m: 10,
    w: 11,
    w1: 12,
    at: 13,
    a: 14,
  };
  const W = SCAN_ROWS, words = W / 4;
  // log2 of an entry's bytes, of a sub-quantizer's table bytes; the sums' type and ops.
  const eb = lanes === 1 ? 2 : 4, tb = eb + 8;
  const T = lanes === 1 ? 0x7d : V128;
  const load1 = lanes === 1 ? f32Load1 : v128Load1;
  const store1 = lanes === 1 ? f32Store1 : v128Store1;
  const sum = lanes === 1 ? f32Add : f32x4Add;
  const mask = 255 << eb;
  const wordLocal = (k: number) => (k === 0 ? L.w : L.w1);
  // Byte b of word local `w`, times the entry size (a table offset).
  const byteOffset = (w: number, b: number) =>
    8 * b - eb === 0
      ? [...get(w), ...i32(mask), ...and]
      : 8 * b < eb
      ? [...get(w), ...i32(eb - 8 * b), ...shl, ...i32(mask), ...and]
      : [...get(w), ...i32(8 * b - eb), ...shrU, ...i32(mask), ...and];
  const loadWords = () =>
    [...Array(words).keys()].flatMap((k) => [...get(L.p), ...load32(4 * k), ...set(wordLocal(k))]);
  // One pass over rows [i, i + w): the codes of sub-quantizer m0 from p = co + m0·n + i, the
  // sum started from the table value (first pass) or the stored partial sum, then m0+1 … m1−1.
  const pass = (w: number) => {
    const rows = [...Array(w).keys()];
    const value = (r: number) =>
      w === 1
        ? [...get(L.p), ...load8u, ...i32(eb), ...shl, ...get(L.tp), ...add, ...load1(0)]
        : [...byteOffset(wordLocal(r >> 2), r & 3), ...get(L.tp), ...add, ...load1(0)];
    const load = w === 1 ? [] : loadWords();
    return [
      ...get(L.co),
      ...get(L.m0),
      ...get(L.n),
      ...mul,
      ...add,
      ...get(L.i),
      ...add,
      ...set(L.p),
      ...get(L.tab),
      ...get(L.m0),
      ...i32(tb),
      ...shl,
      ...add,
      ...set(L.tp),
      ...get(L.acc),
      ...get(L.i),
      ...i32(eb),
      ...shl,
      ...add,
      ...set(L.at),
      ...load,
      ...rows.flatMap((r) => [
        ...get(L.first),
        0x04,
        T, // if (result T)
        ...value(r),
        0x05, // else
        ...get(L.at),
        ...load1(r << eb),
        ...value(r),
        ...sum,
        0x0b,
        ...set(L.a + r),
      ]),
      ...get(L.m0),
      ...i32(1),
      ...add,
      ...set(L.m),
      ...block([
        ...get(L.m),
        ...get(L.m1),
        ...geU,
        ...brIf(0),
        ...loop([
          ...get(L.p),
          ...get(L.n),
          ...add,
          ...set(L.p),
          ...get(L.tp),
          ...i32(1 << tb),
          ...add,
          ...set(L.tp),
          ...load,
          ...rows.flatMap((r) => [...get(L.a + r), ...value(r), ...sum, ...set(L.a + r)]),
          ...get(L.m),
          ...i32(1),
          ...add,
          ...tee(L.m),
          ...get(L.m1),
          ...ltU,
          ...brIf(0),
        ]),
      ]),
      ...rows.flatMap((r) => [...get(L.at), ...get(L.a + r), ...store1(r << eb)]),
    ];
  };
  const rowsLoop = (w: number) =>
    block([
      ...loop([
        // while i + w <= n
        ...get(L.i),
        ...i32(w),
        ...add,
        ...get(L.n),
        ...gtU,
        ...brIf(1),
        ...pass(w),
        ...get(L.i),
        ...i32(w),
        ...add,
        ...set(L.i),
        ...br(0),
      ]),
    ]);
  return [
    ...vec([[7, I32], [W, T]]),
    ...i32(0),
    ...set(L.i),
    ...rowsLoop(W),
    ...rowsLoop(1),
    0x0b,
  ];
}

/**
 * The body of `interleave(s0, s1, s2, s3, dst, count)`: the `count`
 * float32 values (a multiple of 4) of four tables at bytes `s0 … s3` of
 * the scratch memory written interleaved from `dst`: value `j` of table
 * `g` at `dst + 16·j + 4·g` (a 4 × 4 transpose per step).
 */
function interleaveBody(): number[] {
  const L = { s: 0, dst: 4, count: 5, j: 6, o: 7, x: 8, t: 12 };
  const x = (g: number) => L.x + g, t = (g: number) => L.t + g;
  return [
    ...vec([[2, I32], [8, V128]]),
    ...block([
      ...loop([
        ...get(L.j),
        ...get(L.count),
        ...geU,
        ...brIf(1),
        ...get(L.j),
        ...i32(2),
        ...shl,
        ...set(L.o),
        ...[0, 1, 2, 3].flatMap((g) => [
          ...get(L.s + g),
          ...get(L.o),
          ...add,
          ...v128Load1(0),
          ...set(x(g)),
        ]),
        ...get(x(0)),
        ...get(x(1)),
        ...shuffle32([0, 4, 1, 5]),
        ...set(t(0)),
        ...get(x(0)),
        ...get(x(1)),
        ...shuffle32([2, 6, 3, 7]),
        ...set(t(1)),
        ...get(x(2)),
        ...get(x(3)),
        ...shuffle32([0, 4, 1, 5]),
        ...set(t(2)),
        ...get(x(2)),
        ...get(x(3)),
        ...shuffle32([2, 6, 3, 7]),
        ...set(t(3)),
        ...[[0, 2, [0, 1, 4, 5]], [0, 2, [2, 3, 6, 7]], [1, 3, [0, 1, 4, 5]], [1, 3, [2, 3, 6, 7]]]
          .flatMap(([a, b, lanes], r) => [
            ...get(L.dst),
            ...get(L.o),
            ...i32(2),
            ...shl,
            ...add,
            ...get(t(a as number)),
            ...get(t(b as number)),
            ...shuffle32(lanes as number[]),
            ...v128Store1(16 * r),
          ]),
        ...get(L.j),
        ...i32(4),
        ...add,
        ...set(L.j),
        ...br(0),
      ]),
    ]),
    0x0b,
  ];
}

/**
 * The bytes of the scan module: imports `env.codes` (shared memory, up to
 * 4 GiB), exports `scratch` (its own memory) and
 * `scan(co, n, m0, m1, tab, acc, first)` (see the module notes; `tab` and
 * `acc` byte offsets in `scratch`), and with `lanes` (WebAssembly SIMD)
 * also `scan4` (the same over four questions' interleaved tables, f32x4
 * sums) and `interleave` (four tables into that layout).
 *
 * @example
 * ```ts
 * import { pqScanModuleBytes } from "./pq_scan.ts";
 * if (!WebAssembly.validate(pqScanModuleBytes())) throw new Error("invalid module");
 * if (!WebAssembly.validate(pqScanModuleBytes(false))) throw new Error("invalid module");
 * ```
 */
export function pqScanModuleBytes(lanes = true): Uint8Array<ArrayBuffer> {
  const bodies = lanes ? [scanBody(1), scanBody(4), interleaveBody()] : [scanBody(1)];
  const names = lanes ? ["scan", "scan4", "interleave"] : ["scan"];
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
    ...section(
      1,
      vec([[0x60, ...vec(Array(7).fill([I32])), 0], [0x60, ...vec(Array(6).fill([I32])), 0]]),
    ),
    // import env.codes: memory, shared with a maximum (flag 3), 0 … 65536 pages
    ...section(2, vec([[...name("env"), ...name("codes"), 0x02, 0x03, 0, ...uleb(65536)]])),
    ...section(3, vec(bodies.map((_, f) => [f === 2 ? 1 : 0]))),
    ...section(5, vec([[0x00, 1]])),
    ...section(
      7,
      vec([[...name("scratch"), 0x02, 1], ...names.map((nm, f) => [...name(nm), 0x00, f])]),
    ),
    ...section(10, vec(bodies.map((b) => [...uleb(b.length), ...b]))),
  ]);
}

const compiled = firstModule([true, false], pqScanModuleBytes);

/**
 * The compiled scan module (with the lane-parallel `scan4` where this
 * runtime has WebAssembly SIMD, else the plain `scan` only), or
 * `undefined` where this runtime cannot run it.
 */
function scanModule(): WebAssembly.Module | undefined {
  return compiled()?.module;
}

/**
 * A shared WebAssembly memory of at least `size` bytes for the codes of an
 * index (the kernel reads them where they lie), or `undefined` where the
 * scan kernel cannot run here or `size` is over 4 GiB (the scan then stays
 * in TypeScript, same results).
 */
export function codesMemory(size: number): WebAssembly.Memory | undefined {
  if (scanModule() === undefined) return undefined;
  const pages = Math.max(1, Math.ceil(size / PAGE));
  if (pages > 65536) return undefined;
  try {
    return new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true });
  } catch {
    return undefined;
  }
}

/** Sub-quantizers summed per pass of {@linkcode PqScanner.scanLanes} (4 KiB of tables each). */
export const SCAN4_PASS = 8;

/**
 * The scan kernel of one thread over one codes memory.
 *
 * - One question: its tables (filled by the caller through
 *   {@linkcode PqScanner.tables}) summed by {@linkcode PqScanner.scan}.
 * - A batch of questions (where the runtime has WebAssembly SIMD:
 *   {@linkcode PqScanner.lanes}): {@linkcode PqScanner.batch} lays out
 *   every question's tables at once; {@linkcode PqScanner.scanOne} sums
 *   one question's over a list, {@linkcode PqScanner.scanLanes} up to
 *   four questions' in one pass over the list's codes (f32x4 sums, each
 *   lane the same float32 additions in the same order as `scan`: the
 *   same sums, bit for bit).
 */
export class PqScanner {
  readonly #scratch: WebAssembly.Memory;
  readonly #scan: (...args: number[]) => void;
  readonly #scan4?: (...args: number[]) => void;
  readonly #interleave?: (...args: number[]) => void;
  #tables = new Float32Array(0);
  #batch = { bpv: 0, maxN: 0, count: 0, buffer: undefined as ArrayBuffer | undefined };
  #views = { tables: new Float32Array(0), sums: new Float32Array(0) };

  private constructor(instance: WebAssembly.Instance) {
    const e = instance.exports as Record<string, unknown>;
    this.#scratch = e.scratch as WebAssembly.Memory;
    this.#scan = e.scan as (...args: number[]) => void;
    this.#scan4 = e.scan4 as ((...args: number[]) => void) | undefined;
    this.#interleave = e.interleave as ((...args: number[]) => void) | undefined;
  }

  /** The kernel over `codes` (from {@linkcode codesMemory}), or `undefined` where it cannot run. */
  static create(codes: WebAssembly.Memory): PqScanner | undefined {
    const m = scanModule();
    if (m === undefined) return undefined;
    try {
      return new PqScanner(new WebAssembly.Instance(m, { env: { codes } }));
    } catch {
      return undefined;
    }
  }

  /** Whether the lane-parallel batch scan ({@linkcode PqScanner.scanLanes}) runs here. */
  get lanes(): boolean {
    return this.#scan4 !== undefined;
  }

  #ensure(bytes: number): ArrayBuffer {
    return grownBuffer(this.#scratch, bytes);
  }

  /**
   * The tables (bpv × 256 float32) the next {@linkcode scan} sums, to be
   * filled by the caller: a view of the kernel's memory, valid until the
   * next `tables`, `scan` or `batch` call.
   */
  tables(bpv: number): Float32Array {
    const buf = this.#ensure(bpv * 1024);
    if (this.#tables.buffer !== buf || this.#tables.length !== bpv * 256) {
      this.#tables = new Float32Array(buf, 0, bpv * 256);
    }
    return this.#tables;
  }

  /**
   * The float32 sums of the `n` rows whose codes start at byte `co` of the
   * codes memory (see the module notes), over the tables last filled: a
   * view of the kernel's memory, valid until the next call.
   */
  scan(co: number, n: number, bpv: number, pass = SCAN_PASS): Float32Array {
    const at = bpv * 1024;
    const buf = this.#ensure(at + n * 4);
    for (let m0 = 0; m0 < bpv; m0 += pass) {
      this.#scan(co, n, m0, Math.min(bpv, m0 + pass), 0, at, m0 === 0 ? 1 : 0);
    }
    return new Float32Array(buf, at, n);
  }

  // The batch layout of the scratch memory: the interleaved tables of a lane group (bpv ×
  // 4 KiB) at 0, then the sums (maxN rows × 16 bytes), then the questions' tables (count ×
  // bpv × 1 KiB), question-major.
  #sumsAt(): number {
    return this.#batch.bpv * 4096;
  }
  #tablesAt(): number {
    return this.#sumsAt() + this.#batch.maxN * 16;
  }

  /**
   * Lays out a batch of `count` questions for lists of at most `maxN`
   * rows and returns their tables (count × bpv × 256 float32, question
   * `j`'s from `j · bpv · 256`), to be filled by the caller before
   * {@linkcode scanOne} or {@linkcode scanLanes} reads them: a view of the
   * kernel's memory, valid until the next `batch`, `tables` or `scan` call.
   */
  batch(count: number, bpv: number, maxN: number): Float32Array {
    this.#batch = { bpv, maxN, count, buffer: undefined };
    const buf = this.#ensure(this.#tablesAt() + count * bpv * 1024);
    this.#batch.buffer = buf;
    this.#views = {
      tables: new Float32Array(buf, this.#tablesAt(), count * bpv * 256),
      sums: new Float32Array(buf, this.#sumsAt(), maxN * 4),
    };
    return this.#views.tables;
  }

  #checkBatch(n: number): void {
    if (this.#batch.buffer !== this.#scratch.buffer || n > this.#batch.maxN) {
      throw new Error("PqScanner: scan outside the current batch layout");
    }
  }

  /**
   * The float32 sums over question `j`'s tables of the batch of the `n`
   * rows whose codes start at byte `co`: as {@linkcode scan}, a view valid
   * until the next scan.
   */
  scanOne(j: number, co: number, n: number, pass = SCAN_PASS): Float32Array {
    this.#checkBatch(n);
    const bpv = this.#batch.bpv, tab = this.#tablesAt() + j * bpv * 1024, at = this.#sumsAt();
    for (let m0 = 0; m0 < bpv; m0 += pass) {
      this.#scan(co, n, m0, Math.min(bpv, m0 + pass), tab, at, m0 === 0 ? 1 : 0);
    }
    return this.#views.sums.subarray(0, n);
  }

  /**
   * The float32 sums over the tables of questions `js` (1 to 4 of the
   * batch) of the `n` rows whose codes start at byte `co`, in one pass
   * over the codes: row `i`'s sum for `js[g]` at `4·i + g` of the view
   * returned (valid until the next scan); each the sum {@linkcode scanOne}
   * gives, bit for bit.
   */
  scanLanes(js: readonly number[], co: number, n: number, pass = SCAN4_PASS): Float32Array {
    this.#checkBatch(n);
    if (this.#scan4 === undefined || this.#interleave === undefined) {
      throw new Error("PqScanner: no lane-parallel scan on this runtime");
    }
    if (js.length < 1 || js.length > SCAN_LANES) {
      throw new Error(`PqScanner: 1 to ${SCAN_LANES} questions a lane scan, got ${js.length}`);
    }
    const bpv = this.#batch.bpv, base = this.#tablesAt();
    const s = [0, 1, 2, 3].map((g) => base + js[Math.min(g, js.length - 1)] * bpv * 1024);
    this.#interleave(s[0], s[1], s[2], s[3], 0, bpv * 256);
    const at = this.#sumsAt();
    for (let m0 = 0; m0 < bpv; m0 += pass) {
      this.#scan4(co, n, m0, Math.min(bpv, m0 + pass), 0, at, m0 === 0 ? 1 : 0);
    }
    return this.#views.sums.subarray(0, n * 4);
  }
}
