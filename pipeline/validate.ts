/**
 * `validate data.json context_emb question_emb [--sparse]`: checks a dump
 * against its dataset the way a PI-SQuAD submission is checked (see
 * `io/dump/validate.ts`): every paragraph and question has its files, the
 * rows of each `.npz` equal the length of its phrase list, one d everywhere,
 * question matrices are 1×d, dtypes are float32/float16, values are finite,
 * and (with `--max-bytes-per-word`) each paragraph's `.npz` stays within a
 * size per context word. Dumps may be folders or `.zip` files. Prints a
 * report; exits 1 on any violation.
 *
 * @module
 */
import { Effect } from "effect";
import { formatValidateReport, validate } from "../io/dump/validate.ts";
import { runMain, WorkError } from "./_cli.ts";

export { formatValidateReport, validate } from "../io/dump/validate.ts";
export type { ValidateOptions, ValidateReport } from "../io/dump/validate.ts";

if (import.meta.main) {
  await runMain(
    {
      name: "validate",
      examples: [
        "data/dev-v1.1.json.gz out/dumps/context_emb out/dumps/question_emb --sparse",
      ],
      summary:
        "Check a PI-SQuAD dump against its dataset: files present, rows = phrases, one d, 1×d questions, float dtypes, finite values, size per context word. Exit 1 on any violation.",
      args: [
        { name: "data.json", description: "SQuAD file (.json, .json.gz)" },
        { name: "context_emb", description: "context dump (folder or .zip)" },
        { name: "question_emb", description: "question dump (folder or .zip)" },
      ],
      flags: [
        { name: "sparse", type: "boolean", description: "dumps are scipy sparse (CSR)" },
        {
          name: "max-bytes-per-word",
          type: "number",
          metavar: "B",
          min: 0,
          exclusiveMin: true,
          description: "largest allowed .npz size per context word",
        },
        { name: "json", type: "boolean", description: "print the report as JSON" },
        {
          name: "unique-ids",
          type: "boolean",
          description: "rename repeated article titles as the other stages' --unique-ids does",
        },
      ],
    },
    Deno.args,
    (a) =>
      Effect.gen(function* () {
        const r = yield* validate({
          data: a.positional["data.json"],
          contextEmb: a.positional["context_emb"],
          questionEmb: a.positional["question_emb"],
          sparse: a.flags["sparse"] === true,
          maxBytesPerWord: a.flags["max-bytes-per-word"],
          uniqueIds: a.flags["unique-ids"] === true,
        });
        console.log(a.flags["json"] ? JSON.stringify(r, null, 2) : formatValidateReport(r));
        if (r.violations.length > 0) {
          return yield* Effect.fail(new WorkError(`${r.violations.length} violations`));
        }
      }),
  );
}
