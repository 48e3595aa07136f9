/**
 * The Slurm runner of `pipeline/run.ts`: one `sbatch` job array per stage
 * (and per `--gres`), one array task per partition. The planner writes a
 * task list (`slurm/<stage>.tasks`, one shell-quoted line per task: log,
 * id, command); the array task picks its line by `SLURM_ARRAY_TASK_ID`,
 * appends a header, its command's output and `== exit N` to the task's log.
 * The runner watches the array with `squeue --json` (falling back to
 * `squeue -h -r -o`), kills a task that makes no progress (`scancel`), and
 * resubmits the array tasks whose outputs are incomplete as a new array,
 * up to the retry limit. Tasks write atomically and skip complete files, so
 * a requeued or repeated task is safe.
 *
 * @module
 */
import { UsageError } from "./_cli.ts";
import {
  appendLog,
  endAttempt,
  lastExitStatus,
  lastProgress,
  type Runner,
  type RunnerContext,
  type TaskStatus,
} from "./_run_exec.ts";

/** Result of a command: exit code and its output. */
interface CmdOut {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a Slurm client command (a missing binary is exit 127). */
async function cmd(name: string, args: readonly string[], timeoutMs = 30000): Promise<CmdOut> {
  try {
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), timeoutMs);
    try {
      const out = await new Deno.Command(name, {
        args: [...args],
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
        signal: ac.signal,
      }).output();
      const d = new TextDecoder();
      return {
        code: ac.signal.aborted ? 124 : out.code,
        stdout: d.decode(out.stdout),
        stderr: d.decode(out.stderr),
      };
    } finally {
      clearTimeout(timer);
    }
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      return { code: 127, stdout: "", stderr: `${name}: not found` };
    }
    return { code: 126, stdout: "", stderr: `${name}: ${e instanceof Error ? e.message : e}` };
  }
}

/**
 * Checks that a Slurm cluster answers (`sinfo`) and has `partition`;
 * throws {@linkcode UsageError} (exit 2) otherwise. Returns the partitions.
 *
 * @example
 * ```ts
 * import { checkSlurm } from "./_run_slurm.ts";
 * // await checkSlurm("debug"); // ["debug"]
 * ```
 */
export async function checkSlurm(partition: string | null): Promise<string[]> {
  const r = await sinfoPartitions();
  if (r.code !== 0) {
    const line = r.stderr.trim().split("\n").find((l) => /fatal|error/i.test(l)) ??
      r.stderr.trim().split("\n")[0] ?? "";
    const why = r.code === 127
      ? "sinfo not found (install slurm-client)"
      : r.code === 124
      ? "sinfo timed out"
      : `sinfo: ${line.replace(/^sinfo: (error: |fatal: )?/, "").replace(/, retrying .*$/, "")}`;
    throw new UsageError(
      `--slurm: no Slurm cluster reachable (${why}); set SLURM_CONF or start one with .ci/slurm_up.sh`,
    );
  }
  const parts = r.stdout.split("\n").map((l) => l.trim().replace(/\*$/, "")).filter(Boolean);
  if (partition !== null && !parts.includes(partition)) {
    throw new UsageError(`--partition: no partition "${partition}" (have: ${parts.join(", ")})`);
  }
  return parts;
}

/**
 * `sinfo -h -o %P`, given up on early: a missing config file makes sinfo
 * retry for a minute ("retrying in 1sec up to 60sec"), so the first such
 * line ends it; an unreachable controller ends it after 20 s.
 */
async function sinfoPartitions(): Promise<CmdOut> {
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command("sinfo", {
      args: ["-h", "-o", "%P"],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      return { code: 127, stdout: "", stderr: "sinfo: not found" };
    }
    return { code: 126, stdout: "", stderr: `sinfo: ${e instanceof Error ? e.message : e}` };
  }
  let gaveUp: number | null = null;
  const stop = (code: number) => {
    if (gaveUp !== null) return;
    gaveUp = code;
    try {
      child.kill("SIGKILL");
    } catch { /* ended */ }
  };
  const timer = setTimeout(() => stop(124), 20000);
  const d = new TextDecoder();
  let stderr = "";
  const errDone = (async () => {
    for await (const chunk of child.stderr) {
      stderr += d.decode(chunk, { stream: true });
      if (/retrying in/.test(stderr)) stop(1);
    }
  })();
  const stdout = new Response(child.stdout).text();
  const status = await child.status;
  clearTimeout(timer);
  await errDone.catch(() => {});
  return { code: gaveUp ?? status.code, stdout: await stdout, stderr };
}

/**
 * Quotes a word for `bash` (`'...'`, a `'` becomes `'\''`).
 *
 * @example
 * ```ts
 * import { shellQuote } from "./_run_slurm.ts";
 * shellQuote("it's"); // "'it'\\''s'"
 * ```
 */
export function shellQuote(s: string): string {
  return /^[A-Za-z0-9_\-+=.,/:@%]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`;
}

/** The array-task script: runs line `SLURM_ARRAY_TASK_ID + 1` of `tasksFile`. */
export function arrayScript(tasksFile: string): string {
  return `#!/bin/bash
# Generated by phraseval run: one array task = one line of the task list.
set -u
line=$(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" ${shellQuote(tasksFile)})
if [ -z "$line" ]; then echo "no task $SLURM_ARRAY_TASK_ID in ${tasksFile}" >&2; exit 2; fi
eval "set -- $line"
log=$1; id=$2; shift 2
echo "== $id attempt \${PHRASEVAL_ATTEMPT:-?} slurm \${SLURM_ARRAY_JOB_ID}_\${SLURM_ARRAY_TASK_ID} (job $SLURM_JOB_ID) on $(hostname) $(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$log"
"$@" >>"$log" 2>&1 &
child=$!
echo "== pid $child" >>"$log"
wait "$child"
rc=$?
echo "== exit $rc" >>"$log"
exit "$rc"
`;
}

/** Expands `0-3%2`, `1,4,7-9` into indices. */
export function expandArrayString(s: string): number[] {
  const out: number[] = [];
  for (const part of s.replace(/%\d+$/, "").split(",")) {
    const m = /^(\d+)(?:-(\d+))?(?::(\d+))?$/.exec(part.trim());
    if (!m) continue;
    const a = Number(m[1]), b = m[2] !== undefined ? Number(m[2]) : a;
    const step = m[3] !== undefined ? Number(m[3]) : 1;
    for (let i = a; i <= b; i += step) out.push(i);
  }
  return out;
}

/** Options of {@linkcode SlurmRunner}. */
export interface SlurmOptions {
  /** The partition, or `null` for the cluster's default. */
  readonly partition: string | null;
  /** The run folder (task lists, scripts and Slurm's own output go to `slurm/`). */
  readonly runDir: string;
  /** Most array tasks at once (`--array=...%N`), or `null` for no limit. */
  readonly throttle: number | null;
  /** Seconds between `squeue` polls (default: 0.5, growing to 5 over minutes). */
  readonly pollS?: number;
}

/**
 * Runs tasks as Slurm job arrays (see the module notes).
 */
export class SlurmRunner implements Runner {
  /** Runner kind. */
  readonly kind = "slurm" as const;
  #json = true;
  #active = new Set<string>();
  #serial = 0;

  /** @param opts where and how to submit */
  constructor(readonly opts: SlurmOptions) {}

  /** Runs a batch to the end. */
  async run(batch: readonly TaskStatus[], ctx: RunnerContext): Promise<void> {
    const groups = new Map<string, TaskStatus[]>();
    for (const st of batch) {
      const key = `${st.task.stage}\t${st.task.gres ?? ""}`;
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key)!.push(st);
    }
    const onAbort = () => {
      for (const id of this.#active) cmd("scancel", [id]).catch(() => {});
    };
    ctx.signal.addEventListener("abort", onAbort);
    // Array indices must stay below the cluster's MaxArraySize: more tasks, more arrays.
    const max = await this.#maxArraySize();
    const arrays: TaskStatus[][] = [];
    for (const g of groups.values()) {
      for (let a = 0; a < g.length; a += max) arrays.push(g.slice(a, a + max));
    }
    try {
      await Promise.all(arrays.map((g) => this.#runArray(g, ctx)));
    } finally {
      ctx.signal.removeEventListener("abort", onAbort);
    }
  }

  async #runArray(tasks: TaskStatus[], ctx: RunnerContext): Promise<void> {
    const dir = `${this.opts.runDir}/slurm`;
    Deno.mkdirSync(dir, { recursive: true });
    const stage = tasks[0].task.stage;
    const gres = tasks[0].task.gres;
    const name = `${stage}${gres ? `-${gres.replace(/[^A-Za-z0-9]/g, "")}` : ""}.${this.#serial++}`;
    const tasksFile = `${dir}/${name}.tasks`;
    const script = `${dir}/${name}.sh`;
    Deno.writeTextFileSync(
      tasksFile,
      tasks.map((st) => [st.task.log, st.task.id, ...st.task.argv].map(shellQuote).join(" "))
        .join("\n") + "\n",
    );
    Deno.writeTextFileSync(script, arrayScript(tasksFile), { mode: 0o755 });
    let todo = tasks.map((_, i) => i);
    let attempt = 0;
    while (todo.length > 0 && !ctx.signal.aborted) {
      attempt++;
      for (const i of todo) {
        const st = tasks[i];
        st.attempts++;
        st.state = "pending";
        st.started = null;
        st.where = null;
      }
      const args = [
        "--parsable",
        `--array=${todo.join(",")}${this.opts.throttle ? `%${this.opts.throttle}` : ""}`,
        `--job-name=pv-${stage}`,
        `--output=${dir}/${name}-%A_%a.out`,
        `--chdir=${this.opts.runDir}`,
        `--export=ALL,NO_COLOR=1,PHRASEVAL_ATTEMPT=${attempt}`,
        "--ntasks=1",
        "--cpus-per-task=1",
        ...(this.opts.partition ? [`--partition=${this.opts.partition}`] : []),
        ...(gres ? [`--gres=${gres}`] : []),
        script,
      ];
      const sub = await cmd("sbatch", args);
      const jobId = sub.stdout.trim().split(";")[0];
      if (sub.code !== 0 || !/^\d+$/.test(jobId)) {
        const why = `sbatch failed: ${sub.stderr.trim().split("\n").pop() ?? `exit ${sub.code}`}`;
        for (const i of todo) {
          appendLog(tasks[i].task.log, `== ${tasks[i].task.id} attempt ${attempt} ${why}`);
          tasks[i].attempts = Math.max(tasks[i].attempts, ctx.retries + 1);
          endAttempt(tasks[i], ctx, why);
        }
        return;
      }
      this.#active.add(jobId);
      const submittedAt = Date.now();
      const open = new Set(todo);
      const stalled = new Set<number>();
      const next: number[] = [];
      const finish = (i: number) => {
        open.delete(i);
        const st = tasks[i];
        if (st.started === null) {
          st.started = Date.now();
          st.where = `slurm ${jobId}_${i}`;
        }
        const code = lastExitStatus(st.task.log);
        const reason = stalled.has(i)
          ? `no progress for ${ctx.timeoutS} s: cancelled (scancel ${jobId}_${i})`
          : code === null
          ? `killed (no exit status from slurm ${jobId}_${i})`
          : code !== 0
          ? `exit ${code}${code > 128 ? ` (signal ${code - 128})` : ""}`
          : null;
        if (code === null || stalled.has(i)) appendLog(st.task.log, `== ${reason}`);
        if (endAttempt(st, ctx, reason) === "retry") next.push(i);
      };
      try {
        while (open.size > 0 && !ctx.signal.aborted) {
          const states = await this.#states(jobId);
          if (states !== undefined) {
            for (const i of [...open]) {
              const s = states.get(i);
              const st = tasks[i];
              if (s === undefined) {
                finish(i);
                continue;
              }
              if (/RUNNING|COMPLETING|CONFIGURING/.test(s) && st.state !== "running") {
                st.state = "running";
                st.started = Date.now();
                st.where = `slurm ${jobId}_${i}`;
                ctx.notify(st, "start");
              }
              if (st.state === "running" && !stalled.has(i)) {
                const idle = Date.now() - Math.max(st.started!, lastProgress(st.task));
                if (idle > ctx.timeoutS * 1000) {
                  stalled.add(i);
                  ctx.notify(st, "stalled");
                  await cmd("scancel", [`${jobId}_${i}`]);
                }
              }
            }
          }
          // Poll fast at first (short tasks), then back off to at most 5 s.
          const poll = this.opts.pollS ?? Math.min(5, 0.5 + (Date.now() - submittedAt) / 60000);
          if (open.size > 0) await sleep(1000 * poll);
        }
      } finally {
        this.#active.delete(jobId);
      }
      if (ctx.signal.aborted) {
        // Cancel, and wait until Slurm has stopped the tasks (KillWait), so
        // that nothing of this run still writes when the runner exits.
        await cmd("scancel", [jobId]);
        const until = Date.now() + 60000;
        while (Date.now() < until) {
          const states = await this.#states(jobId);
          if (states !== undefined && ![...open].some((i) => states.has(i))) break;
          await sleep(500);
        }
        for (const i of open) endAttempt(tasks[i], ctx, "interrupted");
        return;
      }
      todo = next;
    }
  }

  #maxArray: number | undefined;

  /** The cluster's `MaxArraySize` (default 1001: indices 0..1000). */
  async #maxArraySize(): Promise<number> {
    if (this.#maxArray === undefined) {
      const r = await cmd("scontrol", ["show", "config"]);
      const m = /^MaxArraySize\s*=\s*(\d+)/m.exec(r.stdout);
      this.#maxArray = m ? Math.max(1, Number(m[1])) : 1001;
    }
    return this.#maxArray;
  }

  /** Array task index → Slurm state, for the tasks of `jobId` still in the queue. */
  async #states(jobId: string): Promise<Map<number, string> | undefined> {
    const out = new Map<number, string>();
    if (this.#json) {
      const r = await cmd("squeue", ["--json", `--jobs=${jobId}`]);
      if (r.code === 0) {
        // Slurm 22.05 ignores --jobs/--states with --json (it lists every job the
        // controller remembers, finished ones included): filter here.
        try {
          const j = JSON.parse(r.stdout) as {
            jobs?: {
              array_job_id?: number;
              array_task_id?: number | null;
              array_task_string?: string;
              job_state?: string | string[];
            }[];
          };
          for (const job of j.jobs ?? []) {
            if (String(job.array_job_id) !== jobId) continue;
            const state = Array.isArray(job.job_state)
              ? job.job_state.join(",")
              : job.job_state ?? "";
            // With --jobs, squeue also lists finished jobs: those are not queued.
            if (!ACTIVE_STATE.test(state)) continue;
            if (typeof job.array_task_id === "number") out.set(job.array_task_id, state);
            else if (job.array_task_string) {
              for (const i of expandArrayString(job.array_task_string)) out.set(i, state);
            }
          }
          return out;
        } catch { /* fall through to the text format */ }
      }
      if (/invalid job id/i.test(r.stderr)) return out;
      this.#json = false;
    }
    const r = await cmd("squeue", ["-h", "-r", `--jobs=${jobId}`, "-o", "%i|%T"]);
    if (r.code !== 0) {
      // A job that left the controller's memory is "invalid": nothing queued.
      return /invalid job id/i.test(r.stderr) ? out : undefined;
    }
    for (const line of r.stdout.split("\n")) {
      const m = /^(\d+)_(\d+|\[[^\]]*\])\|(\S+)/.exec(line.trim());
      if (!m || m[1] !== jobId || !ACTIVE_STATE.test(m[3])) continue;
      if (m[2].startsWith("[")) {
        for (const i of expandArrayString(m[2].slice(1, -1))) out.set(i, m[3]);
      } else out.set(Number(m[2]), m[3]);
    }
    return out;
  }
}

/** Slurm job states of a job that is still queued or running. */
const ACTIVE_STATE =
  /PENDING|RUNNING|CONFIGURING|COMPLETING|SUSPENDED|REQUEUED|RESIZING|STAGE_OUT|SIGNALING|STOPPED/;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
