/**
 * The repository root: where the stage scripts, `deno.json` and the bundled
 * data live, whatever the working folder. The one place that turns this
 * module's own URL into a path; everything else builds on
 * {@linkcode REPO_ROOT}.
 *
 * @module
 */

/**
 * The repository root as an absolute path, without a trailing slash.
 *
 * @example
 * ```ts
 * import { REPO_ROOT } from "./repo.ts";
 * if (!REPO_ROOT.startsWith("/") || REPO_ROOT.endsWith("/")) throw new Error(REPO_ROOT);
 * if (!Deno.statSync(`${REPO_ROOT}/deno.json`).isFile) throw new Error("no deno.json");
 * ```
 */
export const REPO_ROOT: string = decodeURIComponent(new URL("..", import.meta.url).pathname)
  .replace(/\/$/, "");
