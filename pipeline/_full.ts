/**
 * The work of `full` (`pipeline/full.ts`, which loads this module only to
 * run: `--help` and bad usage need none of it).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { formatSingleRunSummary, full } from "../runs/mod.ts";
import { UsageError } from "./_cli.ts";
import type { ParsedArgs } from "./_args.ts";
import type { FULL_SPEC } from "./full.ts";

/** `full`'s program: the pipeline end to end, each stage's time and the scores on stdout. */
export const fullCommand = (a: ParsedArgs<typeof FULL_SPEC>) =>
  Effect.gen(function* () {
    if (a.flags["top-k"] !== undefined && a.flags.open !== true) {
      return yield* Effect.fail(new UsageError("--top-k needs --open"));
    }
    const t0 = performance.now();
    const s = yield* full({
      data: a.flags.data,
      encoder: a.flags.encoder,
      out: a.flags.out,
      keepDumps: a.flags["no-keep-dumps"] !== true,
      overwrite: a.flags.overwrite,
      uniqueIds: a.flags["unique-ids"] === true,
      open: a.flags.open === true,
      topK: a.flags["top-k"],
      ...(a.flags.dtype !== undefined ? { dtype: a.flags.dtype as "f32" | "f16" } : {}),
      flags: a.flags,
      ...(a.flags.corpus !== undefined ? { corpus: a.flags.corpus } : {}),
      onStage: (name, sec, detail) =>
        console.log(`  ${name.padEnd(15)} ${sec.toFixed(1).padStart(6)} s  ${detail}`),
    });
    console.log(formatSingleRunSummary(s, (performance.now() - t0) / 1000));
  });
