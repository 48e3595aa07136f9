/**
 * The work of `split` (`pipeline/split.ts`, which loads this module only to
 * run: `--help` and bad usage need none of it).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { split } from "../io/squad_split.ts";
import { refuseAliases } from "../io/paths.ts";
import { progress } from "./_cli.ts";
import type { ParsedArgs } from "./_args.ts";
import type { SPLIT_SPEC } from "./split.ts";

/** `split`'s program: the split of its parsed command line. */
export const splitCommand = (a: ParsedArgs<typeof SPLIT_SPEC>) => {
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
};
