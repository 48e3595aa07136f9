/**
 * A fingerprint of a dump's (or any input's) content
 * ({@linkcode contentFingerprint}), for deciding whether something built
 * from it (`serve`'s index of a dump) may be reused: a sha256 over every
 * file's name, size, modification time and the sha256 of its bytes, read in
 * 1 MiB chunks. A byte changed with the file's modification time put back
 * changes it; a file only touched changes it too (a rebuild is cheap next to
 * serving a stale index).
 *
 * @module
 */
import { createHash } from "node:crypto";
import { FileError } from "../errors.ts";
import { osMessage } from "../_zip_internal.ts";
import { openReadSync } from "../fs.ts";
import { statRegularFile } from "../regular.ts";

/** The sha256 (hex) of the regular file `path`, streamed in 1 MiB chunks. */
function sha256Of(path: string): string {
  const h = createHash("sha256");
  const f = openReadSync(path);
  try {
    const buf = new Uint8Array(1 << 20);
    for (;;) {
      const n = f.readSync(buf);
      if (n === null || n === 0) break;
      h.update(buf.subarray(0, n));
    }
  } catch (e) {
    throw new FileError({ file: path, message: osMessage(e) });
  } finally {
    f.close();
  }
  return h.digest("hex");
}

/**
 * The content fingerprint of a dump folder, a `.zip` or a single file (see
 * the module notes): a folder's entries by sorted name (a sub-folder by name,
 * size and time only); every file must be a regular file (a named pipe or a
 * device is an `InputError` naming it, refused before it is opened,
 * `io/regular.ts`). A missing path is a {@linkcode FileError}.
 *
 * @example
 * ```ts
 * import { contentFingerprint } from "./fingerprint.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.writeTextFileSync(`${dir}/a.json`, "[1]");
 * const t = Deno.statSync(`${dir}/a.json`).mtime!;
 * const before = contentFingerprint(dir);
 * Deno.writeTextFileSync(`${dir}/a.json`, "[2]"); // same size
 * Deno.utimeSync(`${dir}/a.json`, t, t); // same time
 * if (contentFingerprint(dir) === before) throw new Error("a changed byte went unnoticed");
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export function contentFingerprint(path: string): string {
  const h = createHash("sha256");
  let st: Deno.FileInfo;
  try {
    st = Deno.statSync(path);
  } catch (e) {
    throw new FileError({ file: path, message: osMessage(e) });
  }
  const line = (name: string, s: Deno.FileInfo, sha: string) =>
    h.update(`${JSON.stringify(name)} ${s.size} ${s.mtime?.getTime() ?? 0} ${sha}\n`);
  const file = (name: string, p: string) => {
    const s = statRegularFile(p);
    if (s === undefined) throw new FileError({ file: p, message: "no such file" });
    line(name, s, sha256Of(p));
  };
  if (!st.isDirectory) file("", path);
  else {
    let names: string[];
    try {
      names = [...Deno.readDirSync(path)].map((e) => e.name).sort();
    } catch (e) {
      throw new FileError({ file: path, message: osMessage(e) });
    }
    for (const n of names) {
      const p = `${path}/${n}`;
      let s: Deno.FileInfo;
      try {
        s = Deno.statSync(p);
      } catch (e) {
        throw new FileError({ file: p, message: osMessage(e) });
      }
      if (s.isDirectory) line(`${n}/`, s, "");
      else file(n, p);
    }
  }
  return h.digest("hex");
}
