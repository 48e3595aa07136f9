/**
 * `probe_tau` in the demo server (adaptive probing of an ivf-pq index's
 * lists, `search --probe-tau`), on a small 4-bit IVF-PQ index of NumPy-written
 * 256-d dumps (5 lists; piqa-lstm encodes the questions):
 *
 * - a `probe_tau` every list is within (1000) answers as no `probe_tau` at
 *   the same `nprobe`, one none is within (1e-12) as `nprobe=1`, result
 *   lists equal field for field, on `/v1/search`, in a `/v1/batch` body and
 *   in one micro-batch that mixes them; `exact=1` ignores it as it does
 *   `nprobe`;
 * - the server's default (`startServer`'s `probeTau`, and `serve
 *   --probe-tau` in the launched server, unsharded and over 2 shards)
 *   applies to a request without one and a request's `probe_tau`
 *   overrides it; the front of a sharded server passes it on to every shard;
 * - bad values (0, -1, `x`, `NaN`, ...) are a 400 with one line naming
 *   `probe_tau`, and so is `probe_tau` on an exact index; `serve` refuses a
 *   bad `--probe-tau`, and one on an exact index, with one line, exit 2.
 *
 * Servers listen on 127.0.0.1 on a free port; every wait is bounded.
 */
import { assert, assertEquals, assertMatch, assertRejectsWith } from "../_assert.ts";
import { type RunningServer, startServer } from "../../serve/server.ts";
import { ShardedSearcher } from "../../serve/shards.ts";
import type { SearchAnswer, SearchHit, SearchRequest } from "../../serve/search.ts";
import { numpyDumps, ok, refused, smallIvfIndex } from "../search/_stages.ts";
import { launchServe, stopServe } from "./_fixture.ts";

/** The shared index, questions and reference answers. */
interface Setup {
  readonly dir: string;
  /** The 4-bit IVF-PQ index (5 lists). */
  readonly ivf: string;
  /** An exact index of the same dumps. */
  readonly exact: string;
  /** Questions of the dumps' dataset. */
  readonly questions: readonly string[];
  /** Each question's top 5 at nprobe 5 (every list), no probe_tau. */
  readonly all: readonly (readonly SearchHit[])[];
  /** Each question's top 5 at nprobe 1. */
  readonly one: readonly (readonly SearchHit[])[];
  /** Each question's exact top 5. */
  readonly exactHits: readonly (readonly SearchHit[])[];
}

const ENCODER = "piqa-lstm";

let setup: Promise<Setup> | undefined;
const fix = () =>
  setup ??= (async () => {
    const dir = Deno.makeTempDirSync({ prefix: "pv-serve-probe-tau-" });
    await numpyDumps(dir, 12, ["--dim", "256"]);
    const ivf = `${dir}/ivf`, exact = `${dir}/exact`;
    await smallIvfIndex(dir, ivf, ["--pq-bits", "4"]);
    await ok("pipeline/index.ts", [`${dir}/context_emb`, exact, "--context", `${dir}/data.json`]);
    const data = JSON.parse(Deno.readTextFileSync(`${dir}/data.json`));
    const questions: string[] = data.data[0].paragraphs
      .flatMap((p: { qas: { question: string }[] }) => p.qas.map((q) => q.question))
      .slice(0, 6);
    const s = await server({ index: ivf });
    try {
      const get = (extra: string) => Promise.all(questions.map((q) => search(s, q, extra)));
      const [all, one, exactHits] = [
        await get("&nprobe=5"),
        await get("&nprobe=1"),
        await get("&exact=1"),
      ];
      // The test means something: one list and five differ on these questions.
      assert(all.every((a, i) => JSON.stringify(a) !== JSON.stringify(one[i])));
      return { dir, ivf, exact, questions, all, one, exactHits };
    } finally {
      await s.shutdown();
    }
  })();
globalThis.addEventListener("unload", () => {
  setup?.then((s) => Deno.removeSync(s.dir, { recursive: true })).catch(() => {});
});

/** A server in this process over `opts.index`, piqa-lstm, a free port, no log. */
const server = (opts: Parameters<typeof startServer>[0]): Promise<RunningServer> =>
  startServer({ encoder: ENCODER, port: 0, log: false, ...opts });

/** `/v1/search?q=Q&k=5<extra>` of `s` (a running server or a base URL): its results. */
async function search(
  s: RunningServer | string,
  q: string,
  extra: string,
): Promise<SearchHit[]> {
  const base = typeof s === "string" ? s : s.url;
  const r = await fetch(`${base}v1/search?q=${encodeURIComponent(q)}&k=5${extra}`, {
    signal: AbortSignal.timeout(20_000),
  });
  const body = await r.text();
  assertEquals(r.status, 200, body);
  const a = JSON.parse(body) as SearchAnswer;
  assertEquals(a.results.length, 5, body);
  return a.results as SearchHit[];
}

/** A `/v1/batch` of `body` to `s`: its status and parsed answer. */
async function batch(
  s: RunningServer | string,
  body: Record<string, unknown> | string,
): Promise<{ status: number; json: { results?: SearchAnswer[]; error?: string } }> {
  const r = await fetch(`${typeof s === "string" ? s : s.url}v1/batch`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });
  return { status: r.status, json: await r.json() };
}

Deno.test("serve probe_tau: huge = no probe_tau at the same nprobe, tiny = nprobe=1, in /v1/search, /v1/batch and one mixed pass; exact=1 ignores it", async () => {
  const f = await fix();
  const s = await server({ index: f.ivf });
  try {
    // /healthz: the default nprobe (10, at most nlist 5), no default probe_tau.
    const h = await (await fetch(`${s.url}healthz`)).json();
    assertEquals([h.nlist, h.nprobe, "probe_tau" in h], [5, 5, false]);
    for (const [i, q] of f.questions.entries()) {
      assertEquals(await search(s, q, "&nprobe=5&probe_tau=1000"), f.all[i], q);
      assertEquals(await search(s, q, "&nprobe=5&probe_tau=1e-12"), f.one[i], q);
      // The default nprobe (10, at most nlist 5) with it.
      assertEquals(await search(s, q, "&probe_tau=0.000000000001"), f.one[i], q);
      // Answered exactly: probe_tau has no effect, as nprobe has none.
      assertEquals(await search(s, q, "&exact=1&probe_tau=1e-12"), f.exactHits[i], q);
    }
    for (const [tau, want] of [[1e-12, f.one], [1000, f.all]] as const) {
      const b = await batch(s, { queries: f.questions, k: 5, nprobe: 5, probe_tau: tau });
      assertEquals(b.status, 200, JSON.stringify(b.json));
      assertEquals(b.json.results!.map((a) => a.results), want, `probe_tau ${tau}`);
    }
    // One pass of the searcher, questions with and without a tau: each answered as alone.
    const reqs: SearchRequest[] = f.questions.flatMap((query) => [
      { query, options: { k: 5, nprobe: 5, probeTau: 1e-12 } },
      { query, options: { k: 5, nprobe: 5 } },
      { query, options: { k: 5, nprobe: 5, probeTau: 1000 } },
    ]);
    const got = await s.searcher.searchMany!(reqs);
    assertEquals(
      got.map((a) => a.results),
      f.questions.flatMap((_, i) => [f.one[i], f.all[i], f.all[i]]),
    );
  } finally {
    await s.shutdown();
  }
});

Deno.test("serve probe_tau: the server's default applies and a request's probe_tau overrides it; a bad default, or one on an exact index, is refused at start", async () => {
  const f = await fix();
  const s = await server({ index: f.ivf, nprobe: 5, probeTau: 1e-12 });
  try {
    for (const [i, q] of f.questions.entries()) {
      assertEquals(await search(s, q, ""), f.one[i], q);
      assertEquals(await search(s, q, "&probe_tau=1000"), f.all[i], q);
    }
    const dflt = await batch(s, { queries: f.questions, k: 5 });
    assertEquals(dflt.json.results!.map((a) => a.results), f.one);
    const over = await batch(s, { queries: f.questions, k: 5, probe_tau: 1000 });
    assertEquals(over.json.results!.map((a) => a.results), f.all);
  } finally {
    await s.shutdown();
  }
  await assertRejectsWith(
    server({ index: f.exact, probeTau: 0.1 }),
    "is an exact index: --probe-tau applies to ivf-pq only",
  );
  for (const tau of [0, -1, NaN]) {
    await assertRejectsWith(
      server({ index: f.ivf, probeTau: tau }),
      `--probe-tau must be a number above 0, got ${tau}`,
    );
  }
});

Deno.test("serve probe_tau: bad values and an exact index are a 400 with one line naming probe_tau", async () => {
  const f = await fix();
  const q = encodeURIComponent(f.questions[0]);
  const expect400 = async (s: RunningServer, what: string, r: Promise<Response>, re: RegExp) => {
    const res = await r;
    const body = await res.json();
    assertEquals(res.status, 400, `${what}: ${JSON.stringify(body)}`);
    assert(typeof body.error === "string" && !body.error.includes("\n"), what);
    assertMatch(body.error, re, what);
    // The server still answers.
    assertEquals((await search(s, f.questions[0], "")).length, 5);
  };
  const s = await server({ index: f.ivf });
  try {
    for (const v of ["0", "-1", "x", "NaN", "", "Infinity", "1e999", "0x1", "1,5", "-0"]) {
      await expect400(
        s,
        `probe_tau=${v}`,
        fetch(`${s.url}v1/search?q=${q}&probe_tau=${encodeURIComponent(v)}`),
        /^probe_tau must be a number above 0, got "/,
      );
    }
    for (const v of ["0", "-1", '"x"', '"NaN"', "null", "1e999", '"0.5"']) {
      await expect400(
        s,
        `batch probe_tau ${v}`,
        fetch(`${s.url}v1/batch`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: `{"queries": ["a", "b"], "probe_tau": ${v}}`,
        }),
        /^probe_tau must be a number( above 0, got (-?\d+|Infinity))?$/,
      );
    }
  } finally {
    await s.shutdown();
  }
  const e = await server({ index: f.exact });
  try {
    const re = /^probe_tau applies to ivf-pq indexes only \(this one is exact\)$/;
    await expect400(e, "exact index", fetch(`${e.url}v1/search?q=${q}&probe_tau=0.5`), re);
    await expect400(
      e,
      "exact index, batch",
      fetch(`${e.url}v1/batch`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ queries: ["a"], probe_tau: 0.5 }),
      }),
      re,
    );
  } finally {
    await e.shutdown();
  }
});

Deno.test("ShardedSearcher: probe_tau passed on to every shard; questions that differ in it go in separate batches", async () => {
  const seen: Record<string, unknown>[][] = [[], []];
  const shards = seen.map((log, position) =>
    Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
      const body = await req.json();
      log.push(body);
      return Response.json({
        took_ms: 1,
        results: body.queries.map((query: string) => ({
          query,
          took_ms: 1,
          exact: false,
          results: [{
            rank: 1,
            title: "T",
            paragraph_id: `p${position}`,
            phrase: `tau ${body.probe_tau ?? "none"}`,
            start: 0,
            end: 1,
            score: position,
            context: "c",
            position,
            phrase_index: 0,
          }],
        })),
      });
    })
  );
  try {
    const s = new ShardedSearcher({
      info: { kind: "ivf-pq", metric: "ip", phrases: 2, paragraphs: 2, d: 2, encoder: "fake" },
      shards: shards.map((x) => ({ port: x.addr.port })),
    });
    const got = await s.searchMany([
      { query: "a", options: { k: 1, nprobe: 3, probeTau: 0.25 } },
      { query: "b", options: { k: 1, nprobe: 3 } },
      { query: "c", options: { k: 1, nprobe: 3, probeTau: 0.25 } },
    ]);
    assertEquals(got.map((a) => a.results[0].phrase), ["tau 0.25", "tau none", "tau 0.25"]);
    for (const log of seen) {
      assertEquals(log.length, 2);
      const bodies = log.map((b) => JSON.stringify(b)).sort();
      assertEquals(bodies, [
        '{"queries":["a","c"],"k":1,"nprobe":3,"probe_tau":0.25}',
        '{"queries":["b"],"k":1,"nprobe":3}',
      ]);
    }
  } finally {
    await Promise.all(shards.map((x) => x.shutdown()));
  }
});

Deno.test("serve --probe-tau T: the default of the launched server (and /healthz's), unsharded and over 2 shards (with --exact), overridden by a request's probe_tau; bad values and an exact index refused, exit 2", async () => {
  const f = await fix();
  const sh = `${f.dir}/shards`;
  await smallIvfIndex(f.dir, sh, ["--pq-bits", "4", "--shards", "2"]);
  const common = ["--encoder", ENCODER, "--port", "0", "--nprobe", "5", "--probe-tau", "1e-12"];
  const [a, b] = await Promise.all([
    launchServe([f.ivf, ...common], 120_000),
    launchServe([sh, ...common, "--exact"], 120_000),
  ]);
  try {
    assert(a.port !== undefined, a.stderr());
    assert(b.port !== undefined, b.stderr());
    // /healthz says the defaults (the page shows them in its probing boxes).
    for (const s of [a, b]) {
      const h = await (await fetch(`${s.base}/healthz`)).json();
      assertEquals([h.kind, h.nprobe, h.probe_tau], ["ivf-pq", 5, 1e-12]);
    }
    for (const [i, q] of f.questions.entries()) {
      assertEquals(await search(`${a.base}/`, q, ""), f.one[i], q);
      assertEquals(await search(`${a.base}/`, q, "&probe_tau=1000"), f.all[i], q);
      // Over shards with --exact: exact unless exact=0, then the default tau or the request's.
      assertEquals(await search(`${b.base}/`, q, ""), f.exactHits[i], q);
      assertEquals(await search(`${b.base}/`, q, "&probe_tau=1e-12"), f.exactHits[i], q);
      assertEquals(await search(`${b.base}/`, q, "&exact=0"), f.one[i], q);
      assertEquals(await search(`${b.base}/`, q, "&exact=0&probe_tau=1000"), f.all[i], q);
    }
    const over = await batch(`${b.base}/`, {
      queries: f.questions,
      k: 5,
      exact: false,
      probe_tau: 1000,
    });
    assertEquals(over.json.results!.map((x) => x.results), f.all);
    const bad = await batch(`${b.base}/`, { queries: ["a"], probe_tau: 0 });
    assertEquals([bad.status, bad.json.error], [400, "probe_tau must be a number above 0, got 0"]);
  } finally {
    const [x, y] = await Promise.all([stopServe(a), stopServe(b)]);
    assertEquals(x.code, 0, a.stderr());
    assertEquals(y.code, 0, b.stderr());
  }
  for (const v of ["0", "-1", "nan", "x"]) {
    await refused("pipeline/serve.ts", [f.ivf, `--probe-tau=${v}`], /^serve: .*probe-tau/);
  }
  await refused(
    "pipeline/serve.ts",
    [f.ivf, "--encoder", ENCODER, "--probe-tau", "0"],
    /^serve: --probe-tau must be a number above 0, got 0$/,
  );
  await refused(
    "pipeline/serve.ts",
    [f.exact, "--encoder", ENCODER, "--port", "0", "--probe-tau", "0.1"],
    /exact: is an exact index: --probe-tau applies to ivf-pq only$/,
  );
});
