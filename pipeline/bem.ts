/**
 * `bem data.json pred.json --model bem.onnx`: BEM answer-equivalence scores
 * of a prediction file (`metrics/bem.ts`). Per question, BEM = max over its
 * gold answers of score(candidate = prediction, reference = gold, question);
 * prints one JSON line: the mean BEM score and BEM accuracy (share of
 * questions above 0.5), both in percent, with the question and pair counts.
 *
 * @module
 */
import { Effect, Layer } from "effect";
import type { FileError, InputError } from "../io/errors.ts";
import {
  BEM_MODEL_HOWTO,
  BemError,
  bemEvaluate,
  type BemEvaluateResult,
  BemLive,
  formatBemSummary,
} from "../metrics/bem.ts";
import type { BemDevice } from "../metrics/bem.ts";
import { progress, runMain, UsageError } from "./_cli.ts";

/** Options of {@linkcode bem}. */
export interface BemStageOptions {
  /** SQuAD dataset (`.json`, `.json.gz`, `-`). */
  readonly data: string;
  /** Predictions (`.json`, `-`). */
  readonly predictions: string;
  /** The BEM ONNX model. */
  readonly model: string;
  /** Pairs per model run (default 32). */
  readonly batch?: number;
  /** `cpu` (default) or `cuda`. */
  readonly device?: BemDevice;
  /** Intra-op threads (ONNX Runtime's default when absent). */
  readonly threads?: number;
  /** Write every pair's padded model inputs (NDJSON). */
  readonly dumpInputs?: string;
  /** Write one row per question (NDJSON). */
  readonly rows?: string;
  /** Write the EM/BEM disagreements (NDJSON). */
  readonly disagreements?: string;
  /** Called after each article with the questions done so far. */
  readonly onProgress?: (questions: number) => void;
}

/**
 * The `bem` stage as an Effect.
 *
 * @example
 * ```ts ignore
 * import { Effect } from "effect";
 * import { bem } from "./bem.ts";
 * const r = await Effect.runPromise(
 *   bem({ data: "data/dev-v1.1.json.gz", predictions: "pred.json", model: "bem.onnx" }),
 * );
 * console.log(r.summary.bem_accuracy);
 * ```
 */
export const bem = (
  opts: BemStageOptions,
): Effect.Effect<BemEvaluateResult, BemError | InputError | FileError> =>
  Effect.provide(
    bemEvaluate({
      data: opts.data,
      predictions: opts.predictions,
      rows: opts.rows,
      disagreements: opts.disagreements,
      dumpInputs: opts.dumpInputs,
      onProgress: opts.onProgress,
    }),
    Layer.fresh(BemLive({
      model: opts.model,
      batch: opts.batch,
      device: opts.device,
      threads: opts.threads,
    })),
  );

if (import.meta.main) {
  await runMain(
    {
      name: "bem",
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
        const model = a.flags["model"] as string | undefined;
        if (model === undefined) {
          return yield* new BemError({ message: BEM_MODEL_HOWTO, exitCode: 2 });
        }
        if (a.positional["data.json"] === "-" && a.positional["pred.json"] === "-") {
          return yield* Effect.fail(new UsageError("data.json and pred.json cannot both be stdin"));
        }
        const batch = a.flags["batch"] as number;
        if (batch < 1) {
          return yield* Effect.fail(new UsageError("--batch must be at least 1"));
        }
        const threads = a.flags["threads"] as number | undefined;
        if (threads !== undefined && threads < 1) {
          return yield* Effect.fail(new UsageError("--threads must be at least 1"));
        }
        if (/NOT_BEM/i.test(model)) {
          console.error(
            `bem: note: ${model} is a test surrogate, NOT BEM; its scores mean nothing`,
          );
        }
        const bar = progress("bem");
        const r = yield* bem({
          data: a.positional["data.json"],
          predictions: a.positional["pred.json"],
          model,
          batch,
          device: a.flags["device"] as BemDevice,
          threads,
          dumpInputs: a.flags["dump-inputs"] as string | undefined,
          rows: a.flags["rows"] as string | undefined,
          disagreements: a.flags["disagreements"] as string | undefined,
          onProgress: (n) => bar.update(n, "questions"),
        });
        bar.done();
        console.log(formatBemSummary(r.summary));
      }),
  );
}
