/**
 * A child process as an Effect resource: started by
 * {@linkcode spawnScoped}, stopped (SIGTERM, then SIGKILL after a grace
 * period) and awaited when its scope closes, so a fiber that is
 * interrupted or fails never leaves its child running. Also
 * {@linkcode runCommand}: a short command with a timeout, output collected;
 * and {@linkcode runCommandSync}, the same without Effect for a command
 * that ends at once, where the caller cannot wait (`io/limits.ts`'s shell
 * fallback). Every child of this module is built by one function: stdin
 * closed unless asked for, {@linkcode CHILD_ENV} added to its environment.
 *
 * @module
 */
import * as Data from "effect/Data";
import * as Effect from "effect/Effect";
import * as Option from "effect/Option";
import type * as Scope from "effect/Scope";

/** A child process could not be started. */
export class SpawnError extends Data.TaggedError("SpawnError")<{
  /** The program. */
  readonly program: string;
  /** The underlying error. */
  readonly cause: unknown;
}> {}

/** A started child process. */
export interface Child {
  /** The Deno handle. */
  readonly process: Deno.ChildProcess;
  /** Its status, once it has exited. */
  readonly status: Promise<Deno.CommandStatus>;
  /** Whether it has exited. */
  exited(): boolean;
}

/** The exit code of a status the way a shell reports it (`128 + signal` when killed). */
export function exitCode(status: Deno.CommandStatus): number {
  if (!status.signal) return status.code;
  const n = ({ SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 } as Record<string, number>)[
    status.signal
  ] ?? 0;
  return 128 + n;
}

/** Sends `signal` to a child that may have exited already. */
export function signalChild(c: Child, signal: Deno.Signal): void {
  if (c.exited()) return;
  try {
    c.process.kill(signal);
  } catch { /* gone */ }
}

/**
 * Stops a child: nothing when it has exited, else SIGTERM, and SIGKILL when
 * it is still running after `graceMs`; then waits for it.
 */
export const stopChild = (c: Child, graceMs = 3000): Effect.Effect<Deno.CommandStatus> =>
  Effect.gen(function* () {
    if (!c.exited()) {
      signalChild(c, "SIGTERM");
      const s = yield* Effect.promise(() => c.status).pipe(Effect.timeoutOption(graceMs));
      if (Option.isNone(s)) signalChild(c, "SIGKILL");
    }
    return yield* Effect.promise(() => c.status);
  });

/**
 * Environment every child process of phraseval gets on top of its parent's:
 * no colour codes in the output that is parsed, and ONNX Runtime's
 * telemetry off (`ORT_DISABLE_TELEMETRY`: otherwise each process that loads
 * it writes `/tmp/mat-debug-<pid>.log` and a device id and event database
 * under `~/.cache/Microsoft/DeveloperTools/`, outside any output folder).
 */
export const CHILD_ENV: Readonly<Record<string, string>> = {
  NO_COLOR: "1",
  ORT_DISABLE_TELEMETRY: "1",
};

/**
 * The command of a child of this module: `argv[0]` with the rest as its
 * arguments, stdin closed unless `stdin` is `piped`, `env` added on top of
 * {@linkcode CHILD_ENV} (itself on top of this process's environment).
 */
function childCommand(
  argv: readonly string[],
  stdout: "piped" | "null" | "inherit",
  stderr: "piped" | "null" | "inherit",
  env: Record<string, string> | undefined,
  stdin: "piped" | "null" = "null",
): Deno.Command {
  return new Deno.Command(argv[0], {
    args: argv.slice(1),
    stdin,
    stdout,
    stderr,
    env: { ...CHILD_ENV, ...env },
  });
}

/** How {@linkcode spawnScoped} starts a child. */
export interface SpawnOptions {
  /** Its stdin: closed (`null`, the default), or a pipe to write to (`piped`). */
  readonly stdin?: "piped" | "null";
  /** Where stdout goes (default `piped`). */
  readonly stdout?: "piped" | "null" | "inherit";
  /** Where stderr goes (default `piped`). */
  readonly stderr?: "piped" | "null" | "inherit";
  /** Environment variables to add (on top of {@linkcode CHILD_ENV}). */
  readonly env?: Record<string, string>;
  /** Grace period (ms) between SIGTERM and SIGKILL when the scope closes early. */
  readonly graceMs?: number;
}

/**
 * Starts `argv` (`argv[0]` is the program) as a child process that is
 * stopped and awaited when the scope closes.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { spawnScoped } from "./process.ts";
 * const code = await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
 *   const c = yield* spawnScoped(["true"], { stdout: "null", stderr: "null" });
 *   return (yield* Effect.promise(() => c.status)).code;
 * })));
 * if (code !== 0) throw new Error(String(code));
 * ```
 */
export const spawnScoped = (
  argv: readonly string[],
  opts: SpawnOptions = {},
): Effect.Effect<Child, SpawnError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.try({
      try: (): Child => {
        const process = childCommand(
          argv,
          opts.stdout ?? "piped",
          opts.stderr ?? "piped",
          opts.env,
          opts.stdin,
        ).spawn();
        let done = false;
        const status = process.status.then((s) => {
          done = true;
          return s;
        });
        return { process, status, exited: () => done };
      },
      catch: (cause) => new SpawnError({ program: argv[0], cause }),
    }),
    (c) => stopChild(c, opts.graceMs),
  );

/** Result of {@linkcode runCommand}. */
export interface CmdOut {
  /** Exit code (124: timed out and killed; 127: not found; 126: cannot start). */
  readonly code: number;
  /** Whether it ran past the timeout and was killed (its output is then empty). */
  readonly timedOut?: boolean;
  /** Standard output. */
  readonly stdout: string;
  /** Standard error. */
  readonly stderr: string;
}

/**
 * Runs a command to its end (at most `timeoutMs`, then it is killed and the
 * code is 124) and collects its output, `env` added to its environment (on
 * top of {@linkcode CHILD_ENV}). Never fails: a missing program is code 127.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { runCommand } from "./process.ts";
 * const r = await Effect.runPromise(runCommand("echo", ["hi"]));
 * if (r.code !== 0 || r.stdout !== "hi\n") throw new Error(JSON.stringify(r));
 * const none = await Effect.runPromise(runCommand("no-such-program-here", []));
 * if (none.code !== 127) throw new Error(JSON.stringify(none));
 * ```
 */
export const runCommand = (
  program: string,
  args: readonly string[],
  timeoutMs = 30000,
  env?: Record<string, string>,
): Effect.Effect<CmdOut> =>
  Effect.scoped(Effect.gen(function* () {
    const c = yield* spawnScoped([program, ...args], { graceMs: 0, ...(env ? { env } : {}) });
    const out = Effect.promise(async () => {
      const [stdout, stderr, status] = await Promise.all([
        new Response(c.process.stdout).text(),
        new Response(c.process.stderr).text(),
        c.status,
      ]);
      return { code: status.code, stdout, stderr };
    });
    const r = yield* out.pipe(Effect.timeoutOption(timeoutMs));
    if (Option.isSome(r)) return r.value;
    signalChild(c, "SIGKILL");
    return { code: 124, timedOut: true, stdout: "", stderr: "" };
  })).pipe(Effect.catchTag("SpawnError", (e) => Effect.succeed(spawnFailure(e))));

/**
 * Runs `argv` to its end with its output on this process's own (inherited):
 * a long step of a script (a training, a fit) whose progress the user
 * watches. The child is stopped and awaited if this Effect is interrupted;
 * the answer is its exit code ({@linkcode exitCode}: 128 + the signal's
 * number when a signal ended it).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { runInherited } from "./process.ts";
 * if (await Effect.runPromise(runInherited(["true"])) !== 0) throw new Error();
 * if (await Effect.runPromise(runInherited(["false"])) !== 1) throw new Error();
 * ```
 */
export const runInherited = (
  argv: readonly string[],
  env?: Record<string, string>,
): Effect.Effect<number, SpawnError> =>
  Effect.scoped(Effect.gen(function* () {
    const c = yield* spawnScoped(argv, {
      stdout: "inherit",
      stderr: "inherit",
      ...(env ? { env } : {}),
    });
    return exitCode(yield* Effect.promise(() => c.status));
  }));

/**
 * Runs a command to its end synchronously and collects its output, `env`
 * added to its environment (on top of {@linkcode CHILD_ENV}), for a caller
 * that cannot wait: it blocks this thread, and has no timeout, so it is
 * only for a command that ends at once (a shell's builtin). Never throws:
 * a program that cannot start is code 127 or 126 ({@linkcode spawnFailure});
 * a child killed by a signal is 128 + its number ({@linkcode exitCode}).
 *
 * @example
 * ```ts
 * import { runCommandSync } from "./process.ts";
 * const r = runCommandSync("echo", ["hi"]);
 * if (r.code !== 0 || r.stdout !== "hi\n") throw new Error(JSON.stringify(r));
 * if (runCommandSync("no-such-program-here", []).code !== 127) throw new Error("found");
 * ```
 */
export function runCommandSync(
  program: string,
  args: readonly string[],
  env?: Record<string, string>,
): CmdOut {
  let out: Deno.CommandOutput;
  try {
    out = childCommand([program, ...args], "piped", "piped", env).outputSync();
  } catch (cause) {
    return spawnFailure(new SpawnError({ program, cause }));
  }
  const text = new TextDecoder();
  return { code: exitCode(out), stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

/**
 * A program that could not start, as a command's outcome: exit 127 when it
 * was not found, 126 otherwise, the reason on stderr (as a shell says it).
 *
 * @example
 * ```ts
 * import { SpawnError, spawnFailure } from "./process.ts";
 * const r = spawnFailure(new SpawnError({ program: "sinfo", cause: new Deno.errors.NotFound() }));
 * if (r.code !== 127 || r.stderr !== "sinfo: not found") throw new Error(JSON.stringify(r));
 * ```
 */
export function spawnFailure(e: SpawnError): CmdOut {
  const notFound = e.cause instanceof Deno.errors.NotFound;
  return {
    code: notFound ? 127 : 126,
    stdout: "",
    stderr: notFound
      ? `${e.program}: not found`
      : `${e.program}: ${e.cause instanceof Error ? e.cause.message : e.cause}`,
  };
}
