/**
 * The encoders a stage can run by name (`--encoder NAME`), with the model
 * files each half reads (so `full` can narrow each process's permissions to
 * exactly those files).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import type * as Layer from "effect/Layer";
import { UsageError } from "../io/errors.ts";
import {
  SPARSE_PI_MODEL,
  SparsePiContextEncoderLive,
  SparsePiQuestionEncoderLive,
} from "./sparse_pi/encoder.ts";
import type { ContextEncoder, EncoderError, QuestionEncoder } from "./types.ts";
import type * as Onnx from "./onnx/encoder.ts";
import type * as Hybrid from "./hybrid.ts";
import {
  ENCODER_NAMES,
  type EncoderName,
  HYBRID_NAME,
  type OnnxDevice,
  OPEN_HYBRID_NAME,
  SA_HYBRID_NAME,
} from "./names.ts";

export { DEFAULT_ENCODER, ENCODER_NAMES } from "./names.ts";

/** How to build both halves of a named encoder. */
export interface EncoderSpec {
  /** The name. */
  readonly name: string;
  /** One line for `--help` and reports. */
  readonly description: string;
  /** Whether it writes sparse (CSR) matrices. */
  readonly sparse: boolean;
  /** Files the context half reads. */
  readonly contextFiles: readonly string[];
  /** Files the question half reads (never a context or anything derived from one). */
  readonly questionFiles: readonly string[];
  /** The context half. */
  contextLayer(): Layer.Layer<ContextEncoder, EncoderError>;
  /** The question half. */
  questionLayer(): Layer.Layer<QuestionEncoder, EncoderError>;
  /**
   * Deno permission flags each encoder process needs beyond reading its
   * input, its files and its output folder, and writing its output folder
   * (e.g. `--allow-ffi=<onnxruntime-node addon>`); absent: none.
   */
  readonly permissions?: readonly string[];
}

/** How to build an encoder: model artifact, device and threads. */
export interface EncoderOptions {
  /** Model artifact (manifest for ONNX encoders); default the bundled one. */
  readonly model?: string;
  /** Execution provider of ONNX encoders (default `cpu`; others ignore it). */
  readonly device?: OnnxDevice;
  /** Intra-op threads of ONNX encoders (default: ONNX Runtime's). */
  readonly threads?: number;
}

/**
 * The ONNX and hybrid encoders' modules (ONNX Runtime's session, the
 * tokenizer, ...), loaded with `import()` when such an encoder is asked for:
 * sparse-pi, the default, needs none of them.
 */
interface OnnxModules {
  /** `onnx/encoder.ts`. */
  readonly onnx: typeof Onnx;
  /** `hybrid.ts`. */
  readonly hybrid: typeof Hybrid;
}

const loadOnnxModules = (): Promise<OnnxModules> =>
  Promise.all([import("./onnx/encoder.ts"), import("./hybrid.ts")]).then(([onnx, hybrid]) => ({
    onnx,
    hybrid,
  }));

/** Extra permission flags and read paths of an ONNX encoder process on `device`. */
function onnxProcess(
  { onnxPermissions }: typeof Onnx,
  device: OnnxDevice = "cpu",
): { flags: string[]; read: string[] } {
  const p = onnxPermissions(device);
  return {
    flags: [p.ffi === "all" ? "--allow-ffi" : `--allow-ffi=${p.ffi.join(",")}`],
    read: [...p.read],
  };
}

/** The builder of sparse-pi, which loads no ONNX module. */
const SPARSE_PI_BUILDER = ({ model = SPARSE_PI_MODEL }: EncoderOptions): EncoderSpec => ({
  name: "sparse-pi",
  description:
    "built-in linear sparse phrase encoder fitted on the SQuAD train subset (no download, no GPU)",
  sparse: true,
  contextFiles: [model],
  questionFiles: [model],
  contextLayer: () => SparsePiContextEncoderLive(model),
  questionLayer: () => SparsePiQuestionEncoderLive(model),
});

/**
 * One builder per name of `names.ts` but sparse-pi, given the loaded
 * {@linkcode OnnxModules} (the type refuses a missing or an extra one).
 */
const ONNX_BUILDERS: Record<
  Exclude<EncoderName, "sparse-pi">,
  (o: EncoderOptions, m: OnnxModules) => EncoderSpec
> = {
  "piqa-lstm": ({ model, device, threads }, { onnx }) => {
    model ??= onnx.PIQA_LSTM_MANIFEST;
    const proc = onnxProcess(onnx, device);
    return {
      name: "piqa-lstm",
      description: "PIQA LSTM baseline (ONNX: BiLSTM over GloVe, start/end vectors per token, " +
        "phrases of up to 10 tokens, d=256, f16 dumps), trained on the SQuAD train subset",
      sparse: false,
      contextFiles: [...onnx.onnxFiles(model, "context"), ...proc.read],
      questionFiles: [...onnx.onnxFiles(model, "question"), ...proc.read],
      permissions: proc.flags,
      contextLayer: () =>
        onnx.OnnxContextEncoderLive(model, { device, threads, name: "piqa-lstm" }),
      questionLayer: () =>
        onnx.OnnxQuestionEncoderLive(model, { device, threads, name: "piqa-lstm" }),
    };
  },
  "piqa-lstm-sa": ({ model, device, threads }, { onnx }) => {
    model ??= onnx.PIQA_LSTM_SA_MANIFEST;
    const proc = onnxProcess(onnx, device);
    return {
      name: "piqa-lstm-sa",
      description: "PIQA LSTM+SA baseline (piqa-lstm with one self-attention head beside each " +
        "start/end vector, PIQA's --num_heads 2; d=512, f16 dumps), trained on the SQuAD train subset",
      sparse: false,
      contextFiles: [...onnx.onnxFiles(model, "context"), ...proc.read],
      questionFiles: [...onnx.onnxFiles(model, "question"), ...proc.read],
      permissions: proc.flags,
      contextLayer: () =>
        onnx.OnnxContextEncoderLive(model, { device, threads, name: "piqa-lstm-sa" }),
      questionLayer: () =>
        onnx.OnnxQuestionEncoderLive(model, { device, threads, name: "piqa-lstm-sa" }),
    };
  },
  "piqa-lstm-open": ({ model, device, threads }, { onnx }) => {
    model ??= onnx.PIQA_LSTM_OPEN_MANIFEST;
    const proc = onnxProcess(onnx, device);
    return {
      name: "piqa-lstm-open",
      description: "piqa-lstm fine-tuned for open-domain phrase search (in-batch and pre-batch " +
        "negatives, then query-side fine-tuning against the train-subset phrase index; d=256, " +
        "f16 dumps)",
      sparse: false,
      contextFiles: [...onnx.onnxFiles(model, "context"), ...proc.read],
      questionFiles: [...onnx.onnxFiles(model, "question"), ...proc.read],
      permissions: proc.flags,
      contextLayer: () =>
        onnx.OnnxContextEncoderLive(model, { device, threads, name: "piqa-lstm-open" }),
      questionLayer: () =>
        onnx.OnnxQuestionEncoderLive(model, { device, threads, name: "piqa-lstm-open" }),
    };
  },
  [HYBRID_NAME]: ({ model, device, threads }, { onnx, hybrid }) => {
    model ??= onnx.PIQA_LSTM_MANIFEST;
    const proc = onnxProcess(onnx, device);
    const files = hybrid.hybridFiles({ manifest: model });
    return {
      name: HYBRID_NAME,
      description: "piqa-lstm's dense [start; end] vectors on sparse-pi's spans, joined with " +
        "sparse-pi's vectors (CSR, dense block first, dense weight chosen on held-out train)",
      sparse: true,
      contextFiles: [...files.context, ...proc.read],
      questionFiles: [...files.question, ...proc.read],
      permissions: proc.flags,
      contextLayer: () => hybrid.HybridContextEncoderLive({ manifest: model, device, threads }),
      questionLayer: () => hybrid.HybridQuestionEncoderLive({ manifest: model, device, threads }),
    };
  },
  [SA_HYBRID_NAME]: ({ model, device, threads }, { onnx, hybrid }) => {
    model ??= onnx.PIQA_LSTM_SA_MANIFEST;
    const proc = onnxProcess(onnx, device);
    const o = { manifest: model, config: hybrid.PIQA_LSTM_SA_HYBRID_CONFIG, name: SA_HYBRID_NAME };
    const files = hybrid.hybridFiles(o);
    return {
      name: SA_HYBRID_NAME,
      description: "piqa-lstm-sa's dense [start; end] vectors on sparse-pi's spans, joined with " +
        "sparse-pi's vectors (CSR, dense block first, dense weight chosen on held-out train)",
      sparse: true,
      contextFiles: [...files.context, ...proc.read],
      questionFiles: [...files.question, ...proc.read],
      permissions: proc.flags,
      contextLayer: () => hybrid.HybridContextEncoderLive({ ...o, device, threads }),
      questionLayer: () => hybrid.HybridQuestionEncoderLive({ ...o, device, threads }),
    };
  },
  [OPEN_HYBRID_NAME]: ({ model, device, threads }, { onnx, hybrid }) => {
    model ??= onnx.PIQA_LSTM_OPEN_MANIFEST;
    const proc = onnxProcess(onnx, device);
    const o = {
      manifest: model,
      config: hybrid.PIQA_LSTM_OPEN_HYBRID_CONFIG,
      name: OPEN_HYBRID_NAME,
    };
    const files = hybrid.hybridFiles(o);
    return {
      name: OPEN_HYBRID_NAME,
      description: "piqa-lstm-open's dense [start; end] vectors on sparse-pi's spans, joined " +
        "with sparse-pi's vectors (CSR, dense block first, dense weight chosen for the open task " +
        "on held-out train)",
      sparse: true,
      contextFiles: [...files.context, ...proc.read],
      questionFiles: [...files.question, ...proc.read],
      permissions: proc.flags,
      contextLayer: () => hybrid.HybridContextEncoderLive({ ...o, device, threads }),
      questionLayer: () => hybrid.HybridQuestionEncoderLive({ ...o, device, threads }),
    };
  },
};

/**
 * The spec of encoder `name`, with its model at `model` (default the
 * bundled one), or with {@linkcode EncoderOptions} (model, device, threads).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { encoderSpec } from "./registry.ts";
 * const spec = await Effect.runPromise(encoderSpec("sparse-pi"));
 * const files = spec.questionFiles;
 * if (files.length !== 1 || !files[0].endsWith("/data/sparse-pi/model.json.gz")) {
 *   throw new Error(files.join());
 * }
 * ```
 */
export const encoderSpec = (
  name: string,
  model?: string | EncoderOptions,
): Effect.Effect<EncoderSpec, UsageError> =>
  Effect.suspend(() => {
    const opts: EncoderOptions = typeof model === "string" ? { model } : model ?? {};
    if (name === "sparse-pi") return Effect.succeed(SPARSE_PI_BUILDER(opts));
    const build = (ONNX_BUILDERS as Record<
      string,
      (o: EncoderOptions, m: OnnxModules) => EncoderSpec
    >)[name];
    return build ? Effect.map(Effect.promise(loadOnnxModules), (m) => build(opts, m)) : Effect.fail(
      new UsageError(`unknown encoder "${name}" (known: ${ENCODER_NAMES.join(", ")})`),
    );
  });

/** The context half of encoder `name` as a Layer. */
export const contextEncoderLayer = (
  name: string,
  model?: string | EncoderOptions,
): Effect.Effect<Layer.Layer<ContextEncoder, EncoderError>, UsageError> =>
  Effect.map(encoderSpec(name, model), (s) => s.contextLayer());

/** The question half of encoder `name` as a Layer. */
export const questionEncoderLayer = (
  name: string,
  model?: string | EncoderOptions,
): Effect.Effect<Layer.Layer<QuestionEncoder, EncoderError>, UsageError> =>
  Effect.map(encoderSpec(name, model), (s) => s.questionLayer());
