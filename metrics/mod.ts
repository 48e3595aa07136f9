/**
 * The metrics room: the official SQuAD text rules (`squad_text.ts`), EM/F1
 * (`squad_scores.ts`) and the v1.1/v2.0 folds (`squad.ts`), scoring a
 * prediction file (`evaluate.ts`, with BEM on request), BEM (`bem/`), and the
 * statistics that compare systems on the same questions (`stats/`: paired
 * bootstrap, approximate randomization, McNemar, Wilson); the other official
 * answer metrics: MRQA (`mrqa.ts`), MLQA/XQuAD (`mlqa.ts`), DPR's has-answer
 * and top-k accuracy (`dpr.ts`), DrQA/DensePhrases open EM/F1
 * (`open_answers.ts`), on Python regular expressions run exactly
 * (`pyregex.ts`, its bounded matcher `pyregex_match.ts`) and CPython 3.11's character data
 * (`_py311_unicode.ts`).
 *
 * @example
 * ```ts
 * import { exactMatchScore } from "./mod.ts";
 * if (!exactMatchScore("The Broncos", "broncos")) throw new Error("articles and case are ignored");
 * ```
 *
 * @module
 */
export {
  answerTokens,
  isPythonSpace,
  isPythonWordChar,
  normalizeAnswer,
  NORMALIZER_VERSION,
  PY311_CASE_IGNORABLE,
  PY311_INERT_RANGES,
  pythonLower,
} from "./squad_text.ts";
export {
  computeExact,
  computeF1,
  exactMatchScore,
  f1Score,
  goldAnswersV2,
  metricMaxOverGroundTruths,
  tokenF1,
  tokenF1V2,
} from "./squad_scores.ts";
export {
  EmptyDatasetError,
  evaluateV1,
  evaluateV2,
  formatV1,
  formatV2,
  MissingNaProbError,
  missingPredictionMessage,
  type NaProb,
  NoGoldAnswersError,
  type PerQuestionScore,
  type PerQuestionScoreV2,
  predictionLookup,
  type Predictions,
  type ScoredQuestion,
  SquadV1Accumulator,
  type SquadV1Result,
  SquadV2Accumulator,
  type SquadV2Options,
  type SquadV2Result,
  unansweredMessage,
  versionMismatchMessage,
} from "./squad.ts";
export {
  type DatasetScores,
  evaluate,
  evaluateBem,
  evaluateBemExtra,
  type EvaluateBemOptions,
  type EvaluateError,
  type EvaluateOptions,
  type EvaluateResult,
  type QuestionRow,
  scoreDataset,
  type ScoreDatasetOptions,
} from "./evaluate.ts";
export {
  type AnswerScores,
  formatMrqa,
  mrqaEvaluate,
  type MrqaOptions,
  type MrqaQuestion,
  type MrqaResult,
  mrqaScores,
  mrqaUnansweredMessage,
} from "./mrqa.ts";
export {
  formatMlqa,
  MLQA_LANGUAGES,
  mlqaEvaluate,
  mlqaNormalize,
  type MlqaQuestion,
  type MlqaResult,
  mlqaScores,
} from "./mlqa.ts";
export {
  DPR_KS,
  dprHasAnswer,
  dprTokenize,
  type MatchType,
  type TopKAccuracy,
  topKAccuracy,
} from "./dpr.ts";
export {
  openAnswerEvaluate,
  type OpenAnswerOptions,
  type OpenAnswerResult,
  type OpenAnswerRow,
  type OpenAnswerScores,
  openAnswerScores,
  openAnswerSteps,
} from "./open_answers.ts";
export {
  accuracyKs,
  type CorpusOpenError,
  type CorpusOpenOptions,
  type CorpusOpenRow,
  type CorpusOpenScores,
  corpusOpenScores,
  corpusSummary,
  type CorpusTopK,
  distinctPassages,
} from "./open_corpus.ts";
export { compilePyRegex, type PyRegex, PyRegexError } from "./pyregex.ts";
export { PY_REGEX_STEP_BUDGET, PyRegexBudgetError } from "./pyregex_match.ts";
export {
  type AnswerRules,
  cutOffTeller,
  NoAnswersError,
  NothingScoredError,
  UnknownLanguageError,
} from "./qa_errors.ts";
export * from "./bem/mod.ts";
export * from "./stats/mod.ts";
/** The `bem` stage as an Effect (`pipeline/bem.ts`): {@linkcode bemEvaluateFile}. */
export { bemEvaluateFile as bem } from "./bem/fold.ts";
