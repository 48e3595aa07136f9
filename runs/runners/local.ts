/**
 * The local runner: each task a Deno subprocess (its command line from the
 * plan, permissions narrowed by `runs/sandbox/sandbox.ts`), at most `--max-workers` at
 * once; the encode partitions of one model, dataset and half share
 * processes (at most `--max-workers` of them, {@linkcode packTasks}), so an
 * encoder loads once per process rather than once per partition. A task's stdout and stderr go to its log; a task whose log and
 * outputs do not change for the task timeout is killed (SIGKILL) and counts
 * as a failed attempt; a failed attempt is retried up to `--retries` times,
 * unless its process exited 2 (bad input: `endAttempt` of `execute.ts`).
 * Each child is a scoped resource: interrupting the runner stops (SIGTERM,
 * SIGKILL 3 s later) and awaits every child it started.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import * as Option from "effect/Option";
import * as Schedule from "effect/Schedule";
import { endAttempt } from "./execute.ts";
import { appendLog, lastProgress } from "./logs.ts";
import { type Child, exitCode, signalChild, spawnScoped, stopChild } from "../../io/process.ts";
import { type Runner, type RunnerContext, RunnerService, type TaskStatus } from "./status.ts";

/** A failed attempt that will be retried. */
class RetryAttempt {
  readonly _tag = "RetryAttempt";
}

/**
 * Waits for the child to exit while its tasks make progress: `true` when
 * none made any for the task timeout (it is still running then).
 */
const awaitExitOrStall = (child: Child, pack: readonly TaskStatus[], ctx: RunnerContext) =>
  Effect.gen(function* () {
    while (true) {
      const progress = Math.max(...pack.map((st) => Math.max(st.started!, lastProgress(st.task))));
      const idle = Date.now() - progress;
      const left = ctx.timeoutS * 1000 - idle;
      if (left < 0) return true;
      const exited = yield* Effect.promise(() => child.status).pipe(
        Effect.timeoutOption(Math.ceil(left) + 1),
      );
      if (Option.isSome(exited)) return false;
    }
  });

/** Copies a child's stdout and stderr into an open log file. */
const pumpInto = (child: Child, file: Deno.FsFile): Promise<void> => {
  const pump = async (s: ReadableStream<Uint8Array>) => {
    for await (const chunk of s) {
      let off = 0;
      while (off < chunk.byteLength) off += await file.write(chunk.subarray(off));
    }
  };
  return Promise.all([pump(child.process.stdout), pump(child.process.stderr)]).then(
    () => {},
    () => {},
  );
};

/** The stages whose tasks differ only in their `--range` and may share a process. */
const PACKABLE = new Set(["encode_context", "encode_question"]);

const RANGE_FLAG = "--range=";

/** The `[a, b)` of a command line's `--range=a:b`, or `undefined`. */
function rangeOf(argv: readonly string[]): [number, number] | undefined {
  const flag = argv.find((x) => x.startsWith(RANGE_FLAG));
  if (flag === undefined) return undefined;
  const m = /^(\d+):(\d+)$/.exec(flag.slice(RANGE_FLAG.length));
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

/**
 * Groups a stage group's tasks into packs, each run as one process: the
 * encode tasks of one model, dataset and half whose command lines are the
 * same but for consecutive `--range`s (what the planner writes for the
 * partitions of one half) are cut into packs of consecutive partitions,
 * each run with the union of its ranges: ⌈maxWorkers / halves⌉ packs a
 * half, where halves counts the (model, dataset, half) keys of the batch,
 * so the workers are shared evenly between them (with 2 workers and one
 * model: one process for the contexts beside one for the questions, as in
 * `full`). Every other task is a pack of its own. A pack's
 * process loads its encoder once instead of once per partition; each task
 * keeps its own outputs, completion check, status and retries. Packs keep
 * the order of their first task.
 *
 * @example
 * ```ts
 * import { packTasks } from "./local.ts";
 * import { newStatus } from "./status.ts";
 * const t = (id: string, stage: string, range: string) =>
 *   newStatus({ id, stage, argv: ["deno", "run", "embed_question.ts", "in", "out", range] } as never);
 * const packs = packTasks([
 *   t("q/0", "encode_question", "--range=0:32"), t("q/1", "encode_question", "--range=32:64"),
 *   t("q/2", "encode_question", "--range=64:96"), t("m", "merge", ""),
 * ], 2);
 * const ids = packs.map((p) => p.map((st) => st.task.id).join("+"));
 * if (ids.join(" ") !== "q/0+q/1 q/2 m") throw new Error(ids.join(" "));
 * // Two halves share the two workers: one process each.
 * const two = packTasks([
 *   t("q/0", "encode_question", "--range=0:32"), t("q/1", "encode_question", "--range=32:64"),
 *   t("c/0", "encode_context", "--range=0:32"), t("c/1", "encode_context", "--range=32:40"),
 * ], 2);
 * if (two.map((p) => p.length).join() !== "2,2") throw new Error();
 * ```
 */
export function packTasks(
  batch: readonly TaskStatus[],
  maxWorkers: number,
): TaskStatus[][] {
  const keyed = new Map<string, TaskStatus[]>();
  const order: (string | TaskStatus)[] = [];
  for (const st of batch) {
    const t = st.task;
    const range = rangeOf(t.argv);
    if (!PACKABLE.has(t.stage) || range === undefined) {
      order.push(st);
      continue;
    }
    const key = JSON.stringify([
      t.stage,
      ...t.argv.map((x) => x.startsWith(RANGE_FLAG) ? RANGE_FLAG : x),
    ]);
    const same = keyed.get(key);
    if (same) same.push(st);
    else keyed.set(key, [st]), order.push(key);
  }
  // The workers are shared evenly between the halves that have partitions.
  const perKey = Math.max(1, Math.ceil(Math.max(1, maxWorkers) / Math.max(1, keyed.size)));
  const out: TaskStatus[][] = [];
  for (const item of order) {
    if (typeof item !== "string") {
      out.push([item]);
      continue;
    }
    const tasks = keyed.get(item)!.sort((x, y) =>
      rangeOf(x.task.argv)![0] - rangeOf(y.task.argv)![0]
    );
    // Consecutive runs of ranges (b of one = a of the next); each cut into near-equal packs.
    const runs: TaskStatus[][] = [];
    for (const st of tasks) {
      const last = runs.at(-1)?.at(-1);
      if (last && rangeOf(last.task.argv)![1] === rangeOf(st.task.argv)![0]) runs.at(-1)!.push(st);
      else runs.push([st]);
    }
    for (const run of runs) {
      const packs = Math.min(run.length, perKey);
      for (let k = 0; k < packs; k++) {
        const a = Math.ceil((k * run.length) / packs);
        const b = Math.ceil(((k + 1) * run.length) / packs);
        out.push(run.slice(a, b));
      }
    }
  }
  return out;
}

/** The command line of a pack: its first task's, with the union of the pack's ranges. */
function packArgv(pack: readonly TaskStatus[]): readonly string[] {
  const first = pack[0].task.argv;
  if (pack.length === 1) return first;
  const a = rangeOf(first)![0];
  const b = rangeOf(pack[pack.length - 1].task.argv)![1];
  return first.map((x) => x.startsWith(RANGE_FLAG) ? `${RANGE_FLAG}${a}:${b}` : x);
}

/**
 * One attempt of a pack of tasks (one process; see {@linkcode packTasks}):
 * the tasks whose attempt should be followed by another. The process's
 * output goes to the first task's log; the others' logs say where it is.
 */
const attemptPack = (
  pack: readonly TaskStatus[],
  ctx: RunnerContext,
): Effect.Effect<TaskStatus[]> => {
  const lead = pack[0].task;
  const ended: { code: number | null } = { code: null };
  const secs = (st: TaskStatus) => ((Date.now() - st.started!) / 1000).toFixed(1);
  const verdicts = (reason: string | null, exitStatus: number | null = null) =>
    pack.filter((st) => endAttempt(st, ctx, reason, false, exitStatus) === "retry");
  const logAll = (line: (st: TaskStatus) => string) => {
    for (const st of pack) appendLog(st.task.log, line(st));
  };
  return Effect.scoped(Effect.gen(function* () {
    for (const st of pack) {
      st.attempts++;
      st.state = "running";
      st.started = Date.now();
      st.ended = null;
    }
    const spawned = yield* Effect.result(spawnScoped(packArgv(pack)));
    if (spawned._tag === "Failure") {
      const e = spawned.failure.cause;
      logAll((st) => `== ${st.task.id} attempt ${st.attempts} local: cannot start: ${e}`);
      return verdicts(`cannot start: ${e}`);
    }
    const child = spawned.success;
    const pid = child.process.pid;
    const others = pack.length > 1
      ? ` (one process for ${pack.map((st) => st.task.id).join(", ")}; output in ${lead.log})`
      : "";
    for (const st of pack) {
      st.where = `pid ${pid}`;
      appendLog(
        st.task.log,
        `== ${st.task.id} attempt ${st.attempts} local pid ${pid} ${new Date().toISOString()}${
          st === pack[0] ? "" : others
        }`,
      );
      ctx.notify(st, "start");
    }
    // The exact command line started (its permission flags included), for whoever checks
    // what a task was granted (`tests/runs/independence_test.ts`) or reruns it by hand.
    appendLog(lead.log, `== argv ${JSON.stringify(packArgv(pack))}`);
    // The log file closes after the child has stopped and its output is copied.
    const file = yield* Effect.acquireRelease(
      Effect.promise(() => Deno.open(lead.log, { append: true, create: true, write: true })),
      (f) => Effect.sync(() => f.close()),
    );
    const pumps = pumpInto(child, file);
    // Closing early (interrupted): stop the child first, then let its output drain.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function* () {
        const status = yield* stopChild(child);
        if (ended.code === null) ended.code = exitCode(status);
        yield* Effect.promise(() => pumps);
      })
    );
    const stalled = yield* awaitExitOrStall(child, pack, ctx);
    if (stalled) {
      for (const st of pack) ctx.notify(st, "stalled");
      signalChild(child, "SIGKILL");
    }
    const status = yield* Effect.promise(() => child.status);
    yield* Effect.promise(() => pumps);
    ended.code = exitCode(status);
    logAll((st) =>
      `== exit ${ended.code} after ${secs(st)} s${stalled ? " (no progress: killed)" : ""}`
    );
    return verdicts(
      stalled
        ? `no progress for ${ctx.timeoutS} s: killed`
        : status.success
        ? null
        : status.signal
        ? `killed by ${status.signal}`
        : `exit ${status.code}`,
      stalled || status.signal ? null : status.code,
    );
  })).pipe(
    Effect.onInterrupt(() =>
      Effect.sync(() => {
        for (const st of pack) {
          if (st.state !== "running") continue;
          if (ended.code !== null) {
            appendLog(st.task.log, `== exit ${ended.code} after ${secs(st)} s`);
          }
          endAttempt(st, ctx, "interrupted", true);
        }
      })
    ),
  );
};

/**
 * One attempt of a task: fails with {@linkcode RetryAttempt} when another
 * attempt should follow.
 */
const attempt = (st: TaskStatus, ctx: RunnerContext): Effect.Effect<void, RetryAttempt> =>
  attemptPack([st], ctx).pipe(
    Effect.flatMap((again) => again.length > 0 ? Effect.fail(new RetryAttempt()) : Effect.void),
  );

/** Runs tasks as local Deno subprocesses (see the module notes). */
export class LocalRunner implements Runner {
  /** Runner kind. */
  readonly kind = "local" as const;

  /**
   * Runs a batch to the end: every task done, failed or (interrupted)
   * cancelled. Partitions of one half share a process ({@linkcode packTasks});
   * a task of a pack that needs another attempt retries alone.
   */
  run(batch: readonly TaskStatus[], ctx: RunnerContext): Effect.Effect<void> {
    const retry = (st: TaskStatus) =>
      attempt(st, ctx).pipe(
        Effect.retry(Schedule.recurs(ctx.retries)),
        Effect.catchTag("RetryAttempt", () => Effect.void),
      );
    return Effect.forEach(
      packTasks(batch, ctx.maxWorkers),
      (pack) =>
        attemptPack(pack, ctx).pipe(
          Effect.flatMap((again) => Effect.forEach(again, retry, { discard: true })),
        ),
      { concurrency: Math.max(1, ctx.maxWorkers), discard: true },
    );
  }
}

/**
 * The {@linkcode RunnerService} of a local run: a new {@linkcode LocalRunner}
 * each time the Layer is built.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { LocalRunnerLive } from "./local.ts";
 * import { RunnerService } from "./status.ts";
 * const kind = Effect.gen(function* () {
 *   return (yield* RunnerService).kind;
 * });
 * if (await Effect.runPromise(Effect.provide(kind, LocalRunnerLive())) !== "local") throw new Error();
 * ```
 */
export const LocalRunnerLive = (): Layer.Layer<RunnerService> =>
  Layer.sync(RunnerService, () => new LocalRunner());
