/**
 * Open search over a sharded index (`search/index/shards.ts`): every shard
 * answers the top k of every question, then an exact k-way merge of the
 * shards' lists gives the top k of the whole corpus.
 *
 * **Why the merge is exact.** A shard's rows are its paragraphs' rows in
 * corpus order, and each paragraph keeps its place in the corpus
 * (`position`). A phrase is ranked by (score, larger first; then position;
 * then phrase index), which is the unsharded tie rule (the first phrase in
 * paragraph order, phrase order). Every phrase of the global top k is in
 * the top k of its own shard, so the merge of the shards' top k by that
 * order is the global top k, score for score and tie for tie:
 *
 * - **Exact search**: scores are merge's correctly rounded scores, which do
 *   not depend on which rows are scored together, so `pred.json` and the
 *   top-k records are byte for byte the unsharded search's.
 * - **IVF-PQ, `candidates` 0** (the approximate scores): the shards share
 *   the corpus's quantizer (`quantizer.ts`), so a question probes the same
 *   lists in every shard, each shard's lists are the unsharded lists'
 *   rows of that shard, and a row's approximate score is the same float32
 *   sum: the same top k, byte for byte.
 * - **IVF-PQ, `candidates` C > 0** (and hybrid indexes): each shard
 *   re-scores its own C best candidates, a superset of the unsharded
 *   search's C (the global C best are among the shards' C best), so rank
 *   by rank the merged scores are at least the unsharded ones, and a
 *   question whose exact best phrase the unsharded search finds is answered
 *   with it here too (recall at least the unsharded recall).
 *
 * **One process** ({@linkcode shardedOpenSearch}): the shards are opened
 * one at a time (one shard's vectors in memory; with `memoryBudget`, each
 * shard read from disk on demand within it, `disk.ts`), the questions read again
 * for each, and the running top k of every question kept (questions × k
 * hits). **As a run** (`runs/plan/plan.ts`): a task per shard
 * ({@linkcode searchShard}: the shard's top k of every question, with each
 * phrase's position, in a hits file), then one merge task
 * ({@linkcode mergeShardHits}) that writes the same `pred.json` and top-k
 * records from the N hits files without opening the index.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { dumpStem } from "../../io/dump/names.ts";
import { openDumpSync } from "../../io/dump/reader_sync.ts";
import type { DumpSourceSync } from "../../io/dump/reader_sync.ts";
import { FileError, InputError } from "../../io/errors.ts";
import type { Matrix } from "../../io/matrix.ts";
import { pyStringLiteral } from "../../io/pyjson.ts";
import { type AtomicWriter, openAtomicWriter } from "../../io/fs.ts";
import { readLinesStrict } from "../../io/text.ts";
import { statRegularFile } from "../../io/regular.ts";
import { defaultNprobe } from "../index/defaults.ts";
import { offsetsAt, openIndexSync, phraseAt, readIndexHeader } from "../index/read.ts";
import type { ExactIndex } from "../index/read.ts";
import type { TopK } from "../index/exact/score.ts";
import { openShardSet, type ShardSet } from "../index/shards.ts";
import { releaseIndex } from "./phrase_index.ts";
import {
  type Hit,
  type OpenSearchError,
  type OpenSearchOptions,
  type OpenSearchResult,
  Pace,
  questionParagraphs,
  questionProblem,
  scoreOpenBlock,
  searchMode,
  topkLines,
} from "./query.ts";

/** The search options without the outputs. */
type SearchOptions = Omit<OpenSearchOptions, "predictions" | "topkOut">;

/** One ranked phrase of a shard, with what orders it across shards. */
export interface ShardHit {
  /** Its paragraph's place in the corpus. */
  readonly position: number;
  /** Phrase index in its paragraph. */
  readonly phraseIndex: number;
  /** Score (exact, or approximate for IVF-PQ without candidates). */
  readonly score: number;
  /** Paragraph id. */
  readonly paragraph: string;
  /** The phrase. */
  readonly phrase: string;
  /** Code point offsets, when the index has them. */
  readonly start?: number;
  /** End offset (exclusive). */
  readonly end?: number;
}

/**
 * The order of hits across shards: larger score first, then the earlier
 * paragraph of the corpus, then the earlier phrase (the unsharded tie rule).
 *
 * @example
 * ```ts
 * import { compareHits } from "./sharded.ts";
 * const h = (score: number, position: number, phraseIndex: number) =>
 *   ({ score, position, phraseIndex, paragraph: "p", phrase: "x" });
 * const sorted = [h(1, 5, 0), h(2, 9, 0), h(1, 3, 7), h(1, 3, 2)].sort(compareHits);
 * if (sorted.map((x) => `${x.score}@${x.position}.${x.phraseIndex}`).join() !== "2@9.0,1@3.2,1@3.7,1@5.0") {
 *   throw new Error();
 * }
 * ```
 */
export function compareHits(a: ShardHit, b: ShardHit): number {
  if (a.score !== b.score) return a.score > b.score ? -1 : 1;
  return a.position - b.position || a.phraseIndex - b.phraseIndex;
}

/**
 * The best `k` of two lists each in {@linkcode compareHits} order: a
 * two-way merge (k-way over the shards, one shard at a time).
 *
 * @example
 * ```ts
 * import { mergeHits } from "./sharded.ts";
 * const h = (score: number, position: number) =>
 *   ({ score, position, phraseIndex: 0, paragraph: `p${position}`, phrase: "x" });
 * const m = mergeHits([h(3, 1), h(1, 4)], [h(3, 0), h(2, 2)], 3);
 * if (m.map((x) => x.position).join() !== "0,1,2") throw new Error();
 * ```
 */
export function mergeHits(
  a: readonly ShardHit[],
  b: readonly ShardHit[],
  k: number,
): ShardHit[] {
  const out: ShardHit[] = [];
  let i = 0, j = 0;
  while (out.length < k && (i < a.length || j < b.length)) {
    if (j >= b.length || (i < a.length && compareHits(a[i], b[j]) <= 0)) out.push(a[i++]);
    else out.push(b[j++]);
  }
  return out;
}

/** A shard's hits of one question's {@linkcode TopK} (rows of a shard index). */
function shardHitsOf(index: ExactIndex, top: TopK): ShardHit[] {
  const pos = index.positions!;
  return top.rows.map((row, r) => {
    let lo = 0, hi = index.ids.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (index.starts[mid] <= row) lo = mid;
      else hi = mid - 1;
    }
    const hit: ShardHit = {
      position: pos[lo],
      phraseIndex: row - index.starts[lo],
      score: top.scores[r],
      paragraph: index.ids[lo],
      phrase: phraseAt(index, row),
    };
    const off = offsetsAt(index, row);
    return off !== undefined ? { ...hit, start: off[0], end: off[1] } : hit;
  });
}

/** The hits as `Hit`s ranked from 1 (`row` -1: a sharded index has no global rows). */
const ranked = (hits: readonly ShardHit[]): Hit[] =>
  hits.map((h, r) => ({
    rank: r + 1,
    paragraph: h.paragraph,
    phraseIndex: h.phraseIndex,
    phrase: h.phrase,
    score: h.score,
    row: -1,
    ...(h.start !== undefined ? { start: h.start, end: h.end } : {}),
  }));

const asError = (file: string) => (e: unknown): InputError | FileError =>
  e instanceof InputError || e instanceof FileError
    ? e
    : new FileError({ file, message: e instanceof Error ? e.message : String(e) });

const QUESTION_BLOCK = 256;

/** The Effect's interruption, or the caller's signal. */
const either = (a: AbortSignal, b: AbortSignal | undefined) =>
  b === undefined ? a : AbortSignal.any([a, b]);

/**
 * One pass of the questions over one shard: `onHits(j, hits)` for every
 * question `j` that has a vector (in question order), and `onMissing` for
 * each that has none. An empty shard (no phrases) is not opened: its
 * questions get no hits.
 */
async function shardPass(
  set: ShardSet,
  s: number,
  qd: DumpSourceSync,
  qids: readonly string[],
  q2c: ReadonlyMap<string, string>,
  opts: SearchOptions,
  ivf: boolean,
  onHits: (j: number, hits: ShardHit[]) => void,
  onMissing: (line: string) => void,
  onBlock: (done: number) => void,
): Promise<void> {
  const entry = set.shards[s];
  const empty = entry.header.phrases === 0;
  const index = empty ? undefined : openIndexSync(
    entry.dir,
    opts.memoryBudget !== undefined ? { memoryBudget: opts.memoryBudget } : {},
  );
  const shape = index ?? { dir: entry.dir, header: entry.header };
  // At most the corpus's phrases a question (the merged lists keep no more).
  const scan = { ...opts, topK: Math.max(1, Math.min(opts.topK ?? 10, set.phrases)) };
  const pace = new Pace(opts.signal);
  try {
    const paragraphOf = new Map(index?.ids.map((id, p) => [id, p]) ?? []);
    for (let b = 0; b < qids.length; b += QUESTION_BLOCK) {
      const js: number[] = [], vectors: Matrix[] = [], own: number[] = [];
      for (let j = b; j < Math.min(qids.length, b + QUESTION_BLOCK); j++) {
        const qid = qids[j];
        const v = qd.readQuestion(qid);
        if ("missing" in v) {
          onMissing(`Missing ${v.missing}`);
          continue;
        }
        const why = questionProblem(shape, v);
        if (why !== undefined) {
          throw new InputError({ file: qd.label(`${dumpStem(qid)}.npz`), where: "", message: why });
        }
        js.push(j);
        vectors.push(v);
        own.push(paragraphOf.get(q2c.get(qid)!) ?? -1);
      }
      if (index === undefined || vectors.length === 0) {
        for (const j of js) onHits(j, []);
      } else {
        const tops = await scoreOpenBlock(index, vectors, scan, ivf, own);
        // Phrase texts read from disk (a memory budget) take a while too.
        for (const [x, j] of js.entries()) {
          await pace.tick();
          onHits(j, shardHitsOf(index, tops[x]));
        }
      }
      onBlock(Math.min(qids.length, b + QUESTION_BLOCK));
    }
  } finally {
    if (index !== undefined) releaseIndex(index);
  }
}

/** The checked shards of `dir`, and whether the search is approximate. */
const openSet = (dir: string, opts: SearchOptions) =>
  Effect.gen(function* () {
    const set = yield* Effect.try({
      try: () => openShardSet(dir, readIndexHeader),
      catch: asError(dir),
    });
    if (set.phrases === 0) {
      return yield* Effect.fail(
        new InputError({ file: set.dir, where: "", message: "the shards hold no phrases" }),
      );
    }
    const ivf = yield* searchMode({ dir: set.dir, header: set.shards[0].header }, opts);
    return { set, ivf };
  });

/** Writes the predictions and top-k records of every question's merged hits (in question order). */
async function writeMerged(
  qids: readonly string[],
  best: readonly (readonly ShardHit[] | undefined)[],
  pred: AtomicWriter,
  topk: AtomicWriter | undefined,
): Promise<number> {
  const out = new MergedWriter(pred, topk);
  for (let b = 0; b < qids.length; b += QUESTION_BLOCK) {
    await out.block(qids.slice(b, b + QUESTION_BLOCK), best.slice(b, b + QUESTION_BLOCK));
  }
  return await out.end();
}

/**
 * The predictions and top-k records of merged hits, written a block of
 * questions at a time (in question order), then committed: the answered
 * questions counted.
 */
class MergedWriter {
  #answered = 0;
  #first = true;
  /** The questions written so far. */
  questions = 0;

  constructor(readonly pred: AtomicWriter, readonly topk: AtomicWriter | undefined) {}

  /** Writes questions `qids` and their merged hits (`undefined` or none: not answered). */
  async block(
    qids: readonly string[],
    best: readonly (readonly ShardHit[] | undefined)[],
  ): Promise<void> {
    let text = "", lines = "";
    for (let j = 0; j < qids.length; j++) {
      const hits = best[j];
      if (hits === undefined || hits.length === 0) continue;
      this.#answered++;
      text += `${this.#first ? "{" : ", "}${pyStringLiteral(qids[j])}: ${
        pyStringLiteral(hits[0].phrase)
      }`;
      this.#first = false;
      if (this.topk !== undefined) lines += topkLines(qids[j], ranked(hits));
    }
    this.questions += qids.length;
    if (text !== "") await this.pred.write(text);
    if (lines !== "") await this.topk!.write(lines);
  }

  /** Closes the predictions' object and commits both files; the questions answered. */
  async end(): Promise<number> {
    await this.pred.write(this.#first ? "{}" : "}");
    await this.topk?.commit();
    await this.pred.commit();
    return this.#answered;
  }
}

/** Opens the predictions' and top-k records' atomic writers (aborting both on failure). */
async function openWriters(
  predictions: string,
  topkOut: string | undefined,
): Promise<{ pred: AtomicWriter; topk: AtomicWriter | undefined }> {
  const writers: AtomicWriter[] = [];
  try {
    writers.push(await openAtomicWriter(predictions));
    if (topkOut !== undefined) writers.push(await openAtomicWriter(topkOut));
  } catch (e) {
    for (const w of writers) await w.abort();
    throw e;
  }
  return { pred: writers[0], topk: writers[1] };
}

/**
 * {@linkcode openSearch} (`open.ts`) over the folder of shards
 * `opts.index`, in one process (see the module notes): the same options,
 * outputs and result; `Missing` lines are printed once.
 */
export const shardedOpenSearch = (
  opts: OpenSearchOptions & { readonly index: string },
): Effect.Effect<OpenSearchResult, OpenSearchError> =>
  Effect.gen(function* () {
    const { set, ivf } = yield* openSet(opts.index, opts);
    const q2c = yield* questionParagraphs(opts);
    const onMissing = opts.onMissing ?? ((line: string) => console.error(line));
    const sparse = set.shards[0].header.vectors === "csr";
    const k = Math.max(1, Math.min(opts.topK ?? 10, set.phrases));
    return yield* Effect.acquireUseRelease(
      Effect.tryPromise({
        try: async () => {
          const qd = openDumpSync(opts.questionEmb, { sparse });
          try {
            return { qd, ...(await openWriters(opts.predictions, opts.topkOut)) };
          } catch (e) {
            qd.close();
            throw e;
          }
        },
        catch: asError(opts.predictions),
      }),
      ({ qd, pred, topk }) =>
        Effect.tryPromise({
          try: async (signal) => {
            const qids = [...q2c.keys()];
            const best: (ShardHit[] | undefined)[] = new Array(qids.length);
            let missing = 0;
            const n = set.count;
            for (let s = 0; s < n; s++) {
              await shardPass(
                set,
                s,
                qd,
                qids,
                q2c,
                { ...opts, signal: either(signal, opts.signal) },
                ivf,
                (j, hits) => {
                  best[j] = mergeHits(best[j] ?? [], hits, k);
                },
                (line) => {
                  // Every shard sees the same missing vectors: said once.
                  if (s > 0) return;
                  missing++;
                  onMissing(line);
                },
                (done) => opts.onProgress?.(Math.floor((s * qids.length + done) / n)),
              );
            }
            const answered = await writeMerged(qids, best, pred, topk);
            return { questions: qids.length, answered, missing, phrases: set.phrases };
          },
          catch: asError(opts.predictions),
        }),
      ({ qd, pred, topk }) =>
        Effect.promise(async () => {
          qd.close();
          await pred.abort();
          await topk?.abort();
        }),
    );
  });

/** The `format` tag of a shard's hits file. */
export const SHARD_HITS_FORMAT = "phraseval-shard-hits";

/** The first line of a shard's hits file. */
interface HitsHeader {
  readonly format: string;
  readonly version: number;
  readonly shard: number;
  readonly count: number;
  readonly corpus_sha256: string;
  readonly top_k: number;
  readonly search: Record<string, unknown>;
  readonly questions: number;
}

/** Options of {@linkcode searchShard}. */
export interface SearchShardOptions extends Omit<OpenSearchOptions, "predictions" | "topkOut"> {
  /** The folder of shards. */
  readonly index: string;
  /** The shard searched. */
  readonly shard: number;
  /** The hits file to write. */
  readonly out: string;
}

/**
 * One shard's part of a sharded search (a run's per-shard task): the
 * shard's top k of every question with a vector, written atomically to
 * `opts.out` as NDJSON: a header line (`format`, `version`, `shard`,
 * `count`, `corpus_sha256`, `top_k`, `search`: the options that shape the
 * hits, `questions`), then one line per question with a vector, in
 * question order, `{"id": ..., "hits": [[position, phrase_index, score,
 * paragraph, phrase(, start, end)], ...]}`. The whole set of shards is
 * checked first (as {@linkcode shardedOpenSearch} checks it).
 */
export const searchShard = (
  opts: SearchShardOptions,
): Effect.Effect<{ questions: number; hits: number; missing: number }, OpenSearchError> =>
  Effect.gen(function* () {
    const { set, ivf } = yield* openSet(opts.index, opts);
    if (!Number.isSafeInteger(opts.shard) || opts.shard < 0 || opts.shard >= set.count) {
      return yield* Effect.fail(
        new InputError({
          file: set.dir,
          where: "",
          message: `has ${set.count} shards; there is no shard ${opts.shard}`,
        }),
      );
    }
    const q2c = yield* questionParagraphs(opts);
    const onMissing = opts.onMissing ?? ((line: string) => console.error(line));
    const sparse = set.shards[0].header.vectors === "csr";
    const k = Math.max(1, Math.min(opts.topK ?? 10, set.phrases));
    return yield* Effect.acquireUseRelease(
      Effect.tryPromise({
        try: async () => {
          const qd = openDumpSync(opts.questionEmb, { sparse });
          try {
            return { qd, w: await openAtomicWriter(opts.out) };
          } catch (e) {
            qd.close();
            throw e;
          }
        },
        catch: asError(opts.out),
      }),
      ({ qd, w }) =>
        Effect.tryPromise({
          try: async (signal) => {
            const qids = [...q2c.keys()];
            const header: HitsHeader = {
              format: SHARD_HITS_FORMAT,
              version: 1,
              shard: opts.shard,
              count: set.count,
              corpus_sha256: set.corpusSha256,
              top_k: k,
              search: searchKey(opts, ivf, set.shards[0].header.parameters.nlist),
              questions: qids.length,
            };
            await w.write(JSON.stringify(header) + "\n");
            let lines = "", missing = 0, hits = 0;
            await shardPass(
              set,
              opts.shard,
              qd,
              qids,
              q2c,
              { ...opts, signal: either(signal, opts.signal) },
              ivf,
              (j, hs) => {
                hits += hs.length;
                lines += JSON.stringify({
                  id: qids[j],
                  hits: hs.map((h) => [
                    h.position,
                    h.phraseIndex,
                    h.score,
                    h.paragraph,
                    h.phrase,
                    ...(h.start !== undefined ? [h.start, h.end] : []),
                  ]),
                }) + "\n";
              },
              (line) => {
                missing++;
                onMissing(line);
              },
              (done) => opts.onProgress?.(done),
            );
            await w.write(lines);
            await w.commit();
            return { questions: qids.length, hits, missing };
          },
          catch: asError(opts.out),
        }),
      ({ qd, w }) =>
        Effect.promise(async () => {
          qd.close();
          await w.abort();
        }),
    );
  });

/** The options that shape a shard's hits (the same in every shard's file of one search). */
function searchKey(opts: SearchOptions, ivf: boolean, nlist: unknown): Record<string, unknown> {
  return {
    mode: opts.closed ? "closed" : ivf ? "ivf-pq" : "exact",
    ...(ivf
      ? {
        nprobe: opts.nprobe ?? defaultNprobe(nlist),
        ...(opts.probeTau !== undefined ? { probe_tau: opts.probeTau } : {}),
        candidates: opts.candidates ?? opts.refine ?? null,
      }
      : {}),
    unique_ids: opts.uniqueIds === true,
  };
}

/** Options of {@linkcode mergeShardHits}. */
export interface MergeShardHitsOptions {
  /** The hits files of every shard (any order). */
  readonly parts: readonly string[];
  /** Where the top-1 predictions go. */
  readonly predictions: string;
  /** Where the top-k NDJSON records go, if anywhere. */
  readonly topkOut?: string;
}

/** Parses one line of a hits file. */
function parseHitsLine(line: string, file: string, n: number): { id: string; hits: ShardHit[] } {
  const fail = (why: string) => new InputError({ file, where: `line ${n}`, message: why });
  let o: { id?: unknown; hits?: unknown };
  try {
    o = JSON.parse(line);
  } catch {
    throw fail("invalid JSON");
  }
  if (typeof o?.id !== "string" || !Array.isArray(o.hits)) throw fail("not a question's hits");
  const hits = o.hits.map((h: unknown) => {
    if (
      !Array.isArray(h) || (h.length !== 5 && h.length !== 7) || !Number.isSafeInteger(h[0]) ||
      !Number.isSafeInteger(h[1]) || typeof h[2] !== "number" || typeof h[3] !== "string" ||
      typeof h[4] !== "string"
    ) throw fail("bad hit");
    const x: ShardHit = {
      position: h[0],
      phraseIndex: h[1],
      score: h[2],
      paragraph: h[3],
      phrase: h[4],
    };
    return h.length === 7 ? { ...x, start: h[5] as number, end: h[6] as number } : x;
  });
  for (let i = 1; i < hits.length; i++) {
    if (compareHits(hits[i - 1], hits[i]) >= 0) throw fail("hits out of order");
  }
  return { id: o.id, hits };
}

/**
 * The merge task of a sharded search: reads the hits file of every shard
 * ({@linkcode searchShard}), checks they are the N shards of one search
 * (one count, every shard once, one corpus, one `top_k` and search, the
 * same questions line by line), and writes `pred.json` and the top-k
 * records exactly as the one-process search does. Any mismatch is one
 * {@linkcode InputError} line; nothing is written then. The hits files are
 * read side by side, a line at a time (`io/text.ts` `readLinesStrict`), and
 * the merged questions written a block at a time: memory is a block, not the
 * files (hits of a large top-k, past JavaScript's 512 MiB string limit).
 */
export const mergeShardHits = (
  opts: MergeShardHitsOptions,
): Effect.Effect<{ questions: number; answered: number }, InputError | FileError> =>
  Effect.tryPromise({
    try: async () => {
      const files: HitsFile[] = [];
      try {
        for (const file of opts.parts) files.push(openHitsFile(file));
        if (files.length === 0) {
          throw new InputError({
            file: opts.predictions,
            where: "",
            message: "no hits files to merge",
          });
        }
        files.sort((a, b) => a.h.shard - b.h.shard);
        const f0 = files[0];
        const same = (a: HitsHeader, b: HitsHeader) =>
          a.count === b.count && a.corpus_sha256 === b.corpus_sha256 && a.top_k === b.top_k &&
          a.questions === b.questions && JSON.stringify(a.search) === JSON.stringify(b.search);
        for (const f of files) {
          if (!same(f.h, f0.h)) {
            throw new InputError({
              file: f.file,
              where: "line 1",
              message:
                `another search than ${f0.file}'s (shard count, corpus, top_k, questions or ` +
                `search options differ)`,
            });
          }
        }
        for (let i = 0; i < f0.h.count; i++) {
          if (files[i]?.h.shard !== i) {
            throw new InputError({
              file: f0.file,
              where: "",
              message: `the hits of shard ${i} of ${f0.h.count} are ${
                files.some((f) => f.h.shard === i) ? "given twice" : "missing"
              }`,
            });
          }
        }
        if (files.length !== f0.h.count) {
          throw new InputError({
            file: f0.file,
            where: "",
            message: `${files.length} hits files for ${f0.h.count} shards`,
          });
        }
        const { pred, topk } = await openWriters(opts.predictions, opts.topkOut);
        try {
          const out = new MergedWriter(pred, topk);
          let qids: string[] = [], best: ShardHit[][] = [];
          for (let n = 0;; n++) {
            const lines = files.map((f) => f.next());
            const ended = lines.map((l) => l === undefined);
            if (ended.some((e) => e !== ended[0])) {
              // One file ended before another: the same counts as when they were read whole.
              const counts = files.map((f, i) => ended[i] ? n : n + 1 + f.rest());
              const i = files.findIndex((_, i) => counts[i] !== counts[0]);
              throw new InputError({
                file: files[i].file,
                where: "",
                message: `${counts[i]} questions but ${f0.file} has ${counts[0]}`,
              });
            }
            if (ended[0]) break;
            let merged: ShardHit[] = [];
            let id = "";
            for (const [i, f] of files.entries()) {
              const r = parseHitsLine(lines[i]!, f.file, n + 2);
              if (f === f0) id = r.id;
              else if (r.id !== id) {
                throw new InputError({
                  file: f.file,
                  where: `line ${n + 2}`,
                  message: `question ${JSON.stringify(r.id)}, but ${f0.file} has ${
                    JSON.stringify(id)
                  }`,
                });
              }
              merged = mergeHits(merged, r.hits, f0.h.top_k);
            }
            qids.push(id);
            best.push(merged);
            if (qids.length === QUESTION_BLOCK) {
              await out.block(qids, best);
              qids = [];
              best = [];
            }
          }
          await out.block(qids, best);
          return { questions: out.questions, answered: await out.end() };
        } finally {
          await pred.abort();
          await topk?.abort();
        }
      } finally {
        for (const f of files) f.close();
      }
    },
    catch: asError(opts.predictions),
  });

/**
 * A shard's hits file open for the merge: its header (line 1) read and
 * checked, then its question lines one at a time ({@linkcode HitsFile.next});
 * the file must end with a newline (else it was cut short).
 */
interface HitsFile {
  readonly file: string;
  readonly h: HitsHeader;
  /** The next question line, or `undefined` at the end (a missing last newline refused). */
  next(): string | undefined;
  /** How many question lines are left (read to the end, for a message). */
  rest(): number;
  close(): void;
}

function openHitsFile(file: string): HitsFile {
  if (statRegularFile(file) === undefined) {
    throw new InputError({
      file,
      where: "",
      message: "missing (its shard's search did not finish)",
    });
  }
  const lines = readLinesStrict(file)[Symbol.iterator]();
  const truncated = () =>
    new InputError({ file, where: "", message: "does not end with a newline (truncated)" });
  // The text after the last newline comes last: "" for a file that ends with one.
  let ahead = lines.next();
  const next = (): string | undefined => {
    if (ahead.done) return undefined;
    const line = ahead.value;
    ahead = lines.next();
    if (ahead.done) {
      if (line !== "") throw truncated();
      return undefined;
    }
    return line;
  };
  const first = next();
  let h: HitsHeader;
  try {
    h = JSON.parse(first ?? "");
  } catch {
    throw new InputError({ file, where: "line 1", message: "not a shard hits file" });
  }
  if (h?.format !== SHARD_HITS_FORMAT || h.version !== 1) {
    throw new InputError({ file, where: "line 1", message: "not a shard hits file" });
  }
  return {
    file,
    h,
    next,
    rest: () => {
      let n = 0;
      while (next() !== undefined) n++;
      return n;
    },
    close: () => void lines.return?.(),
  };
}
