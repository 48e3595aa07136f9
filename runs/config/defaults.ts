/**
 * The defaults of `run`'s runner flags, in a module without imports: the
 * command's spec (its `--help`) shows them without loading the runner.
 * `runs/run.ts` re-exports them.
 *
 * @module
 */

/** Defaults of the runner flags (a config may override them, flags override both). */
export const RUN_DEFAULTS = {
  maxPartitionSize: 2000,
  taskTimeout: 1800,
  retries: 2,
} as const;

/**
 * The most extra attempts of a failed task a run takes (`retries` of a
 * config, `--retries`): retries are for transient failures (a node lost, a
 * task killed), and a failure that repeats a hundred times is not one.
 */
export const MAX_RETRIES = 100;
