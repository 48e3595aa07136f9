/**
 * When a task is complete: its output files are all there (each written
 * atomically by the task), so a complete task is skipped, never rerun.
 *
 * @module
 */
import { dumpStem } from "../../io/dump/names.ts";
import { isFile } from "../../io/fs.ts";
import type { Task } from "./task.ts";

/**
 * The first missing output of `task`, or `undefined` when its outputs are
 * complete (then the task is skipped, not rerun).
 *
 * @example
 * ```ts
 * import { firstMissing } from "./complete.ts";
 * const m = firstMissing({ check: { kind: "files", files: ["/nonexistent"] } });
 * if (m !== "/nonexistent") throw new Error(m);
 * ```
 */
export function firstMissing(task: Pick<Task, "check">): string | undefined {
  const c = task.check;
  if (c.kind === "files") return c.files.find((f) => !isFile(f));
  for (const id of c.ids) {
    const stem = `${c.dir}/${dumpStem(id)}`;
    if (!isFile(`${stem}.npz`)) return `${stem}.npz`;
    if (c.kind === "context" && !isFile(`${stem}.json`)) return `${stem}.json`;
  }
  return undefined;
}

/**
 * Whether the outputs of `task` are complete.
 *
 * @example
 * ```ts
 * import { taskComplete } from "./complete.ts";
 * if (taskComplete({ check: { kind: "context", dir: "/nonexistent", ids: ["a_0"] } })) throw new Error();
 * ```
 */
export function taskComplete(task: Pick<Task, "check">): boolean {
  return firstMissing(task) === undefined;
}
