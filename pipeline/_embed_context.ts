/**
 * The work of `embed_context` (`pipeline/embed_context.ts`, which loads this module only
 * to run: `--help` and bad usage need none of it).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { embedContext } from "../encoders/embed.ts";
import { progress } from "./_cli.ts";
import { checkOutputFolder, embedOptions, encoderOptions } from "./_embed_cli.ts";
import type { ParsedArgs } from "./_args.ts";
import type { EMBED_CONTEXT_SPEC } from "./embed_context.ts";

/** `embed_context`'s program: the encoder over every context, a file per paragraph. */
export const embedContextCommand = (a: ParsedArgs<typeof EMBED_CONTEXT_SPEC>) =>
  Effect.gen(function* () {
    yield* checkOutputFolder(
      "context",
      a.positional["context.json"],
      a.positional["context_emb"],
    );
    const bar = progress("embed_context");
    const r = yield* embedContext({
      ...embedOptions(a, a.positional["context.json"], a.positional["context_emb"]),
      encoder: a.flags.encoder,
      ...encoderOptions(a),
      maxParagraphChars: a.flags["max-paragraph-chars"],
      maxParagraphPhrases: a.flags["max-paragraph-phrases"],
      onProgress: (n) => bar.update(n, "paragraphs"),
    });
    bar.done();
    console.error(
      `embed_context: ${r.written} paragraphs written, ${r.skipped} already complete (${r.encoder}, d=${r.dim})`,
    );
  });
