/**
 * `metrics/stats/`: the generator against the reference C code's outputs,
 * and every statistic against NumPy or SciPy
 * (`tests/py/stats_ref.py`, one Python process for the whole file) on the
 * per-question EM/F1 of three simple deterministic systems over the 10,570
 * bundled dev questions.
 */
import { assert, assertEquals } from "../_assert.ts";
import {
  exactMatchScore,
  f1Score,
  mcnemarExact,
  mcnemarPaired,
  metricMaxOverGroundTruths,
  normalQuantile,
  pairedBootstrap,
  pairedBootstrapSteps,
  pairedRandomization,
  pairedRandomizationSteps,
  percentile,
  runSteps,
  seedState,
  sortedSteps,
  STEP_WORK,
  wilsonInterval,
  Xoshiro128StarStar,
} from "../../metrics/mod.ts";
import { python } from "../_util.ts";
import { devRuleAnswers } from "../_rule_systems.ts";

// ---------------------------------------------------------------------------
// Three deterministic systems on dev. Each picks the context sentence that
// shares the most (non-stop) words with the question, then answers with
//   first: its first word not in the question,
//   firstCaps: its first run of capitalised or numeric words not in the question,
//   lastCaps: its last such run
// (the runs fall back to `first`). firstCaps and lastCaps are close (EM 12.37
// vs 12.77), first is far below them.
// ---------------------------------------------------------------------------

interface Scores {
  readonly em: Float64Array;
  readonly f1: Float64Array;
}

async function devSystems(): Promise<{ first: Scores; firstCaps: Scores; lastCaps: Scores }> {
  const { golds, answers } = await devRuleAnswers();
  const score = (ps: string[]): Scores => ({
    em: Float64Array.from(
      ps,
      (p, i) => metricMaxOverGroundTruths(exactMatchScore, p, golds[i]) ? 1 : 0,
    ),
    f1: Float64Array.from(ps, (p, i) => metricMaxOverGroundTruths(f1Score, p, golds[i])!),
  });
  return { first: score(answers[0]), firstCaps: score(answers[1]), lastCaps: score(answers[2]) };
}

const SYS = await devSystems();
const N = SYS.first.em.length;
const mean = (x: ArrayLike<number>) => {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += x[i];
  return s / x.length;
};

// ---------------------------------------------------------------------------
// One Python job for every reference value in this file.
// ---------------------------------------------------------------------------

const BOOT_B = 20000;
const BOOT_SYSTEMS = [SYS.firstCaps.em, SYS.lastCaps.em, SYS.firstCaps.f1, SYS.lastCaps.f1];
const BOOT_PAIRS: [number, number][] = [[0, 1], [2, 3]];
/** Randomization cases, with the NumPy reference's number of shuffles. */
const RAND_CASES = [
  { name: "F1 firstCaps vs lastCaps", a: SYS.firstCaps.f1, b: SYS.lastCaps.f1, ref: 100000 },
  { name: "EM firstCaps vs lastCaps", a: SYS.firstCaps.em, b: SYS.lastCaps.em, ref: 200000 },
  { name: "F1 first vs firstCaps", a: SYS.first.f1, b: SYS.firstCaps.f1, ref: 20000 },
];
const REPL_N = 300;
const REPL = {
  systems: [SYS.firstCaps.f1, SYS.lastCaps.f1, SYS.lastCaps.em].map((x) => [
    ...x.subarray(0, REPL_N),
  ]),
  resamples: 200,
  seed: 5,
  percentiles: [2.5, 97.5],
  a: [...SYS.firstCaps.f1.subarray(0, REPL_N)],
  b: [...SYS.lastCaps.f1.subarray(0, REPL_N)],
  shuffles: 300,
  rseed: 11,
};

/** McNemar cases: every (b, c) up to 30, then large ones up to b + c = 30,000. */
function mcnemarCases(): [number, number][] {
  const cases: [number, number][] = [];
  for (let b = 0; b <= 30; b++) for (let c = 0; c <= 30; c++) cases.push([b, c]);
  const g = new Xoshiro128StarStar(2024);
  for (let i = 0; i < 150; i++) {
    const n = 1 + g.below(30000);
    const sd = Math.sqrt(n) / 2;
    // within about 4 standard deviations of n/2, where p is not negligible
    const b = Math.max(
      0,
      Math.min(n, Math.round(n / 2 - 4 * sd + (g.below(10000) / 10000) * 8 * sd)),
    );
    cases.push([b, n - b]);
  }
  for (let i = 0; i < 50; i++) cases.push([g.below(20000), g.below(20000)]);
  cases.push(
    [819, 776],
    [68, 800],
    [9999, 10001],
    [10000, 10000],
    [9930, 10070],
    [14800, 15200],
    [0, 25000],
    [1, 29999],
    [1000, 1100],
    [12345, 12999],
    [20000, 20300],
    [4, 1074],
    [0, 1075],
  );
  return cases;
}
const MCNEMAR = mcnemarCases();

/** Wilson cases: every count for small n, a spread for large n, five levels. */
function wilsonCases(): [number, number, number][] {
  const out: [number, number, number][] = [];
  for (const alpha of [0.05, 0.1, 0.01, 0.001, 0.5]) {
    for (const n of [1, 2, 3, 5, 10, 37, 100]) for (let x = 0; x <= n; x++) out.push([x, n, alpha]);
    for (const n of [1000, N]) for (let x = 0; x <= n; x += 97) out.push([x, n, alpha]);
    out.push([mean(SYS.firstCaps.em) * N, N, alpha], [N, N, alpha], [2.5, 7, alpha]);
  }
  return out;
}
const WILSON = wilsonCases();

const NDTRI: number[] = [];
for (let e = -300; e <= -1; e += 0.25) NDTRI.push(10 ** e);
for (let i = 1; i < 1000; i++) NDTRI.push(i / 1000);
NDTRI.push(0.975, 0.995, 1 - 1e-10, 1 - 2 ** -53);

interface RefOut {
  ndtri: number[];
  wilson: [number, number][];
  mcnemar: number[];
  bootstrap: {
    systems: { low: number; high: number; sd: number }[];
    pairs: { low: number; high: number; sd: number }[];
  };
  randomization: { count: number; p: number }[];
  replicate: {
    systems: [number, number][];
    pairs: [number, number][];
    randomization: { count: number; p: number };
  };
  xoshiro: number[][];
}

let refPromise: Promise<RefOut> | undefined;
/** The Python answers, computed once. */
function ref(): Promise<RefOut> {
  refPromise ??= python(
    ["tests/py/stats_ref.py"],
    JSON.stringify({
      ndtri: NDTRI,
      wilson: WILSON,
      mcnemar: MCNEMAR,
      bootstrap: {
        systems: BOOT_SYSTEMS.map((x) => [...x]),
        resamples: BOOT_B,
        seed: 20260101,
        percentiles: [2.5, 97.5],
        pairs: BOOT_PAIRS,
      },
      randomization: RAND_CASES.map((c, i) => ({
        a: [...c.a],
        b: [...c.b],
        shuffles: c.ref,
        seed: 100 + i,
      })),
      replicate: REPL,
      xoshiro: [{ seed: 0, count: 8 }, { seed: 123456789, count: 1000 }],
    }),
  ).then((r) => JSON.parse(r.stdout) as RefOut);
  return refPromise;
}

// ---------------------------------------------------------------------------
// The generator
// ---------------------------------------------------------------------------

Deno.test("stats: xoshiro128** seeded by SplitMix64 gives the reference C code's outputs", async () => {
  // From the authors' xoshiro128starstar.c and splitmix64.c, compiled with gcc.
  const want: [number | bigint, number[], number][] = [
    [0, [
      3737715805,
      2584255861,
      2876756834,
      3286328325,
      1553311962,
      1625202774,
      3260698944,
      2754151956,
    ], 3401338190],
    [1, [
      1695105466,
      1423115009,
      634581793,
      1068227753,
      716759206,
      4186505319,
      3777694425,
      2710820970,
    ], 3368339458],
    [42, [
      1776835114,
      4165204688,
      17111135,
      2317295270,
      2792088233,
      2554630222,
      2940343271,
      2244566231,
    ], 2880669927],
    [Number.MAX_SAFE_INTEGER, [
      1233166643,
      1287031142,
      661813442,
      2960669951,
      2601079046,
      1036114921,
      2300589652,
      2591400186,
    ], 1972247643],
    [2n ** 64n - 1n, [
      477689756,
      2493998634,
      555695776,
      607808419,
      61340979,
      301466976,
      2478485284,
      2565876330,
    ], 1373114536],
  ];
  for (const [seed, first, millionth] of want) {
    const g = new Xoshiro128StarStar(seed);
    assertEquals(Array.from({ length: 8 }, () => g.nextUint32()), first, `seed ${seed}`);
    for (let i = 8; i < 1_000_000; i++) g.nextUint32();
    assertEquals(g.nextUint32(), millionth, `seed ${seed}: output 1,000,001`);
  }
  assertEquals([...seedState(0)], [0x7b1dcdaf, 0xe220a839, 0xa1b965f4, 0x6e789e6a]);
  assertEquals(new Xoshiro128StarStar(7).nextUint32(), new Xoshiro128StarStar(7n).nextUint32());
  // the Python reference implements the same generator (it drives the replication test below)
  const r = await ref();
  assertEquals(r.xoshiro[0], want[0][1]);
  const g = new Xoshiro128StarStar(123456789);
  assertEquals(Array.from({ length: 1000 }, () => g.nextUint32()), r.xoshiro[1]);
  for (const bad of [-1, 0.5, 2 ** 53, NaN, -1n, 2n ** 64n]) {
    let threw = false;
    try {
      new Xoshiro128StarStar(bad);
    } catch (e) {
      threw = e instanceof RangeError;
    }
    assert(threw, `seed ${bad} must be refused`);
  }
});

// ---------------------------------------------------------------------------
// McNemar, Wilson, the normal quantile
// ---------------------------------------------------------------------------

Deno.test("stats: McNemar's exact p equals scipy.stats.binomtest(b, b + c, 0.5) to 1e-12", async () => {
  const r = await ref();
  let worst = 0;
  let nonTrivial = 0;
  MCNEMAR.forEach(([b, c], i) => {
    const ours = mcnemarExact(b, c).pValue;
    const err = Math.abs(ours - r.mcnemar[i]);
    worst = Math.max(worst, err);
    if (r.mcnemar[i] > 1e-6 && r.mcnemar[i] < 0.999) nonTrivial++;
    assert(err <= 1e-12, `b=${b} c=${c}: ours ${ours}, scipy ${r.mcnemar[i]}`);
  });
  assert(nonTrivial > 500, `only ${nonTrivial} cases with 1e-6 < p < 0.999`);
  console.log(`${MCNEMAR.length} (b, c) pairs, largest |ours - scipy| = ${worst}`);
});

Deno.test("stats: Wilson intervals equal scipy.stats.binomtest(...).proportion_ci(method='wilson') to 1e-12", async () => {
  const r = await ref();
  let worst = 0;
  WILSON.forEach(([x, n, alpha], i) => {
    const iv = wilsonInterval(x, n, { alpha });
    const [lo, hi] = r.wilson[i];
    const err = Math.max(Math.abs(iv.low - lo), Math.abs(iv.high - hi));
    worst = Math.max(worst, err);
    assert(
      err <= 1e-12,
      `x=${x} n=${n} alpha=${alpha}: ours [${iv.low}, ${iv.high}], scipy [${lo}, ${hi}]`,
    );
  });
  console.log(`${WILSON.length} intervals, largest difference ${worst}`);
});

Deno.test("stats: the normal quantile (AS 241) agrees with scipy.special.ndtri", async () => {
  const r = await ref();
  NDTRI.forEach((p, i) => {
    const ours = normalQuantile(p);
    const want = r.ndtri[i];
    assert(
      Math.abs(ours - want) <= 1e-15 * Math.max(1, Math.abs(want)),
      `p=${p}: ours ${ours}, scipy ${want}`,
    );
  });
  assertEquals([normalQuantile(0), normalQuantile(1), normalQuantile(0.5)], [
    -Infinity,
    Infinity,
    0,
  ]);
  assert(Number.isNaN(normalQuantile(-0.1)) && Number.isNaN(normalQuantile(1.1)));
});

// ---------------------------------------------------------------------------
// Bootstrap and randomization against NumPy
// ---------------------------------------------------------------------------

Deno.test("stats: paired bootstrap CIs on dev match a NumPy bootstrap (B = 20,000) within Monte-Carlo error", async () => {
  const ours = pairedBootstrap(BOOT_SYSTEMS, { resamples: BOOT_B, seed: 0 });
  const r = (await ref()).bootstrap;
  // Two independent bootstraps of B replicates each. An empirical q-quantile
  // of B draws has standard error sqrt(q(1-q)/B) / f(x_q); the bootstrap
  // distribution of a mean over 10,570 questions is close to normal, so
  // f(x_q) ≈ φ(z_q) / sd with sd the replicates' standard deviation. The
  // difference of the two estimates has √2 times that error; we allow 5 of
  // those (a false failure has probability below 1e-6 per end) plus 1/n,
  // one step of the lattice an EM mean lives on.
  const phi = Math.exp(-0.5 * 1.959963984540054 ** 2) / Math.sqrt(2 * Math.PI);
  const tol = (sd: number) =>
    5 * Math.SQRT2 * Math.sqrt((0.025 * 0.975) / BOOT_B) * sd / phi + 1 / N;
  const rows: string[] = [];
  const check = (what: string, got: { low: number; high: number }, want: typeof r.systems[0]) => {
    const t = tol(want.sd);
    rows.push(
      `${what}: ours [${got.low.toFixed(5)}, ${got.high.toFixed(5)}] numpy [${
        want.low.toFixed(5)
      }, ${want.high.toFixed(5)}] tol ${t.toExponential(2)}`,
    );
    assert(Math.abs(got.low - want.low) <= t, rows.at(-1));
    assert(Math.abs(got.high - want.high) <= t, rows.at(-1));
    // the tolerance is small against the interval itself
    assert(t < 0.1 * (want.high - want.low), `${what}: tolerance ${t} too loose`);
  };
  const names = ["EM firstCaps", "EM lastCaps", "F1 firstCaps", "F1 lastCaps"];
  ours.systems.forEach((s, i) => {
    assertEquals(s.mean, mean(BOOT_SYSTEMS[i]));
    check(names[i], s, r.systems[i]);
  });
  BOOT_PAIRS.forEach(([a, b], i) => {
    const d = ours.differences.find((x) => x.a === a && x.b === b)!;
    assertEquals(d.mean, mean(BOOT_SYSTEMS[a]) - mean(BOOT_SYSTEMS[b]));
    check(`${names[a]} - ${names[b]}`, d, r.pairs[i]);
  });
  assertEquals(ours.differences.length, 6);
  assertEquals([ours.resamples, ours.questions], [BOOT_B, N]);
  console.log(rows.join("\n"));
});

Deno.test("stats: paired randomization p on dev is within ±0.01 of a NumPy reference", async () => {
  // Ours: the default 10,000 shuffles, whose p has Monte-Carlo standard error
  // sqrt(p(1-p)/10,000) ≤ 0.0046 at the p ≈ 0.29 of the EM case (0.0008 at
  // the F1 case's p ≈ 0.006); NumPy's 100,000-200,000 shuffles add at most
  // 0.0015, so ±0.01 is over 2 standard errors of the difference at worst.
  const r = (await ref()).randomization;
  RAND_CASES.forEach((c, i) => {
    const ours = pairedRandomization(c.a, c.b); // default: 10,000 shuffles, seed 0
    assertEquals(ours.shuffles, 10000);
    assertEquals(
      ours.meanDifference,
      (() => {
        let t = 0;
        for (let j = 0; j < N; j++) t += c.a[j] - c.b[j];
        return t / N;
      })(),
    );
    console.log(`${c.name}: ours p = ${ours.pValue}, numpy p = ${r[i].p}`);
    assert(
      Math.abs(ours.pValue - r[i].p) <= 0.01,
      `${c.name}: ours ${ours.pValue}, numpy ${r[i].p}`,
    );
  });
  // for EM the exact randomization distribution is McNemar's: the same p up to Monte-Carlo error
  const em = pairedRandomization(SYS.firstCaps.em, SYS.lastCaps.em);
  const exact = mcnemarPaired(SYS.firstCaps.em, SYS.lastCaps.em);
  console.log(
    `EM: randomization p = ${em.pValue}, McNemar (b=${exact.b}, c=${exact.c}) p = ${exact.pValue}`,
  );
  assert(Math.abs(em.pValue - exact.pValue) <= 0.01);
  assert(
    exact.pValue > 0.05 && exact.pValue < 0.95,
    "the close pair must give a p that tests something",
  );
});

Deno.test("stats: with the same generator a pure-Python replica gives the same CIs and the same randomization count", async () => {
  const r = (await ref()).replicate;
  const ours = pairedBootstrap(REPL.systems, { resamples: REPL.resamples, seed: REPL.seed });
  ours.systems.forEach((s, i) => {
    assert(
      Math.abs(s.low - r.systems[i][0]) <= 1e-12 && Math.abs(s.high - r.systems[i][1]) <= 1e-12,
      `system ${i}`,
    );
  });
  ours.differences.forEach((d, i) => {
    assert(
      Math.abs(d.low - r.pairs[i][0]) <= 1e-12 && Math.abs(d.high - r.pairs[i][1]) <= 1e-12,
      `pair ${i}`,
    );
  });
  const p = pairedRandomization(REPL.a, REPL.b, { shuffles: REPL.shuffles, seed: REPL.rseed });
  assertEquals([p.atLeastAsExtreme, p.pValue], [r.randomization.count, r.randomization.p]);
});

// ---------------------------------------------------------------------------
// Edge cases
// ---------------------------------------------------------------------------

Deno.test("stats: identical systems give difference 0, CI [0, 0], randomization p = 1, McNemar p = 1", () => {
  for (const x of [SYS.firstCaps.em, SYS.firstCaps.f1]) {
    const d = pairedBootstrap([x, x.slice()]).differences[0];
    assertEquals([d.mean, d.low, d.high], [0, 0, 0]);
    const p = pairedRandomization(x, x.slice());
    assertEquals([p.meanDifference, p.atLeastAsExtreme, p.pValue], [0, 10000, 1]);
  }
  const m = mcnemarPaired(SYS.lastCaps.em, SYS.lastCaps.em);
  assertEquals([m.b, m.c, m.pValue], [0, 0, 1]);
});

Deno.test("stats: the same seed gives the same numbers; another seed other draws", () => {
  const a = pairedBootstrap([SYS.first.f1.subarray(0, 500)], { resamples: 300, seed: 3 });
  const b = pairedBootstrap([SYS.first.f1.subarray(0, 500)], { resamples: 300, seed: 3 });
  const c = pairedBootstrap([SYS.first.f1.subarray(0, 500)], { resamples: 300, seed: 4 });
  assertEquals(a, b);
  assert(a.systems[0].low !== c.systems[0].low || a.systems[0].high !== c.systems[0].high);
});

Deno.test("stats: percentile is numpy.percentile's linear definition; bad input is a RangeError", () => {
  const v = Float64Array.of(0, 0.1, 0.2, 0.7, 0.9);
  assertEquals(percentile(v, 0), 0);
  assertEquals(percentile(v, 25), 0.1);
  assertEquals(percentile(v, 62.5), 0.44999999999999996); // numpy.percentile(v, 62.5)
  const refused = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      return e instanceof RangeError;
    }
    return false;
  };
  assert(refused(() => pairedBootstrap([[1, 0], [1]])));
  assert(refused(() => pairedBootstrap([[]])));
  assert(refused(() => pairedBootstrap([[1, NaN]])));
  assert(refused(() => pairedBootstrap([[1]], { resamples: 0 })));
  assert(refused(() => pairedRandomization([1, 0], [1, 0], { shuffles: 1.5 })));
  assert(refused(() => mcnemarExact(-1, 3)));
  assert(refused(() => mcnemarPaired([1, 0.5], [1, 0])));
  assert(refused(() => wilsonInterval(3, 2)));
  assert(refused(() => wilsonInterval(1, 0)));
  assert(refused(() => wilsonInterval(1, 2, { alpha: 1 })));
  assert(refused(() => percentile([], 50)));
});

Deno.test("stats: in steps, the resamplings pause every STEP_WORK operations or so and give the same numbers", () => {
  const cols = [SYS.first.f1, SYS.firstCaps.f1, SYS.lastCaps.f1];
  const B = 300;
  const steps = pairedBootstrapSteps(cols, { resamples: B, seed: 5 });
  let pauses = 0;
  let r = steps.next();
  for (; !r.done; r = steps.next()) pauses++;
  // Resampling: ⌈B / ⌊STEP_WORK / (n·4)⌋⌉ pauses; then one per difference and per sort.
  const chunk = Math.floor(STEP_WORK / (N * 4));
  assertEquals(chunk, 6);
  assertEquals(pauses, Math.ceil(B / chunk) + 3);
  assertEquals(r.value, pairedBootstrap(cols, { resamples: B, seed: 5 }));
  assertEquals(
    r.value.systems[1],
    pairedBootstrap([cols[1]], { resamples: B, seed: 5 }).systems[0],
  );
  const R = 999;
  const rs = pairedRandomizationSteps(SYS.firstCaps.em, SYS.lastCaps.em, { shuffles: R });
  let rp = 0;
  let rr = rs.next();
  for (; !rr.done; rr = rs.next()) rp++;
  assertEquals(rp, Math.ceil(R / Math.floor(STEP_WORK / N)));
  assertEquals(rr.value, pairedRandomization(SYS.firstCaps.em, SYS.lastCaps.em, { shuffles: R }));
  // Bad arguments: the same RangeError, at the first step.
  const bad = pairedBootstrapSteps([[1]], { resamples: 0 });
  let threw = false;
  try {
    bad.next();
  } catch (e) {
    threw = e instanceof RangeError;
  }
  assert(threw);
});

Deno.test("stats: sortedSteps sorts past 2^20 values in runs and merges, as the typed-array sort does", () => {
  const m = 3 * (1 << 20) + 12345;
  const g = new Xoshiro128StarStar(9);
  // Few distinct values (as bootstrap means of EM are), and both zeros.
  const v = Float64Array.from({ length: m }, () => {
    const x = g.below(1000);
    return x === 0 ? -0 : x === 1 ? 0 : (x - 500) / 7;
  });
  const steps = sortedSteps(v);
  let pauses = 0;
  let r = steps.next();
  for (; !r.done; r = steps.next()) pauses++;
  assert(pauses >= Math.floor((2 * m) / STEP_WORK), `${pauses} pauses`);
  const want = v.slice().sort();
  assertEquals(r.value.length, m);
  let same = true;
  for (let i = 0; i < m && same; i++) same = Object.is(r.value[i], want[i]);
  assert(same, "sortedSteps differs from Float64Array.prototype.sort");
  const small = Float64Array.of(3, -0, 1, 0, 2);
  assertEquals([...runSteps(sortedSteps(small))].map((x) => Object.is(x, -0) ? "-0" : x), [
    "-0",
    0,
    1,
    2,
    3,
  ]);
});
