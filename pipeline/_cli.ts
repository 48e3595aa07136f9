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
import { FileError, InputError, UsageError } from "../io/errors.ts";

import { type CommandSpec, helpText, parseArgs, type ParsedArgs } from "./_args.ts";

export { helpText, parseArgs, UsageError, WorkError } from "./_args.ts";
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

/**
 * Exit code for an error value: 2 for bad usage/input, 1 otherwise.
 *
 * @example
 * ```ts
 * import { exitCodeOf } from "./_cli.ts";
 * import { InputError, UsageError } from "../io/errors.ts";
 * if (exitCodeOf(new UsageError("bad flag")) !== 2) throw new Error();
 * if (exitCodeOf(new InputError({ file: "x", where: "", message: "bad" })) !== 2) throw new Error();
 * if (exitCodeOf(new Error("crash")) !== 1) throw new Error();
 * ```
 */
export function exitCodeOf(e: unknown): 1 | 2 {
  if (e instanceof UsageError || e instanceof InputError || e instanceof FileError) return 2;
  if (typeof e === "object" && e !== null && (e as { exitCode?: number }).exitCode === 2) return 2;
  return 1;
}

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

/**
 * Runs a stage as a script: parses `argv`, prints help on `--help`, runs the
 * Effect built by `program`, and exits with the conventional code. A failure
 * prints `name: <one line>` on stderr (the whole cause with `--debug`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
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
  program: (args: ParsedArgs<S>) => Effect.Effect<unknown, unknown>,
): Promise<never> {
  let parsed: ParsedArgs<S> | "help";
  try {
    parsed = parseArgs(spec, argv);
  } catch (e) {
    console.error(`${spec.name}: ${oneLine(e)} (see --help)`);
    Deno.exit(2);
  }
  if (parsed === "help") {
    await Deno.stdout.write(new TextEncoder().encode(helpText(spec)));
    Deno.exit(0);
  }
  const exit = await Effect.runPromiseExit(
    Effect.suspend(() => program(parsed)),
  );
  if (Exit.isSuccess(exit)) Deno.exit(0);
  const err = Cause.squash(exit.cause);
  // The reader of our stdout went away (`| head`): stop quietly, as Unix tools do.
  if (/Broken pipe|BrokenPipe/.test(oneLine(err))) Deno.exit(0);
  if (parsed.debug) console.error(Cause.pretty(exit.cause));
  console.error(`${spec.name}: ${oneLine(err)}`);
  Deno.exit(exitCodeOf(err));
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
