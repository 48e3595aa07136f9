/**
 * `pipeline/run.ts` with the local runner: config errors, the plan, a full
 * run of two models × two articles (partitioned encodes merged back into
 * one result per pair), `-r` after an interrupted run, and the progress
 * timeout. Each run is a `deno run` subprocess with the permissions of
 * `deno task run`, in a temporary work dir, from a config written OUTSIDE
 * the repository (it imports the repository's configs by path).
 *
 * @module
 */
import { DUMP_MANIFEST } from "../../io/manifest.ts";
import * as Effect from "effect/Effect";
import { assert, assertEquals, assertMatch, assertStringIncludes } from "../_assert.ts";
import { ROOT, runArgv, runRun, runTaskArgv, spawnChild } from "../_util.ts";
import { evaluate } from "../../metrics/evaluate.ts";
import { expandReuseFlag } from "../../pipeline/run.ts";
import { findImportCycle, formatSummary, partitions } from "../../runs/mod.ts";
import { expandArrayString, shellQuote } from "../../runs/mod.ts";

const FIXTURES = `${ROOT}/tests/fixtures/configs`;

/** A run config outside the repository: two sparse-pi models × articles [8, 10) of dev. */
function writeConfig(dir: string, extra = ""): string {
  const file = `${dir}/two_models.ts`;
  Deno.writeTextFileSync(
    file,
    `import { squadDev } from "${ROOT}/configs/datasets/squad_dev.ts";
import { sparsePi, sparsePiSmallBatch } from "${ROOT}/configs/models/sparse_pi.ts";
export const config = {
  datasets: [{ ...squadDev, abbr: "dev-8-10", reader: { articles: [8, 10] } }],
  models: [sparsePi, sparsePiSmallBatch],${extra}
};
`,
  );
  return file;
}

const runDirs = (workDir: string) => {
  try {
    return [...Deno.readDirSync(workDir)].map((e) => e.name).sort();
  } catch {
    return [];
  }
};

const readJson = (p: string) => JSON.parse(Deno.readTextFileSync(p));
const lastRun = (dir: string) =>
  Deno.readTextFileSync(`${dir}/runs.jsonl`).trim().split("\n").map((l) => JSON.parse(l)).pop();

Deno.test("run: config errors name the file and the field; exit 2; nothing created", async () => {
  const work = await Deno.makeTempDir({ prefix: "pv-run-bad-" });
  const cases: [string, RegExp][] = [
    [
      "bad_type.ts",
      /^run: tests\/fixtures\/configs\/bad_type\.ts: models\[0\]\.batch\.context: expected number, got "32"$/,
    ],
    [
      "missing_path.ts",
      /^run: tests\/fixtures\/configs\/missing_path\.ts: datasets\[0\]\.path: no such file ".*\/tests\/fixtures\/configs\/no-such-data\.json\.gz"$/,
    ],
    [
      "unknown_encoder.ts",
      /^run: tests\/fixtures\/configs\/unknown_encoder\.ts: models\[1\]\.encoder: unknown encoder "nope" \(known: sparse-pi[^)]*\)$/,
    ],
    [
      "cycle_a.ts",
      /^run: tests\/fixtures\/configs\/cycle_a\.ts: circular import: tests\/fixtures\/configs\/cycle_a\.ts → tests\/fixtures\/configs\/cycle_b\.ts → tests\/fixtures\/configs\/cycle_a\.ts$/,
    ],
    [
      "abbr_clash.ts",
      /^run: tests\/fixtures\/configs\/abbr_clash\.ts: models\[1\]\.abbr: "sparse-pi" is also the abbr of models\[0\]$/,
    ],
    [
      "no_export.ts",
      /^run: tests\/fixtures\/configs\/no_export\.ts: cannot load: exports no `config`/,
    ],
  ];
  for (const [file, re] of cases) {
    const r = await runRun([`tests/fixtures/configs/${file}`, "--work-dir", work]);
    assertEquals(r.code, 2, `${file}: ${r.stderr}`);
    const lines = r.stderr.trim().split("\n");
    assertEquals(lines.length, 1, `${file}: one stderr line, got ${r.stderr}`);
    assertMatch(lines[0], re);
    assertEquals(r.stdout, "");
  }
  assertEquals(runDirs(work), [], "no run folder was created");
  // The cycle is found without running the modules.
  assertEquals(
    (await findImportCycle(`${FIXTURES}/cycle_b.ts`))?.map((f) => f.split("/").pop()),
    ["cycle_b.ts", "cycle_a.ts", "cycle_b.ts"],
  );
  assertEquals(await findImportCycle(`${ROOT}/configs/eval_two_models_mini.ts`), undefined);
  await Deno.remove(work, { recursive: true });
});

Deno.test("run: bad usage exits 2 and creates nothing (--slurm without a cluster, --mode merge without -r)", async () => {
  const work = await Deno.makeTempDir({ prefix: "pv-run-usage-" });
  const cfg = writeConfig(work);
  const noSlurm = await runRun([cfg, "--slurm", "--partition", "debug", "--work-dir", work], {
    SLURM_CONF: `${work}/no-such-slurm.conf`,
  });
  assertEquals(noSlurm.code, 2, noSlurm.stderr);
  assertMatch(
    noSlurm.stderr.trim(),
    /^run: --slurm: no Slurm cluster reachable \(.+\); set SLURM_CONF/,
  );
  assertEquals(noSlurm.stderr.trim().split("\n").length, 1);
  const merge = await runRun([cfg, "--mode", "merge", "--work-dir", work]);
  assertEquals(merge.code, 2);
  assertEquals(
    merge.stderr.trim(),
    "run: --mode merge needs -r (a run folder with the earlier stages' outputs)",
  );
  const partition = await runRun([cfg, "--partition", "debug", "--work-dir", work]);
  assertEquals(partition.code, 2);
  assertEquals(partition.stderr.trim(), "run: --partition needs --slurm");
  const reuse = await runRun([cfg, "-r", "--work-dir", `${work}/empty`]);
  assertEquals(reuse.code, 2);
  assertMatch(reuse.stderr.trim(), /^run: -r: no earlier run in /);
  assertEquals(runDirs(work), ["two_models.ts"], "nothing but the config");
  await Deno.remove(work, { recursive: true });
});

Deno.test("run: --dry-run prints the plan (partitions by --max-partition-size) and creates nothing", async () => {
  const work = await Deno.makeTempDir({ prefix: "pv-run-plan-" });
  const cfg = writeConfig(work);
  const r = await runRun([cfg, "--dry-run", "--max-partition-size", "20", "--work-dir", work]);
  assertEquals(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split("\n");
  // Header, table head and rule, then 1 prepare + 2 × (3 context + 12 question) + 2 merge + 2 eval.
  assertMatch(lines[0], /2 model\(s\) × 1 dataset\(s\), 35 tasks, partitions of 20, local/);
  const rows = lines.slice(3).map((l) => l.split(/\s+/));
  assertEquals(rows.length, 35);
  assertEquals(rows[0].slice(1, 8), ["prepare", "-", "dev-8-10", "-", "8:10", "2", "articles"]);
  assertEquals(rows[1].slice(1, 8), [
    "encode_context",
    "sparse-pi",
    "dev-8-10",
    "1/3",
    "0:20",
    "20",
    "paragraphs",
  ]);
  assertEquals(rows[3].slice(5, 7), ["40:47", "7"]);
  const q = rows.filter((x) => x[1] === "encode_question" && x[2] === "sparse-pi");
  assertEquals(q.length, 12);
  assertEquals(q[11].slice(5, 7), ["220:232", "12"]);
  assertEquals(rows.filter((x) => x[1] === "merge").map((x) => x[6]), ["232", "232"]);
  assertEquals(runDirs(work), ["two_models.ts"]);
  await Deno.remove(work, { recursive: true });
});

/** What a finished run wrote: its folder, and each model's predictions and result file. */
interface RunOutputs {
  readonly dir: string;
  readonly preds: Record<string, string>;
  readonly results: Record<string, string>;
}

/** The outputs of the uninterrupted run of the next test (set when that test has run). */
let firstRun: RunOutputs | null = null;

function readRun(dir: string): RunOutputs {
  const each = (kind: string) =>
    Object.fromEntries(
      ["sparse-pi", "sparse-pi-b8"].map((m) => [
        m,
        Deno.readTextFileSync(`${dir}/${kind}/${m}/dev-8-10.json`),
      ]),
    );
  return { dir, preds: each("predictions"), results: each("results") };
}

/**
 * An uninterrupted run's outputs to compare with: the next test's when it
 * ran first, else one made here, so that a test using it does not depend on
 * another test having run (`--filter`, or that test failing).
 */
async function referenceRun(): Promise<RunOutputs> {
  if (firstRun) return firstRun;
  const { dir } = await localRun("pv-run-ref-");
  firstRun = readRun(dir);
  return firstRun;
}

/** The two-model config run locally (partitions of 40, 2 workers) in a new work folder. */
async function localRun(prefix: string) {
  const work = await Deno.makeTempDir({ prefix });
  const cfg = writeConfig(work);
  const r = await runRun([
    cfg,
    "--max-partition-size",
    "40",
    "--max-workers",
    "2",
    "--work-dir",
    work,
  ]);
  assertEquals(r.code, 0, r.stderr);
  const [name] = runDirs(work).filter((n) => /^\d{8}_\d{6}$/.test(n));
  return { work, cfg, r, dir: `${work}/${name}` };
}

Deno.test("run: two models × one dataset locally; partitions merged into one scored result", async () => {
  const { work, cfg, r, dir } = await localRun("pv-run-local-");
  // Progress lines (stderr is not a TTY): one start and one done per task.
  // (elapsed reads 59.9s, then 1m00s: a loaded machine passes a minute.)
  assertEquals((r.stderr.match(/^run: \[ *(?:\d+m)?[\d.]+s\] start /gm) ?? []).length, 21);
  assertEquals((r.stderr.match(/^run: \[ *(?:\d+m)?[\d.]+s\] done /gm) ?? []).length, 21);
  // The layout.
  for (
    const p of [
      "configs/two_models.json",
      "datasets/dev-8-10/data.json",
      "datasets/dev-8-10/context.json",
      "datasets/dev-8-10/question.json",
      "predictions/sparse-pi/dev-8-10.json",
      "predictions/sparse-pi/dev-8-10.rows.ndjson",
      "predictions/sparse-pi-b8/dev-8-10.rows.ndjson",
      "report/report.json",
      "report/report.html",
      "predictions/sparse-pi-b8/dev-8-10.json",
      "results/sparse-pi/dev-8-10.json",
      "results/sparse-pi-b8/dev-8-10.json",
      "summary/summary.csv",
      "summary/summary.md",
      "summary/summary.txt",
      "logs/prepare/dev-8-10.log",
      "logs/encode_context/sparse-pi/dev-8-10.1.log",
      "logs/merge/sparse-pi-b8/dev-8-10.log",
      "runs.jsonl",
    ]
  ) assert(Deno.statSync(`${dir}/${p}`).isFile, p);
  const saved = readJson(`${dir}/configs/two_models.json`);
  assertEquals(saved.models.map((m: { abbr: string }) => m.abbr), ["sparse-pi", "sparse-pi-b8"]);
  assertEquals(saved.datasets[0].articles, [8, 10]);
  assertEquals(saved.run.maxPartitionSize, 40);
  // 47 paragraphs in 2 context partitions, 232 questions in 6: every dump file is there.
  for (const m of ["sparse-pi", "sparse-pi-b8"]) {
    // Besides the dump files, each folder holds its manifest.
    const names = (d: string) => [...Deno.readDirSync(d)].map((e) => e.name);
    const files = names(`${dir}/dumps/${m}/dev-8-10/context_emb`);
    assertEquals(files.filter((f) => f.endsWith(".npz")).length, 47);
    assertEquals(files.filter((f) => f.endsWith(".json") && f !== DUMP_MANIFEST).length, 47);
    const questions = names(`${dir}/dumps/${m}/dev-8-10/question_emb`);
    assertEquals(questions.filter((f) => f !== DUMP_MANIFEST).length, 232);
    assert(files.includes(DUMP_MANIFEST) && questions.includes(DUMP_MANIFEST));
  }
  // One prediction per question, and the result is exactly what evaluate says of it.
  const preds = readJson(`${dir}/predictions/sparse-pi/dev-8-10.json`);
  assertEquals(Object.keys(preds).length, 232);
  const ev = await Effect.runPromise(
    evaluate({
      data: `${dir}/datasets/dev-8-10/data.json`,
      predictions: `${dir}/predictions/sparse-pi/dev-8-10.json`,
    }),
  );
  const res = readJson(`${dir}/results/sparse-pi/dev-8-10.json`);
  const official = JSON.parse(ev.stdout);
  assertEquals([res.exact_match, res.f1], [official.exact_match, official.f1]);
  assertEquals([res.total, res.answered], [232, 232]);
  assert(res.f1 > res.exact_match && res.exact_match > 0, `real scores: ${JSON.stringify(res)}`);
  // Batch sizes do not change vectors: both models predict the same.
  assertEquals(
    Deno.readTextFileSync(`${dir}/predictions/sparse-pi-b8/dev-8-10.json`),
    Deno.readTextFileSync(`${dir}/predictions/sparse-pi/dev-8-10.json`),
  );
  // The summary: dataset × model × EM/F1/BEM, BEM "-" (not configured).
  const csv = Deno.readTextFileSync(`${dir}/summary/summary.csv`).trim().split("\n");
  assertEquals(csv[0], "dataset,model,em,em_low,em_high,f1,f1_low,f1_high,bem,bem_low,bem_high");
  assertMatch(
    csv[1],
    new RegExp(
      `^dev-8-10,sparse-pi,${res.exact_match},[\\d.]+,[\\d.]+,${res.f1},[\\d.]+,[\\d.]+,-,-,-$`,
    ),
  );
  assertEquals(csv.length, 3);
  const txt = Deno.readTextFileSync(`${dir}/summary/summary.txt`);
  assertStringIncludes(r.stdout, txt);
  assertMatch(
    txt,
    new RegExp(
      `dev-8-10\\s+sparse-pi-b8\\s+${res.exact_match.toFixed(2)}\\s+\\[[\\d.]+, [\\d.]+\\]\\s+${
        res.f1.toFixed(2)
      }\\s+\\[[\\d.]+, [\\d.]+\\]\\s+-\\s+-`,
    ),
  );
  // Each task ran once, with a narrowed permission set; the 6 question partitions of a model
  // shared one process (4 halves, 2 workers: one pack a half), whose output is in the first
  // partition's log; every partition's log names the pack.
  const run = lastRun(dir);
  assertEquals(run.ran.length, 21);
  assertEquals([run.skipped, run.failed, run.interrupted], [[], [], false]);
  const logs = `${dir}/logs/encode_question/sparse-pi`;
  const log3 = Deno.readTextFileSync(`${logs}/dev-8-10.3.log`);
  const log0 = Deno.readTextFileSync(`${logs}/dev-8-10.0.log`);
  const pid = /^== encode_question\/sparse-pi\/dev-8-10\/0 attempt 1 local pid (\d+) /.exec(log0)
    ?.[1];
  assertEquals(typeof pid, "string", log0);
  const pack = [0, 1, 2, 3, 4, 5].map((i) => `encode_question/sparse-pi/dev-8-10/${i}`).join(", ");
  assertStringIncludes(
    log3,
    `== encode_question/sparse-pi/dev-8-10/3 attempt 1 local pid ${pid} `,
  );
  assertStringIncludes(log3, `(one process for ${pack}; output in ${logs}/dev-8-10.0.log)`);
  assertMatch(log0, /embed_question: 232 questions written, 0 already complete/);
  for (const log of [log0, log3]) assertMatch(log, /\n== exit 0 after [\d.]+ s\n$/);
  firstRun = readRun(dir);
  // A second invocation with -r finds everything complete and runs nothing.
  const again = await runRun([cfg, "-r", "--max-partition-size", "40", "--work-dir", work]);
  assertEquals(again.code, 0, again.stderr);
  assertStringIncludes(again.stderr, "run: 21 tasks already complete (outputs present): skipped");
  const rerun = lastRun(dir);
  assertEquals([rerun.ran, rerun.skipped.length, rerun.reuse], [[], 21, true]);
});

Deno.test("run: -r after an interrupted run finishes only the missing tasks, same results", async () => {
  const work = await Deno.makeTempDir({ prefix: "pv-run-resume-" });
  const cfg = writeConfig(work);
  // One worker and partitions of 30: 25 tasks one after the other.
  // Spawned: its output is read while it runs, and it is signalled.
  const child = spawnChild(
    runTaskArgv([cfg, "--max-partition-size", "30", "--max-workers", "1", "--work-dir", work]),
    { cwd: ROOT, env: { NO_COLOR: "1" } },
  );
  const errText = new Response(child.stderr).text();
  const outText = new Response(child.stdout).text();
  // Interrupt once the split and at least three encode tasks are done.
  const t0 = Date.now();
  let doneEncodes = 0;
  while (Date.now() - t0 < 60000) {
    await new Promise((r) => setTimeout(r, 100));
    const [name] = runDirs(work).filter((n) => /^\d{8}_\d{6}$/.test(n));
    if (!name) continue;
    doneEncodes = 0;
    for (const stage of ["encode_context", "encode_question"]) {
      try {
        for (const m of Deno.readDirSync(`${work}/${name}/logs/${stage}`)) {
          for (const f of Deno.readDirSync(`${work}/${name}/logs/${stage}/${m.name}`)) {
            const t = Deno.readTextFileSync(`${work}/${name}/logs/${stage}/${m.name}/${f.name}`);
            if (t.includes("== exit 0")) doneEncodes++;
          }
        }
      } catch { /* not yet */ }
    }
    if (doneEncodes >= 3) break;
  }
  assert(doneEncodes >= 3, "the run made progress");
  child.kill("SIGTERM");
  const status = await child.status;
  const stderr = await errText;
  await outText;
  assertEquals(status.code, 143, stderr);
  assertStringIncludes(stderr, "run: SIGTERM: stopping the running tasks");
  assertStringIncludes(stderr, "run: interrupted (SIGTERM)");
  const [name] = runDirs(work).filter((n) => /^\d{8}_\d{6}$/.test(n));
  const dir = `${work}/${name}`;
  const first = lastRun(dir);
  assertEquals(first.interrupted, true);
  assert(first.ran.includes("prepare/dev-8-10"));
  // What is complete now, by the files (the plan of a dry run with -r says it).
  const plan = await runRun([
    cfg,
    "--dry-run",
    "-r",
    name,
    "--max-partition-size",
    "30",
    "--work-dir",
    work,
  ]);
  assertEquals(plan.code, 0, plan.stderr);
  const rows = plan.stdout.trim().split("\n").slice(3).map((l) => l.trim().split(/\s+/));
  assertEquals(rows.length, 25);
  const ids = (want: string) =>
    rows.filter((x) => x[8] === want).map((x) =>
      x[1] === "prepare"
        ? `prepare/${x[3]}`
        : ["merge", "eval"].includes(x[1])
        ? `${x[1]}/${x[2]}/${x[3]}`
        : `${x[1]}/${x[2]}/${x[3]}/${Number(x[4].split("/")[0]) - 1}`
    ).sort();
  const complete = ids("complete");
  const todo = ids("todo");
  assert(
    complete.length >= 4 && todo.length >= 10,
    `complete ${complete.length}, todo ${todo.length}`,
  );
  assert(complete.includes("prepare/dev-8-10"));
  // Finish it: exactly the incomplete tasks run, the complete ones are skipped.
  const r = await runRun([cfg, "-r", "--max-partition-size", "30", "--work-dir", work]);
  assertEquals(r.code, 0, r.stderr);
  const second = lastRun(dir);
  assertEquals([...second.ran].sort(), todo);
  assertEquals([...second.skipped].sort(), complete);
  assertStringIncludes(
    r.stderr,
    `run: ${complete.length} tasks already complete (outputs present): skipped`,
  );
  // A complete task's log has exactly one attempt (it was not rerun).
  const doneLog = Deno.readTextFileSync(`${dir}/logs/prepare/dev-8-10.log`);
  assertEquals((doneLog.match(/^== prepare\/dev-8-10 attempt/gm) ?? []).length, 1);
  // Different partitions, interrupted and resumed: the same predictions and scores.
  const ref = await referenceRun();
  for (const m of ["sparse-pi", "sparse-pi-b8"]) {
    assertEquals(Deno.readTextFileSync(`${dir}/predictions/${m}/dev-8-10.json`), ref.preds[m]);
    assertEquals(Deno.readTextFileSync(`${dir}/results/${m}/dev-8-10.json`), ref.results[m]);
  }
  await Deno.remove(work, { recursive: true });
  await Deno.remove(ref.dir.slice(0, ref.dir.lastIndexOf("/")), { recursive: true });
  firstRun = null;
});

Deno.test("run: a task without progress is killed after --task-timeout, reported with its log", async () => {
  const work = await Deno.makeTempDir({ prefix: "pv-run-stall-" });
  // A model file that never delivers a byte: reading it blocks forever.
  // (Outside the work folder: an encoder may not be granted a file inside it.)
  const modelDir = await Deno.makeTempDir({ prefix: "pv-run-stall-model-" });
  const fifo = `${modelDir}/model.fifo`;
  const mk = await runArgv(["mkfifo", fifo]);
  assertEquals(mk.code, 0);
  const cfg = `${work}/hang.ts`;
  Deno.writeTextFileSync(
    cfg,
    `import { squadDev } from "${ROOT}/configs/datasets/squad_dev.ts";
export const config = {
  datasets: [{ ...squadDev, abbr: "one", reader: { articles: [8, 9] } }],
  models: [{ abbr: "hang", encoder: "sparse-pi", model: ${JSON.stringify(fifo)} }],
};
`,
  );
  const t0 = Date.now();
  const r = await runRun([cfg, "--task-timeout", "2", "--retries", "0", "--work-dir", work]);
  const secs = (Date.now() - t0) / 1000;
  assertEquals(r.code, 1, r.stderr);
  assert(secs < 30, `took ${secs} s`);
  assertMatch(r.stderr, /run: stalled {2}encode_context\/hang\/one\/0: no progress/);
  assertMatch(
    r.stderr,
    /run: FAILED {3}encode_context\/hang\/one\/0 \(attempt 1\): no progress for 2 s: killed; log /,
  );
  assertMatch(r.stderr, /run: blocked {2}merge\/hang\/one: needs encode_/);
  assertMatch(
    r.stderr.trim().split("\n").pop()!,
    /^run: 4 of 5 tasks did not finish \(encode_context\/hang\/one\/0: failed, no progress for 2 s: killed\)/,
  );
  const [name] = runDirs(work).filter((n) => /^\d{8}_\d{6}$/.test(n));
  const log = Deno.readTextFileSync(`${work}/${name}/logs/encode_context/hang/one.0.log`);
  assertMatch(log, /== exit 137 after [\d.]+ s \(no progress: killed\)\n$/);
  const run = lastRun(`${work}/${name}`);
  assertEquals(run.failed.sort(), ["encode_context/hang/one/0", "encode_question/hang/one/0"]);
  assertEquals(run.blocked.sort(), ["eval/hang/one", "merge/hang/one"]);
  await Deno.remove(work, { recursive: true });
  await Deno.remove(modelDir, { recursive: true });
});

Deno.test("run: helpers (reuse flag, partitions, summary, slurm quoting and arrays)", () => {
  assertEquals(expandReuseFlag(["c.ts", "-r"]), ["c.ts", "--reuse=latest"]);
  assertEquals(expandReuseFlag(["-r", "c.ts"]), ["--reuse=latest", "c.ts"]);
  assertEquals(expandReuseFlag(["-r", "20250101_120000", "c.ts", "--dry-run"]), [
    "--reuse=20250101_120000",
    "c.ts",
    "--dry-run",
  ]);
  assertEquals(expandReuseFlag(["c.ts", "-r", "--mode", "eval"]), [
    "c.ts",
    "--reuse=latest",
    "--mode",
    "eval",
  ]);
  assertEquals(partitions(47, 20), [[0, 20], [20, 40], [40, 47]]);
  assertEquals(partitions(40, 20), [[0, 20], [20, 40]]);
  assertEquals(partitions(0, 20), [[0, 0]]);
  const s = formatSummary([
    {
      dataset: "d",
      model: "m1",
      em: 12.5,
      f1: 20.125,
      bem: undefined,
      emCi: [10, 15.5],
      f1Ci: [18.25, 22],
    },
    { dataset: "d", model: "m2", em: null, f1: null, bem: 71.25, emCi: null, f1Ci: null },
  ]);
  assertEquals(
    s.csv,
    "dataset,model,em,em_low,em_high,f1,f1_low,f1_high,bem,bem_low,bem_high\n" +
      "d,m1,12.5,10,15.5,20.125,18.25,22,-,-,-\nd,m2,n/a,n/a,n/a,n/a,n/a,n/a,71.25,n/a,n/a\n",
  );
  assertEquals(
    s.md,
    "| dataset | model | EM | EM 95% CI | F1 | F1 95% CI | BEM | BEM 95% CI |\n" +
      "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n" +
      "| d | m1 | 12.50 | [10.00, 15.50] | 20.13 | [18.25, 22.00] | - | - |\n" +
      "| d | m2 | n/a | n/a | n/a | n/a | 71.25 | n/a |\n",
  );
  assertEquals(
    s.txt.split("\n")[2],
    "d        m1     12.50  [10.00, 15.50]  20.13  [18.25, 22.00]  -      -",
  );
  assertEquals(shellQuote("/a/b.log"), "/a/b.log");
  assertEquals(shellQuote("it's here"), `'it'\\''s here'`);
  assertEquals(expandArrayString("0-3%2"), [0, 1, 2, 3]);
  assertEquals(expandArrayString("1,4,7-9"), [1, 4, 7, 8, 9]);
});
