/**
 * Tests of the harnesses' answers in (`io/predictions_harness.ts`,
 * `io/predictions_match.ts`): the logs `tests/fixtures/make_harness_logs.py`
 * writes for two made-up systems on the small SQuAD set (lm-evaluation-harness
 * samples of a `squad` task, matched by the doc's id, and of an `nq_open`
 * task, matched by `doc_id`; OpenCompass predictions, matched by position)
 * score as their `{id: answer}` files do, in `evaluate`, `report` and a run's
 * eval task; the harness's logged `exact_match` is set beside the official EM;
 * every broken log is refused with the line naming its first mismatch.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals } from "../_assert.ts";
import { python, ROOT, runStage } from "../_util.ts";
import {
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
