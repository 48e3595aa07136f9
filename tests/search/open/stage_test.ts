/**
 * Tests of `search/open/stage.ts` called as a library: `searchStage` on a
 * small IVF-PQ index answers every question with the predictions and top-k
 * records the `search` command writes for the same flags (byte for byte),
 * and `writeSearchRecord` writes the record the command writes, field for
 * field and in the same order, but for its times and the paths named.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import { parseSearchRecord } from "../../../search/open/record.ts";
import { searchFormat, searchStage, writeSearchRecord } from "../../../search/open/stage.ts";
import { assert, assertEquals } from "../../_assert.ts";
import { numpyDumps, ok, records, smallIvfIndex } from "../_stages.ts";

/** The fields of a record that are timings or depend on the process. */
const TIMINGS = ["seconds", "questions_per_second", "peak_rss_bytes", "cpu_seconds"];

Deno.test("searchStage: as a library, the command's answers and record", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-search-stage-" });
  try {
    await numpyDumps(tmp, 12);
    const ix = `${tmp}/ivf`;
    await smallIvfIndex(tmp, ix);
    const data = `${tmp}/data.json`, qe = `${tmp}/question_emb`;
    const questions = JSON.parse(Deno.readTextFileSync(data)).data
      .flatMap((a: { paragraphs: { qas: unknown[] }[] }) => a.paragraphs)
      .reduce((n: number, p: { qas: unknown[] }) => n + p.qas.length, 0);
    assert(questions > 0);

    assertEquals(await Effect.runPromise(searchFormat(data, undefined)), "squad");
    const opts = {
      indexDir: ix,
      data,
      questionEmb: qe,
      predictions: `${tmp}/lib.json`,
      topkOut: `${tmp}/lib.topk.ndjson`,
      topK: 3,
      nprobe: 3,
      threads: 2,
    };
    const done: number[] = [];
    const started = performance.now();
    const r = await Effect.runPromise(searchStage({ ...opts, onProgress: (n) => done.push(n) }));
    assertEquals(
      { questions: r.questions, answered: r.answered, missing: r.missing },
      { questions, answered: questions, missing: 0 },
    );
    assertEquals(r.header?.kind, "ivf-pq");
    assertEquals(r.phrases, r.header?.phrases);
    assert(r.load >= 0 && r.search > 0, JSON.stringify(r));
    assert(r.searchCpu === null || r.searchCpu >= 0);
    assertEquals(done.at(-1), questions);

    // The command, same flags: the same predictions and top-k records.
    await ok("pipeline/search.ts", [
      data,
      ix,
      qe,
      `${tmp}/cmd.json`,
      "--top-k",
      "3",
      "--topk-out",
      `${tmp}/cmd.topk.ndjson`,
      "--nprobe",
      "3",
      "--threads",
      "2",
    ]);
    const lib = Deno.readTextFileSync(`${tmp}/lib.json`);
    assertEquals(lib, Deno.readTextFileSync(`${tmp}/cmd.json`));
    assertEquals(
      Deno.readTextFileSync(`${tmp}/lib.topk.ndjson`),
      Deno.readTextFileSync(`${tmp}/cmd.topk.ndjson`),
    );
    // The first prediction is the first question's rank-1 phrase.
    const [first, answer] = Object.entries(JSON.parse(lib))[0] as [string, string];
    const top = records(`${tmp}/lib.topk.ndjson`).find((t) => t.id === first && t.rank === 1);
    assert(answer !== "" && top !== undefined && top.phrase === answer, `${first}: ${answer}`);

    // The record: the command's, but for the times and the paths of its outputs.
    await Effect.runPromise(writeSearchRecord({ ...opts, started }, r));
    const got = parseSearchRecord(
      Deno.readTextFileSync(`${tmp}/lib.search.json`),
      "lib.search.json",
    );
    const want = parseSearchRecord(
      Deno.readTextFileSync(`${tmp}/cmd.search.json`),
      "cmd.search.json",
    );
    assertEquals(Object.keys(got), Object.keys(want));
    assertEquals(got.files, {
      predictions: `${tmp}/lib.json`,
      topk: `${tmp}/lib.topk.ndjson`,
      rows: null,
    });
    const rest = (x: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(x).filter(([k]) => k !== "files" && !TIMINGS.includes(k)));
    assertEquals(rest({ ...got }), rest({ ...want }));
    assertEquals(
      [got.mode, got.nprobe, got.candidates, got.top_k, got.threads, got.memory_budget],
      ["approximate", 3, 0, 3, 2, null],
    );
    assertEquals([got.index.kind, got.index.nlist, got.index.bpv], ["ivf-pq", 5, 8]);
    assertEquals([got.questions, got.answered, got.missing], [questions, questions, 0]);
    assert(got.seconds.total >= got.seconds.search, JSON.stringify(got.seconds));

    // Predictions to stdout: no record.
    Deno.removeSync(`${tmp}/lib.search.json`);
    await Effect.runPromise(writeSearchRecord({ ...opts, predictions: "-", started }, r));
    const recordsNow = [...Deno.readDirSync(tmp)].map((e) => e.name)
      .filter((n) => n.endsWith(".search.json"));
    assertEquals(recordsNow, ["cmd.search.json"]);

    // Not an index: the stage fails with the reader's error, nothing written.
    const exit = await Effect.runPromiseExit(
      searchStage({ ...opts, indexDir: `${tmp}/context_emb`, predictions: `${tmp}/no.json` }),
    );
    assert(Exit.isFailure(exit));
    assert(String(exit.cause).includes("context_emb"), String(exit.cause));
    assert(!Deno.readDirSync(tmp).some((e) => e.name.startsWith("no.")));
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});
