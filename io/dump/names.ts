/**
 * File names of PI-SQuAD dumps. A paragraph id (`'%s_%d' % (title, index)`)
 * or a question id becomes the stem of `<stem>.npz` / `<stem>.json` inside
 * the dump folder:
 *
 * - every `/` becomes `_`, as the PIQA baseline's writer does, so no name
 *   can contain a path separator and nothing can leave the folder (a title
 *   `../escape` gives the stem `.._escape_0`, a plain file name);
 * - stems that would still be unsafe are refused, not renamed: an empty id,
 *   a stem that is `.` or `..` as a whole, a NUL byte, or a stem too long
 *   for the file system once the writers' temporary name is added (see
 *   {@linkcode maxStemBytes});
 * - two ids that map to the same stem (`A/B_0` and `A_B_0`) are refused
 *   (see {@linkcode StemRegistry}, and the dataset-wide checks of
 *   `io/squad_ids.ts`) instead of one silently overwriting the other.
 *
 * **The length limit.** File names may have 255 bytes. Every dump file is
 * written atomically through a temporary file `.<name>.<8 hex>.tmp` in the
 * same folder, 14 bytes longer than `<name>`. The longest name written for
 * a paragraph is `<stem>.meta.json` (`--metadata`), so a paragraph stem may
 * have 255 − 14 − 10 = **231** UTF-8 bytes ({@linkcode MAX_STEM_BYTES}),
 * with or without `--metadata` (the same id is valid either way); a
 * question has only `<stem>.npz`, so its stem may have 255 − 14 − 4 =
 * **237** bytes ({@linkcode MAX_QUESTION_STEM_BYTES}).
 *
 * @module
 */

/** File-name bytes the file systems allow. */
const NAME_MAX = 255;
/** What the atomic writer adds to a name: `.` + name + `.` + 8 hex + `.tmp`. */
const TEMP_OVERHEAD = 14;

/**
 * The longest paragraph stem, in UTF-8 bytes: 255 less the temporary name
 * of `<stem>.meta.json` (14 + 10 bytes). Also the limit when the kind is
 * not known to be a question.
 */
export const MAX_STEM_BYTES = NAME_MAX - TEMP_OVERHEAD - ".meta.json".length;

/** The longest question stem, in UTF-8 bytes: 255 less the temporary name of `<stem>.npz` (14 + 4). */
export const MAX_QUESTION_STEM_BYTES = NAME_MAX - TEMP_OVERHEAD - ".npz".length;

/** Which kind of id names a dump file: a paragraph's or a question's. */
export type IdKind = "paragraph" | "question";

/**
 * The longest stem of an id of `kind` in UTF-8 bytes (see the module
 * notes); without a kind, the larger (question) limit: what a reader
 * accepts.
 *
 * @example
 * ```ts
 * import { maxStemBytes } from "./names.ts";
 * if (maxStemBytes("paragraph") !== 231 || maxStemBytes("question") !== 237) throw new Error();
 * ```
 */
export function maxStemBytes(kind?: IdKind): number {
  return kind === "paragraph" ? MAX_STEM_BYTES : MAX_QUESTION_STEM_BYTES;
}

/**
 * Why `id` cannot name a dump file, or `undefined` when it can. The
 * checks are on the stem (`/` → `_`); `kind` chooses the length limit
 * ({@linkcode maxStemBytes}).
 *
 * @example
 * ```ts
 * import { unsafeIdReason } from "./names.ts";
 * if (unsafeIdReason("Super_Bowl_50_0") !== undefined) throw new Error("a safe id refused");
 * if (unsafeIdReason("../escape_0") !== undefined) throw new Error("'.._escape_0' is a safe name");
 * if (unsafeIdReason("..") === undefined) throw new Error("'..' accepted");
 * ```
 */
export function unsafeIdReason(id: string, kind?: IdKind): string | undefined {
  if (id.length === 0) return "empty id";
  if (id.includes("\0")) return "id contains a NUL byte";
  // A lone surrogate has no UTF-8 form: its file would be named with U+FFFD, not the id.
  if (!id.isWellFormed()) return "id is not valid Unicode (it holds a lone surrogate)";
  const stem = id.replaceAll("/", "_");
  if (stem === "." || stem === "..") return `id names the file ${JSON.stringify(stem)}`;
  const bytes = new TextEncoder().encode(stem).byteLength;
  const most = maxStemBytes(kind);
  if (bytes > most) {
    const longest = kind === "paragraph" ? "<id>.meta.json" : "<id>.npz";
    return `id is ${bytes} bytes; a ${
      kind ?? "dump"
    } id may have at most ${most} (255 less the temporary name of ${longest})`;
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
export function dumpStem(id: string, kind?: IdKind): string {
  const why = unsafeIdReason(id, kind);
  if (why !== undefined) throw new Error(`${JSON.stringify(id)}: ${why}`);
  return id.replaceAll("/", "_");
}

/**
 * Remembers which id took which stem, to refuse two ids with one file name.
 *
 * @example
 * ```ts
 * import { StemRegistry } from "./names.ts";
 * const reg = new StemRegistry();
 * if (reg.claim("A/B_0") !== undefined || reg.claim("A_B_0") !== "A/B_0") throw new Error();
 * if (reg.claimOnce("C_0") !== undefined || reg.claimOnce("C_0") !== "C_0") throw new Error();
 * ```
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

  /**
   * Registers `id`; returns the id that already owns its stem, the same id
   * included (an id seen twice is a duplicate).
   */
  claimOnce(id: string): string | undefined {
    const stem = dumpStem(id);
    const owner = this.#byStem.get(stem);
    if (owner !== undefined) return owner;
    this.#byStem.set(stem, id);
    return undefined;
  }
}
