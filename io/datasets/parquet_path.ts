/**
 * Whether an input path is a Parquet split, without loading the Parquet
 * reader: `openSource` asks {@linkcode parquetInput} of every path, and
 * only a Parquet one loads `parquet.ts` (and `hyparquet`).
 *
 * @module
 */
import type { ByteSource } from "../source.ts";

/**
 * The Parquet files of `path` when it is one: a file named `*.parquet`, or a
 * folder holding `*.parquet` files (in name order); `undefined` for
 * anything else (which `openSource` then opens as it always did).
 *
 * @example
 * ```ts
 * import { parquetFiles } from "./parquet_path.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/b-00001-of-00002.parquet`, "");
 * await Deno.writeTextFile(`${dir}/a-00000-of-00002.parquet`, "");
 * const files = await parquetFiles(dir);
 * if (files?.map((f) => f.slice(dir.length + 1)).join() !== "a-00000-of-00002.parquet,b-00001-of-00002.parquet") {
 *   throw new Error();
 * }
 * if (await parquetFiles(`${dir}/none.json`) !== undefined) throw new Error();
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function parquetFiles(path: string): Promise<string[] | undefined> {
  if (path === "-") return undefined;
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch {
    return undefined;
  }
  if (info.isFile) return /\.parquet$/i.test(path) ? [path] : undefined;
  if (!info.isDirectory) return undefined;
  const names: string[] = [];
  for await (const e of Deno.readDir(path)) {
    if (e.isFile && /\.parquet$/i.test(e.name)) names.push(e.name);
  }
  if (names.length === 0) return undefined;
  names.sort();
  return names.map((n) => `${path.replace(/\/+$/, "")}/${n}`);
}

/**
 * Whether `path` is a file, or a folder holding `*.parquet` files (a Hub
 * split in shards), as the readers read it; synchronous, for the checks
 * of a run config.
 *
 * @example
 * ```ts
 * import { isDataPath } from "./parquet_path.ts";
 * const dir = await Deno.makeTempDir();
 * if (isDataPath(dir)) throw new Error("an empty folder is no split");
 * await Deno.writeTextFile(`${dir}/train-00000-of-00001.parquet`, "");
 * if (!isDataPath(dir) || !isDataPath(`${dir}/train-00000-of-00001.parquet`)) throw new Error();
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export function isDataPath(path: string): boolean {
  try {
    const info = Deno.statSync(path);
    if (info.isFile) return true;
    if (!info.isDirectory) return false;
    for (const e of Deno.readDirSync(path)) {
      if (e.isFile && /\.parquet$/i.test(e.name)) return true;
    }
  } catch {
    // Not there, or not readable: not a dataset.
  }
  return false;
}

/**
 * Whether `path` is a folder holding `*.parquet` files: a split in shards,
 * which the readers read as one file (a stage that checks its inputs are
 * regular files lets it through).
 *
 * @example
 * ```ts
 * import { isParquetFolder } from "./parquet_path.ts";
 * const dir = await Deno.makeTempDir();
 * if (isParquetFolder(dir)) throw new Error("an empty folder is no split");
 * await Deno.writeTextFile(`${dir}/v-00000-of-00001.parquet`, "");
 * if (!isParquetFolder(dir) || isParquetFolder(`${dir}/v-00000-of-00001.parquet`)) throw new Error();
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export function isParquetFolder(path: string): boolean {
  try {
    return Deno.statSync(path).isDirectory && isDataPath(path);
  } catch {
    return false;
  }
}

/**
 * The byte source of the Parquet split at `path` (see `parquetSource` of
 * `parquet.ts`, loaded only then), or `undefined` when `path` is not
 * Parquet.
 */
export async function parquetInput(path: string): Promise<ByteSource | undefined> {
  if (await parquetFiles(path) === undefined) return undefined;
  const { parquetSource } = await import("./parquet.ts");
  return await parquetSource(path);
}
