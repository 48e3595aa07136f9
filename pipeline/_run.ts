/**
 * The work of `run` (`pipeline/run.ts`, which loads this module only to
 * run: `--help` and bad usage need none of it): the runner (`runs/run.ts`),
 * then the report of a run that scored (`report/`, loaded only then).
 *
 * @module
 */
import * as Cause from "effect/Cause";
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import { run, type RunResult } from "../runs/run.ts";
import type { MainContext } from "./_cli.ts";
import type { ParsedArgs } from "./_args.ts";
import type { RUN_SPEC } from "./run.ts";

/**
 * Writes the report of a finished run's folder into `<run folder>/report/`
 * (see `pipeline/run.ts`'s module notes). Never fails: a report that cannot be made is one
 * warning line on stderr. Returns the report folder, or `null` (no report:
 * a dry run, a mode without `eval`, or the warning).
 */
export const writeRunReport = (r: RunResult): Effect.Effect<string | null> =>
  Effect.gen(function* () {
    if (r.runDir === null || r.summary.length === 0) return null;
    const out = `${r.runDir}/report`;
    // Loaded only here: the charts' Vega modules are not needed to run tasks.
    const exit = yield* Effect.exit(
      Effect.flatMap(
        Effect.promise(() => import("../report/mod.ts")),
        (m) => m.report({ inputs: [r.runDir!], out }),
      ),
    );
    if (Exit.isSuccess(exit)) {
      console.log(`report: ${out}/report.{html,md,json}`);
      return out;
    }
    const e = Cause.squash(exit.cause);
    const line = (e instanceof Error ? e.toString() : String(e)).replace(/\s*\n\s*/g, " ");
    console.error(`run: warning: no report (${line}); the run succeeded`);
    return null;
  });

/** `run`'s program: the run of the config, then its report; `signal` aborts the run. */
export const runCommand = (a: ParsedArgs<typeof RUN_SPEC>, { signal }: MainContext) => {
  signal.addEventListener("abort", () => {
    console.error(`run: ${signal.reason}: stopping the running tasks`);
  }, { once: true });
  return Effect.asVoid(Effect.flatMap(
    run({
      config: a.positional["config.ts"],
      maxPartitionSize: a.flags["max-partition-size"],
      maxWorkers: a.flags["max-workers"],
      slurm: a.flags["slurm"] === true,
      partition: a.flags["partition"],
      reuse: a.flags["reuse"],
      mode: a.flags["mode"],
      dryRun: a.flags["dry-run"] === true,
      workDir: a.flags["work-dir"],
      taskTimeout: a.flags["task-timeout"],
      retries: a.flags["retries"],
      signal,
      flags: a.flags,
    }),
    writeRunReport,
  ));
};
