/**
 * The defaults of an index's build and search that the command lines show
 * (`index --train-paragraphs`, `search --candidates`), in a module without
 * imports: a command's spec (its `--help`) reads them without loading the
 * index code. `ivfpq/train.ts` and `ivfpq/hybrid.ts` re-export them.
 *
 * @module
 */

/** Paragraphs the IVF-PQ quantizers are trained on, by default. */
export const DEFAULT_TRAIN_PARAGRAPHS = 100;

/** Candidates re-scored exactly per question by default on a hybrid index. */
export const DEFAULT_HYBRID_CANDIDATES = 1000;

/** Ranks `search` keeps per question by default (`search --top-k`). */
export const DEFAULT_TOP_K = 10;

/** IVF lists an ivf-pq search probes by default (`search --nprobe`). */
export const DEFAULT_NPROBE = 10;

/**
 * The lists a search probes when it names none, on an index of `nlist`
 * lists: {@linkcode DEFAULT_NPROBE}, at most `nlist` (an index of fewer
 * lists probes them all); {@linkcode DEFAULT_NPROBE} where nlist is unknown.
 *
 * @example
 * ```ts
 * import { defaultNprobe } from "./defaults.ts";
 * if (defaultNprobe(5) !== 5 || defaultNprobe(100) !== 10 || defaultNprobe(undefined) !== 10) {
 *   throw new Error();
 * }
 * ```
 */
export function defaultNprobe(nlist: unknown): number {
  return typeof nlist === "number" && Number.isSafeInteger(nlist) && nlist >= 1
    ? Math.min(DEFAULT_NPROBE, nlist)
    : DEFAULT_NPROBE;
}

/**
 * The most worker threads a search starts (`search --threads`; more is a
 * usage error): each holds its own copy of the search's code and scratch
 * (about 15 MB), and a scan has no more than a block of questions to share.
 */
export const MAX_SEARCH_THREADS = 64;
