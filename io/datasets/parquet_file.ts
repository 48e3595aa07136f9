/**
 * Reading Parquet files one row group at a time, on `hyparquet` (pure
 * JavaScript, no native module, no WebAssembly: it runs in a sandboxed
 * task): a file is opened by its footer, and {@linkcode readRowGroup} reads
 * the chosen columns of one row group only, so memory is bounded by a row
 * group, never a file. The Hub's codecs are read: snappy (hyparquet's own),
 * gzip (`fflate`) and zstd (`fzstd`). Every failure (not Parquet, cut short,
 * a corrupt page, a codec not read) is one {@linkcode InputError} naming the
 * file and, for data, the row group.
 *
 * @module
 */
import { gunzipSync } from "fflate";
import { decompress as zstdDecompress } from "fzstd";
import {
  type AsyncBuffer,
  type Compressors,
  type FileMetaData,
  parquetMetadataAsync,
  parquetReadObjects,
  parquetSchema,
} from "hyparquet";
import { InputError } from "../errors.ts";

/** The magic bytes at the start and the end of every Parquet file. */
export const PARQUET_MAGIC = "PAR1";

const COMPRESSORS: Compressors = {
  GZIP: (input: Uint8Array, length: number) => gunzipSync(input, { out: new Uint8Array(length) }),
  ZSTD: (input: Uint8Array) => zstdDecompress(input),
};

/** One Parquet file opened: its path, its footer, and its row groups' first rows. */
export interface ParquetFile {
  /** The path, as errors name it. */
  readonly path: string;
  /** The top-level column names, in the file's order. */
  readonly columns: readonly string[];
  /** The number of rows. */
  readonly rows: number;
  /** The number of rows of each row group. */
  readonly groupRows: readonly number[];
  /** Closes the file. */
  close(): void;
  /** @internal */
  readonly buffer: AsyncBuffer;
  /** @internal */
  readonly metadata: FileMetaData;
}

function message(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).replace(/\s+/g, " ").replace(/^parquet /, "");
}

/**
 * A file read by offset: one read at a time (the reads share the file's
 * position), each exactly the bytes asked for.
 */
function fileBuffer(path: string, file: Deno.FsFile, size: number): AsyncBuffer {
  let chain: Promise<unknown> = Promise.resolve();
  const readAt = async (start: number, end: number): Promise<ArrayBuffer> => {
    const buf = new Uint8Array(Math.max(0, end - start));
    await file.seek(start, Deno.SeekMode.Start);
    let got = 0;
    while (got < buf.length) {
      const n = await file.read(buf.subarray(got));
      if (n === null) {
        throw new InputError({ file: path, where: "", message: "truncated Parquet file" });
      }
      got += n;
    }
    return buf.buffer;
  };
  return {
    byteLength: size,
    slice(start: number, end?: number) {
      const p = chain.then(() => readAt(start, Math.min(end ?? size, size)));
      chain = p.catch(() => {});
      return p;
    },
  };
}

/**
 * Opens the Parquet file at `path` and reads its footer. A file without the
 * `PAR1` magic at both ends ("not a Parquet file"; one cut short has lost
 * its footer, and says so) or with a footer that does not decode fails with
 * one {@linkcode InputError}.
 *
 * @example
 * ```ts
 * import { openParquet } from "./parquet_file.ts";
 * const path = await Deno.makeTempFile({ suffix: ".parquet" });
 * await Deno.writeTextFile(path, "id,text\n1,a\n");
 * let msg = "";
 * try {
 *   await openParquet(path);
 * } catch (e) {
 *   msg = String(e);
 * }
 * if (!msg.endsWith("not a Parquet file (no PAR1 magic at its start)")) throw new Error(msg);
 * ```
 */
export async function openParquet(path: string): Promise<ParquetFile> {
  const file = await Deno.open(path, { read: true });
  try {
    const size = (await file.stat()).size;
    const buffer = fileBuffer(path, file, size);
    const text = (a: ArrayBuffer) => new TextDecoder().decode(a);
    const head = size >= 4 ? text(await buffer.slice(0, 4)) : "";
    const bad = (m: string) => new InputError({ file: path, where: "", message: m });
    if (head !== PARQUET_MAGIC) throw bad("not a Parquet file (no PAR1 magic at its start)");
    const tail = size >= 12 ? text(await buffer.slice(size - 4, size)) : "";
    if (tail !== PARQUET_MAGIC) {
      throw bad("truncated Parquet file (no PAR1 magic at its end: the footer is missing)");
    }
    let metadata: FileMetaData;
    try {
      metadata = await parquetMetadataAsync(buffer);
    } catch (e) {
      throw bad(`corrupt Parquet footer (${message(e)})`);
    }
    const groupRows = metadata.row_groups.map((g) => Number(g.num_rows));
    const columns = (parquetSchema(metadata).children ?? []).map((c) => c.element.name);
    return {
      path,
      columns,
      rows: Number(metadata.num_rows),
      groupRows,
      close: () => file.close(),
      buffer,
      metadata,
    };
  } catch (e) {
    file.close();
    throw e;
  }
}

/**
 * The rows of row group `group` of `pq` as objects of the `columns` asked
 * for (nested columns as objects and lists; 64-bit integers as `bigint`).
 * A page that does not decode, or a codec not read, is one
 * {@linkcode InputError} naming the row group.
 */
export async function readRowGroup(
  pq: ParquetFile,
  group: number,
  columns: readonly string[],
): Promise<Record<string, unknown>[]> {
  let rowStart = 0;
  for (let g = 0; g < group; g++) rowStart += pq.groupRows[g];
  const rowEnd = rowStart + pq.groupRows[group];
  try {
    return await parquetReadObjects({
      file: pq.buffer,
      metadata: pq.metadata,
      columns: [...columns],
      rowStart,
      rowEnd,
      compressors: COMPRESSORS,
    });
  } catch (e) {
    if (e instanceof InputError) throw e;
    const m = message(e);
    const codec = /unsupported compression codec: (\w+)/.exec(m);
    throw new InputError({
      file: pq.path,
      where: `row group ${group}`,
      message: codec !== null
        ? `Parquet compression ${codec[1]} is not read (snappy, gzip, zstd are)`
        : `corrupt Parquet data (${m})`,
    });
  }
}
