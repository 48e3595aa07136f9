/**
 * An encoder's output folder, checked before an encoder is granted it
 * ({@linkcode outputFolderProblem}): absent, or a real folder holding only
 * the plain files an encoder writes. Apart from `sandbox.ts` (which
 * re-exports it) so that an `embed_*` process checks its folder without
 * loading the sandbox's command lines: this module imports nothing.
 *
 * @module
 */

/** A path an encoder may not be granted, and what it is (for the message). */
export interface Guarded {
  /** The path (absolute; it need not exist yet). */
  readonly path: string;
  /** What it is, e.g. `the dataset "dev"`, `the run folder`. */
  readonly what: string;
}

/**
 * `path` with every symbolic link resolved: the `realpath` of its longest
 * existing ancestor joined with the rest (so it works for paths a run has
 * not created yet).
 *
 * @example
 * ```ts
 * import { realPathLoose } from "./output_folder.ts";
 * const tmp = Deno.realPathSync(Deno.makeTempDirSync());
 * if (realPathLoose(`${tmp}/not/yet`) !== `${tmp}/not/yet`) throw new Error();
 * Deno.removeSync(tmp);
 * ```
 */
export function realPathLoose(path: string): string {
  const parts = path.split("/").filter((s) => s !== "" && s !== ".");
  const rest: string[] = [];
  while (true) {
    const p = "/" + parts.join("/");
    try {
      const r = Deno.realPathSync(p);
      return [r.replace(/\/$/, ""), ...rest].join("/") || "/";
    } catch {
      if (parts.length === 0) return "/" + rest.join("/");
      rest.unshift(parts.pop()!);
    }
  }
}

/** Whether `p` is `dir` or lies inside it (both resolved, absolute). */
export const within = (p: string, dir: string): boolean =>
  p === dir || p.startsWith(dir === "/" ? "/" : `${dir}/`);

/** What a file that is not a regular one is, for a message ("a symbolic link", "a folder", ...). */
export const kindOf = (st: Deno.FileInfo): string =>
  st.isSymlink
    ? "a symbolic link"
    : st.isDirectory
    ? "a folder"
    : st.isFifo
    ? "a named pipe"
    : st.isSocket
    ? "a socket"
    : st.isCharDevice || st.isBlockDevice
    ? "a device"
    : "a special file";

/** The bookkeeping file an encoder keeps in its output folder (the resume manifest). */
export const DUMP_BOOKKEEPING = ".phraseval-dump.json";

/** Names of the files an encoder writes: dumps, phrase lists, metadata, temporaries. */
const ENCODER_FILE = /(\.npz|\.json)$|^\..+\.[0-9a-f]{8}\.tmp$/;

/**
 * Why `dir` cannot be an encoder's output folder, as `[path, what]`, or
 * `undefined`. Absent is fine (it is made fresh); else it must be a real
 * folder (not a symbolic link) holding only regular files an encoder
 * writes (`*.npz`, `*.json`, {@linkcode DUMP_BOOKKEEPING}, `.*.<hex>.tmp`),
 * each with one hard link, and no {@linkcode Guarded} path may lie inside
 * it. Deno does not resolve links for path-scoped reads, so anything else
 * there could open a file the encoder was not granted.
 *
 * @example
 * ```ts
 * import { outputFolderProblem } from "./output_folder.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.writeTextFileSync(`${dir}/q1.npz`, "");
 * if (outputFolderProblem(dir) !== undefined) throw new Error();
 * Deno.symlinkSync("/etc/hostname", `${dir}/q2.npz`);
 * if (!outputFolderProblem(dir)?.endsWith("a symbolic link; an encoder's output folder may hold only the plain files an encoder writes")) {
 *   throw new Error();
 * }
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export function outputFolderProblem(
  dir: string,
  guarded: readonly Guarded[] = [],
): string | undefined {
  let st: Deno.FileInfo;
  try {
    st = Deno.lstatSync(dir);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    return `${dir}: ${e instanceof Error ? e.message : e}`;
  }
  if (!st.isDirectory) {
    return `${dir}: ${kindOf(st)}; an encoder's output folder must be a real folder`;
  }
  const only = "an encoder's output folder may hold only the plain files an encoder writes";
  for (const e of Deno.readDirSync(dir)) {
    const p = `${dir}/${e.name}`;
    let s: Deno.FileInfo;
    try {
      s = Deno.lstatSync(p);
    } catch (err) {
      // Renamed or removed since the listing (another partition's temporary file).
      if (err instanceof Deno.errors.NotFound) continue;
      return `${p}: ${err instanceof Error ? err.message : err}`;
    }
    if (!s.isFile) return `${p}: ${kindOf(s)}; ${only}`;
    if (!ENCODER_FILE.test(e.name)) {
      return `${p}: not a file an encoder writes (*.npz, *.json, .*.tmp); ${only}`;
    }
    if ((s.nlink ?? 1) > 1) {
      return `${p}: a file with ${s.nlink} hard links (an encoder writes fresh files); ${only}`;
    }
  }
  const real = realPathLoose(dir);
  for (const g of guarded) {
    const target = realPathLoose(g.path);
    if (within(target, real)) {
      return `${dir}: holds ${g.what} (${target}); an encoder may not be granted it`;
    }
  }
  return undefined;
}
