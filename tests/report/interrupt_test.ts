/**
 * `report` stops at once on SIGINT and SIGTERM, whatever the number of
 * resamples: the statistics run in steps resumed from the event loop
 * (`metrics/stats/steps.ts`), so the signal is handled within a step; the
 * exit is 130 (SIGINT) or 143 (SIGTERM) with one line, and neither the
 * report folder nor its temporary folder (`.<out>.<hex>.tmp`) is left.
 * The folder write itself, aborted, removes its temporary folder.
 *
 * The command is spawned directly (`spawnChild`, not through a shell's
 * `&`), so SIGINT has its default disposition in it.
 */
import { assert, assertEquals } from "../_assert.ts";
import { DEV_GZ, listDir, ROOT, spawnChild } from "../_util.ts";
import { writeFolderAtomic } from "../../io/fs.ts";
import { writeDevSystems } from "./_systems.ts";

const TMP = await Deno.makeTempDir({ prefix: "phraseval-report-int-" });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(TMP, { recursive: true });
  } catch { /* gone */ }
});
const PREDS = await writeDevSystems(TMP, 5);

/** CPU seconds (user + system) the process has used, from /proc; null once it is gone. */
function cpuSeconds(pid: number): number | null {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return null;
  }
}

for (const [sig, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
  Deno.test(`report --resamples 100000000 stops on ${sig}: exit ${code}, nothing left`, async () => {
    const parent = await Deno.makeTempDir({ dir: TMP, prefix: "out-" });
    // Spawned: the test sends it SIGINT/SIGTERM while it runs.
    const child = spawnChild([
      Deno.execPath(),
      "run",
      "-A",
      `${ROOT}/pipeline/report.ts`,
      `x=${PREDS[0]}`,
      `y=${PREDS[1]}`,
      "--data",
      DEV_GZ,
      "--out",
      `${parent}/report`,
      "--resamples",
      "100000000",
    ], { cwd: ROOT, env: { NO_COLOR: "1" } });
    const output = child.output();
    // Reading dev and scoring take a second or two of CPU; by 6 s the bootstrap
    // is running (B·n = 10⁸ · 10,570 draws: hours).
    for (;;) {
      const cpu = cpuSeconds(child.pid);
      assert(cpu !== null, "report ended before the signal");
      if (cpu >= 6) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    child.kill(sig);
    // A bound on the wait only, for a failing run (before: still computing after 30 s).
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<"late">((r) => timer = setTimeout(() => r("late"), 60_000));
    const o = await Promise.race([output, late]);
    clearTimeout(timer);
    if (o === "late") {
      child.kill("SIGKILL");
      await output;
      throw new Error(`report still running 60 s after ${sig}`);
    }
    const err = new TextDecoder().decode(o.stderr);
    assertEquals(o.code, code, err);
    assertEquals(err, `report: interrupted (${sig})\n`);
    assertEquals(await listDir(parent), [], "no report and no temporary folder");
  });
}

Deno.test("writeFolderAtomic aborted: no temporary folder, no output, no parent it made", async () => {
  const dir = await Deno.makeTempDir({ dir: TMP, prefix: "w-" });
  for (const out of [`${dir}/new/deep/report`, `${dir}/report`]) {
    const ac = new AbortController();
    const p = writeFolderAtomic(out, { "a.txt": "A", "b.txt": "B" }, ac.signal);
    ac.abort("stop");
    assertEquals(await p.then(() => "written", (e) => e), "stop");
    assertEquals(await listDir(dir), [], out);
  }
  // An existing report folder is left as it was.
  await Deno.mkdir(`${dir}/report`);
  await Deno.writeTextFile(`${dir}/report/a.txt`, "old");
  const ac = new AbortController();
  const p = writeFolderAtomic(`${dir}/report`, { "a.txt": "A" }, ac.signal);
  ac.abort("stop");
  assertEquals(await p.then(() => "written", (e) => e), "stop");
  assertEquals(await listDir(dir), ["report"]);
  assertEquals(await Deno.readTextFile(`${dir}/report/a.txt`), "old");
  // Not aborted: written.
  await writeFolderAtomic(`${dir}/report`, { "a.txt": "A" }, new AbortController().signal);
  assertEquals(await Deno.readTextFile(`${dir}/report/a.txt`), "A");
  assertEquals(await listDir(dir), ["report"]);
});
