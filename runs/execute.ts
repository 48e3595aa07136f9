/**
 * Executing a plan: task states, the stage-group loop with dependencies,
 * retries and progress timeouts, and the {@linkcode LocalRunner} (up to
 * `--max-workers` Deno subprocesses at once, each with its own narrowed
 * permissions and its own log file). The Slurm runner lives in
 * `_run_slurm.ts` and implements the same {@linkcode Runner} interface.
 *
 * @module
 */
import { firstMissing, STAGE_GROUPS, type Task } from "./_run_plan.ts";

/** The state of a task in one invocation of `run`. */
export type TaskState =
  | "pending"
  | "running"
  | "done"
  | "skipped"
  | "failed"
  | "blocked"
  | "cancelled";

/** A task and what happened to it in this invocation. */
export interface TaskStatus {
  /** The task. */
  readonly task: Task;
  /** Its state. */
  state: TaskState;
  /** Attempts started in this invocation. */
  attempts: number;
  /** When the current/last attempt started (ms since epoch), or `null`. */
  started: number | null;
  /** When it ended, or `null`. */
  ended: number | null;
  /** Why the last attempt failed, or `null`. */
  error: string | null;
  /** Where it runs: `pid N` or `slurm J_I`, or `null`. */
  where: string | null;
}

/** What a runner reports to the view. */
export type TaskEvent =
  | "queued"
  | "start"
  | "done"
  | "retry"
  | "failed"
  | "stalled"
  | "cancelled"
  | "blocked"
  | "skipped";

/** What a runner is given. */
export interface RunnerContext {
  /** Most tasks at once. */
  readonly maxWorkers: number;
  /** Seconds without progress after which a task is killed. */
  readonly timeoutS: number;
  /** Extra attempts of a failed task. */
  readonly retries: number;
  /** Aborted on SIGINT/SIGTERM: stop everything. */
  readonly signal: AbortSignal;
  /** Reports a state change. */
  notify(st: TaskStatus, event: TaskEvent): void;
}

/** A way to run tasks (local processes, Slurm job arrays). */
export interface Runner {
  /** `local` or `slurm`. */
  readonly kind: "local" | "slurm";
  /** Runs `batch` (tasks of one stage group) to the end: done, failed or cancelled. */
  run(batch: readonly TaskStatus[], ctx: RunnerContext): Promise<void>;
}

/** A new status for `task`. */
export function newStatus(task: Task): TaskStatus {
  return {
    task,
    state: "pending",
    attempts: 0,
    started: null,
    ended: null,
    error: null,
    where: null,
  };
}

/**
 * The newest modification time (ms) of a task's log and watched outputs:
 * a task makes progress when its log grows or files appear in its folder.
 */
export function lastProgress(task: Task): number {
  let t = 0;
  for (const p of [task.log, ...task.watch]) {
    try {
      t = Math.max(t, Deno.statSync(p).mtime?.getTime() ?? 0);
    } catch { /* not there yet */ }
  }
  return t;
}

/** Terminal escape sequences (colours) in a log line. */
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*[A-Za-z]`, "g");

/**
 * The last `n` lines of a log that are not the runner's own `==` lines.
 *
 * @example
 * ```ts
 * import { logTail } from "./_run_exec.ts";
 * logTail("/nonexistent.log"); // []
 * ```
 */
export function logTail(path: string, n = 5): string[] {
  try {
    const f = Deno.openSync(path);
    try {
      const size = f.statSync().size;
      const len = Math.min(size, 16384);
      f.seekSync(size - len, Deno.SeekMode.Start);
      const buf = new Uint8Array(len);
      let off = 0;
      while (off < len) {
        const k = f.readSync(buf.subarray(off));
        if (k === null) break;
        off += k;
      }
      const lines = new TextDecoder().decode(buf.subarray(0, off)).split("\n")
        .map((l) => l.replace(ANSI, "").replace(/\r/g, "").trimEnd())
        .filter((l) => l !== "" && !l.startsWith("== "));
      return lines.slice(-n);
    } finally {
      f.close();
    }
  } catch {
    return [];
  }
}

/** The exit status in the last `== exit N` line of a log, or `null`. */
export function lastExitStatus(path: string): number | null {
  try {
    const text = Deno.readTextFileSync(path);
    const m = [...text.matchAll(/^== exit (\d+)/gm)].pop();
    const h = [...text.matchAll(/^== .* attempt /gm)].pop();
    if (!m || (h && (h.index ?? 0) > (m.index ?? 0))) return null;
    return Number(m[1]);
  } catch {
    return null;
  }
}

/**
 * Decides what an ended attempt means: done when its outputs are complete,
 * else another attempt while retries are left, else failed.
 */
export function endAttempt(
  st: TaskStatus,
  ctx: RunnerContext,
  reason: string | null,
): "done" | "retry" | "failed" {
  st.ended = Date.now();
  const missing = firstMissing(st.task);
  if (reason === null && missing === undefined) {
    st.state = "done";
    st.error = null;
    ctx.notify(st, "done");
    return "done";
  }
  st.error = reason ?? `exit 0 but output incomplete (${missing})`;
  if (ctx.signal.aborted) {
    st.state = "cancelled";
    ctx.notify(st, "cancelled");
    return "failed";
  }
  if (st.attempts <= ctx.retries) {
    st.state = "pending";
    ctx.notify(st, "retry");
    return "retry";
  }
  st.state = "failed";
  ctx.notify(st, "failed");
  return "failed";
}

const enc = new TextEncoder();

/** Appends a line to a log file. */
export function appendLog(path: string, line: string): void {
  try {
    Deno.writeFileSync(path, enc.encode(line.endsWith("\n") ? line : line + "\n"), {
      append: true,
      create: true,
    });
  } catch { /* the folder is gone: nothing to record into */ }
}

/**
 * Runs tasks as local Deno subprocesses, at most `maxWorkers` at once. A
 * task's stdout and stderr go to its log; a task whose log and outputs do
 * not change for `timeoutS` seconds is killed (SIGKILL) and counts as a
 * failed attempt.
 */
export class LocalRunner implements Runner {
  /** Runner kind. */
  readonly kind = "local" as const;

  /** Runs a batch to the end. */
  async run(batch: readonly TaskStatus[], ctx: RunnerContext): Promise<void> {
    const queue = [...batch];
    const live = new Set<Deno.ChildProcess>();
    const onAbort = () => {
      for (const c of live) {
        try {
          c.kill("SIGTERM");
        } catch { /* gone */ }
      }
      setTimeout(() => {
        for (const c of live) {
          try {
            c.kill("SIGKILL");
          } catch { /* gone */ }
        }
      }, 3000);
    };
    ctx.signal.addEventListener("abort", onAbort);
    const worker = async () => {
      while (queue.length > 0 && !ctx.signal.aborted) {
        const st = queue.shift()!;
        const r = await this.#attempt(st, ctx, live);
        if (r === "retry") queue.push(st);
      }
    };
    try {
      await Promise.all(
        Array.from({ length: Math.max(1, Math.min(ctx.maxWorkers, queue.length)) }, worker),
      );
    } finally {
      ctx.signal.removeEventListener("abort", onAbort);
    }
    for (const st of queue) {
      st.state = "cancelled";
      ctx.notify(st, "cancelled");
    }
  }

  async #attempt(
    st: TaskStatus,
    ctx: RunnerContext,
    live: Set<Deno.ChildProcess>,
  ): Promise<"done" | "retry" | "failed"> {
    const t = st.task;
    st.attempts++;
    st.state = "running";
    st.started = Date.now();
    st.ended = null;
    let child: Deno.ChildProcess;
    try {
      child = new Deno.Command(t.argv[0], {
        args: t.argv.slice(1),
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
        env: { NO_COLOR: "1" },
      }).spawn();
    } catch (e) {
      appendLog(t.log, `== ${t.id} attempt ${st.attempts} local: cannot start: ${e}`);
      return endAttempt(st, ctx, `cannot start: ${e}`);
    }
    live.add(child);
    st.where = `pid ${child.pid}`;
    appendLog(
      t.log,
      `== ${t.id} attempt ${st.attempts} local pid ${child.pid} ${new Date().toISOString()}`,
    );
    ctx.notify(st, "start");
    const file = await Deno.open(t.log, { append: true, create: true, write: true });
    const pump = async (s: ReadableStream<Uint8Array>) => {
      for await (const chunk of s) {
        let off = 0;
        while (off < chunk.byteLength) off += await file.write(chunk.subarray(off));
      }
    };
    const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]).catch(() => {});
    let stalled = false;
    const timer = setInterval(() => {
      const idle = Date.now() - Math.max(st.started!, lastProgress(t));
      if (idle > ctx.timeoutS * 1000 && !stalled) {
        stalled = true;
        ctx.notify(st, "stalled");
        try {
          child.kill("SIGKILL");
        } catch { /* gone */ }
      }
    }, Math.min(1000, ctx.timeoutS * 250));
    const status = await child.status;
    clearInterval(timer);
    await pumps;
    file.close();
    live.delete(child);
    const secs = ((Date.now() - st.started) / 1000).toFixed(1);
    const code = status.signal ? 128 + signalNumber(status.signal) : status.code;
    appendLog(t.log, `== exit ${code} after ${secs} s${stalled ? " (no progress: killed)" : ""}`);
    const reason = stalled
      ? `no progress for ${ctx.timeoutS} s: killed`
      : ctx.signal.aborted
      ? "interrupted"
      : status.success
      ? null
      : status.signal
      ? `killed by ${status.signal}`
      : `exit ${status.code}`;
    return endAttempt(st, ctx, reason);
  }
}

function signalNumber(s: string): number {
  return ({ SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 } as Record<string, number>)[s] ?? 0;
}

/** What {@linkcode executePlan} did. */
export interface ExecuteResult {
  /** Every selected task's final status. */
  readonly statuses: readonly TaskStatus[];
}

/**
 * Runs the selected tasks (one status each, see {@linkcode newStatus})
 * group by group (prepare → encode → merge → eval). A task whose outputs
 * are complete is skipped; a task whose dependency failed (or is incomplete
 * and not selected) is blocked.
 */
export async function executePlan(
  tasks: readonly Task[],
  selected: readonly TaskStatus[],
  runner: Runner,
  ctx: RunnerContext,
): Promise<ExecuteResult> {
  const statuses = new Map<string, TaskStatus>(selected.map((st) => [st.task.id, st]));
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const satisfied = (id: string): boolean => {
    const st = statuses.get(id);
    if (st) return st.state === "done" || st.state === "skipped";
    const t = byId.get(id);
    return t !== undefined && firstMissing(t) === undefined;
  };
  for (const st of statuses.values()) {
    if (firstMissing(st.task) === undefined) {
      st.state = "skipped";
      ctx.notify(st, "skipped");
    }
  }
  for (const group of STAGE_GROUPS) {
    if (ctx.signal.aborted) break;
    const batch: TaskStatus[] = [];
    for (const st of statuses.values()) {
      if (!group.includes(st.task.stage) || st.state !== "pending") continue;
      const bad = st.task.deps.find((d) => !satisfied(d));
      if (bad !== undefined) {
        st.state = "blocked";
        st.error = `needs ${bad}`;
        ctx.notify(st, "blocked");
        continue;
      }
      batch.push(st);
      ctx.notify(st, "queued");
    }
    if (batch.length > 0) await runner.run(batch, ctx);
  }
  for (const st of statuses.values()) {
    if (st.state === "pending" || st.state === "running") {
      st.state = "cancelled";
      ctx.notify(st, "cancelled");
    }
  }
  return { statuses: [...statuses.values()] };
}
