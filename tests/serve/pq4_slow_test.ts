/**
 * `deno task serve` over 4-bit IVF-PQ indexes (`--pq-bits 4`), launched as a
 * user runs it, on the serve fixture's questions encoded by `piqa-lstm`:
 *
 * - serve given the dump with `--nlist --bpv --pq-bits 4` builds the 4-bit
 *   index; its `/v1/search` answers (re-scored candidates) are `search`'s
 *   top k on that index, phrase for phrase and score for score; read under
 *   `--memory-budget 1` the same; over 2 shards of it (`index --shards 2
 *   --pq-bits 4`) the same as `search` over the unsharded index;
 * - started again with `--pq-bits 4` it reuses the index; without it (8-bit
 *   asked) it rebuilds, saying why; bad `--pq-bits` values are refused
 *   with one line, exit 2.
 *
 * Servers listen on 127.0.0.1 on a free port; every wait is bounded.
 */
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { runStage } from "../_util.ts";
import { type Fixture, type Launched, launchServe, makeFixture, stopServe } from "./_fixture.ts";

interface Setup {
  readonly f: Fixture;
  /** The piqa-lstm run (its dump, context file and question dump). */
  readonly run: string;
}

let setup: Promise<Setup> | undefined;
const fix = () =>
  setup ??= (async () => {
    const f = await makeFixture("pv-serve-pq4-");
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
    return { f, run };
  })();
globalThis.addEventListener("unload", () => {
  setup?.then((s) => Deno.removeSync(s.f.dir, { recursive: true })).catch(() => {});
});

/** Starts `pipeline/serve.ts args`, waiting at most 300 s for its `serving` line. */
const launch = (args: readonly string[]) => launchServe(args, 300_000);

/** Stops a launcher (SIGINT, SIGKILL after 30 s): its exit code. */
const stop = async (l: Launched) => (await stopServe(l)).code;

/** `search`'s top k of `index` by question id: `[paragraph, phrase, score]` per rank. */
async function searched(
  s: Setup,
  index: string,
  name: string,
  extra: string[],
): Promise<Map<string, unknown[][]>> {
  const r = await runStage("pipeline/search.ts", [
    s.f.data,
    index,
    `${s.run}/dumps/question_emb`,
    `${s.f.dir}/${name}.json`,
    "--top-k",
    "5",
    "--topk-out",
    `${s.f.dir}/${name}.ndjson`,
    ...extra,
  ]);
  assertEquals(r.code, 0, r.stderr);
  const want = new Map<string, unknown[][]>();
  for (const line of Deno.readTextFileSync(`${s.f.dir}/${name}.ndjson`).trim().split("\n")) {
    const o = JSON.parse(line);
    if (!want.has(o.id)) want.set(o.id, []);
    want.get(o.id)!.push([o.paragraph, o.phrase, o.score]);
  }
  return want;
}

/** The server's `/v1/search` answers (k = 5) to the first questions equal `want`'s. */
async function sameAsSearch(
  s: Setup,
  l: Launched,
  want: Map<string, unknown[][]>,
  what: string,
): Promise<void> {
  assert(l.port !== undefined, l.stderr());
  for (const q of s.f.questions.slice(0, 8)) {
    const r = await fetch(`${l.base}/v1/search?q=${encodeURIComponent(q.question)}&k=5`, {
      signal: AbortSignal.timeout(20_000),
    });
    const body = await r.text();
    assertEquals(r.status, 200, body);
    const got = JSON.parse(body) as { exact: boolean; results: Record<string, unknown>[] };
    assertEquals(got.exact, false);
    assertEquals(got.results.length, 5, body);
    assertEquals(
      got.results.map((h) => [h.paragraph_id, h.phrase, h.score]),
      want.get(q.id),
      `${what}: ${q.id}`,
    );
  }
}

Deno.test("serve --pq-bits 4: builds the 4-bit index of a dump; its answers, under --memory-budget 1 and over 2 shards, are search's", async () => {
  const s = await fix();
  const dump = `${s.run}/dumps/context_emb`, ix = `${s.f.dir}/ix4`;
  const ctx = ["--context", `${s.run}/context.json`];
  const ivf = ["--nlist", "4", "--bpv", "64"];
  const common = ["--encoder", "piqa-lstm", "--port", "0", "--nprobe", "2"];
  const a = await launch([
    dump,
    ...common,
    ...ivf,
    "--pq-bits",
    "4",
    "--candidates",
    "20",
    "--index-dir",
    ix,
    ...ctx,
  ]);
  try {
    assert(a.stderr().includes(`serve: building the index ${ix} from ${dump}`), a.stderr());
    const h = JSON.parse(Deno.readTextFileSync(`${ix}/index.json`));
    assertEquals([h.kind, h.parameters.bits, h.parameters.bpv], ["ivf-pq", 4, 64]);
    await sameAsSearch(
      s,
      a,
      await searched(s, ix, "c20", ["--nprobe", "2", "--candidates", "20"]),
      "built by serve",
    );
  } finally {
    assertEquals(await stop(a), 0, a.stderr());
  }
  const r = await runStage("pipeline/index.ts", [
    dump,
    `${s.f.dir}/s4`,
    ...ctx,
    ...ivf,
    "--pq-bits",
    "4",
    "--shards",
    "2",
  ]);
  assertEquals(r.code, 0, r.stderr);
  const [b, c] = await Promise.all([
    launch([ix, ...common, "--candidates", "20", "--memory-budget", "1"]),
    launch([`${s.f.dir}/s4`, ...common]),
  ]);
  try {
    await sameAsSearch(
      s,
      b,
      await searched(s, ix, "c20b", ["--nprobe", "2", "--candidates", "20"]),
      "--memory-budget 1",
    );
    // Without re-scoring: the approximate scores, the same over the shards as unsharded.
    await sameAsSearch(s, c, await searched(s, ix, "pq", ["--nprobe", "2"]), "2 shards");
  } finally {
    const [x, y] = await Promise.all([stop(b), stop(c)]);
    assertEquals(x, 0, b.stderr());
    assertEquals(y, 0, c.stderr());
  }
});

Deno.test("serve --pq-bits: a 4-bit index is reused with --pq-bits 4, rebuilt when 8 bits are asked; bad values are refused with one line", async () => {
  const s = await fix();
  const dump = `${s.run}/dumps/context_emb`, ix = `${s.f.dir}/reuse4`;
  const args = (extra: string[]) => [
    dump,
    "--encoder",
    "piqa-lstm",
    "--port",
    "0",
    "--nlist",
    "4",
    "--bpv",
    "64",
    "--index-dir",
    ix,
    ...extra,
  ];
  for (
    const [extra, line] of [
      [["--pq-bits", "4"], `serve: building the index ${ix} from ${dump}`],
      [["--pq-bits", "4"], `serve: reusing the index ${ix}`],
      [[], `serve: rebuilding the index ${ix}: its codes are 4-bit, 8-bit asked`],
    ] as const
  ) {
    const l = await launch(args([...extra]));
    try {
      assert(l.port !== undefined, l.stderr());
      assert(l.stderr().includes(line), l.stderr());
    } finally {
      assertEquals(await stop(l), 0, l.stderr());
    }
  }
  assertEquals(JSON.parse(Deno.readTextFileSync(`${ix}/index.json`)).parameters.bits, 8);
  for (
    const [extra, re] of [
      [["--pq-bits", "5"], /^serve: --pq-bits must be 4 or 8, got 5$/],
      [["--pq-bits", "4"], /^serve: .*reuse4 is an index: --nlist, --bpv, --pq-bits, .*dump$/],
    ] as const
  ) {
    const input = re.source.includes("reuse4") ? [ix] : [dump];
    const l = await launch([...input, "--encoder", "piqa-lstm", "--port", "0", ...extra]);
    const code = (await l.proc.status).code;
    const lines = l.stderr().trim().split("\n");
    assertEquals(code, 2, l.stderr());
    assertEquals(lines.length, 1, l.stderr());
    assertMatch(lines[0], re);
  }
});
