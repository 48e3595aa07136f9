/**
 * Zip archives read from a file by offsets ({@linkcode openZipIndex}): the
 * central directory is read from the tail and validated by `io/zip.ts`, and
 * each entry is read on demand (one read for its local header and data),
 * inflated and CRC-checked with the runtime's native zlib. Free of Effect.
 *
 * @module
 */
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
import {
  crc32,
  escapeName,
  inflateRawAtMost,
  inflateRawBounded,
  inflateRawPrefix,
} from "./_zip_internal.ts";

/**
 * CRC-32 of `data` in the runtime's zlib (about 20 times faster than a
 * JavaScript table version).
 *
 * @example
 * ```ts
 * import { nativeCrc32 } from "./zip_file.ts";
 * if (nativeCrc32(new TextEncoder().encode("123456789")) !== 0xcbf43926) throw new Error("crc");
 * ```
 */
export function nativeCrc32(data: Uint8Array): number {
  return crc32(data);
}

/**
 * The runtime's zlib for the dump readers (validate, merge, search): the
 * readers' default since `io/_zip_internal.ts` inflates with it too, kept as
 * a named codec for the callers that pass one. An entry that inflates past
 * its declared size stops there (zlib's `maxOutputLength`); a prefix read
 * inflates at most 64 KiB past the prefix.
 */
export const NATIVE: ZipCodec = {
  inflateRaw: inflateRawBounded,
  crc32,
  inflatePrefix: inflateRawPrefix,
};

/**
 * Turns stored or deflated entry data into the entry's bytes, checking the
 * size and the CRC-32 declared by the central directory; returns the reason
 * when they do not hold. With `reuse`, deflated data is inflated into the
 * buffer it lends (at least the length it is asked for) and the result views
 * that buffer.
 */
export function inflateChecked(
  raw: Uint8Array,
  method: 0 | 8,
  size: number,
  crc: number,
  reuse?: (length: number) => Uint8Array,
): Uint8Array | string {
  let out: Uint8Array;
  if (method === 0) out = raw;
  else {
    try {
      out = inflateRawAtMost(raw, size, reuse);
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

/** What a CRC-32 mismatch says: the directory's `want` and the data's `got`, in hex. */
export function crcMessage(want: number, got: number): string {
  const hex = (v: number) => v.toString(16).padStart(8, "0");
  return `CRC-32 mismatch (directory says ${hex(want)}, data has ${hex(got)})`;
}

/** An entry of the central directory, where its local header starts and its room ends. */
export interface IndexedEntry {
  /** The entry's name, decoded. */
  readonly name: string;
  /** The name's bytes as stored (the local header must repeat them). */
  readonly nameBytes: Uint8Array;
  /** Compression: 0 stored, 8 deflated. */
  readonly method: 0 | 8;
  /** The CRC-32 of the uncompressed data, as the directory declares it. */
  readonly crc32: number;
  /** Bytes of the stored data. */
  readonly compressedSize: number;
  /** Bytes of the data once inflated. */
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
  /** The entries by name. */
  readonly entries: Map<string, IndexedEntry>;
  /** The archive's path, for messages. */
  readonly path: string;

  /**
   * The archive at `path`, open as `file`, with its checked entries
   * ({@linkcode openZipIndex} builds them).
   *
   * @param path the archive's path, for messages
   * @param file the archive, open for reading (closed by {@linkcode ZipFileIndex.close})
   * @param entries the central directory's entries by name
   */
  constructor(path: string, file: Deno.FsFile, entries: Map<string, IndexedEntry>) {
    this.path = path;
    this.#file = file;
    this.entries = entries;
  }

  /** Closes the archive's file (again is harmless). */
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

/**
 * The end records of the zip archive open as `file` (`readZipEnd` of
 * `io/zip.ts`), from its last 64 KiB and, for ZIP64, the records they point
 * to: a {@linkcode ZipError} where there are none, or none that hold
 * together; an {@linkcode InputError} where the file ends before a record
 * does. Nothing else of the file is read.
 *
 * @example
 * ```ts
 * import { zipEndOf } from "./zip_file.ts";
 * const path = Deno.makeTempFileSync();
 * Deno.writeFileSync(path, new Uint8Array([0x50, 0x4b, 5, 6, ...new Array(18).fill(0)]));
 * const f = Deno.openSync(path);
 * try {
 *   if (zipEndOf(path, f).count !== 0) throw new Error("an empty archive");
 * } finally {
 *   f.close();
 * }
 * Deno.removeSync(path);
 * ```
 */
export function zipEndOf(path: string, file: Deno.FsFile): ZipEnd {
  const size = file.statSync().size;
  const tailLen = Math.min(size, 22 + 0xffff + 20);
  const tail = readAt(file, size - tailLen, new Uint8Array(tailLen), path);
  return readZipEnd(tail, size, (at, n) => readAt(file, at, new Uint8Array(n), path), path);
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
  let end: ZipEnd, central: CentralEntry[];
  try {
    end = zipEndOf(path, file);
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
