/**
 * Open search as a library and against merge: the tie rule across
 * paragraphs, a question string through the QuestionEncoder service, open
 * search restricted to each question's paragraph = merge's pred.json, open
 * search on sparse-pi dumps = the SciPy brute force, and the open metrics
 * of `evaluate --topk-file` = the Python reference (stdout unchanged).
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals, assertStringIncludes } from "../../_assert.ts";
import { DEV_GZ, python, runStage } from "../../_util.ts";
import { writeContextDump } from "../../../io/dump/writer.ts";
import type { Matrix } from "../../../io/matrix.ts";
import { buildIndex } from "../../../search/index/build.ts";
import { openIndexSync } from "../../../search/index/read.ts";
import { TopK } from "../../../search/index/exact/score.ts";
import { queryIndex, queryText } from "../../../search/open/open.ts";
import { SPARSE_PI_MODEL, sparsePiLayers } from "../../../encoders/sparse_pi/encoder.ts";

const f32 = (rows: number, cols: number, v: number[]): Matrix => ({
  kind: "dense",
  rows,
  cols,
  dtype: "f32",
  data: new Float32Array(v),
});
function exists(p: string): boolean {
  try {
    Deno.statSync(p);
    return true;
  } catch {
    return false;
  }
}
const phrase = (text: string) => ({ text, start: 0, end: text.length });

Deno.test("open: ties go to the first phrase in (paragraph order, phrase order); l2 ranks by -|q-p|^2", async () => {
  const dir = Deno.makeTempDirSync();
  try {
    const fmt = { sparse: false, compressed: false };
    // B_0 sorts after A_0: its copy of A_0's best row must rank after it.
    Deno.mkdirSync(`${dir}/c`);
    for (
      const [id, texts, m] of [
        ["A_0", ["a0", "a1"], f32(2, 4, [0, 1, 0, 0, 1, 0, 0, 0])],
        ["B_0", ["b0", "b1"], f32(2, 4, [1, 0, 0, 0, 2, 0, 0, 0])],
      ] as const
    ) {
      await Effect.runPromise(
        writeContextDump(`${dir}/c`, { id, phrases: texts.map(phrase), matrix: m }, fmt),
      );
    }
    await Effect.runPromise(buildIndex({ contextEmb: `${dir}/c`, out: `${dir}/ip` }));
    const ix = openIndexSync(`${dir}/ip`);
    const hits = queryIndex(ix, f32(1, 4, [1, 0, 0, 0]), { topK: 4 });
    assertEquals(hits.map((h) => [h.paragraph, h.phrase, h.score]), [
      ["B_0", "b1", 2],
      ["A_0", "a1", 1],
      ["B_0", "b0", 1],
      ["A_0", "a0", 0],
    ]);
    await Effect.runPromise(
      buildIndex({ contextEmb: `${dir}/c`, out: `${dir}/l2`, metric: "l2" }),
    );
    const l2 = queryIndex(openIndexSync(`${dir}/l2`), f32(1, 4, [1, 0, 0, 0]), { topK: 3 });
    // a1 and b0 equal q (distance 0): a1 first; then b1 and a0 at distance 1 and 2.
    assertEquals(l2.map((h) => [h.phrase, h.score]), [["a1", 0], ["b0", 0], ["b1", -1]]);
    const t = new TopK(1);
    t.offer(5, 0);
    t.offer(5, 1);
    assertEquals(t.rows, [0]);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

/** A one-article dev subset run through `full` (sparse-pi dumps, merge's pred.json). */
async function sparsePiSubset(dir: string): Promise<string> {
  const data = JSON.parse(
    await new Response(
      (await Deno.open(DEV_GZ)).readable.pipeThrough(new DecompressionStream("gzip")),
    ).text(),
  );
  data.data = data.data.slice(0, 1);
  data.data[0].paragraphs = data.data[0].paragraphs.slice(0, 12);
  Deno.writeTextFileSync(`${dir}/data.json`, JSON.stringify(data));
  const r = await runStage("pipeline/full.ts", [
    "--data",
    `${dir}/data.json`,
    "--out",
    `${dir}/run`,
  ]);
  assertEquals(r.code, 0, r.stderr);
  return `${dir}/run`;
}

Deno.test("open: sparse-pi dumps: closed = merge's pred.json, open = SciPy brute force, open metrics = Python", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "phraseval-open-" });
  try {
    const run = await sparsePiSubset(dir);
    const ix = `${dir}/ix`, data = `${dir}/data.json`;
    let r = await runStage("pipeline/index.ts", [
      `${run}/dumps/context_emb`,
      ix,
      "--sparse",
      "--context",
      `${run}/context.json`,
    ]);
    assertEquals(r.code, 0, r.stderr);
    r = await runStage("pipeline/search.ts", [
      data,
      ix,
      `${run}/dumps/question_emb`,
      `${dir}/closed.json`,
      "--closed",
    ]);
    assertEquals(r.code, 0, r.stderr);
    assertEquals(
      Deno.readTextFileSync(`${dir}/closed.json`),
      Deno.readTextFileSync(`${run}/pred.json`),
      "closed search differs from merge",
    );
    r = await runStage("pipeline/search.ts", [
      data,
      ix,
      `${run}/dumps/question_emb`,
      `${dir}/open.json`,
      "--top-k",
      "5",
      "--topk-out",
      `${dir}/topk.ndjson`,
    ]);
    assertEquals(r.code, 0, r.stderr);
    await python([
      "tests/py/open_ref.py",
      "search",
      data,
      `${run}/dumps/context_emb`,
      `${run}/dumps/question_emb`,
      `${dir}/ref.json`,
      "--sparse",
      "--context",
      `${run}/context.json`,
      "--top-k",
      "5",
      "--topk-out",
      `${dir}/ref.ndjson`,
    ]);
    assertEquals(
      Deno.readTextFileSync(`${dir}/open.json`),
      Deno.readTextFileSync(`${dir}/ref.json`),
      "open search differs from the brute force",
    );
    const strip = (path: string) =>
      Deno.readTextFileSync(path).trim().split("\n").map((l) => {
        const o = JSON.parse(l);
        return [o.id, o.rank, o.paragraph, o.phrase_index, o.phrase, o.score];
      });
    assertEquals(strip(`${dir}/topk.ndjson`), strip(`${dir}/ref.ndjson`));
    // Open metrics: stdout stays the official line; the metrics equal Python's.
    const plain = await runStage("pipeline/evaluate.ts", [data, `${dir}/open.json`]);
    const withK = await runStage("pipeline/evaluate.ts", [
      data,
      `${dir}/open.json`,
      "--topk-file",
      `${dir}/topk.ndjson`,
      "--open-out",
      `${dir}/open_metrics.json`,
    ]);
    assertEquals(withK.code, 0, withK.stderr);
    assertEquals(withK.stdout, plain.stdout);
    const got = JSON.parse(Deno.readTextFileSync(`${dir}/open_metrics.json`));
    const want = JSON.parse(
      (await python(["tests/py/open_ref.py", "metrics", data, `${dir}/topk.ndjson`])).stdout,
    );
    for (const key of ["k", "top_k_exact_match", "top_k_f1", "paragraph_recall", "mrr"]) {
      assertEquals(got[key], want[key], key);
    }
    assert(got.top_k_exact_match >= JSON.parse(plain.stdout).exact_match);
    // search wrote per-question rows next to its pred.json from the one fold:
    // the rows of evaluate --per-question, plus the top-k fields.
    const per = await runStage("pipeline/evaluate.ts", [
      data,
      `${dir}/open.json`,
      "--per-question",
      `${dir}/per.ndjson`,
    ]);
    assertEquals(per.code, 0, per.stderr);
    const lines = (p: string) =>
      Deno.readTextFileSync(p).trim().split("\n").map((l) => JSON.parse(l)).filter((o) =>
        o.kind === "score"
      );
    const rows = lines(`${dir}/open.rows.ndjson`), ref = lines(`${dir}/per.ndjson`);
    assert(rows.length > 100, `${rows.length} rows`);
    const key = (o: Record<string, unknown>) => [o.id, o.prediction, o.em, o.f1];
    assertEquals(rows.map(key), ref.map(key));
    const topkEm = 100 * rows.filter((o) => o.topk_em === 1).length / rows.length;
    assert(Math.abs(topkEm - got.top_k_exact_match) < 1e-9, `${topkEm} ${got.top_k_exact_match}`);
    assert(Deno.statSync(`${dir}/closed.rows.ndjson`).isFile, "closed search rows");
    // The split's question.json (no answers) as the dataset: the same answers, no rows (a
    // note says why); with an explicit --rows, refused before anything is written.
    r = await runStage("pipeline/search.ts", [
      `${run}/question.json`,
      ix,
      `${run}/dumps/question_emb`,
      `${dir}/q.json`,
      "--top-k",
      "5",
    ]);
    assertEquals(r.code, 0, r.stderr);
    assertStringIncludes(r.stderr, "search: no per-question rows: ");
    assertStringIncludes(r.stderr, "has no gold answers");
    assertEquals(Deno.readTextFileSync(`${dir}/q.json`), Deno.readTextFileSync(`${dir}/open.json`));
    assert(!exists(`${dir}/q.rows.ndjson`), "rows without answers");
    r = await runStage("pipeline/search.ts", [
      `${run}/question.json`,
      ix,
      `${run}/dumps/question_emb`,
      `${dir}/q2.json`,
      "--rows",
      `${dir}/q2.rows.ndjson`,
    ]);
    assertEquals(r.code, 2, r.stderr);
    assertEquals(r.stderr.trim().split("\n").length, 1, r.stderr);
    assertStringIncludes(r.stderr, "has no gold answers: --rows needs them");
    assert(!exists(`${dir}/q2.json`) && !exists(`${dir}/q2.rows.ndjson`), "half-written output");
    // A question string through the QuestionEncoder service.
    const index = openIndexSync(ix);
    const hits = await Effect.runPromise(
      Effect.provide(
        queryText(index, "Which NFL team represented the AFC at Super Bowl 50?", { topK: 3 }),
        sparsePiLayers(SPARSE_PI_MODEL),
      ),
    );
    assertEquals(hits.length, 3);
    assert(hits[0].score >= hits[1].score && hits[1].score >= hits[2].score);
    assert(hits.every((h) => index.phrases[h.row] === h.phrase && h.start !== undefined));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
