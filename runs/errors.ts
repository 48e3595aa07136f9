/**
 * The error of a run that started and did not finish (tasks failed, or it
 * was interrupted): exit code 1, one line.
 *
 * @module
 */

/**
 * A run that did not finish.
 *
 * @example
 * ```ts
 * import { RunError } from "./errors.ts";
 * const e = new RunError("interrupted: tasks stopped");
 * if (e._tag !== "RunError" || e.message !== "interrupted: tasks stopped") throw new Error();
 * ```
 */
export class RunError extends Error {
  /** Tag for matching. */
  readonly _tag = "RunError";
}
