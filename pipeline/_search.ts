/**
 * The work of `search` (`pipeline/search.ts`, which loads this module only
 * to run: `--help` and bad usage need none of it): the flags' checks, the
 * search (`openSearch`, `search/open/open.ts`) and its scores.
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
import { squadQuestions } from "../io/squad.ts";
import { scoreDataset } from "../metrics/evaluate.ts";
import { openScores } from "../metrics/open.ts";
import { openSearch, type OpenSearchOptions, type OpenSearchResult } from "../search/open/open.ts";
import { type ExactIndex, readIndexPassages } from "../search/index/read.ts";
import { PhraseIndex, PhraseIndexLive } from "../search/open/phrase_index.ts";
import { parseMemoryBudget } from "../search/index/budget.ts";
import { isShardSet } from "../search/index/shards.ts";
import { hybridDenseDims } from "../search/index/ivfpq/hybrid.ts";
import {
  cpuSeconds,
  peakRssBytes,
  recordIndex,
  SEARCH_RECORD_FORMAT,
  searchMode,
  type SearchRecord,
  searchRecordPath,
  searchSettings,
} from "../search/open/record.ts";
import { progress, UsageError } from "./_cli.ts";
import type { ParsedArgs } from "./_args.ts";
import { indexFlagsProblem } from "./_index_flags.ts";
import type { SEARCH_SPEC } from "./search.ts";

/**
 * Where `search` writes its per-question rows: `--rows`, else the
 * prediction file's name with `.json` replaced by `.rows.ndjson` (the rule
 * of `runs/plan/layout.ts`); none when the predictions go to stdout.
 *
 * @example
 * ```ts
 * import { rowsPath } from "./_search.ts";
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
  /** When the command's work began (`performance.now()`). */
  readonly started: number;
}

/** What {@linkcode timedSearch} did: the search's result, the index and the seconds of each. */
interface TimedSearch {
  readonly r: OpenSearchResult;
  /** The index searched; `null` for a folder of shards (searched shard by shard, no record). */
  readonly index: ExactIndex | null;
  readonly load: number;
  readonly search: number;
  /** CPU seconds of the search (the process's, all threads), or `null`. */
  readonly searchCpu: number | null;
}

/** `openSearch` on the index of `indexDir`, opened first: the index's load and the search timed. */
const timedSearch = (indexDir: string, opts: Omit<OpenSearchOptions, "index">) =>
  Effect.gen(function* () {
    const t0 = performance.now();
    if (isShardSet(indexDir)) {
      // A folder of shards: search/open/sharded.ts opens them one at a time.
      const c0 = cpuSeconds();
      const r = yield* openSearch({ ...opts, index: indexDir });
      const c1 = cpuSeconds();
      const search = (performance.now() - t0) / 1000;
      const searchCpu = c0 === null || c1 === null ? null : c1 - c0;
      return { r, index: null, load: 0, search, searchCpu } satisfies TimedSearch;
    }
    const budget = opts.memoryBudget;
    // The index's Layer owns it: its search workers end and it closes after the search.
    const timed = Effect.gen(function* () {
      const { index } = yield* PhraseIndex;
      const t1 = performance.now();
      const c1 = cpuSeconds();
      const r = yield* openSearch({ ...opts, index });
      const search = (performance.now() - t1) / 1000;
      const c2 = cpuSeconds();
      const searchCpu = c1 === null || c2 === null ? null : c2 - c1;
      return { r, index, load: (t1 - t0) / 1000, search, searchCpu } satisfies TimedSearch;
    });
    return yield* Effect.provide(
      timed,
      PhraseIndexLive(indexDir, budget !== undefined ? { memoryBudget: budget } : {}),
    );
  });

/**
 * Writes the search's record (`search/open/record.ts`) beside the predictions,
 * atomically, after every other output: how it searched, its counts, its
 * times and the process's peak memory.
 */
const writeRecord = (
  a: ParsedArgs<typeof SEARCH_SPEC>,
  run: SearchRun,
  rowsOut: string | undefined,
  t: TimedSearch,
) =>
  Effect.tryPromise({
    try: async () => {
      const file = searchRecordPath(run.pred);
      if (file === undefined || t.index === null) return;
      const { r, index } = t;
      const h = index.header;
      const mode = searchMode(h.kind, a.flags.exact, a.flags.closed);
      const record: SearchRecord = {
        format: SEARCH_RECORD_FORMAT,
        mode,
        data: run.data,
        index_dir: a.positional["index_dir"],
        question_emb: a.positional["question_emb"],
        files: { predictions: run.pred, topk: run.topkOut ?? null, rows: rowsOut ?? null },
        index: recordIndex(h),
        ...searchSettings(
          mode,
          hybridDenseDims(h) !== undefined,
          a.flags.nprobe,
          a.flags.candidates ?? a.flags.refine,
        ),
        top_k: run.k,
        threads: a.flags.threads ?? 1,
        memory_budget: budgetOf(a).memoryBudget ?? null,
        questions: r.questions,
        answered: r.answered,
        missing: r.missing,
        seconds: {
          load: round3(t.load),
          search: round3(t.search),
          total: round3((performance.now() - run.started) / 1000),
          search_cpu: t.searchCpu === null ? null : round3(t.searchCpu),
        },
        questions_per_second: t.search > 0 ? round3(r.answered / t.search) : 0,
        peak_rss_bytes: peakRssBytes(),
        cpu_seconds: cpuOf(),
      };
      const w = await openAtomicWriter(file);
      try {
        await w.write(JSON.stringify(record, null, 2) + "\n");
        await w.commit();
      } catch (e) {
        await w.abort();
        throw e;
      }
    },
    catch: (e) =>
      new FileError({
        file: searchRecordPath(run.pred)!,
        message: e instanceof Error ? e.message : String(e),
      }),
  });

const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** The process's CPU seconds, to the millisecond (`null` where unknown). */
const cpuOf = () => {
  const s = cpuSeconds();
  return s === null ? null : round3(s);
};

/** The search options shared by both paths, from the flags. */
function searchOptions(a: ParsedArgs<typeof SEARCH_SPEC>) {
  const candidates = a.flags.candidates ?? a.flags.refine;
  return {
    questionEmb: a.positional["question_emb"],
    closed: a.flags.closed,
    exact: a.flags.exact,
    nprobe: a.flags.nprobe,
    candidates,
    ...(a.flags.threads !== undefined ? { threads: a.flags.threads } : {}),
    ...budgetOf(a),
    simd: !a.flags["no-simd"],
  };
}

/** `{ memoryBudget }` from `--memory-budget` (checked by {@linkcode searchCommand}), or `{}`. */
function budgetOf(a: ParsedArgs<typeof SEARCH_SPEC>): { memoryBudget?: number } {
  const text = a.flags["memory-budget"];
  if (text === undefined) return {};
  const bytes = parseMemoryBudget(text);
  return typeof bytes === "number" ? { memoryBudget: bytes } : {};
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
    const t = yield* timedSearch(a.positional["index_dir"], {
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
    const r = t.r;
    console.error(
      `search: ${r.answered} of ${r.questions} questions answered over ${r.phrases} phrases`,
    );
    if (noGolds !== undefined) {
      console.error(`search: no scores: ${data}: ${noGolds}`);
      return yield* writeRecord(a, run, undefined, t);
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
    if (rows !== undefined) yield* writeRows(rows, s.rows);
    yield* writeRecord(a, run, rows, t);
  });

/** Writes the per-question rows of a corpus search, atomically. */
const writeRows = (rows: string, lines: readonly unknown[]) =>
  Effect.tryPromise({
    try: async () => {
      const w = await openAtomicWriter(rows);
      try {
        await w.write(lines.map((row) => JSON.stringify(row) + "\n").join(""));
        await w.commit();
      } catch (e) {
        await w.abort();
        throw e;
      }
    },
    catch: (e) =>
      new FileError({ file: rows, message: e instanceof Error ? e.message : String(e) }),
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
  const bytes = budget === undefined ? undefined : parseMemoryBudget(budget);
  if (typeof bytes === "string") return Effect.fail(new UsageError(`--memory-budget: ${bytes}`));
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
    const run: SearchRun = { data, pred, topkOut, rows, k, format, started };
    if (!isSquadShaped(format)) return yield* corpusSearch(a, run);
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
    const t = yield* timedSearch(a.positional["index_dir"], {
      data,
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
      ...budgetOf(a),
      simd: !a.flags["no-simd"],
      onProgress: (n) => bar.update(n, "questions"),
    });
    bar.done();
    const r = t.r;
    console.error(
      `search: ${r.answered} of ${r.questions} questions answered over ${r.phrases} phrases`,
    );
    if (rowsOut === undefined) return yield* writeRecord(a, run, undefined, t);
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
    yield* writeRecord(a, run, rowsOut, t);
  });
};
