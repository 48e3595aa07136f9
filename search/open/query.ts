/**
 * Questions scored against a phrase index: one question vector
 * ({@linkcode queryIndex}), several ({@linkcode searchVectors}), or one
 * question string through the `QuestionEncoder` service
 * ({@linkcode queryText}); and the pieces the open search over a dataset
 * (`openSearch` of `search/open/open.ts`) and its sharded form
 * (`search/open/sharded.ts`) share: their options and results, the
 * question set's paragraphs ({@linkcode questionParagraphs}), the search
 * mode ({@linkcode searchMode}), a block of questions scored
 * ({@linkcode scoreOpenBlock}) and the top-k records ({@linkcode topkLines}).
 *
 * Scoring is `search/index/exact/score.ts` (and `sparse_scorer.ts`): merge's exact scores (a fast pass on
 * the SIMD kernels, rows near the k-th best re-scored with `fsum`), ties to
 * the first phrase in (paragraph order, phrase order). With `closed`, each
 * question is scored against its own paragraph only: then the top phrase is
 * exactly merge's answer. An `ivf-pq` index is searched approximately
 * unless `exact` (or `closed`) is asked: a dense one by
 * `search/index/ivfpq/ivfpq.ts` (`nprobe` partitions; `candidates` approximate
 * candidates re-scored exactly, default 0: the approximate scores), a
 * hybrid one (CSR vectors with a dense block, `parameters.dense_dims`)
 * dense-first by `search/index/ivfpq/hybrid.ts` (`nprobe` partitions of the dense
 * block's IVF-PQ, then the best `candidates` rows, default 1000, re-scored
 * exactly with the full vector: `--exact`'s scores and tie rule). `refine`
 * is the older name of `candidates` (either may be given; `candidates` wins).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { isQuestionShape } from "../../io/dump/checks.ts";
import { type FileError, InputError, type UsageError } from "../../io/errors.ts";
import { isSquadShaped, openDataset, questionsOfSource } from "../../io/datasets/read.ts";
import type { CsrMatrix, Matrix } from "../../io/matrix.ts";
import type { SquadReadError } from "../../io/squad.ts";
import { type EncoderError, QuestionEncoder } from "../../encoders/types.ts";
import { asFloat32 } from "../dense_f64.ts";
import { readQ2c } from "../merge/merge.ts";
import { type ExactIndex, offsetsAt, paragraphOfRow, phraseAt } from "../index/read.ts";
import { nprobeProblem, probeTauProblem } from "../index/ivfpq/ivfpq.ts";
import { scoreIvf } from "../index/ivfpq/ivf_search.ts";
import { defaultNprobe } from "../index/defaults.ts";
import {
  I8NonFinite,
  i8RowsOf,
  type I8Source,
  scoreI8,
  scoreI8Threads,
} from "../kernels/i8_pool.ts";
import {
  candidatesProblem,
  DEFAULT_HYBRID_CANDIDATES,
  hybridDenseDims,
  scoreHybrid,
} from "../index/ivfpq/hybrid.ts";
import {
  type DenseRowStats,
  denseRowStats,
  NonFiniteError,
  scoreDense,
  TopK,
} from "../index/exact/score.ts";
import { SparseIndexScorer, SparseQueries } from "../index/exact/sparse_scorer.ts";

const scorers = new WeakMap<ExactIndex, SparseIndexScorer>();

/** The index's term-at-a-time scorer (its posting lists built on first use). */
function sparseScorer(index: ExactIndex): SparseIndexScorer {
  let s = scorers.get(index);
  if (s === undefined) {
    const { data, indices, indptr } = index.csr!;
    s = new SparseIndexScorer(data, indices, indptr, index.header.phrases, index.header.d);
    scorers.set(index, s);
  }
  return s;
}

const rowStats = new WeakMap<ExactIndex, DenseRowStats | null>();

/**
 * The row squares and norms of a dense index (computed on first use, one
 * pass over the index; 16 bytes a phrase), or `undefined` without SIMD.
 */
function denseStats(index: ExactIndex): DenseRowStats | undefined {
  let s = rowStats.get(index);
  if (s === undefined) {
    s = denseRowStats(index.dense!, index.header.phrases, index.header.d, DENSE_CHUNK) ?? null;
    rowStats.set(index, s);
  }
  return s ?? undefined;
}

/** One ranked phrase. */
export interface Hit {
  /** 1-based rank. */
  readonly rank: number;
  /** Paragraph id. */
  readonly paragraph: string;
  /** Phrase index in its paragraph. */
  readonly phraseIndex: number;
  /** The phrase. */
  readonly phrase: string;
  /** Exact score (inner product, or −‖q−p‖² for `l2`). */
  readonly score: number;
  /** Global row in the index. */
  readonly row: number;
  /** Code point offsets in the paragraph, when the index has them. */
  readonly start?: number;
  /** End offset (exclusive). */
  readonly end?: number;
}

/** Options of the scoring calls. */
export interface QueryOptions {
  /** Ranks kept (default 10). */
  readonly topK?: number;
  /** Use the WebAssembly SIMD kernels (default true; same results). */
  readonly simd?: boolean;
  /**
   * Dense open search: screen the rows on 8-bit integers first
   * (`search/kernels/i8_scan.ts`; default true, where the runtime has relaxed
   * SIMD; same results). `false` scores every row on the float32 kernels (for
   * benchmarks).
   */
  readonly screen?: boolean;
}

const DENSE_CHUNK = 2048;

function nonFinite(index: ExactIndex, e: unknown): unknown {
  if (!(e instanceof NonFiniteError) && !(e instanceof I8NonFinite)) return e;
  const file = index.header.vectors === "dense" ? `vectors.${index.header.dtype}` : "data.f32";
  return new InputError({
    file: `${index.dir}/${file}`,
    where: e.message,
    message: "NaN or infinite value (corrupt index)",
  });
}

/** The 8-bit path's view of a dense index. */
const i8Source = (index: ExactIndex): I8Source => ({
  dense: index.dense!,
  phrases: index.header.phrases,
  d: index.header.d,
  metric: index.header.metric,
});

/**
 * A scan in steps (a chunk of rows each): the generator yields between
 * steps and is told, on resuming, whether the event loop ran meanwhile
 * ({@linkcode Pace}), when what it read may have changed.
 */
type Steps = Generator<void, void, boolean>;

/** Runs a scan's steps to their end, without a pause. */
function runSteps(steps: Steps): void {
  for (let s = steps.next(false); !s.done; s = steps.next(false));
}

/** Milliseconds a scan runs at most before it gives the event loop a turn. */
const PACE_MS = 50;

/**
 * The pauses of a long scan: every {@linkcode PACE_MS} of work the event
 * loop gets a turn (a SIGINT or SIGTERM listener, a timer, a request), and
 * an aborted `signal` ends the scan with its reason. A scan of any index
 * then stops within a step of the signal.
 */
export class Pace {
  #last = performance.now();
  /** @param signal ends the work with its reason once aborted */
  constructor(readonly signal?: AbortSignal) {}

  /**
   * Between two steps of a long piece of work: gives the event loop a turn
   * when {@linkcode PACE_MS} have passed since the last (true then), and
   * throws once `signal` is aborted.
   */
  async tick(): Promise<boolean> {
    const due = performance.now() - this.#last >= PACE_MS;
    if (due) {
      await new Promise((r) => setTimeout(r, 0));
      this.#last = performance.now();
    }
    this.signal?.throwIfAborted();
    return due;
  }

  /** Runs `steps` to their end, pausing between steps when one is due. */
  async run(steps: Steps): Promise<void> {
    let paused = false;
    for (let s = steps.next(paused); !s.done; s = steps.next(paused)) {
      paused = performance.now() - this.#last >= PACE_MS ? await this.tick() : false;
      this.signal?.throwIfAborted();
    }
  }
}

/** Dense rows `g.from … g.to` against `qs` on the float kernels (or float64 loops), a chunk a step. */
function* denseRowSteps(
  index: ExactIndex,
  qs: readonly Float32Array[],
  ts: readonly TopK[],
  g: { from: number; to: number },
  own: readonly number[] | undefined,
  options: QueryOptions,
): Steps {
  if (qs.length === 0) return;
  const h = index.header, a = index.dense!;
  // Open search: the row squares once per index (closed search reads a paragraph at a time).
  const stats = own === undefined && options.simd !== false ? denseStats(index) : undefined;
  for (let r = g.from; r < g.to; r += DENSE_CHUNK) {
    const n = Math.min(DENSE_CHUNK, g.to - r);
    const rows = a.subarray(r * h.d, (r + n) * h.d);
    scoreDense(rows, n, h.d, r, qs, ts, h.metric, options.simd, stats);
    yield;
  }
}

/**
 * {@linkcode scoreQuestions} for open search, with a dense index's 8-bit
 * screening on `threads` worker threads when `threads` > 1 (the same
 * results; the workers stay until `closeSearchWorkers` (`phrase_index.ts`)). The
 * float scan of a dense index (in memory, or read from disk under a
 * memory budget) gives the event loop a turn every 50 ms, so a signal is
 * answered within that, and ends with the reason of `signal` once it is
 * aborted.
 */
export async function scoreQuestionsAsync(
  index: ExactIndex,
  vectors: readonly Matrix[],
  options: QueryOptions & { readonly threads?: number; readonly signal?: AbortSignal } = {},
): Promise<TopK[]> {
  const threads = options.threads ?? 1;
  if (index.dense === undefined && index.disk === undefined) {
    return scoreQuestions(index, vectors, options);
  }
  const k = Math.max(1, options.topK ?? 10);
  const tops = vectors.map(() => new TopK(k));
  const qs = vectors.map((v) => asFloat32(v as Matrix & { kind: "dense" }));
  const all = { from: 0, to: index.header.phrases };
  const pace = new Pace(options.signal);
  try {
    if (index.disk !== undefined) {
      await pace.run(diskRowSteps(index, qs, tops, all, options));
      return tops;
    }
    const screen = options.simd !== false && options.screen !== false;
    const left = !screen
      ? undefined
      : threads > 1
      ? await scoreI8Threads(index, i8Source(index), qs, tops, threads)
      : scoreI8(index, i8Source(index), qs, tops);
    const rest = left ?? qs.map((_, x) => x);
    await pace.run(
      denseRowSteps(
        index,
        rest.map((x) => qs[x]),
        rest.map((x) => tops[x]),
        all,
        undefined,
        options,
      ),
    );
  } catch (e) {
    throw nonFinite(index, e);
  }
  return tops;
}

/**
 * Makes, now, what exact open search of a dense index makes on first use
 * (its 8-bit screening rows, a few seconds for a million phrases), so that
 * the first question does not wait for it (a server calls this at start).
 * Nothing for a sparse index. A NaN or infinite value is an
 * {@linkcode InputError} naming the vectors file.
 */
export function prepareExact(index: ExactIndex): void {
  if (index.dense === undefined) return; // sparse, or read on demand (no screening rows)
  try {
    i8RowsOf(index, i8Source(index));
  } catch (e) {
    throw nonFinite(index, e);
  }
}

/**
 * The top rows of each question (1×d vectors of the index's kind and d).
 * `own[j]`, when given, restricts question j to that paragraph (an index
 * into the index's paragraphs; `-1`: nothing).
 */
export function scoreQuestions(
  index: ExactIndex,
  vectors: readonly Matrix[],
  options: QueryOptions = {},
  own?: readonly number[],
): TopK[] {
  const k = Math.max(1, options.topK ?? 10);
  const tops = vectors.map(() => new TopK(k));
  const h = index.header;
  const groups: { from: number; to: number; js: number[] }[] = [];
  if (own === undefined) groups.push({ from: 0, to: h.phrases, js: vectors.map((_, j) => j) });
  else {
    const by = new Map<number, number[]>();
    own.forEach((p, j) => {
      if (p < 0) return;
      const list = by.get(p);
      if (list) list.push(j);
      else by.set(p, [j]);
    });
    for (const [p, js] of [...by].sort((a, b) => a[0] - b[0])) {
      groups.push({ from: index.starts[p], to: index.starts[p + 1], js });
    }
  }
  try {
    for (const g of groups) {
      const ts = g.js.map((j) => tops[j]);
      if (index.csr !== undefined && own === undefined) {
        const s = sparseScorer(index);
        s.scoreMany(g.js.map((j) => vectors[j] as CsrMatrix), ts, h.metric, options.simd);
      } else if (index.csr !== undefined) {
        const sq = new SparseQueries(g.js.map((j) => vectors[j] as CsrMatrix), h.d);
        try {
          const { data, indices, indptr } = index.csr;
          sq.score(data, indices, indptr, g.from, g.to, ts, h.metric);
        } finally {
          sq.dispose();
        }
      } else if (index.disk !== undefined) {
        // Read on demand: the rows in blocks from disk, every row on the float kernels.
        const qs = g.js.map((j) => asFloat32(vectors[j] as Matrix & { kind: "dense" }));
        runSteps(diskRowSteps(index, qs, ts, g, options));
      } else {
        const qs = g.js.map((j) => asFloat32(vectors[j] as Matrix & { kind: "dense" }));
        // Open search: the 8-bit screening, then exact scores of its candidates.
        const left = own === undefined && options.simd !== false && options.screen !== false
          ? scoreI8(index, i8Source(index), qs, ts)
          : undefined;
        const rest = left ?? qs.map((_, x) => x);
        runSteps(
          denseRowSteps(index, rest.map((x) => qs[x]), rest.map((x) => ts[x]), g, own, options),
        );
      }
    }
  } catch (e) {
    throw nonFinite(index, e);
  }
  return tops;
}

/**
 * Rows `g.from … g.to` of an index read on demand (`disk.ts`) against `qs`:
 * a block of rows read from disk at a time, scored on the float kernels in
 * chunks of {@linkcode DENSE_CHUNK} rows (the same results as in memory).
 */
function* diskRowSteps(
  index: ExactIndex,
  qs: readonly Float32Array[],
  ts: readonly TopK[],
  g: { from: number; to: number },
  options: QueryOptions,
): Steps {
  if (qs.length === 0) return;
  const h = index.header, disk = index.disk!;
  for (let b = g.from; b < g.to; b += disk.blockRows) {
    const m = Math.min(disk.blockRows, g.to - b);
    let block = disk.readRows(b, m);
    for (let r = 0; r < m; r += DENSE_CHUNK) {
      const n = Math.min(DENSE_CHUNK, m - r);
      const rows = block.subarray(r * h.d, (r + n) * h.d);
      scoreDense(rows, n, h.d, b + r, qs, ts, h.metric, options.simd);
      // The block buffer is the index's one: read again after a pause (another search may have used it).
      if (yield) block = disk.readRows(b, m);
    }
  }
}

/** The hits of one question's {@linkcode TopK} (the first `limit` of them). */
export function hitsOf(index: ExactIndex, top: TopK, limit = Infinity): Hit[] {
  const rows = top.rows;
  return (limit < rows.length ? rows.slice(0, limit) : rows).map((row, r) => {
    const p = paragraphOfRow(index, row);
    const hit: Hit = {
      rank: r + 1,
      paragraph: index.ids[p],
      phraseIndex: row - index.starts[p],
      phrase: phraseAt(index, row),
      score: top.scores[r],
      row,
    };
    const off = offsetsAt(index, row);
    return off !== undefined ? { ...hit, start: off[0], end: off[1] } : hit;
  });
}

/** Checks a question vector against the index: `undefined` or what is wrong. */
export function questionProblem(
  index: Pick<ExactIndex, "dir" | "header">,
  m: Matrix,
): string | undefined {
  const h = index.header;
  const kind = h.vectors === "dense" ? "dense" : "csr";
  if (m.kind !== kind) return `a ${m.kind} vector, but the index is ${kind}`;
  if (!isQuestionShape(m)) return `shape (${m.rows}, ${m.cols}); a question vector must be 1×d`;
  if (m.cols !== h.d) return `d = ${m.cols} but the index ${index.dir} has d = ${h.d}`;
  return undefined;
}

/**
 * The top phrases of the index for one question vector.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { writeContextDump } from "../../io/dump/writer.ts";
 * import { buildIndex } from "../index/build.ts";
 * import { openIndexSync } from "../index/read.ts";
 * import { queryIndex } from "./query.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.mkdirSync(`${dir}/c`);
 * const f32 = (...v: number[]) => new Float32Array(v);
 * await Effect.runPromise(writeContextDump(`${dir}/c`, {
 *   id: "T_0",
 *   phrases: [{ text: "Paris", start: 0, end: 5 }, { text: "France", start: 13, end: 19 }],
 *   matrix: { kind: "dense", rows: 2, cols: 4, dtype: "f32", data: f32(1, 0, 0, 0, 0, 1, 0, 0) },
 * }, { sparse: false, compressed: false }));
 * await Effect.runPromise(buildIndex({ contextEmb: `${dir}/c`, out: `${dir}/ix` }));
 * const index = openIndexSync(`${dir}/ix`);
 * const q = { kind: "dense", rows: 1, cols: 4, dtype: "f32", data: f32(0, 2, 0, 0) } as const;
 * const [best] = queryIndex(index, q, { topK: 2 });
 * if (best.phrase !== "France" || best.score !== 2) throw new Error(JSON.stringify(best));
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export function queryIndex(index: ExactIndex, vector: Matrix, options: QueryOptions = {}): Hit[] {
  const why = questionProblem(index, vector);
  if (why !== undefined) throw new InputError({ file: "question", where: "", message: why });
  return hitsOf(index, scoreQuestions(index, [vector], options)[0]);
}

/** Options of {@linkcode searchVector}. */
export interface SearchVectorOptions extends QueryOptions {
  /** An `ivf-pq` index: score every phrase exactly instead (an `exact` index always is). */
  readonly exact?: boolean;
  /** An `ivf-pq` index: partitions probed (default 10, at most nlist); with `probeTau`, the most. */
  readonly nprobe?: number;
  /**
   * An `ivf-pq` index: adaptive probing (`--probe-tau`): of the `nprobe`
   * best partitions, those whose probing score is within `probeTau · ‖q‖ ·
   * mean‖c‖` of the best one's (`search/index/ivfpq/fastscan.ts` `cutLists`).
   */
  readonly probeTau?: number;
  /**
   * An `ivf-pq` index: approximate candidates re-scored exactly (default 0
   * on a dense index: the approximate scores; 1000 on a hybrid one, where 0
   * is refused). Fewer than `topK` count as `topK`.
   */
  readonly candidates?: number;
  /** The older name of {@linkcode SearchVectorOptions.candidates} (`candidates` wins). */
  readonly refine?: number;
  /**
   * Worker threads (default 1: this one; the same answers with any number):
   * an `ivf-pq` index's list scans, a dense index's exact screening.
   */
  readonly threads?: number;
}

/** `candidates`, or its older name `refine`. */
const candidatesOf = (o: { candidates?: number; refine?: number }) => o.candidates ?? o.refine;

/** The approximate search of an `ivf-pq` index: hybrid (dense-first) or dense. */
async function approximate(
  index: ExactIndex,
  vectors: readonly Matrix[],
  options: SearchVectorOptions,
  tail = false,
): Promise<TopK[]> {
  // More candidates than the index has phrases re-score them all (and size nothing past them).
  const asked = candidatesOf(options);
  const c = asked === undefined ? undefined : Math.min(asked, Math.max(1, index.header.phrases));
  if (hybridDenseDims(index.header) !== undefined) {
    try {
      return await scoreHybrid(index, vectors as CsrMatrix[], { ...options, candidates: c });
    } catch (e) {
      throw nonFinite(index, e);
    }
  }
  return await scoreIvf(
    index,
    vectors.map((v) => asFloat32(v as Matrix & { kind: "dense" })),
    { ...options, refine: c, tail },
  );
}

/**
 * The top phrases of the index for one question vector, the way
 * `openSearch` (`open.ts`) ranks them: exact ({@linkcode queryIndex}) on an
 * `exact` index or with `exact`, else IVF-PQ (`nprobe`, `refine`). A
 * vector of the wrong kind or d, or a bad `nprobe`, is an
 * {@linkcode InputError}. The one-vector case of {@linkcode searchVectors}.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { writeContextDump } from "../../io/dump/writer.ts";
 * import { buildIndex } from "../index/build.ts";
 * import { openIndexSync } from "../index/read.ts";
 * import { searchVector } from "./query.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.mkdirSync(`${dir}/c`);
 * await Effect.runPromise(writeContextDump(`${dir}/c`, {
 *   id: "T_0",
 *   phrases: [{ text: "Paris", start: 0, end: 5 }, { text: "France", start: 13, end: 19 }],
 *   matrix: { kind: "dense", rows: 2, cols: 2, dtype: "f32", data: new Float32Array([1, 0, 0, 1]) },
 * }, { sparse: false, compressed: false }));
 * await Effect.runPromise(buildIndex({ contextEmb: `${dir}/c`, out: `${dir}/ix` }));
 * const q = { kind: "dense", rows: 1, cols: 2, dtype: "f32", data: new Float32Array([3, 1]) } as const;
 * const hits = await searchVector(openIndexSync(`${dir}/ix`), q, { topK: 1 });
 * if (hits[0].phrase !== "Paris" || hits[0].score !== 3) throw new Error(JSON.stringify(hits));
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export async function searchVector(
  index: ExactIndex,
  vector: Matrix,
  options: SearchVectorOptions = {},
): Promise<Hit[]> {
  const [hits] = await searchVectors(index, [vector], options);
  return hits;
}

/**
 * The top phrases of the index for each question vector, in one scoring
 * pass for all of them (`scoreQuestions`, or one `scoreIvf` call): the same
 * hits, ranks, scores and ties as {@linkcode searchVector} one vector at a
 * time, for less than the sum of their costs (the index is read once per
 * pass). A vector of the wrong kind or d (named by its position), or a bad
 * `nprobe`, is an {@linkcode InputError}.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { writeContextDump } from "../../io/dump/writer.ts";
 * import { buildIndex } from "../index/build.ts";
 * import { openIndexSync } from "../index/read.ts";
 * import { searchVectors } from "./query.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.mkdirSync(`${dir}/c`);
 * await Effect.runPromise(writeContextDump(`${dir}/c`, {
 *   id: "T_0",
 *   phrases: [{ text: "Paris", start: 0, end: 5 }, { text: "France", start: 13, end: 19 }],
 *   matrix: { kind: "dense", rows: 2, cols: 2, dtype: "f32", data: new Float32Array([1, 0, 0, 1]) },
 * }, { sparse: false, compressed: false }));
 * await Effect.runPromise(buildIndex({ contextEmb: `${dir}/c`, out: `${dir}/ix` }));
 * const v = (...x: number[]) => ({ kind: "dense", rows: 1, cols: 2, dtype: "f32", data: new Float32Array(x) }) as const;
 * const [a, b] = await searchVectors(openIndexSync(`${dir}/ix`), [v(3, 1), v(1, 3)], { topK: 1 });
 * if (a[0].phrase !== "Paris" || b[0].phrase !== "France") throw new Error(JSON.stringify([a, b]));
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export async function searchVectors(
  index: ExactIndex,
  vectors: readonly Matrix[],
  options: SearchVectorOptions = {},
): Promise<Hit[][]> {
  const ivf = index.header.kind === "ivf-pq" && options.exact !== true;
  for (const [j, v] of vectors.entries()) {
    const why = questionProblem(index, v);
    if (why !== undefined) {
      throw new InputError({
        file: "question",
        where: vectors.length === 1 ? "" : `vector ${j}`,
        message: why,
      });
    }
  }
  if (vectors.length === 0) return [];
  if (!ivf) {
    return (await scoreQuestionsAsync(index, vectors, options)).map((t) => hitsOf(index, t));
  }
  const why = nprobeProblem(
    index,
    options.nprobe ?? defaultNprobe(index.header.parameters.nlist),
  ) ?? (options.probeTau !== undefined ? probeTauProblem(options.probeTau) : undefined);
  if (why !== undefined) throw new InputError({ file: "question", where: "", message: why });
  const tops = await approximate(index, vectors, options);
  return tops.map((t) => hitsOf(index, t));
}

/**
 * The top phrases of the index for a question string, encoded by the
 * `QuestionEncoder` in context (the encoder the index's dump was made with).
 */
export const queryText = (
  index: ExactIndex,
  question: string,
  options: QueryOptions = {},
): Effect.Effect<Hit[], EncoderError | InputError, QuestionEncoder> =>
  Effect.gen(function* () {
    const enc = yield* QuestionEncoder;
    const [q] = yield* enc.encode([{ id: "query", question }]);
    return yield* Effect.try({
      try: () => queryIndex(index, q.vector, options),
      catch: (e) =>
        e instanceof InputError
          ? e
          : new InputError({ file: "question", where: "", message: String(e) }),
    });
  });

/** Options of `openSearch` (`open.ts`). */
export interface OpenSearchOptions extends QueryOptions {
  /**
   * The question set: which questions, in which order. A SQuAD file
   * (`.json`, `.json.gz`, `-`), or any question set `io/datasets/` reads
   * (DPR's CSV/TSV, CuratedTREC, NQ-open JSONL, MRQA, ...: ids as
   * `readQuestions` gives them, a set without ids numbered from 0).
   */
  readonly data: string;
  /** The format of `data`, a `--format` name (default: detected; stdin is SQuAD unless named). */
  readonly format?: string;
  /** The language of an XQuAD/MLQA set. */
  readonly lang?: string;
  /** The index folder, or an index already open. */
  readonly index: string | ExactIndex;
  /** The question dump: a folder or a `.zip` of one. */
  readonly questionEmb: string;
  /** Where the top-1 predictions go (`-` for stdout). */
  readonly predictions: string;
  /** Where the top-k NDJSON records go, if anywhere. */
  readonly topkOut?: string;
  /** Score each question against its own paragraph only (merge's setting). */
  readonly closed?: boolean;
  /** Rename repeated titles as the encoders' `--unique-ids` does. */
  readonly uniqueIds?: boolean;
  /** An `ivf-pq` index: score every phrase exactly instead. */
  readonly exact?: boolean;
  /**
   * Bytes the index may hold in memory when `index` is a folder (or a
   * folder of shards, each opened in turn): its vectors, IVF-PQ lists and
   * phrase texts are read from disk on demand (`search/index/disk.ts`; the
   * same answers). Dense indexes only. Default: loaded whole.
   */
  readonly memoryBudget?: number;
  /** An `ivf-pq` index: partitions probed (default 10, at most nlist); with `probeTau`, the most. */
  readonly nprobe?: number;
  /**
   * An `ivf-pq` index: adaptive probing (`--probe-tau`): of the `nprobe`
   * best partitions, those whose probing score is within `probeTau · ‖q‖ ·
   * mean‖c‖` of the best one's (`search/index/ivfpq/fastscan.ts` `cutLists`).
   */
  readonly probeTau?: number;
  /**
   * An `ivf-pq` index: approximate candidates re-scored exactly (default 0
   * on a dense index; {@linkcode DEFAULT_HYBRID_CANDIDATES} on a hybrid one,
   * where 0 is refused).
   */
  readonly candidates?: number;
  /** The older name of {@linkcode OpenSearchOptions.candidates} (`candidates` wins). */
  readonly refine?: number;
  /**
   * Worker threads (default 1: this thread; the same answers with any
   * number): an `ivf-pq` index's list scans, a dense index's exact
   * screening. They end with the search.
   */
  readonly threads?: number;
  /** Receives each `Missing <path>` line (default: stderr). */
  readonly onMissing?: (line: string) => void;
  /** Told the questions done so far. */
  readonly onProgress?: (done: number) => void;
  /** Ends the scan of a dense index (within 50 ms) once aborted (the Effect's interruption does). */
  readonly signal?: AbortSignal;
}

/** What `openSearch` (`open.ts`) did. */
export interface OpenSearchResult {
  /** Questions in the dataset. */
  readonly questions: number;
  /** Questions answered. */
  readonly answered: number;
  /** `Missing` lines printed. */
  readonly missing: number;
  /** Phrases searched. */
  readonly phrases: number;
}

/** Errors of `openSearch` (`open.ts`; a {@linkcode UsageError}: a bad `format` or `lang`). */
export type OpenSearchError = SquadReadError | InputError | FileError | UsageError;

/** The top-k NDJSON records of one question's hits (see `open.ts`'s module notes), one line each. */
export function topkLines(qid: string, hits: readonly Hit[]): string {
  let s = "";
  for (const h of hits) {
    const rec: Record<string, unknown> = {
      id: qid,
      rank: h.rank,
      paragraph: h.paragraph,
      phrase_index: h.phraseIndex,
      phrase: h.phrase,
      score: h.score,
    };
    if (h.start !== undefined) {
      rec.start = h.start;
      rec.end = h.end;
    }
    s += JSON.stringify(rec) + "\n";
  }
  return s;
}

/**
 * Each question id of `opts.data` with its paragraph id (`""` when the
 * question set has none), in file order: a SQuAD-shaped file by merge's
 * reader (`readQ2c`, `--unique-ids`), any other question set by
 * `readQuestions`.
 */
export const questionParagraphs = (
  opts: Omit<OpenSearchOptions, "predictions" | "topkOut">,
): Effect.Effect<Map<string, string>, OpenSearchError> =>
  Effect.gen(function* () {
    if (opts.data === "-" && opts.format === undefined) {
      return yield* readQ2c(opts.data, opts.uniqueIds === true);
    }
    const [format, src] = yield* openDataset(opts.data, opts.format, true);
    if (isSquadShaped(format) && opts.data !== "-") {
      yield* Effect.promise(() => src.stream.cancel().catch(() => {}));
      return yield* readQ2c(opts.data, opts.uniqueIds === true);
    }
    const q2c = new Map<string, string>();
    const questions = yield* questionsOfSource(opts.data, format, src, {
      lang: opts.lang,
      answers: "optional",
    });
    yield* Stream.runForEach(questions, (q) =>
      Effect.suspend(() => {
        if (q2c.has(q.id)) {
          return Effect.fail(
            new InputError({
              file: opts.data,
              where: `question ${JSON.stringify(q.id)}`,
              message: "occurs twice (question ids must be unique)",
            }),
          );
        }
        q2c.set(q.id, q.paragraphId ?? "");
        return Effect.void;
      }));
    return q2c;
  });

/**
 * Whether `opts` search the index approximately (an `ivf-pq` index without
 * `exact` or `closed`); the options an index of its kind refuses
 * (`nprobe`/`candidates` on an exact index, a bad `nprobe` or hybrid
 * `candidates`) fail with one {@linkcode InputError} naming the index.
 */
export const searchMode = (
  index: Pick<ExactIndex, "dir" | "header">,
  opts: Pick<
    OpenSearchOptions,
    "exact" | "closed" | "nprobe" | "probeTau" | "candidates" | "refine"
  >,
): Effect.Effect<boolean, InputError> => {
  const ivf = index.header.kind === "ivf-pq" && opts.exact !== true && opts.closed !== true;
  if (index.header.kind !== "ivf-pq" && opts.probeTau !== undefined) {
    return Effect.fail(
      new InputError({
        file: index.dir,
        where: "",
        message: `is an ${index.header.kind} index: --probe-tau applies to ivf-pq only`,
      }),
    );
  }
  if (
    index.header.kind !== "ivf-pq" &&
    (opts.nprobe !== undefined || candidatesOf(opts) !== undefined)
  ) {
    return Effect.fail(
      new InputError({
        file: index.dir,
        where: "",
        message: `is an ${index.header.kind} index: --nprobe and --candidates (--refine) ` +
          `apply to ivf-pq only`,
      }),
    );
  }
  const hybrid = hybridDenseDims(index.header) !== undefined;
  const probeWhy = ivf
    ? nprobeProblem(index, opts.nprobe ?? defaultNprobe(index.header.parameters.nlist)) ??
      (opts.probeTau !== undefined ? probeTauProblem(opts.probeTau) : undefined) ??
      (hybrid ? candidatesProblem(candidatesOf(opts) ?? DEFAULT_HYBRID_CANDIDATES) : undefined)
    : undefined;
  if (probeWhy !== undefined) {
    return Effect.fail(new InputError({ file: index.dir, where: "", message: probeWhy }));
  }
  return Effect.succeed(ivf);
};

/**
 * The top rows of a block of question vectors, as `openSearch` (`open.ts`)
 * scores them: approximately (`ivf`, from {@linkcode searchMode}), against
 * each question's own paragraph (`closed`, `own[j]` its paragraph in the
 * index or -1), else exactly over every phrase. `tail`: one of the last
 * blocks of a search on N > 1 threads (`scoreIvf`'s `tail`: the same rows).
 */
export async function scoreOpenBlock(
  index: ExactIndex,
  vectors: readonly Matrix[],
  opts: Omit<OpenSearchOptions, "predictions" | "topkOut">,
  ivf: boolean,
  own: readonly number[],
  tail = false,
): Promise<TopK[]> {
  return ivf
    ? await approximate(index, vectors, opts, tail)
    : opts.closed
    ? scoreQuestions(index, vectors, opts, own)
    : await scoreQuestionsAsync(index, vectors, opts);
}
