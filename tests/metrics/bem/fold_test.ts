/**
 * The BEM fold (`metrics/bem/fold.ts`) end to end through the CLIs as a user
 * runs them: `bem` and `evaluate --bem`.
 */
import { assert, assertEquals, assertMatch, assertStringIncludes } from "../../_assert.ts";
import { runStage } from "../../_util.ts";
import { softmax1 } from "../../../metrics/bem/mod.ts";
import { assertClose, devSlice, FIX, golden, ortLogits, SEED, SURROGATE } from "./_helpers.ts";

Deno.test("bem CLI: the fold end to end on a slice of dev, checked pair by pair", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { json, qs } = await devSlice(3);
    await Deno.writeTextFile(`${dir}/d.json`, json);
    // Predictions: gold, lower-cased gold (same tokens), another question's answer,
    // a paraphrase, and one question left unanswered.
    const pred: Record<string, string> = {};
    qs.forEach((q, i) => {
      if (i === 3) return;
      const g = q.answers[0].text;
      pred[q.id] = [g, g.toLowerCase(), qs[(i + 1) % qs.length].answers[0].text, `the ${g}`][i % 4];
    });
    await Deno.writeTextFile(`${dir}/p.json`, JSON.stringify(pred));
    const r = await runStage("pipeline/bem.ts", [
      `${dir}/d.json`,
      `${dir}/p.json`,
      "--model",
      SURROGATE,
      "--batch",
      "16",
      "--threads",
      "2",
      "--rows",
      `${dir}/rows.ndjson`,
      "--dump-inputs",
      `${dir}/dump.ndjson`,
      "--disagreements",
      `${dir}/dis.ndjson`,
    ]);
    assertEquals(r.code, 0, r.stderr);
    assertEquals(r.stderr.trim().split("\n").length, 1); // the NOT BEM note
    assertStringIncludes(r.stderr, "NOT BEM");
    const s = JSON.parse(r.stdout);
    const rows = (await Deno.readTextFile(`${dir}/rows.ndjson`)).trim().split("\n").map((l) =>
      JSON.parse(l)
    );
    const dump = (await Deno.readTextFile(`${dir}/dump.ndjson`)).trim().split("\n").map((l) =>
      JSON.parse(l)
    );
    const nPairs = qs.reduce((n, q, i) => n + (i === 3 ? 0 : q.answers.length), 0);
    assertEquals(s.questions, qs.length);
    assertEquals(s.answered, qs.length - 1);
    assertEquals(s.pairs, nPairs);
    assertEquals(dump.length, nPairs);
    assertEquals(rows.length, qs.length);
    const distinct = new Set(
      dump.map((d) => `${d.input_ids.join(",")}|${d.segment_ids.join(",")}`),
    );
    assertEquals(s.unique_pairs, distinct.size);
    assert(s.unique_pairs < s.pairs);
    assertEquals(s.truncated, 0);
    // Each row's BEM is the max of its pairs' scores, computed here independently
    // (Python onnxruntime) from the dumped inputs.
    const inputs = dump.map((d) => ({
      input_ids: d.input_ids.slice(0, d.length),
      segment_ids: d.segment_ids.slice(0, d.length),
    }));
    const logits = await ortLogits(SURROGATE, inputs);
    const byQ = new Map<string, number[]>();
    dump.forEach((d, i) => {
      const p = softmax1(logits[i][0], logits[i][1]);
      byQ.set(d.id, [...(byQ.get(d.id) ?? []), p]);
    });
    let sum = 0, correct = 0, em0Bem1 = 0, em1Bem0 = 0;
    rows.forEach((row, i) => {
      assertEquals(row.id, qs[i].id);
      const want = i === 3 ? 0 : Math.max(...byQ.get(row.id)!);
      assertClose([row.bem], [want], 1e-5, row.id);
      sum += want;
      if (want > 0.5) correct++;
      if (i !== 3 && row.em === 0 && row.bem > 0.5) em0Bem1++;
      if (i !== 3 && row.em === 1 && row.bem <= 0.5) em1Bem0++;
    });
    assertClose([s.bem_score], [(100 * sum) / qs.length], 1e-3);
    assertEquals(s.bem_accuracy, (100 * correct) / qs.length);
    assertEquals([s.em0_bem1, s.em1_bem0], [em0Bem1, em1Bem0]);
    const dis = (await Deno.readTextFile(`${dir}/dis.ndjson`)).split("\n").filter(Boolean)
      .map((l) => JSON.parse(l));
    assertEquals(dis.length, em0Bem1 + em1Bem0);
    assert(dis.length > 0);
    // Rows carry the official EM/F1: identical to evaluate --per-question.
    const ev = await runStage("pipeline/evaluate.ts", [
      `${dir}/d.json`,
      `${dir}/p.json`,
      "--per-question",
      `${dir}/ev.ndjson`,
    ]);
    assertEquals(ev.code, 0, ev.stderr);
    const evRows = (await Deno.readTextFile(`${dir}/ev.ndjson`)).trim().split("\n").map((l) =>
      JSON.parse(l)
    );
    assertEquals(
      rows.map(({ id, prediction, reference, em, f1 }) => ({ id, prediction, reference, em, f1 })),
      evRows.map(({ id, prediction, reference, em, f1 }) => ({
        id,
        prediction,
        reference,
        em,
        f1,
      })),
    );
    // Same summary with another batch size.
    const r2 = await runStage("pipeline/bem.ts", [
      `${dir}/d.json`,
      `${dir}/p.json`,
      "--model",
      SURROGATE,
      "--batch",
      "1",
    ]);
    const s2 = JSON.parse(r2.stdout);
    assertClose([s2.bem_score], [s.bem_score], 1e-4);
    assertEquals(s2.bem_accuracy, s.bem_accuracy);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bem CLI: --dump-inputs of the seed's triple, and truncation counted", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const g = (await golden()).find((r) => r.k === "triple")!;
    const longQ = "why is the sky blue " + "sky ".repeat(600);
    const data = {
      version: "1.1",
      data: [{
        title: "Sky",
        paragraphs: [{
          context: "Rayleigh.",
          qas: [
            {
              id: "q1",
              question: SEED.question,
              answers: [{ text: SEED.reference, answer_start: 0 }],
            },
            { id: "q2", question: longQ, answers: [{ text: "light scattering", answer_start: 0 }] },
          ],
        }],
      }],
    };
    await Deno.writeTextFile(`${dir}/d.json`, JSON.stringify(data));
    await Deno.writeTextFile(`${dir}/p.json`, JSON.stringify({ q1: SEED.candidate, q2: "x" }));
    const r = await runStage("pipeline/bem.ts", [
      `${dir}/d.json`,
      `${dir}/p.json`,
      "--model",
      SURROGATE,
      "--dump-inputs",
      `${dir}/dump.ndjson`,
    ]);
    assertEquals(r.code, 0, r.stderr);
    const s = JSON.parse(r.stdout);
    assertEquals([s.pairs, s.unique_pairs, s.truncated], [2, 2, 1]);
    const [d1, d2] = (await Deno.readTextFile(`${dir}/dump.ndjson`)).trim().split("\n").map((l) =>
      JSON.parse(l)
    );
    assertEquals([d1.id, d1.candidate, d1.reference, d1.question], [
      "q1",
      SEED.candidate,
      SEED.reference,
      SEED.question,
    ]);
    assertEquals(d1.length, 14);
    assertEquals(d1.truncated, false);
    assertEquals(d1.input_ids.length, 512);
    assertEquals(d1.segment_ids.length, 512);
    assertEquals(d1.input_ids, [...g.input_ids!, ...new Array(512 - 14).fill(0)]);
    assertEquals(d1.segment_ids, [...g.segment_ids!, ...new Array(512 - 14).fill(0)]);
    assertEquals(d1.segment_ids.slice(0, 14), [0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2, 2]);
    assertEquals([d2.length, d2.truncated, d2.input_ids[511], d2.segment_ids[511]], [
      512,
      true,
      102,
      2,
    ]);
    assertEquals(d2.input_ids.slice(0, 8), [101, 1060, 102, 2422, 17501, 102, 2339, 2003]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bem CLI: no model, a missing model, or an unfit one: exit 2, one line", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { json, qs } = await devSlice(1);
    await Deno.writeTextFile(`${dir}/d.json`, json);
    await Deno.writeTextFile(`${dir}/p.json`, JSON.stringify({ [qs[0].id]: "Denver" }));
    const args = [`${dir}/d.json`, `${dir}/p.json`];
    for (
      const [extra, re] of [
        [[], /^bem: no BEM model: .*README\.md, section "BEM: getting the model"/],
        [["--model", `${dir}/bem.onnx`], /^bem: .*bem\.onnx: no BEM model: .*README\.md/],
        [["--model", `${FIX}/bem_bad_names_NOT_BEM.onnx`], /input BEM does not feed \(features\)/],
        [["--model", `${FIX}/bem_bad_dtype_NOT_BEM.onnx`], /input_ids is float32; BEM needs/],
        [["--model", `${FIX}/bem_bad_output_NOT_BEM.onnx`], /do not give two logits/],
        [["--model", SURROGATE, "--batch", "0"], /--batch must be at least 1/],
      ] as const
    ) {
      const r = await runStage("pipeline/bem.ts", [...args, ...extra]);
      assertEquals(r.code, 2, `${extra.join(" ")}: ${r.stderr}`);
      assertEquals(r.stdout, "");
      const lines = r.stderr.trim().split("\n").filter((l) => !l.includes("NOT BEM; its scores"));
      assertEquals(lines.length, 1, r.stderr);
      assertMatch(lines[0], re);
    }
    // --device cuda: runs where onnxruntime-node's CUDA provider is installed, else one clear line.
    const cuda = await runStage("pipeline/bem.ts", [
      ...args,
      "--model",
      SURROGATE,
      "--device",
      "cuda",
    ]);
    if (cuda.code !== 0) {
      assertEquals(cuda.code, 2);
      const lines = cuda.stderr.trim().split("\n").filter((l) =>
        !l.includes("NOT BEM; its scores")
      );
      assertEquals(lines.length, 1, cuda.stderr);
      assertMatch(lines[0], /^bem: .*cannot use the CUDA execution provider/);
    }
    const help = await runStage("pipeline/bem.ts", ["--help"]);
    assertEquals(help.code, 0);
    assertStringIncludes(help.stdout, "--dump-inputs FILE");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("evaluate --bem: official line unchanged, BEM line, rows and disagreements", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { json, qs } = await devSlice(2);
    await Deno.writeTextFile(`${dir}/d.json`, json);
    const pred: Record<string, string> = {};
    qs.forEach((q, i) =>
      pred[q.id] = i % 3 === 0 ? q.answers[0].text : qs[(i + 2) % qs.length].answers[0].text
    );
    await Deno.writeTextFile(`${dir}/p.json`, JSON.stringify(pred));
    const plain = await runStage("pipeline/evaluate.ts", [`${dir}/d.json`, `${dir}/p.json`]);
    assertEquals(plain.code, 0, plain.stderr);
    assertEquals(plain.stdout.split("\n").length, 2); // one line
    const r = await runStage("pipeline/evaluate.ts", [
      `${dir}/d.json`,
      `${dir}/p.json`,
      "--bem",
      SURROGATE,
      "--per-question",
      `${dir}/rows.ndjson`,
      "--disagreements",
      `${dir}/dis.ndjson`,
    ]);
    assertEquals(r.code, 0, r.stderr);
    const [official, bemLine, end] = r.stdout.split("\n");
    assertEquals(official + "\n", plain.stdout);
    assertEquals(end, "");
    const b = JSON.parse(bemLine);
    const alone = await runStage("pipeline/bem.ts", [
      `${dir}/d.json`,
      `${dir}/p.json`,
      "--model",
      SURROGATE,
    ]);
    assertEquals(bemLine + "\n", alone.stdout);
    const rows = (await Deno.readTextFile(`${dir}/rows.ndjson`)).trim().split("\n").map((l) =>
      JSON.parse(l)
    );
    assertEquals(rows.length, qs.length);
    assertEquals(Object.keys(rows[0]), [
      "kind",
      "id",
      "prediction",
      "reference",
      "golds",
      "em",
      "f1",
      "bem",
      "bem_reference",
    ]);
    const dis = (await Deno.readTextFile(`${dir}/dis.ndjson`)).split("\n").filter(Boolean).map((
      l,
    ) => JSON.parse(l));
    const want = rows.filter((x) => (x.em === 0 && x.bem > 0.5) || (x.em === 1 && x.bem <= 0.5));
    assertEquals(dis.map((d) => d.id), want.map((x) => x.id));
    assertEquals(dis.length, b.em0_bem1 + b.em1_bem0);
    for (const d of dis) assertEquals(d.type, d.em === 0 ? "em0_bem1" : "em1_bem0");
    // --disagreements without --bem is bad usage.
    const bad = await runStage("pipeline/evaluate.ts", [
      `${dir}/d.json`,
      `${dir}/p.json`,
      "--disagreements",
      `${dir}/x.ndjson`,
    ]);
    assertEquals(bad.code, 2);
    assertMatch(bad.stderr, /^evaluate: --disagreements needs --bem\n$/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
