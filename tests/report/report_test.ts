/**
 * `report/`: on three simple deterministic systems over the 10,570 dev
 * questions (`_systems.ts`), every number in report.json equals the metrics
 * fold's EM/F1 (`evaluate`, its per-question rows) and the outputs of the
 * `metrics/stats` functions on them; identical prediction files differ by 0
 * with p = 1; BEM from rows next to a full folder's pred.json; a run folder's
 * systems; the HTML's charts and its freedom from URLs.
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals } from "../_assert.ts";
import { DEV_GZ } from "../_util.ts";
import { evaluate } from "../../metrics/evaluate.ts";
import { mcnemarPaired, pairedBootstrap, pairedRandomization } from "../../metrics/stats/mod.ts";
import { answerLengthBin, questionType, report, type ReportJson } from "../../report/mod.ts";
import { SYSTEMS, writeDevSubset, writeDevSystems } from "./_systems.ts";

const TMP = await Deno.makeTempDir({ prefix: "phraseval-report-test-" });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(TMP, { recursive: true });
  } catch { /* gone */ }
});
const PREDS = await writeDevSystems(TMP);

interface Row {
  id: string;
  em: number;
  f1: number;
}

/** The per-question rows of `evaluate --per-question`, and its totals. */
async function officialRows(pred: string, data = DEV_GZ) {
  const rowsFile = `${pred}.rows.tmp.ndjson`;
  const r = await Effect.runPromise(evaluate({ data, predictions: pred, perQuestion: rowsFile }));
  const rows = (await Deno.readTextFile(rowsFile)).trim().split("\n").map((l) =>
    JSON.parse(l) as Row
  );
  await Deno.remove(rowsFile);
  return { result: r.result as { exact_match: number; f1: number }, rows };
}

const readJson = (p: string) => JSON.parse(Deno.readTextFileSync(p)) as ReportJson;

Deno.test("report: every number equals the metrics fold's EM/F1 and the stats functions' outputs (3 systems × dev)", async () => {
  const out = `${TMP}/three`;
  const t0 = performance.now();
  const r = await Effect.runPromise(report({
    inputs: SYSTEMS.map((n, i) => `${n}=${PREDS[i]}`),
    data: DEV_GZ,
    out,
    baseline: "firstCaps",
  }));
  console.log(
    `report on 3 systems × dev: ${((performance.now() - t0) / 1000).toFixed(2)} s in process (${
      JSON.stringify(r.timings)
    })`,
  );
  const json = readJson(`${out}/report.json`);
  assertEquals(json.options.resamples, 1000);
  assertEquals(json.options.seed, 0);
  assertEquals(json.options.shuffles, 10000);
  assertEquals(json.datasets.length, 1);
  const ds = json.datasets[0];
  assertEquals(ds.questions, 10570);
  assertEquals(ds.baseline, "firstCaps");
  const off = await Promise.all(PREDS.map((p) => officialRows(p)));
  const em = off.map((o) => Float64Array.from(o.rows, (x) => x.em));
  const f1 = off.map((o) => Float64Array.from(o.rows, (x) => x.f1));
  // EM/F1: the official totals, to the bit.
  for (let s = 0; s < 3; s++) {
    assertEquals(ds.systems[s].name, SYSTEMS[s]);
    assertEquals(ds.systems[s].em.value, off[s].result.exact_match);
    assertEquals(ds.systems[s].f1!.value, off[s].result.f1);
    assertEquals(ds.systems[s].answered, 10570);
  }
  assertEquals(ds.systems.map((s) => s.em.value.toFixed(2)), ["5.44", "12.37", "12.77"]);
  // The intervals: the paired bootstrap of the per-question rows, times 100.
  const bEm = pairedBootstrap(em, { resamples: 1000, seed: 0 });
  const bF1 = pairedBootstrap(f1, { resamples: 1000, seed: 0 });
  for (let s = 0; s < 3; s++) {
    assertEquals([ds.systems[s].em.low, ds.systems[s].em.high], [
      100 * bEm.systems[s].low,
      100 * bEm.systems[s].high,
    ]);
    assertEquals([ds.systems[s].f1!.low, ds.systems[s].f1!.high], [
      100 * bF1.systems[s].low,
      100 * bF1.systems[s].high,
    ]);
    assert(
      ds.systems[s].em.low < ds.systems[s].em.value &&
        ds.systems[s].em.value < ds.systems[s].em.high,
    );
  }
  // Against the baseline (firstCaps, index 1): first and lastCaps.
  assertEquals(ds.comparisons.map((c) => c.system), ["first", "lastCaps"]);
  for (const [k, s] of [[0, 0], [1, 2]] as const) {
    const c = ds.comparisons[k];
    assertEquals(c.baseline, "firstCaps");
    const dEm = pairedBootstrap([em[s], em[1]], { resamples: 1000, seed: 0 }).differences[0];
    const dF1 = pairedBootstrap([f1[s], f1[1]], { resamples: 1000, seed: 0 }).differences[0];
    assertEquals(c.em.difference, off[s].result.exact_match - off[1].result.exact_match);
    assertEquals(c.f1!.difference, off[s].result.f1 - off[1].result.f1);
    assertEquals([c.em.low, c.em.high], [100 * dEm.low, 100 * dEm.high]);
    assertEquals([c.f1!.low, c.f1!.high], [100 * dF1.low, 100 * dF1.high]);
    assertEquals(c.em.randomization_p, pairedRandomization(em[s], em[1]).pValue);
    assertEquals(c.f1!.randomization_p, pairedRandomization(f1[s], f1[1]).pValue);
    const m = mcnemarPaired(em[s], em[1]);
    assertEquals([c.em.mcnemar_p, c.em.mcnemar_b, c.em.mcnemar_c], [m.pValue, m.b, m.c]);
  }
  // lastCaps vs firstCaps: EM not significant, F1 is (the stats test's finding).
  assert(ds.comparisons[1].em.randomization_p > 0.05 && ds.comparisons[1].em.mcnemar_p! > 0.05);
  assert(ds.comparisons[1].f1!.randomization_p < 0.05);
  // Breakdowns: groups partition the questions; each group's numbers are the
  // official formula and the bootstrap over its questions.
  const dev = JSON.parse(
    await new Response(
      (await Deno.open(DEV_GZ)).readable.pipeThrough(new DecompressionStream("gzip")),
    ).text(),
  ) as {
    data: {
      title: string;
      paragraphs: { qas: { question: string; answers: { text: string }[] }[] }[];
    }[];
  };
  const qs = dev.data.flatMap((a) =>
    a.paragraphs.flatMap((p) => p.qas.map((q) => ({ ...q, title: a.title })))
  );
  for (
    const [name, key] of [
      ["question_type", (i: number) => questionType(qs[i].question)],
      ["answer_length", (i: number) => answerLengthBin(qs[i].answers.map((a) => a.text))],
      ["article", (i: number) => qs[i].title],
    ] as const
  ) {
    const groups = ds.breakdowns[name];
    assertEquals(groups.reduce((n, g) => n + g.questions, 0), 10570, name);
    for (const g of [groups[0], groups[groups.length - 1]]) {
      const idx = [...qs.keys()].filter((i) => key(i) === g.group);
      assertEquals(g.questions, idx.length);
      const sub = f1.map((c) => Float64Array.from(idx, (i) => c[i]));
      const b = pairedBootstrap(sub, { resamples: 1000, seed: 0 });
      for (let s = 0; s < 3; s++) {
        const sum = idx.reduce((a, i) => a + f1[s][i], 0);
        assertEquals(g.systems[s].f1!.value, (100 * sum) / idx.length);
        assertEquals(g.systems[s].f1!.low, 100 * b.systems[s].low);
      }
    }
  }
  assertEquals(ds.breakdowns.question_type.map((g) => g.group), [
    "what",
    "who",
    "when",
    "where",
    "why",
    "how",
    "which",
    "other",
  ]);
  assertEquals(ds.breakdowns.article.length, 48);
  // Disagreements: 20, sorted by spread; each answer's F1 is the row's.
  assertEquals(ds.disagreements.length, 20);
  for (let k = 1; k < 20; k++) assert(ds.disagreements[k - 1].spread >= ds.disagreements[k].spread);
  const ids = off[0].rows.map((x) => x.id);
  for (const d of ds.disagreements) {
    const i = ids.indexOf(d.id);
    assertEquals(d.answers.map((a) => a.f1), [f1[0][i], f1[1][i], f1[2][i]]);
    assertEquals(
      d.spread,
      Math.max(f1[0][i], f1[1][i], f1[2][i]) - Math.min(f1[0][i], f1[1][i], f1[2][i]),
    );
  }
  // F1 histograms count every question.
  for (const h of ds.f1_histogram) assertEquals(h.counts.reduce((a, b) => a + b, 0), 10570);
  // Markdown: the score table.
  const md = await Deno.readTextFile(`${out}/report.md`);
  assert(
    md.includes(`| firstCaps | 10570 | 12.37 | [${ds.systems[1].em.low.toFixed(2)}, `),
    md.slice(0, 800),
  );
  // HTML: one <svg> per chart (scores, question type, F1 histograms, metric disagreements),
  // and no URL outside text.
  const html = await Deno.readTextFile(`${out}/report.html`);
  assertEquals(html.match(/<svg/g)?.length, 4);
  assertEquals(urlsOutsideText(html), []);
});

/** Every http(s) URL inside a tag or a <style> element (visible text may mention URLs). */
function urlsOutsideText(html: string): string[] {
  const found: string[] = [];
  for (const m of html.matchAll(/<[^>]*>|<style>[\s\S]*?<\/style>/g)) {
    for (const u of m[0].matchAll(/https?:\/\/[^\s"'<>)]*/g)) found.push(u[0]);
  }
  if (/url\(/i.test(html.match(/<style>[\s\S]*?<\/style>/)?.[0] ?? "")) found.push("url( in CSS");
  return found;
}

Deno.test("report: identical prediction files give difference 0 and p = 1", async () => {
  const copy = `${TMP}/firstCaps_copy.json`;
  await Deno.copyFile(PREDS[1], copy);
  const out = `${TMP}/same`;
  await Effect.runPromise(report({
    inputs: [`A=${PREDS[1]}`, `B=${copy}`],
    data: DEV_GZ,
    out,
    resamples: 200,
  }));
  const c = readJson(`${out}/report.json`).datasets[0].comparisons[0];
  assertEquals([c.system, c.baseline], ["B", "A"]);
  for (const d of [c.em, c.f1!]) {
    assertEquals([d.difference, d.low, d.high, d.randomization_p], [0, 0, 0, 1]);
  }
  assertEquals([c.em.mcnemar_p, c.em.mcnemar_b, c.em.mcnemar_c], [1, 0, 0]);
  assertEquals(readJson(`${out}/report.json`).datasets[0].disagreements, []);
});

/** A fake `full` output folder: summary.json, pred.json, and rows.ndjson with a made-up bem. */
async function fakeFull(dir: string, encoder: string, pred: string, data: string, bem: boolean) {
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(
    `${dir}/summary.json`,
    JSON.stringify({ data, out: dir, encoder: { name: encoder, dim: 1, sparse: true } }),
  );
  await Deno.copyFile(pred, `${dir}/pred.json`);
  if (!bem) return;
  const { rows } = await officialRows(pred, data);
  // A stand-in for BEM scores (not BEM): high when F1 > 0.4, else low.
  const lines = rows.map((r) =>
    JSON.stringify({ ...r, bem: r.f1 > 0.4 ? 0.8 + 0.1 * r.f1 : 0.3 * r.f1 })
  );
  await Deno.writeTextFile(`${dir}/rows.ndjson`, lines.join("\n") + "\n");
}

Deno.test("report: full folders by encoder name, BEM from rows.ndjson (CIs, McNemar, BEM/EM disagreements, a fourth chart)", async () => {
  const data = `${TMP}/dev5.json`;
  await writeDevSubset(data, 5);
  const sub = await Deno.makeTempDir({ dir: TMP });
  const preds = await writeDevSystems(sub, 5);
  await fakeFull(`${TMP}/fullA`, "enc-a", preds[1], data, true);
  await fakeFull(`${TMP}/fullB`, "enc-b", preds[2], data, true);
  const out = `${TMP}/bem`;
  await Effect.runPromise(report({ inputs: [`${TMP}/fullA`, `${TMP}/fullB/`], out, top: 5 }));
  const ds = readJson(`${out}/report.json`).datasets[0];
  assertEquals(ds.name, "dev5");
  assertEquals(ds.systems.map((s) => s.name), ["enc-a", "enc-b"]);
  const bem = [preds[1], preds[2]].map(async (p) => {
    const { rows } = await officialRows(p, data);
    return Float64Array.from(
      rows,
      (r) => (r.f1 > 0.4 ? 0.8 + 0.1 * r.f1 : 0.3 * r.f1) > 0.5 ? 1 : 0,
    );
  });
  const [a, b] = await Promise.all(bem);
  const n = a.length;
  assertEquals(ds.systems[0].bem!.value, (100 * a.reduce((x, y) => x + y, 0)) / n);
  const c = ds.comparisons[0];
  assertEquals(c.bem!.mcnemar_p, mcnemarPaired(b, a).pValue);
  assertEquals(c.bem!.randomization_p, pairedRandomization(b, a).pValue);
  // The stand-in disagrees with EM where F1 > 0.4 without an exact match.
  assert(ds.bem_disagreements[0].em0_bem1 > 0);
  assertEquals(ds.bem_disagreements[0].items.length, 5);
  for (const x of ds.bem_disagreements[0].items) assertEquals(x.em, 0);
  const html = await Deno.readTextFile(`${out}/report.html`);
  // scores, question type, F1 histograms, BEM against F1, metric disagreements.
  assertEquals(html.match(/<svg/g)?.length, 5);
  assertEquals(urlsOutsideText(html), []);
  assert((await Deno.readTextFile(`${out}/report.md`)).includes("| BEM | 95% CI |"));
});

Deno.test("report: a run folder gives one system per model × dataset", async () => {
  const run = `${TMP}/run`;
  const data = `${TMP}/dev3.json`;
  await writeDevSubset(data, 3);
  const sub = await Deno.makeTempDir({ dir: TMP });
  const preds = await writeDevSystems(sub, 3);
  await Deno.mkdir(`${run}/configs`, { recursive: true });
  const ds = {
    abbr: "dev3",
    type: "squad",
    path: data,
    articles: null,
    metrics: ["em", "f1"],
    bem: null,
  };
  await Deno.writeTextFile(
    `${run}/configs/two.json`,
    JSON.stringify({ datasets: [ds], models: [{ abbr: "m1" }, { abbr: "m2" }, { abbr: "m3" }] }),
  );
  for (const [m, p] of [["m1", preds[0]], ["m2", preds[2]]]) {
    await Deno.mkdir(`${run}/predictions/${m}`, { recursive: true });
    await Deno.copyFile(p, `${run}/predictions/${m}/dev3.json`);
  }
  const out = `${TMP}/runreport`;
  await Effect.runPromise(
    report({ inputs: [run], out, baseline: "m2", resamples: 100, shuffles: 999 }),
  );
  const r = readJson(`${out}/report.json`).datasets[0];
  assertEquals([r.name, r.baseline], ["dev3", "m2"]);
  assertEquals(r.systems.map((s) => s.name), ["m1", "m2"]);
  const off = await officialRows(preds[2], data);
  assertEquals(r.systems[1].f1!.value, off.result.f1);
  assertEquals(r.comparisons.map((c) => c.system), ["m1"]);
});
