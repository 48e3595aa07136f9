/**
 * Probing many lists at the cost of a few: a float32 screen of every coarse
 * centroid in WebAssembly, a proven error bound on each screened score, and
 * the float64 probing score (`wasm_probe.ts` {@linkcode probeScore}, the
 * sums in dimension order) only for the lists the bound cannot rule out:
 * {@linkcode ListScreen}. The lists it lets through hold every list that
 * the full float64 sort could keep among its first `nprobe`, so the lists
 * probed, and their scores, are the same bit for bit as probing all of
 * them (`tests/search/kernels/wasm_screen_test.ts`). With 1,000 lists of
 * 256 dimensions it takes 0.45–0.55 of the time of the full float64 probe
 * (`wasm_probe.ts`, eight lists a pass); the screened sums are half of it.
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
  section,
  set,
  simd,
  uleb,
  vec,
} from "./wasm_encode.ts";
import { probeScore } from "./wasm_probe.ts";

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
  const body = screenBody(fma);
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
    ...section(1, vec([[0x60, ...vec(Array(6).fill([I32])), ...vec([])]])),
    ...section(3, vec([[0]])),
    ...section(5, vec([[0x00, 1]])),
    ...section(7, vec([[...name("memory"), 0x02, 0], [...name("screen"), 0x00, 0]])),
    ...section(10, vec([[...uleb(body.length), ...body]])),
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
  readonly #memory: WebAssembly.Memory;
  readonly #centroids: Float32Array;
  readonly #nlist: number;
  readonly #d: number;
  readonly #norms: Float64Array;
  readonly #finite: boolean;
  readonly #at: { cq: number; q: number; out: number; passes: number };
  readonly #upper: Float64Array;
  readonly #heap: Float64Array;
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
    this.#memory = e.memory as WebAssembly.Memory;
    this.#centroids = centroids;
    this.#nlist = nlist;
    this.#d = d;
    const passes = Math.ceil(nlist / PASS);
    const cq = 0, q = cq + 4 * PASS * d * passes, out = q + 4 * d, end = out + 4 * PASS * passes;
    this.#at = { cq, q, out, passes };
    const have = this.#memory.buffer.byteLength;
    if (end > have) this.#memory.grow(Math.ceil((end - have) / PAGE));
    const lay = new Float32Array(this.#memory.buffer, cq, PASS * d * passes);
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
    this.#heap = new Float64Array(nlist);
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
   * and `qc`, of nlist entries: each of those lists' float64 probing score
   * (as {@linkcode probeScore} gives it), NaN for the others. Every list
   * the full float64 sort puts among the first `nprobe` is one of them.
   * `undefined` when the screen cannot tell (a non-finite score or bound):
   * then probe every list.
   */
  candidates(
    q: Float32Array,
    l2: boolean,
    nprobe: number,
  ): { ids: number[]; qc: Float64Array } | undefined {
    const nlist = this.#nlist, d = this.#d, norms = this.#norms;
    if (!this.#finite || nprobe < 1) return undefined;
    const s = this.sums(q, l2);
    let nq2 = 0;
    for (let t = 0; t < d; t++) nq2 += q[t] * q[t];
    const nq = Math.sqrt(nq2);
    const tiny = (d + 1) * 2 ** -148;
    const g = 2 * gamma32(l2 ? d + 3 : d + 1);
    // Each list's upper end, and the n largest lower ends in a heap whose root is the smallest.
    const upper = this.#upper, heap = this.#heap, n = Math.min(nprobe, nlist);
    let size = 0;
    for (let l = 0; l < nlist; l++) {
      const v = s[l];
      // ip: q·c within γ(d)·‖q‖‖c‖ + d·2⁻¹⁵⁰; l2: −D within γ(d+3)·D + d·2⁻¹⁵⁰, D ≤ v + that
      const e = l2 ? g * (v + tiny) + tiny : g * nq * norms[l] + tiny;
      const x = l2 ? -v : v;
      if (!Number.isFinite(x) || !Number.isFinite(e)) return undefined;
      upper[l] = x + e;
      const lo = x - e;
      if (size < n) {
        let i = size++;
        while (i > 0 && heap[(i - 1) >> 1] > lo) {
          heap[i] = heap[(i - 1) >> 1];
          i = (i - 1) >> 1;
        }
        heap[i] = lo;
      } else if (lo > heap[0]) siftDown(heap, n, lo);
    }
    const floor = n < nlist ? heap[0] : -Infinity;
    const ids: number[] = [];
    const qc = new Float64Array(nlist).fill(NaN);
    for (let l = 0; l < nlist; l++) if (upper[l] >= floor) ids.push(l);
    exactScores(q, this.#centroids, ids, d, l2, qc);
    return { ids, qc };
  }
}

/**
 * `qc[l]` = {@linkcode probeScore} of each list of `ids`, four lists at a
 * time (four independent sums, each in dimension order: the same doubles).
 */
function exactScores(
  q: Float32Array,
  c: Float32Array,
  ids: readonly number[],
  d: number,
  l2: boolean,
  qc: Float64Array,
): void {
  let i = 0;
  for (; i + 4 <= ids.length; i += 4) {
    const o0 = ids[i] * d, o1 = ids[i + 1] * d, o2 = ids[i + 2] * d, o3 = ids[i + 3] * d;
    let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    if (l2) {
      for (let t = 0; t < d; t++) {
        const x = q[t];
        const e0 = x - c[o0 + t], e1 = x - c[o1 + t], e2 = x - c[o2 + t], e3 = x - c[o3 + t];
        s0 += e0 * e0;
        s1 += e1 * e1;
        s2 += e2 * e2;
        s3 += e3 * e3;
      }
      s0 = -s0;
      s1 = -s1;
      s2 = -s2;
      s3 = -s3;
    } else {
      for (let t = 0; t < d; t++) {
        const x = q[t];
        s0 += x * c[o0 + t];
        s1 += x * c[o1 + t];
        s2 += x * c[o2 + t];
        s3 += x * c[o3 + t];
      }
    }
    qc[ids[i]] = s0;
    qc[ids[i + 1]] = s1;
    qc[ids[i + 2]] = s2;
    qc[ids[i + 3]] = s3;
  }
  for (; i < ids.length; i++) qc[ids[i]] = probeScore(q, c, ids[i], d, l2);
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
