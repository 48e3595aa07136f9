/**
 * The demo server room: a {@linkcode Searcher} (an index and a question
 * encoder answering question strings as open search does), the routes
 * (`apiHandler`: `/api`, `/v1/search`, `/v1/batch`, `/healthz`, static
 * files), the HTTP/1.1 listener with its limits (`listenHttp`),
 * `startServer`, what `deno task serve` does first (`ensureIndex`,
 * `serveGrants`), and its work as a stage (`serveStage`: the checks of the
 * index, then the server child); over a folder of shards, the front's
 * `ShardedSearcher` and the `ShardSupervisor` of the shards' server
 * processes (`runShardedServers`).
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
  ShardHealth,
} from "./search.ts";
export {
  apiHandler,
  MAX_BATCH,
  MAX_K,
  MAX_QUERY_BYTES,
  QueueFull,
  SearchQueue,
  Unavailable,
} from "./api.ts";
export { ShardedSearcher } from "./shards.ts";
export type { ShardedSearcherOptions, ShardEndpoint } from "./shards.ts";
export { ShardStartError, ShardSupervisor, shellCode, spawnServer } from "./supervise.ts";
export type { ServerProcess, ShardCommand, ShardSupervisorOptions } from "./supervise.ts";
export type { ApiOptions } from "./api.ts";
export { acquireHttp, listenHttp } from "./http.ts";
export type { HttpRequest, HttpResponse, HttpServer, HttpServerOptions } from "./http.ts";
export { startServer, STATIC_DIR } from "./server.ts";
export type { RunningServer, ServerOptions } from "./server.ts";
export {
  defaultIndexDir,
  dumpFingerprint,
  ensureIndex,
  frontGrants,
  isIndexFolder,
  serveGrants,
  SOURCE_FILE,
} from "./launch.ts";
export type { EnsureIndexOptions, FrontGrantsInput, ServeGrantsInput } from "./launch.ts";
export { runServerChild, runShardedServers, serveStage } from "./stage.ts";
export type { ServeStageError, ServeStageOptions } from "./stage.ts";
