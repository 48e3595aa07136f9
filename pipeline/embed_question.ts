/**
 * `embed_question question.json question_emb/ [--encoder NAME] [--sparse]
 * [--compressed]`: runs a question encoder over every question (its id and
 * text only; it never sees a context) and writes `<qid>.npz` (1×d) per
 * question, atomically. A rerun skips complete files unless `--overwrite`.
 * The input may be a SQuAD file, the split's question file, NDJSON
 * question records, or any question set `io/datasets/` reads (DPR's CSV/TSV,
 * CuratedTREC, NQ-open JSONL, MRQA, ...: ids as `readQuestions` gives them,
 * a set without ids numbered from 0), `-` for stdin; `--format` names it. The library part is `encoders/embed.ts`.
 *
 * @module
 */
import { Effect } from "effect";
import { embedQuestion } from "../encoders/embed.ts";
import { progress, runMain } from "./_cli.ts";
import { checkOutputFolder, EMBED_FLAGS, embedOptions, encoderOptions } from "./_embed_cli.ts";

export { embedQuestion } from "../encoders/embed.ts";
export type { EmbedQuestionOptions } from "../encoders/embed.ts";

if (import.meta.main) {
  await runMain(
    {
      name: "embed_question",
      examples: [
        "out/question.json out/dumps/question_emb --sparse",
        "nq-test.qa.csv out/dumps/question_emb --sparse",
      ],
      summary:
        "Encode every question (id and text only) into a 1×d vector: <qid>.npz per question, written atomically; complete files are skipped on a rerun.",
      args: [
        {
          name: "question.json",
          description:
            "SQuAD/question file, NDJSON question records, or any question set (DPR CSV, NQ-open JSONL, MRQA, ...; - for stdin)",
        },
        { name: "question_emb", description: "output folder" },
      ],
      flags: EMBED_FLAGS,
    },
    Deno.args,
    (a) =>
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
      }),
  );
}
