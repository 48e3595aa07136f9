/**
 * The PI-SQuAD merge as an Effect ({@linkcode merge}). For each question of
 * the dataset, the answer is the phrase of its paragraph whose vector has the
 * largest inner product with the question vector (the first one on a tie).
 * Dumps are folders or `.zip`s of them; the predictions may go to `-`
 * (stdout); the dataset is `.json`, `.json.gz` or `-`.
 *
 * Semantics are those of PIQA's `merge.py`, except for ids: a dataset with a
 * repeated question id, or a repeated paragraph id (two articles with one
 * title, which `merge.py` would score with one article's dumps), is bad
 * input; with `uniqueIds` repeated titles are renamed as the encoders
 * rename them (`io/squad_ids.ts`). A missing question `.npz`, paragraph
 * `.npz` or paragraph `.json` prints `Missing <path>` on stderr (in dataset
 * order) and leaves the question unanswered; so does a paragraph without
 * phrases. The predictions are written streaming in Python `json.dump`
 * format, atomically.
 *
 * Unlike `merge.py`, each paragraph's dump is read once and all its questions
 * are scored together (a Q×d block against the N×d phrase matrix in one
 * pass). Paragraphs are read and scored by worker threads (`workers`, one
 * per CPU up to 4), in batches, a few in flight at a time (`concurrency`),
 * so memory stays flat: the dataset's ids, and a few paragraphs. Workers
 * started before the stage loaded (`early`, see `search/merge/early.ts`) read the
 * dataset and plan by themselves; their answers are used once this thread
 * has made the same plan.
 *
 * **Exact scores.** A score is the exact inner product. A fast pass scores
 * every row: in float64 (float32/float16 values and their products are exact
 * in float64), or on WebAssembly SIMD in float32 lanes; every row whose fast
 * score lies within a safe error bound of the best fast score (a bound
 * derived for the arithmetic used) is re-scored exactly (`fsum`, bit for bit
 * Python's `math.fsum` of the float64 products), and the first row with the
 * largest exact score wins. So the fast pass never decides a tie or a
 * near-tie, and the result does not depend on it: the float64 and SIMD
 * passes, and the reference (`bench/reference/merge.py`, float64 with
 * numpy), agree to the last digit. The SIMD kernels are assembled in
 * `search/kernels/wasm_simd.ts` from their instructions (`simd: false`
 * turns them off); the workers run without Effect.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { type DumpError, openDump } from "../../io/dump/reader.ts";
import { FileError, InputError, writeFailure } from "../../io/errors.ts";
import { openSource } from "../../io/source.ts";
import { openAtomicWriter } from "../../io/fs.ts";
import type { SquadArticle, SquadReadError } from "../../io/squad.ts";
import { squadQuestionParagraphs, WHOLE_DATASET_LIMIT } from "../../io/squad_ids.ts";
import type { EarlyPool } from "./early.ts";
import { OrderedOutput } from "./output.ts";
import {
  batchesOf,
  batchSize,
  defaultConcurrency,
  defaultMergeWorkers,
  type MergeUnit,
  planMerge,
  SQUAD_OPTS,
} from "./plan.ts";
import { inThread, workerPool } from "./pool.ts";
import type { MergeWorkerError, Reply, WorkerInit } from "./protocol.ts";
import { fromReply } from "./protocol.ts";
import { simdDumpOptions } from "../kernels/simd.ts";
import { acquireWorkers } from "../scoped_workers.ts";

function addArticle(q2c: Map<string, string>, a: SquadArticle): void {
  for (const p of a.paragraphs) for (const q of p.questions) q2c.set(q.id, p.id);
}

/**
 * The dataset's question → paragraph map (as PIQA's `get_q2c`, with the
 * ids checked: a repeated question or paragraph id is an
 * {@linkcode InputError}; `uniqueIds` renames repeated titles, see
 * `io/squad_ids.ts`). A dataset of up to 256 MiB is parsed in one go (it
 * is small next to the dumps); a larger one, or one with an error, goes
 * through the streaming reader, which names the error's place.
 */
export const readQ2c = (
  path: string,
  uniqueIds = false,
): Effect.Effect<Map<string, string>, SquadReadError> =>
  Effect.flatMap(openSource(path), (src) =>
    Effect.tryPromise({
      try: async () => {
        const reader = src.stream.getReader();
        const chunks: Uint8Array[] = [];
        let total = 0;
        let done = false;
        while (total <= WHOLE_DATASET_LIMIT) {
          const r = await reader.read();
          if (r.done) {
            done = true;
            break;
          }
          chunks.push(r.value);
          total += r.value.byteLength;
        }
        const read = { ...SQUAD_OPTS, ids: uniqueIds ? "unique" as const : SQUAD_OPTS.ids };
        if (done) {
          const bytes = new Uint8Array(total);
          let o = 0;
          for (const c of chunks) {
            bytes.set(c, o);
            o += c.byteLength;
          }
          const q2c = squadQuestionParagraphs(bytes, read);
          if (q2c !== undefined) return q2c;
        }
        const replay = new ReadableStream<Uint8Array>({
          async pull(c) {
            const next = chunks.shift();
            if (next !== undefined) c.enqueue(next);
            else if (done) c.close();
            else {
              const r = await reader.read();
              if (r.done) c.close();
              else c.enqueue(r.value);
            }
          },
          cancel: (reason) => reader.cancel(reason),
        });
        const { squadRecordStream } = await import("../../io/squad.ts");
        const q2c = new Map<string, string>();
        for await (const rec of squadRecordStream({ ...src, stream: replay }, read)) {
          if (rec.kind === "article") addArticle(q2c, rec);
        }
        return q2c;
      },
      catch: (e) =>
        e instanceof InputError || e instanceof FileError ? e : new InputError({
          file: src.name,
          where: "",
          message: e instanceof Error ? e.message : String(e),
        }),
    }));

/** Options of {@linkcode merge}. */
export interface MergeOptions {
  /** The SQuAD dataset (`.json`, `.json.gz`, `-`). */
  readonly data: string;
  /** The context dump: a folder or a `.zip` of one. */
  readonly contextEmb: string;
  /** The question dump: a folder or a `.zip` of one. */
  readonly questionEmb: string;
  /** Where the predictions go (`-` for stdout). */
  readonly predictions: string;
  /** The dumps are scipy sparse (CSR/CSC); otherwise they must be dense. */
  readonly sparse?: boolean;
  /**
   * Worker threads that read and score paragraphs (default: the number of
   * CPUs, at most 4, and none for a context dump folder of under about 128
   * paragraphs, `defaultMergeWorkers`); 0 does everything in this thread.
   * Small datasets (under 16 paragraphs) always run in this thread.
   */
  readonly workers?: number;
  /**
   * Paragraphs in flight: read or scored ahead of the output (default 64 per
   * worker, at least 2). They travel in batches of up to 32.
   */
  readonly concurrency?: number;
  /**
   * Run the fast scoring pass on WebAssembly SIMD where available (default
   * true). Results are identical either way (see the module notes).
   */
  readonly simd?: boolean;
  /**
   * Rename repeated article titles (`io/squad_ids.ts`), as the encoders'
   * `--unique-ids` does, instead of refusing the dataset.
   */
  readonly uniqueIds?: boolean;
  /** Told the questions done so far, and when all are done (a progress line, say). */
  readonly progress?: MergeProgress;
  /**
   * Workers started before the stage loaded ({@linkcode EarlyPool}): adopted
   * when they were started for these options, stopped otherwise.
   */
  readonly early?: EarlyPool;
  /** Receives each `Missing <path>` line (default: printed on stderr). */
  readonly onMissing?: (line: string) => void;
}

/** What {@linkcode merge} did. */
export interface MergeResult {
  /** Distinct question ids in the dataset. */
  readonly questions: number;
  /** Questions answered (entries of pred.json). */
  readonly answered: number;
  /** `Missing` lines printed. */
  readonly missing: number;
  /** Paragraphs (distinct paragraph ids with questions). */
  readonly paragraphs: number;
  /** Worker threads used (0: this thread). */
  readonly workers: number;
}

/** Errors of {@linkcode merge}. */
export type MergeError = SquadReadError | DumpError | InputError | FileError;

/** A sink for {@linkcode MergeOptions.progress}. */
export interface MergeProgress {
  /** `done` questions answered so far. */
  update(done: number, unit: string): void;
  /** All are. */
  done(): void;
}

const writeError = (file: string) => (e: unknown): FileError | InputError =>
  e instanceof InputError || e instanceof FileError ? e : writeFailure(file, e);

/**
 * Merges context and question dumps into predictions (see the module notes).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { merge } from "./merge.ts";
 * const dir = Deno.makeTempDirSync();
 * const r = await Effect.runPromise(merge({
 *   data: "data/dev-v1.1.json.gz",
 *   contextEmb: dir, // no dump files: every question is reported missing
 *   questionEmb: dir,
 *   predictions: `${dir}/pred.json`,
 *   onMissing: () => {},
 * }));
 * if (r.answered !== 0 || r.missing !== 10570) throw new Error(`${r.missing} missing`);
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export const merge = (
  opts: MergeOptions,
): Effect.Effect<MergeResult, MergeError | MergeWorkerError> =>
  Effect.gen(function* () {
    const onMissing = opts.onMissing ?? ((line: string) => console.error(line));
    const dumpOpts = { sparse: opts.sparse === true };
    const simd = opts.simd !== false;
    const requested = Math.max(0, opts.workers ?? defaultMergeWorkers(opts.contextEmb));
    const init: WorkerInit = {
      contextEmb: opts.contextEmb,
      questionEmb: opts.questionEmb,
      sparse: dumpOpts.sparse,
      simd,
    };
    // Workers the command line started before this module loaded, if they fit.
    const earlySize = batchSize(opts.concurrency ?? defaultConcurrency(requested), requested);
    const key = { data: opts.data, ...init, workers: requested, batch: earlySize };
    let early = opts.early;
    if (early !== undefined && (requested === 0 || !early.matches(key))) {
      early.close();
      early = undefined;
    }
    // Every worker this merge holds ends when its scope closes, however it ends.
    return yield* Effect.scoped(
      Effect.gen(function* () {
        if (early !== undefined) yield* acquireWorkers(() => early!);
        // The dumps are opened here even when workers read them: a bad archive fails
        // once, before any work. Workers start loading while the dataset is parsed.
        const c = yield* Effect.acquireRelease(
          openDump(opts.contextEmb, {
            ...dumpOpts,
            reuseBuffers: true,
            ...(simd ? simdDumpOptions() : {}),
          }),
          (c) => c.close(),
        );
        const q = yield* Effect.acquireRelease(openDump(opts.questionEmb, dumpOpts), (q) =>
          q.close());
        const writer = yield* Effect.acquireRelease(
          Effect.tryPromise({
            try: () =>
              openAtomicWriter(opts.predictions),
            catch: writeError(opts.predictions),
          }),
          (w) => Effect.promise(() => w.abort()),
        );
        const local = inThread(c.sync, q.sync, { simd });
        const startPool = () => acquireWorkers(() => workerPool(requested, init, local));
        let pool = requested > 0 && early === undefined ? yield* startPool() : undefined;
        // The early workers' plan (they read the dataset as readQ2c would), or ours.
        let fetch: ((b: number, units: MergeUnit[]) => Promise<Reply>) | undefined;
        const e = early;
        let plan = e === undefined ? null : yield* Effect.promise(() => e.plan());
        if (e !== undefined && plan !== null) fetch = (b) => e.result(b).then(fromReply);
        else if (e !== undefined) {
          e.close();
          pool = yield* startPool();
        }
        plan ??= planMerge(yield* readQ2c(opts.data, opts.uniqueIds === true));
        let batches = batchesOf(plan, earlySize, requested);
        // Small datasets are not worth the workers' start-up.
        const runner = pool === undefined || plan.units.length < 16 ? local : pool;
        const workers = fetch !== undefined || runner !== local ? requested : 0;
        const concurrency = opts.concurrency ?? defaultConcurrency(workers);
        if (fetch === undefined) {
          batches = batchesOf(plan, batchSize(concurrency, workers), workers);
          fetch = (_, units) => runner.run(units);
        }
        const size = batches[0]?.length ?? 1;
        const get = fetch;
        const out = new OrderedOutput(writer, onMissing);
        const bar = opts.progress ?? { update() {}, done() {} };
        let done = 0;
        yield* Stream.fromIterable(batches.map((units, b) => ({ units, b }))).pipe(
          Stream.mapEffect(
            ({ units, b }) =>
              Effect.map(Effect.promise(() => get(b, units)), (r) => ({ units, r })),
            { concurrency: Math.max(1, Math.floor(concurrency / size)) },
          ),
          Stream.runForEach(({ units, r }) =>
            Effect.flatMap(
              Effect.tryPromise({
                try: async () => {
                  for (let k = 0; k < r.ok.length; k++) {
                    await out.add(units[k], r.ok[k]);
                    done += units[k].qids.length;
                  }
                  bar.update(done, "questions");
                },
                catch: writeError(opts.predictions),
              }),
              () => r.err === undefined ? Effect.void : Effect.fail(r.err),
            )
          ),
        );
        yield* Effect.tryPromise({
          try: () => out.finish(),
          catch: writeError(opts.predictions),
        });
        bar.done();
        return {
          questions: plan.questions,
          answered: out.answered,
          missing: out.missing,
          paragraphs: plan.units.length,
          workers,
        } satisfies MergeResult;
      }),
    );
  });
