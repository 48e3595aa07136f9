/**
 * The pieces of a server over shards without an index: the front's
 * `ShardedSearcher` against fake shard servers (the merge order, ties by
 * corpus position, `k`, the shard fields dropped, options passed on; a
 * closed port, a shard that does not answer and a shard marked down are
 * 503s naming the shard, within their bounds), and the `ShardSupervisor`
 * on small processes (a killed one restarted with its count, states, a
 * start that fails, no process left after `stop`).
 */
import { assert, assertEquals } from "../_assert.ts";
import { Unavailable } from "../../serve/api.ts";
import { ShardedSearcher } from "../../serve/shards.ts";
import { ShardStartError, ShardSupervisor } from "../../serve/supervise.ts";
import type { ShardHealth } from "../../serve/search.ts";

const INFO = { kind: "exact", metric: "ip", phrases: 9, paragraphs: 6, d: 2, encoder: "fake" };

type Hit = { score: number; position: number; phrase_index: number; phrase: string };

/** A fake shard server on a free loopback port answering `/v1/batch` with `hits` per query. */
function fakeShard(hits: Hit[], seen: unknown[] = [], delayMs = 0) {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const body = await req.json();
    seen.push(body);
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
    const results = body.queries.map((query: string) => ({
      query,
      took_ms: 1,
      exact: true,
      results: hits.slice(0, body.k).map((h, r) => ({
        rank: r + 1,
        title: "T",
        paragraph_id: `p${h.position}`,
        phrase: h.phrase,
        start: 0,
        end: 1,
        score: h.score,
        context: "c",
        position: h.position,
        phrase_index: h.phrase_index,
      })),
    }));
    return Response.json({ took_ms: 1, results });
  });
}

const h = (score: number, position: number, phrase_index: number, phrase: string): Hit => ({
  score,
  position,
  phrase_index,
  phrase,
});

Deno.test("ShardedSearcher: an exact merge of the shards' lists (score, then corpus position, then phrase)", async () => {
  const seen: unknown[] = [];
  const s0 = fakeShard([h(3, 0, 4, "a"), h(2, 2, 0, "b"), h(1, 4, 0, "c")], seen);
  const s1 = fakeShard([h(3, 0, 1, "d"), h(2, 1, 9, "e"), h(0.5, 3, 0, "f")], seen);
  try {
    const s = new ShardedSearcher({
      info: INFO,
      shards: [{ port: s0.addr.port }, { port: null }, { port: s1.addr.port }],
    });
    const [a, b] = await s.searchMany([
      { query: "x", options: { k: 4 } },
      { query: "y", options: { k: 2, exact: true } },
    ]);
    assertEquals(a.results.map((r) => `${r.rank}${r.phrase}`), ["1d", "2a", "3e", "4b"]);
    assertEquals(b.results.map((r) => r.phrase), ["d", "a"]);
    assertEquals(Object.keys(a.results[0]), [
      "rank",
      "title",
      "paragraph_id",
      "phrase",
      "start",
      "end",
      "score",
      "context",
    ]);
    assertEquals(a.query, "x");
    assert(a.exact && a.took_ms >= 0);
    // One batch per shard and option group; the options passed on as given.
    assertEquals(seen.length, 4);
    assert(seen.some((x) => JSON.stringify(x) === '{"queries":["y"],"k":2,"exact":true}'));
    assertEquals(s.info.shards?.map((x) => x.state), ["up", "up", "up"]);
  } finally {
    await s0.shutdown();
    await s1.shutdown();
  }
});

Deno.test("ShardedSearcher: a closed port, a slow shard, a shard not up: 503s naming it, within bounds", async () => {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const closed = (l.addr as Deno.NetAddr).port;
  l.close();
  const up = fakeShard([h(1, 0, 0, "a")]);
  const slow = fakeShard([h(1, 1, 0, "b")], [], 3000);
  try {
    const s = new ShardedSearcher({
      info: INFO,
      shards: [{ port: up.addr.port }, { port: closed }],
    });
    let e = await s.search("q").catch((e) => e);
    assert(e instanceof Unavailable && /^shard 1 of 2 is not answering/.test(e.message), `${e}`);
    const t = new ShardedSearcher({
      info: INFO,
      shards: [{ port: up.addr.port }, { port: slow.addr.port }],
      timeoutMs: 300,
    });
    const t0 = performance.now();
    e = await t.search("q").catch((e) => e);
    assert(performance.now() - t0 < 2500, "the timeout was not kept");
    assert(e instanceof Unavailable && /shard 1 of 2 did not answer within 0.3 s/.test(e.message));
    // Asked again at once: refused at once (a hung shard holds one request, not each).
    const t1 = performance.now();
    e = await t.search("q").catch((e) => e);
    assert(performance.now() - t1 < 200, "the second request waited");
    assert(e instanceof Unavailable && /shard 1 of 2 did not answer/.test(e.message));
    const states: ShardHealth[] = [
      { index: 0, count: 2, state: "restarting", restarts: 2 },
      { index: 1, count: 2, state: "up", restarts: 0 },
    ];
    s.setStates(states);
    e = await s.search("q").catch((e) => e);
    assert(
      e instanceof Unavailable &&
        /^shard 0 of 2 is restarting \(restarted 2 times\)/.test(e.message),
    );
    assertEquals(s.info.shards, states);
  } finally {
    await up.shutdown();
    await slow.shutdown();
  }
});

const alive = (pid: number): boolean => {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
};

/** A process that says it is ready and waits (or exits at once with `fail`). */
const proc = (fail = false) => [
  Deno.execPath(),
  "eval",
  fail ? "Deno.exit(3)" : "console.log('ready http://127.0.0.1:1/'); setInterval(() => {}, 1e6)",
];

Deno.test("ShardSupervisor: a killed process is restarted (counted, states told), stop leaves none", async () => {
  const told: string[] = [];
  const sup = new ShardSupervisor({
    shards: [{ argv: proc() }, { argv: null }, { argv: proc() }],
    env: {},
    firstMs: 50,
    onChange: (st) => told.push(st.map((s) => s.state[0]).join("")),
  });
  try {
    await sup.start();
    assertEquals(sup.states.map((s) => s.state), ["up", "up", "up"]);
    const victim = sup.pids[2]!;
    Deno.kill(victim, "SIGKILL");
    const t0 = performance.now();
    while (sup.states[2].restarts === 0 || sup.states[2].state !== "up") {
      assert(performance.now() - t0 < 30_000, "not restarted in 30 s");
      await new Promise((r) => setTimeout(r, 20));
    }
    assertEquals(sup.states[2], { index: 2, count: 3, state: "up", restarts: 1 });
    assert(told.includes("uud") && told.includes("uur"), told.join(" "));
    assert(sup.pids[2] !== victim);
  } finally {
    const pids = sup.pids.filter((p): p is number => p !== undefined);
    await sup.stop("SIGTERM");
    assertEquals(pids.filter(alive), []);
  }
});

Deno.test("ShardSupervisor: a process that exits before it is ready fails the start with its code", async () => {
  const sup = new ShardSupervisor({ shards: [{ argv: proc() }, { argv: proc(true) }], env: {} });
  const e = await sup.start().catch((e) => e);
  assert(e instanceof ShardStartError && e.exitCode === 3, `${e}`);
  assert(/^shard 1 of 2 exited \(3\) before it was ready/.test(e.message));
  const pids = sup.pids.filter((p): p is number => p !== undefined);
  await sup.stop();
  assertEquals(pids.filter(alive), []);
});
