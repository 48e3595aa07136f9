/**
 * Inputs that must be regular files, checked by name before they are
 * opened ({@linkcode statRegularFile}). A named pipe blocks the opening
 * process until a writer comes (forever, deaf to SIGTERM while it waits in
 * `open`); a character device such as `/dev/zero` reads without end; a
 * socket cannot be opened at all. So a dump file, an index file or a dump
 * path is looked at with `stat` (or `lstat`, where a symbolic link is
 * itself refused) and anything that is not a regular file (or a folder,
 * where one is expected) is bad input naming the file, before any `open`.
 * Effect-free, so worker threads load it fast.
 *
 * @module
 */
import { FileError, InputError } from "./errors.ts";
import { osMessage } from "./_zip_internal.ts";

/**
 * What a file is, in words: `a regular file`, `a folder`, `a symbolic
 * link`, `a named pipe`, `a socket`, `a character device`, `a block device`.
 *
 * @example
 * ```ts
 * import { fileKind } from "./regular.ts";
 * if (fileKind(Deno.statSync("/dev/null")) !== "a character device") throw new Error();
 * ```
 */
export function fileKind(st: Deno.FileInfo): string {
  return st.isFile
    ? "a regular file"
    : st.isDirectory
    ? "a folder"
    : st.isSymlink
    ? "a symbolic link"
    : st.isFifo
    ? "a named pipe"
    : st.isSocket
    ? "a socket"
    : st.isCharDevice
    ? "a character device"
    : st.isBlockDevice
    ? "a block device"
    : "a special file";
}

/** Options of {@linkcode statRegularFile}. */
export interface RegularFileOptions {
  /**
   * `follow` (the default): a symbolic link stands for what it points to
   * (`stat`); `refuse`: a link is itself refused (`lstat`), as in an index
   * folder, which holds only the files its build wrote.
   */
  readonly links?: "follow" | "refuse";
  /** Added to the message of a refusal, e.g. ` (an index folder holds only regular files)`. */
  readonly why?: string;
}

/**
 * The `stat` of `path` when it is a regular file, `undefined` when nothing
 * has that name; looked at by name, never opened. Anything else (a named
 * pipe, a device, a socket, a folder; with `links: "refuse"` a symbolic
 * link) is an {@linkcode InputError} naming `path` and what it is; a `stat`
 * that fails otherwise (permission) a {@linkcode FileError}.
 *
 * @example
 * ```ts
 * import { statRegularFile } from "./regular.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.symlinkSync("/dev/zero", `${dir}/x.npz`);
 * let why = "";
 * try {
 *   statRegularFile(`${dir}/x.npz`);
 * } catch (e) {
 *   why = String(e);
 * }
 * if (!why.includes("is a character device, not a regular file")) throw new Error(why);
 * if (statRegularFile(`${dir}/absent`) !== undefined) throw new Error();
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export function statRegularFile(
  path: string,
  options: RegularFileOptions = {},
): Deno.FileInfo | undefined {
  let st: Deno.FileInfo;
  try {
    st = options.links === "refuse" ? Deno.lstatSync(path) : Deno.statSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw new FileError({ file: path, message: osMessage(e) });
  }
  if (st.isFile) return st;
  throw new InputError({
    file: path,
    where: "",
    message: `is ${fileKind(st)}, not a regular file${options.why ?? ""}`,
  });
}

/**
 * The `lstat` of `path` when it is a real folder (not a symbolic link to
 * one), `undefined` when nothing has that name; anything else is an
 * {@linkcode InputError} naming `path` and what it is (`why` appended).
 *
 * @example
 * ```ts
 * import { statRealFolder } from "./regular.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.symlinkSync(dir, `${dir}/link`);
 * let why = "";
 * try {
 *   statRealFolder(`${dir}/link`);
 * } catch (e) {
 *   why = String(e);
 * }
 * if (!why.endsWith("link: is a symbolic link, not a folder")) throw new Error(why);
 * if (statRealFolder(dir)?.isDirectory !== true) throw new Error();
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export function statRealFolder(path: string, why = ""): Deno.FileInfo | undefined {
  let st: Deno.FileInfo;
  try {
    st = Deno.lstatSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw new FileError({ file: path, message: osMessage(e) });
  }
  if (st.isDirectory) return st;
  throw new InputError({
    file: path,
    where: "",
    message: `is ${fileKind(st)}, not a folder${why}`,
  });
}
