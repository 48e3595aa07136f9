/**
 * The byte encodings shared by the hand-assembled WebAssembly modules
 * (`wasm_simd.ts`, `index/ivfpq/pq_scan.ts`): LEB128 integers, vectors, sections
 * and names, as the WebAssembly binary format defines them.
 *
 * @example
 * ```ts
 * import { sleb, uleb } from "./wasm_encode.ts";
 * if (uleb(624485).join() !== "229,142,38") throw new Error();
 * if (sleb(-123456).join() !== "192,187,120") throw new Error();
 * ```
 *
 * @module
 */

/** Unsigned LEB128. */
export function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return out;
}

/** Signed LEB128. */
export function sleb(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && !(b & 0x40)) || (n === -1 && (b & 0x40))) {
      out.push(b);
      return out;
    }
    out.push(b | 0x80);
  }
}

/** A vector: its length, then its items. */
export const vec = (items: number[][]): number[] => [...uleb(items.length), ...items.flat()];

/** A section: its id, its byte length, then its body. */
export const section = (
  id: number,
  body: number[],
): number[] => [id, ...uleb(body.length), ...body];

/** A name (ASCII). */
export const name = (s: string): number[] => vec([...s].map((c) => [c.charCodeAt(0)]));

/** Instruction encoders shared by the hand-assembled modules (opcodes of the binary format). */

/** `local.get i`. */
export const get = (i: number): number[] => [0x20, ...uleb(i)];
/** `local.set i`. */
export const set = (i: number): number[] => [0x21, ...uleb(i)];
/** `local.tee i`. */
export const tee = (i: number): number[] => [0x22, ...uleb(i)];
/** `i32.const v`. */
export const i32 = (v: number): number[] => [0x41, ...sleb(v)];
/** `f64.const v` (its eight bytes, little-endian). */
export const f64c = (v: number): number[] => [
  0x44,
  ...new Uint8Array(new Float64Array([v]).buffer),
];
/** A SIMD instruction (prefix 0xfd), its opcode and immediates. */
export const simd = (op: number, ...imm: number[]): number[] => [0xfd, ...uleb(op), ...imm];
/** `block` with no result around `body`. */
export const block = (body: number[]): number[] => [0x02, 0x40, ...body, 0x0b];
/** `loop` with no result around `body`. */
export const loop = (body: number[]): number[] => [0x03, 0x40, ...body, 0x0b];
/** `if` with no result around `body`. */
export const ifThen = (body: number[]): number[] => [0x04, 0x40, ...body, 0x0b];
/**
 * `if … else … end` (no result) of the two bodies, on the i32 at the top of
 * the stack.
 *
 * @example
 * ```ts
 * import { ifElse } from "./wasm_encode.ts";
 * if (ifElse([1], [2]).join() !== "4,64,1,5,2,11") throw new Error();
 * ```
 */
export const ifElse = (then: number[], other: number[]): number[] => [
  0x04,
  0x40,
  ...then,
  0x05,
  ...other,
  0x0b,
];
/** `br_if l`. */
export const brIf = (l: number): number[] => [0x0d, ...uleb(l)];
/** `br l`. */
export const br = (l: number): number[] => [0x0c, ...uleb(l)];
/** `local l += by` (i32; `by` the instructions that push the addend). */
export const bump = (l: number, by: number[]): number[] => [...get(l), ...by, 0x6a, ...set(l)];

/**
 * The buffer of `memory`, grown first (by whole 64 KiB pages) to hold at
 * least `bytes`: the kernels' classes keep their memory this way.
 *
 * @example
 * ```ts
 * import { grownBuffer } from "./wasm_encode.ts";
 * const m = new WebAssembly.Memory({ initial: 1 });
 * if (grownBuffer(m, 65537).byteLength !== 131072) throw new Error();
 * ```
 */
export function grownBuffer(memory: WebAssembly.Memory, bytes: number): ArrayBuffer {
  const have = memory.buffer.byteLength;
  if (bytes > have) memory.grow(Math.ceil((bytes - have) / 65536));
  return memory.buffer as ArrayBuffer;
}

/**
 * `memory`'s buffer with at least `bytes` bytes ({@linkcode grownBuffer}),
 * or `held` where that is still good: not detached by a growth (a
 * non-shared memory's old buffer reads as 0 bytes) and long enough. A
 * `memory.buffer` read costs about 14 ns (2-core AMD EPYC), a share of a
 * question where the search calls a module several times a question.
 *
 * @example
 * ```ts
 * import { heldBuffer } from "./wasm_encode.ts";
 * const m = new WebAssembly.Memory({ initial: 1 });
 * const b = heldBuffer(m, undefined);
 * if (heldBuffer(m, b, 100) !== b || heldBuffer(m, b, 65537).byteLength !== 131072) throw new Error();
 * ```
 */
export function heldBuffer(
  memory: WebAssembly.Memory,
  held: ArrayBuffer | undefined,
  bytes = 0,
): ArrayBuffer {
  if (held !== undefined && held.byteLength > 0 && held.byteLength >= bytes) return held;
  return grownBuffer(memory, bytes);
}

/**
 * A loop in passes of `g` items, then of one: local `k` (i32) from 0;
 * `pass(g)` while `k + g ≤ n` (`n`: the instructions pushing the count),
 * then `pass(1)` while `k < n`; each pass advances `k` itself.
 *
 * @example
 * ```ts
 * import { get, passes } from "./wasm_encode.ts";
 * if (passes(6, get(1), 4, (g) => []).length === 0) throw new Error();
 * ```
 */
export function passes(k: number, n: number[], g: number, pass: (g: number) => number[]): number[] {
  return [
    ...i32(0),
    ...set(k),
    ...block([
      ...loop([...get(k), ...i32(g), 0x6a, ...n, 0x4b, ...brIf(1), ...pass(g), ...br(0)]),
    ]),
    ...block([...loop([...get(k), ...n, 0x4f, ...brIf(1), ...pass(1), ...br(0)])]),
  ];
}

/**
 * A function giving the module compiled from the first of `variants` that
 * this runtime validates and compiles, with that variant: compiled on the
 * first call, kept for the next ones; `undefined` (every call) where none
 * can run, and the callers take their TypeScript path.
 *
 * @example
 * ```ts
 * import { firstModule } from "./wasm_encode.ts";
 * const empty = () => new Uint8Array([0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0]);
 * const bad = () => new Uint8Array([1, 2, 3]);
 * if (firstModule([bad, empty], (f) => f())()?.variant !== empty) throw new Error();
 * if (firstModule([bad], (f) => f())() !== undefined) throw new Error();
 * ```
 */
export function firstModule<V>(
  variants: readonly V[],
  bytes: (variant: V) => Uint8Array<ArrayBuffer>,
): () => { module: WebAssembly.Module; variant: V } | undefined {
  let compiled: { module: WebAssembly.Module; variant: V } | null | undefined;
  return () => {
    if (compiled === undefined) {
      compiled = null;
      for (const variant of variants) {
        try {
          const b = bytes(variant);
          if (WebAssembly.validate(b)) {
            compiled = { module: new WebAssembly.Module(b), variant };
            break;
          }
        } catch {
          // the next variant
        }
      }
    }
    return compiled ?? undefined;
  };
}

/**
 * A function giving the module compiled from `bytes()` (called with no
 * arguments, so a builder's defaults hold), compiled on the first call and
 * kept; `undefined` where this runtime cannot run it.
 *
 * @example
 * ```ts
 * import { onceModule } from "./wasm_encode.ts";
 * const m = onceModule(() => new Uint8Array([0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0]));
 * if (m() === undefined || m() !== m()) throw new Error();
 * ```
 */
export function onceModule(
  bytes: () => Uint8Array<ArrayBuffer>,
): () => WebAssembly.Module | undefined {
  const first = firstModule([bytes], (b) => b());
  return () => first()?.module;
}
