/**
 * A long scan answers interruption: `search --memory-budget 1` over 3
 * shards (every row read from disk on its own) stops on SIGINT and SIGTERM
 * within a bound of the signal (exit 130 / 143, its one line, no
 * predictions and no temporary file left), where the scan used to hold the
 * event loop until a whole pass was done; and in process, a search whose
 * `signal` is aborted while it scans ends with that reason before its
 * first block of questions is done.
 *
 * The child is started directly ({@linkcode spawnChild}), with this
 * process's signal dispositions, not through a shell's `&` (which would
 * ignore SIGINT in it).
 */
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import { assert, assertEquals } from "../_assert.ts";
import { childResult, ROOT, spawnChild } from "../_util.ts";
import { openSearch } from "../../search/open/open.ts";
import { numpyDumps, ok } from "./_stages.ts";

/** The dumps of the first dev article (54 paragraphs, d = 256) and its index in 3 shards. */
async function shardedDumps(dir: string): Promise<string> {
  await numpyDumps(dir, 54, ["--dim", "256"]);
  const sh = `${dir}/sh`;
  await ok("pipeline/index.ts", [
    `${dir}/context_emb`,
    sh,
    "--context",
    `${dir}/data.json`,
    "--shards",
    "3",
  ]);
  return sh;
}

/** The atomic writers' temporary files in `dir` (`.<name>.<hex>.tmp`). */
const temporaries = (dir: string) =>
  [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => /^\..*\.tmp$/.test(n));

Deno.test("search --memory-budget 1 over 3 shards stops within 5 s of SIGINT and SIGTERM (130, 143)", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "interrupt_" });
  try {
    const sh = await shardedDumps(dir);
    for (const [sig, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
      const child = spawnChild([
        Deno.execPath(),
        "run",
        "-A",
        `${ROOT}/pipeline/search.ts`,
        `${dir}/data.json`,
        sh,
        `${dir}/question_emb`,
        `${dir}/pred.json`,
        "--memory-budget",
        "1",
      ], { cwd: ROOT, stdout: "null" });
      // Scanning: the predictions' temporary file is open; then a while into the scan.
      const t0 = performance.now();
      while (temporaries(dir).length === 0 && performance.now() - t0 < 60_000) {
        await new Promise((r) => setTimeout(r, 50));
      }
      assertEquals(temporaries(dir).length, 1, "the search did not start scanning");
      await new Promise((r) => setTimeout(r, 1500));
      const sent = performance.now();
      child.kill(sig);
      const guard = setTimeout(() => child.kill("SIGKILL"), 60_000);
      const r = await childResult(child);
      clearTimeout(guard);
      const seconds = (performance.now() - sent) / 1000;
      assertEquals(r.code, code, r.stderr);
      assertEquals(r.stderr.trimEnd().split("\n").at(-1), `search: interrupted (${sig})`);
      assert(seconds < 5, `${sig}: exited ${seconds.toFixed(1)} s after the signal`);
      assertEquals(temporaries(dir), []);
      let written = true;
      try {
        Deno.statSync(`${dir}/pred.json`);
      } catch {
        written = false;
      }
      assert(!written, "pred.json written by an interrupted search");
    }
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("openSearch with memoryBudget 1: an aborted signal ends the scan before its first block is done", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "interrupt_abort_" });
  try {
    const sh = await shardedDumps(dir);
    for (const index of [sh, `${sh}/shard-2-of-3`]) {
      const ac = new AbortController();
      let blocks = 0;
      // Runs at the scan's first pause (50 ms in): only a scan that pauses lets it.
      const timer = setTimeout(() => ac.abort(new Error("stopped")), 0);
      const exit = await Effect.runPromiseExit(openSearch({
        data: `${dir}/data.json`,
        index,
        questionEmb: `${dir}/question_emb`,
        predictions: `${dir}/p.json`,
        topK: 10,
        memoryBudget: 1,
        signal: ac.signal,
        onProgress: () => blocks++,
      }));
      clearTimeout(timer);
      assert(Exit.isFailure(exit), `${index}: the search went on to its end`);
      assert(ac.signal.aborted);
      assertEquals(blocks, 0, `${index}: blocks scanned after the abort`);
      assertEquals(temporaries(dir), []);
    }
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
