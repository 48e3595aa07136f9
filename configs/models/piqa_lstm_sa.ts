/**
 * The `piqa-lstm-sa` encoder (the PIQA LSTM+SA baseline: `piqa-lstm` with
 * one self-attention head beside each boundary vector, PIQA's
 * `--num_heads 2`; `baselines/piqa_lstm/README.md`).
 *
 * @example
 * ```ts
 * import { piqaLstmSa } from "./piqa_lstm_sa.ts";
 * if (piqaLstmSa.encoder !== "piqa-lstm-sa") throw new Error("wrong encoder");
 * ```
 *
 * @module
 */
import type { ModelConfig } from "../types.ts";

/** `piqa-lstm-sa` on the CPU. */
export const piqaLstmSa: ModelConfig = {
  abbr: "piqa-lstm-sa",
  encoder: "piqa-lstm-sa",
  device: "cpu",
  batch: { context: 16, question: 128 },
};
