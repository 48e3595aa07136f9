/**
 * `./phraseval run configs/eval_piqa_lstm_sa_dev.ts`: the PIQA LSTM+SA
 * baseline (`piqa-lstm-sa`) beside `piqa-lstm` on all of SQuAD v1.1 dev
 * (EM/F1), so `report` compares them question by question.
 *
 * @example
 * ```ts
 * import { config } from "./eval_piqa_lstm_sa_dev.ts";
 * if (config.models.map((m) => m.abbr).join() !== "piqa-lstm,piqa-lstm-sa") throw new Error();
 * ```
 *
 * @module
 */
import type { RunConfig } from "./types.ts";
import { squadDev } from "./datasets/squad_dev.ts";
import { piqaLstm } from "./models/piqa_lstm.ts";
import { piqaLstmSa } from "./models/piqa_lstm_sa.ts";

/** Two models × one dataset, partitions of 500 paragraphs. */
export const config: RunConfig = {
  datasets: [squadDev],
  models: [piqaLstm, piqaLstmSa],
  maxPartitionSize: 500,
};
