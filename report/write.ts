/**
 * Writing the report's files all or nothing: they are written into a
 * temporary folder beside the output folder (`.<name>.<hex>.tmp`), which is
 * renamed into place when the output folder does not exist yet; when it
 * does, each file is renamed into it (replacing an earlier report's). On
 * any failure, and when aborted before the files are renamed into place,
 * the temporary folder (and any parent folder made for it) is removed, and
 * nothing is left behind.
 *
 * @module
 */
import { FileError } from "../io/errors.ts";
import { baseOf, dirOf, exists, isDir } from "../io/fs.ts";

/**
 * Writes `files` (name → text) into the folder `out`, atomically (see the
 * module notes). Missing parent folders are created; those it created are
 * removed again on failure. Throws {@linkcode FileError}; `signal` aborted
 * before the renames into place begin makes it clean up and throw the
 * signal's reason (after that it completes).
 *
 * @example
 * ```ts
 * import { writeFolderAtomic } from "./write.ts";
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
  const tmp = `${parent}/.${baseOf(out)}.${crypto.randomUUID().slice(0, 8)}.tmp`;
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
