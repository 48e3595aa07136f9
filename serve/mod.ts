/**
 * The demo server room: a {@linkcode Searcher} (an index and a question
 * encoder answering question strings as open search does), the routes
 * (`apiHandler`: `/api`, `/v1/search`, `/v1/batch`, `/healthz`, static
 * files), the HTTP/1.1 listener with its limits (`listenHttp`),
 * `startServer`, and what `deno task serve` does first (`ensureIndex`,
 * `serveGrants`).
 *
 * @example
 * ```ts
 * import { SearchQueue } from "./mod.ts";
 * if (new SearchQueue(2).size !== 0) throw new Error();
 * ```
 *
 * @module
 */
export { Searcher } from "./search.ts";
export type {
  SearchAnswer,
  SearcherInfo,
  SearcherLike,
  SearcherOptions,
  SearchHit,
  SearchOptions,
  SearchRequest,
} from "./search.ts";
export { apiHandler, MAX_BATCH, MAX_K, MAX_QUERY_BYTES, QueueFull, SearchQueue } from "./api.ts";
export type { ApiOptions } from "./api.ts";
export { listenHttp } from "./http.ts";
export type { HttpRequest, HttpResponse, HttpServer, HttpServerOptions } from "./http.ts";
export { startServer, STATIC_DIR } from "./server.ts";
export type { RunningServer, ServerOptions } from "./server.ts";
export {
  defaultIndexDir,
  dumpFingerprint,
  ensureIndex,
  isIndexFolder,
  serveGrants,
  SOURCE_FILE,
} from "./launch.ts";
export type { EnsureIndexOptions, ServeGrantsInput } from "./launch.ts";
