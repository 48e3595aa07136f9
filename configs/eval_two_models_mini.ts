/**
 * `deno task run configs/eval_two_models_mini.ts`: two models × the mini
 * dev set. The second model is `piqa-lstm` when its bundled model is
 * present, else `sparse-pi` with small batches (checked when the config
 * loads; a checkout that does not register `piqa-lstm` says so with the
 * known encoder names).
 *
 * @example
 * ```ts
 * import { config } from "./eval_two_models_mini.ts";
 * if (config.models.length !== 2) throw new Error("expected two models");
 * ```
 *
 * @module
 */
import type { RunConfig } from "./types.ts";
import { squadDevMini } from "./datasets/squad_dev_mini.ts";
import { sparsePi, sparsePiSmallBatch } from "./models/sparse_pi.ts";
import { PIQA_LSTM_MANIFEST_URL, piqaLstm } from "./models/piqa_lstm.ts";

const lstmReady = (() => {
  try {
    return Deno.statSync(PIQA_LSTM_MANIFEST_URL).isFile;
  } catch {
    return false;
  }
})();

/** Two models × one dataset, partitions of 32 paragraphs (questions likewise). */
export const config: RunConfig = {
  datasets: [squadDevMini],
  models: [sparsePi, lstmReady ? piqaLstm : sparsePiSmallBatch],
  maxPartitionSize: 32,
  maxWorkers: 2,
};
