/**
 * The process's soft limit on open files (`ulimit -n`), read in one place
 * ({@linkcode openFilesLimit}) for the commands that refuse to start under a
 * limit too low (`pipeline/_args.ts`) and for the demo server's connection
 * cap (`serve/http.ts`). Deno has no `getrlimit`.
 *
 * Every command's `--help` loads this module, so it imports nothing: it
 * starts no child itself. Its fallback, `sh -c "ulimit -n"`, runs through
 * the runner its caller passes (`runCommandSync` of `io/process.ts`, which
 * loads Effect).
 *
 * @module
 */

/**
 * Runs a command to its end and returns its exit code and output
 * (`runCommandSync` of `io/process.ts`): how {@linkcode openFilesLimit}
 * asks a shell.
 */
export type RunSync = (
  program: string,
  args: readonly string[],
) => { readonly code: number; readonly stdout: string };

/** Options of {@linkcode openFilesLimit}. */
export interface OpenFilesLimitOptions {
  /**
   * When `/proc/self/limits` cannot be read, ask `sh -c "ulimit -n"` (a
   * child inherits the limit) with this runner (`runCommandSync` of
   * `io/process.ts`), if the permission to run `sh` is granted.
   */
  readonly shell?: RunSync;
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
 * that may read it), else, with `shell`, from `sh -c "ulimit -n"` run by
 * it; else `undefined`. Permissions are queried, never prompted for.
 *
 * @example
 * ```ts
 * import { openFilesLimit } from "./limits.ts";
 * import { runCommandSync } from "./process.ts";
 * const n = openFilesLimit();
 * if (n !== undefined && !(n > 0)) throw new Error(String(n));
 * const m = openFilesLimit({ shell: runCommandSync });
 * if (m !== undefined && !(m > 0)) throw new Error(String(m));
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
    const out = opts.shell("sh", ["-c", "ulimit -n"]);
    return out.code === 0 ? parseLimit(out.stdout.trim()) : undefined;
  } catch {
    return undefined;
  }
}
