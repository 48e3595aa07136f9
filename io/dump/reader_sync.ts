/**
 * The synchronous dump reader ({@linkcode openDumpSync}): a dump folder or a
 * zip of one, each paragraph's matrix and phrases, each question's vector,
 * checked as they are read. `io/dump/reader.ts` adds the Effect API on top.
 * Free of Effect, so merge's workers start quickly.
 *
 * @module
 */
import { dumpStem, unsafeIdReason } from "./names.ts";
import { FileError, InputError } from "../errors.ts";
import {
  indexPhrases,
  MAX_PHRASE_LIST_BYTES,
  type PhraseList,
  phraseListTooLong,
} from "./phrases.ts";
import { ZipError, type ZipLimits } from "../zip.ts";
import { openZipIndex, zipEndOf, type ZipFileIndex } from "../zip_file.ts";
import { osMessage } from "../_zip_internal.ts";
import { openReadSync } from "../fs.ts";
import type { Matrix } from "../matrix.ts";
import { decodeDumpMatrix, type DecodeOptions } from "./decode.ts";
import { fileKind, statRegularFile } from "../regular.ts";

export { type DecodedMatrix, decodeDumpMatrix, type DecodeOptions } from "./decode.ts";
export { nativeCrc32 } from "../zip_file.ts";

// ---------------------------------------------------------------------------
// Types.

/** A file the dump does not have: `missing` is the path as PIQA's merge.py prints it. */
export interface MissingFile {
  /** `<folder>/<name>` (for a zip: the zip's path without `.zip`, then `/<name>`). */
  readonly missing: string;
}

/** A paragraph's phrases and their vectors. */
export interface ContextDump {
  /** N×d phrase matrix (finite values). */
  readonly matrix: Matrix;
  /**
   * The N phrases (validated as a whole, each decoded when asked for; with
   * `reuseBuffers`, ask before the next `readContext` of the same source).
   */
  readonly phrases: PhraseList;
  /**
   * Dense f32 matrices: the sum of squares of each row (computed while
   * checking that every value is finite, so a scorer need not pass over the
   * matrix again). Absent for other matrices.
   */
  readonly rowSquares?: Float64Array;
  /**
   * Set when the reader was opened with {@linkcode DumpOptions.deferFiniteCheck}
   * and the matrix is dense float32: its values are not checked yet. Returns
   * the sum of squares of each row of `data` (the matrix's values, possibly
   * through a newer view of the same memory) or throws the
   * {@linkcode InputError} naming the first NaN or infinite value.
   */
  readonly checkFinite?: (data: Float32Array) => Float64Array;
}

/** Errors of the dump reader: bad input, or a file that cannot be read. */
export type DumpError = InputError | FileError;

/** Options of {@linkcode openDumpSync} and `openDump`. */
export interface DumpOptions extends DecodeOptions {
  /** Matrices are scipy sparse (CSR/CSC); without it they must be dense. */
  readonly sparse?: boolean;
  /** Limits applied to zip archives and to the `.npz` files. */
  readonly limits?: ZipLimits;
  /**
   * Read paragraph files into buffers reused from one read to the next (no
   * allocation per file). A {@linkcode ContextDump}'s matrix may then view
   * that buffer: use it before the next `readContext` of the same source.
   */
  readonly reuseBuffers?: boolean;
  /**
   * With `reuseBuffers`: where paragraph `.npz` files are read, a buffer of
   * at least `size` bytes (a view of the start of a WebAssembly memory, say,
   * where a kernel then finds the matrix without a copy). Called for every
   * read; may return a new view each time.
   */
  readonly contextBuffer?: (size: number) => Uint8Array;
  /**
   * Leave dense float32 paragraph matrices unchecked for NaN and infinite
   * values: the {@linkcode ContextDump} carries `checkFinite` instead, and
   * the caller must run it, or check the values on a pass of its own, before
   * it trusts them (a caller that passes over every value anyway saves a pass).
   */
  readonly deferFiniteCheck?: boolean;
}

// ---------------------------------------------------------------------------
// Helpers.

function joinPath(dir: string, name: string): string {
  return dir === "" ? name : dir.endsWith("/") ? dir + name : `${dir}/${name}`;
}

/** Turns anything thrown by a read into a {@linkcode DumpError}. */
export const asDumpError = (file: string): (e: unknown) => DumpError => (e: unknown): DumpError =>
  e instanceof InputError || e instanceof FileError
    ? e
    : new FileError({ file, message: osMessage(e) });

// ---------------------------------------------------------------------------
// Reusable read buffers.

/**
 * A growable read buffer, or one a `provider` lends (see
 * {@linkcode DumpOptions.contextBuffer}). Files are read at its start
 * (64-byte aligned, when the buffer is); a misaligned matrix is
 * then moved into alignment in place (see `parseNpyCached`).
 */
class Scratch {
  #buf: Uint8Array = new Uint8Array(0);
  readonly #provider?: (size: number) => Uint8Array;

  constructor(provider?: (size: number) => Uint8Array) {
    this.#provider = provider;
  }

  /** A view of `size` bytes, growing the buffer as needed. */
  take(size: number): Uint8Array {
    if (this.#provider) this.#buf = this.#provider(size);
    else if (this.#buf.length < size) {
      this.#buf = new Uint8Array(Math.max(size, this.#buf.length * 2, 1 << 16));
    }
    return this.#buf.subarray(0, size);
  }
}

/**
 * Reads a whole file, into `scratch` when given; `undefined` when it does not
 * exist. `check` sees its path and size before it is read (a paragraph's
 * `.npz` whose end is no ZIP archive's, {@linkcode checkNpzEnd}; a phrase list
 * too long to read, {@linkcode checkPhraseList}); a file larger than
 * `scratch` can grow to is refused by its size. Anything but a regular file
 * (a named pipe, `/dev/zero` or a link to it) is refused by name before it is
 * opened (`io/regular.ts`).
 */
function readFileSyncInto(
  path: string,
  scratch?: Scratch,
  check?: SizeCheck,
): Uint8Array | undefined {
  const st = statRegularFile(path);
  if (st === undefined) return undefined;
  check?.(path, st.size);
  if (scratch === undefined) {
    // One call instead of open, stat, read and close (small files: the calls dominate).
    try {
      return Deno.readFileSync(path);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return undefined;
      throw new FileError({ file: path, message: osMessage(e) });
    }
  }
  let f: Deno.FsFile;
  try {
    f = Deno.openSync(path, { read: true });
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw new FileError({ file: path, message: osMessage(e) });
  }
  try {
    const info = f.statSync();
    if (info.isDirectory) throw new FileError({ file: path, message: "is a directory" });
    const size = info.size;
    let out: Uint8Array;
    try {
      out = scratch ? scratch.take(size) : new Uint8Array(size);
    } catch (e) {
      if (!(e instanceof RangeError)) throw e;
      // The buffer could not grow to the file (merge's scoring memory has a fixed ceiling).
      throw new InputError({
        file: path,
        where: "",
        message: `${size} bytes, more than the memory it is read into can hold`,
      });
    }
    let n = 0;
    while (n < size) {
      const r = f.readSync(out.subarray(n));
      if (r === null || r === 0) break;
      n += r;
    }
    return out.subarray(0, n);
  } catch (e) {
    if (e instanceof FileError || e instanceof InputError) throw e;
    throw new FileError({ file: path, message: osMessage(e) });
  } finally {
    f.close();
  }
}

/** A check of a file by its path and size, before it is read; it throws to refuse the file. */
type SizeCheck = (path: string, size: number) => void;

/** A `.npz` over this size has its ZIP end records checked before it is read whole (1 MiB). */
const NPZ_END_CHECK_BYTES = 1 << 20;

/**
 * Refuses a `.npz` of `size` bytes (over 1 MiB) whose end has no (sound) ZIP
 * end records, reading only its last 64 KiB: a file that is no archive (cut
 * short, or gigabytes of anything) is refused as the decoder would refuse it,
 * without reading it whole first.
 */
function checkNpzEnd(path: string, size: number): void {
  if (size <= NPZ_END_CHECK_BYTES) return;
  const f = openReadSync(path);
  try {
    zipEndOf(path, f);
  } catch (e) {
    if (e instanceof ZipError) {
      throw new InputError({
        file: path,
        where: e.entry ?? "",
        message: `unreadable npz: ${e.reason}`,
      });
    }
    if (e instanceof InputError) throw e;
    throw new FileError({ file: path, message: osMessage(e) });
  } finally {
    f.close();
  }
}

/** Refuses a phrase list longer than can be read ({@linkcode MAX_PHRASE_LIST_BYTES}) unread. */
function checkPhraseList(path: string, size: number): void {
  if (size > MAX_PHRASE_LIST_BYTES) throw phraseListTooLong(path, size);
}

// ---------------------------------------------------------------------------
// Zip archives read from the file.

/** The folder all file entries sit under (`top/`), or `""` when they are not all under one. */
function detectRoot(names: Iterable<string>): string {
  let top: string | undefined;
  for (const n of names) {
    if (n.endsWith("/")) continue;
    const i = n.indexOf("/");
    if (i < 0) return "";
    const t = n.slice(0, i + 1);
    if (top === undefined) top = t;
    else if (t !== top) return "";
  }
  return top ?? "";
}

// ---------------------------------------------------------------------------
// Dump sources.

/** An open dump read synchronously (the core under {@linkcode DumpSource}). */
export interface DumpSourceSync {
  /** The path given to {@linkcode openDumpSync}. */
  readonly path: string;
  /** Whether it is a folder or a zip. */
  readonly kind: "folder" | "zip";
  /** For a zip: the top folder its entries sit under (`context_emb/`), or `""`. */
  readonly root: string;
  /** Where PIQA's merge.py looks for `name` (used in `Missing` lines). */
  shownPath(name: string): string;
  /** How errors name the file `name` of this dump (`dir/name` or `x.zip:entry`). */
  label(name: string): string;
  /** The bytes of `name`, or `undefined` when the dump has no such file. */
  readFile(name: string): Uint8Array | undefined;
  /**
   * A paragraph's matrix and phrases, or which of the two files is missing
   * (`.npz` first). The matrix must have one row per phrase (checked on its
   * header, before it is inflated).
   */
  readContext(id: string): ContextDump | MissingFile;
  /** A question's matrix (checked as any matrix, and 1×d on its header), or missing. */
  readQuestion(id: string): Matrix | MissingFile;
  /** The file names of the dump (its top level), sorted, side files included. */
  list(): string[];
  /** Releases the zip's file handle (no-op for folders). */
  close(): void;
}

/** Reads the entries of an archive or the files of a folder. */
interface Backend {
  readonly kind: "folder" | "zip";
  readonly root: string;
  shownPath(name: string): string;
  label(name: string): string;
  /**
   * The bytes of `name`; `check` (a folder's files; a zip's entries are
   * bounded by the archive's own directory) sees the file's path and size
   * before it is read, and throws to refuse it.
   */
  read(name: string, scratch?: Scratch, check?: SizeCheck): Uint8Array | undefined;
  names(): string[];
  close(): void;
}

function stemOf(id: string, path: string): string {
  const why = unsafeIdReason(id);
  if (why !== undefined) {
    throw new InputError({
      file: path,
      where: `id ${JSON.stringify(id)}`,
      message: `${why}; it cannot name a dump file`,
    });
  }
  return dumpStem(id);
}

function sourceOf(path: string, b: Backend, options: DumpOptions): DumpSourceSync {
  const reuse = options.reuseBuffers === true;
  const matrixScratch = reuse ? new Scratch(options.contextBuffer) : undefined;
  const jsonScratch = reuse ? new Scratch() : undefined;
  const inflateScratch = reuse ? new Scratch() : undefined;
  const inflateBuffer = inflateScratch && ((n: number) => inflateScratch.take(n));
  // Question vectors are always checked here; only paragraph matrices may be deferred.
  const questionOptions = { ...options, deferFiniteCheck: false };
  const decode = (bytes: Uint8Array, name: string, o: DumpOptions, movable = false) =>
    decodeDumpMatrix(bytes, b.label(name), o, movable);
  return {
    path,
    kind: b.kind,
    root: b.root,
    shownPath: (name) => b.shownPath(name),
    label: (name) => b.label(name),
    readFile: (name) => b.read(name),
    readContext(id) {
      const stem = stemOf(id, path);
      const npz = `${stem}.npz`, json = `${stem}.json`;
      const m = b.read(npz, matrixScratch, checkNpzEnd);
      if (m === undefined) return { missing: b.shownPath(npz) };
      const j = b.read(json, jsonScratch, checkPhraseList);
      if (j === undefined) return { missing: b.shownPath(json) };
      const phrases = indexPhrases(j, b.label(json));
      // Rows = phrases is checked on the header, before the matrix is inflated.
      const rowsMismatch = (rows: number) =>
        new InputError({
          file: b.label(json),
          where: "",
          message: `${phrases.length} phrases but ${b.label(npz)} has ${rows} rows`,
        });
      const decoded = decode(
        m,
        npz,
        { ...options, expectRows: phrases.length, rowsMismatch, inflateBuffer },
        matrixScratch !== undefined,
      );
      const { matrix, rowSquares, checkFinite } = decoded;
      return rowSquares !== undefined
        ? { matrix, phrases, rowSquares }
        : checkFinite !== undefined
        ? { matrix, phrases, checkFinite }
        : { matrix, phrases };
    },
    readQuestion(id) {
      const npz = `${stemOf(id, path)}.npz`;
      const m = b.read(npz, undefined, checkNpzEnd);
      if (m === undefined) return { missing: b.shownPath(npz) };
      const rowsMismatch = (rows: number, cols: number) =>
        new InputError({
          file: b.label(npz),
          where: "",
          message: `shape (${rows}, ${cols}); a question vector must be 1×d`,
        });
      return decode(m, npz, { ...questionOptions, expectRows: 1, rowsMismatch }).matrix;
    },
    list: () => b.names(),
    close: () => b.close(),
  };
}

function folderBackend(path: string): Backend {
  return {
    kind: "folder",
    root: "",
    shownPath: (name) => joinPath(path, name),
    label: (name) => joinPath(path, name),
    read: (name, scratch, check) => readFileSyncInto(joinPath(path, name), scratch, check),
    names: () => {
      const out: string[] = [];
      try {
        for (const e of Deno.readDirSync(path)) if (!e.isDirectory) out.push(e.name);
      } catch (e) {
        throw new FileError({ file: path, message: osMessage(e) });
      }
      return out.sort();
    },
    close: () => {},
  };
}

function zipBackend(path: string, index: ZipFileIndex): Backend {
  const root = detectRoot(index.entries.keys());
  const shownDir = /\.zip$/i.test(path) ? path.slice(0, -4) : path;
  return {
    kind: "zip",
    root,
    shownPath: (name) => joinPath(shownDir, name),
    label: (name) => `${path}:${root}${name}`,
    read: (name, scratch) => {
      const e = index.entries.get(root + name);
      return e === undefined
        ? undefined
        : index.extract(e, scratch && ((n: number) => scratch.take(n)));
    },
    names: () => {
      const out: string[] = [];
      for (const n of index.entries.keys()) {
        if (!n.startsWith(root)) continue;
        const rest = n.slice(root.length);
        if (rest !== "" && !rest.includes("/")) out.push(rest);
      }
      return out.sort();
    },
    close: () => index.close(),
  };
}

/**
 * Opens a dump folder or a zip of one, synchronously. For a zip, the central
 * directory is read and validated now (an unsafe entry name refuses the
 * archive). Methods throw {@linkcode InputError} / {@linkcode FileError}.
 * A dump path that is neither a folder nor a regular file, and a file of
 * the dump that is not a regular file (a named pipe, a device, a socket;
 * a symbolic link counts as what it points to), are bad input, refused by
 * name before they are opened.
 *
 * @example
 * ```ts
 * import { openDumpSync } from "./reader_sync.ts";
 * import { encodeNpz } from "../npz.ts";
 * import { ndarray } from "../npy.ts";
 * const dir = Deno.makeTempDirSync();
 * const m = ndarray(new Float32Array([1, 0, 0, 1]), [2, 2]);
 * Deno.writeFileSync(`${dir}/T_0.npz`, encodeNpz({ arr_0: m }));
 * Deno.writeTextFileSync(`${dir}/T_0.json`, '["Paris", "France"]');
 * const ctx = openDumpSync(dir);
 * const c = ctx.readContext("T_0");
 * if ("missing" in c || c.matrix.rows !== c.phrases.length) throw new Error("bad paragraph");
 * const q = ctx.readQuestion("q1");
 * if (!("missing" in q) || q.missing !== `${dir}/q1.npz`) throw new Error("not missing");
 * ctx.close();
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export function openDumpSync(path: string, options: DumpOptions = {}): DumpSourceSync {
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(path);
  } catch (e) {
    throw new FileError({ file: path, message: osMessage(e) });
  }
  if (info.isDirectory) return sourceOf(path, folderBackend(path), options);
  if (!info.isFile) {
    // Not opened: a named pipe would block here, a device read without end.
    throw new InputError({
      file: path,
      where: "",
      message: `is ${fileKind(info)}, not a dump folder or a .zip of one`,
    });
  }
  let index: ZipFileIndex;
  try {
    index = openZipIndex(path, options.limits ?? {});
  } catch (e) {
    throw asDumpError(path)(e);
  }
  return sourceOf(path, zipBackend(path, index), options);
}
