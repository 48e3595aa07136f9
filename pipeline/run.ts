/**
 * `deno task run <config.ts> [--max-partition-size N] [--max-workers N]
 * [--slurm [--partition P]] [-r [TIMESTAMP]] [--mode all|encode|merge|eval]
 * [--dry-run] [--work-dir DIR] [--task-timeout S] [--retries N]`:
 * evaluation runs from config files, in the style of OpenCompass.
 *
 * The config (a TypeScript module, see `configs/types.ts`) names models and
 * datasets. For every dataset the run prepares the split once; for every
 * (model, dataset) pair it encodes contexts and questions in partitions of
 * at most N items (`embed_* --range A:B`, each process with permissions
 * narrowed to its input, model files and output folder), merges the
 * partitions' dumps into one prediction file and scores it. Tasks run as
 * local subprocesses (`--max-workers` at once) or as Slurm job arrays
 * (`--slurm`: one array per stage, one array task per partition, failed
 * tasks resubmitted up to `--retries`, at most 100). A task that makes no
 * progress for `--task-timeout` seconds is killed and counts as a failed
 * attempt. A task that exits 2 (bad input) is not retried: the run stops
 * and exits 2 with that task's error line.
 *
 * The engine is `runs/run.ts`; this file is the command line. Everything
 * goes to `<work-dir>/<YYYYMMDD_HHMMSS>/` (`outputs/` by
 * default): `configs/` (the resolved config), `logs/` (one file a task),
 * `datasets/`, `dumps/<model>/<dataset>/{context_emb,question_emb}`,
 * `predictions/<model>/<dataset>.json`, `results/<model>/<dataset>.json`,
 * `summary/summary.{csv,md,txt}` and `runs.jsonl` (one line per invocation:
 * which tasks ran, were skipped, failed). `-r` reuses the latest (or the
 * named) run folder and runs only the tasks whose outputs are incomplete.
 *
 * When a run that scored (mode `all` or `eval`) succeeds, this command
 * writes the report of its folder (`report/`, in process: every model ×
 * dataset, the first model the baseline) into `<run folder>/report/`
 * (`report.{html,md,json}`, replacing an earlier one) and prints its path.
 * The report is an extra, not part of the run: if it cannot be made, one
 * line `run: warning: no report: ...` goes to stderr and the exit status
 * stays the run's (0); `deno task report <run folder>` makes it later. A
 * failed or interrupted run gets no report.
 *
 * @module
 */
import { type CommandSpec, exitOnHelpOrUsageError } from "./_args.ts";
import { expandReuseFlag } from "./_run_args.ts";
import { MAX_RETRIES, RUN_DEFAULTS } from "../runs/config/defaults.ts";

export { expandReuseFlag };

export type { RunOptions, RunResult } from "../runs/run.ts";

/** The command line of `run`. */
export const RUN_SPEC = {
  name: "run",
  summary:
    "Evaluate models × datasets from a config file: split, encode in partitions (local processes or Slurm job arrays), merge, score, and write a summary table.",
  args: [{ name: "config.ts", description: "run config module (see configs/)" }],
  flags: [
    {
      name: "max-partition-size",
      type: "int",
      metavar: "N",
      description:
        `paragraphs (questions) per encode task (default: the config's, else ${RUN_DEFAULTS.maxPartitionSize})`,
    },
    {
      name: "max-workers",
      type: "int",
      metavar: "N",
      description: "local: processes at once (default: CPUs); slurm: array throttle",
    },
    { name: "slurm", type: "boolean", description: "run the tasks as Slurm job arrays" },
    { name: "partition", type: "string", metavar: "P", description: "Slurm partition" },
    {
      name: "reuse",
      type: "string",
      metavar: "TS",
      short: "r",
      optionalValue: true,
      description:
        "reuse the run folder named TS (alone: the latest one) and run only what is missing",
    },
    {
      name: "mode",
      type: "string",
      metavar: "MODE",
      choices: ["all", "encode", "merge", "eval"],
      default: "all",
      description: "which stages run",
    },
    { name: "dry-run", type: "boolean", description: "print the plan and exit" },
    {
      name: "work-dir",
      type: "string",
      metavar: "DIR",
      description: "parent of the run folders (default: outputs)",
    },
    {
      name: "task-timeout",
      type: "int",
      metavar: "S",
      description:
        `kill a task whose log and outputs do not change for S seconds (default ${RUN_DEFAULTS.taskTimeout})`,
    },
    {
      name: "retries",
      type: "int",
      metavar: "N",
      min: 0,
      description:
        `extra attempts of a failed task (default ${RUN_DEFAULTS.retries}, at most ${MAX_RETRIES}; none for a task that exits 2, bad input)`,
    },
  ],
  examples: [
    "configs/eval_two_models_mini.ts --max-partition-size 32 --max-workers 2",
    "configs/eval_sparse_pi_dev.ts --slurm --partition debug",
    "configs/eval_sparse_pi_dev.ts -r            # finish the latest run",
    "configs/eval_sparse_pi_dev.ts --dry-run",
  ],
  epilog:
    `Outputs: <work-dir>/<YYYYMMDD_HHMMSS>/{configs,logs,datasets,dumps,predictions,results,summary,report}/
and runs.jsonl. Paths in a config are relative to the config file.`,
} as const satisfies CommandSpec;

if (import.meta.main) {
  const argv = expandReuseFlag(Deno.args);
  // `--help` and bad usage load nothing else; the runner loads only to run.
  exitOnHelpOrUsageError(RUN_SPEC, argv);
  const [{ runMain }, { runCommand }] = await Promise.all([
    import("./_cli.ts"),
    import("./_run.ts"),
  ]);
  // SIGINT/SIGTERM abort the run: its tasks are interrupted, stopped and
  // awaited, the invocation is recorded, and the exit code is 130/143.
  await runMain(RUN_SPEC, argv, runCommand, { onSignal: "abort" });
}
