/**
 * `embed_question question.json question_emb/ [--encoder NAME] [--sparse]
 * [--compressed]`: runs a question encoder over every question (its id and
 * text only; it never sees a context) and writes `<qid>.npz` (1×d) per
 * question, atomically. A rerun skips complete files unless `--overwrite`.
 * A stopped run resumes so; one that meets bad input late (a rerun would
 * meet it again) removes the files it wrote, its manifest and the folder it
 * made (`docs/stages.md`).
 * The input may be a SQuAD file, the split's question file, NDJSON
 * question records, or any question set `io/datasets/` reads (DPR's CSV/TSV,
 * CuratedTREC, NQ-open JSONL, MRQA, ...: ids as `readQuestions` gives them,
 * a set without ids numbered from 0), `-` for stdin; `--format` names it. The library part is `encoders/embed.ts`.
 *
 * This file is the command line (`--help` loads nothing else); the work,
 * `pipeline/_embed_question.ts`, loads with `import()` only to run.
 *
 * @module
 */
import { type CommandSpec, exitOnHelpOrUsageError } from "./_args.ts";
import { EMBED_FLAGS } from "./_embed_flags.ts";

export type { EmbedQuestionOptions } from "../encoders/embed.ts";

/** The command line of `embed_question`. */
export const EMBED_QUESTION_SPEC = {
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
} as const satisfies CommandSpec;

if (import.meta.main) {
  // `--help` and bad usage load nothing else; the encoders (ONNX Runtime) load only to run.
  exitOnHelpOrUsageError(EMBED_QUESTION_SPEC, Deno.args);
  const [{ runMain }, { embedQuestionCommand }] = await Promise.all([
    import("./_cli.ts"),
    import("./_embed_question.ts"),
  ]);
  await runMain(EMBED_QUESTION_SPEC, Deno.args, embedQuestionCommand);
}
