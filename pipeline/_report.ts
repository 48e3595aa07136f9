/**
 * The work of `report` (`pipeline/report.ts`, which loads this module only
 * to run: `--help` and bad usage need none of it).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { report, reportDiff } from "../report/mod.ts";
import { UsageError } from "./_cli.ts";
import type { ParsedArgs } from "./_args.ts";
import type { REPORT_SPEC } from "./report.ts";

/**
 * `report`'s program over `inputs` (every INPUT of the command line) and
 * `searchError` (`--search-error`'s operands: EXACT, then every APPROX):
 * the report folder.
 */
export const reportCommand = (
  inputs: readonly string[],
  searchError?: readonly string[],
) =>
(a: ParsedArgs<typeof REPORT_SPEC>) =>
  Effect.gen(function* () {
    if (a.flags.diff === true) {
      if (inputs.length !== 2) {
        return yield* Effect.fail(
          new UsageError(`--diff takes two run folders RUN_A RUN_B, got ${inputs.length}`),
        );
      }
      for (const f of ["baseline", "latex", "export-slice", "labels"] as const) {
        if (a.flags[f] !== undefined && a.flags[f] !== false) {
          return yield* Effect.fail(new UsageError(`--${f} does not go with --diff`));
        }
      }
      if (searchError !== undefined) {
        return yield* Effect.fail(new UsageError("--search-error does not go with --diff"));
      }
      const d = yield* reportDiff({
        a: inputs[0],
        b: inputs[1],
        data: a.flags.data,
        out: a.flags.out,
        seed: a.flags.seed,
        resamples: a.flags.resamples,
        shuffles: a.flags.shuffles,
        top: a.flags.top,
        cluster: a.flags.cluster,
        flags: { ...a.flags, inputs: [...inputs] },
      });
      console.log(d.text.trimEnd());
      if (d.out !== null) console.log(`report --diff: ${d.out}/report.{json,md,html}`);
      return;
    }
    const r = yield* report({
      inputs: [...inputs],
      ...(searchError !== undefined && searchError.length > 0
        ? { searchError: { exact: searchError[0], approx: searchError.slice(1) } }
        : {}),
      data: a.flags.data,
      out: a.flags.out,
      baseline: a.flags.baseline,
      seed: a.flags.seed,
      resamples: a.flags.resamples,
      shuffles: a.flags.shuffles,
      top: a.flags.top,
      cluster: a.flags.cluster,
      latex: a.flags.latex,
      f1Threshold: a.flags["f1-threshold"],
      exportSlice: a.flags["export-slice"],
      labels: a.flags.labels,
      flags: { ...a.flags, inputs: [...inputs] },
    });
    const t = r.timings;
    const se = r.searches > 0 ? `, search error of ${r.searches} approximate searches` : "";
    console.log(
      `report: ${r.systems} systems${se} → ${r.out}/report.{html,md,json${
        a.flags.latex ? ",tex" : ""
      }}${
        r.slice ? `, slice → ${r.slice.file} (${r.slice.records} questions)` : ""
      } (score ${t.score} s, statistics ${t.stats} s, charts ${t.charts} s, write ${t.write} s)`,
    );
  });
