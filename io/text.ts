/**
 * The text of a file read as strict UTF-8 (what `report` reads: a run's
 * rows, a `summary.json` or run config, a search record and its top-k
 * records, a labels file; the hits files a sharded search's merge reads): a
 * byte that is not UTF-8 is bad input, one {@linkcode InputError} naming the
 * file, the line and the byte offset, worded as the dataset readers word it
 * (`io/datasets/lines.ts`: `line N: invalid UTF-8 at byte B`, B counted from 0
 * in the file), never a U+FFFD that a later check would misread (a
 * prediction that "differs", a stale rows file). A UTF-8 byte-order mark
 * before the first line is dropped, as those readers drop it. A file of
 * lines (a run's rows, top-k records, shard hits) is read a chunk at a time
 * ({@linkcode readLinesStrict}): its size is bounded by the disk, not by
 * JavaScript's 512 MiB string limit.
 *
 * @module
 */
import { FileError, InputError } from "./errors.ts";
import { firstInvalidUtf8 } from "./json_events.ts";
import { MAX_LINE_BYTES } from "./datasets/bounds.ts";
import { openReadSync } from "./fs.ts";

const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });
/** The same, for text after the start of a file: a U+FEFF there is a character, kept. */
const STRICT_UTF8_KEEP_BOM = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

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

/** The longest line {@linkcode readLinesStrict} reads: the dataset line readers' bound (16 MiB). */
export { MAX_LINE_BYTES };

/** Bytes read at a time by {@linkcode readLinesStrict}. */
const LINE_CHUNK = 1 << 20;

/**
 * The lines of `file` (without their `\n`), as `readTextStrict(file).split("\n")`
 * gives them (a final empty line after a last `\n` included), but read 1 MiB at a
 * time: memory is a chunk and a line, whatever the file's size. The file is
 * opened now (one that cannot be opened is a {@linkcode FileError}, as
 * `fs.ts` `openReadSync` words it); reading it, a byte that is not UTF-8 is the same
 * {@linkcode InputError} as {@linkcode decodeUtf8Strict}'s (`line N: invalid
 * UTF-8 at byte B`), a line over {@linkcode MAX_LINE_BYTES} is one too (`line N:
 * line longer than 16777216 bytes`), and a failed read a {@linkcode FileError}.
 *
 * @example
 * ```ts
 * import { readLinesStrict } from "./text.ts";
 * const f = Deno.makeTempFileSync({ suffix: ".ndjson" });
 * Deno.writeTextFileSync(f, "\uFEFFa\nb\n");
 * try {
 *   if ([...readLinesStrict(f)].join("|") !== "a|b|") throw new Error("lines");
 * } finally {
 *   Deno.removeSync(f);
 * }
 * ```
 */
export function readLinesStrict(file: string): Iterable<string> {
  return linesOf(openReadSync(file), file);
}

function* linesOf(f: Deno.FsFile, file: string): Generator<string> {
  using _ = f;
  const buf = new Uint8Array(LINE_CHUNK);
  // `pending`: bytes after the last line end read so far (the start of a line), at most
  // MAX_LINE_BYTES; `base`: the file offset of pending[0]; `line`: its line, from 1.
  let pending: Uint8Array = new Uint8Array(0);
  let base = 0, line = 1;
  let atStart = true;
  const decode = (bytes: Uint8Array): string => {
    try {
      const text = (atStart ? STRICT_UTF8 : STRICT_UTF8_KEEP_BOM).decode(bytes);
      atStart = false;
      return text;
    } catch {
      const at = firstInvalidUtf8(bytes);
      let n = line;
      for (let i = bytes.indexOf(0x0a); i >= 0 && i < at; i = bytes.indexOf(0x0a, i + 1)) n++;
      throw new InputError({
        file,
        where: `line ${n}`,
        message: `invalid UTF-8 at byte ${base + at}`,
      });
    }
  };
  for (;;) {
    let got: number | null;
    try {
      got = f.readSync(buf);
    } catch (e) {
      throw new FileError({ file, message: e instanceof Error ? e.message : String(e) });
    }
    if (got === null) break;
    const chunk = buf.subarray(0, got);
    const end = chunk.lastIndexOf(0x0a);
    const firstEnd = end < 0 ? got : chunk.indexOf(0x0a);
    if (pending.length + firstEnd > MAX_LINE_BYTES) {
      throw new InputError({
        file,
        where: `line ${line}`,
        message: `line longer than ${MAX_LINE_BYTES} bytes`,
      });
    }
    if (end < 0) {
      pending = pending.length === 0 ? chunk.slice() : concat(pending, chunk);
      continue;
    }
    // Whole lines only: a line end (0x0a) is never inside a UTF-8 sequence.
    const whole = concat(pending, chunk.subarray(0, end + 1));
    const parts = decode(whole).split("\n");
    parts.pop(); // the empty text after the last line end
    for (const p of parts) {
      yield p;
      line++;
    }
    base += whole.length;
    pending = chunk.slice(end + 1);
  }
  yield decode(pending);
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b;
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
