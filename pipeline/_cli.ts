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

export { UsageError };

/** A flag of a stage. */
export interface FlagSpec {
  /** Long name without dashes, e.g. `v2` for `--v2`. */
  readonly name: string;
  /** Value type; booleans take no value. */
  readonly type: "boolean" | "string" | "int" | "number";
  /** What it does (one line). */
  readonly description: string;
  /** Value placeholder in help, e.g. `N`. */
  readonly metavar?: string;
  /** Allowed values for a string flag. */
  readonly choices?: readonly string[];
  /** Default value shown in help. */
  readonly default?: string | number | boolean;
}

/** A positional argument of a stage. */
export interface ArgSpec {
  /** Name shown in usage. */
  readonly name: string;
  /** What it is. */
  readonly description: string;
  /** May be left out. */
  readonly optional?: boolean;
}

/** A stage's command line. */
export interface CommandSpec {
  /** Stage name (`split`, `evaluate`, ...). */
  readonly name: string;
  /** One-paragraph description. */
  readonly summary: string;
  /** Positional arguments in order. */
  readonly args: readonly ArgSpec[];
  /** Flags (`--help` and `--debug` are added). */
  readonly flags: readonly FlagSpec[];
  /** Extra help text (examples, notes). */
  readonly epilog?: string;
}

/** Parsed command line. */
export interface ParsedArgs {
  /** Positional values by name (absent optional ones are missing). */
  readonly positional: Readonly<Record<string, string>>;
  /** Flag values by name (defaults applied). */
  readonly flags: Readonly<Record<string, string | number | boolean | undefined>>;
  /** `--debug` was given. */
  readonly debug: boolean;
}

/**
 * A failure of the work itself (exit code 1), as opposed to bad input.
 */
export class WorkError extends Error {
  /** Tag for matching. */
  readonly _tag = "WorkError";
}

/**
 * The `--help` text of a stage.
 *
 * @example
 * ```ts
 * import { helpText } from "./_cli.ts";
 * helpText({ name: "x", summary: "Does x.", args: [], flags: [] });
 * ```
 */
export function helpText(spec: CommandSpec): string {
  const usageArgs = spec.args.map((a) => a.optional ? `[${a.name}]` : a.name).join(" ");
  const lines = [
    `Usage: ${spec.name} ${usageArgs}${spec.flags.length ? " [options]" : ""}`.trimEnd(),
    "",
    spec.summary,
    "",
  ];
  if (spec.args.length) {
    lines.push("Arguments:");
    for (const a of spec.args) lines.push(`  ${a.name.padEnd(22)} ${a.description}`);
    lines.push("");
  }
  lines.push("Options:");
  const all: FlagSpec[] = [
    ...spec.flags,
    {
      name: "debug",
      type: "boolean",
      description: "print the full error (stack trace) on failure",
    },
    { name: "help", type: "boolean", description: "show this help and exit" },
  ];
  for (const f of all) {
    const left = `--${f.name}${
      f.type === "boolean" ? "" : ` ${f.metavar ?? f.type.toUpperCase()}`
    }`;
    const extra = [
      f.choices ? `one of ${f.choices.join("|")}` : "",
      f.default !== undefined && f.type !== "boolean" ? `default ${f.default}` : "",
    ].filter(Boolean).join("; ");
    lines.push(`  ${left.padEnd(22)} ${f.description}${extra ? ` (${extra})` : ""}`);
  }
  lines.push("", "Exit status: 0 success, 1 the work failed, 2 bad usage or bad input.");
  if (spec.epilog) lines.push("", spec.epilog.trimEnd());
  return lines.join("\n") + "\n";
}

/**
 * Parses `argv` against `spec`. `-` alone is a positional value (stdin or
 * stdout); `--` ends the flags; `--flag=value` and `--flag value` both work.
 * Throws {@linkcode UsageError}. Returns `"help"` when `--help` was given.
 *
 * @example
 * ```ts
 * import { parseArgs } from "./_cli.ts";
 * const spec = { name: "x", summary: "", args: [{ name: "in", description: "" }],
 *   flags: [{ name: "n", type: "int", description: "" } as const] };
 * parseArgs(spec, ["in.json", "--n", "3"]);
 * ```
 */
export function parseArgs(spec: CommandSpec, argv: readonly string[]): ParsedArgs | "help" {
  const byName = new Map(spec.flags.map((f) => [f.name, f]));
  const flags: Record<string, string | number | boolean | undefined> = {};
  for (const f of spec.flags) {
    flags[f.name] = f.type === "boolean" ? (f.default ?? false) : f.default;
  }
  const rest: string[] = [];
  let debug = false;
  let onlyPositional = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (onlyPositional || !a.startsWith("--")) {
      if (!onlyPositional && a.startsWith("-") && a !== "-") {
        if (a === "-h") return "help";
        throw new UsageError(`unknown option ${a}`);
      }
      rest.push(a);
      continue;
    }
    if (a === "--") {
      onlyPositional = true;
      continue;
    }
    const eq = a.indexOf("=");
    const name = a.slice(2, eq < 0 ? undefined : eq);
    if (name === "help") return "help";
    if (name === "debug") {
      debug = true;
      continue;
    }
    const f = byName.get(name);
    if (!f) throw new UsageError(`unknown option --${name}`);
    if (f.type === "boolean") {
      if (eq >= 0) throw new UsageError(`--${name} takes no value`);
      flags[name] = true;
      continue;
    }
    let v: string;
    if (eq >= 0) v = a.slice(eq + 1);
    else {
      if (i + 1 >= argv.length) throw new UsageError(`--${name} needs a value`);
      v = argv[++i];
    }
    if (f.type === "int") {
      if (!/^-?[0-9]+$/.test(v)) throw new UsageError(`--${name} expects an integer, got "${v}"`);
      flags[name] = Number(v);
    } else if (f.type === "number") {
      const n = Number(v);
      if (v.trim() === "" || !Number.isFinite(n)) {
        throw new UsageError(`--${name} expects a number, got "${v}"`);
      }
      flags[name] = n;
    } else {
      if (f.choices && !f.choices.includes(v)) {
        throw new UsageError(`--${name} must be one of ${f.choices.join(", ")}, got "${v}"`);
      }
      flags[name] = v;
    }
  }
  const required = spec.args.filter((a) => !a.optional).length;
  if (rest.length < required) {
    throw new UsageError(
      `missing argument${required - rest.length > 1 ? "s" : ""}: ${
        spec.args.slice(rest.length).filter((a) => !a.optional).map((a) => a.name).join(" ")
      }`,
    );
  }
  if (rest.length > spec.args.length) {
    throw new UsageError(`unexpected argument "${rest[spec.args.length]}"`);
  }
  const positional: Record<string, string> = {};
  spec.args.forEach((a, i) => {
    if (i < rest.length) positional[a.name] = rest[i];
  });
  return { positional, flags, debug };
}

/** Exit code for an error value: 2 for bad usage/input, 1 otherwise. */
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
export async function runMain<E>(
  spec: CommandSpec,
  argv: readonly string[],
  program: (args: ParsedArgs) => Effect.Effect<unknown, E>,
): Promise<never> {
  let parsed: ParsedArgs | "help";
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
    Effect.suspend(() => program(parsed as ParsedArgs)),
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
