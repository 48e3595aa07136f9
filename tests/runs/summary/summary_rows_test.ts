/**
 * The run summary's intervals from the per-question rows
 * (`runs/summary/summary.ts` `readSummary`), on hand-made run folders: rows
 * give the bootstrap intervals of their em, f1 and bem; a missing rows file
 * (a run folder from before rows were written) gives `null` intervals; a
 * rows file that is there but is not rows is refused with one line naming
 * the file, the line and what is wrong (never an interval silently left
 * out), a line at a time (a bad byte, a line over 16 MiB); and `run` stops
 * on it with exit 2 and that line, writing no summary file.
 *
 * @module
 */
import { assert, assertEquals } from "../../_assert.ts";
import { runRun, testTempDir } from "../../_util.ts";
import { readSummary, summaryInterval } from "../../../runs/summary/summary.ts";
import { runLayout } from "../../../runs/plan/layout.ts";
import type { Plan } from "../../../runs/plan/task.ts";

const TMP = testTempDir("phraseval-summary-rows-test-");

let folders = 0;

/**
 * A run folder of one model `m` on one dataset `d` (metrics em, f1 and, with
 * `bem`, bem) with a result file and, unless `rows` is `null`, a rows file
 * of those bytes; its plan, as `readSummary` reads it.
 */
function runFolder(rows: string | Uint8Array | null, bem = false): Plan {
  const runDir = `${TMP}/run${folders++}`;
  const L = runLayout(runDir);
  Deno.mkdirSync(`${runDir}/results/m`, { recursive: true });
  Deno.mkdirSync(`${runDir}/predictions/m`, { recursive: true });
  Deno.writeTextFileSync(
    L.result("m", "d"),
    JSON.stringify({ exact_match: 50, f1: 62.5, ...(bem ? { bem: 50 } : {}), total: 2 }),
  );
  if (typeof rows === "string") Deno.writeTextFileSync(L.rows("m", "d"), rows);
  else if (rows !== null) Deno.writeFileSync(L.rows("m", "d"), rows);
  return {
    runDir,
    config: {
      datasets: [{ abbr: "d", metrics: bem ? ["em", "f1", "bem"] : ["em", "f1"] }],
      models: [{ abbr: "m" }],
    },
  } as unknown as Plan;
}

/** The one line `readSummary` throws on `plan`, or `"accepted"`. */
function refusal(plan: Plan): string {
  try {
    readSummary(plan);
    return "accepted";
  } catch (e) {
    return String(e);
  }
}

const row = (em: unknown, f1: unknown, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ kind: "score", id: "q", prediction: "a", em, f1, ...extra }) + "\n";

Deno.test("readSummary: the intervals are the bootstrap of the rows' em, f1 and bem", () => {
  const plan = runFolder(
    row(1, 1, { bem: 0.9 }) + row(0, 0.25, { bem: 0.2 }) + "\n" + row(1, 0.5, { bem: 0.6 }),
    true,
  );
  const [s] = readSummary(plan);
  assertEquals([s.em, s.f1, s.bem], [50, 62.5, 50]);
  assertEquals(s.emCi, summaryInterval([1, 0, 1]));
  assertEquals(s.f1Ci, summaryInterval([1, 0.25, 0.5]));
  // BEM's interval is of the accuracy (score > 0.5) by default.
  assertEquals(s.bemCi, summaryInterval([1, 0, 1]));
  assert(s.emCi![0] < s.emCi![1], `${s.emCi}`);
});

Deno.test("readSummary: f1 null in every row (regex answers) gives no f1 interval", () => {
  const [s] = readSummary(runFolder(row(1, null) + row(0, null)));
  assertEquals([s.emCi, s.f1Ci], [summaryInterval([1, 0]), null]);
});

Deno.test("readSummary: no rows file (a run folder from before rows) gives n/a intervals", () => {
  const [s] = readSummary(runFolder(null));
  assertEquals([s.em, s.emCi, s.f1Ci], [50, null, null]);
});

Deno.test("readSummary: a rows file that is not rows is one line naming the file, the line and what is wrong", () => {
  const cases: [string, string][] = [
    [row(1, 1) + "{not json\n", "line 2: invalid JSON"],
    [row(1, 1) + row(0, 0) + "[1, 2]\n", "line 3: a row is not an object"],
    ["null\n", "line 1: a row is not an object"],
    [row("1", 1), 'line 1: em "1" is not a number from 0 to 1'],
    [row(1, 1) + JSON.stringify({ id: "q", f1: 1 }) + "\n", "line 2: no em"],
    [row(2, 1), "line 1: em 2 is not a number from 0 to 1"],
    [row(1, "0.5"), 'line 1: f1 "0.5" is not a number from 0 to 1 (nor null, for regex answers)'],
    [row(1, 1) + "\n" + row(0, null), "line 3: f1 null where the rows before have an f1"],
    [row(1, null) + row(0, 0), "line 2: an f1 where the rows before have null"],
    [row(1, 1, { bem: "high" }), 'line 1: bem "high" is not a number from 0 to 1'],
    [row(1, 1, { bem: 0.5 }) + row(0, 0), "line 2: no bem where the rows before have one"],
  ];
  for (const [text, want] of cases) {
    const plan = runFolder(text);
    assertEquals(refusal(plan), `${runLayout(plan.runDir).rows("m", "d")}: ${want}`, text);
  }
});

Deno.test("readSummary: a bad byte or a line over 16 MiB is named by its line, the file read a line at a time", () => {
  const enc = new TextEncoder();
  const head = enc.encode(row(1, 1) + row(0, 0.5));
  const bytes = new Uint8Array(head.length + 4);
  bytes.set(head);
  bytes.set([0x7b, 0xff, 0x7d, 0x0a], head.length);
  const plan = runFolder(bytes);
  assertEquals(
    refusal(plan),
    `${runLayout(plan.runDir).rows("m", "d")}: line 3: invalid UTF-8 at byte ${head.length + 1}`,
  );
  const long = runFolder(row(1, 1) + row(0, 0, { pad: "x".repeat(17 << 20) }));
  assertEquals(
    refusal(long),
    `${runLayout(long.runDir).rows("m", "d")}: line 2: line longer than 16777216 bytes`,
  );
});

Deno.test("run: a rows file that is not rows stops the summary with exit 2 and its one line; no summary file is written", async () => {
  const data = `${TMP}/one.json`;
  Deno.writeTextFileSync(
    data,
    JSON.stringify({
      version: "1.1",
      data: [{
        title: "T",
        paragraphs: [{
          context: "Paris is in France.",
          qas: [
            {
              id: "q1",
              question: "Where is Paris?",
              answers: [{ text: "France", answer_start: 12 }],
            },
            {
              id: "q2",
              question: "What is in France?",
              answers: [{ text: "Paris", answer_start: 0 }],
            },
          ],
        }],
      }],
    }),
  );
  Deno.writeTextFileSync(`${TMP}/p.json`, JSON.stringify({ q1: "France", q2: "Lyon" }));
  const cfg = `${TMP}/cfg.ts`;
  Deno.writeTextFileSync(
    cfg,
    `export const config = {
  datasets: [{ abbr: "d", type: "squad", path: ${JSON.stringify(data)} }],
  models: [{ abbr: "m", type: "predictions", predictions: ${JSON.stringify(`${TMP}/p.json`)} }],
};
`,
  );
  const work = `${TMP}/work`;
  const first = await runRun([cfg, "--work-dir", work, "--max-workers", "1"]);
  assertEquals(first.code, 0, first.stderr);
  const [runDir] = [...Deno.readDirSync(work)].map((e) => `${work}/${e.name}`);
  const rows = runLayout(runDir).rows("m", "d");
  const lines = Deno.readTextFileSync(rows).trim().split("\n");
  assertEquals(lines.map((l) => JSON.parse(l).em), [1, 0]);
  Deno.writeTextFileSync(rows, lines[0] + "\n" + lines[1].replace('"em":0', '"em":"0"') + "\n");
  for (const ext of ["txt", "md", "csv"]) Deno.removeSync(`${runDir}/summary/summary.${ext}`);
  const second = await runRun([cfg, "--work-dir", work, "-r", "--mode", "eval"]);
  assertEquals(second.code, 2, second.stderr);
  const errLines = second.stderr.trim().split("\n");
  assertEquals(
    errLines[errLines.length - 1],
    `run: ${rows}: line 2: em "0" is not a number from 0 to 1`,
  );
  assertEquals([...Deno.readDirSync(`${runDir}/summary`)].map((e) => e.name), []);
});
