/**
 * The work of `report` (`pipeline/report.ts`, which loads this module only
 * to run: `--help` and bad usage need none of it).
 *
 * @module
 */
import { Effect } from "effect";
import { report } from "../report/mod.ts";
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
