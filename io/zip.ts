/**
 * A minimal but careful ZIP container layer (for `.npz` files and zipped dump
 * folders): entries are inflated and CRC-checked by the runtime's zlib
 * (`node:zlib`), and deflated for writing by `fflate`.
 *
 * Reading trusts only the central directory (never the local headers' sizes,
 * which `numpy.savez` fills with ZIP64 placeholders), understands ZIP64 extra
 * fields and the ZIP64 end-of-central-directory record, and refuses before
 * allocating anything:
 *
 * - entry names that could escape a folder (`..` segments, absolute paths,
 *   drive letters, backslashes, NUL bytes) and duplicate names;
 * - encrypted entries and compression methods other than stored (0) and
 *   deflate (8);
 * - uncompressed sizes above {@linkcode ZipLimits.maxEntrySize} (default
 *   4 GiB), deflate ratios above {@linkcode ZipLimits.maxRatio} (default 1032,
 *   DEFLATE's own maximum), stored entries whose two sizes differ;
 * - entries whose data lies outside the archive or overlaps another entry;
 * - CRC-32 mismatches (checked on every extraction);
 * - deflated entries that inflate past their declared size: inflation stops
 *   there (zlib's `maxOutputLength`: a stream cannot make the reader allocate
 *   more than the directory declared plus one output chunk, 64 bytes up to
 *   64 MiB, 16 KiB above, nor spin on the rest); a header read inflates at
 *   most 64 KiB past the header.
 *
 * Writing produces stored or deflated entries with sizes and CRCs in the local
 * headers (no data descriptors), a fixed 1980-01-01 timestamp (reproducible
 * bytes) and ZIP64 records only where needed.
 *
 * @example
 * ```ts
 * import { encodeZip, unzip } from "./zip.ts";
 * const bytes = encodeZip([{ name: "a.txt", data: new TextEncoder().encode("hi") }], { compressed: true });
 * const files = unzip(bytes, "mem.zip");
 * new TextDecoder().decode(files.get("a.txt")); // "hi"
 * ```
 *
 * @module
 */
import * as Data from "effect/Data";
import {
  crc32,
  decodeName,
  encodeZipRaw,
  escapeName,
  inflateRawBounded,
  inflateRawPrefix,
  u16,
  u32,
  u64,
} from "./_zip_internal.ts";

/**
 * A ZIP archive that cannot be read or written safely. `message` is one line:
 * `file: entry: reason` (the entry part only when an entry is concerned).
 *
 * @example
 * ```ts
 * import { ZipError, unzip } from "./zip.ts";
 * try {
 *   unzip(new Uint8Array(10), "x.zip");
 * } catch (e) {
 *   if (e instanceof ZipError) console.log(e.message); // "x.zip: not a ZIP archive ..."
 * }
 * ```
 */
export class ZipError extends Data.TaggedError("ZipError")<{
  /** The archive's name (path) as given by the caller. */
  readonly file: string;
  /** The entry concerned, if any (control characters escaped). */
  readonly entry?: string;
  /** What is wrong, without the file and entry. */
  readonly reason: string;
  /** One line: `file: entry: reason`. */
  readonly message: string;
}> {
  /** Builds the error and its one-line message. */
  static of(file: string, entry: string | undefined, reason: string): ZipError {
    const message = entry === undefined ? `${file}: ${reason}` : `${file}: ${entry}: ${reason}`;
    return entry === undefined
      ? new ZipError({ file, reason, message })
      : new ZipError({ file, entry, reason, message });
  }

  /** The one-line message. */
  override toString(): string {
    return this.message;
  }
}

/** Bounds applied while reading an archive (all sizes in bytes). */
export interface ZipLimits {
  /** Largest uncompressed size of one entry. Default 4 GiB. */
  readonly maxEntrySize?: number;
  /** Largest sum of uncompressed sizes for {@linkcode unzip}. Default 4 GiB. */
  readonly maxTotalSize?: number;
  /**
   * Largest uncompressed/compressed ratio of a deflated entry (plus 1 KiB of
   * slack for tiny entries). Default 1032, the most DEFLATE can reach.
   */
  readonly maxRatio?: number;
}

/**
 * Another implementation of DEFLATE decoding and CRC-32 for the readers
 * (default: the runtime's zlib, bounded as in the module notes):
 * `inflateRaw` returns the entry's bytes (throwing on corrupt data; it must
 * stop at `size` bytes and throw, or return why, when the data inflates past
 * them), `crc32` the unsigned CRC-32.
 */
export interface ZipCodec {
  /** Inflates raw DEFLATE data expected to give `size` bytes (or says why it does not). */
  inflateRaw(raw: Uint8Array, size: number): Uint8Array | string;
  /** The CRC-32 of `data` (unsigned). */
  crc32(data: Uint8Array): number;
  /**
   * The first `n` bytes raw DEFLATE data inflates to (fewer when it gives
   * fewer), inflating little past them (default: zlib on slices of the data,
   * at most 64 KiB of output past them).
   */
  inflatePrefix?(raw: Uint8Array, n: number): Uint8Array;
}

/** Default for {@linkcode ZipLimits.maxEntrySize} and `maxTotalSize`: 4 GiB. */
export const DEFAULT_MAX_ENTRY_SIZE: number = 4 * 1024 ** 3;
/** Default for {@linkcode ZipLimits.maxRatio}: DEFLATE's maximum ratio. */
export const DEFAULT_MAX_RATIO = 1032;

/** One entry of the central directory, validated. */
export interface ZipEntry {
  /** Entry name (UTF-8 or CP437 decoded), checked with {@linkcode checkEntryName}. */
  readonly name: string;
  /** 0 = stored, 8 = deflate. */
  readonly method: 0 | 8;
  /** General-purpose flags. */
  readonly flags: number;
  /** CRC-32 of the uncompressed data, from the central directory. */
  readonly crc32: number;
  /** Size of the data as stored in the archive. */
  readonly compressedSize: number;
  /** Size once extracted. */
  readonly uncompressedSize: number;
  /** Offset of the local header in the archive bytes. */
  readonly localHeaderOffset: number;
  /** Offset of the (compressed) data in the archive bytes. */
  readonly dataOffset: number;
  /** Whether the name ends with `/` (a folder entry, no data). */
  readonly isDirectory: boolean;
}

/**
 * Why `name` is not a safe archive member name, or `undefined` when it is.
 * Refused: empty names, NUL bytes, backslashes, absolute paths (`/x`), drive
 * letters (`C:x`), and `..` path segments.
 *
 * @example
 * ```ts
 * import { checkEntryName } from "./zip.ts";
 * checkEntryName("arr_0.npy"); // undefined
 * checkEntryName("../x.npy"); // "entry name escapes the archive folder (a '..' segment)"
 * ```
 */
export function checkEntryName(name: string): string | undefined {
  if (name.length === 0) return "empty entry name";
  if (name.includes("\0")) return "entry name contains a NUL byte";
  if (name.includes("\\")) return "entry name contains a backslash";
  if (name.startsWith("/")) return "entry name is an absolute path";
  if (/^[A-Za-z]:/.test(name)) return "entry name starts with a drive letter";
  if (name.split("/").includes("..")) {
    return "entry name escapes the archive folder (a '..' segment)";
  }
  return undefined;
}

/**
 * Whether `bytes` look like a ZIP archive (start with a local header or an
 * empty archive's end record).
 *
 * @example
 * ```ts
 * import { isZip } from "./zip.ts";
 * isZip(new Uint8Array([0x50, 0x4b, 3, 4])); // true
 * ```
 */
export function isZip(bytes: Uint8Array): boolean {
  if (bytes.length < 4) return false;
  const sig = u32(bytes, 0);
  return sig === 0x04034b50 || sig === 0x06054b50;
}

/** Where an archive's central directory lies (from its end records). */
export interface ZipEnd {
  /** Entries. */
  readonly count: number;
  /** Bytes of the central directory. */
  readonly cdSize: number;
  /** Where the end records say the central directory starts. */
  readonly cdOffset: number;
  /** Where it does start in these bytes (`cdOffset + shift`). */
  readonly cdStart: number;
  /** Bytes before the archive (a self-extracting stub, say): add to recorded offsets. */
  readonly shift: number;
}

/**
 * Finds and checks the end records of an archive of `size` bytes: `tail`
 * is its last bytes (at least the last 22 + 65,535, or all of it), and
 * `read(at, length)` reads any other part (the ZIP64 record may lie before
 * the tail). Used on whole archives (`readZipDirectory`) and on files read
 * piecewise (`io/dump/reader_sync.ts`).
 *
 * @throws {ZipError} when there is no end record or it is corrupt.
 */
export function readZipEnd(
  tail: Uint8Array,
  size: number,
  read: (at: number, length: number) => Uint8Array,
  file: string,
): ZipEnd {
  const fail = (reason: string) => ZipError.of(file, undefined, reason);
  const base = size - tail.length;
  let pos = -1;
  for (let p = tail.length - 22; p >= 0 && base + p >= size - 22 - 0xffff; p--) {
    if (
      tail[p] === 0x50 && tail[p + 1] === 0x4b && tail[p + 2] === 5 && tail[p + 3] === 6 &&
      p + 22 + u16(tail, p + 20) <= tail.length
    ) {
      pos = p;
      break;
    }
  }
  if (pos < 0) {
    throw fail("not a ZIP archive (no end-of-central-directory record)");
  }
  const disk = u16(tail, pos + 4);
  const cdDisk = u16(tail, pos + 6);
  let countDisk = u16(tail, pos + 8);
  let count = u16(tail, pos + 10);
  let cdSize = u32(tail, pos + 12);
  let cdOffset = u32(tail, pos + 16);
  let end = base + pos; // where the central directory (or ZIP64 record) must end
  const loc = pos - 20;
  if (loc >= 0 && u32(tail, loc) === 0x07064b50) {
    if (u32(tail, loc + 4) !== 0 || u32(tail, loc + 16) > 1) {
      throw fail("multi-volume ZIP archives are not supported");
    }
    const declared = u64(tail, loc + 8);
    let rec: Uint8Array | undefined;
    let recAt = -1;
    for (const cand of [declared, base + loc - 56]) {
      if (cand === undefined || cand < 0 || cand + 56 > base + loc) continue;
      const b = read(cand, 56);
      if (b.length === 56 && u32(b, 0) === 0x06064b50) {
        rec = b;
        recAt = cand;
        break;
      }
    }
    if (rec === undefined) {
      throw fail("ZIP64 end-of-central-directory record is missing or corrupt");
    }
    if (u32(rec, 16) !== 0 || u32(rec, 20) !== 0) {
      throw fail("multi-volume ZIP archives are not supported");
    }
    const c64d = u64(rec, 24);
    const c64 = u64(rec, 32);
    const s64 = u64(rec, 40);
    const o64 = u64(rec, 48);
    if (c64d === undefined || c64 === undefined || s64 === undefined || o64 === undefined) {
      throw fail("ZIP64 end-of-central-directory record has impossible sizes");
    }
    countDisk = c64d;
    count = c64;
    cdSize = s64;
    cdOffset = o64;
    end = recAt;
  } else {
    if (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
      throw fail("ZIP64 archive without a ZIP64 end-of-central-directory locator");
    }
    if (disk !== 0 || cdDisk !== 0) throw fail("multi-volume ZIP archives are not supported");
  }
  if (countDisk !== count) throw fail("multi-volume ZIP archives are not supported");
  const shift = end - cdSize - cdOffset;
  if (shift < 0 || cdSize > end) {
    throw fail(
      `central directory (offset ${cdOffset}, ${cdSize} bytes) lies outside the archive (${size} bytes)`,
    );
  }
  if (count > Math.floor(cdSize / 46)) {
    throw fail(
      `end record declares ${count} entries but the central directory has ${cdSize} bytes`,
    );
  }
  return { count, cdSize, cdOffset, cdStart: cdOffset + shift, shift };
}

/** An entry as the central directory describes it (see {@linkcode readCentralDirectory}). */
export interface CentralEntry {
  /** Entry name (UTF-8 or CP437 decoded), checked with {@linkcode checkEntryName}. */
  readonly name: string;
  /** The name's bytes. */
  readonly nameBytes: Uint8Array;
  /** General-purpose flags. */
  readonly flags: number;
  /** 0 = stored, 8 = deflate. */
  readonly method: 0 | 8;
  /** CRC-32 of the uncompressed data. */
  readonly crc32: number;
  /** Bytes of (compressed) data. */
  readonly compressedSize: number;
  /** Bytes once inflated. */
  readonly uncompressedSize: number;
  /** Offset of the local header as recorded (add {@linkcode ZipEnd.shift}). */
  readonly recordedOffset: number;
}

/**
 * Reads the `count` entries of central directory `cd` with every rule that
 * needs no other part of the archive: ZIP64 extra fields, safe and unique
 * names, one volume, no encryption, stored or deflate, the size and ratio
 * limits.
 *
 * @throws {ZipError} naming the entry that breaks a rule.
 */
export function readCentralDirectory(
  cd: Uint8Array,
  count: number,
  file: string,
  limits: ZipLimits = {},
): CentralEntry[] {
  const maxEntry = limits.maxEntrySize ?? DEFAULT_MAX_ENTRY_SIZE;
  const maxRatio = limits.maxRatio ?? DEFAULT_MAX_RATIO;
  const entries: CentralEntry[] = [];
  const seen = new Set<string>();
  let o = 0;
  for (let i = 0; i < count; i++) {
    const at = `central directory entry ${i}`;
    if (o + 46 > cd.length || u32(cd, o) !== 0x02014b50) {
      throw ZipError.of(file, undefined, `${at} is corrupt (bad signature or truncated)`);
    }
    const flags = u16(cd, o + 8);
    const method = u16(cd, o + 10);
    const crc = u32(cd, o + 16);
    let csize = u32(cd, o + 20);
    let usize = u32(cd, o + 24);
    const nameLen = u16(cd, o + 28);
    const extraLen = u16(cd, o + 30);
    const commentLen = u16(cd, o + 32);
    let diskStart = u16(cd, o + 34);
    let lho = u32(cd, o + 42);
    const next = o + 46 + nameLen + extraLen + commentLen;
    if (next > cd.length) {
      throw ZipError.of(file, undefined, `${at} runs past the central directory`);
    }
    const nameBytes = cd.subarray(o + 46, o + 46 + nameLen);
    const name = decodeName(nameBytes, (flags & 0x800) !== 0);
    const shown = escapeName(name);
    const fail = (reason: string) => ZipError.of(file, shown, reason);
    // ZIP64 extra field: values appear only for fields set to their maximum.
    if (
      usize === 0xffffffff || csize === 0xffffffff || lho === 0xffffffff || diskStart === 0xffff
    ) {
      let e = o + 46 + nameLen;
      const eEnd = e + extraLen;
      let found = false;
      while (e + 4 <= eEnd) {
        const id = u16(cd, e);
        const size = u16(cd, e + 2);
        if (e + 4 + size > eEnd) break;
        if (id === 0x0001) {
          let f = e + 4;
          const fEnd = f + size;
          const take = (): number => {
            if (f + 8 > fEnd) throw fail("ZIP64 extra field is too short");
            const v = u64(cd, f);
            f += 8;
            if (v === undefined) throw fail("ZIP64 extra field holds an impossible size");
            return v;
          };
          if (usize === 0xffffffff) usize = take();
          if (csize === 0xffffffff) csize = take();
          if (lho === 0xffffffff) lho = take();
          if (diskStart === 0xffff) {
            if (f + 4 > fEnd) throw fail("ZIP64 extra field is too short");
            diskStart = u32(cd, f);
          }
          found = true;
          break;
        }
        e += 4 + size;
      }
      if (!found) throw fail("sizes need a ZIP64 extra field, which is missing");
    }
    const nameProblem = checkEntryName(name);
    if (nameProblem !== undefined) throw fail(nameProblem);
    if (seen.has(name)) throw fail("duplicate entry name");
    seen.add(name);
    if (diskStart !== 0) throw fail("multi-volume ZIP archives are not supported");
    if (flags & 0x41) throw fail("encrypted entries are not supported");
    if (method !== 0 && method !== 8) {
      throw fail(`unsupported compression method ${method} (only stored and deflate)`);
    }
    if (usize > maxEntry) {
      throw fail(`declares ${usize} bytes uncompressed, above the limit of ${maxEntry}`);
    }
    if (method === 0 && usize !== csize) {
      throw fail(`stored entry declares ${csize} bytes stored but ${usize} bytes uncompressed`);
    }
    if (method === 8 && usize > csize * maxRatio + 1024) {
      throw fail(
        `declares ${usize} bytes uncompressed from ${csize} compressed, more than ${maxRatio}x (a zip bomb?)`,
      );
    }
    entries.push({
      name,
      nameBytes,
      flags,
      method,
      crc32: crc,
      compressedSize: csize,
      uncompressedSize: usize,
      recordedOffset: lho,
    });
    o = next;
  }
  return entries;
}

/**
 * Reads and validates the central directory of `bytes` (named `file` in
 * errors). Every entry's local header is checked too (signature, same name)
 * and data ranges must lie inside the archive without overlapping.
 *
 * @throws {ZipError} when the archive is not a ZIP, is corrupt, or an entry
 *   breaks a rule or a limit.
 *
 * @example
 * ```ts
 * import { encodeZip, readZipDirectory } from "./zip.ts";
 * const zip = encodeZip([{ name: "a.npy", data: new Uint8Array(3) }]);
 * readZipDirectory(zip, "a.zip").map((e) => e.name); // ["a.npy"]
 * ```
 */
export function readZipDirectory(
  bytes: Uint8Array,
  file: string,
  limits: ZipLimits = {},
): ZipEntry[] {
  const end = readZipEnd(
    bytes.subarray(Math.max(0, bytes.length - 22 - 0xffff - 20)),
    bytes.length,
    (at, length) => bytes.subarray(at, at + length),
    file,
  );
  const cd = bytes.subarray(end.cdStart, end.cdStart + end.cdSize);
  const entries: ZipEntry[] = [];
  for (const c of readCentralDirectory(cd, end.count, file, limits)) {
    const fail = (reason: string) => ZipError.of(file, escapeName(c.name), reason);
    const l = c.recordedOffset + end.shift;
    const dataOffset = localHeaderData(bytes, l, c.nameBytes, c.recordedOffset);
    if (typeof dataOffset === "string") throw fail(dataOffset);
    if (dataOffset + c.compressedSize > end.cdStart) {
      throw fail(
        `data (${c.compressedSize} bytes at offset ${dataOffset}) runs past the start of the central directory (truncated archive?)`,
      );
    }
    entries.push({
      name: c.name,
      method: c.method,
      flags: c.flags,
      crc32: c.crc32,
      compressedSize: c.compressedSize,
      uncompressedSize: c.uncompressedSize,
      localHeaderOffset: l,
      dataOffset,
      isDirectory: c.name.endsWith("/"),
    });
  }
  // No two entries may share bytes (overlapping entries are a zip-bomb trick).
  const order = entries.map((_, i) => i).sort((a, b) =>
    entries[a].localHeaderOffset - entries[b].localHeaderOffset
  );
  for (let k = 1; k < order.length; k++) {
    const prev = entries[order[k - 1]];
    const cur = entries[order[k]];
    if (cur.localHeaderOffset < prev.dataOffset + prev.compressedSize) {
      throw ZipError.of(file, escapeName(cur.name), `overlaps entry '${escapeName(prev.name)}'`);
    }
  }
  return entries;
}

/**
 * Checks the local header at `at` in `bytes` (its signature, and the same
 * name as the central directory's `nameBytes`; its sizes are ignored) and
 * returns where its data starts in `bytes`, or why it cannot be read
 * (`shownOffset`: the offset the reason gives).
 *
 * @example
 * ```ts
 * import { encodeZip, localHeaderData } from "./zip.ts";
 * const zip = encodeZip([{ name: "a", data: new Uint8Array([7]) }]);
 * const start = localHeaderData(zip, 0, new TextEncoder().encode("a"), 0);
 * if (start !== 31 || zip[start] !== 7) throw new Error(`data at ${start}`);
 * ```
 */
export function localHeaderData(
  bytes: Uint8Array,
  at: number,
  nameBytes: Uint8Array,
  shownOffset: number,
): number | string {
  if (at + 30 > bytes.length || u32(bytes, at) !== 0x04034b50) {
    return `no local header at offset ${shownOffset}`;
  }
  const lName = u16(bytes, at + 26), lExtra = u16(bytes, at + 28);
  if (lName !== nameBytes.length || at + 30 + lName > bytes.length) {
    return "local header name differs from the central directory";
  }
  for (let i = 0; i < lName; i++) {
    if (bytes[at + 30 + i] !== nameBytes[i]) {
      return "local header name differs from the central directory";
    }
  }
  return at + 30 + lName + lExtra;
}

/**
 * Extracts one entry (from {@linkcode readZipDirectory}) and checks its size
 * and CRC-32. Stored entries are returned as a view into `bytes` (no copy);
 * deflated ones are inflated into a buffer of exactly the declared size.
 *
 * @throws {ZipError} on corrupt deflate data, a size or a CRC mismatch.
 *
 * @example
 * ```ts
 * import { encodeZip, extractZipEntry, readZipDirectory } from "./zip.ts";
 * const zip = encodeZip([{ name: "a", data: new Uint8Array([1, 2]) }], { compressed: true });
 * const [entry] = readZipDirectory(zip, "a.zip");
 * extractZipEntry(zip, entry, "a.zip"); // Uint8Array [1, 2]
 * ```
 */
export function extractZipEntry(
  bytes: Uint8Array,
  entry: ZipEntry,
  file: string,
  codec?: ZipCodec,
): Uint8Array {
  const shown = escapeName(entry.name);
  const raw = bytes.subarray(entry.dataOffset, entry.dataOffset + entry.compressedSize);
  let out: Uint8Array;
  if (entry.method === 0) {
    out = raw;
  } else {
    let got: Uint8Array | string;
    try {
      got = codec
        ? codec.inflateRaw(raw, entry.uncompressedSize)
        : inflateRawBounded(raw, entry.uncompressedSize);
    } catch (e) {
      throw ZipError.of(
        file,
        shown,
        `corrupt deflate data (${e instanceof Error ? e.message : String(e)})`,
      );
    }
    if (typeof got === "string") throw ZipError.of(file, shown, got);
    out = got;
    if (out.length !== entry.uncompressedSize) {
      throw ZipError.of(
        file,
        shown,
        `inflated to ${out.length} bytes but the directory declares ${entry.uncompressedSize}`,
      );
    }
  }
  const crc = codec ? codec.crc32(out) : crc32(out);
  if (crc !== entry.crc32) {
    throw ZipError.of(
      file,
      shown,
      `CRC-32 mismatch (directory says ${hex8(entry.crc32)}, data has ${hex8(crc)})`,
    );
  }
  return out;
}

/**
 * The first `n` bytes of an entry's data (fewer when it is shorter), without
 * extracting the rest: a deflated entry is inflated only that far. Not
 * CRC-checked (the whole entry is, on extraction).
 *
 * @throws {ZipError} on corrupt deflate data.
 *
 * @example
 * ```ts
 * import { encodeZip, readZipDirectory, zipEntryPrefix } from "./zip.ts";
 * const zip = encodeZip([{ name: "a", data: new Uint8Array(1000).fill(7) }], { compressed: true });
 * const [entry] = readZipDirectory(zip, "a.zip");
 * if (zipEntryPrefix(zip, entry, "a.zip", 3).join() !== "7,7,7") throw new Error("prefix");
 * ```
 */
export function zipEntryPrefix(
  bytes: Uint8Array,
  entry: ZipEntry,
  file: string,
  n: number,
  codec?: ZipCodec,
): Uint8Array {
  const raw = bytes.subarray(entry.dataOffset, entry.dataOffset + entry.compressedSize);
  const want = Math.min(n, entry.uncompressedSize);
  if (entry.method === 0) return raw.subarray(0, want);
  try {
    return codec?.inflatePrefix ? codec.inflatePrefix(raw, want) : inflateRawPrefix(raw, want);
  } catch (e) {
    throw ZipError.of(
      file,
      escapeName(entry.name),
      `corrupt deflate data (${e instanceof Error ? e.message : String(e)})`,
    );
  }
}

function hex8(n: number): string {
  return n.toString(16).padStart(8, "0");
}

/**
 * Extracts every file entry (folders are skipped) into a `Map` from name to
 * bytes, in central-directory order, after checking the total declared size
 * against {@linkcode ZipLimits.maxTotalSize}.
 *
 * @throws {ZipError} as {@linkcode readZipDirectory} and {@linkcode extractZipEntry}.
 *
 * @example
 * ```ts
 * import { encodeZip, unzip } from "./zip.ts";
 * const zip = encodeZip([{ name: "x/a.bin", data: new Uint8Array([7]) }]);
 * unzip(zip, "x.zip").get("x/a.bin"); // Uint8Array [7]
 * ```
 */
export function unzip(
  bytes: Uint8Array,
  file: string,
  limits: ZipLimits = {},
): Map<string, Uint8Array> {
  const entries = readZipDirectory(bytes, file, limits);
  const maxTotal = limits.maxTotalSize ?? DEFAULT_MAX_ENTRY_SIZE;
  let total = 0;
  for (const e of entries) total += e.uncompressedSize;
  if (total > maxTotal) {
    throw ZipError.of(
      file,
      undefined,
      `entries declare ${total} bytes uncompressed in all, above the limit of ${maxTotal}`,
    );
  }
  const out = new Map<string, Uint8Array>();
  for (const e of entries) {
    if (!e.isDirectory) out.set(e.name, extractZipEntry(bytes, e, file));
  }
  return out;
}

/** One file to write with {@linkcode encodeZip}. */
export interface ZipInput {
  /** Entry name; must pass {@linkcode checkEntryName}. */
  readonly name: string;
  /** Uncompressed contents. */
  readonly data: Uint8Array;
  /** Overrides {@linkcode ZipWriteOptions.compressed} for this entry. */
  readonly compress?: boolean;
}

/** Options of {@linkcode encodeZip}. */
export interface ZipWriteOptions {
  /** Deflate entries (default false: stored, like `numpy.savez`). */
  readonly compressed?: boolean;
  /** Deflate level 0-9 (default 6, as Python's zipfile). */
  readonly level?: number;
  /** Always write ZIP64 fields and end records (default: only when needed). */
  readonly forceZip64?: boolean;
  /** Name of the archive, for error messages (default `<memory>`). */
  readonly file?: string;
}

/**
 * Builds a ZIP archive in memory. Names are checked with
 * {@linkcode checkEntryName} and must be unique.
 *
 * @throws {ZipError} for an unsafe or duplicate name.
 *
 * @example
 * ```ts
 * import { encodeZip } from "./zip.ts";
 * const zip = encodeZip([{ name: "arr_0.npy", data: new Uint8Array(128) }], { compressed: true });
 * ```
 */
export function encodeZip(entries: readonly ZipInput[], options: ZipWriteOptions = {}): Uint8Array {
  const file = options.file ?? "<memory>";
  const seen = new Set<string>();
  for (const e of entries) {
    const problem = checkEntryName(e.name);
    if (problem !== undefined) throw ZipError.of(file, escapeName(e.name), problem);
    if (seen.has(e.name)) throw ZipError.of(file, escapeName(e.name), "duplicate entry name");
    seen.add(e.name);
  }
  if (
    options.level !== undefined &&
    !(Number.isInteger(options.level) && options.level >= 0 && options.level <= 9)
  ) {
    throw ZipError.of(
      file,
      undefined,
      `deflate level must be an integer 0-9, got ${options.level}`,
    );
  }
  return encodeZipRaw(
    entries.map((e) => ({
      name: e.name,
      data: e.data,
      compress: e.compress ?? options.compressed === true,
    })),
    { level: options.level, forceZip64: options.forceZip64 },
  );
}
