/**
 * The demo server ({@linkcode startServer}): an index and a question
 * encoder ({@linkcode Searcher}) behind the routes of `api.ts`, on the
 * HTTP/1.1 listener of `http.ts` (limits and timeouts there), bound to
 * 127.0.0.1 unless told otherwise, one log line per request on stderr
 * (`METHOD path status ms`). It answers only requests whose `Host` is its
 * own address (`http.ts` `allowedHosts`), holds at most `maxConnections`
 * connections (default: a margin below the descriptor limit, `http.ts`
 * `defaultMaxConnections`) and answers `/healthz` at once, whatever the
 * search queue holds. As a scoped resource: {@linkcode acquireServer} (shut
 * down when its scope closes) and the {@linkcode DemoServer} Layer over the
 * {@linkcode PhraseIndex} in context ({@linkcode DemoServerLive}).
 *
 * @example
 * ```ts
 * import { startServer } from "./server.ts";
 * const searcher = {
 *   info: { kind: "exact", metric: "ip", phrases: 1, paragraphs: 1, d: 2, encoder: "fake" },
 *   search: (query: string) => Promise.resolve({ query, took_ms: 0, exact: true, results: [] }),
 * };
 * const s = await startServer({ searcher, port: 0, log: false });
 * const h = await (await fetch(`${s.url}healthz`)).json();
 * if (h.status !== "ok" || h.encoder !== "fake") throw new Error(JSON.stringify(h));
 * await s.shutdown();
 * ```
 *
 * @module
 */
import * as Context from "effect/Context";
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import type * as Scope from "effect/Scope";
import { REPO_ROOT } from "../io/repo.ts";
import type { ExactIndex } from "../search/index/read.ts";
import { PhraseIndex } from "../search/open/phrase_index.ts";
import { apiHandler, errorResponse, SearchQueue } from "./api.ts";
import { listenHttp } from "./http.ts";
import { Searcher, type SearcherLike } from "./search.ts";

/** The static files served by default (the demo page). */
export const STATIC_DIR = `${REPO_ROOT}/serve/static`;

/** Options of {@linkcode startServer}. */
export interface ServerOptions {
  /** A searcher already open (else `index` and `encoder` open one). */
  readonly searcher?: SearcherLike;
  /**
   * The index (with `encoder`): a folder, opened and closed by the server,
   * or an open index its owner closes (a {@linkcode PhraseIndex}).
   */
  readonly index?: string | ExactIndex;
  /** The encoder's name (with `index`). */
  readonly encoder?: string;
  /** The encoder's model (default the bundled one). */
  readonly model?: string;
  /** Folder of the static files (default {@linkcode STATIC_DIR}). */
  readonly staticDir?: string;
  /** Address to bind (default `127.0.0.1`). */
  readonly host?: string;
  /** Port (default 8080; 0: any free port). */
  readonly port?: number;
  /** Ranks when a request gives no `k` (default 5). */
  readonly topK?: number;
  /** An `ivf-pq` index: default partitions probed. */
  readonly nprobe?: number;
  /**
   * An `ivf-pq` index: default adaptive probing (`--probe-tau`; a request's
   * `probe_tau` overrides it; `SearcherOptions.probeTau`).
   */
  readonly probeTau?: number;
  /** An `ivf-pq` index: approximate candidates re-scored exactly (default 0, as `search`). */
  readonly refine?: number;
  /** An `ivf-pq` index: answer exactly unless a request says `exact=0`. */
  readonly exact?: boolean;
  /** A shard's index: hits carry `position` and `phrase_index` (`SearcherOptions.shardHits`). */
  readonly shardHits?: boolean;
  /** Open the index under this memory budget in bytes (`SearcherOptions.memoryBudget`). */
  readonly memoryBudget?: number;
  /** Search requests waiting or running at most (default 32); more get 503. */
  readonly queue?: number;
  /** Questions encoded and scored together at most (default 32; see `SearchQueue`). */
  readonly batch?: number;
  /** Log lines: `true` (default) to stderr, `false` none, or a function. */
  readonly log?: boolean | ((line: string) => void);
  /** How long a request head may take, ms (default 10 000). */
  readonly headTimeoutMs?: number;
  /** How long a request body may take, ms (default 10 000). */
  readonly bodyTimeoutMs?: number;
  /** How long shutdown waits for open requests, ms (default 15 000). */
  readonly drainTimeoutMs?: number;
  /**
   * Connections open at once at most (default: from this process's
   * descriptor limit, `http.ts` `defaultMaxConnections`); more get 503.
   */
  readonly maxConnections?: number;
}

/** A running demo server. */
export interface RunningServer {
  /** `http://HOST:PORT/`. */
  readonly url: string;
  /** The bound port. */
  readonly port: number;
  /** The bound address. */
  readonly host: string;
  /** The searcher it answers from. */
  readonly searcher: SearcherLike;
  /** Stops taking requests, answers those in flight, closes the connections (and the searcher it opened). */
  shutdown(): Promise<void>;
  /** Resolves when the server has stopped. */
  readonly finished: Promise<void>;
}

/** Starts the demo server (see the module notes). */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  let owned: Searcher | undefined;
  let searcher = options.searcher;
  if (searcher === undefined) {
    if (options.index === undefined || options.encoder === undefined) {
      throw new TypeError("startServer needs a searcher, or an index and an encoder");
    }
    owned = await Searcher.open({
      index: options.index,
      encoder: options.encoder,
      model: options.model,
      nprobe: options.nprobe,
      probeTau: options.probeTau,
      refine: options.refine,
      exact: options.exact,
      shardHits: options.shardHits,
      ...(options.memoryBudget !== undefined ? { memoryBudget: options.memoryBudget } : {}),
    });
    searcher = owned;
  }
  const log = options.log === false
    ? undefined
    : typeof options.log === "function"
    ? options.log
    : (line: string) => console.error(line);
  const handler = apiHandler({
    searcher,
    queue: new SearchQueue(options.queue ?? 32, options.batch ?? 32),
    staticDir: options.staticDir ?? STATIC_DIR,
    topK: options.topK,
  });
  const host = options.host ?? "127.0.0.1";
  let http;
  try {
    http = listenHttp({
      hostname: host,
      port: options.port ?? 8080,
      handler,
      errorResponse: (status, message) => errorResponse(status, message),
      headTimeoutMs: options.headTimeoutMs,
      bodyTimeoutMs: options.bodyTimeoutMs,
      drainTimeoutMs: options.drainTimeoutMs,
      maxConnections: options.maxConnections,
      log,
    });
  } catch (e) {
    await owned?.close();
    throw e;
  }
  const port = http.addr.port;
  const shown = host.includes(":") ? `[${host}]` : host;
  let stopping: Promise<void> | undefined;
  const shutdown = () =>
    stopping ??= (async () => {
      await http.shutdown();
      await owned?.close();
    })();
  return {
    url: `http://${shown}:${port}/`,
    port,
    host,
    searcher,
    shutdown,
    finished: http.finished.then(() => stopping),
  };
}

/**
 * {@linkcode startServer} in the current scope: the scope's close shuts it
 * down (stops taking requests, answers those in flight, closes the
 * connections and the searcher it opened). A server that cannot start fails
 * with what `startServer` threw (an `InputError` for a bad index or
 * encoder, the listener's error for a port in use).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { acquireServer } from "./server.ts";
 * const searcher = {
 *   info: { kind: "exact", metric: "ip", phrases: 1, paragraphs: 1, d: 2, encoder: "fake" },
 *   search: (query: string) => Promise.resolve({ query, took_ms: 0, exact: true, results: [] }),
 * };
 * const url = await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
 *   const s = yield* acquireServer({ searcher, port: 0, log: false });
 *   const h = yield* Effect.promise(() => fetch(`${s.url}healthz`).then((r) => r.json()));
 *   if (h.encoder !== "fake") throw new Error(JSON.stringify(h));
 *   return s.url;
 * })));
 * // Shut down with its scope: nothing listens there any more.
 * const refused = await fetch(`${url}healthz`).then(() => false, () => true);
 * if (!refused) throw new Error("still listening");
 * ```
 */
export const acquireServer = (
  options: ServerOptions,
): Effect.Effect<RunningServer, unknown, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.tryPromise({ try: () => startServer(options), catch: (e) => e }),
    (server) => Effect.promise(() => server.shutdown()),
  );

/** The running demo server, as a service (see {@linkcode DemoServerLive}). */
export class DemoServer extends Context.Service<DemoServer, RunningServer>()(
  "phraseval/serve/DemoServer",
) {}

/**
 * The {@linkcode DemoServer} over the {@linkcode PhraseIndex} in context
 * (its Layer owns the index: its search workers and files are released
 * after the server has shut down), with `options`' encoder, address and
 * limits; the server shuts down when the Layer's scope closes.
 *
 * @example
 * ```ts ignore
 * import * as Layer from "effect/Layer";
 * import { PhraseIndexLive } from "../search/open/phrase_index.ts";
 * import { DemoServerLive } from "./server.ts";
 * const layer = DemoServerLive({ encoder: "sparse-pi", port: 8080 }).pipe(
 *   Layer.provide(PhraseIndexLive("out/index")),
 * );
 * ```
 */
export const DemoServerLive = (
  options: Omit<ServerOptions, "index" | "searcher" | "memoryBudget">,
): Layer.Layer<DemoServer, unknown, PhraseIndex> =>
  Layer.effect(
    DemoServer,
    Effect.gen(function* () {
      const { index } = yield* PhraseIndex;
      return yield* acquireServer({ ...options, index });
    }),
  );
