/**
 * The BEM fold over a dataset: per question, BEM = max over the gold answers
 * of score(candidate = prediction, reference = gold, question); a question
 * without prediction scores 0, as in the official SQuAD script. Identical
 * model inputs are scored once (the service keeps their scores), so
 * duplicated gold answers cost nothing. {@linkcode bemEvaluate} streams a
 * dataset one article at a time and writes the per-question rows, the
 * EM/BEM disagreements and the model inputs on request.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import * as Stream from "effect/Stream";
import { FileError, InputError } from "../../io/errors.ts";
import { readPredictions } from "../../io/predictions.ts";
import { type AtomicWriter, openAtomicWriter } from "../../io/fs.ts";
import { squadArticles, type SquadReadError } from "../../io/squad.ts";
import { NoGoldAnswersError, SquadV1Accumulator } from "../squad.ts";
import { type BemInputs, type BemTriple, padBemInputs } from "./inputs.ts";
import { Bem, type BemError, BemLive, type BemStats } from "./service.ts";
import type { BemDevice } from "./session.ts";

/** A pair is judged equivalent when its score is above this. */
export const BEM_THRESHOLD = 0.5;

// ---------------------------------------------------------------------------
// The fold over questions
// ---------------------------------------------------------------------------

/** BEM of one question. */
export interface BemQuestionScore {
  /** Max over the gold answers of the pair score; 0 when unanswered. */
  readonly bem: number;
  /** The first gold answer with that score (`undefined` when unanswered). */
  readonly reference: string | undefined;
}

/**
 * A question's BEM from its pair scores: the max, and the first gold answer
 * reaching it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bemOfQuestion } from "./fold.ts";
 * assert.deepEqual(bemOfQuestion(["Denver", "Denver Broncos"], [0.7, 0.9]), { bem: 0.9, reference: "Denver Broncos" });
 * ```
 */
export function bemOfQuestion(
  golds: readonly string[],
  scores: ArrayLike<number>,
): BemQuestionScore {
  let best = -1, ref: string | undefined;
  for (let i = 0; i < golds.length; i++) {
    if (scores[i] > best) {
      best = scores[i];
      ref = golds[i];
    }
  }
  return best < 0 ? { bem: 0, reference: undefined } : { bem: best, reference: ref };
}

/** The BEM summary. */
export interface BemSummary {
  /** `100 * mean BEM score` over all questions (unanswered count as 0). */
  readonly bem_score: number;
  /** `100 * share of questions whose BEM score is above 0.5`. */
  readonly bem_accuracy: number;
  /** Questions. */
  readonly questions: number;
  /** Questions with a prediction. */
  readonly answered: number;
  /** (prediction, gold) pairs. */
  readonly pairs: number;
  /** Distinct model inputs among them (each scored once). */
  readonly unique_pairs: number;
  /** Pairs truncated to 512 tokens. */
  readonly truncated: number;
  /** Answered questions with EM 0 and BEM > 0.5. */
  readonly em0_bem1: number;
  /** Answered questions with EM 1 and BEM ≤ 0.5. */
  readonly em1_bem0: number;
}

/**
 * Folds per-question BEM scores into the summary.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { BemAccumulator } from "./fold.ts";
 * const acc = new BemAccumulator();
 * acc.add(0.9, 0); // "em0_bem1": BEM accepts what EM rejects
 * acc.add(0.2, 0);
 * acc.add(undefined); // unanswered: 0
 * const s = acc.result({ pairs: 2, uniquePairs: 2, truncated: 0, sessionRuns: 1 });
 * assert.ok(Math.abs(s.bem_score - 110 / 3) < 1e-12);
 * assert.ok(Math.abs(s.bem_accuracy - 100 / 3) < 1e-12);
 * assert.deepEqual([s.questions, s.answered, s.em0_bem1, s.em1_bem0], [3, 2, 1, 0]);
 * ```
 */
export class BemAccumulator {
  #n = 0;
  #answered = 0;
  #sum = 0;
  #correct = 0;
  #em0Bem1 = 0;
  #em1Bem0 = 0;

  /**
   * Adds one question's BEM score (`undefined`: no prediction, scores 0),
   * with its exact match when known (for the disagreement counts). Returns
   * the disagreement, if any.
   */
  add(score: number | undefined, em?: number): "em0_bem1" | "em1_bem0" | undefined {
    this.#n++;
    if (score === undefined) return undefined;
    this.#answered++;
    this.#sum += score;
    const yes = score > BEM_THRESHOLD;
    if (yes) this.#correct++;
    if (em === 0 && yes) {
      this.#em0Bem1++;
      return "em0_bem1";
    }
    if (em === 1 && !yes) {
      this.#em1Bem0++;
      return "em1_bem0";
    }
    return undefined;
  }

  /** Questions added so far. */
  get questions(): number {
    return this.#n;
  }

  /** The summary, with the service's pair counters. */
  result(stats: BemStats): BemSummary {
    const n = this.#n;
    return {
      bem_score: n ? (100 * this.#sum) / n : 0,
      bem_accuracy: n ? (100 * this.#correct) / n : 0,
      questions: n,
      answered: this.#answered,
      pairs: stats.pairs,
      unique_pairs: stats.uniquePairs,
      truncated: stats.truncated,
      em0_bem1: this.#em0Bem1,
      em1_bem0: this.#em1Bem0,
    };
  }
}

/** One row of `--per-question` / `--rows` output. */
export interface BemRow {
  /** Record kind. */
  readonly kind: "score";
  /** Question id. */
  readonly id: string;
  /** The prediction (`null` when there was none). */
  readonly prediction: string | null;
  /** The gold answer with the best F1 (as `evaluate --per-question`). */
  readonly reference: string | null;
  /** All gold answers, in file order. */
  readonly golds: readonly string[];
  /** Exact match (0/1), official rules. */
  readonly em: number;
  /** F1 (0..1), official rules. */
  readonly f1: number;
  /** BEM score (0..1). */
  readonly bem: number;
  /** The gold answer with the best BEM score. */
  readonly bem_reference: string | null;
}

/** A question on which EM and BEM disagree. */
export interface BemDisagreement {
  /** Record kind. */
  readonly kind: "disagreement";
  /** `em0_bem1`: EM 0 but BEM > 0.5; `em1_bem0`: EM 1 but BEM ≤ 0.5. */
  readonly type: "em0_bem1" | "em1_bem0";
  /** Question id. */
  readonly id: string;
  /** The question. */
  readonly question: string;
  /** The prediction. */
  readonly prediction: string;
  /** All gold answers. */
  readonly answers: readonly string[];
  /** Exact match. */
  readonly em: number;
  /** F1. */
  readonly f1: number;
  /** BEM score. */
  readonly bem: number;
  /** The gold answer with the best BEM score. */
  readonly bem_reference: string | null;
}

/** One line of `--dump-inputs`: exactly what the model is fed for a pair. */
export interface BemDumpRecord {
  /** Record kind. */
  readonly kind: "bem_input";
  /** Question id. */
  readonly id: string;
  /** The candidate (the prediction). */
  readonly candidate: string;
  /** The reference (a gold answer). */
  readonly reference: string;
  /** The question. */
  readonly question: string;
  /** Tokens before padding. */
  readonly length: number;
  /** Whether the triple was truncated. */
  readonly truncated: boolean;
  /** Token ids, zero-padded to 512. */
  readonly input_ids: number[];
  /** Segment ids, zero-padded to 512. */
  readonly segment_ids: number[];
}

/** Options of {@linkcode bemEvaluate}. */
export interface BemEvaluateOptions {
  /** SQuAD dataset (`.json`, `.json.gz`, `-`). */
  readonly data: string;
  /** Predictions file, or the predictions already read. */
  readonly predictions: string | ReadonlyMap<string, string>;
  /** Write one {@linkcode BemRow} per question (NDJSON). */
  readonly rows?: string;
  /** Further fields of a question's row, appended after the others; `undefined`: none. */
  readonly rowExtra?: (id: string) => object | undefined;
  /** Write the {@linkcode BemDisagreement}s (NDJSON). */
  readonly disagreements?: string;
  /** Write a {@linkcode BemDumpRecord} per pair (NDJSON). */
  readonly dumpInputs?: string;
  /** Called after each article with the questions done so far. */
  readonly onProgress?: (questions: number) => void;
}

/** What {@linkcode bemEvaluate} found. */
export interface BemEvaluateResult {
  /** The summary. */
  readonly summary: BemSummary;
  /** Service counters (session runs included). */
  readonly stats: BemStats;
}

/** Errors of {@linkcode bemEvaluate}. */
export type BemEvaluateError = SquadReadError | BemError;

const openWriter = (path: string | undefined) =>
  path === undefined ? Effect.succeed(undefined) : Effect.tryPromise({
    try: () => openAtomicWriter(path),
    catch: (e) =>
      new FileError({ file: path, message: e instanceof Error ? e.message : String(e) }),
  });

const write = (w: AtomicWriter | undefined, file: string | undefined, lines: string[]) =>
  !w || lines.length === 0 ? Effect.void : Effect.tryPromise({
    try: () => w.write(lines.join("\n") + "\n"),
    catch: (e) => new FileError({ file: file!, message: String(e) }),
  });

/**
 * Scores a prediction file with BEM, streaming over the dataset one article
 * at a time: per question, BEM = max over its gold answers of
 * score(prediction, gold, question). Also computes the official EM/F1 per
 * question for the rows and the disagreement list. Needs a {@linkcode Bem}.
 *
 * @example
 * ```ts ignore
 * import * as Effect from "effect/Effect";
 * import { BemLive, bemEvaluate } from "./fold.ts";
 * const r = await Effect.runPromise(Effect.provide(
 *   bemEvaluate({ data: "data/dev-v1.1.json.gz", predictions: "pred.json" }),
 *   BemLive({ model: "bem.onnx", batch: 64 }),
 * ));
 * console.log(r.summary.bem_accuracy);
 * ```
 */
export const bemEvaluate = (
  opts: BemEvaluateOptions,
): Effect.Effect<BemEvaluateResult, BemEvaluateError, Bem> =>
  Effect.gen(function* () {
    const bem = yield* Bem;
    const preds = typeof opts.predictions === "string"
      ? yield* readPredictions(opts.predictions)
      : opts.predictions;
    const acc = new BemAccumulator();
    const squad = new SquadV1Accumulator();
    const rows = yield* openWriter(opts.rows);
    const dis = yield* openWriter(opts.disagreements);
    const dump = yield* openWriter(opts.dumpInputs);
    const writers = [rows, dis, dump].filter((w): w is AtomicWriter => w !== undefined);
    const run = Stream.runForEach(
      squadArticles(opts.data, { context: "optional", qas: "required" }),
      (article) =>
        Effect.gen(function* () {
          const qs = article.paragraphs.flatMap((p) => p.questions);
          const inputs: BemInputs[] = [];
          const triples: BemTriple[] = [];
          const owner: number[] = [];
          qs.forEach((q, qi) => {
            const pred = preds.get(q.id);
            if (pred === undefined) return;
            for (const a of q.answers ?? []) {
              const t = { candidate: pred, reference: a.text, question: q.question };
              triples.push(t);
              inputs.push(bem.inputs(t));
              owner.push(qi);
            }
          });
          const scores = yield* bem.scoreInputs(inputs);
          const rowLines: string[] = [], disLines: string[] = [], dumpLines: string[] = [];
          if (dump) {
            inputs.forEach((x, i) => {
              const p = padBemInputs(x);
              const rec: BemDumpRecord = {
                kind: "bem_input",
                id: qs[owner[i]].id,
                ...triples[i],
                length: x.inputIds.length,
                truncated: x.truncated,
                input_ids: Array.from(p.inputIds),
                segment_ids: Array.from(p.segmentIds),
              };
              dumpLines.push(JSON.stringify(rec));
            });
          }
          let at = 0;
          for (let qi = 0; qi < qs.length; qi++) {
            const q = qs[qi];
            const pred = preds.get(q.id);
            const golds = (q.answers ?? []).map((a) => a.text);
            let s: ReturnType<SquadV1Accumulator["add"]>;
            try {
              s = squad.add({ id: q.id, answers: golds }, pred);
            } catch (e) {
              if (e instanceof NoGoldAnswersError) {
                return yield* new InputError({
                  file: opts.data,
                  where: `question "${q.id}"`,
                  message: "has no gold answers, and BEM needs at least one",
                });
              }
              throw e;
            }
            let b: BemQuestionScore = { bem: 0, reference: undefined };
            if (pred !== undefined) {
              b = bemOfQuestion(golds, scores.subarray(at, at + golds.length));
              at += golds.length;
            }
            const em = s.exactMatch ? 1 : 0;
            const type = acc.add(pred === undefined ? undefined : b.bem, em);
            if (rows) {
              const row: BemRow = {
                kind: "score",
                id: q.id,
                prediction: pred ?? null,
                reference: s.reference ?? null,
                golds,
                em,
                f1: s.f1,
                bem: b.bem,
                bem_reference: b.reference ?? null,
              };
              const extra = opts.rowExtra?.(q.id);
              rowLines.push(JSON.stringify(extra === undefined ? row : { ...row, ...extra }));
            }
            if (type && dis) {
              const d: BemDisagreement = {
                kind: "disagreement",
                type,
                id: q.id,
                question: q.question,
                prediction: pred!,
                answers: golds,
                em,
                f1: s.f1,
                bem: b.bem,
                bem_reference: b.reference ?? null,
              };
              disLines.push(JSON.stringify(d));
            }
          }
          yield* write(rows, opts.rows, rowLines);
          yield* write(dis, opts.disagreements, disLines);
          yield* write(dump, opts.dumpInputs, dumpLines);
          opts.onProgress?.(acc.questions);
        }),
    );
    yield* run.pipe(
      Effect.tap(() => Effect.promise(() => Promise.all(writers.map((w) => w.commit())))),
      Effect.onError(() => Effect.promise(() => Promise.all(writers.map((w) => w.abort())))),
    );
    if (acc.questions === 0) {
      return yield* new InputError({ file: opts.data, where: "", message: "no questions" });
    }
    const stats = bem.stats();
    return { summary: acc.result(stats), stats };
  });

/**
 * The summary as one JSON line (what `bem` and `evaluate --bem` print).
 *
 * @example
 * ```ts
 * import { formatBemSummary } from "./fold.ts";
 * const line = formatBemSummary({
 *   bem_score: 91.5, bem_accuracy: 93.2, questions: 10, answered: 10,
 *   pairs: 30, unique_pairs: 21, truncated: 0, em0_bem1: 1, em1_bem0: 0,
 * });
 * if (!line.startsWith('{"bem_score":91.5,"bem_accuracy":93.2,"questions":10,')) throw new Error(line);
 * ```
 */
export function formatBemSummary(s: BemSummary): string {
  return JSON.stringify(s);
}

/** Options of {@linkcode bemEvaluateFile}: the fold's, plus the model and how to run it. */
export interface BemFileOptions extends BemEvaluateOptions {
  /** The BEM ONNX model. */
  readonly model: string;
  /** Pairs per model run (default 32). */
  readonly batch?: number;
  /** `cpu` (default) or `cuda`. */
  readonly device?: BemDevice;
  /** Intra-op threads (ONNX Runtime's default when absent). */
  readonly threads?: number;
}

/**
 * {@linkcode bemEvaluate} with a session of its own on `opts.model`
 * (released at the end): what the `bem` stage runs.
 *
 * @example
 * ```ts ignore
 * import * as Effect from "effect/Effect";
 * import { bemEvaluateFile } from "./fold.ts";
 * const r = await Effect.runPromise(
 *   bemEvaluateFile({ data: "data/dev-v1.1.json.gz", predictions: "pred.json", model: "bem.onnx" }),
 * );
 * r.summary.bem_accuracy;
 * ```
 */
export const bemEvaluateFile = (
  opts: BemFileOptions,
): Effect.Effect<BemEvaluateResult, BemEvaluateError> =>
  Effect.provide(
    bemEvaluate(opts),
    Layer.fresh(BemLive({
      model: opts.model,
      batch: opts.batch,
      device: opts.device,
      threads: opts.threads,
    })),
  );
