/**
 * `report INPUT... [--data DATA] [--out DIR] [--baseline NAME] [--seed S]
 * [--cluster article|paragraph|question] [--latex] [--f1-threshold X]
 * [--export-slice FILE] [--labels FILE] [--search-error EXACT APPROX...]`:
 * compares systems on the same questions and writes `report.json`,
 * `report.md` and `report.html` (`report/mod.ts`), for every dataset kind
 * (SQuAD v1.1 and v2.0, MRQA, XQuAD/MLQA, open-domain, generic sets), one
 * section per dataset. `--search-error EXACT APPROX...` adds a part on an
 * exact search against approximate ones (`report/search_error.ts`); with
 * it, INPUTs may be left out. Its operands run to the next option or `--`
 * (INPUTs go before it, or after `--`; `pipeline/_report_args.ts` splits
 * them). `report.json` carries the report's own provenance block
 * (`runs/summary/provenance.ts`).
 *
 * `report --diff RUN_A RUN_B [--out DIR]` says why two runs (`full` or
 * `run` folders with a `provenance.json`) differ (`report/diff.ts`): the
 * provenance keys that differ (A → B), how many questions changed answer,
 * EM gained and lost, F1 up and down, the changed questions, and the paired
 * tests of B − A on EM and F1 (bootstrap interval, randomization p,
 * McNemar, clustered). It prints that, and with `--out` writes
 * `report.{json,md,html}` there.
 *
 * This file is the command line (`--help` loads nothing else but
 * `pipeline/_report_args.ts`); the work, `pipeline/_report.ts`, loads with
 * `import()` only to run (Vega among it).
 *
 * @module
 */
import type { CommandSpec } from "./_args.ts";
import { exitOnReportUsageError, INPUTS_ARG, SEARCH_ERROR_FLAG } from "./_report_args.ts";

/** The command line of `report` (its one INPUT stands for them all: `_report_args.ts`). */
export const REPORT_SPEC = {
  name: "report",
  summary:
    "Compare systems on the same questions, on every dataset kind (each with its official EM/F1; SQuAD v2.0 HasAns/NoAns, a per-language table for XQuAD/MLQA, top-k curves of an open search): EM, F1 (BEM when the rows carry it) with 95% bootstrap CIs, each system against the baseline (difference with its paired CI, approximate-randomization p, McNemar p for EM), breakdowns by question type, gold answer length and article, the questions where the systems disagree most, where each system's metrics disagree (EM, F1, BEM, v2.0 no-answer decisions; counts and the most telling questions), and charts; a slice of those questions to label, and with labels each metric's agreement with people and the label-corrected accuracy. Writes report.json, report.md and report.html (self-contained) into --out.",
  args: [INPUTS_ARG],
  flags: [
    {
      name: "data",
      type: "string",
      metavar: "DATA",
      description:
        "the dataset of NAME=pred.json inputs (and of --search-error searches whose recorded dataset is not there)",
    },
    SEARCH_ERROR_FLAG,
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
    {
      name: "f1-threshold",
      type: "number",
      metavar: "X",
      default: 0.5,
      min: 0,
      exclusiveMin: true,
      description:
        "F1 at or above X counts a question right in the metric disagreements (at most 1)",
    },
    {
      name: "export-slice",
      type: "string",
      metavar: "FILE",
      description:
        "write each system's questions on which its metrics disagree as NDJSON, with an empty label to fill (correct or incorrect), in a random order",
    },
    {
      name: "labels",
      type: "string",
      metavar: "FILE",
      description:
        "people's labels (the slice with label filled, or {system, id, label} lines): each metric's agreement with them and the label-corrected accuracy",
    },
  ],
  examples: [
    "outputs/20261201_002927 outputs/20261201_003512 --baseline sparse-pi",
    "outputs/20261201_002927 outputs/20261201_003512 --cluster article --latex",
    "outputs/20261201_002927 --export-slice outputs/slice.ndjson",
    "outputs/20261201_002927 --labels outputs/slice.ndjson --f1-threshold 0.6",
    "--search-error out/exact.json out/ivf --out out/search_error",
    "--diff outputs/diff-a outputs/diff-b --out outputs/diff",
  ],
} as const satisfies CommandSpec;

if (import.meta.main) {
  // `--help` and bad usage load nothing else; the report's modules load only to run.
  const split = exitOnReportUsageError(REPORT_SPEC, Deno.args);
  const [{ runMain }, { reportCommand }] = await Promise.all([
    import("./_cli.ts"),
    import("./_report.ts"),
  ]);
  await runMain(REPORT_SPEC, split.rest, reportCommand(split.inputs, split.searchError));
}
