/**
 * The work of `search` (`pipeline/search.ts`, which loads this module only
 * to run: `--help` and bad usage need none of it): the flags' checks, the
 * search (`searchStage` and `writeSearchRecord`, `search/open/stage.ts`)
 * and, between the two, its scores with `metrics/` (which `search/` may not
 * import): the rows of a SQuAD-shaped set, the open metrics of a corpus.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Option from "effect/Option";
import * as Stream from "effect/Stream";
import { FileError, InputError } from "../io/errors.ts";
import type { DatasetFormat } from "../io/datasets/detect.ts";
import { isSquadShaped, readQuestions } from "../io/datasets/read.ts";
import { refuseAliases } from "../io/paths.ts";
import { writeTextAtomically } from "../io/fs.ts";
import { corpusOpenScores, corpusSummary } from "../metrics/open_corpus.ts";
import { squadQuestions } from "../io/squad.ts";
import { scoreDataset } from "../metrics/evaluate.ts";
import { openScores } from "../metrics/open.ts";
import { readIndexPassages } from "../search/index/read.ts";
import { parseMemoryBudget } from "../search/index/budget.ts";
import { rowsPath, searchRecordPath } from "../search/open/record.ts";
import {
  searchFormat,
  searchStage,
  type SearchStageOptions,
  writeSearchRecord,
} from "../search/open/stage.ts";
import { progress, UsageError } from "./_cli.ts";
import type { ParsedArgs } from "./_args.ts";
import { indexFlagsProblem } from "./_index_flags.ts";
import type { SEARCH_SPEC } from "./search.ts";

/** The options of `search` after its checks (see {@linkcode corpusSearch}). */
interface SearchRun {
  /** The stage's options (the format as each path gives it). */
  readonly stage: SearchStageOptions;
  /** The per-question rows to write, if any. */
  readonly rows: string | undefined;
  /** The format `data` is read as (`searchFormat`). */
  readonly format: DatasetFormat;
  /** When the command's work began (`performance.now()`). */
  readonly started: number;
}

/** The stage with a progress bar, then its `search: N of M questions answered ...` line. */
const searched = (opts: SearchStageOptions) =>
  Effect.gen(function* () {
    const bar = progress("search");
    const t = yield* searchStage({ ...opts, onProgress: (n) => bar.update(n, "questions") });
    bar.done();
    console.error(
      `search: ${t.answered} of ${t.questions} questions answered over ${t.phrases} phrases`,
    );
    return t;
  });

/**
 * `search` on a question set that is not SQuAD-shaped: the search, then
 * the open metrics over the corpus (`metrics/open_corpus.ts`) printed as
 * one `search: open: {...}` line and, unless the predictions go to stdout,
 * the per-question rows. A set without gold answers is searched and not
 * scored (a note says so; an explicit `--rows` is refused first).
 */
const corpusSearch = (a: ParsedArgs<typeof SEARCH_SPEC>, run: SearchRun) =>
  Effect.gen(function* () {
    const { rows, stage: { data, predictions: pred, topkOut, topK } } = run;
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
    const opts = { ...run.stage, format: run.format };
    const t = yield* searched(opts);
    if (noGolds !== undefined) {
      console.error(`search: no scores: ${data}: ${noGolds}`);
      return yield* writeSearchRecord({ ...opts, started: run.started }, t);
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
      ...(topkOut !== undefined ? { topk: topkOut, ranks: topK } : {}),
      ...(passages !== undefined
        ? { passages: { text: passages.text, where: passages.file } }
        : {}),
    });
    console.error(`search: open: ${corpusSummary(s)}`);
    if (rows !== undefined) yield* writeRows(rows, s.rows);
    yield* writeSearchRecord({ ...opts, rows, started: run.started }, t);
  });

/** Writes the per-question rows of a corpus search, atomically. */
const writeRows = (rows: string, lines: readonly unknown[]) =>
  Effect.tryPromise({
    try: () => writeTextAtomically(rows, lines.map((row) => JSON.stringify(row) + "\n").join("")),
    catch: (e) =>
      new FileError({ file: rows, message: e instanceof Error ? e.message : String(e) }),
  });

/**
 * `search` on a SQuAD-shaped set (SQuAD, XQuAD, MLQA): the search, then the
 * per-question rows with the official v1.1 EM/F1 and, with `--topk-out`,
 * the top-k fields (`metrics/open.ts`). Rows need gold answers: without
 * them (a split's question.json) an implicit `--rows` is skipped with a
 * note; an explicit one is refused before any output.
 */
const squadSearch = (a: ParsedArgs<typeof SEARCH_SPEC>, run: SearchRun) =>
  Effect.gen(function* () {
    const { rows, stage: { data, predictions: pred, topkOut } } = run;
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
        const message = `${why}: --rows needs them (SQuAD v1.1 scoring)`;
        return yield* Effect.fail(new InputError({ file: data, where: "", message }));
      }
      console.error(`search: no per-question rows: ${data}: ${why}`);
      rowsOut = undefined;
    }
    const opts: SearchStageOptions = {
      ...run.stage,
      uniqueIds: a.flags["unique-ids"],
      ...(a.flags.format !== undefined ? { format: a.flags.format } : {}),
    };
    const t = yield* searched(opts);
    const how = { ...opts, started: run.started };
    if (rowsOut === undefined) return yield* writeSearchRecord(how, t);
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
    yield* writeSearchRecord({ ...how, rows: rowsOut }, t);
  });

/** `search`'s program: the predictions, top-k records and rows of the search. */
export const searchCommand = (a: ParsedArgs<typeof SEARCH_SPEC>) => {
  const k = a.flags["top-k"];
  if (k < 1) return Effect.fail(new UsageError(`--top-k must be at least 1, got ${k}`));
  const { nprobe, threads } = a.flags;
  if (threads !== undefined && threads < 1) {
    return Effect.fail(new UsageError(`--threads must be at least 1, got ${threads}`));
  }
  const problem = indexFlagsProblem(a.flags);
  if (problem !== undefined) return Effect.fail(new UsageError(problem));
  const candidates = a.flags.candidates ?? a.flags.refine;
  const cname = a.flags.refine !== undefined ? "--refine" : "--candidates";
  if (a.flags.exact && (nprobe !== undefined || candidates !== undefined)) {
    return Effect.fail(new UsageError(`--exact cannot go with --nprobe or ${cname}`));
  }
  const budget = a.flags["memory-budget"];
  const memoryBudget = budget === undefined ? undefined : parseMemoryBudget(budget);
  if (typeof memoryBudget === "string") {
    return Effect.fail(new UsageError(`--memory-budget: ${memoryBudget}`));
  }
  const data = a.positional["data.json"];
  const pred = a.positional["pred.json"];
  const topkOut = a.flags["topk-out"];
  const rows = rowsPath(pred, a.flags.rows);
  if (rows !== undefined && (data === "-" || pred === "-")) {
    return Effect.fail(
      new UsageError("per-question rows read the dataset and pred.json again: give files, not -"),
    );
  }
  const record = searchRecordPath(pred);
  return Effect.gen(function* () {
    const started = performance.now();
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
        { name: "the search record", path: record },
      ],
    );
    const format = yield* searchFormat(data, a.flags.format);
    const f = a.flags;
    const stage: SearchStageOptions = {
      indexDir: a.positional["index_dir"],
      data,
      questionEmb: a.positional["question_emb"],
      predictions: pred,
      topkOut,
      topK: k,
      closed: f.closed,
      exact: f.exact,
      nprobe,
      candidates,
      ...(threads !== undefined ? { threads } : {}),
      ...(memoryBudget !== undefined ? { memoryBudget } : {}),
      simd: !f["no-simd"],
      ...(f.lang !== undefined ? { lang: f.lang } : {}),
    };
    const run: SearchRun = { stage, rows, format, started };
    if (!isSquadShaped(format)) return yield* corpusSearch(a, run);
    return yield* squadSearch(a, run);
  });
};
