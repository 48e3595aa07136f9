/**
 * `bem data.json pred.json --model bem.onnx`: BEM answer-equivalence scores
 * of a prediction file (`metrics/bem/`). Per question, BEM = max over its
 * gold answers of score(candidate = prediction, reference = gold, question);
 * prints one JSON line: the mean BEM score and BEM accuracy (share of
 * questions above 0.5), both in percent, with the question and pair counts.
 *
 * This file is the command line (`--help` loads nothing else); the work,
 * `pipeline/_bem.ts`, loads with `import()` only to run.
 *
 * @module
 */
import { type CommandSpec, exitOnHelpOrUsageError } from "./_args.ts";

export type { BemFileOptions as BemStageOptions } from "../metrics/bem/fold.ts";

/** The command line of `bem`. */
export const BEM_SPEC = {
  name: "bem",
  examples: [
    "data/dev-v1.1.json.gz out/pred.json --model bem.onnx --batch 64",
  ],
  summary:
    "BEM answer equivalence (Bulian et al. 2022): per question, the max over gold answers of the BEM score of (prediction, gold, question). Prints the mean BEM score and BEM accuracy (share of questions above 0.5), in percent, with counts.",
  args: [
    { name: "data.json", description: "SQuAD dataset (.json, .json.gz, or - for stdin)" },
    { name: "pred.json", description: "predictions: {question id: answer} (- for stdin)" },
  ],
  flags: [
    {
      name: "model",
      type: "string",
      metavar: "FILE",
      description: "the BEM model converted to ONNX (see README: BEM: getting the model)",
    },
    {
      name: "batch",
      type: "int",
      metavar: "N",
      default: 32,
      description: "pairs per model run",
    },
    {
      name: "device",
      type: "string",
      metavar: "D",
      choices: ["cpu", "cuda"],
      default: "cpu",
      description: "execution provider",
    },
    {
      name: "threads",
      type: "int",
      metavar: "N",
      description: "intra-op threads (ONNX Runtime's default when absent)",
    },
    {
      name: "dump-inputs",
      type: "string",
      metavar: "FILE",
      description:
        "write each pair's triple and input_ids/segment_ids, zero-padded to 512 (NDJSON)",
    },
    {
      name: "rows",
      type: "string",
      metavar: "FILE",
      description:
        "write one NDJSON row per question (id, prediction, reference, em, f1, bem, bem_reference)",
    },
    {
      name: "disagreements",
      type: "string",
      metavar: "FILE",
      description: "write the questions with EM 0 and BEM > 0.5, or EM 1 and BEM <= 0.5",
    },
  ],
  epilog: "Truncation: a triple over 512 tokens loses tokens from the end of the question " +
    "first, then the reference, then the candidate (counted as truncated).",
} as const satisfies CommandSpec;

if (import.meta.main) {
  // `--help` and bad usage load nothing else; ONNX Runtime and the BEM modules load only to run.
  exitOnHelpOrUsageError(BEM_SPEC, Deno.args);
  const [{ runMain }, { bemCommand }] = await Promise.all([
    import("./_cli.ts"),
    import("./_bem.ts"),
  ]);
  await runMain(BEM_SPEC, Deno.args, bemCommand);
}
