/**
 * `deno task run configs/eval_sparse_pi_dev.ts`: the built-in `sparse-pi`
 * encoder on all of SQuAD v1.1 dev (EM/F1).
 *
 * @example
 * ```ts
 * import { config } from "./eval_sparse_pi_dev.ts";
 * if (config.models.map((m) => m.abbr).join() !== "sparse-pi") throw new Error("wrong models");
 * ```
 *
 * @module
 */
import type { RunConfig } from "./types.ts";
import { squadDev } from "./datasets/squad_dev.ts";
import { sparsePi } from "./models/sparse_pi.ts";

/** One model × one dataset, partitions of 500 paragraphs. */
export const config: RunConfig = {
  datasets: [squadDev],
  models: [sparsePi],
  maxPartitionSize: 500,
};
