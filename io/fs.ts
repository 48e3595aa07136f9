/**
 * Files and paths, written once for every room: what a path is on disk
 * (`isFile`, `isDir`, `isFifo`, `exists`, `listNames`, `realOr`), paths as
 * strings (`normalize`, `absPath`, `dirOf`, `baseOf`, `trimSlash`,
 * `displayPath`), and atomic writes, all through a temporary file in the
 * same folder renamed onto the target and removed on any failure: whole
 * files as an Effect (`writeFileAtomic`, `writeTextFileAtomic`), text
 * streamed into an `AtomicWriter` (`openAtomicWriter`, `writeTextAtomically`),
 * a folder of files all or nothing (`writeFolderAtomic`), and `removeStaleTemps` for what a killed writer left. The merge workers load `_zip_internal.ts` without this
 * module (it needs Effect).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import { FileError } from "./errors.ts";
import { osMessage } from "./_zip_internal.ts";

// ---------------------------------------------------------------------------
// Paths as strings.

/**
 * `p` relative to the working folder when inside it, else as given: how a
 * path is shown in a message.
 *
 * @example
 * ```ts
 * import { displayPath } from "./fs.ts";
 * if (displayPath(`${Deno.cwd()}/a/b.json`) !== "a/b.json") throw new Error();
 * if (displayPath("/elsewhere/x") !== "/elsewhere/x") throw new Error();
 * ```
 */
export function displayPath(p: string): string {
  const cwd = Deno.cwd().replace(/\/$/, "");
  return p.startsWith(cwd + "/") ? p.slice(cwd.length + 1) : p;
}

/**
 * An absolute path without `.` and `..` segments or repeated `/` (symlinks
 * are not followed).
 *
 * @example
 * ```ts
 * import { normalize } from "./fs.ts";
 * if (normalize("/a/./b/../c//d/") !== "/a/c/d") throw new Error();
 * ```
 */
export function normalize(p: string): string {
  const out: string[] = [];
  for (const s of p.split("/")) {
    if (s === "" || s === ".") continue;
    if (s === "..") out.pop();
    else out.push(s);
  }
  return "/" + out.join("/");
}

/**
 * `p` as an absolute, normalized path (a relative one against `base`,
 * default the working folder): two spellings of one path compare equal.
 *
 * @example
 * ```ts
 * import { absPath } from "./fs.ts";
 * if (absPath("x/../y", "/base/") !== "/base/y") throw new Error();
 * if (absPath("/abs/./z") !== "/abs/z") throw new Error();
 * ```
 */
export const absPath = (p: string, base: string = Deno.cwd()): string =>
  normalize(p.startsWith("/") ? p : `${base.replace(/\/$/, "")}/${p}`);

/**
 * The folder of a path (trailing `/` ignored; `.` for a bare name, `/` for
 * a name at the root).
 *
 * @example
 * ```ts
 * import { dirOf } from "./fs.ts";
 * if (dirOf("/a/b/c.json") !== "/a/b" || dirOf("/a/b/") !== "/a") throw new Error();
 * if (dirOf("c.json") !== "." || dirOf("/c") !== "/") throw new Error();
 * ```
 */
export const dirOf = (p: string): string => {
  const i = p.replace(/\/+$/, "").lastIndexOf("/");
  return i < 0 ? "." : i === 0 ? "/" : p.slice(0, i);
};

/**
 * The last segment of a path (trailing `/` ignored).
 *
 * @example
 * ```ts
 * import { baseOf } from "./fs.ts";
 * if (baseOf("/a/b/c.json") !== "c.json" || baseOf("/a/b/") !== "b") throw new Error();
 * ```
 */
export const baseOf = (p: string): string => {
  const q = p.replace(/\/+$/, "");
  return q.slice(q.lastIndexOf("/") + 1);
};

/** `p` without a trailing `/` (but `/` stays `/`). */
export const trimSlash = (p: string): string => p.length > 1 ? p.replace(/\/+$/, "") || "/" : p;

// ---------------------------------------------------------------------------
// What a path is on disk.

const stat = (p: string): Deno.FileInfo | null => {
  try {
    return Deno.statSync(p);
  } catch {
    return null;
  }
};

/** Whether `p` is a regular file (symlinks followed). */
export const isFile = (p: string): boolean => stat(p)?.isFile === true;

/** Whether `p` is a folder (symlinks followed). */
export const isDir = (p: string): boolean => stat(p)?.isDirectory === true;

/** Whether `p` is a named pipe (symlinks followed). */
export const isFifo = (p: string): boolean => stat(p)?.isFifo === true;

/** Whether anything exists at `p` (a dangling symlink counts). */
export const exists = (p: string): boolean => {
  try {
    Deno.lstatSync(p);
    return true;
  } catch {
    return false;
  }
};

/** A folder's entry names, sorted (empty when it cannot be read). */
export function listNames(dir: string): string[] {
  try {
    return [...Deno.readDirSync(dir)].map((e) => e.name).sort();
  } catch {
    return [];
  }
}

/** The real path of `p`, or `p` itself when it cannot be resolved. */
export function realOr(p: string): string {
  try {
    return Deno.realPathSync(p);
  } catch {
    return p;
  }
}

// ---------------------------------------------------------------------------
// Atomic writes.

/** A backslash parts a path on Windows only: elsewhere it is a character of a name (`c\d.npz`). */
const BACKSLASH_SEPARATES = Deno.build.os === "windows";

function splitPath(path: string): { dir: string; base: string } {
  const i = Math.max(path.lastIndexOf("/"), BACKSLASH_SEPARATES ? path.lastIndexOf("\\") : -1);
  if (i < 0) return { dir: ".", base: path };
  return { dir: i === 0 ? path.slice(0, 1) : path.slice(0, i), base: path.slice(i + 1) };
}

/** The temporary file of a writer of `base` in `dir`: `.<base>.<8 hex digits>.tmp`. */
function tempPath(dir: string, base: string): string {
  return `${dir}/.${base}.${crypto.randomUUID().slice(0, 8)}.tmp`;
}

/**
 * Writes `bytes` to `path` atomically: into a temporary file in the same
 * folder (`.<name>.<random>.tmp`, mode 0666 less the umask, like any new
 * file, or `options.mode` less the umask), then renamed onto `path`. On any failure
 * (or interruption) the temporary file is removed, so `path` is either the
 * old file or the complete new one. `onError` turns the OS error into the
 * caller's typed error (it also gets the error itself, so that a write the
 * system refused can be told from bad input). A temporary file left by a
 * killed process (SIGKILL) is not looked for here, once per file: see
 * {@linkcode removeStaleTemps}.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { writeFileAtomic } from "./fs.ts";
 * const dir = await Deno.makeTempDir();
 * await Effect.runPromise(writeFileAtomic(`${dir}/a.bin`, new Uint8Array([1, 2]), (r) => r));
 * if ((await Deno.readFile(`${dir}/a.bin`)).join() !== "1,2") throw new Error();
 * // A folder that does not exist: the typed error, and nothing left behind.
 * const exit = await Effect.runPromiseExit(
 *   writeFileAtomic(`${dir}/no/a.bin`, new Uint8Array(1), (r) => `failed: ${r}`),
 * );
 * if (exit._tag !== "Failure") throw new Error();
 * if ([...Deno.readDirSync(dir)].length !== 1) throw new Error();
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export function writeFileAtomic<E>(
  path: string,
  bytes: Uint8Array,
  onError: (reason: string, cause: unknown) => E,
  options: { readonly sync?: boolean; readonly mode?: number } = {},
): Effect.Effect<void, E> {
  const { dir, base } = splitPath(path);
  let tmp: string | undefined;
  const cleanup = () =>
    Effect.promise(async () => {
      if (tmp !== undefined) await Deno.remove(tmp).catch(() => {});
    });
  return Effect.tryPromise({
    try: async () => {
      // Not Deno.makeTempFile: its 0600 mode would survive the rename.
      const name = tempPath(dir, base);
      const f = await Deno.open(name, {
        write: true,
        createNew: true,
        mode: options.mode ?? 0o666,
      });
      tmp = name;
      try {
        await writeAll(f, bytes);
        if (options.sync) await f.syncData();
      } finally {
        f.close();
      }
      await Deno.rename(tmp, path);
      tmp = undefined;
    },
    catch: (e) => onError(`cannot write file: ${osMessage(e)}`, e),
  }).pipe(
    Effect.onExit((exit) => Exit.isSuccess(exit) ? Effect.void : cleanup()),
    Effect.uninterruptible,
  );
}

/**
 * {@linkcode writeFileAtomic} of a string (UTF-8).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { writeTextFileAtomic } from "./fs.ts";
 * const dir = await Deno.makeTempDir();
 * await Effect.runPromise(writeTextFileAtomic(`${dir}/a.json`, "{}\n", (r) => r));
 * if (Deno.readTextFileSync(`${dir}/a.json`) !== "{}\n") throw new Error();
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export function writeTextFileAtomic<E>(
  path: string,
  text: string,
  onError: (reason: string, cause: unknown) => E,
  options: { readonly sync?: boolean; readonly mode?: number } = {},
): Effect.Effect<void, E> {
  return writeFileAtomic(path, new TextEncoder().encode(text), onError, options);
}

/**
 * A text sink that writes to `path` atomically: bytes go to a temporary file
 * in the same folder, which is renamed onto `path` by `commit` and removed by
 * `abort`. `-` writes to stdout directly (there is nothing to roll back).
 */
export interface AtomicWriter {
  /** Appends text (UTF-8). */
  write(text: string): Promise<void>;
  /** Flushes, closes and renames into place. */
  commit(): Promise<void>;
  /** Closes and deletes the temporary file. Safe to call twice. */
  abort(): Promise<void>;
}

/**
 * Opens an {@linkcode AtomicWriter} for `path` (`-` for stdout). Writes are
 * buffered into 1 MiB blocks. Temporary files of `path` left by a writer
 * that was killed outright (`.<name>.<8 hex digits>.tmp`, older than this
 * process) are removed first.
 *
 * @example
 * ```ts
 * import { openAtomicWriter } from "./fs.ts";
 * const dir = await Deno.makeTempDir();
 * const w = await openAtomicWriter(`${dir}/out.json`);
 * await w.write("{}");
 * // Nothing at the target until the commit.
 * if (await Deno.stat(`${dir}/out.json`).then(() => true, () => false)) throw new Error();
 * await w.commit();
 * if (await Deno.readTextFile(`${dir}/out.json`) !== "{}") throw new Error();
 * if ([...Deno.readDirSync(dir)].length !== 1) throw new Error("temporary file left");
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function openAtomicWriter(path: string): Promise<AtomicWriter> {
  const enc = new TextEncoder();
  const toStdout = path === "-";
  // A writer of this file killed outright (SIGKILL) left its temporary file: remove it.
  if (!toStdout) await removeStaleTemps(path);
  const { dir, base } = toStdout ? { dir: "", base: "" } : splitPath(path);
  const tmp = toStdout ? "" : tempPath(dir, base);
  // mode 0o666 is narrowed by the umask, like any file the user creates.
  let file: Deno.FsFile | undefined;
  try {
    file = toStdout
      ? undefined
      : await Deno.open(tmp, { write: true, createNew: true, mode: 0o666 });
  } catch (e) {
    // Name the folder the user gave, not our temporary file in it.
    if (e instanceof Deno.errors.NotFound) {
      throw new Deno.errors.NotFound(`${dir}: no such folder (for ${path})`);
    }
    throw e;
  }
  let pending: string[] = [];
  let pendingLen = 0;
  let closed = false;
  const flush = async () => {
    if (pendingLen === 0) return;
    const bytes = enc.encode(pending.join(""));
    pending = [];
    pendingLen = 0;
    if (file) await writeAll(file, bytes);
    else await writeAll(Deno.stdout, bytes);
  };
  return {
    async write(text: string) {
      pending.push(text);
      pendingLen += text.length;
      if (pendingLen >= 1 << 20) await flush();
    },
    async commit() {
      await flush();
      if (file && !closed) {
        closed = true;
        file.close();
        await Deno.rename(tmp, path);
      }
    },
    async abort() {
      pending = [];
      pendingLen = 0;
      if (file && !closed) {
        closed = true;
        file.close();
        await Deno.remove(tmp).catch(() => {});
      }
    },
  };
}

/**
 * Writes the whole of `text` to `path` through an {@linkcode openAtomicWriter}
 * (`-` for stdout): committed when every byte is written, aborted (its
 * temporary file removed) when a write fails, whose error is then thrown.
 *
 * @example
 * ```ts
 * import { writeTextAtomically } from "./fs.ts";
 * const dir = await Deno.makeTempDir();
 * await writeTextAtomically(`${dir}/a.json`, "{}\n");
 * if (Deno.readTextFileSync(`${dir}/a.json`) !== "{}\n") throw new Error();
 * const failed = await writeTextAtomically(`${dir}/no/a.json`, "{}").then(() => "", String);
 * if (!failed.includes("no such folder")) throw new Error(failed);
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function writeTextAtomically(path: string, text: string): Promise<void> {
  const w = await openAtomicWriter(path);
  try {
    await w.write(text);
    await w.commit();
  } catch (e) {
    await w.abort();
    throw e;
  }
}

/**
 * Writes `files` (name → text) into the folder `out` all or nothing: they
 * are written into a temporary folder beside it (named as a temporary file
 * of `out` is, `.<name>.<8 hex digits>.tmp`), which is renamed into place
 * when `out` does not exist yet; when it does, each file is renamed into it
 * (replacing an earlier one). On any failure, and when aborted before the
 * files are renamed into place, the temporary folder (and any parent folder
 * made for it) is removed, and nothing is left behind. Missing parent folders are created; those it created are
 * removed again on failure. Throws {@linkcode FileError}; `signal` aborted
 * before the renames into place begin makes it clean up and throw the
 * signal's reason (after that it completes).
 *
 * @example
 * ```ts
 * import { writeFolderAtomic } from "./fs.ts";
 * const dir = await Deno.makeTempDir();
 * await writeFolderAtomic(`${dir}/r`, { "a.txt": "A" });
 * if (Deno.readTextFileSync(`${dir}/r/a.txt`) !== "A") throw new Error();
 * if ([...Deno.readDirSync(dir)].length !== 1) throw new Error("temporary folder left");
 * const ac = new AbortController();
 * const stopped = writeFolderAtomic(`${dir}/s`, { "a.txt": "A" }, ac.signal);
 * ac.abort();
 * if (await stopped.then(() => true, () => false)) throw new Error("not stopped");
 * if ([...Deno.readDirSync(dir)].length !== 1) throw new Error("temporary folder left");
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function writeFolderAtomic(
  out: string,
  files: Readonly<Record<string, string>>,
  signal?: AbortSignal,
): Promise<void> {
  const parent = dirOf(out);
  const created: string[] = [];
  for (let p = parent; !exists(p) && p !== "/" && p !== "."; p = dirOf(p)) created.unshift(p);
  const tmp = tempPath(parent, baseOf(out));
  const fail = (file: string, e: unknown) =>
    new FileError({ file, message: e instanceof Error ? e.message : String(e) });
  try {
    if (exists(out) && !isDir(out)) {
      throw new FileError({ file: out, message: "exists and is not a folder" });
    }
    for (const d of created) {
      try {
        await Deno.mkdir(d);
      } catch (e) {
        throw fail(d, e);
      }
    }
    try {
      await Deno.mkdir(tmp);
    } catch (e) {
      throw fail(tmp, e);
    }
    for (const [name, text] of Object.entries(files)) {
      signal?.throwIfAborted();
      try {
        await Deno.writeTextFile(`${tmp}/${name}`, text);
      } catch (e) {
        throw fail(`${out}/${name}`, e);
      }
    }
    signal?.throwIfAborted();
    if (!exists(out)) {
      try {
        await Deno.rename(tmp, out);
      } catch (e) {
        throw fail(out, e);
      }
      return;
    }
    for (const name of Object.keys(files)) {
      try {
        await Deno.rename(`${tmp}/${name}`, `${out}/${name}`);
      } catch (e) {
        throw fail(`${out}/${name}`, e);
      }
    }
    await Deno.remove(tmp);
  } catch (e) {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
    for (const d of created.toReversed()) await Deno.remove(d).catch(() => {});
    throw e instanceof FileError || e === signal?.reason ? e : fail(out, e);
  }
}

/**
 * Fsyncs folder `path` (its entries), where the file system can: a no-op
 * where it cannot (some file systems cannot fsync a folder).
 *
 * @example
 * ```ts
 * import { fsyncDir } from "./fs.ts";
 * fsyncDir(Deno.cwd());
 * fsyncDir("/no/such/folder"); // nothing to do, no error
 * ```
 */
export function fsyncDir(path: string): void {
  try {
    const f = Deno.openSync(path, { read: true });
    try {
      f.syncSync();
    } finally {
      f.close();
    }
  } catch { /* some file systems cannot fsync a folder */ }
}

/**
 * `path` opened for reading; one that cannot be opened (missing, not
 * permitted, a folder) is a {@linkcode FileError} naming it, in
 * `osMessage`'s words.
 *
 * @example
 * ```ts
 * import { openReadSync } from "./fs.ts";
 * let why = "";
 * try {
 *   openReadSync("/no/such/file");
 * } catch (e) {
 *   why = String(e);
 * }
 * if (why !== "/no/such/file: no such file or folder") throw new Error(why);
 * ```
 */
export function openReadSync(path: string): Deno.FsFile {
  try {
    return Deno.openSync(path, { read: true });
  } catch (e) {
    throw new FileError({ file: path, message: osMessage(e) });
  }
}

/**
 * Renames the complete folder `built` into place at `out` in one rename,
 * fsynced before and after (its entries, then `out`'s parent). With `old`
 * (a free path on the same file system), the folder at `out` is replaced:
 * renamed to `old` for a moment, `built` renamed in, `old` removed. The
 * folder writers that hold their own temporary folder (an index build)
 * publish through it.
 *
 * @example
 * ```ts
 * import { publishFolder } from "./fs.ts";
 * const dir = await Deno.makeTempDir();
 * Deno.mkdirSync(`${dir}/b`);
 * Deno.writeTextFileSync(`${dir}/b/x`, "1");
 * publishFolder(`${dir}/b`, `${dir}/out`);
 * Deno.mkdirSync(`${dir}/c`);
 * Deno.writeTextFileSync(`${dir}/c/x`, "2");
 * publishFolder(`${dir}/c`, `${dir}/out`, `${dir}/old`);
 * if (Deno.readTextFileSync(`${dir}/out/x`) !== "2") throw new Error();
 * if ([...Deno.readDirSync(dir)].length !== 1) throw new Error("left behind");
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export function publishFolder(built: string, out: string, old?: string): void {
  fsyncDir(built);
  if (old !== undefined) {
    Deno.renameSync(out, old);
    Deno.renameSync(built, out);
    Deno.removeSync(old, { recursive: true });
  } else Deno.renameSync(built, out);
  fsyncDir(dirOf(out));
}

async function writeAll(
  w: { write(p: Uint8Array): Promise<number> },
  bytes: Uint8Array,
): Promise<void> {
  let off = 0;
  while (off < bytes.byteLength) off += await w.write(bytes.subarray(off));
}

/** Whether `name` is a temporary file of this module's writers, of target `base` when given. */
function isTempName(name: string, base?: string): boolean {
  const m = /^\.(.+)\.[0-9a-f]{8}\.tmp$/.exec(name);
  return m !== null && (base === undefined || m[1] === base);
}

/**
 * Removes the temporary files (`.<name>.<8 hex digits>.tmp`) that a writer
 * killed outright (SIGKILL, power loss) left beside `path`, or, when
 * `path` ends in `/`, every such file in that folder. Only files older
 * than `before` (default: when this process started) go: a writer still
 * running keeps writing to its own and that one is younger. A folder that
 * cannot be listed, or a file that cannot be removed (not granted to this
 * process), is left as it is. Interrupted or failing writers remove their
 * own temporary file; this is for the next run after a kill.
 *
 * @example
 * ```ts
 * import { removeStaleTemps } from "./fs.ts";
 * const dir = await Deno.makeTempDir();
 * for (const n of [".c.json.deadbeef.tmp", ".q.json.deadbeef.tmp", ".c.json.xyz.tmp"]) {
 *   await Deno.writeTextFile(`${dir}/${n}`, "partial");
 * }
 * await removeStaleTemps(`${dir}/c.json`, Date.now() + 1000);
 * const left = [...Deno.readDirSync(dir)].map((e) => e.name).sort().join();
 * if (left !== ".c.json.xyz.tmp,.q.json.deadbeef.tmp") throw new Error(left);
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function removeStaleTemps(
  path: string,
  before: number = performance.timeOrigin,
): Promise<void> {
  const all = path.endsWith("/");
  const { dir, base } = all ? { dir: path.slice(0, -1) || "/", base: "" } : splitPath(path);
  try {
    for await (const e of Deno.readDir(dir)) {
      if (!e.isFile || !isTempName(e.name, all ? undefined : base)) continue;
      const p = `${dir}/${e.name}`;
      try {
        const st = await Deno.lstat(p);
        if ((st.mtime?.getTime() ?? 0) < before) await Deno.remove(p);
      } catch { /* gone already, or not ours to remove */ }
    }
  } catch { /* a folder this process may not list */ }
}
