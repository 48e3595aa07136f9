/**
 * A task's log file: the runner's own `== ...` lines around the task's
 * output, what it says (last lines, last exit status), and the progress
 * clock (a task makes progress when its log or outputs change).
 *
 * @module
 */
import type { Task } from "../plan/task.ts";

/** Entries of a watched folder looked at for progress, at most (a bound on one look). */
const WATCH_ENTRIES = 4096;

/**
 * The newest modification time (ms) of a task's log and watched outputs:
 * a task makes progress when its log grows, files appear in its folder,
 * or a file in a watched folder is written (a stage writing its output
 * through a temporary file beside it changes that file, not the folder:
 * a long search writing `pred.json` is progress).
 *
 * @example
 * ```ts
 * import { lastProgress } from "./logs.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.writeTextFileSync(`${dir}/task.log`, "");
 * Deno.mkdirSync(`${dir}/out`);
 * Deno.writeTextFileSync(`${dir}/out/.pred.json.0123abcd.tmp`, "{");
 * const [old, later] = [new Date(1_000_000), new Date(2_000_000)];
 * for (const p of ["task.log", "out"]) Deno.utimeSync(`${dir}/${p}`, old, old);
 * Deno.utimeSync(`${dir}/out/.pred.json.0123abcd.tmp`, later, later);
 * const task = { log: `${dir}/task.log`, watch: [`${dir}/out`] };
 * if (lastProgress(task) !== 2_000_000) throw new Error(String(lastProgress(task)));
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export function lastProgress(task: Pick<Task, "log" | "watch">): number {
  let t = 0;
  const mtime = (p: string): Deno.FileInfo | undefined => {
    try {
      const st = Deno.statSync(p);
      t = Math.max(t, st.mtime?.getTime() ?? 0);
      return st;
    } catch { /* not there yet, or gone meanwhile */ }
  };
  mtime(task.log);
  for (const p of task.watch) {
    if (mtime(p)?.isDirectory !== true) continue;
    let seen = 0;
    try {
      for (const e of Deno.readDirSync(p)) {
        if (++seen > WATCH_ENTRIES) break;
        if (e.isFile) mtime(`${p}/${e.name}`);
      }
    } catch { /* cannot be listed */ }
  }
  return t;
}

/** Terminal escape sequences (colours) in a log line. */
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*[A-Za-z]`, "g");

/**
 * The last `n` lines of a log that are not the runner's own `==` lines.
 *
 * @example
 * ```ts
 * import { logTail } from "./logs.ts";
 * const f = Deno.makeTempFileSync();
 * Deno.writeTextFileSync(f, "== t attempt 1\none\n\x1b[1mtwo\x1b[0m\n== exit 0\n");
 * if (logTail(f).join("|") !== "one|two") throw new Error(logTail(f).join("|"));
 * if (logTail("/nonexistent.log").length !== 0) throw new Error();
 * ```
 */
export function logTail(path: string, n = 5): string[] {
  try {
    const f = Deno.openSync(path);
    try {
      const size = f.statSync().size;
      const len = Math.min(size, 16384);
      f.seekSync(size - len, Deno.SeekMode.Start);
      const buf = new Uint8Array(len);
      let off = 0;
      while (off < len) {
        const k = f.readSync(buf.subarray(off));
        if (k === null) break;
        off += k;
      }
      const lines = new TextDecoder().decode(buf.subarray(0, off)).split("\n")
        .map((l) => l.replace(ANSI, "").replace(/\r/g, "").trimEnd())
        .filter((l) => l !== "" && !l.startsWith("== "));
      return lines.slice(-n);
    } finally {
      f.close();
    }
  } catch {
    return [];
  }
}

/**
 * The exit status in the last `== exit N` line of a log, or `null` (none,
 * or an attempt started after it).
 *
 * @example
 * ```ts
 * import { lastExitStatus } from "./logs.ts";
 * const f = Deno.makeTempFileSync();
 * Deno.writeTextFileSync(f, "== t attempt 1 local\n== exit 3 after 1 s\n");
 * if (lastExitStatus(f) !== 3) throw new Error();
 * Deno.writeTextFileSync(f, "== t attempt 2 local\n", { append: true });
 * if (lastExitStatus(f) !== null) throw new Error();
 * ```
 */
export function lastExitStatus(path: string): number | null {
  try {
    const text = Deno.readTextFileSync(path);
    const m = [...text.matchAll(/^== exit (\d+)/gm)].pop();
    const h = [...text.matchAll(/^== .* attempt /gm)].pop();
    if (!m || (h && (h.index ?? 0) > (m.index ?? 0))) return null;
    return Number(m[1]);
  } catch {
    return null;
  }
}

const enc = new TextEncoder();

/** Appends a line to a log file. */
export function appendLog(path: string, line: string): void {
  try {
    Deno.writeFileSync(path, enc.encode(line.endsWith("\n") ? line : line + "\n"), {
      append: true,
      create: true,
    });
  } catch { /* the folder is gone: nothing to record into */ }
}
