/**
 * The one place that builds a permission-narrowed `deno run` command line.
 * Every child Deno process of a run, of `full` and of the test helpers is
 * started from what {@linkcode denoRunArgv} returns: the script, its
 * arguments, and exactly the paths it may read, write, run and load native
 * code from. Nothing else is granted (no network, no environment), the
 * process never prompts, and it cannot import remote code (`--no-remote`
 * turns off Deno 2's default import allow-list of esm.sh, deno.land, jsr.io,
 * raw.githubusercontent.com...; `--cached-only` keeps `npm:` specifiers to
 * the packages already in the cache, so a module name cannot carry data to
 * the registry).
 *
 * The rules that keep an encoder process from reading what it must not
 * (issue 11):
 *
 * - **Paths a flag cannot express are refused.** Deno's
 *   `--allow-read=a,b` splits at every comma and has no escape (2.9.6 reads
 *   `a,,b` as an empty path), so a granted path with a comma would widen
 *   the grant (`/tmp/x,/,/q` grants `/`). {@linkcode permissionFlags}
 *   throws an {@linkcode InputError} (exit 2) naming such a path, and one
 *   with a NUL byte or a line break, or an empty one; it never splits it.
 * - **Granted model files are checked** ({@linkcode grantedFileProblem}):
 *   after `realpath` a file granted to an encoder must exist, be a regular
 *   file, a folder or a named pipe (no device, no socket), must not be or
 *   lie inside a guarded path (every dataset, the other half's input and
 *   output folder, the run folder and the work folder; a work folder that
 *   holds the repository does not guard the repository's own files, such
 *   as the built-in models), and a granted folder must not hold one.
 *   Deno checks a read against the name it is given, so names are not
 *   enough: a granted regular file must not be a hard link to a guarded
 *   file (same device and inode), must have one link unless it is a
 *   bundled model file, and a granted folder may hold only folders and
 *   such files (no symbolic link, pipe or device). Files named by an ONNX
 *   manifest must also lie, lexically, in the manifest's own folder tree
 *   (no absolute path elsewhere, no `..` out of it): a manifest cannot name
 *   `/etc/passwd` or the dataset. `runs/plan/plan.ts` applies both before any
 *   task runs, and `serve` checks its model files the same way.
 * - **Output folders are fresh** ({@linkcode outputFolderProblem}): Deno
 *   does not resolve symbolic links for path-scoped reads, so a link
 *   planted in an encoder's output folder would be readable through its
 *   grant. An output folder must be absent (it is made fresh) or a real
 *   folder holding only plain files an encoder writes (`*.npz`, `*.json`,
 *   its own bookkeeping `.phraseval-dump.json` and `.*.<hex>.tmp`
 *   temporaries), each with one hard link; anything else is refused. The
 *   plan checks it, and so does each `embed_*` process before it reads its
 *   input.
 *
 * @example
 * ```ts
 * import { denoRunArgv } from "./sandbox.ts";
 * const argv = denoRunArgv("/r/pipeline/merge.ts", ["a", "b"], {
 *   read: ["/d.json", "/out"], write: ["/out"],
 * }, { deno: "deno", config: "/r/deno.json" });
 * const want = [
 *   "deno", "run", "--no-prompt", "--no-remote", "--cached-only", "--config=/r/deno.json",
 *   "--allow-read=/d.json,/out", "--allow-write=/out", "/r/pipeline/merge.ts", "a", "b",
 * ];
 * if (JSON.stringify(argv) !== JSON.stringify(want)) throw new Error(argv.join(" "));
 * ```
 *
 * @module
 */
import { InputError } from "../../io/errors.ts";
import { REPO_ROOT } from "../../io/repo.ts";
import { indexTempFolder } from "../../search/index/temp.ts";
import { type Guarded, kindOf, realPathLoose, within } from "./output_folder.ts";

export {
  DUMP_BOOKKEEPING,
  type Guarded,
  outputFolderProblem,
  realPathLoose,
} from "./output_folder.ts";

/**
 * What a process may touch. A list grants exactly those paths, `true`
 * grants all (`--allow-read`), absent or an empty list grants nothing.
 */
export interface Grants {
  /** Paths it may read. */
  readonly read?: readonly string[] | true;
  /** Paths it may write. */
  readonly write?: readonly string[] | true;
  /** Programs it may run. */
  readonly run?: readonly string[] | true;
  /** Native libraries it may load. */
  readonly ffi?: readonly string[] | true;
  /** Every permission (`-A`); for tests that run a stage the way a user would. */
  readonly all?: boolean;
  /** Further permission flags, verbatim, after the others (an encoder's own, e.g. `--allow-ffi=...`). */
  readonly flags?: readonly string[];
}

/**
 * Why `path` cannot be named in a Deno permission list, or `undefined`.
 *
 * @example
 * ```ts
 * import { grantPathProblem } from "./sandbox.ts";
 * if (grantPathProblem("/a/b") !== undefined) throw new Error();
 * if (!grantPathProblem("/tmp/x,/")?.includes("comma")) throw new Error();
 * ```
 */
export function grantPathProblem(path: string): string | undefined {
  if (path === "") return "an empty path cannot be granted to a sandboxed process";
  if (path.includes(",")) {
    return "a path with a comma cannot be granted to a sandboxed process (Deno's --allow-read=a,b list splits at every comma and has no escape); rename or move it";
  }
  if (/[\0\n\r]/.test(path)) {
    return "a path with a NUL byte or a line break cannot be granted to a sandboxed process; rename or move it";
  }
  return undefined;
}

const refuseGrant = (path: string): void => {
  const why = grantPathProblem(path);
  if (why !== undefined) throw new InputError({ file: path, where: "", message: why });
};

const exists = (p: string): boolean => {
  try {
    Deno.statSync(p);
    return true;
  } catch {
    return false;
  }
};

/**
 * The permission flags of `grants`, in the order read, write, run, ffi,
 * then `flags`. Throws an {@linkcode InputError} (exit 2) naming a granted
 * path the flag syntax cannot express (see {@linkcode grantPathProblem});
 * a verbatim flag in `flags` carries one path or an already joined list,
 * and is refused when its whole value is one existing path with a comma.
 *
 * @example
 * ```ts
 * import { permissionFlags } from "./sandbox.ts";
 * const f = permissionFlags({ read: ["/a", "/b"], write: ["/b"], ffi: true });
 * if (f.join(" ") !== "--allow-read=/a,/b --allow-write=/b --allow-ffi") throw new Error(f.join(" "));
 * ```
 */
export function permissionFlags(grants: Grants): string[] {
  for (const f of grants.flags ?? []) {
    const m = /^--(?:allow|deny)-[a-z]+=(.*)$/s.exec(f);
    if (m && (m[1].includes(",") && exists(m[1]) || /[\0\n\r]/.test(m[1]))) refuseGrant(m[1]);
  }
  if (grants.all) return ["-A", ...(grants.flags ?? [])];
  const out: string[] = [];
  for (const kind of ["read", "write", "run", "ffi"] as const) {
    const g = grants[kind];
    if (g === true) out.push(`--allow-${kind}`);
    else if (g !== undefined && g.length > 0) {
      g.forEach(refuseGrant);
      out.push(`--allow-${kind}=${g.join(",")}`);
    }
  }
  return [...out, ...(grants.flags ?? [])];
}

/** How the `deno run` line is built (beyond the grants). */
export interface SandboxOptions {
  /** The Deno binary (default: this one). */
  readonly deno?: string;
  /** The `deno.json` to use (default the repository's); `null`: none given (Deno finds it). */
  readonly config?: string | null;
  /** `--quiet` (no download/check lines on stderr). */
  readonly quiet?: boolean;
  /** Leave out `--no-prompt` (default: a sandboxed process never prompts). */
  readonly prompt?: boolean;
  /**
   * Allow remote imports (Deno's default allow-list) and `npm:` packages
   * not yet cached; default false: `--no-remote --cached-only`.
   */
  readonly remote?: boolean;
}

/**
 * The argv (`argv[0]` is the Deno binary) of `deno run` for `script` with
 * `args`, allowed exactly `grants`, with remote imports off. Throws an
 * {@linkcode InputError} naming a granted path no flag can express.
 */
export function denoRunArgv(
  script: string,
  args: readonly string[],
  grants: Grants,
  opts: SandboxOptions = {},
): string[] {
  const config = opts.config === undefined ? `${REPO_ROOT}/deno.json` : opts.config;
  return [
    opts.deno ?? Deno.execPath(),
    "run",
    ...(opts.prompt ? [] : ["--no-prompt"]),
    ...(opts.remote ? [] : ["--no-remote", "--cached-only"]),
    ...(opts.quiet ? ["--quiet"] : []),
    ...(config !== null ? [`--config=${config}`] : []),
    ...permissionFlags(grants),
    script,
    ...args,
  ];
}

const abs = (p: string) => p.startsWith("/") ? p : `${Deno.cwd()}/${p}`;

/**
 * The grants of an encoder process: read its input file, its model files
 * and its own output folder (to skip complete files), write only its output
 * folder. Nothing else: no network, no env, no other file (the question
 * encoder cannot read the context file).
 *
 * @example
 * ```ts
 * import { encoderGrants } from "./sandbox.ts";
 * const g = encoderGrants({ input: "/r/q.json", out: "/r/q_emb", files: ["/m/q.json"] });
 * if (JSON.stringify(g.read) !== '["/r/q.json","/m/q.json","/r/q_emb"]') throw new Error();
 * ```
 */
export function encoderGrants(
  p: { input: string; out: string; files: readonly string[] },
): { read: string[]; write: string[] } {
  return { read: [p.input, ...p.files, p.out].map(abs), write: [abs(p.out)] };
}

/**
 * The Deno permission flags of an encoder process (see
 * {@linkcode encoderGrants}).
 *
 * @example
 * ```ts
 * import { encoderPermissions } from "./sandbox.ts";
 * const f = encoderPermissions({ input: "/r/question.json", out: "/r/question_emb", files: ["/m/q.json"] });
 * const want = "--allow-read=/r/question.json,/m/q.json,/r/question_emb --allow-write=/r/question_emb";
 * if (f.join(" ") !== want) throw new Error(f.join(" "));
 * ```
 */
export function encoderPermissions(
  p: { input: string; out: string; files: readonly string[] },
): string[] {
  return permissionFlags(encoderGrants(p));
}

/**
 * The grants of an `index` task: read the context dump (and the context
 * file that gives the paragraph order and offsets), write only the index
 * folder and the temporary folder its build renames into place
 * (`search/index/temp.ts` {@linkcode indexTempFolder}: its lock, the
 * build, and a replaced index's `old/` all lie inside it).
 *
 * @example
 * ```ts
 * import { indexGrants } from "./sandbox.ts";
 * const g = indexGrants({ contextEmb: "/r/c_emb", context: "/r/context.json", index: "/r/index" });
 * if (g.write.length !== 2 || !g.read.includes("/r/context.json") || g.read.includes("/r")) {
 *   throw new Error(JSON.stringify(g));
 * }
 * ```
 */
export function indexGrants(
  p: { contextEmb: string; context: string; index: string },
): { read: string[]; write: string[] } {
  const index = abs(p.index);
  const tmp = indexTempFolder(index);
  const write = [index, tmp];
  return { read: [abs(p.contextEmb), abs(p.context), ...write], write };
}

/**
 * The grants of a `search` task: read the dataset, the index and the
 * question dump, write only the folder of its outputs (the top-1
 * predictions and the top-k records, written atomically there).
 *
 * @example
 * ```ts
 * import { searchGrants } from "./sandbox.ts";
 * const g = searchGrants({ data: "/d.json", index: "/r/index", questionEmb: "/r/q_emb", outDir: "/r/open" });
 * if (JSON.stringify(g) !== '{"read":["/d.json","/r/index","/r/q_emb","/r/open"],"write":["/r/open"]}') {
 *   throw new Error(JSON.stringify(g));
 * }
 * ```
 */
export function searchGrants(
  p: { data: string; index: string; questionEmb: string; outDir: string },
): { read: string[]; write: string[] } {
  return {
    read: [p.data, p.index, p.questionEmb, p.outDir].map(abs),
    write: [abs(p.outDir)],
  };
}

/** A file's identity: device and inode (`undefined` where the platform gives none). */
const fileId = (st: Deno.FileInfo): string | undefined =>
  st.dev !== null && st.ino !== null && st.ino !== undefined ? `${st.dev}:${st.ino}` : undefined;

/** The folders of the repository's bundled models (never a dataset). */
const BUNDLED_MODEL_DIRS = ["data/models", "data/sparse-pi", "data/bert"];

let bundledIds: Set<string> | undefined;

/**
 * The identities (device and inode) of the repository's bundled model
 * files: the one kind of file a granted path may share with other names
 * (a hard link to a bundled model grants nothing new).
 */
function bundledModelIds(): Set<string> {
  if (bundledIds !== undefined) return bundledIds;
  const ids = new Set<string>();
  const walk = (dir: string) => {
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(dir)];
    } catch {
      return;
    }
    for (const e of entries) {
      const p = `${dir}/${e.name}`;
      if (e.isDirectory) walk(p);
      else if (e.isFile) {
        try {
          const id = fileId(Deno.lstatSync(p));
          if (id !== undefined) ids.add(id);
        } catch { /* gone since the listing */ }
      }
    }
  };
  for (const d of BUNDLED_MODEL_DIRS) walk(`${REPO_ROOT}/${d}`);
  return bundledIds = ids;
}

/** The most entries a granted folder's walk looks at before it refuses the folder. */
export const MAX_GRANTED_FOLDER_ENTRIES = 10_000;

/**
 * Why the regular file `file` (its `stat` is `st`) may not be granted
 * whatever its name: it is another name (a hard link) of a
 * {@linkcode Guarded} file (`guardedIds`: device and inode → what it is), or
 * it has more than one hard link and is not a bundled model file (a second
 * name could be anything the process must not read).
 */
function linkProblem(
  file: string,
  st: Deno.FileInfo,
  guardedIds: ReadonlyMap<string, string>,
): string | undefined {
  const id = fileId(st);
  const what = id !== undefined ? guardedIds.get(id) : undefined;
  if (what !== undefined) return `${file} is a hard link to ${what}`;
  const links = st.nlink ?? 1;
  if (links > 1 && !(id !== undefined && bundledModelIds().has(id))) {
    return `${file} has ${links} hard links (a second name could be any file; a granted file ` +
      `must have one, or be a bundled model)`;
  }
  return undefined;
}

/**
 * Why an encoder (or any sandboxed process) may not be granted (read)
 * `file`, or `undefined`:
 *
 * - it must exist and be a regular file, a folder or a named pipe;
 * - after `realpath` it must not be, or lie inside, a {@linkcode Guarded}
 *   path, and a folder must not hold one;
 * - a regular file must not be a hard link to a guarded file (same device
 *   and inode), and must have one link unless it is one of the
 *   repository's bundled model files: Deno checks a read against the name,
 *   so a second name of the dataset would be readable through a grant of
 *   `vocab.txt`;
 * - a folder is walked (at most {@linkcode MAX_GRANTED_FOLDER_ENTRIES}
 *   entries): it may hold only folders and regular files that pass the
 *   same link checks, no symbolic link (Deno would follow it through the
 *   grant), device, socket or pipe.
 *
 * @example
 * ```ts
 * import { grantedFileProblem } from "./sandbox.ts";
 * const why = grantedFileProblem("/dev/null", []);
 * if (why !== "/dev/null is not a regular file, folder or named pipe") throw new Error(why);
 * const dir = Deno.makeTempDirSync();
 * Deno.writeTextFileSync(`${dir}/data.json`, "{}");
 * Deno.linkSync(`${dir}/data.json`, `${dir}/vocab.txt`);
 * const guarded = [{ path: `${dir}/data.json`, what: "the dataset" }];
 * if (grantedFileProblem(`${dir}/vocab.txt`, guarded) !== `${dir}/vocab.txt is a hard link to the dataset (${dir}/data.json)`) {
 *   throw new Error(grantedFileProblem(`${dir}/vocab.txt`, guarded));
 * }
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export function grantedFileProblem(file: string, guarded: readonly Guarded[]): string | undefined {
  let st: Deno.FileInfo;
  try {
    st = Deno.statSync(file);
  } catch {
    return `${file} does not exist`;
  }
  if (!st.isFile && !st.isDirectory && !st.isFifo) {
    return `${file} is not a regular file, folder or named pipe`;
  }
  const real = realPathLoose(file);
  const guardedIds = new Map<string, string>();
  for (const g of guarded) {
    const target = realPathLoose(g.path);
    if (real === target) return `${file} is ${g.what} (${target})`;
    if (within(real, target)) return `${file} lies inside ${g.what} (${target})`;
    if (st.isDirectory && within(target, real)) {
      return `${file} is a folder that holds ${g.what} (${target})`;
    }
    try {
      const gs = Deno.statSync(target);
      const id = gs.isFile ? fileId(gs) : undefined;
      if (id !== undefined) guardedIds.set(id, `${g.what} (${target})`);
    } catch { /* not there (yet): nothing to be a link of */ }
  }
  if (st.isFile) return linkProblem(file, st, guardedIds);
  if (!st.isDirectory) return undefined;
  let seen = 0;
  const walk = (dir: string): string | undefined => {
    for (const e of Deno.readDirSync(dir)) {
      if (++seen > MAX_GRANTED_FOLDER_ENTRIES) {
        return `${file} is a folder of more than ${MAX_GRANTED_FOLDER_ENTRIES} entries; grant ` +
          `the files it needs`;
      }
      const p = `${dir}/${e.name}`;
      let s: Deno.FileInfo;
      try {
        s = Deno.lstatSync(p);
      } catch (err) {
        if (err instanceof Deno.errors.NotFound) continue;
        return `${p}: ${err instanceof Error ? err.message : err}`;
      }
      if (s.isDirectory) {
        const why = walk(p);
        if (why !== undefined) return why;
      } else if (s.isFile) {
        const why = linkProblem(p, s, guardedIds);
        if (why !== undefined) return why;
      } else {
        return `${p} is ${kindOf(s)} in the granted folder ${file} (a sandboxed process could ` +
          `read through it)`;
      }
    }
    return undefined;
  };
  try {
    return walk(real);
  } catch (err) {
    return `${file}: ${err instanceof Error ? err.message : err}`;
  }
}
