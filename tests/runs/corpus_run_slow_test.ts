/**
 * Runs over a corpus apart from the question set: `full --open --corpus`
 * on a SQuAD set (its top-1 EM/F1 equal the official v1.1 `evaluate` of
 * the search's predictions; its numbers equal the stages run by hand), and
 * a run config whose `open` set (DPR CSV questions) searches a DPR passage
 * TSV with an encoder model. Bad uses are one line, exit 2.
 *
 * @module
 */
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { DEV_GZ, python, ROOT, runArgv, runStage } from "../_util.ts";

const CORPUS = `${ROOT}/tests/testdata/corpus`;

/** The first `n` dev articles as a SQuAD file. */
async function devArticles(path: string, n: number): Promise<void> {
  await python([
    "-c",
    "import gzip, json, sys; d = json.load(gzip.open(sys.argv[1])); " +
    "json.dump({'version': '1.1', 'data': d['data'][:int(sys.argv[3])]}, open(sys.argv[2], 'w'))",
    DEV_GZ,
    path,
    String(n),
  ]);
}

Deno.test("full --open --corpus: the search over another corpus, scored as the stages and the official script score it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-corpus-full-" });
  try {
    await devArticles(`${dir}/q.json`, 1);
    await devArticles(`${dir}/c.json`, 3);
    // SQuAD-open-lite's corpus: every paragraph of dev and of the train subset.
    const lite = await runStage("tools/squad_open_lite.ts", ["--out", `${dir}/lite.jsonl`]);
    assertEquals(lite.code, 0, lite.stderr);
    assertMatch(lite.stdout, /: 4497 passages \(dev 2067, train subset 2430\)$/m);
    const first = JSON.parse((await Deno.readTextFile(`${dir}/lite.jsonl`)).split("\n")[0]);
    assertEquals(first.id, "Super_Bowl_50_0");
    assertEquals(first.title, "Super_Bowl_50");
    const r = await runStage("pipeline/full.ts", [
      "--data",
      `${dir}/q.json`,
      "--open",
      "--top-k",
      "20",
      "--corpus",
      `${dir}/c.json`,
      "--out",
      `${dir}/run`,
    ]);
    assertEquals(r.code, 0, r.stderr);
    const s = JSON.parse(await Deno.readTextFile(`${dir}/run/summary.json`));
    // No merge over a corpus: the numbers are the search's.
    assert(!Deno.statSync(`${dir}/run/open/pred.json`).isDirectory);
    let merged = true;
    try {
      Deno.statSync(`${dir}/run/pred.json`);
    } catch {
      merged = false;
    }
    assertEquals(merged, false, "a corpus run has no merge predictions");
    const paragraphs = (await Deno.readTextFile(`${dir}/run/index/paragraphs.ndjson`))
      .trimEnd().split("\n").map((l) => JSON.parse(l));
    const c = JSON.parse(await Deno.readTextFile(`${dir}/c.json`));
    const want = c.data.flatMap((a: { title: string; paragraphs: unknown[] }) =>
      a.paragraphs.map((_, i) => `${a.title}_${i}`)
    );
    assertEquals(paragraphs.map((p) => p.id), want, "the index holds the corpus's passages");
    assertEquals(s.corpus.passages, want.length);
    // Top-1 EM/F1 over the gold answers = the official v1.1 script on the search's answers.
    const ev = await runStage("pipeline/evaluate.ts", [
      `${dir}/q.json`,
      `${dir}/run/open/pred.json`,
    ]);
    assertEquals(ev.code, 0, ev.stderr);
    const official = JSON.parse(ev.stdout);
    assertEquals(s.exact_match, official.exact_match);
    assertEquals(s.f1, official.f1);
    assert(s.exact_match > 0, "some answers are found");
    // The top-k numbers = evaluate --topk-file --index on the same files (the stage path).
    const tk = await runStage("pipeline/evaluate.ts", [
      `${dir}/q.json`,
      `${dir}/run/open/pred.json`,
      "--format",
      "squad",
      "--topk-file",
      `${dir}/run/open/topk.ndjson`,
      "--index",
      `${dir}/run/index`,
      "--open-out",
      `${dir}/open.json`,
    ]);
    assertEquals(tk.code, 0, tk.stderr);
    const stage = JSON.parse(await Deno.readTextFile(`${dir}/open.json`));
    assertEquals(s.corpus.top_k_accuracy, stage.top_k_accuracy);
    assertEquals(s.corpus.short, stage.short);
    assertEquals(s.corpus.mrr, stage.mrr);
    assertEquals(Object.keys(s.corpus.top_k_accuracy), ["1", "5", "20"]);
    // accuracy@k grows with k, and top-1 passage accuracy is at least top-1 EM's share.
    const acc = s.corpus.top_k_accuracy;
    assert(acc["1"] <= acc["5"] && acc["5"] <= acc["20"], JSON.stringify(acc));
    assertMatch(r.stdout, /^top-20 acc +\d+\.\d\d/m);
    // Rows: one per question, in dataset order.
    const rows = (await Deno.readTextFile(`${dir}/run/rows.ndjson`)).trimEnd().split("\n");
    assertEquals(rows.length, s.counts.questions);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("full --corpus: without --open, or a corpus with a repeated passage id, is one line, exit 2", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-corpus-bad-" });
  try {
    await devArticles(`${dir}/q.json`, 1);
    const noOpen = await runStage("pipeline/full.ts", [
      "--data",
      `${dir}/q.json`,
      "--corpus",
      `${CORPUS}/psgs.tsv`,
      "--out",
      `${dir}/a`,
    ]);
    assertEquals(noOpen.code, 2, noOpen.stderr);
    assertEquals(noOpen.stderr.trimEnd().split("\n").length, 1, noOpen.stderr);
    assertMatch(noOpen.stderr, /--corpus needs --open/);
    const tsv = await Deno.readTextFile(`${CORPUS}/psgs.tsv`);
    await Deno.writeTextFile(`${dir}/dup.tsv`, tsv + tsv.split("\n")[1] + "\n");
    const dup = await runStage("pipeline/full.ts", [
      "--data",
      `${dir}/q.json`,
      "--open",
      "--corpus",
      `${dir}/dup.tsv`,
      "--out",
      `${dir}/b`,
    ]);
    assertEquals(dup.code, 2, dup.stderr);
    assertEquals(dup.stderr.trimEnd().split("\n").length, 1, dup.stderr);
    assertMatch(dup.stderr, /dup\.tsv.*1/);
    // A corpus that is one of --out's files (the passages-only file full writes) is refused.
    await Deno.mkdir(`${dir}/c`);
    await Deno.writeTextFile(`${dir}/c/passages.jsonl`, "");
    const own = await runStage("pipeline/full.ts", [
      "--data",
      `${dir}/q.json`,
      "--open",
      "--corpus",
      `${dir}/c/passages.jsonl`,
      "--out",
      `${dir}/c`,
    ]);
    assertEquals(own.code, 2, own.stderr);
    assertEquals(own.stderr.trimEnd().split("\n").length, 1, own.stderr);
    assertMatch(own.stderr, /--out's passages\.jsonl .* is the input --corpus/);
    // Nothing half-written: no dumps, no index.
    for (const d of ["a", "b"]) {
      for (const f of ["dumps", "index", "open"]) {
        let there = true;
        try {
          Deno.statSync(`${dir}/${d}/${f}`);
        } catch {
          there = false;
        }
        assertEquals(there, false, `${d}/${f}`);
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("run: an open set (DPR CSV) searching a DPR passage TSV with an encoder model", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-corpus-run-" });
  try {
    const cfg = `${dir}/cfg.ts`;
    await Deno.writeTextFile(
      cfg,
      `export const config = ${
        JSON.stringify({
          datasets: [{
            abbr: "nq",
            type: "open",
            path: `${CORPUS}/nq.qa.csv`,
            corpus: `${CORPUS}/psgs.tsv`,
            open: { topK: 5 },
          }],
          models: [{ abbr: "sp", encoder: "sparse-pi" }],
        })
      };\n`,
    );
    const o = await runArgv([
      Deno.execPath(),
      "run",
      "--allow-read",
      "--allow-write",
      "--allow-run",
      `${ROOT}/pipeline/run.ts`,
      cfg,
      "--work-dir",
      `${dir}/work`,
    ], { cwd: ROOT });
    const err = o.stderr;
    assertEquals(o.code, 0, err);
    const run = [...Deno.readDirSync(`${dir}/work`)].find((e) => e.isDirectory)!.name;
    const base = `${dir}/work/${run}`;
    const topk = `${base}/open/sp/nq.topk.ndjson`;
    const index = `${base}/indexes/sp/nq`;
    const result = JSON.parse(await Deno.readTextFile(`${base}/results/sp/nq.json`));
    // The stages by hand on the run's own outputs give the same numbers.
    const pred = `${base}/open/sp/nq.json`;
    const ev = await runStage("pipeline/evaluate.ts", [
      `${CORPUS}/nq.qa.csv`,
      pred,
      "--topk-file",
      topk,
      "--index",
      index,
      "--open-out",
      `${dir}/open.json`,
    ]);
    assertEquals(ev.code, 0, ev.stderr);
    const stage = JSON.parse(await Deno.readTextFile(`${dir}/open.json`));
    const top1 = JSON.parse(ev.stdout.split("\n")[0]);
    assertEquals(result.exact_match, top1.exact_match);
    assertEquals(result.f1, top1.f1);
    assertEquals(result.corpus.top_k_accuracy, stage.top_k_accuracy);
    assertEquals(Object.keys(result.corpus.top_k_accuracy), ["1", "5"]);
    assertEquals(result.total, 4);
    // The index keeps the passage ids and titles of the TSV.
    const ids = (await Deno.readTextFile(`${index}/paragraphs.ndjson`)).trimEnd().split("\n")
      .map((l) => JSON.parse(l)).map((p) => `${p.id}|${p.title}`);
    assertEquals(ids.slice(0, 3), ["1|Ada Lovelace", "wiki:12|Zürich", "über-3|Straße"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
