/**
 * The two task kinds of a run (`runs/plan/plan.ts`) that are not stage scripts of
 * their own, as Effects:
 *
 * - `prepare --data SRC --out DIR [--articles A:B]`: writes
 *   `DIR/data.json` (articles A..B-1 of SRC, every other field kept; only
 *   with `--articles`), then the PI-SQuAD split `DIR/context.json` and
 *   `DIR/question.json`. Each file appears atomically.
 * - `eval --data D --pred P --out R [--rows ROWS] [--bem MODEL ...]`: the
 *   official SQuAD v1.1 EM/F1 of P (and BEM, in the same process, when
 *   asked), written to R atomically as `{"exact_match": ..., "f1": ...,
 *   "bem": ...}`; with `--rows`, the per-question rows of the same scoring
 *   pass (`runs/plan/layout.ts`) to ROWS, atomically, before R. With
 *   `--open-pred P2 --topk T` (a dataset's `open` option), the open search's
 *   top-1 EM/F1 and top-k metrics go in R's `open` and each row gets the
 *   question's open fields (`metrics/open.ts`). A SQuAD v2.0 set's result
 *   adds `rules: "v2.0"` and `v2` (HasAns/NoAns). With `--format F` (a
 *   dataset kind other than SQuAD) the set is scored with F's official
 *   metric (`metrics/qa_eval.ts`, `evaluate --format F`'s numbers; `f1`
 *   `null` for regex answers) and the rows hold each question's scores of
 *   that metric. With `--from A` (a predictions model) A is first checked
 *   (an `{id: answer}` file is read as P will be, so its errors name A) and
 *   copied to P, atomically.
 * - `prepare ... --subset-only`: the article subset `DIR/data.json` only.
 * - `prepare --data SRC --out DIR --questions-only [--format F --lang L
 *   --fields MAP]`: a question set that is not SQuAD's gets no split but
 *   its question-only file `DIR/question.ndjson` (ids and question texts).
 * - `prepare ... --corpus C`: also the passages-only file of the corpus C,
 *   `DIR/passages.jsonl` (ids, titles, texts). Independence is decided by
 *   content here, not by name: an encoder reads only what a `prepare` task
 *   wrote (`context.json`, `question.json`, `question.ndjson`,
 *   `passages.jsonl`), never a dataset or a corpus as given.
 *
 * The command line of both is `pipeline/_run_task.ts`, which the plans
 * name as a script (`runs/plan/plan.ts`).
 *
 * @module
 */
import { resolvePredictions } from "../../io/predictions_match.ts";
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { FileError, InputError, type UsageError } from "../../io/errors.ts";
import { writeTextAtomically } from "../../io/fs.ts";
import { split } from "../../io/squad_split.ts";
import { writeArticleSubset } from "../../io/squad_subset.ts";
import { type EvaluateError, scoreDataset } from "../../metrics/evaluate.ts";
import type { BemEvaluateError } from "../../metrics/bem/fold.ts";
import { type OpenMetrics, openScores } from "../../metrics/open.ts";
import {
  type CorpusOpenError,
  type CorpusOpenScores,
  corpusOpenScores,
  type CorpusTopK,
} from "../../metrics/open_corpus.ts";
import { readIndexPassages } from "../../search/index/read.ts";
import { questionScore, scoreQuestionSet } from "../../metrics/qa_eval.ts";
import type { SquadV2Result } from "../../metrics/squad.ts";
import { readPredictions } from "../../io/predictions.ts";
import { readQuestions } from "../../io/datasets/read.ts";
import { writePassagesOnly, writeQuestionsOnly } from "../../io/datasets/split.ts";
import { PASSAGES_FILE, QUESTIONS_ONLY_FILE } from "./layout.ts";
import type { DatasetFormat } from "../../io/datasets/detect.ts";
import { formatSpec, hasSquadRules } from "../../io/datasets/formats.ts";
import type { FieldMap, QaRecord } from "../../io/datasets/types.ts";

const fsDo = <A>(file: string, f: () => Promise<A>) =>
  Effect.tryPromise({
    try: f,
    catch: (e) => new FileError({ file, message: e instanceof Error ? e.message : String(e) }),
  });

/** Options of {@linkcode prepareDataset}. */
export interface PrepareOptions {
  /** The SQuAD file. */
  readonly data: string;
  /** Output folder. */
  readonly out: string;
  /** Article range `[start, end)`, or all. */
  readonly articles?: readonly [number, number];
  /** Rename repeated article titles in the split (`io/squad_ids.ts`) instead of refusing them. */
  readonly uniqueIds?: boolean;
  /**
   * Write only the article subset `DIR/data.json`, no split (no encoder
   * reads the set: the run's models are all predictions models); the result
   * then counts articles only (`paragraphs` and `questions` are 0).
   */
  readonly subsetOnly?: boolean;
  /**
   * `data` is a question set that is not SQuAD's, read as these options
   * say: write its question-only file `DIR/question.ndjson` (ids and
   * question texts, `io/datasets/split.ts`), no split; the result counts
   * its questions (`articles` and `paragraphs` are 0).
   */
  readonly questionsOnly?: {
    readonly format?: DatasetFormat;
    readonly lang?: string;
    readonly fields?: FieldMap;
  };
  /**
   * The dataset's corpus: its passages-only file `DIR/passages.jsonl` too
   * (ids, titles and texts, whatever the corpus's format: a SQuAD or MRQA
   * file loses its questions and answers), what the context encoder reads.
   */
  readonly corpus?: string;
}

/** What {@linkcode prepareDataset} wrote. */
export interface PrepareResult {
  /** Articles of the (subset of the) SQuAD file; 0 for another kind. */
  readonly articles: number;
  /** Paragraphs of the split; 0 without one. */
  readonly paragraphs: number;
  /** Questions of the split or the question-only file. */
  readonly questions: number;
  /** Passages of the corpus's passages-only file, when the dataset has a corpus. */
  readonly passages?: number;
}

/**
 * Writes the article subset (when a range is given) and the split of a
 * dataset into `opts.out`.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { REPO_ROOT } from "../../io/repo.ts";
 * import { prepareDataset } from "./tasks.ts";
 * const out = await Deno.makeTempDir();
 * const r = await Effect.runPromise(prepareDataset({
 *   data: `${REPO_ROOT}/data/dev-v1.1.json.gz`, out, articles: [8, 10],
 * }));
 * if (r.paragraphs !== 47 || r.questions !== 232) throw new Error(JSON.stringify(r));
 * await Deno.remove(out, { recursive: true });
 * ```
 */
export const prepareDataset = (
  opts: PrepareOptions,
): Effect.Effect<PrepareResult, InputError | FileError | UsageError> =>
  Effect.gen(function* () {
    yield* fsDo(opts.out, () => Deno.mkdir(opts.out, { recursive: true }));
    const passages = opts.corpus === undefined ? {} : {
      passages: yield* writePassagesOnly({
        corpus: opts.corpus,
        out: `${opts.out}/${PASSAGES_FILE}`,
      }),
    };
    if (opts.questionsOnly !== undefined) {
      const questions = yield* writeQuestionsOnly({
        data: opts.data,
        out: `${opts.out}/${QUESTIONS_ONLY_FILE}`,
        ...opts.questionsOnly,
      });
      return { articles: 0, paragraphs: 0, questions, ...passages } satisfies PrepareResult;
    }
    let data = opts.data;
    if (opts.articles) {
      data = `${opts.out}/data.json`;
      const sub = yield* writeArticleSubset({
        data: opts.data,
        out: data,
        articles: opts.articles,
      });
      if (opts.subsetOnly) {
        return { articles: sub, paragraphs: 0, questions: 0, ...passages } satisfies PrepareResult;
      }
    }
    const r = yield* split({
      data,
      context: `${opts.out}/context.json`,
      question: `${opts.out}/question.json`,
      uniqueIds: opts.uniqueIds,
    });
    return { ...r, ...passages } satisfies PrepareResult;
  });

/** Options of {@linkcode evalPredictions}. */
export interface EvalOptions {
  /** The dataset (SQuAD unless `format` names another kind's format). */
  readonly data: string;
  /** The predictions. */
  readonly pred: string;
  /**
   * A predictions model's answer file: copied to `pred` (atomically) before
   * scoring, so the run folder holds what it scored where every run does.
   */
  readonly from?: string;
  /**
   * The dataset's format when it is not SQuAD's (`mrqa`, `xquad`, `mlqa`,
   * `dpr`, `trec`, `open`, `jsonl`, `csv`, `tsv`): scored with that
   * format's official metric (`metrics/qa_eval.ts`); absent: SQuAD v1.1 or
   * v2.0 (from the file's `version`).
   */
  readonly format?: DatasetFormat;
  /** The language of an XQuAD/MLQA set (default: from its file name). */
  readonly lang?: string;
  /** The field map of a generic `jsonl`/`csv`/`tsv` set. */
  readonly fields?: FieldMap;
  /** The result file to write. */
  readonly out: string;
  /**
   * The per-question rows to write (`id`, `prediction`, `reference`,
   * `golds`, `em`, `f1`, and `bem` when BEM is scored): from the same pass
   * that makes the result, nothing scored twice.
   */
  readonly rows?: string;
  /** BEM: the ONNX model (scored in this process). */
  readonly bem?: string;
  /** BEM: which number goes in `bem` (`accuracy`, default, or `score`). */
  readonly bemReport?: "accuracy" | "score";
  /**
   * The open search's outputs (a dataset's `open` option): its top-1
   * predictions and top-k records, scored in the same task
   * (`metrics/open.ts` {@linkcode openScores}); the result gains `open`
   * and each row the question's open fields.
   */
  readonly open?: {
    readonly pred: string;
    readonly topk: string;
    /** Paragraph ids with repeated titles renamed, as the search ran. */
    readonly uniqueIds?: boolean;
  };
}

/** The open numbers of a result file (a dataset's `open` option). */
export interface OpenRecord extends OpenMetrics {
  /** Official v1.1 EM of the open (search) top-1 predictions (0..100). */
  readonly exact_match: number;
  /** Official v1.1 F1 of the open predictions (0..100). */
  readonly f1: number;
  /** Questions with an open prediction. */
  readonly answered: number;
}

/** SQuAD v2.0's breakdown of a result file: answerable and unanswerable questions. */
export interface V2Record {
  /** EM on the questions with an answer (0..100). */
  readonly has_ans_exact_match: number | null;
  /** F1 on the questions with an answer (0..100). */
  readonly has_ans_f1: number | null;
  /** Questions with an answer. */
  readonly has_ans_total: number;
  /** EM on the questions without one (0..100). */
  readonly no_ans_exact_match: number | null;
  /** Questions without an answer. */
  readonly no_ans_total: number;
}

/** A result file. */
export interface EvalRecord {
  /** Official exact match of the dataset's metric (0..100). */
  readonly exact_match: number;
  /** Official F1 (0..100); `null` for regex answers (CuratedTREC), which have none. */
  readonly f1: number | null;
  /** The rules that scored it, when not SQuAD v1.1 (`v2.0`, `MRQA`, `MLQA`, `open-domain`). */
  readonly rules?: "v2.0" | "MRQA" | "MLQA" | "open-domain";
  /** The format read, when not SQuAD's. */
  readonly format?: DatasetFormat;
  /** The language an XQuAD/MLQA set was scored in. */
  readonly lang?: string;
  /** SQuAD v2.0's HasAns/NoAns numbers. */
  readonly v2?: V2Record;
  /** BEM accuracy or score (0..100), when configured. */
  readonly bem?: number;
  /** The whole BEM summary (as `evaluate --bem` prints it), when configured. */
  readonly bem_summary?: Record<string, unknown>;
  /** Questions scored. */
  readonly total: number;
  /** Questions with a prediction. */
  readonly answered: number;
  /** The open search's numbers, when the dataset has the `open` option. */
  readonly open?: OpenRecord;
  /**
   * A search over a corpus (a dataset's `corpus`): `exact_match` and `f1`
   * are then the search's top-1 answers' (max over the gold answers), and
   * this holds its top-k numbers: best-of-k EM/F1, MRR and DPR's top-k
   * passage accuracy (`metrics/open_corpus.ts`).
   */
  readonly corpus?: CorpusTopK;
}

/** Options of {@linkcode evalCorpusSearch}. */
export interface CorpusEvalOptions {
  /** The question set. */
  readonly data: string;
  /** Its format (a `--format` name; default: detected). */
  readonly format?: string;
  /** The language of an XQuAD/MLQA set. */
  readonly lang?: string;
  /** The field map of a generic set. */
  readonly fields?: FieldMap;
  /** The search's top-1 predictions. */
  readonly pred: string;
  /**
   * The search's top-k records; without them, only the top-1 numbers (and
   * the index's passage texts are not read).
   */
  readonly topk?: string;
  /** The index searched (its `paragraphs.ndjson` holds the passage texts). */
  readonly index: string;
  /** Ranks the search kept per question (accuracy@k for the k up to it). */
  readonly ranks?: number;
  /** The result file to write. */
  readonly out: string;
  /** The per-question rows to write. */
  readonly rows?: string;
}

/**
 * The scores of a search over a corpus: the index's passage texts
 * (`paragraphs.ndjson`) read, then `corpusOpenScores` of
 * `metrics/open_corpus.ts` (top-1 and best-of-k EM/F1, MRR, DPR's top-k
 * passage accuracy; the top-1 numbers alone without top-k records). What
 * the `eval` task of a corpus run, `evaluate --topk-file --index` and
 * `search` over a corpus (`runs/search.ts`) compute.
 */
export const corpusSearchScores = (
  opts: Omit<CorpusEvalOptions, "out" | "rows">,
): Effect.Effect<CorpusOpenScores, CorpusOpenError> =>
  Effect.gen(function* () {
    const passages = opts.topk === undefined ? undefined : yield* Effect.try({
      try: () => readIndexPassages(opts.index),
      catch: (e) =>
        e instanceof InputError || e instanceof FileError
          ? e
          : new InputError({ file: opts.index, where: "", message: String(e) }),
    });
    return yield* corpusOpenScores({
      data: opts.data,
      ...(opts.format !== undefined ? { format: opts.format } : {}),
      ...(opts.lang !== undefined ? { lang: opts.lang } : {}),
      ...(opts.fields !== undefined ? { fields: opts.fields } : {}),
      predictions: opts.pred,
      ...(opts.topk !== undefined ? { topk: opts.topk } : {}),
      ...(passages !== undefined
        ? { passages: { text: passages.text, where: passages.file } }
        : {}),
      ...(opts.topk !== undefined && opts.ranks !== undefined ? { ranks: opts.ranks } : {}),
    });
  });

/**
 * Scores a search over a corpus (the `eval` task of a dataset with a
 * `corpus`): top-1 EM/F1 over the gold answers (regex answers as DPR's
 * regex mode) and, from the top-k records and the passage texts the index
 * holds, best-of-k EM/F1, MRR and DPR's top-k passage accuracy; writes the
 * result file and the per-question rows atomically.
 */
export const evalCorpusSearch = (
  opts: CorpusEvalOptions,
): Effect.Effect<EvalRecord, CorpusOpenError> =>
  Effect.gen(function* () {
    const s = yield* corpusSearchScores(opts);
    const record: EvalRecord = {
      exact_match: s.exact_match,
      f1: s.f1,
      rules: "open-domain",
      format: s.format,
      total: s.questions,
      answered: s.answered,
      ...(s.topk !== undefined ? { corpus: s.topk } : {}),
    };
    if (opts.rows !== undefined) {
      yield* writeAtomic(opts.rows, s.rows.map((r) => JSON.stringify(r) + "\n").join(""));
    }
    yield* writeAtomic(opts.out, JSON.stringify(record) + "\n");
    return record;
  });

/**
 * Scores predictions and writes the result file atomically.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { evalPredictions } from "./tasks.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/d.json`, JSON.stringify({ version: "1.1", data: [{
 *   title: "T", paragraphs: [{ context: "Paris is in France.", qas: [{ id: "q1",
 *     question: "Where is Paris?", answers: [{ text: "France", answer_start: 12 }] }] }],
 * }] }));
 * await Deno.writeTextFile(`${dir}/p.json`, JSON.stringify({ q1: "in France" }));
 * const r = await Effect.runPromise(evalPredictions({
 *   data: `${dir}/d.json`, pred: `${dir}/p.json`, out: `${dir}/r.json`,
 * }));
 * if (r.exact_match !== 0 || Math.abs((r.f1 ?? 0) - 200 / 3) > 1e-9 || r.answered !== 1) {
 *   throw new Error(JSON.stringify(r));
 * }
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export const evalPredictions = (
  opts: EvalOptions,
): Effect.Effect<EvalRecord, EvaluateError | BemEvaluateError | UsageError> =>
  Effect.gen(function* () {
    if (opts.from !== undefined) {
      // {id: answer} as is; a harness's log matched to the set's questions and checked.
      const from = opts.from;
      const r = yield* resolvePredictions({ ...opts, predictions: from });
      if (typeof r.predictions === "string") {
        // Read first as the scorer reads its copy, so that what is wrong with the file
        // names it (the file the config gave), not its copy in the run folder.
        yield* readPredictions(from);
      }
      const text = typeof r.predictions === "string"
        ? yield* fsDo(from, () => Deno.readTextFile(from))
        : JSON.stringify(Object.fromEntries(r.predictions)) + "\n";
      yield* fsDo(opts.pred, async () => await writeTextAtomically(opts.pred, text));
    }
    if (opts.format !== undefined && !hasSquadRules(opts.format)) {
      return yield* evalQuestionSet({ ...opts, format: opts.format });
    }
    const open = opts.open === undefined ? undefined : yield* openScores({
      data: opts.data,
      predictions: opts.open.pred,
      topk: opts.open.topk,
      uniqueIds: opts.open.uniqueIds,
    });
    const s = yield* scoreDataset({
      data: opts.data,
      predictions: opts.pred,
      ...(opts.rows !== undefined ? { perQuestion: opts.rows } : {}),
      ...(open !== undefined ? { rowExtra: (id: string) => open.rows.get(id) } : {}),
      ...(opts.bem !== undefined ? { bem: { model: opts.bem } } : {}),
    });
    const bem = s.bem;
    const record: EvalRecord = {
      exact_match: s.exactMatch,
      f1: s.f1,
      ...(bem
        ? {
          bem: opts.bemReport === "score" ? bem.bem_score : bem.bem_accuracy,
          bem_summary: { ...bem },
        }
        : {}),
      ...(s.rules === "v2.0"
        ? { rules: "v2.0" as const, v2: v2Of(s.result as SquadV2Result) }
        : {}),
      total: s.questions,
      answered: "answered" in s.result ? s.result.answered : 0,
      ...(open !== undefined
        ? {
          open: {
            exact_match: open.exact_match,
            f1: open.f1,
            answered: open.answered,
            ...open.metrics,
          },
        }
        : {}),
    };
    const text = JSON.stringify(record) + "\n";
    yield* writeAtomic(opts.out, text);
    return record;
  });

/** The HasAns/NoAns numbers of a SQuAD v2.0 result. */
function v2Of(r: SquadV2Result): V2Record {
  return {
    has_ans_exact_match: r.HasAns_exact ?? null,
    has_ans_f1: r.HasAns_f1 ?? null,
    has_ans_total: r.HasAns_total ?? 0,
    no_ans_exact_match: r.NoAns_exact ?? null,
    no_ans_total: r.NoAns_total ?? 0,
  };
}

/** Writes `text` to `file` atomically (`io/fs.ts`), a failure as a {@linkcode FileError} of `file`. */
export const writeAtomic = (file: string, text: string): Effect.Effect<void, FileError> =>
  fsDo(file, () => writeTextAtomically(file, text));

/**
 * A question set that is not SQuAD-shaped: the numbers of
 * `scoreQuestionSet` (what `evaluate DATA PRED --format F` prints), and one
 * row per question (`id`, `prediction`, `reference: null`, `golds`, `em`,
 * `f1`: the same per-question scores the metric sums; `f1` is `null` for
 * regex answers), rows first, then the result.
 */
const evalQuestionSet = (opts: EvalOptions & { readonly format: DatasetFormat }) =>
  Effect.gen(function* () {
    const q = yield* scoreQuestionSet({
      data: opts.data,
      predictions: opts.pred,
      format: opts.format,
      lang: opts.lang,
      fields: opts.fields,
    });
    const records: QaRecord[] = [];
    yield* Stream.runForEach(
      readQuestions(opts.data, { format: opts.format, lang: opts.lang, fields: opts.fields }),
      (r) => Effect.sync(() => void records.push(r)),
    );
    const lang = opts.lang ?? records[0]?.lang;
    if (opts.rows !== undefined) {
      const preds = yield* readPredictions(opts.pred);
      const regex = formatSpec(q.format)?.regex === true || records.some((r) => r.regex === true);
      const lines: string[] = [];
      for (const r of records) {
        const p = preds.get(r.id);
        const { em, f1 } = questionScore({ rules: q.rules, regex, lang }, r.answers, p);
        lines.push(JSON.stringify({
          kind: "score",
          id: r.id,
          prediction: p ?? null,
          reference: null,
          golds: r.answers,
          em,
          f1,
        }));
      }
      yield* writeAtomic(opts.rows, lines.join("\n") + "\n");
    }
    const record: EvalRecord = {
      exact_match: q.exact_match,
      f1: q.f1,
      rules: q.rules,
      format: q.format,
      ...(q.rules === "MLQA" && lang !== undefined ? { lang } : {}),
      total: q.questions,
      answered: q.questions - q.unanswered,
    };
    yield* writeAtomic(opts.out, JSON.stringify(record) + "\n");
    return record;
  });
