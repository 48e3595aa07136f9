/**
 * The pieces of a provenance block (`provenance.json` of a `full` or `run`
 * folder, `provenance` of a `report.json`; the block itself is
 * `runs/summary/provenance.ts`'s): the sha256 of a file and of a folder of files,
 * the tool's version and git commit, the machine, a flat view of any JSON
 * value for comparing two blocks key by key, and reading and writing the
 * file.
 *
 * - A file's sha256 is that of its bytes ({@linkcode sha256File}), read in
 *   chunks.
 * - A folder's sha256 ({@linkcode sha256Folder}) is the sha256 of the text
 *   `sha256sum` prints for its files in name order: one line
 *   `<hex sha256 of the file>  <relative path>\n` per regular file (files
 *   in subfolders by their relative path; names starting with `.`, such as
 *   a dump's `.phraseval-dump.json`, left out), the paths sorted by their
 *   UTF-8 bytes. So `cd DIR && find . -type f ! -name '.*' | sed 's|^\./||'
 *   | LC_ALL=C sort | xargs sha256sum | sha256sum` prints it too (for names
 *   without a backslash or a line break, which `sha256sum` escapes).
 * - The git commit is read from the repository's own `.git` (a folder, or
 *   the `gitdir:` file of a worktree: `HEAD`, then the ref it names, loose
 *   or in `packed-refs`), without running git or using the network; where
 *   there is no `.git` (an unpacked copy) it is left out. It says which
 *   commit the code came from, not whether the working tree had changes.
 * - The machine: OS, architecture, logical CPUs, and the Deno, V8 and
 *   TypeScript versions; no host name or user name (a provenance file is
 *   meant to be shared), and nothing that needs a permission the commands
 *   do not have (the CPU model, `/proc/cpuinfo`, would need `--allow-all`;
 *   the memory size `--allow-sys`).
 *
 * @module
 */
import { createHash } from "node:crypto";
import * as Effect from "effect/Effect";
import { writeFileAtomic } from "./fs.ts";
import { FileError, InputError } from "./errors.ts";
import { sha256File, TOOL_VERSION } from "./manifest.ts";
import { REPO_ROOT } from "./repo.ts";

export { sha256File };

/** The file name of a run folder's provenance block. */
export const PROVENANCE_FILE = "provenance.json";

/** The format tag of a provenance block. */
export const PROVENANCE_FORMAT = "phraseval-provenance/1";

/** A file and the sha256 of its bytes. */
export interface FileHash {
  /** The path: relative to the run folder when inside it, else absolute. */
  readonly path: string;
  /** sha256 of the bytes (hex). */
  readonly sha256: string;
  /** Its size in bytes. */
  readonly bytes: number;
}

/** A folder and the sha256 of its files ({@linkcode sha256Folder}). */
export interface FolderHash {
  /** The path: relative to the run folder when inside it, else absolute. */
  readonly path: string;
  /** sha256 of the `sha256sum` lines of its files in name order (hex). */
  readonly sha256: string;
  /** Regular files hashed. */
  readonly files: number;
  /** Their bytes, in all. */
  readonly bytes: number;
}

/** The tool that made a block. */
export interface ToolInfo {
  /** Always `phraseval`. */
  readonly name: "phraseval";
  /** `deno.json`'s `version`. */
  readonly version: string;
  /** The git commit of the code (40 or 64 hex digits), when the repository has a `.git`. */
  readonly commit?: string;
}

/** The machine a block was made on. */
export interface MachineInfo {
  /** `Deno.build.os`. */
  readonly os: string;
  /** `Deno.build.arch`. */
  readonly arch: string;
  /** Logical CPUs (`navigator.hardwareConcurrency`). */
  readonly cpus: number;
  /** Deno's version. */
  readonly deno: string;
  /** V8's version. */
  readonly v8: string;
  /** TypeScript's version. */
  readonly typescript: string;
}

const hex = (h: ReturnType<typeof createHash>) => h.digest("hex");

const utf8 = new TextEncoder();

/** Compares two strings by their UTF-8 bytes (`LC_ALL=C sort`'s order). */
function byteOrder(a: string, b: string): number {
  const x = utf8.encode(a), y = utf8.encode(b);
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

/** The regular files under `dir` (relative paths, no name starting with `.`), unsorted. */
async function listFiles(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(`${dir}${prefix === "" ? "" : `/${prefix}`}`)) {
    if (e.name.startsWith(".")) continue;
    const rel = prefix === "" ? e.name : `${prefix}/${e.name}`;
    if (e.isDirectory) out.push(...await listFiles(dir, rel));
    else if (e.isFile) out.push(rel);
  }
  return out;
}

/**
 * The sha256 of a folder's files (see the module notes), their count and
 * bytes. Files are hashed a few at a time; `signal` stops it between
 * files. Throws the OS error of a file it cannot read.
 *
 * @example
 * ```ts
 * import { sha256Folder } from "./provenance.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.writeTextFileSync(`${dir}/b`, "abc");
 * Deno.writeTextFileSync(`${dir}/.hidden`, "left out");
 * const h = await sha256Folder(dir);
 * // sha256("ba7816bf…15ad  b\n"): what `sha256sum b | sha256sum` prints
 * if (h.files !== 1 || h.bytes !== 3) throw new Error(JSON.stringify(h));
 * if (h.sha256 !== "e66010e8934dece1a51c5c1b610093f6639d4b03dca4e36380dcb324114c3618") throw new Error();
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export async function sha256Folder(
  dir: string,
  signal?: AbortSignal,
): Promise<{ sha256: string; files: number; bytes: number }> {
  const names = (await listFiles(dir)).sort(byteOrder);
  const sums = new Array<string>(names.length);
  let bytes = 0;
  let next = 0;
  const worker = async () => {
    const buf = new Uint8Array(1 << 20);
    for (let i = next++; i < names.length; i = next++) {
      signal?.throwIfAborted();
      const h = createHash("sha256");
      using f = await Deno.open(`${dir}/${names[i]}`, { read: true });
      for (;;) {
        const n = await f.read(buf);
        if (n === null) break;
        h.update(buf.subarray(0, n));
        bytes += n;
      }
      sums[i] = hex(h);
    }
  };
  await Promise.all(Array.from({ length: Math.min(8, names.length) }, worker));
  const all = createHash("sha256");
  for (let i = 0; i < names.length; i++) all.update(`${sums[i]}  ${names[i]}\n`);
  return { sha256: hex(all), files: names.length, bytes };
}

/**
 * The path to record for `path`: relative to `runDir` when inside it,
 * else as given (always as given when `runDir` is `""` or `/`).
 *
 * @example
 * ```ts
 * import { recordedPath } from "./provenance.ts";
 * if (recordedPath("/o/run/dumps/c", "/o/run") !== "dumps/c") throw new Error();
 * if (recordedPath("/data/dev.json", "/o/run") !== "/data/dev.json") throw new Error();
 * if (recordedPath("/data/dev.json", "") !== "/data/dev.json") throw new Error();
 * ```
 */
export function recordedPath(path: string, runDir: string): string {
  const root = runDir.replace(/\/+$/, "");
  return root !== "" && path.startsWith(`${root}/`) ? path.slice(root.length + 1) : path;
}

const fileError = (file: string) => (e: unknown) =>
  new FileError({
    file,
    message: e instanceof Deno.errors.NotFound
      ? "no such file"
      : e instanceof Error
      ? e.message
      : String(e),
  });

/** {@linkcode FileHash} of a file, its path recorded relative to `runDir` when inside it. */
export const hashFile = (path: string, runDir: string): Effect.Effect<FileHash, FileError> =>
  Effect.tryPromise({
    try: async () => ({
      path: recordedPath(path, runDir),
      sha256: await sha256File(path),
      bytes: (await Deno.stat(path)).size,
    }),
    catch: fileError(path),
  });

/** {@linkcode FolderHash} of a folder, its path recorded relative to `runDir` when inside it. */
export const hashFolder = (path: string, runDir: string): Effect.Effect<FolderHash, FileError> =>
  Effect.tryPromise({
    try: async (signal) => ({
      path: recordedPath(path, runDir),
      ...await sha256Folder(path, signal),
    }),
    catch: fileError(path),
  });

/**
 * The sha256 of each of `files` by base name (a folder: `"folder"`; a
 * file that is not there: `"missing"`), in the given order.
 *
 * @example
 * ```ts
 * import { filesSha256 } from "./provenance.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.writeTextFileSync(`${dir}/m.json`, "abc");
 * const h = await filesSha256([`${dir}/m.json`, `${dir}/gone`, dir]);
 * if (h["m.json"] !== "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") throw new Error();
 * if (h.gone !== "missing" || Object.values(h)[2] !== "folder") throw new Error(JSON.stringify(h));
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export async function filesSha256(files: readonly string[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const f of files) {
    const name = f.slice(f.lastIndexOf("/") + 1);
    let st: Deno.FileInfo;
    try {
      st = await Deno.stat(f);
    } catch {
      out[name] = "missing";
      continue;
    }
    out[name] = st.isFile ? await sha256File(f) : "folder";
  }
  return out;
}

const readText = (p: string) => Deno.readTextFileSync(p);
const isHash = (s: string) => /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(s);
const resolveFrom = (base: string, p: string) => p.startsWith("/") ? p : `${base}/${p}`;

/**
 * The git commit of the repository at `root` (default: this one), read
 * from its `.git` without running git (see the module notes), or
 * `undefined` when there is none or it cannot be read.
 *
 * @example
 * ```ts
 * import { gitCommit } from "./provenance.ts";
 * const c = gitCommit();
 * if (c !== undefined && !/^[0-9a-f]{40}/.test(c)) throw new Error(c);
 * if (gitCommit("/nonexistent-root") !== undefined) throw new Error();
 * ```
 */
export function gitCommit(root: string = REPO_ROOT): string | undefined {
  try {
    let gitDir = `${root}/.git`;
    if (Deno.statSync(gitDir).isFile) {
      const m = /^gitdir:\s*(.+)$/m.exec(readText(gitDir));
      if (m === null) return undefined;
      gitDir = resolveFrom(root, m[1].trim());
    }
    const head = readText(`${gitDir}/HEAD`).trim();
    if (isHash(head)) return head;
    const ref = /^ref:\s*(\S+)$/.exec(head)?.[1];
    if (ref === undefined) return undefined;
    let common = gitDir;
    try {
      common = resolveFrom(gitDir, readText(`${gitDir}/commondir`).trim());
    } catch { /* not a worktree */ }
    for (const d of [gitDir, common]) {
      try {
        const v = readText(`${d}/${ref}`).trim();
        if (isHash(v)) return v;
      } catch { /* not a loose ref here */ }
    }
    for (const line of readText(`${common}/packed-refs`).split("\n")) {
      const [sha, name] = line.trim().split(/\s+/);
      if (name === ref && isHash(sha)) return sha;
    }
    return undefined;
  } catch {
    return undefined;
  }
}

/**
 * The tool's version (`deno.json`'s) and git commit (left out when
 * unknown).
 *
 * @example
 * ```ts
 * import { toolInfo } from "./provenance.ts";
 * const t = toolInfo();
 * if (t.name !== "phraseval" || t.version !== JSON.parse(Deno.readTextFileSync("deno.json")).version) {
 *   throw new Error(JSON.stringify(t));
 * }
 * ```
 */
export function toolInfo(root: string = REPO_ROOT): ToolInfo {
  const commit = gitCommit(root);
  return { name: "phraseval", version: TOOL_VERSION, ...(commit !== undefined ? { commit } : {}) };
}

/**
 * The machine (see the module notes).
 *
 * @example
 * ```ts
 * import { machineInfo } from "./provenance.ts";
 * const m = machineInfo();
 * if (m.os !== Deno.build.os || m.deno !== Deno.version.deno || !(m.cpus >= 1)) throw new Error();
 * ```
 */
export function machineInfo(): MachineInfo {
  return {
    os: Deno.build.os,
    arch: Deno.build.arch,
    cpus: navigator.hardwareConcurrency || 1,
    deno: Deno.version.deno,
    v8: Deno.version.v8,
    typescript: Deno.version.typescript,
  };
}

/**
 * A JSON value as flat `key → value` pairs, for comparing two blocks key
 * by key: object members as `a.b`, array items as `a[0]`; leaves (strings,
 * numbers, booleans, `null`) and empty objects and arrays are the values.
 *
 * @example
 * ```ts
 * import { flattenJson } from "./provenance.ts";
 * const f = flattenJson({ a: { b: 1, c: [true, { d: null }] }, e: [] });
 * if (JSON.stringify(f) !== '{"a.b":1,"a.c[0]":true,"a.c[1].d":null,"e":[]}') throw new Error(JSON.stringify(f));
 * ```
 */
export function flattenJson(value: unknown, prefix = ""): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const walk = (v: unknown, key: string) => {
    if (Array.isArray(v) && v.length > 0) {
      v.forEach((x, i) => walk(x, `${key}[${i}]`));
    } else if (
      typeof v === "object" && v !== null && !Array.isArray(v) && Object.keys(v).length > 0
    ) {
      for (const [k, x] of Object.entries(v)) {
        if (x !== undefined) walk(x, key === "" ? k : `${key}.${k}`);
      }
    } else {
      out[key] = v;
    }
  };
  walk(value, prefix);
  return out;
}

/** Writes a block to `path` atomically (pretty JSON). */
export const writeProvenance = (path: string, block: unknown): Effect.Effect<void, FileError> =>
  writeFileAtomic(
    path,
    utf8.encode(JSON.stringify(block, null, 2) + "\n"),
    (reason) => new FileError({ file: path, message: reason }),
  );

/**
 * Reads the block of a run folder (`<dir>/provenance.json`): fails with
 * {@linkcode InputError} when the file is missing (a folder from before
 * provenance blocks), is not JSON, or is not a block (its `format` is not
 * {@linkcode PROVENANCE_FORMAT}).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { readProvenance } from "./provenance.ts";
 * const dir = Deno.makeTempDirSync();
 * const e = await Effect.runPromise(Effect.flip(readProvenance(dir)));
 * if (!e.message.startsWith("no provenance.json")) throw new Error(e.message);
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export const readProvenance = (
  dir: string,
): Effect.Effect<Readonly<Record<string, unknown>>, InputError> =>
  Effect.try({
    try: () => {
      const file = `${dir.replace(/\/+$/, "")}/${PROVENANCE_FILE}`;
      let text: string;
      try {
        text = readText(file);
      } catch (e) {
        throw new InputError({
          file,
          where: "",
          message: e instanceof Deno.errors.NotFound
            ? `no ${PROVENANCE_FILE}: a run folder from before provenance blocks (rerun it)`
            : String(e instanceof Error ? e.message : e),
        });
      }
      let v: unknown;
      try {
        v = JSON.parse(text);
      } catch (e) {
        throw new InputError({
          file,
          where: "",
          message: `invalid JSON (${e instanceof Error ? e.message : e})`,
        });
      }
      if (
        typeof v !== "object" || v === null || Array.isArray(v) ||
        (v as { format?: unknown }).format !== PROVENANCE_FORMAT
      ) {
        throw new InputError({
          file,
          where: "",
          message: `not a provenance block (no "format": "${PROVENANCE_FORMAT}")`,
        });
      }
      return v as Readonly<Record<string, unknown>>;
    },
    catch: (e) =>
      e instanceof InputError ? e : new InputError({ file: dir, where: "", message: String(e) }),
  });
