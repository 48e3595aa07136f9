/**
 * `split data.json context.json question.json`: the PI-SQuAD split
 * ({@linkcode split}, `io/squad_split.ts`), byte-identical to the official
 * tool's output; a failure leaves neither file.
 *
 * @module
 */
import { Effect } from "effect";
import { split } from "../io/squad_split.ts";
import { refuseAliases } from "../io/paths.ts";
import { progress, runMain } from "./_cli.ts";

export { split };
export type { SplitOptions, SplitResult } from "../io/squad_split.ts";

if (import.meta.main) {
  await runMain(
    {
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
    },
    Deno.args,
    (a) => {
      const bar = progress("split");
      const data = a.positional["data.json"];
      const context = a.positional["context.json"], question = a.positional["question.json"];
      return refuseAliases([{ name: "data.json", path: data }], [
        { name: "context.json", path: context },
        { name: "question.json", path: question },
      ]).pipe(
        Effect.andThen(split({
          data,
          context,
          question,
          uniqueIds: a.flags["unique-ids"] === true,
          maxParagraphChars: a.flags["max-paragraph-chars"],
          onProgress: (n) => bar.update(n, "paragraphs"),
        })),
        Effect.ensuring(Effect.sync(() => bar.done())),
      );
    },
  );
}
