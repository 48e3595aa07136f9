/**
 * `merge`'s plan: the dataset's questions grouped by paragraph, cut into
 * batches, and the default sizes of the work. A module of its own, with no
 * imports, because `search/merge/early.ts` needs these before anything else loads.
 *
 * @module
 */

/** The name merge gives its workers (shown in debuggers and traces). */
export const WORKER_NAME = "phraseval-merge-worker";

/** A paragraph and the questions that take their answer from it. */
export interface MergeUnit {
  /** The paragraph id (`title_index`). */
  readonly cid: string;
  /** Each question's position in the predictions (dataset order of first occurrence). */
  readonly slots: readonly number[];
  /** The question ids, in the same order. */
  readonly qids: readonly string[];
}

/** The dataset's questions grouped by the paragraph that answers them. */
export interface MergePlan {
  /** Paragraphs in the order of their first question. */
  readonly units: readonly MergeUnit[];
  /** Distinct question ids. */
  readonly questions: number;
}

/**
 * Groups a question → paragraph map (a `Map` has Python's dict semantics: a
 * repeated key keeps its first position and its last value) by paragraph, in
 * the order of each paragraph's first question.
 *
 * @example
 * ```ts
 * import { planMerge } from "./plan.ts";
 * const plan = planMerge(new Map([["q1", "T_0"], ["q2", "T_1"], ["q3", "T_0"]]));
 * const got = JSON.stringify(plan.units.map((u) => [u.cid, u.slots]));
 * if (got !== '[["T_0",[0,2]],["T_1",[1]]]') throw new Error(got);
 * ```
 */
export function planMerge(q2c: ReadonlyMap<string, string>): MergePlan {
  const units: { cid: string; slots: number[]; qids: string[] }[] = [];
  const byCid = new Map<string, (typeof units)[number]>();
  let slot = 0;
  for (const [qid, cid] of q2c) {
    let u = byCid.get(cid);
    if (u === undefined) {
      u = { cid, slots: [], qids: [] };
      byCid.set(cid, u);
      units.push(u);
    }
    u.slots.push(slot++);
    u.qids.push(qid);
  }
  return { units, questions: slot };
}

/**
 * The options `merge` reads the dataset with (as PIQA: paragraphs need no
 * context), repeated ids refused (`io/squad_ids.ts`). Workers that plan by
 * themselves use these too: with `--unique-ids` on a dataset whose titles
 * repeat they make no plan, and the main thread reads the dataset itself.
 */
export const SQUAD_OPTS = { context: "optional", ids: "distinct" } as const;

/** Worker threads when none are asked for: one per CPU, at most 4. */
export function defaultWorkers(): number {
  const n = typeof navigator !== "undefined" ? navigator.hardwareConcurrency ?? 1 : 1;
  return Math.max(1, Math.min(4, n));
}

/**
 * Context dumps with fewer entries than this (files of about 128 paragraphs) are merged without
 * worker threads when none are asked for: there, starting them costs more than they save (on
 * 2 cores, 3 paragraphs: 0.59 s against 0.47 s; 148 paragraphs: 1.00 s against 0.93 s).
 */
export const SMALL_DUMP_ENTRIES = 256;

/**
 * Worker threads for merging the context dump `contextEmb` when none are asked for: none for a
 * folder of fewer than {@linkcode SMALL_DUMP_ENTRIES} entries, else {@linkcode defaultWorkers}
 * (an archive, or a folder that cannot be read, gets the default; the merge reports the problem).
 *
 * @example
 * ```ts
 * import { defaultMergeWorkers } from "./plan.ts";
 * const dir = Deno.makeTempDirSync();
 * if (defaultMergeWorkers(dir) !== 0) throw new Error("an empty folder needs no workers");
 * Deno.removeSync(dir);
 * ```
 */
export function defaultMergeWorkers(contextEmb: string): number {
  let n = 0;
  try {
    for (const _ of Deno.readDirSync(contextEmb)) if (++n >= SMALL_DUMP_ENTRIES) break;
  } catch {
    return defaultWorkers();
  }
  return n < SMALL_DUMP_ENTRIES ? 0 : defaultWorkers();
}

/** Paragraphs in flight when `concurrency` is not given. */
export function defaultConcurrency(workers: number): number {
  return Math.max(2, 64 * workers);
}

/** The most paragraphs per batch for `workers` workers and `concurrency` paragraphs in flight. */
export function batchSize(concurrency: number, workers: number): number {
  // Two batches per worker in flight (one running, one waiting), as far as
  // `concurrency` allows: few messages (each costs the main thread), no worker idles.
  return Math.max(1, Math.min(32, Math.floor(concurrency / Math.max(2, 2 * workers))));
}

/**
 * The plan cut into batches of at most `most` paragraphs, and at least 8
 * batches per worker (so the last ones do not leave workers idle long).
 */
export function batchesOf(plan: MergePlan, most: number, workers: number): MergeUnit[][] {
  const size = Math.max(
    1,
    Math.min(most, Math.ceil(plan.units.length / (8 * Math.max(1, workers)))),
  );
  const out: MergeUnit[][] = [];
  for (let i = 0; i < plan.units.length; i += size) out.push(plan.units.slice(i, i + size));
  return out;
}
