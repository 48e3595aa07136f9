/**
 * Open-domain search as part of a run (issue 12, items 4 and 5; rows from
 * issue 14): `full --open` runs split → encoders → index → search →
 * evaluate as tasks of its single run, each in a permission-narrowed
 * process; its open predictions equal `deno task search` run by hand on the
 * same dumps, its closed numbers equal a run without `--open`; the rows
 * carry the open fields from the one fold of `metrics/open.ts`, whose means
 * are the result's `open` numbers (and `evaluate --topk-file`'s); a run config's
 * dataset option `open` does the same in `run`, with open columns in the
 * run summary.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { ROOT, runRun, runStage } from "../_util.ts";
import { evaluate } from "../../metrics/evaluate.ts";
import { openMetrics } from "../../metrics/open.ts";
import { writeDevSubset } from "../report/_systems.ts";

const TMP = await Deno.makeTempDir({ prefix: "phraseval-open-run-test-" });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(TMP, { recursive: true });
  } catch { /* gone */ }
});

const readJson = (p: string) => JSON.parse(Deno.readTextFileSync(p));
const readRows = (file: string): Record<string, unknown>[] =>
  Deno.readTextFileSync(file).trim().split("\n").map((l) => JSON.parse(l));
/** `100 · Σx / n` in order (the official formula). */
const pct = (xs: readonly number[]) => (100 * xs.reduce((a, b) => a + b, 0)) / xs.length;
const OPEN_FIELDS = [
  "open_prediction",
  "open_paragraph",
  "open_em",
  "open_f1",
  "topk_em",
  "topk_f1",
  "gold_paragraph_rank",
  "answer_rank",
];

/** The first three dev articles, a `full --open` and a `full` of them (once for this file). */
let runs: Promise<{ data: string; open: string; closed: string; stdout: string }> | undefined;
function fullRuns() {
  runs ??= (async () => {
    const data = `${TMP}/dev3.json`;
    await writeDevSubset(data, 3);
    const open = `${TMP}/open`, closed = `${TMP}/closed`;
    const a = await runStage("pipeline/full.ts", ["--data", data, "--out", open, "--open"]);
    assertEquals(a.code, 0, a.stderr);
    const b = await runStage("pipeline/full.ts", ["--data", data, "--out", closed]);
    assertEquals(b.code, 0, b.stderr);
    return { data, open, closed, stdout: a.stdout };
  })();
  return runs;
}

Deno.test("full --open: open/pred.json and topk.ndjson equal deno task search by hand; closed outputs unchanged", async () => {
  const { data, open, closed, stdout } = await fullRuns();
  // The stages, as tasks of the run, and the numbers side by side.
  for (const stage of ["split", "embed_context", "embed_question", "index", "merge", "search"]) {
    assertMatch(stdout, new RegExp(`^  ${stage} +\\d+\\.\\d s  `, "m"));
  }
  assertMatch(stdout, /^ +closed +open$/m);
  assertMatch(stdout, /^EM +\d+\.\d\d +\d+\.\d\d$/m);
  assertMatch(stdout, /^top-10 EM +- +\d+\.\d\d$/m);
  assertMatch(stdout, /^MRR@10 +- +0\.\d{4}$/m);
  // The index and search by hand on the same dumps.
  const hand = `${TMP}/hand`;
  await Deno.mkdir(hand);
  const ix = await runStage("pipeline/index.ts", [
    `${open}/dumps/context_emb`,
    `${hand}/index`,
    "--sparse",
    "--context",
    `${open}/context.json`,
  ]);
  assertEquals(ix.code, 0, ix.stderr);
  const se = await runStage("pipeline/search.ts", [
    data,
    `${hand}/index`,
    `${open}/dumps/question_emb`,
    `${hand}/pred.json`,
    "--top-k",
    "10",
    "--topk-out",
    `${hand}/topk.ndjson`,
  ]);
  assertEquals(se.code, 0, se.stderr);
  const bytes = (p: string) => Deno.readFileSync(p);
  assertEquals(bytes(`${open}/open/pred.json`), bytes(`${hand}/pred.json`));
  assertEquals(bytes(`${open}/open/topk.ndjson`), bytes(`${hand}/topk.ndjson`));
  for (const f of ["index.json", "paragraphs.ndjson", "data.f32", "indices.i32", "indptr.i64"]) {
    assertEquals(bytes(`${open}/index/${f}`), bytes(`${hand}/index/${f}`), f);
  }
  // The closed answers and numbers are those of a run without --open.
  assertEquals(bytes(`${open}/pred.json`), bytes(`${closed}/pred.json`));
  const ro = readJson(`${open}/result.json`), rc = readJson(`${closed}/result.json`);
  assertEquals([ro.exact_match, ro.f1, ro.total], [rc.exact_match, rc.f1, rc.total]);
  assertEquals(rc.open, undefined);
  // Nothing but the run's own outputs; no temporary folder of the index build.
  assertEquals([...Deno.readDirSync(open)].map((e) => e.name).sort(), [
    ".phraseval-run.json",
    "context.json",
    "dumps",
    "index",
    "logs",
    "open",
    "pred.json",
    "provenance.json",
    "question.json",
    "result.json",
    "rows.ndjson",
    "summary.json",
  ]);
  // summary.json: the open block is the result's; the closed numbers as before.
  const s = readJson(`${open}/summary.json`);
  assertEquals(s.open, ro.open);
  assertEquals([s.exact_match, s.f1], [rc.exact_match, rc.f1]);
  assert(typeof s.timings.index === "number" && typeof s.timings.search === "number");
  assertEquals(readJson(`${closed}/summary.json`).open, undefined);
});

Deno.test("full --open: result.json's open = evaluate of open/pred.json and evaluate --topk-file; rows carry the open fields", async () => {
  const { data, open, closed } = await fullRuns();
  const ro = readJson(`${open}/result.json`).open;
  const ev = await Effect.runPromise(evaluate({ data, predictions: `${open}/open/pred.json` }));
  const official = ev.result as { exact_match: number; f1: number; answered: number };
  assertEquals([ro.exact_match, ro.f1, ro.answered], [
    official.exact_match,
    official.f1,
    official.answered,
  ]);
  const om = await Effect.runPromise(openMetrics({ data, topk: `${open}/open/topk.ndjson` }));
  assertEquals({ ...ro, exact_match: 0, f1: 0, answered: 0 }, {
    exact_match: 0,
    f1: 0,
    answered: 0,
    ...om,
  });
  assertEquals(om.k, 10);
  // Rows: the closed fields exactly as without --open, then the open ones.
  const rows = readRows(`${open}/rows.ndjson`);
  const plain = readRows(`${closed}/rows.ndjson`);
  assertEquals(rows.length, 1169);
  const preds = readJson(`${open}/open/pred.json`);
  const topk = new Map<string, Record<string, unknown>[]>();
  for (const r of readRows(`${open}/open/topk.ndjson`)) {
    topk.set(r.id as string, [...(topk.get(r.id as string) ?? []), r]);
  }
  for (const [i, r] of rows.entries()) {
    assertEquals(Object.keys(r), [...Object.keys(plain[i]), ...OPEN_FIELDS]);
    assertEquals(Object.fromEntries(Object.entries(r).slice(0, 7)), plain[i]);
    assertEquals(r.open_prediction, preds[r.id as string]);
    assertEquals(r.open_paragraph, topk.get(r.id as string)![0].paragraph);
  }
  const col = (k: string) => rows.map((r) => r[k] as number);
  assertEquals(pct(col("open_em")), ro.exact_match);
  assertEquals(pct(col("open_f1")), ro.f1);
  assertEquals(pct(col("topk_em")), ro.top_k_exact_match);
  assertEquals(pct(col("topk_f1")), ro.top_k_f1);
  assertEquals(pct(rows.map((r) => r.gold_paragraph_rank === null ? 0 : 1)), ro.paragraph_recall);
  const mrr = rows.reduce(
    (a, r) => a + (r.answer_rank === null ? 0 : 1 / (r.answer_rank as number)),
    0,
  );
  assertEquals(mrr / rows.length, ro.mrr);
  // Real values: open search over 3 articles is worse at top-1 than merge, better at top-10.
  assert(ro.exact_match < readJson(`${closed}/result.json`).exact_match);
  assert(ro.top_k_exact_match > ro.exact_match);
});

Deno.test("full --open: the index and search tasks run with narrow grants; --top-k without --open is refused", async () => {
  const { open } = await fullRuns();
  const header = (stage: string) => Deno.readTextFileSync(`${open}/logs/${stage}.log`);
  assertMatch(header("index"), /^index: 148 paragraphs, 58443 phrases, d=4194304, csr f32/m);
  const plan = readJson(`${open}/.phraseval-run.json`);
  assertEquals(plan.open_top_k, 10);
  const { planRun } = await import("../../runs/plan/plan.ts");
  const { singleRunConfig, singleRunLayout } = await import("../../runs/single.ts");
  const { encoderSpec } = await import("../../encoders/registry.ts");
  const spec = await Effect.runPromise(encoderSpec("sparse-pi"));
  const out = `${TMP}/plan`;
  const p = await Effect.runPromise(planRun(
    singleRunConfig(`${TMP}/dev3.json`, spec, `${out}/full.ts`, false, { topK: 7 }),
    { runDir: out, maxPartitionSize: Infinity, layout: singleRunLayout(out) },
  ));
  const flags = (stage: string) =>
    p.tasks.find((t) => t.stage === stage)!.argv.filter((a) => a.startsWith("--allow-"));
  const ix = flags("index");
  assertEquals(ix.length, 2);
  assertMatch(
    ix[1],
    new RegExp(
      `^--allow-write=${out}/index,${out}/index\\.[0-9a-f]{8}\\.tmp$`,
    ),
  );
  assertEquals(
    ix[0],
    `--allow-read=${out}/dumps/context_emb,${out}/context.json,${
      ix[1].slice("--allow-write=".length)
    }`,
  );
  assertEquals(flags("search"), [
    `--allow-read=${TMP}/dev3.json,${out}/index,${out}/dumps/question_emb,${out}/open`,
    `--allow-write=${out}/open`,
  ]);
  const search = p.tasks.find((t) => t.stage === "search")!;
  assert(search.argv.includes("--top-k=7"), search.argv.join(" "));
  assertEquals(search.deps, [
    "prepare/data",
    "index/sparse-pi/data",
    "encode_question/sparse-pi/data/0",
  ]);
  assertEquals(p.tasks.find((t) => t.stage === "eval")!.deps, [
    "merge/sparse-pi/data",
    "search/sparse-pi/data",
  ]);
  const bad = await runStage("pipeline/full.ts", ["--out", `${TMP}/nope`, "--top-k", "5"]);
  assertEquals([bad.code, bad.stderr], [2, "full: --top-k needs --open\n"]);
  assert(!(await Deno.stat(`${TMP}/nope`).then(() => true, () => false)));
});

/** A run config outside the repository: sparse-pi × articles [8, 10) of dev, with `open`. */
function writeConfig(dir: string, open: string): string {
  const file = `${dir}/open_run.ts`;
  Deno.writeTextFileSync(
    file,
    `import { squadDev } from "${ROOT}/configs/datasets/squad_dev.ts";
import { sparsePi } from "${ROOT}/configs/models/sparse_pi.ts";
export const config = {
  datasets: [{ ...squadDev, abbr: "dev-8-10", reader: { articles: [8, 10] }, open: ${open} }],
  models: [sparsePi],
};
`,
  );
  return file;
}

Deno.test("run: a dataset's open option adds index and search tasks; results, rows and summary carry the open numbers", async () => {
  const work = `${TMP}/work`;
  await Deno.mkdir(work);
  // Bad values are one line, exit 2, nothing made.
  for (
    const [v, msg] of [
      ["{ topK: 0 }", "datasets[0].open.topK: expected an integer > 0, got 0"],
      ['"yes"', "datasets[0].open: "],
    ]
  ) {
    const cfg = writeConfig(work, v);
    const r = await runRun([cfg, "--work-dir", work]);
    assertEquals(r.code, 2, r.stderr);
    assertEquals(r.stderr.trim().split("\n").length, 1, r.stderr);
    assert(r.stderr.includes(msg), r.stderr);
  }
  assertEquals([...Deno.readDirSync(work)].map((e) => e.name), ["open_run.ts"]);
  const cfg = writeConfig(work, "{ topK: 5 }");
  const r = await runRun([cfg, "--max-workers", "2", "--work-dir", work]);
  assertEquals(r.code, 0, r.stderr);
  const [name] = [...Deno.readDirSync(work)].map((e) => e.name).filter((n) =>
    /^\d{8}_\d{6}$/.test(n)
  );
  const dir = `${work}/${name}`;
  const data = `${dir}/datasets/dev-8-10/data.json`;
  const res = readJson(`${dir}/results/sparse-pi/dev-8-10.json`);
  assertEquals(res.open.k, 5);
  assertEquals(res.open.questions, 232);
  // The search task's outputs equal a search by hand with the same top-k.
  const se = await runStage("pipeline/search.ts", [
    data,
    `${dir}/indexes/sparse-pi/dev-8-10`,
    `${dir}/dumps/sparse-pi/dev-8-10/question_emb`,
    `${TMP}/run_pred.json`,
    "--top-k",
    "5",
    "--topk-out",
    `${TMP}/run_topk.ndjson`,
  ]);
  assertEquals(se.code, 0, se.stderr);
  assertEquals(
    Deno.readFileSync(`${dir}/open/sparse-pi/dev-8-10.json`),
    Deno.readFileSync(`${TMP}/run_pred.json`),
  );
  assertEquals(
    Deno.readFileSync(`${dir}/open/sparse-pi/dev-8-10.topk.ndjson`),
    Deno.readFileSync(`${TMP}/run_topk.ndjson`),
  );
  const ev = await Effect.runPromise(
    evaluate({ data, predictions: `${dir}/open/sparse-pi/dev-8-10.json` }),
  );
  assertEquals([res.open.exact_match, res.open.f1], [
    (ev.result as { exact_match: number }).exact_match,
    ev.result.f1,
  ]);
  // The closed numbers as a run without the option gives them (rows_test's run: the same articles).
  const closed = await Effect.runPromise(
    evaluate({ data, predictions: `${dir}/predictions/sparse-pi/dev-8-10.json` }),
  );
  assertEquals(res.exact_match, (closed.result as { exact_match: number }).exact_match);
  const rows = readRows(`${dir}/predictions/sparse-pi/dev-8-10.rows.ndjson`);
  assertEquals(rows.length, 232);
  for (const f of OPEN_FIELDS) assert(f in rows[0], f);
  assertEquals(pct(rows.map((x) => x.topk_f1 as number)), res.open.top_k_f1);
  // The summary's open columns.
  const csv = Deno.readTextFileSync(`${dir}/summary/summary.csv`).trim().split("\n");
  assertEquals(
    csv[0],
    "dataset,model,em,em_low,em_high,f1,f1_low,f1_high,bem,bem_low,bem_high,open_em,open_f1,top_k,top_k_em,top_k_f1,paragraph_recall,mrr",
  );
  const cells = csv[1].split(",");
  assertEquals(
    cells.slice(11),
    [
      res.open.exact_match,
      res.open.f1,
      5,
      res.open.top_k_exact_match,
      res.open.top_k_f1,
      res.open.paragraph_recall,
      res.open.mrr,
    ].map(String),
  );
  assertMatch(Deno.readTextFileSync(`${dir}/summary/summary.txt`), /open EM +open F1 +top-k/);
  // Resumed with -r: every task complete, nothing rerun.
  const again = await runRun([cfg, "-r", "--work-dir", work]);
  assertEquals(again.code, 0, again.stderr);
  const log = Deno.readTextFileSync(`${dir}/runs.jsonl`).trim().split("\n");
  const last = JSON.parse(log[log.length - 1]);
  assertEquals(last.ran, []);
  assert(last.skipped.includes("index/sparse-pi/dev-8-10"), last.skipped.join());
  assert(last.skipped.includes("search/sparse-pi/dev-8-10"), last.skipped.join());
});
