/**
 * Tests of Hub Parquet splits in (`io/datasets/parquet.ts`): the committed
 * fixtures of `tests/fixtures/parquet/` (written by
 * `tests/fixtures/make_parquet.py` with pyarrow from the bundled dev set, in
 * the Hub's column layouts) read as the same records as their JSON, split to
 * the same bytes, scored alike; every Hub schema read; the codecs; a folder
 * of shards; and each bad file refused with its one line.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { assertEquals } from "../../_assert.ts";
import { python, ROOT, runStage } from "../../_util.ts";
import { openSource } from "../../../io/source.ts";
import { readCorpus, readQuestions } from "../../../io/datasets/read.ts";
import type { DatasetOptions } from "../../../io/datasets/read.ts";
import type { CorpusPassage, QaRecord } from "../../../io/datasets/types.ts";
import { split } from "../../../io/squad_split.ts";
import { evaluate } from "../../../metrics/evaluate.ts";

const PQ = `${ROOT}/tests/fixtures/parquet`;
const TMP = await Deno.makeTempDir({ prefix: "parquet_test_" });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(TMP, { recursive: true });
  } catch { /* already gone */ }
});

const questions = (path: string, opts: DatasetOptions = {}): Promise<QaRecord[]> =>
  Effect.runPromise(Stream.runCollect(readQuestions(path, opts))).then((c) => [...c]);
const corpus = (path: string): Promise<CorpusPassage[]> =>
  Effect.runPromise(Stream.runCollect(readCorpus(path))).then((c) => [...c]);
const formatOf = async (path: string): Promise<string> => {
  let told = "";
  await questions(path, { onFormat: (f) => (told = f) }).catch(() => {});
  return told;
};
const failure = (p: Promise<unknown>): Promise<string> =>
  p.then(() => "no failure", (e) => String(e));

async function splitBytes(data: string): Promise<[string, string]> {
  const dir = await Deno.makeTempDir({ dir: TMP });
  await Effect.runPromise(split({ data, context: `${dir}/c.json`, question: `${dir}/q.json` }));
  return [await Deno.readTextFile(`${dir}/c.json`), await Deno.readTextFile(`${dir}/q.json`)];
}

Deno.test("parquet: a squad split reads as its JSON, in every codec and as shards", async () => {
  const json = await questions(`${PQ}/squad_small.json`);
  assertEquals(json.length, 65);
  assertEquals(json[0].id, "56be4db0acb8001400a502ec");
  for (const f of ["squad_small.parquet", "squad_small_zstd.parquet", "squad_small_gzip.parquet"]) {
    assertEquals(await formatOf(`${PQ}/${f}`), "squad", f);
    assertEquals(await questions(`${PQ}/${f}`), json, f);
  }
  // Three shards, cut in the middle of a paragraph: one split, grouped as the JSON.
  assertEquals(await questions(`${PQ}/squad_shards`), json);
});

Deno.test("parquet: split writes the same bytes as from the JSON (v1.1, v2.0, shards)", async () => {
  const v1 = await splitBytes(`${PQ}/squad_small.json`);
  assertEquals(v1[0].startsWith('{"data": [{"title": "Super_Bowl_50", "paragraphs": ['), true);
  assertEquals(await splitBytes(`${PQ}/squad_small.parquet`), v1);
  assertEquals(await splitBytes(`${PQ}/squad_shards`), v1);
  const v2 = await splitBytes(`${PQ}/squad_v2_small.json`);
  assertEquals(v2[1].startsWith('{"version": "v2.0", "data": ['), true);
  assertEquals(await splitBytes(`${PQ}/squad_v2_small.parquet`), v2);
});

Deno.test("parquet: squad_v2 is told by its questions without answers and scored by v2.0", async () => {
  assertEquals(await formatOf(`${PQ}/squad_v2_small.parquet`), "squad2");
  const qs = await questions(`${PQ}/squad_v2_small.parquet`);
  assertEquals(qs.filter((q) => q.noAnswer).length, 21);
  assertEquals(qs, await questions(`${PQ}/squad_v2_small.json`));
  // Every answerable question right, the no-answer ones answered (so wrong).
  const preds = new Map(qs.map((q) => [q.id, q.answers[0] ?? "Denver"]));
  for (const data of ["squad_v2_small.json", "squad_v2_small.parquet"]) {
    const r = await Effect.runPromise(evaluate({ data: `${PQ}/${data}`, predictions: preds }));
    assertEquals(r.rules, "v2.0", data);
    assertEquals((r.result as { exact: number }).exact, (100 * (65 - 21)) / 65, data);
  }
});

Deno.test("parquet: v1.1 scores and the official stdout are those of the JSON", async () => {
  const qs = await questions(`${PQ}/squad_small.json`);
  const preds = new Map(qs.map((q, i) => [q.id, i % 3 === 0 ? "Denver" : q.answers[0]]));
  const json = await Effect.runPromise(
    evaluate({ data: `${PQ}/squad_small.json`, predictions: preds }),
  );
  const pq = await Effect.runPromise(
    evaluate({ data: `${PQ}/squad_small.parquet`, predictions: preds }),
  );
  // What bench/reference/evaluate_v1.py prints for these predictions.
  assertEquals(json.stdout, '{"exact_match": 66.15384615384616, "f1": 69.23076923076923}');
  assertEquals(pq.stdout, json.stdout);
  assertEquals(pq.messages, []);
});

Deno.test("parquet: the open-domain Hub schemas (nq_open, trivia_qa, web_questions)", async () => {
  const squad = await questions(`${PQ}/squad_small.json`);
  const nq = await questions(`${PQ}/nq_open.parquet`);
  assertEquals(await formatOf(`${PQ}/nq_open.parquet`), "open");
  assertEquals(
    nq.map((q) => [q.id, q.question, q.answers]),
    squad.map((q, i) => [String(i), q.question, q.answers]),
  );
  const tq = await questions(`${PQ}/trivia_qa.parquet`);
  assertEquals(tq.length, 65);
  assertEquals([tq[1].id, tq[1].question, tq[1].answers], ["tc_1", squad[1].question, [
    "Carolina Panthers",
  ]]);
  const wq = await questions(`${PQ}/web_questions.parquet`);
  assertEquals(
    wq.map((q) => q.answers.length <= 2 && q.id === String(wq.indexOf(q))),
    wq.map(() => true),
  );
  assertEquals(wq[64].question, squad[64].question);
});

Deno.test("parquet: mrqa rows grouped by context; a passage corpus; a squad split's paragraphs", async () => {
  assertEquals(await formatOf(`${PQ}/mrqa.parquet`), "mrqa");
  const squad = await questions(`${PQ}/squad_small.json`);
  const mrqa = await questions(`${PQ}/mrqa.parquet`);
  assertEquals(
    mrqa.map((q) => [q.id, q.question, q.answers, q.context]),
    squad.map((q) => [q.id, q.question, q.answers, q.context]),
  );
  assertEquals(new Set(mrqa.map((q) => q.paragraphId)).size, 4);
  const ps = await corpus(`${PQ}/passages.parquet`);
  assertEquals(ps.length, 4);
  assertEquals(ps, await corpus(`${PQ}/squad_small.json`));
  assertEquals(await corpus(`${PQ}/squad_small.parquet`), ps);
});

Deno.test("parquet: another schema is generic JSONL: a field map reads it", async () => {
  assertEquals(
    await failure(questions(`${PQ}/generic.parquet`)),
    `UsageError: ${PQ}/generic.parquet: a generic jsonl file needs a field map ({question, answers, id, ...})`,
  );
  const qs = await questions(`${PQ}/generic.parquet`, {
    fields: { question: "prompt", id: "qid", answers: "target" },
  });
  const squad = await questions(`${PQ}/squad_small.json`);
  assertEquals(
    qs.map((q) => [q.id, q.question, q.answers]),
    squad.slice(0, 5).map((q, i) => [String(10 + i), q.question, q.answers]),
  );
});

Deno.test("parquet: a foreign, truncated, corrupt or brotli file, mixed shards: one line each", async () => {
  const cases: [string, string][] = [
    ["foreign.parquet", "not a Parquet file (no PAR1 magic at its start)"],
    [
      "truncated.parquet",
      "truncated Parquet file (no PAR1 magic at its end: the footer is missing)",
    ],
    ["corrupt.parquet", "row group 1: corrupt Parquet data (thrift unhandled type: 15)"],
    [
      "squad_small_brotli.parquet",
      "row group 0: Parquet compression BROTLI is not read (snappy, gzip, zstd are)",
    ],
    // Its first row group says 3 rows: read as it says, 4 questions would be lost.
    [
      "row_counts.parquet",
      'row group 0: corrupt Parquet footer (it says 3 rows, but its column "id" holds 7 values)',
    ],
    // Not U+FFFD in its place: the JSON readers refuse such bytes too.
    ["bad_utf8.parquet", 'row 30: column "question" is not valid UTF-8 text'],
    // A key column null: named by the row, not by where it lands in the text.
    ["null_id.parquet", 'row 30: column "id" is null'],
    ["nq_null_question.parquet", 'row 7: column "question" is null'],
    // A fault the JSON lines reader finds (an answer list holding a null): named by the row too.
    ["nq_null_answer.parquet", 'row 9 question "9": "answer" is not a list of strings'],
    // MRQA: a line is a run of rows of one context, named by them.
    [
      "mrqa_bad_span.parquet",
      'rows 55 to 59 question "5733a5f54776f41900660f48": detected answer 0: "char_spans" span 0 ' +
      "[100000, 100004] is outside the context (522 characters)",
    ],
  ];
  for (const [f, line] of cases) {
    assertEquals(await failure(questions(`${PQ}/${f}`)), `${PQ}/${f}: ${line}`, f);
  }
  // Shards: the shard and its row, not the line of the text they make together; a repeated
  // id names both places.
  const shards = `${PQ}/passages_shards`;
  assertEquals(
    await failure(corpus(shards)),
    `${shards}/train-00001-of-00002.parquet: row 2 passage "Super_Bowl_50_1": ` +
      `duplicate id (first at ${shards}/train-00000-of-00002.parquet row 1)`,
  );
  const nq2 = await Deno.makeTempDir({ dir: TMP });
  await Deno.copyFile(`${PQ}/nq_open.parquet`, `${nq2}/v-00000-of-00002.parquet`);
  await Deno.copyFile(`${PQ}/nq_null_answer.parquet`, `${nq2}/v-00001-of-00002.parquet`);
  const nqRows = (await questions(`${PQ}/nq_open.parquet`)).length;
  assertEquals(
    await failure(questions(nq2)),
    `${nq2}/v-00001-of-00002.parquet: row 9 question "${
      nqRows + 9
    }": "answer" is not a list of strings`,
  );
  const mixed = await Deno.makeTempDir({ dir: TMP });
  await Deno.copyFile(`${PQ}/nq_open.parquet`, `${mixed}/a-00000-of-00002.parquet`);
  await Deno.copyFile(`${PQ}/squad_small.parquet`, `${mixed}/a-00001-of-00002.parquet`);
  assertEquals(
    await failure(questions(mixed)),
    `${mixed}/a-00001-of-00002.parquet: a squad shard in a nq_open split (${mixed}/a-00000-of-00002.parquet)`,
  );
});

Deno.test("parquet: a footer's row counts that do not add up, a string too long: named by group and row", async () => {
  const good = await Deno.readFile(`${PQ}/squad_small.parquet`);
  const dir = await Deno.makeTempDir({ dir: TMP });
  // The file's own row count (a varint 130 = 65 rows: 0x82 0x01) edited to 66 in a copy:
  // its row groups' 65 rows no longer add up to it.
  const flen = new DataView(good.buffer).getUint32(good.length - 8, true);
  const footer = good.subarray(good.length - 8 - flen, good.length - 8);
  const at = footer.findIndex((b, i) =>
    b === 0x82 && footer[i + 1] === 0x01 && i > 0 &&
    (footer[i - 1] & 0x0f) === 6
  );
  assertEquals(at > 0, true);
  const forged = good.slice();
  forged[good.length - 8 - flen + at] = 0x84;
  await Deno.writeFile(`${dir}/total.parquet`, forged);
  assertEquals(
    await failure(questions(`${dir}/total.parquet`)),
    `${dir}/total.parquet: corrupt Parquet footer (its row groups hold 65 rows, but it says 66)`,
  );
  // Strings longer than the readers read (17 MiB): the row and column, not a byte of the text.
  await python(["tests/fixtures/make_parquet.py", "--long", dir]);
  assertEquals(
    await failure(questions(`${dir}/squad_long.parquet`)),
    `${dir}/squad_long.parquet: row 30: column "context" is a string of 17825792 bytes as JSON ` +
      "text, longer than 16777216 (phraseval reads no string, as no line, longer than 16 MiB)",
  );
  const nq = await runStage("pipeline/evaluate.ts", [
    `${dir}/nq_open_long.parquet`,
    `${dir}/p.json`,
  ]);
  assertEquals(nq.code, 2);
  assertEquals(
    nq.stderr.trim(),
    `evaluate: ${dir}/nq_open_long.parquet: row 7: 17825849 bytes as a JSON line, longer than ` +
      "16777216 (phraseval reads no line longer than 16 MiB)",
  );
});

Deno.test("parquet: the commands: evaluate prints the JSON's line, a bad file exits 2 with one line", async () => {
  const dir = await Deno.makeTempDir({ dir: TMP });
  const qs = await questions(`${PQ}/squad_small.json`);
  await Deno.writeTextFile(
    `${dir}/pred.json`,
    JSON.stringify(Object.fromEntries(qs.map((q) => [q.id, q.answers[0]]))),
  );
  const ok = await runStage("pipeline/evaluate.ts", [
    `${PQ}/squad_small.parquet`,
    `${dir}/pred.json`,
  ]);
  assertEquals([ok.code, ok.stdout.trim()], [0, '{"exact_match": 100.0, "f1": 100.0}']);
  // A folder of shards is read as one split by evaluate too (it was refused as "a folder, not a
  // regular file"); an empty folder still is.
  const shards = await runStage("pipeline/evaluate.ts", [`${PQ}/squad_shards`, `${dir}/pred.json`]);
  assertEquals([shards.code, shards.stdout.trim()], [0, '{"exact_match": 100.0, "f1": 100.0}']);
  const empty = await Deno.makeTempDir({ dir: TMP });
  const none = await runStage("pipeline/evaluate.ts", [empty, `${dir}/pred.json`]);
  assertEquals([none.code, none.stderr.trim()], [
    2,
    `evaluate: ${empty}: is a folder, not a regular file`,
  ]);
  const bad = await runStage("pipeline/split.ts", [
    `${PQ}/corrupt.parquet`,
    `${dir}/c.json`,
    `${dir}/q.json`,
  ]);
  assertEquals(bad.code, 2);
  assertEquals(
    bad.stderr.trim(),
    `split: ${PQ}/corrupt.parquet: row group 1: corrupt Parquet data (thrift unhandled type: 15)`,
  );
  assertEquals([...Deno.readDirSync(dir)].map((e) => e.name), ["pred.json"]);
});

/** The text a Parquet file opens as, or the line its reading fails with. */
async function openedAs(path: string): Promise<string> {
  const src = await Effect.runPromise(openSource(path));
  return await new Response(src.stream).text().catch((e) =>
    `fails: ${String(e).replace(path, "")}`
  );
}

Deno.test("fixtures: make_parquet.py writes the committed Parquet fixtures", async () => {
  const out = await Deno.makeTempDir({ dir: TMP });
  await python(["tests/fixtures/make_parquet.py", "--out", out]);
  const names = (dir: string) =>
    [...Deno.readDirSync(dir)].map((e) => e.name + (e.isDirectory ? "/" : "")).sort();
  assertEquals(names(out), names(PQ));
  assertEquals(names(`${out}/squad_shards`), names(`${PQ}/squad_shards`));
  for (const name of names(PQ)) {
    if (name.endsWith(".json")) {
      assertEquals(
        await Deno.readTextFile(`${out}/${name}`),
        await Deno.readTextFile(`${PQ}/${name}`),
      );
    } else {
      const p = name.replace(/\/$/, "");
      assertEquals(await openedAs(`${out}/${p}`), await openedAs(`${PQ}/${p}`), name);
    }
  }
  assertEquals((await openedAs(`${PQ}/corrupt.parquet`)).startsWith("fails: : row group 1:"), true);
});
