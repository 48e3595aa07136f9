/**
 * The search stage as a library call: {@linkcode searchStage} opens an
 * index folder (the {@linkcode PhraseIndexLive} Layer: its workers end and
 * its files close with the search) or a folder of shards (`sharded.ts`,
 * shard by shard), answers every question with {@linkcode openSearch} and
 * times the load, the search and the search's CPU seconds;
 * {@linkcode writeSearchRecord} then writes the search's record
 * (`record.ts`) beside the predictions, atomically. `scoredSearch`
 * (`runs/search.ts`) runs these two and scores the rows in between (with
 * `metrics/`, which this room does not import); `search`
 * (`pipeline/_search.ts`) checks its flags and runs that.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import type { DatasetFormat } from "../../io/datasets/detect.ts";
import { openDataset } from "../../io/datasets/read.ts";
import type { DatasetReadError } from "../../io/datasets/types.ts";
import { FileError } from "../../io/errors.ts";
import { writeTextAtomically } from "../../io/fs.ts";
import type { IndexHeader } from "../index/format.ts";
import { hybridDenseDims } from "../index/ivfpq/hybrid.ts";
import { readIndexHeader } from "../index/read.ts";
import { isShardSet, openShardSet } from "../index/shards.ts";
import { openSearch } from "./open.ts";
import type { OpenSearchError, OpenSearchOptions } from "./query.ts";
import { PhraseIndex, PhraseIndexLive } from "./phrase_index.ts";
import {
  cpuSeconds,
  peakRssBytes,
  recordIndex,
  SEARCH_RECORD_FORMAT,
  searchMode,
  type SearchRecord,
  searchRecordPath,
  searchSettings,
} from "./record.ts";

/**
 * The format `search` reads `data` as (before it searches: a SQuAD-shaped
 * set is scored with rows, any other with the open metrics): the named one,
 * else the detected one (stdin, a file whose start does not tell, and a
 * generic JSONL/CSV file are SQuAD, whose reader names what is wrong).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { searchFormat } from "./stage.ts";
 * const path = await Deno.makeTempFile({ suffix: ".csv" });
 * await Deno.writeTextFile(path, "who wrote hamlet?\t['Shakespeare']\n");
 * if (await Effect.runPromise(searchFormat("-", undefined)) !== "squad") throw new Error();
 * const format = await Effect.runPromise(searchFormat(path, "dpr"));
 * Deno.removeSync(path);
 * if (format !== "dpr") throw new Error(format);
 * ```
 */
export const searchFormat = (
  data: string,
  named: string | undefined,
): Effect.Effect<DatasetFormat, DatasetReadError> =>
  data === "-" && named === undefined
    ? Effect.succeed<DatasetFormat>("squad")
    : Effect.flatMap(openDataset(data, named, true), ([format, src]) =>
      Effect.as(
        Effect.promise(() => src.stream.cancel().catch(() => {})),
        format,
      ));

/**
 * The phrases of the index folder `dir` (or of a folder of its shards, all
 * of them), from its header alone; `undefined` when it cannot be read
 * (opening the index then says what is wrong). `search` keeps at most this
 * many ranks (`--top-k`).
 *
 * @example
 * ```ts
 * import { indexPhraseCount } from "./stage.ts";
 * const dir = Deno.makeTempDirSync();
 * if (indexPhraseCount(dir) !== undefined) throw new Error("an empty folder is not an index");
 * Deno.removeSync(dir);
 * ```
 */
export function indexPhraseCount(dir: string): number | undefined {
  try {
    return isShardSet(dir)
      ? openShardSet(dir, readIndexHeader).phrases
      : readIndexHeader(dir).phrases;
  } catch {
    return undefined;
  }
}

/** Options of {@linkcode searchStage}: {@linkcode openSearch}'s, on an index folder. */
export interface SearchStageOptions extends Omit<OpenSearchOptions, "index" | "topK"> {
  /** The index folder, or a folder of its shards (`index --shards`). */
  readonly indexDir: string;
  /** Ranks kept per question. */
  readonly topK: number;
}

/** What {@linkcode searchStage} did: {@linkcode openSearch}'s counts, the index and the seconds. */
export interface SearchStageResult {
  /** Questions in the question set. */
  readonly questions: number;
  /** Questions answered. */
  readonly answered: number;
  /** `Missing` lines printed. */
  readonly missing: number;
  /** Phrases searched. */
  readonly phrases: number;
  /** The header of the index searched; `null` for a folder of shards (no record). */
  readonly header: IndexHeader | null;
  /** Wall seconds opening the index (0 for shards, opened as they are searched). */
  readonly load: number;
  /** Wall seconds of the search (the predictions and top-k records written). */
  readonly search: number;
  /** CPU seconds of the search (the process's, all threads), or `null`. */
  readonly searchCpu: number | null;
}

/**
 * The search of `search`: opens `opts.indexDir` (an index through
 * {@linkcode PhraseIndexLive}, under `memoryBudget` when given; a folder of
 * shards through {@linkcode openSearch}, which searches them one at a time),
 * answers every question of `opts.data`, writes the predictions and top-k
 * records, and returns the counts with the seconds of the load and the
 * search. The index is closed, and its workers ended, when it returns.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { searchStage } from "./stage.ts";
 * const dir = Deno.makeTempDirSync();
 * const exit = await Effect.runPromiseExit(searchStage({
 *   indexDir: dir, data: `${dir}/d.json`, questionEmb: dir, predictions: "-", topK: 1,
 * }));
 * if (exit._tag !== "Failure") throw new Error("an empty folder is not an index");
 * Deno.removeSync(dir);
 * ```
 */
export const searchStage = (
  opts: SearchStageOptions,
): Effect.Effect<SearchStageResult, OpenSearchError> =>
  Effect.gen(function* () {
    const { indexDir, ...rest } = opts;
    const t0 = performance.now();
    if (isShardSet(indexDir)) {
      // A folder of shards: sharded.ts opens them one at a time.
      const c0 = cpuSeconds();
      const r = yield* openSearch({ ...rest, index: indexDir });
      const c1 = cpuSeconds();
      const search = (performance.now() - t0) / 1000;
      const searchCpu = c0 === null || c1 === null ? null : c1 - c0;
      return { ...r, header: null, load: 0, search, searchCpu } satisfies SearchStageResult;
    }
    const budget = opts.memoryBudget;
    // The index's Layer owns it: its search workers end and it closes after the search.
    const timed = Effect.gen(function* () {
      const { index } = yield* PhraseIndex;
      const t1 = performance.now();
      const c1 = cpuSeconds();
      const r = yield* openSearch({ ...rest, index });
      const search = (performance.now() - t1) / 1000;
      const c2 = cpuSeconds();
      const searchCpu = c1 === null || c2 === null ? null : c2 - c1;
      const load = (t1 - t0) / 1000;
      return { ...r, header: index.header, load, search, searchCpu } satisfies SearchStageResult;
    });
    return yield* Effect.provide(
      timed,
      PhraseIndexLive(indexDir, budget !== undefined ? { memoryBudget: budget } : {}),
    );
  });

/** What {@linkcode writeSearchRecord} records besides the search's result. */
export interface SearchRecordOptions extends
  Pick<
    SearchStageOptions,
    | "data"
    | "indexDir"
    | "questionEmb"
    | "predictions"
    | "topkOut"
    | "topK"
    | "closed"
    | "exact"
    | "nprobe"
    | "probeTau"
    | "candidates"
    | "refine"
    | "threads"
    | "memoryBudget"
  > {
  /** The per-question rows written, if any. */
  readonly rows?: string | undefined;
  /** When the work began (`performance.now()`): `seconds.total` runs from it. */
  readonly started: number;
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** The process's CPU seconds, to the millisecond (`null` where unknown). */
const cpuOf = () => {
  const s = cpuSeconds();
  return s === null ? null : round3(s);
};

/**
 * Writes the search's record (`record.ts`, `<stem>.search.json`) beside
 * the predictions, atomically: how it searched, its counts, its times and
 * the process's peak memory, as of now (write it after every other output).
 * Nothing is written when the predictions went to stdout or the index was
 * a folder of shards (`done.header` is `null`).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { parseSearchRecord } from "./record.ts";
 * import { writeSearchRecord } from "./stage.ts";
 * const dir = Deno.makeTempDirSync();
 * const header = {
 *   kind: "exact", vectors: "dense", dtype: "f32", metric: "ip", d: 2, phrases: 3,
 *   paragraphs: 1, parameters: {}, files: { "vectors.f32": { bytes: 24, sha256: "ab" } },
 * } as never;
 * const done = { questions: 2, answered: 2, missing: 0, phrases: 3, header, load: 0.1,
 *   search: 0.5, searchCpu: null };
 * await Effect.runPromise(writeSearchRecord({
 *   data: "d.json", indexDir: "ix", questionEmb: "q", predictions: `${dir}/p.json`, topK: 5,
 *   started: performance.now(),
 * }, done));
 * const r = parseSearchRecord(Deno.readTextFileSync(`${dir}/p.search.json`), "p.search.json");
 * if (r.mode !== "exact" || r.top_k !== 5 || r.questions_per_second !== 4) throw new Error();
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export const writeSearchRecord = (
  opts: SearchRecordOptions,
  done: SearchStageResult,
): Effect.Effect<void, FileError> =>
  Effect.tryPromise({
    try: async () => {
      const file = searchRecordPath(opts.predictions);
      const h = done.header;
      if (file === undefined || h === null) return;
      const mode = searchMode(h.kind, opts.exact === true, opts.closed === true);
      const record: SearchRecord = {
        format: SEARCH_RECORD_FORMAT,
        mode,
        data: opts.data,
        index_dir: opts.indexDir,
        question_emb: opts.questionEmb,
        files: {
          predictions: opts.predictions,
          topk: opts.topkOut ?? null,
          rows: opts.rows ?? null,
        },
        index: recordIndex(h),
        ...searchSettings(
          mode,
          hybridDenseDims(h) !== undefined,
          opts.nprobe,
          opts.candidates ?? opts.refine,
          h.parameters.nlist,
        ),
        probe_tau: mode === "approximate" ? opts.probeTau ?? null : null,
        top_k: opts.topK,
        threads: opts.threads ?? 1,
        memory_budget: opts.memoryBudget ?? null,
        questions: done.questions,
        answered: done.answered,
        missing: done.missing,
        seconds: {
          load: round3(done.load),
          search: round3(done.search),
          total: round3((performance.now() - opts.started) / 1000),
          search_cpu: done.searchCpu === null ? null : round3(done.searchCpu),
        },
        questions_per_second: done.search > 0 ? round3(done.answered / done.search) : 0,
        peak_rss_bytes: peakRssBytes(),
        cpu_seconds: cpuOf(),
      };
      await writeTextAtomically(file, JSON.stringify(record, null, 2) + "\n");
    },
    catch: (e) =>
      new FileError({
        file: searchRecordPath(opts.predictions)!,
        message: e instanceof Error ? e.message : String(e),
      }),
  });
