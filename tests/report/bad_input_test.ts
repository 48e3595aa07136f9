/**
 * `report` refuses bad input as the stages do: exit 2, one line on stderr
 * (`report: ...`), and no report folder or file left behind (not even a
 * temporary one): a prediction file for another dataset, two systems on
 * different question sets (different answered questions, or datasets of one
 * name with different questions), an INPUT that is none of the kinds,
 * an empty folder; rows whose em/f1 are not what their predictions score
 * (edited), rows whose gold answers are not the dataset's (the dataset
 * changed after the run); every numeric option out of range.
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals } from "../_assert.ts";
import { DEV_GZ, listDir, runStage, sha256File, TRAIN_GZ } from "../_util.ts";
import { evaluate } from "../../metrics/evaluate.ts";
import { writeDevSubset, writeDevSystems } from "./_systems.ts";

const TMP = await Deno.makeTempDir({ prefix: "phraseval-report-bad-" });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(TMP, { recursive: true });
  } catch { /* gone */ }
});
const PREDS = await writeDevSystems(TMP);
const SUB = `${TMP}/sub`;
await Deno.mkdir(SUB);
const SUB_PREDS = await writeDevSystems(SUB, 5);

/** Runs `report ARGS --out <fresh>/report` and checks the refusal; returns the line. */
async function refused(args: readonly string[]): Promise<string> {
  const parent = await Deno.makeTempDir({ dir: TMP, prefix: "out-" });
  const r = await runStage("pipeline/report.ts", [...args, "--out", `${parent}/report`]);
  const lines = r.stderr.trimEnd().split("\n");
  assertEquals(r.code, 2, r.stderr);
  assertEquals(lines.length, 1, r.stderr);
  assert(lines[0].startsWith("report: "), lines[0]);
  assertEquals(r.stdout, "");
  assertEquals(await listDir(parent), [], "nothing left behind");
  return lines[0];
}

Deno.test("report refuses a prediction file for another dataset (ids do not match)", async () => {
  const line = await refused([`dev=${PREDS[0]}`, "--data", TRAIN_GZ]);
  assertEquals(
    line,
    `report: ${
      PREDS[0]
    }: 10570 of its 10570 question ids are not questions of ${TRAIN_GZ} (first: "56be4db0acb8001400a502ec"): predictions for another dataset?`,
  );
});

Deno.test("report refuses two systems on different question sets", async () => {
  // Answers to different questions of one dataset.
  const line = await refused([`all=${PREDS[1]}`, `five=${SUB_PREDS[1]}`, "--data", DEV_GZ]);
  assert(line.includes(`${SUB_PREDS[1]}: answers `), line);
  assert(
    line.includes(
      `of the 10570 questions of dataset "dev-v1.1", while "all" answers 10570: two systems on different question sets`,
    ),
    line,
  );
  // Two full folders whose datasets share a name and differ.
  for (const [dir, n, pred] of [["a", 5, SUB_PREDS[1]], ["b", 3, SUB_PREDS[2]]] as const) {
    await Deno.mkdir(`${TMP}/${dir}/data`, { recursive: true });
    await writeDevSubset(`${TMP}/${dir}/data/dev.json`, n);
    await Deno.mkdir(`${TMP}/${dir}/full`);
    await Deno.writeTextFile(
      `${TMP}/${dir}/full/summary.json`,
      JSON.stringify({ data: `${TMP}/${dir}/data/dev.json`, encoder: { name: `enc-${dir}` } }),
    );
    await Deno.copyFile(pred, `${TMP}/${dir}/full/pred.json`);
  }
  const line2 = await refused([`${TMP}/a/full`, `${TMP}/b/full`]);
  assert(line2.includes('of dataset "dev" are on different question sets'), line2);
});

Deno.test("report refuses an INPUT that is none of the kinds, and an empty folder", async () => {
  const odd = `${TMP}/odd`;
  await Deno.mkdir(odd);
  await Deno.writeTextFile(`${odd}/notes.txt`, "x");
  const kinds =
    "a report INPUT is a full output folder (summary.json and pred.json), a run work folder (configs/<name>.json and predictions/), an lm-evaluation-harness output folder or OpenCompass work folder (with --data), or NAME=pred.json";
  assertEquals(await refused([odd]), `report: ${odd}: none of these kinds: ${kinds}`);
  const empty = `${TMP}/empty`;
  await Deno.mkdir(empty);
  assertEquals(await refused([empty]), `report: ${empty}: an empty folder (${kinds})`);
  // A bare prediction file, and NAME=pred.json without --data.
  assertEquals(await refused([PREDS[0]]), `report: ${PREDS[0]}: a file without NAME= (${kinds})`);
  assertEquals(
    await refused([`x=${PREDS[0]}`]),
    `report: x=${PREDS[0]}: NAME=pred.json needs --data`,
  );
  assertEquals(
    await refused([`x=${PREDS[0]}`, "--data", DEV_GZ, "--baseline", "nope"]),
    "report: --baseline nope: no such system (systems: x)",
  );
});

/**
 * A `full` folder of the firstCaps system on the first 5 dev articles
 * (`data`), with the rows `evaluate --per-question` writes; returns the
 * rows' lines.
 */
async function fullWithRows(dir: string, data: string): Promise<string[]> {
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(
    `${dir}/summary.json`,
    JSON.stringify({ data, out: dir, encoder: { name: "enc" } }),
  );
  await Deno.copyFile(SUB_PREDS[1], `${dir}/pred.json`);
  await Effect.runPromise(
    evaluate({ data, predictions: `${dir}/pred.json`, perQuestion: `${dir}/rows.ndjson` }),
  );
  return (await Deno.readTextFile(`${dir}/rows.ndjson`)).trimEnd().split("\n");
}

/** `report DIR` (small B and R) into a fresh folder: its report.json. */
async function reportOf(dir: string) {
  const out = `${await Deno.makeTempDir({ dir: TMP, prefix: "ok-" })}/report`;
  const r = await runStage("pipeline/report.ts", [dir, "--out", out, "--resamples", "50"]);
  assertEquals(r.code, 0, r.stderr);
  return JSON.parse(await Deno.readTextFile(`${out}/report.json`));
}

Deno.test("report re-scores the predictions: rows edited to em=1 are refused, and without rows EM is the fold's", async () => {
  const data = `${TMP}/dev5.json`;
  await writeDevSubset(data, 5);
  const dir = `${TMP}/edited`;
  const rows = await fullWithRows(dir, data);
  const first = JSON.parse(rows[0]);
  assertEquals([first.prediction, first.em], ["50th", 0]);
  // Before: EM 100 from the edited rows. Now: refused at the first edited row.
  await Deno.writeTextFile(
    `${dir}/rows.ndjson`,
    rows.map((l) => JSON.stringify({ ...JSON.parse(l), em: 1, f1: 1 })).join("\n") + "\n",
  );
  assertEquals(
    await refused([dir]),
    `report: ${dir}/rows.ndjson: question "${first.id}": em 1, f1 1 here but its prediction "50th" scores em 0, f1 0 against ${data}: rows edited, or scored on other gold answers`,
  );
  // The rows as written are accepted; the numbers are the fold's, and the report says so.
  await Deno.writeTextFile(`${dir}/rows.ndjson`, rows.join("\n") + "\n");
  const ds = (await reportOf(dir)).datasets[0];
  const s = ds.systems[0];
  assertEquals([s.em.value, s.f1.value], [(100 * 230) / 1877, 16.741841479628427]);
  assertEquals([s.scored_from, s.rows], ["predictions", `${dir}/rows.ndjson`]);
  assertEquals(ds.data_sha256, await sha256File(data));
});

Deno.test("report notices gold answers changed in the dataset after the run", async () => {
  const data = `${TMP}/dev5-changed.json`;
  await writeDevSubset(data, 5);
  const dir = `${TMP}/changed`;
  const rows = await fullWithRows(dir, data);
  const first = JSON.parse(rows[0]);
  // The dataset changes after the run: question 1's gold answers become its prediction.
  const d = JSON.parse(await Deno.readTextFile(data));
  const q = d.data[0].paragraphs[0].qas[0];
  assertEquals(q.id, first.id);
  for (const a of q.answers) a.text = "50th";
  await Deno.writeTextFile(data, JSON.stringify(d));
  assertEquals(
    await refused([dir]),
    `report: ${dir}/rows.ndjson: question "${first.id}": gold answers ${
      JSON.stringify(first.golds)
    } here but ["50th","50th","50th"] in ${data}: the dataset changed after these rows were scored`,
  );
  // Rows without golds: the recorded em no longer matches the re-score.
  await Deno.writeTextFile(
    `${dir}/rows.ndjson`,
    rows.map((l) => JSON.stringify({ ...JSON.parse(l), golds: undefined })).join("\n") + "\n",
  );
  assertEquals(
    await refused([dir]),
    `report: ${dir}/rows.ndjson: question "${first.id}": em 0, f1 0 here but its prediction "50th" scores em 1, f1 1 against ${data}: rows edited, or scored on other gold answers`,
  );
  // Without rows, the predictions are scored against the dataset as it is now.
  await Deno.remove(`${dir}/rows.ndjson`);
  const s = (await reportOf(dir)).datasets[0].systems[0];
  assertEquals(s.em.value, (100 * 231) / 1877);
  assertEquals(s.em.value.toFixed(2), "12.31");
});

Deno.test("report: every numeric option out of range is a usage error (exit 2, one line)", async () => {
  const base = [`x=${SUB_PREDS[0]}`, `y=${SUB_PREDS[1]}`, "--data", DEV_GZ];
  const cases: [string[], string][] = [
    [["--resamples", "0"], "--resamples must be an integer from 1 to 100000000, got 0"],
    [["--resamples", "-5"], "--resamples must be an integer from 1 to 100000000, got -5"],
    [
      ["--resamples", "100000001"],
      "--resamples must be an integer from 1 to 100000000, got 100000001",
    ],
    [["--shuffles", "0"], "--shuffles must be an integer from 1 to 9007199254740991, got 0"],
    [["--top", "-1"], "--top must be an integer from 0 to 9007199254740991, got -1"],
    [["--seed", "-1"], "--seed must be an integer from 0 to 9007199254740991, got -1"],
    [
      ["--seed", "99999999999999999999"],
      "--seed must be an integer from 0 to 9007199254740991, got 100000000000000000000",
    ],
  ];
  for (const [flags, message] of cases) {
    assertEquals(await refused([...base, ...flags]), `report: ${message}`);
  }
});
