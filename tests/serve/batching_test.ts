/**
 * Micro-batching in the demo server (`SearchQueue` of `serve/api.ts` and
 * `Searcher.searchMany`), on a sparse-pi index of dev paragraphs: searches
 * that wait together are encoded and scored in one call and answer exactly
 * what they answer one at a time (each with its own k and exact flag); a
 * `/v1/batch` goes in chunks of 8 questions, the single questions that
 * arrive meanwhile answered between its chunks, and equals its queries one
 * by one; the queue
 * limit still counts the requests waiting or running (503 beyond it); a
 * request whose batch fails is retried alone.
 */
import { assert, assertEquals } from "../_assert.ts";
import { apiHandler, QueueFull, SearchQueue } from "../../serve/api.ts";
import type { HttpRequest, HttpResponse } from "../../serve/http.ts";
import {
  type SearchAnswer,
  Searcher,
  type SearcherLike,
  type SearchRequest,
} from "../../serve/search.ts";
import { type Fixture, makeFixture } from "./_fixture.ts";

let fixture: Promise<Fixture> | undefined;
const fix = () => fixture ??= makeFixture("pv-serve-batching-");
globalThis.addEventListener("unload", () => {
  fixture?.then((f) => Deno.removeSync(f.dir, { recursive: true })).catch(() => {});
});

const request = (target: string, body?: unknown): HttpRequest => ({
  method: body === undefined ? "GET" : "POST",
  target,
  version: "1.1",
  headers: new Headers(body === undefined ? {} : { "content-type": "application/json" }),
  body: body === undefined ? new Uint8Array() : new TextEncoder().encode(JSON.stringify(body)),
});

const json = (r: HttpResponse) => {
  assert(typeof r.body === "string", "a JSON body");
  return JSON.parse(r.body as string);
};

/** Answers without their timings. */
const untimed = (a: SearchAnswer) => ({ ...a, took_ms: 0 });

/** A searcher that records its `searchMany` calls and can hold the next one. */
function recording(inner: Searcher) {
  const calls: string[][] = [];
  let gate: Promise<void> | undefined;
  let open = () => {};
  const s: SearcherLike = {
    info: inner.info,
    search: (q, o) => inner.search(q, o),
    searchMany: async (items: readonly SearchRequest[]) => {
      calls.push(items.map((i) => i.query));
      if (gate !== undefined) await gate;
      return inner.searchMany(items);
    },
  };
  return {
    searcher: s,
    calls,
    hold: () => gate = new Promise<void>((r) => open = () => (gate = undefined, r())),
    release: () => open(),
  };
}

const until = async (ok: () => boolean) => {
  while (!ok()) await new Promise((r) => setTimeout(r, 5));
};

Deno.test("serve batching: concurrent searches are encoded and scored together and answer as sequential ones; a /v1/batch is one call equal to its queries one by one", async () => {
  const f = await fix();
  const inner = await Searcher.open({ index: f.index, encoder: "sparse-pi" });
  try {
    const rec = recording(inner);
    const queue = new SearchQueue(64, 32);
    const handler = apiHandler({ searcher: rec.searcher, queue, staticDir: f.dir });
    const qs = f.questions.slice(0, 20).map((q) => q.question);
    // One at a time first: the reference answers (k from 1 to 7, exact=1 on some).
    const target = (q: string, i: number) =>
      `/v1/search?q=${encodeURIComponent(q)}&k=${1 + i % 7}${i % 3 === 0 ? "&exact=1" : ""}`;
    const sequential: SearchAnswer[] = [];
    for (const [i, q] of qs.entries()) sequential.push(json(await handler(request(target(q, i)))));
    assertEquals(rec.calls.map((c) => c.length), qs.map(() => 1));
    assertEquals(sequential.map((a) => a.results.length), qs.map((_, i) => 1 + i % 7));
    // Open search's own top-5 for the same questions (k = 5 here).
    for (const [i, a] of sequential.entries()) {
      if (1 + i % 7 !== 5) continue;
      const want = f.topk.get(f.questions[i].id)!;
      assertEquals(
        a.results.map((h) => [h.paragraph_id, h.phrase, h.score]),
        want.map((o) => [o.paragraph, o.phrase, o.score]),
      );
    }
    // Now all at once (the pass held until all 20 wait): one call for all of them.
    rec.calls.length = 0;
    rec.hold();
    const pending = qs.map((q, i) => handler(request(target(q, i))));
    await until(() => queue.size === qs.length);
    rec.release();
    const concurrent = (await Promise.all(pending)).map((r) => {
      assertEquals(r.status, 200);
      return json(r) as SearchAnswer;
    });
    assertEquals(rec.calls, [qs]);
    assertEquals(concurrent.map(untimed), sequential.map(untimed));
    // The questions answered together share one took_ms (the pass that answered them).
    assertEquals(new Set(concurrent.map((a) => a.took_ms)).size, 1);
    // A cap of 8 questions: 20 waiting requests go in passes of 8, 8 and 4.
    rec.calls.length = 0;
    const small = new SearchQueue(64, 8);
    const h8 = apiHandler({ searcher: rec.searcher, queue: small, staticDir: f.dir });
    rec.hold();
    const p8 = qs.map((q, i) => h8(request(target(q, i))));
    await until(() => small.size === qs.length);
    rec.release();
    assertEquals((await Promise.all(p8)).map((r) => untimed(json(r))), sequential.map(untimed));
    assertEquals(rec.calls.map((c) => c.length), [8, 8, 4]);
    // /v1/batch: its queries in chunks of 8 (12: two calls), each = its /v1/search.
    rec.calls.length = 0;
    const b = json(await handler(request("/v1/batch", { queries: qs.slice(0, 12), k: 4 })));
    assertEquals(rec.calls, [qs.slice(0, 8), qs.slice(8, 12)]);
    for (const [i, x] of (b.results as SearchAnswer[]).entries()) {
      const one = json(await handler(request(`/v1/search?q=${encodeURIComponent(qs[i])}&k=4`)));
      assertEquals(untimed(x), untimed(one), `batch query ${i}`);
    }
  } finally {
    await inner.close();
  }
});

Deno.test("serve batching: a 64-question /v1/batch goes in chunks of 8; single questions that arrive meanwhile are answered between its chunks; answers unchanged", async () => {
  const f = await fix();
  const inner = await Searcher.open({ index: f.index, encoder: "sparse-pi" });
  try {
    const rec = recording(inner);
    const queue = new SearchQueue(64, 32);
    const handler = apiHandler({ searcher: rec.searcher, queue, staticDir: f.dir });
    const qs = Array.from({ length: 64 }, (_, i) => f.questions[i % f.questions.length].question);
    const alone = await handler(request("/v1/batch", { queries: qs, k: 3 }));
    assertEquals(rec.calls.map((c) => c.length), [8, 8, 8, 8, 8, 8, 8, 8]);
    // The batch's first pass held; two single questions come in meanwhile.
    rec.calls.length = 0;
    rec.hold();
    const batch = handler(request("/v1/batch", { queries: qs, k: 3 }));
    await until(() => rec.calls.length === 1);
    const singles = [f.questions[70].question, f.questions[71].question].map((q) =>
      handler(request(`/v1/search?q=${encodeURIComponent(q)}&k=3`))
    );
    await until(() => queue.size === 3);
    rec.release();
    const [b, ...ones] = await Promise.all([batch, ...singles]);
    // Pass 2: the two singles, then the batch's next 8; the batch's last chunk comes last.
    assertEquals(rec.calls.map((c) => c.length), [8, 10, 8, 8, 8, 8, 8, 8]);
    assertEquals(rec.calls[1].slice(0, 2), [f.questions[70].question, f.questions[71].question]);
    assertEquals(rec.calls[1].slice(2), qs.slice(8, 16));
    assertEquals(rec.calls.flatMap((c, i) => i === 1 ? c.slice(2) : c), qs);
    assertEquals(json(b).results.map(untimed), json(alone).results.map(untimed));
    for (const [i, r] of ones.entries()) {
      assertEquals(r.status, 200);
      const one = json(
        await handler(
          request(`/v1/search?q=${encodeURIComponent(f.questions[70 + i].question)}&k=3`),
        ),
      );
      assertEquals(untimed(json(r)), untimed(one));
    }
  } finally {
    await inner.close();
  }
});

Deno.test("serve batching: the queue limit counts requests waiting or running (503 beyond it); a failed batch is retried request by request", async () => {
  const fail = "c";
  const calls: number[] = [];
  let open = () => {};
  let gate: Promise<void> | undefined = new Promise<void>((r) => open = r);
  const answer = (query: string): SearchAnswer => ({ query, took_ms: 0, exact: true, results: [] });
  const searcher: SearcherLike = {
    info: { kind: "exact", metric: "ip", phrases: 1, paragraphs: 1, d: 1, encoder: "fake" },
    search: (query) => Promise.resolve(answer(query)),
    searchMany: async (items) => {
      calls.push(items.length);
      if (gate !== undefined) await gate;
      if (items.some((i) => i.query === fail)) throw new Error(`cannot answer ${fail}`);
      return items.map((i) => answer(i.query));
    },
  };
  const queue = new SearchQueue(3);
  const handler = apiHandler({ searcher, queue, staticDir: "/nonexistent" });
  const a = handler(request("/v1/search?q=a"));
  const b = handler(request("/v1/batch", { queries: ["b1", "b2"] }));
  const c = handler(request("/v1/search?q=c"));
  await until(() => queue.size === 3);
  const full = await handler(request("/v1/search?q=d"));
  assertEquals([full.status, json(full).error], [
    503,
    "the search queue is full (3 waiting or running)",
  ]);
  let refused: unknown;
  await queue.search(searcher, [{ query: "e" }]).catch((e) => refused = e);
  assert(refused instanceof QueueFull);
  gate = undefined;
  open();
  const [ra, rb, rc] = await Promise.all([a, b, c]);
  assertEquals(json(ra).query, "a");
  assertEquals(json(rb).results.map((x: SearchAnswer) => x.query), ["b1", "b2"]);
  assertEquals([rc.status, json(rc).error], [500, "cannot answer c"]);
  // a, b and c together (failed: c); then a, b and c alone.
  assertEquals(calls, [4, 1, 2, 1]);
  assertEquals(queue.size, 0);
  assertEquals(json(await handler(request("/v1/search?q=f"))).query, "f");
});

Deno.test("serve queue: the cap is a semaphore of `limit` permits: the request that finds none free is refused at once, and a permit comes back with each answer", async () => {
  let open = () => {};
  const gate = new Promise<void>((r) => open = r);
  const searcher: SearcherLike = {
    info: { kind: "exact", metric: "ip", phrases: 1, paragraphs: 1, d: 1, encoder: "fake" },
    search: async (query) => {
      await gate;
      return { query, took_ms: 0, exact: true, results: [] };
    },
  };
  const limit = 4;
  const queue = new SearchQueue(limit);
  const held = [];
  for (let i = 0; i < limit; i++) {
    held.push(queue.search(searcher, [{ query: `q${i}` }]));
    assertEquals(queue.size, i + 1);
  }
  // An empty request takes no permit once granted, but is refused like any other when none is free.
  const refusedEmpty = await queue.search(searcher, []).catch((e) => e);
  assert(refusedEmpty instanceof QueueFull);
  // The (limit + 1)th is refused without waiting, with the same message as ever.
  const t0 = performance.now();
  const refused = await queue.search(searcher, [{ query: "over" }]).catch((e) => e);
  assert(refused instanceof QueueFull);
  assertEquals(refused.message, `the search queue is full (${limit} waiting or running)`);
  assert(performance.now() - t0 < 1000);
  assertEquals(queue.size, limit);
  open();
  assertEquals((await Promise.all(held)).map((a) => a[0].query), ["q0", "q1", "q2", "q3"]);
  assertEquals(queue.size, 0);
  // Every permit came back: `limit` more are taken again, and an empty one passes.
  assertEquals(await queue.search(searcher, []), []);
  assertEquals(queue.size, 0);
  const again = [];
  for (let i = 0; i < limit; i++) again.push(queue.search(searcher, [{ query: `r${i}` }]));
  assert(await queue.search(searcher, [{ query: "over" }]).catch((e) => e) instanceof QueueFull);
  assertEquals((await Promise.all(again)).length, limit);
  assertEquals(queue.size, 0);
});
