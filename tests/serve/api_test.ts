/**
 * The demo server in process (`startServer` on 127.0.0.1, a free port):
 * the API's shapes and answers against open search's top-k for the same
 * dev questions, and every hostile request of the issue over a raw socket,
 * each followed by a good query that must still succeed.
 */
import { assert, assertEquals } from "../_assert.ts";
import { DEV_GZ } from "../_util.ts";
import { InputError } from "../../io/errors.ts";
import { type RunningServer, startServer } from "../../serve/server.ts";
import type { SearchAnswer, SearcherLike } from "../../serve/search.ts";
import { type Fixture, get, HOST, makeFixture, post, raw, readResponse } from "./_fixture.ts";

let fixture: Promise<Fixture> | undefined;
const fix = () => fixture ??= makeFixture("pv-serve-api-");
globalThis.addEventListener("unload", () => {
  fixture?.then((f) => Deno.removeSync(f.dir, { recursive: true })).catch(() => {});
});

const cpSlice = (s: string, a: number, b: number) => [...s].slice(a, b).join("");

/** A static folder: index.html, a text file, a hidden file and a link to the dataset. */
function staticDir(parent: string): string {
  const dir = `${parent}/static`;
  Deno.mkdirSync(`${dir}/sub`, { recursive: true });
  Deno.writeTextFileSync(`${dir}/index.html`, "<!doctype html><title>demo</title>\n");
  Deno.writeTextFileSync(`${dir}/sub/a.txt`, "static text\n");
  Deno.writeTextFileSync(`${dir}/.hidden`, "hidden\n");
  Deno.symlinkSync(DEV_GZ, `${dir}/dev.json.gz`);
  return dir;
}

async function withServer(
  f: Fixture,
  opts: Parameters<typeof startServer>[0],
  body: (s: RunningServer, log: string[]) => Promise<void>,
): Promise<void> {
  const log: string[] = [];
  const s = await startServer({
    index: f.index,
    encoder: "sparse-pi",
    port: 0,
    staticDir: staticDir(Deno.makeTempDirSync({ dir: f.dir })),
    log: (l) => log.push(l),
    ...opts,
  });
  try {
    await body(s, log);
  } finally {
    await s.shutdown();
  }
}

const Q = "Which NFL team represented the AFC at Super Bowl 50?";

Deno.test("serve api: /healthz, /v1/search, /api and /v1/batch shapes; answers = open search's top-k for the same dev questions", async () => {
  const f = await fix();
  await withServer(f, {}, async (s, log) => {
    const health = await (await fetch(`${s.url}healthz`)).json();
    assertEquals(health, {
      status: "ok",
      kind: "exact",
      metric: "ip",
      phrases: health.phrases,
      paragraphs: 16,
      d: 4194304,
      encoder: "sparse-pi",
    });
    assert(health.phrases > 1000, String(health.phrases));
    const sample = f.questions.filter((_, i) => i % 9 === 0).slice(0, 12);
    assert(sample.length === 12);
    for (const q of sample) {
      const want = f.topk.get(q.id)!;
      const r = await fetch(`${s.url}v1/search?q=${encodeURIComponent(q.question)}&k=5`);
      assertEquals(r.status, 200);
      assertEquals(r.headers.get("content-type"), "application/json; charset=utf-8");
      const a: SearchAnswer = await r.json();
      assertEquals(Object.keys(a), ["query", "took_ms", "exact", "results"]);
      assertEquals([a.query, a.exact, typeof a.took_ms], [q.question, true, "number"]);
      assertEquals(
        a.results.map((h) => [h.rank, h.paragraph_id, h.phrase, h.score, h.start, h.end]),
        want.map((o) => [o.rank, o.paragraph, o.phrase, o.score, o.start, o.end]),
        q.id,
      );
      for (const h of a.results) {
        assertEquals(Object.keys(h), [
          "rank",
          "title",
          "paragraph_id",
          "phrase",
          "start",
          "end",
          "score",
          "context",
        ]);
        assertEquals(h.title, h.paragraph_id.replace(/_\d+$/, ""));
        assertEquals(cpSlice(h.context!, h.start!, h.end!), h.phrase);
      }
      // PIQA's shape: [context, start_char, end_char, score], top k (k = --top-k = 5).
      const piqa = await (await fetch(`${s.url}api?query=${encodeURIComponent(q.question)}`))
        .json();
      assertEquals(piqa, a.results.map((h) => [h.context, h.start, h.end, h.score]));
    }
    // k and exact=0 on an exact index (answered exactly).
    const k2 = await (await fetch(`${s.url}v1/search?q=${encodeURIComponent(Q)}&k=2&exact=0`))
      .json();
    assertEquals([k2.results.length, k2.exact], [2, true]);
    // /v1/batch: the /v1/search object per query, in order.
    const qs = sample.slice(0, 3).map((q) => q.question);
    const b = await (await fetch(`${s.url}v1/batch`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ queries: qs, k: 3 }),
    })).json();
    assertEquals(Object.keys(b), ["took_ms", "results"]);
    assertEquals(b.results.map((x: SearchAnswer) => x.query), qs);
    for (const [i, x] of (b.results as SearchAnswer[]).entries()) {
      const one = await (await fetch(`${s.url}v1/search?q=${encodeURIComponent(qs[i])}&k=3`))
        .json();
      assertEquals(x.results, one.results);
    }
    assert(log.every((l) => /^(GET|POST) \/\S* \d{3} \d+\.\d$/.test(l)), log.join("\n"));
    assert(log.includes(log.find((l) => l.startsWith("POST /v1/batch 200 "))!));
  });
});

Deno.test("serve hostile: every error status, path traversal, 10 MB body, 200 idle connections, invalid UTF-8, HTTP/1.0 without Host; a good query after each", async () => {
  const f = await fix();
  await withServer(f, { bodyTimeoutMs: 500, headTimeoutMs: 500 }, async (s, log) => {
    const port = s.port;
    const good = async (what: string) => {
      const r = await raw(port, get(`/v1/search?q=${encodeURIComponent(Q)}&k=1`));
      assertEquals(r.status, 200, `good query after ${what}: ${r.body}`);
      assertEquals(JSON.parse(r.body).results.length, 1);
    };
    const seen: string[] = [];
    const expect = async (
      what: string,
      req: string | Uint8Array,
      status: number,
      error?: RegExp,
      closeWaitMs = 0,
    ) => {
      const r = await raw(port, req, closeWaitMs);
      assertEquals(r.status, status, `${what}: ${r.body}`);
      assertEquals(r.headers["content-type"], "application/json; charset=utf-8", what);
      const e = JSON.parse(r.body).error;
      assert(typeof e === "string" && (error === undefined || error.test(e)), `${what}: ${e}`);
      assert(!r.body.includes("root:") && !r.body.includes("Super Bowl 50"), what);
      seen.push(`${status} ${what}: ${e}`);
      await good(what);
      return r;
    };
    await expect("missing q", get("/v1/search"), 400, /missing query/);
    await expect("missing query (/api)", get("/api?q=x"), 400, /missing query \(query=/);
    await expect("empty q", get("/v1/search?q="), 400, /empty query/);
    await expect("blank q", get("/v1/search?q=+%20+"), 400, /empty query/);
    await expect("q over 4 KiB", get(`/v1/search?q=${"a".repeat(4097)}`), 400, /over 4096/);
    await expect("bad percent-encoding", get("/v1/search?q=%ZZ"), 400, /percent-encoding/);
    await expect("truncated percent", get("/v1/search?q=ab%E"), 400, /percent-encoding/);
    await expect("invalid UTF-8 (%FF)", get("/v1/search?q=%FF"), 400, /not valid UTF-8/);
    await expect("overlong UTF-8", get("/v1/search?q=%C0%AF"), 400, /not valid UTF-8/);
    await expect("lone surrogate", get("/v1/search?q=%ED%A0%80"), 400, /not valid UTF-8/);
    await expect("k=0", get(`/v1/search?q=x&k=0`), 400, /k must be/);
    await expect("k=101", get(`/v1/search?q=x&k=101`), 400, /k must be/);
    await expect("k=abc", get(`/v1/search?q=x&k=abc`), 400, /k must be/);
    await expect("k twice", get(`/v1/search?q=x&k=1&k=2`), 400, /twice/);
    await expect("nprobe on exact", get(`/v1/search?q=x&nprobe=3`), 400, /ivf-pq/);
    await expect("exact=2", get(`/v1/search?q=x&exact=2`), 400, /exact must be 0 or 1/);
    await expect("bad JSON body", post("/v1/batch", "{"), 400, /bad JSON/);
    await expect("body not JSON (ÿ)", post("/v1/batch", "\xff"), 400, /bad JSON/);
    await expect("queries not array", post("/v1/batch", '{"queries":"x"}'), 400, /array/);
    const many = JSON.stringify({ queries: Array(65).fill("x") });
    await expect("65 queries", post("/v1/batch", many), 400, /65 queries; at most 64/);
    await expect("an empty query in a batch", post("/v1/batch", '{"queries":["a",""]}'), 400);
    await expect("404", get("/nope"), 404, /not found/);
    const m = await expect(
      "405 DELETE",
      `DELETE /v1/search HTTP/1.1\r\nHost: ${HOST}\r\n\r\n`,
      405,
    );
    assertEquals(m.headers["allow"], "GET, HEAD");
    const g = await expect("405 GET /v1/batch", get("/v1/batch"), 405);
    assertEquals(g.headers["allow"], "POST");
    await expect("405 POST /", post("/", "{}"), 405);
    // 413: Content-Length checked first; the 10 MB body is not read.
    const big = new Uint8Array(10 << 20).fill(0x61);
    const head = new TextEncoder().encode(
      `POST /v1/batch HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Length: ${big.length}\r\n\r\n`,
    );
    const tenMb = new Uint8Array(head.length + big.length);
    tenMb.set(head);
    tenMb.set(big, head.length);
    const r413 = await expect("10 MB body", tenMb, 413, /over 65536 bytes/, 3000);
    assert(r413.closed, "the connection is closed after 413");
    // 413 for a chunked body: reading stops at 64 KiB.
    let chunked = `POST /v1/batch HTTP/1.1\r\nHost: ${HOST}\r\nTransfer-Encoding: chunked\r\n\r\n`;
    for (let i = 0; i < 40; i++) chunked += `1000\r\n${"b".repeat(4096)}\r\n`;
    chunked += "0\r\n\r\n";
    await expect("chunked body over 64 KiB", chunked, 413, /over 65536/);
    // A small chunked body is read and answered.
    const part2 = `ries": ["${Q}"]}`;
    const okChunked = `POST /v1/batch HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n` +
      `Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"que\r\n${
        new TextEncoder().encode(part2).length.toString(16)
      }\r\n${part2}\r\n0\r\n\r\n`;
    const rc = await raw(port, okChunked);
    assertEquals(rc.status, 200, rc.body);
    assertEquals(JSON.parse(rc.body).results[0].query, Q);
    await expect(
      "bad chunk size",
      `POST /v1/batch HTTP/1.1\r\nHost: ${HOST}\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n`,
      400,
      /chunked/,
    );
    await expect(
      "both framings",
      `POST /v1/batch HTTP/1.1\r\nHost: ${HOST}\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}`,
      400,
      /both/,
    );
    await expect("bad request line", "NOT A REQUEST\r\n\r\n", 400, /request line/);
    await expect("HTTP/1.1 without Host", "GET /healthz HTTP/1.1\r\n\r\n", 400, /Host/);
    // 408: a body that does not arrive in time; the connection is closed.
    const r408 = await expect(
      "slow body",
      `POST /v1/batch HTTP/1.1\r\nHost: ${HOST}\r\nContent-Length: 100\r\n\r\n{"que`,
      408,
      /did not arrive in time/,
      3000,
    );
    assert(r408.closed, "the connection is closed after 408");
    // Path traversal on static files: never a file outside the static folder.
    for (
      const [target, status] of [
        ["/../../../../etc/passwd", 404],
        ["/sub/../../../etc/passwd", 404],
        ["/%2e%2e/%2e%2e/%2e%2e/etc/passwd", 404],
        ["/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd", 400],
        ["/..%2f..%2fetc/passwd", 400],
        ["//etc/passwd", 404],
        ["/etc/passwd", 404],
        ["/sub/..%5c..%5cetc%5cpasswd", 400],
        ["/index.html%00.txt", 400],
        ["http://127.0.0.1/../../etc/passwd", 404],
        ["/.hidden", 404],
        ["/dev.json.gz", 404],
        ["/sub", 404],
        ["/%", 400],
      ] as const
    ) await expect(`static ${target}`, get(target), status);
    for (const [target, text] of [["/", "<title>demo</title>"], ["/sub/a.txt", "static text"]]) {
      const r = await raw(port, get(target));
      assertEquals(r.status, 200, target);
      assert(r.body.includes(text), r.body);
    }
    // 200 connections that send nothing do not block a good query.
    const idle = await Promise.all(
      Array.from({ length: 200 }, () => Deno.connect({ hostname: "127.0.0.1", port })),
    );
    try {
      await good("200 idle connections");
    } finally {
      for (const c of idle) c.close();
    }
    // HTTP/1.0 without Host.
    const h10 = await raw(port, "GET /healthz HTTP/1.0\r\n\r\n", 2000);
    assertEquals([h10.status, JSON.parse(h10.body).status, h10.closed], [200, "ok", true]);
    await good("HTTP/1.0");
    // Keep-alive: two requests on one connection.
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    try {
      for (let i = 0; i < 2; i++) {
        await conn.write(
          new TextEncoder().encode(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`),
        );
        const r = await readResponse(conn, 0);
        assertEquals([r.status, r.headers["connection"]], [200, "keep-alive"]);
      }
    } finally {
      conn.close();
    }
    // One log line per request, the path without its query, escaped.
    assert(log.some((l) => /^GET \/v1\/search 400 \d+\.\d$/.test(l)), log.join("\n"));
    assert(log.some((l) => /^POST \/v1\/batch 413 /.test(l)));
    assert(log.some((l) => /^- - 400 /.test(l) || /^NOT A 400/.test(l)), log.join("\n"));
    console.log(seen.join("\n"));
  });
});

Deno.test("serve hostile: 503 when the queue is full; searches run one at a time", async () => {
  const gates: (() => void)[] = [];
  let running = 0, most = 0;
  const searcher: SearcherLike = {
    info: { kind: "exact", metric: "ip", phrases: 1, paragraphs: 1, d: 1, encoder: "fake" },
    search: async (query) => {
      running++;
      most = Math.max(most, running);
      await new Promise<void>((r) => gates.push(r));
      running--;
      return { query, took_ms: 0, exact: true, results: [] };
    },
  };
  const s = await startServer({ searcher, port: 0, queue: 2, log: false });
  try {
    const a = fetch(`${s.url}v1/search?q=a`);
    const b = fetch(`${s.url}v1/search?q=b`);
    while (gates.length === 0) await new Promise((r) => setTimeout(r, 5));
    const full = await raw(s.port, get("/v1/search?q=c"));
    assertEquals(full.status, 503);
    assertEquals(full.headers["retry-after"], "1");
    assertEquals(JSON.parse(full.body).error, "the search queue is full (2 waiting or running)");
    gates.shift()!();
    assertEquals((await (await a).json()).query, "a");
    while (gates.length === 0) await new Promise((r) => setTimeout(r, 5));
    gates.shift()!();
    assertEquals((await (await b).json()).query, "b");
    assertEquals(most, 1);
    const c = fetch(`${s.url}v1/search?q=c`);
    while (gates.length === 0) await new Promise((r) => setTimeout(r, 5));
    gates.shift()!();
    assertEquals((await (await c).json()).query, "c");
  } finally {
    await s.shutdown();
  }
});

Deno.test("serve: a search that fails on the server's data (an index file cut short) is a 500, a bad option a 400", async () => {
  const searcher: SearcherLike = {
    info: { kind: "exact", metric: "ip", phrases: 1, paragraphs: 1, d: 1, encoder: "fake" },
    search: (query) =>
      Promise.reject(
        query === "cut"
          ? new InputError({
            file: "/ix/ivf/codes.u8",
            where: "",
            message: "ended early (truncated or corrupt index)",
          })
          : new InputError({ file: "", where: "", message: "bad option" }),
      ),
  };
  const s = await startServer({ searcher, port: 0, log: false });
  try {
    const cut = await fetch(`${s.url}v1/search?q=cut`);
    assertEquals(
      [cut.status, (await cut.json()).error],
      [500, "/ix/ivf/codes.u8: ended early (truncated or corrupt index)"],
    );
    const bad = await fetch(`${s.url}v1/search?q=other`);
    assertEquals([bad.status, (await bad.json()).error], [400, "bad option"]);
  } finally {
    await s.shutdown();
  }
});

Deno.test("serve hostile: Host must be the server's own address (DNS rebinding), two Host fields are refused, a POST must say application/json", async () => {
  const searcher: SearcherLike = {
    info: { kind: "exact", metric: "ip", phrases: 1, paragraphs: 1, d: 1, encoder: "fake" },
    search: (query) => Promise.resolve({ query, took_ms: 0, exact: true, results: [] }),
  };
  const log: string[] = [];
  const s = await startServer({ searcher, port: 0, log: (l) => log.push(l) });
  try {
    const port = s.port;
    const health = (host: string) => `GET /healthz HTTP/1.1\r\nHost: ${host}\r\n\r\n`;
    const batch = (headers: string) => {
      const body = '{"queries": ["a", "b"]}';
      return `POST /v1/batch HTTP/1.1\r\nHost: ${HOST}\r\n${headers}` +
        `Content-Length: ${body.length}\r\n\r\n${body}`;
    };
    const cases: [string, string, number, RegExp?][] = [
      ["own address", health(`127.0.0.1:${port}`), 200],
      ["localhost", health(`localhost:${port}`), 200],
      ["upper case", health(`LOCALHOST:${port}`), 200],
      ["evil.example", health("evil.example"), 421, /Host "evil\.example" is not this server/],
      ["evil.example with the port", health(`evil.example:${port}`), 421],
      ["the address without its port", health("127.0.0.1"), 421],
      ["another port", health(`127.0.0.1:${port + 1}`), 421],
      ["[::1] (not bound there)", health(`[::1]:${port}`), 421],
      [
        "two Host fields",
        `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nHost: evil.example\r\n\r\n`,
        400,
        /two Host header fields/,
      ],
      [
        "two Host fields, both right",
        `GET /healthz HTTP/1.1\r\nHost: ${HOST}\r\nhost: ${HOST}\r\n\r\n`,
        400,
        /two Host/,
      ],
      ["POST text/plain", batch("Content-Type: text/plain;charset=UTF-8\r\n"), 415, /text\/plain/],
      ["POST without a type", batch(""), 415, /got none/],
      ["POST a form", batch("Content-Type: application/x-www-form-urlencoded\r\n"), 415],
      ["POST application/json", batch("Content-Type: application/json\r\n"), 200],
      ["POST JSON, charset", batch("Content-Type: Application/JSON; charset=utf-8\r\n"), 200],
    ];
    const got: string[] = [];
    for (const [what, req, status, error] of cases) {
      const r = await raw(port, req);
      got.push(`${what}: ${r.status}`);
      assertEquals(r.status, status, `${what}: ${r.body}`);
      if (error !== undefined) assert(error.test(JSON.parse(r.body).error), r.body);
      if (status === 200 && req.startsWith("POST")) {
        assertEquals(JSON.parse(r.body).results.map((a: SearchAnswer) => a.query), ["a", "b"]);
      }
    }
    console.log(got.join("\n"));
    // fetch (as the demo page does) sends the server's own Host.
    assertEquals((await (await fetch(`${s.url}healthz`)).json()).status, "ok");
    const viaLocalhost = await fetch(`http://localhost:${port}/healthz`).catch(() => undefined);
    if (viaLocalhost !== undefined) assertEquals(viaLocalhost.status, 200);
  } finally {
    await s.shutdown();
  }
});
