/**
 * The `runs/` room: evaluation runs from config files (config schema,
 * loading, partitioning, task plans, the local and Slurm runners, the
 * progress view and summaries) and the one sandbox module that builds
 * every permission-narrowed `deno run` command line. Its sub-rooms:
 * `config/` (schema, loading, validation), `plan/` (tasks, partitions,
 * layout), `runners/` (executing a plan; the Local and Slurm runners as one
 * `RunnerService`), `sandbox/` (command lines and their grants) and
 * `summary/` (summaries and provenance); `run`, `full` and the single run
 * are at the top.
 *
 * @example
 * ```ts
 * import { encoderPermissions, partitions } from "./mod.ts";
 * if (partitions(3, 2).length !== 2) throw new Error();
 * if (!encoderPermissions({ input: "/i", out: "/o", files: [] })[0].startsWith("--allow-read=")) {
 *   throw new Error();
 * }
 * ```
 *
 * @module
 */
export {
  BatchSizesSchema,
  BemOptionsSchema,
  DatasetSchema,
  MetricName,
  ModelSchema,
  PathLike,
  RunConfigSchema,
} from "./config/schema.ts";
export {
  formatPath,
  type Metric,
  type ResolvedDataset,
  type ResolvedModel,
  type ResolvedRunConfig,
  validateRunConfig,
} from "./config/config.ts";
export { findImportCycle } from "./config/imports.ts";
export { loadRunConfig } from "./config/load.ts";
export { NON_DATA, toData } from "./config/config_loader.ts";
export { ORT_ADDON, probeOrtOnImport } from "./sandbox/ort.ts";
export {
  denoRunArgv,
  encoderGrants,
  encoderPermissions,
  type Grants,
  permissionFlags,
  type SandboxOptions,
} from "./sandbox/sandbox.ts";
export {
  type DatasetScan,
  type Mode,
  MODE_STAGES,
  type OutputCheck,
  type Plan,
  type Stage,
  STAGE_GROUPS,
  type Task,
} from "./plan/task.ts";
export { partitions } from "./plan/partition.ts";
export {
  PASSAGES_FILE,
  QUESTIONS_ONLY_FILE,
  runFolders,
  type RunLayout,
  runLayout,
} from "./plan/layout.ts";
export { encoderInput, type PlanOptions, planRun, scanDataset } from "./plan/plan.ts";
export { firstMissing, taskComplete } from "./plan/complete.ts";
export {
  BAD_INPUT_EXIT,
  newStatus,
  type Runner,
  type RunnerContext,
  RunnerService,
  type TaskEvent,
  type TaskState,
  type TaskStatus,
} from "./runners/status.ts";
export { appendLog, lastExitStatus, lastProgress, logTail } from "./runners/logs.ts";
export { endAttempt, executePlan, type ExecuteResult } from "./runners/execute.ts";
export { LocalRunner, LocalRunnerLive } from "./runners/local.ts";
export {
  arrayScript,
  checkSlurm,
  expandArrayString,
  shellQuote,
  type SlurmOptions,
  SlurmRunner,
  SlurmRunnerLive,
} from "./runners/slurm.ts";
export {
  describeTask,
  formatElapsed,
  ProgressView,
  renderStatusTable,
  stderrSink,
  type ViewSink,
} from "./runners/view.ts";
export { planTable, textTable } from "./plan/table.ts";
export {
  type Ci,
  formatSummary,
  type OpenSummary,
  readSummary,
  SUMMARY_RESAMPLES,
  SUMMARY_SEED,
  summaryInterval,
  type SummaryRow,
} from "./summary/summary.ts";
export { RunError } from "./errors.ts";
export { MAX_RETRIES, run, RUN_DEFAULTS, type RunOptions, type RunResult } from "./run.ts";
export { chooseRunDir, timestamp } from "./run_dir.ts";
export {
  planSingleRun,
  runStages,
  SINGLE_STAGE_NAMES,
  singleRunConfig,
  singleRunLayout,
  taskDetail,
  taskSeconds,
} from "./single.ts";
export {
  formatSingleRunSummary,
  type FullSummary,
  OFFICIAL_SPLIT_SHA256,
  type SingleRunFacts,
  singleRunSummary,
  type StagePermissions,
} from "./summary/single_summary.ts";
export { DEFAULT_DATA, full } from "./full.ts";
export type { FullOptions } from "./full.ts";
export { scoredSearch, type ScoredSearchOptions, type SearchProgress } from "./search.ts";
export {
  type DumpHashes,
  hashDumps,
  type ReportProvenance,
  reportProvenance,
  type RunProvenance,
  runProvenance,
  type SystemProvenance,
  systemProvenance,
} from "./summary/provenance.ts";
