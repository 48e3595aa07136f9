/**
 * `./phraseval run configs/open_shards_dev.ts [--slurm]`: open search of
 * SQuAD v1.1 dev with `piqa-lstm` (dense, d = 256) over sharded indexes: an
 * 8-shard exact index (`dev-exact8`) and an 8-shard IVF-PQ index
 * (`dev-ivf8`: the quantizer trained once, `index_train`, then 8 shards
 * encoded with it). Each shard is built and searched by a task of its own
 * (with `--slurm`, a job array of 8 per stage), and `search_merge` merges
 * the shards' top 10 into the open predictions
 * ([docs/scale.md](../docs/scale.md), section 4).
 *
 * @example
 * ```ts
 * import { config } from "./open_shards_dev.ts";
 * const open = config.datasets.map((d) => typeof d.open === "object" ? d.open.shards : 0);
 * if (open.join() !== "8,8") throw new Error(open.join());
 * ```
 *
 * @module
 */
import type { RunConfig } from "./types.ts";
import { squadDev } from "./datasets/squad_dev.ts";
import { piqaLstm } from "./models/piqa_lstm.ts";

/** The IVF-PQ of `dev-ivf8`: 256 lists, 64 bytes a phrase, 16 lists probed. */
export const DEV_IVF = { nlist: 256, bpv: 64, nprobe: 16 } as const;

/** piqa-lstm × dev, as an 8-shard exact index and an 8-shard IVF-PQ index. */
export const config: RunConfig = {
  datasets: [
    { ...squadDev, abbr: "dev-exact8", open: { topK: 10, shards: 8 } },
    { ...squadDev, abbr: "dev-ivf8", open: { topK: 10, shards: 8, ivf: DEV_IVF } },
  ],
  models: [piqaLstm],
  maxPartitionSize: 500,
};
