/**
 * Helpers shared by the test suites: running a stage as a subprocess the
 * way a user would, hashing files, temporary folders.
 *
 * @module
 */
import { REPO_ROOT } from "../io/repo.ts";
import { CHILD_ENV } from "../io/process.ts";
import { denoRunArgv } from "../runs/sandbox/sandbox.ts";

/** Repository root (absolute, no trailing slash). */
export const ROOT: string = REPO_ROOT;

/** The bundled SQuAD v1.1 dev set. */
export const DEV_GZ: string = `${ROOT}/data/dev-v1.1.json.gz`;

/**
 * The sha256 of `pred.json` from `deno task full` on the bundled default (sparse-pi on SQuAD v1.1
 * dev): a golden value, which changes only when the default encoder's answers change.
 */
export const DEV_FULL_PRED_SHA256 =
  "c7c90246c8a65ae8dd1fcb88581c62221782daa8ca22ef037f1ecc9f90241137";

/** The bundled SQuAD v1.1 train subset (44 articles; what the encoders were fitted on). */
export const TRAIN_GZ: string = `${ROOT}/data/train-subset-v1.1.json.gz`;

/**
 * A temporary folder for one test file (`prefix` names it), removed with
 * everything in it when the test process ends.
 *
 * @example
 * ```ts
 * import { testTempDir } from "./_util.ts";
 * const dir = testTempDir("phraseval-example-");
 * Deno.writeTextFileSync(`${dir}/a.txt`, "a");
 * ```
 */
export function testTempDir(prefix: string): string {
  const dir = Deno.makeTempDirSync({ prefix });
  globalThis.addEventListener("unload", () => {
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch { /* already gone */ }
  });
  return dir;
}

const plainCache = new Map<string, Promise<string>>();

/**
 * The plain JSON of a bundled `.json.gz` (for the Python references, which
 * read plain files), written once per test process to a temporary folder
 * that is removed when the process ends.
 */
export function plainJson(gz: string): Promise<string> {
  let p = plainCache.get(gz);
  if (p === undefined) {
    p = (async () => {
      const dir = testTempDir("phraseval-data-");
      const path = `${dir}/${gz.split("/").pop()!.replace(/\.gz$/, "")}`;
      const src = await Deno.open(gz);
      await Deno.writeFile(path, src.readable.pipeThrough(new DecompressionStream("gzip")));
      return path;
    })();
    plainCache.set(gz, p);
  }
  return p;
}

/** The bundled dev set as plain JSON (byte-identical to the official `dev-v1.1.json`). */
export const devJson = (): Promise<string> => plainJson(DEV_GZ);

/** The bundled train subset as plain JSON. */
export const trainJson = (): Promise<string> => plainJson(TRAIN_GZ);

/** Result of a subprocess. */
export interface RunResult {
  /** Exit code. */
  readonly code: number;
  /** Standard output as text. */
  readonly stdout: string;
  /** Standard error as text. */
  readonly stderr: string;
}

/**
 * How {@linkcode spawnChild}, {@linkcode runArgv} and {@linkcode runArgvSync}
 * start a child.
 */
export interface ChildOptions {
  /** Working folder (default this process's). */
  readonly cwd?: string;
  /**
   * Environment variables added on top of this process's environment and
   * {@linkcode CHILD_ENV}; with {@linkcode ChildOptions.clearEnv}, the whole
   * environment.
   */
  readonly env?: Record<string, string>;
  /**
   * The child's environment is `env` alone: neither this process's
   * environment nor {@linkcode CHILD_ENV} (for a test of what a run does
   * without them).
   */
  readonly clearEnv?: boolean;
}

/** The environment options of `Deno.Command` for {@linkcode ChildOptions}. */
function envOptions(opts: ChildOptions): { clearEnv: boolean; env: Record<string, string> } {
  return opts.clearEnv
    ? { clearEnv: true, env: { ...opts.env } }
    : { clearEnv: false, env: { ...CHILD_ENV, ...opts.env } };
}

/**
 * Starts `argv` (`argv[0]` is the program) as a child that the caller
 * watches, signals and awaits (a server whose port is read from its stderr, a
 * stage sent SIGINT mid-work, a build SIGKILLed part way, one end of a
 * pipe). It is started directly, not through a shell's `&` (which would
 * ignore SIGINT in it): it has this process's signal dispositions. stdin is
 * `/dev/null` unless `opts.stdin` is `piped`; stdout and stderr are piped
 * unless `null` is asked for; the environment is as {@linkcode ChildOptions}
 * says. A program that cannot be started throws (as `Deno.Command` does).
 * The caller reads or cancels what is piped (see {@linkcode childResult}).
 *
 * @example
 * ```ts
 * import { childResult, spawnChild } from "./_util.ts";
 *
 * const child = spawnChild(["sleep", "60"], { stdout: "null", stderr: "null" });
 * child.kill("SIGTERM");
 * const r = await childResult(child);
 * console.assert(r.signal === "SIGTERM");
 * ```
 */
export function spawnChild(
  argv: readonly string[],
  opts: ChildOptions & {
    /** `null` (the default) or a pipe the caller writes to. */
    readonly stdin?: "null" | "piped";
    /** `piped` (the default) or discarded. */
    readonly stdout?: "piped" | "null";
    /** `piped` (the default) or discarded. */
    readonly stderr?: "piped" | "null";
  } = {},
): Deno.ChildProcess {
  if (argv.length === 0) throw new Error("spawnChild: an empty command line");
  const [program, ...args] = argv;
  return new Deno.Command(program, {
    args,
    cwd: opts.cwd,
    ...envOptions(opts),
    stdin: opts.stdin ?? "null",
    stdout: opts.stdout ?? "piped",
    stderr: opts.stderr ?? "piped",
  }).spawn();
}

/** Result of a child of {@linkcode spawnChild}: a {@linkcode RunResult} and the signal that killed it. */
export interface ChildResult extends RunResult {
  /** The signal that ended the child, or null when it exited by itself. */
  readonly signal: Deno.Signal | null;
}

/**
 * Waits for a child of {@linkcode spawnChild} to end and collects what it
 * piped (stdout and stderr that were not piped read as empty); the
 * caller must not have read its piped streams.
 */
export async function childResult(child: Deno.ChildProcess): Promise<ChildResult> {
  const o = await child.output();
  const dec = new TextDecoder();
  // `output()`'s stdout and stderr throw a TypeError when that stream was not piped.
  const text = (bytes: () => Uint8Array): string => {
    try {
      return dec.decode(bytes());
    } catch (e) {
      if (e instanceof TypeError) return "";
      throw e;
    }
  };
  return {
    code: o.code,
    signal: o.signal,
    stdout: text(() => o.stdout),
    stderr: text(() => o.stderr),
  };
}

/**
 * Runs `argv` (`argv[0]` is the program) to its end and collects its output:
 * stdin is `/dev/null` unless `opts.stdin` is given (then it is piped in and
 * closed), stdout and stderr are piped and decoded, and the environment is
 * this process's plus {@linkcode CHILD_ENV} plus `opts.env` (`opts.env`
 * alone when `opts.clearEnv`). `opts.cwd` is the working folder (default this
 * process's). A program that cannot be started throws (as `Deno.Command`
 * does); a non-zero exit does not, its code is in the result.
 */
export async function runArgv(
  argv: readonly string[],
  opts: ChildOptions & { readonly stdin?: string | Uint8Array } = {},
): Promise<RunResult> {
  if (argv.length === 0) throw new Error("runArgv: an empty command line");
  const child = spawnChild(argv, { ...opts, stdin: opts.stdin === undefined ? "null" : "piped" });
  const fed = opts.stdin === undefined ? Promise.resolve() : feedStdin(
    child.stdin,
    typeof opts.stdin === "string" ? new TextEncoder().encode(opts.stdin) : opts.stdin,
  );
  const [out] = await Promise.all([childResult(child), fed]);
  return { code: out.code, stdout: out.stdout, stderr: out.stderr };
}

/**
 * {@linkcode runArgv} without a stdin to feed, synchronously: for a command
 * that ends at once where the caller cannot wait (a check at module load, a
 * synchronous callback). Throws when the program cannot be started.
 *
 * @example
 * ```ts
 * import { runArgvSync } from "./_util.ts";
 *
 * console.assert(runArgvSync(["echo", "hi"]).stdout === "hi\n");
 * ```
 */
export function runArgvSync(argv: readonly string[], opts: ChildOptions = {}): RunResult {
  if (argv.length === 0) throw new Error("runArgvSync: an empty command line");
  const [program, ...args] = argv;
  const o = new Deno.Command(program, {
    args,
    cwd: opts.cwd,
    ...envOptions(opts),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).outputSync();
  const dec = new TextDecoder();
  return { code: o.code, stdout: dec.decode(o.stdout), stderr: dec.decode(o.stderr) };
}

/** The permissions of `deno task run` (what `pipeline/run.ts` is started with). */
export const RUN_PERMS: readonly string[] = [
  "--allow-read",
  "--allow-write",
  "--allow-run",
  "--allow-ffi",
];

/**
 * The command line of `deno task run` on `args` (`deno run`, its permissions,
 * `pipeline/run.ts`), for {@linkcode spawnChild} where a test watches the run.
 */
export function runTaskArgv(args: readonly string[]): string[] {
  return [Deno.execPath(), "run", ...RUN_PERMS, `${ROOT}/pipeline/run.ts`, ...args];
}

/** `deno task run` (its permissions) on `args`, from the repository root, to its end. */
export function runRun(
  args: readonly string[],
  env?: Record<string, string>,
): Promise<RunResult> {
  return runArgv(runTaskArgv(args), { cwd: ROOT, ...(env ? { env } : {}) });
}

/**
 * Runs a config of piqa-lstm over articles [8, 10) of dev with two datasets
 * searched through the IVF-PQ block `ivf` (its source text, e.g.
 * `ivf: { nlist: 8, bpv: 16 }`): `abbrs[0]` unsharded, `abbrs[1]` over 2
 * shards; the run folder's path once it exited 0.
 */
export async function runOpenIvfConfig(
  work: string,
  ivf: string,
  abbrs: readonly [string, string],
): Promise<string> {
  Deno.writeTextFileSync(
    `${work}/c.ts`,
    `import { squadDev } from "${ROOT}/configs/datasets/squad_dev.ts";
import { piqaLstm as model } from "${ROOT}/configs/models/piqa_lstm.ts";
const reader = { articles: [8, 10] };
export const config = {
  datasets: [
    { ...squadDev, abbr: "${abbrs[0]}", reader, open: { ${ivf} } },
    { ...squadDev, abbr: "${abbrs[1]}", reader, open: { shards: 2, ${ivf} } },
  ],
  models: [model],
};
`,
  );
  const r = await runRun([`${work}/c.ts`, "--work-dir", work]);
  if (r.code !== 0) throw new Error(`run exited ${r.code}: ${r.stderr}`);
  const [name] = [...Deno.readDirSync(work)].map((e) => e.name).filter((n) =>
    /^\d{8}_\d{6}$/.test(n)
  );
  return `${work}/${name}`;
}

/** The `sha256sum` program's digest of a file (hex). */
export async function sha256sum(file: string): Promise<string> {
  const o = await runArgv(["sha256sum", file]);
  if (o.code !== 0) throw new Error(`sha256sum ${file}: ${o.stderr.trim()}`);
  return o.stdout.split(" ")[0];
}

/** `sha256sum` over a folder's files (dot files aside) in name order, piped into `sha256sum`. */
export async function folderSum(dir: string): Promise<string> {
  const o = await runArgv([
    "bash",
    "-c",
    "cd \"$1\" && find . -type f ! -name '.*' | sed 's|^\\./||' | LC_ALL=C sort | " +
    "xargs -d '\\n' sha256sum | sha256sum",
    "_",
    dir,
  ]);
  if (o.code !== 0) throw new Error(`folder sum of ${dir}: ${o.stderr.trim()}`);
  return o.stdout.split(" ")[0];
}

/**
 * Runs `deno run -A <script> ...args` from the repository root (or with
 * the given permission flags instead of `-A`; the command line comes from
 * `runs/sandbox/sandbox.ts`); `stdin` is piped in when given.
 */
export async function runStage(
  script: string,
  args: readonly string[],
  opts: { stdin?: Uint8Array | string; permissions?: readonly string[] } = {},
): Promise<RunResult> {
  const argv = denoRunArgv(
    `${ROOT}/${script}`,
    args,
    opts.permissions ? { flags: opts.permissions } : { all: true },
    { config: null, prompt: true },
  );
  return await runArgv(argv, { cwd: ROOT, stdin: opts.stdin });
}

/**
 * Writes `data` to a child's stdin and closes it. A child that exits before
 * reading all of it (a Python script that fails on an import) breaks the
 * pipe: that is not the error to report, the child's exit and stderr are,
 * so a broken pipe is swallowed here and the caller looks at the exit.
 */
async function feedStdin(stdin: WritableStream<Uint8Array>, data: Uint8Array): Promise<void> {
  const w = stdin.getWriter();
  try {
    await w.write(data);
    await w.close();
  } catch (e) {
    if (!(e instanceof Deno.errors.BrokenPipe)) throw e;
  }
}

/**
 * Runs `python3 args...` from the repository root, `stdin` piped in when
 * given. On a non-zero exit it throws an error holding the command, the exit
 * code and the child's whole stderr (a missing module's traceback included),
 * even when the child died before reading its stdin.
 */
export async function python(args: readonly string[], stdin?: string): Promise<RunResult> {
  const r = await runArgv(["python3", ...args], { cwd: ROOT, stdin });
  if (r.code !== 0) {
    throw new Error(`python3 ${args.join(" ")} exited ${r.code}:\n${r.stderr.trimEnd()}`);
  }
  return r;
}

/** sha256 of a file, hex. */
export async function sha256File(path: string): Promise<string> {
  const bytes = await Deno.readFile(path);
  const d = await crypto.subtle.digest("SHA-256", bytes);
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Names in a folder, sorted. */
export async function listDir(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) out.push(e.name);
  return out.sort();
}

/** Whether this process may mount a tmpfs (root with the capability); tests that need one skip otherwise. */
export function canMount(): boolean {
  const dir = Deno.makeTempDirSync({ prefix: "pv-mnt-probe-" });
  try {
    // Synchronous: canMount is called at module load.
    const ok = runArgvSync(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir]).code === 0;
    if (ok) runArgvSync(["umount", dir]);
    return ok;
  } catch {
    return false;
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
}
