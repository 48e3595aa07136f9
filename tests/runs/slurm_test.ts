/**
 * `pipeline/run.ts --slurm` against a real Slurm cluster (`.ci/slurm_up.sh`
 * brings one up on loopback; CI exports `SLURM_CONF`). Skipped, with a
 * message, when `SLURM_CONF` is not set or `sinfo` does not answer.
 *
 * The same config (two models × two articles) runs locally and on Slurm
 * and must give byte-identical predictions and results, one job array per
 * stage, even when one array task's process is killed mid-run (the task is
 * resubmitted); `-r` after the runner itself was killed (one model) must run
 * exactly the missing tasks; and a sharded open search (exact and 4-bit
 * IVF-PQ, 8 shards) with a shard's index and search task killed equals the
 * unsharded one (an 8-bit index's shard tasks differ only by a flag; its
 * sharded bytes are checked in `tests/search/shards_slow_test.ts`); an
 * array task that exits 2 (bad input) is not resubmitted, and the run exits
 * 2 with its error line.
 *
 * @module
 */
import { assert, assertEquals, assertStringIncludes } from "../_assert.ts";
import { ROOT, runArgv, runRun, runTaskArgv, spawnChild } from "../_util.ts";

const PARTITION = Deno.env.get("SLURM_TEST_PARTITION") ?? "debug";

async function slurmStatus(): Promise<string | null> {
  if (!Deno.env.get("SLURM_CONF")) {
    return "SLURM_CONF is not set (start a cluster with .ci/slurm_up.sh)";
  }
  try {
    const o = await runArgv(["sinfo", "-h", "-o", "%P %t"]);
    if (o.code !== 0) return `sinfo failed: ${o.stderr.trim().split("\n").pop()}`;
    return null;
  } catch (e) {
    return `sinfo cannot run: ${e instanceof Error ? e.message : e}`;
  }
}

const skip = await slurmStatus();
if (skip) console.log(`slurm_test: SKIPPED: ${skip}`);

/** `deno task run` on `args`, spawned: the Slurm tests read its output while it runs and signal it. */
const spawnRun = (args: readonly string[]) =>
  spawnChild(runTaskArgv(args), { cwd: ROOT, env: { NO_COLOR: "1" } });

/** The test config: two articles of dev, both sparse-pi models (or the first alone). */
function writeConfig(dir: string, models = "sparsePi, sparsePiSmallBatch"): string {
  const file = `${dir}/two_models.ts`;
  Deno.writeTextFileSync(
    file,
    `import { squadDev } from "${ROOT}/configs/datasets/squad_dev.ts";
import { sparsePi, sparsePiSmallBatch } from "${ROOT}/configs/models/sparse_pi.ts";
export const config = {
  datasets: [{ ...squadDev, abbr: "dev-8-10", reader: { articles: [8, 10] } }],
  models: [${models}],
};
`,
  );
  return file;
}

const runDir = (work: string) => {
  const names = [...Deno.readDirSync(work)].map((e) => e.name).filter((n) =>
    /^\d{8}_\d{6}/.test(n)
  );
  assertEquals(names.length, 1, `one run folder in ${work}`);
  return `${work}/${names[0]}`;
};
const OUTPUTS = [
  "predictions/sparse-pi/dev-8-10.json",
  "predictions/sparse-pi-b8/dev-8-10.json",
  "results/sparse-pi/dev-8-10.json",
  "results/sparse-pi-b8/dev-8-10.json",
];
const outputsOf = (dir: string, only = "") =>
  Object.fromEntries(
    OUTPUTS.filter((p) => p.includes(only)).map((p) => [p, Deno.readTextFileSync(`${dir}/${p}`)]),
  );
const lastRun = (dir: string) =>
  Deno.readTextFileSync(`${dir}/runs.jsonl`).trim().split("\n").map((l) => JSON.parse(l)).pop();

const logsOf = (dir: string, stage: string): string[] => {
  const out: string[] = [];
  const walk = (d: string) => {
    try {
      for (const e of Deno.readDirSync(d)) {
        if (e.isDirectory) walk(`${d}/${e.name}`);
        else if (e.name.endsWith(".log")) out.push(`${d}/${e.name}`);
      }
    } catch { /* not yet */ }
  };
  walk(`${dir}/logs/${stage}`);
  return out.sort();
};

let local: Record<string, string> | null = null;

/** The entries of `outputs` whose path includes `only`. */
const pickOutputs = (outputs: Record<string, string>, only: string) =>
  Object.fromEntries(Object.entries(outputs).filter(([p]) => p.includes(only)));

async function localReference(): Promise<Record<string, string>> {
  if (local) return local;
  const work = await Deno.makeTempDir({ prefix: "pv-slurm-local-" });
  const r = await runRun([writeConfig(work), "--max-partition-size", "40", "--work-dir", work]);
  assertEquals(r.code, 0, r.stderr);
  local = outputsOf(runDir(work));
  await Deno.remove(work, { recursive: true });
  return local;
}

Deno.test({
  name: "slurm: job arrays, one per stage, give the local runner's bytes; an array task killed " +
    "mid-run is resubmitted and the run ends complete and identical",
  ignore: skip !== null,
  fn: async () => {
    const ref = await localReference();
    const work = await Deno.makeTempDir({ prefix: "pv-slurm-kill-" });
    const child = spawnRun([
      writeConfig(work),
      "--slurm",
      "--partition",
      PARTITION,
      "--max-partition-size",
      "40",
      "--work-dir",
      work,
    ]);
    const errText = new Response(child.stderr).text();
    const outText = new Response(child.stdout).text();
    // Kill the deno process of the first encode task seen running (SIGKILL).
    let killed: string | null = null;
    const t0 = Date.now();
    while (killed === null && Date.now() - t0 < 120000) {
      await new Promise((r) => setTimeout(r, 50));
      let dir: string;
      try {
        dir = runDir(work);
      } catch {
        continue;
      }
      for (const log of [...logsOf(dir, "encode_question"), ...logsOf(dir, "encode_context")]) {
        const t = Deno.readTextFileSync(log);
        const m = /^== pid (\d+)$/m.exec(t);
        if (!m || t.includes("== exit")) continue;
        try {
          Deno.kill(Number(m[1]), "SIGKILL");
          killed = log;
          break;
        } catch { /* it just ended: try another */ }
      }
    }
    assert(killed !== null, "an encode task was killed");
    const status = await child.status;
    const stderr = await errText;
    await outText;
    assertEquals(status.code, 0, stderr);
    assertStringIncludes(stderr, "run: retrying ");
    const dir = runDir(work);
    const log = Deno.readTextFileSync(killed!);
    assert(/^== exit 137$/m.test(log), `the killed attempt: ${log}`);
    assert(/ attempt 2 slurm \d+_\d+ /.test(log), `a second attempt: ${log}`);
    assert(log.trimEnd().endsWith("== exit 0"), log);
    const id = /^== (\S+) attempt 1/.exec(log)![1];
    assertEquals(lastRun(dir).attempts[id], 2);
    assertEquals(outputsOf(dir), ref);
    // One array per stage (context and question encodes are separate arrays; more when a
    // stage has more tasks than MaxArraySize), one array task per partition: 2 × (2 context +
    // 6 question) encode tasks; the killed task's retry resubmits its line of the same array.
    const config = await runArgv(["scontrol", "show", "config"]);
    const max = Number(/^MaxArraySize\s*=\s*(\d+)/m.exec(config.stdout)?.[1] ?? 1001);
    const tasks = [...Deno.readDirSync(`${dir}/slurm`)].map((e) => e.name)
      .filter((n) => n.endsWith(".tasks"));
    const lines = (stage: string) =>
      tasks.filter((t) => t.startsWith(stage + ".")).map((t) =>
        Deno.readTextFileSync(`${dir}/slurm/${t}`).trim().split("\n").length
      ).sort((a, b) => b - a);
    assertEquals(lines("prepare"), [1]);
    assertEquals(lines("encode_context"), [4]);
    assertEquals(lines("encode_question"), max >= 12 ? [12] : [max, 12 - max]);
    assertEquals(lines("merge"), [2]);
    assertEquals(lines("eval"), [2]);
    // Each task's log says where it ran and ends with its exit status.
    for (const log of logsOf(dir, "encode_question")) {
      const t = Deno.readTextFileSync(log);
      assert(/^== encode_question\/\S+ attempt 1 slurm \d+_\d+ \(job \d+\) on /.test(t), log);
      assert(t.trimEnd().endsWith("== exit 0"), log);
    }
    assertEquals(lastRun(dir).ran.length, 21);
    await Deno.remove(work, { recursive: true });
  },
});

Deno.test({
  name: "slurm: -r after the runner was stopped runs only the missing tasks",
  ignore: skip !== null,
  fn: async () => {
    const ref = await localReference();
    const work = await Deno.makeTempDir({ prefix: "pv-slurm-resume-" });
    // One model: 11 tasks (prepare, 2 context and 6 question encodes, merge, eval).
    const cfg = writeConfig(work, "sparsePi");
    const args = [
      "--slurm",
      "--partition",
      PARTITION,
      "--max-partition-size",
      "40",
      "--work-dir",
      work,
    ];
    const child = spawnRun([cfg, ...args, "--max-workers", "1"]);
    const errText = new Response(child.stderr).text();
    const outText = new Response(child.stdout).text();
    const t0 = Date.now();
    let done = 0;
    while (Date.now() - t0 < 120000) {
      await new Promise((r) => setTimeout(r, 100));
      let dir: string;
      try {
        dir = runDir(work);
      } catch {
        continue;
      }
      done = [...logsOf(dir, "encode_context"), ...logsOf(dir, "encode_question")]
        .filter((l) => Deno.readTextFileSync(l).includes("== exit 0")).length;
      if (done >= 3) break;
    }
    assert(done >= 3, "some encode tasks finished");
    child.kill("SIGTERM");
    const status = await child.status;
    const stderr = await errText;
    await outText;
    assertEquals(status.code, 143, stderr);
    const dir = runDir(work);
    assertEquals(lastRun(dir).interrupted, true);
    // The runner cancelled its arrays: nothing of this run is left in the queue.
    const q = await runArgv(["squeue", "-h", "-n", "pv-encode_question,pv-encode_context"]);
    assertEquals(q.stdout.trim(), "", "no task of the stopped run is queued");
    const plan = await runRun([cfg, "--dry-run", "-r", ...args]);
    assertEquals(plan.code, 0, plan.stderr);
    const rows = plan.stdout.trim().split("\n").slice(3).map((l) => l.trim().split(/\s+/));
    const todo = rows.filter((x) => x[8] === "todo").length;
    const complete = rows.filter((x) => x[8] === "complete").length;
    assertEquals(todo + complete, 11);
    assert(complete >= 4, `complete: ${complete}`);
    const r = await runRun([cfg, "-r", ...args]);
    assertEquals(r.code, 0, r.stderr);
    const second = lastRun(dir);
    assertEquals([second.ran.length, second.skipped.length], [todo, complete]);
    assertEquals(outputsOf(dir, "/sparse-pi/"), pickOutputs(ref, "/sparse-pi/"));
    await Deno.remove(work, { recursive: true });
  },
});

Deno.test({
  name:
    "slurm: sharded open search (exact and 4-bit IVF-PQ, 8 shards) as job arrays, a killed shard " +
    "task retried: the merged search = unsharded",
  ignore: skip !== null,
  fn: async () => {
    const work = await Deno.makeTempDir({ prefix: "pv-slurm-shards-" });
    const cfg = `${work}/shards.ts`;
    // A dense model for the IVF-PQ index: piqa-lstm when its bundled model is there.
    let dense = true;
    try {
      Deno.statSync(`${ROOT}/data/models/piqa-lstm/manifest.json`);
    } catch {
      dense = false;
    }
    const model = dense
      ? `import { piqaLstm as model } from "${ROOT}/configs/models/piqa_lstm.ts";`
      : `import { sparsePi as model } from "${ROOT}/configs/models/sparse_pi.ts";`;
    const ivf4 = "{ nlist: 8, bpv: 16, trainParagraphs: 4, nprobe: 3, pqBits: 4 }";
    Deno.writeTextFileSync(
      cfg,
      `import { squadDev } from "${ROOT}/configs/datasets/squad_dev.ts";
${model}
const d = { ...squadDev, reader: { articles: [8, 10] } };
export const config = {
  datasets: [
    { ...d, abbr: "e1", open: true },
    { ...d, abbr: "e8", open: { shards: 8 } },
    ${dense ? `{ ...d, abbr: "f1", open: { ivf: ${ivf4} } },` : ""}
    ${dense ? `{ ...d, abbr: "f8", open: { shards: 8, ivf: ${ivf4} } },` : ""}
  ],
  models: [model],
};
`,
    );
    const child = spawnRun([cfg, "--slurm", "--partition", PARTITION, "--work-dir", work]);
    const errText = new Response(child.stderr).text();
    const outText = new Response(child.stdout).text();
    // SIGKILL one index task of e8's shards and one search task of the last dataset's shards,
    // each the first seen with its half-written output there: any of the 8 shards, since one
    // shard's window can be a few ms (a CI run missed shard 5's index task alone).
    const last = dense ? "f8" : "e8";
    const abbr = dense ? "piqa-lstm" : "sparse-pi";
    const killed: string[] = [];
    // Stop looking for tasks to kill once the run has ended (whatever its end): the checks
    // below then say what went wrong instead of a wait of minutes.
    let ended = false;
    child.status.then(() => ended = true, () => ended = true);
    const t0 = Date.now();
    const names = (d: string): string[] => {
      try {
        return [...Deno.readDirSync(d)].map((e) => e.name);
      } catch {
        return [];
      }
    };
    while (killed.length < 2 && !ended && Date.now() - t0 < 900000) {
      // Every 5 ms: a shard's search task can be busy for well under 100 ms.
      await new Promise((r) => setTimeout(r, 5));
      let dir: string;
      try {
        dir = runDir(work);
      } catch {
        continue;
      }
      // Per kind: the folder whose half-written file shows a shard busy (its name gives the
      // shard), and the prefix of the shards' task logs.
      const kinds = [
        {
          dir: `${dir}/indexes/${abbr}/e8`,
          busy: /^shard-(\d)-of-8\.[0-9a-f]{8}\.tmp$/,
          logs: `${dir}/logs/index/${abbr}/e8.`,
        },
        {
          dir: `${dir}/hits/${abbr}/${last}`,
          busy: /^\.shard-(\d)-of-8\.hits\.ndjson\./,
          logs: `${dir}/logs/search/${abbr}/${last}.`,
        },
      ];
      for (const kind of kinds) {
        if (killed.some((l) => l.startsWith(kind.logs))) continue;
        for (const name of names(kind.dir)) {
          const shard = kind.busy.exec(name)?.[1];
          if (shard === undefined) continue;
          const log = `${kind.logs}${shard}.log`;
          let text: string;
          try {
            text = Deno.readTextFileSync(log);
          } catch {
            continue;
          }
          const m = /^== pid (\d+)$/m.exec(text);
          if (!m || text.includes("== exit")) continue;
          try {
            Deno.kill(Number(m[1]), "SIGKILL");
            killed.push(log);
            break;
          } catch { /* it just ended */ }
        }
      }
    }
    const status = await child.status;
    const stderr = await errText;
    await outText;
    assertEquals(status.code, 0, stderr);
    assertEquals(killed.length, 2, `killed ${killed}`);
    for (const log of killed) {
      const t = Deno.readTextFileSync(log);
      assert(/^== exit 137$/m.test(t), `the killed attempt: ${t}`);
      assert(t.trimEnd().endsWith("== exit 0"), t);
    }
    const dir = runDir(work);
    const same = (a: string, b: string) => {
      for (const f of [".json", ".topk.ndjson"]) {
        assertEquals(
          Deno.readFileSync(`${dir}/open/${abbr}/${b}${f}`),
          Deno.readFileSync(`${dir}/open/${abbr}/${a}${f}`),
          `${b}${f}`,
        );
      }
    };
    same("e1", "e8");
    if (dense) same("f1", "f8");
    // Each stage of shards ran as job arrays (MaxArraySize may split one stage in several).
    const lines = (stage: string) =>
      [...Deno.readDirSync(`${dir}/slurm`)].map((e) => e.name)
        .filter((n) => n.startsWith(`${stage}.`) && n.endsWith(".tasks"))
        .reduce(
          (s, t) => s + Deno.readTextFileSync(`${dir}/slurm/${t}`).trim().split("\n").length,
          0,
        );
    assert(lines("index") >= (dense ? 18 : 9), `index array tasks: ${lines("index")}`);
    assert(lines("search") >= (dense ? 18 : 9), `search array tasks: ${lines("search")}`);
    assertEquals(lines("search_merge"), dense ? 2 : 1);
    assertEquals(lines("index_train"), dense ? 1 : 0);
    await Deno.remove(work, { recursive: true });
  },
});

Deno.test({
  name: "slurm: an array task that exits 2 (bad input) is not resubmitted; the run exits 2 with " +
    "its error line",
  ignore: skip !== null,
  fn: async () => {
    const work = await Deno.makeTempDir({ prefix: "pv-slurm-badinput-" });
    try {
      // A one-question MRQA set, and an MRQA file given as its answers: the eval task exits 2.
      const mrqa = '{"header": {"dataset": "X", "split": "dev"}}\n' +
        '{"context": "Paris is big.", "qas": [{"qid": "a1", "question": "Where?", ' +
        '"answers": ["Paris"], "detected_answers": [{"text": "Paris", "char_spans": [[0, 4]]}]}]}\n';
      Deno.writeTextFileSync(`${work}/mq.jsonl`, mrqa);
      Deno.writeTextFileSync(`${work}/answers.jsonl`, mrqa);
      Deno.writeTextFileSync(
        `${work}/cfg.ts`,
        `export const config = {
  datasets: [{ abbr: "mq", type: "mrqa", path: "mq.jsonl" }],
  models: [{ abbr: "pm", type: "predictions", predictions: "answers.jsonl" }],
  retries: 3,
};
`,
      );
      const r = await runRun([
        `${work}/cfg.ts`,
        "--slurm",
        "--partition",
        PARTITION,
        "--work-dir",
        `${work}/out`,
      ]);
      assertEquals(r.code, 2, r.stderr);
      assertEquals(
        r.stderr.trim().split("\n").at(-1),
        `run: eval/pm/mq: bad input (exit 2), not retried: eval: ${work}/answers.jsonl: byte 45: ` +
          "invalid JSON: extra data after the top-level value",
      );
      const dir = runDir(`${work}/out`);
      assertEquals(lastRun(dir).attempts, { "eval/pm/mq": 1 });
      const log = Deno.readTextFileSync(`${dir}/logs/eval/pm/mq.log`);
      assertEquals([...log.matchAll(/^== eval\/pm\/mq attempt /gm)].length, 1, log);
      assert(log.trimEnd().endsWith("== exit 2"), log);
    } finally {
      await Deno.remove(work, { recursive: true });
    }
  },
});
