/**
 * The command-line conventions every stage shares: a declarative argument
 * spec with generated `--help`, exit codes (0 success, 1 the work failed,
 * 2 bad usage or bad input), exactly one error line on stderr (no stack
 * trace unless `--debug`), and progress on stderr only when it is a TTY.
 *
 * Arguments are parsed here rather than with `effect/cli` because that
 * module prints the whole help text to stdout on a usage error (stdout is
 * data in a pipe) and adds global flags our stages do not have.
 *
 * @module
 */
import * as Cause from "effect/Cause";
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import * as Fiber from "effect/Fiber";
import { exitCodeOf, FileError, InputError, WorkError } from "../io/errors.ts";

import { watchLifeline } from "../runs/runners/lifeline.ts";
import {
  type CommandSpec,
  exitOnHelpOrUsageError,
  openFilesProblem,
  type ParsedArgs,
} from "./_args.ts";

/**
 * The exit code of a failure (`io/errors.ts`: each error carries its own;
 * 2 bad usage or bad input, 1 the work failed): the one mapping every
 * command uses, here for the commands' imports.
 */
export { exitCodeOf } from "../io/errors.ts";
export {
  exitOnHelpOrUsageError,
  helpText,
  MIN_OPEN_FILES,
  openFilesProblem,
  parseArgs,
  UsageError,
  WorkError,
} from "./_args.ts";
export type {
  ArgSpec,
  CommandSpec,
  FlagsOf,
  FlagSpec,
  FlagValue,
  FlagValues,
  ParsedArgs,
  PositionalOf,
} from "./_args.ts";

function oneLine(e: unknown): string {
  const s = e instanceof InputError || e instanceof FileError
    ? e.toString()
    : e instanceof Error
    ? e.message
    : typeof e === "object" && e !== null && "message" in e
    ? String((e as { message: unknown }).message)
    : String(e);
  return s.replace(/\s*\n\s*/g, " ");
}

/** What {@linkcode runMain} gives the program besides its arguments. */
export interface MainContext {
  /**
   * Aborted on the first SIGINT or SIGTERM (its `reason` is the signal's
   * name), whichever {@linkcode RunMainOptions.onSignal} says.
   */
  readonly signal: AbortSignal;
}

/** Options of {@linkcode runMain}. */
export interface RunMainOptions {
  /**
   * What the first SIGINT or SIGTERM does besides aborting
   * {@linkcode MainContext.signal}: `"interrupt"` (the default) interrupts
   * the program's fiber, so its finalizers run (child processes stopped and
   * awaited, temporary files removed); `"abort"` leaves the program to wind
   * down by itself on the abort.
   */
  readonly onSignal?: "interrupt" | "abort";
}

/** The exit code of a program stopped by each signal `runMain` handles (`128 + n`, as a shell reports it). */
export const SIGNAL_EXIT_CODES: Readonly<Record<"SIGINT" | "SIGTERM", number>> = {
  SIGINT: 130,
  SIGTERM: 143,
};

/**
 * Runs a stage as a script: parses `argv`, prints help on `--help`, refuses
 * to start (exit 1, one line) under a limit on open files below
 * {@linkcode MIN_OPEN_FILES} (`openFilesProblem`), runs the Effect built by
 * `program`, and exits with the conventional code. A failure
 * prints `name: <one line>` on stderr (the whole cause with `--debug`).
 *
 * SIGINT and SIGTERM do not kill the process outright: the first one
 * interrupts the program (see {@linkcode RunMainOptions.onSignal}), its
 * finalizers run to their end (each child process is stopped, SIGKILL 3 s
 * after SIGTERM, and awaited; temporary files are removed), and the process
 * exits 130 (SIGINT) or 143 (SIGTERM) with the line `name: interrupted
 * (SIGINT)`. Further signals while it winds down are ignored; SIGKILL
 * still stops it at once. The process the user started going away (npx,
 * `deno task` or the shell above this one: `runs/runners/lifeline.ts`) stops it the
 * same way as SIGTERM, with the line `name: interrupted (the process N it
 * was started under (...) ended)`. A signal that comes while the program
 * finishes (as its output is committed) is not lost: exit 0 means that
 * none came before the program was done. A program run with
 * `onSignal: "abort"` winds down by itself, and exits 0 when it then
 * succeeds (the server's graceful stop).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { runMain } from "./_cli.ts";
 * if (import.meta.main) {
 *   await runMain({ name: "hello", summary: "Says hello.", args: [], flags: [] },
 *     Deno.args, () => Effect.sync(() => console.log("hello")));
 * }
 * ```
 */
export async function runMain<const S extends CommandSpec>(
  spec: S,
  argv: readonly string[],
  program: (args: ParsedArgs<S>, ctx: MainContext) => Effect.Effect<unknown, unknown>,
  options: RunMainOptions = {},
): Promise<never> {
  const args = exitOnHelpOrUsageError(spec, argv);
  // Deno panics (uncatchable) when it cannot open what its runtime needs.
  const fds = openFilesProblem();
  if (fds !== undefined) {
    const e = new WorkError(fds);
    console.error(`${spec.name}: ${e.message}`);
    Deno.exit(exitCodeOf(e));
  }
  const ac = new AbortController();
  const fiber = Effect.runFork(Effect.suspend(() => program(args, { signal: ac.signal })));
  let caught: keyof typeof SIGNAL_EXIT_CODES | undefined;
  let caughtWhy = "";
  const stop = (sig: keyof typeof SIGNAL_EXIT_CODES, why: string) => {
    if (caught !== undefined) return; // winding down already
    caught = sig;
    caughtWhy = why;
    ac.abort(sig);
    if (options.onSignal !== "abort") Effect.runFork(Fiber.interrupt(fiber));
  };
  // Never removed: see below.
  for (const sig of Object.keys(SIGNAL_EXIT_CODES) as (keyof typeof SIGNAL_EXIT_CODES)[]) {
    try {
      Deno.addSignalListener(sig, () => stop(sig, sig));
    } catch { /* a platform without this signal */ }
  }
  // The process the user started (npx, `deno task`, a shell) going away stops
  // this one as SIGTERM would: see runs/runners/lifeline.ts.
  const lifeline = watchLifeline((why) => stop("SIGTERM", why));
  const exit = await Effect.runPromise(Fiber.await(fiber));
  lifeline.stop();
  // A signal the system delivered while the program was finishing (its output
  // being committed) reaches its listener only on a later turn of the event
  // loop: let it, before deciding, so that it is not lost and exit 0 means no
  // signal came before the work was done. The listeners stay until the exit:
  // removing them dropped a signal still on its way, and let the next one kill
  // the process without its line.
  // A program that winds down by itself on a signal (`onSignal: "abort"`, the
  // server's graceful stop) and then succeeds has stopped as it should: exit 0.
  if (Exit.isSuccess(exit) && options.onSignal === "abort") Deno.exit(0);
  if (Exit.isSuccess(exit) && caught === undefined) await drainSignals();
  if (Exit.isSuccess(exit) && caught === undefined) Deno.exit(0);
  if (caught !== undefined) {
    if (args.debug && Exit.isFailure(exit)) console.error(Cause.pretty(exit.cause));
    console.error(`${spec.name}: interrupted (${caughtWhy})`);
    Deno.exit(SIGNAL_EXIT_CODES[caught]);
  }
  if (Exit.isSuccess(exit)) Deno.exit(0);
  const err = Cause.squash(exit.cause);
  // The reader of our stdout went away (`| head`): stop quietly, as Unix tools do.
  if (/Broken pipe|BrokenPipe/.test(oneLine(err))) Deno.exit(0);
  if (args.debug) console.error(Cause.pretty(exit.cause));
  console.error(`${spec.name}: ${oneLine(err)}`);
  Deno.exit(exitCodeOf(err));
}

/** Two turns of the event loop, so that signals already delivered reach their listeners. */
async function drainSignals(): Promise<void> {
  for (let i = 0; i < 2; i++) await new Promise((r) => setTimeout(r, 0));
}

/** True when stderr is a terminal (progress is shown only then). */
export function showProgress(): boolean {
  try {
    return Deno.stderr.isTerminal();
  } catch {
    return false;
  }
}

/**
 * A progress line on stderr, redrawn at most 10 times a second; a no-op
 * when stderr is not a TTY.
 *
 * @example
 * ```ts
 * import { progress } from "./_cli.ts";
 * const p = progress("split");
 * p.update(10, "paragraphs");
 * p.done();
 * ```
 */
export function progress(label: string): { update(n: number, unit: string): void; done(): void } {
  if (!showProgress()) return { update() {}, done() {} };
  const enc = new TextEncoder();
  let last = 0;
  let shown = false;
  return {
    update(n, unit) {
      const now = performance.now();
      if (now - last < 100) return;
      last = now;
      shown = true;
      Deno.stderr.writeSync(enc.encode(`\r${label}: ${n} ${unit}\x1b[K`));
    },
    done() {
      if (shown) Deno.stderr.writeSync(enc.encode("\r\x1b[K"));
    },
  };
}
