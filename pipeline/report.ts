/**
 * `report INPUT... [--data DATA] [--out DIR] [--baseline NAME] [--seed S]
 * [--cluster article|paragraph|question] [--latex]`, and
 * `report --diff RUN_A RUN_B [--out DIR]`:
 * compares systems on the same questions and writes `report.json`,
 * `report.md` and `report.html` (`report/mod.ts`), for every dataset kind
 * (SQuAD v1.1 and v2.0, MRQA, XQuAD/MLQA, open-domain, generic sets), one
 * section per dataset. `report.json` carries the report's own provenance
 * block (`runs/provenance.ts`).
 *
 * `--diff RUN_A RUN_B` says why two runs (`full` or `run` folders with a
 * `provenance.json`) differ (`report/diff.ts`): the provenance keys that
 * differ (A → B), how many questions changed answer, EM gained and lost,
 * F1 up and down, the changed questions, and the paired tests of B − A on
 * EM and F1 (bootstrap interval, randomization p, McNemar, clustered). It
 * prints that, and with `--out` writes `report.{json,md,html}` there.
 *
 * This file is the command line (`--help` loads nothing else); the work,
 * `pipeline/_report.ts`, loads with `import()` only to run (Vega among it).
 *
 * @module
 */
import { type CommandSpec, exitOnHelpOrUsageError } from "./_args.ts";

/** The flags of this stage that take no value. */
const BOOLEAN_FLAGS = ["--help", "--debug", "--latex", "--diff"];

/**
 * The INPUTs of the command line, and the rest of it with only the first
 * INPUT left (the shared parser takes one value per positional argument;
 * every flag of this stage but --help, --debug, --latex and --diff takes a
 * value).
 */
function splitInputs(argv: readonly string[]): { inputs: string[]; rest: string[] } {
  const inputs: string[] = [];
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--") {
      inputs.push(...argv.slice(i + 1));
      break;
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
  return { inputs, rest: inputs.length > 0 ? [...rest, "--", inputs[0]] : rest };
}

/** The command line of `report` (its one INPUT stands for them all: see `splitInputs`). */
export const REPORT_SPEC = {
  name: "report",
  summary:
    "Compare systems on the same questions, on every dataset kind (each with its official EM/F1; SQuAD v2.0 HasAns/NoAns, a per-language table for XQuAD/MLQA, top-k curves of an open search): EM, F1 (BEM when the rows carry it) with 95% bootstrap CIs, each system against the baseline (difference with its paired CI, approximate-randomization p, McNemar p for EM), breakdowns by question type, gold answer length and article, the questions where the systems disagree most, and charts. Writes report.json, report.md and report.html (self-contained) into --out.",
  args: [
    {
      name: "INPUT...",
      description:
        "a full output folder, a run work folder (every model × dataset), or NAME=pred.json (with --data)",
    },
  ],
  flags: [
    {
      name: "data",
      type: "string",
      metavar: "DATA",
      description: "the dataset of NAME=pred.json inputs",
    },
    {
      name: "out",
      type: "string",
      metavar: "DIR",
      description: "output folder (default outputs/report_<YYYYMMDD_HHMMSS>)",
    },
    {
      name: "baseline",
      type: "string",
      metavar: "NAME",
      description: "the system the others are compared with (default: the first INPUT's)",
    },
    {
      name: "seed",
      type: "int",
      metavar: "S",
      default: 0,
      description: "seed of the bootstrap and the randomization test (0 or more)",
    },
    {
      name: "resamples",
      type: "int",
      metavar: "B",
      default: 1000,
      description: "bootstrap resamples (1 to 100000000)",
    },
    {
      name: "shuffles",
      type: "int",
      metavar: "R",
      default: 10000,
      description: "approximate-randomization shuffles (1 or more)",
    },
    {
      name: "cluster",
      type: "string",
      choices: ["article", "paragraph", "question"],
      description:
        "clusters of the clustered intervals and p-values (default: paragraph where the set has paragraphs, else question)",
    },
    {
      name: "latex",
      type: "boolean",
      description: "also write report.tex (a LaTeX tabular per dataset)",
    },
    {
      name: "diff",
      type: "boolean",
      description:
        "with two INPUTs RUN_A RUN_B (full or run folders with provenance.json): print what differs in provenance, the questions that changed answer, EM gained/lost, F1 up/down and the paired tests of B − A; with --out also write report.{json,md,html}",
    },
    {
      name: "top",
      type: "int",
      metavar: "N",
      default: 20,
      description:
        "questions in each disagreement list, and changed questions shown by --diff (0 or more)",
    },
  ],
  examples: [
    "outputs/20261201_002927 outputs/20261201_003512 --baseline sparse-pi",
    "outputs/20261201_002927 outputs/20261201_003512 --cluster article --latex",
    "--diff outputs/diff-a outputs/diff-b --out outputs/diff",
  ],
} as const satisfies CommandSpec;

if (import.meta.main) {
  const split = splitInputs(Deno.args);
  // `--help` and bad usage load nothing else; the report's modules load only to run.
  exitOnHelpOrUsageError(REPORT_SPEC, split.rest);
  const [{ runMain }, { reportCommand }] = await Promise.all([
    import("./_cli.ts"),
    import("./_report.ts"),
  ]);
  await runMain(REPORT_SPEC, split.rest, reportCommand(split.inputs));
}
