/**
 * An IVF-PQ index's vectors in a shared `WebAssembly.Memory`, and the
 * kernel that gathers rows of them into another module's memory where they
 * are scored ({@linkcode RowGather}), assembled here from its instructions
 * (as `wasm_simd.ts`).
 *
 * **Why.** The re-scoring of a question's candidates (`wasm_exact.ts`
 * `ExactRows`) scores rows in its module's own memory. With the vectors in
 * a `SharedArrayBuffer` each candidate row was copied there from
 * TypeScript (a `subarray` and a `set` a row: 3.4 µs a question for 50
 * rows of 256 float16 values on a 2-core AMD EPYC), then widened in a
 * second pass. With the vectors in a shared `WebAssembly.Memory`
 * ({@linkcode sharedRowsBytes}; the search workers are sent the memory
 * itself, {@linkcode rowsMemoryOf}) the module below reads each row where
 * it lies and writes it, widened, where it is scored: one pass, the same
 * float32 values.
 *
 * **`gather(idx, n, d, base, dst, half)`** (byte addresses; memory 0 is
 * the vectors' memory, imported as `env.rows`, memory 1 the scoring
 * module's own, imported as `env.own`): for `i < n`, row `r = idx[i]`
 * (u32 at `idx + 4i` of memory 1) of the vectors at `base` (`d` values a
 * row: float16 bits with `half`, else float32) is written as `d` float32
 * at `dst + 4·d·i` of memory 1; float16 values widened exactly
 * (`wasm_simd.ts` `halfFloatCode`, eight a step, then an odd last four),
 * float32 copied. `d` a multiple of 4.
 *
 * @module
 */
import {
  brIf,
  bump,
  get,
  i32,
  ifElse,
  ifThen,
  loop,
  name,
  onceModule,
  section,
  set,
  simd,
  uleb,
  vec,
} from "./wasm_encode.ts";
import { halfConstantsCode, halfSpanCode } from "./wasm_simd.ts";

const I32 = 0x7f, V128 = 0x7b;

/** The largest memory a wasm32 module addresses: 65,536 pages of 64 KiB. */
const MAX_PAGES = 65536;

/**
 * The bytes of the gather module (see the module notes): imports
 * `env.rows` (shared, memory 0) and `env.own` (memory 1), exports
 * `gather`.
 *
 * @example
 * ```ts
 * import { gatherModuleBytes } from "./wasm_gather.ts";
 * if (!WebAssembly.validate(gatherModuleBytes())) throw new Error("invalid module");
 * ```
 */
export function gatherModuleBytes(): Uint8Array<ArrayBuffer> {
  const add = [0x6a], mul = [0x6c], ltu = [0x49], and32 = [0x71];
  // memarg of memory 1 (flag 0x40 then the index) and of memory 0.
  const m1 = (align: number, off = 0) => [align | 0x40, 1, ...uleb(off)];
  const load0 = simd(0x00, 0, 0); // v128.load, memory 0
  const store1 = (off: number) => simd(0x0b, ...m1(0, off)); // v128.store, memory 1
  const i32Load1 = [0x28, ...m1(2)];
  const G = {
    idx: 0,
    n: 1,
    d: 2,
    base: 3,
    dst: 4,
    half: 5,
    i: 6,
    src: 7,
    end: 8,
    x: 9,
    y: 10,
    v: 11,
    bits: 12,
    inf: 13,
    pow: 14,
    top: 15,
  };
  // One row: src its first byte, end the byte after its last group of eight; d = 8k + 4: a
  // last four.
  const halfRow = [
    ...get(G.src),
    ...get(G.d),
    ...i32(-8),
    ...and32,
    ...i32(1),
    0x74, // i32.shl: 2 bytes a value
    ...add,
    ...set(G.end),
    ...halfSpanCode(G, store1, [...get(G.d), ...i32(4), ...and32]),
  ];
  const floatRow = [
    ...get(G.src),
    ...get(G.d),
    ...i32(2),
    0x74,
    ...add,
    ...set(G.end),
    ...get(G.src),
    ...get(G.end),
    ...ltu,
    ...ifThen([
      ...loop([
        ...get(G.dst),
        ...get(G.src),
        ...load0,
        ...store1(0),
        ...bump(G.dst, i32(16)),
        ...bump(G.src, i32(16)),
        ...get(G.src),
        ...get(G.end),
        ...ltu,
        ...brIf(0),
      ]),
    ]),
  ];
  const body = [
    ...vec([[3, I32], [7, V128]]),
    ...halfConstantsCode(G),
    ...i32(0),
    ...set(G.i),
    ...get(G.n),
    ...ifThen([
      ...loop([
        // src = base + idx[i] · d · (2 or 4)
        ...get(G.base),
        ...get(G.idx),
        ...get(G.i),
        ...i32(2),
        0x74,
        ...add,
        ...i32Load1,
        ...get(G.d),
        ...mul,
        ...i32(2),
        ...i32(4),
        ...get(G.half),
        0x1b, // select
        ...mul,
        ...add,
        ...set(G.src),
        ...get(G.half),
        ...ifElse(halfRow, floatRow),
        ...bump(G.i, i32(1)),
        ...get(G.i),
        ...get(G.n),
        ...ltu,
        ...brIf(0),
      ]),
    ]),
    0x0b,
  ];
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
    ...section(1, vec([[0x60, ...vec(Array(6).fill([I32])), ...vec([])]])),
    // Imports: env.rows (shared: limits flag 3, 0 … 65,536 pages), env.own (1 page up).
    ...section(
      2,
      vec([
        [...name("env"), ...name("rows"), 0x02, 0x03, 0, ...uleb(MAX_PAGES)],
        [...name("env"), ...name("own"), 0x02, 0x00, 0],
      ]),
    ),
    ...section(3, vec([[0]])),
    ...section(7, vec([[...name("gather"), 0x00, 0]])),
    ...section(10, vec([[...uleb(body.length), ...body]])),
  ]);
}

const gatherModule = onceModule(gatherModuleBytes);

/** The memories of the vectors read into them ({@linkcode sharedRowsBytes}), by buffer. */
const memories = new WeakMap<SharedArrayBuffer, WebAssembly.Memory>();

/**
 * `size` bytes of shared memory to read an index's vectors into: the
 * buffer of a shared `WebAssembly.Memory` of just that many pages (so that
 * {@linkcode RowGather} reads rows in place, {@linkcode rowsMemoryOf}),
 * or, where one cannot be had (over 4 GiB, or the runtime refuses it), a
 * plain `SharedArrayBuffer`. The first `size` bytes, zeroed.
 *
 * @example
 * ```ts
 * import { rowsMemoryOf, sharedRowsBytes } from "./wasm_gather.ts";
 * const b = sharedRowsBytes(100);
 * if (b.length !== 100 || !(b.buffer instanceof SharedArrayBuffer)) throw new Error();
 * if (rowsMemoryOf(b.buffer) === undefined) throw new Error("a memory where one can be had");
 * ```
 */
export function sharedRowsBytes(size: number): Uint8Array<SharedArrayBuffer> {
  const pages = Math.ceil(size / 65536);
  if (pages <= MAX_PAGES) {
    try {
      const memory = new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true });
      const buffer = memory.buffer as unknown as SharedArrayBuffer;
      memories.set(buffer, memory);
      return new Uint8Array(buffer, 0, size);
    } catch {
      // (No such memory here: a plain shared buffer.)
    }
  }
  return new Uint8Array(new SharedArrayBuffer(size));
}

/**
 * The `WebAssembly.Memory` whose buffer `buffer` is, where the vectors were
 * read into one ({@linkcode sharedRowsBytes}) or it was registered here
 * ({@linkcode rowsView}); else `undefined`.
 */
export function rowsMemoryOf(buffer: ArrayBufferLike): WebAssembly.Memory | undefined {
  return buffer instanceof SharedArrayBuffer ? memories.get(buffer) : undefined;
}

/**
 * A search worker's view of vectors in the shared memory `memory` (sent to
 * it with the vectors' view `like`): the same elements, over `memory`'s
 * buffer, which is registered ({@linkcode rowsMemoryOf}) so that this
 * thread's {@linkcode RowGather} reads them in place.
 *
 * @example
 * ```ts
 * import { rowsMemoryOf, rowsView } from "./wasm_gather.ts";
 * const m = new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
 * const v = rowsView(m, new Uint16Array(4));
 * if (!(v instanceof Uint16Array) || v.length !== 4 || rowsMemoryOf(v.buffer) !== m) throw new Error();
 * ```
 */
export function rowsView<T extends Float32Array | Uint16Array>(
  memory: WebAssembly.Memory,
  like: T,
): T {
  const buffer = memory.buffer as unknown as SharedArrayBuffer;
  memories.set(buffer, memory);
  return (like instanceof Float32Array
    ? new Float32Array(buffer, like.byteOffset, like.length)
    : new Uint16Array(buffer, like.byteOffset, like.length)) as T;
}

/**
 * Rows of vectors in a shared `WebAssembly.Memory` gathered, as float32,
 * into the memory `own` of another module (see the module notes):
 * {@linkcode RowGather.create}, then {@linkcode RowGather.gather}.
 */
export class RowGather {
  readonly #gather: (...a: number[]) => void;

  private constructor(instance: WebAssembly.Instance) {
    this.#gather = (instance.exports as Record<string, unknown>).gather as (
      ...a: number[]
    ) => void;
  }

  /**
   * The gatherer from the vectors `a` into `own`, or `undefined` where `a`
   * lies in no registered memory ({@linkcode rowsMemoryOf}) or the module
   * cannot run here.
   */
  static create(a: Float32Array | Uint16Array, own: WebAssembly.Memory): RowGather | undefined {
    const rows = rowsMemoryOf(a.buffer), m = gatherModule();
    if (rows === undefined || m === undefined) return undefined;
    try {
      return new RowGather(new WebAssembly.Instance(m, { env: { rows, own } }));
    } catch {
      return undefined;
    }
  }

  /**
   * Rows `idx[0..n)` (u32 at byte `idx` of `own`) of `a` (the vectors this
   * gatherer was made for: `d` values a row, `d` a multiple of 4) as
   * float32 at byte `dst` of `own`, one after another.
   */
  gather(a: Float32Array | Uint16Array, idx: number, n: number, d: number, dst: number): void {
    this.#gather(idx, n, d, a.byteOffset, dst, a instanceof Uint16Array ? 1 : 0);
  }
}
