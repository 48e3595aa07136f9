/**
 * The names a command line gives encoders (`--encoder NAME`) and ONNX
 * devices (`--device`), without the encoders themselves: a command's spec
 * (its flags' choices and defaults, `--help`) reads them without loading
 * ONNX Runtime or Effect. `registry.ts` builds each name's encoder and
 * re-exports these.
 *
 * @example
 * ```ts
 * import { DEFAULT_ENCODER, ENCODER_NAMES } from "./names.ts";
 * if (!ENCODER_NAMES.includes(DEFAULT_ENCODER)) throw new Error("the default is registered");
 * ```
 *
 * @module
 */

/** The hybrid encoder's name (`hybrid.ts`): piqa-lstm's vectors joined with sparse-pi's. */
export const HYBRID_NAME = "piqa-lstm+sparse";

/** The LSTM+SA hybrid's name (`hybrid.ts`): piqa-lstm-sa's vectors joined with sparse-pi's. */
export const SA_HYBRID_NAME = "piqa-lstm-sa+sparse";

/** The open-search hybrid's name (`hybrid.ts`): piqa-lstm-open's vectors joined with sparse-pi's. */
export const OPEN_HYBRID_NAME = "piqa-lstm-open+sparse";

/**
 * The registered encoders' names with their literal types, in the order help
 * lists them ({@linkcode ENCODER_NAMES} is the same list typed as strings).
 */
export const ENCODER_NAME_LITERALS = [
  "sparse-pi",
  "piqa-lstm",
  "piqa-lstm-sa",
  "piqa-lstm-open",
  HYBRID_NAME,
  SA_HYBRID_NAME,
  OPEN_HYBRID_NAME,
] as const;

/** A registered encoder's name. */
export type EncoderName = (typeof ENCODER_NAME_LITERALS)[number];

/** Names accepted by `--encoder`, in the order help lists them. */
export const ENCODER_NAMES: readonly string[] = ENCODER_NAME_LITERALS;

/** The encoder a stage, `full` or a run uses when none is named. */
export const DEFAULT_ENCODER = "sparse-pi";

/** Where a model runs. `auto`: CUDA when it can be loaded, else CPU (said on stderr). */
export type OnnxDevice = "cpu" | "cuda" | "webgpu" | "auto";

/** Devices accepted by `--device`. */
export const ONNX_DEVICES: readonly OnnxDevice[] = ["cpu", "cuda", "webgpu", "auto"];
