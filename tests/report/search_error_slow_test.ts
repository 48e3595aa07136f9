/**
 * `report --search-error` on real searches: NumPy-written dense dumps of
 * 12 dev paragraphs (`bench/make_dumps.py`), an exact index and an IVF-PQ
 * index of them, one exact search and four approximate ones (nprobe 1, 2,
 * 5 = nlist, and nprobe 2 with 20 candidates), each with its record
 * (`<stem>.search.json`). The records say how each search ran and what
 * its index holds; the report's four cells add up to n and equal, with
 * recall@k, a brute-force recount in Python (`bench/reference/
 * search_error.py`: the official v1.1 EM, its own loops over the files).
 *
 * @module
 */
import { assert, assertEquals } from "../_assert.ts";
import { python } from "../_util.ts";
import { numpyDumps, ok, smallIvfIndex } from "../search/_stages.ts";
import type { SearchErrorReport } from "../../report/mod.ts";
import type { SearchRecord } from "../../search/open/record.ts";

const readJson = (p: string) => JSON.parse(Deno.readTextFileSync(p));

Deno.test("report --search-error on real searches: records, four cells adding up to n, and a brute-force recount", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-search-error-real-" });
  try {
    await numpyDumps(tmp, 12, ["--dtype", "f32"]);
    const data = `${tmp}/data.json`;
    await ok("pipeline/index.ts", [`${tmp}/context_emb`, `${tmp}/exact_ix`, "--context", data]);
    await smallIvfIndex(tmp, `${tmp}/ivf_ix`);
    Deno.mkdirSync(`${tmp}/approx`);
    const search = (ix: string, out: string, extra: string[]) =>
      ok("pipeline/search.ts", [
        data,
        `${tmp}/${ix}`,
        `${tmp}/question_emb`,
        `${tmp}/${out}.json`,
        "--top-k",
        "10",
        "--topk-out",
        `${tmp}/${out}.topk.ndjson`,
        ...extra,
      ]);
    await search("exact_ix", "exact", []);
    await search("ivf_ix", "ivf_exact", ["--exact"]);
    const settings: [string, string[]][] = [
      ["approx/np1", ["--nprobe", "1"]],
      ["approx/np2", ["--nprobe", "2"]],
      ["approx/np5", ["--nprobe", "5"]],
      ["approx/np2c20", ["--nprobe", "2", "--candidates", "20"]],
    ];
    for (const [out, extra] of settings) await search("ivf_ix", out, extra);

    // The records: how each search ran, its index and its counts.
    const rec = (stem: string): SearchRecord => readJson(`${tmp}/${stem}.search.json`);
    const exact = rec("exact");
    const n = Object.keys(readJson(`${tmp}/exact.json`)).length;
    assertEquals(n, 250);
    assertEquals([exact.mode, exact.index.kind, exact.nprobe, exact.candidates], [
      "exact",
      "exact",
      null,
      null,
    ]);
    assertEquals([exact.questions, exact.answered, exact.missing, exact.top_k], [n, n, 0, 10]);
    assertEquals(exact.files, {
      predictions: `${tmp}/exact.json`,
      topk: `${tmp}/exact.topk.ndjson`,
      rows: `${tmp}/exact.rows.ndjson`,
    });
    // The same answers from the IVF-PQ index's exact vectors (--exact), and the same content.
    assertEquals(
      Deno.readTextFileSync(`${tmp}/ivf_exact.json`),
      Deno.readTextFileSync(`${tmp}/exact.json`),
    );
    assertEquals(rec("ivf_exact").mode, "exact");
    assertEquals(rec("ivf_exact").index.content, exact.index.content);
    for (const [out, extra] of settings) {
      const r = rec(out);
      assertEquals([r.mode, r.index.kind, r.index.nlist, r.index.bpv], [
        "approximate",
        "ivf-pq",
        5,
        8,
      ]);
      assertEquals([r.nprobe, r.candidates], [Number(extra[1]), extra[3] ? Number(extra[3]) : 0]);
      assertEquals(r.index.content, exact.index.content);
      assertEquals([r.questions, r.answered], [n, n]);
      assert(
        Math.abs(r.questions_per_second - n / r.seconds.search) <= 0.01 * r.questions_per_second,
        `${r.questions_per_second} q/s for ${n} questions in ${r.seconds.search} s`,
      );
      assert(r.peak_rss_bytes !== null && r.peak_rss_bytes > 20e6, `${r.peak_rss_bytes}`);
      assert(r.seconds.search_cpu !== null && r.seconds.search_cpu >= 0);
    }
    // Index bytes: the files its header lists, as they are on disk.
    const header = readJson(`${tmp}/ivf_ix/index.json`);
    let bytes = 0, ivf = 0;
    for (const name of Object.keys(header.files)) {
      const size = Deno.statSync(`${tmp}/ivf_ix/${name}`).size;
      bytes += size;
      if (name.startsWith("ivf/")) ivf += size;
    }
    assertEquals([rec("approx/np1").index.bytes, rec("approx/np1").index.ivf_bytes], [bytes, ivf]);
    assert(ivf > 0 && ivf < bytes);

    // The report: EXACT the exact index's search, APPROX the folder.
    const r = await ok("pipeline/report.ts", [
      "--search-error",
      `${tmp}/exact.json`,
      `${tmp}/approx`,
      "--out",
      `${tmp}/report`,
    ]);
    assert(r.stdout.includes("search error of 4 approximate searches"), r.stdout);
    const se: SearchErrorReport = readJson(`${tmp}/report/report.json`).search_error;
    assertEquals(se.settings.map((s) => s.name), [
      "nprobe 1, candidates 0",
      "nprobe 2, candidates 0",
      "nprobe 5, candidates 0",
      "nprobe 2, candidates 20",
    ]);
    const ref = JSON.parse(
      (await python([
        "bench/reference/search_error.py",
        data,
        `${tmp}/exact.json`,
        `${tmp}/exact.topk.ndjson`,
        ...se.settings.flatMap((s) => [s.predictions, s.topk]),
      ])).stdout,
    );
    assertEquals(se.questions, ref.questions);
    assertEquals(se.exact.em, (100 * ref.exact_right) / ref.questions);
    for (const [i, s] of se.settings.entries()) {
      const c = s.cells;
      assertEquals(c.right_both + c.lost + c.wrong_both + c.saved, n, s.name);
      assertEquals(c, ref.settings[i].cells, s.name);
      assertEquals(
        Object.fromEntries(s.recall.map((x) => [String(x.k), x.value])),
        ref.settings[i].recall,
        s.name,
      );
      assertEquals(s.em_lost_net, (100 * (c.lost - c.saved)) / n);
      assert(Math.abs(s.em_lost_net - (se.exact.em - s.em)) < 1e-9, s.name);
    }
    // At least one setting loses questions to the search and one is saved by chance.
    assert(se.settings.some((s) => s.cells.lost > 0) && se.settings.some((s) => s.cells.saved > 0));
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});
