/**
 * The one place that builds a permission-narrowed `deno run` command line.
 * Every child Deno process of a run, of `full` and of the test helpers is
 * started from what {@linkcode denoRunArgv} returns: the script, its
 * arguments, and exactly the paths it may read, write, run and load native
 * code from. Nothing else is granted (no network, no environment), and the
 * process never prompts.
 *
 * @example
 * ```ts
 * import { denoRunArgv } from "./sandbox.ts";
 * const argv = denoRunArgv("/r/pipeline/merge.ts", ["a", "b"], {
 *   read: ["/d.json", "/out"], write: ["/out"],
 * }, { deno: "deno", config: "/r/deno.json" });
 * const want = [
 *   "deno", "run", "--no-prompt", "--config=/r/deno.json",
 *   "--allow-read=/d.json,/out", "--allow-write=/out", "/r/pipeline/merge.ts", "a", "b",
 * ];
 * if (JSON.stringify(argv) !== JSON.stringify(want)) throw new Error(argv.join(" "));
 * ```
 *
 * @module
 */
import { REPO_ROOT } from "../io/repo.ts";

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
 * The permission flags of `grants`, in the order read, write, run, ffi,
 * then `flags`.
 *
 * @example
 * ```ts
 * import { permissionFlags } from "./sandbox.ts";
 * const f = permissionFlags({ read: ["/a", "/b"], write: ["/b"], ffi: true });
 * if (f.join(" ") !== "--allow-read=/a,/b --allow-write=/b --allow-ffi") throw new Error(f.join(" "));
 * ```
 */
export function permissionFlags(grants: Grants): string[] {
  if (grants.all) return ["-A", ...(grants.flags ?? [])];
  const out: string[] = [];
  for (const kind of ["read", "write", "run", "ffi"] as const) {
    const g = grants[kind];
    if (g === true) out.push(`--allow-${kind}`);
    else if (g !== undefined && g.length > 0) out.push(`--allow-${kind}=${g.join(",")}`);
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
}

/**
 * The argv (`argv[0]` is the Deno binary) of `deno run` for `script` with
 * `args`, allowed exactly `grants`.
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
