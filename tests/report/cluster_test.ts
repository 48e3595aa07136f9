/**
 * `report`'s clustered statistics, power, ties, multiple comparisons, rank
 * intervals and `--latex`, on a SQuAD v1.1 set of 12 questions in 2
 * articles and 5 paragraphs, three systems written as prediction files (no
 * encoder runs): every clustered number in report.json equals the
 * `metrics/stats` function called directly on per-question EM/F1 worked
 * out by hand and on cluster ids written by hand (an independent path);
 * with `--cluster question` the clustered numbers equal the per-question
 * ones; Holm/BH equal the functions on the p-values; `--latex` writes a
 * `report.tex` whose rows hold the numbers; a bad `--cluster` is one line,
 * exit 2, nothing written.
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals, assertStringIncludes } from "../_assert.ts";
import { listDir, runStage } from "../_util.ts";
import {
  benjaminiHochberg,
  bootstrapRanks,
  holm,
  pairedBootstrap,
  pairedClusterBootstrap,
  pairedClusterRandomization,
  pairedMde,
  pairedRandomization,
  tied,
} from "../../metrics/stats/mod.ts";
import { type DatasetReport, report, type ReportJson } from "../../report/mod.ts";

const TMP = await Deno.makeTempDir({ prefix: "phraseval-report-cluster-" });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(TMP, { recursive: true });
  } catch { /* gone */ }
});
const OPTS = { resamples: 400, shuffles: 999, seed: 3 };

/** Article, then paragraph sizes: A0 has paragraphs of 3 and 2 questions, A1 of 2, 3 and 2. */
const LAYOUT = [[3, 2], [2, 3, 2]];
/** Per question: its paragraph and article, by hand. */
const PARAGRAPH = ["p0", "p0", "p0", "p1", "p1", "p2", "p2", "p3", "p3", "p3", "p4", "p4"];
const ARTICLE = [0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1];
/**
 * Each system's answer to the 12 questions: `e` the gold answer (EM 1, F1
 * 1), `p` its last two of three words (EM 0, F1 2·1·⅔/(1 + ⅔) = 0.8), `w`
 * a word not in it (EM 0, F1 0).
 */
const ANSWERS: Record<string, string> = {
  A: "eeepeeeepeew",
  B: "eewwpepewwpe",
  C: "wepwwpeewwww",
};
const NAMES = Object.keys(ANSWERS);
const EM = NAMES.map((n) => Float64Array.from(ANSWERS[n], (c) => c === "e" ? 1 : 0));
const F1 = NAMES.map((n) =>
  Float64Array.from(ANSWERS[n], (c) => c === "e" ? 1 : c === "p" ? (2 * (2 / 3)) / (1 + 2 / 3) : 0)
);

const DATA = `${TMP}/d.json`;
{
  let q = 0;
  const data = LAYOUT.map((paras, a) => ({
    title: `Article ${a}`,
    paragraphs: paras.map((size) => ({
      context: "Some words about the topic.",
      qas: Array.from({ length: size }, () => {
        q++;
        return {
          id: `q${q}`,
          question: `What is thing ${q}?`,
          answers: [{ text: `alpha${q} beta gamma`, answer_start: 0 }],
        };
      }),
    })),
  }));
  await Deno.writeTextFile(DATA, JSON.stringify({ version: "1.1", data }));
  for (const n of NAMES) {
    const preds: Record<string, string> = {};
    [...ANSWERS[n]].forEach((c, i) => {
      preds[`q${i + 1}`] = c === "e"
        ? `alpha${i + 1} beta gamma`
        : c === "p"
        ? "beta gamma"
        : "zeta";
    });
    await Deno.writeTextFile(`${TMP}/${n}.json`, JSON.stringify(preds));
  }
}
const INPUTS = NAMES.map((n) => `${n}=${TMP}/${n}.json`);

const readJson = (p: string) => JSON.parse(Deno.readTextFileSync(p)) as ReportJson;

/** The report of the three systems (baseline A) with `cluster`, in process. */
async function reportWith(name: string, cluster?: "article" | "paragraph" | "question") {
  const out = `${TMP}/${name}`;
  await Effect.runPromise(report({ inputs: INPUTS, data: DATA, out, ...OPTS, cluster }));
  return readJson(`${out}/report.json`).datasets[0];
}

/**
 * Checks every clustered number of `ds` against the `metrics/stats`
 * functions on the hand-made vectors and the cluster ids `ids`.
 */
function checkClustered(ds: DatasetReport, ids: readonly (string | number)[]) {
  const o = { resamples: OPTS.resamples, seed: OPTS.seed };
  const r = { shuffles: OPTS.shuffles, seed: OPTS.seed };
  for (const [metric, cols] of [["em", EM], ["f1", F1]] as const) {
    const b = pairedClusterBootstrap(cols, ids, o);
    assertEquals(b.clusters, ds.cluster.clusters);
    for (let s = 0; s < 3; s++) {
      const c = ds.systems[s].cluster[metric]!;
      assertEquals([c.low, c.high], [100 * b.systems[s].low, 100 * b.systems[s].high]);
    }
    const clusterP: number[] = [];
    const questionP: number[] = [];
    for (const [k, s] of [[0, 1], [1, 2]] as const) {
      const d = ds.comparisons[k][metric]!;
      const cd = pairedClusterBootstrap([cols[s], cols[0]], ids, o).differences[0];
      const cp = pairedClusterRandomization(cols[s], cols[0], ids, r);
      assertEquals(d.cluster.by, ds.cluster.by);
      assertEquals(d.cluster.clusters, ds.cluster.clusters);
      assertEquals([d.cluster.low, d.cluster.high], [100 * cd.low, 100 * cd.high]);
      assertEquals(d.cluster.randomization_p, cp.pValue);
      assertEquals(d.tied, tied(cd));
      const m = pairedMde(cols[s], cols[0]);
      assertEquals(d.mde, 100 * m.mde);
      if (metric === "em") {
        assertEquals(d.mde_discordant, 100 * m.discordantMde!);
        assertEquals(d.discordance_rate, 100 * m.discordanceRate!);
      } else {
        assertEquals([d.mde_discordant, d.discordance_rate], [undefined, undefined]);
      }
      // The per-question numbers stay those of the per-question functions.
      const qd = pairedBootstrap([cols[s], cols[0]], o).differences[0];
      assertEquals([d.low, d.high], [100 * qd.low, 100 * qd.high]);
      assertEquals(d.randomization_p, pairedRandomization(cols[s], cols[0], r).pValue);
      clusterP.push(d.cluster.randomization_p);
      questionP.push(d.randomization_p);
    }
    // Holm and BH over the two comparisons with the baseline, on this metric.
    const got = ds.comparisons.map((c) => c[metric]!);
    assertEquals(got.map((d) => d.cluster.holm_p), holm(clusterP));
    assertEquals(got.map((d) => d.cluster.bh_p), benjaminiHochberg(clusterP));
    assertEquals(got.map((d) => d.holm_p), holm(questionP));
    assertEquals(got.map((d) => d.bh_p), benjaminiHochberg(questionP));
    // Rank intervals, resampling the same clusters.
    const ranks = bootstrapRanks(cols, { ...o, clusters: ids });
    assertEquals(
      ds.ranks![metric]!.map((x) => [x.system, x.rank, x.low, x.high, x.first]),
      ranks.systems.map((x, s) => [NAMES[s], x.rank, x.low, x.high, x.first]),
    );
  }
}

Deno.test("report --cluster: the default (paragraph) and article clusters equal metrics/stats on hand-made vectors and cluster ids", async () => {
  const ds = await reportWith("paragraph");
  assertEquals(ds.cluster, { by: "paragraph", requested: null, clusters: 5 });
  // The hand-made vectors are the report's: EM and F1 in percent.
  for (let s = 0; s < 3; s++) {
    assertEquals(ds.systems[s].em.value, (100 * EM[s].reduce((a, b) => a + b, 0)) / 12);
    assert(
      Math.abs(ds.systems[s].f1!.value - (100 * F1[s].reduce((a, b) => a + b, 0)) / 12) < 1e-9,
    );
  }
  assertEquals(ds.systems.map((s) => s.em.value.toFixed(2)), ["75.00", "41.67", "25.00"]);
  checkClustered(ds, PARAGRAPH);
  // A, B, C rank in that order by their EM over all questions.
  assertEquals(ds.ranks!.em.map((x) => x.rank), [1, 2, 3]);
  const art = await reportWith("article", "article");
  assertEquals(art.cluster, { by: "article", requested: "article", clusters: 2 });
  checkClustered(art, ARTICLE);
  // Two articles: at most 2² sign patterns, so p can not go below 1/4 (up to the shuffles' noise).
  for (const c of art.comparisons) assert(c.em.cluster.randomization_p > 0.2);
});

Deno.test("report --cluster question: the clustered numbers equal the per-question ones to the bit", async () => {
  const ds = await reportWith("question", "question");
  assertEquals(ds.cluster, { by: "question", requested: "question", clusters: 12 });
  checkClustered(ds, PARAGRAPH.map((_, i) => `q${i}`));
  for (const s of ds.systems) {
    assertEquals([s.cluster.em.low, s.cluster.em.high], [s.em.low, s.em.high]);
    assertEquals([s.cluster.f1!.low, s.cluster.f1!.high], [s.f1!.low, s.f1!.high]);
  }
  for (const c of ds.comparisons) {
    for (const d of [c.em, c.f1!]) {
      assertEquals([d.cluster.low, d.cluster.high], [d.low, d.high]);
      assertEquals(d.cluster.randomization_p, d.randomization_p);
      assertEquals([d.cluster.holm_p, d.cluster.bh_p], [d.holm_p, d.bh_p]);
      assertEquals(d.tied, tied(d));
    }
  }
  const ranks = bootstrapRanks(EM, { resamples: OPTS.resamples, seed: OPTS.seed });
  assertEquals(ds.ranks!.em.map((x) => x.low), ranks.systems.map((x) => x.low));
});

Deno.test("report --latex: report.tex beside report.md, its rows hold the clustered numbers; the markdown and HTML have the same columns", async () => {
  const out = `${TMP}/latex`;
  const r = await runStage("pipeline/report.ts", [
    ...INPUTS,
    "--data",
    DATA,
    "--out",
    out,
    "--latex",
    "--resamples",
    String(OPTS.resamples),
    "--shuffles",
    String(OPTS.shuffles),
    "--seed",
    String(OPTS.seed),
  ]);
  assertEquals(r.code, 0, r.stderr);
  assertStringIncludes(r.stdout, `${out}/report.{html,md,json,tex}`);
  assertEquals(await listDir(out), ["report.html", "report.json", "report.md", "report.tex"]);
  const ds = readJson(`${out}/report.json`).datasets[0];
  const tex = await Deno.readTextFile(`${out}/report.tex`);
  const lines = tex.split("\n");
  assertStringIncludes(tex, "\\begin{tabular}{lrrrrrrrrrrr}");
  const f = (x: number) => (x < 0 ? `$-$${Math.abs(x).toFixed(2)}` : x.toFixed(2));
  const sg = (x: number) => (x > 0 ? "+" : x < 0 ? "$-$" : "$\\pm$") + Math.abs(x).toFixed(2);
  for (const [s, sys] of ds.systems.entries()) {
    const row = lines.find((l) => l.startsWith(`${sys.name}${s === 0 ? " (baseline)" : ""} & `));
    assert(row !== undefined, tex);
    const c = sys.cluster;
    assertStringIncludes(row, `${f(sys.em.value)} [${f(c.em.low)}, ${f(c.em.high)}]`);
    assertStringIncludes(row, `${f(sys.f1!.value)} [${f(c.f1!.low)}, ${f(c.f1!.high)}]`);
    const rank = ds.ranks!.f1![s];
    assert(row.endsWith(` & ${rank.rank} [${rank.low}, ${rank.high}] \\\\`), row);
    if (s === 0) continue;
    const d = ds.comparisons[s - 1];
    for (const m of [d.em, d.f1!]) {
      assertStringIncludes(
        row,
        `${sg(m.difference)} [${sg(m.cluster.low)}, ${sg(m.cluster.high)}] & ${
          m.cluster.randomization_p.toFixed(4)
        } & ${m.cluster.holm_p!.toFixed(4)} & ${m.cluster.bh_p!.toFixed(4)}`,
      );
    }
  }
  const md = await Deno.readTextFile(`${out}/report.md`);
  const c = ds.comparisons[0].em;
  const signed = (x: number) => (x > 0 ? "+" : x < 0 ? "−" : "±") + Math.abs(x).toFixed(2);
  const cells = [
    "B",
    "EM",
    signed(c.difference),
    `[${signed(c.cluster.low)}, ${signed(c.cluster.high)}]`,
    c.cluster.randomization_p.toFixed(4),
    c.cluster.holm_p!.toFixed(4),
    c.cluster.bh_p!.toFixed(4),
    c.holm_p!.toFixed(4),
    c.bh_p!.toFixed(4),
    c.mde.toFixed(2),
    c.mde_discordant!.toFixed(2),
    c.tied ? "tied" : "no",
  ];
  assertStringIncludes(md, `| ${cells.join(" | ")} |`);
  assertStringIncludes(md, "| system | answered | EM | 95% CI | CI by paragraph | F1 |");
  const a = ds.systems[0];
  assertStringIncludes(
    md,
    `| A | 12 | 75.00 | [${a.em.low.toFixed(2)}, ${a.em.high.toFixed(2)}] | [${
      a.cluster.em.low.toFixed(2)
    }, ${a.cluster.em.high.toFixed(2)}] |`,
  );
  const rk = ds.ranks!.em[0];
  assertStringIncludes(
    md,
    `| A | ${rk.rank} [${rk.low}, ${rk.high}] | ${(100 * rk.first).toFixed(1)}% |`,
  );
  const html = await Deno.readTextFile(`${out}/report.html`);
  assertStringIncludes(html, "<h3>Clustered differences, power and ties</h3>");
  assertStringIncludes(
    html,
    cells.map((x, i) => `<td${i > 1 ? ' class="num"' : ""}>${x}</td>`).join(""),
  );
  assertStringIncludes(html, "<h3>Ranks</h3>");
});

Deno.test("report --cluster with a bad value: one line, exit 2, nothing written", async () => {
  const parent = await Deno.makeTempDir({ dir: TMP, prefix: "bad-" });
  const r = await runStage("pipeline/report.ts", [
    ...INPUTS,
    "--data",
    DATA,
    "--cluster",
    "sentence",
    "--out",
    `${parent}/report`,
  ]);
  assertEquals(r.code, 2, r.stderr);
  assertEquals(
    r.stderr.trimEnd(),
    'report: --cluster must be one of article, paragraph, question, got "sentence" (see --help)',
  );
  assertEquals(r.stdout, "");
  assertEquals(await listDir(parent), []);
  // The same refusal in process, before anything is read.
  const e = await Effect.runPromise(Effect.flip(report({
    inputs: INPUTS,
    data: DATA,
    out: `${parent}/report`,
    // deno-lint-ignore no-explicit-any
    cluster: "sentence" as any,
  })));
  assertEquals(e.message, '--cluster must be one of article, paragraph, question, got "sentence"');
  assertEquals(await listDir(parent), []);
});
