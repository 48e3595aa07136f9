/**
 * Stopping the demo by the PID a user has: the server is started the three
 * ways the README names (`./phraseval serve`, `deno task serve`, `npx -y
 * deno@2.9.6 task serve`), each with default SIGINT/SIGTERM dispositions
 * (a trampoline resets them, as a terminal would have them). SIGINT or
 * SIGTERM to that PID, or the death of the process that started it, must
 * stop every process under it (the wrappers, the launcher, the server
 * child) and the port must stop answering. `runs/runners/lifeline.ts` and the
 * launcher's signal handling make it so; npx alone passes no signal on.
 *
 * @module
 */
import { assert, assertEquals } from "../_assert.ts";
import { ROOT, spawnChild } from "../_util.ts";
import { type Fixture, get, makeFixture, raw } from "../serve/_fixture.ts";

let fixture: Promise<Fixture> | undefined;
const fix = () => fixture ??= makeFixture("pv-stop-");
globalThis.addEventListener("unload", () => {
  fixture?.then((f) => Deno.removeSync(f.dir, { recursive: true })).catch(() => {});
});

/** Execs its arguments with SIGINT and SIGTERM at their defaults (a test runner may ignore them). */
const TRAMPOLINE = [
  "python3",
  "-c",
  "import os, signal, sys\n" +
  "signal.signal(signal.SIGINT, signal.SIG_DFL)\n" +
  "signal.signal(signal.SIGTERM, signal.SIG_DFL)\n" +
  "os.execvp(sys.argv[1], sys.argv[1:])",
];

/** Starts argv and stays its parent, until killed (then argv's process is orphaned). */
const PARENT = [
  "python3",
  "-c",
  "import os, signal, subprocess, sys, time\n" +
  "signal.signal(signal.SIGINT, signal.SIG_DFL)\n" +
  "signal.signal(signal.SIGTERM, signal.SIG_DFL)\n" +
  "p = subprocess.Popen(sys.argv[1:])\n" +
  "print(p.pid, flush=True)\n" +
  "time.sleep(3600)",
];

type Way = "launcher" | "deno task" | "npx";

function commandOf(way: Way, args: readonly string[]): string[] {
  switch (way) {
    case "launcher":
      return [`${ROOT}/phraseval`, "serve", ...args];
    case "deno task":
      return [Deno.execPath(), "task", "--config", `${ROOT}/deno.json`, "serve", ...args];
    case "npx":
      return ["npx", "-y", "deno@2.9.6", "task", "--config", `${ROOT}/deno.json`, "serve", ...args];
  }
}

function statOf(pid: number): { ppid: number; zombie: boolean } | null {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { ppid: Number(rest[1]), zombie: rest[0] === "Z" };
  } catch {
    return null;
  }
}

const alive = (pid: number): boolean => {
  const s = statOf(pid);
  return s !== null && !s.zombie;
};

/** Every live descendant of `pid`, from /proc. */
function descendants(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    const s = statOf(Number(e.name));
    if (s !== null && !s.zombie) parent.set(Number(e.name), s.ppid);
  }
  const out: number[] = [];
  const todo = [pid];
  while (todo.length > 0) {
    const p = todo.pop()!;
    for (const [c, pp] of parent) if (pp === p) out.push(c), todo.push(c);
  }
  return out;
}

const cmdline = (pid: number): string => {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/cmdline`).replaceAll("\0", " ");
  } catch {
    return "";
  }
};

interface Started {
  readonly proc: Deno.ChildProcess;
  /** The PID the user has: the launcher's, deno task's or npx's. */
  readonly pid: number;
  readonly port: number;
  stderr(): string;
}

/** Starts the server one way and waits for its `serving` line (60 s: npx may fetch Deno first). */
async function start(way: Way, withParent: boolean): Promise<Started> {
  const f = await fix();
  const argv = [
    ...(withParent ? PARENT : TRAMPOLINE),
    ...commandOf(way, [f.index, "--encoder", "sparse-pi", "--port", "0"]),
  ];
  // Spawned: stderr is read while the server runs (its port), then it is signalled.
  const proc = spawnChild(argv, { cwd: ROOT });
  let err = "";
  let out = "";
  let ready: (v: number | undefined) => void = () => {};
  const got = new Promise<number | undefined>((r) => ready = r);
  (async () => {
    for await (const s of proc.stderr.pipeThrough(new TextDecoderStream())) {
      err += s;
      const m = /serving http:\/\/127\.0\.0\.1:(\d+)\//.exec(err);
      if (m) ready(Number(m[1]));
    }
    ready(undefined);
  })();
  (async () => {
    for await (const s of proc.stdout.pipeThrough(new TextDecoderStream())) out += s;
  })();
  const timer = setTimeout(() => ready(undefined), 60_000);
  const port = await got;
  clearTimeout(timer);
  assert(port !== undefined, `${way}: no serving line:\n${err}`);
  const pid = withParent ? Number(out.trim().split("\n")[0]) : proc.pid;
  assert(Number.isInteger(pid) && pid > 0, `no child pid from the parent: ${out}`);
  return { proc, pid, port, stderr: () => err };
}

async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return cond();
}

async function refuses(port: number): Promise<boolean> {
  try {
    (await Deno.connect({ hostname: "127.0.0.1", port })).close();
    return false;
  } catch {
    return true;
  }
}

async function stopsEverything(s: Started, way: Way, tree: number[], how: string): Promise<void> {
  const all = [s.pid, ...tree];
  const gone = await until(() => all.every((p) => !alive(p)), 15_000);
  const left = all.filter(alive).map((p) => `${p}: ${cmdline(p)}`);
  // Leave nothing behind even when the assertion below fails.
  for (const p of all.filter(alive)) {
    try {
      Deno.kill(p, "SIGKILL");
    } catch { /* gone */ }
  }
  assert(gone, `${way}, ${how}: still running:\n${left.join("\n")}\n${s.stderr()}`);
  assert(await refuses(s.port), `${way}, ${how}: port ${s.port} still answers`);
}

for (const way of ["launcher", "deno task", "npx"] as const) {
  for (const sig of ["SIGTERM", "SIGINT"] as const) {
    Deno.test(`stop: ${sig} to the PID of \`${way} serve\` stops every process under it`, async () => {
      const s = await start(way, false);
      const tree = descendants(s.pid);
      assert(
        tree.some((p) => cmdline(p).includes("_serve_child.ts")),
        `${way}: no server child under ${s.pid}: ${tree.map(cmdline).join(" | ")}`,
      );
      assertEquals((await raw(s.port, get("/healthz"))).status, 200);
      Deno.kill(s.pid, sig);
      await stopsEverything(s, way, tree, sig);
      await s.proc.status;
    });
  }

  Deno.test(`stop: the death of the process that started \`${way} serve\` stops it all`, async () => {
    const s = await start(way, true);
    const tree = descendants(s.pid);
    assertEquals((await raw(s.port, get("/healthz"))).status, 200);
    s.proc.kill("SIGKILL"); // the parent: `way`'s process is orphaned
    await s.proc.status;
    await stopsEverything(s, way, tree, "parent killed");
  });
}
