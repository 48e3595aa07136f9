/**
 * `records data.json [--kind question|paragraph]`: a SQuAD file as NDJSON
 * records on stdout, one a line, for shell pipes between stages
 * ({@linkcode records}, `io/records.ts`).
 *
 * ```sh
 * deno task records question.json --kind question | deno task embed_question - question_emb/
 * ```
 *
 * @module
 */
import { Effect } from "effect";
import { refuseAliases } from "../io/paths.ts";
import { records } from "../io/records.ts";
import { runMain } from "./_cli.ts";

export { records };
export type { RecordsOptions } from "../io/records.ts";

if (import.meta.main) {
  await runMain(
    {
      name: "records",
      examples: [
        "out/question.json --kind question | ./phraseval embed_question - out/question_emb --sparse",
      ],
      summary:
        "Write the questions (id, text, paragraph id) or paragraphs (id, title, index, context) of a SQuAD file as NDJSON records, one a line.",
      args: [{ name: "data.json", description: "SQuAD file (.json, .json.gz, or - for stdin)" }],
      flags: [
        {
          name: "kind",
          type: "string",
          choices: ["question", "paragraph"],
          default: "question",
          description: "which records to write",
        },
        { name: "out", type: "string", metavar: "FILE", default: "-", description: "output file" },
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
        }),
      ),
  );
}
