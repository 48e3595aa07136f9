/**
 * A {@linkcode Searcher}: one open index and one question encoder, answering
 * question strings the way open search does (`search/open/open.ts`
 * `searchVectors`: exact scores on an `exact` index or with `exact`,
 * IVF-PQ with `nprobe`, and `probeTau` when given, otherwise), so the
 * demo's answers are `search`'s top-k for the same question.
 *
 * {@linkcode Searcher.searchMany} answers many questions together: one
 * encoder call for all of them, then one scoring pass per group of
 * questions that score alike (exact; or IVF-PQ with one `nprobe`, one
 * `probeTau` and one `k`), with the group's largest `k`, each answer cut
 * to its own `k`. Exact top-k lists are prefixes of each other (ties go to
 * the first row), so the answers are those of one question at a time.
 *
 * The encoder is the `QuestionEncoder` service of `encoders/registry.ts`,
 * built once from `questionEncoderLayer(name, model)` and held in one
 * `ManagedRuntime` for the searcher's life ({@linkcode Searcher.close}
 * releases it).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as ManagedRuntime from "effect/ManagedRuntime";
import { InputError } from "../io/errors.ts";
import { questionEncoderLayer } from "../encoders/registry.ts";
import { QuestionEncoder } from "../encoders/types.ts";
import { type ExactIndex, openIndexSync, paragraphText } from "../search/index/read.ts";
import { releaseIndex } from "../search/open/phrase_index.ts";
import { nprobeProblem, probeTauProblem } from "../search/index/ivfpq/ivfpq.ts";
import { defaultNprobe } from "../search/index/defaults.ts";
import { type Hit, prepareExact, searchVectors } from "../search/open/open.ts";

/** One ranked answer, as `/v1/search` returns it. */
export interface SearchHit {
  /** 1-based rank. */
  readonly rank: number;
  /** The article title, or `null` when the index does not know it. */
  readonly title: string | null;
  /** The paragraph id. */
  readonly paragraph_id: string;
  /** The phrase. */
  readonly phrase: string;
  /** Code point offset of the phrase in `context`, or `null` when unknown. */
  readonly start: number | null;
  /** End offset (exclusive), or `null`. */
  readonly end: number | null;
  /** The exact score (inner product, or −‖q−p‖² for `l2`; the approximate one for IVF-PQ). */
  readonly score: number;
  /** The paragraph's text, or `null` when the index does not hold it. */
  readonly context: string | null;
  /**
   * A shard's searcher with `shardHits` only: the paragraph's place in the
   * corpus (what orders hits across shards, `search/open/sharded.ts`).
   */
  readonly position?: number;
  /** A shard's searcher with `shardHits` only: the phrase's index in its paragraph. */
  readonly phrase_index?: number;
}

/** The answer to one question, as `/v1/search` returns it. */
export interface SearchAnswer {
  /** The question as asked. */
  readonly query: string;
  /**
   * Milliseconds spent encoding and scoring, not waiting in the queue: the
   * whole pass that answered it, shared with the questions answered
   * together with it (see {@linkcode Searcher.searchMany}).
   */
  readonly took_ms: number;
  /** Whether the scores are exact (always on an `exact` index). */
  readonly exact: boolean;
  /** The top k, best first. */
  readonly results: readonly SearchHit[];
}

/** Options of one {@linkcode Searcher.search}. */
export interface SearchOptions {
  /** Ranks returned (default 5). */
  readonly k?: number;
  /** An `ivf-pq` index: partitions probed (default: the searcher's). */
  readonly nprobe?: number;
  /**
   * An `ivf-pq` index: adaptive probing (`probe_tau`): of the `nprobe` best
   * partitions, those whose probing score is within `probeTau · ‖q‖ ·
   * mean‖c‖` of the best one's (default: the searcher's; none: all `nprobe`).
   */
  readonly probeTau?: number;
  /** An `ivf-pq` index: score every phrase exactly (default: the searcher's). */
  readonly exact?: boolean;
}

/** What `/healthz` reports. */
export interface SearcherInfo {
  /** Index kind (`exact`, `ivf-pq`). */
  readonly kind: string;
  /** Ranking metric. */
  readonly metric: string;
  /** Phrases in the index. */
  readonly phrases: number;
  /** Paragraphs in the index. */
  readonly paragraphs: number;
  /** Vector dimension. */
  readonly d: number;
  /** The encoder's name. */
  readonly encoder: string;
  /** IVF partitions (`ivf-pq` only). */
  readonly nlist?: number;
  /**
   * The partitions a question probes unless it says (`ivf-pq` only): the
   * server's `--nprobe`, else 10 (or nlist, if fewer).
   */
  readonly nprobe?: number;
  /**
   * The adaptive probing a question gets unless it says (`ivf-pq` only):
   * the server's `--probe-tau`; absent when it has none.
   */
  readonly probe_tau?: number;
  /** A server over a folder of shards: each shard's state (`serve/shards.ts`). */
  readonly shards?: readonly ShardHealth[];
}

/** One shard of a sharded server, as `/healthz` reports it. */
export interface ShardHealth {
  /** The shard's index, 0-based. */
  readonly index: number;
  /** Shards of the index. */
  readonly count: number;
  /** `up`: answering; `restarting`: its new process is loading; `down`: waiting to restart. */
  readonly state: "up" | "restarting" | "down";
  /** Times its process was restarted. */
  readonly restarts: number;
}

/** One question and its options. */
export interface SearchRequest {
  /** The question. */
  readonly query: string;
  /** Its options (default: the searcher's). */
  readonly options?: SearchOptions;
}

/** The part of a searcher the HTTP layer uses (tests put a fake in its place). */
export interface SearcherLike {
  /** What `/healthz` reports. */
  readonly info: SearcherInfo;
  /** Answers one question; bad options are an {@linkcode InputError}. */
  search(query: string, options?: SearchOptions): Promise<SearchAnswer>;
  /**
   * Answers many questions together, in order (the same answers as
   * {@linkcode SearcherLike.search} one at a time); without it the queue
   * asks `search` one question at a time.
   */
  searchMany?(requests: readonly SearchRequest[]): Promise<SearchAnswer[]>;
}

/** Options of {@linkcode Searcher.open}. */
export interface SearcherOptions {
  /** The index folder, or an index already open. */
  readonly index: string | ExactIndex;
  /** The encoder's name (`--encoder`; the one the index's dump was made with). */
  readonly encoder: string;
  /** Its model (default the bundled one). */
  readonly model?: string;
  /** Default of {@linkcode SearchOptions.nprobe} (default 10, at most nlist). */
  readonly nprobe?: number;
  /**
   * Default of {@linkcode SearchOptions.probeTau} (`--probe-tau`; a number
   * above 0, an `ivf-pq` index only; default none: all `nprobe` partitions).
   */
  readonly probeTau?: number;
  /** Default of {@linkcode SearchOptions.exact}. */
  readonly exact?: boolean;
  /**
   * An `ivf-pq` index: approximate candidates re-scored exactly (default as `search`: 0, the PQ
   * scores, on a dense index; `DEFAULT_HYBRID_CANDIDATES` on a hybrid one).
   */
  readonly refine?: number;
  /** Check the index files' sha256 on opening (default true). */
  readonly verify?: boolean;
  /**
   * Open the index (a folder) under this memory budget in bytes: a dense
   * index read from disk on demand (`openIndexSync`'s `memoryBudget`,
   * `search/index/disk.ts`), the same answers.
   */
  readonly memoryBudget?: number;
  /**
   * A shard's index: each hit carries `position` and `phrase_index`, what
   * the front of a sharded server merges by (default false).
   */
  readonly shardHits?: boolean;
}

/** The IVF partitions of an index, or `undefined` for an `exact` one. */
export function nlistOf(index: Pick<ExactIndex, "header">): number | undefined {
  return index.header.kind === "ivf-pq" ? index.header.parameters.nlist as number : undefined;
}

/**
 * The hits of `searchVector` in the API's shape; with `shardHits`, each
 * with its paragraph's corpus `position` and its `phrase_index` (a shard's
 * index).
 */
export function apiHits(index: ExactIndex, hits: readonly Hit[], shardHits = false): SearchHit[] {
  return hits.map((h) => {
    const p = paragraphIndex(index, h.paragraph);
    // From memory, or the paragraph's line read from disk under a memory budget.
    const text = p >= 0 ? paragraphText(index, p) : { title: null, context: null };
    const hit: SearchHit = {
      rank: h.rank,
      title: text.title,
      paragraph_id: h.paragraph,
      phrase: h.phrase,
      start: h.start ?? null,
      end: h.end ?? null,
      score: h.score,
      context: text.context,
    };
    if (!shardHits) return hit;
    return { ...hit, position: index.positions?.[p] ?? p, phrase_index: h.phraseIndex };
  });
}

const paragraphIndexes = new WeakMap<ExactIndex, Map<string, number>>();
function paragraphIndex(index: ExactIndex, id: string): number {
  let m = paragraphIndexes.get(index);
  if (m === undefined) {
    m = new Map(index.ids.map((x, i) => [x, i]));
    paragraphIndexes.set(index, m);
  }
  return m.get(id) ?? -1;
}

/** A {@linkcode Searcher}'s defaults of the options a request does not give. */
interface Defaults {
  readonly nprobe: number;
  readonly probeTau: number | undefined;
  readonly exact: boolean;
  readonly refine: number | undefined;
}

/** An open index and question encoder (see the module notes). */
export class Searcher implements SearcherLike {
  readonly info: SearcherInfo;
  readonly #defaults: Defaults;
  readonly #shardHits: boolean;
  #owned = false;

  private constructor(
    readonly index: ExactIndex,
    readonly runtime: ManagedRuntime.ManagedRuntime<QuestionEncoder, unknown>,
    encoder: string,
    defaults: Defaults,
    shardHits: boolean,
  ) {
    const h = index.header;
    const nlist = nlistOf(index);
    this.info = {
      kind: h.kind,
      metric: h.metric,
      phrases: h.phrases,
      paragraphs: h.paragraphs,
      d: h.d,
      encoder,
      ...(nlist !== undefined ? { nlist, nprobe: defaults.nprobe } : {}),
      ...(defaults.probeTau !== undefined ? { probe_tau: defaults.probeTau } : {}),
    };
    this.#defaults = defaults;
    this.#shardHits = shardHits;
  }

  /**
   * Opens the index, builds the encoder and checks that its vectors fit the
   * index (kind and d, by encoding one question). Bad options, a bad index
   * or an encoder that does not fit are an {@linkcode InputError}.
   */
  static async open(opts: SearcherOptions): Promise<Searcher> {
    const index = typeof opts.index === "string"
      ? openIndexSync(opts.index, {
        verify: opts.verify,
        ...(opts.memoryBudget !== undefined ? { memoryBudget: opts.memoryBudget } : {}),
      })
      : opts.index;
    // An index opened here is released here (its search workers, its files under a budget).
    const owned = typeof opts.index === "string";
    try {
      return await Searcher.#open(index, opts, owned);
    } catch (e) {
      if (owned) releaseIndex(index);
      throw e;
    }
  }

  static async #open(index: ExactIndex, opts: SearcherOptions, owned: boolean): Promise<Searcher> {
    const nlist = nlistOf(index);
    if (nlist === undefined && opts.nprobe !== undefined) {
      throw new InputError({
        file: index.dir,
        where: "",
        message: "is an exact index: --nprobe applies to ivf-pq only",
      });
    }
    if (nlist === undefined && opts.probeTau !== undefined) {
      throw new InputError({
        file: index.dir,
        where: "",
        message: `is an ${index.header.kind} index: --probe-tau applies to ivf-pq only`,
      });
    }
    const nprobe = opts.nprobe ?? defaultNprobe(nlist);
    const why = nlist !== undefined
      ? nprobeProblem(index, nprobe) ??
        (opts.probeTau !== undefined ? probeTauProblem(opts.probeTau) : undefined)
      : undefined;
    if (why !== undefined) throw new InputError({ file: index.dir, where: "", message: why });
    // Exact search's 8-bit rows now, not on the first exact question.
    prepareExact(index);
    const layer = await Effect.runPromise(questionEncoderLayer(opts.encoder, opts.model));
    const runtime = ManagedRuntime.make(layer);
    const s = new Searcher(index, runtime, opts.encoder, {
      nprobe,
      probeTau: opts.probeTau,
      exact: opts.exact === true,
      // Not given: the index kind's default (0 on a dense index, 1000 on a hybrid one).
      refine: opts.refine === undefined ? undefined : Math.max(0, opts.refine),
    }, opts.shardHits === true);
    s.#owned = owned;
    try {
      await s.search("What is it?", { k: 1 });
    } catch (e) {
      await runtime.dispose();
      throw e instanceof InputError
        ? new InputError({
          file: index.dir,
          where: "",
          message: `the encoder ${opts.encoder} does not fit this index: ${e.message}`,
        })
        : e;
    }
    return s;
  }

  /** Answers one question (see {@linkcode SearchOptions}). */
  async search(query: string, options: SearchOptions = {}): Promise<SearchAnswer> {
    const [a] = await this.searchMany([{ query, options }]);
    return a;
  }

  /**
   * Answers the questions together (see the module notes): one encoder
   * call, one scoring pass per group; answers in order.
   */
  async searchMany(requests: readonly SearchRequest[]): Promise<SearchAnswer[]> {
    if (requests.length === 0) return [];
    const t0 = performance.now();
    const ivf = this.index.header.kind === "ivf-pq";
    const plan = requests.map(({ options = {} }) => {
      const exact = !ivf || (options.exact ?? this.#defaults.exact);
      const k = options.k ?? 5;
      const nprobe = options.nprobe ?? this.#defaults.nprobe;
      const probeTau = options.probeTau ?? this.#defaults.probeTau;
      // Approximate lists are grouped by k too: only exact ones are prefixes of each other.
      const key = exact ? "exact" : `ivf ${nprobe} ${probeTau ?? "all"} ${k}`;
      return { exact, k, nprobe, probeTau, key };
    });
    const encoded = await this.runtime.runPromise(
      Effect.gen(function* () {
        const enc = yield* QuestionEncoder;
        return yield* enc.encode(requests.map((r, j) => ({ id: `query${j}`, question: r.query })));
      }),
    );
    const groups = new Map<string, number[]>();
    plan.forEach((p, j) => {
      const g = groups.get(p.key);
      if (g) g.push(j);
      else groups.set(p.key, [j]);
    });
    const hits: Hit[][] = new Array(requests.length);
    for (const js of groups.values()) {
      const p = plan[js[0]];
      const k = Math.max(...js.map((j) => plan[j].k));
      const got = await searchVectors(this.index, js.map((j) => encoded[j].vector), {
        topK: k,
        exact: p.exact,
        nprobe: p.nprobe,
        ...(p.exact || p.probeTau === undefined ? {} : { probeTau: p.probeTau }),
        ...(p.exact || this.#defaults.refine === undefined
          ? {}
          : { refine: this.#defaults.refine }),
      });
      js.forEach((j, u) => hits[j] = got[u].slice(0, plan[j].k));
    }
    const took = Math.round((performance.now() - t0) * 1000) / 1000;
    return requests.map((r, j) => ({
      query: r.query,
      took_ms: took,
      exact: plan[j].exact,
      results: apiHits(this.index, hits[j], this.#shardHits),
    }));
  }

  /** Releases the encoder (and the index, its search workers and files, where it opened it). */
  async close(): Promise<void> {
    await this.runtime.dispose();
    if (this.#owned) releaseIndex(this.index);
  }
}
