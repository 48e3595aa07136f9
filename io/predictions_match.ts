/**
 * The predictions a command scores, whatever file holds them: a
 * `{id: answer}` file is passed on as its path (its readers stream it); an
 * lm-evaluation-harness samples file or an OpenCompass predictions file
 * (`predictions_harness.ts`, told from its content unless named) is read
 * against the question set's questions, every match checked, into a Map.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { FileError, type InputError, type UsageError } from "./errors.ts";
import { readQuestions } from "./datasets/read.ts";
import type { FieldMap } from "./datasets/types.ts";
import {
  detectPredFormat,
  type HarnessAnswers,
  parsePredFormat,
  type PredFormat,
  readHarnessAnswers,
  type SetQuestion,
} from "./predictions_harness.ts";

/** Options of {@linkcode resolvePredictions}. */
export interface ResolveOptions {
  /** The question set. */
  readonly data: string;
  /** The prediction file. */
  readonly predictions: string;
  /** Its format (a `--pred-format` name); default: told from its content. */
  readonly predFormat?: string;
  /** The set's format (a `--format` name); default: detected. */
  readonly format?: string;
  /** The set's language (XQuAD/MLQA). */
  readonly lang?: string;
  /** The set's field map (a generic set). */
  readonly fields?: FieldMap;
}

/** What {@linkcode resolvePredictions} gives. */
export interface ResolvedPredictions {
  /** The prediction file's format. */
  readonly format: PredFormat;
  /** The path (`{id: answer}`) or the answers read from a harness's log. */
  readonly predictions: string | ReadonlyMap<string, string>;
  /** A harness log's answers, with what the harness logged beside them. */
  readonly harness?: HarnessAnswers;
}

/**
 * The set's questions (id and text, in its order), as its reader reads
 * them.
 */
export const setQuestions = (
  opts: Pick<ResolveOptions, "data" | "format" | "lang" | "fields">,
): Effect.Effect<SetQuestion[], InputError | FileError | UsageError> =>
  Effect.map(
    Stream.runCollect(
      Stream.map(
        readQuestions(opts.data, {
          ...(opts.format !== undefined ? { format: opts.format } : {}),
          ...(opts.lang !== undefined ? { lang: opts.lang } : {}),
          ...(opts.fields !== undefined ? { fields: opts.fields } : {}),
          answers: "optional",
        }),
        (r) => ({ id: r.id, question: r.question }),
      ),
    ),
    (c) => [...c],
  );

/**
 * The predictions of `opts.predictions` for the set `opts.data`: the path
 * itself for `{id: answer}`, else the harness log's answers matched to the
 * set's questions and checked (one `InputError` on the first mismatch).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { resolvePredictions } from "./predictions_match.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/nq.jsonl`, '{"question": "who?", "answer": ["Ann"]}\n');
 * await Deno.writeTextFile(`${dir}/oc.json`, JSON.stringify({
 *   "0": { origin_prompt: "Q: who?\nA:", prediction: "Ann", gold: ["Ann"] },
 * }));
 * const r = await Effect.runPromise(
 *   resolvePredictions({ data: `${dir}/nq.jsonl`, predictions: `${dir}/oc.json` }),
 * );
 * if (r.format !== "opencompass" || (r.predictions as Map<string, string>).get("0") !== "Ann") {
 *   throw new Error();
 * }
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export const resolvePredictions = (
  opts: ResolveOptions,
): Effect.Effect<ResolvedPredictions, InputError | FileError | UsageError> =>
  Effect.gen(function* () {
    const format = opts.predFormat !== undefined
      ? yield* Effect.try({
        try: () => parsePredFormat(opts.predFormat!),
        catch: (e) => e as UsageError,
      })
      : yield* detectPredFormat(opts.predictions);
    if (format === "ids") return { format, predictions: opts.predictions };
    const questions = yield* setQuestions(opts);
    const harness = yield* readHarnessAnswers(opts.predictions, format, questions);
    return { format, predictions: harness.predictions, harness };
  });

/**
 * The text of `{id: answer}` for the answers at `path` on the set
 * `set.data`: an `{id: answer}` file's own text, unchanged; a harness's log
 * (told from its content) matched and checked as
 * {@linkcode resolvePredictions} does, as JSON. What a run's predictions
 * model copies into its run folder.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { predictionsText } from "./predictions_match.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/nq.jsonl`, '{"question": "who?", "answer": ["Ann"]}\n');
 * await Deno.writeTextFile(`${dir}/s.jsonl`, JSON.stringify({
 *   doc_id: 0, doc: { question: "who?" }, filtered_resps: ["Ann"],
 * }) + "\n");
 * const text = await Effect.runPromise(predictionsText(`${dir}/s.jsonl`, { data: `${dir}/nq.jsonl` }));
 * if (text !== '{"0":"Ann"}\n') throw new Error(text);
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export const predictionsText = (
  path: string,
  set: Pick<ResolveOptions, "data" | "format" | "lang" | "fields">,
): Effect.Effect<string, InputError | FileError | UsageError> =>
  Effect.gen(function* () {
    const r = yield* resolvePredictions({ ...set, predictions: path });
    if (typeof r.predictions !== "string") {
      return JSON.stringify(Object.fromEntries(r.predictions)) + "\n";
    }
    return yield* Effect.tryPromise({
      try: () => Deno.readTextFile(path),
      catch: (e) =>
        new FileError({ file: path, message: e instanceof Error ? e.message : String(e) }),
    });
  });
