/**
 * Zip archives read from a file by offsets ({@linkcode openZipIndex}): the
 * central directory is read from the tail and validated by `io/zip.ts`, and
 * each entry is read on demand (one read for its local header and data),
 * inflated and CRC-checked with the runtime's native zlib. Free of Effect.
 *
 * @module
 */
import * as zlib from "node:zlib";
import { InputError } from "./errors.ts";
import {
  type CentralEntry,
  localHeaderData,
  readCentralDirectory,
  readZipEnd,
  type ZipCodec,
  type ZipEnd,
  ZipError,
  type ZipLimits,
} from "./zip.ts";
import { escapeName } from "./_zip_internal.ts";

const crc32 = (zlib as unknown as { crc32(data: Uint8Array, value?: number): number }).crc32;

/**
 * CRC-32 of `data` in the runtime's zlib (about 25 times faster than the
 * JavaScript table version).
 *
 * @example
 * ```ts
 * import { nativeCrc32 } from "./zip_file.ts";
 * if (nativeCrc32(new TextEncoder().encode("123456789")) !== 0xcbf43926) throw new Error("crc");
 * ```
 */
export function nativeCrc32(data: Uint8Array): number {
  return crc32(data) >>> 0;
}

/**
 * Raw DEFLATE data inflated by the runtime's zlib into one buffer: the
 * output chunk is a little larger than the declared size, so zlib finds the
 * end of the stream in one pass (no second chunk, no concatenation: about a
 * third faster than the default 16 KiB chunks); more than `size` bytes of
 * output is an error.
 */
function inflateRawNative(raw: Uint8Array, size: number): Uint8Array {
  const maxOutputLength = Math.max(1, size);
  // (Entries of more than 64 MiB grow chunk by chunk: no large allocation up front.)
  return size <= 1 << 26
    ? zlib.inflateRawSync(raw, { maxOutputLength, chunkSize: size + 64 })
    : zlib.inflateRawSync(raw, { maxOutputLength });
}

/** Compressed bytes a native prefix read starts with (doubled until the prefix is out). */
const PREFIX_STEP = 1024;

/**
 * The first `n` bytes of raw DEFLATE data by the runtime's zlib: a slice of
 * the compressed data is inflated with a sync flush (a cut stream is not an
 * error then), doubling the slice until `n` bytes are out or the data ends.
 * A slice of c bytes gives at most 1032·c bytes, so a bomb costs no more.
 */
function inflatePrefixNative(raw: Uint8Array, n: number): Uint8Array {
  for (let c = PREFIX_STEP;; c *= 2) {
    const slice = raw.subarray(0, Math.min(raw.length, c));
    const out = zlib.inflateRawSync(slice, {
      finishFlush: zlib.constants.Z_SYNC_FLUSH,
      maxOutputLength: Math.max(1, 1032 * slice.length + 1024),
    });
    if (out.length >= n || slice.length === raw.length) {
      return new Uint8Array(out.buffer, out.byteOffset, Math.min(n, out.length));
    }
  }
}

/**
 * The runtime's zlib for the dump readers (validate, merge, search):
 * several times faster than fflate and a table CRC, on large entries and on
 * the 1 KB entries of question dumps alike, and for the `.npy` header read
 * before an entry is trusted. An entry that inflates past its declared size
 * stops there (zlib's `maxOutputLength`).
 */
export const NATIVE: ZipCodec = {
  inflateRaw(raw, size) {
    let r: Uint8Array;
    try {
      r = inflateRawNative(raw, size);
    } catch (e) {
      if ((e as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") {
        return `inflates past the declared ${size} bytes (stopped there)`;
      }
      throw e;
    }
    return new Uint8Array(r.buffer, r.byteOffset, r.byteLength);
  },
  crc32: nativeCrc32,
  inflatePrefix: inflatePrefixNative,
};

/**
 * Turns stored or deflated entry data into the entry's bytes, checking the
 * size and the CRC-32 declared by the central directory. Throws the reason.
 */
export function inflateChecked(
  raw: Uint8Array,
  method: 0 | 8,
  size: number,
  crc: number,
): Uint8Array | string {
  let out: Uint8Array;
  if (method === 0) out = raw;
  else {
    try {
      const r = inflateRawNative(raw, size);
      out = new Uint8Array(r.buffer, r.byteOffset, r.byteLength);
    } catch (e) {
      return `corrupt deflate data or more than the declared ${size} bytes (${
        e instanceof Error ? e.message : String(e)
      })`;
    }
    if (out.length !== size) {
      return `inflated to ${out.length} bytes but the directory declares ${size}`;
    }
  }
  const got = nativeCrc32(out);
  return got === crc ? out : crcMessage(crc, got);
}

export function crcMessage(want: number, got: number): string {
  const hex = (v: number) => v.toString(16).padStart(8, "0");
  return `CRC-32 mismatch (directory says ${hex(want)}, data has ${hex(got)})`;
}

export interface IndexedEntry {
  readonly name: string;
  readonly nameBytes: Uint8Array;
  readonly method: 0 | 8;
  readonly crc32: number;
  readonly compressedSize: number;
  readonly uncompressedSize: number;
  /** Absolute offset of the local header in the file. */
  readonly localHeaderOffset: number;
  /** Where the next entry (or the central directory) starts. */
  end: number;
}

function readAt(file: Deno.FsFile, pos: number, out: Uint8Array, path: string): Uint8Array {
  file.seekSync(pos, Deno.SeekMode.Start);
  let off = 0;
  while (off < out.length) {
    const n = file.readSync(out.subarray(off));
    if (n === null || n === 0) {
      throw new InputError({
        file: path,
        where: `byte ${pos + off}`,
        message: "unexpected end of file (truncated zip?)",
      });
    }
    off += n;
  }
  return out;
}

/** A zip archive on disk: its validated central directory, and entries read by offset. */
export class ZipFileIndex {
  readonly #file: Deno.FsFile;
  readonly entries: Map<string, IndexedEntry>;
  readonly path: string;

  constructor(path: string, file: Deno.FsFile, entries: Map<string, IndexedEntry>) {
    this.path = path;
    this.#file = file;
    this.entries = entries;
  }

  close(): void {
    try {
      this.#file.close();
    } catch {
      // already closed
    }
  }

  /** The checked bytes of an entry (read into `into(size)` when given). */
  extract(e: IndexedEntry, into?: (size: number) => Uint8Array): Uint8Array {
    const fail = (reason: string) =>
      new InputError({ file: this.path, where: `entry "${escapeName(e.name)}"`, message: reason });
    // One read covers the local header and the data in the usual case.
    const want = Math.min(
      e.end - e.localHeaderOffset,
      30 + e.nameBytes.length + 512 + e.compressedSize,
    );
    const buf = readAt(
      this.#file,
      e.localHeaderOffset,
      into ? into(want) : new Uint8Array(want),
      this.path,
    );
    const dataStart = localHeaderData(buf, 0, e.nameBytes, e.localHeaderOffset);
    if (typeof dataStart === "string") throw fail(dataStart);
    if (e.localHeaderOffset + dataStart + e.compressedSize > e.end) {
      throw fail(
        `data (${e.compressedSize} bytes at offset ${
          e.localHeaderOffset + dataStart
        }) overlaps the next entry or the central directory`,
      );
    }
    const raw = dataStart + e.compressedSize <= buf.length
      ? buf.subarray(dataStart, dataStart + e.compressedSize)
      : readAt(
        this.#file,
        e.localHeaderOffset + dataStart,
        new Uint8Array(e.compressedSize),
        this.path,
      );
    const out = inflateChecked(raw, e.method, e.uncompressedSize, e.crc32);
    if (typeof out === "string") throw fail(out);
    return out;
  }
}

/** Opens a zip file and validates its central directory (read from the tail). */
export function openZipIndex(path: string, limits: ZipLimits): ZipFileIndex {
  const file = Deno.openSync(path, { read: true });
  try {
    return new ZipFileIndex(path, file, readIndex(path, file, limits));
  } catch (e) {
    file.close();
    throw e;
  }
}

function readIndex(
  path: string,
  file: Deno.FsFile,
  limits: ZipLimits,
): Map<string, IndexedEntry> {
  const fail = (reason: string, entry?: string) =>
    new InputError({
      file: path,
      where: entry === undefined ? "" : `entry "${entry}"`,
      message: reason,
    });
  const size = file.statSync().size;
  const tailLen = Math.min(size, 22 + 0xffff + 20);
  let end: ZipEnd, central: CentralEntry[];
  try {
    const tail = readAt(file, size - tailLen, new Uint8Array(tailLen), path);
    end = readZipEnd(tail, size, (at, n) => readAt(file, at, new Uint8Array(n), path), path);
    const cd = readAt(file, end.cdStart, new Uint8Array(end.cdSize), path);
    central = readCentralDirectory(cd, end.count, path, limits);
  } catch (e) {
    if (e instanceof ZipError) throw fail(e.reason, e.entry);
    throw e;
  }
  const list: IndexedEntry[] = central.map((c) => ({
    name: c.name,
    nameBytes: c.nameBytes,
    method: c.method,
    crc32: c.crc32,
    compressedSize: c.compressedSize,
    uncompressedSize: c.uncompressedSize,
    localHeaderOffset: c.recordedOffset + end.shift,
    end: end.cdStart,
  }));
  // Entries may not overlap: each one must end before the next one (by offset) begins.
  const sorted = [...list].sort((a, b) => a.localHeaderOffset - b.localHeaderOffset);
  for (let k = 0; k < sorted.length; k++) {
    const cur = sorted[k];
    cur.end = k + 1 < sorted.length ? sorted[k + 1].localHeaderOffset : end.cdStart;
    if (cur.localHeaderOffset + 30 + cur.nameBytes.length + cur.compressedSize > cur.end) {
      throw fail(
        k + 1 < sorted.length
          ? `overlaps entry '${escapeName(sorted[k + 1].name)}'`
          : "data runs past the start of the central directory (truncated archive?)",
        escapeName(cur.name),
      );
    }
  }
  return new Map(list.map((e) => [e.name, e]));
}
