/**
 * The process's soft limit on open files (`ulimit -n`), read in one place
 * ({@linkcode openFilesLimit}) for the commands that refuse to start under a
 * limit too low (`pipeline/_args.ts`) and for the demo server's connection
 * cap (`serve/http.ts`). Deno has no `getrlimit`.
 *
 * @module
 */

/** Options of {@linkcode openFilesLimit}. */
export interface OpenFilesLimitOptions {
  /**
   * When `/proc/self/limits` cannot be read, ask `sh -c "ulimit -n"` (a
   * child inherits the limit), if the permission to run `sh` is granted.
   */
  readonly shell?: boolean;
}

/** `"unlimited"` → Infinity, a positive integer → itself, anything else → undefined. */
const parseLimit = (s: string | undefined): number | undefined => {
  if (s === undefined) return undefined;
  if (s === "unlimited") return Infinity;
  const n = Number(s);
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
};

/**
 * The soft limit on open files of this process (`Infinity` when
 * unlimited): from `/proc/self/limits` (Linux; granted only to a process
 * that may read it), else, with `shell`, from `sh -c "ulimit -n"`; else
 * `undefined`. Permissions are queried, never prompted for.
 *
 * @example
 * ```ts
 * import { openFilesLimit } from "./limits.ts";
 * const n = openFilesLimit();
 * if (n !== undefined && !(n > 0)) throw new Error(String(n));
 * ```
 */
export function openFilesLimit(opts: OpenFilesLimitOptions = {}): number | undefined {
  const proc = "/proc/self/limits";
  try {
    if (Deno.permissions.querySync({ name: "read", path: proc }).state === "granted") {
      const n = parseLimit(/^Max open files\s+(\S+)/m.exec(Deno.readTextFileSync(proc))?.[1]);
      if (n !== undefined) return n;
    }
  } catch { /* not Linux */ }
  if (!opts.shell) return undefined;
  try {
    if (Deno.permissions.querySync({ name: "run", command: "sh" }).state !== "granted") {
      return undefined;
    }
    const out = new Deno.Command("sh", {
      args: ["-c", "ulimit -n"],
      stdin: "null",
      stdout: "piped",
      stderr: "null",
    }).outputSync();
    return out.success ? parseLimit(new TextDecoder().decode(out.stdout).trim()) : undefined;
  } catch {
    return undefined;
  }
}
