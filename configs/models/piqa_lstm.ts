/**
 * The `piqa-lstm` encoder (the PIQA LSTM baseline), when a checkout
 * registers it (see `ENCODER_NAMES` in `encoders/registry.ts`); a run
 * config that lists it fails validation with the known names otherwise.
 *
 * @example
 * ```ts
 * import { piqaLstm } from "./piqa_lstm.ts";
 * if (piqaLstm.encoder !== "piqa-lstm") throw new Error("wrong encoder");
 * ```
 *
 * @module
 */
import type { ModelConfig } from "../types.ts";

/** Where `piqa-lstm`'s bundled manifest lives (`data/models/piqa-lstm/manifest.json`). */
export const PIQA_LSTM_MANIFEST_URL: URL = new URL(
  "../../data/models/piqa-lstm/manifest.json",
  import.meta.url,
);

/** `piqa-lstm` on the CPU. */
export const piqaLstm: ModelConfig = {
  abbr: "piqa-lstm",
  encoder: "piqa-lstm",
  device: "cpu",
  batch: { context: 16, question: 128 },
};
