/**
 * The official SQuAD scores of a prediction file, streaming over the
 * dataset (what `evaluate data.json pred.json` prints), and, with a BEM
 * model, BEM beside EM/F1 ({@linkcode scoreDataset}: numbers for a program,
 * no child process). SQuAD v1.1 rules by default (stdout is exactly the official
 * script's `{"exact_match": ..., "f1": ...}`); SQuAD v2.0 rules with `--v2`
 * or when the file's `version` says v2 (stdout as the official v2.0 script,
 * `json.dumps(..., indent=2)`). Messages the official scripts print
 * (`Unanswered question ...`, the version warning) come in the same order,
 * in {@linkcode EvaluateResult.messages} or one by one to
 * {@linkcode EvaluateOptions.onMessage}.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import * as Stream from "effect/Stream";
import { FileError, InputError, UsageError } from "../io/errors.ts";
import { readNaProbs, readPredictions } from "../io/predictions.ts";
import { RawNumber } from "../io/pyjson.ts";
import { type SquadArticle, type SquadReadError, squadRecords } from "../io/squad.ts";
import { openAtomicWriter } from "../io/fs.ts";
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
} from "./squad.ts";
// BEM (ONNX Runtime, its tokenizer) is loaded only when asked for: `evaluateBem`.
import type { BemEvaluateError, BemSummary } from "./bem/fold.ts";
import type { BemDevice } from "./bem/session.ts";

/** Options of {@linkcode evaluate}. */
export interface EvaluateOptions {
  /** The SQuAD dataset (`.json`, `.json.gz`, `-`). */
  readonly data: string;
  /**
   * The predictions: a file (`.json`, `-`) holding an object of question
   * id → answer, or the answers already in memory.
   */
  readonly predictions: string | ReadonlyMap<string, string>;
  /** Force SQuAD v2.0 rules (otherwise chosen from the file's `version`). */
  readonly v2?: boolean;
  /** v2.0: file of no-answer probabilities by question id. */
  readonly naProbFile?: string;
  /** v2.0: predict no-answer above this probability (default 1.0). */
  readonly naProbThreshold?: number;
  /** Write one NDJSON row per question (id, prediction, reference, golds, em, f1). */
  readonly perQuestion?: string;
  /**
   * Further fields of a question's row, appended after the others (e.g. the
   * open search's, `OpenRow` in `metrics/open.ts`); `undefined`: none.
   */
  readonly rowExtra?: (id: string) => object | undefined;
  /**
   * Receives the messages (see {@linkcode EvaluateResult.messages}) one by
   * one, in the official order, as soon as that order is certain, instead
   * of {@linkcode EvaluateResult.messages} (left empty): no message is kept.
   * Until the rules are known (a file whose `version` comes after `data`,
   * the official layout), only the ids of the questions concerned are kept.
   */
  readonly onMessage?: (line: string) => void;
}

/** What {@linkcode evaluate} found. */
export interface EvaluateResult {
  /** Which rules scored the file. */
  readonly rules: "v1.1" | "v2.0";
  /** The summary. */
  readonly result: SquadV1Result | SquadV2Result;
  /** Exactly what the official script prints on stdout (no newline). */
  readonly stdout: string;
  /**
   * What it prints on stderr, in order (one message a line); empty with
   * {@linkcode EvaluateOptions.onMessage}, which got them.
   */
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
  /** All gold answers, in file order. */
  readonly golds: readonly string[];
  /** Exact match (0/1). */
  readonly em: number;
  /** F1 (0..1). */
  readonly f1: number;
}

/**
 * Scores a prediction file against a SQuAD dataset with the official rules.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { evaluate } from "./evaluate.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/d.json`, JSON.stringify({
 *   version: "1.1",
 *   data: [{ title: "t", paragraphs: [{ context: "Paris is in France.", qas: [
 *     { id: "q1", question: "Where is Paris?", answers: [{ text: "France", answer_start: 12 }] },
 *   ] }] }],
 * }));
 * await Deno.writeTextFile(`${dir}/p.json`, JSON.stringify({ q1: "france" }));
 * const r = await Effect.runPromise(evaluate({ data: `${dir}/d.json`, predictions: `${dir}/p.json` }));
 * await Deno.remove(dir, { recursive: true });
 * if (r.stdout !== '{"exact_match": 100.0, "f1": 100.0}') throw new Error(r.stdout);
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
    const preds = typeof opts.predictions === "string"
      ? yield* readPredictions(opts.predictions)
      : opts.predictions;
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
      return yield* scorePass(opts, preds, "v2.0", naProbs).pipe(
        Effect.map((p) => (release(p), finish(p))),
      );
    }
    if (first.noGold) return yield* first.noGold;
    release(first);
    return finish(first);
  });

interface Pass {
  rules: "v1.1" | "v2.0";
  version: string | undefined;
  v1: SquadV1Accumulator;
  v2: SquadV2Accumulator;
  messages: string[];
  noGold: NoGoldAnswersError | undefined;
  /** Where messages go one by one (`EvaluateOptions.onMessage`). */
  onMessage: ((line: string) => void) | undefined;
  /** With `onMessage`: the order is certain, messages go out as they come. */
  released: boolean;
  /**
   * With `onMessage`, until released: the ids the messages are about, in
   * order, packed (see {@linkcode HeldIds}).
   */
  held: HeldIds;
}

/**
 * Question ids kept in order, packed as JSON strings joined by newlines in
 * chunks of 1024: an id from the parser may be a slice that keeps a whole
 * chunk of the input alive, a packed copy does not.
 */
class HeldIds {
  #chunks: string[] = [];
  #batch: string[] = [];
  /** Keeps `id`. */
  push(id: string): void {
    this.#batch.push(JSON.stringify(id));
    if (this.#batch.length === 1024) {
      this.#chunks.push(this.#batch.join("\n"));
      this.#batch = [];
    }
  }
  /** The ids kept, in order. */
  *ids(): Generator<string> {
    for (const c of [...this.#chunks, this.#batch.join("\n")]) {
      if (c === "") continue;
      for (const s of c.split("\n")) yield JSON.parse(s) as string;
    }
  }
}

const versionWarns = (v: string | undefined): v is string => v !== "1.1" && v !== undefined;

/** A message about question `id` (unanswered; no prediction under v2.0). */
function tell(p: Pass, id: string): void {
  if (p.onMessage === undefined) p.messages.push(messageOf(p, id));
  else if (p.released) p.onMessage(messageOf(p, id));
  else p.held.push(id);
}

const messageOf = (p: Pass, id: string) =>
  p.rules === "v1.1" ? unansweredMessage(id) : missingPredictionMessage(id);

/**
 * The order of the messages is certain (the rules and version are known):
 * the version warning, then the messages held so far; the rest go out as
 * they come.
 */
function release(p: Pass): void {
  if (p.onMessage === undefined || p.released) return;
  p.released = true;
  if (p.rules === "v1.1" && versionWarns(p.version)) p.onMessage(versionMismatchMessage(p.version));
  for (const id of p.held.ids()) p.onMessage(messageOf(p, id));
  p.held = new HeldIds();
}

function finish(p: Pass): EvaluateResult {
  if (p.rules === "v1.1") {
    const result = p.v1.result();
    const messages = !versionWarns(p.version) || p.onMessage !== undefined
      ? p.messages
      : [versionMismatchMessage(p.version), ...p.messages];
    return { rules: "v1.1", result, stdout: formatV1(result), messages };
  }
  const result = p.v2.result();
  return { rules: "v2.0", result, stdout: formatV2(result), messages: p.messages };
}

const scorePass = (
  opts: EvaluateOptions,
  preds: ReadonlyMap<string, string>,
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
      onMessage: opts.onMessage,
      released: false,
      held: new HeldIds(),
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
              if (!row.answered) tell(pass, q.id);
            } else {
              try {
                const r2 = pass.v2.add(question, pred);
                if (!r2.answered) tell(pass, q.id);
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
                golds: question.answers,
                em: row.exactMatch ? 1 : 0,
                f1: row.f1,
              };
              const extra = opts.rowExtra?.(q.id);
              lines.push(JSON.stringify(extra === undefined ? out : { ...out, ...extra }));
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
          // After the data, a v2.0 version means a second pass (this one's messages go).
          if (sawData && (forced || !isV2Version(pass.version))) release(pass);
          return Effect.void;
        }
        if (r.kind === "data-start") {
          sawData = true;
          // The rules are settled before the data: no message need wait.
          if (forced || pass.version !== undefined) release(pass);
        }
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

/** Options of {@linkcode evaluateBemExtra}. */
export interface EvaluateBemOptions {
  /** SQuAD dataset (a file: it is read a second time). */
  readonly data: string;
  /** Predictions (a file: it is read a second time; or the answers in memory). */
  readonly predictions: string | ReadonlyMap<string, string>;
  /** The BEM ONNX model. */
  readonly model: string;
  /** Per-question rows with BEM (`evaluate --per-question`). */
  readonly rows?: string;
  /** Further fields of a question's row (see {@linkcode EvaluateOptions.rowExtra}). */
  readonly rowExtra?: (id: string) => object | undefined;
  /** The disagreement list (`evaluate --disagreements`). */
  readonly disagreements?: string;
  /** Pairs per model run (default 32). */
  readonly batch?: number;
  /** `cpu` (default) or `cuda`. */
  readonly device?: BemDevice;
  /** Intra-op threads (ONNX Runtime's default when absent). */
  readonly threads?: number;
}

/**
 * The BEM pass of `evaluate --bem`: scores the same files again with BEM
 * (a session of its own, released at the end), writes the per-question rows
 * (with `bem`) and the disagreement list, and returns the BEM summary.
 *
 * @example
 * ```ts ignore
 * import * as Effect from "effect/Effect";
 * import { evaluateBem } from "./evaluate.ts";
 * const s = await Effect.runPromise(evaluateBem({
 *   data: "data/dev-v1.1.json.gz", predictions: "pred.json", model: "bem.onnx",
 * }));
 * s.bem_accuracy;
 * ```
 */
export const evaluateBem = (
  opts: EvaluateBemOptions,
): Effect.Effect<BemSummary, BemEvaluateError | InputError> =>
  Effect.gen(function* () {
    if (opts.data === "-" || opts.predictions === "-") {
      return yield* new InputError({
        file: "-",
        where: "",
        message: "--bem reads data.json and pred.json a second time: give files, not stdin",
      });
    }
    const [{ bemEvaluate }, { BemLive }] = yield* Effect.promise(() =>
      Promise.all([import("./bem/fold.ts"), import("./bem/service.ts")])
    );
    const r = yield* Effect.provide(
      bemEvaluate({
        data: opts.data,
        predictions: opts.predictions,
        rows: opts.rows,
        rowExtra: opts.rowExtra,
        disagreements: opts.disagreements,
      }),
      Layer.fresh(BemLive({
        model: opts.model,
        batch: opts.batch,
        device: opts.device,
        threads: opts.threads,
      })),
    );
    return r.summary;
  });

/**
 * What `evaluate --bem` adds: a BEM pass over the same files (CPU, batch 32)
 * that writes the per-question rows (with `bem`) and the disagreement list,
 * and returns the BEM summary line ({@linkcode evaluateBem}, formatted).
 *
 * @example
 * ```ts ignore
 * import * as Effect from "effect/Effect";
 * import { evaluateBemExtra } from "./evaluate.ts";
 * const line = await Effect.runPromise(evaluateBemExtra({
 *   data: "data/dev-v1.1.json.gz", predictions: "pred.json", model: "bem.onnx",
 * }));
 * ```
 */
export const evaluateBemExtra = (
  opts: EvaluateBemOptions,
): Effect.Effect<string, BemEvaluateError | InputError> =>
  Effect.flatMap(
    evaluateBem(opts),
    (s) => Effect.promise(() => import("./bem/fold.ts").then((m) => m.formatBemSummary(s))),
  );

/** Options of {@linkcode scoreDataset}: {@linkcode evaluate}'s, plus BEM. */
export interface ScoreDatasetOptions extends EvaluateOptions {
  /**
   * Also score with BEM (SQuAD v1.1 rules only): the model and how to run
   * it. The per-question rows (`perQuestion`) then carry `bem` too.
   */
  readonly bem?: {
    /** The BEM ONNX model. */
    readonly model: string;
    /** Pairs per model run (default 32). */
    readonly batch?: number;
    /** `cpu` (default) or `cuda`. */
    readonly device?: BemDevice;
    /** Intra-op threads (ONNX Runtime's default when absent). */
    readonly threads?: number;
    /** Write the questions on which EM and BEM disagree (NDJSON). */
    readonly disagreements?: string;
  };
}

/** What {@linkcode scoreDataset} found: numbers, and the official texts. */
export interface DatasetScores extends EvaluateResult {
  /** Exact match in percent (v1.1 `exact_match`, v2.0 `exact`). */
  readonly exactMatch: number;
  /** F1 in percent. */
  readonly f1: number;
  /** Questions scored (v1.1: every occurrence; v2.0: distinct ids). */
  readonly questions: number;
  /** The BEM summary, when BEM was asked for. */
  readonly bem?: BemSummary;
}

/**
 * EM/F1 with the official rules and, when `opts.bem` names a model, BEM,
 * for a dataset and predictions (a file, or a map in memory), in process: what `evaluate [--bem]`
 * prints, as numbers. Fails with `UsageError` when BEM is asked for on a
 * SQuAD v2.0 file.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { scoreDataset } from "./evaluate.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/d.json`, JSON.stringify({
 *   version: "1.1",
 *   data: [{ title: "t", paragraphs: [{ context: "Paris is in France.", qas: [
 *     { id: "q1", question: "Where is Paris?", answers: [{ text: "France", answer_start: 12 }] },
 *     { id: "q2", question: "What is in France?", answers: [{ text: "Paris", answer_start: 0 }] },
 *   ] }] }],
 * }));
 * await Deno.writeTextFile(`${dir}/p.json`, JSON.stringify({ q1: "in France", q2: "Paris" }));
 * const s = await Effect.runPromise(scoreDataset({ data: `${dir}/d.json`, predictions: `${dir}/p.json` }));
 * // Predictions already in memory work as well.
 * const inMemory = new Map([["q1", "France"], ["q2", "Paris"]]);
 * const all = await Effect.runPromise(scoreDataset({ data: `${dir}/d.json`, predictions: inMemory }));
 * await Deno.remove(dir, { recursive: true });
 * if (all.exactMatch !== 100 || all.bem !== undefined) throw new Error(JSON.stringify(all));
 * if (s.exactMatch !== 50 || Math.abs(s.f1 - 250 / 3) > 1e-9 || s.questions !== 2) {
 *   throw new Error(JSON.stringify(s));
 * }
 * ```
 */
export const scoreDataset = (
  opts: ScoreDatasetOptions,
): Effect.Effect<DatasetScores, EvaluateError | BemEvaluateError | UsageError> =>
  Effect.gen(function* () {
    const r = yield* evaluate({
      ...opts,
      // With BEM, the BEM pass writes the rows (with bem).
      perQuestion: opts.bem ? undefined : opts.perQuestion,
    });
    const numbers = r.rules === "v1.1"
      ? {
        exactMatch: (r.result as SquadV1Result).exact_match,
        f1: r.result.f1,
        questions: r.result.total,
      }
      : {
        exactMatch: (r.result as SquadV2Result).exact,
        f1: r.result.f1,
        questions: r.result.total,
      };
    if (!opts.bem) return { ...r, ...numbers };
    if (r.rules !== "v1.1") {
      return yield* Effect.fail(new UsageError("--bem scores with the SQuAD v1.1 rules only"));
    }
    const bem = yield* evaluateBem({
      data: opts.data,
      predictions: opts.predictions,
      model: opts.bem.model,
      rows: opts.perQuestion,
      rowExtra: opts.rowExtra,
      disagreements: opts.bem.disagreements,
      batch: opts.bem.batch,
      device: opts.bem.device,
      threads: opts.bem.threads,
    });
    return { ...r, ...numbers, bem };
  });
