/**
 * `evaluate data.json pred.json`: the official SQuAD scores, streaming over
 * the dataset. SQuAD v1.1 rules by default (stdout is exactly the official
 * script's `{"exact_match": ..., "f1": ...}`); SQuAD v2.0 rules with `--v2`
 * or when the file's `version` says v2 (stdout as the official v2.0 script,
 * `json.dumps(..., indent=2)`). Messages the official scripts print
 * (`Unanswered question ...`, the version warning) go to stderr in the same
 * order.
 *
 * @module
 */
import { Effect, Stream } from "effect";
import { FileError, InputError } from "../io/errors.ts";
import { readPredictions } from "../io/predictions.ts";
import { RawNumber } from "../io/pyjson.ts";
import { type SquadArticle, type SquadReadError, squadRecords } from "../io/squad.ts";
import { openAtomicWriter } from "../io/source.ts";
import {
  EmptyDatasetError,
  formatV1,
  formatV2,
  MissingNaProbError,
  missingPredictionMessage,
  type NaProb,
  NoGoldAnswersError,
  type PerQuestionScore,
  SquadV1Accumulator,
  type SquadV1Result,
  SquadV2Accumulator,
  type SquadV2Result,
  unansweredMessage,
  versionMismatchMessage,
} from "../metrics/squad.ts";
import { runMain } from "./_cli.ts";
// --- BEM (--bem, --disagreements): begin; the logic is in metrics/bem.ts ---
import { evaluateBemExtra } from "../metrics/bem.ts";
import { UsageError } from "./_cli.ts";
// --- BEM: end ---

/** Options of {@linkcode evaluate}. */
export interface EvaluateOptions {
  /** The SQuAD dataset (`.json`, `.json.gz`, `-`). */
  readonly data: string;
  /** The predictions (`.json`, `-`): an object of question id → answer. */
  readonly predictions: string;
  /** Force SQuAD v2.0 rules (otherwise chosen from the file's `version`). */
  readonly v2?: boolean;
  /** v2.0: file of no-answer probabilities by question id. */
  readonly naProbFile?: string;
  /** v2.0: predict no-answer above this probability (default 1.0). */
  readonly naProbThreshold?: number;
  /** Write one NDJSON row per question (id, prediction, reference, em, f1). */
  readonly perQuestion?: string;
}

/** What {@linkcode evaluate} found. */
export interface EvaluateResult {
  /** Which rules scored the file. */
  readonly rules: "v1.1" | "v2.0";
  /** The summary. */
  readonly result: SquadV1Result | SquadV2Result;
  /** Exactly what the official script prints on stdout (no newline). */
  readonly stdout: string;
  /** What it prints on stderr, in order (one message a line). */
  readonly messages: readonly string[];
}

/** Errors of {@linkcode evaluate}. */
export type EvaluateError =
  | SquadReadError
  | FileError
  | InputError
  | NoGoldAnswersError
  | EmptyDatasetError
  | MissingNaProbError;

const isV2Version = (v: string | undefined) => v !== undefined && /^v?2(\.|$)/.test(v);

const goldTexts = (answers: readonly { text: string }[] | undefined) =>
  answers === undefined ? [] : answers.map((a) => a.text);

/** One question's row in the `--per-question` file. */
export interface QuestionRow {
  /** Record kind. */
  readonly kind: "score";
  /** Question id. */
  readonly id: string;
  /** The prediction (`null` when there was none). */
  readonly prediction: string | null;
  /** The gold answer that gave the best score. */
  readonly reference: string | null;
  /** Exact match (0/1). */
  readonly em: number;
  /** F1 (0..1). */
  readonly f1: number;
}

const readNaProbs = (path: string) =>
  Effect.flatMap(readPredictionsRaw(path), (obj) => {
    const m = new Map<string, NaProb>();
    for (const [k, v] of Object.entries(obj)) {
      if (typeof v !== "number") {
        return Effect.fail(
          new InputError({ file: path, where: `question "${k}"`, message: "not a number" }),
        );
      }
      m.set(k, v);
    }
    return Effect.succeed(m);
  });

const readPredictionsRaw = (path: string) =>
  Effect.tryPromise({
    try: async () => JSON.parse(await Deno.readTextFile(path)) as Record<string, unknown>,
    catch: (e) =>
      e instanceof SyntaxError
        ? new InputError({ file: path, where: "", message: `invalid JSON (${e.message})` })
        : new FileError({ file: path, message: e instanceof Error ? e.message : String(e) }),
  });

/**
 * Scores a prediction file against a SQuAD dataset with the official rules.
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { evaluate } from "./evaluate.ts";
 * const r = await Effect.runPromise(
 *   evaluate({ data: "data/dev-v1.1.json.gz", predictions: "pred.json" }),
 * );
 * console.log(r.stdout); // {"exact_match": ..., "f1": ...}
 * ```
 */
export const evaluate = (opts: EvaluateOptions): Effect.Effect<EvaluateResult, EvaluateError> =>
  evaluateRaw(opts).pipe(Effect.mapError((e) => asInputError(e, opts)));

/** Metric errors are bad input: name the file and the question. */
function asInputError(e: EvaluateError, opts: EvaluateOptions): EvaluateError {
  if (e instanceof NoGoldAnswersError) {
    return new InputError({
      file: opts.data,
      where: `question "${e.id}"`,
      message:
        "has no gold answers, and SQuAD v1.1 scoring needs at least one (a v2.0 file? use --v2)",
    });
  }
  if (e instanceof EmptyDatasetError) {
    return new InputError({ file: opts.data, where: "", message: e.message });
  }
  if (e instanceof MissingNaProbError) {
    return new InputError({
      file: opts.naProbFile ?? "",
      where: `question "${e.id}"`,
      message: "no no-answer probability for an answered question",
    });
  }
  return e;
}

const evaluateRaw = (opts: EvaluateOptions): Effect.Effect<EvaluateResult, EvaluateError> =>
  Effect.gen(function* () {
    const preds = yield* readPredictions(opts.predictions);
    const naProbs = opts.naProbFile ? yield* readNaProbs(opts.naProbFile) : undefined;
    const first = yield* scorePass(opts, preds, opts.v2 ? "v2.0" : undefined, naProbs);
    if (first.rules === "v1.1" && !opts.v2 && isV2Version(first.version)) {
      // The version came after the data: score again under v2.0 rules.
      if (opts.data === "-") {
        return yield* new InputError({
          file: "-",
          where: "",
          message:
            `a SQuAD ${first.version} file on stdin whose "version" comes after "data": pass --v2`,
        });
      }
      return yield* scorePass(opts, preds, "v2.0", naProbs).pipe(Effect.map(finish));
    }
    if (first.noGold) return yield* first.noGold;
    return finish(first);
  });

interface Pass {
  rules: "v1.1" | "v2.0";
  version: string | undefined;
  v1: SquadV1Accumulator;
  v2: SquadV2Accumulator;
  messages: string[];
  noGold: NoGoldAnswersError | undefined;
}

function finish(p: Pass): EvaluateResult {
  if (p.rules === "v1.1") {
    const result = p.v1.result();
    const messages = p.version === "1.1" || p.version === undefined
      ? p.messages
      : [versionMismatchMessage(p.version), ...p.messages];
    return { rules: "v1.1", result, stdout: formatV1(result), messages };
  }
  const result = p.v2.result();
  return { rules: "v2.0", result, stdout: formatV2(result), messages: p.messages };
}

const scorePass = (
  opts: EvaluateOptions,
  preds: Map<string, string>,
  forced: "v2.0" | undefined,
  naProbs: Map<string, NaProb> | undefined,
): Effect.Effect<Pass, EvaluateError> =>
  Effect.gen(function* () {
    const pass: Pass = {
      rules: forced ?? "v1.1",
      version: undefined,
      v1: new SquadV1Accumulator(),
      v2: new SquadV2Accumulator({ naProbs, naProbThreshold: opts.naProbThreshold }),
      messages: [],
      noGold: undefined,
    };
    let sawData = false;
    const rows = opts.perQuestion
      ? yield* Effect.tryPromise({
        try: () => openAtomicWriter(opts.perQuestion!),
        catch: (e) => new FileError({ file: opts.perQuestion!, message: String(e) }),
      })
      : undefined;
    const scoreArticle = (a: SquadArticle): Effect.Effect<void, EvaluateError> =>
      Effect.suspend((): Effect.Effect<void, EvaluateError> => {
        const lines: string[] = [];
        for (const p of a.paragraphs) {
          for (const q of p.questions) {
            const pred = preds.get(q.id);
            const question = { id: q.id, answers: goldTexts(q.answers) };
            let row: PerQuestionScore | undefined;
            if (pass.rules === "v1.1") {
              if (pass.noGold) continue;
              try {
                row = pass.v1.add(question, pred);
              } catch (e) {
                if (e instanceof NoGoldAnswersError) {
                  pass.noGold = e;
                  continue;
                }
                throw e;
              }
              if (!row.answered) pass.messages.push(unansweredMessage(q.id));
            } else {
              try {
                const r2 = pass.v2.add(question, pred);
                if (!r2.answered) pass.messages.push(missingPredictionMessage(q.id));
                row = {
                  id: r2.id,
                  answered: r2.answered,
                  exactMatch: r2.exact === 1,
                  f1: r2.f1,
                  reference: r2.reference,
                };
              } catch (e) {
                if (e instanceof MissingNaProbError) return Effect.fail(e);
                throw e;
              }
            }
            if (rows) {
              const out: QuestionRow = {
                kind: "score",
                id: q.id,
                prediction: pred ?? null,
                reference: row.reference ?? null,
                em: row.exactMatch ? 1 : 0,
                f1: row.f1,
              };
              lines.push(JSON.stringify(out));
            }
          }
        }
        if (!rows || lines.length === 0) return Effect.void;
        return Effect.tryPromise({
          try: () => rows.write(lines.join("\n") + "\n"),
          catch: (e) => new FileError({ file: opts.perQuestion!, message: String(e) }),
        });
      });
    const run = Stream.runForEach(
      squadRecords(opts.data, { context: "optional", qas: "required" }),
      (r) => {
        if (r.kind === "field" && r.key === "version") {
          pass.version = typeof r.value === "string"
            ? r.value
            : r.value instanceof RawNumber
            ? r.value.text
            : JSON.stringify(r.value);
          if (!sawData && !forced && isV2Version(pass.version)) pass.rules = "v2.0";
          return Effect.void;
        }
        if (r.kind === "data-start") sawData = true;
        if (r.kind !== "article") return Effect.void;
        return scoreArticle(r);
      },
    );
    yield* rows
      ? run.pipe(
        Effect.tap(() => Effect.promise(() => rows.commit())),
        Effect.onError(() => Effect.promise(() => rows.abort())),
      )
      : run;
    // Fail on an empty dataset here rather than when formatting.
    if (pass.rules === "v1.1" && !pass.noGold) yield* pass.v1.summary();
    if (pass.rules === "v2.0") yield* pass.v2.summary();
    return pass;
  });

if (import.meta.main) {
  await runMain(
    {
      name: "evaluate",
      summary:
        "Score predictions with the official SQuAD rules: v1.1 (default; output identical to evaluate-v1.1.py) or v2.0 (--v2, or when the dataset's version is v2.x).",
      args: [
        { name: "data.json", description: "SQuAD dataset (.json, .json.gz, or - for stdin)" },
        { name: "pred.json", description: "predictions: {question id: answer} (- for stdin)" },
      ],
      flags: [
        { name: "v2", type: "boolean", description: "score with the SQuAD v2.0 rules" },
        {
          name: "na-prob-file",
          type: "string",
          metavar: "FILE",
          description: "v2.0: no-answer probabilities {question id: p}",
        },
        {
          name: "na-prob-thresh",
          type: "number",
          metavar: "P",
          default: 1.0,
          description: "v2.0: predict no-answer when p > P",
        },
        {
          name: "per-question",
          type: "string",
          metavar: "FILE",
          description: "write one NDJSON row per question (id, prediction, reference, em, f1)",
        },
        // --- BEM (--bem, --disagreements): begin ---
        {
          name: "bem",
          type: "string",
          metavar: "FILE",
          description:
            "also score with BEM (ONNX model; v1.1 rules): prints a second JSON line, adds bem to --per-question rows",
        },
        {
          name: "disagreements",
          type: "string",
          metavar: "FILE",
          description:
            "with --bem: write the questions with EM 0 and BEM > 0.5, or EM 1 and BEM <= 0.5",
        },
        // --- BEM: end ---
      ],
    },
    Deno.args,
    (a) =>
      Effect.gen(function* () {
        if (a.positional["data.json"] === "-" && a.positional["pred.json"] === "-") {
          return yield* new InputError({
            file: "-",
            where: "",
            message: "data.json and pred.json cannot both be stdin",
          });
        }
        // --- BEM (--bem, --disagreements): begin ---
        const bemModel = a.flags["bem"] as string | undefined;
        if (a.flags["disagreements"] !== undefined && bemModel === undefined) {
          return yield* Effect.fail(new UsageError("--disagreements needs --bem"));
        }
        // --- BEM: end ---
        const r = yield* evaluate({
          data: a.positional["data.json"],
          predictions: a.positional["pred.json"],
          v2: a.flags["v2"] === true,
          naProbFile: a.flags["na-prob-file"] as string | undefined,
          naProbThreshold: a.flags["na-prob-thresh"] as number,
          // --- BEM: with --bem, the BEM pass writes the rows (with bem) ---
          perQuestion: bemModel ? undefined : a.flags["per-question"] as string | undefined,
        });
        // --- BEM (--bem, --disagreements): begin ---
        const bemLine = bemModel === undefined
          ? undefined
          : r.rules !== "v1.1"
          ? yield* Effect.fail(new UsageError("--bem scores with the SQuAD v1.1 rules only"))
          : yield* evaluateBemExtra({
            data: a.positional["data.json"],
            predictions: a.positional["pred.json"],
            model: bemModel,
            rows: a.flags["per-question"] as string | undefined,
            disagreements: a.flags["disagreements"] as string | undefined,
          });
        // --- BEM: end ---
        if (r.messages.length) console.error(r.messages.join("\n"));
        console.log(r.stdout);
        if (bemLine !== undefined) console.log(bemLine); // --- BEM ---
      }),
  );
}
