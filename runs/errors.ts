/**
 * The error of a run that started and did not finish (tasks failed, or it
 * was interrupted): exit code 1 (2 when a task reported bad input), one line.
 *
 * @module
 */
import * as Data from "effect/Data";
import type { ExitCode } from "../io/errors.ts";

/**
 * A run that did not finish. `exitCode` is 1 (the work failed) unless the
 * task that failed reported bad input (exit 2): then it is 2, and the
 * command line passes it through.
 *
 * @example
 * ```ts
 * import { RunError } from "./errors.ts";
 * const e = new RunError("interrupted: tasks stopped");
 * if (e._tag !== "RunError" || e.message !== "interrupted: tasks stopped") throw new Error();
 * if (e.exitCode !== 1 || new RunError("prepare failed (exit 2)", 2).exitCode !== 2) throw new Error();
 * ```
 */
export class RunError extends Data.TaggedError("RunError")<{
  /** What failed, on one line. */
  readonly message: string;
  /** The exit code it calls for (2: a task reported bad input). */
  readonly exitCode: ExitCode;
}> {
  /**
   * The error, with its message and exit code.
   *
   * @param message one line
   * @param exitCode the exit code it calls for (2: a task reported bad input)
   */
  constructor(message: string, exitCode: ExitCode = 1) {
    super({ message, exitCode });
  }
}
