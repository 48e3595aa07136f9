/**
 * The work of `merge` (`pipeline/merge.ts`, which loads this module only
 * to run, after its workers have started: `--help` and bad usage need none
 * of it): the flags' checks, then `merge` (`search/merge/merge.ts`).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { merge } from "../search/merge/merge.ts";
import { refuseAliases } from "../io/paths.ts";
import type { EarlyPool } from "../search/merge/early.ts";
import { progress, UsageError } from "./_cli.ts";
import type { ParsedArgs } from "./_args.ts";
import type { MERGE_SPEC } from "./merge.ts";

/** `merge`'s program, adopting the workers `early` started (`startEarly`), if any. */
export const mergeCommand =
  (early: EarlyPool | undefined) => (a: ParsedArgs<typeof MERGE_SPEC>) => {
    const concurrency = a.flags.concurrency;
    const workers = a.flags.workers;
    if (concurrency !== undefined && concurrency < 1) {
      return Effect.fail(new UsageError(`--concurrency must be at least 1, got ${concurrency}`));
    }
    if (workers !== undefined && workers < 0) {
      return Effect.fail(new UsageError(`--workers must be 0 or more, got ${workers}`));
    }
    const aliased = refuseAliases(
      [
        { name: "data.json", path: a.positional["data.json"] },
        { name: "context_emb", path: a.positional["context_emb"], folder: true },
        { name: "question_emb", path: a.positional["question_emb"], folder: true },
      ],
      [{ name: "pred.json", path: a.positional["pred.json"] }],
    );
    return Effect.andThen(
      aliased,
      merge({
        data: a.positional["data.json"],
        contextEmb: a.positional["context_emb"],
        questionEmb: a.positional["question_emb"],
        predictions: a.positional["pred.json"],
        sparse: a.flags.sparse === true,
        uniqueIds: a.flags["unique-ids"] === true,
        concurrency,
        workers,
        progress: a.flags.progress === true ? progress("merge") : undefined,
        simd: a.flags["no-simd"] !== true,
        early,
      }),
    );
  };
