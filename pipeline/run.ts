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
 * tasks resubmitted up to `--retries`). A task that makes no progress for
 * `--task-timeout` seconds is killed and counts as a failed attempt.
 *
 * Everything goes to `<work-dir>/<YYYYMMDD_HHMMSS>/` (`outputs/` by
 * default): `configs/` (the resolved config), `logs/` (one file a task),
 * `datasets/`, `dumps/<model>/<dataset>/{context_emb,question_emb}`,
 * `predictions/<model>/<dataset>.json`, `results/<model>/<dataset>.json`,
 * `summary/summary.{csv,md,txt}` and `runs.jsonl` (one line per invocation:
 * which tasks ran, were skipped, failed). `-r` reuses the latest (or the
 * named) run folder and runs only the tasks whose outputs are incomplete.
 *
 * @module
 */
import { Effect } from "effect";
import { InputError } from "../io/errors.ts";
import { type CommandSpec, runMain, UsageError, WorkError } from "./_cli.ts";
import { timestamp } from "./full.ts";
import { displayPath, loadRunConfig, ORT_ADDON, type ResolvedRunConfig } from "./_run_config.ts";
import {
  executePlan,
  LocalRunner,
  newStatus,
  type Runner,
  type RunnerContext,
  type TaskStatus,
} from "./_run_exec.ts";
import {
  firstMissing,
  type Mode,
  MODE_STAGES,
  type Plan,
  planRun,
  probeOrtOnImport,
  runFolders,
  runLayout,
} from "./_run_plan.ts";
import { checkSlurm, SlurmRunner } from "./_run_slurm.ts";
import {
  formatSummary,
  ProgressView,
  stderrSink,
  type SummaryRow,
  textTable,
  type ViewSink,
} from "./_run_table.ts";

/** Defaults of the runner flags (a config may override them, flags override both). */
export const RUN_DEFAULTS = {
  maxPartitionSize: 2000,
  taskTimeout: 1800,
  retries: 2,
} as const;

/** Options of {@linkcode run}. */
export interface RunOptions {
  /** The run config module. */
  readonly config: string;
  /** Items per encode task. */
  readonly maxPartitionSize?: number;
  /** Local: processes at once; Slurm: array throttle (`%N`). */
  readonly maxWorkers?: number;
  /** Run on Slurm. */
  readonly slurm?: boolean;
  /** Slurm partition. */
  readonly partition?: string;
  /** Reuse a run folder: `"latest"` or its name (`YYYYMMDD_HHMMSS`) or path. */
  readonly reuse?: string;
  /** Which stages run (default `all`). */
  readonly mode?: Mode;
  /** Print the plan and stop (nothing is created). */
  readonly dryRun?: boolean;
  /** Parent of the run folders (default: the config's `workDir`, else `outputs`). */
  readonly workDir?: string;
  /** Seconds without progress before a task is killed. */
  readonly taskTimeout?: number;
  /** Extra attempts of a failed task. */
  readonly retries?: number;
  /** Where progress goes (default stderr). */
  readonly sink?: ViewSink;
  /** Where the plan and summary tables go (default stdout). */
  readonly print?: (text: string) => void;
  /** Aborting it stops the run (the CLI wires SIGINT/SIGTERM to it). */
  readonly signal?: AbortSignal;
}

/** What {@linkcode run} did. */
export interface RunResult {
  /** The run folder (`null` on a dry run without `-r`: nothing was created). */
  readonly runDir: string | null;
  /** The plan. */
  readonly plan: Plan;
  /** The selected tasks' final states (empty on a dry run). */
  readonly statuses: readonly TaskStatus[];
  /** The summary rows (empty unless eval ran or was complete). */
  readonly summary: readonly SummaryRow[];
}

const RUN_DIR_RE = /^\d{8}_\d{6}(_\d+)?$/;

const abs = (p: string) => p.startsWith("/") ? p : `${Deno.cwd()}/${p}`;

const isDir = (p: string) => {
  try {
    return Deno.statSync(p).isDirectory;
  } catch {
    return false;
  }
};

/** The run folder: reused (latest or named) or a new timestamped one (not created). */
function chooseRunDir(workDir: string, reuse: string | undefined): string {
  if (reuse === undefined) {
    const base = `${workDir}/${timestamp()}`;
    let dir = base;
    for (let i = 2; isDir(dir); i++) dir = `${base}_${i}`;
    return dir;
  }
  if (reuse === "latest") {
    let names: string[] = [];
    try {
      names = [...Deno.readDirSync(workDir)].filter((e) => e.isDirectory && RUN_DIR_RE.test(e.name))
        .map((e) => e.name);
    } catch { /* no work dir */ }
    if (names.length === 0) {
      throw new UsageError(`-r: no earlier run in ${displayPath(workDir)}`);
    }
    names.sort((a, b) =>
      a.slice(0, 15).localeCompare(b.slice(0, 15)) || a.length - b.length ||
      a.localeCompare(b)
    );
    return `${workDir}/${names[names.length - 1]}`;
  }
  const dir = reuse.includes("/") ? abs(reuse) : `${workDir}/${reuse}`;
  if (!isDir(dir)) throw new UsageError(`-r: no run folder ${displayPath(dir)}`);
  return dir;
}

/** The `--dry-run` table of a plan. */
export function planTable(plan: Plan, showComplete: boolean): string[] {
  const rows = plan.tasks.map((t, i) => [
    String(i),
    t.stage,
    t.model ?? "-",
    t.dataset,
    t.part ? `${t.part.index + 1}/${t.part.count}` : "-",
    t.range ? `${t.range[0]}:${t.range[1]}` : "-",
    String(t.items),
    t.unit,
    ...(showComplete ? [firstMissing(t) === undefined ? "complete" : "todo"] : []),
  ]);
  return textTable(
    [
      "#",
      "stage",
      "model",
      "dataset",
      "part",
      "range",
      "items",
      "unit",
      ...(showComplete ? ["status"] : []),
    ],
    rows,
  );
}

function readSummary(plan: Plan): SummaryRow[] {
  const L = runLayout(plan.runDir);
  const rows: SummaryRow[] = [];
  for (const ds of plan.config.datasets) {
    for (const m of plan.config.models) {
      let r: Record<string, unknown> | null = null;
      try {
        r = JSON.parse(Deno.readTextFileSync(L.result(m.abbr, ds.abbr)));
      } catch { /* no result */ }
      const num = (k: string) => typeof r?.[k] === "number" ? r[k] as number : null;
      rows.push({
        dataset: ds.abbr,
        model: m.abbr,
        em: num("exact_match"),
        f1: num("f1"),
        bem: ds.metrics.includes("bem") ? num("bem") : undefined,
      });
    }
  }
  return rows;
}

const tryDo = <A>(what: string, f: () => A) =>
  Effect.try({
    try: f,
    catch: (e) =>
      e instanceof UsageError || e instanceof InputError
        ? e
        : new WorkError(`${what}: ${e instanceof Error ? e.message : e}`),
  });

/**
 * Plans and runs a config (see the module notes). Fails with
 * {@linkcode InputError} / {@linkcode UsageError} (exit 2) before anything
 * is created, or with {@linkcode WorkError} (exit 1) when tasks failed.
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { run } from "./run.ts";
 * const r = await Effect.runPromise(run({
 *   config: "configs/eval_two_models_mini.ts", workDir: "/tmp/runs",
 * }));
 * r.summary; // [{ dataset: "squad-dev-mini", model: "sparse-pi", em: ..., f1: ..., bem: undefined }, ...]
 * ```
 */
export const run = (
  opts: RunOptions,
): Effect.Effect<RunResult, InputError | UsageError | WorkError> =>
  Effect.gen(function* () {
    const print = opts.print ?? ((t: string) => console.log(t.replace(/\n$/, "")));
    const mode = opts.mode ?? "all";
    if (opts.partition !== undefined && !opts.slurm) {
      return yield* Effect.fail(new UsageError("--partition needs --slurm"));
    }
    if ((mode === "merge" || mode === "eval") && opts.reuse === undefined && !opts.dryRun) {
      return yield* Effect.fail(
        new UsageError(`--mode ${mode} needs -r (a run folder with the earlier stages' outputs)`),
      );
    }
    const config: ResolvedRunConfig = yield* loadRunConfig(opts.config);
    if (opts.slurm) {
      yield* Effect.tryPromise({
        try: () => checkSlurm(opts.partition ?? null),
        catch: (e) => e instanceof UsageError ? e : new UsageError(String(e)),
      });
    }
    const workDir = abs(opts.workDir ?? config.workDir ?? "outputs");
    const runDir = yield* tryDo("run folder", () => chooseRunDir(workDir, opts.reuse));
    const maxPartitionSize = opts.maxPartitionSize ?? config.maxPartitionSize ??
      RUN_DEFAULTS.maxPartitionSize;
    const timeoutS = opts.taskTimeout ?? config.taskTimeout ?? RUN_DEFAULTS.taskTimeout;
    const retries = opts.retries ?? config.retries ?? RUN_DEFAULTS.retries;
    const workersGiven = opts.maxWorkers ?? config.maxWorkers ?? null;
    const maxWorkers = workersGiven ?? Math.max(1, navigator.hardwareConcurrency || 1);
    for (const [k, v] of Object.entries({ maxPartitionSize, timeoutS, maxWorkers })) {
      if (!(Number.isInteger(v) && v > 0)) {
        return yield* Effect.fail(new UsageError(`${k} must be a positive integer, got ${v}`));
      }
    }
    const selected = new Set(MODE_STAGES[mode]);
    const encodes = selected.has("encode_context") || selected.has("encode_question");
    const needsBem = selected.has("eval") && config.datasets.some((d) => d.bem !== null);
    const ortFfi = encodes ? yield* Effect.promise(() => probeOrtOnImport()) : undefined;
    const plan = yield* planRun(config, {
      runDir,
      maxPartitionSize,
      ortFfi,
      bemFfi: needsBem ? ORT_ADDON ?? undefined : undefined,
    });
    const runnerName = opts.slurm
      ? `slurm${opts.partition ? ` (partition ${opts.partition})` : ""}${
        workersGiven ? `, at most ${workersGiven} array tasks at once` : ""
      }`
      : `local, ${maxWorkers} worker${maxWorkers > 1 ? "s" : ""}`;
    const header = `run: ${displayPath(config.file)} → ${displayPath(runDir)}${
      opts.reuse !== undefined ? " (reused)" : ""
    }: ${config.models.length} model(s) × ${config.datasets.length} dataset(s), ${plan.tasks.length} tasks, partitions of ${maxPartitionSize}, ${runnerName}, mode ${mode}`;
    if (opts.dryRun) {
      print([header, ...planTable(plan, opts.reuse !== undefined)].join("\n") + "\n");
      return { runDir: opts.reuse !== undefined ? runDir : null, plan, statuses: [], summary: [] };
    }
    const sink = opts.sink ?? stderrSink();
    const view = new ProgressView(sink);
    view.message(header);
    // Create the folders and record the resolved config.
    yield* tryDo("run folder", () => {
      for (const d of runFolders(plan)) Deno.mkdirSync(d, { recursive: true });
      const saved = `${runDir}/configs/${config.name}.json`;
      const record = JSON.stringify(
        {
          ...config,
          run: {
            runner: opts.slurm ? "slurm" : "local",
            partition: opts.partition ?? null,
            maxPartitionSize,
            maxWorkers: workersGiven,
            taskTimeout: timeoutS,
            retries,
          },
        },
        null,
        2,
      ) + "\n";
      try {
        const old = JSON.parse(Deno.readTextFileSync(saved));
        const now = JSON.parse(record);
        if (JSON.stringify({ ...old, run: null }) !== JSON.stringify({ ...now, run: null })) {
          view.message(
            `run: note: the config differs from the one saved in ${
              displayPath(saved)
            }; complete outputs are kept`,
          );
        }
      } catch { /* first invocation */ }
      Deno.writeTextFileSync(saved, record);
    });
    const runner: Runner = opts.slurm
      ? new SlurmRunner({ partition: opts.partition ?? null, runDir, throttle: workersGiven })
      : new LocalRunner();
    const ac = new AbortController();
    const onOuterAbort = () => ac.abort();
    opts.signal?.addEventListener("abort", onOuterAbort);
    const statuses: TaskStatus[] = [];
    const ctx: RunnerContext = {
      maxWorkers,
      timeoutS,
      retries,
      signal: ac.signal,
      notify: (st, ev) => view.event(st, ev),
    };
    const started = new Date().toISOString();
    for (const t of plan.tasks) if (selected.has(t.stage)) statuses.push(newStatus(t));
    view.start(statuses);
    const result = yield* Effect.tryPromise({
      try: () => executePlan(plan.tasks, statuses, runner, ctx),
      catch: (e) => new WorkError(`run: ${e instanceof Error ? e.message : e}`),
    }).pipe(Effect.ensuring(Effect.sync(() => {
      view.stop();
      opts.signal?.removeEventListener("abort", onOuterAbort);
    })));
    const final = result.statuses;
    const ids = (s: string) => final.filter((x) => x.state === s).map((x) => x.task.id);
    const ran = final.filter((x) => x.attempts > 0).map((x) => x.task.id);
    const interrupted = ac.signal.aborted;
    yield* tryDo("runs.jsonl", () =>
      Deno.writeTextFileSync(
        `${runDir}/runs.jsonl`,
        JSON.stringify({
          started,
          ended: new Date().toISOString(),
          runner: opts.slurm ? "slurm" : "local",
          mode,
          reuse: opts.reuse !== undefined,
          interrupted,
          ran,
          attempts: Object.fromEntries(
            final.filter((x) => x.attempts > 0).map((x) => [x.task.id, x.attempts]),
          ),
          skipped: ids("skipped"),
          failed: ids("failed"),
          blocked: ids("blocked"),
          cancelled: ids("cancelled"),
        }) + "\n",
        { append: true },
      ));
    let summary: SummaryRow[] = [];
    if (selected.has("eval")) {
      summary = readSummary(plan);
      const s = formatSummary(summary);
      yield* tryDo("summary", () => {
        Deno.writeTextFileSync(`${runDir}/summary/summary.txt`, s.txt);
        Deno.writeTextFileSync(`${runDir}/summary/summary.md`, s.md);
        Deno.writeTextFileSync(`${runDir}/summary/summary.csv`, s.csv);
      });
      print(s.txt);
    }
    print(`outputs: ${displayPath(runDir)}`);
    if (interrupted) return yield* Effect.fail(new WorkError("interrupted: tasks stopped"));
    const bad = final.filter((x) => x.state !== "done" && x.state !== "skipped");
    if (bad.length > 0) {
      const f = bad.find((x) => x.state === "failed") ?? bad[0];
      return yield* Effect.fail(
        new WorkError(
          `${bad.length} of ${final.length} tasks did not finish (${f.task.id}: ${f.state}${
            f.error ? `, ${f.error}` : ""
          }); rerun with -r to retry only those`,
        ),
      );
    }
    return { runDir, plan, statuses: final, summary };
  });

/** The command line of `run`. */
export const RUN_SPEC: CommandSpec = {
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
      description: "-r [TS]: reuse the latest (or the named) run folder, run only what is missing",
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
      description: `extra attempts of a failed task (default ${RUN_DEFAULTS.retries})`,
    },
  ],
  epilog: `Examples:
  deno task run configs/eval_two_models_mini.ts --max-partition-size 32 --max-workers 2
  deno task run configs/eval_sparse_pi_dev.ts --slurm --partition debug
  deno task run configs/eval_sparse_pi_dev.ts -r            # finish the latest run
  deno task run configs/eval_sparse_pi_dev.ts --dry-run

Outputs: <work-dir>/<YYYYMMDD_HHMMSS>/{configs,logs,datasets,dumps,predictions,results,summary}/
and runs.jsonl. Paths in a config are relative to the config file.`,
};

/**
 * Rewrites `-r [TS]` into `--reuse=TS` (`--reuse=latest` without a value).
 *
 * @example
 * ```ts
 * import { expandReuseFlag } from "./run.ts";
 * expandReuseFlag(["c.ts", "-r"]); // ["c.ts", "--reuse=latest"]
 * expandReuseFlag(["-r", "20250101_000000", "c.ts"]); // ["--reuse=20250101_000000", "c.ts"]
 * ```
 */
export function expandReuseFlag(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "-r" || a === "--reuse") {
      const next = argv[i + 1];
      if (next !== undefined && !next.startsWith("-") && !/\.(m?[jt]sx?)$/.test(next)) {
        out.push(`--reuse=${next}`);
        i++;
      } else out.push("--reuse=latest");
    } else out.push(a);
  }
  return out;
}

if (import.meta.main) {
  const ac = new AbortController();
  const onSignal = (name: string) => () => {
    if (!ac.signal.aborted) {
      console.error(`run: ${name}: stopping the running tasks`);
      ac.abort();
    }
  };
  const sigint = onSignal("SIGINT"), sigterm = onSignal("SIGTERM");
  Deno.addSignalListener("SIGINT", sigint);
  Deno.addSignalListener("SIGTERM", sigterm);
  await runMain(RUN_SPEC, expandReuseFlag(Deno.args), (a) =>
    Effect.asVoid(run({
      config: a.positional["config.ts"],
      maxPartitionSize: a.flags["max-partition-size"] as number | undefined,
      maxWorkers: a.flags["max-workers"] as number | undefined,
      slurm: a.flags["slurm"] === true,
      partition: a.flags["partition"] as string | undefined,
      reuse: a.flags["reuse"] as string | undefined,
      mode: a.flags["mode"] as Mode,
      dryRun: a.flags["dry-run"] === true,
      workDir: a.flags["work-dir"] as string | undefined,
      taskTimeout: a.flags["task-timeout"] as number | undefined,
      retries: a.flags["retries"] as number | undefined,
      signal: ac.signal,
    })));
}
