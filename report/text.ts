/**
 * The text of a file `report` reads (a run's rows, a `summary.json` or run
 * config, a search record and its top-k records, a labels file), decoded as
 * strict UTF-8: a byte that is not UTF-8 is bad input, one
 * {@linkcode InputError} naming the file, the line and the byte offset, worded
 * as the dataset readers word it (`io/datasets/lines.ts`: `line N: invalid
 * UTF-8 at byte B`, B counted from 0 in the file), never a U+FFFD that a later
 * check would misread (a prediction that "differs", a stale rows file). A
 * UTF-8 byte-order mark before the first line is dropped, as those readers
 * drop it.
 *
 * @module
 */
import { InputError } from "../io/errors.ts";
import { firstInvalidUtf8 } from "../io/json_events.ts";

const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * `bytes` decoded as strict UTF-8, or an {@linkcode InputError} naming
 * `file`, the line (from 1) and the byte offset (from 0) of the first byte
 * that is not UTF-8 (a sequence cut by the end of the file: the offset of
 * the end).
 *
 * @example
 * ```ts
 * import { decodeUtf8Strict } from "./text.ts";
 * const ok = decodeUtf8Strict(new TextEncoder().encode("\uFEFFa\nbé\n"), "r.ndjson");
 * if (ok !== "a\nbé\n") throw new Error(JSON.stringify(ok));
 * try {
 *   decodeUtf8Strict(new Uint8Array([0x7b, 0x7d, 0x0a, 0x41, 0xff, 0x0a]), "r.ndjson");
 *   throw new Error("accepted");
 * } catch (e) {
 *   if (String(e) !== "r.ndjson: line 2: invalid UTF-8 at byte 4") throw e;
 * }
 * ```
 */
export function decodeUtf8Strict(bytes: Uint8Array, file: string): string {
  try {
    return STRICT_UTF8.decode(bytes);
  } catch {
    const at = firstInvalidUtf8(bytes);
    let line = 1;
    for (let i = bytes.indexOf(0x0a); i >= 0 && i < at; i = bytes.indexOf(0x0a, i + 1)) line++;
    throw new InputError({ file, where: `line ${line}`, message: `invalid UTF-8 at byte ${at}` });
  }
}

/**
 * The text of `file` as strict UTF-8 ({@linkcode decodeUtf8Strict}); a file
 * that cannot be read throws the system's error, for the caller to word.
 *
 * @example
 * ```ts
 * import { readTextStrict } from "./text.ts";
 * const f = Deno.makeTempFileSync({ suffix: ".ndjson" });
 * Deno.writeFileSync(f, new Uint8Array([0x41, 0x6c, 0x74, 0xff, 0x0a]));
 * try {
 *   readTextStrict(f);
 *   throw new Error("accepted");
 * } catch (e) {
 *   if (!String(e).endsWith(".ndjson: line 1: invalid UTF-8 at byte 3")) throw e;
 * } finally {
 *   Deno.removeSync(f);
 * }
 * ```
 */
export function readTextStrict(file: string): string {
  return decodeUtf8Strict(Deno.readFileSync(file), file);
}
