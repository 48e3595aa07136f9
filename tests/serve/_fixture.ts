/**
 * What the serve tests share: a small sparse-pi run of two dev articles
 * (8 paragraphs each) through `full --open` (its index, question dump and
 * open search's top-k), and a raw-socket HTTP client that sees exactly what
 * the server sends (status, headers, body, whether it closed).
 *
 * @module
 */
import { assertEquals } from "../_assert.ts";
import { DEV_GZ, ROOT, runStage, spawnChild } from "../_util.ts";
import { denoRunArgv } from "../../runs/sandbox/sandbox.ts";

/** A `full --open --top-k 5` run of a small dev subset. */
export interface Fixture {
  /** The temporary folder (remove it when done). */
  readonly dir: string;
  /** The subset dataset. */
  readonly data: string;
  /** The run folder. */
  readonly run: string;
  /** Its exact index. */
  readonly index: string;
  /** Questions of the subset, in order: id and text. */
  readonly questions: readonly { id: string; question: string }[];
  /** open search's top-5 records by question id. */
  readonly topk: ReadonlyMap<string, Record<string, unknown>[]>;
}

/** Builds the fixture (about 10 s on two cores). */
export async function makeFixture(prefix: string): Promise<Fixture> {
  const dir = Deno.makeTempDirSync({ prefix });
  const full = JSON.parse(
    await new Response(
      (await Deno.open(DEV_GZ)).readable.pipeThrough(new DecompressionStream("gzip")),
    ).text(),
  );
  full.data = full.data.slice(0, 2);
  for (const a of full.data) a.paragraphs = a.paragraphs.slice(0, 8);
  const data = `${dir}/data.json`;
  Deno.writeTextFileSync(data, JSON.stringify(full));
  const run = `${dir}/run`;
  const r = await runStage("pipeline/full.ts", [
    "--data",
    data,
    "--out",
    run,
    "--open",
    "--top-k",
    "5",
  ]);
  assertEquals(r.code, 0, r.stderr);
  const questions: { id: string; question: string }[] = [];
  for (const a of full.data) {
    for (const p of a.paragraphs) for (const q of p.qas) questions.push(q);
  }
  const topk = new Map<string, Record<string, unknown>[]>();
  for (const line of Deno.readTextFileSync(`${run}/open/topk.ndjson`).trim().split("\n")) {
    const o = JSON.parse(line);
    if (!topk.has(o.id)) topk.set(o.id, []);
    topk.get(o.id)!.push(o);
  }
  return { dir, data, run, index: `${run}/index`, questions, topk };
}

/** What a raw request got back. */
export interface RawResponse {
  /** The status code (0: no response). */
  readonly status: number;
  /** Header fields (lower-case names). */
  readonly headers: Record<string, string>;
  /** The body as text. */
  readonly body: string;
  /** Whether the server closed the connection after the response (within `closeWaitMs`). */
  readonly closed: boolean;
}

const latin1 = new TextDecoder("latin1");

/** Reads one response from `conn`; then waits up to `closeWaitMs` for the server to close. */
export async function readResponse(conn: Deno.Conn, closeWaitMs = 2000): Promise<RawResponse> {
  let buf = new Uint8Array(0);
  const chunk = new Uint8Array(65536);
  let eof = false;
  const more = async (ms: number): Promise<boolean> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const n = await Promise.race([
      conn.read(chunk).catch(() => null),
      new Promise<"t">((r) => timer = setTimeout(() => r("t"), ms)),
    ]);
    clearTimeout(timer);
    if (n === "t") return false;
    if (n === null) {
      eof = true;
      return false;
    }
    const b = new Uint8Array(buf.length + n);
    b.set(buf);
    b.set(chunk.subarray(0, n), buf.length);
    buf = b;
    return true;
  };
  let headEnd = -1;
  while ((headEnd = latin1.decode(buf).indexOf("\r\n\r\n")) < 0) {
    if (!await more(20000)) return { status: 0, headers: {}, body: "", closed: eof };
  }
  const head = latin1.decode(buf.subarray(0, headEnd)).split("\r\n");
  const status = Number(head[0].split(" ")[1]);
  const headers: Record<string, string> = {};
  for (const l of head.slice(1)) {
    const c = l.indexOf(":");
    headers[l.slice(0, c).toLowerCase()] = l.slice(c + 1).trim();
  }
  const len = Number(headers["content-length"] ?? 0);
  while (buf.length < headEnd + 4 + len) if (!await more(20000)) break;
  const body = new TextDecoder().decode(buf.subarray(headEnd + 4, headEnd + 4 + len));
  if (!eof && closeWaitMs > 0) {
    while (!eof && await more(closeWaitMs)) { /* read to the end */ }
  }
  return { status, headers, body, closed: eof };
}

/** The server's own `Host` in a request {@linkcode raw} sends (`$PORT` becomes its port). */
export const HOST = "127.0.0.1:$PORT";

/**
 * Sends `text` (or bytes) on a fresh connection and reads one response;
 * `$PORT` in a text request is replaced by `port`.
 */
export async function raw(
  port: number,
  request: string | Uint8Array,
  closeWaitMs = 0,
): Promise<RawResponse> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    const bytes = typeof request === "string"
      ? new TextEncoder().encode(request.replaceAll("$PORT", String(port)))
      : request;
    let o = 0;
    try {
      while (o < bytes.length) o += await conn.write(bytes.subarray(o));
    } catch { /* the server may close before the whole request is sent */ }
    return await readResponse(conn, closeWaitMs);
  } finally {
    try {
      conn.close();
    } catch { /* closed */ }
  }
}

/** A GET request line and Host header (the server's own: {@linkcode HOST}). */
export const get = (target: string, extra = ""): string =>
  `GET ${target} HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n${extra}\r\n`;

/** A JSON POST with a body. */
export const post = (target: string, body: string, extra = ""): string =>
  `POST ${target} HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n` +
  `Content-Type: application/json\r\nContent-Length: ${
    new TextEncoder().encode(body).length
  }\r\n${extra}\r\n${body}`;

/** A `serve` launcher started by {@linkcode launchServe}. */
export interface Launched {
  /** The launcher process. */
  readonly proc: Deno.ChildProcess;
  /** What it wrote to stderr so far. */
  stderr(): string;
  /** The port of its `serving` line; undefined when it exited (or timed out) first. */
  readonly port?: number;
  /** `http://127.0.0.1:PORT`. */
  readonly base: string;
}

/**
 * Starts `pipeline/serve.ts args` (all permissions, as the `phraseval`
 * launcher grants) and waits at most `waitMs` for its `serving` line or its
 * exit; its stderr is read while it runs.
 */
export async function launchServe(args: readonly string[], waitMs: number): Promise<Launched> {
  const argv = denoRunArgv(`${ROOT}/pipeline/serve.ts`, args, { all: true }, {
    config: null,
    prompt: true,
  });
  const proc = spawnChild(argv, { cwd: ROOT, env: { NO_COLOR: "1" } });
  let text = "";
  let ready: (port: number | undefined) => void = () => {};
  const got = new Promise<number | undefined>((r) => ready = r);
  (async () => {
    for await (const s of proc.stderr.pipeThrough(new TextDecoderStream())) {
      text += s;
      const m = /^serving http:\/\/127\.0\.0\.1:(\d+)\/ /m.exec(text);
      if (m) ready(Number(m[1]));
    }
    ready(undefined);
  })();
  proc.stdout.cancel();
  const timer = setTimeout(() => ready(undefined), waitMs);
  const port = await got;
  clearTimeout(timer);
  return { proc, stderr: () => text, port, base: `http://127.0.0.1:${port}` };
}

/** Stops a launcher with SIGINT (SIGKILL after 30 s) and awaits it: its exit status. */
export async function stopServe(l: Launched): Promise<Deno.CommandStatus> {
  try {
    l.proc.kill("SIGINT");
  } catch { /* gone */ }
  const t = setTimeout(() => {
    try {
      l.proc.kill("SIGKILL");
    } catch { /* gone */ }
  }, 30_000);
  const st = await l.proc.status;
  clearTimeout(t);
  return st;
}
