/**
 * The connections of `serve/http.ts` as fibers of the server's `FiberSet`:
 * closing the scope of {@linkcode acquireHttp} (a shutdown) interrupts the
 * connections left (one that sent nothing, one kept alive after its
 * answer, one whose handler never answers) and their finalizers close
 * them: each client reads the end of its connection and nothing more, and
 * `finished` resolves (every connection's fiber removed) within the grace
 * and the drain; a request answered before is answered as ever.
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals } from "../_assert.ts";
import { acquireHttp, type HttpServer, SHUTDOWN_GRACE_MS } from "../../serve/http.ts";
import { readResponse } from "./_fixture.ts";

const enc = new TextEncoder();

/** Everything the server still sends on `c` until it closes it (`undefined`: not within 5 s). */
async function rest(c: Deno.Conn): Promise<string | undefined> {
  const buf = new Uint8Array(4096);
  let out = "";
  const end = performance.now() + 5000;
  while (performance.now() < end) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const n = await Promise.race([
      c.read(buf).catch(() => null),
      new Promise<"late">((r) => timer = setTimeout(() => r("late"), end - performance.now())),
    ]);
    clearTimeout(timer);
    if (n === "late") return undefined;
    if (n === null) return out;
    out += new TextDecoder().decode(buf.subarray(0, n));
  }
  return undefined;
}

Deno.test("serve http: closing the server's scope interrupts the connections left and closes them; finished resolves", async () => {
  let hung = 0;
  const drainMs = 300;
  const clients: Deno.Conn[] = [];
  let server: HttpServer | undefined;
  const t0 = { at: 0 };
  try {
    await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
      const s = server = yield* acquireHttp({
        port: 0,
        drainTimeoutMs: drainMs,
        handler: (req) => {
          if (req.target === "/hang") {
            hung++;
            return new Promise(() => {}); // never answers
          }
          return Promise.resolve({ status: 200, body: "hi" });
        },
      });
      const open = () =>
        Effect.promise(async () => {
          const c = await Deno.connect({ hostname: "127.0.0.1", port: s.addr.port });
          clients.push(c);
          return c;
        });
      const host = `Host: 127.0.0.1:${s.addr.port}`;
      yield* open(); // sends nothing
      const kept = yield* open();
      yield* Effect.promise(() => kept.write(enc.encode(`GET / HTTP/1.1\r\n${host}\r\n\r\n`)));
      const r = yield* Effect.promise(() => readResponse(kept, 0));
      assertEquals([r?.status, r?.body], [200, "hi"]);
      const hanging = yield* open();
      yield* Effect.promise(() =>
        hanging.write(enc.encode(`GET /hang HTTP/1.1\r\n${host}\r\n\r\n`))
      );
      while (hung === 0) yield* Effect.sleep(5);
      t0.at = performance.now();
    })));
    const took = performance.now() - t0.at;
    // The scope's close is the shutdown: the grace, then the drain, then the fibers interrupted.
    assert(took >= drainMs, `closed after ${took.toFixed(0)} ms, before the drain`);
    assert(took < SHUTDOWN_GRACE_MS + drainMs + 2000, `closed after ${took.toFixed(0)} ms`);
    // Every connection's fiber ended: the server's `finished` waits for the last one.
    await server!.finished;
    // Each client reads the end of its connection: nothing more was written (no response to /hang).
    for (const c of clients) assertEquals(await rest(c), "");
    assertEquals(hung, 1);
  } finally {
    for (const c of clients) {
      try {
        c.close();
      } catch { /* closed */ }
    }
  }
});

Deno.test("serve http: a connection with nothing in flight is closed after the grace, not the drain", async () => {
  const drainMs = 10_000;
  let client: Deno.Conn | undefined;
  try {
    const took = await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
      const s = yield* acquireHttp({
        port: 0,
        drainTimeoutMs: drainMs,
        handler: () => Promise.resolve({ status: 200, body: "hi" }),
      });
      client = yield* Effect.promise(() =>
        Deno.connect({ hostname: "127.0.0.1", port: s.addr.port })
      );
      // Accepted and its fiber started (a request answered on it).
      yield* Effect.promise(() =>
        client!.write(enc.encode(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${s.addr.port}\r\n\r\n`))
      );
      assertEquals((yield* Effect.promise(() => readResponse(client!, 0)))?.status, 200);
      return performance.now();
    }))).then((at) => performance.now() - at);
    assert(took < drainMs / 2, `an idle connection held the shutdown ${took.toFixed(0)} ms`);
    assertEquals(await rest(client!), "");
  } finally {
    try {
      client?.close();
    } catch { /* closed */ }
  }
});
