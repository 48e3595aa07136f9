/**
 * Argument specs and their parser (the part of `pipeline/_cli.ts` without
 * Effect, so a stage can read its command line before Effect has loaded;
 * `_cli.ts` re-exports all of it).
 *
 * @module
 */
import { UsageError } from "../io/errors.ts";

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
 * import { helpText } from "./_args.ts";
 * const help = helpText({ name: "x", summary: "Does x.", args: [], flags: [] });
 * if (!help.startsWith("Usage: x\n\nDoes x.\n")) throw new Error(help);
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
  return { positional, flags, debug } as unknown as ParsedArgs<S>;
}
