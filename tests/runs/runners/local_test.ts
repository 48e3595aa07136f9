/**
 * The local runner's packs (runs/runners/local.ts): encode partitions of one half share a
 * process over the union of their ranges; each partition keeps its own check, status and
 * retries.
 */
import * as Effect from "effect/Effect";
import { assertEquals, assertMatch, assertStringIncludes } from "../../_assert.ts";
import { LocalRunner, packTasks } from "../../../runs/runners/local.ts";
import { newStatus, type TaskStatus } from "../../../runs/runners/status.ts";
import type { Task } from "../../../runs/plan/task.ts";

// A stand-in encoder: writes <out>/<i> for each i of its --range, except that the first process
// to meet item 5 skips it (and leaves a marker), so item 5's partition is incomplete once.
const SCRIPT = `
const [out, range] = Deno.args;
const [a, b] = range.slice("--range=".length).split(":").map(Number);
console.log("range " + a + ":" + b);
for (let i = a; i < b; i++) {
  if (i === 5) {
    try { Deno.statSync(out + "/skipped"); } catch {
      Deno.writeTextFileSync(out + "/skipped", "");
      continue;
    }
  }
  Deno.writeTextFileSync(out + "/" + i, String(i));
}
`;

function tasks(dir: string, stage: Task["stage"], parts: [number, number][]): TaskStatus[] {
  const script = `${dir}/enc.ts`;
  Deno.writeTextFileSync(script, SCRIPT);
  return parts.map(([a, b], i) =>
    newStatus({
      id: `${stage}/m/d/${i}`,
      stage,
      model: "m",
      dataset: "d",
      part: { index: i, count: parts.length },
      range: [a, b],
      items: b - a,
      unit: "questions",
      argv: [
        Deno.execPath(),
        "run",
        "--allow-read",
        "--allow-write",
        script,
        dir,
        `--range=${a}:${b}`,
      ],
      log: `${dir}/${i}.log`,
      watch: [dir],
      check: {
        kind: "files",
        files: Array.from({ length: b - a }, (_, k) => `${dir}/${a + k}`),
      },
      deps: [],
      gres: null,
    })
  );
}

Deno.test("packTasks: consecutive partitions of a half share a process, workers split by half", () => {
  const dir = Deno.makeTempDirSync();
  const q = tasks(dir, "encode_question", [[0, 4], [4, 8], [8, 12], [12, 13]]);
  const ids = (packs: TaskStatus[][]) => packs.map((p) => p.map((st) => st.task.id).join("+"));
  // One half, 2 workers: two packs of consecutive partitions, the larger first.
  assertEquals(ids(packTasks(q, 2)), [
    "encode_question/m/d/0+encode_question/m/d/1",
    "encode_question/m/d/2+encode_question/m/d/3",
  ]);
  // One worker: one process for the half; more workers than partitions: one each.
  assertEquals(packTasks(q, 1).map((p) => p.length), [4]);
  assertEquals(packTasks(q, 8).map((p) => p.length), [1, 1, 1, 1]);
  // A gap (partition 1 complete, not in the batch) splits the run: 0 alone, then 2+3.
  assertEquals(packTasks([q[0], q[2], q[3]], 1).map((p) => p.length), [1, 2]);
  // Another stage is never packed.
  const m = tasks(dir, "merge", [[0, 4], [4, 8]]);
  assertEquals(packTasks(m, 1).map((p) => p.length), [1, 1]);
  Deno.removeSync(dir, { recursive: true });
});

Deno.test("LocalRunner: a pack runs once over the union of its ranges; an incomplete partition retries alone", async () => {
  const dir = Deno.makeTempDirSync();
  const q = tasks(dir, "encode_question", [[0, 4], [4, 8], [8, 12]]);
  const events: string[] = [];
  await Effect.runPromise(
    new LocalRunner().run(q, {
      maxWorkers: 1,
      timeoutS: 60,
      retries: 1,
      notify: (st, e) => events.push(`${st.task.id.slice(-1)} ${e}`),
    }),
  );
  assertEquals(q.map((st) => [st.state, st.attempts]), [["done", 1], ["done", 2], ["done", 1]]);
  // The pack's process wrote everything but item 5; partition 1 then ran alone with its range.
  const log0 = Deno.readTextFileSync(`${dir}/0.log`);
  const log1 = Deno.readTextFileSync(`${dir}/1.log`);
  assertMatch(log0, /^== encode_question\/m\/d\/0 attempt 1 local pid (\d+) /);
  // The log that holds the pack's output records the command line it started: the union's range.
  const argv0 = JSON.parse(/^== argv (.*)$/m.exec(log0)![1]);
  assertEquals(argv0.at(-1), "--range=0:12");
  assertStringIncludes(log0, "range 0:12\n");
  const pid = /local pid (\d+)/.exec(log0)![1];
  assertStringIncludes(
    log1,
    `== encode_question/m/d/1 attempt 1 local pid ${pid} `,
  );
  assertStringIncludes(
    log1,
    "(one process for encode_question/m/d/0, encode_question/m/d/1, encode_question/m/d/2; " +
      `output in ${dir}/0.log)`,
  );
  assertMatch(
    log1,
    /== encode_question\/m\/d\/1 attempt 2 local pid \d+ [^\n]*\n== argv [^\n]*"--range=4:8"\]\nrange 4:8\n/,
  );
  assertEquals(events.filter((e) => e.endsWith("retry")), ["1 retry"]);
  assertEquals(events.filter((e) => e.endsWith("done")).sort(), ["0 done", "1 done", "2 done"]);
  for (let i = 0; i < 12; i++) assertEquals(Deno.readTextFileSync(`${dir}/${i}`), String(i));
  Deno.removeSync(dir, { recursive: true });
});
