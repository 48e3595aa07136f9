/**
 * `evaluate` as a user runs it: stdout and stderr compared character for
 * character with the Python reference of the official scripts; and
 * `scoreDataset`, the same scores as numbers in process.
 */
import * as Effect from "effect/Effect";
import { assertEquals, assertMatch } from "../_assert.ts";
import { scoreDataset } from "../../metrics/evaluate.ts";
import { writePerturbations } from "../../bench/perturb.ts";
import { devJson, listDir, python, ROOT, runStage } from "../_util.ts";

const DEV = await devJson();
const DEV_GZ = `${ROOT}/data/dev-v1.1.json.gz`;

Deno.test("evaluate: first gold answers score exactly 100.0 / 100.0", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const dev = JSON.parse(await Deno.readTextFile(DEV));
    const pred: Record<string, string> = {};
    for (const a of dev.data) {
      for (const p of a.paragraphs) for (const q of p.qas) pred[q.id] = q.answers[0].text;
    }
    await Deno.writeTextFile(`${dir}/pred.json`, JSON.stringify(pred));
    const r = await runStage("pipeline/evaluate.ts", [DEV_GZ, `${dir}/pred.json`]);
    assertEquals(r.code, 0, r.stderr);
    assertEquals(r.stdout, '{"exact_match": 100.0, "f1": 100.0}\n');
    assertEquals(r.stderr, "");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("evaluate: perturbed predictions match the Python reference character for character", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const files = await writePerturbations(DEV, dir);
    assertEquals(files.length >= 5, true);
    const seen = new Set<string>();
    for (const f of files) {
      const ours = await runStage("pipeline/evaluate.ts", [DEV, f]);
      const ref = await python(["bench/reference/evaluate_v1.py", DEV, f]);
      assertEquals(ours.code, 0, ours.stderr);
      assertEquals(ours.stdout, ref.stdout, f);
      assertEquals(ours.stderr, ref.stderr, f);
      seen.add(ours.stdout);
    }
    // The perturbations really change the scores.
    assertEquals(seen.size, files.length);
    // The same through stdin (pred.json as `-`).
    const viaStdin = await runStage("pipeline/evaluate.ts", [DEV_GZ, "-"], {
      stdin: await Deno.readFile(files[1]),
    });
    const ref = await python(["bench/reference/evaluate_v1.py", DEV, files[1]]);
    assertEquals(viaStdin.stdout, ref.stdout);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

const V2 = {
  version: "v2.0",
  data: [{
    title: "T",
    paragraphs: [{
      context: "The Normans were in Normandy in the 10th century.",
      qas: [
        {
          id: "a",
          question: "Where?",
          answers: [{ text: "Normandy", answer_start: 20 }],
          is_impossible: false,
        },
        {
          id: "b",
          question: "When?",
          answers: [{ text: "10th century", answer_start: 36 }, {
            text: "the 10th century",
            answer_start: 32,
          }],
          is_impossible: false,
        },
        {
          id: "c",
          question: "Who?",
          answers: [],
          is_impossible: true,
          plausible_answers: [{ text: "Normans", answer_start: 4 }],
        },
        {
          id: "d",
          question: "Why?",
          answers: [],
          is_impossible: true,
          plausible_answers: [{ text: "in", answer_start: 0 }],
        },
      ],
    }],
  }],
};

Deno.test("evaluate: a SQuAD v2.0 file scores by the v2.0 rules (--v2 and auto-detected)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/v2.json`, JSON.stringify(V2));
    // Same data with "version" after "data": detection needs a second pass.
    const { version: _v, ...rest } = V2;
    await Deno.writeTextFile(`${dir}/v2-late.json`, JSON.stringify({ ...rest, version: "v2.0" }));
    await Deno.writeTextFile(
      `${dir}/pred.json`,
      JSON.stringify({ a: "Normandy", b: "10th", c: "", d: "Normans" }),
    );
    const ref = await python([
      "bench/reference/evaluate_v2.py",
      `${dir}/v2.json`,
      `${dir}/pred.json`,
    ]);
    for (const args of [[`${dir}/v2.json`], [`${dir}/v2-late.json`], [`${dir}/v2.json`, "--v2"]]) {
      const r = await runStage("pipeline/evaluate.ts", [
        args[0],
        `${dir}/pred.json`,
        ...args.slice(1),
      ]);
      assertEquals(r.code, 0, r.stderr);
      assertEquals(r.stdout, ref.stdout);
    }
    const parsed = JSON.parse(ref.stdout);
    assertEquals(parsed.total, 4);
    assertEquals(parsed.NoAns_total, 2);
    assertEquals(parsed.NoAns_exact, 50.0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("evaluate --na-prob-file: read a chunk at a time, not as one string (a file over 512 MiB was 'failed to allocate string'); a value not a number refused at its first byte", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/v2.json`, JSON.stringify(V2));
    await Deno.writeTextFile(
      `${dir}/pred.json`,
      JSON.stringify({ a: "Normandy", b: "10th", c: "", d: "Normans" }),
    );
    const probs = '{"a": 0.1, "b": 0.9, "c": 0.3, "d": 0.2}';
    await Deno.writeTextFile(`${dir}/na.json`, probs);
    // The same object with 65 MiB of spaces: past the whole-file fast path, streamed.
    await Deno.writeTextFile(
      `${dir}/na_spaced.json`,
      probs.replace(", ", "," + " ".repeat(65 << 20)),
    );
    const args = (na: string) => [`${dir}/v2.json`, `${dir}/pred.json`, "--na-prob-file", na];
    const small = await runStage("pipeline/evaluate.ts", args(`${dir}/na.json`));
    assertEquals(small.code, 0, small.stderr);
    const spaced = await runStage("pipeline/evaluate.ts", args(`${dir}/na_spaced.json`));
    assertEquals([spaced.code, spaced.stdout, spaced.stderr], [0, small.stdout, small.stderr]);
    // 1 GiB (a sparse file: no disk), its text more than one JavaScript string holds.
    await Deno.writeTextFile(`${dir}/na_big.json`, '{"a": 0.1, "b": ');
    await Deno.truncate(`${dir}/na_big.json`, 1 << 30);
    const big = await runStage("pipeline/evaluate.ts", args(`${dir}/na_big.json`));
    assertEquals(big.code, 2, big.stderr);
    assertEquals(
      big.stderr,
      `evaluate: ${dir}/na_big.json: byte 16: invalid JSON: unexpected byte 0x00 (control character)\n`,
    );
    await Deno.writeTextFile(`${dir}/na_str.json`, '{"a": 0.1, "b": "x"}');
    const str = await runStage("pipeline/evaluate.ts", args(`${dir}/na_str.json`));
    assertEquals([str.code, str.stderr], [
      2,
      `evaluate: ${dir}/na_str.json: question "b": not a number\n`,
    ]);
    // A SQuAD dataset given by mistake (1 GiB, sparse): refused at the first byte of its
    // "data", which is not parsed (its zeros would be "invalid JSON" were it read).
    await Deno.writeTextFile(`${dir}/na_squad.json`, '{"data": [{"title": "T", "paragraphs": [');
    await Deno.truncate(`${dir}/na_squad.json`, 1 << 30);
    const squad = await runStage("pipeline/evaluate.ts", args(`${dir}/na_squad.json`));
    assertEquals([squad.code, squad.stderr], [
      2,
      `evaluate: ${dir}/na_squad.json: question "data": not a number\n`,
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("evaluate: version warning and per-question rows", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const data = {
      data: V2.data.map((a) => ({
        ...a,
        paragraphs: a.paragraphs.map((p) => ({ ...p, qas: p.qas.slice(0, 2) })),
      })),
      version: "1.0",
    };
    await Deno.writeTextFile(`${dir}/d.json`, JSON.stringify(data));
    await Deno.writeTextFile(`${dir}/p.json`, JSON.stringify({ b: "the 10th century!" }));
    const r = await runStage("pipeline/evaluate.ts", [
      `${dir}/d.json`,
      `${dir}/p.json`,
      "--per-question",
      `${dir}/rows.ndjson`,
    ]);
    const ref = await python(["bench/reference/evaluate_v1.py", `${dir}/d.json`, `${dir}/p.json`]);
    assertEquals(r.code, 0, r.stderr);
    assertEquals(r.stdout, ref.stdout);
    assertEquals(r.stderr, ref.stderr);
    assertEquals(r.stderr.split("\n")[0], "Evaluation expects v-1.1, but got dataset with v-1.0");
    const rows = (await Deno.readTextFile(`${dir}/rows.ndjson`)).trim().split("\n").map((l) =>
      JSON.parse(l)
    );
    assertEquals(rows, [
      {
        kind: "score",
        id: "a",
        prediction: null,
        reference: null,
        golds: ["Normandy"],
        em: 0,
        f1: 0,
      },
      {
        kind: "score",
        id: "b",
        prediction: "the 10th century!",
        reference: "10th century",
        golds: ["10th century", "the 10th century"],
        em: 1,
        f1: 1,
      },
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("evaluate: with onMessage the messages go out one by one in the official order, none kept", async () => {
  const { evaluate } = await import("../../metrics/evaluate.ts");
  const dir = await Deno.makeTempDir();
  try {
    const { version: _v, ...rest } = V2;
    const v1 = {
      data: V2.data.map((a) => ({
        ...a,
        paragraphs: a.paragraphs.map((p) => ({ ...p, qas: p.qas.slice(0, 2) })),
      })),
    };
    const ids = v1.data.flatMap((a) => a.paragraphs.flatMap((p) => p.qas.map((q) => q.id)));
    const unanswered = ids.map((id) => `Unanswered question ${id} will receive score 0.`);
    await Deno.writeTextFile(`${dir}/p.json`, "{}");
    // v2.0 needs one answered question to have scores.
    await Deno.writeTextFile(`${dir}/p2.json`, '{"a": "Normandy"}');
    const cases: [string, object, string[]][] = [
      // The rules known before the data: each message as its question is scored.
      ["first.json", { version: "1.1", ...v1 }, unanswered],
      // The official layout ("version" last): ids kept until it comes, then the warning first.
      ["last.json", { ...v1, version: "1.0" }, [
        "Evaluation expects v-1.1, but got dataset with v-1.0",
        ...unanswered,
      ]],
      ["none.json", v1, unanswered],
      // A v2.0 file read as v1.1 first: that pass's messages never go out.
      ["v2-late.json", { ...rest, version: "v2.0" }, [
        ...V2.data.flatMap((a) => a.paragraphs.flatMap((p) => p.qas.map((q) => q.id)))
          .filter((id) => id !== "a").map((id) => `Missing prediction for ${id}`),
      ]],
    ];
    for (const [name, data, want] of cases) {
      await Deno.writeTextFile(`${dir}/${name}`, JSON.stringify(data));
      const predictions = `${dir}/${name === "v2-late.json" ? "p2" : "p"}.json`;
      const got: string[] = [];
      const r = await Effect.runPromise(
        evaluate({
          data: `${dir}/${name}`,
          predictions,
          onMessage: (l) => got.push(l),
        }),
      );
      assertEquals(got, want, name);
      assertEquals(r.messages, [], name);
      // Without onMessage, the same lines are returned.
      const kept = await Effect.runPromise(
        evaluate({ data: `${dir}/${name}`, predictions }),
      );
      assertEquals(kept.messages, want, name);
    }
    // The command prints them on stderr, one a line: every dev question with {}.
    const dev = await runStage("pipeline/evaluate.ts", [await devJson(), `${dir}/p.json`]);
    assertEquals(dev.code, 0, dev.stderr);
    const lines = dev.stderr.trimEnd().split("\n");
    assertEquals(lines.length, 10570);
    for (const l of lines) {
      assertMatch(l, /^Unanswered question [0-9a-f]{24} will receive score 0\.$/);
    }
    assertEquals(dev.stdout, '{"exact_match": 0.0, "f1": 0.0}\n');
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

const BAD_PREDS: Array<[string, string, RegExp]> = [
  ["a list", `["x"]`, /p\.json: not a JSON object of question id → answer string/],
  ["a non-string value", `{"a": 3}`, /p\.json: question "a": prediction is number, not a string/],
  ["a null value", `{"a": null}`, /p\.json: question "a": prediction is null, not a string/],
  ["invalid JSON", `{"a": "x",}`, /p\.json: byte 10: invalid JSON: unexpected "}"/],
  ["truncated JSON", `{"a": "x"`, /p\.json: byte 9: truncated JSON/],
  ["empty", ``, /p\.json: byte 0: empty file/],
];

for (const [name, text, expected] of BAD_PREDS) {
  Deno.test(`evaluate rejects a prediction file that is ${name}`, async () => {
    const dir = await Deno.makeTempDir();
    try {
      await Deno.writeTextFile(`${dir}/p.json`, text);
      const r = await runStage("pipeline/evaluate.ts", [
        DEV_GZ,
        `${dir}/p.json`,
        "--per-question",
        `${dir}/rows.ndjson`,
      ]);
      assertEquals(r.code, 2, r.stderr);
      assertEquals(r.stdout, "");
      const lines = r.stderr.trimEnd().split("\n");
      assertEquals(lines.length, 1, r.stderr);
      assertMatch(lines[0], /^evaluate: /);
      assertMatch(lines[0], expected);
      assertEquals(await listDir(dir), ["p.json"]);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("evaluate: a question without gold answers is a clear error under v1.1 rules", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/d.json`, JSON.stringify({ ...V2, version: "1.1" }));
    await Deno.writeTextFile(`${dir}/p.json`, JSON.stringify({ a: "x", b: "y", c: "z", d: "" }));
    const r = await runStage("pipeline/evaluate.ts", [`${dir}/d.json`, `${dir}/p.json`]);
    assertEquals(r.code, 2, r.stderr);
    assertEquals(r.stdout, "");
    assertEquals(r.stderr.trimEnd().split("\n").length, 1, r.stderr);
    assertMatch(r.stderr, /^evaluate: \/.*\/d\.json: question "c": has no gold answers/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("scoreDataset: EM/F1 and BEM as numbers, the same as evaluate --bem prints", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const dev = JSON.parse(await Deno.readTextFile(DEV));
    const a = dev.data[0];
    const slice = { version: "1.1", data: [{ ...a, paragraphs: a.paragraphs.slice(0, 2) }] };
    const qs: { id: string; answers: { text: string }[] }[] = slice.data[0].paragraphs
      .flatMap((p: { qas: unknown[] }) => p.qas);
    const pred: Record<string, string> = {};
    qs.forEach((q, i) =>
      pred[q.id] = i % 3 === 0 ? q.answers[0].text : qs[(i + 1) % qs.length].answers[0].text
    );
    await Deno.writeTextFile(`${dir}/d.json`, JSON.stringify(slice));
    await Deno.writeTextFile(`${dir}/p.json`, JSON.stringify(pred));
    const model = `${ROOT}/tests/fixtures/bem_surrogate_NOT_BEM.onnx`;
    const cli = await runStage("pipeline/evaluate.ts", [
      `${dir}/d.json`,
      `${dir}/p.json`,
      "--bem",
      model,
    ]);
    assertEquals(cli.code, 0, cli.stderr);
    const [official, bemLine] = cli.stdout.split("\n");
    const s = await Effect.runPromise(
      scoreDataset({ data: `${dir}/d.json`, predictions: `${dir}/p.json`, bem: { model } }),
    );
    assertEquals(s.rules, "v1.1");
    assertEquals(s.stdout, official);
    assertEquals(JSON.parse(official), { exact_match: s.exactMatch, f1: s.f1 });
    assertEquals(s.questions, qs.length);
    assertEquals(JSON.stringify(s.bem), bemLine);
    // In-memory predictions give the same numbers.
    const m = await Effect.runPromise(
      scoreDataset({
        data: `${dir}/d.json`,
        predictions: new Map(Object.entries(pred)),
        bem: { model },
      }),
    );
    assertEquals([m.exactMatch, m.f1, m.bem], [s.exactMatch, s.f1, s.bem]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
