/**
 * Reading Parquet files one row group at a time, on `hyparquet` (pure
 * JavaScript, no native module, no WebAssembly: it runs in a sandboxed
 * task): a file is opened by its footer, and {@linkcode readRowGroup} reads
 * the chosen columns of one row group only, so memory is bounded by a row
 * group, never a file. The Hub's codecs are read: snappy (hyparquet's own),
 * gzip (`fflate`) and zstd (`fzstd`). Every failure (not Parquet, cut short,
 * a corrupt page, a codec not read) is one {@linkcode InputError} naming the
 * file and, for data, the row group. A footer whose row counts disagree (its
 * row groups' rows against the file's, or a group's rows against the values
 * of a column that holds one value a row) is refused when the file opens,
 * before a row is read (a reader that trusted it would drop or repeat rows);
 * a string that is not valid UTF-8 is refused, naming its row and column,
 * as the JSON readers refuse one (a lenient decoder would put U+FFFD in its
 * place and score the damaged text).
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
  type SchemaTree,
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
 * Whether the column at `path` (names from the root) holds one value a row:
 * no element on its way is repeated (a list). `undefined` when the schema
 * has no such column (the reader names that).
 */
function oneValueARow(tree: SchemaTree, path: readonly string[]): boolean | undefined {
  let node = tree;
  for (const name of path) {
    const child = node.children.find((c) => c.element.name === name);
    if (child === undefined) return undefined;
    if (child.element.repetition_type === "REPEATED") return false;
    node = child;
  }
  return true;
}

/**
 * What is wrong with the footer's row counts, if anything: a row group's
 * count that is not a whole number, row groups whose counts do not add up
 * to the file's, or a row group whose count differs from the values of a
 * column that holds one value a row (nulls counted). Each of these would
 * make a reader drop rows or read them twice.
 */
function rowCountProblem(
  metadata: FileMetaData,
  tree: SchemaTree,
  groupRows: readonly number[],
  rows: number,
): { group?: number; message: string } | undefined {
  let sum = 0;
  for (let g = 0; g < groupRows.length; g++) {
    const n = groupRows[g];
    if (!Number.isSafeInteger(n) || n < 0) return { group: g, message: `it says ${n} rows` };
    sum += n;
    for (const chunk of metadata.row_groups[g].columns) {
      const meta = chunk.meta_data;
      if (meta === undefined || oneValueARow(tree, meta.path_in_schema) !== true) continue;
      const values = Number(meta.num_values);
      if (values !== n) {
        return {
          group: g,
          message: `it says ${n} row${n === 1 ? "" : "s"}, but its column ${
            JSON.stringify(meta.path_in_schema.join("."))
          } holds ${values} values`,
        };
      }
    }
  }
  if (!Number.isSafeInteger(rows) || sum !== rows) {
    return { message: `its row groups hold ${sum} rows, but it says ${rows}` };
  }
  return undefined;
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
 * await Deno.remove(path);
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
    const tree = parquetSchema(metadata);
    const columns = (tree.children ?? []).map((c) => c.element.name);
    const rows = Number(metadata.num_rows);
    const problem = rowCountProblem(metadata, tree, groupRows, rows);
    if (problem !== undefined) {
      throw new InputError({
        file: path,
        where: problem.group === undefined ? "" : `row group ${problem.group}`,
        message: `corrupt Parquet footer (${problem.message})`,
      });
    }
    return {
      path,
      columns,
      rows,
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
 * {@linkcode InputError} naming the row group; a string that is not valid
 * UTF-8, one naming its row (from 0 in the file) and column.
 */
export async function readRowGroup(
  pq: ParquetFile,
  group: number,
  columns: readonly string[],
): Promise<Record<string, unknown>[]> {
  let rowStart = 0;
  for (let g = 0; g < group; g++) rowStart += pq.groupRows[g];
  const rowEnd = rowStart + pq.groupRows[group];
  let rows: Record<string, unknown>[];
  try {
    rows = await parquetReadObjects({
      file: pq.buffer,
      metadata: pq.metadata,
      columns: [...columns],
      rowStart,
      rowEnd,
      compressors: COMPRESSORS,
      parsers: { stringFromBytes: strictText },
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
  for (let i = 0; i < rows.length; i++) {
    for (const c of columns) {
      const at = invalidTextAt(rows[i][c], c);
      if (at !== undefined) {
        throw new InputError({
          file: pq.path,
          where: `row ${rowStart + i}`,
          message: `column ${JSON.stringify(at)} is not valid UTF-8 text`,
        });
      }
    }
  }
  return rows;
}

/** A string column's value whose bytes are not valid UTF-8 (found by {@linkcode invalidTextAt}). */
class InvalidText {
  /**
   * @param bytes the value's bytes
   */
  constructor(readonly bytes: Uint8Array) {}
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** hyparquet's string parser, strict: bytes that are not UTF-8 become an {@linkcode InvalidText}. */
function strictText(bytes: Uint8Array | undefined): string | InvalidText | undefined {
  if (bytes === undefined || bytes === null) return bytes;
  try {
    return utf8.decode(bytes);
  } catch {
    return new InvalidText(bytes);
  }
}

/**
 * The path (`answers.text[0]`) of the first {@linkcode InvalidText} in `v`,
 * the value of column `name`, or `undefined` where there is none.
 */
function invalidTextAt(v: unknown, name: string): string | undefined {
  if (v instanceof InvalidText) return name;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const at = invalidTextAt(v[i], `${name}[${i}]`);
      if (at !== undefined) return at;
    }
  } else if (
    typeof v === "object" && v !== null && !(v instanceof Date) && !ArrayBuffer.isView(v)
  ) {
    for (const [k, x] of Object.entries(v)) {
      const at = invalidTextAt(x, `${name}.${k}`);
      if (at !== undefined) return at;
    }
  }
  return undefined;
}
