/**
 * The `report` room: reports that answer "is A better than B, and where?"
 * for systems evaluated on the same questions (`deno task report`,
 * `pipeline/report.ts`).
 *
 * INPUTs become systems (`inputs.ts`), each scored question by question
 * with the official fold of `metrics/` for its dataset's kind (SQuAD v1.1
 * and v2.0, MRQA, XQuAD/MLQA, open-domain and generic sets), from its
 * predictions against the dataset, its rows checked against that
 * (`systems.ts`); one section per dataset, with the kind's own tables
 * (v2.0's HasAns / NoAns, an open search's top-k curve) and a table of the
 * XQuAD/MLQA languages; compared with the
 * statistics of `metrics/stats/` (`analysis.ts`), drawn with Vega-Lite
 * (`charts.ts`) and written as `report.json` (all numbers), `report.md`
 * (tables) and `report.html` (tables and inline SVG charts; self-contained),
 * with `latex` also `report.tex` (a LaTeX tabular per dataset), into one
 * folder, all or nothing (`io/fs.ts` `writeFolderAtomic`). Beside the per-question statistics,
 * clustered ones (`cluster`: paragraphs, articles or questions), the
 * minimum detectable effect and ties, Holm / BH adjusted p-values and rank
 * intervals (`analysis.ts`). Per system, where its metrics disagree (EM, F1,
 * BEM, SQuAD v2.0's no-answer decisions: `disagree.ts`), with `exportSlice`
 * those questions as NDJSON for a person to label, and with `labels` each
 * metric's agreement with such labels and the label-corrected accuracy
 * (`labels.ts`). With `searchError` (`--search-error EXACT
 * APPROX...`), a part before the datasets that splits the questions by an
 * exact search and approximate ones of the same question vectors: lost to
 * search against model error, recall@k, speed and memory
 * (`search_error.ts`); such a report may have no INPUT.
 *
 * This module is the room's index: the stage itself (`report`,
 * `reportDiff`, their options) is `stage.ts`.
 *
 * The statistics run in steps (`analyzeSteps`) resumed from the event loop
 * about every 20 ms, so an interruption of {@linkcode report}'s fiber (the
 * command's SIGINT or SIGTERM) stops it within a step, whatever B and R;
 * the folder write, interrupted, finishes removing its temporary folder
 * before the fiber ends.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { report } from "./mod.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/d.json`, JSON.stringify({ version: "1.1", data: [{ title: "t",
 *   paragraphs: [{ context: "Paris is in France.", qas: [
 *     { id: "q1", question: "Where is Paris?", answers: [{ text: "France", answer_start: 12 }] },
 *     { id: "q2", question: "What is in France?", answers: [{ text: "Paris", answer_start: 0 }] },
 *   ] }] }] }));
 * await Deno.writeTextFile(`${dir}/a.json`, JSON.stringify({ q1: "France", q2: "Paris" }));
 * await Deno.writeTextFile(`${dir}/b.json`, JSON.stringify({ q1: "in France", q2: "Paris" }));
 * const r = await Effect.runPromise(report({
 *   inputs: [`A=${dir}/a.json`, `B=${dir}/b.json`], data: `${dir}/d.json`, out: `${dir}/report`,
 *   resamples: 100, shuffles: 99,
 * }));
 * const json = JSON.parse(Deno.readTextFileSync(`${dir}/report/report.json`));
 * await Deno.remove(dir, { recursive: true });
 * if (json.datasets[0].comparisons[0].em.difference !== -50 || r.systems !== 2) throw new Error();
 * ```
 *
 * @module
 */
export {
  analyze,
  analyzeDataset,
  analyzeDatasetSteps,
  analyzeSteps,
  languageTable,
} from "./analysis.ts";
export {
  answerLengthBin,
  F1_BINS,
  f1Bin,
  LENGTH_BINS,
  QUESTION_TYPES,
  questionType,
} from "./breakdowns.ts";
export { CLUSTER_LEVELS, clusterIds, type ClusterLevel, clusterLevel } from "./clustering.ts";
export type {
  AnalysisOptions,
  Answer,
  BemDisagreements,
  BreakdownGroup,
  ClusterDifference,
  ClusterScores,
  Comparison,
  DatasetReport,
  Difference,
  Interval,
  LanguageRow,
  OpenReport,
  OpenSystem,
  QuestionDetail,
  Range,
  RankRow,
  Ranks,
  ReportJson,
  SystemScores,
} from "./report_json.ts";
export { type Chart, chartSpecs, renderCharts, renderSvg } from "./charts.ts";
export {
  applicableKinds,
  contextSnippet,
  DEFAULT_F1_THRESHOLD,
  DISAGREEMENT_KINDS,
  type DisagreementExample,
  type DisagreementKind,
  kindTitle,
  type MetricDisagreements,
  metricDisagreements,
  mostTelling,
  type QuestionVerdict,
  type SliceLabel,
  type SliceRecord,
  sliceRecords,
  type SystemDisagreements,
  systemVerdicts,
} from "./disagree.ts";
export { datasetName, resolveInputs, type ResolveOptions, type SystemSpec } from "./inputs.ts";
export { harnessComparison, type HarnessDisagreement, type HarnessSystem } from "./harness.ts";
export {
  type Agreement,
  agreement,
  type CorrectedScore,
  type Correction,
  type CorrectionInput,
  labelCorrection,
  labelCorrectionSteps,
  labelKey,
  type LabelReport,
  labelReportSteps,
  type LabelSet,
  type LabelSystem,
  type MetricCorrection,
  parseLabels,
  readLabels,
  type StratumRow,
} from "./labels.ts";
export {
  type ChangedQuestion,
  type DiffJson,
  type DiffOptions,
  type DiffSide,
  type DiffTest,
  type PairDiff,
  type ProvenanceChange,
  type ProvenanceDiff,
  provenanceDiff,
  renderDiffText,
} from "./diff.ts";
export { escapeHtml, htmlPage, renderDiffHtml, renderHtml } from "./html.ts";
export { escapeLatex, renderLatex } from "./latex.ts";
export { renderDiffMarkdown, renderMarkdown } from "./markdown.ts";
export { formatP } from "./tables.ts";
export {
  bemCorrect,
  type OfficialTotals,
  type OpenColumns,
  type ReadDataset,
  readDataset,
  readQuestions,
  type ReportQuestion,
  type ReportRules,
  RULES_OF_KIND,
  type ScoredDataset,
  type ScoredSystem,
  scoreSystems,
  type V2Breakdown,
} from "./systems.ts";
export { writeFolderAtomic } from "../io/fs.ts";
export {
  type RecallAtK,
  recallAtK,
  recallKs,
  searchError,
  type SearchErrorCells,
  searchErrorCells,
  type SearchErrorOptions,
  type SearchErrorReport,
  type SearchErrorSetting,
  type SearchSide,
} from "./search_error.ts";
export { renderSearchErrorCharts, searchErrorChartSpecs } from "./charts.ts";

export {
  checkOptions,
  MAX_RESAMPLES,
  report,
  reportDiff,
  type ReportDiffOptions,
  type ReportDiffResult,
  ReportError,
  type ReportOptions,
  type ReportResult,
} from "./stage.ts";
