/**
 * `search DATA INDEX_DIR QUESTION_EMB PRED.json [--top-k K] [--topk-out
 * topk.ndjson] [--closed] [--exact] [--nprobe N] [--candidates C] [--threads N]`: answers every
 * question of the dataset against
 * every phrase of an index (the stage is `openSearch` in `search/open.ts`,
 * which see).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Option from "effect/Option";
import * as Stream from "effect/Stream";
import { InputError } from "../io/errors.ts";
import { refuseAliases } from "../io/paths.ts";
import { squadQuestions } from "../io/squad.ts";
import { scoreDataset } from "../metrics/evaluate.ts";
import { openScores } from "../metrics/open.ts";
import { DEFAULT_HYBRID_CANDIDATES } from "../search/index/hybrid.ts";
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
      name: "candidates",
      type: "int",
      metavar: "C",
      description: "an ivf-pq index: re-score the C best approximate candidates exactly. " +
        "Dense index: default 0 (the approximate scores). Hybrid index (--dense-dims): " +
        "candidates from the dense block's IVF-PQ re-scored with the full vector, default " +
        `${DEFAULT_HYBRID_CANDIDATES}, at least 1. C below --top-k counts as --top-k`,
    },
    {
      name: "refine",
      type: "int",
      metavar: "R",
      description: "the older name of --candidates",
    },
    {
      name: "threads",
      type: "int",
      metavar: "N",
      description:
        "worker threads: an ivf-pq index's list scans, a dense index's exact screening (default 1; same answers)",
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
  examples: [
    "data/dev-v1.1.json.gz out/index out/dumps/question_emb pred.json " +
    "--top-k 10 --topk-out topk.ndjson",
  ],
} as const satisfies CommandSpec;

/**
 * Where `search` writes its per-question rows: `--rows`, else the
 * prediction file's name with `.json` replaced by `.rows.ndjson` (the rule
 * of `runs/layout.ts`); none when the predictions go to stdout.
 *
 * @example
 * ```ts
 * import { rowsPath } from "./search.ts";
 * if (rowsPath("out/open.json") !== "out/open.rows.ndjson") throw new Error();
 * if (rowsPath("-") !== undefined || rowsPath("-", "r.ndjson") !== "r.ndjson") throw new Error();
 * ```
 */
export function rowsPath(pred: string, flag?: string): string | undefined {
  if (flag !== undefined) return flag;
  if (pred === "-") return undefined;
  return pred.endsWith(".json") ? `${pred.slice(0, -5)}.rows.ndjson` : `${pred}.rows.ndjson`;
}

if (import.meta.main) {
  await runMain(SEARCH_SPEC, Deno.args, (a) => {
    const k = a.flags["top-k"];
    if (k < 1) return Effect.fail(new UsageError(`--top-k must be at least 1, got ${k}`));
    const { nprobe, threads } = a.flags;
    if (threads !== undefined && threads < 1) {
      return Effect.fail(new UsageError(`--threads must be at least 1, got ${threads}`));
    }
    if (nprobe !== undefined && nprobe < 1) {
      return Effect.fail(new UsageError(`--nprobe must be at least 1, got ${nprobe}`));
    }
    if (a.flags.candidates !== undefined && a.flags.refine !== undefined) {
      return Effect.fail(new UsageError("--refine is the older name of --candidates: give one"));
    }
    const candidates = a.flags.candidates ?? a.flags.refine;
    const cname = a.flags.refine !== undefined ? "--refine" : "--candidates";
    if (candidates !== undefined && candidates < 0) {
      return Effect.fail(new UsageError(`${cname} must be at least 0, got ${candidates}`));
    }
    if (a.flags.exact && (nprobe !== undefined || candidates !== undefined)) {
      return Effect.fail(new UsageError(`--exact cannot go with --nprobe or ${cname}`));
    }
    const bar = progress("search");
    const data = a.positional["data.json"];
    const pred = a.positional["pred.json"];
    const topkOut = a.flags["topk-out"];
    const rows = rowsPath(pred, a.flags.rows);
    if (rows !== undefined && (data === "-" || pred === "-")) {
      return Effect.fail(
        new UsageError("per-question rows read the dataset and pred.json again: give files, not -"),
      );
    }
    return Effect.gen(function* () {
      yield* refuseAliases(
        [
          { name: "data.json", path: data },
          { name: "index_dir", path: a.positional["index_dir"], folder: true },
          { name: "question_emb", path: a.positional["question_emb"], folder: true },
        ],
        [
          { name: "pred.json", path: pred },
          { name: "--topk-out", path: topkOut },
          { name: "--rows", path: rows },
        ],
      );
      // Per-question rows need gold answers: without them (a split's question.json), an
      // implicit --rows is skipped with a note; an explicit one is refused before any output.
      const firstWithout = rows === undefined ? undefined : yield* Stream.runHead(
        Stream.filter(
          squadQuestions(data, { context: "optional" }),
          (q) => q.answers === undefined || q.answers.length === 0,
        ),
      );
      let rowsOut = rows;
      if (firstWithout !== undefined && Option.isSome(firstWithout)) {
        const why = `question "${firstWithout.value.id}" has no gold answers`;
        if (a.flags.rows !== undefined) {
          return yield* Effect.fail(
            new InputError({
              file: data,
              where: "",
              message: `${why}: --rows needs them (SQuAD v1.1 scoring)`,
            }),
          );
        }
        console.error(`search: no per-question rows: ${data}: ${why}`);
        rowsOut = undefined;
      }
      const r = yield* openSearch({
        data,
        index: a.positional["index_dir"],
        questionEmb: a.positional["question_emb"],
        predictions: pred,
        topkOut,
        topK: k,
        closed: a.flags.closed,
        uniqueIds: a.flags["unique-ids"],
        exact: a.flags.exact,
        nprobe,
        candidates,
        ...(threads !== undefined ? { threads } : {}),
        simd: !a.flags["no-simd"],
        onProgress: (n) => bar.update(n, "questions"),
      });
      bar.done();
      console.error(
        `search: ${r.answered} of ${r.questions} questions answered over ${r.phrases} phrases`,
      );
      if (rowsOut === undefined) return;
      // The rows come from the one fold of metrics/ (as the eval task's).
      const open = topkOut === undefined ? undefined : yield* openScores({
        data,
        predictions: pred,
        topk: topkOut,
        uniqueIds: a.flags["unique-ids"],
      });
      yield* scoreDataset({
        data,
        predictions: pred,
        perQuestion: rowsOut,
        ...(open !== undefined ? { rowExtra: (id: string) => open.rows.get(id) } : {}),
      });
    });
  });
}
