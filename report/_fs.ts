/**
 * Path and file helpers of the `report/` room (private to it).
 *
 * @module
 */

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

/** Whether anything exists at `p` (a dangling symlink counts). */
export const exists = (p: string): boolean => {
  try {
    Deno.lstatSync(p);
    return true;
  } catch {
    return false;
  }
};

/** The folder of a path (`.` for a bare name). */
export const dirOf = (p: string): string => {
  const i = p.replace(/\/+$/, "").lastIndexOf("/");
  return i < 0 ? "." : i === 0 ? "/" : p.slice(0, i);
};

/** The last segment of a path. */
export const baseOf = (p: string): string => {
  const q = p.replace(/\/+$/, "");
  return q.slice(q.lastIndexOf("/") + 1);
};

/** `p` without a trailing `/` (but `/` stays `/`). */
export const trimSlash = (p: string): string => p.length > 1 ? p.replace(/\/+$/, "") || "/" : p;

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

/**
 * `p` as an absolute path with `.` and `..` segments resolved (against the
 * working folder; symlinks are not followed): two spellings of one path
 * compare equal.
 */
export function absolutePath(p: string): string {
  const parts: string[] = [];
  for (const seg of (p.startsWith("/") ? p : `${Deno.cwd()}/${p}`).split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") parts.pop();
    else parts.push(seg);
  }
  return `/${parts.join("/")}`;
}
