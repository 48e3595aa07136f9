/**
 * Run folders: the timestamped name of a new one, and which one `-r`
 * reuses.
 *
 * @module
 */
import { UsageError } from "../io/errors.ts";
import { displayPath, isDir } from "../io/fs.ts";

const RUN_DIR_RE = /^\d{8}_\d{6}(_\d+)?$/;

const abs = (p: string) => p.startsWith("/") ? p : `${Deno.cwd()}/${p}`;

/**
 * `YYYYMMDD_HHMMSS` in UTC: the name of a new run folder.
 *
 * @example
 * ```ts
 * import { timestamp } from "./run_dir.ts";
 * if (timestamp(new Date(Date.UTC(2025, 0, 2, 3, 4, 5))) !== "20250102_030405") throw new Error();
 * ```
 */
export function timestamp(d: Date = new Date()): string {
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}_${p(d.getUTCHours())}${
    p(d.getUTCMinutes())
  }${p(d.getUTCSeconds())}`;
}

/**
 * The run folder: reused (`"latest"`, or a folder name or path), or a new
 * timestamped one (not created). Throws {@linkcode UsageError} when there
 * is nothing to reuse.
 *
 * @example
 * ```ts
 * import { chooseRunDir } from "./run_dir.ts";
 * const dir = chooseRunDir("/nonexistent-work", undefined);
 * if (!/^\/nonexistent-work\/\d{8}_\d{6}$/.test(dir)) throw new Error(dir);
 * ```
 */
export function chooseRunDir(workDir: string, reuse: string | undefined): string {
  if (reuse === undefined) {
    const base = `${workDir}/${timestamp()}`;
    let dir = base;
    for (let i = 2; isDir(dir); i++) dir = `${base}_${i}`;
    return dir;
  }
  if (reuse === "latest") {
    let names: string[] = [];
    try {
      names = [...Deno.readDirSync(workDir)].filter((e) => e.isDirectory && RUN_DIR_RE.test(e.name))
        .map((e) => e.name);
    } catch { /* no work dir */ }
    if (names.length === 0) {
      throw new UsageError(`-r: no earlier run in ${displayPath(workDir)}`);
    }
    names.sort((a, b) =>
      a.slice(0, 15).localeCompare(b.slice(0, 15)) || a.length - b.length ||
      a.localeCompare(b)
    );
    return `${workDir}/${names[names.length - 1]}`;
  }
  const dir = reuse.includes("/") ? abs(reuse) : `${workDir}/${reuse}`;
  if (!isDir(dir)) throw new UsageError(`-r: no run folder ${displayPath(dir)}`);
  return dir;
}
