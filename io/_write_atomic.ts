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
 * caller's typed error.
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
  onError: (reason: string) => E,
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
    catch: (e) => onError(`cannot write file: ${osMessage(e)}`),
  }).pipe(
    Effect.onExit((exit) => Exit.isSuccess(exit) ? Effect.void : cleanup()),
    Effect.uninterruptible,
  );
}
