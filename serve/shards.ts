/**
 * The front of a server over a folder of shards (`search/index/shards.ts`):
 * a {@linkcode ShardedSearcher} answers each question by asking every
 * shard's server process (a `serve` child over one shard, started with
 * `--shard-hits`, on a loopback port) for its top k through `/v1/batch`,
 * then merging the shards' lists exactly (`search/open/sharded.ts`
 * `mergeHits`: larger score first, then the earlier paragraph of the
 * corpus, then the earlier phrase: the unsharded tie rule). The answers are
 * those of a server over the unsharded index, hit for hit (exact search,
 * and IVF-PQ's approximate scores with the corpus's one quantizer; see
 * `search/open/sharded.ts`).
 *
 * **A shard that is not answering.** The shards' states come from whoever
 * runs the shard processes ({@linkcode ShardedSearcher.setStates}; the
 * launcher restarts a dead one, `supervise.ts`). A request needing a shard
 * that is not `up` fails at once, and a shard that does not answer within
 * `timeoutMs` (or whose connection fails) fails the request: both are
 * {@linkcode Unavailable} (HTTP 503 with `Retry-After`), naming the shard;
 * for a second after such a failure (or until the launcher says the shard
 * is up) requests fail at once the same way, so that a shard that hangs
 * holds a request `timeoutMs` at most, not once per request waiting.
 * An empty shard (no phrases) has no process: it is always up, with no
 * hits.
 *
 * @example
 * ```ts
 * import { ShardedSearcher } from "./shards.ts";
 * const s = new ShardedSearcher({
 *   info: { kind: "exact", metric: "ip", phrases: 2, paragraphs: 2, d: 1, encoder: "fake" },
 *   shards: [{ port: 1 }, { port: 2 }],
 * });
 * s.setStates([{ index: 0, count: 2, state: "up", restarts: 0 }, {
 *   index: 1, count: 2, state: "down", restarts: 1,
 * }]);
 * const e = await s.search("q").catch((e) => e);
 * if (!/shard 1 of 2 is down/.test(e.message)) throw new Error(e.message);
 * ```
 *
 * @module
 */
import { InputError } from "../io/errors.ts";
import { mergeHits, type ShardHit } from "../search/open/sharded.ts";
import { Unavailable } from "./api.ts";
import type {
  SearchAnswer,
  SearcherInfo,
  SearcherLike,
  SearchHit,
  SearchOptions,
  SearchRequest,
  ShardHealth,
} from "./search.ts";

/** One shard's server, as the front reaches it. */
export interface ShardEndpoint {
  /** Its loopback port, or `null` for an empty shard (no process, no hits). */
  readonly port: number | null;
  /** Its address (default `127.0.0.1`). */
  readonly host?: string;
}

/** Options of {@linkcode ShardedSearcher}. */
export interface ShardedSearcherOptions {
  /** What `/healthz` reports of the whole index (phrases and paragraphs of all shards). */
  readonly info: SearcherInfo;
  /** The shards' servers, by shard index. */
  readonly shards: readonly ShardEndpoint[];
  /** How long a shard may take to answer one batch, ms (default 30 000); then 503. */
  readonly timeoutMs?: number;
}

/** A shard's hit as its server sends it (`--shard-hits`). */
type WireHit = SearchHit & { readonly position: number; readonly phrase_index: number };

const ROUND = (ms: number) => Math.round(ms * 1000) / 1000;

/** How long a shard whose connection failed or timed out counts as not answering, ms. */
const FAILED_MS = 1000;

/** The searcher of the front of a sharded server (see the module notes). */
export class ShardedSearcher implements SearcherLike {
  readonly #info: SearcherInfo;
  readonly #shards: readonly ShardEndpoint[];
  readonly #timeoutMs: number;
  #states: ShardHealth[];
  /** Per shard: until when (performance.now()) it counts as not answering, after a failure. */
  readonly #failedUntil: number[];
  /** Per shard: the last failure's message. */
  readonly #failure: string[];

  /** A front over `opts.shards`, all `up` until told otherwise ({@linkcode setStates}). */
  constructor(opts: ShardedSearcherOptions) {
    this.#info = opts.info;
    this.#shards = opts.shards;
    this.#timeoutMs = opts.timeoutMs ?? 30_000;
    const count = opts.shards.length;
    this.#states = opts.shards.map((_, index) => ({ index, count, state: "up", restarts: 0 }));
    this.#failedUntil = opts.shards.map(() => 0);
    this.#failure = opts.shards.map(() => "");
  }

  /** What `/healthz` reports: the index, and each shard's state. */
  get info(): SearcherInfo {
    return { ...this.#info, shards: this.#states };
  }

  /** The shards' states now (from the launcher); a list of another length is ignored. */
  setStates(states: readonly ShardHealth[]): void {
    if (states.length !== this.#shards.length) return;
    this.#states = states.map((s) => ({ ...s }));
    // A shard (back) up is asked again at once.
    states.forEach((s, i) => {
      if (s.state === "up" && this.#failedUntil[i] > 0) this.#failedUntil[i] = 0;
    });
  }

  /** Answers one question (see {@linkcode SearchOptions}). */
  async search(query: string, options: SearchOptions = {}): Promise<SearchAnswer> {
    const [a] = await this.searchMany([{ query, options }]);
    return a;
  }

  /**
   * Answers the questions: those with the same options go to every shard
   * in one `/v1/batch`, and each question's lists are merged to its `k`.
   */
  async searchMany(requests: readonly SearchRequest[]): Promise<SearchAnswer[]> {
    if (requests.length === 0) return [];
    const t0 = performance.now();
    const count = this.#shards.length;
    for (const s of this.#states) {
      if (s.state !== "up" && this.#shards[s.index].port !== null) {
        throw new Unavailable(
          `shard ${s.index} of ${count} is ${s.state} (restarted ${s.restarts} times); ` +
            "try again shortly",
        );
      }
    }
    const now = performance.now();
    this.#failedUntil.forEach((until, i) => {
      if (until > now) throw new Unavailable(this.#failure[i]);
    });
    const groups = new Map<string, number[]>();
    requests.forEach((r, j) => {
      const o = r.options ?? {};
      const key = JSON.stringify([o.k ?? 5, o.nprobe ?? null, o.probeTau ?? null, o.exact ?? null]);
      const g = groups.get(key);
      if (g) g.push(j);
      else groups.set(key, [j]);
    });
    const out: SearchAnswer[] = new Array(requests.length);
    await Promise.all([...groups.values()].map(async (js) => {
      const o = requests[js[0]].options ?? {};
      const k = o.k ?? 5;
      const body = JSON.stringify({
        queries: js.map((j) => requests[j].query),
        k,
        ...(o.nprobe !== undefined ? { nprobe: o.nprobe } : {}),
        ...(o.probeTau !== undefined ? { probe_tau: o.probeTau } : {}),
        ...(o.exact !== undefined ? { exact: o.exact } : {}),
      });
      const perShard = await Promise.all(
        this.#shards.map((_, s) => this.#ask(s, body, js.length)),
      );
      js.forEach((j, u) => {
        let best: ShardHit[] = [];
        let exact = true;
        for (const answers of perShard) {
          if (answers === null) continue;
          const a = answers[u];
          exact &&= a.exact;
          best = mergeHits(best, a.results.map(toShardHit), k);
        }
        out[j] = {
          query: requests[j].query,
          took_ms: 0,
          exact: perShard.every((a) => a === null) ? (o.exact ?? true) : exact,
          results: best.map((h, r) => fromShardHit(h, r + 1)),
        };
      });
    }));
    const took = ROUND(performance.now() - t0);
    return out.map((a) => ({ ...a, took_ms: took }));
  }

  /** Shard `s`'s answers to a `/v1/batch` body, or `null` for an empty shard. */
  async #ask(s: number, body: string, n: number): Promise<SearchAnswer[] | null> {
    const ep = this.#shards[s];
    if (ep.port === null) return null;
    const count = this.#shards.length;
    const host = ep.host ?? "127.0.0.1";
    const shown = host.includes(":") ? `[${host}]` : host;
    let res: Response;
    try {
      res = await fetch(`http://${shown}:${ep.port}/v1/batch`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (e) {
      const why = e instanceof DOMException && e.name === "TimeoutError"
        ? `did not answer within ${this.#timeoutMs / 1000} s`
        : `is not answering (${e instanceof Error ? e.message : e})`;
      // The requests that follow within a second (the queue's retries) fail at once.
      this.#failure[s] = `shard ${s} of ${count} ${why}; try again shortly`;
      this.#failedUntil[s] = performance.now() + FAILED_MS;
      throw new Unavailable(this.#failure[s]);
    }
    let got: { results?: SearchAnswer[]; error?: string };
    try {
      got = await res.json();
    } catch (e) {
      throw new Unavailable(
        `shard ${s} of ${count} broke off its answer (${e instanceof Error ? e.message : e}); ` +
          "try again shortly",
      );
    }
    if (res.status === 503) throw new Unavailable(`shard ${s} of ${count}: ${got.error}`);
    if (res.status === 400) throw new InputError({ file: "", where: "", message: `${got.error}` });
    if (res.status !== 200 || !Array.isArray(got.results) || got.results.length !== n) {
      throw new Error(
        `shard ${s} of ${count} answered ${res.status}: ${got.error ?? "no results"}`,
      );
    }
    return got.results;
  }
}

/** A shard server's hit as a {@linkcode ShardHit} (keeping title and context). */
function toShardHit(h: SearchHit): ShardHit & { readonly hit: SearchHit } {
  const w = h as WireHit;
  if (typeof w.position !== "number" || typeof w.phrase_index !== "number") {
    throw new Error("a shard's hit has no position (was it started with --shard-hits?)");
  }
  return {
    position: w.position,
    phraseIndex: w.phrase_index,
    score: h.score,
    paragraph: h.paragraph_id,
    phrase: h.phrase,
    hit: h,
  };
}

/** The API's hit of a merged {@linkcode ShardHit}, ranked `rank`, without the shard fields. */
function fromShardHit(h: ShardHit, rank: number): SearchHit {
  const { position: _p, phrase_index: _i, ...rest } = (h as ShardHit & { hit: WireHit }).hit;
  return { ...rest, rank };
}
