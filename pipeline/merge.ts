/**
 * `merge data.json context_emb question_emb pred.json [--sparse]`: the
 * PI-SQuAD merge as a command (the stage itself is `merge` in
 * `search/merge/merge.ts`, which see). Run as a command, it starts its workers
 * first thing ({@linkcode startEarly}), before the stage and Effect have
 * loaded (they are imported after); the stage adopts them. Before that, a
 * limit on open files too low for its workers ({@linkcode mergeOpenFiles})
 * is refused in one line, exit 1 (Deno would panic starting them). Both
 * are in `pipeline/_merge_early.ts`.
 * `--help` and bad usage load nothing but this file's light modules; the
 * work, `pipeline/_merge.ts`, loads with `import()` only to run.
 *
 * @module
 */
import { type CommandSpec, exitOnHelpOrUsageError, openFilesProblem } from "./_args.ts";
import { exitCodeOf, WorkError } from "../io/errors.ts";
import { mergeOpenFiles, startEarly } from "./_merge_early.ts";

export type {
  MergeError,
  MergeOptions,
  MergeProgress,
  MergeResult,
} from "../search/merge/merge.ts";

/** `merge`'s command line. */
export const MERGE_SPEC = {
  name: "merge",
  summary:
    "Answers each question with the phrase of its paragraph whose vector has the largest inner " +
    "product with the question vector (the first on a tie), as PIQA's merge.py, and writes the " +
    "predictions (Python json.dump format). Missing dump files print 'Missing <path>' on stderr " +
    "and leave the question unanswered. Scores are exact inner products (a fast pass, then the " +
    "rows near the best re-scored with a correctly rounded sum), so ties and near-ties are " +
    "decided the same way everywhere.",
  args: [
    { name: "data.json", description: "SQuAD dataset (.json, .json.gz, or - for stdin)" },
    { name: "context_emb", description: "context dump: a folder or a .zip of one" },
    { name: "question_emb", description: "question dump: a folder or a .zip of one" },
    { name: "pred.json", description: "predictions to write (- for stdout)" },
  ],
  flags: [
    {
      name: "sparse",
      type: "boolean",
      description: "the dumps are scipy sparse matrices (CSR or CSC)",
    },
    {
      name: "unique-ids",
      type: "boolean",
      description:
        "rename repeated article titles as the encoders' --unique-ids does (io/squad_ids.ts)",
    },
    { name: "progress", type: "boolean", description: "show progress on stderr (on a terminal)" },
    {
      name: "concurrency",
      type: "int",
      metavar: "N",
      description: "paragraphs in flight (default: 64 per worker)",
    },
    {
      name: "no-simd",
      type: "boolean",
      description: "score in plain float64 loops instead of WebAssembly SIMD (same results)",
    },
    {
      name: "workers",
      type: "int",
      metavar: "N",
      description:
        "threads reading and scoring paragraphs (default: CPUs, at most 4; none for under 128 paragraphs; 0: none)",
    },
  ],
  examples: [
    "data/dev-v1.1.json.gz out/dumps/context_emb out/dumps/question_emb out/pred.json --sparse",
  ],
} as const satisfies CommandSpec;

if (import.meta.main) {
  // Below this limit a worker thread would make Deno panic: refuse in one line.
  const fds = openFilesProblem(mergeOpenFiles(MERGE_SPEC, Deno.args));
  if (fds !== undefined) {
    const e = new WorkError(fds);
    console.error(`merge: ${e.message}`);
    Deno.exit(exitCodeOf(e));
  }
  // `--help` and bad usage start no worker and load nothing else.
  exitOnHelpOrUsageError(MERGE_SPEC, Deno.args);
  // The workers first: they load while this thread loads Effect and the stage.
  const early = startEarly(MERGE_SPEC, Deno.args);
  const [{ runMain }, { mergeCommand }] = await Promise.all([
    import("./_cli.ts"),
    import("./_merge.ts"),
  ]);
  await runMain(MERGE_SPEC, Deno.args, mergeCommand(early));
}
