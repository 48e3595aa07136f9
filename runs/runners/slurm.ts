/**
 * The Slurm runner of a run: one `sbatch` job array per stage
 * (and per `--gres`), one array task per partition. The planner writes a
 * task list (`slurm/<stage>.tasks`, one shell-quoted line per task: log,
 * id, command); the array task picks its line by `SLURM_ARRAY_TASK_ID`,
 * appends a header, its command's output and `== exit N` to the task's log.
 * The runner watches the array with `squeue --json` (falling back to
 * `squeue -h -r -o`), kills a task that makes no progress (`scancel`), and
 * resubmits the array tasks whose outputs are incomplete as a new array,
 * up to the retry limit (but not one whose command exited 2: bad input,
 * which another attempt would meet again). Tasks write atomically and skip
 * complete files, so a requeued or repeated task is safe. Interrupting the
 * runner cancels its arrays (`scancel`) and waits until Slurm has stopped
 * their tasks.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import { UsageError } from "../../io/errors.ts";
import { writeTextFileAtomic } from "../../io/fs.ts";
import { endAttempt } from "./execute.ts";
import { appendLog, lastExitStatus, lastProgress } from "./logs.ts";
import {
  CHILD_ENV,
  type CmdOut,
  runCommand,
  signalChild,
  spawnFailure,
  spawnScoped,
} from "../../io/process.ts";
import { type Runner, type RunnerContext, RunnerService, type TaskStatus } from "./status.ts";

/** Runs a Slurm client command (a missing binary is exit 127). */
const cmd = (name: string, args: readonly string[], timeoutMs = 30000): Effect.Effect<CmdOut> =>
  runCommand(name, args, timeoutMs);

/**
 * Checks that a Slurm cluster answers (`sinfo`) and has `partition`; fails
 * with {@linkcode UsageError} (exit 2) otherwise. Succeeds with the
 * partitions.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { checkSlurm } from "./slurm.ts";
 * const r = await Effect.runPromise(Effect.result(checkSlurm("debug")));
 * if (r._tag === "Failure" && !r.failure.message.startsWith("--")) throw r.failure;
 * ```
 */
export const checkSlurm = (partition: string | null): Effect.Effect<string[], UsageError> =>
  Effect.gen(function* () {
    const r = yield* sinfoPartitions;
    if (r.code !== 0) {
      const line = r.stderr.trim().split("\n").find((l) => /fatal|error/i.test(l)) ??
        r.stderr.trim().split("\n")[0] ?? "";
      const why = r.code === 127
        ? "sinfo not found (install slurm-client)"
        : r.code === 124
        ? "sinfo timed out"
        : `sinfo: ${line.replace(/^sinfo: (error: |fatal: )?/, "").replace(/, retrying .*$/, "")}`;
      return yield* Effect.fail(
        new UsageError(
          `--slurm: no Slurm cluster reachable (${why}); set SLURM_CONF or start one with .ci/slurm_up.sh`,
        ),
      );
    }
    const parts = r.stdout.split("\n").map((l) => l.trim().replace(/\*$/, "")).filter(Boolean);
    if (partition !== null && !parts.includes(partition)) {
      return yield* Effect.fail(
        new UsageError(`--partition: no partition "${partition}" (have: ${parts.join(", ")})`),
      );
    }
    return parts;
  });

/**
 * `sinfo -h -o %P`, given up on early: a missing config file makes sinfo
 * retry for a minute ("retrying in 1sec up to 60sec"), so the first such
 * line ends it; an unreachable controller ends it after 20 s.
 */
const sinfoPartitions: Effect.Effect<CmdOut> = Effect.scoped(Effect.gen(function* () {
  const c = yield* spawnScoped(["sinfo", "-h", "-o", "%P"], { graceMs: 0 });
  let gaveUp: number | null = null;
  const stop = (code: number) => {
    if (gaveUp !== null) return;
    gaveUp = code;
    signalChild(c, "SIGKILL");
  };
  const d = new TextDecoder();
  let stderr = "";
  const errDone = (async () => {
    for await (const chunk of c.process.stderr) {
      stderr += d.decode(chunk, { stream: true });
      if (/retrying in/.test(stderr)) stop(1);
    }
  })();
  const stdout = new Response(c.process.stdout).text();
  const status = yield* Effect.promise(() => c.status).pipe(
    Effect.timeoutOption(20000),
    Effect.flatMap((s) => {
      if (s._tag === "Some") return Effect.succeed(s.value);
      stop(124);
      return Effect.promise(() => c.status);
    }),
  );
  yield* Effect.promise(() => errDone.catch(() => {}));
  return { code: gaveUp ?? status.code, stdout: yield* Effect.promise(() => stdout), stderr };
})).pipe(Effect.catchTag("SpawnError", (e) => Effect.succeed(spawnFailure(e))));

/**
 * Quotes a word for `bash` (`'...'`, a `'` becomes `'\''`).
 *
 * @example
 * ```ts
 * import { shellQuote } from "./slurm.ts";
 * if (shellQuote("it's") !== "'it'\\''s'" || shellQuote("/a/b.log") !== "/a/b.log") throw new Error();
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

/**
 * Expands `0-3%2`, `1,4,7-9` into indices.
 *
 * @example
 * ```ts
 * import { expandArrayString } from "./slurm.ts";
 * if (expandArrayString("1,4,7-9%2").join() !== "1,4,7,8,9") throw new Error();
 * ```
 */
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
  #serial = 0;
  #maxArray: number | undefined;

  /**
   * A runner that submits its batches to Slurm.
   *
   * @param opts where and how to submit
   */
  constructor(readonly opts: SlurmOptions) {}

  /** Runs a batch to the end: every task done, failed or (interrupted) cancelled. */
  run(batch: readonly TaskStatus[], ctx: RunnerContext): Effect.Effect<void> {
    return Effect.gen({ self: this }, function* () {
      const groups = new Map<string, TaskStatus[]>();
      for (const st of batch) {
        const key = `${st.task.stage}\t${st.task.gres ?? ""}`;
        if (!groups.has(key)) groups.set(key, []);
        groups.get(key)!.push(st);
      }
      // Array indices must stay below the cluster's MaxArraySize: more tasks, more arrays.
      const max = yield* this.#maxArraySize();
      const arrays: TaskStatus[][] = [];
      for (const g of groups.values()) {
        for (let a = 0; a < g.length; a += max) arrays.push(g.slice(a, a + max));
      }
      yield* Effect.forEach(arrays, (g) => this.#runArray(g, ctx), {
        concurrency: "unbounded",
        discard: true,
      });
    });
  }

  #runArray(tasks: TaskStatus[], ctx: RunnerContext): Effect.Effect<void> {
    const dir = `${this.opts.runDir}/slurm`;
    const stage = tasks[0].task.stage;
    const gres = tasks[0].task.gres;
    const name = `${stage}${gres ? `-${gres.replace(/[^A-Za-z0-9]/g, "")}` : ""}.${this.#serial++}`;
    const tasksFile = `${dir}/${name}.tasks`;
    const script = `${dir}/${name}.sh`;
    return Effect.gen({ self: this }, function* () {
      Deno.mkdirSync(dir, { recursive: true });
      // Written atomically (`io/fs.ts`); a folder that cannot be written is a defect, as before.
      const write = (file: string, text: string, mode?: number) =>
        writeTextFileAtomic(file, text, (reason) => new Error(`${file}: ${reason}`), { mode })
          .pipe(Effect.orDie);
      yield* write(
        tasksFile,
        tasks.map((st) => [st.task.log, st.task.id, ...st.task.argv].map(shellQuote).join(" "))
          .join("\n") + "\n",
      );
      yield* write(script, arrayScript(tasksFile), 0o755);
      let todo = tasks.map((_, i) => i);
      let attempt = 0;
      while (todo.length > 0) {
        attempt++;
        const r = yield* this.#submitAndWatch(tasks, todo, attempt, { dir, name, script }, ctx);
        if (r === "stop") return;
        todo = r;
      }
    });
  }

  /**
   * Submits the array tasks `todo` and watches them to their end; succeeds
   * with the ones to resubmit, or `"stop"` when sbatch failed. Interrupted,
   * it cancels the array and waits until Slurm has stopped its tasks.
   */
  #submitAndWatch(
    tasks: TaskStatus[],
    todo: number[],
    attempt: number,
    f: { dir: string; name: string; script: string },
    ctx: RunnerContext,
  ): Effect.Effect<number[] | "stop"> {
    const stage = tasks[0].task.stage;
    const gres = tasks[0].task.gres;
    const open = new Set(todo);
    return Effect.gen({ self: this }, function* () {
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
        `--output=${f.dir}/${f.name}-%A_%a.out`,
        `--chdir=${this.opts.runDir}`,
        `--export=ALL,${
          Object.entries(CHILD_ENV).map(([k, v]) => `${k}=${v}`).join(",")
        },PHRASEVAL_ATTEMPT=${attempt}`,
        "--ntasks=1",
        "--cpus-per-task=1",
        ...(this.opts.partition ? [`--partition=${this.opts.partition}`] : []),
        ...(gres ? [`--gres=${gres}`] : []),
        f.script,
      ];
      // The array is a scoped resource: interrupted, it is cancelled and awaited.
      const jobId = yield* Effect.acquireRelease(
        Effect.uninterruptible(cmd("sbatch", args)),
        (sub, exit) => {
          const id = sub.stdout.trim().split(";")[0];
          if (exit._tag !== "Failure" || sub.code !== 0 || !/^\d+$/.test(id)) return Effect.void;
          return this.#cancelAndWait(id, tasks, open, ctx);
        },
      ).pipe(Effect.map((sub) => ({ sub, id: sub.stdout.trim().split(";")[0] })));
      if (jobId.sub.code !== 0 || !/^\d+$/.test(jobId.id)) {
        const sub = jobId.sub;
        const why = `sbatch failed: ${sub.stderr.trim().split("\n").pop() ?? `exit ${sub.code}`}`;
        for (const i of todo) {
          appendLog(tasks[i].task.log, `== ${tasks[i].task.id} attempt ${attempt} ${why}`);
          tasks[i].attempts = Math.max(tasks[i].attempts, ctx.retries + 1);
          endAttempt(tasks[i], ctx, why);
        }
        return "stop" as const;
      }
      const id = jobId.id;
      const submittedAt = Date.now();
      const stalled = new Set<number>();
      const next: number[] = [];
      const finish = (i: number) => {
        open.delete(i);
        const st = tasks[i];
        if (st.started === null) {
          st.started = Date.now();
          st.where = `slurm ${id}_${i}`;
        }
        const code = lastExitStatus(st.task.log);
        const reason = stalled.has(i)
          ? `no progress for ${ctx.timeoutS} s: cancelled (scancel ${id}_${i})`
          : code === null
          ? `killed (no exit status from slurm ${id}_${i})`
          : code !== 0
          ? `exit ${code}${code > 128 ? ` (signal ${code - 128})` : ""}`
          : null;
        if (code === null || stalled.has(i)) appendLog(st.task.log, `== ${reason}`);
        const exited = code !== null && !stalled.has(i) ? code : null;
        if (endAttempt(st, ctx, reason, false, exited) === "retry") next.push(i);
      };
      while (open.size > 0) {
        const states = yield* this.#states(id);
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
              st.where = `slurm ${id}_${i}`;
              ctx.notify(st, "start");
            }
            if (st.state === "running" && !stalled.has(i)) {
              const idle = Date.now() - Math.max(st.started!, lastProgress(st.task));
              if (idle > ctx.timeoutS * 1000) {
                stalled.add(i);
                ctx.notify(st, "stalled");
                yield* cmd("scancel", [`${id}_${i}`]);
              }
            }
          }
        }
        // Poll fast at first (short tasks), then back off to at most 5 s.
        const poll = this.opts.pollS ?? Math.min(5, 0.5 + (Date.now() - submittedAt) / 60000);
        if (open.size > 0) yield* Effect.sleep(1000 * poll);
      }
      return next;
    }).pipe(Effect.scoped);
  }

  /**
   * Cancels an array and waits until Slurm has stopped its tasks (KillWait),
   * so that nothing of this run still writes when the runner exits; the
   * tasks still open end cancelled.
   */
  #cancelAndWait(
    jobId: string,
    tasks: TaskStatus[],
    open: Set<number>,
    ctx: RunnerContext,
  ): Effect.Effect<void> {
    return Effect.gen({ self: this }, function* () {
      yield* cmd("scancel", [jobId]);
      const until = Date.now() + 60000;
      while (Date.now() < until) {
        const states = yield* this.#states(jobId);
        if (states !== undefined && ![...open].some((i) => states.has(i))) break;
        yield* Effect.sleep(500);
      }
      for (const i of open) endAttempt(tasks[i], ctx, "interrupted", true);
    });
  }

  /** The cluster's `MaxArraySize` (default 1001: indices 0..1000). */
  #maxArraySize(): Effect.Effect<number> {
    if (this.#maxArray !== undefined) return Effect.succeed(this.#maxArray);
    return cmd("scontrol", ["show", "config"]).pipe(Effect.map((r) => {
      const m = /^MaxArraySize\s*=\s*(\d+)/m.exec(r.stdout);
      this.#maxArray = m ? Math.max(1, Number(m[1])) : 1001;
      return this.#maxArray;
    }));
  }

  /** Array task index → Slurm state, for the tasks of `jobId` still in the queue. */
  #states(jobId: string): Effect.Effect<Map<number, string> | undefined> {
    return Effect.gen({ self: this }, function* () {
      const out = new Map<number, string>();
      if (this.#json) {
        const r = yield* cmd("squeue", ["--json", `--jobs=${jobId}`]);
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
      const r = yield* cmd("squeue", ["-h", "-r", `--jobs=${jobId}`, "-o", "%i|%T"]);
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
    });
  }
}

/**
 * The {@linkcode RunnerService} of a run on Slurm: a new
 * {@linkcode SlurmRunner} with `opts` each time the Layer is built (nothing
 * is submitted until the run gives it tasks).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { SlurmRunnerLive } from "./slurm.ts";
 * import { RunnerService } from "./status.ts";
 * const kind = Effect.gen(function* () {
 *   return (yield* RunnerService).kind;
 * });
 * const layer = SlurmRunnerLive({ partition: null, runDir: "/nonexistent", throttle: null });
 * if (await Effect.runPromise(Effect.provide(kind, layer)) !== "slurm") throw new Error();
 * ```
 */
export const SlurmRunnerLive = (opts: SlurmOptions): Layer.Layer<RunnerService> =>
  Layer.sync(RunnerService, () => new SlurmRunner(opts));

/** Slurm job states of a job that is still queued or running. */
const ACTIVE_STATE =
  /PENDING|RUNNING|CONFIGURING|COMPLETING|SUSPENDED|REQUEUED|RESIZING|STAGE_OUT|SIGNALING|STOPPED/;
