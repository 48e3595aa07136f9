/**
 * The temporary folder of an index build (`<out>.<8 hex>.tmp`), in a module
 * of its own: the sandbox rules of a run's `index` task (`runs/sandbox/sandbox.ts`)
 * need its name, not the builder (`build.ts`, which uses it).
 *
 * @module
 */
import { createHash } from "node:crypto";

/**
 * `<out>.<first 8 hex digits of sha256(absolute out)>.tmp`: one name per
 * index folder, whoever builds it (the build's lock file and the folder it
 * writes before renaming it into place).
 *
 * @example
 * ```ts
 * import { tmpName } from "./temp.ts";
 * if (!/^\/r\/index\.[0-9a-f]{8}\.tmp$/.test(tmpName("/r/index"))) throw new Error();
 * ```
 */
export function tmpName(out: string): string {
  const abs = out.startsWith("/") ? out : `${Deno.cwd()}/${out}`;
  const hex = createHash("sha256").update(abs.replace(/\/+$/, "")).digest("hex").slice(0, 8);
  return `${out.replace(/\/+$/, "")}.${hex}.tmp`;
}

/**
 * The temporary folder of a build of the index folder `out`
 * (`<out>.<8 hex>.tmp`: the build's lock file, the folder it writes before
 * renaming it into place, and for a moment a replaced index; see
 * `build.ts`): what a sandboxed `index` task must be allowed to write
 * besides `out` (`runs/sandbox/sandbox.ts`).
 *
 * @example
 * ```ts
 * import { indexTempFolder } from "./temp.ts";
 * if (!/^\/r\/index\.[0-9a-f]{8}\.tmp$/.test(indexTempFolder("/r/index/"))) throw new Error();
 * ```
 */
export const indexTempFolder = (out: string): string => tmpName(out.replace(/\/+$/, "") || "/");
