/**
 * A run's `eval` task with BEM: the task's own permission-narrowed process
 * scores BEM in process (no child, no stdout parsing) and writes the same
 * numbers that {@linkcode scoreDataset} returns.
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals } from "../../_assert.ts";
import { DEV_GZ, ROOT, runArgv } from "../../_util.ts";
import { validateRunConfig } from "../../../runs/config/config.ts";
import { ORT_ADDON } from "../../../runs/sandbox/ort.ts";
import { planRun } from "../../../runs/plan/plan.ts";
import { prepareDataset } from "../../../runs/plan/tasks.ts";
import { scoreDataset } from "../../../metrics/evaluate.ts";

const SURROGATE = `${ROOT}/tests/fixtures/bem_surrogate_NOT_BEM.onnx`;

Deno.test("run tasks: eval with BEM in its own narrowed process = scoreDataset in process", async () => {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-tasks-" });
  try {
    const cfg = await Effect.runPromise(validateRunConfig({
      datasets: [{
        abbr: "d",
        path: DEV_GZ,
        reader: { articles: [3, 4] },
        eval: { metrics: ["em", "f1", "bem"], bem: { model: SURROGATE, report: "score" } },
      }],
      models: [{ abbr: "m", encoder: "sparse-pi" }],
    }, `${dir}/cfg.ts`));
    const plan = await Effect.runPromise(planRun(cfg, {
      runDir: `${dir}/run`,
      maxPartitionSize: 1000,
      bemFfi: ORT_ADDON ?? undefined,
    }));
    const evalTask = plan.tasks.find((t) => t.stage === "eval");
    assert(evalTask !== undefined);
    assert(!evalTask.argv.some((a) => a.startsWith("--allow-run")), evalTask.argv.join(" "));
    const arg = (name: string) =>
      evalTask.argv.find((a) => a.startsWith(`--${name}=`))!.slice(name.length + 3);
    // The dataset the prepare task writes, and predictions: each question's first gold
    // answer, or a word of its context for every third one (so EM and BEM differ).
    const prep = `${dir}/prep`;
    await Effect.runPromise(prepareDataset({ data: DEV_GZ, out: prep, articles: [3, 4] }));
    const data = JSON.parse(await Deno.readTextFile(`${prep}/data.json`));
    const pred: Record<string, string> = {};
    let i = 0;
    for (const a of data.data) {
      for (const p of a.paragraphs) {
        for (const q of p.qas) {
          pred[q.id] = i++ % 3 === 0 ? p.context.split(" ")[i % 7] : q.answers[0].text;
        }
      }
    }
    await Deno.mkdir(arg("data").replace(/\/[^/]*$/, ""), { recursive: true });
    await Deno.copyFile(`${prep}/data.json`, arg("data"));
    await Deno.mkdir(arg("pred").replace(/\/[^/]*$/, ""), { recursive: true });
    await Deno.writeTextFile(arg("pred"), JSON.stringify(pred));
    await Deno.mkdir(arg("out").replace(/\/[^/]*$/, ""), { recursive: true });

    const out = await runArgv(evalTask.argv);
    assertEquals(out.code, 0, out.stderr);
    const record = JSON.parse(await Deno.readTextFile(arg("out")));

    const direct = await Effect.runPromise(scoreDataset({
      data: arg("data"),
      predictions: arg("pred"),
      bem: { model: SURROGATE },
    }));
    assert(direct.bem !== undefined);
    assertEquals(record.exact_match, direct.exactMatch);
    assertEquals(record.f1, direct.f1);
    assertEquals(record.bem, direct.bem.bem_score);
    assertEquals(record.bem_summary, { ...direct.bem });
    assertEquals(
      record.total,
      data.data[0].paragraphs.reduce(
        (n: number, p: { qas: unknown[] }) => n + p.qas.length,
        0,
      ),
    );
    assert(record.exact_match > 50 && record.exact_match < 80, String(record.exact_match));
    // The per-question rows of the same pass, next to the predictions, with bem and golds.
    assertEquals(arg("rows"), arg("pred").replace(/\.json$/, ".rows.ndjson"));
    const rows = (await Deno.readTextFile(arg("rows"))).trim().split("\n").map((l) =>
      JSON.parse(l) as { id: string; golds: string[]; em: number; f1: number; bem: number }
    );
    assertEquals(rows.length, record.total);
    assertEquals(rows.map((r) => r.id), Object.keys(pred));
    const mean = (xs: number[]) => (100 * xs.reduce((a, b) => a + b, 0)) / xs.length;
    assertEquals(mean(rows.map((r) => r.em)), record.exact_match);
    assertEquals(mean(rows.map((r) => r.f1)), record.f1);
    assert(Math.abs(mean(rows.map((r) => r.bem)) - record.bem) < 1e-9, String(record.bem));
    assert(rows.every((r) => r.golds.length > 0), "golds in every row");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
