/**
 * `search DATA INDEX_DIR QUESTION_EMB PRED.json [--top-k K] [--topk-out
 * topk.ndjson] [--closed] [--exact] [--nprobe N] [--refine R]`: answers every question of the dataset against
 * every phrase of an index (the stage is `openSearch` in `search/open.ts`,
 * which see).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { refuseAliases } from "../io/paths.ts";
import { openSearch } from "../search/open.ts";
import { type CommandSpec, progress, runMain, UsageError } from "./_cli.ts";

/** `search`'s command line. */
export const SEARCH_SPEC = {
  name: "search",
  summary: "Open-domain search: answers each question of the dataset with the phrase of the " +
    "whole index whose vector scores highest with the question vector (exact scores as merge's; " +
    "ties to the first phrase in paragraph order, phrase order). Writes the top-1 predictions " +
    "(Python json.dump format) and, with --topk-out, NDJSON records (id, rank, paragraph, " +
    "phrase_index, phrase, score).",
  args: [
    { name: "data.json", description: "SQuAD dataset (.json, .json.gz, or - for stdin)" },
    { name: "index_dir", description: "the index folder (deno task index)" },
    { name: "question_emb", description: "question dump: a folder or a .zip of one" },
    { name: "pred.json", description: "predictions to write (- for stdout)" },
  ],
  flags: [
    {
      name: "top-k",
      type: "int",
      metavar: "K",
      default: 10,
      description: "ranks kept per question",
    },
    {
      name: "topk-out",
      type: "string",
      metavar: "FILE",
      description: "write the top-k records as NDJSON",
    },
    {
      name: "closed",
      type: "boolean",
      description: "score each question against its own paragraph only (gives merge's answers)",
    },
    {
      name: "exact",
      type: "boolean",
      description: "an ivf-pq index: score every phrase exactly (as an exact index)",
    },
    {
      name: "nprobe",
      type: "int",
      metavar: "N",
      description: "an ivf-pq index: IVF partitions probed (default 10; at most nlist)",
    },
    {
      name: "refine",
      type: "int",
      metavar: "R",
      description: "an ivf-pq index: re-score the R best approximate candidates exactly " +
        "(default 0: approximate scores; R below --top-k counts as --top-k)",
    },
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
  ],
  epilog: "Example:\n  search data/dev-v1.1.json.gz out/index out/dumps/question_emb pred.json " +
    "--top-k 10 --topk-out topk.ndjson",
} as const satisfies CommandSpec;

if (import.meta.main) {
  await runMain(SEARCH_SPEC, Deno.args, (a) => {
    const k = a.flags["top-k"];
    if (k < 1) return Effect.fail(new UsageError(`--top-k must be at least 1, got ${k}`));
    const { nprobe, refine } = a.flags;
    if (nprobe !== undefined && nprobe < 1) {
      return Effect.fail(new UsageError(`--nprobe must be at least 1, got ${nprobe}`));
    }
    if (refine !== undefined && refine < 0) {
      return Effect.fail(new UsageError(`--refine must be at least 0, got ${refine}`));
    }
    if (a.flags.exact && (nprobe !== undefined || refine !== undefined)) {
      return Effect.fail(new UsageError("--exact cannot go with --nprobe or --refine"));
    }
    const bar = progress("search");
    return Effect.andThen(
      refuseAliases(
        [
          { name: "data.json", path: a.positional["data.json"] },
          { name: "index_dir", path: a.positional["index_dir"], folder: true },
          { name: "question_emb", path: a.positional["question_emb"], folder: true },
        ],
        [
          { name: "pred.json", path: a.positional["pred.json"] },
          { name: "--topk-out", path: a.flags["topk-out"] },
        ],
      ),
      Effect.map(
        openSearch({
          data: a.positional["data.json"],
          index: a.positional["index_dir"],
          questionEmb: a.positional["question_emb"],
          predictions: a.positional["pred.json"],
          topkOut: a.flags["topk-out"],
          topK: k,
          closed: a.flags.closed,
          uniqueIds: a.flags["unique-ids"],
          exact: a.flags.exact,
          nprobe,
          refine,
          simd: !a.flags["no-simd"],
          onProgress: (n) => bar.update(n, "questions"),
        }),
        (r) => {
          bar.done();
          console.error(
            `search: ${r.answered} of ${r.questions} questions answered over ${r.phrases} phrases`,
          );
        },
      ),
    );
  });
}
