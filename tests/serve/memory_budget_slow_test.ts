/**
 * `serve --memory-budget BYTES` (the index read from disk on demand,
 * `search/index/disk.ts`), launched as a user runs it, on dense indexes of
 * the serve fixture's `piqa-lstm` dump built here:
 *
 * - with a budget of 1 byte, `/v1/search`, `/api` and `/v1/batch` answer as
 *   the server without a budget, field for field (`took_ms` aside): an
 *   `exact` index over 2 shards (each shard's process under the budget)
 *   against the unsharded one, and an `ivf-pq` index against itself;
 * - a bad budget is refused with one line, exit 2.
 *
 * Servers listen on 127.0.0.1 on a free port; every wait is bounded.
 */
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { runStage } from "../_util.ts";
import { type Fixture, type Launched, launchServe, makeFixture, stopServe } from "./_fixture.ts";

interface Setup {
  readonly f: Fixture;
  /** The exact index, whole. */
  readonly one: string;
  /** The exact index in 2 shards. */
  readonly two: string;
  /** An ivf-pq index. */
  readonly ivf: string;
}

let setup: Promise<Setup> | undefined;
const fix = () =>
  setup ??= (async () => {
    const f = await makeFixture("pv-serve-budget-");
    const run = `${f.dir}/lstm`;
    const r = await runStage("pipeline/full.ts", [
      "--data",
      f.data,
      "--out",
      run,
      "--encoder",
      "piqa-lstm",
    ]);
    assertEquals(r.code, 0, r.stderr);
    const dump = `${run}/dumps/context_emb`, context = ["--context", `${run}/context.json`];
    const one = `${f.dir}/one`, two = `${f.dir}/two`, ivf = `${f.dir}/ivf`;
    for (
      const args of [
        [dump, one, ...context],
        [dump, two, ...context, "--shards", "2"],
        [dump, ivf, ...context, "--nlist", "4", "--bpv", "64"],
      ]
    ) {
      const x = await runStage("pipeline/index.ts", args);
      assertEquals(x.code, 0, x.stderr);
    }
    return { f, one, two, ivf };
  })();
globalThis.addEventListener("unload", () => {
  setup?.then((s) => Deno.removeSync(s.f.dir, { recursive: true })).catch(() => {});
});

/** Starts `pipeline/serve.ts args`, waiting at most 180 s for its `serving` line. */
const launch = (args: readonly string[]) => launchServe(args, 180_000);

/** Stops a launcher (SIGINT, SIGKILL after 30 s): its exit status. */
const stop = stopServe;

/** A request with a 20 s bound: status and body. */
async function ask(url: string, init: RequestInit = {}): Promise<{ status: number; body: string }> {
  const r = await fetch(url, { ...init, signal: AbortSignal.timeout(20_000) });
  return { status: r.status, body: await r.text() };
}

/** A `/v1/search` or `/v1/batch` answer without its timings. */
const answers = (body: string): unknown =>
  JSON.parse(body, (k, v) => k === "took_ms" ? undefined : v);

/** The same answers from servers `a` (no budget) and `b` (a budget) to the fixture's questions. */
async function sameAnswers(f: Fixture, a: Launched, b: Launched): Promise<void> {
  const qs = f.questions.slice(0, 8).map((q) => q.question);
  for (const q of qs) {
    for (const k of [10, 1]) {
      const path = `/v1/search?q=${encodeURIComponent(q)}&k=${k}`;
      const [x, y] = await Promise.all([ask(a.base + path), ask(b.base + path)]);
      assertEquals(y.status, 200, y.body);
      const got = answers(y.body) as { results: { context: string | null }[] };
      assert(got.results.length > 0 && got.results[0].context !== null, y.body);
      assertEquals(got, answers(x.body), `${q} k=${k}`);
    }
  }
  for (const q of qs.slice(0, 3)) {
    const path = `/api?query=${encodeURIComponent(q)}`;
    const [x, y] = await Promise.all([ask(a.base + path), ask(b.base + path)]);
    assertEquals(y.body, x.body);
  }
  const init = () => ({
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ queries: qs.slice(0, 6), k: 7 }),
  });
  const [x, y] = await Promise.all([
    ask(`${a.base}/v1/batch`, init()),
    ask(`${b.base}/v1/batch`, init()),
  ]);
  assertEquals(y.status, 200, y.body);
  assertEquals(answers(y.body), answers(x.body));
}

/** Launches both, checks, stops both (exit 0). */
async function compare(f: Fixture, plain: string[], budgeted: string[]): Promise<void> {
  const [a, b] = await Promise.all([launch(plain), launch(budgeted)]);
  try {
    assert(a.port !== undefined, a.stderr());
    assert(b.port !== undefined, b.stderr());
    await sameAnswers(f, a, b);
  } finally {
    const [sa, sb] = await Promise.all([stop(a), stop(b)]);
    assertEquals(sa.code, 0, a.stderr());
    assertEquals(sb.code, 0, b.stderr());
  }
}

Deno.test("serve --memory-budget 1: an exact index over 2 shards answers as the whole one in memory", async () => {
  const { f, one, two } = await fix();
  const common = ["--encoder", "piqa-lstm", "--port", "0"];
  await compare(f, [one, ...common], [two, ...common, "--memory-budget", "1"]);
});

Deno.test("serve --memory-budget 1: an ivf-pq index answers as in memory", async () => {
  const { f, ivf } = await fix();
  const common = ["--encoder", "piqa-lstm", "--port", "0", "--nprobe", "2"];
  await compare(f, [ivf, ...common], [ivf, ...common, "--memory-budget", "1"]);
});

Deno.test("serve --memory-budget: a bad value is refused with one line, exit 2", async () => {
  const l = await launch(["no-such-index", "--memory-budget", "lots", "--port", "0"]);
  const status = await l.proc.status;
  const lines = l.stderr().trim().split("\n");
  assertEquals(status.code, 2, l.stderr());
  assertEquals(lines.length, 1, l.stderr());
  assertMatch(lines[0], /^serve: --memory-budget: bad memory budget "lots"/);
});
