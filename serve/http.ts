/**
 * A small HTTP/1.1 server on a raw TCP listener ({@linkcode listenHttp}),
 * used instead of `Deno.serve` because the demo must bound what a client can
 * hold: `Deno.serve` (Deno 2.9) keeps a connection open after a response
 * that says `Connection: close`, so a slow body cannot be answered with 408
 * and the connection closed, and it has no limit on how long a client may
 * take to send its request head. Here:
 *
 * - **Heads**: at most `maxHead` bytes (else 431 and the connection closed);
 *   a head that does not arrive within `headTimeoutMs` of the connection
 *   (or of the previous response) closes the connection, with a 408 when
 *   part of it came. Each connection is its own fiber, so idle connections
 *   never block another client.
 * - **Bodies**: `Content-Length` is checked first (over `maxBody` → 413
 *   before any of the body is read, and the connection closed); a chunked
 *   body is read until it passes `maxBody` (413); both framings at once,
 *   or a malformed one, is 400; a body that does not arrive within
 *   `bodyTimeoutMs` → 408, and the connection closed.
 * - **Requests**: the request line's target is passed on as sent (no
 *   normalisation: the router decides what `/../` means). HTTP/1.0 without
 *   `Host` works (answered and closed); HTTP/1.1 keeps the connection open
 *   unless the client says `Connection: close`.
 * - **Host** (against DNS rebinding): two `Host` fields are a 400; a `Host`
 *   that is not this server's address and port is a 421 (see
 *   {@linkcode allowedHosts}: `127.0.0.1:8080`, `localhost:8080`,
 *   `[::1]:8080`, whichever the server is bound to; any when it is bound
 *   to `0.0.0.0` or `::`).
 * - **Connections**: at most `maxConnections` open at once (default
 *   {@linkcode defaultMaxConnections}: a margin below the process's
 *   descriptor limit); one more is answered 503 (`Retry-After: 1`) and
 *   closed at once, before the next is accepted. A failed accept (out of descriptors: EMFILE, ENFILE;
 *   or any other error while the server runs) does not end the accept
 *   loop: it waits (10 ms, doubling up to 1 s) and accepts again. Each of
 *   these two events is logged once, the first time it happens.
 * - **Fibers**: each connection is a fiber of an Effect `FiberSet` that the
 *   server owns (in a scope of its own); the fiber's finalizer closes its
 *   `Deno.Conn`, and interrupting it (which aborts the bounded read or
 *   write in progress) closes the connection at once.
 * - **Shutdown** ({@linkcode HttpServer.shutdown}; in an Effect scope,
 *   {@linkcode acquireHttp}): for a short grace
 *   ({@linkcode SHUTDOWN_GRACE_MS}) the server still accepts and reads, so
 *   that requests already sent (waiting in the kernel while a search held
 *   the thread) are read; then the listener is closed and the connections
 *   with no request started are interrupted; every request read is answered
 *   (with `Connection: close`), then `finished` resolves; connections still
 *   open after `drainTimeoutMs` are interrupted, and the server's scope is
 *   closed (its `FiberSet` with it: nothing of a connection outlives it).
 *
 * One log line per request: `METHOD path status ms` (the path without its
 * query, control characters escaped).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import * as Fiber from "effect/Fiber";
import * as FiberSet from "effect/FiberSet";
import * as Scope from "effect/Scope";
import { openFilesLimit } from "../io/limits.ts";
import { runCommandSync } from "../io/process.ts";

/** A parsed request. */
export interface HttpRequest {
  /** The method, as sent (upper case by convention). */
  readonly method: string;
  /** The request target exactly as sent (`/path?query`, or an absolute URL). */
  readonly target: string;
  /** `1.0` or `1.1`. */
  readonly version: "1.0" | "1.1";
  /** The header fields (names lower case). */
  readonly headers: Headers;
  /** The body (empty when none). */
  readonly body: Uint8Array;
}

/** A response to write. */
export interface HttpResponse {
  /** Status code. */
  readonly status: number;
  /** Header fields (besides `content-length` and `connection`, which are set here). */
  readonly headers?: Readonly<Record<string, string>>;
  /** The body. */
  readonly body?: Uint8Array | string;
}

/** Options of {@linkcode listenHttp}. */
export interface HttpServerOptions {
  /** Address to bind (default `127.0.0.1`). */
  readonly hostname?: string;
  /** Port (0: any free one). */
  readonly port: number;
  /** Answers one request. A throw becomes a 500. */
  readonly handler: (req: HttpRequest) => Promise<HttpResponse>;
  /** The response for an error found while reading (status, message). */
  readonly errorResponse?: (status: number, message: string) => HttpResponse;
  /** Largest request body (default 64 KiB). */
  readonly maxBody?: number;
  /** Largest request head (default 16 KiB). */
  readonly maxHead?: number;
  /** How long a request head may take (default 10 s). */
  readonly headTimeoutMs?: number;
  /** How long a request body may take once its head is read (default 10 s). */
  readonly bodyTimeoutMs?: number;
  /** How long shutdown waits for open connections before closing them (default 15 s). */
  readonly drainTimeoutMs?: number;
  /** Connections open at once at most (default {@linkcode defaultMaxConnections}). */
  readonly maxConnections?: number;
  /**
   * Check the `Host` field against the bound address (default true; see
   * {@linkcode allowedHosts}). Two `Host` fields are refused either way.
   */
  readonly checkHost?: boolean;
  /** Receives one line per request, and the once-only warnings (default: none). */
  readonly log?: (line: string) => void;
}

/** A running server. */
export interface HttpServer {
  /** The bound address. */
  readonly addr: Deno.NetAddr;
  /** Stops accepting, answers what is in flight, closes every connection. */
  shutdown(): Promise<void>;
  /** Resolves once the server is shut down and every connection closed. */
  readonly finished: Promise<void>;
}

const REASONS: Record<number, string> = {
  100: "Continue",
  200: "OK",
  204: "No Content",
  400: "Bad Request",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  421: "Misdirected Request",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  501: "Not Implemented",
  503: "Service Unavailable",
  505: "HTTP Version Not Supported",
};

const enc = new TextEncoder();
const latin1 = new TextDecoder("latin1");

/** How long shutdown keeps reading before it closes the connections that sent nothing, ms. */
export const SHUTDOWN_GRACE_MS = 250;

/** The descriptor limit assumed when the process's own cannot be read. */
export const FALLBACK_DESCRIPTOR_LIMIT = 1024;

/**
 * The soft limit on open files of this process (`ulimit -n`;
 * `io/limits.ts`, asking `sh` when `/proc/self/limits` cannot be read):
 * `unlimited` is 2^20 here.
 */
export function descriptorLimit(): number | undefined {
  const n = openFilesLimit({ shell: runCommandSync });
  return n === Infinity ? 1 << 20 : n;
}

/**
 * The connection cap for a descriptor limit: the limit less a margin for
 * everything else the process holds open (index files, the encoder, pipes,
 * the runtime's own): 1/8 of the limit, at least 64. 256 → 192, 1024 →
 * 896.
 *
 * @example
 * ```ts
 * import { defaultMaxConnections } from "./http.ts";
 * if (defaultMaxConnections(256) !== 192) throw new Error();
 * if (defaultMaxConnections(1024) !== 896) throw new Error();
 * ```
 */
export function defaultMaxConnections(
  limit: number = descriptorLimit() ?? FALLBACK_DESCRIPTOR_LIMIT,
): number {
  return Math.max(1, limit - Math.max(64, Math.floor(limit / 8)));
}

/**
 * The `Host` values a server bound to `hostname`:`port` answers (lower
 * case), or `undefined` for any (bound to every address: `0.0.0.0`, `::`).
 * A loopback address also answers `localhost`, and `localhost` answers the
 * loopback addresses; port 80 may be left out.
 *
 * @example
 * ```ts
 * import { allowedHosts } from "./http.ts";
 * const h = allowedHosts("127.0.0.1", 8080)!;
 * if (!h.has("127.0.0.1:8080") || !h.has("localhost:8080") || h.has("evil.example:8080")) {
 *   throw new Error([...h].join());
 * }
 * if (!allowedHosts("::1", 8080)!.has("[::1]:8080")) throw new Error();
 * if (allowedHosts("0.0.0.0", 8080) !== undefined) throw new Error();
 * ```
 */
export function allowedHosts(hostname: string, port: number): Set<string> | undefined {
  const h = hostname.toLowerCase().replace(/^\[(.*)\]$/, "$1");
  if (h === "0.0.0.0" || h === "::" || h === "") return undefined;
  const names = new Set([h.includes(":") ? `[${h}]` : h]);
  if (h === "127.0.0.1" || h === "::1") names.add("localhost");
  if (h === "localhost") ["127.0.0.1", "[::1]"].forEach((n) => names.add(n));
  const out = new Set<string>();
  for (const n of names) {
    out.add(`${n}:${port}`);
    if (port === 80) out.add(n);
  }
  return out;
}

/** A request error found while reading: answered with `status`, then the connection closed. */
class ReadFailure extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

/** The connection was closed, or timed out before any byte of a request. */
class Gone extends Error {}

const TIMEOUT = Symbol("timeout");

/** Buffered reads from a connection with deadlines. */
class Reader {
  #buf = new Uint8Array(0);
  #eof = false;
  #pending: Promise<number | null> | undefined;
  readonly #chunk = new Uint8Array(16384);

  constructor(readonly conn: Deno.Conn) {}

  /** Bytes received and not yet consumed. */
  get buffered(): number {
    return this.#buf.length;
  }

  /** Reads more bytes; false on end of stream; throws {@linkcode TIMEOUT} at the deadline. */
  async more(deadline: number): Promise<boolean> {
    if (this.#eof) return false;
    this.#pending ??= this.conn.read(this.#chunk);
    const left = deadline - performance.now();
    if (left <= 0) throw TIMEOUT;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const r = await Promise.race([
      this.#pending,
      new Promise<typeof TIMEOUT>((res) => {
        timer = setTimeout(() => res(TIMEOUT), left);
      }),
    ]).finally(() => clearTimeout(timer));
    if (r === TIMEOUT) throw TIMEOUT;
    this.#pending = undefined;
    if (r === null) {
      this.#eof = true;
      return false;
    }
    const b = new Uint8Array(this.#buf.length + r);
    b.set(this.#buf);
    b.set(this.#chunk.subarray(0, r), this.#buf.length);
    this.#buf = b;
    return true;
  }

  /** Index of `\r\n\r\n` (or `\n\n`) ending a head: [end of head, bytes to skip], or undefined. */
  #headEnd(): [number, number] | undefined {
    const b = this.#buf;
    for (let i = 0; i < b.length; i++) {
      if (b[i] !== 10) continue;
      const end = i > 0 && b[i - 1] === 13 ? i - 1 : i;
      if (b[i + 1] === 10) return [end, i + 2];
      if (b[i + 1] === 13 && b[i + 2] === 10) return [end, i + 3];
    }
    return undefined;
  }

  /** The next head (without its blank line), or throws Gone / ReadFailure. */
  async head(deadline: number, max: number): Promise<string> {
    while (true) {
      // Blank lines before a request line are allowed (RFC 9112 §2.2).
      while (this.#buf.length > 0 && (this.#buf[0] === 13 || this.#buf[0] === 10)) {
        this.#buf = this.#buf.subarray(1);
      }
      const at = this.#headEnd();
      if (at !== undefined) {
        if (at[0] > max) throw new ReadFailure(431, "request head too large");
        const text = latin1.decode(this.#buf.subarray(0, at[0]));
        this.#buf = this.#buf.subarray(at[1]);
        return text;
      }
      if (this.#buf.length > max) throw new ReadFailure(431, "request head too large");
      let got: boolean;
      try {
        got = await this.more(deadline);
      } catch (e) {
        if (e !== TIMEOUT) throw new Gone();
        if (this.#buf.length === 0) throw new Gone();
        throw new ReadFailure(408, "the request head did not arrive in time");
      }
      if (!got) throw new Gone();
    }
  }

  /** Exactly `n` bytes. */
  async exact(n: number, deadline: number): Promise<Uint8Array> {
    while (this.#buf.length < n) {
      if (!await this.#moreOr408(deadline)) throw new ReadFailure(400, "the body ended early");
    }
    const out = this.#buf.slice(0, n);
    this.#buf = this.#buf.subarray(n);
    return out;
  }

  /** One CRLF-terminated line (of at most `max` bytes), without its end. */
  async line(deadline: number, max: number): Promise<string> {
    while (true) {
      const i = this.#buf.indexOf(10);
      if (i >= 0) {
        const end = i > 0 && this.#buf[i - 1] === 13 ? i - 1 : i;
        const s = latin1.decode(this.#buf.subarray(0, end));
        this.#buf = this.#buf.subarray(i + 1);
        return s;
      }
      if (this.#buf.length > max) throw new ReadFailure(400, "bad chunked encoding");
      if (!await this.#moreOr408(deadline)) throw new ReadFailure(400, "the body ended early");
    }
  }

  async #moreOr408(deadline: number): Promise<boolean> {
    try {
      return await this.more(deadline);
    } catch (e) {
      if (e === TIMEOUT) throw new ReadFailure(408, "the request body did not arrive in time");
      throw new Gone();
    }
  }
}

/** The path of a target for the log: no query, control characters and spaces escaped. */
function logPath(target: string): string {
  const q = target.indexOf("?");
  const p = q < 0 ? target : target.slice(0, q);
  return (p.length > 200 ? p.slice(0, 200) + "…" : p).replace(
    // deno-lint-ignore no-control-regex
    /[\x00-\x20\x7f-\xff"\\]/g,
    (c) => "\\x" + c.charCodeAt(0).toString(16).padStart(2, "0"),
  );
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

function parseHead(text: string): Omit<HttpRequest, "body"> {
  const lines = text.split(/\r?\n/);
  const m = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) (\S+) HTTP\/(\d)\.(\d)$/.exec(lines[0]);
  if (m === null) throw new ReadFailure(400, "bad request line");
  if (m[3] !== "1") throw new ReadFailure(505, `HTTP/${m[3]}.${m[4]} is not supported`);
  const version = m[4] === "0" ? "1.0" : "1.1";
  const headers = new Headers();
  for (const l of lines.slice(1)) {
    const c = l.indexOf(":");
    if (c <= 0 || !TOKEN.test(l.slice(0, c))) throw new ReadFailure(400, "bad header line");
    const value = l.slice(c + 1).trim();
    // deno-lint-ignore no-control-regex
    if (/[\x00-\x08\x0a-\x1f\x7f]/.test(value)) throw new ReadFailure(400, "bad header value");
    try {
      headers.append(l.slice(0, c), value);
    } catch {
      throw new ReadFailure(400, "bad header line");
    }
  }
  if (lines.slice(1).filter((l) => /^host\s*:/i.test(l)).length > 1) {
    throw new ReadFailure(400, "two Host header fields");
  }
  if (version === "1.1" && !headers.has("host")) {
    throw new ReadFailure(400, "an HTTP/1.1 request needs a Host header");
  }
  return { method: m[1], target: m[2], version, headers };
}

async function readBody(
  r: Reader,
  req: Omit<HttpRequest, "body">,
  conn: Deno.Conn,
  maxBody: number,
  deadline: number,
): Promise<Uint8Array> {
  const te = req.headers.get("transfer-encoding");
  const cl = req.headers.get("content-length");
  if (te !== null && cl !== null) {
    throw new ReadFailure(400, "both Transfer-Encoding and Content-Length");
  }
  const continue100 = async () => {
    if (req.version === "1.1" && req.headers.get("expect")?.toLowerCase() === "100-continue") {
      await conn.write(enc.encode("HTTP/1.1 100 Continue\r\n\r\n"));
    }
  };
  if (te !== null) {
    if (te.toLowerCase() !== "chunked") {
      throw new ReadFailure(501, `Transfer-Encoding ${JSON.stringify(te)} is not supported`);
    }
    await continue100();
    const parts: Uint8Array[] = [];
    let total = 0;
    while (true) {
      const line = await r.line(deadline, 1024);
      const m = /^([0-9A-Fa-f]{1,8})(;.*)?$/.exec(line);
      if (m === null) throw new ReadFailure(400, "bad chunked encoding");
      const n = parseInt(m[1], 16);
      if (n === 0) break;
      total += n;
      if (total > maxBody) throw new ReadFailure(413, `the body is over ${maxBody} bytes`);
      parts.push(await r.exact(n, deadline));
      if (await r.line(deadline, 0) !== "") throw new ReadFailure(400, "bad chunked encoding");
    }
    // Trailer fields, up to the blank line.
    for (let i = 0;; i++) {
      if ((await r.line(deadline, 8192)) === "") break;
      if (i > 64) throw new ReadFailure(400, "too many trailer fields");
    }
    const body = new Uint8Array(total);
    let o = 0;
    for (const p of parts) {
      body.set(p, o);
      o += p.length;
    }
    return body;
  }
  if (cl === null) return new Uint8Array(0);
  const values = cl.split(",").map((s) => s.trim());
  if (!values.every((v) => /^\d{1,15}$/.test(v) && v === values[0])) {
    throw new ReadFailure(400, "bad Content-Length");
  }
  const n = Number(values[0]);
  if (n > maxBody) throw new ReadFailure(413, `the body is over ${maxBody} bytes`);
  if (n === 0) return new Uint8Array(0);
  await continue100();
  return await r.exact(n, deadline);
}

function serialize(res: HttpResponse, head: boolean, close: boolean): Uint8Array {
  const body = typeof res.body === "string" ? enc.encode(res.body) : res.body ?? new Uint8Array();
  let s = `HTTP/1.1 ${res.status} ${REASONS[res.status] ?? "Status"}\r\n`;
  for (const [k, v] of Object.entries(res.headers ?? {})) s += `${k}: ${v}\r\n`;
  s += `content-length: ${body.length}\r\n`;
  s += `connection: ${close ? "close" : "keep-alive"}\r\n\r\n`;
  const h = enc.encode(s);
  if (head) return h;
  const out = new Uint8Array(h.length + body.length);
  out.set(h);
  out.set(body, h.length);
  return out;
}

async function writeAll(conn: Deno.Conn, b: Uint8Array): Promise<void> {
  let o = 0;
  while (o < b.length) o += await conn.write(b.subarray(o));
}

/**
 * After an error answered before the request was read to its end: stop
 * writing, then read and drop what the client still sends (at most 2 s, 64
 * MiB), so that closing does not reset the connection before the client
 * has read the response.
 */
async function lingeringClose(conn: Deno.Conn): Promise<void> {
  try {
    await conn.closeWrite();
  } catch {
    return;
  }
  const buf = new Uint8Array(65536);
  const end = performance.now() + 2000;
  let total = 0;
  while (total < 64 << 20) {
    const left = end - performance.now();
    if (left <= 0) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const n = await Promise.race([
      conn.read(buf).catch(() => null),
      new Promise<null>((r) => timer = setTimeout(() => r(null), left)),
    ]);
    clearTimeout(timer);
    if (n === null) return;
    total += n;
  }
}

/** An open connection of {@linkcode listenHttp}. */
interface Conn {
  /** Whether it waits for a request with nothing of it received. */
  idle: () => boolean;
  /** Its fiber (in the server's `FiberSet`). */
  fiber: Fiber.Fiber<void> | undefined;
}

const defaultError = (status: number, message: string): HttpResponse => ({
  status,
  headers: { "content-type": "application/json; charset=utf-8" },
  body: JSON.stringify({ error: message }),
});

/**
 * Starts the server (see the module notes).
 *
 * @example
 * ```ts
 * import { listenHttp } from "./http.ts";
 * const s = listenHttp({ port: 0, handler: () => Promise.resolve({ status: 200, body: "hi" }) });
 * const r = await fetch(`http://127.0.0.1:${s.addr.port}/`);
 * if (await r.text() !== "hi") throw new Error();
 * await s.shutdown();
 * ```
 */
export function listenHttp(opts: HttpServerOptions): HttpServer {
  const maxBody = opts.maxBody ?? 65536;
  const maxHead = opts.maxHead ?? 16384;
  const headMs = opts.headTimeoutMs ?? 10_000;
  const bodyMs = opts.bodyTimeoutMs ?? 10_000;
  const errorResponse = opts.errorResponse ?? defaultError;
  const maxConns = opts.maxConnections ?? defaultMaxConnections();
  const listener = Deno.listen({ hostname: opts.hostname ?? "127.0.0.1", port: opts.port });
  const addr = listener.addr as Deno.NetAddr;
  const hosts = opts.checkHost === false ? undefined : allowedHosts(addr.hostname, addr.port);
  /**
   * The server's scope: it owns the connections' fibers (`fibers`), and its
   * close, at the end of a shutdown, interrupts what is left of them.
   */
  const scope = Scope.makeUnsafe();
  const fibers = Effect.runSync(Scope.provide(FiberSet.make<void>(), scope));
  const fork = Effect.runSync(FiberSet.runtime(fibers)());
  /**
   * Each open connection (registered before the next accept, removed by its
   * fiber's finalizer): its fiber, and whether it waits for a request with
   * nothing of it received.
   */
  const conns = new Map<Deno.Conn, Conn>();
  let draining = false, listenerClosed = false;
  let wake = () => {};
  const stopped = new Promise<void>((r) => wake = r);
  const closeConn = (c: Deno.Conn) => {
    try {
      c.close();
    } catch { /* closed */ }
  };
  let allClosed: (() => void) | undefined;
  const checkDone = () => {
    if (draining && conns.size === 0) allClosed?.();
  };
  const warned = new Set<string>();
  const warnOnce = (key: string, line: string) => {
    if (warned.has(key)) return;
    warned.add(key);
    opts.log?.(line);
  };

  /** Serves one connection's requests until it is to be closed (the closing is its fiber's). */
  async function serveConn(conn: Deno.Conn, entry: Conn): Promise<void> {
    const r = new Reader(conn);
    let waiting = true;
    entry.idle = () => waiting && r.buffered === 0;
    while (true) {
      waiting = true;
      let method = "-", target = "-";
      const t0 = performance.now();
      let res: HttpResponse, close = false, head = false, linger = false;
      try {
        const text = await r.head(performance.now() + headMs, maxHead);
        waiting = false;
        const req = parseHead(text);
        method = req.method;
        target = req.target;
        head = method === "HEAD";
        const host = req.headers.get("host");
        if (hosts !== undefined && host !== null && !hosts.has(host.toLowerCase())) {
          throw new ReadFailure(
            421,
            `Host ${JSON.stringify(host)} is not this server's address (${[...hosts].join(", ")})`,
          );
        }
        const body = await readBody(r, req, conn, maxBody, performance.now() + bodyMs);
        const conn_ = req.headers.get("connection")?.toLowerCase() ?? "";
        close = req.version === "1.0" ? !/\bkeep-alive\b/.test(conn_) : /\bclose\b/.test(conn_);
        try {
          res = await opts.handler({ ...req, body });
        } catch (e) {
          res = errorResponse(500, e instanceof Error ? e.message : String(e));
        }
      } catch (e) {
        waiting = false;
        if (e instanceof Gone) return;
        if (!(e instanceof ReadFailure)) throw e;
        res = errorResponse(e.status, e.message);
        close = linger = true;
      }
      if (draining) close = true;
      try {
        await writeAll(conn, serialize(res, head, close));
      } catch {
        return;
      }
      opts.log?.(
        `${logPath(method)} ${logPath(target)} ${res.status} ${
          (performance.now() - t0).toFixed(1)
        }`,
      );
      if (linger) await lingeringClose(conn);
      if (close) return;
    }
  }

  /**
   * One connection as a fiber: {@linkcode serveConn} (an interruption
   * aborts it by closing the connection, so that a read or write in
   * progress ends at once), its failures dropped (the connection is only
   * closed), and a finalizer that closes the connection and removes it.
   */
  const connection = (conn: Deno.Conn, entry: Conn): Effect.Effect<void> =>
    Effect.tryPromise({
      try: (signal) => {
        signal.addEventListener("abort", () => closeConn(conn), { once: true });
        return serveConn(conn, entry);
      },
      catch: (e) => e,
    }).pipe(
      Effect.ignore,
      Effect.ensuring(Effect.sync(() => {
        closeConn(conn);
        conns.delete(conn);
        checkDone();
      })),
    );

  /** Interrupts a connection's fiber (its finalizer closes the connection). */
  const interrupt = (entry: Conn) => {
    if (entry.fiber !== undefined) Effect.runFork(Fiber.interrupt(entry.fiber));
  };

  /**
   * A connection over the cap: 503 and closed at once (nothing of it is
   * read). Awaited before the next accept, so that refusing holds one
   * descriptor at most; a response this small does not wait on the client
   * (bounded at 1 s all the same).
   */
  const refuse = async (c: Deno.Conn) => {
    warnOnce(
      "cap",
      `${maxConns} connections open, the most allowed: further connections get 503 ` +
        "until some close (logged once)",
    );
    const res = errorResponse(503, `too many connections (${maxConns} open)`);
    const busy = { ...res, headers: { ...res.headers, "retry-after": "1" } };
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      writeAll(c, serialize(busy, false, true)).catch(() => {}),
      new Promise((r) => timer = setTimeout(r, 1000)),
    ]);
    clearTimeout(timer);
    closeConn(c);
  };

  const accepting = (async () => {
    let backoff = 0;
    while (true) {
      let c: Deno.Conn;
      try {
        c = await listener.accept();
        backoff = 0;
      } catch (e) {
        if (listenerClosed) return;
        // Out of descriptors (EMFILE, ENFILE) or another failure: wait, then accept again.
        warnOnce(
          "accept",
          `accepting a connection failed (${e instanceof Error ? e.message : e}); ` +
            "retrying with backoff, 10 ms doubling to 1 s (logged once)",
        );
        backoff = Math.min(1000, backoff === 0 ? 10 : backoff * 2);
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([stopped, new Promise((r) => timer = setTimeout(r, backoff))]);
        clearTimeout(timer);
        continue;
      }
      if (conns.size >= maxConns) await refuse(c);
      else {
        const entry: Conn = { idle: () => true, fiber: undefined };
        conns.set(c, entry);
        // The fiber starts at once (up to its first read), in the server's FiberSet.
        entry.fiber = fork(connection(c, entry));
      }
    }
  })();

  let shut: Promise<void> | undefined;
  const finished = new Promise<void>((res) => {
    allClosed = res;
  });
  return {
    addr,
    finished: finished.then(() => accepting),
    shutdown() {
      shut ??= (async () => {
        draining = true;
        let timer: ReturnType<typeof setTimeout> | undefined;
        const drained = new Promise<void>((res) => {
          timer = setTimeout(() => {
            for (const entry of conns.values()) interrupt(entry);
            res();
          }, opts.drainTimeoutMs ?? 15_000);
        });
        // The grace: requests already sent are read (and answered, with `Connection: close`).
        await new Promise((r) => setTimeout(r, SHUTDOWN_GRACE_MS));
        listenerClosed = true;
        try {
          listener.close();
        } catch { /* closed */ }
        wake();
        for (const entry of conns.values()) if (entry.idle()) interrupt(entry);
        checkDone();
        await Promise.race([finished, drained]);
        clearTimeout(timer);
        await accepting;
        // Nothing is accepted any more: closing the scope interrupts what is left (and awaits it).
        await Effect.runPromise(Scope.close(scope, Exit.void));
      })();
      return shut;
    },
  };
}

/**
 * {@linkcode listenHttp} in the current scope: the scope's close shuts the
 * server down ({@linkcode HttpServer.shutdown}: the grace, the drain, then
 * every connection's fiber interrupted and its connection closed). A
 * listener that cannot be bound fails with Deno's error.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { acquireHttp } from "./http.ts";
 * const handler = () => Promise.resolve({ status: 200, body: "hi" });
 * const port = await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
 *   const s = yield* acquireHttp({ port: 0, handler });
 *   const r = yield* Effect.promise(() => fetch(`http://127.0.0.1:${s.addr.port}/`));
 *   if ((yield* Effect.promise(() => r.text())) !== "hi") throw new Error();
 *   return s.addr.port;
 * })));
 * // Shut down with its scope: nothing listens there any more.
 * const refused = await fetch(`http://127.0.0.1:${port}/`).then(() => false, () => true);
 * if (!refused) throw new Error("still listening");
 * ```
 */
export const acquireHttp = (
  opts: HttpServerOptions,
): Effect.Effect<HttpServer, unknown, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.try({ try: () => listenHttp(opts), catch: (e) => e }),
    (server) => Effect.promise(() => server.shutdown()),
  );
