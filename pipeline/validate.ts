/**
 * `validate data.json context_emb question_emb [--sparse]`: checks a dump
 * against its dataset the way a PI-SQuAD submission is checked (see
 * `io/dump/validate.ts`): every paragraph and question has its files, the
 * rows of each `.npz` equal the length of its phrase list, one d everywhere,
 * question matrices are 1×d, dtypes are float32/float16, values are finite,
 * and (with `--max-bytes-per-word`) each paragraph's `.npz` stays within a
 * size per context word. Dumps may be folders or `.zip` files. Prints a
 * report; exits 1 on any violation. This file is the command line
 * (`--help` loads nothing else); the work, `pipeline/_validate.ts`, loads
 * with `import()` only to run.
 *
 * @module
 */
import { type CommandSpec, exitOnHelpOrUsageError } from "./_args.ts";

export type { ValidateOptions, ValidateReport } from "../io/dump/validate.ts";

/** The command line of `validate`. */
export const VALIDATE_SPEC = {
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
} as const satisfies CommandSpec;

if (import.meta.main) {
  // `--help` and bad usage load nothing else; the checks' modules load only to run.
  exitOnHelpOrUsageError(VALIDATE_SPEC, Deno.args);
  const [{ runMain }, { validateCommand }] = await Promise.all([
    import("./_cli.ts"),
    import("./_validate.ts"),
  ]);
  await runMain(VALIDATE_SPEC, Deno.args, validateCommand);
}
