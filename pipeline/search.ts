/**
 * `search DATA INDEX_DIR QUESTION_EMB PRED.json [--top-k K] [--topk-out
 * topk.ndjson] [--closed] [--exact] [--nprobe N] [--probe-tau T] [--candidates C] [--threads N]
 * [--format NAME] [--lang CODE]`: answers every question of the dataset
 * against every phrase of an index (the stage is `searchStage` in
 * `search/open/stage.ts`, over `openSearch`, which see). `INDEX_DIR` may be a folder of shards
 * (`index --shards`): searched shard by shard and merged exactly
 * (`search/open/sharded.ts`).
 *
 * A SQuAD-shaped dataset (SQuAD, XQuAD, MLQA) is scored as before: the
 * per-question rows with the official v1.1 EM/F1 and, with `--topk-out`,
 * the top-k fields (`metrics/open.ts`). Any other question set (DPR's
 * CSV/TSV, CuratedTREC, NQ-open, MRQA, ...; `--format`, `--lang` as
 * `evaluate`'s) is scored with the open metrics (`metrics/open_corpus.ts`):
 * top-1 EM/F1 (the best over the answers; regex answers as DPR's regex
 * mode) and, with `--topk-out`, top-k EM/F1, MRR and DPR's top-k passage
 * accuracy over the index's passage texts, printed on stderr as one
 * `search: open: {...}` JSON line, the per-question rows beside
 * `pred.json`.
 *
 * Every search but one to stdout ends by writing its record beside the
 * predictions, `<stem>.search.json` (`search/open/record.ts`, written by
 * `writeSearchRecord`): exact or
 * approximate, nprobe and candidates, the index's shape and bytes, the
 * questions, the seconds and questions per second, the peak RSS
 * (`report --search-error` reads it).
 *
 * This file is the command line (`--help` loads nothing else); the work,
 * `pipeline/_search.ts`, loads with `import()` only to run.
 *
 * @module
 */
import { type CommandSpec, exitOnHelpOrUsageError } from "./_args.ts";
import {
  CANDIDATES_FLAG,
  EXACT_FLAG,
  MEMORY_BUDGET_FLAG,
  NPROBE_FLAG,
  PROBE_TAU_FLAG,
  REFINE_FLAG,
} from "./_index_flags.ts";
import { DEFAULT_TOP_K, MAX_SEARCH_THREADS } from "../search/index/defaults.ts";

/** `search`'s command line. */
export const SEARCH_SPEC = {
  name: "search",
  summary: "Open-domain search: answers each question of the dataset with the phrase of the " +
    "whole index whose vector scores highest with the question vector (exact scores as merge's; " +
    "ties to the first phrase in paragraph order, phrase order). Writes the top-1 predictions " +
    "(Python json.dump format) and, with --topk-out, NDJSON records (id, rank, paragraph, " +
    "phrase_index, phrase, score), then the search's record beside the predictions " +
    "(<stem>.search.json: exact or approximate, nprobe, probe_tau, candidates, index bytes, seconds, q/s, " +
    "peak RSS).",
  args: [
    { name: "data.json", description: "SQuAD dataset (.json, .json.gz, or - for stdin)" },
    {
      name: "index_dir",
      description: "the index folder (deno task index), or a folder of its shards " +
        "(shard-0-of-N ... shard-(N-1)-of-N: searched shard by shard, merged exactly)",
    },
    { name: "question_emb", description: "question dump: a folder or a .zip of one" },
    { name: "pred.json", description: "predictions to write (- for stdout)" },
  ],
  flags: [
    {
      name: "top-k",
      type: "int",
      metavar: "K",
      default: DEFAULT_TOP_K,
      description: "ranks kept per question (at most the index's phrases: a larger K keeps " +
        "them all, with a note on stderr)",
    },
    {
      name: "topk-out",
      type: "string",
      metavar: "FILE",
      description: "write the top-k records as NDJSON",
    },
    {
      name: "rows",
      type: "string",
      metavar: "FILE",
      description: "per-question rows (NDJSON: id, prediction, golds, em, f1, and the top-k " +
        "fields with --topk-out); default: next to pred.json (<stem>.rows.ndjson); none when pred.json is -",
    },
    {
      name: "closed",
      type: "boolean",
      description: "score each question against its own paragraph only (gives merge's answers)",
    },
    EXACT_FLAG,
    NPROBE_FLAG,
    PROBE_TAU_FLAG,
    CANDIDATES_FLAG,
    REFINE_FLAG,
    {
      name: "threads",
      type: "int",
      metavar: "N",
      description: "worker threads: an ivf-pq index's list scans, a dense index's exact " +
        `screening (default 1, at most ${MAX_SEARCH_THREADS}; same answers)`,
    },
    MEMORY_BUDGET_FLAG,
    {
      name: "unique-ids",
      type: "boolean",
      description: "rename repeated article titles as the encoders' --unique-ids does",
    },
    {
      name: "no-simd",
      type: "boolean",
      description: "score in plain float64 loops instead of WebAssembly SIMD (same results)",
    },
    {
      name: "format",
      type: "string",
      metavar: "NAME",
      description:
        "the question set's format (default: detected; stdin: SQuAD), as evaluate's: squad, squad2, xquad, mlqa, mrqa, dpr, trec, open (open-domain scores and, with --topk-out, DPR top-k passage accuracy)",
    },
    {
      name: "lang",
      type: "string",
      metavar: "CODE",
      description: "xquad/mlqa: the language (default: from the file name, e.g. xquad.de.json)",
    },
  ],
  examples: [
    "data/dev-v1.1.json.gz out/index out/dumps/question_emb pred.json " +
    "--top-k 10 --topk-out topk.ndjson",
    "nq-test.qa.csv out/index out/dumps/question_emb pred.json --top-k 100 --topk-out topk.ndjson",
  ],
} as const satisfies CommandSpec;

if (import.meta.main) {
  // `--help` and bad usage load nothing else; the search's modules load only to run.
  exitOnHelpOrUsageError(SEARCH_SPEC, Deno.args);
  const [{ runMain }, { searchCommand }] = await Promise.all([
    import("./_cli.ts"),
    import("./_search.ts"),
  ]);
  await runMain(SEARCH_SPEC, Deno.args, searchCommand);
}
