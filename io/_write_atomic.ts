/**
 * The atomic byte-file writer of the NPY/NPZ and dump writers (an Effect;
 * kept apart from `io/_zip_internal.ts`, which the merge workers load
 * without Effect).
 *
 * Not part of the public API.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import { osMessage } from "./_zip_internal.ts";

function splitPath(path: string): { dir: string; base: string } {
  const i = Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\"));
  if (i < 0) return { dir: ".", base: path };
  return { dir: i === 0 ? path.slice(0, 1) : path.slice(0, i), base: path.slice(i + 1) };
}

/**
 * Writes `bytes` to `path` atomically: into a temporary file in the same
 * folder (`.<name>.<random>.tmp`, mode 0666 less the umask, like any new
 * file), then renamed onto `path`. On any failure
 * (or interruption) the temporary file is removed, so `path` is either the
 * old file or the complete new one. `onError` turns the OS error into the
 * caller's typed error (it also gets the error itself, so that a write the
 * system refused can be told from bad input). A temporary file left by a
 * killed process (SIGKILL) is not looked for here, once per file: see
 * {@linkcode removeStaleTemps}.
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { writeFileAtomic } from "./_write_atomic.ts";
 * const dir = await Deno.makeTempDir();
 * await Effect.runPromise(writeFileAtomic(`${dir}/a.bin`, new Uint8Array([1, 2]), (r) => r));
 * if ((await Deno.readFile(`${dir}/a.bin`)).join() !== "1,2") throw new Error();
 * // A folder that does not exist: the typed error, and nothing left behind.
 * const exit = await Effect.runPromiseExit(
 *   writeFileAtomic(`${dir}/no/a.bin`, new Uint8Array(1), (r) => `failed: ${r}`),
 * );
 * if (exit._tag !== "Failure") throw new Error();
 * if ([...Deno.readDirSync(dir)].length !== 1) throw new Error();
 * ```
 */
export function writeFileAtomic<E>(
  path: string,
  bytes: Uint8Array,
  onError: (reason: string, cause: unknown) => E,
  options: { readonly sync?: boolean } = {},
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
      const name = `${dir}/.${base}.${crypto.randomUUID().slice(0, 8)}.tmp`;
      const f = await Deno.open(name, { write: true, createNew: true, mode: 0o666 });
      tmp = name;
      try {
        let off = 0;
        while (off < bytes.length) off += await f.write(bytes.subarray(off));
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
 * import { removeStaleTemps } from "./_write_atomic.ts";
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
