/**
 * `search`'s flags are bounded by the index it searches, on NumPy-written
 * dumps of the first dev paragraphs:
 *
 * - `TopK` (a heap) keeps what the sorted list it replaced kept: the same
 *   rows and scores, ties to the first offered, for every k;
 * - `--top-k` above the index's phrases keeps them all (one note on
 *   stderr; the record's `top_k` is the phrases), over one index and over
 *   shards, and the top-1 predictions are those of `--top-k 10`;
 * - `--threads` above `MAX_SEARCH_THREADS` is refused (exit 2, one line,
 *   nothing written);
 * - without `--nprobe`, an IVF-PQ index of fewer than 10 lists probes them
 *   all (its record says so); a `--nprobe` above nlist is still refused.
 */
import { existsSync } from "node:fs";
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { TopK } from "../../search/index/exact/score.ts";
import { MAX_SEARCH_THREADS } from "../../search/index/defaults.ts";
import { numpyDumps, ok, records, refused, smallIvfIndex } from "./_stages.ts";

/** The `TopK` before the heap: a sorted list, each row inserted after its equals. */
class SortedTopK {
  readonly scores: number[] = [];
  readonly rows: number[] = [];
  constructor(readonly k: number) {}
  offer(score: number, row: number): void {
    const n = this.rows.length;
    if (n === this.k && !(score > this.scores[n - 1])) return;
    let p = n;
    while (p > 0 && this.scores[p - 1] < score) p--;
    this.scores.splice(p, 0, score);
    this.rows.splice(p, 0, row);
    if (this.rows.length > this.k) {
      this.scores.pop();
      this.rows.pop();
    }
  }
}

Deno.test("TopK: the same rows, scores and ties as a sorted list, for every k", () => {
  let seed = 7;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  for (const k of [1, 2, 3, 10, 64, 500, 5000]) {
    for (const levels of [3, 40, 0]) {
      const heap = new TopK(k), list = new SortedTopK(k);
      for (let row = 0; row < 2000; row++) {
        // Few levels: many ties (0 and -0 among them); 0: all distinct.
        const x = levels === 0 ? rand() : Math.floor(rand() * levels) - 1;
        const score = x === 0 && row % 2 === 1 ? -0 : x;
        assertEquals(heap.threshold, list.rows.length < k ? -Infinity : list.scores[k - 1]);
        heap.offer(score, row);
        list.offer(score, row);
        if (row % 397 === 0) assertEquals(heap.rows, list.rows, `k ${k}, row ${row}`);
      }
      assertEquals(heap.rows, list.rows, `k ${k}, levels ${levels}`);
      assertEquals(
        heap.scores.map(Object.is.bind(null, -0)),
        list.scores.map(Object.is.bind(null, -0)),
      );
      assertEquals(heap.scores, list.scores);
    }
  }
});

Deno.test("search --top-k above the index's phrases keeps them all, said once (one index, shards)", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "bounds_" });
  try {
    await numpyDumps(dir, 3);
    const ix = `${dir}/ix`, sh = `${dir}/sh`, q = `${dir}/question_emb`, data = `${dir}/data.json`;
    await ok("pipeline/index.ts", [`${dir}/context_emb`, ix, "--context", data]);
    await ok("pipeline/index.ts", [`${dir}/context_emb`, sh, "--context", data, "--shards", "2"]);
    const phrases = JSON.parse(Deno.readTextFileSync(`${ix}/index.json`)).phrases as number;
    assert(phrases > 100 && phrases < 100_000, `${phrases}`);
    await ok("pipeline/search.ts", [data, ix, q, `${dir}/p10.json`]);
    const p10 = Deno.readTextFileSync(`${dir}/p10.json`);
    for (const [name, index] of [["one", ix], ["shards", sh]]) {
      const pred = `${dir}/${name}.json`, topk = `${dir}/${name}.topk.ndjson`;
      const r = await ok("pipeline/search.ts", [
        data,
        index,
        q,
        pred,
        "--top-k",
        "100000",
        "--topk-out",
        topk,
      ]);
      const notes = r.stderr.split("\n").filter((l) => l.includes("--top-k"));
      assertEquals(notes, [
        `search: --top-k 100000 is more than the ${phrases} phrases of the index: ` +
        `${phrases} ranks kept per question`,
      ]);
      const recs = records(topk);
      const first = recs.filter((x) => x.id === recs[0].id);
      assertEquals(first.length, phrases);
      assertEquals(first.at(-1)!.rank, phrases);
      assertEquals(Deno.readTextFileSync(pred), p10);
      if (name === "one") {
        assertEquals(JSON.parse(Deno.readTextFileSync(`${dir}/one.search.json`)).top_k, phrases);
      }
    }
    // Without --topk-out the same predictions.
    await ok("pipeline/search.ts", [data, ix, q, `${dir}/all.json`, "--top-k", "100000"]);
    assertEquals(Deno.readTextFileSync(`${dir}/all.json`), p10);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("search --threads above MAX_SEARCH_THREADS is refused in one line", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "bounds_threads_" });
  try {
    await numpyDumps(dir, 3);
    const ix = `${dir}/ix`, q = `${dir}/question_emb`, data = `${dir}/data.json`;
    await ok("pipeline/index.ts", [`${dir}/context_emb`, ix, "--context", data]);
    for (const n of ["100000", String(MAX_SEARCH_THREADS + 1)]) {
      await refused(
        "pipeline/search.ts",
        [data, ix, q, `${dir}/t.json`, "--threads", n],
        new RegExp(`^search: --threads must be at most ${MAX_SEARCH_THREADS}, got ${n}$`),
      );
    }
    assert(!existsSync(`${dir}/t.json`));
    await ok("pipeline/search.ts", [data, ix, q, `${dir}/t1.json`]);
    await ok("pipeline/search.ts", [data, ix, q, `${dir}/t2.json`, "--threads", "2"]);
    assertEquals(Deno.readTextFileSync(`${dir}/t2.json`), Deno.readTextFileSync(`${dir}/t1.json`));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("search without --nprobe on an IVF-PQ index of 5 lists probes all 5; --nprobe 10 is refused", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "bounds_ivf_" });
  try {
    await numpyDumps(dir, 8);
    const ix = `${dir}/ivf`, q = `${dir}/question_emb`, data = `${dir}/data.json`;
    await smallIvfIndex(dir, ix);
    assertEquals(JSON.parse(Deno.readTextFileSync(`${ix}/index.json`)).parameters.nlist, 5);
    await ok("pipeline/search.ts", [data, ix, q, `${dir}/d.json`]);
    await ok("pipeline/search.ts", [data, ix, q, `${dir}/n5.json`, "--nprobe", "5"]);
    assertEquals(Deno.readTextFileSync(`${dir}/d.json`), Deno.readTextFileSync(`${dir}/n5.json`));
    const rec = JSON.parse(Deno.readTextFileSync(`${dir}/d.search.json`));
    assertEquals([rec.mode, rec.nprobe], ["approximate", 5]);
    await refused(
      "pipeline/search.ts",
      [data, ix, q, `${dir}/n10.json`, "--nprobe", "10"],
      /^search: .*--nprobe 10 is larger than the index's nlist 5/,
    );
    // A sharded IVF-PQ index (one quantizer) the same.
    const sh = `${dir}/sh`;
    await smallIvfIndex(dir, `${sh}`, ["--train-only"]);
    for (const i of [0, 1]) {
      await ok("pipeline/index.ts", [
        `${dir}/context_emb`,
        sh,
        "--context",
        data,
        "--shards",
        "2",
        "--shard",
        String(i),
        "--quantizer",
        `${sh}/quantizer`,
      ]);
    }
    const r = await ok("pipeline/search.ts", [data, sh, q, `${dir}/s.json`]);
    assertMatch(r.stderr, /answered/);
    assertEquals(Deno.readTextFileSync(`${dir}/s.json`), Deno.readTextFileSync(`${dir}/n5.json`));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
