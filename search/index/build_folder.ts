/**
 * A build's output folder: where an index build (`build.ts`) and a
 * quantizer's training (`train_quantizer.ts`) write, and the data files
 * they write there ({@linkcode OutFile}).
 *
 * **Atomic, one at a time, and repeatable.** A build of `INDEX_DIR` works in
 * `INDEX_DIR.<8 hex>.tmp` (`temp.ts`; the hex a hash of the target's absolute
 * path): it first holds an exclusive `flock` on its `lock` file, so that a
 * second build of the same folder started meanwhile stops at once with one
 * line (an {@linkcode InputError}, exit 2) and touches nothing; then, under
 * the lock, it checks the target (so a build that just finished is an index
 * that `--overwrite` must be given to replace), writes the index into
 * `build/` there, every file fsynced, and renames it into place (a replaced
 * index goes to `old/` there for a moment), then removes the lock file and
 * the folder. A build that was killed leaves that folder, and the kernel
 * drops its lock; the next build of the same target takes the lock, removes
 * what the killed one left and starts again.
 *
 * (The rename into place is `io/fs.ts`'s {@linkcode publishFolder}, as every
 * atomic write goes through `io/fs.ts`; the lock and the temporary folder's
 * name are the build's own: `writeFolderAtomic` writes text files into a
 * `.<name>.<hex>.tmp` beside the target, without a lock, and replaces an
 * existing folder file by file.)
 *
 * @module
 */
import { createHash, type Hash } from "node:crypto";
import * as Effect from "effect/Effect";
import { FileError, InputError } from "../../io/errors.ts";
import { dirOf, publishFolder } from "../../io/fs.ts";
import { INDEX_HEADER, type IndexFile } from "./format.ts";

/** The message of a thrown value. */
export const osMessage = (e: unknown) => e instanceof Error ? e.message : String(e);

/** A data file written through a buffer, hashed as it goes. */
export class OutFile {
  readonly #f: Deno.FsFile;
  readonly #hash: Hash = createHash("sha256");
  readonly #buf = new Uint8Array(1 << 20);
  #fill = 0;
  /** The bytes written so far. */
  bytes = 0;

  /** Creates `path` (which must not exist) for writing. */
  constructor(readonly path: string) {
    this.#f = Deno.openSync(path, { write: true, createNew: true, mode: 0o666 });
  }

  /** Appends `b` (hashed, buffered). */
  write(b: Uint8Array): void {
    this.#hash.update(b);
    this.bytes += b.byteLength;
    if (this.#fill + b.byteLength > this.#buf.length) this.#flush();
    if (b.byteLength >= this.#buf.length) this.#writeAll(b);
    else {
      this.#buf.set(b, this.#fill);
      this.#fill += b.byteLength;
    }
  }

  #writeAll(b: Uint8Array): void {
    let o = 0;
    while (o < b.byteLength) o += this.#f.writeSync(b.subarray(o));
  }

  #flush(): void {
    this.#writeAll(this.#buf.subarray(0, this.#fill));
    this.#fill = 0;
  }

  /**
   * Flushes, fsyncs and closes; the file's entry for the header. With
   * `syncs`, the file is closed and its fsync left to run meanwhile
   * ({@linkcode Syncs}).
   */
  finish(syncs?: Syncs): IndexFile {
    this.#flush();
    if (syncs === undefined) this.#f.syncSync();
    this.#f.close();
    syncs?.start(this.path);
    return { bytes: this.bytes, sha256: this.#hash.digest("hex") };
  }

  /** Closes the file if {@linkcode OutFile.finish} did not (after a failure). */
  close(): void {
    try {
      this.#f.close();
    } catch { /* closed */ }
  }
}

/**
 * fsyncs that run while a build goes on (its training, say), each on
 * Deno's blocking threads: {@linkcode Syncs.start} opens a written file
 * again and fsyncs it (an fsync of any descriptor of a file writes all of
 * its data), and {@linkcode Syncs.done}, awaited before the folder is
 * renamed into place, waits for them all and fails with the first that
 * failed.
 */
export class Syncs {
  readonly #pending: { path: string; done: Promise<void> }[] = [];

  /** Starts the fsync of `path` (closed, its writes done). */
  start(path: string): void {
    const done = (async () => {
      const f = await Deno.open(path, { read: true });
      try {
        await f.sync();
      } finally {
        f.close();
      }
    })();
    // Observed by done(); a build that fails first does not wait for it.
    done.catch(() => {});
    this.#pending.push({ path, done });
  }

  /** Once every fsync started has ended; a {@linkcode FileError} naming the first that failed. */
  async done(): Promise<void> {
    for (const { path, done } of this.#pending) {
      try {
        await done;
      } catch (e) {
        throw new FileError({ file: path, message: osMessage(e) });
      }
    }
  }
}

/** The bytes of a typed array (a view on its buffer, no copy). */
export const bytesOf = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/** Runs `f`, a failure an {@linkcode InputError} or {@linkcode FileError} (naming `file`). */
export const lift = <A>(f: () => A, file: string) =>
  Effect.try({
    try: f,
    catch: (e) =>
      e instanceof InputError || e instanceof FileError
        ? e
        : new FileError({ file, message: osMessage(e) }),
  });

function statOrUndefined(path: string): Deno.FileInfo | undefined {
  try {
    return Deno.lstatSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw new FileError({ file: path, message: osMessage(e) });
  }
}

/**
 * `dir` when it does not exist (a build that makes it to hold its target
 * removes it again if it does not finish), else `undefined` (also when it
 * may not be looked at: a sandboxed shard build may not read INDEX_DIR).
 */
function absentFolder(dir: string): string | undefined {
  try {
    Deno.lstatSync(dir);
    return undefined;
  } catch (e) {
    return e instanceof Deno.errors.NotFound ? dir : undefined;
  }
}

/** The lock file in a build's temporary folder (held with `flock`, released by the kernel). */
const LOCK_FILE = "lock";
/** The folder a build writes in its temporary folder, renamed into place when complete. */
const BUILD_FOLDER = "build";
/** Where a replaced index lies for a moment, in the temporary folder. */
const OLD_FOLDER = "old";

/**
 * Takes the build lock of `out`: creates the temporary folder `tmp` if need
 * be and holds an exclusive `flock` on `tmp/lock`. Another build holding it
 * is an {@linkcode InputError} (one line; nothing touched). The kernel
 * releases the lock of a killed build, so its folder is taken over.
 */
function lockBuild(tmp: string, out: string): Deno.FsFile {
  for (let attempt = 0;; attempt++) {
    Deno.mkdirSync(tmp, { recursive: true });
    let f: Deno.FsFile;
    try {
      f = Deno.openSync(`${tmp}/${LOCK_FILE}`, {
        read: true,
        write: true,
        create: true,
        mode: 0o666,
      });
    } catch (e) {
      // The holder before us removed the folder as we came: start again.
      if (e instanceof Deno.errors.NotFound && attempt < 100) continue;
      throw e;
    }
    if (!f.tryLockSync(true)) {
      f.close();
      throw new InputError({
        file: out,
        where: "",
        message: `another index build into this folder is running (it holds ${tmp}/${LOCK_FILE})` +
          "; wait for it to end",
      });
    }
    // Still the file at that name? (The holder before us may have removed it as it ended.)
    const held = f.statSync();
    let now: Deno.FileInfo | undefined;
    try {
      now = Deno.lstatSync(`${tmp}/${LOCK_FILE}`);
    } catch { /* removed */ }
    if (now !== undefined && now.ino === held.ino && now.dev === held.dev) return f;
    f.close();
    if (attempt >= 100) {
      throw new FileError({ file: `${tmp}/${LOCK_FILE}`, message: "cannot take the build lock" });
    }
  }
}

/**
 * Ends a build: removes the lock file and the temporary folder (when
 * empty), then unlocks; `parent`, the folder the build made to hold the
 * target (a shard's `INDEX_DIR`) when it did not finish, is removed too
 * when nothing else is in it.
 */
function unlockBuild(tmp: string, lock: Deno.FsFile, parent?: string): void {
  try {
    Deno.removeSync(`${tmp}/${LOCK_FILE}`);
    // Not recursive: a build that came after the lock file was removed may have made its own.
    Deno.removeSync(tmp);
    if (parent !== undefined) Deno.removeSync(parent);
  } catch { /* gone, or another build's lock file is in it */ }
  lock.close();
}

/** Refuses a target that cannot be (re)placed; whether an old index is to be replaced. */
function checkTarget(out: string, overwrite: boolean, marker = INDEX_HEADER): boolean {
  const st = statOrUndefined(out);
  if (st === undefined) return false;
  if (!st.isDirectory) {
    throw new InputError({
      file: out,
      where: "",
      message: "is a file, not a folder (an index is a folder)",
    });
  }
  if (!overwrite) {
    throw new InputError({
      file: out,
      where: "",
      message: "exists; pass --overwrite to replace it",
    });
  }
  const names = [...Deno.readDirSync(out)].map((e) => e.name);
  if (names.length > 0 && !names.includes(marker)) {
    throw new InputError({
      file: out,
      where: "",
      message: `exists and is not ${
        marker === INDEX_HEADER ? "an index" : "a quantizer"
      } folder; it is not replaced`,
    });
  }
  return true;
}

/** A build's folders, taken by {@linkcode openBuildFolder}. */
export interface BuildFolder {
  /** The temporary folder (`tmpName(out)`, `temp.ts`). */
  readonly tmp: string;
  /** The held lock of `tmp/lock`. */
  readonly lock: Deno.FsFile;
  /** The folder the build writes in (`tmp/build`), renamed into place by {@linkcode publishBuild}. */
  readonly build: string;
  /** Whether an old folder at the target is replaced. */
  readonly replace: boolean;
  /** The target's parent folder when this build made it (removed again if the build does not finish). */
  readonly made: string | undefined;
}

/**
 * Starts a build of folder `out` in its temporary folder `tmp`: takes the
 * lock (a build running meanwhile is an {@linkcode InputError}, nothing
 * touched), checks the target under it (`marker`: the file that makes the
 * target a folder this build may replace with `overwrite`), removes what a
 * killed build left and makes the empty `build/`. A failure unlocks again.
 */
export function openBuildFolder(
  out: string,
  tmp: string,
  overwrite: boolean,
  marker = INDEX_HEADER,
): BuildFolder {
  // A shard's INDEX_DIR made here goes again if the build does not finish.
  const made = absentFolder(dirOf(out));
  // One build of a folder at a time: the loser of a race stops here, touching nothing.
  const lock = lockBuild(tmp, out);
  const build = `${tmp}/${BUILD_FOLDER}`;
  try {
    // Decided under the lock: a build that just finished has renamed its folder into place.
    const replace = checkTarget(out, overwrite, marker);
    // A killed build's files (or an older phraseval's): rewritten from the start.
    for (const e of Deno.readDirSync(tmp)) {
      if (e.name !== LOCK_FILE) Deno.removeSync(`${tmp}/${e.name}`, { recursive: true });
    }
    Deno.mkdirSync(build);
    return { tmp, lock, build, replace, made };
  } catch (e) {
    closeBuildFolder({ tmp, lock, build, replace: false, made }, false);
    throw e;
  }
}

/**
 * Renames the complete `build/` of `f` into place at `out` (a replaced
 * folder goes to `old/` in the temporary folder for a moment), the folders
 * fsynced before and after.
 */
export function publishBuild(f: BuildFolder, out: string): void {
  publishFolder(f.build, out, f.replace ? `${f.tmp}/${OLD_FOLDER}` : undefined);
}

/**
 * Ends a build of `f`: unless it was published (`done`), its `build/`
 * (and the parent folder it made) is removed; then the lock is released.
 */
export function closeBuildFolder(f: BuildFolder, done: boolean): void {
  if (!done) {
    try {
      Deno.removeSync(f.build, { recursive: true });
    } catch { /* not made, or already gone */ }
  }
  unlockBuild(f.tmp, f.lock, done ? undefined : f.made);
}
