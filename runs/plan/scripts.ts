/**
 * The stage scripts a run starts as processes (`pipeline/<script>`), and
 * the server processes `serve` starts (`serve/stage.ts`), by name: the one
 * module below `pipeline/` that names its files. A path
 * string is a dependency no import check sees, so `tests/house_test.ts`
 * checks that each script exists and that no other module of a room below
 * `pipeline/` builds a path to one.
 *
 * @example
 * ```ts
 * import { STAGE_SCRIPTS, stageScriptPath } from "./scripts.ts";
 * if (!stageScriptPath("merge").endsWith("/pipeline/merge.ts")) throw new Error("path");
 * if (STAGE_SCRIPTS.task !== "_run_task.ts") throw new Error("task");
 * ```
 *
 * @module
 */
import { REPO_ROOT } from "../../io/repo.ts";

/** Each stage script a run (or `serve`) starts, by name: its file in `pipeline/`. */
export const STAGE_SCRIPTS = {
  /** The context encoder over a dataset's paragraphs (or a corpus's passages). */
  embedContext: "embed_context.ts",
  /** The question encoder. */
  embedQuestion: "embed_question.ts",
  /** PIQA's merge. */
  merge: "merge.ts",
  /** Building a phrase index. */
  index: "index.ts",
  /** Open search over an index. */
  search: "search.ts",
  /** The tasks that are no stage of their own (prepare, eval, a shard's search, their merge). */
  task: "_run_task.ts",
  /** `serve`'s server process (one index, or one shard of a folder of shards). */
  serveChild: "_serve_child.ts",
  /** `serve`'s front process over the shards' servers. */
  serveFront: "_serve_front.ts",
} as const;

/** The name of a stage script ({@linkcode STAGE_SCRIPTS}). */
export type StageScript = keyof typeof STAGE_SCRIPTS;

/** The absolute path of stage script `script`. */
export function stageScriptPath(script: StageScript): string {
  return `${REPO_ROOT}/pipeline/${STAGE_SCRIPTS[script]}`;
}
