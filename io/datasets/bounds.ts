/**
 * The bounds of the dataset readers and of format detection, and the one
 * JSON test they share. No import: every file of `io/datasets/` may import
 * it without forming a circle.
 *
 * @module
 */

/**
 * How many bytes of the (decompressed) input the detector looks at: this
 * many, and on to the end of the first line (at most
 * {@linkcode MAX_LINE_BYTES}) when they do not hold it and do not open a
 * JSON document (SQuAD, MRQA's header), which may be one long line.
 */
export const HEAD_BYTES = 64 * 1024;

/**
 * The bound of one line (or one CSV record, quoted newlines included) of a
 * line-based dataset, and of one string of a SQuAD file, in bytes: 16 MiB,
 * far above any real record (an MRQA context with its tokens is tens of
 * KiB, a DPR passage under 2 KiB, a SQuAD context a few KiB). Format
 * detection reads no further for a first line either. A longer line or
 * string is one bad-input error, read no further, so it never costs more
 * memory than the bound.
 */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

/**
 * The longest article (one element of `data`) read, in bytes: 32 MiB, far
 * above any real one (SQuAD v1.1's whole train set is 30 MiB); a longer one
 * is refused once the input passes the bound, so it is never held whole.
 */
export const MAX_ARTICLE_BYTES = 32 * 1024 * 1024;

/**
 * Whether `v` is a JSON object (not an array, not `null`).
 *
 * @example
 * ```ts
 * import { isJsonObject } from "./bounds.ts";
 * if (!isJsonObject({}) || isJsonObject([]) || isJsonObject(null)) throw new Error();
 * ```
 */
export function isJsonObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
