/**
 * BEM answer equivalence (Bulian et al. 2022): the WordPiece tokenizer,
 * the authors' input recipe, the ONNX session side, the `Bem` service and
 * the fold over a dataset.
 *
 * @example
 * ```ts
 * import { softmax1 } from "./mod.ts";
 * if (softmax1(0, 0) !== 0.5) throw new Error("equal logits score 0.5");
 * ```
 *
 * @module
 */
export {
  BERT_SPECIAL_TOKENS,
  type BertTokenizer,
  bertUncasedTokenizer,
  pythonBertPrepare,
  splitSpecial,
} from "./tokenizer.ts";
export {
  BEM_MAX_LENGTH,
  bemAssemble,
  bemInputKey,
  type BemInputs,
  bemInputs,
  bemTokenizerFromFile,
  type BemTriple,
  defaultBemTokenizer,
  padBemInputs,
  softmax1,
} from "./inputs.ts";
export {
  type BemBatch,
  type BemDevice,
  type BemInterface,
  bemInterface,
  type BemIntInput,
  type BemSessionLike,
  openBemSession,
  type OpenSessionOptions,
  runBemBatch,
  sessionValueInfo,
  type ValueInfo,
} from "./session.ts";
export {
  Bem,
  BEM_MODEL_HOWTO,
  BemError,
  type BemInfo,
  BemLive,
  type BemOptions,
  type BemRunner,
  type BemStats,
  makeBem,
} from "./service.ts";
export {
  BEM_THRESHOLD,
  BemAccumulator,
  type BemDisagreement,
  type BemDumpRecord,
  bemEvaluate,
  type BemEvaluateError,
  bemEvaluateFile,
  type BemEvaluateOptions,
  type BemEvaluateResult,
  type BemFileOptions,
  bemOfQuestion,
  type BemQuestionScore,
  type BemRow,
  type BemSummary,
  formatBemSummary,
} from "./fold.ts";
