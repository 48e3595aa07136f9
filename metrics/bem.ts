/**
 * BEM answer equivalence (Bulian et al. 2022, "Tomayto, Tomahto. Beyond
 * Token-level Answer Equivalence for Question Answering Evaluation"): a BERT
 * classifier, trained on human judgments, that says whether a candidate
 * answer means the same as a reference answer to a question. EM and F1
 * punish correct answers worded differently; BEM does not.
 *
 * The recipe, followed exactly:
 *
 * - Tokenizer: BERT uncased WordPiece, bert-base-uncased vocabulary
 *   (`data/bert/`), the ids of Hugging Face's `BertTokenizer(do_lower_case=True)`
 *   (`./_bem_tokenizer.ts`).
 * - Sequence `[CLS] candidate [SEP] reference [SEP] question [SEP]`; segment
 *   ids 0 for `[CLS]`, the candidate and its `[SEP]`, 1 for the reference and
 *   its `[SEP]`, 2 for the question and its `[SEP]`.
 * - `input_ids` and `segment_ids` zero-padded to 512; no attention mask unless
 *   the model declares that input (then 1 on tokens, 0 on padding).
 * - Two logits per pair; score = softmax(logits)[1]. A pair is "equivalent"
 *   when its score is above 0.5.
 *
 * **Truncation** (not in the recipe, which never meets it on short answers):
 * when `candidate + reference + question + 4` tokens exceed 512, tokens are
 * cut from the end of the question first, then from the end of the
 * reference, then from the end of the candidate, until the triple fits; the
 * three `[SEP]` and `[CLS]` always stay. Every truncated pair is counted.
 *
 * **Per question** (`bemEvaluate`): BEM = max over the gold answers of
 * score(candidate = prediction, reference = gold, question); a question
 * without prediction scores 0, as in the official SQuAD script. Identical
 * model inputs are scored once (the service keeps their scores), so
 * duplicated gold answers cost nothing.
 *
 * The model: `metrics/bem/README.md` says how to turn the TF-Hub SavedModel
 * into `bem.onnx`. Tests use `tests/fixtures/bem_surrogate_NOT_BEM.onnx`, a
 * random BERT-shaped stand-in with the same interface whose scores mean
 * nothing.
 *
 * @example
 * ```ts ignore
 * import { Effect } from "effect";
 * import { Bem, BemLive } from "./bem.ts";
 * const program = Effect.gen(function* () {
 *   const bem = yield* Bem;
 *   return yield* bem.score([{
 *     question: "why is the sky blue",
 *     reference: "light scattering",
 *     candidate: "scattering of light",
 *   }]);
 * });
 * const [score] = await Effect.runPromise(
 *   Effect.provide(program, BemLive({ model: "bem.onnx" })),
 * ); // about 0.989 with the real BEM
 * ```
 *
 * @module
 */
import { Context, Data, Effect, Layer, Stream } from "effect";
import { FileError, InputError } from "../io/errors.ts";
import { readPredictions } from "../io/predictions.ts";
import { type AtomicWriter, openAtomicWriter } from "../io/source.ts";
import { squadArticles, type SquadReadError } from "../io/squad.ts";
import { type BertTokenizer, bertUncasedTokenizer } from "./_bem_tokenizer.ts";
import {
  type BemBatch,
  type BemDevice,
  type BemInterface,
  bemInterface,
  openBemSession,
  runBemBatch,
  sessionValueInfo,
} from "./_bem_session.ts";
import { NoGoldAnswersError, SquadV1Accumulator } from "./squad.ts";

export type { BertTokenizer } from "./_bem_tokenizer.ts";
export type { BemDevice, BemInterface } from "./_bem_session.ts";

/** Positions BEM's inputs are padded to (and truncated at). */
export const BEM_MAX_LENGTH = 512;

/** A pair is judged equivalent when its score is above this. */
export const BEM_THRESHOLD = 0.5;

/** Where the route to `bem.onnx` is documented (printed when no model is given). */
export const BEM_MODEL_HOWTO: string =
  "no BEM model: convert the TF-Hub SavedModel to bem.onnx with one command, see README.md, " +
  'section "BEM: getting the model" (metrics/bem/README.md)';

/** One question to judge: is `candidate` equivalent to `reference`? */
export interface BemTriple {
  /** The answer being judged (a prediction). */
  readonly candidate: string;
  /** The answer it is compared with (a gold answer). */
  readonly reference: string;
  /** The question both answer. */
  readonly question: string;
}

/** The model inputs of one triple, unpadded. */
export interface BemInputs {
  /** `[CLS] candidate [SEP] reference [SEP] question [SEP]` token ids. */
  readonly inputIds: Int32Array;
  /** 0 (`[CLS]`, candidate, `[SEP]`), 1 (reference, `[SEP]`), 2 (question, `[SEP]`). */
  readonly segmentIds: Int32Array;
  /** Whether tokens were cut to fit 512. */
  readonly truncated: boolean;
  /** Tokens cut from the end of each part. */
  readonly cut: {
    readonly candidate: number;
    readonly reference: number;
    readonly question: number;
  };
}

// ---------------------------------------------------------------------------
// Pure functions
// ---------------------------------------------------------------------------

let defaultTokenizer: BertTokenizer | undefined;

/**
 * The BEM tokenizer over the bundled `data/bert/bert-base-uncased-vocab.txt`
 * (read once; needs read permission on it).
 *
 * @example
 * ```ts
 * import { defaultBemTokenizer } from "./bem.ts";
 * defaultBemTokenizer().ids("scattering of light"); // [17501, 1997, 2422]
 * ```
 */
export function defaultBemTokenizer(): BertTokenizer {
  if (!defaultTokenizer) {
    const url = new URL("../data/bert/bert-base-uncased-vocab.txt", import.meta.url);
    defaultTokenizer = bertUncasedTokenizer(Deno.readTextFileSync(url));
  }
  return defaultTokenizer;
}

/**
 * The BEM tokenizer over another `vocab.txt`.
 *
 * @example
 * ```ts
 * import { bemTokenizerFromFile } from "./bem.ts";
 * const tok = bemTokenizerFromFile("data/bert/bert-base-uncased-vocab.txt");
 * tok.ids("light scattering"); // [2422, 17501]
 * ```
 */
export function bemTokenizerFromFile(path: string): BertTokenizer {
  return bertUncasedTokenizer(Deno.readTextFileSync(path));
}

/**
 * Assembles token ids of the three parts into BEM's sequence and segment
 * ids, truncating (question first, then reference, then candidate, each from
 * its end) when the triple exceeds `maxLength`.
 *
 * @example
 * ```ts
 * import { bemAssemble } from "./bem.ts";
 * const x = bemAssemble([17501, 1997, 2422], [2422, 17501], [2339, 2003, 1996, 3712, 2630]);
 * Array.from(x.segmentIds); // [0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2, 2]
 * ```
 */
export function bemAssemble(
  candidate: readonly number[],
  reference: readonly number[],
  question: readonly number[],
  maxLength: number = BEM_MAX_LENGTH,
  special: { cls: number; sep: number } = { cls: 101, sep: 102 },
): BemInputs {
  if (maxLength < 4) throw new RangeError("maxLength must leave room for [CLS] and three [SEP]");
  let excess = candidate.length + reference.length + question.length + 4 - maxLength;
  const take = (n: number) => {
    const k = Math.max(0, Math.min(excess, n));
    excess -= k;
    return k;
  };
  const cutQ = take(question.length);
  const cutR = take(reference.length);
  const cutC = take(candidate.length);
  const c = candidate.length - cutC, r = reference.length - cutR, q = question.length - cutQ;
  const n = c + r + q + 4;
  const ids = new Int32Array(n);
  const seg = new Int32Array(n);
  let o = 0;
  ids[o++] = special.cls;
  for (let i = 0; i < c; i++) ids[o++] = candidate[i];
  ids[o++] = special.sep;
  const s1 = o;
  for (let i = 0; i < r; i++) ids[o++] = reference[i];
  ids[o++] = special.sep;
  const s2 = o;
  for (let i = 0; i < q; i++) ids[o++] = question[i];
  ids[o++] = special.sep;
  seg.fill(1, s1, s2);
  seg.fill(2, s2, n);
  return {
    inputIds: ids,
    segmentIds: seg,
    truncated: cutQ + cutR + cutC > 0,
    cut: { candidate: cutC, reference: cutR, question: cutQ },
  };
}

/**
 * The model inputs of a triple, unpadded (see {@linkcode padBemInputs}).
 *
 * @example
 * ```ts
 * import { bemInputs } from "./bem.ts";
 * const x = bemInputs({
 *   question: "why is the sky blue",
 *   reference: "light scattering",
 *   candidate: "scattering of light",
 * });
 * Array.from(x.inputIds);
 * // [101, 17501, 1997, 2422, 102, 2422, 17501, 102, 2339, 2003, 1996, 3712, 2630, 102]
 * ```
 */
export function bemInputs(
  triple: BemTriple,
  tokenizer: BertTokenizer = defaultBemTokenizer(),
  maxLength: number = BEM_MAX_LENGTH,
): BemInputs {
  return bemAssemble(
    tokenizer.ids(triple.candidate),
    tokenizer.ids(triple.reference),
    tokenizer.ids(triple.question),
    maxLength,
    { cls: tokenizer.clsId, sep: tokenizer.sepId },
  );
}

/**
 * Zero-pads inputs to `maxLength` (what the model is fed).
 *
 * @example
 * ```ts
 * import { bemAssemble, padBemInputs } from "./bem.ts";
 * const p = padBemInputs(bemAssemble([7], [8], [9]));
 * p.inputIds.length; // 512
 * ```
 */
export function padBemInputs(
  inputs: BemInputs,
  maxLength: number = BEM_MAX_LENGTH,
): { inputIds: Int32Array; segmentIds: Int32Array } {
  const ids = new Int32Array(maxLength);
  const seg = new Int32Array(maxLength);
  ids.set(inputs.inputIds);
  seg.set(inputs.segmentIds);
  return { inputIds: ids, segmentIds: seg };
}

/**
 * `softmax([l0, l1])[1]`, computed stably: BEM's score from its two logits.
 *
 * @example
 * ```ts
 * import { softmax1 } from "./bem.ts";
 * softmax1(0, 0); // 0.5
 * softmax1(-1000, 1000); // 1
 * ```
 */
export function softmax1(l0: number, l1: number): number {
  const m = Math.max(l0, l1);
  const e0 = Math.exp(l0 - m), e1 = Math.exp(l1 - m);
  return e1 / (e0 + e1);
}

/** A key that is equal for equal model inputs. */
function inputKey(x: BemInputs): string {
  let s1 = 0;
  while (s1 < x.segmentIds.length && x.segmentIds[s1] === 0) s1++;
  let s2 = s1;
  while (s2 < x.segmentIds.length && x.segmentIds[s2] === 1) s2++;
  return `${s1},${s2}:${x.inputIds.join(",")}`;
}

// ---------------------------------------------------------------------------
// The service
// ---------------------------------------------------------------------------

/**
 * BEM cannot run: no model, a model that does not fit the recipe
 * (`exitCode` 2), or an inference failure (`exitCode` 1).
 */
export class BemError extends Data.TaggedError("BemError")<{
  /** One line. */
  readonly message: string;
  /** 2 for a missing or unfit model (bad input), 1 for a failure of the work. */
  readonly exitCode: 1 | 2;
}> {}

/** Counters of a {@linkcode Bem} service. */
export interface BemStats {
  /** Pairs asked for. */
  readonly pairs: number;
  /** Distinct model inputs scored (each once). */
  readonly uniquePairs: number;
  /** Pairs that were truncated to fit 512 tokens. */
  readonly truncated: number;
  /** `session.run` calls. */
  readonly sessionRuns: number;
}

/** What the model is and how it runs. */
export interface BemInfo {
  /** The `.onnx` file. */
  readonly model: string;
  /** Its interface, read from the graph. */
  readonly interface: BemInterface;
  /** Execution device. */
  readonly device: BemDevice;
  /** Pairs per `session.run`. */
  readonly batch: number;
}

/**
 * The BEM scorer.
 *
 * @example
 * ```ts ignore
 * import { Effect } from "effect";
 * import { Bem } from "./bem.ts";
 * const program = Effect.gen(function* () {
 *   const bem = yield* Bem;
 *   const [s] = yield* bem.score([{ question: "q", reference: "r", candidate: "c" }]);
 *   return { s, stats: bem.stats() };
 * });
 * ```
 */
export class Bem extends Context.Service<Bem, {
  /** The model and how it runs. */
  readonly info: BemInfo;
  /** The tokenizer it uses. */
  readonly tokenizer: BertTokenizer;
  /** The model inputs of a triple (unpadded). */
  inputs(triple: BemTriple): BemInputs;
  /** Scores prepared inputs, in order; identical inputs run once. */
  scoreInputs(inputs: readonly BemInputs[]): Effect.Effect<Float64Array, BemError>;
  /** Scores triples, in order. */
  score(triples: readonly BemTriple[]): Effect.Effect<Float64Array, BemError>;
  /** Counters so far. */
  stats(): BemStats;
}>()("phraseval/metrics/Bem") {}

/** Options of {@linkcode BemLive}. */
export interface BemOptions {
  /** The ONNX model file. */
  readonly model: string;
  /** Pairs per `session.run` (default 32). */
  readonly batch?: number;
  /** `cpu` (default) or `cuda`. */
  readonly device?: BemDevice;
  /** Intra-op threads (ONNX Runtime's default when absent). */
  readonly threads?: number;
  /** The tokenizer (default: {@linkcode defaultBemTokenizer}). */
  readonly tokenizer?: BertTokenizer;
  /**
   * Scores kept across calls for dedup (default 1,000,000; the oldest go
   * first; 0 keeps none, identical inputs within one call still run once).
   */
  readonly cacheSize?: number;
}

/** Runs a batch; a seam for tests and for other runtimes. */
export type BemRunner = (batch: BemBatch) => Promise<Float64Array>;

/**
 * A {@linkcode Bem} over any batch runner (the ONNX one is
 * {@linkcode BemLive}); dedup, caching, batching and counting live here.
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { makeBem } from "./bem.ts";
 * const bem = makeBem(
 *   async (b) => new Float64Array(b.rows * 2), // logits (0, 0): score 0.5
 *   { model: "zeros", interface: {} as never, device: "cpu", batch: 8 },
 * );
 * await Effect.runPromise(bem.score([{ question: "q", reference: "r", candidate: "c" }]));
 * // Float64Array [0.5]
 * ```
 */
export function makeBem(
  run: BemRunner,
  info: BemInfo,
  opts: { tokenizer?: BertTokenizer; cacheSize?: number; maxLength?: number } = {},
): Bem["Service"] {
  const tokenizer = opts.tokenizer ?? defaultBemTokenizer();
  const maxLength = opts.maxLength ?? BEM_MAX_LENGTH;
  const cacheSize = opts.cacheSize ?? 1_000_000;
  const fixedBatch = info.interface?.fixedBatch;
  const batchSize = fixedBatch ?? Math.max(1, info.batch);
  const cache = new Map<string, number>();
  const memo = new Map<string, number[]>();
  let pairs = 0, unique = 0, truncated = 0, runs = 0;
  const ids = (text: string): number[] => {
    let v = memo.get(text);
    if (!v) {
      v = tokenizer.ids(text);
      if (memo.size > 10_000) memo.clear();
      memo.set(text, v);
    }
    return v;
  };
  const inputs = (t: BemTriple): BemInputs =>
    bemAssemble(ids(t.candidate), ids(t.reference), ids(t.question), maxLength, {
      cls: tokenizer.clsId,
      sep: tokenizer.sepId,
    });
  const remember = (key: string, score: number) => {
    if (cacheSize <= 0) return;
    if (cache.size >= cacheSize) cache.delete(cache.keys().next().value!);
    cache.set(key, score);
  };
  /** Runs the inputs in batches; returns their scores by key. */
  const runMissing = async (missing: Map<string, BemInputs>): Promise<Map<string, number>> => {
    const scored = new Map<string, number>();
    const entries = [...missing];
    for (let at = 0; at < entries.length; at += batchSize) {
      const chunk = entries.slice(at, at + batchSize);
      const rows = fixedBatch ?? chunk.length;
      const batch: BemBatch = {
        rows,
        seqLen: maxLength,
        ids: new Int32Array(rows * maxLength),
        segments: new Int32Array(rows * maxLength),
        lengths: new Int32Array(rows),
      };
      for (let r = 0; r < rows; r++) {
        const x = chunk[Math.min(r, chunk.length - 1)][1]; // a fixed batch repeats its last row
        batch.ids.set(x.inputIds, r * maxLength);
        batch.segments.set(x.segmentIds, r * maxLength);
        batch.lengths[r] = x.inputIds.length;
      }
      const logits = await run(batch);
      runs++;
      chunk.forEach(([key], r) => {
        const score = softmax1(logits[2 * r], logits[2 * r + 1]);
        scored.set(key, score);
        remember(key, score);
      });
      unique += chunk.length;
    }
    return scored;
  };
  const scoreInputs = (xs: readonly BemInputs[]): Effect.Effect<Float64Array, BemError> =>
    Effect.tryPromise({
      try: async () => {
        const keys = xs.map(inputKey);
        const known = new Map<string, number>();
        const missing = new Map<string, BemInputs>();
        xs.forEach((x, i) => {
          pairs++;
          if (x.truncated) truncated++;
          const k = keys[i];
          const c = cache.get(k);
          if (c !== undefined) known.set(k, c);
          else if (!missing.has(k)) missing.set(k, x);
        });
        const scored = await runMissing(missing);
        return Float64Array.from(keys, (k) => known.get(k) ?? scored.get(k)!);
      },
      catch: (e) =>
        e instanceof BemError ? e : new BemError({
          message: `BEM inference failed: ${e instanceof Error ? e.message : String(e)}`,
          exitCode: 1,
        }),
    });
  return {
    info,
    tokenizer,
    inputs,
    scoreInputs,
    score: (triples) => scoreInputs(triples.map(inputs)),
    stats: () => ({ pairs, uniquePairs: unique, truncated, sessionRuns: runs }),
  };
}

/**
 * The {@linkcode Bem} service over an ONNX Runtime session on `opts.model`.
 * Fails with {@linkcode BemError} (exit code 2) when the file is missing, is
 * not a model, or its inputs and outputs do not fit BEM's recipe; the
 * session is released with the layer.
 *
 * @example
 * ```ts ignore
 * import { BemLive } from "./bem.ts";
 * const layer = BemLive({ model: "bem.onnx", batch: 64, device: "cpu" });
 * ```
 */
export const BemLive = (opts: BemOptions): Layer.Layer<Bem, BemError> =>
  Layer.effect(
    Bem,
    Effect.gen(function* () {
      const exists = yield* Effect.promise(() =>
        Deno.stat(opts.model).then((s) => s.isFile, () => false)
      );
      if (!exists) {
        return yield* new BemError({ message: `${opts.model}: ${BEM_MODEL_HOWTO}`, exitCode: 2 });
      }
      const device = opts.device ?? "cpu";
      const session = yield* Effect.acquireRelease(
        Effect.tryPromise({
          try: () => openBemSession(opts.model, { device, threads: opts.threads }),
          catch: (e) =>
            new BemError({
              message: `${opts.model}: ${e instanceof Error ? e.message : String(e)}`,
              exitCode: 2,
            }),
        }),
        (s) => Effect.promise(() => s.release().catch(() => {})),
      );
      const v = sessionValueInfo(session);
      const iface = bemInterface(v.inputs, v.outputs);
      if (typeof iface === "string") {
        return yield* new BemError({ message: `${opts.model}: ${iface}`, exitCode: 2 });
      }
      return makeBem(
        (b) => runBemBatch(session, iface, b),
        { model: opts.model, interface: iface, device, batch: opts.batch ?? 32 },
        { tokenizer: opts.tokenizer, cacheSize: opts.cacheSize },
      );
    }),
  );

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
 * import { bemOfQuestion } from "./bem.ts";
 * bemOfQuestion(["Denver", "Denver Broncos"], [0.7, 0.9]); // { bem: 0.9, reference: "Denver Broncos" }
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
 * import { BemAccumulator } from "./bem.ts";
 * const acc = new BemAccumulator();
 * acc.add(0.9, 0); // "em0_bem1": BEM accepts what EM rejects
 * acc.add(0.2, 0);
 * acc.add(undefined); // unanswered: 0
 * acc.result({ pairs: 2, uniquePairs: 2, truncated: 0, sessionRuns: 1 });
 * // { bem_score: 36.66..., bem_accuracy: 33.33..., questions: 3, answered: 2, ..., em0_bem1: 1 }
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
 * import { Effect } from "effect";
 * import { BemLive, bemEvaluate } from "./bem.ts";
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
                em,
                f1: s.f1,
                bem: b.bem,
                bem_reference: b.reference ?? null,
              };
              rowLines.push(JSON.stringify(row));
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
 * import { formatBemSummary } from "./bem.ts";
 * formatBemSummary({
 *   bem_score: 91.5, bem_accuracy: 93.2, questions: 10, answered: 10,
 *   pairs: 30, unique_pairs: 21, truncated: 0, em0_bem1: 1, em1_bem0: 0,
 * });
 * // '{"bem_score":91.5,"bem_accuracy":93.2,"questions":10,...}'
 * ```
 */
export function formatBemSummary(s: BemSummary): string {
  return JSON.stringify(s);
}

/** Options of {@linkcode evaluateBemExtra}. */
export interface EvaluateBemOptions {
  /** SQuAD dataset (a file: it is read a second time). */
  readonly data: string;
  /** Predictions (a file). */
  readonly predictions: string;
  /** The BEM ONNX model. */
  readonly model: string;
  /** Per-question rows with BEM (`evaluate --per-question`). */
  readonly rows?: string;
  /** The disagreement list (`evaluate --disagreements`). */
  readonly disagreements?: string;
}

/**
 * What `evaluate --bem` adds: a BEM pass over the same files (CPU, batch 32)
 * that writes the per-question rows (with `bem`) and the disagreement list,
 * and returns the BEM summary line.
 *
 * @example
 * ```ts ignore
 * import { Effect } from "effect";
 * import { evaluateBemExtra } from "./bem.ts";
 * const line = await Effect.runPromise(evaluateBemExtra({
 *   data: "data/dev-v1.1.json.gz", predictions: "pred.json", model: "bem.onnx",
 * }));
 * ```
 */
export const evaluateBemExtra = (
  opts: EvaluateBemOptions,
): Effect.Effect<string, BemEvaluateError | InputError> =>
  Effect.gen(function* () {
    if (opts.data === "-" || opts.predictions === "-") {
      return yield* new InputError({
        file: "-",
        where: "",
        message: "--bem reads data.json and pred.json a second time: give files, not stdin",
      });
    }
    const r = yield* Effect.provide(
      bemEvaluate({
        data: opts.data,
        predictions: opts.predictions,
        rows: opts.rows,
        disagreements: opts.disagreements,
      }),
      Layer.fresh(BemLive({ model: opts.model })),
    );
    return formatBemSummary(r.summary);
  });
