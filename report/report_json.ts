/**
 * The shape of `report.json`: per dataset its systems' scores with their
 * intervals (per question and clustered), the comparisons with the
 * baseline, the rank intervals, the breakdowns, the disagreements and the
 * label reports ({@linkcode DatasetReport}); the language rows over the
 * XQuAD/MLQA datasets; the options the statistics ran with
 * ({@linkcode AnalysisOptions}); and the whole file ({@linkcode ReportJson}).
 * `analysis.ts` computes it.
 *
 * @module
 */
import type { HarnessSystem } from "./harness.ts";
import type { ReportRules, V2Breakdown } from "./systems.ts";
import type { DatasetKind } from "../runs/config/config.ts";
import type { MetricDisagreements } from "./disagree.ts";
import type { LabelReport, LabelSet } from "./labels.ts";
import type { ReportProvenance } from "../runs/summary/provenance.ts";
import type { DatasetFormat } from "../io/datasets/detect.ts";
import type { SearchErrorReport } from "./search_error.ts";
import type { ClusterLevel } from "./clustering.ts";

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
   * (`metrics/stats/power.ts` `pairedMde`; it ignores clustering).
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
   * Per bin of `breakdowns.ts` `F1_BINS`: its questions and the share of them
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
    /** The level used (`clustering.ts` `clusterLevel`). */
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
  /** F1 histogram: per system, the count of questions in each of `breakdowns.ts` `F1_BINS` (none without F1). */
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
  /** The cluster level of the clustered statistics (default: `clustering.ts` `clusterLevel`'s). */
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
