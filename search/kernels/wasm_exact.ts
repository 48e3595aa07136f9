/**
 * Exact scores of a few rows against one question, in WebAssembly: the
 * re-scoring of an IVF-PQ search's candidates (`index/ivfpq/ivf_search.ts`),
 * {@linkcode ExactRows}. Each score is merge's, `fsum` of the float64 terms
 * (`index/exact/score.ts`): `x_t · q_t` (ip), or `2·x_t·q_t, −x_t², −q_t²`
 * for each `t` (l2), each exact in float64.
 *
 * **The same numbers as `fsum`.** The module sums every row's terms in
 * their order as `fsumQuick` (`search/fsum.ts`) does, two rows a `f64x2`
 * (each lane one row, the scalar operations lane by lane): the rounded
 * total `s`, the additions' exact errors summed in `e` (Knuth's TwoSum) and
 * the terms' magnitudes in `a`. `fsumQuickEnd` then decides from them, as
 * `fsumQuick` would: the correctly rounded sum, or (rarely: a total near a
 * half-way point or near zero) NaN, and that row's terms go to `fsum`'s
 * exact partials in TypeScript. Float16 rows are widened exactly in the
 * module (`wasm_simd.ts` `widenCode`); rows of vectors in a registered
 * shared `WebAssembly.Memory` (an IVF-PQ index's: `wasm_gather.ts`) are
 * read where they lie and widened into place in one pass instead.
 *
 * **Only the rows that can be among the best `k`** (ip, `k` given and
 * below the rows' count): a float32 screen first (`screen`) gives each
 * row's sum and magnitude, hence an interval its exact score lies in
 * (`ExactRows` `#screened`); a row whose interval lies wholly below the
 * `k`-th largest lower end is given −∞ (below `k` rows' exact scores, so
 * never among the best `k`), and only the others' exact sums are taken
 * (about `k` of them: 30 candidates, `k` 10, on `piqa-lstm` vectors).
 *
 * Functions (byte addresses into the module's own memory, `memory`):
 * - `sums(a, pairs, d, q, l2, out, idx)`: for `2·pairs` float32 rows of
 *   the rows at `a` (`d` floats each, one after another), the `k`-th the
 *   one at position `idx[k]` (u32 at `idx + 4k`), and the question at `q`
 *   (float64, `d`), the pair `p`'s `s`, `e` and `a` at `out + 48p` (each a
 *   `f64x2`, lane 0 the row `idx[2p]`). Two pairs a pass while two are
 *   left, then one. (The rows the screen keeps are summed where they lie.)
 * - `widen(src, n4, dst)`: the `4·n4` float16 values (bits) at `src` as
 *   float32 at `dst`.
 * - `screen(a, pairs, d, q, out)`: for the `2·pairs` float32 rows at `a`
 *   and the question at `q` (float32, `d`),
 *   each row's float32 sums of `x_t·q_t` and of `|x_t|·|q_t|` (four lanes
 *   each, then added as float64): pair `p`'s sums at `out + 32p`, its
 *   magnitudes at `out + 32p + 16` (each a `f64x2`, lane 0 the row `2p`).
 *
 * @module
 */
import { fsum, fsumQuickEnd, gamma32 } from "../fsum.ts";
import { RowGather } from "./wasm_gather.ts";
import { NonFiniteError } from "../index/exact/score.ts";
import {
  block,
  br,
  brIf,
  bump,
  get,
  grownBuffer,
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
import { widenCode } from "./wasm_simd.ts";

const I32 = 0x7f, V128 = 0x7b;
/** Row pairs a pass of `sums` while that many are left. */
const PASS = 2;

function sumsBody(): number[] {
  // params a 0, pairs 1, d 2, q 3, l2 4, out 5, idx 6; locals i32: p 7, t 8, qp 9, D4 10,
  // r0 11–12 (each pass's first row), r1 13–14 (its second); v128: s 15–16, e 17–18,
  // a 19–20, x 21, y 22, nyy 23, v 24, tt 25, b 26
  const IDX = 6, P = 7, TT = 8, QP = 9, D4 = 10;
  const R0 = [11, 12], R1 = [13, 14], S = [15, 16], E = [17, 18], A = [19, 20];
  const X = 21, Y = 22, NYY = 23, V = 24, T = 25, B = 26;
  const i32Load = (off: number) => [0x28, 2, ...uleb(off)];
  const add = simd(0xf0), sub = simd(0xf1), mul = simd(0xf2), neg = simd(0xed), abs = simd(0xec);
  const promote = simd(0x5f), splat64 = simd(0x0a, 3, 0);
  const load32Zero = simd(0x5c, 2, 0), load32Lane1 = simd(0x56, 2, 0, 1);
  const store = (off: number) => simd(0x0b, 3, ...uleb(off));
  const zero = simd(0x0c, ...new Array(16).fill(0));
  const iAdd = [0x6a], iMul = [0x6c], iGeU = [0x4f];
  // fsumQuick's step for the term in v: t = s + v; b = t − s; e += (s − (t − b)) + (v − b);
  // s = t; a += |v|.
  const step = (i: number) => [
    ...get(S[i]),
    ...get(V),
    ...add,
    ...set(T),
    ...get(T),
    ...get(S[i]),
    ...sub,
    ...set(B),
    ...get(E[i]),
    ...get(S[i]),
    ...get(T),
    ...get(B),
    ...sub,
    ...sub,
    ...get(V),
    ...get(B),
    ...sub,
    ...add,
    ...add,
    ...set(E[i]),
    ...get(T),
    ...set(S[i]),
    ...get(A[i]),
    ...get(V),
    ...abs,
    ...add,
    ...set(A[i]),
  ];
  const pass = (g: number, l2: boolean) => [
    // r0_i = a + 4·d·idx[2(p + i)], r1_i = a + 4·d·idx[2(p + i) + 1]; s, e, a = 0
    ...[...Array(g).keys()].flatMap((i) =>
      [R0[i], R1[i]].flatMap((r, h) => [
        ...get(0),
        ...get(IDX),
        ...get(P),
        ...i32(i),
        ...iAdd,
        ...i32(8),
        ...iMul,
        ...iAdd,
        ...i32Load(4 * h),
        ...get(D4),
        ...iMul,
        ...iAdd,
        ...set(r),
      ])
    ),
    ...[...Array(g).keys()].flatMap((i) => [
      ...zero,
      ...set(S[i]),
      ...zero,
      ...set(E[i]),
      ...zero,
      ...set(A[i]),
    ]),
    ...get(3),
    ...set(QP),
    ...i32(0),
    ...set(TT),
    ...block([
      ...loop([
        ...get(TT),
        ...get(2),
        ...iGeU,
        ...brIf(1),
        ...get(QP),
        ...splat64,
        ...set(Y),
        ...(l2 ? [...get(Y), ...get(Y), ...mul, ...neg, ...set(NYY)] : []),
        ...[...Array(g).keys()].flatMap((i) => [
          // x = (row 2(p+i))[t], (row 2(p+i)+1)[t] as float64
          ...get(R1[i]),
          ...get(R0[i]),
          ...load32Zero,
          ...load32Lane1,
          ...promote,
          ...set(X),
          ...(l2
            ? [
              // 2·x·q (x + x is 2·x exactly), −x², −q²
              ...get(X),
              ...get(X),
              ...add,
              ...get(Y),
              ...mul,
              ...set(V),
              ...step(i),
              ...get(X),
              ...get(X),
              ...mul,
              ...neg,
              ...set(V),
              ...step(i),
              ...get(NYY),
              ...set(V),
              ...step(i),
            ]
            : [...get(X), ...get(Y), ...mul, ...set(V), ...step(i)]),
          ...bump(R0[i], i32(4)),
          ...bump(R1[i], i32(4)),
        ]),
        ...bump(QP, i32(8)),
        ...bump(TT, i32(1)),
        ...br(0),
      ]),
    ]),
    ...[...Array(g).keys()].flatMap((i) => {
      const at = [...get(5), ...get(P), ...i32(i), ...iAdd, ...i32(48), ...iMul, ...iAdd];
      return [
        ...at,
        ...get(S[i]),
        ...store(0),
        ...at,
        ...get(E[i]),
        ...store(16),
        ...at,
        ...get(A[i]),
        ...store(32),
      ];
    }),
    ...bump(P, i32(g)),
  ];
  const pairs = (l2: boolean) => passes(P, get(1), PASS, (g) => pass(g, l2));
  return [
    ...vec([[8, I32], [12, V128]]),
    ...get(2),
    ...i32(4),
    ...iMul,
    ...set(D4),
    ...get(4),
    ...ifElse(pairs(true), pairs(false)),
    0x0b,
  ];
}

function screenBody(): number[] {
  // params a 0, pairs 1, d 2, q 3, out 4; locals i32: p 5, t 6, r0 7, r1 8, qp 9, D4 10;
  // v128: s0 11, s1 12, m0 13, m1 14, x 15, y 16, ay 17
  const S0 = 11, S1 = 12, M0 = 13, M1 = 14, X = 15, Y = 16, AY = 17;
  const fAdd = simd(0xe4), fMul = simd(0xe6), fAbs = simd(0xe0);
  const dAdd = simd(0xf0), promote = simd(0x5f);
  const load = (off: number) => simd(0x00, 2, ...uleb(off));
  const store = (off: number) => simd(0x0b, 3, ...uleb(off));
  const zero = simd(0x0c, ...new Array(16).fill(0));
  const high = (
    v: number,
  ) => [...get(v), ...get(v), ...simd(0x0d, ...range(8, 16), ...range(8, 16))];
  const iAdd = [0x6a], iMul = [0x6c], iGeU = [0x4f];
  // A row's four float32 lane sums as two float64 lanes: (l0 + l2, l1 + l3).
  const half = (v: number) => [...get(v), ...promote, ...high(v), ...promote, ...dAdd];
  // (a, b) → (a0 + a1, b0 + b1), for the rows' float64 pairs on the stack.
  const fold = [
    ...set(Y),
    ...set(X),
    ...get(X),
    ...get(Y),
    ...simd(0x0d, ...range(0, 8), ...range(16, 24)),
    ...get(X),
    ...get(Y),
    ...simd(0x0d, ...range(8, 16), ...range(24, 32)),
    ...dAdd,
  ];
  const row = (r: number, sv: number, mv: number) => [
    ...get(r),
    ...load(0),
    ...tee(X),
    ...get(Y),
    ...fMul,
    ...get(sv),
    ...fAdd,
    ...set(sv),
    ...get(X),
    ...fAbs,
    ...get(AY),
    ...fMul,
    ...get(mv),
    ...fAdd,
    ...set(mv),
    ...bump(r, i32(16)),
  ];
  return [
    ...vec([[6, I32], [7, V128]]),
    ...get(2),
    ...i32(4),
    ...iMul,
    ...set(10),
    ...get(0),
    ...set(7),
    ...block([
      ...loop([
        ...get(5),
        ...get(1),
        ...iGeU,
        ...brIf(1),
        ...get(7),
        ...get(10),
        ...iAdd,
        ...set(8),
        ...[S0, S1, M0, M1].flatMap((v) => [...zero, ...set(v)]),
        ...get(3),
        ...set(9),
        ...i32(0),
        ...set(6),
        ...block([
          ...loop([
            ...get(6),
            ...get(2),
            ...iGeU,
            ...brIf(1),
            // y = q[t..t+4), and |y|
            ...get(9),
            ...load(0),
            ...tee(Y),
            ...fAbs,
            ...set(AY),
            ...row(7, S0, M0),
            ...row(8, S1, M1),
            ...bump(9, i32(16)),
            ...bump(6, i32(4)),
            ...br(0),
          ]),
        ]),
        // out + 32p: (S of row 2p, of row 2p + 1), then their A
        ...get(4),
        ...get(5),
        ...i32(32),
        ...iMul,
        ...iAdd,
        ...tee(6),
        ...half(S0),
        ...half(S1),
        ...fold,
        ...store(0),
        ...get(6),
        ...half(M0),
        ...half(M1),
        ...fold,
        ...store(16),
        // the next pair's rows follow row 2p + 1
        ...get(8),
        ...set(7),
        ...bump(5, i32(1)),
        ...br(0),
      ]),
    ]),
    0x0b,
  ];
}

const range = (a: number, b: number) => Array.from({ length: b - a }, (_, i) => a + i);

/**
 * The bytes of the exact-sums module: exports `memory`, `sums` and `widen`
 * (see the module notes).
 *
 * @example
 * ```ts
 * import { exactModuleBytes } from "./wasm_exact.ts";
 * if (!WebAssembly.validate(exactModuleBytes())) throw new Error("invalid module");
 * ```
 */
export function exactModuleBytes(): Uint8Array<ArrayBuffer> {
  const sums = sumsBody(), widen = widenCode(), screen = screenBody();
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
    ...section(
      1,
      vec([
        [0x60, ...vec(Array(7).fill([I32])), ...vec([])],
        [0x60, ...vec(Array(3).fill([I32])), ...vec([])],
        [0x60, ...vec(Array(5).fill([I32])), ...vec([])],
      ]),
    ),
    ...section(3, vec([[0], [1], [2]])),
    ...section(5, vec([[0x00, 1]])),
    ...section(
      7,
      vec([
        [...name("memory"), 0x02, 0],
        [...name("sums"), 0x00, 0],
        [...name("widen"), 0x00, 1],
        [...name("screen"), 0x00, 2],
      ]),
    ),
    ...section(10, vec([sums, widen, screen].map((b) => [...uleb(b.length), ...b]))),
  ]);
}

const exactModule = onceModule(exactModuleBytes);

/**
 * The running sums `fsumQuick` keeps over the terms of each row's exact
 * score (see the module notes), in plain TypeScript: `out[3i]`, `out[3i + 1]`
 * and `out[3i + 2]` are row `i`'s `s`, `e` and `a`. The reference the
 * module is tested against.
 *
 * @example
 * ```ts
 * import { exactSumsReference } from "./wasm_exact.ts";
 * const out = new Float64Array(3);
 * exactSumsReference(new Float32Array([1, 2]), 1, 2, new Float32Array([3, 4]), false, out);
 * if (out.join() !== "11,0,11") throw new Error(out.join());
 * ```
 */
export function exactSumsReference(
  rows: Float32Array,
  n: number,
  d: number,
  q: Float32Array,
  l2: boolean,
  out: Float64Array,
): void {
  for (let i = 0; i < n; i++) {
    let s = 0, e = 0, a = 0;
    const add = (x: number) => {
      const t = s + x, b = t - s;
      e += (s - (t - b)) + (x - b);
      s = t;
      a += Math.abs(x);
    };
    for (let c = 0; c < d; c++) {
      const x = rows[i * d + c], y = q[c];
      if (l2) {
        add(2 * x * y);
        add(-(x * x));
        add(-(y * y));
      } else add(x * y);
    }
    out[3 * i] = s;
    out[3 * i + 1] = e;
    out[3 * i + 2] = a;
  }
}

/**
 * One thread's exact scorer of a few rows against one question (see the
 * module notes): {@linkcode ExactRows.create}, then
 * {@linkcode ExactRows.scores}.
 */
export class ExactRows {
  readonly #memory: WebAssembly.Memory;
  readonly #sums: (...a: number[]) => void;
  readonly #widen: (src: number, n4: number, dst: number) => void;
  readonly #screen: (...a: number[]) => void;
  #terms = new Float64Array(0);

  private constructor(instance: WebAssembly.Instance) {
    const e = instance.exports as Record<string, unknown>;
    this.#memory = e.memory as WebAssembly.Memory;
    this.#sums = e.sums as (...a: number[]) => void;
    this.#widen = e.widen as (src: number, n4: number, dst: number) => void;
    this.#screen = e.screen as (...a: number[]) => void;
  }

  /** The scorer, or `undefined` where its module cannot run here. */
  static create(): ExactRows | undefined {
    const m = exactModule();
    if (m === undefined) return undefined;
    try {
      return new ExactRows(new WebAssembly.Instance(m, {}));
    } catch {
      return undefined;
    }
  }

  #ensure(bytes: number): ArrayBuffer {
    return grownBuffer(this.#memory, bytes);
  }

  /**
   * The exact scores (`fsum` of the terms, see the module notes) of rows
   * `rows[0..n)` of `a` (`d` values each: float32, or float16 bits)
   * against question `q`, into `out[0..n)`; with `gathered`, `a` holds
   * just those rows, one after another; `d` a multiple of 4. False (nothing
   * written) where `q` has a NaN or infinite value: the caller scores
   * another way. Throws {@linkcode NonFiniteError} (`row r`, `r` from
   * `rows`) for a row with a NaN or infinite value. With `k` (ip only):
   * −∞ for a row the float32 screen shows is below `k` others (see the
   * module notes), whose exact sum is not taken.
   *
   * @example
   * ```ts
   * import { ExactRows } from "./wasm_exact.ts";
   * const k = ExactRows.create();
   * if (k !== undefined) {
   *   const out = new Float64Array(2);
   *   const a = new Float32Array([0.1, 0.2, 0, 0, 1, 1, 1, 1]);
   *   k.scores(a, [1, 0], false, 2, 4, new Float32Array([1, 1, 0, 0]), false, out);
   *   // fsum of 0.1 and 0.2 as float32 values, correctly rounded
   *   if (out[0] !== 2 || out[1] !== Math.fround(0.1) + Math.fround(0.2)) throw new Error(`${out}`);
   * }
   * ```
   */
  scores(
    a: Float32Array | Uint16Array,
    rows: ArrayLike<number>,
    gathered: boolean,
    n: number,
    d: number,
    q: Float32Array,
    l2: boolean,
    out: Float64Array,
    k = n,
  ): boolean {
    // (NaN where a value is NaN or infinite, else 0; four sums, not one chain of d additions.)
    let z0 = 0, z1 = 0, z2 = 0, z3 = 0, t = 0;
    for (; t + 4 <= d; t += 4) {
      z0 += q[t] - q[t];
      z1 += q[t + 1] - q[t + 1];
      z2 += q[t + 2] - q[t + 2];
      z3 += q[t + 3] - q[t + 3];
    }
    for (; t < d; t++) z0 += q[t] - q[t];
    if (z0 + z1 + z2 + z3 !== 0) return false;
    if (n === 0) return true;
    const pairs = (n + 1) >> 1, half = a instanceof Uint16Array;
    // Layout: the rows (float32, one padding row), the question (f64), the sums, the question
    // (f32), the screen's sums, the positions of the rows summed (u32, one padding), the float16
    // bits.
    const rowsAt = 0, qAt = (8 * pairs * d + 15) & ~15, outAt = qAt + 8 * d;
    const q32At = outAt + 48 * pairs, screenAt = q32At + 4 * d, selAt = screenAt + 32 * pairs;
    const bitsAt = (selAt + 8 * pairs + 15) & ~15;
    // Rows read where they lie (the vectors in a shared WebAssembly.Memory): their numbers at
    // bitsAt, the rows widened into place in one pass (`wasm_gather.ts`).
    const g = gathered ? undefined : this.#gatherer(a);
    const buf = this.#ensure(g !== undefined ? bitsAt + 4 * n : half ? bitsAt + 2 * n * d : bitsAt);
    const f32 = new Float32Array(buf, rowsAt, 2 * pairs * d);
    if (g !== undefined) {
      const idx = new Uint32Array(buf, bitsAt, n);
      for (let i = 0; i < n; i++) idx[i] = rows[i];
      g.gather(a, bitsAt, n, d, rowsAt);
    } else if (half) {
      const bits = new Uint16Array(buf, bitsAt, n * d);
      if (gathered) bits.set(a.subarray(0, n * d));
      else for (let i = 0; i < n; i++) bits.set(a.subarray(rows[i] * d, (rows[i] + 1) * d), i * d);
      this.#widen(bitsAt, (n * d) >> 2, rowsAt);
    } else if (gathered) f32.set(a.subarray(0, n * d));
    else for (let i = 0; i < n; i++) f32.set(a.subarray(rows[i] * d, (rows[i] + 1) * d), i * d);
    if (n % 2 === 1) f32.fill(0, n * d, (n + 1) * d);
    // The rows whose exact sums are taken: all, or (ip, k < n) those the screen keeps; their
    // positions at selAt, where `sums` reads them (an odd count padded with the first again,
    // whose second sums are not read).
    const m = !l2 && k < n ? this.#screened(buf, pairs, n, d, q, k, q32At, screenAt) : n;
    const mp = (m + 1) >> 1, sel = this.#sel, at = new Uint32Array(buf, selAt, 2 * mp);
    for (let c = 0; c < m; c++) at[c] = m < n ? sel[c] : c;
    if (m % 2 === 1) at[m] = at[0];
    new Float64Array(buf, qAt, d).set(q.subarray(0, d));
    this.#sums(rowsAt, mp, d, qAt, l2 ? 1 : 0, outAt, selAt);
    const sums = new Float64Array(buf, outAt, 6 * mp);
    const terms = l2 ? 3 * d : d;
    if (m < n) out.fill(-Infinity, 0, n);
    for (let c = 0; c < m; c++) {
      const i = at[c], o = 6 * (c >> 1) + (c & 1);
      const v = fsumQuickEnd(sums[o], sums[o + 2], sums[o + 4], terms);
      out[i] = v === v ? v : this.#slow(f32, i, d, q, l2, rows[i]);
    }
    return true;
  }

  /**
   * The float32 screen (module function `screen`) of the `n` rows in
   * `f32`: each row's sum `S` and magnitude `A` (`Σ |x_t|·|q_t|`) in four
   * float32 lanes of `d/4` terms each, so its exact sum is within `E =
   * 2·γ(d/4 + 1)·A + |S|·2⁻⁴⁸ + d·2⁻¹⁴⁹` of `S` (a lane within
   * `γ(d/4)` of its terms' magnitudes; twice that and `|S|·2⁻⁴⁸` for `A`'s
   * own rounding and float64's, `d·2⁻¹⁴⁹` for float32's underflow;
   * {@linkcode gamma32}). A row whose `S + E` is below the `k`-th largest `S − E` cannot
   * be among the best `k`; the others (and any row with a non-finite `S`
   * or `A`) are listed in order, their positions in `#sel` (the rows stay
   * where they are: `sums` reads them by position). Returns how many.
   */
  #screened(
    buf: ArrayBuffer,
    pairs: number,
    n: number,
    d: number,
    q: Float32Array,
    k: number,
    q32At: number,
    screenAt: number,
  ): number {
    new Float32Array(buf, q32At, d).set(q.subarray(0, d));
    this.#screen(0, pairs, d, q32At, screenAt);
    const sa = new Float64Array(buf, screenAt, 4 * pairs);
    if (this.#hi.length < n) {
      this.#hi = new Float64Array(n);
      this.#sel = new Int32Array(n);
    }
    if (this.#best.length < k) this.#best = new Float64Array(k);
    const hi = this.#hi, best = this.#best;
    // Each lane sums d / 4 products in float32 (within γ(d/4)·A of exact), the lanes added in
    // float64; twice that, for A's own rounding and float64's, and d·2⁻¹⁴⁹ for underflow.
    const g = 2 * gamma32(d / 4 + 1), tiny = d * 2 ** -149;
    // The k largest finite lower ends, smallest first (an insertion list of k).
    let nb = 0;
    for (let i = 0; i < n; i++) {
      const at = 4 * (i >> 1) + (i & 1), S = sa[at], A = sa[at + 2];
      const e = A * g + Math.abs(S) * 2 ** -48 + tiny;
      const x = S - e;
      hi[i] = S + e;
      if (!(Math.abs(x) < Infinity) || !(e < Infinity)) {
        hi[i] = NaN; // kept
        continue;
      }
      if (nb < k) {
        let j = nb++;
        while (j > 0 && best[j - 1] > x) best[j] = best[--j];
        best[j] = x;
      } else if (x > best[0]) {
        let j = 0;
        while (j + 1 < k && best[j + 1] < x) best[j] = best[++j];
        best[j] = x;
      }
    }
    if (nb < k) {
      for (let i = 0; i < n; i++) this.#sel[i] = i;
      return n;
    }
    const L = best[0], sel = this.#sel;
    let m = 0;
    for (let i = 0; i < n; i++) {
      if (hi[i] < L) continue; // its exact sum is below k rows' (NaN: kept)
      sel[m++] = i;
    }
    return m;
  }
  #hi = new Float64Array(0);
  #sel = new Int32Array(0);
  #best = new Float64Array(0);
  readonly #gathers = new WeakMap<ArrayBufferLike, RowGather | null>();

  /** The gatherer of rows of `a` into this module's memory, where `a` lies in a registered one. */
  #gatherer(a: Float32Array | Uint16Array): RowGather | undefined {
    let g = this.#gathers.get(a.buffer);
    if (g === undefined) {
      g = RowGather.create(a, this.#memory) ?? null;
      this.#gathers.set(a.buffer, g);
    }
    return g ?? undefined;
  }

  /** Row `i`'s score by `fsum`'s exact partials (a NaN or infinite value refused). */
  #slow(
    f32: Float32Array,
    i: number,
    d: number,
    q: Float32Array,
    l2: boolean,
    row: number,
  ): number {
    const terms = l2 ? 3 * d : d;
    if (this.#terms.length < terms) this.#terms = new Float64Array(terms);
    const p = this.#terms;
    for (let c = 0; c < d; c++) {
      const x = f32[i * d + c], y = q[c];
      if (!Number.isFinite(x)) throw new NonFiniteError(`row ${row}`);
      if (l2) {
        p[3 * c] = 2 * x * y;
        p[3 * c + 1] = -(x * x);
        p[3 * c + 2] = -(y * y);
      } else p[c] = x * y;
    }
    return fsum(p, terms);
  }
}
