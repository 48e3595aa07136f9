/**
 * The demo server as its own process (`_fake_server.ts`: `startServer` on a
 * fake searcher) under the limits of the issue: a low descriptor limit
 * (`ulimit -n 256`) and a flood of idle connections (the accept loop
 * survives running out of descriptors, logs it once, and answers after;
 * connections over the cap get 503 while the server stays up); a graceful
 * stop answers every request already sent, even those that came while a
 * search held the thread; a 64-question `/v1/batch` does not hold
 * `/healthz` or a single question behind all of its questions.
 */
import { assert, assertEquals } from "../_assert.ts";
import { ROOT, spawnChild } from "../_util.ts";
import { readResponse } from "./_fixture.ts";

interface Fake {
  readonly proc: Deno.ChildProcess;
  readonly port: number;
  /** Everything on stdout so far (`ready PORT`, one `pass ...` line per search pass). */
  stdout(): string;
  /** Everything on stderr so far (the server's log). */
  stderr(): string;
  /** Stops it (SIGINT) and returns its exit code. */
  stop(): Promise<number>;
}

/** Starts `_fake_server.ts flags` (under `ulimit -n nofile` when given) and waits for `ready`. */
async function fake(flags: readonly string[], nofile?: number): Promise<Fake> {
  const argv = [Deno.execPath(), "run", "-A", `${ROOT}/tests/serve/_fake_server.ts`, ...flags];
  // Spawned: its output is read while it runs, then it gets SIGINT.
  const proc = spawnChild(
    [
      "bash",
      "-c",
      `${nofile !== undefined ? `ulimit -n ${nofile} && ` : ""}exec "$@"`,
      "-",
      ...argv,
    ],
    {
      cwd: ROOT,
      // Deno itself warns on stderr when NODE_EXTRA_CA_CERTS cannot be read for want of a
      // descriptor; the tests count the server's own log lines, so that variable is left out.
      clearEnv: true,
      env: {
        ...Object.fromEntries(
          Object.entries(Deno.env.toObject()).filter(([k]) => k !== "NODE_EXTRA_CA_CERTS"),
        ),
        NO_COLOR: "1",
      },
    },
  );
  let out = "", err = "";
  let ready: (port: number | undefined) => void = () => {};
  const got = new Promise<number | undefined>((r) => ready = r);
  const outDone = (async () => {
    for await (const s of proc.stdout.pipeThrough(new TextDecoderStream())) {
      out += s;
      const m = /^ready (\d+)$/m.exec(out);
      if (m) ready(Number(m[1]));
    }
    ready(undefined);
  })();
  const errDone = (async () => {
    for await (const s of proc.stderr.pipeThrough(new TextDecoderStream())) err += s;
  })();
  const port = await got;
  if (port === undefined) {
    await proc.status;
    throw new Error(`the fake server did not start:\n${err}`);
  }
  let stopped: Promise<number> | undefined;
  return {
    proc,
    port,
    stdout: () => out,
    stderr: () => err,
    stop: () =>
      stopped ??= (async () => {
        try {
          proc.kill("SIGINT");
        } catch { /* gone */ }
        const st = await proc.status;
        await Promise.all([outDone, errDone]);
        return st.code;
      })(),
  };
}

const enc = new TextEncoder();
const until = async (ok: () => boolean, what: string) => {
  for (let i = 0; !ok(); i++) {
    if (i > 3000) throw new Error(`waited 30 s for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};
const healthz = (port: number) =>
  `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`;

/** Opens `n` connections that send nothing (the kernel completes them even when not accepted). */
async function flood(port: number, n: number): Promise<Deno.Conn[]> {
  const out: Deno.Conn[] = [];
  for (let i = 0; i < n; i++) out.push(await Deno.connect({ hostname: "127.0.0.1", port }));
  return out;
}

/** One request on a fresh connection; its status (0: none within 10 s). */
async function status(port: number, request: string): Promise<number> {
  const c = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await c.write(enc.encode(request));
    let timer: ReturnType<typeof setTimeout> | undefined;
    const r = await Promise.race([
      readResponse(c, 0),
      new Promise<undefined>((res) => timer = setTimeout(() => res(undefined), 10_000)),
    ]);
    clearTimeout(timer);
    return r?.status ?? 0;
  } finally {
    c.close();
  }
}

const ACCEPT_LINE = /^accepting a connection failed \(.*Too many open files.*\); retrying/;
const CAP_LINE = /^(\d+) connections open, the most allowed: further connections get 503/;

Deno.test("serve limits: out of descriptors (ulimit -n 256, no cap), 400 idle connections: the accept loop backs off, logs once, and answers once they close", async () => {
  const s = await fake(["--max-connections", "100000"], 256);
  try {
    const idle = await flood(s.port, 400);
    // The server holds what it could accept; a request now waits in the backlog.
    await new Promise((r) => setTimeout(r, 500));
    for (const c of idle) c.close();
    assertEquals(await status(s.port, healthz(s.port)), 200, s.stderr());
    // Another flood, closed again: still answering, and still one line.
    for (const c of await flood(s.port, 400)) c.close();
    assertEquals(await status(s.port, healthz(s.port)), 200, s.stderr());
  } finally {
    assertEquals(await s.stop(), 0, s.stderr());
  }
  const lines = s.stderr().trim().split("\n").filter((l) => !/^GET \/healthz 200 /.test(l));
  assertEquals(lines.length, 1, s.stderr());
  assert(ACCEPT_LINE.test(lines[0]), lines[0]);
});

Deno.test("serve limits: ulimit -n 256: connections over the cap (192) get 503 and are closed, the server stays up, and answers once the others close", async () => {
  const s = await fake([], 256);
  try {
    const idle = await flood(s.port, 400);
    const held: Deno.Conn[] = [], refused: Deno.Conn[] = [];
    const got = await Promise.all(idle.map(async (c) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const r = await Promise.race([
        readResponse(c, 0),
        new Promise<undefined>((res) => timer = setTimeout(() => res(undefined), 3000)),
      ]);
      clearTimeout(timer);
      (r === undefined ? held : refused).push(c);
      return r;
    }));
    const refusals = got.filter((r) => r !== undefined);
    assertEquals([held.length, refusals.length], [192, 208]);
    for (const r of refusals) {
      assertEquals([r!.status, r!.headers["retry-after"], r!.headers["connection"]], [
        503,
        "1",
        "close",
      ]);
      assertEquals(JSON.parse(r!.body).error, "too many connections (192 open)");
    }
    // While the cap is full a new connection is refused too: the server answers it.
    assertEquals(await status(s.port, healthz(s.port)), 503);
    for (const c of [...held, ...refused]) c.close();
    let ok = 0;
    for (let i = 0; i < 50 && ok === 0; i++) {
      const st = await status(s.port, healthz(s.port));
      if (st === 200) ok++;
      else await new Promise((r) => setTimeout(r, 100));
    }
    assertEquals(ok, 1, s.stderr());
  } finally {
    assertEquals(await s.stop(), 0, s.stderr());
  }
  const lines = s.stderr().trim().split("\n").filter((l) => !/^GET \/healthz (200|503) /.test(l));
  assertEquals(lines.length, 1, s.stderr());
  assertEquals(CAP_LINE.exec(lines[0])?.[1], "192", lines[0]);
});

Deno.test("serve limits: SIGINT while a search holds the thread: every request already sent is answered, exit 0", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "pv-serve-stop-" });
  const hold = `${dir}/go`;
  const s = await fake(["--hold-file", hold]);
  try {
    const conns = await flood(s.port, 4);
    const send = (c: Deno.Conn, i: number) =>
      c.write(
        enc.encode(
          `GET /v1/search?q=q${i} HTTP/1.1\r\nHost: 127.0.0.1:${s.port}\r\nConnection: close\r\n\r\n`,
        ),
      );
    await send(conns[0], 0);
    await until(() => /^pass q0$/m.test(s.stdout()), "the first pass");
    // The thread is held: these are read by the kernel only (3 accepted, 4 not yet).
    for (let i = 1; i < 4; i++) await send(conns[i], i);
    conns.push(...await flood(s.port, 4));
    for (let i = 4; i < 8; i++) await send(conns[i], i);
    s.proc.kill("SIGINT");
    await new Promise((r) => setTimeout(r, 200));
    Deno.writeTextFileSync(hold, "");
    const got = await Promise.all(conns.map(async (c) => {
      const r = await readResponse(c, 0).catch(() => undefined);
      c.close();
      return r === undefined || r.status === 0 ? "none" : JSON.parse(r.body).query ?? r.status;
    }));
    assertEquals(got, ["q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7"], s.stderr());
  } finally {
    assertEquals(await s.stop(), 0, s.stderr());
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("serve limits: /healthz and a single question are answered while a 64-question /v1/batch is searched, not after it", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "pv-serve-interleave-" });
  const hold = `${dir}/go`;
  // Each question holds the thread 20 ms (64: 1.3 s), as scoring does.
  const s = await fake(["--hold-file", hold, "--busy-ms", "20"]);
  try {
    const qs = Array.from({ length: 64 }, (_, i) => `b${i}`);
    const body = JSON.stringify({ queries: qs });
    const a = await Deno.connect({ hostname: "127.0.0.1", port: s.port });
    await a.write(enc.encode(
      `POST /v1/batch HTTP/1.1\r\nHost: 127.0.0.1:${s.port}\r\nConnection: close\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    ));
    await until(() => /^pass b0\|/m.test(s.stdout()), "the batch's first pass");
    // The thread is held by the batch's first pass: these wait in the kernel.
    const [h, q] = await flood(s.port, 2);
    await h.write(enc.encode(healthz(s.port)));
    await q.write(enc.encode(
      `GET /v1/search?q=single HTTP/1.1\r\nHost: 127.0.0.1:${s.port}\r\nConnection: close\r\n\r\n`,
    ));
    Deno.writeTextFileSync(hold, "");
    const [ra, rh, rq] = await Promise.all([a, h, q].map((c) => readResponse(c, 0)));
    for (const c of [a, h, q]) c.close();
    assertEquals([ra.status, rh.status, rq.status], [200, 200, 200]);
    assertEquals(JSON.parse(ra.body).results.map((x: { query: string }) => x.query), qs);
    assertEquals(JSON.parse(rq.body).query, "single");
    const passes = s.stdout().split("\n").filter((l) => l.startsWith("pass ")).map((l) =>
      l.slice(5).split("|")
    );
    // The single question is answered in a pass before the batch's last one.
    const single = passes.findIndex((p) => p.includes("single"));
    const last = passes.findIndex((p) => p.includes("b63"));
    assert(single >= 0 && single < last, JSON.stringify(passes));
    assert(passes.every((p) => p.filter((x) => x.startsWith("b")).length <= 8), passes.join());
    // /healthz was answered before the batch: its log line comes first.
    await s.stop();
    const log = s.stderr().split("\n");
    const health = log.findIndex((l) => l.startsWith("GET /healthz 200 "));
    const batch = log.findIndex((l) => l.startsWith("POST /v1/batch 200 "));
    assert(health >= 0 && health < batch, s.stderr());
  } finally {
    assertEquals(await s.stop(), 0, s.stderr());
    Deno.removeSync(dir, { recursive: true });
  }
});
