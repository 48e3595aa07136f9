/**
 * `search DATA INDEX_DIR QUESTION_EMB PRED.json [--top-k K] [--topk-out
 * topk.ndjson] [--closed] [--exact] [--nprobe N] [--candidates C] [--threads N]
 * [--format NAME] [--lang CODE]`: answers every question of the dataset
 * against every phrase of an index (the stage is `openSearch` in
 * `search/open.ts`, which see).
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
 * @module
 */
import * as Effect from "effect/Effect";
import * as Option from "effect/Option";
import * as Stream from "effect/Stream";
import { FileError, InputError } from "../io/errors.ts";
import type { DatasetFormat } from "../io/datasets/detect.ts";
import { isSquadShaped, openDataset, readQuestions } from "../io/datasets/read.ts";
import { refuseAliases } from "../io/paths.ts";
import { openAtomicWriter } from "../io/source.ts";
import { corpusOpenScores, corpusSummary } from "../metrics/open_corpus.ts";
import { readIndexPassages } from "../search/index/read.ts";
import { squadQuestions } from "../io/squad.ts";
import { scoreDataset } from "../metrics/evaluate.ts";
import { openScores } from "../metrics/open.ts";
import { DEFAULT_HYBRID_CANDIDATES } from "../search/index/hybrid.ts";
import { openSearch } from "../search/open.ts";
import { type CommandSpec, progress, runMain, UsageError } from "./_cli.ts";
import type { ParsedArgs } from "./_args.ts";

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

/**
 * The format `search` reads `data` as: the named one, else the detected one
 * (stdin, a file whose start does not tell, and a generic JSONL/CSV file are
 * SQuAD, whose reader names what is wrong).
 */
const searchFormat = (
  data: string,
  named: string | undefined,
): Effect.Effect<DatasetFormat, InputError | FileError | UsageError> =>
  data === "-" && named === undefined
    ? Effect.succeed<DatasetFormat>("squad")
    : Effect.flatMap(openDataset(data, named, true), ([format, src]) =>
      Effect.as(
        Effect.promise(() => src.stream.cancel().catch(() => {})),
        format,
      ));

/** The options of `search` after its checks (see {@linkcode corpusSearch}). */
interface SearchRun {
  readonly data: string;
  readonly pred: string;
  readonly topkOut: string | undefined;
  readonly rows: string | undefined;
  readonly k: number;
  readonly format: DatasetFormat;
}

/** The search options shared by both paths, from the flags. */
function searchOptions(a: ParsedArgs<typeof SEARCH_SPEC>) {
  const candidates = a.flags.candidates ?? a.flags.refine;
  return {
    index: a.positional["index_dir"],
    questionEmb: a.positional["question_emb"],
    closed: a.flags.closed,
    exact: a.flags.exact,
    nprobe: a.flags.nprobe,
    candidates,
    ...(a.flags.threads !== undefined ? { threads: a.flags.threads } : {}),
    simd: !a.flags["no-simd"],
  };
}

/**
 * `search` on a question set that is not SQuAD-shaped: the search, then
 * the open metrics over the corpus (`metrics/open_corpus.ts`) printed as
 * one `search: open: {...}` line and, unless the predictions go to stdout,
 * the per-question rows. A set without gold answers is searched and not
 * scored (a note says so; an explicit `--rows` is refused first).
 */
const corpusSearch = (a: ParsedArgs<typeof SEARCH_SPEC>, run: SearchRun) =>
  Effect.gen(function* () {
    const { data, pred, topkOut, rows } = run;
    const unanswered = yield* Stream.runHead(
      Stream.filter(
        readQuestions(data, { format: run.format, lang: a.flags.lang, answers: "optional" }),
        (q) => q.answers.length === 0,
      ),
    );
    const noGolds = Option.isSome(unanswered)
      ? `question ${JSON.stringify(unanswered.value.id)} has no gold answers`
      : undefined;
    if (noGolds !== undefined && a.flags.rows !== undefined) {
      return yield* Effect.fail(
        new InputError({ file: data, where: "", message: `${noGolds}: --rows needs them` }),
      );
    }
    const bar = progress("search");
    const r = yield* openSearch({
      ...searchOptions(a),
      data,
      format: run.format,
      ...(a.flags.lang !== undefined ? { lang: a.flags.lang } : {}),
      predictions: pred,
      topkOut,
      topK: run.k,
      onProgress: (n) => bar.update(n, "questions"),
    });
    bar.done();
    console.error(
      `search: ${r.answered} of ${r.questions} questions answered over ${r.phrases} phrases`,
    );
    if (noGolds !== undefined) {
      console.error(`search: no scores: ${data}: ${noGolds}`);
      return;
    }
    if (pred === "-") return;
    const passages = topkOut === undefined ? undefined : yield* Effect.try({
      try: () => readIndexPassages(a.positional["index_dir"]),
      catch: (e) =>
        e instanceof InputError || e instanceof FileError
          ? e
          : new FileError({ file: a.positional["index_dir"], message: String(e) }),
    });
    const s = yield* corpusOpenScores({
      data,
      format: run.format,
      lang: a.flags.lang,
      predictions: pred,
      ...(topkOut !== undefined ? { topk: topkOut, ranks: run.k } : {}),
      ...(passages !== undefined
        ? { passages: { text: passages.text, where: passages.file } }
        : {}),
    });
    console.error(`search: open: ${corpusSummary(s)}`);
    if (rows === undefined) return;
    yield* Effect.tryPromise({
      try: async () => {
        const w = await openAtomicWriter(rows);
        try {
          await w.write(s.rows.map((row) => JSON.stringify(row) + "\n").join(""));
          await w.commit();
        } catch (e) {
          await w.abort();
          throw e;
        }
      },
      catch: (e) =>
        new FileError({ file: rows, message: e instanceof Error ? e.message : String(e) }),
    });
  });

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
      const format = yield* searchFormat(data, a.flags.format);
      if (!isSquadShaped(format)) {
        return yield* corpusSearch(a, { data, pred, topkOut, rows, k, format });
      }
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
        ...(a.flags.format !== undefined ? { format: a.flags.format } : {}),
        ...(a.flags.lang !== undefined ? { lang: a.flags.lang } : {}),
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
