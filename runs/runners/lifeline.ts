/**
 * A command's lifeline to the process its user started: when that process
 * (or any wrapper between it and this one) goes away, the command stops as
 * if it had been sent SIGTERM.
 *
 * Why: a README command may run as `npx -y deno@2.9.6 task serve ...` (npx →
 * `sh -c deno` → `deno task` → `deno run pipeline/serve.ts` → the server
 * child). SIGTERM to the PID the user has (npx's) ends npx without passing
 * the signal on, and `deno task` below it goes on running, reparented to
 * init, with the server still answering; SIGINT to it reaches only the
 * `sh -c`, which ignores it while it waits. `deno task` does forward the
 * SIGINT and SIGTERM it receives itself, and the server's launcher stops its
 * own child; what was missing is noticing that the processes above are gone.
 *
 * {@linkcode watchLifeline} walks up from the parent: every wrapper
 * (`deno task`, npm/npx, a `sh -c` that runs deno or npx, the `phraseval`
 * launcher script) and the first process above them that is not one (the
 * user's shell, a test runner, a run's parent task) are watched, by PID and
 * start time (a reused PID is not the same process). That last one is left
 * out when this process ignores SIGHUP (`nohup`): that user asked to outlive
 * the terminal.
 *
 * Deno reads `/proc/<pid>/…` only with `--allow-all`, so the process table
 * is read from `/proc` where that is granted, else from `ps` where running it
 * is (`--allow-run`: `serve`, `full`, `run`), else only the direct parent is
 * watched (`Deno.ppid` changes when it dies: enough for a sandboxed child,
 * whose parent is one of ours). A wrapper whose own parent changes (it was
 * reparented: the process above it exited) counts as gone too. A check runs
 * every second on an unreferenced timer, so it never keeps a process alive.
 *
 * @module
 */

import type { CmdOut } from "../../io/process.ts";

/** How long one `ps` may take before it is killed (a read then fails). */
const PS_TIMEOUT_MS = 5000;

/**
 * `ps` with `args` through `io/process.ts`'s `runCommand` (scoped, killed past
 * {@linkcode PS_TIMEOUT_MS}); loaded only where `/proc` cannot be read, so a
 * command that reads `/proc` does not load it.
 */
async function ps(args: readonly string[], env?: Record<string, string>): Promise<CmdOut> {
  const [Effect, { runCommand }] = await Promise.all([
    import("effect/Effect"),
    import("../../io/process.ts"),
  ]);
  return await Effect.runPromise(runCommand("ps", args, PS_TIMEOUT_MS, env));
}

/** What the watch knows of one process. */
export interface ProcessInfo {
  /** Its PID. */
  readonly pid: number;
  /** Its parent's PID. */
  readonly ppid: number;
  /** Its start time, as the reader gives it (a reused PID has another). */
  readonly start: string;
  /** Whether it has exited and waits to be reaped. */
  readonly zombie: boolean;
  /** Its command line (split on spaces when read from `ps`). */
  readonly argv: readonly string[];
}

/** Reads processes by PID (those that do not exist are absent from the map). */
type Reader = (pids: readonly number[]) => Promise<Map<number, ProcessInfo>>;

function readProcFile(pid: number | "self", file: string): string | null {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/${file}`);
  } catch {
    return null;
  }
}

function procInfo(pid: number): ProcessInfo | null {
  const stat = readProcFile(pid, "stat");
  if (stat === null) return null;
  const close = stat.lastIndexOf(")");
  const rest = stat.slice(close + 2).split(" ");
  // rest[0] is field 3 (state): ppid is field 4, starttime field 22.
  const ppid = Number(rest[1]);
  if (close < 0 || !Number.isInteger(ppid) || rest[19] === undefined) return null;
  const argv = (readProcFile(pid, "cmdline") ?? "").split("\0").filter((a) => a !== "");
  return { pid, ppid, start: rest[19], zombie: rest[0] === "Z", argv };
}

const procReader: Reader = (pids) => {
  const out = new Map<number, ProcessInfo>();
  for (const pid of pids) {
    const i = procInfo(pid);
    if (i !== null) out.set(pid, i);
  }
  return Promise.resolve(out);
};

/**
 * Parses the lines of `ps -o pid=,ppid=,stat=,lstart=,args=` (the start
 * time is five words; the command line is split on spaces).
 *
 * @example
 * ```ts
 * import { parsePs } from "./lifeline.ts";
 * const m = parsePs(" 7  1 Ss   Wed Dec  2 07:09:40 2026 deno task serve\n 9 7 Z Wed Dec 2 07:10:00 2026 x");
 * if (m.get(7)?.ppid !== 1 || m.get(7)?.argv[1] !== "task" || !m.get(9)?.zombie) throw new Error();
 * if (m.get(7)?.start !== "Wed Dec 2 07:09:40 2026") throw new Error();
 * ```
 */
export function parsePs(text: string): Map<number, ProcessInfo> {
  const out = new Map<number, ProcessInfo>();
  for (const line of text.split("\n")) {
    const w = line.trim().split(/\s+/);
    if (w.length < 8) continue;
    const pid = Number(w[0]);
    const ppid = Number(w[1]);
    if (!Number.isInteger(pid) || !Number.isInteger(ppid)) continue;
    out.set(pid, {
      pid,
      ppid,
      start: w.slice(3, 8).join(" "),
      zombie: w[2].startsWith("Z"),
      argv: w.slice(8),
    });
  }
  return out;
}

const psReader: Reader = async (pids) => {
  if (pids.length === 0) return new Map();
  const out = await ps(["-o", "pid=,ppid=,stat=,lstart=,args=", "-p", pids.join(",")], {
    LC_ALL: "C",
  });
  // 1: some of the PIDs do not exist (they are absent from the map). Past the timeout, or
  // without ps, nothing is known: a failed read, not every process gone.
  if (out.code > 1) throw new Error(`ps: exit ${out.code} ${out.stderr.trim()}`);
  return parsePs(out.stdout);
};

/** The reader this process may use, or null (then only `Deno.ppid` is watched). */
function pickReader(): Reader | null {
  if (procInfo(Deno.ppid) !== null) return procReader;
  try {
    if (Deno.permissions.querySync({ name: "run", command: "ps" }).state === "granted") {
      return psReader;
    }
  } catch { /* an old runtime */ }
  return null;
}

/**
 * Whether a command line is one of the wrappers a README command runs
 * through: `deno task`, npm/npx (`npm exec ...`, `node .../npx-cli.js`), a
 * `sh -c` whose script runs deno or npx, or the repository's `phraseval`
 * launcher script.
 *
 * @example
 * ```ts
 * import { isWrapper } from "./lifeline.ts";
 * if (!isWrapper(["deno", "task", "serve"])) throw new Error();
 * if (!isWrapper(["npm exec deno@2.9.6 task serve"])) throw new Error();
 * if (!isWrapper(["npm", "exec", "deno@2.9.6", "task", "serve"])) throw new Error();
 * if (!isWrapper(["sh", "-c", "'deno' task serve"])) throw new Error();
 * if (isWrapper(["-bash"]) || isWrapper(["/usr/bin/deno", "test", "-A"])) throw new Error();
 * ```
 */
export function isWrapper(argv: readonly string[]): boolean {
  if (argv.length === 0) return false;
  const base = (s: string) => s.slice(s.lastIndexOf("/") + 1);
  const head = base(argv[0]);
  if (/^deno(\.exe)?$/.test(head) && argv[1] === "task") return true;
  if (/^(npm|npx)( |$)/.test(argv[0]) || head === "npx" || head === "npm") return true;
  if (/^node(js)?$/.test(head) && argv.slice(1).some((a) => /\bnp[mx](-cli)?(\.js)?$/.test(a))) {
    return true;
  }
  if (/^(sh|dash|bash)$/.test(head)) {
    const i = argv.indexOf("-c");
    if (i > 0 && /\b(deno|npx)\b/.test(argv.slice(i + 1).join(" "))) return true;
    if (argv.slice(1).some((a) => base(a) === "phraseval")) return true;
  }
  return false;
}

/** Whether this process ignores SIGHUP (started under `nohup`). */
async function ignoresHangup(): Promise<boolean> {
  let mask: string | undefined = readProcFile("self", "status")?.match(
    /^SigIgn:\s*([0-9a-f]+)$/m,
  )?.[1];
  if (mask === undefined) {
    const out = await ps(["-o", "ignored=", "-p", String(Deno.pid)]);
    if (out.code !== 0) return false;
    mask = out.stdout.trim() || undefined;
  }
  return mask !== undefined && /^[0-9a-f]+$/i.test(mask) && (BigInt(`0x${mask}`) & 1n) === 1n;
}

/**
 * The processes this one lives by: the wrappers above it and the first
 * process above them that is not a wrapper (unless this process ignores
 * SIGHUP), nearest first, read with `read`.
 */
async function ancestorsWith(read: Reader): Promise<ProcessInfo[]> {
  const out: ProcessInfo[] = [];
  const nohup = await ignoresHangup();
  let pid = Deno.ppid;
  for (let depth = 0; pid > 1 && depth < 32; depth++) {
    const info = (await read([pid])).get(pid);
    if (info === undefined) break;
    const wrapper = isWrapper(info.argv);
    if (!wrapper && nohup) break;
    out.push(info);
    if (!wrapper) break;
    pid = info.ppid;
  }
  return out;
}

/**
 * The processes {@linkcode watchLifeline} would watch besides the direct
 * parent (empty when the process table cannot be read).
 *
 * @example
 * ```ts
 * import { lifelineAncestors } from "./lifeline.ts";
 * const chain = await lifelineAncestors();
 * if (chain.length > 0 && chain[0].pid !== Deno.ppid) throw new Error();
 * ```
 */
export function lifelineAncestors(): Promise<ProcessInfo[]> {
  const read = pickReader();
  return read === null ? Promise.resolve([]) : ancestorsWith(read);
}

/** A running lifeline watch; {@linkcode LifelineWatch.stop} ends it. */
export interface LifelineWatch {
  /** Stops watching. */
  stop(): void;
}

/**
 * Calls `onGone` once, with a phrase saying which process went away, when
 * the direct parent or any process of {@linkcode lifelineAncestors} is
 * gone. The chain is read at once, in the background; the check runs every
 * `intervalMs` (default 1000) on an unreferenced timer.
 *
 * @example
 * ```ts
 * import { watchLifeline } from "./lifeline.ts";
 * const w = watchLifeline((why) => console.error(why));
 * w.stop();
 * ```
 */
export function watchLifeline(
  onGone: (why: string) => void,
  intervalMs = 1000,
): LifelineWatch {
  const ppid = Deno.ppid;
  const read = pickReader();
  // Read now, not at the first tick: a wrapper that dies in the first second
  // would otherwise be missed (the walk would find init above `deno task`).
  const chain = read === null ? Promise.resolve([]) : ancestorsWith(read).catch(() => []);
  let stopped = false;
  let busy = false;
  const check = async () => {
    if (Deno.ppid !== ppid) return `its parent process ${ppid} ended`;
    if (read === null) return undefined;
    const watched = await chain;
    const now = await read(watched.map((a) => a.pid));
    // Gone: exited, or its PID reused; or a wrapper reparented (its parent exited).
    const gone = watched.find((a) => {
      const n = now.get(a.pid);
      return n === undefined || n.zombie || n.start !== a.start ||
        (n.ppid !== a.ppid && isWrapper(a.argv));
    });
    return gone === undefined
      ? undefined
      : `the process ${gone.pid} it was started under (${gone.argv.join(" ").slice(0, 60)}) ended`;
  };
  const id = setInterval(() => {
    if (busy || stopped) return;
    busy = true;
    check().then((why) => {
      busy = false;
      if (why !== undefined && !stopped) {
        stopped = true;
        clearInterval(id);
        onGone(why);
      }
    }, () => busy = false);
  }, intervalMs);
  Deno.unrefTimer(id);
  return {
    stop: () => {
      stopped = true;
      clearInterval(id);
    },
  };
}
