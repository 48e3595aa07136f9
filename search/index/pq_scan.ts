/**
 * The ADC scan of the `ivf-pq` index (`ivfpq.ts`) as a WebAssembly kernel,
 * assembled here from its instructions (no toolchain, no binary blob), as
 * `search/wasm_simd.ts` does its kernels: {@linkcode pqScanModuleBytes},
 * {@linkcode PqScanner}.
 *
 * **What it computes.** For the `n` rows of one list whose codes start at
 * `co` (sub-quantizer-major: code `m` of row `i` at `co + m·n + i`), the
 * float32 sum `T_0[c_0] + T_1[c_1] + … + T_{bpv−1}[c_{bpv−1}]`, added left to
 * right in float32 — exactly the sums of the plain TypeScript scan (`scan`
 * in `ivfpq.ts`, which accumulates a Float32Array in the same order), bit
 * for bit. The tables `T_m` (bpv × 256 float32) lie at the start of the
 * kernel's own memory; the sums are written after them.
 *
 * **How.** Eight rows at a time, each row's sum in a register for the whole
 * pass over the sub-quantizers: per sub-quantizer two 32-bit loads give the
 * eight rows' codes, and eight table loads and float32 adds follow; the
 * sums are stored once per row (the TypeScript scan loads and stores each
 * row's sum once per sub-quantizer). The rows left (n mod 8) go one at a
 * time.
 *
 * **Memories.** The codes are memory 0, imported (a shared
 * `WebAssembly.Memory`, so that search workers scan the same bytes without
 * a copy: {@linkcode codesMemory}); memory 1 is the kernel's own (tables and
 * sums), per thread. Multi-memory WebAssembly; where it is missing the
 * scan stays in TypeScript (same results).
 *
 * @module
 */
import { name, section, sleb, uleb, vec } from "../wasm_encode.ts";

const PAGE = 65536;

/** Sub-quantizers summed per pass over a list (their tables, 1 KiB each, stay in L1). */
export const SCAN_PASS = 16;

/** Rows summed at a time in registers. */
export const SCAN_ROWS = 8;

/**
 * The bytes of the scan module: imports `env.codes` (shared memory, up to
 * 4 GiB), exports `scratch` (its own memory) and
 * `scan(co, n, bpv, acc)` (see the module notes; `acc` a byte offset in
 * `scratch`, the tables at 0).
 *
 * @example
 * ```ts
 * import { pqScanModuleBytes } from "./pq_scan.ts";
 * if (!WebAssembly.validate(pqScanModuleBytes())) throw new Error("invalid module");
 * ```
 */
export function pqScanModuleBytes(): Uint8Array<ArrayBuffer> {
  const I32 = 0x7f, F32 = 0x7d;
  const get = (i: number) => [0x20, ...uleb(i)];
  const set = (i: number) => [0x21, ...uleb(i)];
  const i32 = (v: number) => [0x41, ...sleb(v)];
  const add = [0x6a], and = [0x71], shl = [0x74], shrU = [0x76];
  const gtU = [0x4b], geU = [0x4f], ltU = [0x49];
  const f32Add = [0x92];
  // memargs: memory 0 (codes) plain; memory 1 (scratch) with the index bit.
  const load32 = (off: number) => [0x28, 2, ...uleb(off)];
  const load8u = [0x2d, 0, 0];
  const f32Load1 = [0x2a, 2 | 0x40, 1, 0];
  const f32Load1At = (off: number) => [0x2a, 2 | 0x40, 1, ...uleb(off)];
  const f32Store1 = (off: number) => [0x38, 2 | 0x40, 1, ...uleb(off)];
  const tee = (i: number) => [0x22, ...uleb(i)];
  const block = (body: number[]) => [0x02, 0x40, ...body, 0x0b];
  const loop = (body: number[]) => [0x03, 0x40, ...body, 0x0b];
  const brIf = (l: number) => [0x0d, ...uleb(l)];
  const br = (l: number) => [0x0c, ...uleb(l)];

  // Parameters and locals.
  const L = {
    co: 0,
    n: 1,
    m0: 2,
    m1: 3,
    acc: 4,
    first: 5,
    i: 6,
    p: 7,
    tp: 8,
    m: 9,
    w: 10,
    w1: 11,
    at: 12,
    a: 13,
  };
  const W = SCAN_ROWS, words = W / 4;
  const wordLocal = (k: number) => (k === 0 ? L.w : L.w1);
  // Byte b of word local `w`, times 4 (a table offset).
  const byteOffset = (w: number, b: number) =>
    b === 0
      ? [...get(w), ...i32(2), ...shl, ...i32(1020), ...and]
      : [...get(w), ...i32(8 * b - 2), ...shrU, ...i32(1020), ...and];
  const loadWords = () =>
    [...Array(words).keys()].flatMap((k) => [...get(L.p), ...load32(4 * k), ...set(wordLocal(k))]);
  // One pass over rows [i, i + w): the codes of sub-quantizer m0 from p = co + m0·n + i, the
  // sum started from the table value (first pass) or the stored partial sum, then m0+1 … m1−1.
  const pass = (w: number) => {
    const rows = [...Array(w).keys()];
    const value = (r: number) =>
      w === 1
        ? [...get(L.p), ...load8u, ...i32(2), ...shl, ...get(L.tp), ...add, ...f32Load1]
        : [...byteOffset(wordLocal(r >> 2), r & 3), ...get(L.tp), ...add, ...f32Load1];
    const load = w === 1 ? [] : loadWords();
    return [
      ...get(L.co),
      ...get(L.m0),
      ...get(L.n),
      0x6c, // i32.mul
      ...add,
      ...get(L.i),
      ...add,
      ...set(L.p),
      ...get(L.m0),
      ...i32(10),
      ...shl,
      ...set(L.tp),
      ...get(L.acc),
      ...get(L.i),
      ...i32(2),
      ...shl,
      ...add,
      ...set(L.at),
      ...load,
      ...rows.flatMap((r) => [
        ...get(L.first),
        0x04,
        F32, // if (result f32)
        ...value(r),
        0x05, // else
        ...get(L.at),
        ...f32Load1At(4 * r),
        ...value(r),
        ...f32Add,
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
          ...i32(1024),
          ...add,
          ...set(L.tp),
          ...load,
          ...rows.flatMap((r) => [...get(L.a + r), ...value(r), ...f32Add, ...set(L.a + r)]),
          ...get(L.m),
          ...i32(1),
          ...add,
          ...tee(L.m),
          ...get(L.m1),
          ...ltU,
          ...brIf(0),
        ]),
      ]),
      ...rows.flatMap((r) => [...get(L.at), ...get(L.a + r), ...f32Store1(4 * r)]),
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
  const scan = [
    ...vec([[7, I32], [W, F32]]),
    ...i32(0),
    ...set(L.i),
    ...rowsLoop(W),
    ...rowsLoop(1),
    0x0b,
  ];
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
    ...section(1, vec([[0x60, ...vec(Array(6).fill([I32])), 0]])),
    // import env.codes: memory, shared with a maximum (flag 3), 0 … 65536 pages
    ...section(2, vec([[...name("env"), ...name("codes"), 0x02, 0x03, 0, ...uleb(65536)]])),
    ...section(3, vec([[0]])),
    ...section(5, vec([[0x00, 1]])),
    ...section(7, vec([[...name("scratch"), 0x02, 1], [...name("scan"), 0x00, 0]])),
    ...section(10, vec([[...uleb(scan.length), ...scan]])),
  ]);
}

let compiled: WebAssembly.Module | null | undefined;

/** The compiled scan module, or `undefined` where this runtime cannot run it. */
function scanModule(): WebAssembly.Module | undefined {
  if (compiled === undefined) {
    try {
      const bytes = pqScanModuleBytes();
      compiled = WebAssembly.validate(bytes) ? new WebAssembly.Module(bytes) : null;
    } catch {
      compiled = null;
    }
  }
  return compiled ?? undefined;
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

/**
 * The scan kernel of one thread over one codes memory: its tables (filled
 * by the caller through {@linkcode PqScanner.tables}) and {@linkcode PqScanner.scan}.
 */
export class PqScanner {
  readonly #scratch: WebAssembly.Memory;
  readonly #scan: (...args: number[]) => void;
  #tables = new Float32Array(0);

  private constructor(instance: WebAssembly.Instance) {
    const e = instance.exports as Record<string, unknown>;
    this.#scratch = e.scratch as WebAssembly.Memory;
    this.#scan = e.scan as (...args: number[]) => void;
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

  #ensure(bytes: number): ArrayBuffer {
    const have = this.#scratch.buffer.byteLength;
    if (bytes > have) this.#scratch.grow(Math.ceil((bytes - have) / PAGE));
    return this.#scratch.buffer as ArrayBuffer;
  }

  /**
   * The tables (bpv × 256 float32) the next {@linkcode scan} sums, to be
   * filled by the caller: a view of the kernel's memory, valid until the
   * next `tables` or `scan` call.
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
      this.#scan(co, n, m0, Math.min(bpv, m0 + pass), at, m0 === 0 ? 1 : 0);
    }
    return new Float32Array(buf, at, n);
  }
}
