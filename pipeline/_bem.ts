/**
 * The work of `bem` (`pipeline/bem.ts`, which loads this module only to
 * run: `--help` and bad usage need none of it).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { bemEvaluateFile, formatBemSummary } from "../metrics/bem/fold.ts";
import { BEM_MODEL_HOWTO, BemError } from "../metrics/bem/service.ts";
import { refuseAliases } from "../io/paths.ts";
import { progress, UsageError } from "./_cli.ts";
import type { ParsedArgs } from "./_args.ts";
import type { BEM_SPEC } from "./bem.ts";

/** `bem`'s program: the BEM scores of the predictions, one JSON line on stdout. */
export const bemCommand = (a: ParsedArgs<typeof BEM_SPEC>) =>
  Effect.gen(function* () {
    const model = a.flags.model;
    if (model === undefined) {
      return yield* new BemError({ message: BEM_MODEL_HOWTO, exitCode: 2 });
    }
    if (a.positional["data.json"] === "-" && a.positional["pred.json"] === "-") {
      return yield* Effect.fail(new UsageError("data.json and pred.json cannot both be stdin"));
    }
    yield* refuseAliases(
      [
        { name: "data.json", path: a.positional["data.json"] },
        { name: "pred.json", path: a.positional["pred.json"] },
        { name: "--model", path: model },
      ],
      [
        { name: "--dump-inputs", path: a.flags["dump-inputs"] },
        { name: "--rows", path: a.flags.rows },
        { name: "--disagreements", path: a.flags.disagreements },
      ],
      "the BEM summary",
    );
    const batch = a.flags.batch;
    if (batch < 1) {
      return yield* Effect.fail(new UsageError("--batch must be at least 1"));
    }
    const threads = a.flags.threads;
    if (threads !== undefined && threads < 1) {
      return yield* Effect.fail(new UsageError("--threads must be at least 1"));
    }
    if (/NOT_BEM/i.test(model)) {
      console.error(
        `bem: note: ${model} is a test surrogate, NOT BEM; its scores mean nothing`,
      );
    }
    const bar = progress("bem");
    const r = yield* bemEvaluateFile({
      data: a.positional["data.json"],
      predictions: a.positional["pred.json"],
      model,
      batch,
      device: a.flags.device,
      threads,
      dumpInputs: a.flags["dump-inputs"],
      rows: a.flags.rows,
      disagreements: a.flags.disagreements,
      onProgress: (n) => bar.update(n, "questions"),
    });
    bar.done();
    console.log(formatBemSummary(r.summary));
  });
