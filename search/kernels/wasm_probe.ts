/**
 * The question's path before the 4-bit fast scan
 * (`search/index/ivfpq/fastscan.ts`), in WebAssembly assembled here from
 * its instructions (as `wasm_fastscan.ts`): probing (`q · c_l` or
 * `−‖q − c_l‖²` for every coarse centroid), the float tables of the
 * question (or of the question minus a centroid, `l2`) and their
 * quantization into the kernel's 8-bit tables: {@linkcode probeModuleBytes},
 * {@linkcode QuestionKernel}, and the plain TypeScript references it is
 * tested against ({@linkcode probeScores}; `fastscan.ts` `tables4` and
 * `quantizeTables`).
 *
 * **The same numbers as the TypeScript, bit for bit.** Everything is
 * float64 arithmetic done in the references' order: each float32 input
 * promoted to float64 (exact), products and sums one at a time in the same
 * sequence (`s += x · y`, or `e = x − y; s += e · e`), so every result is
 * the same IEEE double. Eight lists are probed a pass, two a `f64x2`
 * accumulator (each lane a list's own sum in its own order: `f64x2`
 * additions and products are the scalar ones lane by lane; the centroids
 * of two lists side by side, `(c_2p[t], c_2p+1[t])`, widened with
 * `f64x2.promote_low_f32x4`). The tables take a sub-quantizer's 16 entries
 * two a vector from an f64 copy of the codebooks laid out for it (for
 * each sub-quantizer and dimension, its 16 entries' values side by side),
 * the question's value in both lanes. Quantization keeps
 * `quantizeTables`' comparisons (`x < lo`, `x > hi`, `hi − lo > range`),
 * its scale `qmax / range` (1 when the range is 0) and JavaScript's
 * `Math.round` for the non-negative values it rounds (`⌊y⌋`, plus 1 when
 * `y − ⌊y⌋ ≥ 0.5`: exact), then `min(qmax, ·)` and a saturating conversion
 * (a NaN gives 0, as a typed array store of NaN does); two entries a
 * vector (`f64x2`: each lane the scalar operations, `f64x2.floor`,
 * `f64x2.ge` masking 1.0, `f64x2.pmin` with qmax, `qmax < r ? qmax : r`,
 * which keeps a NaN as `min` would, `i32x4.trunc_sat_f64x2_s_zero`: the
 * same integer for every value from 0 to qmax and NaN),
 * a table's 16 bytes gathered (each two vectors' two lanes by a shuffle,
 * then unsigned narrowing to 16 and to 8 bits, exact for 0 … qmax) and
 * stored at once. A table's
 * smallest and largest entries are taken in two lanes too (the even and
 * the odd entries, `f64x2.pmin` and `f64x2.pmax`: `x < lo ? x : lo` and
 * `x > hi ? x : hi`), then the odd lane's against the even's, the order
 * `quantizeTables` follows (so the same value, zeros' signs included).
 *
 * Functions (byte addresses into the module's own memory, `memory`):
 * - `probe(q, ci, nlist, d, l2, qc)`: `qc[l]` (f64) for the `nlist`
 *   centroids `ci` (f32, two lists side by side: `(c_2p[t], c_2p+1[t])`
 *   at `ci + 8·(d·p + t)`) and question `q` (f32, d).
 * - `tables(q, c, cbt, M, dsub, l2, t)`: the `M × 16` float tables (f64)
 *   of `v = q` (ip) or `v = q − c` (l2; `c` the centroid's first float)
 *   against the codebooks `cbt` (f64, M × dsub × 16: value `k` of
 *   sub-quantizer `m`'s entry `e` at `cbt + 8·(16·(dsub·m + k) + e)`).
 * - `quant(t, M, lut, qmax, out)`: the tables at `t` into `M × 16` bytes
 *   at `lut`; the scale at `out` (f64), the sum of the tables' smallest
 *   values at `out + 8`, each table's smallest value from `out + 16`.
 *
 * @module
 */
import { fsQmax } from "./wasm_fastscan.ts";
import {
  block,
  br,
  brIf,
  bump,
  f64c,
  get,
  heldBuffer,
  i32,
  ifElse,
  loop,
  name,
  onceModule,
  passes,
  section,
  set,
  simd,
  tee,
  uleb,
  vec,
} from "./wasm_encode.ts";

const PAGE = 65536;
const I32 = 0x7f, F64 = 0x7c, V128 = 0x7b;

// Opcodes.
const f32Load = (off = 0) => [0x2a, 2, ...uleb(off)];
const f64Load = (off = 0) => [0x2b, 3, ...uleb(off)];
const f64Store = (off = 0) => [0x39, 3, ...uleb(off)];
const promote = [0xbb], fAdd = [0xa0], fSub = [0xa1], fDiv = [0xa3];
const fLt = [0x63], fGt = [0x64];
const select = [0x1b], fromU = [0xb8];
const iAdd = [0x6a], iMul = [0x6c], iGeU = [0x4f];

/** Pairs of lists a pass of `probe` (one `f64x2` accumulator a pair: eight lists). */
const PAIRS = 4;

function probeBody(): number[] {
  // params q 0, ci 1, nlist 2, d 3, l2 4, qc 5; locals i32: p 6 (pair), t 7, qp 8, D 9 (8·d),
  // np 10 (pairs), p0…p3 11–14; v128: s0…s3 15–18, x 19, e 20
  const P = [11, 12, 13, 14], S = [15, 16, 17, 18], X = 19, E = 20;
  const load64Zero = simd(0x5d, 3, 0), promoteLow = simd(0x5f), splat = simd(0x14);
  const vAdd = simd(0xf0), vSub = simd(0xf1), vMul = simd(0xf2), vNeg = simd(0xed);
  const lane = (i: number) => simd(0x21, i);
  const zero = simd(0x0c, ...new Array(16).fill(0));
  const pass = (g: number, l2: boolean) => [
    // p_i = ci + 8·d·(p + i); s_i = 0
    ...[...Array(g).keys()].flatMap((i) => [
      ...get(1),
      ...get(6),
      ...i32(i),
      ...iAdd,
      ...get(9),
      ...iMul,
      ...iAdd,
      ...set(P[i]),
      ...zero,
      ...set(S[i]),
    ]),
    ...get(0),
    ...set(8),
    ...i32(0),
    ...set(7),
    ...block([
      ...loop([
        ...get(7),
        ...get(3),
        ...iGeU,
        ...brIf(1),
        ...get(8),
        ...f32Load(),
        ...promote,
        ...splat,
        ...set(X),
        // each lane the scalar operations: x · c (ip) or (x − c)² (l2), added to its sum
        ...[...Array(g).keys()].flatMap((i) => [
          ...get(X),
          ...get(P[i]),
          ...load64Zero,
          ...promoteLow,
          ...(l2 ? [...vSub, ...tee(E), ...get(E)] : []),
          ...vMul,
          ...get(S[i]),
          ...vAdd,
          ...set(S[i]),
        ]),
        ...bump(8, i32(4)),
        ...[...Array(g).keys()].flatMap((i) => bump(P[i], i32(8))),
        ...bump(7, i32(1)),
        ...br(0),
      ]),
    ]),
    // qc[2(p+i)] = lane 0; qc[2(p+i)+1] = lane 1 when that list exists (negated for l2)
    ...[...Array(g).keys()].flatMap((i) => {
      const at = [...get(5), ...get(6), ...i32(i), ...iAdd, ...i32(16), ...iMul, ...iAdd];
      const v = [...get(S[i]), ...(l2 ? vNeg : [])];
      return [
        ...at,
        ...v,
        ...lane(0),
        ...f64Store(),
        ...get(6),
        ...i32(i),
        ...iAdd,
        ...i32(1),
        0x74, // i32.shl
        ...i32(1),
        ...iAdd,
        ...get(2),
        0x48, // i32.lt_s
        0x04,
        0x40,
        ...at,
        ...v,
        ...lane(1),
        ...f64Store(8),
        0x0b,
      ];
    }),
    ...bump(6, i32(g)),
  ];
  const lists = (l2: boolean) => passes(6, get(10), PAIRS, (g) => pass(g, l2));
  return [
    ...vec([[9, I32], [6, V128]]),
    ...get(3),
    ...i32(8),
    ...iMul,
    ...set(9),
    ...get(2),
    ...i32(1),
    ...iAdd,
    ...i32(1),
    0x76, // i32.shr_u
    ...set(10),
    ...get(4),
    ...ifElse(lists(true), lists(false)),
    0x0b,
  ];
}

function tablesBody(): number[] {
  // params q 0, c 1, cbt 2, M 3, dsub 4, l2 5, t 6; locals i32: m 7, k 8, qp 9, cp 10, bp 11,
  // tp 12; v128: x 13, acc 14–21 (entries 2i, 2i+1), e 22
  const X = 13, ACC = [14, 15, 16, 17, 18, 19, 20, 21], E = 22;
  const splat = simd(0x14), vAdd = simd(0xf0), vSub = simd(0xf1), vMul = simd(0xf2);
  const vNeg = simd(0xed), zero = simd(0x0c, ...new Array(16).fill(0));
  const load = (off: number) => simd(0x00, 3, ...uleb(off));
  const store = (off: number) => simd(0x0b, 3, ...uleb(off));
  // A sub-quantizer's 16 sums two entries a vector, each lane the scalar operations in the
  // reference's order: s = 0, then s += v_k · cb_k (ip) or s += (v_k − cb_k)² (l2) for each k,
  // the codebook's entries side by side (cbt: for each m and k, the 16 entries as f64).
  const all = (l2: boolean) => [
    ...i32(0),
    ...set(7),
    ...block([
      ...loop([
        ...get(7),
        ...get(3),
        ...iGeU,
        ...brIf(1),
        ...ACC.flatMap((a) => [...zero, ...set(a)]),
        ...i32(0),
        ...set(8),
        ...block([
          ...loop([
            ...get(8),
            ...get(4),
            ...iGeU,
            ...brIf(1),
            // v = q[k] (− c[k]), both lanes
            ...get(9),
            ...f32Load(),
            ...promote,
            ...(l2 ? [...get(10), ...f32Load(), ...promote, ...fSub] : []),
            ...splat,
            ...set(X),
            ...ACC.flatMap((a, i) => [
              ...get(X),
              ...get(11),
              ...load(16 * i),
              ...(l2 ? [...vSub, ...tee(E), ...get(E)] : []),
              ...vMul,
              ...get(a),
              ...vAdd,
              ...set(a),
            ]),
            ...bump(9, i32(4)),
            ...bump(10, i32(4)),
            ...bump(11, i32(128)),
            ...bump(8, i32(1)),
            ...br(0),
          ]),
        ]),
        ...ACC.flatMap((a, i) => [...get(12), ...get(a), ...(l2 ? vNeg : []), ...store(16 * i)]),
        ...bump(12, i32(128)),
        ...bump(7, i32(1)),
        ...br(0),
      ]),
    ]),
  ];
  return [
    ...vec([[6, I32], [10, V128]]),
    ...get(0),
    ...set(9),
    ...get(1),
    ...set(10),
    ...get(2),
    ...set(11),
    ...get(6),
    ...set(12),
    ...get(5),
    ...ifElse(all(true), all(false)),
    0x0b,
  ];
}

/** Lanes 0 and 1 of `a`, then of `b` (two i32x4 of two entries each: four entries). */
function pairLanes(a: number, b: number): number[] {
  const low = [0, 1, 2, 3, 4, 5, 6, 7];
  return [...get(a), ...get(b), ...simd(0x0d, ...low, ...low.map((x) => x + 16))];
}

function quantBody(): number[] {
  // params t 0, M 1, lut 2, qmax 3, out 4; locals m 5, cc 6, tp 7, lp 8 i32;
  // lo 9, hi 10, x 11, range 12, bias 13, scale 14, qm 15, y 16, fl 17 f64; v128 from 18
  const V = { mn: 18, sc: 19, qm: 20, half: 21, one: 22, y: 23, fl: 24, w: 25, lo: 26, hi: 27 };
  // the eight entry pairs' integers (i32x4, two lanes each), then gathered into one vector
  const W = [28, 29, 30, 31, 32, 33, 26, 27];
  return [
    ...vec([[4, I32], [9, F64], [16, V128]]),
    ...get(3),
    ...fromU,
    ...set(15),
    ...f64c(0),
    ...tee(12),
    ...set(13),
    ...get(0),
    ...set(7),
    ...i32(0),
    ...set(5),
    ...block([
      ...loop([
        ...get(5),
        ...get(1),
        ...iGeU,
        ...brIf(1),
        // lo, hi: two lanes (the even and the odd entries, each in order: x < lo ? x : lo is
        // f64x2.pmin(lo, x), x > hi ? x : hi is f64x2.pmax(hi, x)), then lane 1 against lane 0
        // the same way (quantizeTables' order).
        ...f64c(Infinity),
        ...simd(0x14),
        ...set(V.lo),
        ...f64c(-Infinity),
        ...simd(0x14),
        ...set(V.hi),
        ...[...Array(8).keys()].flatMap((k) => [
          ...get(7),
          ...simd(0x00, 3, ...uleb(16 * k)),
          ...set(V.y),
          ...get(V.lo),
          ...get(V.y),
          ...simd(0xf6),
          ...set(V.lo),
          ...get(V.hi),
          ...get(V.y),
          ...simd(0xf7),
          ...set(V.hi),
        ]),
        ...bump(7, i32(128)),
        // lo = lo1 < lo0 ? lo1 : lo0; hi = hi1 > hi0 ? hi1 : hi0
        ...get(V.lo),
        ...simd(0x21, 1),
        ...get(V.lo),
        ...simd(0x21, 0),
        ...get(V.lo),
        ...simd(0x21, 1),
        ...get(V.lo),
        ...simd(0x21, 0),
        ...fLt,
        ...select,
        ...set(9),
        ...get(V.hi),
        ...simd(0x21, 1),
        ...get(V.hi),
        ...simd(0x21, 0),
        ...get(V.hi),
        ...simd(0x21, 1),
        ...get(V.hi),
        ...simd(0x21, 0),
        ...fGt,
        ...select,
        ...set(10),
        // mins[m] = lo; bias += lo; range = hi − lo > range ? hi − lo : range
        ...get(4),
        ...get(5),
        ...i32(8),
        ...iMul,
        ...iAdd,
        ...get(9),
        ...f64Store(16),
        ...get(13),
        ...get(9),
        ...fAdd,
        ...set(13),
        ...get(10),
        ...get(9),
        ...fSub,
        ...tee(16),
        ...get(12),
        ...get(16),
        ...get(12),
        ...fGt,
        ...select,
        ...set(12),
        ...bump(5, i32(1)),
        ...br(0),
      ]),
    ]),
    // scale = range > 0 ? qmax / range : 1
    ...get(15),
    ...get(12),
    ...fDiv,
    ...f64c(1),
    ...get(12),
    ...f64c(0),
    ...fGt,
    ...select,
    ...set(14),
    // The entries, two a vector (f64x2: the same operations lane by lane).
    ...get(14),
    ...simd(0x14),
    ...set(V.sc),
    ...get(15),
    ...simd(0x14),
    ...set(V.qm),
    ...f64c(0.5),
    ...simd(0x14),
    ...set(V.half),
    ...f64c(1),
    ...simd(0x14),
    ...set(V.one),
    ...get(0),
    ...set(7),
    ...get(2),
    ...set(8),
    ...i32(0),
    ...set(5),
    ...block([
      ...loop([
        ...get(5),
        ...get(1),
        ...iGeU,
        ...brIf(1),
        ...get(4),
        ...get(5),
        ...i32(8),
        ...iMul,
        ...iAdd,
        ...f64Load(16),
        ...simd(0x14),
        ...set(V.mn),
        ...[...Array(8).keys()].flatMap((k) => [
          // y = (t − min_m) · scale; r = ⌊y⌋ + (y − ⌊y⌋ ≥ 0.5 ? 1 : 0); min(r, qmax)
          ...get(7),
          ...simd(0x00, 3, ...uleb(16 * k)),
          ...get(V.mn),
          ...simd(0xf1),
          ...get(V.sc),
          ...simd(0xf2),
          ...tee(V.y),
          ...simd(0x75),
          ...tee(V.fl),
          ...get(V.y),
          ...get(V.fl),
          ...simd(0xf1),
          ...get(V.half),
          ...simd(0x4c),
          ...get(V.one),
          ...simd(0x4e),
          ...simd(0xf0),
          ...get(V.qm),
          ...simd(0xf6),
          ...simd(0xfc),
          ...set(W[k]),
        ]),
        // The 16 entries (i32 lanes 0 and 1 of each vector, at most qmax) side by side, narrowed
        // to bytes (unsigned, exact) and stored at once.
        ...get(8),
        ...pairLanes(W[0], W[1]),
        ...pairLanes(W[2], W[3]),
        ...simd(0x86), // i16x8.narrow_i32x4_u
        ...pairLanes(W[4], W[5]),
        ...pairLanes(W[6], W[7]),
        ...simd(0x86),
        ...simd(0x66), // i8x16.narrow_i16x8_u
        ...simd(0x0b, 0, 0),
        ...bump(7, i32(128)),
        ...bump(8, i32(16)),
        ...bump(5, i32(1)),
        ...br(0),
      ]),
    ]),
    ...get(4),
    ...get(14),
    ...f64Store(0),
    ...get(4),
    ...get(13),
    ...f64Store(8),
    0x0b,
  ];
}

/**
 * The bytes of the probing module: exports `memory` and `probe`, `tables`,
 * `quant` (see the module notes).
 *
 * @example
 * ```ts
 * import { probeModuleBytes } from "./wasm_probe.ts";
 * if (!WebAssembly.validate(probeModuleBytes())) throw new Error("invalid module");
 * ```
 */
export function probeModuleBytes(): Uint8Array<ArrayBuffer> {
  const bodies = [probeBody(), tablesBody(), quantBody()];
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
    ...section(
      1,
      vec([
        [0x60, ...vec(Array(6).fill([I32])), ...vec([])],
        [0x60, ...vec(Array(7).fill([I32])), ...vec([])],
        [0x60, ...vec(Array(5).fill([I32])), ...vec([])],
      ]),
    ),
    ...section(3, vec([[0], [1], [2]])),
    ...section(5, vec([[0x00, 1]])),
    ...section(
      7,
      vec([
        [...name("memory"), 0x02, 0],
        [...name("probe"), 0x00, 0],
        [...name("tables"), 0x00, 1],
        [...name("quant"), 0x00, 2],
      ]),
    ),
    ...section(10, vec(bodies.map((b) => [...uleb(b.length), ...b]))),
  ]);
}

/** The compiled module (made once), or `undefined` where it cannot run (the TypeScript path). */
const probeModule = onceModule(probeModuleBytes);

/**
 * The probing scores `out[l]` of question `q` against the `nlist`
 * centroids `c` (nlist × d): `q · c_l` (`ip`) or `−‖q − c_l‖²` (`l2`),
 * float64 sums in dimension order. The reference of `probe`.
 *
 * @example
 * ```ts
 * import { probeScores } from "./wasm_probe.ts";
 * const out = new Float64Array(2);
 * probeScores(new Float32Array([1, 2]), new Float32Array([3, 4, 1, 1]), 2, 2, false, out);
 * if (out.join() !== "11,3") throw new Error();
 * ```
 */
export function probeScores(
  q: Float32Array,
  c: Float32Array,
  nlist: number,
  d: number,
  l2: boolean,
  out: Float64Array,
): void {
  for (let l = 0; l < nlist; l++) out[l] = probeScore(q, c, l, d, l2);
}

/**
 * List `l`'s probing score of {@linkcode probeScores}: `q · c_l` (`ip`) or
 * `−‖q − c_l‖²` (`l2`), the float64 sum in dimension order.
 *
 * @example
 * ```ts
 * import { probeScore } from "./wasm_probe.ts";
 * if (probeScore(new Float32Array([1, 2]), new Float32Array([3, 4, 1, 1]), 1, 2, true) !== -1) {
 *   throw new Error();
 * }
 * ```
 */
export function probeScore(
  q: Float32Array,
  c: Float32Array,
  l: number,
  d: number,
  l2: boolean,
): number {
  let s = 0;
  const o = l * d;
  if (l2) {
    for (let t = 0; t < d; t++) {
      const e = q[t] - c[o + t];
      s += e * e;
    }
    return -s;
  }
  for (let t = 0; t < d; t++) s += q[t] * c[o + t];
  return s;
}

/**
 * One thread's probing module over one index's centroids and codebooks
 * ({@linkcode QuestionKernel.create}): a question is set once
 * ({@linkcode QuestionKernel.question}), then probed and its quantized
 * tables made, the same numbers as the TypeScript references.
 */
export class QuestionKernel {
  readonly #memory: WebAssembly.Memory;
  readonly #probe: (...a: number[]) => void;
  readonly #tables: (...a: number[]) => void;
  readonly #quant: (...a: number[]) => void;
  readonly #nlist: number;
  readonly #d: number;
  readonly #M: number;
  readonly #at: {
    c: number;
    cb: number;
    q: number;
    qc: number;
    t: number;
    lut: number;
    out: number;
    ci: number;
  };

  private constructor(
    instance: WebAssembly.Instance,
    centroids: Float32Array,
    codebooks: Float32Array,
    nlist: number,
    d: number,
    M: number,
  ) {
    const e = instance.exports as Record<string, unknown>;
    this.#memory = e.memory as WebAssembly.Memory;
    this.#probe = e.probe as (...a: number[]) => void;
    this.#tables = e.tables as (...a: number[]) => void;
    this.#quant = e.quant as (...a: number[]) => void;
    this.#nlist = nlist;
    this.#d = d;
    this.#M = M;
    const up8 = (x: number) => Math.ceil(x / 8) * 8;
    const c = 0, cb = up8(c + 4 * nlist * d), q = up8(cb + 8 * codebooks.length);
    const qc = up8(q + 4 * d), t = qc + 8 * nlist, lut = t + 8 * 16 * M;
    const out = up8(lut + 16 * M), ci = up8(out + 16 + 8 * M);
    const end = ci + 8 * d * Math.ceil(nlist / 2);
    this.#at = { c, cb, q, qc, t, lut, out, ci };
    const have = this.#memory.buffer.byteLength;
    if (end > have) this.#memory.grow(Math.ceil((end - have) / PAGE));
    const buf = this.#memory.buffer;
    new Float32Array(buf, c, nlist * d).set(centroids.subarray(0, nlist * d));
    // The codebooks as f64, each sub-quantizer's k-th values of its 16 entries side by side
    // (for the tables, two entries a vector).
    const cbt = new Float64Array(buf, cb, codebooks.length), dsub = d / M;
    for (let m = 0; m < M; m++) {
      for (let k = 0; k < dsub; k++) {
        for (let e = 0; e < 16; e++) {
          cbt[(m * dsub + k) * 16 + e] = codebooks[(m * 16 + e) * dsub + k];
        }
      }
    }
    // The centroids two lists side by side for probing: (c_2p[t], c_2p+1[t]) at ci + 8·(d·p + t)
    // (a missing last list's lane 0).
    const pairs = new Float32Array(buf, ci, 2 * d * Math.ceil(nlist / 2));
    for (let l = 0; l < nlist; l++) {
      const at = 2 * d * (l >> 1) + (l & 1);
      for (let x = 0; x < d; x++) pairs[at + 2 * x] = centroids[l * d + x];
    }
  }

  /**
   * The module over these centroids (nlist × d) and codebooks (M × 16 ×
   * d/M), or `undefined` where it cannot run.
   */
  static create(
    centroids: Float32Array,
    codebooks: Float32Array,
    nlist: number,
    d: number,
    M: number,
  ): QuestionKernel | undefined {
    const m = probeModule();
    if (m === undefined) return undefined;
    try {
      return new QuestionKernel(new WebAssembly.Instance(m, {}), centroids, codebooks, nlist, d, M);
    } catch {
      return undefined;
    }
  }

  /** The module memory's buffer as last taken (it grows only while constructed). */
  #buf: ArrayBuffer | undefined;

  /** The module memory's buffer (`heldBuffer`: not read from the memory each call). */
  #buffer(): ArrayBuffer {
    return this.#buf = heldBuffer(this.#memory, this.#buf);
  }

  /** Sets the question (d floats) the next calls use. */
  question(q: Float32Array): void {
    new Float32Array(this.#buffer(), this.#at.q, this.#d).set(q.subarray(0, this.#d));
  }

  /** The question's probing scores (a new array of nlist), as {@linkcode probeScores} gives them. */
  probe(l2: boolean): Float64Array {
    const a = this.#at;
    this.#probe(a.q, a.ci, this.#nlist, this.#d, l2 ? 1 : 0, a.qc);
    return new Float64Array(this.#buffer(), a.qc, this.#nlist).slice();
  }

  /**
   * The question's float tables (of `q`, or of `q − c_list` for `l2`),
   * as `fastscan.ts` `tables4` gives them: a view valid until the next call.
   */
  floatTables(l2: boolean, list: number): Float64Array {
    const a = this.#at, M = this.#M;
    const c = a.c + 4 * this.#d * (l2 ? list : 0);
    this.#tables(a.q, c, a.cb, M, this.#d / M, l2 ? 1 : 0, a.t);
    return new Float64Array(this.#buffer(), a.t, 16 * M);
  }

  /**
   * The tables made and quantized as `fastscan.ts` `quantizeTables` does,
   * written into `lut` from byte `at`: the scale and the sum of the
   * tables' smallest values.
   */
  lut(l2: boolean, list: number, lut: Uint8Array, at: number): { scale: number; bias: number } {
    const a = this.#at, M = this.#M;
    this.floatTables(l2, list);
    this.#quant(a.t, M, a.lut, fsQmax(M), a.out);
    const buf = this.#buffer();
    lut.set(new Uint8Array(buf, a.lut, 16 * M), at);
    const sb = new Float64Array(buf, a.out, 2);
    return { scale: sb[0], bias: sb[1] };
  }
}
