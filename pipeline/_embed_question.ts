/**
 * The work of `embed_question` (`pipeline/embed_question.ts`, which loads this module only
 * to run: `--help` and bad usage need none of it).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { embedQuestion } from "../encoders/embed.ts";
import { progress } from "./_cli.ts";
import { checkOutputFolder, embedOptions, encoderOptions } from "./_embed_cli.ts";
import type { ParsedArgs } from "./_args.ts";
import type { EMBED_QUESTION_SPEC } from "./embed_question.ts";

/** `embed_question`'s program: the encoder over every question, a file per question. */
export const embedQuestionCommand = (a: ParsedArgs<typeof EMBED_QUESTION_SPEC>) =>
  Effect.gen(function* () {
    yield* checkOutputFolder(
      "question",
      a.positional["question.json"],
      a.positional["question_emb"],
    );
    const bar = progress("embed_question");
    const r = yield* embedQuestion({
      ...embedOptions(a, a.positional["question.json"], a.positional["question_emb"]),
      encoder: a.flags.encoder,
      ...encoderOptions(a),
      onProgress: (n) => bar.update(n, "questions"),
    });
    bar.done();
    console.error(
      `embed_question: ${r.written} questions written, ${r.skipped} already complete (${r.encoder}, d=${r.dim})`,
    );
  });
