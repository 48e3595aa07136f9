/**
 * The defaults of an index's build and search that the command lines show
 * (`index --train-paragraphs`, `search --candidates`), in a module without
 * imports: a command's spec (its `--help`) reads them without loading the
 * index code. `ivfpq/ivfpq.ts` and `ivfpq/hybrid.ts` re-export them.
 *
 * @module
 */

/** Paragraphs the IVF-PQ quantizers are trained on, by default. */
export const DEFAULT_TRAIN_PARAGRAPHS = 100;

/** Candidates re-scored exactly per question by default on a hybrid index. */
export const DEFAULT_HYBRID_CANDIDATES = 1000;

/** IVF lists an ivf-pq search probes by default (`search --nprobe`). */
export const DEFAULT_NPROBE = 10;
