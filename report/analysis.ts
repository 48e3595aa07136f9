/**
 * The numbers of a report (everything `report.json` holds), from systems
 * scored question by question ({@linkcode ScoredDataset}), with the
 * statistics of `metrics/stats/`:
 *
 * - each system's EM, F1 (by its dataset kind's official rules,
 *   `systems.ts`; no F1 for regex answers) (and, when its rows carry BEM, BEM accuracy, the
 *   share of questions with a BEM score above 0.5, and the mean BEM score),
 *   in percent, with 95 % paired bootstrap percentile intervals
 *   ({@linkcode pairedBootstrap}, B resamples, the given seed; every system
 *   is resampled on the same question indices);
 * - each system against the baseline: the difference of the means (system −
 *   baseline) with its paired bootstrap interval, the two-sided paired
 *   approximate-randomization p ({@linkcode pairedRandomization}, R
 *   shuffles, the same seed), and for EM (and BEM accuracy) McNemar's exact
 *   p ({@linkcode mcnemarPaired});
 * - clustered, beside those (questions of one paragraph or article are not
 *   independent): each system's and each difference's 95 % interval by the
 *   paired cluster bootstrap ({@linkcode pairedClusterBootstrap}: whole
 *   clusters resampled, B and the seed as above) and the clustered
 *   randomization p ({@linkcode pairedClusterRandomization}: whole clusters
 *   swapped), the clusters being the dataset's paragraphs, articles or
 *   single questions ({@linkcode clusterLevel}, {@linkcode clusterIds});
 *   with single questions they equal the per-question numbers to the bit;
 * - per comparison, the minimum detectable effect at 80 % power and
 *   α = 0.05 ({@linkcode pairedMde}; for EM also from the discordance
 *   rate) and whether the two are tied (the clustered difference interval
 *   holds 0, {@linkcode tied}); with two or more comparisons (N ≥ 3
 *   systems), Holm and Benjamini–Hochberg adjusted p-values over the
 *   comparisons with the baseline, per dataset and metric, of the
 *   per-question and of the clustered randomization p ({@linkcode holm},
 *   {@linkcode benjaminiHochberg}); and with N ≥ 3 systems, each system's
 *   bootstrap rank interval and share of resamples ranked first, per
 *   metric, clustered ({@linkcode bootstrapRanks});
 * - breakdowns by question type ({@linkcode questionType}; English sets
 *   only, not XQuAD/MLQA), by gold answer length ({@linkcode answerLengthBin};
 *   not for regex answers) and by article (sets with titles), each group
 *   with its own bootstrap intervals; for SQuAD v2.0 by answerability
 *   (`HasAns`, `NoAns`: the official script's subsets, equal to its
 *   `HasAns_*` / `NoAns_*` numbers);
 * - with an open search in the rows (a SQuAD set's `open` option): each
 *   system's open top-1 EM/F1 with intervals and its top-k curve (the
 *   share of questions whose first EM-matching rank is at most k, k = 1 to
 *   the ranks kept);
 * - over the XQuAD/MLQA datasets, one row per language
 *   ({@linkcode LanguageRow}): each system's EM and F1 in it;
 * - the questions where the systems disagree most (largest spread of F1
 *   across systems), and for BEM the questions where BEM and EM disagree
 *   (with BEM accuracy per F1 bin);
 * - per system, where its own metrics disagree (EM, F1 ≥ t, BEM > 0.5, the
 *   SQuAD v2.0 no-answer decisions): the count of each kind and the most
 *   telling questions (`disagree.ts`); with labels (`labelSet`), each
 *   metric's agreement with people and the label-corrected accuracy
 *   (`labels.ts`);
 * - F1 histograms.
 *
 * Point values use the official formula (`100 · sum / n`, sums in dataset
 * order), so a system's EM and F1 equal `evaluate`'s to the bit; interval
 * ends are the bootstrap percentiles times 100.
 *
 * The statistics are also written in steps ({@linkcode analyzeSteps}, on
 * the stepped resamplings of `metrics/stats/steps.ts`): the same numbers,
 * with pauses at which `report` goes back to the event loop.
 *
 * @module
 */
import { harnessComparison, type HarnessSystem } from "./harness.ts";
import { answerTokens } from "../metrics/squad_text.ts";
import { mcnemarPaired } from "../metrics/stats/mcnemar.ts";
import { pairedBootstrapSteps } from "../metrics/stats/bootstrap.ts";
import {
  type ClusterId,
  pairedClusterBootstrapSteps,
  pairedClusterRandomizationSteps,
} from "../metrics/stats/clusters.ts";
import { benjaminiHochberg, holm } from "../metrics/stats/multiple.ts";
import { pairedMde, tied } from "../metrics/stats/power.ts";
import { pairedRandomizationSteps } from "../metrics/stats/randomization.ts";
import { bootstrapRanksSteps } from "../metrics/stats/ranks.ts";
import { runSteps, type Steps } from "../metrics/stats/steps.ts";
import {
  bemCorrect,
  type ReportQuestion,
  type ReportRules,
  type ScoredDataset,
  type ScoredSystem,
  type V2Breakdown,
} from "./systems.ts";
import type { DatasetKind } from "../runs/config/config.ts";
import { DEFAULT_F1_THRESHOLD, type MetricDisagreements, metricDisagreements } from "./disagree.ts";
import { type LabelReport, labelReportSteps, type LabelSet } from "./labels.ts";
import type { ReportProvenance } from "../runs/summary/provenance.ts";
import type { DatasetFormat } from "../io/datasets/detect.ts";
import type { SearchErrorReport } from "./search_error.ts";

/** The wh-words of {@linkcode questionType}, in table order, then `other`. */
export const QUESTION_TYPES = [
  "what",
  "who",
  "when",
  "where",
  "why",
  "how",
  "which",
  "other",
] as const;

/** The gold answer length bins of {@linkcode answerLengthBin}, in table order. */
export const LENGTH_BINS = ["0", "1", "2–3", "4–6", "7+"] as const;

/** The F1 histogram's bins: exactly 0, four ranges, exactly 1. */
export const F1_BINS = ["0", "0–.25", ".25–.5", ".5–.75", ".75–1", "1"] as const;

/**
 * The question's type: its first word (maximal run of ASCII letters, case
 * ignored) that is one of what, who, when, where, why, how, which; `other`
 * when there is none. Only these exact words count: "whom", "whose" and
 * "whatever" are not "who" or "what".
 *
 * @example
 * ```ts
 * import { questionType } from "./analysis.ts";
 * if (questionType("In which year did WHO start?") !== "which") throw new Error();
 * if (questionType("Whose idea was it?") !== "other") throw new Error();
 * if (questionType("The Broncos played who?") !== "who") throw new Error();
 * ```
 */
export function questionType(question: string): typeof QUESTION_TYPES[number] {
  for (const w of question.toLowerCase().match(/[a-z]+/g) ?? []) {
    if ((QUESTION_TYPES as readonly string[]).includes(w) && w !== "other") {
      return w as typeof QUESTION_TYPES[number];
    }
  }
  return "other";
}

/**
 * The length bin of a question's gold answer: the number of tokens of its
 * **first** gold answer after the official SQuAD normalization (lower case,
 * punctuation and the articles a/an/the removed, split on white space;
 * {@linkcode answerTokens}): `1`, `2–3`, `4–6`, `7+`, and `0` for an answer
 * that normalizes to nothing (e.g. "the") or a question without answers.
 *
 * @example
 * ```ts
 * import { answerLengthBin } from "./analysis.ts";
 * if (answerLengthBin(["the Denver Broncos", "Broncos"]) !== "2–3") throw new Error();
 * if (answerLengthBin(["1,000"]) !== "1") throw new Error();
 * ```
 */
export function answerLengthBin(golds: readonly string[]): typeof LENGTH_BINS[number] {
  const n = golds.length === 0 ? 0 : answerTokens(golds[0]).length;
  return n === 0 ? "0" : n === 1 ? "1" : n <= 3 ? "2–3" : n <= 6 ? "4–6" : "7+";
}

/** The F1 histogram bin of a score (see {@linkcode F1_BINS}). */
export function f1Bin(f1: number): typeof F1_BINS[number] {
  return f1 === 0
    ? "0"
    : f1 === 1
    ? "1"
    : f1 <= 0.25
    ? "0–.25"
    : f1 <= 0.5
    ? ".25–.5"
    : f1 <= 0.75
    ? ".5–.75"
    : ".75–1";
}

/**
 * How the questions are grouped for the clustered statistics: by article,
 * by paragraph, or each question alone.
 */
export type ClusterLevel = "article" | "paragraph" | "question";

/** The cluster levels, coarsest first (`report --cluster`). */
export const CLUSTER_LEVELS: readonly ClusterLevel[] = ["article", "paragraph", "question"];

/**
 * The cluster level used for a dataset's questions: the one asked for when
 * the dataset has it, else the next finer one it has (`article` needs an
 * article for every question, SQuAD-shaped sets; `paragraph` a paragraph
 * id for every question, SQuAD-shaped and MRQA sets, generic sets with a
 * `paragraphId` field; `question` always). Without a request: `paragraph`
 * where the set has paragraphs, else `question` (open sets). A level that
 * gives fewer than two clusters is passed over too (one cluster has no
 * spread to resample: its interval would be a point).
 *
 * @example
 * ```ts
 * import { clusterLevel } from "./analysis.ts";
 * const q = (id: string, paragraph?: string, article?: number) =>
 *   ({ id, title: "", question: "Q?", golds: [], paragraph, article });
 * const squad = [q("a", "T_0", 0), q("b", "T_0", 0), q("c", "U_0", 1)];
 * if (clusterLevel(squad) !== "paragraph" || clusterLevel(squad, "article") !== "article") throw new Error();
 * const mrqa = [q("m1", "c1"), q("m2", "c2")]; // no articles
 * if (clusterLevel(mrqa, "article") !== "paragraph" || clusterLevel([q("0"), q("1")]) !== "question") throw new Error();
 * // one paragraph in all: no spread between clusters, so by question
 * if (clusterLevel([q("a", "T_0", 0), q("b", "T_0", 0)]) !== "question") throw new Error();
 * ```
 */
export function clusterLevel(
  questions: readonly ReportQuestion[],
  requested?: ClusterLevel,
): ClusterLevel {
  const has = (l: ClusterLevel) =>
    l === "question" ||
    (questions.length > 0 &&
      questions.every((q) => (l === "article" ? q.article : q.paragraph) !== undefined) &&
      new Set(clusterIds(questions, l)).size >= 2);
  const order = requested === undefined
    ? ["paragraph", "question"] as const
    : CLUSTER_LEVELS.slice(CLUSTER_LEVELS.indexOf(requested));
  return order.find(has) ?? "question";
}

/**
 * One cluster id per question at a level ({@linkcode clusterLevel}): the
 * article's index; the paragraph's id within its article (two articles'
 * paragraphs of one id are two clusters); the question's position.
 *
 * @example
 * ```ts
 * import { clusterIds } from "./analysis.ts";
 * const q = (paragraph: string, article: number) => ({ id: "", title: "", question: "", golds: [], paragraph, article });
 * const qs = [q("T_0", 0), q("T_0", 0), q("T_1", 0), q("T_0", 1)];
 * if (new Set(clusterIds(qs, "paragraph")).size !== 3 || clusterIds(qs, "article").join() !== "0,0,0,1") throw new Error();
 * if (clusterIds(qs, "question").join() !== "0,1,2,3") throw new Error();
 * ```
 */
export function clusterIds(
  questions: readonly ReportQuestion[],
  level: ClusterLevel,
): ClusterId[] {
  return questions.map((q, i) =>
    level === "article"
      ? q.article!
      : level === "paragraph"
      ? `${q.article ?? ""}\u0000${q.paragraph}`
      : i
  );
}

/** The ends of a 95 % interval, in percent (or points for a difference). */
export interface Range {
  /** Lower end. */
  readonly low: number;
  /** Upper end. */
  readonly high: number;
}

/**
 * A system's clustered 95 % intervals (the paired cluster bootstrap over
 * the dataset's clusters), beside the per-question ones.
 */
export interface ClusterScores {
  /** The cluster level. */
  readonly by: ClusterLevel;
  /** Number of clusters. */
  readonly clusters: number;
  /** EM's interval, in percent. */
  readonly em: Range;
  /** F1's (`null`: no F1). */
  readonly f1: Range | null;
  /** BEM accuracy's, when present. */
  readonly bem?: Range;
}

/** A difference's clustered numbers, beside the per-question ones. */
export interface ClusterDifference {
  /** The cluster level. */
  readonly by: ClusterLevel;
  /** Number of clusters. */
  readonly clusters: number;
  /** Lower end of the paired cluster bootstrap interval (points). */
  readonly low: number;
  /** Upper end. */
  readonly high: number;
  /** Clustered paired approximate-randomization p (whole clusters swapped). */
  readonly randomization_p: number;
  /** Holm-adjusted clustered p (two or more comparisons). */
  readonly holm_p?: number;
  /** Benjamini–Hochberg-adjusted clustered p (two or more comparisons). */
  readonly bh_p?: number;
}

/** One system's bootstrap rank interval on one metric. */
export interface RankRow {
  /** The system. */
  readonly system: string;
  /** Its rank by the mean over all questions (1 = best; ties share the better rank). */
  readonly rank: number;
  /** Lower end of the 95 % rank interval (a whole rank). */
  readonly low: number;
  /** Upper end. */
  readonly high: number;
  /** The share (0..1) of resamples in which it ranks first (ties included). */
  readonly first: number;
}

/** The rank intervals of a dataset's systems (N ≥ 3), clustered as the dataset is. */
export interface Ranks {
  /** The cluster level resampled. */
  readonly by: ClusterLevel;
  /** Number of clusters. */
  readonly clusters: number;
  /** By EM. */
  readonly em: readonly RankRow[];
  /** By F1 (`null`: no F1). */
  readonly f1: readonly RankRow[] | null;
}

/** A percentage with its 95 % interval. */
export interface Interval {
  /** The value over all questions (official formula). */
  readonly value: number;
  /** Lower end. */
  readonly low: number;
  /** Upper end. */
  readonly high: number;
}

/** A system's scores on one dataset. */
export interface SystemScores {
  /** Name. */
  readonly name: string;
  /** The INPUT it came from. */
  readonly input: string;
  /** Its prediction file. */
  readonly predictions: string;
  /** Questions answered. */
  readonly answered: number;
  /**
   * Where EM and F1 came from: always its predictions, scored here against
   * the dataset (`data_sha256`) with the metrics fold.
   */
  readonly scored_from: "predictions";
  /**
   * Its per-question rows file, checked question by question against those
   * scores (prediction, gold answers, em, f1) and the source of its BEM;
   * `null` when it has none.
   */
  readonly rows: string | null;
  /** EM in percent. */
  readonly em: Interval;
  /** F1 in percent (`null`: regex answers, which have no F1). */
  readonly f1: Interval | null;
  /** BEM accuracy in percent (BEM score > 0.5), when present. */
  readonly bem?: Interval;
  /** Mean BEM score in percent, when present. */
  readonly bem_score?: Interval;
  /** SQuAD v2.0: the official HasAns / NoAns numbers (the script's keys). */
  readonly v2?: V2Breakdown;
  /** The clustered intervals of EM, F1 (and BEM accuracy). */
  readonly cluster: ClusterScores;
}

/** A difference against the baseline, in percentage points. */
export interface Difference {
  /** System − baseline. */
  readonly difference: number;
  /** Lower end of the paired bootstrap interval. */
  readonly low: number;
  /** Upper end. */
  readonly high: number;
  /** Paired approximate-randomization p (two-sided). */
  readonly randomization_p: number;
  /** McNemar's exact p (binary metrics only). */
  readonly mcnemar_p?: number;
  /** Questions the system gets right and the baseline wrong (binary metrics). */
  readonly mcnemar_b?: number;
  /** Questions the baseline gets right and the system wrong (binary metrics). */
  readonly mcnemar_c?: number;
  /** Holm-adjusted `randomization_p` (two or more comparisons). */
  readonly holm_p?: number;
  /** Benjamini–Hochberg-adjusted `randomization_p` (two or more comparisons). */
  readonly bh_p?: number;
  /** The clustered interval and p. */
  readonly cluster: ClusterDifference;
  /**
   * The minimum detectable effect in points at 80 % power and α = 0.05
   * (two-sided), from the per-question differences' standard deviation
   * ({@linkcode pairedMde}; it ignores clustering).
   */
  readonly mde: number;
  /** Binary metrics: the MDE in points from the discordance rate. */
  readonly mde_discordant?: number;
  /** Binary metrics: the percent of questions on which exactly one of the two is right. */
  readonly discordance_rate?: number;
  /** The clustered difference interval holds 0 (ends included): no difference shown. */
  readonly tied: boolean;
}

/** A system against the baseline. */
export interface Comparison {
  /** The system. */
  readonly system: string;
  /** The baseline. */
  readonly baseline: string;
  /** EM difference. */
  readonly em: Difference;
  /** F1 difference (`null`: no F1). */
  readonly f1: Difference | null;
  /** BEM accuracy difference, when both have BEM. */
  readonly bem?: Difference;
}

/** One group of a breakdown. */
export interface BreakdownGroup {
  /** The group (a question type, a length bin, an article title). */
  readonly group: string;
  /** Questions in it. */
  readonly questions: number;
  /** Each system's scores in it. */
  readonly systems: readonly {
    readonly name: string;
    readonly em: Interval;
    readonly f1: Interval | null;
    readonly bem?: Interval;
  }[];
}

/** One system's answer to a question. */
export interface Answer {
  /** The system. */
  readonly system: string;
  /** Its prediction (`null`: none). */
  readonly prediction: string | null;
  /** EM 0/1. */
  readonly em: number;
  /** F1 0..1 (`null`: no F1). */
  readonly f1: number | null;
  /** BEM score 0..1, when present. */
  readonly bem?: number;
}

/** A question with every system's answer. */
export interface QuestionDetail {
  /** Question id. */
  readonly id: string;
  /** Article title. */
  readonly title: string;
  /** The question. */
  readonly question: string;
  /** Gold answers. */
  readonly golds: readonly string[];
  /** Largest minus smallest F1 (EM without F1) across the systems. */
  readonly spread: number;
  /** Each system's answer. */
  readonly answers: readonly Answer[];
}

/** Questions where one system's BEM and EM disagree. */
export interface BemDisagreements {
  /** The system. */
  readonly system: string;
  /** Answered questions with EM 0 and BEM > 0.5. */
  readonly em0_bem1: number;
  /** Questions with EM 1 and BEM ≤ 0.5. */
  readonly em1_bem0: number;
  /**
   * Per bin of {@linkcode F1_BINS}: its questions and the share of them
   * with a BEM score above 0.5, in percent (`null`: no question).
   */
  readonly by_f1: readonly { readonly questions: number; readonly bem_accuracy: number | null }[];
  /** The first `top` of them, largest |BEM − EM| first. */
  readonly items: readonly {
    readonly id: string;
    readonly question: string;
    readonly golds: readonly string[];
    readonly prediction: string | null;
    readonly em: number;
    readonly f1: number;
    readonly bem: number;
  }[];
}

/** One system's open search on a dataset (from its rows). */
export interface OpenSystem {
  /** The system. */
  readonly name: string;
  /** Open (search) top-1 EM in percent. */
  readonly em: Interval;
  /** Open top-1 F1 in percent. */
  readonly f1: Interval;
  /**
   * Top-k accuracy in percent for k = 1 .. `k`: the share of questions
   * whose first EM-matching rank (`answer_rank`) is at most k.
   */
  readonly curve: readonly number[];
}

/** The open search of a dataset's systems (a SQuAD set's `open` option). */
export interface OpenReport {
  /** The ranks kept (the run's `topK`, else the largest rank seen). */
  readonly k: number;
  /** Each system with open fields in its rows. */
  readonly systems: readonly OpenSystem[];
}

/** Everything the report says about one dataset. */
export interface DatasetReport {
  /** Dataset name. */
  readonly name: string;
  /** Its kind (`squad`, `squad2`, `mrqa`, `xquad`, `mlqa`, `open`, `jsonl`). */
  readonly kind: DatasetKind;
  /** The official rules of its EM/F1. */
  readonly rules: ReportRules;
  /** The format it was read as. */
  readonly format: DatasetFormat;
  /** Its language (XQuAD/MLQA). */
  readonly lang?: string;
  /** Data file. */
  readonly data: string;
  /** The sha256 (hex) of the data file as read: the gold answers every score was computed on. */
  readonly data_sha256: string;
  /** Questions (v2.0: the answered ones, which the official numbers count). */
  readonly questions: number;
  /** The baseline (`null` when it has no predictions on this dataset). */
  readonly baseline: string | null;
  /** The clusters of the clustered statistics. */
  readonly cluster: {
    /** The level used ({@linkcode clusterLevel}). */
    readonly by: ClusterLevel;
    /** The level asked for (`--cluster`), `null` for the default. */
    readonly requested: ClusterLevel | null;
    /** Number of clusters. */
    readonly clusters: number;
  };
  /** Systems, in INPUT order. */
  readonly systems: readonly SystemScores[];
  /** Each other system against the baseline. */
  readonly comparisons: readonly Comparison[];
  /** With three or more systems: their bootstrap rank intervals. */
  readonly ranks?: Ranks;
  /** Breakdowns. */
  readonly breakdowns: {
    /** By question type (empty for XQuAD/MLQA). */
    readonly question_type: readonly BreakdownGroup[];
    /** By gold answer length (empty for regex answers). */
    readonly answer_length: readonly BreakdownGroup[];
    /** By article (empty for sets without titles). */
    readonly article: readonly BreakdownGroup[];
    /** SQuAD v2.0: `HasAns` and `NoAns` (empty for other kinds). */
    readonly answerability: readonly BreakdownGroup[];
  };
  /** The open search, when the systems' rows carry it. */
  readonly open?: OpenReport;
  /** The questions where the systems' F1 spreads most (at most `top`; none with one system). */
  readonly disagreements: readonly QuestionDetail[];
  /** Per system with BEM: where BEM and EM disagree. */
  readonly bem_disagreements: readonly BemDisagreements[];
  /**
   * Per system, where its metrics disagree (EM, F1 ≥ t, BEM, v2.0
   * no-answer decisions): counts of each kind and the most telling
   * questions (`disagree.ts`).
   */
  readonly metric_disagreements: MetricDisagreements;
  /** With `--labels`: each metric against people's labels, and the corrected scores (`labels.ts`). */
  readonly labels?: LabelReport;
  /** F1 histogram: per system, the count of questions in each of {@linkcode F1_BINS} (none without F1). */
  readonly f1_histogram: readonly { readonly system: string; readonly counts: readonly number[] }[];
  /**
   * The harness's own per-question metric beside the official EM, for the
   * systems whose answers come from a log that has one (`harness.ts`).
   */
  readonly harness_metric?: readonly HarnessSystem[];
}

/** One language of the XQuAD/MLQA datasets: each system's EM and F1 in it. */
export interface LanguageRow {
  /** The language code. */
  readonly lang: string;
  /** The dataset. */
  readonly dataset: string;
  /** Its kind (`xquad` or `mlqa`). */
  readonly kind: DatasetKind;
  /** Questions. */
  readonly questions: number;
  /** Every system of the language table, in order (`null`: none on this dataset). */
  readonly systems: readonly ({
    readonly name: string;
    readonly em: Interval;
    readonly f1: Interval;
  } | null)[];
}

/** Options of the statistics. */
export interface AnalysisOptions {
  /** Bootstrap resamples B (default 1000). */
  readonly resamples?: number;
  /** Seed of the bootstrap and the randomization test (default 0). */
  readonly seed?: number;
  /** Shuffles of the randomization test (default 10,000). */
  readonly shuffles?: number;
  /** How many questions the disagreement lists show (default 20). */
  readonly top?: number;
  /** The baseline's name (default: the first system of the first dataset). */
  readonly baseline?: string;
  /** The cluster level of the clustered statistics (default: {@linkcode clusterLevel}'s). */
  readonly cluster?: ClusterLevel;
  /** F1 at or above it counts a question right in the metric disagreements (default 0.5). */
  readonly f1Threshold?: number;
  /** People's labels (`labels.ts`): each metric's agreement with them and corrected scores. */
  readonly labelSet?: LabelSet;
}

/** The whole of `report.json`. */
export interface ReportJson {
  /** Format tag. */
  readonly format: "phraseval-report/1";
  /** The options the numbers were made with. */
  readonly options: {
    readonly resamples: number;
    readonly seed: number;
    readonly shuffles: number;
    readonly top: number;
    readonly confidence: 95;
    readonly baseline: string;
    /** The cluster level asked for (`null`: each dataset's default). */
    readonly cluster: ClusterLevel | null;
    /** Level α and power of the minimum detectable effects. */
    readonly alpha: 0.05;
    /** Power of the minimum detectable effects. */
    readonly power: 0.8;
    readonly question_types: readonly string[];
    readonly answer_length_bins: readonly string[];
    readonly f1_bins: readonly string[];
    /** F1 at or above it counts a question right (metric disagreements, labels). */
    readonly f1_threshold: number;
    /** A BEM score above it counts a question right. */
    readonly bem_threshold: 0.5;
    /** The labels file (`null`: none). */
    readonly labels: string | null;
  };
  /** Per dataset. */
  readonly datasets: readonly DatasetReport[];
  /** The systems of the language table (column groups), in order of appearance. */
  readonly language_systems: readonly string[];
  /** One row per XQuAD/MLQA dataset (its language), in dataset order. */
  readonly languages: readonly LanguageRow[];
  /** With `--search-error`: the exact search against the approximate ones (`search_error.ts`). */
  readonly search_error?: SearchErrorReport;
  /**
   * The report's own provenance block (`runs/summary/provenance.ts`): its options,
   * tool, normalizer, machine, seed and each INPUT's `provenance.json`
   * sha256; added by `report` (absent from {@linkcode analyze}'s result).
   */
  readonly provenance?: ReportProvenance;
}

/** `100 · Σx / n`, summed in order: the official formula. */
function pct(x: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += x[i];
  return (100.0 * s) / x.length;
}

const pick = (x: Float64Array, idx: readonly number[]) => Float64Array.from(idx, (i) => x[i]);

const binary = (bem: Float64Array) => Float64Array.from(bem, (b) => bemCorrect(b) ? 1 : 0);

/** Each column's value and bootstrap interval, all resampled on the same indices. */
function* intervals(cols: readonly Float64Array[], B: number, seed: number): Steps<Interval[]> {
  if (cols.length === 0) return [];
  const r = yield* pairedBootstrapSteps(cols, { resamples: B, seed });
  return r.systems.map((s, i) => ({ value: pct(cols[i]), low: 100 * s.low, high: 100 * s.high }));
}

/** Each column's clustered bootstrap interval, all resampled on the same clusters. */
function* clusterRanges(
  cols: readonly Float64Array[],
  ids: readonly ClusterId[],
  B: number,
  seed: number,
): Steps<Range[]> {
  if (cols.length === 0) return [];
  const r = yield* pairedClusterBootstrapSteps(cols, ids, { resamples: B, seed });
  return r.systems.map((s) => ({ low: 100 * s.low, high: 100 * s.high }));
}

/** The clusters of a dataset: level, ids, count. */
interface Clusters {
  readonly by: ClusterLevel;
  readonly ids: readonly ClusterId[];
  readonly count: number;
}

function* difference(
  a: Float64Array,
  b: Float64Array,
  o: Required<Pick<AnalysisOptions, "resamples" | "seed" | "shuffles">>,
  isBinary: boolean,
  cl: Clusters,
): Steps<Difference> {
  const d = (yield* pairedBootstrapSteps([a, b], { resamples: o.resamples, seed: o.seed }))
    .differences[0];
  const p = (yield* pairedRandomizationSteps(a, b, { shuffles: o.shuffles, seed: o.seed })).pValue;
  const cd = (yield* pairedClusterBootstrapSteps([a, b], cl.ids, {
    resamples: o.resamples,
    seed: o.seed,
  })).differences[0];
  const cp = (yield* pairedClusterRandomizationSteps(a, b, cl.ids, {
    shuffles: o.shuffles,
    seed: o.seed,
  })).pValue;
  const cluster: ClusterDifference = {
    by: cl.by,
    clusters: cl.count,
    low: 100 * cd.low,
    high: 100 * cd.high,
    randomization_p: cp,
  };
  const power = pairedMde(a, b);
  const out: Difference = {
    difference: pct(a) - pct(b),
    low: 100 * d.low,
    high: 100 * d.high,
    randomization_p: p,
    cluster,
    mde: 100 * power.mde,
    tied: tied(cluster),
  };
  if (!isBinary) return out;
  const m = mcnemarPaired(a, b);
  return {
    ...out,
    mcnemar_p: m.pValue,
    mcnemar_b: m.b,
    mcnemar_c: m.c,
    ...(power.discordantMde !== undefined
      ? {
        mde_discordant: 100 * power.discordantMde,
        discordance_rate: 100 * power.discordanceRate!,
      }
      : {}),
  };
}

/**
 * The comparisons with Holm and Benjamini–Hochberg adjusted p-values over
 * them, per metric (per-question and clustered p), when there are two or
 * more; as they are otherwise.
 */
function adjusted(comparisons: readonly Comparison[]): Comparison[] {
  if (comparisons.length < 2) return [...comparisons];
  const out = comparisons.map((c) => ({ ...c }));
  for (const metric of ["em", "f1", "bem"] as const) {
    const at = comparisons.flatMap((c, i) => (c[metric] ? [i] : []));
    if (at.length < 2) continue;
    const ds = at.map((i) => comparisons[i][metric]!);
    const h = holm(ds.map((d) => d.randomization_p));
    const bh = benjaminiHochberg(ds.map((d) => d.randomization_p));
    const ch = holm(ds.map((d) => d.cluster.randomization_p));
    const cbh = benjaminiHochberg(ds.map((d) => d.cluster.randomization_p));
    at.forEach((i, j) => {
      const d = ds[j];
      out[i] = {
        ...out[i],
        [metric]: {
          ...d,
          holm_p: h[j],
          bh_p: bh[j],
          cluster: { ...d.cluster, holm_p: ch[j], bh_p: cbh[j] },
        },
      };
    });
  }
  return out;
}

/** Rank intervals of the systems on each column set (N ≥ 3), clustered. */
function* rankRows(
  names: readonly string[],
  cols: readonly Float64Array[],
  cl: Clusters,
  B: number,
  seed: number,
): Steps<RankRow[]> {
  const r = yield* bootstrapRanksSteps(cols, { resamples: B, seed, clusters: cl.ids });
  return r.systems.map((s, i) => ({
    system: names[i],
    rank: s.rank,
    low: s.low,
    high: s.high,
    first: s.first,
  }));
}

function* breakdown(
  ds: ScoredDataset,
  keyOf: (i: number) => string,
  order: readonly string[] | null,
  B: number,
  seed: number,
): Steps<BreakdownGroup[]> {
  const groups = new Map<string, number[]>();
  if (order) { for (const k of order) groups.set(k, []); }
  for (let i = 0; i < ds.questions.length; i++) {
    const k = keyOf(i);
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k)!.push(i);
  }
  const out: BreakdownGroup[] = [];
  for (const [group, idx] of groups) {
    if (idx.length === 0) continue;
    const em = yield* intervals(ds.systems.map((s) => pick(s.em, idx)), B, seed);
    const f1 = ds.hasF1 ? yield* intervals(ds.systems.map((s) => pick(s.f1!, idx)), B, seed) : null;
    const withBem = ds.systems.every((s) => s.bem !== null);
    const bem = withBem
      ? yield* intervals(ds.systems.map((s) => pick(binary(s.bem!), idx)), B, seed)
      : null;
    out.push({
      group,
      questions: idx.length,
      systems: ds.systems.map((s, j) => ({
        name: s.spec.name,
        em: em[j],
        f1: f1 ? f1[j] : null,
        ...(bem ? { bem: bem[j] } : {}),
      })),
    });
  }
  return out;
}

function answersAt(systems: readonly ScoredSystem[], i: number): Answer[] {
  return systems.map((s) => ({
    system: s.spec.name,
    prediction: s.predictions[i],
    em: s.em[i],
    f1: s.f1 ? s.f1[i] : null,
    ...(s.bem ? { bem: s.bem[i] } : {}),
  }));
}

/** The open search report of a dataset's systems whose rows carry it (`null`: none). */
function* openReport(
  ds: ScoredDataset,
  B: number,
  seed: number,
): Steps<OpenReport | null> {
  const S = ds.systems.filter((s) => s.open !== null);
  if (S.length === 0) return null;
  let k = ds.topK ?? 1;
  if (ds.topK === undefined) {
    for (const s of S) {
      for (const r of s.open!.rank) k = Math.max(k, r);
    }
  }
  const em = yield* intervals(S.map((s) => s.open!.em), B, seed);
  const f1 = yield* intervals(S.map((s) => s.open!.f1), B, seed);
  const n = ds.questions.length;
  const systems = S.map((s, j) => {
    const hits = new Array<number>(k + 1).fill(0);
    for (const r of s.open!.rank) if (r >= 1 && r <= k) hits[r]++;
    const curve: number[] = [];
    let c = 0;
    for (let r = 1; r <= k; r++) {
      c += hits[r];
      curve.push((100.0 * c) / n);
    }
    return { name: s.spec.name, em: em[j], f1: f1[j], curve };
  });
  return { k, systems };
}

/**
 * The report of one dataset (see the module notes).
 *
 * @example
 * ```ts
 * import { analyzeDataset } from "./analysis.ts";
 * import type { ScoredDataset } from "./systems.ts";
 * const spec = { dataset: "d", data: "d.json", predictions: "p.json", rows: null, input: "x", kind: "pred" as const };
 * const sys = (name: string, em: number[]) => ({
 *   spec: { ...spec, name }, result: { exact_match: 0, f1: 0, total: 2, answered: 2 },
 *   predictions: ["a", "b"], em: Float64Array.from(em), f1: Float64Array.from(em), bem: null,
 *   rows: null, open: null,
 * });
 * const ds: ScoredDataset = { name: "d", data: "d.json", sha256: "0".repeat(64), kind: "squad",
 *   rules: "v1.1", format: "squad", hasF1: true, systems: [sys("A", [1, 0]), sys("B", [1, 0])],
 *   questions: [{ id: "q1", title: "T", question: "Who?", golds: ["a"] }, { id: "q2", title: "T", question: "What?", golds: ["c"] }] };
 * const r = analyzeDataset(ds, "A", { resamples: 50, shuffles: 99 });
 * if (r.comparisons[0].em.difference !== 0 || r.comparisons[0].em.randomization_p !== 1) throw new Error();
 * ```
 */
export function analyzeDataset(
  ds: ScoredDataset,
  baseline: string,
  opts: AnalysisOptions = {},
): DatasetReport {
  return runSteps(analyzeDatasetSteps(ds, baseline, opts));
}

/**
 * {@linkcode analyzeDataset} in steps (`metrics/stats/steps.ts`): the same
 * numbers, pausing about every millisecond of the statistics so that a
 * caller can stop it (`report` does on SIGINT and SIGTERM).
 */
export function* analyzeDatasetSteps(
  ds: ScoredDataset,
  baseline: string,
  opts: AnalysisOptions = {},
): Steps<DatasetReport> {
  const o = {
    resamples: opts.resamples ?? 1000,
    seed: opts.seed ?? 0,
    shuffles: opts.shuffles ?? 10000,
  };
  const top = opts.top ?? 20;
  const S = ds.systems;
  const by = clusterLevel(ds.questions, opts.cluster);
  const ids = clusterIds(ds.questions, by);
  const cl: Clusters = { by, ids, count: new Set(ids).size };
  const em = yield* intervals(S.map((s) => s.em), o.resamples, o.seed);
  const f1 = ds.hasF1 ? yield* intervals(S.map((s) => s.f1!), o.resamples, o.seed) : null;
  const bemSys = S.filter((s) => s.bem !== null);
  const bemAcc = yield* intervals(bemSys.map((s) => binary(s.bem!)), o.resamples, o.seed);
  const bemScore = yield* intervals(bemSys.map((s) => s.bem!), o.resamples, o.seed);
  const cEm = yield* clusterRanges(S.map((s) => s.em), ids, o.resamples, o.seed);
  const cF1 = ds.hasF1 ? yield* clusterRanges(S.map((s) => s.f1!), ids, o.resamples, o.seed) : null;
  const cBem = yield* clusterRanges(bemSys.map((s) => binary(s.bem!)), ids, o.resamples, o.seed);
  const systems: SystemScores[] = S.map((s, i) => {
    const j = bemSys.indexOf(s);
    return {
      name: s.spec.name,
      input: s.spec.input,
      predictions: s.spec.predictions,
      answered: s.result.answered,
      scored_from: "predictions",
      rows: s.rows,
      // The official totals, to the bit.
      em: { ...em[i], value: s.result.exact_match },
      f1: f1 && s.result.f1 !== null ? { ...f1[i], value: s.result.f1 } : null,
      ...(j >= 0 ? { bem: bemAcc[j], bem_score: bemScore[j] } : {}),
      ...(s.v2 ? { v2: s.v2 } : {}),
      cluster: {
        by,
        clusters: cl.count,
        em: cEm[i],
        f1: cF1 && s.result.f1 !== null ? cF1[i] : null,
        ...(j >= 0 ? { bem: cBem[j] } : {}),
      },
    };
  });
  const base = S.find((s) => s.spec.name === baseline) ?? null;
  const compared: Comparison[] = [];
  if (base) {
    for (const s of S) {
      if (s === base) continue;
      const em = yield* difference(s.em, base.em, o, true, cl);
      const f1 = s.f1 && base.f1 ? yield* difference(s.f1, base.f1, o, false, cl) : null;
      const bem = s.bem && base.bem
        ? yield* difference(binary(s.bem), binary(base.bem), o, true, cl)
        : null;
      compared.push({ system: s.spec.name, baseline, em, f1, ...(bem ? { bem } : {}) });
    }
  }
  const comparisons = adjusted(compared);
  const names = S.map((s) => s.spec.name);
  const ranks: Ranks | null = S.length >= 3
    ? {
      by,
      clusters: cl.count,
      em: yield* rankRows(names, S.map((s) => s.em), cl, o.resamples, o.seed),
      f1: ds.hasF1 ? yield* rankRows(names, S.map((s) => s.f1!), cl, o.resamples, o.seed) : null,
    }
    : null;
  const qs = ds.questions;
  const english = ds.rules !== "MLQA";
  const titled = qs.length > 0 && qs.every((q) => q.title !== "");
  const breakdowns = {
    question_type: english
      ? yield* breakdown(
        ds,
        (i) => questionType(qs[i].question),
        QUESTION_TYPES,
        o.resamples,
        o.seed,
      )
      : [],
    answer_length: ds.hasF1
      ? yield* breakdown(
        ds,
        (i) => answerLengthBin(qs[i].golds),
        LENGTH_BINS,
        o.resamples,
        o.seed,
      )
      : [],
    article: titled ? yield* breakdown(ds, (i) => qs[i].title, null, o.resamples, o.seed) : [],
    answerability: ds.rules === "v2.0"
      ? yield* breakdown(
        ds,
        (i) => qs[i].golds.length > 0 ? "HasAns" : "NoAns",
        ["HasAns", "NoAns"],
        o.resamples,
        o.seed,
      )
      : [],
  };
  const open = yield* openReport(ds, o.resamples, o.seed);
  const disagreements: QuestionDetail[] = [];
  if (S.length > 1) {
    const spread = new Float64Array(qs.length);
    for (let i = 0; i < qs.length; i++) {
      let lo = Infinity, hi = -Infinity;
      for (const s of S) {
        const v = (s.f1 ?? s.em)[i];
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
      spread[i] = hi - lo;
    }
    const order = [...spread.keys()].filter((i) => spread[i] > 0)
      .sort((a, b) => spread[b] - spread[a] || a - b).slice(0, top);
    for (const i of order) {
      disagreements.push({
        id: qs[i].id,
        title: qs[i].title,
        question: qs[i].question,
        golds: qs[i].golds,
        spread: spread[i],
        answers: answersAt(S, i),
      });
    }
  }
  const bem_disagreements: BemDisagreements[] = bemSys.map((s) => {
    const bem = s.bem!;
    const idx: number[] = [];
    let em0 = 0, em1 = 0;
    for (let i = 0; i < qs.length; i++) {
      const yes = bemCorrect(bem[i]);
      if (s.em[i] === 0 && yes && s.predictions[i] !== null) em0++;
      else if (s.em[i] === 1 && !yes) em1++;
      else continue;
      idx.push(i);
    }
    idx.sort((a, b) => Math.abs(bem[b] - s.em[b]) - Math.abs(bem[a] - s.em[a]) || a - b);
    const inBin = F1_BINS.map(() => 0);
    const yesInBin = F1_BINS.map(() => 0);
    for (let i = 0; i < (s.f1 ? qs.length : 0); i++) {
      const k = F1_BINS.indexOf(f1Bin(s.f1![i]));
      inBin[k]++;
      if (bemCorrect(bem[i])) yesInBin[k]++;
    }
    return {
      system: s.spec.name,
      em0_bem1: em0,
      em1_bem0: em1,
      by_f1: inBin.map((n, k) => ({
        questions: n,
        bem_accuracy: n === 0 ? null : (100 * yesInBin[k]) / n,
      })),
      items: idx.slice(0, top).map((i) => ({
        id: qs[i].id,
        question: qs[i].question,
        golds: qs[i].golds,
        prediction: s.predictions[i],
        em: s.em[i],
        f1: s.f1![i], // BEM is scored on SQuAD v1.1 sets, which have F1
        bem: bem[i],
      })),
    };
  });
  const t = opts.f1Threshold ?? DEFAULT_F1_THRESHOLD;
  const metric_disagreements = metricDisagreements(ds, t, top);
  const labels = opts.labelSet
    ? yield* labelReportSteps(ds, opts.labelSet, t, o.resamples, o.seed)
    : null;
  const f1_histogram = S.flatMap((s) => {
    if (s.f1 === null) return [];
    const counts = F1_BINS.map(() => 0);
    for (const v of s.f1) counts[F1_BINS.indexOf(f1Bin(v))]++;
    return [{ system: s.spec.name, counts }];
  });
  const harness_metric = harnessComparison(ds, top);
  return {
    name: ds.name,
    kind: ds.kind,
    rules: ds.rules,
    format: ds.format,
    ...(ds.lang !== undefined ? { lang: ds.lang } : {}),
    data: ds.data,
    data_sha256: ds.sha256,
    questions: qs.length,
    baseline: base ? baseline : null,
    cluster: { by, requested: opts.cluster ?? null, clusters: cl.count },
    systems,
    comparisons,
    ...(ranks ? { ranks } : {}),
    breakdowns,
    ...(open ? { open } : {}),
    disagreements,
    bem_disagreements,
    metric_disagreements,
    ...(labels ? { labels } : {}),
    f1_histogram,
    ...(harness_metric.length > 0 ? { harness_metric } : {}),
  };
}

/**
 * The whole report: every dataset against the baseline (default the first
 * system of the first dataset).
 */
export function analyze(
  datasets: readonly ScoredDataset[],
  opts: AnalysisOptions = {},
): ReportJson {
  return runSteps(analyzeSteps(datasets, opts));
}

/**
 * {@linkcode analyze} in steps (`metrics/stats/steps.ts`): the same
 * numbers, pausing about every millisecond of the statistics; `report`
 * resumes it from its event loop, so SIGINT and SIGTERM stop it at once.
 */
export function* analyzeSteps(
  datasets: readonly ScoredDataset[],
  opts: AnalysisOptions = {},
): Steps<ReportJson> {
  const baseline = opts.baseline ?? datasets[0]?.systems[0].spec.name ?? "";
  const reports: DatasetReport[] = [];
  for (const d of datasets) reports.push(yield* analyzeDatasetSteps(d, baseline, opts));
  const { systems: language_systems, rows: languages } = languageTable(reports);
  return {
    format: "phraseval-report/1",
    options: {
      resamples: opts.resamples ?? 1000,
      seed: opts.seed ?? 0,
      shuffles: opts.shuffles ?? 10000,
      top: opts.top ?? 20,
      confidence: 95,
      baseline,
      cluster: opts.cluster ?? null,
      alpha: 0.05,
      power: 0.8,
      question_types: QUESTION_TYPES,
      answer_length_bins: LENGTH_BINS,
      f1_bins: F1_BINS,
      f1_threshold: opts.f1Threshold ?? DEFAULT_F1_THRESHOLD,
      bem_threshold: 0.5,
      labels: opts.labelSet?.file ?? null,
    },
    datasets: reports,
    language_systems,
    languages,
  };
}

/**
 * The language table of a report: one row per XQuAD/MLQA dataset (its
 * language), one column group per system that appears on any of them (in
 * order of appearance), each cell the system's EM and F1 there (`null`: it
 * has no predictions on that dataset).
 *
 * @example
 * ```ts
 * import { languageTable, type DatasetReport } from "./analysis.ts";
 * const iv = (value: number) => ({ value, low: value, high: value });
 * const ds = (name: string, lang: string, systems: string[]) =>
 *   ({ name, kind: lang ? "xquad" : "squad", lang, questions: 2,
 *      systems: systems.map((n, i) => ({ name: n, em: iv(i), f1: iv(i + 1) })) }) as unknown as DatasetReport;
 * const t = languageTable([ds("xq.de", "de", ["A"]), ds("sq", "", []), ds("xq.es", "es", ["B", "A"])]);
 * if (t.systems.join() !== "A,B" || t.rows.length !== 2 || t.rows[0].systems[1] !== null) throw new Error();
 * if (t.rows[1].systems[0]!.em.value !== 1) throw new Error();
 * ```
 */
export function languageTable(
  reports: readonly DatasetReport[],
): { systems: string[]; rows: LanguageRow[] } {
  const multi = reports.filter((r) => r.kind === "xquad" || r.kind === "mlqa");
  const systems: string[] = [];
  for (const r of multi) {
    for (const s of r.systems) if (!systems.includes(s.name)) systems.push(s.name);
  }
  const rows = multi.map((r) => ({
    lang: r.lang ?? "",
    dataset: r.name,
    kind: r.kind,
    questions: r.questions,
    systems: systems.map((n) => {
      const s = r.systems.find((x) => x.name === n);
      return s && s.f1 ? { name: n, em: s.em, f1: s.f1 } : null;
    }),
  }));
  return { systems, rows };
}
