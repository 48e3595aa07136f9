/**
 * Executing a plan: the stage-group loop with dependencies and what an
 * ended attempt means (done, another attempt, failed). The runners
 * (`local.ts`, `slurm.ts`) run the tasks of one group; everything is an
 * Effect, so interrupting {@linkcode executePlan} stops the running tasks
 * (their child processes or Slurm jobs are stopped and awaited) and marks
 * what did not finish `cancelled`.
 *
 * @module
 */
import * as Deferred from "effect/Deferred";
import * as Effect from "effect/Effect";
import type * as Exit from "effect/Exit";
import * as Fiber from "effect/Fiber";
import { firstMissing } from "../plan/complete.ts";
import {
  BAD_INPUT_EXIT,
  type Runner,
  type RunnerContext,
  RunnerService,
  type TaskStatus,
} from "./status.ts";
import { STAGE_GROUPS, type Task } from "../plan/task.ts";

/**
 * Decides what an ended attempt means: done when its outputs are complete,
 * cancelled when the run was interrupted, failed without a retry when its
 * process exited {@linkcode BAD_INPUT_EXIT} (bad input: another attempt
 * would meet it again; `st.badInput` is set), else another attempt while
 * retries are left, else failed. Updates `st` and notifies.
 *
 * @example
 * ```ts
 * import { endAttempt } from "./execute.ts";
 * import { newStatus } from "./status.ts";
 * const st = newStatus({ id: "t", check: { kind: "files", files: ["/nonexistent"] } } as never);
 * st.attempts = 1;
 * const ctx = { maxWorkers: 1, timeoutS: 1, retries: 1, notify: () => {} };
 * if (endAttempt(st, ctx, "exit 1", false, 1) !== "retry" || st.error !== "exit 1") throw new Error();
 * st.attempts = 2;
 * if (endAttempt(st, ctx, "exit 1") !== "failed") throw new Error();
 * if ((st.state as string) !== "failed") throw new Error(st.state);
 * // Bad input is not retried, retries left or not.
 * const bad = newStatus({ id: "b", check: { kind: "files", files: ["/nonexistent"] } } as never);
 * bad.attempts = 1;
 * if (endAttempt(bad, ctx, "exit 2", false, 2) !== "failed" || !bad.badInput) throw new Error();
 * ```
 *
 * @param st the task's status
 * @param ctx the runner's context (retries, notify)
 * @param reason why the attempt failed (`exit 1`, `no progress ...`), or `null` when it exited 0
 * @param interrupted the run was interrupted: the task ends cancelled
 * @param exitStatus the exit status of its process, when it exited by itself (`null`: none,
 *   or it was stopped)
 */
export function endAttempt(
  st: TaskStatus,
  ctx: RunnerContext,
  reason: string | null,
  interrupted = false,
  exitStatus: number | null = null,
): "done" | "retry" | "failed" {
  st.ended = Date.now();
  const missing = firstMissing(st.task);
  if (reason === null && missing === undefined) {
    st.state = "done";
    st.error = null;
    st.badInput = false;
    ctx.notify(st, "done");
    return "done";
  }
  st.error = reason ?? `exit 0 but output incomplete (${missing})`;
  if (interrupted) {
    st.state = "cancelled";
    ctx.notify(st, "cancelled");
    return "failed";
  }
  st.badInput = reason !== null && exitStatus === BAD_INPUT_EXIT;
  if (!st.badInput && st.attempts <= ctx.retries) {
    st.state = "pending";
    ctx.notify(st, "retry");
    return "retry";
  }
  st.state = "failed";
  ctx.notify(st, "failed");
  return "failed";
}

/** What {@linkcode executePlan} did. */
export interface ExecuteResult {
  /** Every selected task's final status. */
  readonly statuses: readonly TaskStatus[];
}

const cancelUnfinished = (statuses: Iterable<TaskStatus>, ctx: RunnerContext) =>
  Effect.sync(() => {
    for (const st of statuses) {
      if (st.state === "pending" || st.state === "running") {
        st.state = "cancelled";
        ctx.notify(st, "cancelled");
      }
    }
  });

/**
 * Runs the selected tasks (one status each, see `newStatus`) group by group
 * (prepare → encode → merge → eval). A task whose outputs are complete is
 * skipped (unless `opts.skipComplete` is `false`); a task whose dependency
 * failed (or is incomplete and not selected) is blocked. When interrupted,
 * the tasks that did not finish end `cancelled`.
 */
export const executePlan = (
  tasks: readonly Task[],
  selected: readonly TaskStatus[],
  runner: Runner,
  ctx: RunnerContext,
  opts: { readonly skipComplete?: boolean } = {},
): Effect.Effect<ExecuteResult> => {
  const statuses = new Map<string, TaskStatus>(selected.map((st) => [st.task.id, st]));
  return Effect.gen(function* () {
    const byId = new Map(tasks.map((t) => [t.id, t]));
    const satisfied = (id: string): boolean => {
      const st = statuses.get(id);
      if (st) return st.state === "done" || st.state === "skipped";
      const t = byId.get(id);
      return t !== undefined && firstMissing(t) === undefined;
    };
    for (const st of statuses.values()) {
      if (opts.skipComplete !== false && firstMissing(st.task) === undefined) {
        st.state = "skipped";
        ctx.notify(st, "skipped");
      }
    }
    for (const group of STAGE_GROUPS) {
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
      if (batch.length > 0) yield* runner.run(batch, ctx);
    }
    yield* cancelUnfinished(statuses.values(), ctx);
    return { statuses: [...statuses.values()] };
  }).pipe(Effect.onInterrupt(() => cancelUnfinished(statuses.values(), ctx)));
};

/**
 * The one way a plan's stages are executed: {@linkcode executePlan} with
 * the runner of the {@linkcode RunnerService}, in a fiber of its own, until
 * its tasks end, a task fails on bad input (it exited
 * {@linkcode BAD_INPUT_EXIT}: not retried, and nothing else is worth
 * running until the input is fixed), or `stop` succeeds first (a task
 * failed, the user's signal came): then the fiber is interrupted, which
 * stops and awaits every running task (they end `cancelled`). Returns how
 * the execution ended (interrupted, or with a defect, is a failure; a
 * task's failure is in its status, `badInput` set for bad input).
 */
export const executeUntil = (
  tasks: readonly Task[],
  selected: readonly TaskStatus[],
  ctx: RunnerContext,
  stop: Effect.Effect<void>,
  opts: { readonly skipComplete?: boolean } = {},
): Effect.Effect<Exit.Exit<ExecuteResult>, never, RunnerService> =>
  Effect.gen(function* () {
    const runner = yield* RunnerService;
    const badInput = Deferred.makeUnsafe<void>();
    const watched: RunnerContext = {
      ...ctx,
      notify: (st, ev) => {
        ctx.notify(st, ev);
        if (ev === "failed" && st.badInput) Deferred.doneUnsafe(badInput, Effect.void);
      },
    };
    const fiber = yield* Effect.forkChild(executePlan(tasks, selected, runner, watched, opts));
    yield* Effect.raceFirst(
      Effect.asVoid(Fiber.await(fiber)),
      Effect.raceFirst(stop, Deferred.await(badInput)),
    );
    yield* Fiber.interrupt(fiber);
    return yield* Fiber.await(fiber);
  });
