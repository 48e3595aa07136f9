/**
 * What happens to a task in one invocation of a run: its state, attempts,
 * timing and where it runs, and the events a runner reports to the view;
 * what a runner is ({@linkcode Runner}) and the service a run takes its
 * runner from ({@linkcode RunnerService}, provided by `LocalRunnerLive` of
 * `local.ts` or `SlurmRunnerLive` of `slurm.ts`).
 *
 * @module
 */
import * as Context from "effect/Context";
import type * as Effect from "effect/Effect";
import type { Task } from "../plan/task.ts";

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
  /**
   * Its last attempt exited {@linkcode BAD_INPUT_EXIT} (bad input, which
   * another attempt would meet again): it failed without a retry, and the
   * run stops.
   */
  badInput: boolean;
}

/**
 * The exit status of a stage that refused its input (`pipeline/_cli.ts`:
 * 2, bad usage or bad input): deterministic, so a task that exits with it
 * is not retried.
 */
export const BAD_INPUT_EXIT = 2;

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

/**
 * A new status for `task`.
 *
 * @example
 * ```ts
 * import { newStatus } from "./status.ts";
 * const st = newStatus({ id: "prepare/d" } as Parameters<typeof newStatus>[0]);
 * if (st.state !== "pending" || st.attempts !== 0 || st.badInput) throw new Error();
 * ```
 */
export function newStatus(task: Task): TaskStatus {
  return {
    task,
    state: "pending",
    attempts: 0,
    started: null,
    ended: null,
    error: null,
    where: null,
    badInput: false,
  };
}

/** What a runner is given. */
export interface RunnerContext {
  /** Most tasks at once. */
  readonly maxWorkers: number;
  /** Seconds without progress after which a task is killed. */
  readonly timeoutS: number;
  /** Extra attempts of a failed task (none for one that exited {@linkcode BAD_INPUT_EXIT}). */
  readonly retries: number;
  /** Reports a state change. */
  notify(st: TaskStatus, event: TaskEvent): void;
}

/**
 * A way to run tasks (local processes, Slurm job arrays). Interrupting the
 * effect stops every task it started (and waits until they have stopped);
 * the interrupted tasks end `cancelled`.
 */
export interface Runner {
  /** `local` or `slurm`. */
  readonly kind: "local" | "slurm";
  /** Runs `batch` (tasks of one stage group) to the end: done, failed or cancelled. */
  run(batch: readonly TaskStatus[], ctx: RunnerContext): Effect.Effect<void>;
}

/**
 * The runner of a run, as a service: `run` and `full` take their runner
 * from it, and the command's flags choose the Layer that provides it
 * (`LocalRunnerLive` in `local.ts`, `SlurmRunnerLive` in `slurm.ts`).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Layer from "effect/Layer";
 * import { RunnerService } from "./status.ts";
 * const kind = Effect.gen(function* () {
 *   return (yield* RunnerService).kind;
 * });
 * const fake = { kind: "local" as const, run: () => Effect.void };
 * if (await Effect.runPromise(Effect.provide(kind, Layer.succeed(RunnerService, fake))) !== "local") {
 *   throw new Error("not provided");
 * }
 * ```
 */
export class RunnerService extends Context.Service<RunnerService, Runner>()(
  "phraseval/runs/Runner",
) {}
