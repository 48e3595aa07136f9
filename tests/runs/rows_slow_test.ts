/**
 * Per-question rows (issue 14, items 1 and 4): `full` and `run` write
 * `rows.ndjson` / `<dataset>.rows.ndjson` next to the predictions from the
 * scoring pass that makes the result file; they equal `evaluate
 * --per-question`'s rows and their means equal the result; the run summary's
 * CI columns are `pairedBootstrap` of the rows (B = 1000, seed 0); `run`
 * writes a report of its folder that takes the scores from the rows, and a
 * report that cannot be made is one warning line, not a failed run;
 * `report` refuses rows that are stale or of another dataset.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { ROOT, runArgv, runRun } from "../_util.ts";
import { evaluate } from "../../metrics/evaluate.ts";
import { pairedBootstrap } from "../../metrics/stats/mod.ts";
import { full } from "../../runs/full.ts";
import { report, type ReportJson } from "../../report/mod.ts";
import { writeDevSubset } from "../report/_systems.ts";

const TMP = await Deno.makeTempDir({ prefix: "phraseval-rows-test-" });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(TMP, { recursive: true });
  } catch { /* gone */ }
});

interface Row {
  kind: string;
  id: string;
  prediction: string | null;
  reference: string | null;
  golds: string[];
  em: number;
  f1: number;
}

const readRows = (file: string): Row[] =>
  Deno.readTextFileSync(file).trim().split("\n").map((l) => JSON.parse(l));
const readJson = (p: string) => JSON.parse(Deno.readTextFileSync(p));

/** `100 · Σx / n` in order (the official formula). */
const pct = (xs: readonly number[]) => (100 * xs.reduce((a, b) => a + b, 0)) / xs.length;

/** `full` on the first three dev articles, once for the tests of this file. */
let fullOut: Promise<{ data: string; out: string }> | undefined;
function fullRun() {
  fullOut ??= (async () => {
    const data = `${TMP}/dev3.json`;
    await writeDevSubset(data, 3);
    const out = `${TMP}/full`;
    await Effect.runPromise(full({ data, out }));
    return { data, out };
  })();
  return fullOut;
}

Deno.test("rows: full writes rows.ndjson next to pred.json, equal to evaluate --per-question; its means are result.json", async () => {
  const { data, out } = await fullRun();
  const rows = readRows(`${out}/rows.ndjson`);
  const evFile = `${TMP}/ev.ndjson`;
  const ev = await Effect.runPromise(
    evaluate({ data, predictions: `${out}/pred.json`, perQuestion: evFile }),
  );
  const evRows = readRows(evFile);
  assertEquals(rows.length, ev.result.total);
  assert(rows.length > 100, `${rows.length} questions`);
  const pick = (r: Row) => ({ id: r.id, prediction: r.prediction, em: r.em, f1: r.f1 });
  assertEquals(rows.map(pick), evRows.map(pick));
  // Each row carries the question's gold answers, in file order.
  const d = readJson(data);
  const golds = d.data.flatMap((a: { paragraphs: { qas: { answers: { text: string }[] }[] }[] }) =>
    a.paragraphs.flatMap((p) => p.qas.map((q) => q.answers.map((x) => x.text)))
  );
  assertEquals(rows.map((r) => r.golds), golds);
  // The means of the rows are the result, to the bit (the same pass made both).
  const result = readJson(`${out}/result.json`);
  assertEquals(pct(rows.map((r) => r.em)), result.exact_match);
  assertEquals(pct(rows.map((r) => r.f1)), result.f1);
  assert(result.exact_match > 0 && result.f1 > result.exact_match, JSON.stringify(result));
  // Written atomically: no temporary file is left beside it.
  const names = [...Deno.readDirSync(out)].map((e) => e.name);
  assertEquals(names.filter((n) => n.endsWith(".tmp")), []);
});

Deno.test("rows: report of a full folder checks rows.ndjson against the scores it recomputes; stale rows or rows of another dataset are refused", async () => {
  const { out } = await fullRun();
  const result = readJson(`${out}/result.json`);
  const r = await Effect.runPromise(
    report({ inputs: [out], out: `${TMP}/rep-full`, resamples: 100, shuffles: 99 }),
  );
  const s = r.report.datasets[0].systems[0];
  assertEquals([s.scored_from, s.rows], ["predictions", `${out}/rows.ndjson`]);
  assertEquals([s.em.value, s.f1!.value], [result.exact_match, result.f1]);
  // Without rows: pred.json scored the same way, to the same numbers.
  const bare = `${TMP}/full-bare`;
  await Deno.mkdir(bare);
  for (const f of ["summary.json", "pred.json"]) await Deno.copyFile(`${out}/${f}`, `${bare}/${f}`);
  const r2 = await Effect.runPromise(
    report({ inputs: [bare], out: `${TMP}/rep-bare`, resamples: 100, shuffles: 99 }),
  );
  const s2 = r2.report.datasets[0].systems[0];
  assertEquals([s2.scored_from, s2.rows], ["predictions", null]);
  assertEquals([s2.em.value, s2.f1!.value], [s.em.value, s.f1!.value]);
  // Rows whose prediction is not pred.json's (stale), and rows missing a question.
  const rows = Deno.readTextFileSync(`${out}/rows.ndjson`).trim().split("\n");
  const first = JSON.parse(rows[0]);
  const cases: [string, string, RegExp][] = [
    [
      "stale",
      [JSON.stringify({ ...first, prediction: "something else" }), ...rows.slice(1)].join("\n"),
      new RegExp(
        `rows\\.ndjson: question "${first.id}": prediction "something else" here but .* a stale rows file`,
      ),
    ],
    [
      "short",
      rows.slice(1).join("\n"),
      new RegExp(
        `rows\\.ndjson: line 1: question "${
          JSON.parse(rows[1]).id
        }" where .* rows of another dataset`,
      ),
    ],
  ];
  for (const [name, text, want] of cases) {
    const dir = `${TMP}/full-${name}`;
    await Deno.mkdir(dir);
    for (const f of ["summary.json", "pred.json"]) {
      await Deno.copyFile(`${out}/${f}`, `${dir}/${f}`);
    }
    await Deno.writeTextFile(`${dir}/rows.ndjson`, text + "\n");
    const p = await runArgv([
      Deno.execPath(),
      "run",
      "-A",
      `${ROOT}/pipeline/report.ts`,
      dir,
      "--out",
      `${TMP}/rep-${name}`,
    ]);
    const err = p.stderr;
    assertEquals(p.code, 2, err);
    assertEquals(err.trimEnd().split("\n").length, 1, err);
    assertMatch(err, want);
    let left = true;
    try {
      Deno.statSync(`${TMP}/rep-${name}`);
    } catch {
      left = false;
    }
    assert(!left, "no report is left behind");
  }
});

/** A run config outside the repository: sparse-pi × articles [8, 10) of dev. */
function writeConfig(dir: string): string {
  const file = `${dir}/one_model.ts`;
  Deno.writeTextFileSync(
    file,
    `import { squadDev } from "${ROOT}/configs/datasets/squad_dev.ts";
import { sparsePi } from "${ROOT}/configs/models/sparse_pi.ts";
export const config = {
  datasets: [{ ...squadDev, abbr: "dev-8-10", reader: { articles: [8, 10] } }],
  models: [sparsePi],
};
`,
  );
  return file;
}

Deno.test("rows: run writes <dataset>.rows.ndjson; summary CIs = pairedBootstrap of the rows; its report uses the rows; a failed report only warns", async () => {
  const work = `${TMP}/work`;
  await Deno.mkdir(work);
  const cfg = writeConfig(work);
  const r = await runRun([cfg, "--max-workers", "2", "--work-dir", work]);
  assertEquals(r.code, 0, r.stderr);
  const [name] = [...Deno.readDirSync(work)].map((e) => e.name).filter((n) =>
    /^\d{8}_\d{6}$/.test(n)
  );
  const dir = `${work}/${name}`;
  const rows = readRows(`${dir}/predictions/sparse-pi/dev-8-10.rows.ndjson`);
  assertEquals(rows.length, 232);
  const ev = await Effect.runPromise(evaluate({
    data: `${dir}/datasets/dev-8-10/data.json`,
    predictions: `${dir}/predictions/sparse-pi/dev-8-10.json`,
  }));
  const res = readJson(`${dir}/results/sparse-pi/dev-8-10.json`);
  assertEquals([res.exact_match, res.f1], [JSON.parse(ev.stdout).exact_match, ev.result.f1]);
  assertEquals(pct(rows.map((x) => x.em)), res.exact_match);
  assertEquals(pct(rows.map((x) => x.f1)), res.f1);
  // The summary's CI columns: the paired bootstrap of the rows (B = 1000, seed 0), in percent.
  const ci = (xs: number[]) => {
    const b = pairedBootstrap([xs], { resamples: 1000, seed: 0 }).systems[0];
    return [100 * b.low, 100 * b.high];
  };
  const [emLo, emHi] = ci(rows.map((x) => x.em));
  const [f1Lo, f1Hi] = ci(rows.map((x) => x.f1));
  assert(emLo < res.exact_match && res.exact_match < emHi, `${emLo} ${emHi}`);
  const csv = Deno.readTextFileSync(`${dir}/summary/summary.csv`).trim().split("\n");
  assertEquals(csv, [
    "dataset,model,em,em_low,em_high,f1,f1_low,f1_high,bem,bem_low,bem_high",
    `dev-8-10,sparse-pi,${res.exact_match},${emLo},${emHi},${res.f1},${f1Lo},${f1Hi},-,-,-`,
  ]);
  const f = (x: number) => x.toFixed(2);
  assertEquals(
    Deno.readTextFileSync(`${dir}/summary/summary.md`).split("\n")[2],
    `| dev-8-10 | sparse-pi | ${f(res.exact_match)} | [${f(emLo)}, ${f(emHi)}] | ${f(res.f1)} | [${
      f(f1Lo)
    }, ${f(f1Hi)}] | - | - |`,
  );
  // The report of the run folder: scores recomputed from the predictions, the rows checked
  // against them; its CIs are the summary's.
  assertMatch(r.stdout, new RegExp(`^report: ${dir}/report/report\\.\\{html,md,json\\}$`, "m"));
  const rep = readJson(`${dir}/report/report.json`) as ReportJson;
  const s = rep.datasets[0].systems[0];
  assertEquals([s.name, s.scored_from], ["sparse-pi", "predictions"]);
  assert(s.rows?.endsWith("dev-8-10.rows.ndjson"), String(s.rows));
  assertEquals([s.em.value, s.em.low, s.em.high], [res.exact_match, emLo, emHi]);
  assertEquals([s.f1!.value, s.f1!.low, s.f1!.high], [res.f1, f1Lo, f1Hi]);
  for (const n of ["report.html", "report.md"]) assert(Deno.statSync(`${dir}/report/${n}`).isFile);
  // A report that cannot be written is one warning line; the run still succeeds.
  await Deno.remove(`${dir}/report`, { recursive: true });
  await Deno.writeTextFile(`${dir}/report`, "in the way");
  const again = await runRun([cfg, "-r", "--work-dir", work]);
  assertEquals(again.code, 0, again.stderr);
  const warn = again.stderr.split("\n").filter((l) => l.startsWith("run: warning: no report"));
  assertEquals(warn.length, 1, again.stderr);
  assertMatch(warn[0], /report: exists and is not a folder\); the run succeeded$/);
  assertEquals(Deno.readTextFileSync(`${dir}/report`), "in the way");
});
