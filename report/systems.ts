/**
 * The systems of a report scored question by question: each dataset read
 * once (and its sha256 taken), each prediction file checked against it and
 * scored with the official metric of the dataset's kind, the fold of
 * `metrics/` that `evaluate` and a run's `eval` task apply:
 *
 * - `squad`: SQuAD v1.1 ({@linkcode SquadV1Accumulator}: the same
 *   per-question EM and F1 as `evaluate --per-question`, the same totals);
 * - `squad2`: SQuAD v2.0 ({@linkcode SquadV2Accumulator}, no na-probs: the
 *   official `exact`, `f1` and the `HasAns_*` / `NoAns_*` numbers; a
 *   question without a prediction is not scored, as the official script
 *   does not score it, so the statistics run over the answered questions);
 * - `mrqa`: `mrqa_official_eval.py`; `xquad`, `mlqa`:
 *   `mlqa_evaluation_v1.py` in the set's language; `open`, `jsonl`: the
 *   open-domain top-1 rules (CuratedTREC's regular expressions: EM only,
 *   no F1) — per question {@linkcode questionScore}, the totals the
 *   functions `scoreQuestionSet` (`evaluate --format`) folds.
 *
 * EM and F1 are always recomputed so from the predictions against the
 * dataset as it is now; nothing recorded earlier is taken on trust. A
 * dataset's kind is its run config's `type`; for a `full` folder and
 * `NAME=pred.json` it is told from the data file as `evaluate` tells it
 * (a generic `jsonl`/`csv`/`tsv` set needs the field map of a run config).
 *
 * A system's per-question rows (written by the scoring pass of `full` or
 * `run`, found by `inputs.ts`) are checked against that re-score and give
 * BEM and the open search's fields, which cannot be recomputed here: each
 * row must be the dataset's question in the dataset's order, with the
 * prediction file's prediction, the dataset's gold answers (when the row
 * records them) and the recomputed `em` and `f1` (`null` for regex
 * answers), to the bit. The open fields (`open_em`, `open_f1`,
 * `answer_rank`; a SQuAD set's `open` option) are taken from the rows.
 *
 * Refused as bad input ({@linkcode InputError}, naming the file and the
 * first question that is wrong): a prediction file with a question id that
 * is not in its dataset (predictions for another dataset); two systems of
 * one dataset on different question sets (their datasets hold different
 * questions or gold answers, or they answer different questions: a question
 * one system leaves out would count as wrong and bias the comparison); a
 * rows file that is not the dataset's questions in its order, whose
 * predictions differ from the prediction file's (stale), whose gold answers
 * are not the dataset's (the dataset changed after the run), whose `em` or
 * `f1` is not what the prediction scores (rows edited, or scored against
 * other gold answers), or that has BEM or open fields for some questions
 * only; a question without answers where the kind's metric needs them; a
 * regular expression the metric cannot run.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { FileError, InputError } from "../io/errors.ts";
import { statRegularFile } from "../io/regular.ts";
import { fileSha256 } from "../io/manifest.ts";
import { readPredictions } from "../io/predictions.ts";
import { detectPredFormat, readHarnessAnswers } from "../io/predictions_harness.ts";
import { squadArticles } from "../io/squad.ts";
import { readQuestions as readQaRecords } from "../io/datasets/read.ts";
import { detectFormat } from "../io/datasets/detect.ts";
import {
  DATASET_KINDS,
  type DatasetFormat,
  formatSpec,
  kindOfFormat,
  type RulesName,
  rulesOfKind,
} from "../io/datasets/formats.ts";
import type { QaRecord } from "../io/datasets/types.ts";
import type { DatasetKind } from "../runs/config/config.ts";
import { BEM_THRESHOLD } from "../metrics/bem/fold.ts";
import { mrqaEvaluate } from "../metrics/mrqa.ts";
import { mlqaEvaluate } from "../metrics/mlqa.ts";
import { openAnswerEvaluate } from "../metrics/open_answers.ts";
import { questionScore } from "../metrics/qa_eval.ts";
import {
  EmptyDatasetError,
  NoGoldAnswersError,
  SquadV1Accumulator,
  SquadV2Accumulator,
} from "../metrics/squad.ts";
import type { SystemSpec } from "./inputs.ts";
import { readLinesStrict } from "../io/text.ts";

/** The official rules a dataset is scored with (`v1.1`: SQuAD v1.1, `v2.0`: SQuAD v2.0). */
export type ReportRules = RulesName;

/**
 * The rules of each dataset kind (the registry's, `io/datasets/formats.ts`).
 *
 * @example
 * ```ts
 * import { RULES_OF_KIND } from "./systems.ts";
 * if (RULES_OF_KIND.xquad !== "MLQA" || RULES_OF_KIND.jsonl !== "open-domain") throw new Error();
 * ```
 */
export const RULES_OF_KIND: Readonly<Record<DatasetKind, ReportRules>> = Object.fromEntries(
  DATASET_KINDS.map((k) => [k, rulesOfKind(k)]),
) as Record<DatasetKind, ReportRules>;

/** A system's official totals, as its kind's script prints them (percent). */
export interface OfficialTotals {
  /** Exact match (v2.0: `exact`). */
  readonly exact_match: number;
  /** F1; `null` for regex answers (CuratedTREC), which have none. */
  readonly f1: number | null;
  /** Questions scored (v2.0: the answered ones). */
  readonly total: number;
  /** Questions with a prediction. */
  readonly answered: number;
}

/** SQuAD v2.0's HasAns / NoAns numbers, with the official script's keys. */
export interface V2Breakdown {
  /** EM on the questions with an answer (percent), when there are any. */
  readonly HasAns_exact?: number;
  /** F1 on the questions with an answer. */
  readonly HasAns_f1?: number;
  /** Scored questions with an answer. */
  readonly HasAns_total?: number;
  /** EM on the questions without one. */
  readonly NoAns_exact?: number;
  /** F1 on the questions without one. */
  readonly NoAns_f1?: number;
  /** Scored questions without an answer. */
  readonly NoAns_total?: number;
}

/**
 * The open search's per-question fields of a system (from its rows; a
 * SQuAD set's `open` option): top-1 EM and F1 of the search, and the first
 * rank whose phrase EM-matches (0: none within the ranks kept).
 */
export interface OpenColumns {
  /** `open_em` per question, 0 or 1. */
  readonly em: Float64Array;
  /** `open_f1` per question, 0..1. */
  readonly f1: Float64Array;
  /** `answer_rank` per question (1-based; 0 when none). */
  readonly rank: Int32Array;
}

/** A question of a dataset, with what the report shows of it. */
export interface ReportQuestion {
  /** Question id. */
  readonly id: string;
  /** Article title (`""` when the set has none: MRQA, open sets). */
  readonly title: string;
  /** The question text. */
  readonly question: string;
  /** The gold answers, in file order (empty: a v2.0 question without answer). */
  readonly golds: readonly string[];
  /**
   * Its paragraph's id as the reader gives it (SQuAD-shaped sets: PI-SQuAD's
   * `title_index`; MRQA: its context's; a generic set: the field map's
   * `paragraphId`), when the set has paragraphs: the `paragraph` cluster of
   * the clustered statistics (within its article, see `article`).
   */
  readonly paragraph?: string;
  /**
   * Its article's index in the file (from 0), for sets with articles
   * (SQuAD-shaped: SQuAD v1.1/v2.0, XQuAD, MLQA): the `article` cluster.
   * Read with `io/datasets/` (every kind but SQuAD v1.1), a new article
   * starts where the title changes, so two adjacent articles with one title
   * are one.
   */
  readonly article?: number;
  /**
   * Its paragraph's text, when the set has one (the same string for every
   * question of a paragraph): the context snippet of a disagreement slice
   * (`disagree.ts`).
   */
  readonly context?: string;
}

/** A system scored on every question of its dataset (dataset order). */
export interface ScoredSystem {
  /** Where it came from. */
  readonly spec: SystemSpec;
  /** The official totals (`evaluate`'s numbers). */
  readonly result: OfficialTotals;
  /** SQuAD v2.0: the official HasAns / NoAns numbers. */
  readonly v2?: V2Breakdown;
  /** The prediction per question (`null`: none). */
  readonly predictions: readonly (string | null)[];
  /** EM per question, 0 or 1. */
  readonly em: Float64Array;
  /** F1 per question, 0..1 (`null`: regex answers, no F1). */
  readonly f1: Float64Array | null;
  /** BEM score per question (0..1), when the rows carry it. */
  readonly bem: Float64Array | null;
  /** The open search's fields, when the rows carry them. */
  readonly open: OpenColumns | null;
  /**
   * The harness's own per-question metric (lm-eval's logged `exact_match`,
   * 0 or 1, dataset order), when the answers come from a log that has it.
   */
  readonly harness?: {
    readonly format: string;
    readonly metric: string;
    readonly values: Float64Array;
  };
  /**
   * The per-question rows file checked against the scores recomputed here
   * (and the source of `bem`), or `null` when the system has none. EM and
   * F1 always come from the metrics fold run here on the predictions.
   */
  readonly rows: string | null;
}

/** A dataset with its systems. */
export interface ScoredDataset {
  /** The dataset's name. */
  readonly name: string;
  /** Its data file (that of the first system). */
  readonly data: string;
  /** The sha256 (hex) of that file as it was read: the gold answers everything was scored on. */
  readonly sha256: string;
  /** Its kind (a run's `type`, or told from the file). */
  readonly kind: DatasetKind;
  /** The official rules its scores follow. */
  readonly rules: ReportRules;
  /** The format it was read as. */
  readonly format: DatasetFormat;
  /** The language of an `xquad`/`mlqa` set. */
  readonly lang?: string;
  /** Whether the metric has F1 (not for regex answers). */
  readonly hasF1: boolean;
  /** The ranks its open search kept, when known (a run dataset's `open` option). */
  readonly topK?: number;
  /** Its questions in file order. */
  readonly questions: readonly ReportQuestion[];
  /** Its systems, in INPUT order. */
  readonly systems: readonly ScoredSystem[];
}

/** Errors of {@linkcode scoreSystems}. */
export type ScoreError = InputError | FileError;

const bad = (file: string, where: string, message: string) =>
  new InputError({ file, where, message });

/** Reads the questions of a SQuAD file (each with its paragraph's context, when there is one). */
export const readQuestions = (
  data: string,
): Effect.Effect<ReportQuestion[], ScoreError> =>
  Effect.map(
    Stream.runCollect(squadArticles(data, { context: "optional" })),
    (articles) => {
      const out: ReportQuestion[] = [];
      for (const a of articles) {
        for (const p of a.paragraphs) {
          for (const q of p.questions) {
            out.push({
              id: q.id,
              title: a.title,
              question: q.question,
              golds: (q.answers ?? []).map((x) => x.text),
              paragraph: p.id,
              article: a.index,
              ...(p.context !== undefined ? { context: p.context } : {}),
            });
          }
        }
      }
      return out;
    },
  );

/** Refuses predictions with ids that are not questions of the dataset. */
function checkForeign(
  spec: SystemSpec,
  ids: ReadonlySet<string>,
  preds: ReadonlyMap<string, string>,
): void {
  let foreign = 0;
  let first = "";
  for (const id of preds.keys()) {
    if (!ids.has(id)) {
      if (foreign++ === 0) first = id;
    }
  }
  if (foreign > 0) {
    throw bad(
      spec.predictions,
      "",
      `${foreign} of its ${preds.size} question ids are not questions of ${spec.data} (first: "${first}"): predictions for another dataset?`,
    );
  }
}

/** A dataset as read: its questions and how they are scored. */
export interface ReadDataset {
  /** Its kind. */
  readonly kind: DatasetKind;
  /** The rules of that kind. */
  readonly rules: ReportRules;
  /** The format the file was read as. */
  readonly format: DatasetFormat;
  /** The language of an `xquad`/`mlqa` set. */
  readonly lang?: string;
  /** The answers are regular expressions (EM only). */
  readonly regex: boolean;
  /** Its questions, in file order. */
  readonly questions: ReportQuestion[];
}

/**
 * Reads the dataset of a system with its kind's reader: a SQuAD v1.1 file
 * with {@linkcode readQuestions}, any other kind with the readers of
 * `io/datasets/` (the ones `evaluate --format` uses). The kind is the
 * spec's `type`, else told from the file; a generic set without a field
 * map is refused (bad input).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { readDataset } from "./systems.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/m.jsonl`, '{"header": {"dataset": "x"}}\n' +
 *   '{"context": "c", "qas": [{"qid": "m1", "question": "Q?", "answers": ["a", "b"]}]}\n');
 * const d = await Effect.runPromise(readDataset({ name: "A", dataset: "m", data: `${dir}/m.jsonl`,
 *   predictions: "p.json", rows: null, input: "A", kind: "pred" }));
 * await Deno.remove(dir, { recursive: true });
 * if (d.kind !== "mrqa" || d.rules !== "MRQA" || d.questions[0].golds.join() !== "a,b") throw new Error();
 * ```
 */
export const readDataset = (spec: SystemSpec): Effect.Effect<ReadDataset, ScoreError> =>
  Effect.gen(function* () {
    let kind = spec.type;
    let format = spec.format;
    if (kind === undefined || (format === undefined && kind !== "squad")) {
      const detected = yield* Effect.mapError(
        detectFormat(spec.data),
        (e) => e instanceof InputError ? bad(spec.data, e.where, e.message) : e,
      );
      const k = kindOfFormat(detected);
      if (k === undefined) {
        return yield* bad(spec.data, "", `a ${detected} file is not a question set`);
      }
      kind ??= k;
      format ??= kind === "squad" ? "squad" : detected;
    }
    const rules = RULES_OF_KIND[kind];
    if (kind === "squad") {
      const questions = yield* readQuestions(spec.data);
      return { kind, rules, format: "squad", regex: false, questions };
    }
    if (kind === "jsonl" && spec.fields === undefined && format !== "open") {
      return yield* bad(
        spec.data,
        "",
        `a generic ${format} set is read with a field map: report it from a run ` +
          "(its dataset's reader.fields)",
      );
    }
    const records: QaRecord[] = [];
    yield* Effect.mapError(
      Stream.runForEach(
        readQaRecords(spec.data, { format, lang: spec.lang, fields: spec.fields }),
        (r) => Effect.sync(() => void records.push(r)),
      ),
      (e) => e instanceof InputError || e instanceof FileError ? e : bad(spec.data, "", e.message),
    );
    const regex = (format !== undefined && formatSpec(format)?.regex === true) ||
      records.some((r) => r.regex === true);
    const lang = rules === "MLQA" ? spec.lang ?? records[0]?.lang : undefined;
    const titled = records.length > 0 && records.every((r) => r.title !== undefined);
    let article = -1;
    const questions = records.map((r, i): ReportQuestion => {
      if (titled && (i === 0 || r.title !== records[i - 1].title)) article++;
      return {
        id: r.id,
        title: r.title ?? "",
        question: r.question,
        golds: r.answers,
        ...(r.paragraphId !== undefined ? { paragraph: r.paragraphId } : {}),
        ...(titled ? { article } : {}),
        ...(r.context !== undefined ? { context: r.context } : {}),
      };
    });
    return {
      kind,
      rules,
      format: format!,
      ...(lang !== undefined ? { lang } : {}),
      regex,
      questions,
    };
  });

/** A system scored from its prediction file with its kind's metrics fold (no rows file). */
function scoreOne(
  spec: SystemSpec,
  d: ReadDataset,
  preds: ReadonlyMap<string, string>,
): ScoredSystem {
  const qs = d.questions;
  const n = qs.length;
  const em = new Float64Array(n);
  const f1 = new Float64Array(n);
  const predictions: (string | null)[] = new Array(n);
  let answered = 0;
  for (let i = 0; i < n; i++) {
    const p = preds.get(qs[i].id);
    predictions[i] = p ?? null;
    if (p !== undefined) answered++;
  }
  const base = { spec, predictions, em, bem: null, rows: null, open: null };
  if (d.rules === "v1.1") {
    const acc = new SquadV1Accumulator();
    for (let i = 0; i < n; i++) {
      const q = qs[i];
      let row;
      try {
        row = acc.add({ id: q.id, answers: q.golds }, predictions[i] ?? undefined);
      } catch (e) {
        if (e instanceof NoGoldAnswersError) {
          throw bad(spec.data, `question "${q.id}"`, "has no gold answers (SQuAD v1.1 rules)");
        }
        throw e;
      }
      em[i] = row.exactMatch ? 1 : 0;
      f1[i] = row.f1;
    }
    try {
      return { ...base, f1, result: acc.result() };
    } catch (e) {
      if (e instanceof EmptyDatasetError) throw bad(spec.data, "", e.message);
      throw e;
    }
  }
  if (d.rules === "v2.0") {
    const acc = new SquadV2Accumulator();
    for (let i = 0; i < n; i++) {
      const row = acc.add({ id: qs[i].id, answers: qs[i].golds }, predictions[i] ?? undefined);
      em[i] = row.exact;
      f1[i] = row.f1;
    }
    let r;
    try {
      r = acc.result();
    } catch (e) {
      if (e instanceof EmptyDatasetError) {
        throw bad(spec.predictions, "", `answers none of the questions of ${spec.data}`);
      }
      throw e;
    }
    const v2: V2Breakdown = {};
    for (const k of V2_KEYS) {
      if (r[k] !== undefined) (v2 as Record<string, number>)[k] = r[k]!;
    }
    return {
      ...base,
      f1,
      v2,
      result: { exact_match: r.exact, f1: r.f1, total: r.total, answered },
    };
  }
  const how = { rules: d.rules, regex: d.regex, lang: d.lang };
  for (let i = 0; i < n; i++) {
    const q = qs[i];
    if (q.golds.length === 0) {
      throw bad(spec.data, `question "${q.id}"`, `has no answers (${d.rules} rules need one)`);
    }
    let sc;
    try {
      sc = questionScore(how, q.golds, predictions[i] ?? undefined);
    } catch (e) {
      throw bad(spec.data, `question "${q.id}"`, e instanceof Error ? e.message : String(e));
    }
    em[i] = sc.em;
    if (sc.f1 !== null) f1[i] = sc.f1;
  }
  let totals: { exact_match: number; f1: number | null; total: number };
  try {
    if (d.rules === "MRQA") {
      totals = mrqaEvaluate(qs.map((q) => ({ qid: q.id, answers: q.golds })), preds);
    } else if (d.rules === "MLQA") {
      totals = mlqaEvaluate(qs.map((q) => ({ id: q.id, answers: q.golds })), preds, d.lang ?? "");
    } else {
      const r = openAnswerEvaluate(
        qs.map((q) => {
          const p = preds.get(q.id);
          return { id: q.id, candidates: p === undefined ? [] : [p], answers: q.golds };
        }),
        { regex: d.regex, k: 1 },
      );
      totals = { exact_match: r.exact_match_top1, f1: r.f1_score_top1, total: r.total };
    }
  } catch (e) {
    throw bad(spec.data, "", e instanceof Error ? e.message : String(e));
  }
  return {
    ...base,
    f1: d.regex ? null : f1,
    result: {
      exact_match: totals.exact_match,
      f1: d.regex ? null : totals.f1,
      total: totals.total,
      answered,
    },
  };
}

const V2_KEYS = [
  "HasAns_exact",
  "HasAns_f1",
  "HasAns_total",
  "NoAns_exact",
  "NoAns_f1",
  "NoAns_total",
] as const;

/** The fields of a rows line that `report` reads. */
interface RowLine {
  id?: unknown;
  prediction?: unknown;
  golds?: unknown;
  em?: unknown;
  f1?: unknown;
  bem?: unknown;
  open_em?: unknown;
  open_f1?: unknown;
  answer_rank?: unknown;
  passage_rank?: unknown;
}

const sameGolds = (a: unknown, b: readonly string[]): boolean =>
  Array.isArray(a) && a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * Checks a system's per-question rows (`runs/plan/layout.ts`) against its scores
 * recomputed here (`scored`) and returns it with the rows' BEM: the rows
 * must be the dataset's questions in the dataset's order, each with the
 * prediction file's prediction, the dataset's gold answers (when the row
 * has `golds`), and `em` and `f1` equal to the recomputed ones (`f1`
 * `null` for regex answers); `bem` in [0, 1] for every question or none;
 * the open fields (`open_em`, `open_f1`, `answer_rank`) for every question
 * or none. A corpus search's rows (with `passage_rank`; no merge) have
 * none: their `em` and `f1` are the search's, which the system's answers
 * are.
 */
function checkRows(
  spec: SystemSpec,
  rowsFile: string,
  qs: readonly ReportQuestion[],
  scored: ScoredSystem,
): ScoredSystem {
  statRegularFile(rowsFile);
  const lines = readLinesStrict(rowsFile);
  const n = qs.length;
  const bem = new Float64Array(n);
  let withBem = 0;
  const open: OpenColumns = {
    em: new Float64Array(n),
    f1: new Float64Array(n),
    rank: new Int32Array(n),
  };
  let withOpen = 0;
  const f1s = scored.f1;
  let i = 0;
  let line = 0;
  for (const l of lines) {
    line++;
    if (l.trim() === "") continue;
    let r: RowLine;
    try {
      r = JSON.parse(l);
    } catch {
      throw bad(rowsFile, `line ${line}`, "invalid JSON");
    }
    if (typeof r !== "object" || r === null || typeof r.id !== "string") {
      throw bad(rowsFile, `line ${line}`, "a row needs an id");
    }
    if (i >= n) {
      throw bad(
        rowsFile,
        `line ${line}`,
        `question "${r.id}": more rows than the ${n} questions of ${spec.data}`,
      );
    }
    const q = qs[i];
    if (r.id !== q.id) {
      throw bad(
        rowsFile,
        `line ${line}`,
        `question "${r.id}" where ${spec.data} has question ${
          i + 1
        } "${q.id}": rows of another dataset (or order)`,
      );
    }
    if (
      (r.em !== 0 && r.em !== 1) ||
      (f1s === null ? r.f1 !== null : typeof r.f1 !== "number" || !(r.f1 >= 0 && r.f1 <= 1))
    ) {
      throw bad(
        rowsFile,
        `question "${q.id}"`,
        `a row needs em 0 or 1 and f1 ${f1s === null ? "null (regex answers)" : "in [0, 1]"}`,
      );
    }
    if (r.prediction !== null && typeof r.prediction !== "string") {
      throw bad(rowsFile, `question "${q.id}"`, "prediction is neither a string nor null");
    }
    const pred = scored.predictions[i];
    if (r.prediction !== pred) {
      throw bad(
        rowsFile,
        `question "${q.id}"`,
        `prediction ${JSON.stringify(r.prediction)} here but ${
          JSON.stringify(pred)
        } in ${spec.predictions}: a stale rows file`,
      );
    }
    if (r.golds !== undefined && !sameGolds(r.golds, q.golds)) {
      throw bad(
        rowsFile,
        `question "${q.id}"`,
        `gold answers ${JSON.stringify(r.golds)} here but ${
          JSON.stringify(q.golds)
        } in ${spec.data}: the dataset changed after these rows were scored`,
      );
    }
    const f1 = f1s === null ? null : f1s[i];
    if (r.em !== scored.em[i] || r.f1 !== f1) {
      throw bad(
        rowsFile,
        `question "${q.id}"`,
        `em ${r.em}, f1 ${r.f1} here but its prediction ${JSON.stringify(pred)} scores em ${
          scored.em[i]
        }, f1 ${f1} against ${spec.data}: rows edited, or scored on other gold answers`,
      );
    }
    // A corpus search's rows (`passage_rank`: DPR's top-k passages) have no open fields
    // beside em and f1: those are the search's own, the system's answers.
    if (r.answer_rank !== undefined && r.passage_rank === undefined) {
      const rank = r.answer_rank;
      if (
        (r.open_em !== 0 && r.open_em !== 1) || typeof r.open_f1 !== "number" ||
        !(r.open_f1 >= 0 && r.open_f1 <= 1) ||
        (rank !== null && !(Number.isInteger(rank) && (rank as number) >= 1))
      ) {
        throw bad(
          rowsFile,
          `question "${q.id}"`,
          "open fields need open_em 0 or 1, open_f1 in [0, 1], answer_rank null or a rank from 1",
        );
      }
      open.em[i] = r.open_em;
      open.f1[i] = r.open_f1;
      open.rank[i] = rank === null ? 0 : rank as number;
      withOpen++;
    }
    if (r.bem !== undefined) {
      if (typeof r.bem !== "number" || !(r.bem >= 0 && r.bem <= 1)) {
        throw bad(rowsFile, `question "${q.id}"`, "bem is not a number in [0, 1]");
      }
      bem[i] = r.bem;
      withBem++;
    }
    i++;
  }
  if (i < n) {
    throw bad(
      rowsFile,
      "",
      `${i} rows for the ${n} questions of ${spec.data} (question "${qs[i].id}" has none)`,
    );
  }
  if (withBem !== 0 && withBem !== n) {
    throw bad(rowsFile, "", `bem for ${withBem} of ${n} questions (BEM for some questions only)`);
  }
  if (withOpen !== 0 && withOpen !== n) {
    throw bad(rowsFile, "", `open fields for ${withOpen} of ${n} questions (some questions only)`);
  }
  return {
    ...scored,
    bem: withBem === n ? bem : null,
    open: withOpen === n && n > 0 ? open : null,
    rows: rowsFile,
  };
}

/**
 * SQuAD v2.0 scores only the questions with a prediction: the dataset and
 * its systems restricted to the questions the first system answers (all
 * its systems answer the same ones, checked before), so the statistics run
 * over the questions the official numbers count.
 */
function answeredOnly(ds: ScoredDataset): ScoredDataset {
  const first = ds.systems[0];
  const idx = [...ds.questions.keys()].filter((i) => first.predictions[i] !== null);
  if (idx.length === ds.questions.length) return ds;
  const pick = (x: Float64Array) => Float64Array.from(idx, (i) => x[i]);
  return {
    ...ds,
    questions: idx.map((i) => ds.questions[i]),
    systems: ds.systems.map((s) => ({
      ...s,
      predictions: idx.map((i) => s.predictions[i]),
      em: pick(s.em),
      f1: s.f1 === null ? null : pick(s.f1),
      bem: s.bem === null ? null : pick(s.bem),
      open: s.open === null ? null : {
        em: pick(s.open.em),
        f1: pick(s.open.f1),
        rank: Int32Array.from(idx, (i) => s.open!.rank[i]),
      },
    })),
  };
}

/**
 * Whether a BEM score counts as correct (above
 * {@linkcode BEM_THRESHOLD}, as `metrics/bem` counts BEM accuracy).
 *
 * @example
 * ```ts
 * import { bemCorrect } from "./systems.ts";
 * if (bemCorrect(0.5) || !bemCorrect(0.51)) throw new Error();
 * ```
 */
export const bemCorrect = (score: number): boolean => score > BEM_THRESHOLD;

/**
 * Reads every dataset once and scores every system on it, grouped by
 * dataset (first appearance order). See the module notes for what is
 * refused.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { scoreSystems } from "./systems.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/d.json`, JSON.stringify({ version: "1.1", data: [{ title: "t",
 *   paragraphs: [{ context: "Paris is in France.", qas: [
 *     { id: "q1", question: "Where is Paris?", answers: [{ text: "France", answer_start: 12 }] },
 *   ] }] }] }));
 * await Deno.writeTextFile(`${dir}/p.json`, JSON.stringify({ q1: "in France" }));
 * const [ds] = await Effect.runPromise(scoreSystems([{ name: "A", dataset: "d", data: `${dir}/d.json`,
 *   predictions: `${dir}/p.json`, rows: null, input: "A", kind: "pred" }]));
 * await Deno.remove(dir, { recursive: true });
 * if (ds.systems[0].em[0] !== 0 || Math.abs(ds.systems[0].f1![0] - 2 / 3) > 1e-15) throw new Error();
 * if (ds.kind !== "squad" || ds.rules !== "v1.1") throw new Error(ds.kind);
 * ```
 */
export const scoreSystems = (
  specs: readonly SystemSpec[],
): Effect.Effect<ScoredDataset[], ScoreError> =>
  Effect.gen(function* () {
    const readOf = new Map<string, ReadDataset>();
    const keyOf = (s: SystemSpec) =>
      JSON.stringify([s.data, s.type, s.format, s.lang, s.fields ?? null]);
    const groups = new Map<string, SystemSpec[]>();
    for (const s of specs) {
      if (!groups.has(s.dataset)) groups.set(s.dataset, []);
      groups.get(s.dataset)!.push(s);
      if (!readOf.has(keyOf(s))) readOf.set(keyOf(s), yield* readDataset(s));
    }
    const out: ScoredDataset[] = [];
    for (const [name, group] of groups) {
      const d = readOf.get(keyOf(group[0]))!;
      const qs = d.questions;
      const ids = new Set(qs.map((q) => q.id));
      const systems: ScoredSystem[] = [];
      for (const spec of group) {
        const ownRead = readOf.get(keyOf(spec))!;
        if (ownRead.rules !== d.rules || ownRead.lang !== d.lang) {
          return yield* bad(
            spec.data,
            "",
            `systems "${group[0].name}" (${d.kind}${
              d.lang ? ` ${d.lang}` : ""
            }) and "${spec.name}" (${ownRead.kind}${
              ownRead.lang ? ` ${ownRead.lang}` : ""
            }) of dataset "${name}" are scored by different rules`,
          );
        }
        const own = ownRead.questions;
        if (own !== qs) {
          const differ = own.length !== qs.length ? Math.min(own.length, qs.length) : own.findIndex(
            (q, i) => q.id !== qs[i].id || !sameGolds(q.golds, qs[i].golds),
          );
          if (differ >= 0) {
            const id = (own[differ] ?? qs[differ]).id;
            return yield* bad(
              spec.data,
              "",
              `systems "${group[0].name}" (${
                group[0].data
              }, ${qs.length} questions) and "${spec.name}" (${own.length} questions) of dataset "${name}" are on different question sets (question "${id}" differs)`,
            );
          }
        }
        // A harness's log (lm-eval samples, OpenCompass predictions) is matched to the questions.
        const predFormat = spec.predFormat ?? (yield* detectPredFormat(spec.predictions));
        const logged = predFormat === "ids"
          ? undefined
          : yield* readHarnessAnswers(spec.predictions, predFormat, qs);
        const preds = logged?.predictions ?? (yield* readPredictions(spec.predictions));
        const exact = logged?.harnessExact;
        const harness = exact === undefined ? undefined : {
          format: predFormat,
          metric: "exact_match",
          values: Float64Array.from(qs, (q) => exact.get(q.id) ?? 0),
        };
        const s = yield* Effect.try({
          try: () => {
            checkForeign(spec, ids, preds);
            const scored = scoreOne(spec, d, preds);
            return spec.rows ? checkRows(spec, spec.rows, qs, scored) : scored;
          },
          catch: (e) =>
            e instanceof InputError || e instanceof FileError
              ? e
              : bad(spec.predictions, "", String(e)),
        });
        if (systems.length > 0) {
          const f = systems[0];
          const i = s.predictions.findIndex((p, j) => (p === null) !== (f.predictions[j] === null));
          if (i >= 0) {
            return yield* bad(
              spec.predictions,
              "",
              `answers ${s.result.answered} of the ${qs.length} questions of dataset "${name}", while "${f.spec.name}" answers ${f.result.answered}: two systems on different question sets (question "${
                qs[i].id
              }" is answered by one only)`,
            );
          }
        }
        systems.push(harness === undefined ? s : { ...s, harness });
      }
      const sha256 = yield* fileSha256(group[0].data);
      const topK = group.find((g) => g.topK !== undefined)?.topK;
      const ds: ScoredDataset = {
        name,
        data: group[0].data,
        sha256,
        kind: d.kind,
        rules: d.rules,
        format: d.format,
        ...(d.lang !== undefined ? { lang: d.lang } : {}),
        hasF1: !d.regex,
        ...(topK !== undefined ? { topK } : {}),
        questions: qs,
        systems,
      };
      out.push(d.rules === "v2.0" ? answeredOnly(ds) : ds);
    }
    return out;
  });
