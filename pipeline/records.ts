/**
 * `records FILE [--kind question|paragraph] [--format NAME] [--lang CODE]`:
 * a question set or corpus of any `io/datasets/` format as NDJSON records on
 * stdout, one a line, for shell pipes between stages (`records`,
 * `io/records.ts`): question records of any question set, paragraph records
 * of any corpus (DPR's passage TSV, a JSONL corpus, the paragraphs of a
 * SQuAD or MRQA file). A SQuAD file gives the same bytes as before other
 * formats were read. This file is the command line (`--help` loads nothing
 * else); the work, `pipeline/_records.ts`, loads with `import()` only to run.
 *
 * ```sh
 * deno task records question.json --kind question | deno task embed_question - question_emb/
 * deno task records psgs_w100.tsv --kind paragraph --out corpus.ndjson
 * ```
 *
 * @module
 */
import { type CommandSpec, exitOnHelpOrUsageError } from "./_args.ts";

export type { RecordsError, RecordsOptions } from "../io/records.ts";

/** The command line of `records`. */
export const RECORDS_SPEC = {
  name: "records",
  examples: [
    "out/question.json --kind question | ./phraseval embed_question - out/question_emb --sparse",
    "psgs_w100.tsv --kind paragraph --out corpus.ndjson",
    "nq-test.qa.csv --kind question --out questions.ndjson",
  ],
  summary:
    "Write the questions (id, text, paragraph id) of any question set, or the paragraphs (id, title, context; index for SQuAD) of any corpus, as NDJSON records, one a line.",
  args: [{
    name: "data.json",
    description: "question set or corpus (SQuAD, DPR TSV/CSV, JSONL, MRQA, ...; .gz; - for stdin)",
  }],
  flags: [
    {
      name: "kind",
      type: "string",
      choices: ["question", "paragraph"],
      default: "question",
      description: "which records to write",
    },
    { name: "out", type: "string", metavar: "FILE", default: "-", description: "output file" },
    {
      name: "format",
      type: "string",
      metavar: "NAME",
      description:
        "the input's format (default: detected), as evaluate's: squad, squad2, xquad, mlqa, mrqa, dpr, trec, open; corpora: dpr-passages (psgs_w100.tsv), passages (JSONL)",
    },
    {
      name: "lang",
      type: "string",
      metavar: "CODE",
      description: "xquad/mlqa: the language (default: from the file name, e.g. xquad.de.json)",
    },
  ],
} as const satisfies CommandSpec;

if (import.meta.main) {
  // `--help` and bad usage load nothing else; the readers load only to run.
  exitOnHelpOrUsageError(RECORDS_SPEC, Deno.args);
  const [{ runMain }, { recordsCommand }] = await Promise.all([
    import("./_cli.ts"),
    import("./_records.ts"),
  ]);
  await runMain(RECORDS_SPEC, Deno.args, recordsCommand);
}
