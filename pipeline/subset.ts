/**
 * `subset data.json out.json --articles A:B`: a SQuAD file of articles
 * A..B-1 of another, every other field kept, in Python `json.dump` bytes
 * (`writeArticleSubset`, `io/squad_subset.ts`): the small dataset the
 * README's tour runs on. This file is the command line (`--help` loads
 * nothing else); the work, `pipeline/_subset.ts`, loads with `import()`
 * only to run.
 *
 * @module
 */
import { type CommandSpec, exitOnHelpOrUsageError } from "./_args.ts";

export type { SubsetOptions } from "../io/squad_subset.ts";

/** The command line of `subset`. */
export const SUBSET_SPEC = {
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
} as const satisfies CommandSpec;

if (import.meta.main) {
  // `--help` and bad usage load nothing else; the subset's modules load only to run.
  exitOnHelpOrUsageError(SUBSET_SPEC, Deno.args);
  const [{ runMain }, { subsetCommand }] = await Promise.all([
    import("./_cli.ts"),
    import("./_subset.ts"),
  ]);
  await runMain(SUBSET_SPEC, Deno.args, subsetCommand);
}
