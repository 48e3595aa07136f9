/**
 * Path and file helpers of the `runs/` room (private to it): absolute
 * paths without `.`/`..`, what a path is on disk, and how a path is shown
 * in a message.
 *
 * @module
 */

/** `p` relative to the working folder when inside it, else absolute. */
export function displayPath(p: string): string {
  const cwd = Deno.cwd().replace(/\/$/, "");
  return p.startsWith(cwd + "/") ? p.slice(cwd.length + 1) : p;
}

/** Removes `.` and `..` segments of an absolute path. */
export function normalize(p: string): string {
  const out: string[] = [];
  for (const s of p.split("/")) {
    if (s === "" || s === ".") continue;
    if (s === "..") out.pop();
    else out.push(s);
  }
  return "/" + out.join("/");
}

/** `p` as an absolute, normalized path (relative paths against `base`, default the working folder). */
export const absPath = (p: string, base: string = Deno.cwd()): string =>
  normalize(p.startsWith("/") ? p : `${base.replace(/\/$/, "")}/${p}`);

/** The folder of a path. */
export const dirOf = (p: string): string => p.slice(0, p.lastIndexOf("/")) || "/";

/** The last segment of a path. */
export const baseOf = (p: string): string => p.slice(p.lastIndexOf("/") + 1);

const stat = (p: string): Deno.FileInfo | null => {
  try {
    return Deno.statSync(p);
  } catch {
    return null;
  }
};

/** Whether `p` is a regular file. */
export const isFile = (p: string): boolean => stat(p)?.isFile === true;

/** Whether `p` is a folder. */
export const isDir = (p: string): boolean => stat(p)?.isDirectory === true;

/** Whether `p` is a named pipe. */
export const isFifo = (p: string): boolean => stat(p)?.isFifo === true;
