/**
 * `subset data.json out.json --articles A:B`: a SQuAD file of articles
 * A..B-1 of another, every other field kept, in Python `json.dump` bytes
 * ({@linkcode writeArticleSubset}, `io/squad_subset.ts`): the small dataset
 * the README's tour runs on.
 *
 * @module
 */
import { Effect } from "effect";
import { refuseAliases } from "../io/paths.ts";
import { parseArticleRange, writeArticleSubset } from "../io/squad_subset.ts";
import { runMain, UsageError } from "./_cli.ts";

export { parseArticleRange, writeArticleSubset };
export type { SubsetOptions } from "../io/squad_subset.ts";

if (import.meta.main) {
  await runMain(
    {
      name: "subset",
      summary:
        "Write articles A..B-1 of a SQuAD file as a SQuAD file of their own (other fields kept, " +
        "Python json.dump bytes).",
      args: [
        { name: "data.json", description: "SQuAD file (.json, .json.gz, or - for stdin)" },
        { name: "out.json", description: "output SQuAD file (- for stdout)" },
      ],
      flags: [
        {
          name: "articles",
          type: "string",
          metavar: "A:B",
          description: "articles A..B-1, counted from 0",
        },
      ],
      examples: ["data/dev-v1.1.json.gz mini.json --articles 0:3"],
    },
    Deno.args,
    (a) =>
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
      }),
  );
}
