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
 * Deno.removeSync(f);
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
 * or an attempt started after it). The log is read backwards from its end
 * a chunk at a time, to the last line that says either, and only the first
 * {@linkcode MARKER_LINE_BYTES} of a line are looked at: a log of any size
 * (a task's output of gigabytes) is answered, in bounded memory.
 *
 * @example
 * ```ts
 * import { lastExitStatus } from "./logs.ts";
 * const f = Deno.makeTempFileSync();
 * Deno.writeTextFileSync(f, "== t attempt 1 local\n== exit 3 after 1 s\n");
 * if (lastExitStatus(f) !== 3) throw new Error();
 * Deno.writeTextFileSync(f, "== t attempt 2 local\n", { append: true });
 * if (lastExitStatus(f) !== null) throw new Error();
 * Deno.removeSync(f);
 * ```
 */
export function lastExitStatus(path: string): number | null {
  let f: Deno.FsFile;
  try {
    f = Deno.openSync(path);
  } catch {
    return null;
  }
  try {
    const dec = new TextDecoder();
    const buf = new Uint8Array(LOG_CHUNK);
    // `line`: the first bytes (at most MARKER_LINE_BYTES) of the line that ends where the bytes
    // already looked at start; its own start is further back.
    let line = new Uint8Array(0);
    /** The status a line says: a number, `null` (an attempt's start), or `undefined` (neither). */
    const says = (bytes: Uint8Array): number | null | undefined => {
      const text = dec.decode(bytes);
      const m = /^== exit (\d+)/.exec(text);
      if (m) return Number(m[1]);
      return /^== .* attempt /.test(text) ? null : undefined;
    };
    let end = f.statSync().size;
    while (end > 0) {
      const start = Math.max(0, end - LOG_CHUNK);
      const chunk = buf.subarray(0, end - start);
      f.seekSync(start, Deno.SeekMode.Start);
      let off = 0;
      while (off < chunk.length) {
        const k = f.readSync(chunk.subarray(off));
        if (k === null) return null; // the log shrank meanwhile
        off += k;
      }
      end = start;
      // Lines end at \n and \r, as `^` in a multiline pattern starts one after either.
      let stop = chunk.length;
      for (let i = chunk.length - 1; i >= 0; i--) {
        if (chunk[i] !== 0x0a && chunk[i] !== 0x0d) continue;
        const said = says(joinCapped(chunk.subarray(i + 1, stop), line));
        if (said !== undefined) return said;
        line = new Uint8Array(0);
        stop = i;
      }
      line = joinCapped(chunk.subarray(0, stop), line).slice();
    }
    return says(line) ?? null;
  } catch {
    return null;
  } finally {
    f.close();
  }
}

/** Bytes of a log read at a time by {@linkcode lastExitStatus}, from its end (64 KiB). */
const LOG_CHUNK = 64 * 1024;

/** How much of a line {@linkcode lastExitStatus} looks at: the runner's own lines are shorter. */
const MARKER_LINE_BYTES = 4096;

/** The first {@linkcode MARKER_LINE_BYTES} of `a` then `b`. */
function joinCapped(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length >= MARKER_LINE_BYTES || b.length === 0) return a.subarray(0, MARKER_LINE_BYTES);
  const out = new Uint8Array(Math.min(MARKER_LINE_BYTES, a.length + b.length));
  out.set(a);
  out.set(b.subarray(0, out.length - a.length), a.length);
  return out;
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
