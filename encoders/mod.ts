/**
 * The encoders room: the `ContextEncoder`/`QuestionEncoder` services and
 * their registry, the runner that writes a dump (`embed.ts`), the ONNX
 * encoders (`onnx/`: manifest, the one ONNX Runtime session module,
 * tokenizers, phrases), the sparse-pi encoder (`sparse_pi/`) and the
 * hybrid of both. The Matrix types live in the io room.
 *
 * @example
 * ```ts
 * import { ENCODER_NAMES } from "./mod.ts";
 * if (!ENCODER_NAMES.includes("sparse-pi")) throw new Error("sparse-pi is registered");
 * ```
 *
 * @module
 */
export {
  ContextEncoder,
  type ContextInput,
  type EncodedContext,
  type EncodedQuestion,
  EncoderError,
  type EncoderInfo,
  type Phrase,
  QuestionEncoder,
  type QuestionInput,
} from "./types.ts";
export {
  contextInputs,
  embedContext,
  type EmbedContextOptions,
  embedContexts,
  type EmbedError,
  type EmbedOptions,
  embedQuestion,
  type EmbedQuestionOptions,
  embedQuestions,
  type EmbedResult,
  inRange,
  questionInputs,
} from "./embed.ts";
export {
  contextEncoderLayer,
  ENCODER_NAMES,
  type EncoderOptions,
  type EncoderSpec,
  encoderSpec,
  questionEncoderLayer,
} from "./registry.ts";
export {
  createSession,
  type CreateSessionOptions,
  cudaProviderProblem,
  elfNeeded,
  loadOrt,
  makeTensor,
  ONNX_DEVICES,
  type OnnxDevice,
  onnxPermissions,
  type OnnxSessionOptions,
  type OpenedSession,
  openSession,
  ortBindingPath,
  ortBinDir,
  type OrtTensor,
  sessionGraph,
  type SessionLike,
  SessionOpenError,
} from "./onnx/session.ts";
export {
  checkGraph,
  decodeManifest,
  type GraphInterface,
  type GraphValue,
  halfFiles,
  INPUT_ROLES,
  ONNX_MANIFEST_FORMAT,
  OnnxConfigError,
  type OnnxHalf,
  OnnxInputSchema,
  type OnnxInputSpec,
  type OnnxManifest,
  OnnxManifestSchema,
  OnnxOutputSchema,
  type OnnxOutputSpec,
  readManifest,
  type ResolvedManifest,
  TENSOR_DTYPES,
} from "./onnx/manifest.ts";
export {
  type ContextTokenVectors,
  contextTokenVectors,
  encodeContexts,
  encodeQuestions,
  loadOnnxContext,
  loadOnnxQuestion,
  OnnxContextEncoderLive,
  type OnnxContextModel,
  type OnnxEncoderOptions,
  onnxFiles,
  onnxLayers,
  OnnxQuestionEncoderLive,
  type OnnxQuestionModel,
  PIQA_LSTM_MANIFEST,
  PIQA_LSTM_OPEN_MANIFEST,
  planRuns,
} from "./onnx/encoder.ts";
export type { SpanRule } from "./onnx/phrases.ts";
export type { OnnxTokenizer, Tokenized, Units } from "./onnx/tokenizer.ts";
export type { ContextResources } from "./sparse_pi/features.ts";
export {
  contextModelFromArtifact,
  encodeContext,
  encodeQuestion,
  keyColumn,
  loadContextModel,
  loadQuestionModel,
  questionModelFromArtifact,
  readArtifact,
  SPARSE_PI_FORMAT,
  SPARSE_PI_MODEL,
  SPARSE_PI_NAME,
  SPARSE_PI_VERSION,
  type SparsePiArtifact,
  SparsePiContextEncoderLive,
  type SparsePiContextModel,
  sparsePiLayers,
  SparsePiQuestionEncoderLive,
  type SparsePiQuestionModel,
} from "./sparse_pi/encoder.ts";
export {
  HYBRID_NAME,
  type HybridConfig,
  HybridContextEncoderLive,
  hybridFiles,
  hybridLayers,
  type HybridOptions,
  HybridQuestionEncoderLive,
  joinDenseSparse,
  OPEN_HYBRID_NAME,
  PIQA_LSTM_HYBRID_CONFIG,
  PIQA_LSTM_OPEN_HYBRID_CONFIG,
  PIQA_LSTM_SA_HYBRID_CONFIG,
  readHybridWeight,
  SA_HYBRID_NAME,
} from "./hybrid.ts";
