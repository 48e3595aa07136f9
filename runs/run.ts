/**
 * A run from a config file, in the style of OpenCompass (`deno task run`,
 * see `pipeline/run.ts`): load the config, choose the run folder, plan the
 * tasks, run them (local processes or Slurm job arrays: the runner is the
 * `RunnerService` of `runners/status.ts`, provided by the Layer the flags
 * choose, `LocalRunnerLive` or `SlurmRunnerLive`), record the invocation in
 * `runs.jsonl` and write the summary table.
 *
 * Everything goes to `<work-dir>/<YYYYMMDD_HHMMSS>/` (`outputs/` by
 * default): `configs/` (the resolved config), `logs/` (one file a task),
 * `datasets/`, `dumps/<model>/<dataset>/{context_emb,question_emb}`,
 * `predictions/<model>/<dataset>.json` with its per-question rows
 * `<dataset>.rows.ndjson` (`runs/plan/layout.ts`), `results/<model>/<dataset>.json`,
 * `summary/summary.{csv,md,txt}` (EM/F1/BEM with 95 % bootstrap intervals
 * over the rows, `runs/summary/summary.ts`), `provenance.json` (what each model ×
 * dataset was made from and with: flags, tool, machine, the config after
 * inheritance, the sha256 of the datasets, model files, dumps, prediction
 * and rows files; `runs/summary/provenance.ts`) and `runs.jsonl` (one line per
 * invocation: which tasks ran, were skipped, failed). Reusing a run folder
 * runs only the tasks whose outputs are incomplete. (The command line,
 * `pipeline/run.ts`, then writes the folder's report.)
 *
 * @module
 */
import * as Cause from "effect/Cause";
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import { FileError, InputError, UsageError } from "../io/errors.ts";
import { aliasProblem } from "../io/paths.ts";
import { displayPath, writeTextFileAtomic } from "../io/fs.ts";
import { chooseRunDir } from "./run_dir.ts";
import type { ResolvedRunConfig } from "./config/config.ts";
import { RunError } from "./errors.ts";
import { executeUntil } from "./runners/execute.ts";
import { runFolders, runLayout } from "./plan/layout.ts";
import { PROVENANCE_FILE, writeProvenance } from "../io/provenance.ts";
import { runProvenance, type SystemProvenance, systemProvenance } from "./summary/provenance.ts";
import { loadRunConfig } from "./config/load.ts";
import { LocalRunnerLive } from "./runners/local.ts";
import { ORT_ADDON, probeOrtOnImport } from "./sandbox/ort.ts";
import { planRun } from "./plan/plan.ts";
import { checkSlurm, SlurmRunnerLive } from "./runners/slurm.ts";
import { newStatus, type RunnerContext, type TaskStatus } from "./runners/status.ts";
import { formatSummary, readSummary, SUMMARY_SEED, type SummaryRow } from "./summary/summary.ts";
import { planTable } from "./plan/table.ts";
import { ProgressView, stderrSink, type ViewSink } from "./runners/view.ts";
import { type Mode, MODE_STAGES, type Plan } from "./plan/task.ts";
import { MAX_RETRIES, RUN_DEFAULTS } from "./config/defaults.ts";
import { logTail } from "./runners/logs.ts";

export { MAX_RETRIES, RUN_DEFAULTS };

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
  /**
   * Aborting it stops the run: the running tasks are interrupted (their
   * processes or Slurm jobs stopped and awaited), the run is recorded and
   * fails with "interrupted" (the CLI wires SIGINT/SIGTERM to it).
   * Interrupting the effect itself also stops every task.
   */
  readonly signal?: AbortSignal;
  /**
   * The command line's flags as parsed, recorded in `provenance.json`
   * (default `null`: called as a library function).
   */
  readonly flags?: Readonly<Record<string, unknown>>;
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

const abs = (p: string) => p.startsWith("/") ? p : `${Deno.cwd()}/${p}`;

/** Succeeds when `signal` is aborted. */
const aborted = (signal: AbortSignal): Effect.Effect<void> =>
  Effect.callback<void>((resume) => {
    if (signal.aborted) return resume(Effect.void);
    const on = () => resume(Effect.void);
    signal.addEventListener("abort", on, { once: true });
    return Effect.sync(() => signal.removeEventListener("abort", on));
  });

/** Writes a record or summary file of the run folder atomically (`io/fs.ts`). */
const writeRecord = (what: string, file: string, text: string) =>
  writeTextFileAtomic(file, text, (reason) => new RunError(`${what}: ${reason}`));

const tryDo = <A>(what: string, f: () => A) =>
  Effect.try({
    try: f,
    catch: (e) =>
      e instanceof UsageError || e instanceof InputError
        ? e
        : new RunError(`${what}: ${e instanceof Error ? e.message : e}`),
  });

/**
 * Writes `<run folder>/provenance.json` (`runs/summary/provenance.ts`): one entry per
 * model × dataset with a prediction file, its dumps hashed now.
 */
const writeRunProvenance = (
  plan: Plan,
  config: unknown,
  flags: Readonly<Record<string, unknown>> | null,
): Effect.Effect<void, RunError> =>
  Effect.gen(function* () {
    const layout = runLayout(plan.runDir);
    const systems: SystemProvenance[] = [];
    const known = new Map<string, string>(); // each dataset and corpus hashed once
    for (const ds of plan.config.datasets) {
      for (const m of plan.config.models) {
        try {
          if (!Deno.statSync(layout.prediction(m.abbr, ds.abbr)).isFile) continue;
        } catch {
          continue;
        }
        systems.push(yield* systemProvenance(layout, m, ds, undefined, known));
      }
    }
    const block = runProvenance({
      command: "run",
      flags,
      seeds: { summary_bootstrap: SUMMARY_SEED },
      config,
      systems,
    });
    yield* writeProvenance(`${plan.runDir}/${PROVENANCE_FILE}`, block);
  }).pipe(Effect.mapError((e) => new RunError(`provenance.json: ${e.toString()}`)));

/**
 * Plans and runs a config (see the module notes). Fails with
 * {@linkcode InputError} / {@linkcode UsageError} (exit 2) before anything
 * is created, or with {@linkcode RunError} when tasks failed: exit 1, or
 * exit 2 when a task failed on bad input (its process exited 2; it is not
 * retried, the run stops, and the error is that task's id and its own
 * error line). A rows file the summary cannot read as rows fails it with
 * that file's {@linkcode InputError} (exit 2; `runs/summary/summary.ts`),
 * before a summary file is written.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { REPO_ROOT } from "../io/repo.ts";
 * import { run } from "./run.ts";
 * // A dry run: the plan, nothing created.
 * const r = await Effect.runPromise(run({
 *   config: `${REPO_ROOT}/configs/eval_two_models_mini.ts`, dryRun: true, print: () => {},
 * }));
 * if (r.runDir !== null || r.plan.tasks[0].stage !== "prepare") throw new Error();
 * ```
 */
export const run = (
  opts: RunOptions,
): Effect.Effect<RunResult, InputError | UsageError | RunError> =>
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
    if (
      opts.retries !== undefined &&
      !(Number.isInteger(opts.retries) && opts.retries >= 0 && opts.retries <= MAX_RETRIES)
    ) {
      return yield* Effect.fail(
        new UsageError(
          `--retries must be an integer from 0 to ${MAX_RETRIES}, got ${opts.retries}`,
        ),
      );
    }
    const config: ResolvedRunConfig = yield* loadRunConfig(opts.config);
    if (opts.slurm) {
      yield* checkSlurm(opts.partition ?? null);
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
    const ortFfi = encodes ? yield* probeOrtOnImport() : undefined;
    const plan = yield* planRun(config, {
      runDir,
      maxPartitionSize,
      ortFfi,
      bemFfi: needsBem ? ORT_ADDON ?? undefined : undefined,
    });
    // No dataset or corpus may lie where the run writes (`deno task run` refuses with exit 2).
    const outFolders = runFolders(plan).map((d) => ({ name: "run folder", path: d, folder: true }));
    for (const ds of config.datasets) {
      const why = aliasProblem([
        { name: `dataset ${ds.abbr}`, path: ds.path },
        ...(ds.corpus !== undefined ? [{ name: `corpus of ${ds.abbr}`, path: ds.corpus }] : []),
      ], outFolders);
      if (why !== undefined) {
        return yield* Effect.fail(new InputError({ file: config.file, where: "", message: why }));
      }
    }
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
    const resolved = {
      ...config,
      run: {
        runner: opts.slurm ? "slurm" : "local",
        partition: opts.partition ?? null,
        maxPartitionSize,
        maxWorkers: workersGiven,
        taskTimeout: timeoutS,
        retries,
      },
    };
    const saved = `${runDir}/configs/${config.name}.json`;
    const record = JSON.stringify(resolved, null, 2) + "\n";
    yield* tryDo("run folder", () => {
      for (const d of [`${runDir}/configs`, `${runDir}/summary`, ...runFolders(plan)]) {
        Deno.mkdirSync(d, { recursive: true });
      }
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
    });
    yield* writeRecord("run folder", saved, record);
    // The runner is a service: the flags choose the Layer that provides it.
    const runnerLayer = opts.slurm
      ? SlurmRunnerLive({ partition: opts.partition ?? null, runDir, throttle: workersGiven })
      : LocalRunnerLive();
    const statuses: TaskStatus[] = [];
    const ctx: RunnerContext = {
      maxWorkers,
      timeoutS,
      retries,
      notify: (st, ev) => view.event(st, ev),
    };
    const started = new Date().toISOString();
    for (const t of plan.tasks) if (selected.has(t.stage)) statuses.push(newStatus(t));
    view.start(statuses);
    // The tasks run in a fiber of their own; the abort signal interrupts it
    // (and waits until every task has stopped).
    const exit = yield* executeUntil(
      plan.tasks,
      statuses,
      ctx,
      opts.signal !== undefined ? aborted(opts.signal) : Effect.never,
    ).pipe(Effect.provide(runnerLayer), Effect.ensuring(Effect.sync(() => view.stop())));
    const interrupted = opts.signal?.aborted === true;
    // A task that failed on bad input (exit 2) stopped the run (`executeUntil`): the
    // first to fail is the one named.
    const badInput = statuses.filter((x) => x.badInput && x.state === "failed")
      .sort((a, b) => (a.ended ?? 0) - (b.ended ?? 0))[0];
    const stopped = interrupted || badInput !== undefined;
    if (
      Exit.isFailure(exit) && !interrupted &&
      !(badInput !== undefined && Cause.hasInterruptsOnly(exit.cause))
    ) {
      return yield* Effect.fail(new RunError(`run: ${exit.cause}`));
    }
    const final = statuses;
    const ids = (s: string) => final.filter((x) => x.state === s).map((x) => x.task.id);
    const ran = final.filter((x) => x.attempts > 0).map((x) => x.task.id);
    // One line per invocation, appended: the file is written whole, atomically.
    const runs = `${runDir}/runs.jsonl`;
    const before = yield* tryDo("runs.jsonl", () => {
      try {
        return Deno.readTextFileSync(runs);
      } catch (e) {
        if (e instanceof Deno.errors.NotFound) return "";
        throw e;
      }
    });
    yield* writeRecord(
      "runs.jsonl",
      runs,
      before +
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
    );
    let summary: SummaryRow[] = [];
    if (selected.has("eval")) {
      // A rows file that is not rows stops the run here (exit 2), before any summary
      // file is written: a summary with an interval silently left out is worse than none.
      summary = yield* Effect.try({
        try: () => readSummary(plan),
        catch: (e) =>
          e instanceof InputError
            ? e
            : e instanceof FileError
            ? new RunError(`summary: ${e.toString()}`, e.exitCode)
            : new RunError(`summary: ${e instanceof Error ? e.message : e}`),
      });
      const s = formatSummary(summary);
      for (const ext of ["txt", "md", "csv"] as const) {
        yield* writeRecord("summary", `${runDir}/summary/summary.${ext}`, s[ext]);
      }
      print(s.txt);
      if (!stopped) yield* writeRunProvenance(plan, resolved, opts.flags ?? null);
    }
    print(`outputs: ${displayPath(runDir)}`);
    if (interrupted) return yield* Effect.fail(new RunError("interrupted: tasks stopped"));
    if (badInput !== undefined) {
      // The task's own error line (a stage's failure is one line naming its file and record).
      const line = logTail(badInput.task.log, 1)[0];
      return yield* Effect.fail(
        new RunError(
          `${badInput.task.id}: bad input (${badInput.error}), not retried: ${
            line ?? `see its log ${badInput.task.log}`
          }`,
          2,
        ),
      );
    }
    const bad = final.filter((x) => x.state !== "done" && x.state !== "skipped");
    if (bad.length > 0) {
      const f = bad.find((x) => x.state === "failed") ?? bad[0];
      return yield* Effect.fail(
        new RunError(
          `${bad.length} of ${final.length} tasks did not finish (${f.task.id}: ${f.state}${
            f.error ? `, ${f.error}` : ""
          }); rerun with -r to retry only those`,
        ),
      );
    }
    return { runDir, plan, statuses: final, summary };
  });
