/**
 * The screen of the coarse lists (`search/kernels/wasm_screen.ts`): its
 * float32 sums equal the TypeScript reference bit for bit, and the lists it
 * lets through always hold the `nprobe` lists the full float64 probe keeps,
 * with the same float64 scores, so `bestLists` over them keeps the same
 * lists in the same order: for ip and l2, list counts around its 32-list
 * pass, values of every magnitude (subnormal products included), exact
 * ties, and near ties (centroids a few float32 steps apart, whose float32
 * order is not their float64 order: a screen without its bound fails
 * here; also with the question near the origin, where l2's bound must
 * follow ‖q − c‖², not ‖q‖·‖c‖). Values the screen cannot bound (an overflow, a NaN, an infinite
 * centroid) make it step aside, and so does `screenedLists` for fewer than
 * 256 lists or an nprobe above an eighth of them: then every list is probed.
 * The screen's multiply-add (relaxed SIMD's `f32x4.relaxed_madd`, one
 * rounding where the machine fuses it) and its plain multiply and add both
 * match the reference with the rounding they have, and the reference's
 * fused step (`fmaF32`) is the exact value rounded once (BigInt).
 * Two questions a screen (`sums2`) give each its own sums bit for bit, and a
 * question screened ahead of its call (`candidates`' `next`) the same lists.
 * `nthLargest`, the floor of the lower ends, is the sort's `n`-th largest,
 * and so is the module's (`moduleNthLargest`, its buckets two lists a step),
 * for every `n`, with ties, outliers and all values equal.
 */
import {
  fmaF32,
  ListScreen,
  moduleNthLargest,
  nthLargest,
  nthWork,
  q16Max,
  relaxedMaddFuses,
  screenModuleBytes,
  screenSums,
} from "../../../search/kernels/wasm_screen.ts";
import { probeScore, probeScores } from "../../../search/kernels/wasm_probe.ts";
import {
  bestLists,
  SCREEN_MIN_LISTS,
  screenedLists,
} from "../../../search/index/ivfpq/fastscan.ts";
import { splitmix32 } from "../../../search/index/ivfpq/kmeans.ts";
import { assert, assertEquals } from "../../_assert.ts";

const same = (a: ArrayLike<number>, b: ArrayLike<number>, what: string) => {
  assertEquals(a.length, b.length, what);
  for (let i = 0; i < a.length; i++) {
    if (!Object.is(a[i], b[i])) throw new Error(`${what}: [${i}] ${a[i]} ≠ ${b[i]}`);
  }
};

const KINDS = ["random", "scaled", "ties", "tiny", "near", "far"] as const;

/** Centroids and a question of one kind (seeded). */
function data(kind: typeof KINDS[number], nlist: number, d: number, seed: number) {
  const u = splitmix32(seed);
  const r = () => u() / 2 ** 32;
  const val = () =>
    kind === "scaled"
      ? (r() - 0.5) * 2 ** Math.floor(r() * 40 - 20)
      : kind === "ties"
      ? Math.floor(r() * 4) / 4
      : kind === "tiny"
      ? (r() - 0.5) * 2 ** -70
      : r() * 2 - 1;
  const c = new Float32Array(nlist * d).map(val);
  if (kind === "near" || kind === "far") {
    // Every list a few float32 steps from list 0 in every coordinate: their float64 scores differ
    // by about as much as float32 sums of d terms round.
    for (let l = 1; l < nlist; l++) {
      for (let t = 0; t < d; t++) c[l * d + t] = c[t] * (1 + ((u() % 9) - 4) * 2 ** -23);
    }
  }
  if (kind === "ties") { for (let l = 1; l < nlist; l += 3) c.copyWithin(l * d, 0, d); }
  // "far": the question much nearer the origin than the lists (l2's ‖q − c‖² far above ‖q‖·‖c‖).
  const q = new Float32Array(d).map(() => val() * (kind === "far" ? 2 ** -12 : 1));
  return { c, q };
}

/**
 * The lists the screen lets through by its definition, in plain TypeScript
 * from the screened sums `s32`: each list's ends `x ± e` (float64), the floor
 * the `n`-th largest lower end by a sort, every list whose upper end reaches
 * it (the module's `ends`, `bucket` and `keep` must give these).
 */
function referenceIds(
  s32: Float32Array,
  c: Float32Array,
  q: Float32Array,
  nlist: number,
  d: number,
  l2: boolean,
  nprobe: number,
): number[] {
  const gamma = (n: number) => n * 2 ** -24 / (1 - n * 2 ** -24);
  let nq2 = 0;
  for (let t = 0; t < d; t++) nq2 += q[t] * q[t];
  const nq = Math.sqrt(nq2), tiny = (d + 1) * 2 ** -148, g = 2 * gamma(l2 ? d + 3 : d + 1);
  const lower: number[] = [], upper: number[] = [];
  for (let l = 0; l < nlist; l++) {
    let n2 = 0;
    for (let t = 0; t < d; t++) n2 += c[l * d + t] * c[l * d + t];
    const v = s32[l], e = l2 ? g * (v + tiny) + tiny : g * nq * Math.sqrt(n2) + tiny;
    const x = l2 ? -v : v;
    upper.push(x + e);
    lower.push(x - e);
  }
  const n = Math.min(nprobe, nlist);
  const floor = n < nlist ? [...lower].sort((a, b) => b - a)[n - 1] : -Infinity;
  return upper.flatMap((u, l) => u >= floor ? [l] : []);
}

/**
 * The lists the integer screen lets through (ip), by its definition in
 * plain TypeScript (`wasm_screen.ts` `#ends16`), or `null` where it does not
 * take these values (an odd d, magnitudes outside 2⁻⁴⁰⁰ … 2⁴⁰⁰, all zero).
 */
function referenceIds16(
  c: Float32Array,
  q: Float32Array,
  nlist: number,
  d: number,
  nprobe: number,
): number[] | null {
  const qmax = q16Max(d);
  let cmax = 0, qm = 0, even = 0, odd = 0;
  for (let i = 0; i < nlist * d; i++) cmax = Math.max(cmax, Math.abs(c[i]));
  for (let t = 0; t < d; t++) {
    qm = Math.max(qm, Math.abs(q[t]));
    if (t % 2 === 0) even += Math.abs(q[t]);
    else odd += Math.abs(q[t]);
  }
  const n1 = even + odd;
  const inRange = (x: number) => x >= 2 ** -400 && x <= 2 ** 400;
  if (d % 2 !== 0 || qmax === 0 || !inRange(cmax) || !inRange(qm)) return null;
  const sc = cmax / 4095, sq = qm / qmax, half = 0.5 + 2 ** -40, inflate = 1 + 2 ** -20;
  const clamp = (x: number, m: number) => Math.max(-m, Math.min(m, x));
  const Q = Array.from(q.subarray(0, d), (x) => clamp(Math.floor(x * (qmax / qm) + 0.5), qmax));
  const u = (d + 2) * 2 ** -53, g64 = u / (1 - u);
  const A = n1 * (sc * half + g64 * cmax) * inflate, Bc = sc * (sq * half) * inflate;
  const lower: number[] = [], upper: number[] = [];
  for (let l = 0; l < nlist; l++) {
    let S = 0, K = 0;
    for (let t = 0; t < d; t++) {
      const v = clamp(Math.round(c[l * d + t] / sc), 4095);
      S += Q[t] * v;
      K += Math.abs(v);
    }
    const x = S * (sc * sq), b = A + Bc * K + Math.abs(x) * 2 ** -50;
    lower.push(x - b);
    upper.push(x + b);
  }
  const n = Math.min(nprobe, nlist);
  const floor = n < nlist ? [...lower].sort((a, b) => b - a)[n - 1] : -Infinity;
  return upper.flatMap((v, l) => v >= floor ? [l] : []);
}

/**
 * The integer screen's sums (ip) by its definition in plain TypeScript:
 * each list's `Σ Q_t · C_lt` of the int16 values, or `null` where it does
 * not take these values (as {@linkcode referenceIds16}).
 */
function referenceSums16(
  c: Float32Array,
  q: Float32Array,
  nlist: number,
  d: number,
): Int32Array | null {
  const qmax = q16Max(d);
  let cmax = 0, qm = 0;
  for (let i = 0; i < nlist * d; i++) cmax = Math.max(cmax, Math.abs(c[i]));
  for (let t = 0; t < d; t++) qm = Math.max(qm, Math.abs(q[t]));
  const inRange = (x: number) => x >= 2 ** -400 && x <= 2 ** 400;
  if (d % 2 !== 0 || qmax === 0 || !inRange(cmax) || !inRange(qm)) return null;
  const sc = cmax / 4095, out = new Int32Array(nlist);
  for (let l = 0; l < nlist; l++) {
    let S = 0;
    for (let t = 0; t < d; t++) {
      const Q = Math.floor(q[t] * (qmax / qm) + 0.5);
      S += Q * Math.max(-4095, Math.min(4095, Math.round(c[l * d + t] / sc)));
    }
    out[l] = S;
  }
  return out;
}

Deno.test("list screen (ip, integers): the module's int32 sums lane by lane, two questions a pass, around its 16-list pass", () => {
  let checked = 0;
  for (const [nlist, d] of [[1, 2], [15, 4], [16, 6], [17, 8], [33, 64], [100, 256], [70, 768]]) {
    for (const kind of KINDS) {
      const { c, q } = data(kind, nlist, d, 11 * nlist + d + KINDS.indexOf(kind));
      const q1 = data(kind, nlist, d, 5 * nlist + d + KINDS.indexOf(kind)).q;
      const s = ListScreen.create(c, nlist, d)!;
      const w0 = referenceSums16(c, q, nlist, d), w1 = referenceSums16(c, q1, nlist, d);
      const got = s.sums16(q, q1);
      if (w0 === null || w1 === null) {
        assertEquals(got, undefined, `${nlist}×${d} ${kind}`);
        continue;
      }
      assert(got !== undefined, `${nlist}×${d} ${kind}: the integer screen stepped aside`);
      same(got[0], w0, `first ${nlist}×${d} ${kind}`);
      same(got[1], w1, `second ${nlist}×${d} ${kind}`);
      // One question alone: the same sums, the second half all zeros.
      const one = s.sums16(q1)!;
      same(one[0], w1, `alone ${nlist}×${d} ${kind}`);
      assert(one[1].every((x) => x === 0));
      checked += 2 * nlist;
    }
  }
  assert(checked > 1500, `${checked} sums`);
  // Where it steps aside: an odd d, a NaN, a question of zeros (float32 values never leave its
  // range of magnitudes, 2⁻⁴⁰⁰ … 2⁴⁰⁰).
  const { c, q } = data("random", 20, 8, 3);
  assertEquals(
    ListScreen.create(c.subarray(0, 20 * 7), 20, 7)!.sums16(q.subarray(0, 7)),
    undefined,
  );
  const s = ListScreen.create(c, 20, 8)!;
  assertEquals(s.sums16(q.map((x, t) => (t === 2 ? NaN : x))), undefined);
  assertEquals(s.sums16(new Float32Array(8)), undefined);
  assertEquals(s.sums16(q, new Float32Array(8)), undefined);
});

Deno.test("list screen: float32 sums bit for bit, and the probed lists and scores of the full float64 probe", () => {
  assert(WebAssembly.validate(screenModuleBytes()), "the screening module does not validate");
  let cases = 0, disagree = 0, extra = 0, integer = 0;
  for (
    const [nlist, d] of [[1, 4], [2, 3], [5, 3], [31, 16], [32, 1], [33, 24], [100, 256], [70, 64]]
  ) {
    for (const kind of KINDS) {
      const { c, q } = data(kind, nlist, d, 17 * nlist + d + KINDS.indexOf(kind));
      const s = ListScreen.create(c, nlist, d);
      assert(s !== undefined, "no screening module on this runtime");
      for (const l2 of [false, true]) {
        const want32 = new Float32Array(nlist);
        screenSums(q, c, nlist, d, l2, want32, s.fused);
        same(s.sums(q, l2), want32, `sums ${nlist}×${d} ${kind} l2 ${l2}`);
        const full = new Float64Array(nlist);
        probeScores(q, c, nlist, d, l2, full);
        // Lists whose float32 order differs from their float64 order (the bound is needed).
        for (let l = 1; l < nlist; l++) {
          const a = l2 ? -want32[l - 1] : want32[l - 1], b = l2 ? -want32[l] : want32[l];
          if ((a < b && full[l - 1] > full[l]) || (a > b && full[l - 1] < full[l])) disagree++;
        }
        for (let nprobe = 1; nprobe <= nlist + 1; nprobe += nprobe < 8 ? 1 : 7) {
          const got = s.candidates(q, l2, nprobe);
          assert(got !== undefined, `${nlist}×${d} ${kind} l2 ${l2}: the screen stepped aside`);
          const want = bestLists(full, nprobe);
          const ids = new Set(got.ids);
          for (const l of want) {
            assert(ids.has(l), `${kind} l2 ${l2} nprobe ${nprobe}: list ${l} screened out`);
          }
          assertEquals(got.ids, [...got.ids].sort((a, b) => a - b), "ids ascending");
          // ip: the integer screen's lists where it takes the values, else the float32 one's.
          const by16 = l2 ? null : referenceIds16(c, q, nlist, d, nprobe);
          if (by16 !== null) integer++;
          assertEquals(
            got.ids,
            by16 ?? referenceIds(want32, c, q, nlist, d, l2, nprobe),
            `${nlist}×${d} ${kind} l2 ${l2} nprobe ${nprobe}: the lists by the definition`,
          );
          same(got.ids.map((l) => got.qc[l]), got.ids.map((l) => full[l]), `${kind} scores`);
          assertEquals(
            bestLists(got.qc, nprobe, got.ids),
            want,
            `${nlist}×${d} ${kind} l2 ${l2} nprobe ${nprobe}`,
          );
          extra += got.ids.length - Math.min(nprobe, nlist);
          cases++;
        }
      }
    }
  }
  assert(cases >= 500, `${cases} cases`);
  assert(integer >= 150, `${integer} cases screened in integers`);
  assert(
    disagree > 50,
    `only ${disagree} pairs of lists whose float32 order is not their float64 order`,
  );
  assert(extra > 0, "the screen never let an extra list through");
});

Deno.test("list screen (ip, integers): values on the rounding's half-way points invert the order of near lists; the bound keeps every list the probe keeps", () => {
  const next = splitmix32(4242), rand = () => next() / 2 ** 32;
  let cases = 0, inversions = 0;
  for (let trial = 0; trial < 1500; trial++) {
    const nlist = 6, d = 4, scale = 2 ** (Math.floor(rand() * 40) - 20);
    const sc = scale / 4095, sq = scale / 2047;
    // Values just off the half-way points of the int16 grid (list 0 and t 0 hold each side's
    // largest magnitude, which sets its scale), so that rounding moves them by up to half a step;
    const off = (step: number) => (Math.floor(rand() * 8) - 4 + 0.5 + (rand() - 0.5) * 0.04) * step;
    // Odd trials: the centroids on the grid, large, and the question's small values just off
    // its half-way points, so that the question's rounding decides (the bound's K_l term).
    const onGrid = trial % 2 === 1;
    const c = new Float32Array(nlist * d).map(() =>
      onGrid ? (Math.floor(rand() * 8191) - 4095) * sc : off(sc)
    );
    c[0] = scale;
    // (On the grid every list's first value is the same: the lists differ only where the
    // question's values are small.)
    if (onGrid) { for (let l = 1; l < nlist; l++) c[l * d] = scale; }
    const q = new Float32Array(d).map(() => off(onGrid ? sq : sq * 200));
    q[0] = scale;
    const s = ListScreen.create(c, nlist, d)!;
    const full = new Float64Array(nlist);
    probeScores(q, c, nlist, d, false, full);
    // Pairs of lists whose rounded sums order them against their float64 scores.
    const S = (l: number) => {
      let x = 0;
      for (let t = 0; t < d; t++) {
        const qq = Math.round(q[t] / (Math.max(...q.map(Math.abs)) / 2047));
        x += qq * Math.round(c[l * d + t] / (Math.max(...c.map(Math.abs)) / 4095));
      }
      return x;
    };
    for (let l = 1; l < nlist; l++) {
      for (let m = 1; m < l; m++) {
        if ((S(l) - S(m)) * (full[l] - full[m]) < 0) inversions++;
      }
    }
    for (const nprobe of [1, 2, 3]) {
      const got = s.candidates(q, false, nprobe)!;
      assert(got !== undefined, `trial ${trial}`);
      assertEquals(got.ids, referenceIds16(c, q, nlist, d, nprobe), `trial ${trial} ids`);
      const ids = new Set(got.ids);
      for (const l of bestLists(full, nprobe)) {
        assert(ids.has(l), `trial ${trial} nprobe ${nprobe}: list ${l} screened out`);
      }
      assertEquals(bestLists(got.qc, nprobe, got.ids), bestLists(full, nprobe), `trial ${trial}`);
      cases++;
    }
  }
  assert(inversions > 300, `only ${inversions} pairs of lists in the wrong order after rounding`);
  assert(cases === 4500);
});

Deno.test("list screen: two questions a screen give each one's sums bit for bit, and a question screened ahead the same lists", () => {
  let checked = 0;
  // d around the four-dimension step (and its remainder), lists around the 16-list block
  for (const [nlist, d] of [[1, 1], [15, 3], [17, 4], [33, 5], [64, 7], [100, 256], [300, 255]]) {
    for (const kind of KINDS) {
      const { c, q } = data(kind, nlist, d, 13 * nlist + d + KINDS.indexOf(kind));
      const q1 = data(kind, nlist, d, 7 * nlist + d + KINDS.indexOf(kind)).q;
      for (const fma of [true, false]) {
        const s = ListScreen.create(c, nlist, d, fma)!;
        for (const l2 of [false, true]) {
          const w0 = new Float32Array(nlist), w1 = new Float32Array(nlist);
          screenSums(q, c, nlist, d, l2, w0, s.fused);
          screenSums(q1, c, nlist, d, l2, w1, s.fused);
          const [a, b] = s.sums2(q, q1, l2);
          same(a, w0, `sums2 first ${nlist}×${d} ${kind} l2 ${l2} fma ${fma}`);
          same(b, w1, `sums2 second ${nlist}×${d} ${kind} l2 ${l2} fma ${fma}`);
          same(s.sums(q1, l2), w1, `sums ${nlist}×${d} ${kind} l2 ${l2} fma ${fma}`);
          const nprobe = Math.max(1, nlist >> 3);
          const one = [q, q1].map((x) => {
            const r = s.candidates(x, l2, nprobe)!;
            return { ids: r.ids, qc: [...r.qc] };
          });
          // q screened with q1 ahead: q1's call reuses those sums
          const ahead = [s.candidates(q, l2, nprobe, undefined, q1)!];
          ahead.push(s.candidates(q1, l2, nprobe)!);
          ahead.forEach((r, i) => {
            assertEquals(r.ids, one[i].ids, `ids ${i} ${nlist}×${d} ${kind} l2 ${l2}`);
            same(r.qc, one[i].qc, `qc ${i} ${nlist}×${d} ${kind} l2 ${l2}`);
          });
          checked += 2 * nlist;
        }
      }
    }
  }
  assert(checked > 20000, `${checked} sums`);
  // Any other call between drops the question screened ahead: its sums are made again.
  const { c, q } = data("random", 40, 9, 5);
  const q1 = data("random", 40, 9, 6).q, s = ListScreen.create(c, 40, 9)!;
  const want = s.candidates(q1, false, 5)!.ids;
  s.candidates(q, false, 5, undefined, q1);
  s.sums(q, false);
  q1.fill(0);
  const zero = s.candidates(q1, false, 5)!;
  assertEquals(zero.ids.length, 40, "a question of zeros ties every list");
  assert(want.length < 40);
});

Deno.test("list screen: on spread-out lists it lets through few more than nprobe", () => {
  const nlist = 1000, d = 64;
  const { c, q } = data("random", nlist, d, 99);
  const s = ListScreen.create(c, nlist, d)!;
  for (const l2 of [false, true]) {
    for (const nprobe of [1, 8, 32]) {
      const got = s.candidates(q, l2, nprobe)!;
      assert(
        got.ids.length >= nprobe && got.ids.length <= nprobe + 2,
        `${got.ids.length} for ${nprobe}`,
      );
      assertEquals(got.ids.filter((l) => !Number.isNaN(got.qc[l])).length, got.ids.length);
      assertEquals(got.qc.filter((x) => !Number.isNaN(x)).length, got.ids.length);
    }
  }
});

Deno.test("list screen: steps aside where it cannot bound, and the probe of every list answers", () => {
  const nlist = SCREEN_MIN_LISTS, d = 8;
  const base = data("random", nlist, d, 5);
  const cases: [string, Float32Array, Float32Array][] = [
    [
      "an overflowing product",
      base.c.map((x, i) => (i === 3 * d ? 2 ** 70 : x)),
      base.q.map((x, t) => (t === 0 ? 2 ** 70 : x)),
    ],
    ["a NaN in the question", base.c, base.q.map((x, t) => (t === 3 ? NaN : x))],
    ["an infinite centroid", base.c.map((x, i) => (i === 17 ? Infinity : x)), base.q],
    ["a sum past float32's range", base.c.map(() => -(2 ** 63)), base.q.map(() => 2 ** 63)],
  ];
  for (const [what, c, q] of cases) {
    const s = ListScreen.create(c, nlist, d)!;
    for (const l2 of [false, true]) {
      const dataOf = { centroids: c, nlist };
      const got = s.candidates(q, l2, 4);
      // ip in integers: a float32 overflow is no overflow there, and the lists are the probe's.
      if (!l2 && what !== "a NaN in the question" && what !== "an infinite centroid") {
        const full = new Float64Array(nlist);
        probeScores(q, c, nlist, d, false, full);
        assert(got !== undefined, what);
        assertEquals(bestLists(got.qc, 4, got.ids), bestLists(full, 4), what);
        assertEquals(got.ids, referenceIds16(c, q, nlist, d, 4), what);
        continue;
      }
      assertEquals(got, undefined, `${what} l2 ${l2}`);
      assertEquals(screenedLists(dataOf, d, l2, q, 4), undefined, `screenedLists: ${what}`);
    }
  }
  // Where the probe is a large share of the lists, or the lists are few, every list is probed.
  const big = { centroids: base.c, nlist };
  assertEquals(screenedLists(big, d, false, base.q, nlist / 8 + 1), undefined);
  const few = { centroids: base.c.subarray(0, (nlist - 1) * d), nlist: nlist - 1 };
  assertEquals(screenedLists(few, d, false, base.q, 1), undefined);
  const small = screenedLists(big, d, false, base.q, nlist / 8)!;
  const full = new Float64Array(nlist);
  probeScores(base.q, base.c, nlist, d, false, full);
  assertEquals(small.lists, bestLists(full, nlist / 8));
  for (const l of small.lists) assertEquals(small.qc[l], probeScore(base.q, base.c, l, d, false));
});

/** An exact float32 rounding (ties to even) of `n · 2^k` (BigInt n): the reference for `fmaF32`. */
function roundF32(n: bigint, k: number): number {
  if (n === 0n) return 0;
  const neg = n < 0n, m = neg ? -n : n;
  const top = m.toString(2).length - 1 + k;
  const shift = top >= -126 ? m.toString(2).length - 24 : -149 - k;
  let q = m, at = k;
  if (shift > 0) {
    const b = BigInt(shift);
    q = m >> b;
    const r = m - (q << b), half = 1n << (b - 1n);
    if (r > half || (r === half && (q & 1n) === 1n)) q++;
    at = k + shift;
  }
  const v = Number(q) * 2 ** at;
  return neg ? -v : v;
}

/** `a · b + c` exactly, rounded once to float32 (a, b, c float32 values). */
function exactFma(a: number, b: number, c: number): number {
  const m = (x: number) => BigInt(x * 2 ** 149);
  return roundF32(m(a) * m(b) + (m(c) << 149n), -298);
}

Deno.test("fmaF32: a · b + c rounded once, as an exact BigInt sum rounds it (ties, subnormals, cancellation)", () => {
  const f = Math.fround;
  const a = 1 + 2 ** -12;
  const cases: [number, number, number][] = [
    [a, a, -1], // 2⁻¹¹ + 2⁻²⁴: twice rounded it is 2⁻¹¹
    [1 + 2 ** -23, 1 + 2 ** -23, -1],
    [3, 5, 7],
    [1, 1, 2 ** -24], // a tie, exactly: to even
    [1 + 2 ** -23, 1, 2 ** -24], // a tie, exactly: to even (up)
    [1, 1, f(2 ** -24 + 2 ** -47)], // just above a tie
    [2 ** -75, 2 ** -75, 0], // an underflowing product
    [2 ** -75, 3 * 2 ** -76, 2 ** -149], // a subnormal sum
    [-(2 ** 60), 2 ** 60, 2 ** 120],
    [0, 5, -0],
    [-0, 5, -0],
    // 24929 · 673 = 2²⁴ + 1, a float32 tie; c lost in the float64 sum decides it (up, down).
    [24929, 673, 2 ** -40],
    [24929, 673, -(2 ** -40)],
    [-24929, 673, -(2 ** -40)],
    [24929 * 2 ** -100, 673, 2 ** -140],
  ];
  const u = splitmix32(7);
  const r = () => u() / 2 ** 32;
  for (let i = 0; i < 20000; i++) {
    const e = () => Math.floor(r() * 60 - 30);
    const x = f((r() - 0.5) * 2 ** e()), y = f((r() - 0.5) * 2 ** e());
    // c near −x·y half of the time: cancellation, where a second rounding shows most.
    const c = r() < 0.5 ? f(-x * y * (1 + (r() - 0.5) * 2 ** -20)) : f((r() - 0.5) * 2 ** e());
    cases.push([x, y, c]);
  }
  let twice = 0;
  for (const [x, y, c] of cases) {
    const got = fmaF32(x, y, c), want = exactFma(x, y, c);
    if (!Object.is(got, want) && !(got === 0 && want === 0)) {
      throw new Error(`fmaF32(${x}, ${y}, ${c}) = ${got}, exact ${want}`);
    }
    if (got !== f(c + f(x * y))) twice++;
  }
  // The cases tell one rounding from two.
  assert(twice > 100, `only ${twice} cases where rounding twice differs`);
});

Deno.test("list screen: its multiply-add and its plain multiply and add each match the reference of their rounding", () => {
  const fuses = relaxedMaddFuses();
  for (const [nlist, d] of [[33, 24], [100, 256]]) {
    for (const kind of KINDS) {
      const { c, q } = data(kind, nlist, d, 31 * nlist + d + KINDS.indexOf(kind));
      const plain = ListScreen.create(c, nlist, d, false)!, madd = ListScreen.create(c, nlist, d)!;
      assertEquals(plain.fused, false);
      assertEquals(madd.fused, fuses === true);
      for (const l2 of [false, true]) {
        for (const [s, fused] of [[plain, false], [madd, fuses === true]] as const) {
          const want = new Float32Array(nlist);
          screenSums(q, c, nlist, d, l2, want, fused);
          same(s.sums(q, l2), want, `${kind} l2 ${l2} fused ${fused}`);
        }
      }
    }
  }
});

Deno.test("nthLargest and the module's buckets: the n-th largest of the sorted values, for every n (ties, outliers, all equal, subnormal ranges)", () => {
  const u = splitmix32(21);
  const r = () => u() / 2 ** 32;
  let cases = 0;
  for (const m of [1, 2, 7, 33, 300, 1000]) {
    for (const kind of ["spread", "ties", "outliers", "equal", "tiny", "subnormal"]) {
      const v = Float64Array.from({ length: m }, () => {
        const x = r() - 0.5;
        if (kind === "ties") return Math.round(x * 6);
        if (kind === "outliers") return r() < 0.01 ? x * 1e12 : x;
        if (kind === "equal") return 0.25;
        if (kind === "tiny") return 1 + x * 2 ** -45;
        // a range so small that 256 / range is infinite
        if (kind === "subnormal") return Math.round(x * 8) * 5e-324;
        return x * 2 ** Math.floor(r() * 40 - 20);
      });
      const sorted = [...v].sort((a, b) => b - a), work = nthWork(m);
      for (let n = 1; n <= m; n++) {
        // (=== : a tie of 0 and −0 may give either)
        const got = nthLargest(v, m, n, work), mod = moduleNthLargest(v, m, n);
        assert(got === sorted[n - 1], `${kind} m ${m} n ${n}: ${got} ≠ ${sorted[n - 1]}`);
        assert(mod === sorted[n - 1], `module ${kind} m ${m} n ${n}: ${mod} ≠ ${sorted[n - 1]}`);
        cases++;
      }
      // Only the first m values count.
      if (m > 2) assertEquals(nthLargest(v, m - 1, 1, work), Math.max(...v.subarray(0, m - 1)));
    }
  }
  assertEquals(cases, 6 * (1 + 2 + 7 + 33 + 300 + 1000));
});
