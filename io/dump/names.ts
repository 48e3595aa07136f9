/**
 * File names of PI-SQuAD dumps. A paragraph id (`'%s_%d' % (title, index)`)
 * or a question id becomes the stem of `<stem>.npz` / `<stem>.json` inside
 * the dump folder:
 *
 * - every `/` becomes `_`, as the PIQA baseline's writer does, so no name
 *   can contain a path separator and nothing can leave the folder;
 * - ids that would still be unsafe or surprising are refused, not
 *   renamed: a NUL byte, a `..` path segment in the original id (a title
 *   such as `../x`), an empty id, or a name longer than 240 UTF-8 bytes;
 * - two ids that map to the same stem (`A/B_0` and `A_B_0`) are refused
 *   by the writers (see {@linkcode StemRegistry}) instead of one silently
 *   overwriting the other.
 *
 * @module
 */

/** The longest stem allowed, in UTF-8 bytes (file systems allow 255). */
export const MAX_STEM_BYTES = 240;

/**
 * Why `id` cannot name a dump file, or `undefined` when it can.
 *
 * @example
 * ```ts
 * import { unsafeIdReason } from "./names.ts";
 * if (unsafeIdReason("Super_Bowl_50_0") !== undefined) throw new Error("a safe id refused");
 * if (unsafeIdReason("../etc_0") === undefined) throw new Error("'..' accepted");
 * ```
 */
export function unsafeIdReason(id: string): string | undefined {
  if (id.length === 0) return "empty id";
  if (id.includes("\0")) return "id contains a NUL byte";
  if (id.split("/").some((seg) => seg === "..")) return "id has a '..' path segment";
  if (new TextEncoder().encode(id).byteLength > MAX_STEM_BYTES) {
    return `id longer than ${MAX_STEM_BYTES} bytes`;
  }
  return undefined;
}

/**
 * The file stem for a paragraph or question id: `/` → `_`. Call
 * {@linkcode unsafeIdReason} first; this function throws on unsafe ids.
 *
 * @example
 * ```ts
 * import { dumpStem } from "./names.ts";
 * if (dumpStem("AC/DC_3") !== "AC_DC_3") throw new Error("not AC_DC_3");
 * ```
 */
export function dumpStem(id: string): string {
  const why = unsafeIdReason(id);
  if (why !== undefined) throw new Error(`${JSON.stringify(id)}: ${why}`);
  return id.replaceAll("/", "_");
}

/**
 * Remembers which id took which stem, to refuse two ids with one file name.
 */
export class StemRegistry {
  #byStem = new Map<string, string>();

  /**
   * Registers `id`; returns the id that already owns its stem, if another.
   */
  claim(id: string): string | undefined {
    const stem = dumpStem(id);
    const owner = this.#byStem.get(stem);
    if (owner !== undefined && owner !== id) return owner;
    this.#byStem.set(stem, id);
    return undefined;
  }
}
