/**
 * The local runner: each task a Deno subprocess (its command line from the
 * plan, permissions narrowed by `sandbox.ts`), at most `--max-workers` at
 * once. A task's stdout and stderr go to its log; a task whose log and
 * outputs do not change for the task timeout is killed (SIGKILL) and counts
 * as a failed attempt; a failed attempt is retried up to `--retries` times.
 * Each child is a scoped resource: interrupting the runner stops (SIGTERM,
 * SIGKILL 3 s later) and awaits every child it started.
 *
 * @module
 */
import { Effect, Option, Schedule } from "effect";
import { endAttempt } from "./execute.ts";
import { appendLog, lastProgress } from "./logs.ts";
import { type Child, exitCode, signalChild, spawnScoped, stopChild } from "./process.ts";
import type { Runner, RunnerContext, TaskStatus } from "./status.ts";

/** A failed attempt that will be retried. */
class RetryAttempt {
  readonly _tag = "RetryAttempt";
}

/**
 * Waits for the child to exit while the task makes progress: `true` when it
 * made none for the task timeout (it is still running then).
 */
const awaitExitOrStall = (child: Child, st: TaskStatus, ctx: RunnerContext) =>
  Effect.gen(function* () {
    while (true) {
      const idle = Date.now() - Math.max(st.started!, lastProgress(st.task));
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

/**
 * One attempt of a task: fails with {@linkcode RetryAttempt} when another
 * attempt should follow.
 */
const attempt = (st: TaskStatus, ctx: RunnerContext): Effect.Effect<void, RetryAttempt> => {
  const t = st.task;
  const ended: { code: number | null } = { code: null };
  const secs = () => ((Date.now() - st.started!) / 1000).toFixed(1);
  const verdict = (reason: string | null) =>
    endAttempt(st, ctx, reason) === "retry" ? Effect.fail(new RetryAttempt()) : Effect.void;
  return Effect.scoped(Effect.gen(function* () {
    st.attempts++;
    st.state = "running";
    st.started = Date.now();
    st.ended = null;
    const spawned = yield* Effect.result(spawnScoped(t.argv));
    if (spawned._tag === "Failure") {
      const e = spawned.failure.cause;
      appendLog(t.log, `== ${t.id} attempt ${st.attempts} local: cannot start: ${e}`);
      return yield* verdict(`cannot start: ${e}`);
    }
    const child = spawned.success;
    st.where = `pid ${child.process.pid}`;
    appendLog(
      t.log,
      `== ${t.id} attempt ${st.attempts} local pid ${child.process.pid} ${
        new Date().toISOString()
      }`,
    );
    ctx.notify(st, "start");
    // The log file closes after the child has stopped and its output is copied.
    const file = yield* Effect.acquireRelease(
      Effect.promise(() => Deno.open(t.log, { append: true, create: true, write: true })),
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
    const stalled = yield* awaitExitOrStall(child, st, ctx);
    if (stalled) {
      ctx.notify(st, "stalled");
      signalChild(child, "SIGKILL");
    }
    const status = yield* Effect.promise(() => child.status);
    yield* Effect.promise(() => pumps);
    ended.code = exitCode(status);
    appendLog(
      t.log,
      `== exit ${ended.code} after ${secs()} s${stalled ? " (no progress: killed)" : ""}`,
    );
    return yield* verdict(
      stalled
        ? `no progress for ${ctx.timeoutS} s: killed`
        : status.success
        ? null
        : status.signal
        ? `killed by ${status.signal}`
        : `exit ${status.code}`,
    );
  })).pipe(
    Effect.onInterrupt(() =>
      Effect.sync(() => {
        if (st.state !== "running") return;
        if (ended.code !== null) appendLog(t.log, `== exit ${ended.code} after ${secs()} s`);
        endAttempt(st, ctx, "interrupted", true);
      })
    ),
  );
};

/** Runs tasks as local Deno subprocesses (see the module notes). */
export class LocalRunner implements Runner {
  /** Runner kind. */
  readonly kind = "local" as const;

  /** Runs a batch to the end: every task done, failed or (interrupted) cancelled. */
  run(batch: readonly TaskStatus[], ctx: RunnerContext): Effect.Effect<void> {
    return Effect.forEach(
      batch,
      (st) =>
        attempt(st, ctx).pipe(
          Effect.retry(Schedule.recurs(ctx.retries)),
          Effect.catchTag("RetryAttempt", () => Effect.void),
        ),
      { concurrency: Math.max(1, ctx.maxWorkers), discard: true },
    );
  }
}
