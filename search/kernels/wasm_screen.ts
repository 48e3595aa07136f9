/**
 * Probing many lists at the cost of a few: a float32 screen of every coarse
 * centroid in WebAssembly, a proven error bound on each screened score, and
 * the float64 probing score (`wasm_probe.ts` `probeScore`, the
 * sums in dimension order) only for the lists the bound cannot rule out:
 * {@linkcode ListScreen}. The lists it lets through hold every list that
 * the full float64 sort could keep among its first `nprobe`, so the lists
 * probed, and their scores, are the same bit for bit as probing all of
 * them (`tests/search/kernels/wasm_screen_test.ts`); with adaptive
 * probing's slack (`candidates`' `slack`) it also leaves out the lists that
 * rule is sure to cut, and keeps those it keeps. With 1,000 lists of
 * 256 dimensions and nprobe 32 (an all-dev index, its 1,057 questions, 2-core
 * AMD EPYC, 2026-12-06, three runs) `candidates` takes 25.1–25.9 µs a
 * question in a batch, against 27.3–27.6 with the ends and the floor in
 * TypeScript and 33.5–34.1 with one question a screen as well (the code
 * before that day's changes below); the day before, 27.3–27.8 µs, 0.43–0.45
 * of the full float64 probe's 61–64 µs (`wasm_probe.ts`, eight lists a
 * pass). The screened sums are about two thirds of it.
 *
 * **The screen** (`screen(q, cq, passes, d, l2, out)`, byte addresses into
 * the module's own memory): 32 lists a pass, four a `f32x4` lane group,
 * each lane a list's float32 sum in dimension order of `q_t · c_t` (ip) or
 * `(q_t − c_t)²` (l2); the centroids laid out a pass at a time, dimension
 * by dimension (`c_l[t]` of list `l = 32k + j` at float `32·d·k + 32·t +
 * j`), the sums written to `out` (f32, 32 a pass); four dimensions a step
 * of the inner loop, then one at a time.
 *
 * **Two questions a screen** (`screen2`, the same params; the two questions'
 * values interleaved at `q`, the second's sums `128·passes` bytes after the
 * first's): a pass is two blocks of 16 lists, each block's centroid values
 * loaded once and multiplied into both questions' sums (2 × 4 lane groups),
 * each lane the same float32 operations in the same order as one question's
 * screen. A batch search screens its questions two at a time
 * (`ListScreen.candidates`' `next`). On the 1,000 lists of 256 dimensions of
 * an all-dev index (2-core AMD EPYC, 2026-12-06): 14.6–16.4 µs a question
 * against 19.7–21.7 for one at a time and 20.8–23.7 before the four-dimension
 * step.
 *
 * Each step `s + x·c` is relaxed SIMD's `f32x4.relaxed_madd` where the
 * runtime has it: one rounding where the machine has a fused multiply-add
 * (x86's FMA3, Arm's), which takes 0.85 of the multiply and the add's time
 * (1,024 lists of 256 dimensions: 17.1–17.5 µs a question against
 * 20.2–20.5, on a 2-core AMD EPYC); else two. The TypeScript reference
 * follows whichever rounding the runtime has ({@linkcode relaxedMaddFuses},
 * {@linkcode fmaF32}).
 *
 * **The integer screen** (ip, `screen16` and `ends16`; 2026-12-07): where
 * `d` is even and the values' magnitudes lie within 2⁻⁴⁰⁰ … 2⁴⁰⁰, an ip
 * question is screened in integers instead: the centroids rounded once to
 * int16 on a common scale (`sc = max|c| / 4095`), the question to int16 on
 * its own (`sq = max|q| / 2047`, less for d > 256 so that no int32 sum can
 * overflow: {@linkcode q16Max}), each list's sum `S` exact in int32, two
 * dimensions an `i32x4.dot_i16x8_s` (twice float32's products an
 * instruction), two questions a pass over 16 lists. Its bound (`ListScreen`
 * `#ends16`): `|q·c_l − sc·sq·S| ≤ ‖q‖₁·E_c + sc·E_q·K_l` (`E` a value's
 * largest rounding, `K_l` the sum of the list's int16 magnitudes), plus the
 * float64 probe's own error and the rounding of `sc·sq·S`, with room for
 * the bound's own arithmetic. On the 1,000 lists of 256 dimensions of all of
 * dev it lets through about 0.9 lists a question more than the float32
 * screen, and its sums take 11.7–12.7 µs a question against 16.8–17.3 for
 * `screen2`'s (the centroids half the bytes too). l2 keeps the float32
 * screen.
 *
 * **The float64 scores** of the lists let through (`dots(ids, pairs, d, q,
 * l2, cr, out)`): two lists a `f64x2` (the list ids a pair at `ids`, the
 * question as float64 at `q`, the centroids one after another at `cr`: a
 * list's values on adjacent cache lines, where the screen's layout spreads
 * them over `d`), each lane a list's `s += q_t · c_t` or `s += (q_t − c_t)²` in
 * dimension order, as `wasm_probe.ts` `probeScore` sums them (the scalar
 * float64 operations lane by lane: the same doubles); two pairs a pass
 * while two are left. So the module's memory holds the centroids twice,
 * `8·nlist·d` bytes (2 MB for 1,000 lists of 256 dimensions).
 *
 * **The ends and the floor**, in the module too: `ends` takes each list's
 * lower and upper end from its screened sum (the bound below, two lists a
 * `f64x2`: the float64 operations of the definition lane by lane), with
 * the smallest and largest lower end and a NaN check; `bucket` finds the
 * floor's bucket as {@linkcode nthLargest} does (256 buckets between the
 * smallest and largest, counted two lists a step in two tables) and picks
 * the values from that bucket up, whose `nprobe`-th largest a heap of
 * `nprobe` then finds (the same value: {@linkcode moduleNthLargest}); `keep`
 * writes the ids of the lists whose upper end reaches it, where `dots`
 * reads them: 4.0 µs a question (`ends` 0.8, `bucket` and the heap 2.4,
 * `keep` 0.8), 2.2–2.4 less than in TypeScript.
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
  f64c,
  firstModule,
  get,
  grownBuffer,
  heldBuffer,
  i32,
  ifElse,
  ifThen,
  loop,
  name,
  passes,
  section,
  set,
  simd,
  uleb,
  vec,
} from "./wasm_encode.ts";
import { gamma32 } from "../fsum.ts";

const PAGE = 65536;
const I32 = 0x7f, V128 = 0x7b;
/** Lists a pass of the screen: eight `f32x4` lane groups. */
const PASS = 32;
const GROUPS = PASS / 4;

const iGeU = [0x4f];

/** Dimensions a step of the screen's inner loop (then one at a time for the rest). */
const UNROLL = 4;

/**
 * The screen of `nq` questions at once (1 or 2), `8 / nq` lane groups each:
 * a pass of 32 lists is `nq` blocks of `32 / nq` lists, each block's
 * centroid values loaded once for every question. Params `qb` (the
 * questions interleaved: question i's value t at float `nq·t + i`), `cq`,
 * `passes`, `d`, `l2`, `out` (question i's sums at `out + 128·passes·i`).
 */
function screenBody(fma: boolean, nq: 1 | 2): number[] {
  // params qb 0, cq 1, passes 2, d 3, l2 4, out 5; locals i32: k 6, t 7, qp 8, p 9, g 10, os 11;
  // v128: the sums (question i, group j at 12 + G·i + j), x (one a question), c, e
  const G = GROUPS / nq, S = (i: number, j: number) => 12 + G * i + j;
  const X = (i: number) => 12 + GROUPS + i, C = 12 + GROUPS + nq, E = C + 1;
  const splat = (off: number) => simd(0x09, 2, ...uleb(off)); // v128.load32_splat
  const load = (off: number) => simd(0x00, 4, ...uleb(off));
  const store = (off: number) => simd(0x0b, 4, ...uleb(off));
  const vAdd = simd(0xe4), vSub = simd(0xe5), vMul = simd(0xe6);
  // f32x4.relaxed_madd (a · b + c, fused where the machine has FMA)
  const madd = simd(0x105);
  const zero = simd(0x0c, ...new Array(16).fill(0));
  const iAdd = [0x6a], iMul = [0x6c];
  const each = (n: number, f: (i: number) => number[]) => [...Array(n).keys()].flatMap(f);
  // u dimensions: each question's value splatted, then each group's centroid values once for
  // every question; each lane its list's sum: s += x · c (ip) or s += (x − c)² (l2)
  const dims = (u: number, l2: boolean) => [
    ...each(u, (v) => [
      ...each(nq, (i) => [...get(8), ...splat(4 * (nq * v + i)), ...set(X(i))]),
      ...each(G, (j) => [
        ...get(9),
        ...load(16 * j + 4 * PASS * v),
        ...set(C),
        ...each(nq, (i) => [
          ...get(X(i)),
          ...get(C),
          ...(l2 ? [...vSub, 0x22, ...uleb(E), ...get(E)] : []),
          ...(fma ? [...get(S(i, j)), ...madd] : [...vMul, ...get(S(i, j)), ...vAdd]),
          ...set(S(i, j)),
        ]),
      ]),
    ]),
    ...bump(8, i32(4 * nq * u)),
    ...bump(9, i32(4 * PASS * u)),
    ...bump(7, i32(u)),
  ];
  const all = (l2: boolean) => [
    ...block([
      ...loop([
        ...get(6),
        ...get(2),
        ...iGeU,
        ...brIf(1),
        ...i32(0),
        ...set(10),
        // the pass's blocks: lists 32k + (32 / nq)·g …
        ...block([
          ...loop([
            ...get(10),
            ...i32(nq),
            ...iGeU,
            ...brIf(1),
            ...each(nq * G, (a) => [...zero, ...set(12 + a)]),
            ...get(0),
            ...set(8),
            // p = cq + 128·d·k + 16·G·g
            ...get(1),
            ...get(6),
            ...get(3),
            ...iMul,
            ...i32(4 * PASS),
            ...iMul,
            ...iAdd,
            ...get(10),
            ...i32(16 * G),
            ...iMul,
            ...iAdd,
            ...set(9),
            ...passes(7, get(3), UNROLL, (u) => dims(u, l2)),
            ...each(nq, (i) =>
              each(G, (j) => [
                ...get(5),
                ...(i > 0 ? [...get(11), ...iAdd] : []),
                ...get(S(i, j)),
                ...store(16 * j),
              ])),
            ...bump(5, i32(16 * G)),
            ...bump(10, i32(1)),
            ...br(0),
          ]),
        ]),
        ...bump(6, i32(1)),
        ...br(0),
      ]),
    ]),
  ];
  return [
    ...vec([[6, I32], [GROUPS + nq + 2, V128]]),
    // os: a question's sums, 128·passes bytes
    ...get(2),
    ...i32(4 * PASS),
    ...iMul,
    ...set(11),
    ...get(4),
    ...ifElse(all(true), all(false)),
    0x0b,
  ];
}

/** Lists a pass of `screen16`: four `i32x4` lane groups, for each of its two questions. */
export const PASS16 = 16;
/** The largest magnitude of a centroid's int16 value in the integer screen. */
const C16_MAX = 4095;
/** A rounding to the nearest integer of a quotient is within this many units of the quotient (0.5, and room for the division's own rounding). */
const HALF_UP = 0.5 + 2 ** -40;
/** The integer screen's values' magnitudes lie within these (else the float32 screen). */
const I16_MIN_MAGNITUDE = 2 ** -400, I16_MAX_MAGNITUDE = 2 ** 400;
/** The room left in a bound for its own float64 rounding. */
const INFLATE = 1 + 2 ** -20;

/**
 * The largest magnitude of a question's int16 values for `d` dimensions:
 * `C16_MAX · q · d` within int32, so that no sum of the integer screen
 * overflows (2047 for d ≤ 256); 0 where fewer than 64 levels would remain.
 *
 * @example
 * ```ts
 * import { q16Max } from "./wasm_screen.ts";
 * if (q16Max(256) !== 2047 || q16Max(768) !== 682 || q16Max(100_000) !== 0) throw new Error();
 * ```
 */
export function q16Max(d: number): number {
  const q = Math.min(2047, Math.floor((2 ** 31 - 1) / (C16_MAX * d)));
  return q >= 64 ? q : 0;
}

/** A question's scale in the integer screen and the sum of its values' magnitudes. */
type Scale16 = { sq: number; n1: number };

/**
 * Question `q`'s int16 values for the integer screen, lane `lane` (0 or 1)
 * of the pairs at `out` (pair `p` at `4p + 2·lane`): `⌊q_t · qmax / m + 0.5⌋`
 * with `m = max|q_t|`, `sq = m / qmax`. Returns `sq` and `n1 = Σ|q_t|`
 * (float64, the even and the odd dimensions summed apart, then added),
 * `undefined` for a NaN or infinite value, `null` where the magnitudes lie
 * outside the integer screen's range (or are all 0).
 */
function quantize16(
  q: Float32Array,
  d: number,
  qmax: number,
  out: Int16Array,
  lane: number,
): Scale16 | null | undefined {
  // (d even: two values a step, the even and odd dimensions' sums apart; z NaN for a NaN or
  // infinite value.)
  let m0 = 0, m1 = 0, s0 = 0, s1 = 0, z = 0;
  for (let t = 0; t < d; t += 2) {
    const v = q[t], w = q[t + 1], x = Math.abs(v), y = Math.abs(w);
    z += (v - v) + (w - w);
    s0 += x;
    s1 += y;
    m0 = x > m0 ? x : m0;
    m1 = y > m1 ? y : m1;
  }
  if (z !== 0) return undefined;
  const m = m1 > m0 ? m1 : m0, n1 = s0 + s1;
  if (m < I16_MIN_MAGNITUDE || m > I16_MAX_MAGNITUDE) return null;
  // q_t · (qmax / m) is within 2⁻⁴⁰ units of q_t / sq, ⌊· + 0.5⌋ within 0.5 + 2⁻⁵² of that
  // (HALF_UP's room), and at most qmax in magnitude.
  const sq = m / qmax, inv = qmax / m;
  for (let t = 0, o = 2 * lane; t < d; t += 2, o += 4) {
    out[o] = Math.floor(q[t] * inv + 0.5);
    out[o + 1] = Math.floor(q[t + 1] * inv + 0.5);
  }
  return { sq, n1 };
}

/**
 * The integer screen of two questions at once (`screen16`, see the module
 * notes): params `qb` (for each pair of dimensions `p`, question 0's two
 * int16 values at byte `qb + 8p`, question 1's at `qb + 8p + 4`), `c16`
 * (pass `k` of 16 lists, pair `p`, group `g`: lists `16k + 4g …` two int16
 * values each, at byte `c16 + 64·(dp·k + p) + 16g`), `passes`, `dp` (pairs
 * of dimensions), `out` (question `i`'s sums, int32 in list order, at
 * `out + 64·passes·i`). Each lane the exact integer sum of its list's
 * products, two dimensions an `i32x4.dot_i16x8_s`.
 */
function screen16Body(): number[] {
  // params qb 0, c16 1, passes 2, dp 3, out 4; locals i32: k 5, p 6, qp 7, cp 8, os 9;
  // v128: a0…a3 10–13 (question 0), b0…b3 14–17 (question 1), x 18, y 19, v 20
  const A = [10, 11, 12, 13], B = [14, 15, 16, 17], X = 18, Y = 19, V = 20;
  const splat = (off: number) => simd(0x09, 2, ...uleb(off)); // v128.load32_splat
  const load = (off: number) => simd(0x00, 4, ...uleb(off));
  const store = (off: number) => simd(0x0b, 4, ...uleb(off));
  const dot = simd(0xba, 0x01), add = simd(0xae, 0x01);
  const zero = simd(0x0c, ...new Array(16).fill(0));
  const iAdd = [0x6a], iMul = [0x6c];
  const acc = (
    s: number,
    x: number,
  ) => [...get(s), ...get(V), ...get(x), ...dot, ...add, ...set(s)];
  return [
    ...vec([[5, I32], [11, V128]]),
    ...get(2),
    ...i32(64),
    ...iMul,
    ...set(9),
    ...block([
      ...loop([
        ...get(5),
        ...get(2),
        ...iGeU,
        ...brIf(1),
        ...[...A, ...B].flatMap((r) => [...zero, ...set(r)]),
        ...get(0),
        ...set(7),
        // cp = c16 + 64·dp·k
        ...get(1),
        ...get(3),
        ...get(5),
        ...iMul,
        ...i32(64),
        ...iMul,
        ...iAdd,
        ...set(8),
        ...i32(0),
        ...set(6),
        ...block([
          ...loop([
            ...get(6),
            ...get(3),
            ...iGeU,
            ...brIf(1),
            ...get(7),
            ...splat(0),
            ...set(X),
            ...get(7),
            ...splat(4),
            ...set(Y),
            ...[0, 1, 2, 3].flatMap((g) => [
              ...get(8),
              ...load(16 * g),
              ...set(V),
              ...acc(A[g], X),
              ...acc(B[g], Y),
            ]),
            ...bump(7, i32(8)),
            ...bump(8, i32(64)),
            ...bump(6, i32(1)),
            ...br(0),
          ]),
        ]),
        ...[0, 1, 2, 3].flatMap((g) => [
          ...get(4),
          ...get(A[g]),
          ...store(16 * g),
          ...get(4),
          ...get(9),
          ...iAdd,
          ...get(B[g]),
          ...store(16 * g),
        ]),
        ...bump(4, i32(64)),
        ...bump(5, i32(1)),
        ...br(0),
      ]),
    ]),
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
    ...ifElse(all(true), all(false)),
    0x0b,
  ];
}

const F64 = 0x7c;
const f64Load = (off = 0) => [0x2b, 3, ...uleb(off)];
const f64Store = (off = 0) => [0x39, 3, ...uleb(off)];
const i32Load = [0x28, 2, 0], i32Store = [0x36, 2, 0];
const [iAdd, iShl] = [[0x6a], [0x74]];
const [fSub, fMul, fGe] = [[0xa1], [0xa2], [0x66]];
/** `base + (i << sh)` (locals). */
const at = (
  base: number,
  i: number,
  sh: number,
) => [...get(base), ...get(i), ...i32(sh), ...iShl, ...iAdd];
/** A loop of local `i` from 0 while `i < n` (local), `body` then `i += 1`. */
const upTo = (i: number, n: number, body: number[]) => [
  ...i32(0),
  ...set(i),
  ...block([
    ...loop([...get(i), ...get(n), ...iGeU, ...brIf(1), ...body, ...bump(i, i32(1)), ...br(0)]),
  ]),
];

const [vLoad, vStore, f64x2Splat] = [simd(0x00, 4, 0), simd(0x0b, 4, 0), simd(0x14)];
const [vfAdd, vfSub, vfMul, vfNeg] = [simd(0xf0), simd(0xf1), simd(0xf2), simd(0xed)];
/** `f64x2.pmin` / `pmax`: `b < a ? b : a` / `a < b ? b : a`, lane by lane. */
const [vfPmin, vfPmax] = [simd(0xf6), simd(0xf7)];
const laneF64 = (l: number) => simd(0x21, l), laneI32 = (l: number) => simd(0x1b, l);
/** `i32x4.trunc_sat_f64x2_s_zero`: two doubles to the first two i32 lanes, truncated. */
const truncSatZero = simd(0xfc);

/**
 * A loop of local `i` from 0 in steps of two while two are left (`pair(false)`),
 * then `pair(true)` once for the last one where `n` (local) is odd.
 */
const byPairs = (i: number, n: number, pair: (tail: boolean) => number[]) => [
  ...i32(0),
  ...set(i),
  ...block([
    ...loop([
      ...get(i),
      ...i32(2),
      ...iAdd,
      ...get(n),
      0x4b, // i32.gt_u
      ...brIf(1),
      ...pair(false),
      ...bump(i, i32(2)),
      ...br(0),
    ]),
  ]),
  ...get(i),
  ...get(n),
  0x49, // i32.lt_u
  ...ifThen(pair(true)),
];

/**
 * `ends(s, norms, n, gnq, g, tiny, l2, lower, upper, mm)`: each list's
 * ends from its screened sum (`s`, f32) as `ListScreen.candidates` defines
 * them, the same float64 operations: `e = gnq·‖c_l‖ + tiny` (ip: `gnq` =
 * `g·‖q‖`) or `g·(v + tiny) + tiny` (l2), `x = v` or `−v`; `upper = x + e`,
 * `lower = x − e`; two lists a `f64x2` (where `n` is odd, the last one in
 * both lanes: `lower` and `upper` need room for `n + 1`). Writes `lower`,
 * `upper` (f64) and at `mm` (f64 pairs, a lane each): the smallest lower
 * end (`y < lo ? y : lo` from +∞), the largest, and `Σ (x − x) + (e − e)`
 * (NaN where a value is not finite).
 */
function endsBody(): number[] {
  // params s 0, norms 1, n 2, gnq 3, g 4, tiny 5, l2 6, lower 7, upper 8, mm 9;
  // locals i32: i 10; v128: v 11, e 12, x 13, y 14, bad 15, lo 16, hi 17, gnq 18, g 19, tiny 20
  const pair = (l2: boolean) => (tail: boolean) => [
    ...at(0, 10, 2),
    ...(tail ? simd(0x09, 2, 0) : simd(0x5d, 3, 0)), // load32_splat / load64_zero
    ...simd(0x5f), // f64x2.promote_low_f32x4
    ...set(11),
    ...(l2
      ? [...get(19), ...get(11), ...get(20), ...vfAdd, ...vfMul, ...get(20), ...vfAdd, ...set(12)]
      : [
        ...get(18),
        ...at(1, 10, 3),
        ...(tail ? simd(0x0a, 3, 0) : vLoad), // load64_splat / load
        ...vfMul,
        ...get(20),
        ...vfAdd,
        ...set(12),
      ]),
    ...get(11),
    ...(l2 ? vfNeg : []),
    ...set(13),
    ...get(15),
    ...get(13),
    ...get(13),
    ...vfSub,
    ...get(12),
    ...get(12),
    ...vfSub,
    ...vfAdd,
    ...vfAdd,
    ...set(15),
    ...at(8, 10, 3),
    ...get(13),
    ...get(12),
    ...vfAdd,
    ...vStore,
    ...at(7, 10, 3),
    ...get(13),
    ...get(12),
    ...vfSub,
    0x22,
    ...uleb(14),
    ...vStore,
    ...get(16),
    ...get(14),
    ...vfPmin,
    ...set(16),
    ...get(17),
    ...get(14),
    ...vfPmax,
    ...set(17),
  ];
  return [
    ...vec([[1, I32], [10, V128]]),
    ...f64c(Infinity),
    ...f64x2Splat,
    ...set(16),
    ...f64c(-Infinity),
    ...f64x2Splat,
    ...set(17),
    ...[[3, 18], [4, 19], [5, 20]].flatMap(([p, l]) => [...get(p), ...f64x2Splat, ...set(l)]),
    ...get(6),
    ...ifElse(byPairs(10, 2, pair(true)), byPairs(10, 2, pair(false))),
    ...[[16, 0], [17, 16], [15, 32]].flatMap(([l, o]) => [
      ...get(9),
      ...get(l),
      ...simd(0x0b, 4, o),
    ]),
    0x0b,
  ];
}

/**
 * `ends16(s, K, n, R, A, Bc, lower, upper, mm)`: each list's ends from its
 * integer sum (`s`, i32) as `ListScreen` `#ends16` defines them, the same
 * float64 operations: `x = S·R`, `b = A + Bc·K_l + |x|·2⁻⁵⁰` (`K` f64),
 * `upper = x + b`, `lower = x − b`; two lists a `f64x2` (where `n` is odd,
 * the last one in both lanes: `lower` and `upper` need room for `n + 1`).
 * Writes `lower`, `upper` (f64) and at `mm` (f64 pairs, a lane each): the
 * smallest lower end (`y < lo ? y : lo` from +∞) and the largest.
 */
function ends16Body(): number[] {
  // params s 0, K 1, n 2, R 3, A 4, Bc 5, lower 6, upper 7, mm 8; locals i32: i 9;
  // v128: x 10, b 11, y 12, lo 13, hi 14, R 15, A 16, Bc 17, eps 18
  const convert = simd(0xfe), abs = simd(0xec);
  const pair = (tail: boolean) => [
    ...at(0, 9, 2),
    ...(tail ? simd(0x09, 2, 0) : simd(0x5d, 3, 0)), // load32_splat / load64_zero
    ...convert, // f64x2.convert_low_i32x4_s
    ...get(15),
    ...vfMul,
    ...set(10),
    ...get(16),
    ...get(17),
    ...at(1, 9, 3),
    ...(tail ? simd(0x0a, 3, 0) : vLoad), // load64_splat / load
    ...vfMul,
    ...vfAdd,
    ...get(10),
    ...abs,
    ...get(18),
    ...vfMul,
    ...vfAdd,
    ...set(11),
    ...at(7, 9, 3),
    ...get(10),
    ...get(11),
    ...vfAdd,
    ...vStore,
    ...at(6, 9, 3),
    ...get(10),
    ...get(11),
    ...vfSub,
    0x22,
    ...uleb(12),
    ...vStore,
    ...get(13),
    ...get(12),
    ...vfPmin,
    ...set(13),
    ...get(14),
    ...get(12),
    ...vfPmax,
    ...set(14),
  ];
  return [
    ...vec([[1, I32], [9, V128]]),
    ...f64c(Infinity),
    ...f64x2Splat,
    ...set(13),
    ...f64c(-Infinity),
    ...f64x2Splat,
    ...set(14),
    ...[[3, 15], [4, 16], [5, 17]].flatMap(([p, l]) => [...get(p), ...f64x2Splat, ...set(l)]),
    ...f64c(2 ** -50),
    ...f64x2Splat,
    ...set(18),
    ...byPairs(9, 2, pair),
    ...[[13, 0], [14, 16]].flatMap(([l, o]) => [...get(8), ...get(l), ...simd(0x0b, 4, o)]),
    0x0b,
  ];
}

/**
 * `bucket(lower, n, nth, lo, scale, count, pick) → k`: {@linkcode nthLargest}'s
 * buckets in the module (`⌊(y − lo)·scale⌋` of each lower end; two lists a
 * step, the first's counted at `count`, the second's at `count + 1028`: two
 * tables of 257 i32, so that one count need not wait for the other), the
 * highest bucket `b` whose buckets from `b` up hold `nth` values, and those
 * values (every lower end of a bucket from `b` up, in list order) at `pick`
 * (f64, room for `n + 1`); returns how many.
 */
function bucketBody(): number[] {
  // params lower 0, n 1, nth 2, lo 3, scale 4, count 5, pick 6;
  // locals i32: i 7, b 8, cum 9, k 10, a 11, j0 12, j1 13; f64: y 14;
  // v128: lo 15, scale 16, y 17, the pair's buckets 18
  const TABLE = 4 * (BUCKETS + 1);
  // The buckets of the pair at i (j0, j1), or of the last one (j0).
  const buckets = (tail: boolean) =>
    tail
      ? [
        ...at(0, 7, 3),
        ...f64Load(),
        0x22,
        ...uleb(14),
        ...get(3),
        ...fSub,
        ...get(4),
        ...fMul,
        0xfc,
        0x02, // i32.trunc_sat_f64_s
        ...set(12),
      ]
      : [
        ...at(0, 7, 3),
        ...vLoad,
        0x22,
        ...uleb(17),
        ...get(15),
        ...vfSub,
        ...get(16),
        ...vfMul,
        ...truncSatZero,
        0x22,
        ...uleb(18),
        ...laneI32(0),
        ...set(12),
        ...get(18),
        ...laneI32(1),
        ...set(13),
      ];
  const countUp = (j: number, table: number) =>
    [
      ...get(5),
      ...get(j),
      ...i32(2),
      ...iShl,
      ...iAdd,
      0x22,
      ...uleb(11),
      ...get(11),
      [0x28, 2, ...uleb(table)],
      ...i32(1),
      ...iAdd,
      [0x36, 2, ...uleb(table)],
    ].flat();
  const pickIf = (value: number[], j: number) => [
    ...at(6, 10, 3),
    ...value,
    ...f64Store(),
    ...get(10),
    ...get(j),
    ...get(8),
    0x4e, // i32.ge_s
    ...iAdd,
    ...set(10),
  ];
  const both = (
    b: number[],
  ) => [...get(5), ...b, ...i32Load, ...get(5), ...b, 0x28, 2, ...uleb(TABLE)];
  return [
    ...vec([[7, I32], [1, F64], [4, V128]]),
    ...get(3),
    ...f64x2Splat,
    ...set(15),
    ...get(4),
    ...f64x2Splat,
    ...set(16),
    ...i32(0),
    ...set(7),
    ...block([
      ...loop([
        ...get(7),
        ...i32(2 * (BUCKETS + 1)),
        ...iGeU,
        ...brIf(1),
        ...at(5, 7, 2),
        ...i32(0),
        ...i32Store,
        ...bump(7, i32(1)),
        ...br(0),
      ]),
    ]),
    ...byPairs(7, 1, (tail) => [
      ...buckets(tail),
      ...countUp(12, 0),
      ...(tail ? [] : countUp(13, TABLE)),
    ]),
    ...i32(BUCKETS),
    ...set(8),
    // cum = both tables' count of bucket b
    ...both([...i32(4 * BUCKETS), ...iAdd]).slice(0, 0),
    ...get(5),
    ...i32(4 * BUCKETS),
    ...iAdd,
    ...i32Load,
    ...get(5),
    ...i32(4 * BUCKETS),
    ...iAdd,
    0x28,
    2,
    ...uleb(TABLE),
    ...iAdd,
    ...set(9),
    ...block([
      ...loop([
        ...get(9),
        ...get(2),
        0x4e, // i32.ge_s
        ...brIf(1),
        ...get(8),
        ...i32(1),
        0x6b, // i32.sub
        ...set(8),
        ...get(9),
        ...at(5, 8, 2),
        ...i32Load,
        ...iAdd,
        ...at(5, 8, 2),
        0x28,
        2,
        ...uleb(TABLE),
        ...iAdd,
        ...set(9),
        ...br(0),
      ]),
    ]),
    // every lower end written, the count moved on for those of bucket b and up
    ...byPairs(7, 1, (tail) => [
      ...buckets(tail),
      ...(tail ? pickIf(get(14), 12) : [
        ...pickIf([...get(17), ...laneF64(0)], 12),
        ...pickIf([...get(17), ...laneF64(1)], 13),
      ]),
    ]),
    ...get(10),
    0x0b,
  ];
}

/**
 * `keep(upper, n, floor, ids) → m`: the lists whose upper end reaches
 * `floor`, ascending, as i32 at `ids` (room for `n + 1`); returns how many.
 */
function keepBody(): number[] {
  // params upper 0, n 1, floor 2, ids 3; locals i32: i 4, k 5
  return [
    ...vec([[2, I32]]),
    ...upTo(4, 1, [
      ...at(3, 5, 2),
      ...get(4),
      ...i32Store,
      ...get(5),
      ...at(0, 4, 3),
      ...f64Load(),
      ...get(2),
      ...fGe,
      ...iAdd,
      ...set(5),
    ]),
    ...get(5),
    0x0b,
  ];
}

/**
 * The bytes of the screening module: exports `memory`, `screen` (one
 * question), `screen2` (two at once) and `dots` (see the module notes). `fma`: each step `s + x·c` is relaxed SIMD's
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
  const bodies = [
    screenBody(fma, 1),
    screenBody(fma, 2),
    dotsBody(),
    endsBody(),
    bucketBody(),
    keepBody(),
    screen16Body(),
    ends16Body(),
  ];
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
    ...section(
      1,
      vec([
        [0x60, ...vec(Array(6).fill([I32])), ...vec([])],
        [0x60, ...vec(Array(7).fill([I32])), ...vec([])],
        [
          0x60,
          ...vec([I32, I32, I32, F64, F64, F64, I32, I32, I32, I32].map((t) => [t])),
          ...vec([]),
        ],
        [0x60, ...vec([I32, I32, I32, F64, F64, I32, I32].map((t) => [t])), ...vec([[I32]])],
        [0x60, ...vec([I32, I32, F64, I32].map((t) => [t])), ...vec([[I32]])],
        [0x60, ...vec(Array(5).fill([I32])), ...vec([])],
        [0x60, ...vec([I32, I32, I32, F64, F64, F64, I32, I32, I32].map((t) => [t])), ...vec([])],
      ]),
    ),
    ...section(3, vec([[0], [0], [1], [2], [3], [4], [5], [6]])),
    ...section(5, vec([[0x00, 1]])),
    ...section(
      7,
      vec([
        [...name("memory"), 0x02, 0],
        [...name("screen"), 0x00, 0],
        [...name("screen2"), 0x00, 1],
        [...name("dots"), 0x00, 2],
        [...name("ends"), 0x00, 3],
        [...name("bucket"), 0x00, 4],
        [...name("keep"), 0x00, 5],
        [...name("screen16"), 0x00, 6],
        [...name("ends16"), 0x00, 7],
      ]),
    ),
    ...section(
      10,
      vec(bodies.map((b) => [...uleb(b.length), ...b])),
    ),
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

/**
 * One thread's screen over one index's coarse centroids: the lists a
 * question probes and their float64 probing scores, computing those scores
 * for the few lists the float32 screen cannot rule out (see the module
 * notes).
 */
export class ListScreen {
  readonly #screen: (...a: number[]) => void;
  readonly #screen2: (...a: number[]) => void;
  readonly #dots: (...a: number[]) => void;
  readonly #ends: (...a: number[]) => void;
  readonly #bucket: (...a: number[]) => number;
  readonly #keep: (...a: number[]) => number;
  readonly #screen16: (...a: number[]) => void;
  readonly #ends16w: (...a: number[]) => void;
  readonly #memory: WebAssembly.Memory;
  readonly #nlist: number;
  readonly #d: number;
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
    norms: number;
    lower: number;
    upper: number;
    mm: number;
    count: number;
    pick: number;
  };
  /**
   * The integer screen of ip questions (see the module notes), where it can
   * run (byte addresses into the module's memory): the centroids' int16
   * layout `c16`, the two questions' values `q16`, their sums `out16`, each
   * list's `K_l` (the sum of its int16 values' magnitudes, float64, at
   * `k16`); the scale `sc`, the bound `ec` on a centroid value's rounding,
   * the largest centroid magnitude.
   */
  readonly #i16:
    | {
      c16: number;
      q16: number;
      out16: number;
      k16: number;
      passes: number;
      dp: number;
      sc: number;
      ec: number;
      cmax: number;
    }
    | undefined;
  /** The question whose integer sums the last `screen16` left in its second half, and its scale. */
  #next16: ({ q: Float32Array } & Scale16) | undefined = undefined;
  /** The question whose sums {@linkcode ListScreen.sums2} left in the second half of `out`. */
  #next: Float32Array | undefined = undefined;
  #nextL2 = false;
  /** The heap of {@linkcode ListScreen.candidates}' floor. */
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
    this.#screen2 = e.screen2 as (...a: number[]) => void;
    this.#dots = e.dots as (...a: number[]) => void;
    this.#ends = e.ends as (...a: number[]) => void;
    this.#bucket = e.bucket as (...a: number[]) => number;
    this.#keep = e.keep as (...a: number[]) => number;
    this.#screen16 = e.screen16 as (...a: number[]) => void;
    this.#ends16w = e.ends16 as (...a: number[]) => void;
    this.#memory = e.memory as WebAssembly.Memory;
    this.#nlist = nlist;
    this.#d = d;
    const passes = Math.ceil(nlist / PASS);
    // Two questions' values (interleaved) and their sums, 4·32·passes bytes each.
    const cq = 0, q = cq + 4 * PASS * d * passes, out = q + 8 * d;
    // The exact scores' question (f64), list ids (two a pair) and scores (f64).
    const q64 = (out + 8 * PASS * passes + 15) & ~15, ids = q64 + 8 * d;
    // (ids: room for the list ids of `keep`, one past them, and a pair's padding)
    const pairs = (nlist + 1) >> 1, scores = ids + 8 * (pairs + 1), cr = scores + 16 * pairs;
    // The selection's norms, lower and upper ends (f64), its smallest and largest lower end
    // and NaN check, its buckets' counts (i32) and the lower ends it picks (f64).
    const norms = (cr + 4 * nlist * d + 15) & ~15, lower = norms + 8 * (nlist + 2);
    const upper = lower + 8 * (nlist + 2), mm = upper + 8 * (nlist + 2), count = mm + 48;
    const pick = count + 8 * (BUCKETS + 2);
    // The integer screen's centroids (int16, 64 bytes a pass and pair of dimensions), the two
    // questions' values and their sums (int32).
    const passes16 = Math.ceil(nlist / PASS16), dp = d >> 1;
    const c16 = (pick + 8 * (nlist + 1) + 15) & ~15, q16 = c16 + 64 * passes16 * dp;
    const out16 = (q16 + 8 * dp + 15) & ~15, k16 = out16 + 2 * 64 * passes16;
    const end = k16 + 8 * (nlist + 1);
    this.#at = { cq, q, out, passes, q64, ids, scores, cr, norms, lower, upper, mm, count, pick };
    const have = this.#memory.buffer.byteLength;
    if (end > have) this.#memory.grow(Math.ceil((end - have) / PAGE));
    const lay = new Float32Array(this.#memory.buffer, cq, PASS * d * passes);
    new Float32Array(this.#memory.buffer, cr, nlist * d).set(centroids.subarray(0, nlist * d));
    // Each list's norm (float64), for the bound; in the module's memory for `ends`.
    const norm = new Float64Array(nlist);
    let finite = true;
    for (let l = 0; l < nlist; l++) {
      const k = Math.floor(l / PASS), j = l % PASS;
      let n2 = 0;
      for (let t = 0; t < d; t++) {
        const x = centroids[l * d + t];
        lay[PASS * d * k + PASS * t + j] = x;
        n2 += x * x;
      }
      norm[l] = Math.sqrt(n2);
      if (!Number.isFinite(norm[l])) finite = false;
    }
    this.#finite = finite;
    new Float64Array(this.#memory.buffer, norms, nlist).set(norm);
    this.#heap = new Float64Array(nlist);
    this.#i16 = undefined;
    let cmax = 0;
    for (let i = 0; i < nlist * d; i++) cmax = Math.max(cmax, Math.abs(centroids[i]));
    // Integer values need an even d and magnitudes far from float64's ends (every product of
    // the bound then a normal number).
    if (finite && d % 2 === 0 && cmax >= I16_MIN_MAGNITUDE && cmax <= I16_MAX_MAGNITUDE) {
      const sc = cmax / C16_MAX,
        lay16 = new Int16Array(this.#memory.buffer, c16, 32 * passes16 * dp);
      const K = new Float64Array(this.#memory.buffer, k16, nlist);
      for (let l = 0; l < nlist; l++) {
        const k = Math.floor(l / PASS16), j = l % PASS16, g = j >> 2, i = j & 3;
        let sum = 0;
        for (let t = 0; t < d; t++) {
          const v = Math.max(-C16_MAX, Math.min(C16_MAX, Math.round(centroids[l * d + t] / sc)));
          lay16[32 * (dp * k + (t >> 1)) + 8 * g + 2 * i + (t & 1)] = v;
          sum += Math.abs(v);
        }
        K[l] = sum;
      }
      this.#i16 = { c16, q16, out16, k16, passes: passes16, dp, sc, ec: sc * HALF_UP, cmax };
    }
  }

  /** The module memory's buffer as last taken (it grows only while constructed). */
  #buf: ArrayBuffer | undefined;

  /** The module memory's buffer (`heldBuffer`: not read from the memory each call). */
  #buffer(): ArrayBuffer {
    return this.#buf = heldBuffer(this.#memory, this.#buf);
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
    const a = this.#at, buf = this.#buffer();
    this.#next = undefined;
    new Float32Array(buf, a.q, this.#d).set(q.subarray(0, this.#d));
    this.#screen(a.q, a.cq, a.passes, this.#d, l2 ? 1 : 0, a.out);
    return new Float32Array(buf, a.out, this.#nlist);
  }

  /**
   * The float32 screened sums of questions `q0` and `q1` at once (views valid
   * until the next call), each the same as {@linkcode ListScreen.sums} gives
   * it: each centroid value is loaded once for both (in the module's
   * `screen2`, 2 questions × 16 lists a block).
   */
  sums2(q0: Float32Array, q1: Float32Array, l2: boolean): [Float32Array, Float32Array] {
    const a = this.#at, buf = this.#buffer(), d = this.#d;
    this.#next = undefined;
    const at = new Float32Array(buf, a.q, 2 * d);
    for (let t = 0; t < d; t++) {
      at[2 * t] = q0[t];
      at[2 * t + 1] = q1[t];
    }
    this.#screen2(a.q, a.cq, a.passes, d, l2 ? 1 : 0, a.out);
    const second = a.out + 4 * PASS * a.passes;
    return [new Float32Array(buf, a.out, this.#nlist), new Float32Array(buf, second, this.#nlist)];
  }

  /**
   * The lists that may be among question `q`'s `nprobe` best (ascending),
   * and `qc`, of nlist entries (`into` where given, else a new array): each
   * of those lists' float64 probing score
   * (as `wasm_probe.ts` `probeScore` gives it), NaN for the others. Every list
   * the full float64 sort puts among the first `nprobe` is one of them.
   * `undefined` when the screen cannot tell (a non-finite score or bound):
   * then probe every list.
   *
   * `next`: the question the next call will ask (with the same `l2`),
   * screened now with `q` ({@linkcode ListScreen.sums2}); that call then
   * reuses its sums, if it asks the same array and its values are unchanged
   * (the caller's promise) and no other call came between.
   *
   * `slack` (adaptive probing: the lists kept are those scoring at least the
   * best one's score less `slack`): a list whose upper end lies below the
   * largest lower end less `slack` is left out too. Its score is below the
   * best list's less `slack` (the best list scores at least the largest lower
   * end, and float64's rounding of the difference is monotone), so the rule
   * cuts it; the lists the rule keeps are all among `ids`.
   */
  candidates(
    q: Float32Array,
    l2: boolean,
    nprobe: number,
    into?: Float64Array,
    next?: Float32Array,
    slack?: number,
  ): { ids: number[]; qc: Float64Array } | undefined {
    const nlist = this.#nlist, a = this.#at;
    if (!this.#finite || nprobe < 1) {
      this.#next = undefined;
      this.#next16 = undefined;
      return undefined;
    }
    // ip: the integer screen where it takes the question (else, as for l2, the float32 one).
    const ends = l2 || this.#i16 === undefined ? null : this.#ends16(q, next);
    if (ends === undefined) return undefined;
    if (ends === null) this.#next16 = undefined;
    const [lo, hi] = ends ?? this.#ends32(q, l2, next) ?? [NaN, NaN];
    if (Number.isNaN(lo)) return undefined;
    const n = Math.min(nprobe, nlist);
    const nth = n < nlist ? this.#floor(n, lo, hi) : -Infinity;
    // (hi − slack: rounded as the rule rounds the best score less slack, and no larger.)
    const cut = slack !== undefined ? hi - slack : -Infinity;
    const floor = cut > nth ? cut : nth;
    const m = this.#keep(a.upper, nlist, floor, a.ids);
    const buf = this.#buffer();
    // (A loop: `Array.from` of the typed array took 0.6 µs a question through its iterator.)
    const at = new Int32Array(buf, a.ids, m), ids: number[] = new Array(m);
    for (let i = 0; i < m; i++) ids[i] = at[i];
    const qc = (into ?? new Float64Array(nlist)).fill(NaN);
    this.#exact(q, m, l2, qc);
    return { ids, qc };
  }

  /**
   * The integer screen of ip question `q` (and of `next` with it, see
   * {@linkcode ListScreen.candidates}): each list's lower and upper end
   * into the module's arrays, and `[lo, hi]`, the smallest and largest lower
   * end; `undefined` for a NaN or infinite value of `q`; `null` where the
   * integer screen cannot take `q` (the float32 screen then does).
   *
   * With `sc` and `sq` the centroids' and the question's scales, `C` and
   * `Q` their int16 values (each within `0.5 + 2⁻⁴⁰` units of the value
   * over its scale) and `S = Q · C_l` exact, `q · c_l = sc·sq·S + sc·(e_q ·
   * C_l) + q · e_c`, so `|q · c_l − sc·sq·S| ≤ sc·E_q·K_l + ‖q‖₁·E_c`
   * (`E` the largest rounding, `K_l = Σ|C_l|`); the float64 probing score
   * (products exact, sums in dimension order) is within `γ₆₄(d + 2)·‖q‖₁·
   * max|c|` of `q · c_l`; and `sc·sq·S` rounded twice within `|s|·2⁻⁵¹` of
   * the `s` computed. The bound used inflates the first terms by `1 +
   * 2⁻²⁰` and doubles the last, room for its own float64 rounding and that
   * of `s ± bound`.
   */
  #ends16(q: Float32Array, next?: Float32Array): [number, number] | null | undefined {
    const z = this.#i16!, a = this.#at, d = this.#d, nlist = this.#nlist;
    const qmax = q16Max(d);
    if (qmax === 0) return null;
    let which = 0, p: Scale16;
    const held = this.#next16;
    // (The float32 screen's question screened ahead is not this screen's.)
    this.#next = undefined;
    if (held !== undefined && held.q === q) {
      which = 1;
      p = held;
      this.#next16 = undefined;
    } else {
      const both = this.#screenInts(q, next !== q ? next : undefined, qmax);
      if (both === undefined || both === null) return both;
      p = both[0];
      this.#next16 = both[1] !== undefined ? { q: next!, ...both[1] } : undefined;
    }
    const u = (d + 2) * 2 ** -53, g64 = u / (1 - u);
    const A = p.n1 * (z.ec + g64 * z.cmax) * INFLATE, Bc = z.sc * (p.sq * HALF_UP) * INFLATE;
    const sums = z.out16 + 64 * z.passes * which;
    // Each list's ends in the module (`ends16`); at mm, a lane each: the smallest lower end
    // and the largest.
    this.#ends16w(sums, z.k16, nlist, z.sc * p.sq, A, Bc, a.lower, a.upper, a.mm);
    const mm = new Float64Array(this.#buffer(), a.mm, 4);
    return [mm[1] < mm[0] ? mm[1] : mm[0], mm[3] > mm[2] ? mm[3] : mm[2]];
  }

  /**
   * `q`'s int16 values (and `next`'s, where given and the screen takes it;
   * else zeros) into the module, screened (`screen16`): each question's
   * scale and `‖·‖₁`, `next`'s `undefined` where it was not screened;
   * `undefined` for a NaN or infinite value of `q`, `null` where the integer
   * screen cannot take `q`.
   */
  #screenInts(
    q: Float32Array,
    next: Float32Array | undefined,
    qmax: number,
  ): [Scale16, Scale16 | undefined] | null | undefined {
    const z = this.#i16!, d = this.#d;
    const qv = new Int16Array(this.#buffer(), z.q16, 4 * z.dp);
    const p0 = quantize16(q, d, qmax, qv, 0);
    if (p0 === undefined || p0 === null) return p0;
    const p1 = next !== undefined ? quantize16(next, d, qmax, qv, 1) : null;
    if (p1 === undefined || p1 === null) {
      for (let t = 0; t < z.dp; t++) qv[4 * t + 2] = qv[4 * t + 3] = 0;
    }
    this.#screen16(z.q16, z.c16, z.passes, z.dp, z.out16);
    return [p0, p1 ?? undefined];
  }

  /**
   * The integer screen's sums of ip questions `q0` and `q1` (views valid
   * until the next call; `q1` omitted: zeros), each list's exact `Q · C_l`
   * of the int16 values (see the module notes), or `undefined` where the
   * integer screen cannot take the centroids or either question (an odd
   * `d`, magnitudes out of its range, all zeros, a NaN or infinite value).
   */
  sums16(q0: Float32Array, q1?: Float32Array): [Int32Array, Int32Array] | undefined {
    const z = this.#i16, qmax = q16Max(this.#d);
    if (z === undefined || qmax === 0) return undefined;
    this.#next = undefined;
    this.#next16 = undefined;
    const both = this.#screenInts(q0, q1, qmax);
    if (both === undefined || both === null || (q1 !== undefined && both[1] === undefined)) {
      return undefined;
    }
    const buf = this.#buffer(), n = this.#nlist;
    return [new Int32Array(buf, z.out16, n), new Int32Array(buf, z.out16 + 64 * z.passes, n)];
  }

  /**
   * The float32 screen of `q` (and of `next` with it): each list's lower and
   * upper end into the module's arrays (`ends`), and `[lo, hi]`, the
   * smallest and largest lower end; `undefined` where a screened score or
   * bound is not finite.
   */
  #ends32(q: Float32Array, l2: boolean, next?: Float32Array): [number, number] | undefined {
    const nlist = this.#nlist, d = this.#d, a = this.#at;
    // The byte address of q's screened sums.
    let sums = a.out;
    if (q === this.#next && l2 === this.#nextL2) {
      sums = a.out + 4 * PASS * a.passes;
      this.#next = undefined;
    } else if (next !== undefined && next !== q) {
      this.sums2(q, next, l2);
      this.#next = next;
      this.#nextL2 = l2;
    } else this.sums(q, l2);
    let nq2 = 0;
    for (let t = 0; t < d; t++) nq2 += q[t] * q[t];
    const nq = Math.sqrt(nq2);
    const tiny = (d + 1) * 2 ** -148;
    const g = 2 * gamma32(l2 ? d + 3 : d + 1);
    // Each list's lower and upper ends, in the module's `ends`: for list l with screened sum v,
    // ip: q·c within γ(d)·‖q‖‖c‖ + d·2⁻¹⁵⁰; l2: −D within γ(d+3)·D + d·2⁻¹⁵⁰, D ≤ v + that.
    this.#ends(sums, a.norms, nlist, g * nq, g, tiny, l2 ? 1 : 0, a.lower, a.upper, a.mm);
    // At mm, two lanes each: the smallest lower end, the largest, and the NaN check (NaN where
    // a screened score or bound is not finite).
    const buf = this.#buffer(), mm = new Float64Array(buf, a.mm, 6);
    if (mm[4] + mm[5] !== 0) return undefined;
    return [mm[1] < mm[0] ? mm[1] : mm[0], mm[3] > mm[2] ? mm[3] : mm[2]];
  }

  /**
   * The `n`-th largest of the lower ends (`lo` the smallest, `hi` the
   * largest), as {@linkcode nthLargest} finds it: the module's `bucket` picks
   * the values of the top buckets, then the `n`-th largest of those by a heap.
   */
  #floor(n: number, lo: number, hi: number): number {
    const a = this.#at;
    const buf = this.#buffer();
    return bucketNth(this.#bucket, buf, a, this.#nlist, n, lo, hi, this.#heap);
  }

  /**
   * `qc[l]` = `wasm_probe.ts` `probeScore` of each list of `ids`, in the module's
   * `dots` (two lists a `f64x2`, each lane a list's float64 sum in dimension
   * order: the same doubles).
   */
  #exact(q: Float32Array, n: number, l2: boolean, qc: Float64Array): void {
    const a = this.#at, buf = this.#buffer(), d = this.#d;
    if (n === 0) return;
    const pairs = (n + 1) >> 1;
    new Float64Array(buf, a.q64, d).set(q.subarray(0, d));
    const ids = new Int32Array(buf, a.ids, 2 * pairs);
    ids[2 * pairs - 1] = ids[n - 1];
    this.#dots(a.ids, pairs, d, a.q64, l2 ? 1 : 0, a.cr, a.scores);
    const out = new Float64Array(buf, a.scores, 2 * pairs);
    for (let i = 0; i < n; i++) qc[ids[i]] = l2 ? -out[i] : out[i];
  }
}

/**
 * The `n`-th largest of the `m` values at `lower` (`lo` the smallest, `hi`
 * the largest) by the module's `bucket` (its `count` and `pick` areas) and a
 * heap of `n`: {@linkcode nthLargest}'s answer. Where `256 / (hi − lo)` is
 * not finite (a range of a few subnormals), {@linkcode nthLargest} itself.
 */
function bucketNth(
  bucket: (...a: number[]) => number,
  buf: ArrayBuffer,
  at: { lower: number; count: number; pick: number },
  m: number,
  n: number,
  lo: number,
  hi: number,
  heap: Float64Array,
): number {
  if (!(hi > lo)) return hi;
  const scale = BUCKETS / (hi - lo);
  if (!Number.isFinite(scale)) {
    return nthLargest(new Float64Array(buf, at.lower, m), m, n, nthWork(m));
  }
  const k = bucket(at.lower, m, n, lo, scale, at.count, at.pick);
  return nthOfPicks(new Float64Array(buf, at.pick, k), k, n, heap);
}

/**
 * {@linkcode nthLargest} by the screening module's buckets (`bucket`), as
 * {@linkcode ListScreen} finds the floor of its lower ends: the same value
 * (`tests/search/kernels/wasm_screen_test.ts`); `undefined` where the
 * module cannot run here.
 *
 * @example
 * ```ts
 * import { moduleNthLargest } from "./wasm_screen.ts";
 * const v = new Float64Array([3, -1, 7, 7, 2, 5]);
 * const got = moduleNthLargest(v, 6, 3);
 * if (got !== undefined && got !== 5) throw new Error(String(got));
 * ```
 */
export function moduleNthLargest(v: Float64Array, m: number, n: number): number | undefined {
  const mod = screenModule();
  if (mod === undefined) return undefined;
  const e = new WebAssembly.Instance(mod.module, {}).exports;
  const lower = 0, count = 8 * (m + 1), pick = count + 8 * (BUCKETS + 2);
  const buf = grownBuffer(e.memory as WebAssembly.Memory, pick + 8 * (m + 1));
  new Float64Array(buf, lower, m).set(v.subarray(0, m));
  let lo = Infinity, hi = -Infinity;
  for (let i = 0; i < m; i++) {
    lo = v[i] < lo ? v[i] : lo;
    hi = v[i] > hi ? v[i] : hi;
  }
  const bucket = e.bucket as (...a: number[]) => number;
  return bucketNth(bucket, buf, { lower, count, pick }, m, n, lo, hi, new Float64Array(n));
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
  return nthOfPicks(pick, k, n, heap);
}

/** The `n`-th largest of `pick[0..k)` (`n ≤ k`): the root of a min-heap of the `n` largest. */
function nthOfPicks(pick: Float64Array, k: number, n: number, heap: Float64Array): number {
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
