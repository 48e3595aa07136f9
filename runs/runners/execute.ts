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
import * as Effect from "effect/Effect";
import type * as Exit from "effect/Exit";
import * as Fiber from "effect/Fiber";
import { firstMissing } from "../plan/complete.ts";
import { type Runner, type RunnerContext, RunnerService, type TaskStatus } from "./status.ts";
import { STAGE_GROUPS, type Task } from "../plan/task.ts";

/**
 * Decides what an ended attempt means: done when its outputs are complete,
 * cancelled when the run was interrupted, else another attempt while
 * retries are left, else failed. Updates `st` and notifies.
 *
 * @example
 * ```ts
 * import { endAttempt } from "./execute.ts";
 * import { newStatus } from "./status.ts";
 * const st = newStatus({ id: "t", check: { kind: "files", files: ["/nonexistent"] } } as never);
 * st.attempts = 1;
 * const ctx = { maxWorkers: 1, timeoutS: 1, retries: 1, notify: () => {} };
 * if (endAttempt(st, ctx, "exit 1") !== "retry" || st.error !== "exit 1") throw new Error();
 * st.attempts = 2;
 * if (endAttempt(st, ctx, "exit 1") !== "failed") throw new Error();
 * if ((st.state as string) !== "failed") throw new Error(st.state);
 * ```
 */
export function endAttempt(
  st: TaskStatus,
  ctx: RunnerContext,
  reason: string | null,
  interrupted = false,
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
  if (interrupted) {
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
 * its tasks end or `stop` succeeds first (a task failed, the user's signal
 * came): then the fiber is interrupted, which stops and awaits every
 * running task. Returns how the execution ended (interrupted, or with a
 * defect, is a failure; a task's failure is in its status).
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
    const fiber = yield* Effect.forkChild(executePlan(tasks, selected, runner, ctx, opts));
    yield* Effect.raceFirst(Effect.asVoid(Fiber.await(fiber)), stop);
    yield* Fiber.interrupt(fiber);
    return yield* Fiber.await(fiber);
  });
