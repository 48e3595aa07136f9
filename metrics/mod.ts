/**
 * The metrics room: the official SQuAD text rules, EM/F1 and the v1.1/v2.0
 * folds (`squad.ts`), scoring a prediction file (`evaluate.ts`, with BEM on
 * request), and BEM (`bem/`).
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
  computeExact,
  computeF1,
  EmptyDatasetError,
  evaluateV1,
  evaluateV2,
  exactMatchScore,
  f1Score,
  formatV1,
  formatV2,
  goldAnswersV2,
  isPythonSpace,
  isPythonWordChar,
  metricMaxOverGroundTruths,
  MissingNaProbError,
  missingPredictionMessage,
  type NaProb,
  NoGoldAnswersError,
  normalizeAnswer,
  type PerQuestionScore,
  type PerQuestionScoreV2,
  predictionLookup,
  type Predictions,
  PY311_CASE_IGNORABLE,
  PY311_INERT_RANGES,
  pythonLower,
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
export * from "./bem/mod.ts";
