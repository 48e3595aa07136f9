/**
 * Folder manifests: what a resumable folder was made from, so a rerun into
 * it can tell whether its files still belong to the same job. A manifest is
 * a small flat JSON object (`field: value`) holding the sha256 of the
 * inputs, the encoder and the hashes of its model files, the dump format
 * options and the tool version; no paths and no times, so the same job
 * writes the same bytes. Two of them exist:
 *
 * - {@linkcode DUMP_MANIFEST} (`<dump folder>/.phraseval-dump.json`),
 *   written by `embed_context` / `embed_question` before their first dump
 *   file;
 * - {@linkcode RUN_MANIFEST} (`<out>/.phraseval-run.json`), written by
 *   `full` before its first task.
 *
 * A rerun compares the manifest it would write with the one it finds
 * ({@linkcode manifestDiff}) and refuses a folder made from anything else
 * unless told to start afresh (`--overwrite`).
 *
 * @module
 */
import { createHash } from "node:crypto";
import * as Effect from "effect/Effect";
import { osMessage } from "./_zip_internal.ts";
import { writeFileAtomic } from "./fs.ts";
import { FileError, InputError } from "./errors.ts";
import { statRegularFile } from "./regular.ts";

/** The file name of a dump folder's manifest. */
export const DUMP_MANIFEST = ".phraseval-dump.json";

/** The file name of a `full` output folder's manifest. */
export const RUN_MANIFEST = ".phraseval-run.json";

/**
 * The tool version recorded in manifests: `deno.json`'s `version` (kept
 * equal to it; `tests/pipeline/resume_slow_test.ts` checks).
 */
export const TOOL_VERSION = "0.1.0";

/** A manifest: flat fields with JSON values. */
export type Manifest = Readonly<Record<string, string | number | boolean | null>>;

/**
 * The sha256 (hex) of a file's bytes, read in chunks; of a folder of
 * Parquet shards (a Hub split), of its shards' bytes one after the other,
 * in name order.
 *
 * @example
 * ```ts
 * import { sha256File } from "./manifest.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.writeTextFileSync(`${dir}/a`, "abc");
 * const h = await sha256File(`${dir}/a`);
 * if (h !== "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") throw new Error(h);
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export async function sha256File(path: string): Promise<string> {
  const h = createHash("sha256");
  const shards = (await Deno.stat(path)).isDirectory
    ? await (await import("./datasets/parquet_path.ts")).parquetFiles(path) // a folder of shards
    : undefined;
  if (shards === undefined) statRegularFile(path); // a named pipe or a device: refused by name
  const buf = new Uint8Array(1 << 20);
  for (const p of shards ?? [path]) {
    using f = await Deno.open(p, { read: true });
    for (;;) {
      const n = await f.read(buf);
      if (n === null) break;
      h.update(buf.subarray(0, n));
    }
  }
  return h.digest("hex");
}

/**
 * {@linkcode sha256File} as an Effect: a file that cannot be read fails
 * with a {@linkcode FileError} worded as the readers word it (`no such
 * file`, `permission denied (not granted to this process)`); one that
 * is not a regular file with an {@linkcode InputError} naming it.
 */
export const fileSha256 = (path: string): Effect.Effect<string, FileError | InputError> =>
  Effect.tryPromise({
    try: () => sha256File(path),
    catch: (e) =>
      e instanceof InputError || e instanceof FileError ? e : new FileError({
        file: path,
        message: e instanceof Deno.errors.NotFound ? "no such file" : osMessage(e),
      }),
  });

/**
 * The sha256 of each model file, as one field value: `name:sha256` per
 * file (base names, in the given order), `;`-separated. Folders are
 * recorded by name only.
 */
export async function filesFingerprint(files: readonly string[]): Promise<string> {
  const parts: string[] = [];
  for (const f of files) {
    const name = f.slice(f.lastIndexOf("/") + 1);
    let st: Deno.FileInfo;
    try {
      st = await Deno.stat(f);
    } catch {
      parts.push(`${name}:missing`);
      continue;
    }
    parts.push(st.isFile ? `${name}:${await sha256File(f)}` : `${name}/`);
  }
  return parts.join(";");
}

/**
 * Reads a manifest: `undefined` when there is none, `null` when the file
 * is there but is not a manifest (it then differs from every manifest).
 */
export async function readManifest(path: string): Promise<Manifest | null | undefined> {
  let text: string;
  try {
    if (statRegularFile(path) === undefined) return undefined;
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    return null;
  }
  try {
    const v = JSON.parse(text);
    return typeof v === "object" && v !== null && !Array.isArray(v) ? v as Manifest : null;
  } catch {
    return null;
  }
}

const short = (v: unknown) => {
  const s = JSON.stringify(v) ?? "none";
  return /^"[0-9a-f]{64}"$/.test(s)
    ? `${s.slice(1, 13)}…`
    : s.length > 60
    ? `${s.slice(0, 57)}…`
    : s;
};

/**
 * What differs between the manifest found (`was`) and the one this run
 * would write (`now`), as one phrase (`input_sha256 was 1f2e…, now 9a0b…;
 * encoder was "x", now "y"`); `undefined` when they are equal.
 *
 * @example
 * ```ts
 * import { manifestDiff } from "./manifest.ts";
 * if (manifestDiff({ a: 1, b: "x" }, { b: "x", a: 1 }) !== undefined) throw new Error();
 * const d = manifestDiff({ a: 1, b: "x" }, { a: 2, b: "x" });
 * if (d !== "a was 1, now 2") throw new Error(d);
 * if (manifestDiff(null, { a: 1 }) !== "the manifest is not readable JSON") throw new Error();
 * ```
 */
export function manifestDiff(was: Manifest | null, now: Manifest): string | undefined {
  if (was === null) return "the manifest is not readable JSON";
  const keys = [...new Set([...Object.keys(now), ...Object.keys(was)])];
  const diffs = keys.filter((k) => JSON.stringify(was[k]) !== JSON.stringify(now[k]))
    .map((k) => `${k} was ${short(was[k])}, now ${short(now[k])}`);
  return diffs.length === 0 ? undefined : diffs.join("; ");
}

/** Writes a manifest atomically (pretty JSON, keys in the given order). */
export function writeManifest(path: string, m: Manifest): Effect.Effect<void, FileError> {
  return writeFileAtomic(
    path,
    new TextEncoder().encode(JSON.stringify(m, null, 2) + "\n"),
    (reason) => new FileError({ file: path, message: reason }),
  );
}
