/**
 * Argument specs and their parser (the part of `pipeline/_cli.ts` without
 * Effect, so a stage can read its command line before Effect has loaded;
 * `_cli.ts` re-exports all of it).
 *
 * @module
 */
import { exitCodeOf, UsageError, WorkError } from "../io/errors.ts";
import { openFilesLimit } from "../io/limits.ts";

export { UsageError, WorkError };

/** A flag of a stage. */
export interface FlagSpec {
  /** Long name without dashes, e.g. `v2` for `--v2`. */
  readonly name: string;
  /** Value type; booleans take no value. */
  readonly type: "boolean" | "string" | "int" | "number";
  /** What it does (one line). */
  readonly description: string;
  /**
   * Value placeholder in help. The vocabulary is shared by every command:
   * `FILE` and `DIR` for paths, `K` for a number of ranks (`--top-k`), `N`
   * for other counts (the default of an `int` flag), `X` for a real (the
   * default of a `number` flag), `NAME` for an encoder or model name.
   */
  readonly metavar?: string;
  /** A one-letter alias (`r` for `-r`). */
  readonly short?: string;
  /** The value may be left out (help shows `[METAVAR]`); the command supplies it. */
  readonly optionalValue?: boolean;
  /** Allowed values for a string flag. */
  readonly choices?: readonly string[];
  /** Default value shown in help. */
  readonly default?: string | number | boolean;
  /**
   * Smallest value an `int` or `number` flag takes (a smaller one is a
   * usage error, exit 2); with {@linkcode FlagSpec.exclusiveMin} the value
   * must be above it.
   */
  readonly min?: number;
  /** `min` itself is refused: the value must be greater than it. */
  readonly exclusiveMin?: boolean;
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
  /**
   * Example command lines: the arguments after the command's name, an
   * optional `# comment` at the end. Help prints each as
   * `./phraseval <name> <example>`.
   */
  readonly examples?: readonly string[];
  /** Extra help text (notes), after the examples. */
  readonly epilog?: string;
  /** Flags that were renamed: old name → new name (the old one is refused with a pointer). */
  readonly renamed?: Readonly<Record<string, string>>;
}

/**
 * The value type of one flag: `boolean` for a boolean flag, `number` for an
 * int or number flag, the union of its `choices` (else `string`) for a
 * string flag; `| undefined` unless the flag is a boolean or has a default.
 */
export type FlagValue<F extends FlagSpec> = F["type"] extends "boolean" ? boolean
  :
    | (F["type"] extends "int" | "number" ? number
      : F extends { readonly choices: readonly (infer C)[] } ? C
      : string)
    | (F extends { readonly default: string | number } ? never : undefined);

/** The typed values of a list of flags: one property per flag, named as on the command line. */
export type FlagValues<L extends readonly FlagSpec[]> = {
  readonly [F in L[number] as F["name"]]: FlagValue<F>;
};

/** The typed flags of a spec. */
export type FlagsOf<S extends CommandSpec> = FlagValues<S["flags"]>;

/** The typed positional arguments of a spec (optional ones may be `undefined`). */
export type PositionalOf<S extends CommandSpec> = {
  readonly [A in S["args"][number] as A["name"]]: A extends { readonly optional: true }
    ? string | undefined
    : string;
};

/**
 * Parsed command line. With a spec written inline (or `as const`), the
 * flags and positional arguments are typed from it, so a stage reads
 * `a.flags.batch` as a `number` without a cast.
 */
export interface ParsedArgs<S extends CommandSpec = CommandSpec> {
  /** Positional values by name (absent optional ones are missing). */
  readonly positional: CommandSpec extends S ? Readonly<Record<string, string>>
    : PositionalOf<S>;
  /** Flag values by name (defaults applied). */
  readonly flags: CommandSpec extends S
    ? Readonly<Record<string, string | number | boolean | undefined>>
    : FlagsOf<S>;
  /** `--debug` was given. */
  readonly debug: boolean;
}

/**
 * Open files (descriptors) every command needs at least: its own files,
 * standard streams, and what Deno's runtime opens (its event loop, signal
 * handling, TLS certificates). Below it Deno itself may panic (a failure no
 * program can catch), so {@linkcode openFilesProblem} refuses to start.
 */
export const MIN_OPEN_FILES = 64;

/**
 * Why a command that needs `need` open files cannot start under this
 * process's limit (one line), or `undefined` when it can or the limit is
 * unknown. A limit too low is the environment failing (exit 1).
 *
 * @example
 * ```ts
 * import { openFilesProblem } from "./_args.ts";
 * if (openFilesProblem(1) !== undefined) throw new Error("1 open file is always allowed");
 * ```
 */
export function openFilesProblem(need: number = MIN_OPEN_FILES): string | undefined {
  const limit = openFilesLimit();
  if (limit === undefined || limit >= need) return undefined;
  return `the limit on open files (ulimit -n) is ${limit}, below the ${need} this command ` +
    `needs: raise it (ulimit -n ${Math.max(1024, need)})`;
}

/** How every README command and help text starts a command: the launcher at the repository root. */
export const LAUNCHER = "./phraseval";

/** The exit-status line every command's help ends its options with. */
export const EXIT_STATUS_LINE =
  "Exit status: 0 success, 1 the work failed, 2 bad usage or bad input, " +
  "130 stopped by SIGINT, 143 stopped by SIGTERM.";

/**
 * One placeholder per flag name, whatever the command: a flag of this name
 * shows this placeholder in every help text (a spec's own `metavar` for it
 * is ignored), so `--top-k` is `K` wherever it exists.
 */
export const FLAG_VOCABULARY: Readonly<Record<string, string>> = {
  encoder: "NAME",
  device: "DEVICE",
  model: "FILE",
  data: "FILE",
  context: "FILE",
  "top-k": "K",
  host: "ADDR",
  port: "N",
  nprobe: "N",
  nlist: "N",
  bpv: "B",
  candidates: "C",
  refine: "C",
  threads: "N",
  batch: "N",
  range: "A:B",
  seed: "N",
  "index-dir": "DIR",
  "work-dir": "DIR",
};

/**
 * The placeholder of a flag's value in help: {@linkcode FLAG_VOCABULARY}'s
 * for its name, else its own `metavar`, else its choices (`ip|l2`), else
 * `N` for an integer, `X` for a real, `VALUE` for a string.
 *
 * @example
 * ```ts
 * import { metavarOf } from "./_args.ts";
 * if (metavarOf({ name: "top-k", type: "int", metavar: "N", description: "" }) !== "K") {
 *   throw new Error();
 * }
 * if (metavarOf({ name: "metric", type: "string", choices: ["ip", "l2"], description: "" }) !== "ip|l2") {
 *   throw new Error();
 * }
 * ```
 */
export function metavarOf(f: FlagSpec): string {
  const v = FLAG_VOCABULARY[f.name] ?? f.metavar;
  if (v !== undefined) return v;
  if (f.choices !== undefined) return f.choices.join("|");
  return f.type === "int" ? "N" : f.type === "number" ? "X" : "VALUE";
}

/**
 * The `--help` text of a stage, the one generator of usage text: the usage
 * line (`./phraseval <name> <args> [options]`), the summary, the arguments,
 * the options (`-s, --name VALUE`, choices and default), the exit-status
 * line, the examples (each a whole command line) and the notes.
 *
 * @example
 * ```ts
 * import { helpText } from "./_args.ts";
 * const help = helpText({
 *   name: "x",
 *   summary: "Does x.",
 *   args: [{ name: "in", description: "input" }],
 *   flags: [{ name: "n", type: "int", description: "times", default: 1 }],
 *   examples: ["a.json --n 2"],
 * });
 * if (!help.startsWith("Usage: ./phraseval x in [options]\n\nDoes x.\n")) throw new Error(help);
 * if (!help.includes("  --n N") || !help.includes("  ./phraseval x a.json --n 2")) {
 *   throw new Error(help);
 * }
 * ```
 */
export function helpText(spec: CommandSpec): string {
  const usage = [
    LAUNCHER,
    spec.name,
    ...spec.args.map((a) => a.optional ? `[${a.name}]` : a.name),
    "[options]",
  ];
  const lines = [`Usage: ${usage.join(" ")}`, "", spec.summary, ""];
  if (spec.args.length) {
    lines.push("Arguments:");
    for (const a of spec.args) lines.push(`  ${a.name.padEnd(24)} ${a.description}`);
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
    { name: "help", type: "boolean", short: "h", description: "show this help and exit" },
  ];
  for (const f of all) {
    const value = f.type === "boolean"
      ? ""
      : f.optionalValue
      ? ` [${metavarOf(f)}]`
      : ` ${metavarOf(f)}`;
    const left = `${f.short ? `-${f.short}, ` : ""}--${f.name}${value}`;
    const extra = [
      f.choices && !value.includes(f.choices.join("|")) ? `one of ${f.choices.join("|")}` : "",
      f.default !== undefined && f.type !== "boolean" ? `default ${f.default}` : "",
    ].filter(Boolean).join("; ");
    const text = `${f.description}${extra ? ` (${extra})` : ""}`;
    lines.push(
      left.length > 24 ? `  ${left}\n${" ".repeat(27)}${text}` : `  ${left.padEnd(24)} ${text}`,
    );
  }
  lines.push("", EXIT_STATUS_LINE);
  if (spec.examples?.length) {
    lines.push("", spec.examples.length === 1 ? "Example:" : "Examples:");
    for (const e of spec.examples) lines.push(`  ${LAUNCHER} ${spec.name} ${e}`.trimEnd());
  }
  if (spec.epilog) lines.push("", spec.epilog.trimEnd());
  return lines.join("\n") + "\n";
}

/**
 * Parses `argv` against `spec`. `-` alone is a positional value (stdin or
 * stdout); `--` ends the flags; `--flag=value` and `--flag value` both work.
 * A number below a flag's `min` (see {@linkcode FlagSpec.min}) is refused.
 * Throws {@linkcode UsageError}. Returns `"help"` when `--help` was given.
 *
 * @example
 * ```ts
 * import { parseArgs } from "./_args.ts";
 * const a = parseArgs({
 *   name: "x",
 *   summary: "",
 *   args: [{ name: "in", description: "" }],
 *   flags: [{ name: "n", type: "int", default: 1, description: "" }],
 * }, ["in.json", "--n", "3"]);
 * if (a === "help" || a.flags.n !== 3 || a.positional.in !== "in.json") throw new Error();
 * ```
 */
export function parseArgs<const S extends CommandSpec>(
  spec: S,
  argv: readonly string[],
): ParsedArgs<S> | "help" {
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
        const long = spec.flags.find((f) => f.short !== undefined && `-${f.short}` === a);
        if (long === undefined || long.type !== "boolean") {
          throw new UsageError(`unknown option ${a}`);
        }
        flags[long.name] = true;
        continue;
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
    if (!f) {
      const now = spec.renamed?.[name];
      throw new UsageError(
        now === undefined ? `unknown option --${name}` : `--${name} is now --${now}`,
      );
    }
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
    if (f.type === "int" || f.type === "number") {
      const n = Number(v);
      if (f.type === "int" && !/^-?[0-9]+$/.test(v)) {
        throw new UsageError(`--${name} expects an integer, got "${v}"`);
      }
      if (v.trim() === "" || !Number.isFinite(n)) {
        throw new UsageError(`--${name} expects a number, got "${v}"`);
      }
      const low = f.min !== undefined && (f.exclusiveMin ? n <= f.min : n < f.min);
      if (low) {
        throw new UsageError(
          `--${name} must be ${f.exclusiveMin ? "greater than" : "at least"} ${f.min}, got ${v}`,
        );
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
  return { positional, flags, debug } as unknown as ParsedArgs<S>;
}

/**
 * Writes `spec`'s help to stdout and returns `true` when `argv` asks for it,
 * read as {@linkcode parseArgs} reads it; `false` otherwise, bad usage
 * included (the command's `runMain` reports that). A command file calls it
 * before it loads the modules of its work, so `--help` loads none of them.
 *
 * @example
 * ```ts
 * import { printHelpIfAsked } from "./_args.ts";
 * const spec = { name: "demo", summary: "A demo.", args: [], flags: [] };
 * if (printHelpIfAsked(spec, ["--", "--help"])) throw new Error("after --, not a request");
 * ```
 */
export function printHelpIfAsked(spec: CommandSpec, argv: readonly string[]): boolean {
  let parsed: ParsedArgs | "help";
  try {
    parsed = parseArgs(spec, argv);
  } catch {
    return false;
  }
  if (parsed !== "help") return false;
  writeHelp(spec);
  return true;
}

/** Writes `spec`'s help to stdout, all of it. */
function writeHelp(spec: CommandSpec): void {
  const bytes = new TextEncoder().encode(helpText(spec));
  let off = 0;
  while (off < bytes.length) off += Deno.stdout.writeSync(bytes.subarray(off));
}

/**
 * The line a command prints on stderr for bad usage (exit 2): `name: <what
 * is wrong> (see --help)`, on one line.
 *
 * @example
 * ```ts
 * import { usageLine, UsageError } from "./_args.ts";
 * const line = usageLine("x", new UsageError("unknown option --y"));
 * if (line !== "x: unknown option --y (see --help)") throw new Error(line);
 * ```
 */
export function usageLine(name: string, e: unknown): string {
  const what = e instanceof Error ? e.message : String(e);
  return `${name}: ${what.replace(/\s*\n\s*/g, " ")} (see --help)`;
}

/**
 * What every command does with its command line before it loads its work:
 * `--help` writes the help to stdout and exits 0; bad usage (what
 * {@linkcode parseArgs} refuses) writes {@linkcode usageLine} on stderr and
 * exits 2; any other command line returns, parsed. `runMain`
 * (`pipeline/_cli.ts`) starts with it, and a command file calls it before
 * its `import()` of the modules of its work, so neither `--help` nor a
 * usage error loads them.
 *
 * @example
 * ```ts
 * import { exitOnHelpOrUsageError } from "./_args.ts";
 * const spec = { name: "demo", summary: "A demo.", args: [], flags: [] } as const;
 * const a = exitOnHelpOrUsageError(spec, ["--debug"]);
 * if (!a.debug) throw new Error("--debug is parsed");
 * ```
 */
export function exitOnHelpOrUsageError<const S extends CommandSpec>(
  spec: S,
  argv: readonly string[],
): ParsedArgs<S> {
  let parsed: ParsedArgs<S> | "help";
  try {
    parsed = parseArgs(spec, argv);
  } catch (e) {
    console.error(usageLine(spec.name, e));
    Deno.exit(exitCodeOf(e));
  }
  if (parsed === "help") {
    writeHelp(spec);
    Deno.exit(0);
  }
  return parsed;
}
