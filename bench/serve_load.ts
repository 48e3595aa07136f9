/**
 * Load on the demo server (`deno task serve`): dev questions sent to
 * `GET /v1/search` by `--concurrency` clients for `--seconds`, then the
 * same questions, in the same order, through `POST /v1/batch` in batches of
 * `--batch`. Loopback only, and bounded: each phase stops at `--seconds` or
 * `--max-queries` questions, whichever comes first, and each request at
 * `--timeout` seconds (counted as an error).
 *
 * Reports, per phase: requests and questions answered, questions/s,
 * client-side latency p50/p95/p99 (per request: one question for search, a
 * batch for batch), the server's own `took_ms` p50, errors (any answer
 * other than 200 with a JSON body of the expected shape, or a failed
 * request: must be 0; the script exits 1 otherwise) and the server's RSS
 * (`VmRSS` of `/proc/<pid>/status`) when it was ready, after the search
 * phase and after the batch phase, with its peak (`VmHWM`). A Markdown
 * table on stdout, everything as JSON in `--out`.
 *
 * The server: with `--index`, the script starts `deno task serve INDEX
 * --encoder NAME --port 0` itself (anything after `--` is passed on, e.g.
 * `-- --nprobe 10`; with `--nofile N` under `ulimit -n N`, through
 * `bash`), reads its URL from stderr and stops it with SIGINT at the end
 * (it must exit 0); its pid is the process that listens on the port. With
 * `--url http://127.0.0.1:PORT`, it uses a running server (its RSS is read
 * when its process is visible in `/proc`).
 *
 * A connection flood (`--flood N`): `--flood-after` seconds into the search
 * phase (default: half of `--seconds`), N connections that send nothing are
 * opened, held `--flood-hold` seconds (default 3) and closed; the report
 * says how many the server held open, answered 503 or closed, and whether
 * a request on a fresh connection is answered after (`/healthz`, asked
 * every 100 ms while refused: 200 within 10 s, else the script exits 1). The load's own clients keep
 * their connections (keep-alive) through the flood; a request of theirs
 * that needed a new connection while the server was full counts as an
 * error. N is at most 5000, and this process needs N descriptors more
 * than the load.
 *
 * A server over a folder of shards (`--index` a folder of `shard-i-of-N`
 * folders, `index --shards N`): the RSS is the sum over the front and the
 * shards' server processes (the listener's parent's children). With
 * `--kill-shard I`, `--kill-after` seconds into the search phase (default:
 * a quarter of `--seconds`) shard I's server process is sent SIGKILL, and
 * `/healthz` is asked every 50 ms until it reports shard I `up` again; the
 * report says when it was back and how many requests were answered 503
 * naming shard I (those are not errors; any other failure still is; a
 * client that gets one waits 100 ms before its next request).
 *
 * ```sh
 * deno run -A bench/serve_load.ts --index IX --encoder NAME --data QUESTIONS.json[.gz] \
 *   [--kill-shard I [--kill-after S]] [--seconds 30] [--concurrency 16] [--k 5] [--exact] [--batch 16] [--batch-concurrency 1] \
 *   [--max-queries 1000000] [--timeout 60] [--out bench/out/serve_load.json] \
 *   [--flood N [--flood-after S] [--flood-hold 3]] [--nofile N] [-- SERVE_FLAGS...]
 * deno run -A bench/serve_load.ts --url http://127.0.0.1:8080 --data QUESTIONS.json [...]
 * ```
 *
 * A small check (sparse-pi, the first three dev articles; a 5 s run):
 *
 * ```sh
 * deno task full --data SUBSET.json --out /tmp/sl/run
 * deno task index /tmp/sl/run/dumps/context_emb /tmp/sl/ix --sparse --context /tmp/sl/run/context.json
 * deno run -A bench/serve_load.ts --index /tmp/sl/ix --encoder sparse-pi \
 *   --data /tmp/sl/run/question.json --seconds 5 --concurrency 4 --out /tmp/sl/load.json
 * ```
 *
 * The full-size runs (piqa-lstm on all of dev; `R` is a `full` run folder of piqa-lstm on dev,
 * e.g. `deno task full --encoder piqa-lstm --out R`): build the exact and IVF-PQ indexes once,
 * then 30 s at concurrency 16 against each (IVF-PQ at nprobe 10, and also exact search on it):
 *
 * ```sh
 * deno task index R/dumps/context_emb bench/out/ix-piqa-exact --context R/context.json
 * deno task index R/dumps/context_emb bench/out/ix-piqa-ivf --context R/context.json --nlist 100 --bpv 128
 * deno run -A bench/serve_load.ts --index bench/out/ix-piqa-exact --encoder piqa-lstm \
 *   --data data/dev-v1.1.json.gz --seconds 30 --concurrency 16 --out bench/out/serve_load_exact.json
 * deno run -A bench/serve_load.ts --index bench/out/ix-piqa-ivf --encoder piqa-lstm \
 *   --data data/dev-v1.1.json.gz --seconds 30 --concurrency 16 \
 *   --out bench/out/serve_load_ivf.json -- --nprobe 10
 * deno run -A bench/serve_load.ts --index bench/out/ix-piqa-ivf --encoder piqa-lstm \
 *   --data data/dev-v1.1.json.gz --seconds 30 --concurrency 16 --exact \
 *   --out bench/out/serve_load_ivf_exact.json
 * ```
 *
 * @module
 */

const USAGE = "usage: deno run -A bench/serve_load.ts (--index DIR --encoder NAME | --url URL) " +
  "--data QUESTIONS.json [--seconds 30] [--concurrency 16] [--k 5] [--exact] [--batch 16] " +
  "[--batch-concurrency 1] [--max-queries 1000000] [--timeout 60] [--out FILE.json] " +
  "[--flood N [--flood-after S] [--flood-hold S]] [--kill-shard I [--kill-after S]] " +
  "[--nofile N] [-- SERVE_FLAGS...]";

const ROOT = new URL("..", import.meta.url).pathname.replace(/\/$/, "");

/** Command-line options. */
export interface LoadOptions {
  /** Index folder (the script starts the server), or undefined with `url`. */
  readonly index?: string;
  /** Encoder name for `serve`. */
  readonly encoder?: string;
  /** A running server's base URL (loopback). */
  readonly url?: string;
  /** SQuAD file (`.json` or `.json.gz`) whose questions are sent. */
  readonly data: string;
  /** Length of each phase. */
  readonly seconds: number;
  /** Concurrent `/v1/search` clients. */
  readonly concurrency: number;
  /** Results asked per question. */
  readonly k: number;
  /** Ask for exact search (`exact=1`). */
  readonly exact: boolean;
  /** Questions per `/v1/batch` request (at most 64). */
  readonly batch: number;
  /** Concurrent `/v1/batch` clients. */
  readonly batchConcurrency: number;
  /** At most this many questions per phase. */
  readonly maxQueries: number;
  /** Per-request timeout in seconds. */
  readonly timeout: number;
  /** Where the JSON goes, if anywhere. */
  readonly out?: string;
  /** Idle connections opened in the middle of the search phase (0: none). */
  readonly flood: number;
  /** Seconds into the search phase the flood starts. */
  readonly floodAfter: number;
  /** Seconds the flood's connections are held open. */
  readonly floodHold: number;
  /** A shard whose server process is killed during the search phase (sharded servers). */
  readonly killShard?: number;
  /** Seconds into the search phase it is killed. */
  readonly killAfter: number;
  /** `ulimit -n` of the server this script starts (default: this process's). */
  readonly nofile?: number;
  /** Extra `serve` flags. */
  readonly serveFlags: readonly string[];
}

/** Parses the command line (throws a usage line on anything wrong). */
export function parseArgs(argv: readonly string[]): LoadOptions {
  const dash = argv.indexOf("--");
  const own = dash < 0 ? argv : argv.slice(0, dash);
  const serveFlags = dash < 0 ? [] : argv.slice(dash + 1);
  const vals = new Map<string, string>();
  const flags = new Set<string>();
  for (let i = 0; i < own.length; i++) {
    const a = own[i];
    if (a === "--exact") flags.add("exact");
    else if (a.startsWith("--") && i + 1 < own.length) vals.set(a.slice(2), own[++i]);
    else throw new Error(`${USAGE}\n(unexpected ${JSON.stringify(a)})`);
  }
  const known = [
    "index",
    "encoder",
    "url",
    "data",
    "seconds",
    "concurrency",
    "k",
    "batch",
    "batch-concurrency",
    "max-queries",
    "timeout",
    "out",
    "flood",
    "flood-after",
    "flood-hold",
    "kill-shard",
    "kill-after",
    "nofile",
  ];
  for (const k of vals.keys()) if (!known.includes(k)) throw new Error(`${USAGE}\n(--${k}?)`);
  const num = (name: string, dflt: number, max: number): number => {
    const s = vals.get(name);
    const n = s === undefined ? dflt : Number(s);
    if (!Number.isFinite(n) || n <= 0 || n > max) {
      throw new Error(`--${name} ${s}: a number in (0, ${max}] is needed`);
    }
    return n;
  };
  const int = (name: string, dflt: number, max: number): number => {
    const n = num(name, dflt, max);
    if (!Number.isInteger(n)) throw new Error(`--${name} ${n}: an integer is needed`);
    return n;
  };
  const index = vals.get("index"), url = vals.get("url");
  if ((index === undefined) === (url === undefined)) {
    throw new Error(`${USAGE}\n(give --index or --url)`);
  }
  if (index !== undefined && vals.get("encoder") === undefined) {
    throw new Error(`${USAGE}\n(--index needs --encoder)`);
  }
  if (url !== undefined) {
    const u = new URL(url);
    if (u.protocol !== "http:" || !["127.0.0.1", "localhost", "[::1]"].includes(u.hostname)) {
      throw new Error(`--url ${url}: loopback http only (127.0.0.1, localhost, [::1])`);
    }
  }
  const data = vals.get("data");
  if (data === undefined) throw new Error(`${USAGE}\n(--data is needed)`);
  if (vals.has("nofile") && index === undefined) {
    throw new Error(`${USAGE}\n(--nofile applies to the server this script starts: --index)`);
  }
  const seconds = num("seconds", 30, 3600);
  const ks = vals.get("kill-shard");
  if (ks !== undefined && !/^\d{1,5}$/.test(ks)) {
    throw new Error(`--kill-shard ${ks}: a shard index (0, 1, ...) is needed`);
  }
  return {
    index,
    encoder: vals.get("encoder"),
    url: url?.replace(/\/+$/, ""),
    data,
    seconds,
    concurrency: int("concurrency", 16, 256),
    k: int("k", 5, 100),
    exact: flags.has("exact"),
    batch: int("batch", 16, 64),
    batchConcurrency: int("batch-concurrency", 1, 64),
    maxQueries: int("max-queries", 1_000_000, 100_000_000),
    timeout: num("timeout", 60, 600),
    out: vals.get("out"),
    flood: vals.has("flood") ? int("flood", 0, 5000) : 0,
    floodAfter: num("flood-after", seconds / 2, 3600),
    floodHold: num("flood-hold", 3, 60),
    killShard: vals.has("kill-shard") ? Number(vals.get("kill-shard")) : undefined,
    killAfter: num("kill-after", seconds / 4, 3600),
    nofile: vals.has("nofile") ? int("nofile", 0, 1 << 20) : undefined,
    serveFlags,
  };
}

/** The question strings of a SQuAD file, in file order. */
export async function readQuestions(path: string): Promise<string[]> {
  const file = await Deno.open(path);
  const stream = path.endsWith(".gz")
    ? file.readable.pipeThrough(new DecompressionStream("gzip"))
    : file.readable;
  const data = JSON.parse(await new Response(stream).text()) as {
    data: { paragraphs: { qas: { question: string }[] }[] }[];
  };
  const qs: string[] = [];
  for (const a of data.data) {
    for (const p of a.paragraphs) for (const qa of p.qas) qs.push(qa.question);
  }
  if (qs.length === 0) throw new Error(`${path}: no questions`);
  return qs;
}

/** Nearest-rank percentile of sorted values (NaN when empty). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

/** The pid of the process listening on 127.0.0.1/0.0.0.0/[::1]/[::] `port`, if visible. */
export function listenerPid(port: number): number | undefined {
  const inodes = new Set<string>();
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = Deno.readTextFileSync(table);
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10) continue;
      if (f[1].endsWith(`:${hexPort}`) && f[3] === "0A") inodes.add(f[9]); // 0A: LISTEN
    }
  }
  if (inodes.size === 0) return undefined;
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    let fds: Deno.DirEntry[];
    try {
      fds = [...Deno.readDirSync(`/proc/${e.name}/fd`)];
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(Deno.readLinkSync(`/proc/${e.name}/fd/${fd.name}`));
        if (m !== null && inodes.has(m[1])) return Number(e.name);
      } catch { /* gone or not ours */ }
    }
  }
  return undefined;
}

/** `VmRSS` and `VmHWM` of a process in MiB (undefined when unreadable). */
export function rssMiB(pid: number | undefined): { rss: number; peak: number } | undefined {
  if (pid === undefined) return undefined;
  try {
    const s = Deno.readTextFileSync(`/proc/${pid}/status`);
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(s)?.[1]);
    return { rss: kb("VmRSS") / 1024, peak: kb("VmHWM") / 1024 };
  } catch {
    return undefined;
  }
}

/** A running `deno task serve` started by {@linkcode spawnServe}. */
export interface ServeChild {
  /** `http://HOST:PORT`. */
  readonly url: string;
  /** The task process (SIGINT stops the server; it exits 0). */
  readonly process: Deno.ChildProcess;
  /** The last 64 KiB it wrote on stderr. */
  readonly stderr: () => string;
  /** Done when its stderr is closed. */
  readonly drained: Promise<void>;
}

/**
 * Starts `deno task serve ...args` (spawned directly, so SIGINT reaches it;
 * with `nofile`, `bash` sets `ulimit -n` first and execs it) and waits for
 * its `serving http://...` line; killed after `boundMs` if it has not
 * printed it.
 */
export async function spawnServe(
  args: readonly string[],
  boundMs = 600_000,
  nofile?: number,
): Promise<ServeChild> {
  const task = [Deno.execPath(), "task", "serve", ...args];
  const argv = nofile === undefined
    ? task
    : ["bash", "-c", `ulimit -n ${nofile} && exec "$@"`, "-", ...task];
  const process = new Deno.Command(argv[0], {
    args: argv.slice(1),
    cwd: ROOT,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).spawn();
  const reader = process.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let text = "", url: string | undefined;
  const bound = setTimeout(() => process.kill("SIGKILL"), boundMs);
  try {
    while (url === undefined) {
      const r = await reader.read();
      if (r.done) break;
      text += r.value;
      url = /serving (http:\/\/[^\s/]+)/.exec(text)?.[1];
    }
  } finally {
    clearTimeout(bound);
  }
  if (url === undefined) {
    await process.status;
    throw new Error(`serve did not start:\n${text}`);
  }
  // The server logs a line per request: keep only the last 64 KiB of it.
  const drained = (async () => {
    for (;;) {
      const r = await reader.read();
      if (r.done) return;
      text = (text + r.value).slice(-65536);
    }
  })();
  return { url, process, stderr: () => text, drained };
}

function startServer(o: LoadOptions): Promise<ServeChild> {
  return spawnServe(
    [o.index!, "--encoder", o.encoder!, "--port", "0", ...o.serveFlags],
    undefined,
    o.nofile,
  );
}

/** What a connection flood met. */
export interface FloodResult {
  /** Connections asked for. */
  readonly asked: number;
  /** Connections this process could not open. */
  readonly connectFailed: number;
  /** Connections the server answered 503 (and closed). */
  readonly refused503: number;
  /** Connections the server closed without an answer. */
  readonly closed: number;
  /** Connections still open, unanswered, when the flood ended (held by the server or its backlog). */
  readonly held: number;
  /**
   * `/healthz` on a fresh connection once the flood closed, asked again
   * every 100 ms while it is refused (the server may not have seen every
   * close yet), for 10 s at most: the last status (0: no answer).
   */
  readonly afterStatus: number;
  /** From the flood's close to that answer, ms. */
  readonly afterMs: number;
  /** Requests it took (1: answered at once). */
  readonly afterTries: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The first bytes a connection gets within `ms`: `503`, `other`, `closed` or `held`. */
async function firstAnswer(c: Deno.Conn, ms: number): Promise<string> {
  const buf = new Uint8Array(64);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const n = await Promise.race([
    c.read(buf).catch(() => null),
    new Promise<"t">((r) => timer = setTimeout(() => r("t"), ms)),
  ]);
  clearTimeout(timer);
  if (n === "t") return "held";
  if (n === null) return "closed";
  return /^HTTP\/1\.1 503 /.test(new TextDecoder().decode(buf.subarray(0, n))) ? "503" : "other";
}

/** One GET on a fresh connection: status (0: none within `ms`) and latency. */
async function freshGet(base: string, path: string, ms: number): Promise<[number, number]> {
  const u = new URL(base);
  const t0 = performance.now();
  let c: Deno.Conn | undefined;
  try {
    c = await Deno.connect({ hostname: u.hostname.replace(/^\[(.*)\]$/, "$1"), port: +u.port });
    await c.write(
      new TextEncoder().encode(
        `GET ${path} HTTP/1.1\r\nHost: ${u.host}\r\nConnection: close\r\n\r\n`,
      ),
    );
    const head = await firstHead(c, ms);
    return [Number(/^HTTP\/1\.1 (\d{3}) /.exec(head)?.[1] ?? 0), performance.now() - t0];
  } catch {
    return [0, performance.now() - t0];
  } finally {
    try {
      c?.close();
    } catch { /* closed */ }
  }
}

/** The bytes of a response up to its head's end (or what came within `ms`). */
async function firstHead(c: Deno.Conn, ms: number): Promise<string> {
  const end = performance.now() + ms;
  const buf = new Uint8Array(4096);
  let text = "";
  while (!text.includes("\r\n\r\n")) {
    const left = end - performance.now();
    if (left <= 0) break;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const n = await Promise.race([
      c.read(buf).catch(() => null),
      new Promise<null>((r) => timer = setTimeout(() => r(null), left)),
    ]);
    clearTimeout(timer);
    if (n === null) break;
    text += new TextDecoder().decode(buf.subarray(0, n));
  }
  return text;
}

/**
 * Opens `n` connections that send nothing, holds them `holdS` seconds,
 * closes them, then asks `/healthz` on a fresh connection.
 */
export async function flood(base: string, n: number, holdS: number): Promise<FloodResult> {
  const u = new URL(base);
  const hostname = u.hostname.replace(/^\[(.*)\]$/, "$1");
  const conns: Deno.Conn[] = [];
  let connectFailed = 0;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    try {
      conns.push(await Deno.connect({ hostname, port: Number(u.port) }));
    } catch {
      connectFailed++;
    }
  }
  const left = Math.max(0, holdS * 1000 - (performance.now() - t0));
  const got = await Promise.all(conns.map((c) => firstAnswer(c, left)));
  for (const c of conns) {
    try {
      c.close();
    } catch { /* closed */ }
  }
  const count = (k: string) => got.filter((g) => g === k).length;
  const t1 = performance.now();
  let afterStatus = 0, afterTries = 0;
  while (performance.now() - t1 < 10_000) {
    afterTries++;
    [afterStatus] = await freshGet(
      base,
      "/healthz",
      Math.max(1, 10_000 - (performance.now() - t1)),
    );
    if (afterStatus === 200) break;
    await sleep(100);
  }
  const afterMs = performance.now() - t1;
  return {
    asked: n,
    connectFailed,
    refused503: count("503"),
    closed: count("closed") + count("other"),
    held: count("held"),
    afterStatus,
    afterMs,
    afterTries,
  };
}

/** One phase's measurements. */
export interface PhaseResult {
  /** `search` or `batch`. */
  readonly phase: string;
  /** Concurrent clients. */
  readonly concurrency: number;
  /** Requests sent. */
  readonly requests: number;
  /** Questions answered (in requests that succeeded). */
  readonly queries: number;
  /** Wall time of the phase in seconds. */
  readonly seconds: number;
  /** Questions answered per second. */
  readonly qps: number;
  /** Client-side latency per request, ms. */
  readonly p50: number;
  /** 95th percentile, ms. */
  readonly p95: number;
  /** 99th percentile, ms. */
  readonly p99: number;
  /** Median of the server's `took_ms`. */
  readonly serverP50: number;
  /** Failed requests (not counting {@linkcode PhaseResult.shard503}). */
  readonly errors: number;
  /** Requests answered 503 naming the killed shard (`--kill-shard`). */
  readonly shard503: number;
  /** The first few failures. */
  readonly errorSamples: string[];
}

type Shot = { questions: number; ms: number; tookMs: number } | { error: string };

async function searchOnce(base: string, q: string, o: LoadOptions): Promise<Shot> {
  const params = new URLSearchParams({ q, k: String(o.k) });
  if (o.exact) params.set("exact", "1");
  const t0 = performance.now();
  try {
    const res = await fetch(`${base}/v1/search?${params}`, {
      signal: AbortSignal.timeout(o.timeout * 1000),
    });
    const text = await res.text();
    const ms = performance.now() - t0;
    if (res.status !== 200) return { error: `${res.status} ${text.slice(0, 200)}` };
    const body = JSON.parse(text);
    if (!Array.isArray(body.results) || typeof body.took_ms !== "number") {
      return { error: `bad body ${text.slice(0, 200)}` };
    }
    return { questions: 1, ms, tookMs: body.took_ms };
  } catch (e) {
    return { error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
  }
}

async function batchOnce(base: string, qs: string[], o: LoadOptions): Promise<Shot> {
  const t0 = performance.now();
  try {
    const res = await fetch(`${base}/v1/batch`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ queries: qs }),
      signal: AbortSignal.timeout(o.timeout * 1000),
    });
    const text = await res.text();
    const ms = performance.now() - t0;
    if (res.status !== 200) return { error: `${res.status} ${text.slice(0, 200)}` };
    const body = JSON.parse(text);
    if (!Array.isArray(body.results) || body.results.length !== qs.length) {
      return { error: `bad body ${text.slice(0, 200)}` };
    }
    return { questions: qs.length, ms, tookMs: body.took_ms };
  } catch (e) {
    return { error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
  }
}

/**
 * Runs `clients` loops that take the next piece of work (`size` questions,
 * in order, wrapping around) until `seconds` have passed or `maxQueries`
 * questions were handed out.
 */
async function phase(
  name: string,
  clients: number,
  size: number,
  questions: readonly string[],
  o: LoadOptions,
  send: (qs: string[]) => Promise<Shot>,
): Promise<PhaseResult> {
  let next = 0, handed = 0, queries = 0, requests = 0, shard503 = 0;
  const killed = o.killShard === undefined
    ? undefined
    : new RegExp(`^503 .*shard ${o.killShard} of \\d+ `);
  const lat: number[] = [], took: number[] = [], errors: string[] = [];
  const t0 = performance.now();
  const end = t0 + o.seconds * 1000;
  const client = async () => {
    while (performance.now() < end && handed + size <= o.maxQueries) {
      const qs: string[] = [];
      for (let i = 0; i < size; i++) qs.push(questions[next++ % questions.length]);
      handed += size;
      requests++;
      const r = await send(qs);
      if ("error" in r) {
        if (killed?.test(r.error)) {
          shard503++;
          // A client told the shard is down waits a little before it asks again.
          await sleep(100);
        } else errors.push(r.error);
      } else {
        queries += r.questions;
        lat.push(r.ms);
        took.push(r.tookMs);
      }
    }
  };
  await Promise.all(Array.from({ length: clients }, client));
  const seconds = (performance.now() - t0) / 1000;
  lat.sort((a, b) => a - b);
  took.sort((a, b) => a - b);
  return {
    phase: name,
    concurrency: clients,
    requests,
    queries,
    seconds,
    qps: queries / seconds,
    p50: percentile(lat, 50),
    p95: percentile(lat, 95),
    p99: percentile(lat, 99),
    serverP50: percentile(took, 50),
    errors: errors.length,
    shard503,
    errorSamples: errors.slice(0, 5),
  };
}

/** The pids of a server: the listener, or over shards the front and the shards' processes. */
export function serverPids(listener: number | undefined, sharded: boolean): number[] {
  if (listener === undefined) return [];
  if (!sharded) return [listener];
  const ppid = (pid: number) => {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  };
  try {
    const parent = ppid(listener);
    const out: number[] = [];
    for (const e of Deno.readDirSync("/proc")) {
      if (!/^\d+$/.test(e.name)) continue;
      try {
        if (ppid(Number(e.name)) === parent) out.push(Number(e.name));
      } catch { /* gone */ }
    }
    return out;
  } catch {
    return [listener];
  }
}

/** The summed `VmRSS`/`VmHWM` of processes, MiB (undefined when one is unreadable). */
function rssSum(pids: readonly number[]): { rss: number; peak: number } | undefined {
  let rss = 0, peak = 0;
  for (const pid of pids) {
    const r = rssMiB(pid);
    if (r === undefined) return undefined;
    rss += r.rss;
    peak += r.peak;
  }
  return pids.length === 0 ? undefined : { rss, peak };
}

/** What killing a shard's process met. */
export interface KillResult {
  /** The shard. */
  readonly shard: number;
  /** Seconds into the search phase it was killed. */
  readonly at: number;
  /** From the kill to `/healthz` saying it is up again, ms (null: not within 120 s). */
  readonly backMs: number | null;
  /** Its restarts count then. */
  readonly restarts: number | null;
}

/** SIGKILLs shard `shard`'s server process (a child of the launcher) and waits for it to be back. */
async function killShard(
  base: string,
  pids: readonly number[],
  shard: number,
  at: number,
): Promise<KillResult> {
  const victim = pids.find((pid) => {
    try {
      return Deno.readTextFileSync(`/proc/${pid}/cmdline`).split("\0").some((a) =>
        new RegExp(`/shard-${shard}-of-\\d+(,|$)`).test(a)
      );
    } catch {
      return false;
    }
  });
  if (victim === undefined) throw new Error(`--kill-shard ${shard}: no such shard process`);
  Deno.kill(victim, "SIGKILL");
  const t0 = performance.now();
  let seenDown = false;
  while (performance.now() - t0 < 120_000) {
    try {
      const h = await (await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(5000) }))
        .json();
      const st = h.shards?.[shard];
      if (st?.state !== "up") seenDown = true;
      else if (seenDown || st.restarts > 0) {
        return { shard, at, backMs: performance.now() - t0, restarts: st.restarts };
      }
    } catch { /* ask again */ }
    await sleep(50);
  }
  return { shard, at, backMs: null, restarts: null };
}

const f1 = (x: number | undefined) => x === undefined || Number.isNaN(x) ? "–" : x.toFixed(1);

/** The Markdown table of a run. */
export function table(
  label: string,
  phases: readonly PhaseResult[],
  rss: readonly ({ rss: number; peak: number } | undefined)[],
): string {
  const lines = [
    "| run | endpoint | clients | requests | questions | s | questions/s | p50 ms | p95 ms | p99 ms | server p50 ms | errors | RSS before MiB | RSS after MiB | peak MiB |",
    "| --- | --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |",
  ];
  phases.forEach((p, i) => {
    const before = rss[i], after = rss[i + 1];
    lines.push(
      `| ${label} | ${
        p.phase === "search" ? "GET /v1/search" : "POST /v1/batch"
      } | ${p.concurrency} | ${p.requests} | ${p.queries} | ${p.seconds.toFixed(1)} | ${
        f1(p.qps)
      } | ${f1(p.p50)} | ${f1(p.p95)} | ${f1(p.p99)} | ${f1(p.serverP50)} | ${p.errors} | ${
        f1(before?.rss)
      } | ${f1(after?.rss)} | ${f1(after?.peak)} |`,
    );
  });
  return lines.join("\n");
}

async function main(): Promise<number> {
  const o = parseArgs(Deno.args);
  const questions = await readQuestions(o.data);
  const child = o.index !== undefined ? await startServer(o) : undefined;
  const base = child?.url ?? o.url!;
  let code = 0;
  try {
    const health = await (await fetch(`${base}/healthz`)).json();
    const pid = listenerPid(Number(new URL(base).port));
    const sharded = Array.isArray(health.shards);
    const pids = serverPids(pid, sharded);
    const label = `${health.encoder} ${health.kind}${
      sharded ? ` ${health.shards.length} shards` : ""
    }${o.exact ? " (exact=1)" : ""}`;
    const rssNow = () => sharded ? rssSum(serverPids(pid, true)) : rssMiB(pid);
    const rss = [rssNow()];
    if (o.killShard !== undefined && !sharded) {
      throw new Error("--kill-shard needs a server over a folder of shards");
    }
    console.error(
      `server ${base} (pid ${
        pid ?? "not visible"
      }): ${health.kind} index, ${health.phrases} phrases, ` +
        `encoder ${health.encoder}; ${questions.length} questions; ${o.seconds} s per phase`,
    );
    const flooded = o.flood > 0
      ? sleep(o.floodAfter * 1000).then(() => flood(base, o.flood, o.floodHold))
      : undefined;
    const killing = o.killShard !== undefined
      ? sleep(o.killAfter * 1000).then(() => killShard(base, pids, o.killShard!, o.killAfter))
      : undefined;
    const search = await phase(
      "search",
      o.concurrency,
      1,
      questions,
      o,
      (qs) => searchOnce(base, qs[0], o),
    );
    rss.push(rssNow());
    const killResult = await killing;
    const batch = await phase(
      "batch",
      o.batchConcurrency,
      o.batch,
      questions,
      o,
      (qs) => batchOnce(base, qs, o),
    );
    rss.push(rssNow());
    const phases = [search, batch];
    const floodResult = await flooded;
    console.log(table(label, phases, rss));
    if (floodResult !== undefined) {
      const f = floodResult;
      console.error(
        `flood: ${f.asked} idle connections at ${o.floodAfter} s, held ${o.floodHold} s: ` +
          `${f.held} held open, ${f.refused503} answered 503, ${f.closed} closed, ` +
          `${f.connectFailed} could not connect; then /healthz on a fresh connection: ` +
          `${f.afterStatus || "no answer"} after ${f.afterMs.toFixed(1)} ms (${f.afterTries} ` +
          `request${f.afterTries === 1 ? "" : "s"})`,
      );
      if (f.afterStatus !== 200) {
        console.error("serve_load: the server did not answer after the flood");
        code = 1;
      }
    }
    if (killResult !== undefined) {
      const k = killResult;
      console.error(
        `kill: shard ${k.shard}'s process SIGKILLed at ${k.at} s; back up after ` +
          `${k.backMs === null ? "more than 120 s" : `${(k.backMs / 1000).toFixed(2)} s`} ` +
          `(restarts ${k.restarts ?? "?"}); answered 503 naming it: ` +
          `${search.shard503} search requests, ${batch.shard503} batch requests`,
      );
      if (k.backMs === null) {
        console.error("serve_load: the killed shard did not come back");
        code = 1;
      }
    }
    for (const p of phases) {
      for (const e of p.errorSamples) console.error(`${p.phase} error: ${e}`);
    }
    const errors = search.errors + batch.errors;
    if (errors > 0) {
      console.error(`serve_load: ${errors} requests failed (must be 0)`);
      code = 1;
    }
    if (o.out !== undefined) {
      const json = {
        url: base,
        pid: pid ?? null,
        health,
        options: { ...o, serveFlags: [...o.serveFlags] },
        questions: questions.length,
        rssMiB: { ready: rss[0] ?? null, afterSearch: rss[1] ?? null, afterBatch: rss[2] ?? null },
        phases,
        flood: floodResult ?? null,
        kill: killResult ?? null,
      };
      await Deno.writeTextFile(o.out, JSON.stringify(json, null, 2) + "\n");
      console.error(`wrote ${o.out}`);
    }
  } finally {
    if (child !== undefined) {
      child.process.kill("SIGINT");
      const st = await child.process.status;
      await child.drained;
      if (st.code !== 0) {
        console.error(`serve_load: the server exited ${st.code} on SIGINT:\n${child.stderr()}`);
        code = 1;
      } else console.error("server stopped (SIGINT, exit 0)");
    }
  }
  return code;
}

if (import.meta.main) {
  try {
    Deno.exit(await main());
  } catch (e) {
    console.error(`serve_load: ${e instanceof Error ? e.message : e}`);
    Deno.exit(2);
  }
}
