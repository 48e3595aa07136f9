/**
 * `metrics/stats/`: the clustered resamplings (`clusters.ts`), the rank
 * intervals (`ranks.ts`), Holm and Benjamini–Hochberg (`multiple.ts`) and
 * the minimum detectable effect (`power.ts`), against NumPy and SciPy
 * (`bench/reference/cluster_stats.py`, one Python process for the whole
 * file), on
 *
 * - a generated clustered fixture: 300 clusters ("paragraphs") of 1 to 8
 *   questions, four systems whose per-question EM shares a per-cluster
 *   difficulty (and, for one pair, a per-cluster advantage), two F1-like
 *   continuous scores, questions in shuffled order; seed 2718;
 * - the bundled dev set: the rule systems of `tests/_rule_systems.ts`,
 *   paragraphs and articles as clusters.
 */
import { assert, assertEquals } from "../_assert.ts";
import {
  benjaminiHochberg,
  bootstrapRanks,
  bootstrapRanksSteps,
  clusterIndex,
  discordantMde,
  f1Score,
  holm,
  metricMaxOverGroundTruths,
  minimumDetectableEffect,
  pairedBootstrap,
  pairedClusterBootstrap,
  pairedClusterBootstrapSteps,
  pairedClusterRandomization,
  pairedClusterRandomizationSteps,
  pairedMde,
  pairedRandomization,
  runSteps,
  tied,
  Xoshiro128StarStar,
} from "../../metrics/mod.ts";
import { DEV_GZ, python } from "../_util.ts";
import { devRuleAnswers } from "../_rule_systems.ts";

// ---------------------------------------------------------------------------
// The clustered fixture
// ---------------------------------------------------------------------------

interface Fixture {
  /** Cluster id per question ("a<article>/p<paragraph>"). */
  readonly ids: string[];
  /** EM of systems A, B (A plus a per-cluster advantage), C, D (weaker, weakest). */
  readonly em: [number[], number[], number[], number[]];
  /** F1-like scores of A and B (1 where EM is 1, else a partial score). */
  readonly f1: [number[], number[]];
}

function clusteredFixture(seed: number): Fixture {
  const g = new Xoshiro128StarStar(seed);
  const u = () => g.nextUint32() / 2 ** 32;
  const clamp = (p: number) => Math.min(1, Math.max(0, p));
  const rows: { id: string; em: number[]; f1: number[] }[] = [];
  for (let c = 0; c < 300; c++) {
    const size = 1 + g.below(8);
    const easy = u(); // the paragraph's difficulty, shared by its questions and systems
    const shift = (u() - 0.5) * 0.5; // B's advantage over A on this paragraph
    const pA = 0.2 + 0.6 * easy;
    const ps = [pA, clamp(pA + shift - 0.02), 0.12 + 0.55 * easy, 0.05 + 0.3 * easy];
    for (let q = 0; q < size; q++) {
      const em = ps.map((p) => (u() < p ? 1 : 0));
      const f1 = [0, 1].map((s) => (em[s] === 1 ? 1 : u() < 0.4 ? 0 : u() * ps[s]));
      rows.push({ id: `a${c % 37}/p${c}`, em, f1 });
    }
  }
  // questions in an arbitrary order: a paragraph's questions are not adjacent
  for (let i = rows.length - 1; i > 0; i--) {
    const j = g.below(i + 1);
    [rows[i], rows[j]] = [rows[j], rows[i]];
  }
  return {
    ids: rows.map((r) => r.id),
    em: [0, 1, 2, 3].map((s) => rows.map((r) => r.em[s])) as Fixture["em"],
    f1: [0, 1].map((s) => rows.map((r) => r.f1[s])) as Fixture["f1"],
  };
}

const FX = clusteredFixture(2718);
const N = FX.ids.length;
const BOOT_B = 20000;
/** Systems of the fixture bootstrap: EM A, B, C, D, F1 A, B. */
const FX_SYSTEMS = [...FX.em, ...FX.f1];
const FX_NAMES = ["EM A", "EM B", "EM C", "EM D", "F1 A", "F1 B"];
const FX_PAIRS: [number, number][] = [[0, 1], [0, 2], [4, 5]];

// ---------------------------------------------------------------------------
// Dev: the rule systems, paragraphs and articles as clusters
// ---------------------------------------------------------------------------

interface DevData {
  readonly f1: Float64Array[];
  readonly paragraph: string[];
  readonly article: string[];
}

async function devData(): Promise<DevData> {
  const { ids, golds, answers } = await devRuleAnswers();
  const text = await new Response(
    (await Deno.open(DEV_GZ)).readable.pipeThrough(new DecompressionStream("gzip")),
  ).text();
  const where = new Map<string, [string, string]>();
  const data = JSON.parse(text) as {
    data: { title: string; paragraphs: { qas: { id: string }[] }[] }[];
  };
  data.data.forEach((art, a) =>
    art.paragraphs.forEach((p, j) => {
      for (const q of p.qas) where.set(q.id, [`${a}/${j}`, art.title]);
    })
  );
  return {
    f1: answers.map((ps) =>
      Float64Array.from(ps, (p, i) => metricMaxOverGroundTruths(f1Score, p, golds[i])!)
    ),
    paragraph: ids.map((id) => where.get(id)![0]),
    article: ids.map((id) => where.get(id)![1]),
  };
}

const DEV = await devData();
const DEV_B = 5000;
/** Dev: F1 of first, firstCaps, lastCaps; pairs (1, 2) (close) and (0, 1) (far). */
const DEV_PAIRS: [number, number][] = [[1, 2], [0, 1]];

// ---------------------------------------------------------------------------
// One Python job for every reference value in this file.
// ---------------------------------------------------------------------------

const REPL_N = 240;
const REPL = {
  systems: [FX.em[0], FX.em[1], FX.em[2], FX.f1[1]].map((x) => x.slice(0, REPL_N)),
  clusters: FX.ids.slice(0, REPL_N),
  resamples: 300,
  seed: 9,
  percentiles: [2.5, 97.5],
  a: FX.f1[0].slice(0, REPL_N),
  b: FX.f1[1].slice(0, REPL_N),
  shuffles: 400,
  rseed: 13,
};
const RAND_CASES = [
  { name: "EM A vs B (paragraphs)", a: FX.em[0], b: FX.em[1], ids: FX.ids, ref: 100000 },
  { name: "F1 A vs B (paragraphs)", a: FX.f1[0], b: FX.f1[1], ids: FX.ids, ref: 100000 },
  {
    name: "EM A vs B (articles)",
    a: FX.em[0],
    b: FX.em[1],
    ids: FX.ids.map((s) => s.split("/")[0]),
    ref: 100000,
  },
  { name: "EM A vs C (paragraphs)", a: FX.em[0], b: FX.em[2], ids: FX.ids, ref: 100000 },
];

/** p-value arrays for Holm and BH: generated, with ties, zeros and ones. */
function pCases(): number[][] {
  const g = new Xoshiro128StarStar(31);
  const u = () => g.nextUint32() / 2 ** 32;
  const out: number[][] = [
    [0.01, 0.04, 0.03, 0.005],
    [1],
    [0],
    [0.5, 0.5, 0.5],
    [1, 1, 0.2, 1],
    [0.02, 0.02, 0.02, 0.5, 0.001, 1, 0],
    [0.049, 0.05, 0.051, 0.2, 0.3, 0.3, 0.9, 1, 1],
  ];
  for (let c = 0; c < 40; c++) {
    const m = 1 + g.below(30);
    // a mix of small p-values (effects), uniform ones (nulls) and repeats
    const ps: number[] = [];
    for (let i = 0; i < m; i++) {
      const r = u();
      ps.push(r < 0.3 ? u() * 0.01 : r < 0.8 ? u() : ps.length ? ps[g.below(ps.length)] : 1);
    }
    out.push(ps);
  }
  return out;
}
const P_CASES = pCases();

const MDE_ROWS: [number, number, number, number][] = [];
for (const n of [1, 50, 1000, 10570, 1_000_000]) {
  for (const sd of [0, 0.05, 0.3, 0.7071]) {
    for (const [alpha, power] of [[0.05, 0.8], [0.01, 0.9], [0.1, 0.5], [0.05, 0.95]]) {
      MDE_ROWS.push([n, sd, alpha, power]);
    }
  }
}
const MDE_SCORES = [
  { a: FX.em[0], b: FX.em[1], alpha: 0.05, power: 0.8 },
  { a: FX.em[0], b: FX.em[3], alpha: 0.01, power: 0.9 },
  { a: FX.f1[0], b: FX.f1[1], alpha: 0.05, power: 0.8 },
  { a: [...DEV.f1[1]], b: [...DEV.f1[2]], alpha: 0.05, power: 0.8 },
];

interface Summary {
  low: number;
  high: number;
  sd: number;
}
interface RankRef {
  first: number;
  low: number;
  high: number;
}
interface RefOut {
  bootstrap: { systems: Summary[]; pairs: Summary[] }[];
  randomization: { count: number; p: number }[];
  ranks: RankRef[];
  replicate: {
    systems: [number, number][];
    pairs: [number, number][];
    ranks: RankRef[];
    randomization: { count: number; p: number };
  };
  holm: number[][];
  bh: number[][];
  mde: number[];
  mde_scores: { mean: number; sd: number; mde: number; rate?: number; mde_disc?: number }[];
}

/** Bootstrap jobs: the fixture (paragraphs), dev by paragraph, dev by article. */
const BOOT_JOBS = [
  { systems: FX_SYSTEMS, clusters: FX.ids, resamples: BOOT_B, seed: 20260101, pairs: FX_PAIRS },
  {
    systems: DEV.f1.map((x) => [...x]),
    clusters: DEV.paragraph,
    resamples: DEV_B,
    seed: 20260102,
    pairs: DEV_PAIRS,
  },
  {
    systems: DEV.f1.map((x) => [...x]),
    clusters: DEV.article,
    resamples: DEV_B,
    seed: 20260103,
    pairs: DEV_PAIRS,
  },
].map((j) => ({ ...j, percentiles: [2.5, 97.5] }));

let refPromise: Promise<RefOut> | undefined;
/** The Python answers, computed once. */
function ref(): Promise<RefOut> {
  refPromise ??= python(
    ["bench/reference/cluster_stats.py"],
    JSON.stringify({
      bootstrap: BOOT_JOBS,
      randomization: RAND_CASES.map((c, i) => ({
        a: c.a,
        b: c.b,
        clusters: c.ids,
        shuffles: c.ref,
        seed: 200 + i,
      })),
      ranks: {
        systems: FX.em,
        clusters: FX.ids,
        resamples: BOOT_B,
        seed: 20260104,
        percentiles: [2.5, 97.5],
      },
      replicate: REPL,
      holm: P_CASES,
      bh: P_CASES,
      mde: MDE_ROWS,
      mde_scores: MDE_SCORES,
    }),
  ).then((r) => JSON.parse(r.stdout) as RefOut);
  return refPromise;
}

/** The normal density at z₀.₉₇₅ (= at z₀.₀₂₅). */
const PHI = Math.exp(-0.5 * 1.959963984540054 ** 2) / Math.sqrt(2 * Math.PI);

/**
 * Tolerance between two independent bootstraps' 2.5 % (or 97.5 %)
 * percentiles, B₁ and B₂ replicates: an empirical q-quantile of B draws has
 * standard error √(q(1−q)/B) / f(x_q), with f(x_q) ≈ φ(z_q)/sd for a
 * near-normal replicate distribution of standard deviation sd; the
 * difference of the two has √(1/B₁ + 1/B₂) in place of √(1/B). Five of
 * those (a false failure has probability below 1e-6 per end), plus one step
 * of the lattice the replicate means live on (1/n), the replicates being
 * discrete.
 */
const mcTol = (sd: number, b1: number, b2: number, n: number) =>
  5 * Math.sqrt(0.025 * 0.975 * (1 / b1 + 1 / b2)) * sd / PHI + 1 / n;

const mean = (x: ArrayLike<number>) => {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += x[i];
  return s / x.length;
};

function checkAgainstNumpy(
  label: string,
  ours: ReturnType<typeof pairedClusterBootstrap>,
  want: RefOut["bootstrap"][number],
  names: string[],
  pairs: [number, number][],
  refB: number,
): void {
  const n = ours.questions;
  const rows: string[] = [];
  const check = (what: string, got: { low: number; high: number }, w: Summary) => {
    const t = mcTol(w.sd, ours.resamples, refB, n);
    rows.push(
      `${label} ${what}: ours [${got.low.toFixed(5)}, ${got.high.toFixed(5)}] numpy [${
        w.low.toFixed(5)
      }, ${w.high.toFixed(5)}] tol ${t.toExponential(2)}`,
    );
    assert(Math.abs(got.low - w.low) <= t, rows.at(-1));
    assert(Math.abs(got.high - w.high) <= t, rows.at(-1));
    assert(t < 0.12 * (w.high - w.low), `${what}: tolerance ${t} too loose`);
  };
  ours.systems.forEach((s, i) => check(names[i], s, want.systems[i]));
  pairs.forEach(([a, b], i) => {
    const d = ours.differences.find((x) => x.a === a && x.b === b)!;
    check(`${names[a]} − ${names[b]}`, d, want.pairs[i]);
  });
  console.log(rows.join("\n"));
}

// ---------------------------------------------------------------------------
// The cluster bootstrap
// ---------------------------------------------------------------------------

Deno.test("cluster stats: cluster bootstrap CIs on the clustered fixture match a NumPy cluster bootstrap (B = 20,000) within Monte-Carlo error", async () => {
  const ours = pairedClusterBootstrap(FX_SYSTEMS, FX.ids, { resamples: BOOT_B, seed: 0 });
  assertEquals([ours.questions, ours.clusters, ours.resamples], [N, 300, BOOT_B]);
  ours.systems.forEach((s, i) => assertEquals(s.mean, mean(FX_SYSTEMS[i])));
  assertEquals(ours.differences.length, 15);
  checkAgainstNumpy("fixture", ours, (await ref()).bootstrap[0], FX_NAMES, FX_PAIRS, BOOT_B);
});

Deno.test("cluster stats: on dev, paragraph and article cluster bootstraps match NumPy (B = 5,000) within Monte-Carlo error", async () => {
  const r = await ref();
  const names = ["F1 first", "F1 firstCaps", "F1 lastCaps"];
  const para = pairedClusterBootstrap(DEV.f1, DEV.paragraph, { resamples: DEV_B, seed: 1 });
  const art = pairedClusterBootstrap(DEV.f1, DEV.article, { resamples: DEV_B, seed: 2 });
  assertEquals([para.questions, para.clusters, art.clusters], [10570, 2067, 48]);
  checkAgainstNumpy("dev/paragraphs", para, r.bootstrap[1], names, DEV_PAIRS, DEV_B);
  checkAgainstNumpy("dev/articles", art, r.bootstrap[2], names, DEV_PAIRS, DEV_B);
});

/**
 * The design effect of clustering for the mean of `x`: the linearized
 * cluster variance over the independent one, Σ_c (S_c − m_c·x̄)² / Σᵢ (xᵢ − x̄)²
 * (S_c the cluster's sum, m_c its size). Above 1 when the questions of a
 * cluster are positively correlated; √deff is the expected ratio of the
 * clustered interval's width to the per-question one's.
 */
function designEffect(x: ArrayLike<number>, ids: readonly string[]): number {
  const mu = mean(x);
  const ix = clusterIndex(ids);
  const s = new Float64Array(ix.count);
  let within = 0;
  for (let i = 0; i < x.length; i++) {
    s[ix.of[i]] += x[i] - mu;
    within += (x[i] - mu) ** 2;
  }
  let between = 0;
  for (const v of s) between += v * v;
  return between / within;
}

Deno.test("cluster stats: on positively correlated clusters the clustered interval is wider than the per-question one, by about √(design effect)", () => {
  const width = (iv: { low: number; high: number }) => iv.high - iv.low;
  const rows: string[] = [];
  let wider = 0;
  const compare = (label: string, cols: ArrayLike<number>[], ids: string[], B: number) => {
    const flat = pairedBootstrap(cols, { resamples: B, seed: 3 });
    const clus = pairedClusterBootstrap(cols, ids, { resamples: B, seed: 3 });
    // The widths are percentile ranges of B replicates: the ratio of two has a
    // relative standard error near 1 % at B = 20,000, 2 % at B = 5,000; and the
    // replicate distributions are not exactly normal nor the linearization
    // exact (a bias of a few %, 2 % on the fixture); so 6 % and 8 %.
    const rel = B >= 20000 ? 0.06 : 0.08;
    const what = [
      ...cols.map((x, i) => [flat.systems[i], clus.systems[i], `system ${i}`, x] as const),
      ...flat.differences.map((d, i) =>
        [
          d,
          clus.differences[i],
          `diff ${d.a}-${d.b}`,
          Array.from(cols[d.a], (v, j) => v - cols[d.b][j]),
        ] as const
      ),
    ];
    for (const [f, c, name, x] of what) {
      const ratio = width(c) / width(f);
      const expect = Math.sqrt(designEffect(x, ids));
      rows.push(
        `${label} ${name}: width ratio clustered/per-question ${ratio.toFixed(3)}, √deff ${
          expect.toFixed(3)
        }`,
      );
      // Positively correlated clusters (deff ≥ 1.2): wider, clearly.
      if (expect ** 2 >= 1.2) {
        assert(ratio > 1.05, rows.at(-1));
        wider++;
      }
      // And by about √deff.
      assert(Math.abs(ratio - expect) <= rel * expect, rows.at(-1));
    }
  };
  // The fixture: a difficulty shared by a paragraph's questions (all systems)
  // and a per-paragraph advantage of B over A (about 4.4 questions a paragraph).
  compare("fixture EM A, B, C", [FX.em[0], FX.em[1], FX.em[2]], FX.ids, BOOT_B);
  compare("fixture F1 A, B", [FX.f1[0], FX.f1[1]], FX.ids, BOOT_B);
  // dev: questions about one paragraph (article) are easy or hard together
  compare("dev F1 (paragraphs)", [DEV.f1[1], DEV.f1[2]], DEV.paragraph, DEV_B);
  compare("dev F1 (articles)", [DEV.f1[1], DEV.f1[2]], DEV.article, DEV_B);
  console.log(rows.join("\n"));
  assert(wider >= 6, `only ${wider} positively correlated cases`);
});

Deno.test("cluster stats: singleton clusters give the per-question bootstrap, randomization and ranks exactly", () => {
  const cols = [FX.em[0], FX.f1[0], FX.f1[1]];
  const n = N;
  // any distinct ids: cluster i is question i by first appearance
  const g = new Xoshiro128StarStar(77);
  const idSets: (string | number)[][] = [
    Array.from({ length: n }, (_, i) => i),
    Array.from({ length: n }, (_, i) => `q${n - i}`),
    Array.from({ length: n }, (_, i) => (i % 2 ? `${i}` : i + 0.5 + g.below(3) * n)),
  ];
  for (const ids of idSets) {
    for (const seed of [0, 5, 2n ** 63n]) {
      const { clusters, ...rest } = pairedClusterBootstrap(cols, ids, { resamples: 400, seed });
      assertEquals(clusters, n);
      assertEquals(rest, pairedBootstrap(cols, { resamples: 400, seed }));
      const { clusters: c2, ...rand } = pairedClusterRandomization(FX.f1[0], FX.f1[1], ids, {
        shuffles: 500,
        seed,
      });
      assertEquals(c2, n);
      assertEquals(rand, pairedRandomization(FX.f1[0], FX.f1[1], { shuffles: 500, seed }));
      assertEquals(
        bootstrapRanks(FX.em, { clusters: ids, resamples: 300, seed }),
        bootstrapRanks(FX.em, { resamples: 300, seed }),
      );
    }
  }
  // the per-question bootstrap's replicates reach the rank intervals unchanged:
  // a rank interval of two systems is [1, 1] exactly when the difference interval excludes 0
  const two = [FX.em[0], FX.em[3]];
  const d = pairedBootstrap(two, { resamples: 1000 }).differences[0];
  const rk = bootstrapRanks(two, { resamples: 1000 });
  assert(d.low > 0 && rk.systems[0].high === 1 && rk.systems[1].low === 2);
});

Deno.test("cluster stats: with the same generator a pure-Python replica gives the same cluster CIs, randomization count and rank intervals", async () => {
  const r = (await ref()).replicate;
  const opts = { resamples: REPL.resamples, seed: REPL.seed };
  const ours = pairedClusterBootstrap(REPL.systems, REPL.clusters, opts);
  assert(ours.clusters > 50 && ours.clusters < REPL_N, `${ours.clusters} clusters`);
  ours.systems.forEach((s, i) => {
    assert(
      Math.abs(s.low - r.systems[i][0]) <= 1e-12 && Math.abs(s.high - r.systems[i][1]) <= 1e-12,
      `system ${i}: ours [${s.low}, ${s.high}], python ${r.systems[i]}`,
    );
  });
  ours.differences.forEach((d, i) => {
    assert(
      Math.abs(d.low - r.pairs[i][0]) <= 1e-12 && Math.abs(d.high - r.pairs[i][1]) <= 1e-12,
      `pair ${i}: ours [${d.low}, ${d.high}], python ${r.pairs[i]}`,
    );
  });
  const p = pairedClusterRandomization(REPL.a, REPL.b, REPL.clusters, {
    shuffles: REPL.shuffles,
    seed: REPL.rseed,
  });
  assertEquals([p.atLeastAsExtreme, p.pValue], [r.randomization.count, r.randomization.p]);
  assert(p.pValue > 0.01 && p.pValue < 0.99, `p ${p.pValue} tests nothing`);
  const rk = bootstrapRanks(REPL.systems, { ...opts, clusters: REPL.clusters });
  assertEquals(
    rk.systems.map((s) => ({ first: s.first, low: s.low, high: s.high })),
    r.ranks,
  );
});

// ---------------------------------------------------------------------------
// Clustered randomization
// ---------------------------------------------------------------------------

Deno.test("cluster stats: clustered randomization p is within Monte-Carlo error of a NumPy reference", async () => {
  const r = (await ref()).randomization;
  RAND_CASES.forEach((c, i) => {
    const ours = pairedClusterRandomization(c.a, c.b, c.ids); // 10,000 shuffles, seed 0
    assertEquals(ours.meanDifference, mean(c.a.map((x, j) => x - c.b[j])));
    // Two independent Monte-Carlo p's, R₁ = 10,000 and R₂ = 100,000 shuffles:
    // the difference has standard error √(p(1−p)(1/R₁ + 1/R₂)) ≤ 0.0053; we
    // allow 5 of those plus 2/R₁ (the +1's of the two estimates).
    const pr = r[i].p;
    const tol = 5 * Math.sqrt(pr * (1 - pr) * (1 / 10000 + 1 / c.ref)) + 2 / 10000;
    const flat = pairedRandomization(c.a, c.b).pValue;
    console.log(
      `${c.name}: clustered p ours ${ours.pValue} numpy ${pr} (tol ${
        tol.toFixed(4)
      }); per-question p ${flat}; ${ours.clusters} clusters`,
    );
    assert(Math.abs(ours.pValue - pr) <= tol, c.name);
  });
  // the paragraph-level advantage of B makes A vs B look surer per question than it is
  const flat = pairedRandomization(FX.em[0], FX.em[1]).pValue;
  const clus = pairedClusterRandomization(FX.em[0], FX.em[1], FX.ids).pValue;
  assert(clus > flat, `clustered ${clus} <= per-question ${flat}`);
  // identical systems: p = 1, whatever the clusters
  const same = pairedClusterRandomization(FX.f1[0], FX.f1[0].slice(), FX.ids, { shuffles: 99 });
  assertEquals([same.meanDifference, same.atLeastAsExtreme, same.pValue], [0, 99, 1]);
});

// ---------------------------------------------------------------------------
// Rank intervals
// ---------------------------------------------------------------------------

Deno.test("cluster stats: bootstrap rank intervals match NumPy's (first shares within Monte-Carlo error, rank ends equal)", async () => {
  const r = (await ref()).ranks;
  const ours = bootstrapRanks(FX.em, { clusters: FX.ids, resamples: BOOT_B, seed: 0 });
  assertEquals(
    ours.systems.map((s) => s.rank),
    [1, 2, 3, 4].map((_, i) => 1 + FX.em.filter((x) => mean(x) > mean(FX.em[i])).length),
  );
  ours.systems.forEach((s, i) => {
    // two independent shares of B replicates: standard error √(f(1−f)·2/B) ≤ 0.005
    const f = r[i].first;
    const tol = 5 * Math.sqrt(f * (1 - f) * 2 / BOOT_B) + 1e-12;
    console.log(
      `EM ${"ABCD"[i]}: mean ${
        s.mean.toFixed(4)
      } rank ${s.rank} [${s.low}, ${s.high}] first ${s.first} | numpy [${r[i].low}, ${
        r[i].high
      }] first ${f}`,
    );
    assert(Math.abs(s.first - f) <= tol, `system ${i}: first ${s.first} vs ${f}`);
    assertEquals([s.low, s.high], [r[i].low, r[i].high]);
  });
  // A and B trade first place; C and D never reach it
  assert(ours.systems[0].first > 0.05 && ours.systems[1].first > 0.05);
  assertEquals([ours.systems[2].first, ours.systems[3].first], [0, 0]);
  // clustering widens the rank uncertainty of the close pair
  const flat = bootstrapRanks(FX.em, { resamples: BOOT_B, seed: 0 });
  const spread = (x: typeof flat) => Math.abs(x.systems[0].first - 0.5);
  assert(spread(ours) < spread(flat), "clustered first shares must be closer to a coin flip");
});

Deno.test("cluster stats: rank ties share the better rank; the ends are the lower and higher order statistics", () => {
  const a = FX.em[0];
  // two copies of A tie in every replicate: both rank 1 always (competition ranking)
  const r = bootstrapRanks([FX.em[3], a, a.slice(), FX.em[2]], { resamples: 500, seed: 4 });
  assertEquals(r.systems.map((s) => [s.rank, s.low, s.high, s.first]), [
    [4, 4, 4, 0],
    [1, 1, 1, 1],
    [1, 1, 1, 1],
    [3, 3, 3, 0],
  ]);
  // by hand: B = 1 replicate of 1 question, the ranks of [0.5, 0.5, 0.2]
  const one = bootstrapRanks([[0.5], [0.5], [0.2]], { resamples: 1 });
  assertEquals(one.systems.map((s) => [s.rank, s.low, s.high, s.first]), [
    [1, 1, 1, 1],
    [1, 1, 1, 1],
    [3, 3, 3, 0],
  ]);
  // Two systems: x ranks 1 in a share `first` of the replicates (ties
  // included) and 2 in the rest, so its sorted replicate ranks are
  // first·B ones, then twos: the low end (order statistic ⌊h⌋) and the high
  // end (⌈h⌉), h = (B − 1)·p/100, follow by hand.
  const x = FX.em[0].slice(0, 40), y = FX.em[1].slice(0, 40);
  for (const pct of [[2.5, 97.5], [40, 60], [10, 20], [80, 95]] as [number, number][]) {
    const B = 4001;
    const r2 = bootstrapRanks([x, y], { resamples: B, seed: 1, percentiles: pct });
    const ones = Math.round(r2.systems[0].first * B);
    const byHand = (j: number) => (j < ones ? 1 : 2);
    assertEquals(
      [r2.systems[0].low, r2.systems[0].high],
      [byHand(Math.floor((B - 1) * pct[0] / 100)), byHand(Math.ceil((B - 1) * pct[1] / 100))],
      `percentiles ${pct}: ${ones} of ${B} replicates rank x first`,
    );
    assert(ones > 0.15 * B && ones < 0.85 * B, `${ones}: both ranks must be common`);
  }
  // in steps: the same result
  const cols = [FX.em[0], FX.em[1], FX.em[2]];
  const steps = bootstrapRanksSteps(cols, { clusters: FX.ids, resamples: 3000, seed: 8 });
  let pauses = 0;
  let res = steps.next();
  for (; !res.done; res = steps.next()) pauses++;
  assert(pauses > 1, `${pauses} pauses`);
  assertEquals(res.value, bootstrapRanks(cols, { clusters: FX.ids, resamples: 3000, seed: 8 }));
});

// ---------------------------------------------------------------------------
// Holm and Benjamini–Hochberg
// ---------------------------------------------------------------------------

Deno.test("cluster stats: Holm equals the closed form and a hand-computed case; BH equals scipy.stats.false_discovery_control", async () => {
  const r = await ref();
  P_CASES.forEach((ps, i) => {
    assertEquals(holm(ps), r.holm[i], `holm case ${i}: ${ps}`);
    assertEquals(benjaminiHochberg(ps), r.bh[i], `bh case ${i}: ${ps}`);
  });
  // Holm by hand, m = 5, with a tie and a 1:
  //   sorted 0.001, 0.01, 0.01, 0.04, 1 → ×5, ×4, ×3, ×2, ×1 = 0.005, 0.04, 0.03, 0.08, 1
  //   running max: 0.005, 0.04, 0.04, 0.08, 1
  assertEquals(holm([0.01, 1, 0.001, 0.04, 0.01]), [0.04, 1, 0.005, 0.08, 0.04]);
  // BH by hand: ×5/1, ×5/2, ×5/3, ×5/4, ×5/5 = 0.005, 0.025, 0.0166…, 0.05, 1
  //   running min from the top: 0.005, 0.0166…, 0.0166…, 0.05, 1
  const bh = benjaminiHochberg([0.01, 1, 0.001, 0.04, 0.01]);
  assertEquals([bh[1], bh[2], bh[3]], [1, 0.005, 0.05]);
  assert(bh[0] === bh[4] && Math.abs(bh[0] - 0.05 / 3) < 1e-17);
  assertEquals([holm([]), benjaminiHochberg([])], [[], []]);
});

Deno.test("cluster stats: adjusted p-values keep the order, never fall below p, are monotone in p and capped at 1", () => {
  for (const ps of P_CASES) {
    for (const adj of [holm(ps), benjaminiHochberg(ps)]) {
      assertEquals(adj.length, ps.length);
      ps.forEach((p, i) => {
        assert(adj[i] >= p && adj[i] <= 1, `${p} -> ${adj[i]}`);
        ps.forEach((q, j) => assert(!(p < q) || adj[i] <= adj[j], `monotone: ${p}, ${q}`));
        ps.forEach((q, j) => assert(p !== q || adj[i] === adj[j], `tie: ${p}`));
      });
    }
    // a permutation of the input permutes the output
    const rev = [...ps].reverse();
    assertEquals(holm(rev), holm(ps).reverse());
    assertEquals(benjaminiHochberg(rev), benjaminiHochberg(ps).reverse());
    // Holm is never below BH (FWER is stricter than FDR)
    const h = holm(ps), b = benjaminiHochberg(ps);
    h.forEach((v, i) => assert(v >= b[i], `holm ${v} < bh ${b[i]}`));
  }
  for (const bad of [[0.5, -0.1], [NaN], [1.0000001]]) {
    for (const f of [holm, benjaminiHochberg]) {
      let threw = false;
      try {
        f(bad);
      } catch (e) {
        threw = e instanceof RangeError;
      }
      assert(threw, `${bad} must be refused`);
    }
  }
});

// ---------------------------------------------------------------------------
// Minimum detectable effect and ties
// ---------------------------------------------------------------------------

Deno.test("cluster stats: the MDE equals (norm.isf(α/2) + norm.ppf(power))·sd/√n from SciPy; for EM the discordance formula agrees", async () => {
  const r = await ref();
  // normalQuantile agrees with SciPy's ndtri to a few units in the last place,
  // so the MDE does to a relative 1e-14
  MDE_ROWS.forEach(([n, sd, alpha, power], i) => {
    const ours = minimumDetectableEffect(n, sd, { alpha, power });
    const want = r.mde[i];
    assert(
      Math.abs(ours - want) <= 1e-14 * Math.max(1e-300, want) || ours === want,
      `n=${n} sd=${sd} alpha=${alpha} power=${power}: ours ${ours}, scipy ${want}`,
    );
  });
  assert(Math.abs(minimumDetectableEffect(1, 1) - 2.801585218) < 1e-9);
  MDE_SCORES.forEach((c, i) => {
    const ours = pairedMde(c.a, c.b, { alpha: c.alpha, power: c.power });
    const w = r.mde_scores[i];
    const near = (x: number, y: number, tol: number) => Math.abs(x - y) <= tol * Math.abs(y);
    assert(near(ours.meanDifference, w.mean, 1e-12), `case ${i} mean`);
    assert(near(ours.sd, w.sd, 1e-12), `case ${i}: sd ${ours.sd} vs numpy.std ${w.sd}`);
    assert(near(ours.mde, w.mde, 1e-12), `case ${i}: mde ${ours.mde} vs ${w.mde}`);
    assertEquals(ours.discordanceRate === undefined, w.rate === undefined, `case ${i} binary`);
    if (w.rate !== undefined) {
      assertEquals(ours.discordanceRate, w.rate);
      assert(near(ours.discordantMde!, w.mde_disc!, 1e-12), `case ${i} discordant mde`);
      // the two formulas are one variance: equal to rounding
      assert(near(ours.discordantMde!, ours.mde, 1e-12));
    }
    console.log(
      `MDE case ${i}: n ${ours.questions} δ ${ours.meanDifference.toFixed(4)} sd ${
        ours.sd.toFixed(4)
      } MDE ${ours.mde.toFixed(4)}${
        ours.discordanceRate === undefined ? "" : ` p_disc ${ours.discordanceRate.toFixed(4)}`
      }`,
    );
  });
  // discordant MDE by hand: n = 400, b = 30, c = 10 → p_disc = 0.1, δ = 0.05, sd² = 0.0975
  assert(Math.abs(discordantMde(400, 0.1, 0.05) - 2.801585218 * Math.sqrt(0.0975) / 20) < 1e-9);
  for (
    const f of [
      () => minimumDetectableEffect(0, 1),
      () => minimumDetectableEffect(10, -1),
      () => minimumDetectableEffect(10, 1, { alpha: 0 }),
      () => minimumDetectableEffect(10, 1, { power: 1 }),
      () => discordantMde(10, 0.1, 0.2),
      () => discordantMde(10, 1.5, 0),
    ]
  ) {
    let threw = false;
    try {
      f();
    } catch (e) {
      threw = e instanceof RangeError;
    }
    assert(threw, String(f));
  }
});

Deno.test("cluster stats: tied is true exactly when the difference interval holds 0", () => {
  const flat = pairedBootstrap([FX.em[0], FX.em[1], FX.em[3]], { resamples: 2000 });
  const clus = pairedClusterBootstrap([FX.em[0], FX.em[1], FX.em[3]], FX.ids, {
    resamples: 2000,
  });
  for (const d of [...flat.differences, ...clus.differences]) {
    assertEquals(tied(d), d.low <= 0 && d.high >= 0);
  }
  // A vs D: a clear difference either way; A vs B: a tie once the paragraphs count
  assertEquals([tied(flat.differences[1]), tied(clus.differences[1])], [false, false]);
  assertEquals(tied(clus.differences[0]), true);
  console.log(
    `EM A − B: per-question [${flat.differences[0].low.toFixed(4)}, ${
      flat.differences[0].high.toFixed(4)
    }], clustered [${clus.differences[0].low.toFixed(4)}, ${clus.differences[0].high.toFixed(4)}]`,
  );
  assertEquals([tied({ low: 0, high: 0 }), tied({ low: -1e-9, high: -1e-12 })], [true, false]);
  let threw = false;
  try {
    tied({ low: 1, high: 0 });
  } catch (e) {
    threw = e instanceof RangeError;
  }
  assert(threw);
});

// ---------------------------------------------------------------------------
// Input checks, steps, order
// ---------------------------------------------------------------------------

Deno.test("cluster stats: the stepped forms give the same numbers; bad input is a RangeError at the first step", () => {
  const cols = [FX.em[0], FX.f1[0], FX.f1[1]];
  const steps = pairedClusterBootstrapSteps(cols, FX.ids, { resamples: 4000, seed: 6 });
  let pauses = 0;
  let r = steps.next();
  for (; !r.done; r = steps.next()) pauses++;
  assert(pauses > 1);
  assertEquals(r.value, pairedClusterBootstrap(cols, FX.ids, { resamples: 4000, seed: 6 }));
  const rs = pairedClusterRandomizationSteps(FX.f1[0], FX.f1[1], FX.ids, { shuffles: 5000 });
  let rp = 0;
  let rr = rs.next();
  for (; !rr.done; rr = rs.next()) rp++;
  assert(rp > 1);
  assertEquals(
    rr.value,
    pairedClusterRandomization(FX.f1[0], FX.f1[1], FX.ids, { shuffles: 5000 }),
  );
  const refused = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      return e instanceof RangeError;
    }
    return false;
  };
  assert(refused(() => pairedClusterBootstrapSteps([[1, 0]], ["a"]).next()));
  assert(refused(() => pairedClusterBootstrap([[1, 0]], ["a", null as unknown as string])));
  assert(refused(() => pairedClusterBootstrap([[1, 0]], ["a", "b"], { resamples: 0 })));
  assert(refused(() => pairedClusterBootstrap([[1, NaN]], ["a", "b"])));
  assert(refused(() => pairedClusterRandomization([1, 0], [1], ["a", "b"])));
  assert(refused(() => pairedClusterRandomization([1, 0], [1, 1], ["a", "b"], { shuffles: 0 })));
  assert(refused(() => bootstrapRanks([[1, 0], [0, 1]], { clusters: ["a"] })));
  assert(refused(() => bootstrapRanks([[1, 0], [0, 1]], { percentiles: [2.5, 101] })));
});

Deno.test("cluster stats: clusters are numbered by first appearance; regrouping questions within clusters keeps 0/1 results", () => {
  const ix = clusterIndex(FX.ids);
  assertEquals(ix.count, 300);
  assertEquals(ix.of[0], 0);
  assertEquals([...ix.sizes].reduce((s, x) => s + x, 0), N);
  // Moving every question next to the first question of its cluster changes
  // neither the cluster numbers nor (for 0/1 scores, whose sums are exact)
  // the cluster sums, so the results stay the same to the bit.
  const order = Array.from({ length: N }, (_, i) => i).sort((i, j) => ix.of[i] - ix.of[j] || i - j);
  const pick = <T>(xs: readonly T[]) => order.map((i) => xs[i]);
  const opts = { resamples: 500, seed: 12 };
  assertEquals(
    pairedClusterBootstrap([pick(FX.em[0]), pick(FX.em[1])], pick(FX.ids), opts),
    pairedClusterBootstrap([FX.em[0], FX.em[1]], FX.ids, opts),
  );
  assertEquals(
    pairedClusterRandomization(pick(FX.em[0]), pick(FX.em[2]), pick(FX.ids), { shuffles: 500 }),
    pairedClusterRandomization(FX.em[0], FX.em[2], FX.ids, { shuffles: 500 }),
  );
  // and one cluster holding everything: every resample is the sample itself
  const one = pairedClusterBootstrap([FX.em[0]], FX.ids.map(() => "all"), { resamples: 50 });
  assertEquals([one.systems[0].low, one.systems[0].high], [mean(FX.em[0]), mean(FX.em[0])]);
  assertEquals(
    runSteps(pairedClusterRandomizationSteps([1, 1], [0, 0], ["x", "x"], { shuffles: 9 })).pValue,
    1,
  );
});
