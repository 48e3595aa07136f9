/**
 * Probing many lists at the cost of a few: a float32 screen of every coarse
 * centroid in WebAssembly, a proven error bound on each screened score, and
 * the float64 probing score (`wasm_probe.ts` `probeScore`, the
 * sums in dimension order) only for the lists the bound cannot rule out:
 * {@linkcode ListScreen}. The lists it lets through hold every list that
 * the full float64 sort could keep among its first `nprobe`, so the lists
 * probed, and their scores, are the same bit for bit as probing all of
 * them (`tests/search/kernels/wasm_screen_test.ts`). With 1,000 lists of
 * 256 dimensions and nprobe 32 it takes 27.3–27.8 µs a question, 0.43–0.45
 * of the full float64 probe's 61–64 µs (`wasm_probe.ts`, eight lists a
 * pass); the screened sums are two thirds of it.
 *
 * **The screen** (`screen(q, cq, passes, d, l2, out)`, byte addresses into
 * the module's own memory): 32 lists a pass, four a `f32x4` lane group,
 * each lane a list's float32 sum in dimension order of `q_t · c_t` (ip) or
 * `(q_t − c_t)²` (l2); the centroids laid out a pass at a time, dimension
 * by dimension (`c_l[t]` of list `l = 32k + j` at float `32·d·k + 32·t +
 * j`), the sums written to `out` (f32, 32 a pass).
 *
 * Each step `s + x·c` is relaxed SIMD's `f32x4.relaxed_madd` where the
 * runtime has it: one rounding where the machine has a fused multiply-add
 * (x86's FMA3, Arm's), which takes 0.85 of the multiply and the add's time
 * (1,024 lists of 256 dimensions: 17.1–17.5 µs a question against
 * 20.2–20.5, on a 2-core AMD EPYC); else two. The TypeScript reference
 * follows whichever rounding the runtime has ({@linkcode relaxedMaddFuses},
 * {@linkcode fmaF32}).
 *
 * **The float64 scores** of the lists let through (`dots(ids, pairs, d, q,
 * l2, cr, out)`): two lists a `f64x2` (the list ids a pair at `ids`, the
 * question as float64 at `q`, the centroids one after another at `cr`: a
 * list's values on adjacent cache lines, where the screen's layout spreads
 * them over `d`), each lane a list's `s += q_t · c_t` or `s += (q_t − c_t)²` in
 * dimension order, as `wasm_probe.ts` `probeScore` sums them (the scalar
 * float64 operations lane by lane: the same doubles); two pairs a pass
 * while two are left. So the module's memory holds the centroids twice,
 * `8·nlist·d` bytes (2 MB for 1,000 lists of 256 dimensions). The lower
 * ends' floor is {@linkcode nthLargest}'s.
 *
 * **The bound.** With `u = 2⁻²⁴` and `γ(n) = n·u / (1 − n·u)`, a float32
 * dot product of `d` terms is within `γ(d)·Σ|q_t·c_t| + d·2⁻¹⁵⁰` of the
 * exact one (products rounded once, sums recursively; an underflowing
 * product rounds by at most half of `2⁻¹⁴⁹`, sums of subnormals are exact;
 * a fused step rounds once where these round twice, and an underflowing
 * fused sum by at most half of `2⁻¹⁴⁹`, so the same bound holds),
 * and `Σ|q_t·c_t| ≤ ‖q‖·‖c‖`; a sum of `d` squared float32 differences is
 * within `γ(d + 3)·D + d·2⁻¹⁵⁰` of the exact `D`, itself at most the screened
 * sum plus that much. The float64 probing score is within `γ₆₄(d + 2)` of the
 * same exact value (its products of float32 values exact). The bound used is
 * twice the float32 one, with the norms taken in float64: room for both
 * float64 errors, the norms' rounding and that of `score ± bound`.
 * A list is let through when its upper end reaches the `nprobe`-th largest
 * lower end: a list below that is beaten outright by `nprobe` lists.
 * A non-finite screened score or bound (an overflow, a NaN) lets the caller
 * probe every list instead.
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
  i32,
  loop,
  name,
  passes,
  section,
  set,
  simd,
  uleb,
  vec,
} from "./wasm_encode.ts";

const PAGE = 65536;
const I32 = 0x7f, V128 = 0x7b;
/** Lists a pass of the screen: eight `f32x4` lane groups. */
const PASS = 32;
const GROUPS = PASS / 4;

const iGeU = [0x4f];
const f32Load = [0x2a, 2, 0];

function screenBody(fma: boolean): number[] {
  // params q 0, cq 1, passes 2, d 3, l2 4, out 5; locals i32: k 6, t 7, qp 8, p 9;
  // v128: s0…s7 10–17, x 18, e 19
  const S = [...Array(GROUPS).keys()].map((i) => 10 + i), X = 18, E = 19;
  const load = (off: number) => simd(0x00, 4, ...uleb(off));
  const store = (off: number) => simd(0x0b, 4, ...uleb(off));
  const splat = simd(0x13), vAdd = simd(0xe4), vSub = simd(0xe5), vMul = simd(0xe6);
  // f32x4.relaxed_madd (a · b + c, fused where the machine has FMA)
  const madd = simd(0x105);
  const zero = simd(0x0c, ...new Array(16).fill(0));
  const passes = (l2: boolean) => [
    ...block([
      ...loop([
        ...get(6),
        ...get(2),
        ...iGeU,
        ...brIf(1),
        ...S.flatMap((s) => [...zero, ...set(s)]),
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
            ...f32Load,
            ...splat,
            ...set(X),
            // each lane its list's sum: s += x · c (ip) or s += (x − c)² (l2)
            ...S.flatMap((s, i) => [
              ...get(X),
              ...get(9),
              ...load(16 * i),
              ...(l2 ? [...vSub, 0x22, ...uleb(E), ...get(E)] : []),
              ...(fma ? [...get(s), ...madd] : [...vMul, ...get(s), ...vAdd]),
              ...set(s),
            ]),
            ...bump(8, i32(4)),
            ...bump(9, i32(16 * GROUPS)),
            ...bump(7, i32(1)),
            ...br(0),
          ]),
        ]),
        ...S.flatMap((s, i) => [...get(5), ...get(s), ...store(16 * i)]),
        ...bump(5, i32(16 * GROUPS)),
        ...bump(6, i32(1)),
        ...br(0),
      ]),
    ]),
  ];
  return [
    ...vec([[4, I32], [GROUPS + 2, V128]]),
    ...get(1),
    ...set(9),
    ...get(4),
    0x04,
    0x40,
    ...passes(true),
    0x05,
    ...passes(false),
    0x0b,
    0x0b,
  ];
}

/** Pairs of lists a pass of `dots` while that many are left (two `f64x2` sums). */
const DOT_PAIRS = 2;

function dotsBody(): number[] {
  // params ids 0, pairs 1, d 2, q 3, l2 4, cr 5, out 6; locals i32: p 7, t 8, qp 9, D 10
  // (4·d: a list's bytes), r0 11–12, r1 13–14; v128: s 15–16, x 17, y 18
  const R0 = [11, 12], R1 = [13, 14], S = [15, 16], X = 17, Y = 18;
  const add = simd(0xf0), sub = simd(0xf1), mul = simd(0xf2);
  const promote = simd(0x5f), splat64 = simd(0x0a, 3, 0);
  const load32Zero = simd(0x5c, 2, 0), load32Lane1 = simd(0x56, 2, 0, 1);
  const store = simd(0x0b, 3, 0);
  const zero = simd(0x0c, ...new Array(16).fill(0));
  const iAdd = [0x6a], iMul = [0x6c];
  const i32Load = (off: number) => [0x28, 2, ...uleb(off)];
  // The address of list l's first value (l on the stack): cr + D·l.
  const listAt = (id: number[]) => [...id, ...get(10), ...iMul, ...get(5), ...iAdd];
  const idAt = (i: number, lane: number) => [
    ...get(0),
    ...get(7),
    ...i32(i),
    ...iAdd,
    ...i32(8),
    ...iMul,
    ...iAdd,
    ...i32Load(4 * lane),
  ];
  const pass = (g: number, l2: boolean) => [
    ...[...Array(g).keys()].flatMap((i) => [
      ...listAt(idAt(i, 0)),
      ...set(R0[i]),
      ...listAt(idAt(i, 1)),
      ...set(R1[i]),
      ...zero,
      ...set(S[i]),
    ]),
    ...get(3),
    ...set(9),
    ...i32(0),
    ...set(8),
    ...block([
      ...loop([
        ...get(8),
        ...get(2),
        ...[0x4f], // i32.ge_u
        ...brIf(1),
        ...get(9),
        ...splat64,
        ...set(Y),
        // each lane its list's float64 sum in dimension order: s += q·c, or s += (q − c)²
        ...[...Array(g).keys()].flatMap((i) => [
          ...get(R1[i]),
          ...get(R0[i]),
          ...load32Zero,
          ...load32Lane1,
          ...promote,
          ...(l2
            ? [...set(X), ...get(Y), ...get(X), ...sub, ...set(X), ...get(X), ...get(X), ...mul]
            : [...get(Y), ...mul]),
          ...get(S[i]),
          ...add,
          ...set(S[i]),
          ...bump(R0[i], i32(4)),
          ...bump(R1[i], i32(4)),
        ]),
        ...bump(9, i32(8)),
        ...bump(8, i32(1)),
        ...br(0),
      ]),
    ]),
    ...[...Array(g).keys()].flatMap((i) => [
      ...get(6),
      ...get(7),
      ...i32(i),
      ...iAdd,
      ...i32(16),
      ...iMul,
      ...iAdd,
      ...get(S[i]),
      ...store,
    ]),
    ...bump(7, i32(g)),
  ];
  const all = (l2: boolean) => passes(7, get(1), DOT_PAIRS, (g) => pass(g, l2));
  return [
    ...vec([[8, I32], [4, V128]]),
    ...get(2),
    ...i32(4),
    ...iMul,
    ...set(10),
    ...get(4),
    0x04,
    0x40,
    ...all(true),
    0x05,
    ...all(false),
    0x0b,
    0x0b,
  ];
}

/**
 * The bytes of the screening module: exports `memory` and `screen` (see the
 * module notes). `fma`: each step `s + x·c` is relaxed SIMD's
 * `f32x4.relaxed_madd` (one rounding where the machine fuses it, else two),
 * else a multiply and an add.
 *
 * @example
 * ```ts
 * import { screenModuleBytes } from "./wasm_screen.ts";
 * if (!WebAssembly.validate(screenModuleBytes())) throw new Error("invalid module");
 * ```
 */
export function screenModuleBytes(fma = false): Uint8Array<ArrayBuffer> {
  const body = screenBody(fma), dots = dotsBody();
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
    ...section(
      1,
      vec([
        [0x60, ...vec(Array(6).fill([I32])), ...vec([])],
        [0x60, ...vec(Array(7).fill([I32])), ...vec([])],
      ]),
    ),
    ...section(3, vec([[0], [1]])),
    ...section(5, vec([[0x00, 1]])),
    ...section(
      7,
      vec([
        [...name("memory"), 0x02, 0],
        [...name("screen"), 0x00, 0],
        [...name("dots"), 0x00, 1],
      ]),
    ),
    ...section(10, vec([[...uleb(body.length), ...body], [...uleb(dots.length), ...dots]])),
  ]);
}

/**
 * The compiled module (made once; relaxed SIMD's multiply-add where this
 * runtime has it), or `undefined` where it cannot run (the caller probes
 * every list).
 */
const screenModule = firstModule([true, false], screenModuleBytes);
/** The module with a multiply and an add a step (for {@linkcode ListScreen.create}'s `fma` false). */
const plainScreenModule = firstModule([false], screenModuleBytes);

/**
 * Whether this runtime's `f32x4.relaxed_madd` rounds once (a fused
 * multiply-add): `undefined` without relaxed SIMD. Asked once, of a module
 * computing `(1 + 2⁻¹²)² − 1`, which is `2⁻¹¹ + 2⁻²⁴` rounded once and `2⁻¹¹`
 * rounded twice.
 *
 * @example
 * ```ts
 * import { relaxedMaddFuses } from "./wasm_screen.ts";
 * const f = relaxedMaddFuses();
 * if (f !== undefined && typeof f !== "boolean") throw new Error(String(f));
 * ```
 */
export function relaxedMaddFuses(): boolean | undefined {
  if (fusesAnswer === null) {
    fusesAnswer = undefined;
    const m = firstModule([0], () => maddModuleBytes())();
    if (m !== undefined) {
      const f = new WebAssembly.Instance(m.module, {}).exports.madd as (
        a: number,
        b: number,
        c: number,
      ) => number;
      const a = 1 + 2 ** -12, r = f(a, a, -1);
      if (r === 2 ** -11 + 2 ** -24) fusesAnswer = true;
      else if (r === 2 ** -11) fusesAnswer = false;
    }
  }
  return fusesAnswer;
}
let fusesAnswer: boolean | undefined | null = null;

/** A module exporting `madd(a, b, c)`: lane 0 of `f32x4.relaxed_madd` of the three splatted. */
function maddModuleBytes(): Uint8Array<ArrayBuffer> {
  const F32 = 0x7d;
  const body = [
    0,
    ...get(0),
    ...simd(0x13),
    ...get(1),
    ...simd(0x13),
    ...get(2),
    ...simd(0x13),
    ...simd(0x105),
    ...simd(0x1f, 0),
    0x0b,
  ];
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
    ...section(1, vec([[0x60, ...vec([[F32], [F32], [F32]]), ...vec([[F32]])]])),
    ...section(3, vec([[0]])),
    ...section(7, vec([[...name("madd"), 0x00, 0]])),
    ...section(10, vec([[...uleb(body.length), ...body]])),
  ]);
}

/**
 * `a · b + c` rounded once to float32 (a fused multiply-add) for float32
 * values `a`, `b`, `c`: the product is exact in float64, the sum's float64
 * rounding is made odd when it was inexact (so that rounding it on to
 * float32 is the single rounding: 53 ≥ 24 + 2 bits).
 *
 * @example
 * ```ts
 * import { fmaF32 } from "./wasm_screen.ts";
 * const a = 1 + 2 ** -12;
 * if (fmaF32(a, a, -1) !== 2 ** -11 + 2 ** -24) throw new Error("rounded twice");
 * ```
 */
export function fmaF32(a: number, b: number, c: number): number {
  const p = a * b, h = p + c;
  if (!Number.isFinite(h)) return Math.fround(h);
  const v = h - p, l = (p - (h - v)) + (c - v);
  if (l === 0) return Math.fround(h);
  oddBits[0] = h;
  const lo = oddWords[ODD_LO];
  if ((lo & 1) === 0) {
    // Toward the exact sum by one float64 step: away from zero when l has h's sign.
    const up = (l > 0) === (h > 0);
    if (up) {
      if (lo === 0xffffffff) {
        oddWords[ODD_LO] = 0;
        oddWords[ODD_HI]++;
      } else oddWords[ODD_LO] = lo + 1;
    } else if (lo === 0) {
      oddWords[ODD_LO] = 0xffffffff;
      oddWords[ODD_HI]--;
    } else oddWords[ODD_LO] = lo - 1;
  }
  return Math.fround(oddBits[0]);
}
const oddBits = new Float64Array(1), oddWords = new Uint32Array(oddBits.buffer);
const ODD_LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const ODD_LO = ODD_LITTLE ? 0 : 1, ODD_HI = ODD_LITTLE ? 1 : 0;

/**
 * The screened sums of `screen` in plain TypeScript: `out[l]` the float32
 * sum, in dimension order, of `q_t · c_t` (or `(q_t − c_t)²` for `l2`), each
 * operation rounded to float32, or with `fused` each step `s + x·y` rounded
 * once ({@linkcode fmaF32}). The reference the module is tested against.
 *
 * @example
 * ```ts
 * import { screenSums } from "./wasm_screen.ts";
 * const out = new Float32Array(2);
 * screenSums(new Float32Array([1, 2]), new Float32Array([3, 4, 1, 1]), 2, 2, true, out);
 * if (out.join() !== "8,1") throw new Error();
 * ```
 */
export function screenSums(
  q: Float32Array,
  c: Float32Array,
  nlist: number,
  d: number,
  l2: boolean,
  out: Float32Array,
  fused = false,
): void {
  const f = Math.fround;
  for (let l = 0; l < nlist; l++) {
    let s = 0;
    const o = l * d;
    for (let t = 0; t < d; t++) {
      const e = l2 ? f(q[t] - c[o + t]) : 0;
      const [x, y] = l2 ? [e, e] : [q[t], c[o + t]];
      s = fused ? fmaF32(x, y, s) : f(s + f(x * y));
    }
    out[l] = s;
  }
}

/** `γ(n) = n·u / (1 − n·u)` for float32's unit roundoff `u = 2⁻²⁴`. */
const gamma32 = (n: number) => n * 2 ** -24 / (1 - n * 2 ** -24);

/**
 * One thread's screen over one index's coarse centroids: the lists a
 * question probes and their float64 probing scores, computing those scores
 * for the few lists the float32 screen cannot rule out (see the module
 * notes).
 */
export class ListScreen {
  readonly #screen: (...a: number[]) => void;
  readonly #dots: (...a: number[]) => void;
  readonly #memory: WebAssembly.Memory;
  readonly #nlist: number;
  readonly #d: number;
  readonly #norms: Float64Array;
  readonly #finite: boolean;
  readonly #at: {
    cq: number;
    q: number;
    out: number;
    passes: number;
    q64: number;
    ids: number;
    scores: number;
    cr: number;
  };
  readonly #upper: Float64Array;
  readonly #lower: Float64Array;
  readonly #select: NthWork;
  /** Whether each step of the screened sums is rounded once (a fused multiply-add): see {@linkcode screenSums}. */
  readonly fused: boolean;

  private constructor(
    instance: WebAssembly.Instance,
    fused: boolean,
    centroids: Float32Array,
    nlist: number,
    d: number,
  ) {
    this.fused = fused;
    const e = instance.exports as Record<string, unknown>;
    this.#screen = e.screen as (...a: number[]) => void;
    this.#dots = e.dots as (...a: number[]) => void;
    this.#memory = e.memory as WebAssembly.Memory;
    this.#nlist = nlist;
    this.#d = d;
    const passes = Math.ceil(nlist / PASS);
    const cq = 0, q = cq + 4 * PASS * d * passes, out = q + 4 * d;
    // The exact scores' question (f64), list ids (two a pair) and scores (f64).
    const q64 = (out + 4 * PASS * passes + 15) & ~15, ids = q64 + 8 * d;
    const pairs = (nlist + 1) >> 1, scores = ids + 8 * pairs, cr = scores + 16 * pairs;
    const end = cr + 4 * nlist * d;
    this.#at = { cq, q, out, passes, q64, ids, scores, cr };
    const have = this.#memory.buffer.byteLength;
    if (end > have) this.#memory.grow(Math.ceil((end - have) / PAGE));
    const lay = new Float32Array(this.#memory.buffer, cq, PASS * d * passes);
    new Float32Array(this.#memory.buffer, cr, nlist * d).set(centroids.subarray(0, nlist * d));
    this.#norms = new Float64Array(nlist);
    let finite = true;
    for (let l = 0; l < nlist; l++) {
      const k = Math.floor(l / PASS), j = l % PASS;
      let n2 = 0;
      for (let t = 0; t < d; t++) {
        const x = centroids[l * d + t];
        lay[PASS * d * k + PASS * t + j] = x;
        n2 += x * x;
      }
      this.#norms[l] = Math.sqrt(n2);
      if (!Number.isFinite(this.#norms[l])) finite = false;
    }
    this.#finite = finite;
    this.#upper = new Float64Array(nlist);
    this.#lower = new Float64Array(nlist);
    this.#select = nthWork(nlist);
  }

  /**
   * The screen over these centroids (nlist × d, float32), or `undefined`
   * where its module cannot run here. `fma`: with relaxed SIMD's
   * multiply-add where this runtime has it (else a multiply and an add a
   * step; {@linkcode ListScreen.fused} says which rounding the sums had).
   */
  static create(
    centroids: Float32Array,
    nlist: number,
    d: number,
    fma = true,
  ): ListScreen | undefined {
    const m = fma ? screenModule() : plainScreenModule();
    if (m === undefined || nlist < 1 || d < 1) return undefined;
    try {
      const fused = m.variant && relaxedMaddFuses() === true;
      return new ListScreen(new WebAssembly.Instance(m.module, {}), fused, centroids, nlist, d);
    } catch {
      return undefined;
    }
  }

  /** The float32 screened sums of question `q` (a view valid until the next call): see {@linkcode screenSums}. */
  sums(q: Float32Array, l2: boolean): Float32Array {
    const a = this.#at, buf = this.#memory.buffer;
    new Float32Array(buf, a.q, this.#d).set(q.subarray(0, this.#d));
    this.#screen(a.q, a.cq, a.passes, this.#d, l2 ? 1 : 0, a.out);
    return new Float32Array(buf, a.out, this.#nlist);
  }

  /**
   * The lists that may be among question `q`'s `nprobe` best (ascending),
   * and `qc`, of nlist entries (`into` where given, else a new array): each
   * of those lists' float64 probing score
   * (as `wasm_probe.ts` `probeScore` gives it), NaN for the others. Every list
   * the full float64 sort puts among the first `nprobe` is one of them.
   * `undefined` when the screen cannot tell (a non-finite score or bound):
   * then probe every list.
   */
  candidates(
    q: Float32Array,
    l2: boolean,
    nprobe: number,
    into?: Float64Array,
  ): { ids: number[]; qc: Float64Array } | undefined {
    const nlist = this.#nlist, d = this.#d, norms = this.#norms;
    if (!this.#finite || nprobe < 1) return undefined;
    const s = this.sums(q, l2);
    let nq2 = 0;
    for (let t = 0; t < d; t++) nq2 += q[t] * q[t];
    const nq = Math.sqrt(nq2);
    const tiny = (d + 1) * 2 ** -148;
    const g = 2 * gamma32(l2 ? d + 3 : d + 1);
    // Each list's lower and upper ends; `bad` turns NaN with a non-finite score or bound.
    const upper = this.#upper, lower = this.#lower, n = Math.min(nprobe, nlist);
    let bad = 0, lo = Infinity, hi = -Infinity;
    for (let l = 0; l < nlist; l++) {
      const v = s[l];
      // ip: q·c within γ(d)·‖q‖‖c‖ + d·2⁻¹⁵⁰; l2: −D within γ(d+3)·D + d·2⁻¹⁵⁰, D ≤ v + that
      const e = l2 ? g * (v + tiny) + tiny : g * nq * norms[l] + tiny;
      const x = l2 ? -v : v;
      bad += (x - x) + (e - e);
      upper[l] = x + e;
      const y = x - e;
      lower[l] = y;
      lo = y < lo ? y : lo;
      hi = y > hi ? y : hi;
    }
    if (bad !== 0) return undefined;
    const floor = n < nlist ? nthBetween(lower, nlist, n, this.#select, lo, hi) : -Infinity;
    const ids: number[] = [];
    const qc = (into ?? new Float64Array(nlist)).fill(NaN);
    for (let l = 0; l < nlist; l++) if (upper[l] >= floor) ids.push(l);
    this.#exact(q, ids, l2, qc);
    return { ids, qc };
  }

  /**
   * `qc[l]` = `wasm_probe.ts` `probeScore` of each list of `ids`, in the module's
   * `dots` (two lists a `f64x2`, each lane a list's float64 sum in dimension
   * order: the same doubles).
   */
  #exact(q: Float32Array, ids: readonly number[], l2: boolean, qc: Float64Array): void {
    const a = this.#at, buf = this.#memory.buffer, d = this.#d, n = ids.length;
    if (n === 0) return;
    const pairs = (n + 1) >> 1;
    new Float64Array(buf, a.q64, d).set(q.subarray(0, d));
    const at = new Int32Array(buf, a.ids, 2 * pairs);
    for (let i = 0; i < n; i++) at[i] = ids[i];
    at[2 * pairs - 1] = ids[n - 1];
    this.#dots(a.ids, pairs, d, a.q64, l2 ? 1 : 0, a.cr, a.scores);
    const out = new Float64Array(buf, a.scores, 2 * pairs);
    for (let i = 0; i < n; i++) qc[ids[i]] = l2 ? -out[i] : out[i];
  }
}

/** {@linkcode nthLargest}'s scratch space for up to `m` values ({@linkcode nthWork}). */
export interface NthWork {
  /** The buckets' counts. */
  readonly count: Int32Array;
  /** The values of the top buckets. */
  readonly pick: Float64Array;
  /** The heap of the `n` largest of them. */
  readonly heap: Float64Array;
}

/** Buckets of {@linkcode nthLargest}'s histogram (and one for the largest value). */
const BUCKETS = 256;

/**
 * Scratch space for {@linkcode nthLargest} over up to `m` values.
 *
 * @example
 * ```ts
 * import { nthWork } from "./wasm_screen.ts";
 * if (nthWork(10).pick.length !== 10) throw new Error();
 * ```
 */
export function nthWork(m: number): NthWork {
  return {
    count: new Int32Array(BUCKETS + 1),
    pick: new Float64Array(m),
    heap: new Float64Array(m),
  };
}

/**
 * The `n`-th largest of `v[0..m)` (finite values, `1 ≤ n ≤ m`), without
 * a heap over all of them (whose insertions the branch predictor cannot
 * foresee): each value's bucket `⌊(x − min) · 256 / (max − min)⌋` (at most
 * 256), the highest bucket `b` whose buckets from `b` up hold `n` values,
 * then the `n`-th largest of those values by a heap of `n`. Rounding is
 * monotone, so a value of a lower bucket is below every value of a higher
 * one, and the `n` largest are all from `b` up.
 *
 * @example
 * ```ts
 * import { nthLargest, nthWork } from "./wasm_screen.ts";
 * const v = new Float64Array([3, -1, 7, 7, 2, 5]);
 * if (nthLargest(v, 6, 3, nthWork(6)) !== 5) throw new Error();
 * if (nthLargest(v, 6, 2, nthWork(6)) !== 7) throw new Error();
 * ```
 */
export function nthLargest(v: Float64Array, m: number, n: number, work: NthWork): number {
  let lo = Infinity, hi = -Infinity;
  for (let i = 0; i < m; i++) {
    const x = v[i];
    lo = x < lo ? x : lo;
    hi = x > hi ? x : hi;
  }
  return nthBetween(v, m, n, work, lo, hi);
}

/** {@linkcode nthLargest} given the smallest (`lo`) and largest (`hi`) of the values. */
function nthBetween(
  v: Float64Array,
  m: number,
  n: number,
  work: NthWork,
  lo: number,
  hi: number,
): number {
  if (!(hi > lo)) return hi;
  // (x − lo)·scale ≤ (hi − lo)·(256 / (hi − lo)) < 257: a bucket from 0 to 256.
  const scale = BUCKETS / (hi - lo), { count, pick, heap } = work;
  count.fill(0);
  for (let i = 0; i < m; i++) count[((v[i] - lo) * scale) | 0]++;
  let b = BUCKETS, cum = count[BUCKETS];
  while (cum < n) cum += count[--b];
  let k = 0;
  for (let i = 0; i < m; i++) {
    const x = v[i];
    if ((((x - lo) * scale) | 0) >= b) pick[k++] = x;
  }
  // The n largest of pick[0..k) in a min-heap: its root is the n-th largest.
  for (let i = 0; i < n; i++) {
    const x = pick[i];
    let j = i;
    while (j > 0 && heap[(j - 1) >> 1] > x) {
      heap[j] = heap[(j - 1) >> 1];
      j = (j - 1) >> 1;
    }
    heap[j] = x;
  }
  for (let i = n; i < k; i++) if (pick[i] > heap[0]) siftDown(heap, n, pick[i]);
  return heap[0];
}

/** Replaces the root of the min-heap `h` (its first `n` entries) by `x` and restores the heap. */
function siftDown(h: Float64Array, n: number, x: number): void {
  let i = 0;
  for (;;) {
    let c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && h[c + 1] < h[c]) c++;
    if (!(h[c] < x)) break;
    h[i] = h[c];
    i = c;
  }
  h[i] = x;
}
