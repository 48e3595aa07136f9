/**
 * Internals of the ZIP layer (`io/zip.ts`) and the NPY/NPZ writers: CRC-32,
 * little-endian field access, a ZIP writer that does not validate entry names
 * (used by the public writer after validation, and by tests to build hostile
 * archives), and bounded inflation. CRC-32 and inflation run in the runtime's
 * zlib (`node:zlib`: `crc32`, `inflateRawSync` with `maxOutputLength`, no
 * permission needed; or, for a caller that lends an output buffer, one zlib
 * stream per thread driven through its handle, see `inflateRawAtMost`);
 * fflate only deflates, for the writer. No Effect here:
 * the merge workers load this module.
 *
 * Not part of the public API: import from `io/zip.ts`, `io/npy.ts` or
 * `io/npz.ts` instead.
 *
 * @module
 */
// Reading inflates with the runtime's zlib; fflate only deflates, for the writer (its output
// bytes are what the writer has always produced, and writing is not on a measured path).
import { deflateSync } from "fflate";
import * as zlib from "node:zlib";

// ---------------------------------------------------------------------------
// CRC-32 (IEEE 802.3, the ZIP polynomial), by the runtime's zlib.

const zlibCrc32 = (zlib as unknown as { crc32(data: Uint8Array, value?: number): number }).crc32;

/**
 * CRC-32 of `data` as an unsigned 32-bit number (the value ZIP stores),
 * continuing from `seed` (the CRC-32 of the bytes before `data`). Computed
 * by the runtime's zlib (`node:zlib`'s `crc32`), about 20 times faster than
 * a JavaScript slice-by-8 table.
 *
 * @example
 * ```ts
 * import { crc32 } from "./_zip_internal.ts";
 * crc32(new TextEncoder().encode("123456789")); // 0xcbf43926
 * ```
 */
export function crc32(data: Uint8Array, seed = 0): number {
  return zlibCrc32(data, seed) >>> 0;
}

// ---------------------------------------------------------------------------
// Little-endian field access.

/** Reads an unsigned 16-bit little-endian integer at `o`. */
export function u16(b: Uint8Array, o: number): number {
  return b[o] | (b[o + 1] << 8);
}

/** Reads an unsigned 32-bit little-endian integer at `o`. */
export function u32(b: Uint8Array, o: number): number {
  return (b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)) >>> 0;
}

/**
 * Reads an unsigned 64-bit little-endian integer at `o` as a number, or
 * `undefined` when it exceeds `Number.MAX_SAFE_INTEGER`.
 */
export function u64(b: Uint8Array, o: number): number | undefined {
  const lo = u32(b, o);
  const hi = u32(b, o + 4);
  if (hi > 0x1fffff) return undefined;
  return hi * 0x100000000 + lo;
}

function put16(b: Uint8Array, o: number, v: number): void {
  b[o] = v & 0xff;
  b[o + 1] = (v >>> 8) & 0xff;
}

function put32(b: Uint8Array, o: number, v: number): void {
  b[o] = v & 0xff;
  b[o + 1] = (v >>> 8) & 0xff;
  b[o + 2] = (v >>> 16) & 0xff;
  b[o + 3] = (v >>> 24) & 0xff;
}

function put64(b: Uint8Array, o: number, v: number): void {
  put32(b, o, v >>> 0);
  put32(b, o + 4, Math.floor(v / 0x100000000));
}

// ---------------------------------------------------------------------------
// Names: CP437 (the ZIP default when the UTF-8 flag is clear).

const CP437_HIGH =
  "ÇüéâäàåçêëèïîìÄÅÉæÆôöòûùÿÖÜ¢£¥₧ƒáíóúñÑªº¿⌐¬½¼¡«»░▒▓│┤╡╢╖╕╣║╗╝╜╛┐└┴┬├─┼╞╟╚╔╩╦╠═╬╧╨╤╥╙╘╒╓╫╪┘┌█▄▌▐▀αßΓπΣσµτΦΘΩδ∞φε∩≡±≥≤⌠⌡÷≈°∙·√ⁿ²■\u00a0";

const UTF8 = new TextDecoder("utf-8", { fatal: false });

/** Decodes a ZIP entry name: UTF-8 when `utf8`, else CP437. */
export function decodeName(bytes: Uint8Array, utf8: boolean): string {
  let ascii = true;
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] >= 0x80) {
      ascii = false;
      break;
    }
  }
  if (ascii || utf8) return UTF8.decode(bytes);
  let s = "";
  for (const x of bytes) s += x < 0x80 ? String.fromCharCode(x) : CP437_HIGH[x - 0x80];
  return s;
}

// ---------------------------------------------------------------------------
// Writer.

/** One file to put into a ZIP archive (see {@linkcode encodeZipRaw}). */
export interface RawZipInput {
  /** Entry name, written as is (UTF-8, flag 11 set when not ASCII). */
  readonly name: string;
  /** Uncompressed contents. */
  readonly data: Uint8Array;
  /** Deflate this entry (method 8) instead of storing it (method 0). */
  readonly compress?: boolean;
}

/** Options of {@linkcode encodeZipRaw}. */
export interface RawZipOptions {
  /** Deflate level 0-9 for compressed entries (default 6, as zlib/Python). */
  readonly level?: number;
  /**
   * Write ZIP64 extra fields and the ZIP64 end-of-central-directory record
   * even when nothing needs them (as `numpy.savez` does for local headers).
   */
  readonly forceZip64?: boolean;
}

const LIMIT32 = 0xffffffff;
const LIMIT16 = 0xffff;
// 1980-01-01 00:00:00, the DOS epoch: written output is reproducible.
const DOS_TIME = 0;
const DOS_DATE = (0 << 9) | (1 << 5) | 1;

/**
 * Builds a ZIP archive from `entries` without checking their names. Sizes and
 * CRCs are known up front, so no data descriptors are written; ZIP64 fields
 * are used where sizes, offsets or the entry count need them (or always with
 * `forceZip64`).
 */
export function encodeZipRaw(
  entries: readonly RawZipInput[],
  options: RawZipOptions = {},
): Uint8Array {
  const enc = new TextEncoder();
  const level = (options.level ?? 6) as 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9;
  const force = options.forceZip64 === true;
  interface Prepared {
    name: Uint8Array;
    utf8: boolean;
    method: 0 | 8;
    crc: number;
    size: number;
    body: Uint8Array;
    offset: number;
    zip64: boolean;
  }
  const prepared: Prepared[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = enc.encode(e.name);
    // Non-ASCII characters take more UTF-8 bytes than UTF-16 units.
    const utf8 = name.length !== e.name.length;
    const method = e.compress ? 8 : 0;
    const body = method === 8 ? deflateSync(e.data, { level }) : e.data;
    const zip64 = force || e.data.length >= LIMIT32 || body.length >= LIMIT32 ||
      offset >= LIMIT32;
    prepared.push({
      name,
      utf8,
      method,
      crc: crc32(e.data),
      size: e.data.length,
      body,
      offset,
      zip64,
    });
    offset += 30 + name.length + (zip64 ? 20 : 0) + body.length;
  }
  const cdStart = offset;
  let cdSize = 0;
  for (const p of prepared) cdSize += 46 + p.name.length + (p.zip64 ? 28 : 0);
  const needEnd64 = force || prepared.length >= LIMIT16 || cdStart >= LIMIT32 ||
    cdSize >= LIMIT32;
  const total = cdStart + cdSize + (needEnd64 ? 56 + 20 : 0) + 22;
  const out = new Uint8Array(total);
  // Local headers and data.
  for (const p of prepared) {
    let o = p.offset;
    put32(out, o, 0x04034b50);
    put16(out, o + 4, p.zip64 ? 45 : 20);
    put16(out, o + 6, p.utf8 ? 0x800 : 0);
    put16(out, o + 8, p.method);
    put16(out, o + 10, DOS_TIME);
    put16(out, o + 12, DOS_DATE);
    put32(out, o + 14, p.crc);
    put32(out, o + 18, p.zip64 ? LIMIT32 : p.body.length);
    put32(out, o + 22, p.zip64 ? LIMIT32 : p.size);
    put16(out, o + 26, p.name.length);
    put16(out, o + 28, p.zip64 ? 20 : 0);
    out.set(p.name, o + 30);
    o += 30 + p.name.length;
    if (p.zip64) {
      put16(out, o, 0x0001);
      put16(out, o + 2, 16);
      put64(out, o + 4, p.size);
      put64(out, o + 12, p.body.length);
      o += 20;
    }
    out.set(p.body, o);
  }
  // Central directory.
  let o = cdStart;
  for (const p of prepared) {
    put32(out, o, 0x02014b50);
    put16(out, o + 4, (3 << 8) | (p.zip64 ? 45 : 20)); // made by: Unix
    put16(out, o + 6, p.zip64 ? 45 : 20);
    put16(out, o + 8, p.utf8 ? 0x800 : 0);
    put16(out, o + 10, p.method);
    put16(out, o + 12, DOS_TIME);
    put16(out, o + 14, DOS_DATE);
    put32(out, o + 16, p.crc);
    put32(out, o + 20, p.zip64 ? LIMIT32 : p.body.length);
    put32(out, o + 24, p.zip64 ? LIMIT32 : p.size);
    put16(out, o + 28, p.name.length);
    put16(out, o + 30, p.zip64 ? 28 : 0);
    put16(out, o + 32, 0);
    put16(out, o + 34, 0);
    put16(out, o + 36, 0);
    put32(out, o + 38, (0o100644 << 16) >>> 0);
    put32(out, o + 42, p.zip64 ? LIMIT32 : p.offset);
    out.set(p.name, o + 46);
    o += 46 + p.name.length;
    if (p.zip64) {
      put16(out, o, 0x0001);
      put16(out, o + 2, 24);
      put64(out, o + 4, p.size);
      put64(out, o + 12, p.body.length);
      put64(out, o + 20, p.offset);
      o += 28;
    }
  }
  const n = prepared.length;
  if (needEnd64) {
    const rec = o;
    put32(out, o, 0x06064b50);
    put64(out, o + 4, 44);
    put16(out, o + 12, (3 << 8) | 45);
    put16(out, o + 14, 45);
    put32(out, o + 16, 0);
    put32(out, o + 20, 0);
    put64(out, o + 24, n);
    put64(out, o + 32, n);
    put64(out, o + 40, cdSize);
    put64(out, o + 48, cdStart);
    o += 56;
    put32(out, o, 0x07064b50);
    put32(out, o + 4, 0);
    put64(out, o + 8, rec);
    put32(out, o + 16, 1);
    o += 20;
  }
  put32(out, o, 0x06054b50);
  put16(out, o + 4, 0);
  put16(out, o + 6, 0);
  put16(out, o + 8, needEnd64 ? LIMIT16 : n);
  put16(out, o + 10, needEnd64 ? LIMIT16 : n);
  put32(out, o + 12, needEnd64 ? LIMIT32 : cdSize);
  put32(out, o + 16, needEnd64 ? LIMIT32 : cdStart);
  put16(out, o + 20, 0);
  return out;
}

// ---------------------------------------------------------------------------
// Bounded inflation, by the runtime's zlib (`node:zlib`).

/** Whether `e` is zlib's refusal to produce more than `maxOutputLength` bytes. */
function tooLarge(e: unknown): boolean {
  return (e as { code?: string } | null)?.code === "ERR_BUFFER_TOO_LARGE";
}

/** A zlib `Buffer` as a plain `Uint8Array` over the same bytes. */
function plain(b: Uint8Array): Uint8Array {
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

/**
 * Raw DEFLATE data inflated into one buffer, at most `size` bytes (throws
 * zlib's errors as they are, `ERR_BUFFER_TOO_LARGE` past `size`): zlib stops
 * at the first output chunk that takes the total past `maxOutputLength` and
 * throws (`ERR_BUFFER_TOO_LARGE`), so a stream that inflates past `size`
 * costs at most one chunk more. Up to 64 MiB the chunk is a little larger
 * than `size` (zlib finds the end of the stream in one pass, no second chunk
 * and no concatenation); larger entries grow by the default chunks (no large
 * allocation up front). With `reuse`, the output goes into the buffer it
 * lends (of at least the length asked for: `size` + 64 bytes) and the result
 * views it: same bytes, same errors, no fresh memory.
 */
export function inflateRawAtMost(
  raw: Uint8Array,
  size: number,
  reuse?: (length: number) => Uint8Array,
): Uint8Array {
  const maxOutputLength = Math.max(1, size);
  if (reuse !== undefined) {
    const into = reusedInflater();
    if (into !== undefined) return into(raw, maxOutputLength, reuse);
  }
  return plain(
    size <= 1 << 26
      ? zlib.inflateRawSync(raw, { maxOutputLength, chunkSize: size + 64 })
      : zlib.inflateRawSync(raw, { maxOutputLength }),
  );
}

/** The part of `node:zlib`'s inflater object that {@linkcode reusedInflater} drives. */
interface ZlibHandle {
  reset(): void;
  writeSync(
    flush: number,
    input: Uint8Array,
    inOff: number,
    inLen: number,
    out: Uint8Array,
    outOff: number,
    outLen: number,
  ): void;
  onerror: (message: string, errno: number) => void;
}

let reusedInflate: ReturnType<typeof makeReusedInflater> | null = null;

/**
 * This thread's one raw inflater, driven directly (`undefined` where the
 * runtime's `node:zlib` object does not have the handle this relies on):
 * `inflateRawSync` makes a new zlib stream and a new output buffer per call,
 * and in worker threads the fresh memory costs more than the inflating of a
 * 700 KB entry (its pages are faulted in, and unmapped again, each time).
 */
function reusedInflater(): ReturnType<typeof makeReusedInflater> {
  if (reusedInflate === null) reusedInflate = makeReusedInflater();
  return reusedInflate;
}

function makeReusedInflater():
  | ((raw: Uint8Array, max: number, reuse: (length: number) => Uint8Array) => Uint8Array)
  | undefined {
  const z = zlib.createInflateRaw() as unknown as {
    _handle?: Partial<ZlibHandle>;
    _writeState?: unknown;
  };
  const h = z._handle, state = z._writeState;
  if (
    typeof h?.writeSync !== "function" || typeof h.reset !== "function" ||
    !(state instanceof Uint32Array) || state.length < 2
  ) {
    return undefined;
  }
  const handle = h as ZlibHandle;
  const codes = (zlib as unknown as { codes?: Record<string, string | number> }).codes ?? {};
  let failed: Error | undefined;
  handle.onerror = (message, errno) => {
    // As `inflateRawSync` throws it: zlib's message, its code name and number.
    failed = Object.assign(new Error(message), { errno, code: codes[String(errno)] });
  };
  return (raw, max, reuse) => {
    // Room for 64 bytes past the limit: output that fills it all went past the limit.
    const room = max + 64;
    const out = reuse(room).subarray(0, room);
    failed = undefined;
    handle.reset();
    handle.writeSync(zlib.constants.Z_FINISH, raw, 0, raw.length, out, 0, room);
    if (failed !== undefined) throw failed;
    const produced = room - state[0];
    if (produced > max) {
      // What `inflateRawSync` throws past `maxOutputLength`.
      throw Object.assign(
        new RangeError(`Cannot create a Buffer larger than ${max} bytes`),
        { code: "ERR_BUFFER_TOO_LARGE" },
      );
    }
    return out.subarray(0, produced);
  };
}

/** Compressed bytes a prefix read starts with (doubled until the prefix is out). */
const PREFIX_STEP = 1024;
/**
 * Output a prefix read may produce past the bytes asked for. One more byte of
 * compressed data gives at most about 1.3 KB more output (1032 bytes of
 * matches, plus a symbol it completes), far less than this.
 */
const PREFIX_SLACK = 1 << 16;

/**
 * The output of the first `c` compressed bytes (a cut stream is not an error:
 * sync flush), or `undefined` when it is more than `cap` bytes (zlib stops
 * there).
 */
function inflateCut(raw: Uint8Array, c: number, cap: number): Uint8Array | undefined {
  try {
    return plain(zlib.inflateRawSync(raw.subarray(0, c), {
      finishFlush: zlib.constants.Z_SYNC_FLUSH,
      maxOutputLength: cap,
    }));
  } catch (e) {
    if (tooLarge(e)) return undefined;
    throw e;
  }
}

/**
 * The first `n` bytes of what raw DEFLATE data inflates to (fewer when it
 * inflates to less), never producing more than `n` + 64 KiB of output (and
 * the one 16 KiB chunk zlib fills before it stops there): the
 * way a `.npy` header is read before its entry is trusted with memory. A
 * slice of the compressed data is inflated (1 KiB first, doubled while it
 * gives fewer than `n` bytes); a slice that gives more than `n` + 64 KiB is
 * cut in half towards the last short one, so whatever the stream holds after
 * the prefix (a bomb, a run of empty blocks) is never inflated in full.
 *
 * @throws {Error} on corrupt deflate data.
 */
export function inflateRawPrefix(raw: Uint8Array, n: number): Uint8Array {
  if (n <= 0) return new Uint8Array(0);
  const cap = n + PREFIX_SLACK;
  // `short`: a length known to give fewer than n bytes; `over`: one known to give more than cap.
  let short = 0, over = -1;
  let c = Math.min(raw.length, PREFIX_STEP);
  for (;;) {
    const out = inflateCut(raw, c, cap);
    if (out === undefined) over = c;
    else if (out.length >= n || c === raw.length) return out.subarray(0, Math.min(n, out.length));
    else short = c;
    c = over < 0 ? Math.min(raw.length, c * 2) : short + Math.floor((over - short) / 2);
    // Cannot happen (one byte never adds 64 KiB): refuse rather than loop.
    if (c <= short) throw new Error(`one more compressed byte inflates past ${cap} bytes`);
  }
}

/**
 * Inflates raw DEFLATE data that must give exactly `size` bytes, stopping
 * right after `size` (see the module notes): returns the bytes, or why not
 * (`inflates past` the declared size, or to fewer bytes).
 *
 * @throws {Error} on corrupt deflate data (zlib's message).
 */
export function inflateRawBounded(raw: Uint8Array, size: number): Uint8Array | string {
  let out: Uint8Array;
  try {
    out = inflateRawAtMost(raw, size);
  } catch (e) {
    if (tooLarge(e)) return `inflates past the declared ${size} bytes (stopped there)`;
    throw e;
  }
  if (out.length > size) return `inflates past the declared ${size} bytes (stopped there)`;
  if (out.length !== size) {
    return `inflated to ${out.length} bytes but the directory declares ${size}`;
  }
  return out;
}

// ---------------------------------------------------------------------------
// Error text.

/**
 * An archive entry name fit for an error line: control characters become
 * `\xNN` escapes.
 */
export function escapeName(name: string): string {
  let out = "";
  for (const c of name) {
    const code = c.charCodeAt(0);
    out += code < 0x20 || code === 0x7f ? `\\x${code.toString(16).padStart(2, "0")}` : c;
  }
  return out;
}

/** Turns an operating-system error into a short phrase. */
export function osMessage(e: unknown): string {
  if (e instanceof Deno.errors.NotFound) return "no such file or folder";
  if (e instanceof Deno.errors.PermissionDenied) return "permission denied";
  if (e instanceof Deno.errors.NotCapable) return "permission denied (not granted to this process)";
  if (e instanceof Deno.errors.IsADirectory) return "is a directory";
  return e instanceof Error ? e.message : String(e);
}
