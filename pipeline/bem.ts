/**
 * `bem data.json pred.json --model bem.onnx`: BEM answer-equivalence scores
 * of a prediction file (`metrics/bem/`). Per question, BEM = max over its
 * gold answers of score(candidate = prediction, reference = gold, question);
 * prints one JSON line: the mean BEM score and BEM accuracy (share of
 * questions above 0.5), both in percent, with the question and pair counts.
 *
 * @module
 */
import { Effect } from "effect";
import { bemEvaluateFile, formatBemSummary } from "../metrics/bem/fold.ts";
import { BEM_MODEL_HOWTO, BemError } from "../metrics/bem/service.ts";
import { refuseAliases } from "../io/paths.ts";
import { progress, runMain, UsageError } from "./_cli.ts";

export { bemEvaluateFile as bem } from "../metrics/bem/fold.ts";
export type { BemFileOptions as BemStageOptions } from "../metrics/bem/fold.ts";

if (import.meta.main) {
  await runMain(
    {
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
    },
    Deno.args,
    (a) =>
      Effect.gen(function* () {
        const model = a.flags.model;
        if (model === undefined) {
          return yield* new BemError({ message: BEM_MODEL_HOWTO, exitCode: 2 });
        }
        if (a.positional["data.json"] === "-" && a.positional["pred.json"] === "-") {
          return yield* Effect.fail(new UsageError("data.json and pred.json cannot both be stdin"));
        }
        yield* refuseAliases(
          [
            { name: "data.json", path: a.positional["data.json"] },
            { name: "pred.json", path: a.positional["pred.json"] },
            { name: "--model", path: model },
          ],
          [
            { name: "--dump-inputs", path: a.flags["dump-inputs"] },
            { name: "--rows", path: a.flags.rows },
            { name: "--disagreements", path: a.flags.disagreements },
          ],
          "the BEM summary",
        );
        const batch = a.flags.batch;
        if (batch < 1) {
          return yield* Effect.fail(new UsageError("--batch must be at least 1"));
        }
        const threads = a.flags.threads;
        if (threads !== undefined && threads < 1) {
          return yield* Effect.fail(new UsageError("--threads must be at least 1"));
        }
        if (/NOT_BEM/i.test(model)) {
          console.error(
            `bem: note: ${model} is a test surrogate, NOT BEM; its scores mean nothing`,
          );
        }
        const bar = progress("bem");
        const r = yield* bemEvaluateFile({
          data: a.positional["data.json"],
          predictions: a.positional["pred.json"],
          model,
          batch,
          device: a.flags.device,
          threads,
          dumpInputs: a.flags["dump-inputs"],
          rows: a.flags.rows,
          disagreements: a.flags.disagreements,
          onProgress: (n) => bar.update(n, "questions"),
        });
        bar.done();
        console.log(formatBemSummary(r.summary));
      }),
  );
}
