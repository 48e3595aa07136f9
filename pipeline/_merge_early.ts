/**
 * What `merge` (`pipeline/merge.ts`) does with its command line before the
 * stage and Effect load: it counts the open files its worker threads need
 * ({@linkcode mergeOpenFiles}) and starts them ({@linkcode startEarly},
 * `search/merge/early.ts`). The command's `--help` loads this module, so it
 * imports only the argument parser, `search/merge/early.ts` and `search/merge/plan.ts`
 * (no Effect), and of the command file only the type of its spec: the spec
 * is passed in.
 *
 * @module
 */
import { MIN_OPEN_FILES, parseArgs } from "./_args.ts";
import { EarlyPool } from "../search/merge/early.ts";
import {
  batchSize,
  defaultConcurrency,
  defaultMergeWorkers,
  defaultWorkers,
} from "../search/merge/plan.ts";
import type { MERGE_SPEC } from "./merge.ts";

/** `merge`'s command line (`MERGE_SPEC` of `pipeline/merge.ts`). */
type MergeSpec = typeof MERGE_SPEC;

/**
 * Starts the workers of the command line `argv` (read with `spec`,
 * `merge`'s) before the stage loads, or `undefined` when no early start
 * fits it (bad arguments, `--help`, the dataset on stdin, no workers).
 *
 * @example
 * ```ts
 * import { MERGE_SPEC } from "./merge.ts";
 * import { startEarly } from "./_merge_early.ts";
 * if (startEarly(MERGE_SPEC, ["--help"]) !== undefined) throw new Error("started for --help");
 * ```
 */
export function startEarly(spec: MergeSpec, argv: readonly string[]): EarlyPool | undefined {
  let a;
  try {
    a = parseArgs(spec, argv);
  } catch {
    return undefined;
  }
  if (a === "help") return undefined;
  const data = a.positional["data.json"];
  const workers = a.flags.workers ?? defaultMergeWorkers(a.positional["context_emb"]);
  const concurrency = a.flags.concurrency ?? defaultConcurrency(workers);
  if (data === "-" || workers < 1 || concurrency < 1) return undefined;
  return new EarlyPool({
    data,
    contextEmb: a.positional["context_emb"],
    questionEmb: a.positional["question_emb"],
    sparse: a.flags.sparse === true,
    simd: a.flags["no-simd"] !== true,
    workers,
    batch: batchSize(concurrency, workers),
  });
}

/**
 * Open files the command line `argv` (read with `spec`, `merge`'s) needs:
 * each worker thread takes descriptors of its own (its event loop, its
 * standard streams, the dump files it reads), and Deno panics when it
 * cannot open them.
 *
 * @example
 * ```ts
 * import { MERGE_SPEC } from "./merge.ts";
 * import { mergeOpenFiles } from "./_merge_early.ts";
 * const argv = ["d.json", "c", "q", "p.json", "--workers", "16"];
 * if (mergeOpenFiles(MERGE_SPEC, argv) !== 160) throw new Error();
 * ```
 */
export function mergeOpenFiles(spec: MergeSpec, argv: readonly string[]): number {
  let workers = defaultWorkers();
  try {
    const a = parseArgs(spec, argv);
    if (a !== "help") workers = Math.max(0, a.flags.workers ?? workers);
  } catch { /* runMain reports the usage error */ }
  return Math.max(MIN_OPEN_FILES, 32 + 8 * workers);
}
