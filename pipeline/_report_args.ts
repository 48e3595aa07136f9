/**
 * The two parts of `report`'s command line (`pipeline/report.ts`) that take
 * more than one value, `INPUT...` and `--search-error EXACT APPROX...`:
 * their entries of the spec, and the split of the command line that gathers
 * their values before the shared parser, which takes one value per
 * positional argument and per flag, reads the rest. `--help` loads this
 * module, so it imports only the argument parser.
 *
 * @module
 */
import {
  type ArgSpec,
  type CommandSpec,
  exitOnHelpOrUsageError,
  type FlagSpec,
  UsageError,
  usageLine,
} from "./_args.ts";
import { exitCodeOf } from "../io/errors.ts";

/** `INPUT...`: the positional argument that {@linkcode splitInputs} lets repeat. */
export const INPUTS_ARG = {
  name: "INPUT...",
  optional: true,
  description:
    "a full output folder, a run work folder (every model × dataset), or NAME=pred.json (with --data); none with --search-error alone",
} as const satisfies ArgSpec;

/** `--search-error EXACT APPROX...`: the flag whose operands {@linkcode splitInputs} gathers. */
export const SEARCH_ERROR_FLAG = {
  name: "search-error",
  type: "string",
  metavar: "EXACT APPROX...",
  description:
    "search error against model error: EXACT an exact search, each APPROX an approximate (ivf-pq) one of the same question vectors (a search's pred.json with its <stem>.search.json and --topk-out file, or a folder of searches); the questions right in both, lost to the search, wrong in both, saved by chance; recall@k of the exact top-1; EM against nprobe/candidates (with probe_tau where a search had one) with q/s and memory. Its operands end at the next option or --",
} as const satisfies FlagSpec;

/** The flags of `report` that take no value. */
const BOOLEAN_FLAGS = ["--help", "--debug", "--latex", "--diff"];

/** The command line split: the INPUTs, `--search-error`'s operands, and the rest for the parser. */
export interface SplitArgs {
  readonly inputs: string[];
  /** `--search-error`'s operands (EXACT, then every APPROX), or `undefined`. */
  readonly searchError: string[] | undefined;
  /** What is wrong with `--search-error`, reported after `--help` had its chance. */
  readonly problem: string | undefined;
  readonly rest: string[];
}

/**
 * The INPUTs of the command line, `--search-error`'s operands (every
 * argument after it up to the next option or `--`), and the rest of the
 * command line with only the first INPUT left and `--search-error`'s first
 * operand as its value (the shared parser takes one value per positional
 * argument and per flag; every flag of this stage but --help, --debug,
 * --latex and --diff takes a value).
 *
 * @example
 * ```ts
 * import { splitInputs } from "./_report_args.ts";
 * const s = splitInputs(["a", "--search-error", "e.json", "x.json", "y.json", "--latex", "b"]);
 * if (s.inputs.join(" ") !== "a b" || s.searchError?.join(" ") !== "e.json x.json y.json") {
 *   throw new Error(JSON.stringify(s));
 * }
 * if (s.rest.join(" ") !== "--search-error e.json --latex -- a") throw new Error(s.rest.join(" "));
 * ```
 */
export function splitInputs(argv: readonly string[]): SplitArgs {
  const inputs: string[] = [];
  const rest: string[] = [];
  let searchError: string[] | undefined;
  let problem: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--") {
      inputs.push(...argv.slice(i + 1));
      break;
    }
    if (a === "--search-error") {
      const ops: string[] = [];
      while (i + 1 < argv.length && !argv[i + 1].startsWith("-")) ops.push(argv[++i]);
      if (searchError !== undefined) {
        problem ??= "--search-error is given once: EXACT, then every APPROX";
      } else if (ops.length === 1) {
        problem ??= "--search-error takes EXACT and at least one APPROX";
      }
      searchError ??= ops;
      rest.push(a);
      if (ops.length > 0) rest.push(ops[0]);
      continue;
    }
    if (a.startsWith("--search-error=")) {
      problem ??= "--search-error takes its operands apart: --search-error EXACT APPROX...";
      continue;
    }
    if (a.startsWith("-") && a !== "-") {
      rest.push(a);
      if (a.startsWith("--") && !a.includes("=") && !BOOLEAN_FLAGS.includes(a)) {
        if (i + 1 < argv.length) rest.push(argv[++i]);
      }
      continue;
    }
    inputs.push(a);
  }
  return {
    inputs,
    searchError,
    problem,
    rest: inputs.length > 0 ? [...rest, "--", inputs[0]] : rest,
  };
}

/**
 * What `report` does with its command line `argv` before it loads its work:
 * splits it ({@linkcode splitInputs}); `--help` and bad usage exit as in
 * every command (`exitOnHelpOrUsageError`, on the split's rest); then a
 * `--search-error` without its operands writes its usage line on stderr
 * and exits 2. Returns the split.
 *
 * @example
 * ```ts
 * import { exitOnReportUsageError } from "./_report_args.ts";
 * const spec = { name: "demo", summary: "", args: [], flags: [] } as const;
 * if (exitOnReportUsageError(spec, []).inputs.length !== 0) throw new Error();
 * ```
 */
export function exitOnReportUsageError(spec: CommandSpec, argv: readonly string[]): SplitArgs {
  const split = splitInputs(argv);
  exitOnHelpOrUsageError(spec, split.rest);
  if (split.problem !== undefined) {
    const e = new UsageError(split.problem);
    console.error(usageLine(spec.name, e));
    Deno.exit(exitCodeOf(e));
  }
  return split;
}
