/**
 * `split data.json context.json question.json`: the PI-SQuAD split
 * (`split` in `io/squad_split.ts`), byte-identical to the official tool's
 * output; a failure leaves neither file. This file is the command line
 * (`--help` loads nothing else); the work, `pipeline/_split.ts`, loads with
 * `import()` only to run.
 *
 * @module
 */
import { type CommandSpec, exitOnHelpOrUsageError } from "./_args.ts";

export type { SplitOptions, SplitResult } from "../io/squad_split.ts";

/** The command line of `split`. */
export const SPLIT_SPEC = {
  name: "split",
  examples: [
    "data/dev-v1.1.json.gz out/context.json out/question.json",
  ],
  summary:
    "Split a SQuAD file into a PI-SQuAD context file (paragraphs without qas) and question file (no contexts, no answers), byte-identical to the official split.",
  args: [
    { name: "data.json", description: "SQuAD file (.json, .json.gz, or - for stdin)" },
    { name: "context.json", description: "output: contexts only (- for stdout)" },
    { name: "question.json", description: "output: questions only (- for stdout)" },
  ],
  flags: [
    {
      name: "unique-ids",
      type: "boolean",
      description:
        "rename repeated article titles (<title>#2, #3, ...: io/squad_ids.ts) instead of refusing them",
    },
    {
      name: "max-paragraph-chars",
      type: "int",
      metavar: "N",
      min: 1,
      description: "refuse a string longer than a paragraph of N characters can be " +
        "(6N bytes) where it begins, before it is read (default 100000, as embed_context)",
    },
  ],
} as const satisfies CommandSpec;

if (import.meta.main) {
  // `--help` and bad usage load nothing else; the split's modules load only to run.
  exitOnHelpOrUsageError(SPLIT_SPEC, Deno.args);
  const [{ runMain }, { splitCommand }] = await Promise.all([
    import("./_cli.ts"),
    import("./_split.ts"),
  ]);
  await runMain(SPLIT_SPEC, Deno.args, splitCommand);
}
