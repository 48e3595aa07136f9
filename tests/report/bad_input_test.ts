/**
 * `report` refuses bad input as the stages do: exit 2, one line on stderr
 * (`report: ...`), and no report folder or file left behind (not even a
 * temporary one): a prediction file for another dataset, two systems on
 * different question sets (different answered questions, or datasets of one
 * name with different questions), an INPUT that is none of the three kinds,
 * an empty folder.
 */
import { assert, assertEquals } from "../_assert.ts";
import { DEV_GZ, listDir, runStage, TRAIN_GZ } from "../_util.ts";
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

Deno.test("report refuses an INPUT that is none of the three kinds, and an empty folder", async () => {
  const odd = `${TMP}/odd`;
  await Deno.mkdir(odd);
  await Deno.writeTextFile(`${odd}/notes.txt`, "x");
  const kinds =
    "a report INPUT is a full output folder (summary.json and pred.json), a run work folder (configs/<name>.json and predictions/), or NAME=pred.json";
  assertEquals(await refused([odd]), `report: ${odd}: none of the three kinds: ${kinds}`);
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
