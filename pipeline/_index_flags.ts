/**
 * The flags `search` and `serve` both take to search an index (`--exact`,
 * `--nprobe`, `--probe-tau`, `--candidates` and its older name `--refine`,
 * `--memory-budget`), and the range checks of their values, declared once.
 * Both command lines (`--help`) load this module, so it imports only the
 * argument types and `search/index/defaults.ts`.
 *
 * @module
 */
import type { FlagSpec } from "./_args.ts";
import { DEFAULT_HYBRID_CANDIDATES, DEFAULT_NPROBE } from "../search/index/defaults.ts";

/** `--exact`: an ivf-pq index searched exactly. */
export const EXACT_FLAG = {
  name: "exact",
  type: "boolean",
  description: "an ivf-pq index: score every phrase exactly (as an exact index; " +
    "serve: unless a request says exact=0)",
} as const satisfies FlagSpec;

/** `--nprobe N`: the IVF partitions an ivf-pq search probes. */
export const NPROBE_FLAG = {
  name: "nprobe",
  type: "int",
  metavar: "N",
  description: `an ivf-pq index: IVF partitions probed (default ${DEFAULT_NPROBE}, or all of an ` +
    `index with fewer lists; at most nlist)`,
} as const satisfies FlagSpec;

/** `--probe-tau T`: adaptive probing of an ivf-pq search's partitions. */
export const PROBE_TAU_FLAG = {
  name: "probe-tau",
  type: "number",
  metavar: "T",
  description: "an ivf-pq index: adaptive probing: of the --nprobe best partitions, probe " +
    "only those whose score is within T * |q| * (mean centroid length) of the best one's " +
    "(at least one; T above 0; on piqa-lstm dev with 1,000 lists --nprobe 28 --probe-tau 0.13 " +
    "--candidates 50 gave recall@1 0.953 at 1.16x the questions a second of the best fixed " +
    "--nprobe). Default: all --nprobe",
} as const satisfies FlagSpec;

/** `--candidates C`: the approximate candidates an ivf-pq search re-scores exactly. */
export const CANDIDATES_FLAG = {
  name: "candidates",
  type: "int",
  metavar: "C",
  description: "an ivf-pq index: re-score the C best approximate candidates exactly. " +
    "Dense index: default 0 (the approximate scores; 100 gave recall@1 0.97 at nprobe 10 on " +
    "piqa-lstm dev). Hybrid index (--dense-dims): candidates from the dense block's IVF-PQ " +
    `re-scored with the full vector, default ${DEFAULT_HYBRID_CANDIDATES}, at least 1. ` +
    "C below the ranks asked for (--top-k) counts as that many",
} as const satisfies FlagSpec;

/** `--refine R`: the older name of {@linkcode CANDIDATES_FLAG}. */
export const REFINE_FLAG = {
  name: "refine",
  type: "int",
  metavar: "R",
  description: "the older name of --candidates",
} as const satisfies FlagSpec;

/** `--memory-budget BYTES`: a dense index read from disk on demand within a budget. */
export const MEMORY_BUDGET_FLAG = {
  name: "memory-budget",
  type: "string",
  metavar: "BYTES",
  description: "a dense index: hold at most BYTES of its vectors, IVF-PQ lists and phrase " +
    "texts in memory (bytes, or with kB/MB/GB or KiB/MiB/GiB, e.g. 256MB), reading them " +
    "from disk on demand (same answers; search/index/disk.ts tells what is not counted); " +
    "over shards, each shard within BYTES",
} as const satisfies FlagSpec;

/**
 * What is wrong with the values of `--nprobe`, `--probe-tau`, `--candidates`
 * and `--refine` (the message of a usage error, exit 2), or `undefined`:
 * `--nprobe` below 1, `--probe-tau` not above 0, both names of the candidates
 * given, the candidates below 0 (named as given).
 *
 * @example
 * ```ts
 * import { indexFlagsProblem } from "./_index_flags.ts";
 * if (indexFlagsProblem({ nprobe: 10, candidates: 100 }) !== undefined) throw new Error();
 * const why = indexFlagsProblem({ refine: -1 });
 * if (why !== "--refine must be at least 0, got -1") throw new Error(why);
 * ```
 */
export function indexFlagsProblem(
  flags: {
    readonly nprobe?: number;
    readonly "probe-tau"?: number;
    readonly candidates?: number;
    readonly refine?: number;
  },
): string | undefined {
  const { nprobe, refine } = flags;
  if (nprobe !== undefined && nprobe < 1) return `--nprobe must be at least 1, got ${nprobe}`;
  const tau = flags["probe-tau"];
  if (tau !== undefined && !(Number.isFinite(tau) && tau > 0)) {
    return `--probe-tau must be a number above 0, got ${tau}`;
  }
  if (flags.candidates !== undefined && refine !== undefined) {
    return "--refine is the older name of --candidates: give one";
  }
  const candidates = flags.candidates ?? refine;
  if (candidates !== undefined && candidates < 0) {
    return `${refine !== undefined ? "--refine" : "--candidates"} must be at least 0, ` +
      `got ${candidates}`;
  }
  return undefined;
}
