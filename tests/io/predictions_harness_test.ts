/**
 * Tests of the harnesses' answers in (`io/predictions_harness.ts`,
 * `io/predictions_match.ts`): the logs `tests/fixtures/make_harness_logs.py`
 * writes for two made-up systems on the small SQuAD set (lm-evaluation-harness
 * samples of a `squad` task, matched by the doc's id, and of an `nq_open`
 * task, matched by `doc_id`; OpenCompass predictions, matched by position)
 * score as their `{id: answer}` files do, in `evaluate`, `report` and a run's
 * eval task; the harness's logged `exact_match` is set beside the official EM;
 * every broken log is refused with the line naming its first mismatch; invalid
 * UTF-8 is refused (never scored as U+FFFD), a byte-order mark read; an lm-eval
 * first line over the 64 KiB head is still told as lm-eval; an lm-eval line over
 * 16 MiB is refused by its number; Python's `NaN` and `Infinity` literals are
 * read.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals } from "../_assert.ts";
import { python, ROOT, runStage } from "../_util.ts";
import {
  detectPredFormat,
  parsePredFormat,
  predFormatOfHead,
  readHarnessAnswers,
} from "../../io/predictions_harness.ts";
import { resolvePredictions, setQuestions } from "../../io/predictions_match.ts";
import { readPredictions } from "../../io/predictions.ts";
import { evaluate } from "../../metrics/evaluate.ts";
import { resolveInputs } from "../../report/inputs.ts";
import { scoreSystems } from "../../report/systems.ts";
import { harnessComparison } from "../../report/harness.ts";
import { evalPredictions } from "../../runs/plan/tasks.ts";

const DATA = `${ROOT}/tests/fixtures/parquet/squad_small.json`;
const TMP = await Deno.makeTempDir({ prefix: "harness_test_" });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(TMP, { recursive: true });
  } catch { /* already gone */ }
});
const LOGS = `${TMP}/logs`;
await python(["tests/fixtures/make_harness_logs.py", DATA, LOGS]);
const DATE = "2026-12-04T12-00-00.000000";
const lmSquad = (m: string) => `${LOGS}/lm-eval/org__system-${m}/samples_squad_${DATE}.jsonl`;
const lmNq = (m: string) => `${LOGS}/lm-eval-nq/org__system-${m}/samples_nq_open_${DATE}.jsonl`;
const oc = (m: string) =>
  `${LOGS}/opencompass/20261204_120000/predictions/org__system-${m}/squad.json`;
const ids = (m: string) => `${LOGS}/ids/system-${m}.json`;

const score = async (predictions: string | ReadonlyMap<string, string>) =>
  (await Effect.runPromise(evaluate({ data: DATA, predictions }))).stdout;
const resolved = async (predictions: string, predFormat?: string) => (await Effect.runPromise(
  resolvePredictions({ data: DATA, predictions, ...(predFormat ? { predFormat } : {}) }),
));
const refusal = (predictions: string, data = DATA): Promise<string> =>
  Effect.runPromise(resolvePredictions({ data, predictions })).then(
    () => "no refusal",
    (e) => String(e),
  );

Deno.test("harness logs: the format is told from the content, or named", async () => {
  assertEquals((await resolved(lmSquad("a"))).format, "lm-eval");
  assertEquals((await resolved(oc("a"))).format, "opencompass");
  assertEquals((await resolved(ids("a"))).format, "ids");
  assertEquals(predFormatOfHead('{"doc_id": 0, "filtered_resps": ["x"]}\n'), "lm-eval");
  assertEquals(parsePredFormat("OpenCompass"), "opencompass");
  let msg = "";
  try {
    parsePredFormat("helm");
  } catch (e) {
    msg = String(e);
  }
  assertEquals(
    msg,
    'UsageError: unknown prediction format "helm"; the formats: ids, lm-eval, opencompass',
  );
});

Deno.test("harness logs: lm-eval and OpenCompass answers score as their {id: answer} files", async () => {
  for (const m of ["a", "b"]) {
    const want = await score(ids(m));
    const fromIds = await Effect.runPromise(readPredictions(ids(m)));
    for (const log of [lmSquad(m), lmNq(m), oc(m)]) {
      const r = await resolved(log);
      assertEquals(r.predictions, fromIds, log);
      assertEquals(await score(r.predictions), want, log);
    }
  }
  // What bench/reference/evaluate_v1.py prints for system a's answers.
  assertEquals(
    await score(ids("a")),
    '{"exact_match": 73.84615384615384, "f1": 74.87179487179488}',
  );
});

Deno.test("harness logs: the harness's exact_match is kept (lm-eval), matched by the doc's id", async () => {
  const qs = await Effect.runPromise(setQuestions({ data: DATA }));
  const text = await Deno.readTextFile(lmSquad("a"));
  // The lines shuffled: matched by each doc's own id, the same answers.
  const lines = text.trimEnd().split("\n").reverse().join("\n");
  const shuffled = `${TMP}/reversed.jsonl`;
  await Deno.writeTextFile(shuffled, lines + "\n");
  const a = await Effect.runPromise(readHarnessAnswers(lmSquad("a"), "lm-eval", qs));
  const b = await Effect.runPromise(readHarnessAnswers(shuffled, "lm-eval", qs));
  const sorted = (m: Map<string, string>) => [...m].sort(([x], [y]) => x < y ? -1 : 1);
  assertEquals(sorted(b.predictions), sorted(a.predictions));
  assertEquals([a.filter, a.metrics], ["none", ["exact_match"]]);
  const logged = text.trimEnd().split("\n").map((l) => JSON.parse(l).exact_match as number);
  assertEquals(qs.map((q) => a.harnessExact!.get(q.id)), logged);
  // 48 right by the official EM (73.85%), 6 of them not by the harness's exact_match.
  assertEquals(logged.filter((x) => x === 1).length, 42);
});

Deno.test("harness logs: a shuffled, partial or foreign log is refused, naming the first mismatch", async () => {
  const f = (name: string) => `${LOGS}/bad/${name}`;
  assertEquals(
    await refusal(f("shuffled.jsonl")),
    `${
      f("shuffled.jsonl")
    }: line 3 doc_id 3: the doc's question "Where did Super Bowl 50 take place?" is not question "56be4db0acb8001400a502ef"'s "Which NFL team won Super Bowl 50?" (a log of another set, or shuffled)`,
  );
  assertEquals(
    await refusal(f("partial.jsonl")),
    `${
      f("partial.jsonl")
    }: 64 answers for 65 questions: question "57336755d058e614000b5a40" (position 64) has none (a partial log, or one of another set)`,
  );
  assertEquals(
    await refusal(f("other_set.jsonl")),
    `${
      f("other_set.jsonl")
    }: line 1 doc_id 0: the doc's question "Which NFL team represented the AFC at Super Bowl 50? in 1999" is not question "56be4db0acb8001400a502ec"'s "Which NFL team represented the AFC at Super Bowl 50?" (a log of another set, or shuffled)`,
  );
  assertEquals(
    await refusal(f("oc_shuffled.json")),
    `${
      f("oc_shuffled.json")
    }: entry "1": the prompt does not hold question "56be4db0acb8001400a502ed"'s text "Which NFL team represented the NFC at Super Bowl 50?" (a file of another set, or shuffled)`,
  );
  assertEquals(
    await refusal(f("oc_partial.json")),
    `${
      f("oc_partial.json")
    }: 64 answers for 65 questions: question "57336755d058e614000b5a40" (position 64) has none (a partial log, or one of another set)`,
  );
  // A log of a larger set (the doc's id is none of this set's), and {id: answer} named lm-eval.
  const big = `${TMP}/big.jsonl`;
  const line = JSON.parse((await Deno.readTextFile(lmSquad("a"))).split("\n")[0]);
  await Deno.writeTextFile(big, JSON.stringify({ ...line, doc: { ...line.doc, id: "zz" } }) + "\n");
  assertEquals(
    await refusal(big),
    `${big}: line 1 doc_id 0: the doc's id "zz" is not a question of the set`,
  );
  const named = await Effect.runPromise(
    resolvePredictions({ data: DATA, predictions: ids("a"), predFormat: "lm-eval" }),
  ).then(() => "", (e) => String(e));
  assertEquals(named, `${ids("a")}: line 1: not an lm-eval sample (no integer "doc_id")`);
});

Deno.test("harness logs: evaluate prints the {id: answer} line; a bad log exits 2 with one line", async () => {
  const want = await score(ids("b"));
  for (const log of [lmSquad("b"), oc("b")]) {
    const r = await runStage("pipeline/evaluate.ts", [DATA, log]);
    assertEquals([r.code, r.stdout.trim()], [0, want], log);
  }
  const bad = `${LOGS}/bad/partial.jsonl`;
  const r = await runStage("pipeline/evaluate.ts", [DATA, bad, "--pred-format", "lm-eval"]);
  assertEquals(r.code, 2);
  assertEquals(
    r.stderr.trim(),
    `evaluate: ${bad}: 64 answers for 65 questions: question "57336755d058e614000b5a40" (position 64) has none (a partial log, or one of another set)`,
  );
});

Deno.test("harness logs: report takes each model of an lm-eval or OpenCompass folder, with the harness's metric", async () => {
  const lm = await Effect.runPromise(resolveInputs([`${LOGS}/lm-eval`], { data: DATA }));
  assertEquals(lm.map((s) => [s.name, s.predFormat]), [
    ["org__system-a", "lm-eval"],
    ["org__system-b", "lm-eval"],
  ]);
  const ocs = await Effect.runPromise(resolveInputs([`${LOGS}/opencompass`], { data: DATA }));
  assertEquals(ocs.map((s) => [s.name, s.predFormat]), [
    ["org__system-a", "opencompass"],
    ["org__system-b", "opencompass"],
  ]);
  const plain = await Effect.runPromise(
    resolveInputs([`org__system-a=${ids("a")}`, `org__system-b=${ids("b")}`], { data: DATA }),
  );
  const [dl] = await Effect.runPromise(scoreSystems(lm));
  const [dc] = await Effect.runPromise(scoreSystems(ocs));
  const [dp] = await Effect.runPromise(scoreSystems(plain));
  for (let i = 0; i < 2; i++) {
    assertEquals([...dl.systems[i].em], [...dp.systems[i].em]);
    assertEquals([...dc.systems[i].em], [...dp.systems[i].em]);
    assertEquals(dc.systems[i].harness, undefined);
  }
  const h = harnessComparison(dl, 3);
  assertEquals(h.map((x) => [x.name, x.harness_only, x.em_only, x.examples.length]), [
    ["org__system-a", 0, 6, 3],
    ["org__system-b", 0, 13, 3],
  ]);
  assertEquals(h[0].em, dp.systems[0].result.exact_match);
  const ex = h[0].examples[0];
  assertEquals([ex.harness, ex.em], [0, 1]);
  assert(ex.prediction!.startsWith("the "), ex.prediction!);
  assertEquals(harnessComparison(dp, 3), []);
});

Deno.test("harness logs: a run's predictions model copies the checked answers as {id: answer}", async () => {
  const dir = await Deno.makeTempDir({ dir: TMP });
  const r = await Effect.runPromise(
    evalPredictions({ data: DATA, pred: `${dir}/p.json`, from: oc("a"), out: `${dir}/r.json` }),
  );
  assertEquals(
    JSON.parse(await Deno.readTextFile(`${dir}/p.json`)),
    JSON.parse(await Deno.readTextFile(ids("a"))),
  );
  assertEquals(r.exact_match, 73.84615384615384);
  const bad = await Effect.runPromise(
    evalPredictions({
      data: DATA,
      pred: `${dir}/q.json`,
      from: `${LOGS}/bad/oc_partial.json`,
      out: `${dir}/s.json`,
    }),
  ).then(() => "", (e) => String(e));
  assert(bad.includes("64 answers for 65 questions"), bad);
  assertEquals((await Array.fromAsync(Deno.readDir(dir))).map((e) => e.name).sort(), [
    "p.json",
    "r.json",
  ]);
});

/** `text`'s UTF-8 bytes with `bad` put in before its character `at`, and the byte offset of `bad`. */
function spoil(text: string, at: number, bad: readonly number[]): [Uint8Array, number] {
  const enc = new TextEncoder();
  const head = enc.encode(text.slice(0, at));
  const tail = enc.encode(text.slice(at));
  const out = new Uint8Array(head.byteLength + bad.length + tail.byteLength);
  out.set(head);
  out.set(bad, head.byteLength);
  out.set(tail, head.byteLength + bad.length);
  return [out, head.byteLength];
}

Deno.test("harness logs: invalid UTF-8 is refused, naming the lm-eval line or the OpenCompass byte", async () => {
  // lm-eval: a 0xFF byte in line 3's answer (it was read as U+FFFD and scored).
  const text = await Deno.readTextFile(lmSquad("a"));
  const line3 = text.split("\n").slice(0, 2).join("\n").length + 1;
  const answerAt = text.indexOf('"filtered_resps": ["', line3) + '"filtered_resps": ["'.length;
  const [lmBytes, lmAt] = spoil(text, answerAt, [0xff]);
  const lm = `${TMP}/bad_utf8.jsonl`;
  await Deno.writeFile(lm, lmBytes);
  assert(lmAt > 2000, String(lmAt));
  assertEquals(await refusal(lm), `${lm}: line 3: invalid UTF-8 at byte ${lmAt}`);
  const r = await runStage("pipeline/evaluate.ts", [DATA, lm]);
  assertEquals([r.code, r.stdout, r.stderr.trim()], [
    2,
    "",
    `evaluate: ${lm}: line 3: invalid UTF-8 at byte ${lmAt}`,
  ]);
  // OpenCompass: a lead byte with no continuation in entry 2's prediction.
  const ocText = await Deno.readTextFile(oc("a"));
  const entry2 = ocText.indexOf('"2": {');
  const predAt = ocText.indexOf('"prediction": "', entry2) + '"prediction": "'.length;
  const [ocBytes, ocAt] = spoil(ocText, predAt, [0xc3, 0x28]);
  const ocBad = `${TMP}/bad_utf8.json`;
  await Deno.writeFile(ocBad, ocBytes);
  assertEquals(await refusal(ocBad), `${ocBad}: byte ${ocAt}: invalid UTF-8 byte sequence`);
  // Far into a file of two-, three- and four-byte characters (cut across the reads' chunks),
  // the offset is exact, and the same file without the bad byte reads as it is.
  const qs = await Effect.runPromise(setQuestions({ data: DATA }));
  const long = "é€𝄞a".repeat(40_000);
  const obj = JSON.parse(ocText);
  obj["0"].prediction = long + "#end";
  const wide = JSON.stringify(obj, null, 4);
  const ok = `${TMP}/wide.json`;
  await Deno.writeTextFile(ok, wide);
  const read = await Effect.runPromise(readHarnessAnswers(ok, "opencompass", qs));
  assert(read.predictions.get(qs[0].id) === long + "#end", "the wide prediction read as written");
  const [wideBytes, wideAt] = spoil(wide, wide.indexOf("#end"), [0xf0, 0x9d, 0x41]);
  assert(wideAt > 400_000, String(wideAt));
  const wideBad = `${TMP}/wide_bad.json`;
  await Deno.writeFile(wideBad, wideBytes);
  assertEquals(
    await Effect.runPromise(Effect.flip(readHarnessAnswers(wideBad, "opencompass", qs))).then(
      String,
    ),
    `${wideBad}: byte ${wideAt}: invalid UTF-8 byte sequence`,
  );
});

Deno.test("harness logs: a byte-order mark and CRLF line ends are read as before", async () => {
  const want = await Effect.runPromise(readPredictions(ids("a")));
  const text = await Deno.readTextFile(lmSquad("a"));
  const lm = `${TMP}/bom_crlf.jsonl`;
  await Deno.writeTextFile(lm, "\uFEFF" + text.replaceAll("\n", "\r\n"));
  const ocBom = `${TMP}/bom.json`;
  await Deno.writeTextFile(ocBom, "\uFEFF" + await Deno.readTextFile(oc("a")));
  for (const [log, format] of [[lm, "lm-eval"], [ocBom, "opencompass"]]) {
    const r = await resolved(log);
    assertEquals([r.format, r.predictions], [format, want], log);
  }
});

Deno.test("harness logs: Python's NaN and Infinity (json.dumps writes them) read as null", async () => {
  const want = await Effect.runPromise(readPredictions(ids("a")));
  // lm-eval: a logged metric NaN on one line, a doc field Infinity on another (not in a string).
  const lines = (await Deno.readTextFile(lmSquad("a"))).trimEnd().split("\n");
  const first = JSON.parse(lines[0]);
  assertEquals(typeof first.exact_match, "number");
  lines[0] = lines[0].replace(/"exact_match": [0-9.]+/, '"exact_match": NaN');
  lines[1] = lines[1].replace('"doc": {', '"doc": {"score": -Infinity, "note": "NaN Infinity", ');
  assert(lines[0].includes("NaN") && lines[1].includes("-Infinity"));
  const lm = `${TMP}/nan.jsonl`;
  await Deno.writeTextFile(lm, lines.join("\n") + "\n");
  const r = await resolved(lm);
  assertEquals([r.format, r.predictions], ["lm-eval", want]);
  // OpenCompass: a gold field NaN.
  const text = await Deno.readTextFile(oc("a"));
  const ocNan = `${TMP}/nan_oc.json`;
  await Deno.writeTextFile(ocNan, text.replace(/"gold": ("[^"]*"|\[[^\]]*\])/, '"gold": NaN'));
  assert((await Deno.readTextFile(ocNan)).includes('"gold": NaN'));
  const o = await resolved(ocNan);
  assertEquals([o.format, o.predictions], ["opencompass", want]);
  // Not JSON for another reason: the line and the parser's own message.
  await Deno.writeTextFile(`${TMP}/nan_bad.jsonl`, lines[0] + "\n" + lines[1].slice(0, -1) + "\n");
  const bad = await refusal(`${TMP}/nan_bad.jsonl`);
  assert(bad.includes("nan_bad.jsonl: line 2: invalid JSON ("), bad);
});

Deno.test("harness logs: an lm-eval first line over the 64 KiB head is told as lm-eval", async () => {
  const lines = (await Deno.readTextFile(lmSquad("a"))).trimEnd().split("\n");
  const first = JSON.parse(lines[0]);
  first.doc.context = "z".repeat(100_000) + first.doc.context;
  const path = `${TMP}/long_first.jsonl`;
  await Deno.writeTextFile(path, "\n\n" + [JSON.stringify(first), ...lines.slice(1)].join("\n"));
  assert(JSON.stringify(first).length > 64 * 1024);
  assertEquals(await Effect.runPromise(detectPredFormat(path)), "lm-eval");
  const r = await resolved(path);
  assertEquals([r.format, r.predictions], [
    "lm-eval",
    await Effect.runPromise(readPredictions(ids("a"))),
  ]);
  // An {id: answer} file of one long line is still one; so is a .gz of the lm-eval log.
  const one = `${TMP}/one_line.json`;
  await Deno.writeTextFile(one, JSON.stringify({ q1: "x".repeat(100_000), q2: "y" }));
  assertEquals(await Effect.runPromise(detectPredFormat(one)), "ids");
  const gz = `${TMP}/long_first.jsonl.gz`;
  const file = await Deno.open(path);
  await Deno.writeFile(gz, file.readable.pipeThrough(new CompressionStream("gzip")));
  assertEquals(await Effect.runPromise(detectPredFormat(gz)), "lm-eval");
});

Deno.test("harness logs: an lm-eval line over 16 MiB is refused by its number, read no further", async () => {
  const lines = (await Deno.readTextFile(lmSquad("a"))).trimEnd().split("\n");
  const huge = (line: string) => {
    const rec = JSON.parse(line);
    rec.doc.context = "z".repeat(17 * 1024 * 1024);
    return JSON.stringify(rec);
  };
  // Line 2 over the bound, in a gzip stream (the file is 17 KiB).
  const gz = `${TMP}/huge_line2.jsonl.gz`;
  const text = [lines[0], huge(lines[1]), ...lines.slice(2)].join("\n") + "\n";
  await Deno.writeFile(gz, new Blob([text]).stream().pipeThrough(new CompressionStream("gzip")));
  assert((await Deno.stat(gz)).size < 100_000);
  assertEquals(await refusal(gz), `${gz}: line 2: line longer than 16777216 bytes`);
  // Line 1 over the bound, a plain file, its format told from its first 16 MiB.
  const plain = `${TMP}/huge_line1.jsonl`;
  await Deno.writeTextFile(plain, [huge(lines[0]), ...lines.slice(1)].join("\n") + "\n");
  assertEquals(await Effect.runPromise(detectPredFormat(plain)), "lm-eval");
  assertEquals(await refusal(plain), `${plain}: line 1: line longer than 16777216 bytes`);
  const qs = await Effect.runPromise(setQuestions({ data: DATA }));
  assertEquals(
    await Effect.runPromise(Effect.flip(readHarnessAnswers(plain, "lm-eval", qs))).then(String),
    `${plain}: line 1: line longer than 16777216 bytes`,
  );
  await Deno.remove(gz);
  await Deno.remove(plain);
});
