/**
 * `report` on every dataset kind, from inputs written in a few
 * milliseconds (no encoder runs): a SQuAD v2.0 set given as
 * `NAME=pred.json --data` (EM/F1 and the HasAns / NoAns table equal to the
 * official v2.0 script's numbers on the same files, written here as
 * literals; the unanswered question left out of the statistics); a run
 * folder of two `predictions` models over MRQA, a generic jsonl set, an
 * NQ-open set, two XQuAD sets and an MLQA set, each result and rows file
 * written by the run's own `eval` task (`evalPredictions`): one section
 * per dataset, EM/F1 equal to the result files and to scores worked out
 * by hand, the paired statistics equal to `metrics/stats` on the
 * hand-made per-question vectors, and one language table; and a SQuAD
 * v1.1 run with an open search in its rows: the top-k curve and its chart.
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals, assertStringIncludes } from "../_assert.ts";
import { ROOT, runStage } from "../_util.ts";
import { mcnemarPaired, pairedBootstrap, pairedRandomization } from "../../metrics/stats/mod.ts";
import { report, type ReportJson } from "../../report/mod.ts";
import { evalPredictions } from "../../runs/plan/tasks.ts";
import type { DatasetFormat } from "../../io/datasets/detect.ts";
import type { FieldMap } from "../../io/datasets/types.ts";

const TMP = await Deno.makeTempDir({ prefix: "phraseval-report-kinds-" });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(TMP, { recursive: true });
  } catch { /* gone */ }
});
const DS = `${ROOT}/tests/testdata/datasets`;
const OPTS = { resamples: 200, shuffles: 999 };

const readJson = (p: string) => JSON.parse(Deno.readTextFileSync(p)) as ReportJson;

function near(actual: number | undefined, expected: number, msg: string) {
  assert(
    actual !== undefined && Math.abs(actual - expected) <= 1e-9,
    `${msg}: ${actual} != ${expected}`,
  );
}

/** `100 · Σx / n`, summed in order (the official formula). */
const pct = (x: readonly number[]) => (100 * x.reduce((a, b) => a + b, 0)) / x.length;

Deno.test("report kinds: SQuAD v2.0 via --data: EM/F1 and HasAns/NoAns = the official v2.0 script", async () => {
  const ctx = "Paris is the capital of France. It has 2 million people.";
  const q = (id: string, question: string, answers: string[]) => ({
    id,
    question,
    answers: answers.map((text) => ({ text, answer_start: Math.max(0, ctx.indexOf(text)) })),
    is_impossible: answers.length === 0,
  });
  const data = `${TMP}/v2.json`;
  await Deno.writeTextFile(
    data,
    JSON.stringify({
      version: "v2.0",
      data: [{
        title: "Paris",
        paragraphs: [{
          context: ctx,
          qas: [
            q("p1", "What is the capital of France?", ["Paris"]),
            q("p2", "How many people live in Paris?", ["2 million", "two million"]),
            q("p3", "Which river flows through Paris?", []),
            q("p4", "Who founded Paris?", []),
            q("p5", "What country is Paris in?", ["France"]),
            q("p6", "When was Paris founded?", []),
          ],
        }],
      }],
    }),
  );
  // p6 is answered by neither: the v2.0 script does not score it.
  await Deno.writeTextFile(
    `${TMP}/a.json`,
    JSON.stringify({ p1: "Paris", p2: "2 million people", p3: "", p4: "Napoleon", p5: "France" }),
  );
  await Deno.writeTextFile(
    `${TMP}/b.json`,
    JSON.stringify({ p1: "the capital", p2: "two million", p3: "", p4: "", p5: "in France" }),
  );
  const out = `${TMP}/v2report`;
  await Effect.runPromise(
    report({ inputs: [`A=${TMP}/a.json`, `B=${TMP}/b.json`], data, out, ...OPTS }),
  );
  const ds = readJson(`${out}/report.json`).datasets[0];
  assertEquals([ds.kind, ds.rules, ds.questions], ["squad2", "v2.0", 5]);
  // `python3 bench/reference/evaluate_v2.py v2.json a.json` (and b.json) print these.
  assertEquals([ds.systems[0].em.value, ds.systems[0].f1!.value], [60, 76]);
  assertEquals(ds.systems[0].v2, {
    HasAns_exact: 66.66666666666667,
    HasAns_f1: 93.33333333333333,
    HasAns_total: 3,
    NoAns_exact: 50,
    NoAns_f1: 50,
    NoAns_total: 2,
  });
  assertEquals([ds.systems[1].em.value, ds.systems[1].f1!.value], [60, 73.33333333333333]);
  assertEquals(ds.systems[1].v2, {
    HasAns_exact: 33.333333333333336,
    HasAns_f1: 55.55555555555555,
    HasAns_total: 3,
    NoAns_exact: 100,
    NoAns_f1: 100,
    NoAns_total: 2,
  });
  // The answerability breakdown holds the same numbers, with intervals.
  const [has, no] = ds.breakdowns.answerability;
  assertEquals([has.group, has.questions, no.group, no.questions], ["HasAns", 3, "NoAns", 2]);
  assertEquals(has.systems[0].f1!.value, 93.33333333333333);
  assertEquals(no.systems[1].em.value, 100);
  // Paired statistics over the 5 scored questions (per question, by hand).
  const f1p2 = (2 * (2 / 3) * 1) / (2 / 3 + 1);
  const f1p5 = (2 * (1 / 2) * 1) / (1 / 2 + 1);
  const emA = Float64Array.from([1, 0, 1, 0, 1]);
  const emB = Float64Array.from([0, 1, 1, 1, 0]);
  const f1A = Float64Array.from([1, f1p2, 1, 0, 1]);
  const f1B = Float64Array.from([0, 1, 1, 1, f1p5]);
  const c = ds.comparisons[0];
  assertEquals(c.em.difference, 0);
  near(c.f1!.difference, 73.33333333333333 - 76, "ΔF1");
  assertEquals(c.em.randomization_p, pairedRandomization(emB, emA, { shuffles: 999 }).pValue);
  assertEquals(c.f1!.randomization_p, pairedRandomization(f1B, f1A, { shuffles: 999 }).pValue);
  assertEquals(c.em.mcnemar_p, mcnemarPaired(emB, emA).pValue);
  assertEquals([c.em.mcnemar_b, c.em.mcnemar_c], [2, 2]);
  const b = pairedBootstrap([f1A, f1B], { resamples: 200, seed: 0 });
  assertEquals([ds.systems[0].f1!.low, ds.systems[0].f1!.high], [
    100 * b.systems[0].low,
    100 * b.systems[0].high,
  ]);
  const md = await Deno.readTextFile(`${out}/report.md`);
  assertStringIncludes(md, "### HasAns / NoAns");
  assertStringIncludes(md, "| A | 66.67 | [");
  const html = await Deno.readTextFile(`${out}/report.html`);
  assertStringIncludes(html, "<h3>HasAns / NoAns</h3>");
  assertStringIncludes(html, '<td class="num">93.33</td>');
});

/** One dataset of the hand-made run folder. */
interface KindSet {
  abbr: string;
  type: string;
  path: string;
  format: DatasetFormat;
  lang?: string;
  fields?: FieldMap;
  /** Each model's answers. */
  answers: [Record<string, string>, Record<string, string>];
}

const GENERIC_FIELDS = { id: "qid", question: "q", answers: "gold", context: "passage" };

/**
 * A run folder with two `predictions` models (A, B) over `sets`: the
 * resolved config, and for each model × dataset the prediction file, the
 * result and the rows, written by the `eval` task itself.
 */
async function kindsRun(run: string, sets: readonly KindSet[]): Promise<void> {
  await Deno.mkdir(`${run}/configs`, { recursive: true });
  await Deno.writeTextFile(
    `${run}/configs/kinds.json`,
    JSON.stringify({
      datasets: sets.map((s) => ({
        abbr: s.abbr,
        type: s.type,
        path: s.path,
        format: s.format,
        ...(s.lang ? { lang: s.lang } : {}),
        ...(s.fields ? { fields: s.fields } : {}),
        articles: null,
        metrics: ["em", "f1"],
        bem: null,
      })),
      models: [{ abbr: "A" }, { abbr: "B" }],
    }),
  );
  for (const s of sets) {
    for (const [k, m] of (["A", "B"] as const).entries()) {
      await Deno.mkdir(`${run}/predictions/${m}`, { recursive: true });
      await Deno.mkdir(`${run}/results/${m}`, { recursive: true });
      const from = `${TMP}/${s.abbr}.${m}.json`;
      await Deno.writeTextFile(from, JSON.stringify(s.answers[k]));
      await Effect.runPromise(evalPredictions({
        data: s.path,
        pred: `${run}/predictions/${m}/${s.abbr}.json`,
        from,
        out: `${run}/results/${m}/${s.abbr}.json`,
        rows: `${run}/predictions/${m}/${s.abbr}.rows.ndjson`,
        format: s.format,
        lang: s.lang,
        fields: s.fields,
      }));
    }
  }
}

Deno.test("report kinds: a run over MRQA, jsonl, open, XQuAD and MLQA sets: one section each, hand-worked EM/F1, statistics, a language table", async () => {
  const es = `${TMP}/xquad.es.json`;
  await Deno.writeTextFile(
    es,
    JSON.stringify({
      version: "1.1",
      data: [{
        title: "Madrid",
        paragraphs: [{
          context: "Madrid es la capital de España. El Manzanares pasa por Madrid.",
          qas: [
            {
              id: "e1",
              question: "¿Cuál es la capital de España?",
              answers: [{ text: "Madrid", answer_start: 0 }],
            },
            {
              id: "e2",
              question: "¿Qué río pasa por Madrid?",
              answers: [{ text: "El Manzanares", answer_start: 32 }],
            },
          ],
        }],
      }],
    }),
  );
  const sets: KindSet[] = [
    {
      abbr: "mq",
      type: "mrqa",
      path: `${DS}/mrqa.jsonl`,
      format: "mrqa",
      answers: [
        { mq1: "2", mq2: "Warsaw, Poland", mq3: "Zurich" },
        { mq1: "three", mq2: "Warsaw", mq3: "Zürich" },
      ],
    },
    {
      abbr: "gen",
      type: "jsonl",
      path: `${DS}/generic.jsonl`,
      format: "jsonl",
      fields: GENERIC_FIELDS,
      answers: [
        { g1: "Ada L", g2: "in 1850", g3: "près du pont" },
        { g1: "Ada", g2: "1850", g3: "la gare" },
      ],
    },
    {
      abbr: "nq",
      type: "open",
      path: `${DS}/nq-open.jsonl`,
      format: "open",
      answers: [
        { "0": "Leonardo da Vinci", "1": "Kyoto", "2": "in 1989" },
        { "0": "da Vinci", "1": "東京", "2": "November 1989" },
      ],
    },
    {
      abbr: "xq-de",
      type: "xquad",
      path: `${DS}/xquad.de.json`,
      format: "xquad",
      answers: [
        { x1: "Berlin", x2: "Spree" },
        { x1: "Hauptstadt Berlin", x2: "der Fluss Spree" },
      ],
    },
    {
      abbr: "xq-es",
      type: "xquad",
      path: es,
      format: "xquad",
      lang: "es",
      answers: [
        { e1: "Madrid", e2: "río Manzanares" },
        { e1: "la ciudad de Madrid", e2: "Manzanares" },
      ],
    },
    {
      abbr: "mlqa-zh",
      type: "mlqa",
      path: `${DS}/dev-context-zh-question-en.json`,
      format: "mlqa",
      answers: [{ m1: "中国北部" }, { m1: "中国" }],
    },
  ];
  const run = `${TMP}/kindsrun`;
  await kindsRun(run, sets);
  const out = `${TMP}/kindsreport`;
  await Effect.runPromise(report({ inputs: [run], out, ...OPTS }));
  const json = readJson(`${out}/report.json`);
  assertEquals(
    json.datasets.map((d) => `${d.name}:${d.kind}:${d.rules}`),
    [
      "mq:mrqa:MRQA",
      "gen:jsonl:open-domain",
      "nq:open:open-domain",
      "xq-de:xquad:MLQA",
      "xq-es:xquad:MLQA",
      "mlqa-zh:mlqa:MLQA",
    ],
  );
  // The default clusters: MRQA's contexts (mq1, mq2 share one; mq3 has its
  // own), each question of the generic and open sets, and each question of
  // the one-paragraph XQuAD/MLQA sets (one cluster has nothing to resample).
  assertEquals(
    json.datasets.map((d) => `${d.name}:${d.cluster.by}:${d.cluster.clusters}`),
    [
      "mq:paragraph:2",
      "gen:question:3",
      "nq:question:3",
      "xq-de:question:2",
      "xq-es:question:2",
      "mlqa-zh:question:1",
    ],
  );
  // Per question, by hand: [EM], [F1] of A then B.
  const t = 2 / 3; // F1 of one right word in a two-word answer (or of 2 of 3 gold words)
  const f08 = (2 * 1 * t) / (1 + t); // precision 1, recall 2/3
  const f05 = (2 * (1 / 3) * 1) / (1 / 3 + 1); // precision 1/3, recall 1
  const hand: Record<string, [number[], number[], number[], number[]]> = {
    "mq": [[1, 0, 0], [1, t, 0], [0, 1, 1], [0, 1, 1]],
    "gen": [[1, 0, 1], [1, t, 1], [1, 1, 0], [1, 1, 0]],
    "nq": [[1, 0, 0], [1, 0, t], [0, 1, 0], [f08, 1, f08]],
    "xq-de": [[1, 1], [1, 1], [0, 0], [t, t]],
    "xq-es": [[1, 0], [1, t], [0, 1], [f05, 1]],
    "mlqa-zh": [[1], [1], [0], [t]],
  };
  for (const d of json.datasets) {
    const [emA, f1A, emB, f1B] = hand[d.name];
    const res = (m: string) =>
      JSON.parse(Deno.readTextFileSync(`${run}/results/${m}/${d.name}.json`));
    assertEquals(d.systems.map((s) => s.name), ["A", "B"]);
    assertEquals(d.questions, emA.length, d.name);
    for (const [k, [em, f1]] of [[emA, f1A], [emB, f1B]].entries()) {
      const s = d.systems[k];
      // The eval task's result file, to the bit; the hand-worked scores, to 1e-9.
      assertEquals([s.em.value, s.f1!.value], [res(s.name).exact_match, res(s.name).f1]);
      near(s.em.value, pct(em), `${d.name} ${s.name} EM`);
      near(s.f1!.value, pct(f1), `${d.name} ${s.name} F1`);
      assertEquals(s.rows, `${run}/predictions/${s.name}/${d.name}.rows.ndjson`);
    }
    // B against A: the paired statistics of metrics/stats on the hand vectors.
    const c = d.comparisons[0];
    const [a, b] = [Float64Array.from(emA), Float64Array.from(emB)];
    assertEquals(c.em.randomization_p, pairedRandomization(b, a, { shuffles: 999 }).pValue);
    assertEquals(c.em.mcnemar_p, mcnemarPaired(b, a).pValue, d.name);
    const boot = pairedBootstrap([Float64Array.from(f1B), Float64Array.from(f1A)], {
      resamples: 200,
      seed: 0,
    });
    near(c.f1!.low, 100 * boot.differences[0].low, `${d.name} ΔF1 low`);
    near(c.f1!.high, 100 * boot.differences[0].high, `${d.name} ΔF1 high`);
  }
  // No articles in MRQA/open sets; no question types in XQuAD/MLQA.
  assertEquals(json.datasets[0].breakdowns.article, []);
  assertEquals(json.datasets[3].breakdowns.question_type, []);
  assertEquals(json.datasets[3].breakdowns.article.map((g) => g.group), ["Berlin"]);
  // The language table: one row per XQuAD/MLQA set, a column group per system.
  assertEquals(json.language_systems, ["A", "B"]);
  assertEquals(
    json.languages.map((l) => `${l.lang}:${l.dataset}:${l.questions}`),
    ["de:xq-de:2", "es:xq-es:2", "zh:mlqa-zh:1"],
  );
  assertEquals(json.languages[1].systems[0]!.em.value, 50);
  near(json.languages[1].systems[1]!.f1.value, pct([f05, 1]), "es B F1");
  const md = await Deno.readTextFile(`${out}/report.md`);
  assertStringIncludes(md, "## By language");
  assertStringIncludes(md, "| language | dataset | n | A EM | 95% CI | A F1 | 95% CI | B EM |");
  assert(/\| de \| xq-de \| 2 \| 100\.00 \| \[100\.00, 100\.00\] \| 100\.00 \|/.test(md), md);
  assertStringIncludes(md, "| es | xq-es | 2 | 50.00 |");
  for (const d of json.datasets) assertStringIncludes(md, `## ${d.name}\n`);
  const html = await Deno.readTextFile(`${out}/report.html`);
  assertStringIncludes(html, "<h2>By language</h2>");
  // Charts: scores, question type (not XQuAD/MLQA), F1 histograms, and the metric
  // disagreements (each set has a question with EM 0 but F1 ≥ 0.5).
  assertEquals(html.match(/<svg/g)?.length, 3 * 3 + 2 * 3 + 6);
  for (const d of json.datasets) {
    assert(d.metric_disagreements.systems.some((s) => s.counts.em0_f1hi! > 0), d.name);
  }
});

Deno.test("report kinds: an open search in the rows gives top-1 scores and the top-k curve with its chart", async () => {
  const data = `${TMP}/open_squad.json`;
  const qs = [
    ["o1", "Who wrote Hamlet?", "Shakespeare"],
    ["o2", "What is the capital of Italy?", "Rome"],
    ["o3", "Where is the Louvre?", "Paris"],
    ["o4", "When did the war end?", "1945"],
  ];
  await Deno.writeTextFile(
    data,
    JSON.stringify({
      version: "1.1",
      data: [{
        title: "Mixed",
        paragraphs: [{
          context: "Shakespeare Rome Paris 1945",
          qas: qs.map(([id, question, a]) => ({
            id,
            question,
            answers: [{ text: a, answer_start: 0 }],
          })),
        }],
      }],
    }),
  );
  const run = `${TMP}/openrun`;
  await Deno.mkdir(`${run}/configs`, { recursive: true });
  await Deno.writeTextFile(
    `${run}/configs/open.json`,
    JSON.stringify({
      datasets: [{
        abbr: "mixed",
        type: "squad",
        path: data,
        articles: null,
        open: { topK: 3 },
        metrics: ["em", "f1"],
        bem: null,
      }],
      models: [{ abbr: "A" }, { abbr: "B" }],
    }),
  );
  // Closed predictions all right (A) or all wrong (B); the open fields by hand.
  const ranks: Record<string, (number | null)[]> = { A: [1, 2, null, 3], B: [null, 1, 1, null] };
  const openF1: Record<string, number[]> = { A: [1, 0.5, 0, 0], B: [0, 1, 1, 0.5] };
  for (const m of ["A", "B"]) {
    await Deno.mkdir(`${run}/predictions/${m}`, { recursive: true });
    const preds = Object.fromEntries(qs.map(([id, , a]) => [id, m === "A" ? a : "nothing"]));
    await Deno.writeTextFile(`${run}/predictions/${m}/mixed.json`, JSON.stringify(preds));
    const rows = qs.map(([id, , a], i) => {
      const rank = ranks[m][i];
      return JSON.stringify({
        kind: "score",
        id,
        prediction: preds[id],
        reference: a,
        golds: [a],
        em: m === "A" ? 1 : 0,
        f1: m === "A" ? 1 : 0,
        open_prediction: rank === 1 ? a : "x",
        open_paragraph: "Mixed_0",
        open_em: rank === 1 ? 1 : 0,
        open_f1: openF1[m][i],
        topk_em: rank === null ? 0 : 1,
        topk_f1: rank === null ? 0 : 1,
        gold_paragraph_rank: 1,
        answer_rank: rank,
      });
    });
    await Deno.writeTextFile(`${run}/predictions/${m}/mixed.rows.ndjson`, rows.join("\n") + "\n");
  }
  const out = `${TMP}/openreport`;
  await Effect.runPromise(report({ inputs: [run], out, ...OPTS }));
  const ds = readJson(`${out}/report.json`).datasets[0];
  const open = ds.open!;
  assertEquals(open.k, 3);
  assertEquals(open.systems.map((s) => [s.name, ...s.curve]), [["A", 25, 50, 75], [
    "B",
    50,
    50,
    50,
  ]]);
  assertEquals(open.systems.map((s) => s.em.value), [25, 50]);
  assertEquals(open.systems.map((s) => s.f1.value), [37.5, 62.5]);
  const b = pairedBootstrap([Float64Array.from(openF1.A), Float64Array.from(openF1.B)], {
    resamples: 200,
    seed: 0,
  });
  assertEquals([open.systems[1].f1.low, open.systems[1].f1.high], [
    100 * b.systems[1].low,
    100 * b.systems[1].high,
  ]);
  assertEquals([ds.systems[0].em.value, ds.systems[1].em.value], [100, 0]);
  const md = await Deno.readTextFile(`${out}/report.md`);
  assertStringIncludes(md, "| k | A | B |");
  assertStringIncludes(md, "| 3 | 75.00 | 50.00 |");
  const html = await Deno.readTextFile(`${out}/report.html`);
  assertStringIncludes(html, '<figure id="mixed-topk">');
  // scores, question type, F1 histograms, top-k.
  assertEquals(html.match(/<svg/g)?.length, 4);
});

Deno.test("report kinds: a generic set given with --data (no field map) is one line, exit 2, nothing written", async () => {
  const pred = `${TMP}/gen_pred.json`;
  await Deno.writeTextFile(pred, JSON.stringify({ g1: "Ada" }));
  const out = `${TMP}/genreport`;
  const r = await runStage("pipeline/report.ts", [
    `A=${pred}`,
    "--data",
    `${DS}/generic.jsonl`,
    "--out",
    out,
  ]);
  assertEquals(r.code, 2, r.stderr);
  const lines = r.stderr.trim().split("\n");
  assertEquals(lines.length, 1, r.stderr);
  assertStringIncludes(lines[0], "generic.jsonl: a generic jsonl set is read with a field map");
  assertEquals([...Deno.readDirSync(TMP)].some((e) => e.name.includes("genreport")), false);
});
