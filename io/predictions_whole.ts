/**
 * A prediction file read whole with the native `JSON.parse` (the fast path of
 * `./predictions.ts`, which streams anything this does not take as is). No
 * import: `evaluate`'s whole-file path loads it alone.
 *
 * @module
 */

/** The largest prediction file first tried whole with `JSON.parse` (64 MiB). */
export const FAST_PARSE_BYTES = 64 << 20;

/** An id JavaScript orders before the others in an object (an array index). */
const ARRAY_INDEX = /^(?:0|[1-9][0-9]*)$/;

/**
 * The predictions of a whole file with the native `JSON.parse`, or
 * `undefined` when the streaming decoder must read it (it is not valid
 * UTF-8 or JSON, starts with a BOM, is not an object of strings, or has an
 * id that is an array index, which an object would not keep in file order):
 * then the streaming decoder gives the same map, or names the problem.
 *
 * @example
 * ```ts
 * import { parseWhole } from "./predictions_whole.ts";
 * const bytes = new TextEncoder().encode('{"q1": "Paris", "q2": "x", "q2": "y"}');
 * const m = parseWhole([bytes], bytes.byteLength);
 * if (m?.get("q1") !== "Paris" || m?.get("q2") !== "y") throw new Error();
 * if (parseWhole([new TextEncoder().encode('{"q1": 5}')], 9) !== undefined) throw new Error();
 * ```
 */
export function parseWhole(
  chunks: readonly Uint8Array[],
  size: number,
): Map<string, string> | undefined {
  return parseWholeOf(chunks, size, (v): v is string => typeof v === "string");
}

/**
 * {@linkcode parseWhole} for an object whose values pass `ok` (a string, a
 * number): the map, or `undefined` for the streaming decoder, on the same
 * terms.
 *
 * @example
 * ```ts
 * import { parseWholeOf } from "./predictions_whole.ts";
 * const bytes = new TextEncoder().encode('{"q1": 0.25}');
 * const m = parseWholeOf([bytes], bytes.byteLength, (v): v is number => typeof v === "number");
 * if (m?.get("q1") !== 0.25) throw new Error();
 * ```
 */
export function parseWholeOf<T>(
  chunks: readonly Uint8Array[],
  size: number,
  ok: (v: unknown) => v is T,
): Map<string, T> | undefined {
  let bytes: Uint8Array;
  if (chunks.length === 1) bytes = chunks[0];
  else {
    bytes = new Uint8Array(size);
    let off = 0;
    for (const c of chunks) {
      bytes.set(c, off);
      off += c.byteLength;
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes));
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const out = new Map<string, T>();
  for (const [id, v] of Object.entries(value)) {
    if (!ok(v) || ARRAY_INDEX.test(id)) return undefined;
    out.set(id, v);
  }
  return out;
}
