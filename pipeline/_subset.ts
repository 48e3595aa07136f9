/**
 * The work of `subset` (`pipeline/subset.ts`, which loads this module only
 * to run: `--help` and bad usage need none of it).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { refuseAliases } from "../io/paths.ts";
import { parseArticleRange, writeArticleSubset } from "../io/squad_subset.ts";
import { UsageError } from "./_cli.ts";
import type { ParsedArgs } from "./_args.ts";
import type { SUBSET_SPEC } from "./subset.ts";

/** `subset`'s program: the articles of `--articles`, written to `out.json`. */
export const subsetCommand = (a: ParsedArgs<typeof SUBSET_SPEC>) =>
  Effect.gen(function* () {
    const range = a.flags.articles;
    if (range === undefined) {
      return yield* Effect.fail(new UsageError("--articles A:B is required"));
    }
    const articles = yield* Effect.try({
      try: () => parseArticleRange(range),
      catch: (e) => e as UsageError,
    });
    const data = a.positional["data.json"], out = a.positional["out.json"];
    yield* refuseAliases([{ name: "data.json", path: data }], [{
      name: "out.json",
      path: out,
    }]);
    const n = yield* writeArticleSubset({ data, out, articles });
    console.error(`subset: ${n} articles written to ${out}`);
  });
