/**
 * The vocabulary of a run: its stages and modes, a task (one command line,
 * its log, how to tell it is complete, what it needs first) and a plan (all
 * tasks of a run folder).
 *
 * @module
 */
import type { ResolvedRunConfig } from "../config/config.ts";

/**
 * The stages, in run order. `index` and `search` are the open-domain
 * search of a dataset with the `open` option (`full --open`): an exact
 * phrase index of the context dump, then every question against every
 * phrase of it. With `open.shards` N, `index` and `search` have a task per
 * shard (a Slurm job array each), `search_merge` merges the shards' top k
 * into the search's outputs, and an IVF-PQ index trains its quantizer
 * first (`index_train`).
 */
export type Stage =
  | "prepare"
  | "encode_context"
  | "encode_question"
  | "index_train"
  | "merge"
  | "index"
  | "search"
  | "search_merge"
  | "eval";

/** Stage groups run one after the other; the stages of a group run side by side. */
export const STAGE_GROUPS: readonly (readonly Stage[])[] = [
  ["prepare"],
  ["encode_context", "encode_question"],
  ["index_train"],
  ["merge", "index"],
  ["search"],
  ["search_merge"],
  ["eval"],
];

/** What `--mode` runs. */
export type Mode = "all" | "encode" | "merge" | "eval";

/** The stages of each `--mode`. */
export const MODE_STAGES: Readonly<Record<Mode, readonly Stage[]>> = {
  all: [
    "prepare",
    "encode_context",
    "encode_question",
    "index_train",
    "merge",
    "index",
    "search",
    "search_merge",
    "eval",
  ],
  encode: ["prepare", "encode_context", "encode_question"],
  merge: ["index_train", "merge", "index", "search", "search_merge"],
  eval: ["eval"],
};

/** How a task's completeness is checked from files. */
export type OutputCheck =
  | { readonly kind: "files"; readonly files: readonly string[] }
  | { readonly kind: "context"; readonly dir: string; readonly ids: readonly string[] }
  | { readonly kind: "question"; readonly dir: string; readonly ids: readonly string[] };

/** One unit of work: a command line, its log and how to tell it is done. */
export interface Task {
  /** Unique id: `stage/model/dataset[/part]` (`prepare/dataset`). */
  readonly id: string;
  /** Its stage. */
  readonly stage: Stage;
  /** Model abbr (`null` for `prepare`). */
  readonly model: string | null;
  /** Dataset abbr. */
  readonly dataset: string;
  /** Partition number and count (encode tasks; a shard's index and search tasks), else `null`. */
  readonly part: { readonly index: number; readonly count: number } | null;
  /** Item range `[start, end)` in input order (encode tasks), else `null`. */
  readonly range: readonly [number, number] | null;
  /** Items it handles (paragraphs, questions, or questions scored). */
  readonly items: number;
  /** What an item is. */
  readonly unit: "articles" | "paragraphs" | "questions";
  /** The command: `argv[0]` is the Deno binary. */
  readonly argv: readonly string[];
  /** Its log file (appended to, one header line per attempt). */
  readonly log: string;
  /** Paths whose modification means progress (log, output folder). */
  readonly watch: readonly string[];
  /** Completeness check. */
  readonly check: OutputCheck;
  /** Ids of the tasks whose outputs it reads. */
  readonly deps: readonly string[];
  /** Slurm `--gres` for the task, or `null`. */
  readonly gres: string | null;
}

/** The paragraphs and questions of a dataset (after the article range). */
export interface DatasetScan {
  /** Dataset abbr. */
  readonly abbr: string;
  /** Articles taken. */
  readonly articles: number;
  /** Paragraph ids in input order. */
  readonly paragraphIds: readonly string[];
  /** Question ids in input order. */
  readonly questionIds: readonly string[];
}

/** A run's plan. */
export interface Plan {
  /** The run folder. */
  readonly runDir: string;
  /** The config. */
  readonly config: ResolvedRunConfig;
  /** The datasets as scanned. */
  readonly scans: readonly DatasetScan[];
  /** All tasks, in stage order. */
  readonly tasks: readonly Task[];
  /** Partition size used. */
  readonly maxPartitionSize: number;
}
