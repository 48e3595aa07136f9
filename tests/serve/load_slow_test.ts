/**
 * `bench/serve_load.ts`, bounded: a short run against `deno task serve` on
 * a sparse-pi index of a few dev paragraphs answers every request (0
 * errors), stops at `--max-queries`, reads the server's RSS and writes its
 * JSON; a non-loopback `--url` is refused; the flood options are read;
 * the percentiles are nearest-rank.
 */
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { devJson, runStage } from "../_util.ts";
import { parseArgs, percentile } from "../../bench/serve_load.ts";

Deno.test("serve load: percentiles are nearest-rank; a non-loopback --url is refused", () => {
  const xs = Array.from({ length: 100 }, (_, i) => i + 1);
  assertEquals([50, 95, 99, 100].map((p) => percentile(xs, p)), [50, 95, 99, 100]);
  assertEquals(percentile([7], 99), 7);
  assert(Number.isNaN(percentile([], 50)));
  let why = "";
  try {
    parseArgs(["--url", "http://192.0.2.1:8080", "--data", "x.json"]);
  } catch (e) {
    why = (e as Error).message;
  }
  assertMatch(why, /loopback http only/);
  const o = parseArgs(["--index", "ix", "--encoder", "e", "--data", "d", "--", "--nprobe", "4"]);
  assertEquals([o.seconds, o.concurrency, o.batch, o.serveFlags], [30, 16, 16, ["--nprobe", "4"]]);
  assertEquals([o.flood, o.nofile], [0, undefined]);
  const f = parseArgs(["--index", "ix", "--encoder", "e", "--data", "d", "--seconds", "12"].concat(
    ["--flood", "400", "--nofile", "256"],
  ));
  assertEquals([f.flood, f.floodAfter, f.floodHold, f.nofile], [400, 6, 3, 256]);
  why = "";
  try {
    parseArgs(["--url", "http://127.0.0.1:8080", "--data", "d", "--nofile", "256"]);
  } catch (e) {
    why = (e as Error).message;
  }
  assertMatch(why, /--nofile applies to the server this script starts/);
});

Deno.test("serve load: a bounded run against deno task serve answers every request and reports RSS", async () => {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-serve-load-" });
  try {
    const dev = JSON.parse(await Deno.readTextFile(await devJson()));
    const a = dev.data[0];
    await Deno.writeTextFile(
      `${dir}/data.json`,
      JSON.stringify({
        version: dev.version,
        data: [{ ...a, paragraphs: a.paragraphs.slice(0, 4) }],
      }),
    );
    let r = await runStage("pipeline/full.ts", [
      "--data",
      `${dir}/data.json`,
      "--out",
      `${dir}/run`,
    ]);
    assertEquals(r.code, 0, r.stderr);
    r = await runStage("pipeline/index.ts", [
      `${dir}/run/dumps/context_emb`,
      `${dir}/ix`,
      "--sparse",
      "--context",
      `${dir}/run/context.json`,
    ]);
    assertEquals(r.code, 0, r.stderr);
    r = await runStage("bench/serve_load.ts", [
      "--index",
      `${dir}/ix`,
      "--encoder",
      "sparse-pi",
      "--data",
      `${dir}/data.json`,
      "--seconds",
      "60",
      "--concurrency",
      "4",
      "--batch",
      "8",
      "--max-queries",
      "40",
      "--out",
      `${dir}/load.json`,
    ]);
    assertEquals(r.code, 0, r.stderr);
    assertMatch(r.stderr, /server stopped \(SIGINT, exit 0\)/);
    const out = JSON.parse(await Deno.readTextFile(`${dir}/load.json`));
    const [search, batch] = out.phases;
    // --max-queries bounds both phases (60 s would not be reached).
    assertEquals([search.requests, search.queries, search.errors], [40, 40, 0]);
    assertEquals([batch.requests, batch.queries, batch.errors], [5, 40, 0]);
    assert(search.p50 > 0 && search.p50 <= search.p95 && search.p95 <= search.p99);
    assert(out.pid > 0, `pid ${out.pid}`);
    for (const k of ["ready", "afterSearch", "afterBatch"]) {
      assert(out.rssMiB[k].rss > 10, `${k}: ${JSON.stringify(out.rssMiB[k])}`);
    }
    assertEquals(out.health.kind, "exact");
    const rows = r.stdout.trim().split("\n");
    assertEquals(rows.length, 4);
    assertMatch(rows[2], /^\| sparse-pi exact \| GET \/v1\/search \| 4 \| 40 \| 40 \|/);
    assertMatch(rows[3], /^\| sparse-pi exact \| POST \/v1\/batch \| 1 \| 5 \| 40 \|/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
