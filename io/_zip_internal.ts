/**
 * Internals of the ZIP layer (`io/zip.ts`) and the NPY/NPZ writers: CRC-32,
 * little-endian field access, a ZIP writer that does not validate entry names
 * (used by the public writer after validation, and by tests to build hostile
 * archives). No Effect here: the merge workers load this module.
 *
 * Not part of the public API: import from `io/zip.ts`, `io/npy.ts` or
 * `io/npz.ts` instead.
 *
 * @module
 */
import { deflateSync, Inflate } from "fflate";

// ---------------------------------------------------------------------------
// CRC-32 (IEEE 802.3, the ZIP polynomial), slice-by-8.

const CRC_TABLES: Uint32Array = (() => {
  const t = new Uint32Array(8 * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  for (let n = 0; n < 256; n++) {
    let c = t[n];
    for (let k = 1; k < 8; k++) {
      c = t[c & 0xff] ^ (c >>> 8);
      t[k * 256 + n] = c >>> 0;
    }
  }
  return t;
})();

/**
 * CRC-32 of `data` as an unsigned 32-bit number (the value ZIP stores).
 *
 * @example
 * ```ts
 * import { crc32 } from "./_zip_internal.ts";
 * crc32(new TextEncoder().encode("123456789")); // 0xcbf43926
 * ```
 */
export function crc32(data: Uint8Array, seed = 0): number {
  const t = CRC_TABLES;
  let c = ~seed >>> 0;
  let i = 0;
  const n = data.length;
  const end8 = n - (n % 8);
  for (; i < end8; i += 8) {
    const a = (data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)) ^ c;
    const b = data[i + 4] | (data[i + 5] << 8) | (data[i + 6] << 16) | (data[i + 7] << 24);
    c = t[1792 + (a & 0xff)] ^ t[1536 + ((a >>> 8) & 0xff)] ^
      t[1280 + ((a >>> 16) & 0xff)] ^ t[1024 + (a >>> 24)] ^
      t[768 + (b & 0xff)] ^ t[512 + ((b >>> 8) & 0xff)] ^
      t[256 + ((b >>> 16) & 0xff)] ^ t[b >>> 24];
  }
  for (; i < n; i++) c = t[(c ^ data[i]) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
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
// Bounded inflation.

/** Compressed bytes given to the inflater at a time: at most ~8.3 MB of output per step. */
const INFLATE_STEP = 8192;

/**
 * Inflates raw DEFLATE data a slice at a time and stops as soon as `limit`
 * bytes of output are reached (`stop: true`) or more than `limit` would be
 * (`over: true`), so a stream that inflates past what was declared costs no
 * more than `limit` bytes of memory and the time to produce them. `out` (at
 * least `limit` bytes, default a new buffer) receives the data.
 */
function inflateSteps(
  raw: Uint8Array,
  limit: number,
  stopAtLimit: boolean,
  out: Uint8Array = new Uint8Array(limit),
): { data: Uint8Array; over: boolean; ended: boolean } {
  let n = 0, over = false, ended = false;
  const inf = new Inflate((chunk, final) => {
    if (over) return;
    const room = limit - n;
    if (chunk.length > room) {
      out.set(chunk.subarray(0, room), n);
      n = limit;
      over = true;
      return;
    }
    out.set(chunk, n);
    n += chunk.length;
    if (final) ended = true;
  });
  for (let i = 0; i < raw.length && !over && !(stopAtLimit && n >= limit); i += INFLATE_STEP) {
    const end = Math.min(raw.length, i + INFLATE_STEP);
    inf.push(raw.subarray(i, end), end === raw.length);
  }
  return { data: out.subarray(0, n), over, ended };
}

/**
 * The first `n` bytes of what raw DEFLATE data inflates to (fewer when it
 * inflates to less), without inflating much past them: the way a `.npy`
 * header is read before its entry is trusted with memory.
 *
 * @throws {Error} on corrupt deflate data.
 */
export function inflateRawPrefix(raw: Uint8Array, n: number): Uint8Array {
  return inflateSteps(raw, n, true).data;
}

/**
 * Inflates raw DEFLATE data that must give exactly `size` bytes, stopping at
 * `size`: returns the bytes, or why not (`inflates past` the declared size,
 * or to fewer bytes). `out` (at least `size` bytes) receives the data.
 *
 * @throws {Error} on corrupt deflate data.
 */
export function inflateRawBounded(
  raw: Uint8Array,
  size: number,
  out?: Uint8Array,
): Uint8Array | string {
  const r = inflateSteps(raw, size, false, out);
  if (r.over) return `inflates past the declared ${size} bytes (stopped there)`;
  if (r.data.length !== size) {
    return `inflated to ${r.data.length} bytes but the directory declares ${size}`;
  }
  return r.data;
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
