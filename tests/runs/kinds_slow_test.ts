/**
 * Run configs over every dataset kind (`type`: squad, squad2, mrqa, open,
 * jsonl, ...) and `type: "predictions"` models: config errors (one line,
 * exit 2, the config and the field), a run of `configs/eval_kinds_mini.ts`
 * (one predictions model × four kinds) whose results equal `evaluate` on
 * each set, its summary's kind columns, `report` on it (one section per
 * dataset, each equal to its result file), a single-file predictions model
 * on SQuAD v1.1 equal to `evaluate`'s EM/F1, `report` on a run of an MRQA
 * set only, a generic
 * `jsonl` set and an XQuAD set equal to `scoreQuestionSet`, and the plan of
 * an encoder and a predictions model side by side.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { ROOT, runRun, runStage } from "../_util.ts";
import { validateRunConfig } from "../../runs/config/config.ts";
import { planRun } from "../../runs/plan/plan.ts";
import { formatSummary } from "../../runs/summary/summary.ts";
import { scoreQuestionSet } from "../../metrics/qa_eval.ts";

const DS = `${ROOT}/tests/testdata/datasets`;
const PRED = `${ROOT}/tests/testdata/predictions/eval_kinds_mini`;

function assertAlmostEquals(actual: number, expected: number, eps: number, msg: string) {
  assert(Math.abs(actual - expected) <= eps, `${msg}: ${actual} != ${expected}`);
}

const onlyDir = (work: string) => {
  const dirs = [...Deno.readDirSync(work)].filter((e) => e.isDirectory).map((e) => e.name);
  assertEquals(dirs.length, 1, dirs.join());
  return `${work}/${dirs[0]}`;
};

/** `evaluate DATA PRED`'s EM and F1 (v2.0's `exact` is its EM). */
async function evaluated(data: string, pred: string): Promise<{ em: number; f1: number | null }> {
  const r = await runStage("pipeline/evaluate.ts", [data, pred]);
  assertEquals(r.code, 0, r.stderr);
  const j = JSON.parse(r.stdout);
  return { em: j.exact_match ?? j.exact, f1: j.f1 };
}

Deno.test("run kinds: bad dataset kinds and predictions models are one line naming the field", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-kinds-bad-" });
  try {
    const cfg = `${dir}/cfg.ts`;
    const mrqa = { abbr: "m", type: "mrqa", path: `${DS}/mrqa.jsonl` };
    const pm = { abbr: "p", type: "predictions", predictions: PRED };
    const cases: [unknown, string, RegExp][] = [
      [
        { datasets: [{ ...mrqa, type: "hotpot" }], models: [pm] },
        "datasets[0].type",
        /^expected "squad" \| "squad2" \| "mrqa" \| "xquad" \| "mlqa" \| "open" \| "jsonl", got "hotpot"$/,
      ],
      [
        { datasets: [{ ...mrqa, format: "trec" }], models: [pm] },
        "datasets[0].format",
        /^"trec" is not a format of type "mrqa" \(its formats: mrqa\)$/,
      ],
      [
        { datasets: [{ ...mrqa, path: `${DS}/squad_v1.json` }], models: [pm] },
        "datasets[0].type",
        /^"mrqa", but the file reads as squad /,
      ],
      [
        { datasets: [{ abbr: "g", type: "jsonl", path: `${DS}/generic.jsonl` }], models: [pm] },
        "datasets[0].reader.fields",
        /^missing \(a jsonl set is read with a field map/,
      ],
      [
        { datasets: [{ ...mrqa, reader: { articles: [0, 1] } }], models: [pm] },
        "datasets[0].reader.articles",
        /^only SQuAD sets \(type "squad" or "squad2"\) have articles, not type "mrqa"$/,
      ],
      [
        { datasets: [{ ...mrqa, corpus: `${DS}/psgs_w100.tsv` }], models: [pm] },
        "datasets[0].corpus",
        /^only "open" and "squad" sets take a corpus, not type "mrqa"$/,
      ],
      [
        { datasets: [mrqa], models: [{ abbr: "e", encoder: "sparse-pi" }] },
        "models[0]",
        /^"e" is an encoder model and dataset "m" is type "mrqa": encoders run on SQuAD v1\.1 sets and on sets with a corpus only/,
      ],
      [
        { datasets: [mrqa], models: [pm] },
        "models[0].predictions",
        /^no "m\.json" in .*eval_kinds_mini for dataset "m"$/,
      ],
      [
        {
          datasets: [mrqa, { ...mrqa, abbr: "m2" }],
          models: [{ ...pm, predictions: `${PRED}/mrqa-fixture.json` }],
        },
        "models[0].predictions",
        /^one file answers one dataset and the run has 2: give a folder/,
      ],
      [
        { datasets: [mrqa], models: [{ ...pm, encoder: "sparse-pi" }] },
        "models[0].encoder",
        /^a "predictions" model takes "predictions" only$/,
      ],
      [
        { datasets: [mrqa], models: [{ abbr: "p", type: "predictions" }] },
        "models[0].predictions",
        /^missing/,
      ],
    ];
    for (const [data, where, re] of cases) {
      const e = await Effect.runPromise(Effect.flip(validateRunConfig(data, cfg)));
      assertEquals(e.where, where, e.message);
      assertMatch(e.message, re);
    }
    // Through `run`: one line, exit 2, no run folder.
    await Deno.writeTextFile(
      cfg,
      `export const config = ${
        JSON.stringify({ datasets: [mrqa], models: [{ abbr: "e", encoder: "sparse-pi" }] })
      };\n`,
    );
    const work = `${dir}/work`;
    await Deno.mkdir(work);
    const r = await runRun([cfg, "--work-dir", work]);
    assertEquals(r.code, 2, r.stderr);
    const lines = r.stderr.trim().split("\n");
    assertEquals(lines.length, 1, r.stderr);
    assertMatch(lines[0], /^run: .*cfg\.ts: models\[0\]: "e" is an encoder model and dataset "m"/);
    assertEquals([...Deno.readDirSync(work)], []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("run kinds: a predictions model over four kinds scores each as evaluate does", async () => {
  const work = await Deno.makeTempDir({ prefix: "pv-kinds-run-" });
  try {
    const r = await runRun(["configs/eval_kinds_mini.ts", "--work-dir", work]);
    assertEquals(r.code, 0, r.stderr);
    const run = onlyDir(work);
    // No encoder ran: one prepare (the article subset) and four evals.
    const tasks = r.stderr.match(/ done {6}\S+/g) ?? [];
    assertEquals(tasks.map((t) => t.trim().split(/\s+/)[1]).sort(), [
      "eval",
      "eval",
      "eval",
      "eval",
      "prepare",
    ]);
    const result = (d: string) =>
      JSON.parse(Deno.readTextFileSync(`${run}/results/hand-made/${d}.json`));
    const sets: [string, string][] = [
      ["squad-dev-a0", `${run}/datasets/squad-dev-a0/data.json`],
      ["squad2-fixture", `${DS}/squad_v2.json`],
      ["mrqa-fixture", `${DS}/mrqa.jsonl`],
      ["trec-fixture", `${DS}/curatedtrec-test.qa.csv`],
    ];
    const want: Record<string, [number, number | null]> = {
      "squad-dev-a0": [74.93827160493827, 75.2551440329218],
      "squad2-fixture": [200 / 3, 200 / 3],
      "mrqa-fixture": [100 / 3, 500 / 9],
      "trec-fixture": [50, null],
    };
    for (const [d, data] of sets) {
      const ev = await evaluated(data, `${PRED}/${d}.json`);
      const res = result(d);
      assertEquals([res.exact_match, res.f1], [ev.em, ev.f1], d);
      assertAlmostEquals(res.exact_match, want[d][0], 1e-9, d);
      if (want[d][1] === null) assertEquals(res.f1, null, d);
      else assertAlmostEquals(res.f1, want[d][1]!, 1e-9, d);
      // The answers were copied into the run's layout, beside their rows.
      assertEquals(
        Deno.readTextFileSync(`${run}/predictions/hand-made/${d}.json`),
        Deno.readTextFileSync(`${PRED}/${d}.json`),
      );
      const rows = Deno.readTextFileSync(`${run}/predictions/hand-made/${d}.rows.ndjson`)
        .trim().split("\n").map((l) => JSON.parse(l));
      assertEquals(rows.length, res.total, d);
      const mean = rows.reduce((s, x) => s + x.em, 0) / rows.length;
      assertAlmostEquals(100 * mean, res.exact_match, 1e-9, d);
    }
    assertEquals(result("squad2-fixture").v2, {
      has_ans_exact_match: 50,
      has_ans_f1: 50,
      has_ans_total: 2,
      no_ans_exact_match: 100,
      no_ans_total: 1,
    });
    assertEquals(result("mrqa-fixture").rules, "MRQA");
    assertEquals(result("trec-fixture").format, "trec");
    const csv = Deno.readTextFileSync(`${run}/summary/summary.csv`).trim().split("\n");
    assertEquals(
      csv[0],
      "dataset,model,kind,em,em_low,em_high,f1,f1_low,f1_high,bem,bem_low,bem_high," +
        "has_ans_em,no_ans_em",
    );
    assertEquals(csv.length, 5);
    assertMatch(csv[1], /^squad-dev-a0,hand-made,squad,74\.93827160493827,[\d.]+,[\d.]+,75\.2551/);
    assertMatch(csv[2], /^squad2-fixture,hand-made,squad2,66\.6+7,0,100,.*,-,-,-,50,100$/);
    assertEquals(
      csv[3],
      "mrqa-fixture,hand-made,mrqa,33.333333333333336,0,100,55.55555555555555,0,100,-,-,-,-,-",
    );
    assertEquals(csv[4], "trec-fixture,hand-made,open,50,0,100,-,-,-,-,-,-,-,-");
    // The run's report: one section per dataset, each with its result file's EM/F1.
    assert(!r.stderr.includes("no report"), r.stderr);
    const rep = JSON.parse(Deno.readTextFileSync(`${run}/report/report.json`));
    assertEquals(
      rep.datasets.map((d: { name: string; kind: string }) => `${d.name}:${d.kind}`),
      ["squad-dev-a0:squad", "squad2-fixture:squad2", "mrqa-fixture:mrqa", "trec-fixture:open"],
    );
    for (const d of rep.datasets) {
      const res = result(d.name);
      assertEquals(d.systems[0].name, "hand-made");
      assertEquals(d.systems[0].em.value, res.exact_match, d.name);
      assertEquals(d.systems[0].f1?.value ?? null, res.f1, d.name);
    }
    assertEquals(rep.datasets[1].systems[0].v2, {
      HasAns_exact: 50,
      HasAns_f1: 50,
      HasAns_total: 2,
      NoAns_exact: 100,
      NoAns_f1: 100,
      NoAns_total: 1,
    });
  } finally {
    await Deno.remove(work, { recursive: true });
  }
});

Deno.test("run kinds: a predictions file on SQuAD v1.1 = evaluate's EM/F1; report on a run of an MRQA set", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-kinds-file-" });
  try {
    const cfg = `${dir}/one.ts`;
    await Deno.writeTextFile(
      cfg,
      `import { squadDev } from "${ROOT}/configs/datasets/squad_dev.ts";
export const config = {
  datasets: [{ ...squadDev, abbr: "a0", reader: { articles: [0, 1] } }],
  models: [{ abbr: "pm", type: "predictions", predictions: "${PRED}/squad-dev-a0.json" }],
};
`,
    );
    await Deno.mkdir(`${dir}/w1`);
    const r = await runRun([cfg, "--work-dir", `${dir}/w1`]);
    assertEquals(r.code, 0, r.stderr);
    const run = onlyDir(`${dir}/w1`);
    const res = JSON.parse(Deno.readTextFileSync(`${run}/results/pm/a0.json`));
    const ev = await evaluated(`${run}/datasets/a0/data.json`, `${PRED}/squad-dev-a0.json`);
    assertEquals([res.exact_match, res.f1], [ev.em, ev.f1]);
    assertEquals([res.exact_match, res.f1], [74.93827160493827, 75.2551440329218]);
    assertEquals(res.total, 810);

    const cfg2 = `${dir}/mrqa.ts`;
    await Deno.writeTextFile(
      cfg2,
      `export const config = {
  datasets: [{ abbr: "mq", type: "mrqa", path: "${DS}/mrqa.jsonl" }],
  models: [{ abbr: "pm", type: "predictions", predictions: "${PRED}/mrqa-fixture.json" }],
};
`,
    );
    await Deno.mkdir(`${dir}/w2`);
    const r2 = await runRun([cfg2, "--work-dir", `${dir}/w2`]);
    assertEquals(r2.code, 0, r2.stderr);
    const run2 = onlyDir(`${dir}/w2`);
    const rep = await runStage("pipeline/report.ts", [run2, "--out", `${dir}/rep`]);
    assertEquals(rep.code, 0, rep.stderr);
    const mq = JSON.parse(Deno.readTextFileSync(`${dir}/rep/report.json`)).datasets[0];
    assertEquals([mq.name, mq.kind, mq.rules], ["mq", "mrqa", "MRQA"]);
    // mq1 "2" matches, mq2 "Warsaw, Poland" has F1 2/3, "Zurich" misses "Zürich": EM 1/3, F1 5/9.
    assertAlmostEquals(mq.systems[0].em.value, 100 / 3, 1e-9, "mrqa em");
    assertAlmostEquals(mq.systems[0].f1.value, 500 / 9, 1e-9, "mrqa f1");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("run kinds: summary groups (v2.0 HasAns/NoAns, MLQA language, regex F1)", () => {
  const s = formatSummary([
    { dataset: "a", model: "m", em: 50, f1: 60, bem: undefined, emCi: null, f1Ci: null },
    {
      dataset: "b",
      model: "m",
      em: 40,
      f1: 45,
      bem: undefined,
      kind: "squad2",
      v2: { hasAnsEm: 30, noAnsEm: 70 },
    },
    { dataset: "c", model: "m", em: 20, f1: 25, bem: undefined, kind: "mlqa", lang: "de" },
    { dataset: "d", model: "m", em: 10, f1: null, bem: undefined, kind: "open" },
  ]);
  assertEquals(
    s.csv,
    "dataset,model,kind,em,em_low,em_high,f1,f1_low,f1_high,bem,bem_low,bem_high," +
      "has_ans_em,no_ans_em,lang\n" +
      "a,m,squad,50,n/a,n/a,60,n/a,n/a,-,-,-,-,-,-\n" +
      "b,m,squad2,40,n/a,n/a,45,n/a,n/a,-,-,-,30,70,-\n" +
      "c,m,mlqa,20,n/a,n/a,25,n/a,n/a,-,-,-,-,-,de\n" +
      "d,m,open,10,n/a,n/a,-,-,-,-,-,-,-,-,-\n",
  );
  // SQuAD v1.1 rows only: the table it always had.
  const old = formatSummary([{ dataset: "a", model: "m", em: 50, f1: 60, bem: undefined }]);
  assertEquals(
    old.csv.split("\n")[0],
    "dataset,model,em,em_low,em_high,f1,f1_low,f1_high,bem,bem_low,bem_high",
  );
});

Deno.test("run kinds: a generic jsonl set (field map) and an XQuAD set = scoreQuestionSet", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-kinds-gen-" });
  try {
    await Deno.mkdir(`${dir}/p`);
    await Deno.mkdir(`${dir}/w`);
    await Deno.writeTextFile(`${dir}/p/gen.json`, '{"g1": "Ada L", "g2": "in 1850"}');
    await Deno.writeTextFile(`${dir}/p/xq.json`, '{"x1": "Berlin", "x2": "der Spree"}');
    const fields = { id: "qid", question: "q", answers: "gold", context: "passage" };
    await Deno.writeTextFile(
      `${dir}/cfg.ts`,
      `export const config = ${
        JSON.stringify({
          datasets: [
            { abbr: "gen", type: "jsonl", path: `${DS}/generic.jsonl`, reader: { fields } },
            { abbr: "xq", type: "xquad", path: `${DS}/xquad.de.json` },
          ],
          models: [{ abbr: "pm", type: "predictions", predictions: `${dir}/p` }],
        })
      };\n`,
    );
    const r = await runRun([`${dir}/cfg.ts`, "--work-dir", `${dir}/w`]);
    assertEquals(r.code, 0, r.stderr);
    const run = onlyDir(`${dir}/w`);
    const res = (d: string) => JSON.parse(Deno.readTextFileSync(`${run}/results/pm/${d}.json`));
    const gen = await Effect.runPromise(scoreQuestionSet({
      data: `${DS}/generic.jsonl`,
      predictions: `${dir}/p/gen.json`,
      format: "jsonl",
      fields,
    }));
    // g3 has no answer: it scores 0. g1 matches, g2 has F1 2/3.
    assertEquals([res("gen").exact_match, res("gen").f1], [gen.exact_match, gen.f1]);
    assertAlmostEquals(res("gen").f1, 100 * (1 + 2 / 3) / 3, 1e-9, "gen f1");
    assertEquals([res("gen").total, res("gen").answered], [3, 2]);
    // MLQA's German rules drop "der"/"die": both answers match.
    assertEquals([res("xq").exact_match, res("xq").f1, res("xq").lang], [100, 100, "de"]);
    const csv = Deno.readTextFileSync(`${run}/summary/summary.csv`).trim().split("\n");
    assertEquals(csv[0].split(",").at(-1), "lang");
    assertEquals(csv[2].split(",").at(-1), "de");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("run kinds: an encoder and a predictions model side by side: the plan", async () => {
  const cfg = await Effect.runPromise(validateRunConfig({
    datasets: [{ abbr: "a0", path: `${ROOT}/data/dev-v1.1.json.gz`, reader: { articles: [0, 1] } }],
    models: [
      { abbr: "e", encoder: "sparse-pi" },
      { abbr: "p", type: "predictions", predictions: `${PRED}/squad-dev-a0.json` },
    ],
  }, `${ROOT}/cfg.ts`));
  const plan = await Effect.runPromise(planRun(cfg, { runDir: "/tmp/r", maxPartitionSize: 5000 }));
  assertEquals(plan.tasks.map((t) => t.id), [
    "prepare/a0",
    "encode_context/e/a0/0",
    "encode_question/e/a0/0",
    "merge/e/a0",
    "eval/e/a0",
    "eval/p/a0",
  ]);
  const p = plan.tasks.at(-1)!;
  assertEquals(p.deps, ["prepare/a0"]);
  assert(p.argv.includes(`--from=${PRED}/squad-dev-a0.json`), p.argv.join(" "));
  assert(p.argv.includes("--pred=/tmp/r/predictions/p/a0.json"), p.argv.join(" "));
  // The split is still written: the encoder reads it.
  assert(!plan.tasks[0].argv.includes("--subset-only"));
});
