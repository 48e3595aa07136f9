/**
 * `records FILE [--kind question|paragraph] [--format NAME] [--lang CODE]`:
 * a question set or corpus of any `io/datasets/` format as NDJSON records on
 * stdout, one a line, for shell pipes between stages ({@linkcode records},
 * `io/records.ts`): question records of any question set, paragraph records
 * of any corpus (DPR's passage TSV, a JSONL corpus, the paragraphs of a
 * SQuAD or MRQA file). A SQuAD file gives the same bytes as before other
 * formats were read.
 *
 * ```sh
 * deno task records question.json --kind question | deno task embed_question - question_emb/
 * deno task records psgs_w100.tsv --kind paragraph --out corpus.ndjson
 * ```
 *
 * @module
 */
import { Effect } from "effect";
import { refuseAliases } from "../io/paths.ts";
import { records } from "../io/records.ts";
import { runMain } from "./_cli.ts";

export { records };
export type { RecordsError, RecordsOptions } from "../io/records.ts";

if (import.meta.main) {
  await runMain(
    {
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
        description:
          "question set or corpus (SQuAD, DPR TSV/CSV, JSONL, MRQA, ...; .gz; - for stdin)",
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
    },
    Deno.args,
    (a) =>
      Effect.andThen(
        refuseAliases([{ name: "data.json", path: a.positional["data.json"] }], [
          { name: "--out", path: a.flags.out },
        ]),
        records({
          input: a.positional["data.json"],
          kind: a.flags.kind,
          out: a.flags.out,
          format: a.flags.format,
          lang: a.flags.lang,
        }),
      ),
  );
}
