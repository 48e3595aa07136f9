/**
 * A run with a sharded open search (`open: { shards }`, `runs/plan/plan.ts`) on
 * the local runner: its `index` task of one shard and its `search` task of
 * one shard are SIGKILLed mid-way (each once its half-written output is
 * there); the run retries them and ends complete, and the sharded search's
 * predictions and top-k records are byte for byte those of the same
 * dataset searched unsharded in the same run. The same on Slurm job arrays
 * is `slurm_test.ts`.
 */
import { assert, assertEquals, assertStringIncludes } from "../_assert.ts";
import { ROOT, RUN_PERMS, runArgv } from "../_util.ts";

/** The first entry of `dir` whose name matches `re`, or `undefined`. */
function entry(dir: string, re: RegExp): string | undefined {
  try {
    return [...Deno.readDirSync(dir)].find((e) => re.test(e.name))?.name;
  } catch {
    return undefined;
  }
}

/** The pid of the running attempt in a local task's log, or `undefined`. */
function runningPid(log: string): number | undefined {
  let t: string;
  try {
    t = Deno.readTextFileSync(log);
  } catch {
    return undefined;
  }
  const m = [...t.matchAll(/^== \S+ attempt \d+ local pid (\d+)/gm)].pop();
  if (m === undefined || t.slice(m.index).includes("\n== exit")) return undefined;
  return Number(m[1]);
}

Deno.test("run: a shard's index and search tasks SIGKILLed mid-way are retried; the merged search = unsharded", async () => {
  const work = await Deno.makeTempDir({ prefix: "pv-shards-run-" });
  try {
    const config = `${work}/shards.ts`;
    Deno.writeTextFileSync(
      config,
      `import { squadDev } from "${ROOT}/configs/datasets/squad_dev.ts";
import { sparsePi } from "${ROOT}/configs/models/sparse_pi.ts";
export const config = {
  datasets: [
    { ...squadDev, abbr: "d1", reader: { articles: [0, 3] }, open: true },
    { ...squadDev, abbr: "d3", reader: { articles: [0, 3] }, open: { shards: 3 } },
  ],
  models: [sparsePi],
};
`,
    );
    const run = runArgv(
      [Deno.execPath(), "run", ...RUN_PERMS, `${ROOT}/pipeline/run.ts`, config, "--work-dir", work],
      { cwd: ROOT },
    );
    const killed: string[] = [];
    const t0 = Date.now();
    while (killed.length < 2 && Date.now() - t0 < 600000) {
      await new Promise((r) => setTimeout(r, 10));
      const name = entry(work, /^\d{8}_\d{6}$/);
      if (name === undefined) continue;
      const dir = `${work}/${name}`;
      const targets = [
        {
          log: `${dir}/logs/index/sparse-pi/d3.1.log`,
          // The shard's build is under way: its temporary folder holds the build.
          busy: () => {
            const tmp = entry(`${dir}/indexes/sparse-pi/d3`, /^shard-1-of-3\.[0-9a-f]{8}\.tmp$/);
            return tmp !== undefined &&
              entry(`${dir}/indexes/sparse-pi/d3/${tmp}`, /^build$/) !== undefined;
          },
        },
        {
          log: `${dir}/logs/search/sparse-pi/d3.1.log`,
          // The shard's search is writing its hits file (not yet renamed into place).
          busy: () =>
            entry(`${dir}/hits/sparse-pi/d3`, /^\.shard-1-of-3\.hits\.ndjson\./) !== undefined,
        },
      ];
      for (const t of targets) {
        if (killed.includes(t.log)) continue;
        const pid = runningPid(t.log);
        if (pid === undefined || !t.busy()) continue;
        try {
          Deno.kill(pid, "SIGKILL");
          killed.push(t.log);
        } catch { /* it just ended */ }
      }
    }
    const { code, stderr } = await run;
    assertEquals(killed.length, 2, `killed: ${killed}`);
    assertEquals(code, 0, stderr);
    assertStringIncludes(stderr, "run: retrying index/sparse-pi/d3/1 (attempt 1)");
    assertStringIncludes(stderr, "run: retrying search/sparse-pi/d3/1 (attempt 1)");
    const dir = `${work}/${entry(work, /^\d{8}_\d{6}$/)}`;
    for (const log of killed) {
      const t = Deno.readTextFileSync(log);
      assert(/^== exit 137/m.test(t), `the killed attempt: ${t}`);
      assert(/ attempt 2 local pid /.test(t) && /== exit 0 after/.test(t), t);
    }
    for (const f of [".json", ".topk.ndjson"]) {
      const a = Deno.readFileSync(`${dir}/open/sparse-pi/d1${f}`);
      const b = Deno.readFileSync(`${dir}/open/sparse-pi/d3${f}`);
      assertEquals(b, a, f);
    }
    assertEquals(
      Deno.readTextFileSync(`${dir}/results/sparse-pi/d3.json`),
      Deno.readTextFileSync(`${dir}/results/sparse-pi/d1.json`),
    );
  } finally {
    await Deno.remove(work, { recursive: true });
  }
});
