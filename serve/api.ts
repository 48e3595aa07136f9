/**
 * The demo's routes ({@linkcode apiHandler}): a request in, a response out,
 * with every check of the API done here (the HTTP framing, sizes and
 * timeouts are `http.ts`'s).
 *
 * | route | answer |
 * | --- | --- |
 * | `GET /api?query=Q` | PIQA's shape: `[[context, start_char, end_char, score], ...]`, the top k |
 * | `GET /v1/search?q=Q&k=K&nprobe=N&probe_tau=T&exact=0\|1` | `{query, took_ms, exact, results: [{rank, title, paragraph_id, phrase, start, end, score, context}]}` |
 * | `POST /v1/batch` `{"queries": [...], "k"?, "nprobe"?, "probe_tau"?, "exact"?}` (`Content-Type: application/json`) | `{took_ms, results: [<the /v1/search object per query>]}`, in order, at most 64 queries |
 * | `GET /healthz` (answered at once, never queued) | `{status: "ok", kind, metric, phrases, paragraphs, d, encoder, nlist?, nprobe?, probe_tau?}` (an IVF-PQ index: its lists and the server's default `nprobe`, and `probe_tau` when it has one); over shards also `shards: [{index, count, state, restarts}]`, and `status` is `"degraded"` while one is not up |
 * | `GET /`, `GET /<file>` | the static files of `staticDir` (`/` is `index.html`) |
 *
 * Errors are JSON `{"error": "..."}`: 400 for a missing, empty or
 * over-4-KiB query, bad percent-encoding, a query that is not UTF-8, a bad
 * `k` (1..100), `nprobe` (ivf-pq only, 1..nlist), `probe_tau` (ivf-pq only,
 * a finite number above 0) or `exact` (`0`/`1`), a
 * bad JSON body or more than 64 queries; 415 for a `/v1/batch` whose
 * `Content-Type` is not `application/json` (a cross-site page may send a
 * `text/plain` POST without a CORS preflight); 404 for anything else (a static
 * path that does not resolve, after decoding and `realpath`, to a regular
 * file inside `staticDir`: `..`, encoded slashes, NUL bytes, hidden files
 * and links out of the folder included); 405 with `Allow`; 503 with
 * `Retry-After` when the search queue is full, or, over shards, when a
 * shard a request needs is not answering ({@linkcode Unavailable}); 500 when
 * the search fails on the server's side (an index file found cut short while
 * it serves, under a memory budget) (see
 * {@linkcode SearchQueue}: concurrent searches, and the queries of one
 * `/v1/batch`, are encoded and scored together; a `/v1/batch` goes in
 * chunks of 8 questions, so that other requests are answered between
 * them). On an `exact` index `exact=0` is accepted and
 * answered exactly (`"exact": true`).
 *
 * `probe_tau` is adaptive probing (`search --probe-tau`): of the `nprobe`
 * best partitions, only those whose probing score is within `probe_tau ·
 * ‖q‖ · mean‖c‖` of the best one's (at least one); it overrides the
 * server's `--probe-tau`. Like `nprobe`, it is taken but has no effect on a
 * question answered exactly (`exact=1`).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Semaphore from "effect/Semaphore";
import { InputError } from "../io/errors.ts";
import type { HttpRequest, HttpResponse } from "./http.ts";
import type { SearchAnswer, SearcherLike, SearchOptions, SearchRequest } from "./search.ts";

/** Largest query, in UTF-8 bytes. */
export const MAX_QUERY_BYTES = 4096;
/** Most queries of one `/v1/batch`. */
export const MAX_BATCH = 64;
/** Largest `k`. */
export const MAX_K = 100;

/** The search queue was full. */
export class QueueFull extends Error {}

/**
 * A part of the searcher is not answering now (a shard of a sharded
 * server, `shards.ts`): the request is answered 503 with `Retry-After` and
 * this message, which names the part.
 */
export class Unavailable extends Error {}

/** A request's questions waiting in the {@linkcode SearchQueue}. */
interface Job {
  readonly searcher: SearcherLike;
  readonly items: readonly SearchRequest[];
  /** The answers so far (of `items[0..answers.length)`). */
  readonly answers: SearchAnswer[];
  readonly resolve: (answers: SearchAnswer[]) => void;
  readonly reject: (e: unknown) => void;
}

/** The questions of a job a pass answers. */
interface Take {
  readonly job: Job;
  readonly items: readonly SearchRequest[];
}

/**
 * The search loop: one pass at a time (searches are CPU-bound), with at
 * most `limit` requests waiting or running: an Effect `Semaphore` of
 * `limit` permits, one taken by each request from its arrival to its
 * answer; a request that cannot take one at once (`takeIfAvailable`) is
 * refused with {@linkcode QueueFull}, never made to wait. A `/v1/batch`
 * counts as one request.
 *
 * Micro-batching: when the loop is free it lets the event loop turn once
 * (so the requests that arrived during the last pass are read), then takes
 * the first waiting request and every request waiting behind it, in order,
 * while their questions number at most `maxBatch`, and answers them in one
 * `searchMany` call of the searcher (one encoder call, one scoring pass per
 * group). A request takes at most `chunk` questions (default 8) into a
 * pass: a larger one (a `/v1/batch`) goes back to the end of the line with
 * the rest of its questions, so that the thread is never held by more than
 * `chunk` questions of one request, the requests that arrive meanwhile
 * (a single question, `/healthz`) are answered between its chunks, and its
 * answers are the same (each question is answered as it would be alone).
 * If a pass fails, each of its requests is retried alone, so one request's
 * error is not another's. A searcher without `searchMany` is asked one
 * question at a time, one request at a time.
 *
 * @example
 * ```ts
 * import { QueueFull, SearchQueue } from "./api.ts";
 * const q = new SearchQueue(1);
 * let release = () => {};
 * const gate = new Promise<void>((r) => release = r);
 * const searcher = {
 *   info: { kind: "exact", metric: "ip", phrases: 1, paragraphs: 1, d: 1, encoder: "fake" },
 *   search: async (query: string) => {
 *     await gate;
 *     return { query, took_ms: 0, exact: true, results: [] };
 *   },
 * };
 * const first = q.search(searcher, [{ query: "a" }]);
 * const refused = await q.search(searcher, [{ query: "b" }]).catch((e) => e);
 * if (!(refused instanceof QueueFull)) throw new Error();
 * release();
 * if ((await first)[0].query !== "a") throw new Error();
 * ```
 */
export class SearchQueue {
  #waiting: Job[] = [];
  /** The cap: a permit per request waiting or running. */
  readonly #permits: Semaphore.Semaphore;
  #busy = false;

  /**
   * A queue that admits `limit` requests and answers their questions in batches.
   *
   * @param limit requests waiting or running at most
   * @param maxBatch questions answered together at most (default 32)
   * @param chunk questions of one request in one pass at most (default 8)
   */
  constructor(readonly limit: number, readonly maxBatch = 32, readonly chunk = 8) {
    this.#permits = Semaphore.makeUnsafe(limit);
  }

  /** Requests waiting or running (the permits taken). */
  get size(): number {
    // Releasing no permit answers the permits free (nobody ever waits for one here).
    return this.limit - Effect.runSync(this.#permits.release(0));
  }

  /**
   * Answers one request's questions (in order) with `searcher`, together
   * with the requests waiting with it; refuses them when the queue is full.
   */
  search(searcher: SearcherLike, items: readonly SearchRequest[]): Promise<SearchAnswer[]> {
    if (!Effect.runSync(this.#permits.takeIfAvailable(1))) {
      return Promise.reject(
        new QueueFull(`the search queue is full (${this.limit} waiting or running)`),
      );
    }
    const release = () => Effect.runSync(this.#permits.release(1));
    if (items.length === 0) {
      release();
      return Promise.resolve([]);
    }
    const p = new Promise<SearchAnswer[]>((resolve, reject) => {
      this.#waiting.push({ searcher, items, answers: [], resolve, reject });
    });
    if (!this.#busy) this.#drain();
    return p.finally(release);
  }

  async #drain(): Promise<void> {
    this.#busy = true;
    try {
      while (this.#waiting.length > 0) {
        // One turn of the event loop first: requests that came in during the
        // last (synchronous) scoring pass are read and join this one.
        await new Promise((r) => setTimeout(r, 0));
        const size = Math.max(1, Math.min(this.chunk, this.maxBatch));
        const next = (job: Job): Take => ({
          job,
          items: job.items.slice(job.answers.length, job.answers.length + size),
        });
        const first = this.#waiting[0];
        const take = [next(first)], rest: Job[] = [];
        let n = take[0].items.length;
        const batching = first.searcher.searchMany !== undefined;
        for (const job of this.#waiting.slice(1)) {
          const t = next(job);
          if (batching && job.searcher === first.searcher && n + t.items.length <= this.maxBatch) {
            take.push(t);
            n += t.items.length;
          } else rest.push(job);
        }
        this.#waiting = rest;
        const unfinished = await this.#answer(take);
        // A request with questions left goes to the end of the line.
        this.#waiting.push(...unfinished);
      }
    } finally {
      this.#busy = false;
    }
  }

  /** Answers one pass; the jobs that have questions left. */
  async #answer(takes: readonly Take[]): Promise<Job[]> {
    const s = takes[0].job.searcher;
    const done = (t: Take, answers: readonly SearchAnswer[]): Job[] => {
      t.job.answers.push(...answers);
      if (t.job.answers.length < t.job.items.length) return [t.job];
      t.job.resolve(t.job.answers);
      return [];
    };
    try {
      const all = await ask(s, takes.flatMap((t) => t.items));
      let o = 0;
      return takes.flatMap((t) => done(t, all.slice(o, o += t.items.length)));
    } catch (e) {
      if (takes.length === 1) {
        takes[0].job.reject(e);
        return [];
      }
      const left: Job[] = [];
      for (const t of takes) {
        try {
          left.push(...done(t, await ask(s, t.items)));
        } catch (e) {
          t.job.reject(e);
        }
      }
      return left;
    }
  }
}

/** The answers of `items`: together, or one at a time without `searchMany`. */
async function ask(s: SearcherLike, items: readonly SearchRequest[]): Promise<SearchAnswer[]> {
  if (s.searchMany !== undefined) return await s.searchMany(items);
  const out: SearchAnswer[] = [];
  for (const it of items) out.push(await s.search(it.query, it.options));
  return out;
}

/** Options of {@linkcode apiHandler}. */
export interface ApiOptions {
  /** The index and encoder. */
  readonly searcher: SearcherLike;
  /** The queue searches run through. */
  readonly queue: SearchQueue;
  /** The static files' folder (its real path is taken once). */
  readonly staticDir: string;
  /** Ranks when `k` is not given (default 5). */
  readonly topK?: number;
}

/** A 4xx/5xx answer. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

const JSON_TYPE = "application/json; charset=utf-8";
const COMMON = { "x-content-type-options": "nosniff", "referrer-policy": "no-referrer" };

const json = (status: number, v: unknown, headers: Record<string, string> = {}): HttpResponse => ({
  status,
  headers: { "content-type": JSON_TYPE, "cache-control": "no-store", ...COMMON, ...headers },
  body: JSON.stringify(v),
});

/** The JSON error response `{error}` of `status`. */
export const errorResponse = (
  status: number,
  message: string,
  headers: Record<string, string> = {},
): HttpResponse => json(status, { error: message }, headers);

const utf8 = new TextDecoder("utf-8", { fatal: true });
const enc = new TextEncoder();

/** Percent-decodes `s` strictly to bytes, then UTF-8 (fatal); a reason on failure. */
export function strictDecode(s: string, plus: boolean): string {
  const bytes: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x25) {
      const h = s.slice(i + 1, i + 3);
      if (!/^[0-9A-Fa-f]{2}$/.test(h)) throw new HttpError(400, "bad percent-encoding");
      bytes.push(parseInt(h, 16));
      i += 2;
    } else if (plus && c === 0x2b) bytes.push(0x20);
    else if (c < 0x80) bytes.push(c);
    else throw new HttpError(400, "bad percent-encoding (a raw non-ASCII byte)");
  }
  try {
    return utf8.decode(new Uint8Array(bytes));
  } catch {
    throw new HttpError(400, "the query is not valid UTF-8");
  }
}

function parseQuery(raw: string): Map<string, string> {
  const out = new Map<string, string>();
  if (raw === "") return out;
  for (const part of raw.split("&")) {
    if (part === "") continue;
    const eq = part.indexOf("=");
    const k = strictDecode(eq < 0 ? part : part.slice(0, eq), true);
    const v = strictDecode(eq < 0 ? "" : part.slice(eq + 1), true);
    if (out.has(k)) throw new HttpError(400, `parameter ${JSON.stringify(k)} is given twice`);
    out.set(k, v);
  }
  return out;
}

function checkQuery(q: string | undefined, name: string): string {
  if (q === undefined) throw new HttpError(400, `missing query (${name}=...)`);
  if (q.trim() === "") throw new HttpError(400, "empty query");
  if (enc.encode(q).length > MAX_QUERY_BYTES) {
    throw new HttpError(400, `query over ${MAX_QUERY_BYTES} bytes`);
  }
  return q;
}

function intParam(
  v: string | number | undefined,
  name: string,
  lo: number,
  hi: number,
): number | undefined {
  if (v === undefined) return undefined;
  const n = typeof v === "number" ? v : /^\d{1,9}$/.test(v) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < lo || n > hi) {
    throw new HttpError(
      400,
      `${name} must be an integer from ${lo} to ${hi}, got ${JSON.stringify(v)}`,
    );
  }
  return n;
}

/** A decimal number as a query string may give it (`0.13`, `.5`, `1e-12`), not `0x1`, `Infinity`. */
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** `probe_tau` (a string of the query or a JSON number) checked: finite, above 0. */
function probeTauParam(v: string | number | undefined): number | undefined {
  if (v === undefined) return undefined;
  // At most 40 characters: the pattern backtracks over a long run of digits.
  const n = typeof v === "number" ? v : v.length <= 40 && DECIMAL.test(v) ? Number(v) : NaN;
  if (!(Number.isFinite(n) && n > 0)) {
    const got = typeof v === "number" ? String(v) : JSON.stringify(v);
    throw new HttpError(400, `probe_tau must be a number above 0, got ${got}`);
  }
  return n;
}

/** Search options from parameters (query string or batch body), checked. */
function searchOptions(
  info: SearcherLike["info"],
  topK: number,
  p: {
    k?: string | number;
    nprobe?: string | number;
    probe_tau?: string | number;
    exact?: string | boolean;
  },
): SearchOptions {
  const k = intParam(p.k, "k", 1, MAX_K) ?? topK;
  let nprobe: number | undefined;
  if (p.nprobe !== undefined) {
    if (info.nlist === undefined) {
      throw new HttpError(400, `nprobe applies to ivf-pq indexes only (this one is ${info.kind})`);
    }
    nprobe = intParam(p.nprobe, "nprobe", 1, info.nlist);
  }
  let probeTau: number | undefined;
  if (p.probe_tau !== undefined) {
    if (info.nlist === undefined) {
      throw new HttpError(
        400,
        `probe_tau applies to ivf-pq indexes only (this one is ${info.kind})`,
      );
    }
    probeTau = probeTauParam(p.probe_tau);
  }
  let exact: boolean | undefined;
  if (p.exact !== undefined) {
    if (p.exact === "1" || p.exact === true) exact = true;
    else if (p.exact === "0" || p.exact === false) exact = false;
    else throw new HttpError(400, `exact must be 0 or 1, got ${JSON.stringify(p.exact)}`);
  }
  return {
    k,
    ...(nprobe !== undefined ? { nprobe } : {}),
    ...(probeTau !== undefined ? { probeTau } : {}),
    ...(exact !== undefined ? { exact } : {}),
  };
}

const CONTENT_TYPES: Record<string, string> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  mjs: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  json: "application/json; charset=utf-8",
  svg: "image/svg+xml",
  png: "image/png",
  ico: "image/x-icon",
  txt: "text/plain; charset=utf-8",
};

const notFound = () => new HttpError(404, "not found");

/** The bytes of the static file of raw path `rawPath` inside `root` (a real path), or a 4xx. */
async function staticFile(
  root: string,
  rawPath: string,
): Promise<{ bytes: Uint8Array; type: string }> {
  if (rawPath === "/") rawPath = "/index.html";
  if (/%(2f|5c|00)/i.test(rawPath)) {
    throw new HttpError(400, "encoded slash, backslash or NUL in the path");
  }
  const path = strictDecode(rawPath, false);
  if (path.includes("\0") || path.includes("\\")) throw new HttpError(400, "bad path");
  const segs = path.slice(1).split("/");
  if (segs.some((s) => s === "" || s.startsWith("."))) throw notFound();
  let real: string;
  try {
    real = await Deno.realPath(`${root}/${segs.join("/")}`);
  } catch {
    throw notFound();
  }
  if (!real.startsWith(root + "/")) throw notFound();
  try {
    const st = await Deno.stat(real);
    if (!st.isFile) throw notFound();
    const bytes = await Deno.readFile(real);
    const ext = real.slice(real.lastIndexOf(".") + 1).toLowerCase();
    return { bytes, type: CONTENT_TYPES[ext] ?? "application/octet-stream" };
  } catch (e) {
    if (e instanceof HttpError) throw e;
    throw notFound();
  }
}

const ROUTES: Record<string, readonly string[]> = {
  "/api": ["GET", "HEAD"],
  "/v1/search": ["GET", "HEAD"],
  "/healthz": ["GET", "HEAD"],
  "/v1/batch": ["POST"],
};

/** The origin-form path and query of a request target, or a 400. */
function splitTarget(target: string): [string, string] {
  let t = target;
  const abs = /^https?:\/\/[^/?#]*/i.exec(t);
  if (abs !== null) t = t.slice(abs[0].length) || "/";
  if (!t.startsWith("/")) throw new HttpError(400, "bad request target");
  const hash = t.indexOf("#");
  if (hash >= 0) t = t.slice(0, hash);
  const q = t.indexOf("?");
  return q < 0 ? [t, ""] : [t.slice(0, q), t.slice(q + 1)];
}

/**
 * The demo's request handler (see the module notes).
 */
export function apiHandler(opts: ApiOptions): (req: HttpRequest) => Promise<HttpResponse> {
  const topK = opts.topK ?? 5;
  const { searcher, queue } = opts;
  let root: string | undefined;
  const rootOf = async () => {
    try {
      return root ??= await Deno.realPath(opts.staticDir);
    } catch {
      throw notFound(); // no static folder: nothing to serve
    }
  };

  const searchOne = async (query: string, o: SearchOptions): Promise<SearchAnswer> => {
    try {
      return (await queue.search(searcher, [{ query, options: o }]))[0];
    } catch (e) {
      throw asHttp(e);
    }
  };

  const route = async (req: HttpRequest): Promise<HttpResponse> => {
    const [path, rawQuery] = splitTarget(req.target);
    const allowed = ROUTES[path] ?? ["GET", "HEAD"];
    if (!allowed.includes(req.method)) {
      throw new HttpError(405, `${req.method} is not allowed here`, { allow: allowed.join(", ") });
    }
    switch (path) {
      case "/healthz": {
        const info = searcher.info;
        // A sharded server with a shard not up is "degraded" (still 200: the server answers).
        const degraded = info.shards?.some((s) => s.state !== "up") === true;
        return json(200, { status: degraded ? "degraded" : "ok", ...info });
      }
      case "/api": {
        const params = parseQuery(rawQuery);
        const q = checkQuery(params.get("query"), "query");
        const a = await searchOne(q, searchOptions(searcher.info, topK, {}));
        return json(200, a.results.map((r) => [r.context, r.start, r.end, r.score]));
      }
      case "/v1/search": {
        const params = parseQuery(rawQuery);
        const q = checkQuery(params.get("q"), "q");
        const o = searchOptions(searcher.info, topK, {
          k: params.get("k"),
          nprobe: params.get("nprobe"),
          probe_tau: params.get("probe_tau"),
          exact: params.get("exact"),
        });
        return json(200, await searchOne(q, o));
      }
      case "/v1/batch": {
        const type = req.headers.get("content-type")?.split(";")[0].trim().toLowerCase();
        if (type !== "application/json") {
          // A cross-site form or fetch may POST text/plain without asking first (CORS).
          throw new HttpError(
            415,
            `the body must be sent as Content-Type: application/json (got ${
              type === undefined ? "none" : JSON.stringify(type)
            })`,
          );
        }
        let body: unknown;
        try {
          body = JSON.parse(utf8.decode(req.body));
        } catch (e) {
          throw new HttpError(400, `bad JSON body (${e instanceof Error ? e.message : e})`);
        }
        if (typeof body !== "object" || body === null || Array.isArray(body)) {
          throw new HttpError(400, 'the body must be a JSON object {"queries": [...]}');
        }
        const b = body as Record<string, unknown>;
        if (!Array.isArray(b.queries)) {
          throw new HttpError(400, '"queries" must be an array of strings');
        }
        if (b.queries.length === 0) throw new HttpError(400, '"queries" is empty');
        if (b.queries.length > MAX_BATCH) {
          throw new HttpError(400, `${b.queries.length} queries; at most ${MAX_BATCH}`);
        }
        const qs = b.queries.map((q, i) => {
          if (typeof q !== "string") throw new HttpError(400, `queries[${i}] is not a string`);
          try {
            return checkQuery(q, "q");
          } catch (e) {
            throw new HttpError(400, `queries[${i}]: ${(e as Error).message}`);
          }
        });
        for (const key of ["k", "nprobe", "probe_tau"]) {
          if (b[key] !== undefined && typeof b[key] !== "number") {
            throw new HttpError(400, `${key} must be a number`);
          }
        }
        if (
          b.exact !== undefined && typeof b.exact !== "boolean" && b.exact !== 0 && b.exact !== 1
        ) {
          throw new HttpError(400, "exact must be true, false, 0 or 1");
        }
        const o = searchOptions(searcher.info, topK, {
          k: b.k as number | undefined,
          nprobe: b.nprobe as number | undefined,
          probe_tau: b.probe_tau as number | undefined,
          exact: b.exact === undefined ? undefined : b.exact === true || b.exact === 1,
        });
        const t0 = performance.now();
        let results: SearchAnswer[];
        try {
          results = await queue.search(searcher, qs.map((query) => ({ query, options: o })));
        } catch (e) {
          throw asHttp(e);
        }
        return json(200, { took_ms: Math.round((performance.now() - t0) * 1000) / 1000, results });
      }
    }
    const f = await staticFile(await rootOf(), path);
    return {
      status: 200,
      headers: { "content-type": f.type, "cache-control": "no-cache", ...COMMON },
      body: f.bytes,
    };
  };

  return async (req) => {
    try {
      return await route(req);
    } catch (e) {
      const h = asHttp(e);
      return errorResponse(h.status, h.message, h.headers);
    }
  };
}

function asHttp(e: unknown): HttpError {
  if (e instanceof HttpError) return e;
  if (e instanceof QueueFull || e instanceof Unavailable) {
    return new HttpError(503, e.message, { "retry-after": "1" });
  }
  // An InputError naming a file is the server's own data gone bad (an index file cut short
  // while it serves, read under a memory budget): not the client's fault.
  if (e instanceof InputError) {
    return e.file === "" ? new HttpError(400, e.message) : new HttpError(500, e.toString());
  }
  return new HttpError(500, e instanceof Error ? e.message : String(e));
}
