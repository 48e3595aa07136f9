/**
 * A run leaves nothing outside its output folder. `deno task full --encoder
 * piqa-lstm` (ONNX Runtime in the two encoder processes) is run as a user
 * runs it, with an environment cleared but for PATH, DENO_DIR and a fresh
 * HOME and TMPDIR: afterwards HOME and TMPDIR are empty and `/tmp` has no new
 * `mat-debug-<pid>.log` of the run's own processes (another process's, a test
 * beside this one loading ONNX Runtime in Python, is not the run's: that made
 * this test fail at random) (ONNX Runtime's telemetry wrote one per process, and
 * a device id and event database under `~/.cache/Microsoft/`, until
 * `ORT_DISABLE_TELEMETRY` was set for every process that loads it).
 *
 * @module
 */
import { assert, assertEquals } from "../_assert.ts";
import {
  type ChildResult,
  childResult,
  DEV_GZ,
  listDir,
  ROOT,
  runArgv,
  spawnChild,
} from "../_util.ts";

/** Deno's cache folder as this test process sees it (so the child needs no download). */
async function denoDir(): Promise<string> {
  const out = await runArgv([Deno.execPath(), "info", "--json"]);
  return JSON.parse(out.stdout).denoDir;
}

/** Every path under `dir`, relative, sorted. */
async function tree(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string, rel: string) => {
    for await (const e of Deno.readDir(d)) {
      out.push(`${rel}${e.name}`);
      if (e.isDirectory) await walk(`${d}/${e.name}`, `${rel}${e.name}/`);
    }
  };
  await walk(dir, "");
  return out.sort();
}

const matDebug = async () => (await listDir("/tmp")).filter((n) => n.startsWith("mat-debug-"));

/** Whether process `pid` is `root` or under it (by /proc's parent links); `undefined` once it is gone. */
function under(pid: number, root: number): boolean | undefined {
  for (let p = pid; p > 1;) {
    if (p === root) return true;
    let status: string;
    try {
      status = Deno.readTextFileSync(`/proc/${p}/status`);
    } catch {
      return p === pid ? undefined : false;
    }
    p = Number(/^PPid:\s+(\d+)/m.exec(status)?.[1] ?? 0);
  }
  return false;
}

/**
 * The `mat-debug-<pid>.log` files new in /tmp while `child` runs that its own
 * processes wrote: /tmp is shared, so a file of another process (a Python
 * check of ONNX Runtime in a test beside this one) is not counted. Each new
 * file's process is looked up while it lives (polled every 20 ms: a process
 * that loads ONNX Runtime lives far longer); one already gone is counted.
 * Also the child's result (it is waited for here).
 */
async function matDebugOf(
  child: Deno.ChildProcess,
  before: Set<string>,
): Promise<[string[], ChildResult]> {
  const ours: string[] = [], seen = new Set(before);
  let done = false;
  const result = childResult(child).finally(() => done = true);
  const look = async () => {
    for (const n of await matDebug()) {
      if (seen.has(n)) continue;
      seen.add(n);
      if (under(Number(/^mat-debug-(\d+)\.log$/.exec(n)?.[1] ?? 0), child.pid) !== false) {
        ours.push(n);
      }
    }
  };
  while (!done) {
    await look();
    await new Promise((r) => setTimeout(r, 20));
  }
  const out = await result;
  await look();
  return [ours, out];
}

Deno.test("leftovers: `deno task full --encoder piqa-lstm` writes nothing outside --out (no telemetry files)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-leftovers-" });
  try {
    const dev = JSON.parse(
      await new Response(
        (await Deno.open(DEV_GZ)).readable.pipeThrough(new DecompressionStream("gzip")),
      ).text(),
    );
    dev.data = dev.data.slice(0, 1);
    dev.data[0].paragraphs = dev.data[0].paragraphs.slice(0, 3);
    await Deno.writeTextFile(`${dir}/data.json`, JSON.stringify(dev));
    for (const d of ["home", "tmp"]) await Deno.mkdir(`${dir}/${d}`);
    const before = new Set(await matDebug());
    // A cleared environment: without CHILD_ENV's ORT_DISABLE_TELEMETRY.
    const child = spawnChild([
      Deno.execPath(),
      "task",
      "--quiet",
      "--config",
      `${ROOT}/deno.json`,
      "full",
      "--encoder",
      "piqa-lstm",
      "--data",
      `${dir}/data.json`,
      "--out",
      `${dir}/run`,
    ], {
      cwd: ROOT,
      clearEnv: true,
      env: {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        DENO_DIR: await denoDir(),
        HOME: `${dir}/home`,
        TMPDIR: `${dir}/tmp`,
        NO_COLOR: "1",
      },
      stdin: "null",
    });
    const [added, out] = await matDebugOf(child, before);
    const err = out.stderr;
    assertEquals(out.code, 0, err);
    assert(/^EM\s+\d/m.test(out.stdout), "no EM line");
    assertEquals(await tree(`${dir}/home`), [], "files written under HOME");
    assertEquals(await tree(`${dir}/tmp`), [], "files written under TMPDIR");
    assertEquals(added, [], "ONNX Runtime debug logs in /tmp from this run's processes");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
