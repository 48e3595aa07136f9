/**
 * Open-domain search over a phrase index: every question of a dataset
 * against every phrase of the index ({@linkcode openSearch}), one question
 * vector ({@linkcode queryIndex}) or one question string through the
 * `QuestionEncoder` service ({@linkcode queryText}).
 *
 * Scoring, and the pieces the sharded search (`search/open/sharded.ts`) shares
 * with this one, are `search/open/query.ts`.
 *
 * **Sharded indexes.** `index` given as a folder of shards
 * (`search/index/shards.ts`) is searched shard by shard and the shards'
 * top k merged (`search/open/sharded.ts`): the same outputs as the unsharded
 * index's for exact search.
 *
 * **Memory.** The index is memory-resident (see `search/index/read.ts`),
 * unless opened with `memoryBudget`: then its vectors, IVF-PQ lists and
 * phrase texts are read from disk on demand within the budget
 * (`search/index/disk.ts`; the same outputs, byte for byte; an exact pass
 * then takes 4,096 questions at a time, each pass reading the vectors
 * once). Otherwise questions are read and answered in blocks of 256, and
 * each block's lines are written before the next is read, so memory beyond
 * the index is the dataset's question → paragraph map and one block; an
 * `ivf-pq` search on N > 1 threads keeps N more blocks under way on its
 * search workers while a block's lines are written (`search/in_order.ts`:
 * the same lines, in the same order), so that no worker waits for this
 * thread's reading and writing.
 *
 * **Outputs.** `predictions`: `{question id: top-1 phrase}` in dataset order,
 * in Python `json.dump` format as merge writes it; `topkOut`: NDJSON, one
 * record per question and rank, `{"id", "rank", "paragraph", "phrase_index",
 * "phrase", "score"}` plus `"start"`/`"end"` (code points) when the index has
 * offsets. Both are written atomically. A question without its `.npz` prints
 * `Missing <path>` (as merge) and is left out.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { dumpStem } from "../../io/dump/names.ts";
import { openDumpSync } from "../../io/dump/reader_sync.ts";
import { FileError, InputError } from "../../io/errors.ts";
import type { Matrix } from "../../io/matrix.ts";
import { pyStringLiteral } from "../../io/pyjson.ts";
import { type AtomicWriter, openAtomicWriter } from "../../io/fs.ts";
import type { ExactIndex } from "../index/read.ts";
import { isShardSet } from "../index/shards.ts";
import { inOrder, inTail } from "../in_order.ts";
import { closeSearchWorkers, PhraseIndex, PhraseIndexLive } from "./phrase_index.ts";
import {
  hitsOf,
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

// The scoring calls other rooms import from here (`query.ts` has them).
export {
  prepareExact,
  queryIndex,
  queryText,
  scoreQuestions,
  scoreQuestionsAsync,
  searchVector,
  searchVectors,
} from "./query.ts";
export type { Hit } from "./query.ts";

const DENSE_BLOCK = 256;
/** Questions a pass of an exact search over an index read on demand (`disk.ts`). */
const DISK_BLOCK = 4096;
const SPARSE_BLOCK = 256;
/** The most hits (questions × k) one pass of the questions holds. */
const BLOCK_HITS = 1 << 20;

const asError = (file: string) => (e: unknown): InputError | FileError =>
  e instanceof InputError || e instanceof FileError
    ? e
    : new FileError({ file, message: e instanceof Error ? e.message : String(e) });

/**
 * Answers every question of `data` from the index (see the module notes).
 */
export const openSearch = (
  opts: OpenSearchOptions,
): Effect.Effect<OpenSearchResult, OpenSearchError> =>
  Effect.gen(function* () {
    if (typeof opts.index === "string" && isShardSet(opts.index)) {
      // A folder of shards: searched shard by shard, the top k merged (`sharded.ts`).
      const { shardedOpenSearch } = yield* Effect.promise(() => import("./sharded.ts"));
      return yield* shardedOpenSearch({ ...opts, index: opts.index });
    }
    if (typeof opts.index !== "string") return yield* searchOpen(opts.index, opts);
    // An index this call opens is its own: its workers end and it closes with the search.
    const budget = opts.memoryBudget;
    const search = Effect.gen(function* () {
      return yield* searchOpen((yield* PhraseIndex).index, opts);
    });
    return yield* Effect.provide(
      search,
      PhraseIndexLive(opts.index, budget !== undefined ? { memoryBudget: budget } : {}),
    );
  });

/** {@linkcode openSearch} on an open index. */
const searchOpen = (
  index: ExactIndex,
  given: OpenSearchOptions,
): Effect.Effect<OpenSearchResult, OpenSearchError> =>
  Effect.gen(function* () {
    // More ranks than phrases keep them all (and no list, heap or scratch sized past them).
    const opts = { ...given, topK: Math.min(given.topK ?? 10, Math.max(1, index.header.phrases)) };
    const ivf = yield* searchMode(index, opts);
    const q2c = yield* questionParagraphs(opts);
    const onMissing = opts.onMissing ?? ((line: string) => console.error(line));
    const paragraphOf = new Map(index.ids.map((id, p) => [id, p]));
    const sparse = index.header.vectors === "csr";
    // Read on demand, an exact pass reads every row from disk: more questions a pass.
    const perPass = sparse
      ? SPARSE_BLOCK
      : index.disk !== undefined && !ivf && opts.closed !== true
      ? DISK_BLOCK
      : DENSE_BLOCK;
    // A pass holds its questions' top k: fewer questions a pass for a large k.
    const block = Math.max(1, Math.min(perPass, Math.floor(BLOCK_HITS / opts.topK)));
    return yield* Effect.acquireUseRelease(
      Effect.tryPromise({
        try: async () => {
          const qd = openDumpSync(opts.questionEmb, { sparse });
          const writers: AtomicWriter[] = [];
          try {
            writers.push(await openAtomicWriter(opts.predictions));
            if (opts.topkOut !== undefined) writers.push(await openAtomicWriter(opts.topkOut));
          } catch (e) {
            qd.close();
            for (const w of writers) await w.abort();
            throw e;
          }
          return { qd, pred: writers[0], topk: writers[1] as AtomicWriter | undefined };
        },
        catch: asError(opts.predictions),
      }),
      ({ qd, pred, topk }) =>
        Effect.tryPromise({
          try: async (signal) => {
            const qids = [...q2c.keys()];
            // The caller's signal, or this Effect's interruption.
            const stop = opts.signal === undefined
              ? signal
              : AbortSignal.any([signal, opts.signal]);
            const pace = new Pace(stop);
            let answered = 0, missing = 0, first = true;
            // On N > 1 search workers N blocks are under way while one is written (the same
            // lines in the same order); otherwise (and read on demand within a memory budget,
            // searched in this thread) one block at a time.
            const workers = ivf && index.disk === undefined && (opts.threads ?? 1) > 1;
            const ahead = workers ? Math.floor(opts.threads!) : 0;
            const count = Math.ceil(qids.length / block);
            // Block i's questions read and handed to the scoring (which may run on search
            // workers while this thread writes an earlier block's lines).
            const start = (i: number) => {
              const b = i * block;
              const ids: string[] = [], vectors: Matrix[] = [], own: number[] = [];
              for (const qid of qids.slice(b, b + block)) {
                const v = qd.readQuestion(qid);
                if ("missing" in v) {
                  missing++;
                  onMissing(`Missing ${v.missing}`);
                  continue;
                }
                const why = questionProblem(index, v);
                if (why !== undefined) {
                  throw new InputError({
                    file: qd.label(`${dumpStem(qid)}.npz`),
                    where: "",
                    message: why,
                  });
                }
                ids.push(qid);
                vectors.push(v);
                own.push(paragraphOf.get(q2c.get(qid)!) ?? -1);
              }
              // (The last blocks in smaller pieces: the workers run out of work together.)
              const tail = inTail(i, count, ahead);
              return scoreOpenBlock(index, vectors, { ...opts, signal: stop }, ivf, own, tail)
                .then((tops) => ({ ids, tops }));
            };
            await inOrder(
              count,
              ahead,
              start,
              async (i, { ids, tops }) => {
                let text = "", lines = "";
                for (let j = 0; j < ids.length; j++) {
                  // Phrase texts read from disk (a memory budget) take a while too.
                  await pace.tick();
                  // Without top-k records, only the top-1 prediction is written.
                  const hits = hitsOf(index, tops[j], topk === undefined ? 1 : Infinity);
                  if (hits.length === 0) continue;
                  answered++;
                  text += `${first ? "{" : ", "}${pyStringLiteral(ids[j])}: ${
                    pyStringLiteral(hits[0].phrase)
                  }`;
                  first = false;
                  if (topk !== undefined) lines += topkLines(ids[j], hits);
                }
                if (text !== "") await pred.write(text);
                if (lines !== "") await topk!.write(lines);
                opts.onProgress?.(Math.min(qids.length, (i + 1) * block));
              },
            );
            await pred.write(first ? "{}" : "}");
            await topk?.commit();
            await pred.commit();
            return { questions: qids.length, answered, missing, phrases: index.header.phrases };
          },
          catch: asError(opts.predictions),
        }),
      ({ qd, pred, topk }) =>
        Effect.promise(async () => {
          closeSearchWorkers(index);
          qd.close();
          await pred.abort();
          await topk?.abort();
        }),
    );
  });
