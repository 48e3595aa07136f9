/**
 * `report --search-error EXACT APPROX...` (`report/search_error.ts`) on
 * hand-made searches whose every number is known: eight questions, each
 * cell of the split populated (right in both 2, lost 3, wrong in both 2,
 * saved 1), recall@k of the exact top-1 placed rank by rank, McNemar's p
 * from its closed form; a folder of searches; the charts and tables of the
 * page; and what is refused (one line, exit 2, nothing written). A real
 * search, recounted by brute force, is `search_error_slow_test.ts`.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { runStage } from "../_util.ts";
import {
  recallAtK,
  recallKs,
  report,
  searchErrorCells,
  type SearchErrorReport,
} from "../../report/mod.ts";
import { APPROX, CONTENT, EXACT, fixture, SAME, writeSearch } from "./_searches.ts";

/** The search-error part of a report of `exact` and `approx` (written into `<dir>/out`). */
async function run(dir: string, exact: string, approx: string[]): Promise<SearchErrorReport> {
  await Effect.runPromise(report({
    inputs: [],
    searchError: { exact, approx },
    out: `${dir}/out`,
    latex: true,
  }));
  return JSON.parse(Deno.readTextFileSync(`${dir}/out/report.json`)).search_error;
}

/** The message of the report's failure on `exact` and `approx`; nothing may be written. */
async function refusal(dir: string, exact: string, approx: string[]): Promise<string> {
  const exit = await Effect.runPromiseExit(report({
    inputs: [],
    searchError: { exact, approx },
    out: `${dir}/refused`,
  }));
  assert(Exit.isFailure(exit), "not refused");
  assert(
    !Deno.statSync(dir).isFile && ![...Deno.readDirSync(dir)].some((e) => e.name === "refused"),
  );
  const err = Exit.isFailure(exit) && exit.cause.reasons[0];
  const e = (err && "error" in err ? err.error : err) as { _tag?: string; message?: string };
  assertEquals(e._tag, "InputError", JSON.stringify(e));
  return String(e.message);
}

Deno.test("searchErrorCells: the four cells equal a count question by question; they add up to n", () => {
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % 2;
  for (let n = 0; n < 60; n += 7) {
    const e = Array.from({ length: n }, next), a = Array.from({ length: n }, next);
    const c = searchErrorCells(e, a);
    const count = (x: number, y: number) => e.filter((v, i) => v === x && a[i] === y).length;
    assertEquals(c, {
      right_both: count(1, 1),
      lost: count(1, 0),
      wrong_both: count(0, 0),
      saved: count(0, 1),
    });
    assertEquals(c.right_both + c.lost + c.wrong_both + c.saved, n);
  }
  let threw = false;
  try {
    searchErrorCells([1, 0.5], [1, 1]);
  } catch {
    threw = true;
  }
  assert(threw, "an EM of 0.5 is refused");
});

Deno.test("recallAtK and recallKs: hand-placed ranks", () => {
  const at = (paragraph: string, phraseIndex: number) => ({ paragraph, phraseIndex });
  const exact = new Map([["a", at("P", 1)], ["b", at("P", 2)], ["c", at("Q", 1)], [
    "d",
    at("P", 4),
  ]]);
  const approx = new Map([
    ["a", [at("P", 1)]],
    ["b", [at("P", 9), at("P", 8), at("P", 2)]],
    ["c", [at("P", 1)]], // the same phrase index in another paragraph is not a hit
  ]);
  assertEquals(recallAtK(exact, approx, [1, 2, 3]), [
    { k: 1, value: 25 },
    { k: 2, value: 25 },
    { k: 3, value: 50 },
  ]);
  assertEquals([recallKs(1), recallKs(3), recallKs(10), recallKs(100)], [
    [1],
    [1, 3],
    [1, 5, 10],
    [1, 5, 10, 100],
  ]);
});

Deno.test("report --search-error: every cell populated, the known counts, shares, recall@k and McNemar p", async () => {
  const dir = fixture();
  try {
    const r = await run(dir, `${dir}/exact.json`, [`${dir}/np1.json`]);
    assertEquals([r.questions, r.answered, r.rules, r.axis, r.recall_ks], [
      8,
      8,
      "v1.1",
      "nprobe",
      [1, 3],
    ]);
    assertEquals([r.exact.em, r.exact.f1, r.exact.model_error], [62.5, 62.5, 37.5]);
    const [s] = r.settings;
    assertEquals(s.cells, { right_both: 2, lost: 3, wrong_both: 2, saved: 1 });
    assertEquals(s.cells.right_both + s.cells.lost + s.cells.wrong_both + s.cells.saved, 8);
    assertEquals([s.name, s.nprobe, s.candidates], ["nprobe 1, candidates 0", 1, 0]);
    // EM 3/8; lost to search (3 − 1)/8; lost 3/8; saved 1/8; of the exact's 5 right: 2/5.
    assertEquals([s.em, s.f1, s.f1_difference], [37.5, 37.5, -25]);
    assertEquals([s.em_lost_net, s.em_lost, s.em_saved, s.em_lost_of_exact], [25, 37.5, 12.5, 40]);
    assertEquals(s.em_lost_net, r.exact.em - s.em);
    // McNemar, b = 3, c = 1: 2 · P[X ≤ 1], X ~ Binomial(4, 1/2) = 2 · (1 + 4) / 16.
    assert(Math.abs(s.mcnemar_p - 0.625) < 1e-12, String(s.mcnemar_p));
    // Exact top-1 at approximate rank 1: q1, q2, q6; within rank 3: also q3, q4, q8.
    assertEquals(s.recall, [{ k: 1, value: 37.5 }, { k: 3, value: 75 }]);
    assertEquals([s.questions_per_second, s.index.ivf_bytes, s.peak_rss_bytes], [
      4,
      1_500_000,
      200_000_000,
    ]);
    // The page: three charts, each with a table under it; hover titles; nothing to fetch.
    const html = Deno.readTextFileSync(`${dir}/out/report.html`);
    const part = html.slice(html.indexOf("<h2>Search error</h2>"));
    const ids = [...part.matchAll(/<figure id="(search-error-[a-z]+)">/g)].map((m) => m[1]);
    assertEquals(ids, ["search-error-em", "search-error-recall", "search-error-speed"]);
    for (const id of ids) {
      const after = part.slice(part.indexOf(`<figure id="${id}">`));
      assert(after.indexOf("</figure>\n<table>") > 0, `${id}: no table right under it`);
    }
    assert(
      part.includes("<title>nprobe 1, candidates 0\nEM 37.50\nlost 3, saved 1\nrecall@1 37.50\n"),
      "no hover title",
    );
    assert(!/https?:\/\//.test(html.replace(/<svg[^]*?<\/svg>/g, "")), "a URL outside the charts");
    assert(!/<script|<img|<link/.test(html), "something to fetch or run");
    // The Markdown has the same tables; the LaTeX one row per setting.
    const md = Deno.readTextFileSync(`${dir}/out/report.md`);
    assert(
      md.includes(
        "| nprobe 1, candidates 0 | 37.50 | 37.50 | 2 | 3 | 2 | 1 | +25.00 | 37.50 | 12.50 | +40.00% | −25.00 | 0.6250 |",
      ),
      md,
    );
    assert(md.includes("| nprobe 1, candidates 0 | 37.50 | 75.00 |"), md);
    const tex = Deno.readTextFileSync(`${dir}/out/report.tex`);
    assert(tex.includes("1 & 0 & 37.50 & 2 & 3 & 2 & 1 & +25.00 & 37.50 & 4 \\\\"), tex);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("report --search-error: a folder of searches (its exact one left out of APPROX), sorted by candidates then nprobe", async () => {
  const dir = fixture();
  try {
    writeSearch(dir, "np4", SAME, { nprobe: 4, qps: 2 });
    writeSearch(dir, "np2c9", APPROX, { nprobe: 2, candidates: 9, qps: 1 });
    const r = await run(dir, dir, [dir]);
    assertEquals(r.exact.record, `${dir}/exact.search.json`);
    assertEquals(r.settings.map((s) => s.name), [
      "nprobe 1, candidates 0",
      "nprobe 4, candidates 0",
      "nprobe 2, candidates 9",
    ]);
    // The same answers as the exact search: nothing lost or saved, recall 100.
    const same = r.settings[1];
    assertEquals(same.cells, { right_both: 5, lost: 0, wrong_both: 3, saved: 0 });
    assertEquals([same.em_lost_net, same.mcnemar_p], [0, 1]);
    assertEquals(same.recall.map((c) => c.value), [100, 100]);
    // Given as a record, the exact search is the same.
    const again = await run(dir, `${dir}/exact.search.json`, [`${dir}/np4.json`]);
    assertEquals(again.settings[0].cells, same.cells);
    // Beside INPUTs: the search-error part first, then the dataset with its systems as usual.
    await Effect.runPromise(report({
      inputs: [`exact=${dir}/exact.json`, `np1=${dir}/np1.json`],
      data: `${dir}/data.json`,
      searchError: { exact: `${dir}/exact.json`, approx: [`${dir}/np1.json`] },
      out: `${dir}/both`,
      resamples: 50,
      shuffles: 99,
    }));
    const both = JSON.parse(Deno.readTextFileSync(`${dir}/both/report.json`));
    assertEquals(both.search_error.settings[0].cells, r.settings[0].cells);
    assertEquals(both.datasets.map((d: { name: string }) => d.name), ["data"]);
    assertEquals(both.datasets[0].comparisons[0].em.difference, -25);
    const html = Deno.readTextFileSync(`${dir}/both/report.html`);
    assert(html.indexOf("<h2>Search error</h2>") < html.indexOf("<h2>data</h2>"));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("report --search-error: a search with adaptive probing's tau is named with it (tables, report.json, LaTeX, charts, refusals); the others as before", async () => {
  const dir = fixture();
  try {
    writeSearch(dir, "tau", SAME, { nprobe: 4, probeTau: 0.13, qps: 3 });
    writeSearch(dir, "np4", SAME, { nprobe: 4, qps: 2 });
    const r = await run(dir, dir, [dir]);
    // By candidates, nprobe, then tau: a tau before none (every list).
    assertEquals(r.settings.map((s) => [s.name, s.probe_tau]), [
      ["nprobe 1, candidates 0", undefined],
      ["nprobe 4, tau 0.13, candidates 0", 0.13],
      ["nprobe 4, candidates 0", undefined],
    ]);
    assertEquals(r.settings.map((s) => "probe_tau" in s), [false, true, false]);
    assert(!("probe_tau" in r.exact));
    const md = Deno.readTextFileSync(`${dir}/out/report.md`);
    for (
      const row of [
        "| nprobe 4, tau 0.13, candidates 0 | 62.50 | 62.50 | 5 | 0 | 3 | 0 | ±0.00 | 0.00 | 0.00 | ±0.00% | ±0.00 | 1.0000 |",
        "| nprobe 4, tau 0.13, candidates 0 | 100.00 | 100.00 |",
        "| nprobe 4, tau 0.13, candidates 0 | ivf-pq nlist 4 bpv 2 | 62.50 | 3.0 |",
        "| nprobe 4, candidates 0 | 62.50 | 62.50 | 5 | 0 | 3 | 0 | ±0.00 |",
      ]
    ) assert(md.includes(row), `${row}\n${md}`);
    // LaTeX: a τ column, "--" for the searches without one.
    const tex = Deno.readTextFileSync(`${dir}/out/report.tex`);
    for (
      const line of [
        "nprobe & $\\tau$ & cand. & EM & both right & lost & both wrong & saved & EM lost & R@1 & q/s \\\\",
        "1 & -- & 0 & 37.50 & 2 & 3 & 2 & 1 & +25.00 & 37.50 & 4 \\\\",
        "4 & 0.13 & 0 & 62.50 & 5 & 0 & 3 & 0 & $\\pm$0.00 & 100.00 & 3 \\\\",
        "4 & -- & 0 & 62.50 & 5 & 0 & 3 & 0 & $\\pm$0.00 & 100.00 & 2 \\\\",
      ]
    ) assert(tex.split("\n").includes(line), `${line}\n${tex}`);
    // The charts: its own line (series) named in full in the legends, its point's label and title.
    const html = Deno.readTextFileSync(`${dir}/out/report.html`);
    const texts = [...html.matchAll(/>([^<]*)<\/text>/g)].map((m) => m[1]);
    assertEquals(texts.filter((t) => t === "candidates 0, tau 0.13").length, 3);
    assertEquals(texts.filter((t) => t === "nprobe 4, tau 0.13").length, 1);
    assert(html.includes("<title>nprobe 4, tau 0.13, candidates 0\nEM 62.50\n"), "no hover title");
    assertMatch(
      await refusal(dir, `${dir}/tau.json`, [`${dir}/np1.json`]),
      /EXACT is an approximate \(nprobe 4, tau 0\.13, candidates 0\) search, not an exact one/,
    );
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("report --search-error: records without a tau (no probe_tau field, or null as search writes it) give the report of before", async () => {
  const dir = fixture();
  try {
    writeSearch(dir, "np4", SAME, { nprobe: 4, qps: 2 });
    writeSearch(dir, "np2c9", APPROX, { nprobe: 2, candidates: 9, qps: 1 });
    const r = await run(dir, dir, [dir]);
    assert(r.settings.every((s) => !("probe_tau" in s)));
    // The LaTeX table as it was before probe_tau (pinned whole).
    const tex = Deno.readTextFileSync(`${dir}/out/report.tex`);
    const table = [
      "\\begin{tabular}{rrrrrrrrrr}",
      "\\hline",
      "nprobe & cand. & EM & both right & lost & both wrong & saved & EM lost & R@1 & q/s \\\\",
      "\\hline",
      "1 & 0 & 37.50 & 2 & 3 & 2 & 1 & +25.00 & 37.50 & 4 \\\\",
      "4 & 0 & 62.50 & 5 & 0 & 3 & 0 & $\\pm$0.00 & 100.00 & 2 \\\\",
      "2 & 9 & 37.50 & 2 & 3 & 2 & 1 & +25.00 & 37.50 & 1 \\\\",
      "\\hline",
      "\\end{tabular}",
    ].join("\n");
    assert(tex.includes(table), tex);
    const html = Deno.readTextFileSync(`${dir}/out/report.html`);
    assert(!html.includes(", tau "), "a tau in the page");
    // The records as search writes them now, "probe_tau": null: every file the same bytes.
    const before = ["report.json", "report.md", "report.html", "report.tex"].map((f) =>
      Deno.readTextFileSync(`${dir}/out/${f}`)
    );
    Deno.removeSync(`${dir}/out`, { recursive: true });
    writeSearch(dir, "np1", APPROX, { probeTau: null });
    writeSearch(dir, "np4", SAME, { nprobe: 4, qps: 2, probeTau: null });
    writeSearch(dir, "np2c9", APPROX, { nprobe: 2, candidates: 9, qps: 1, probeTau: null });
    assertEquals(JSON.parse(Deno.readTextFileSync(`${dir}/np4.search.json`)).probe_tau, null);
    await run(dir, dir, [dir]);
    const after = ["report.json", "report.md", "report.html", "report.tex"].map((f) =>
      Deno.readTextFileSync(`${dir}/out/${f}`)
    );
    assertEquals(after, before);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("report --search-error refuses: other question ids, EXACT not exact, APPROX not approximate, no record, other vectors, stale or missing top-k", async () => {
  const dir = fixture();
  try {
    const less = { ...APPROX };
    delete less.q8;
    writeSearch(dir, "less", less);
    assertMatch(
      await refusal(dir, `${dir}/exact.json`, [`${dir}/less.json`]),
      /EXACT \(.*exact\.json, 8 questions\) and APPROX \(7 questions\) cover different questions: "q8" is answered by EXACT only/,
    );
    assertMatch(
      await refusal(dir, `${dir}/np1.json`, [`${dir}/np1.json`]),
      /EXACT is an approximate \(nprobe 1, candidates 0\) search, not an exact one/,
    );
    assertMatch(
      await refusal(dir, `${dir}/exact.json`, [`${dir}/exact.json`]),
      /APPROX is an exact search: an approximate one \(ivf-pq\) is compared/,
    );
    Deno.writeTextFileSync(`${dir}/bare.json`, JSON.stringify({ q1: "alpha" }));
    assertMatch(
      await refusal(dir, `${dir}/exact.json`, [`${dir}/bare.json`]),
      /no search record bare\.search\.json beside it/,
    );
    writeSearch(dir, "other", APPROX, { content: { ...CONTENT, "vectors.f32": "ef".repeat(32) } });
    assertMatch(
      await refusal(dir, `${dir}/exact.json`, [`${dir}/other.json`]),
      /searched other phrase vectors than EXACT/,
    );
    writeSearch(dir, "stale", APPROX);
    Deno.writeTextFileSync(
      `${dir}/stale.json`,
      JSON.stringify({ ...JSON.parse(Deno.readTextFileSync(`${dir}/stale.json`)), q3: "delta" }),
    );
    assertMatch(
      await refusal(dir, `${dir}/exact.json`, [`${dir}/stale.json`]),
      /question "q3": rank 1 is "sixty" but "delta" in .*stale\.json: a stale top-k file/,
    );
    writeSearch(dir, "notopk", APPROX, { topk: false });
    assertMatch(
      await refusal(dir, `${dir}/exact.json`, [`${dir}/notopk.json`]),
      /a search without top-k records: recall@k needs them/,
    );
    writeSearch(dir, "exact2", EXACT, { mode: "exact" });
    assertMatch(
      await refusal(dir, dir, [`${dir}/np1.json`]),
      /EXACT: 2 exact searches .*: name one/,
    );
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("report --search-error on the command line: a refusal is one line and exit 2, nothing written; a usage error too", async () => {
  const dir = fixture();
  try {
    const less = { ...APPROX };
    delete less.q2;
    writeSearch(dir, "less", less);
    const cases: [string[], RegExp][] = [
      [
        [`${dir}/exact.json`, `${dir}/less.json`],
        /^report: .*less\.json: EXACT .* cover different questions: "q2" is answered by EXACT only$/,
      ],
      [
        [`${dir}/np1.json`, `${dir}/np1.json`],
        /^report: .*np1\.search\.json: EXACT is an approximate .* not an exact one .*\)$/,
      ],
      [[`${dir}/exact.json`], /^report: --search-error takes EXACT and at least one APPROX/],
    ];
    for (const [ops, want] of cases) {
      const r = await runStage("pipeline/report.ts", [
        "--search-error",
        ...ops,
        "--out",
        `${dir}/out`,
      ]);
      assertEquals(r.code, 2, r.stderr);
      const lines = r.stderr.trimEnd().split("\n");
      assertEquals(lines.length, 1, r.stderr);
      assertMatch(lines[0], want);
      assertEquals([...Deno.readDirSync(dir)].some((e) => e.name.startsWith("out")), false);
    }
    // The same operands that work: exit 0, the folder written.
    const ok = await runStage("pipeline/report.ts", [
      "--search-error",
      `${dir}/exact.json`,
      `${dir}/np1.json`,
      "--out",
      `${dir}/out`,
    ]);
    assertEquals(ok.code, 0, ok.stderr);
    assertMatch(ok.stdout, /^report: 0 systems, search error of 1 approximate searches → /);
    const json = JSON.parse(Deno.readTextFileSync(`${dir}/out/report.json`));
    assertEquals(json.search_error.settings[0].cells.lost, 3);
    assertEquals(json.datasets, []);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
