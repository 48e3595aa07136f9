/**
 * BEM: the tokenizer against Hugging Face's ids (every entry of the golden
 * file), input assembly, truncation and padding, the ONNX session against
 * independent logits, batching, dedup, the fold end to end, and the CLIs
 * (`bem`, `evaluate --bem`) as a user runs them.
 *
 * The model here is `tests/fixtures/bem_surrogate_NOT_BEM.onnx`: random
 * weights with BEM's interface. Its scores test the plumbing and mean
 * nothing; they are never BEM scores.
 */
import { Effect } from "effect";
import { assert, assertEquals, assertMatch, assertStringIncludes } from "../_assert.ts";
import { DEV_GZ, ROOT, runStage } from "../_util.ts";
import {
  Bem,
  bemAssemble,
  BemError,
  type BemInputs,
  bemInputs,
  BemLive,
  bemOfQuestion,
  type BemTriple,
  defaultBemTokenizer,
  makeBem,
  padBemInputs,
  softmax1,
} from "../../metrics/bem/mod.ts";
import {
  type BemBatch,
  bemInterface,
  openBemSession,
  runBemBatch,
  sessionValueInfo,
} from "../../metrics/bem/session.ts";

const FIX = `${ROOT}/tests/fixtures`;
const SURROGATE = `${FIX}/bem_surrogate_NOT_BEM.onnx`;
const MINI = `${FIX}/bem_surrogate_int32_mask_NOT_BEM.onnx`;
const SEED: BemTriple = {
  question: "why is the sky blue",
  reference: "light scattering",
  candidate: "scattering of light",
};

// ---------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------

async function gunzipText(path: string): Promise<string> {
  const f = await Deno.open(path);
  return await new Response(f.readable.pipeThrough(new DecompressionStream("gzip"))).text();
}

interface GoldenRow {
  k: string;
  t?: string;
  f?: string;
  lo?: number;
  hi?: number;
  ids?: number[];
  input_ids?: number[];
  segment_ids?: number[];
  question?: string;
  reference?: string;
  candidate?: string;
  vocab_sha256?: string;
  counts?: Record<string, number>;
}

let goldenCache: GoldenRow[] | undefined;
async function golden(): Promise<GoldenRow[]> {
  goldenCache ??= (await gunzipText(`${FIX}/bem_tokenizer_golden.ndjson.gz`)).split("\n")
    .filter((l) => l !== "").map((l) => JSON.parse(l));
  return goldenCache;
}

/** The text of a code point run of the golden file. */
function codePointText(r: GoldenRow): string {
  const out: string[] = [];
  for (let c = r.lo!; c <= r.hi!; c++) {
    if (c >= 0xd800 && c <= 0xdfff) continue;
    const ch = String.fromCodePoint(c);
    out.push(r.f === "iso" ? ch : `x${ch}y`);
  }
  return out.join(" ");
}

async function sha256(path: string): Promise<string> {
  const d = await crypto.subtle.digest("SHA-256", await Deno.readFile(path));
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

let pythonOrt: boolean | undefined;
/** Logits from Python onnxruntime, or undefined when it is not installed. */
async function ortLogits(
  model: string,
  inputs: readonly { input_ids: number[]; segment_ids: number[] }[],
): Promise<number[][] | undefined> {
  if (pythonOrt === false) return undefined;
  const child = new Deno.Command("python3", {
    args: [`${FIX}/bem_ort_check.py`],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const w = child.stdin.getWriter();
  await w.write(new TextEncoder().encode(JSON.stringify({ model, inputs })));
  await w.close();
  const out = await child.output();
  if (out.code === 3) {
    pythonOrt = false;
    console.warn("bem_test: Python onnxruntime not installed; live cross-check skipped");
    return undefined;
  }
  if (out.code !== 0) throw new Error(new TextDecoder().decode(out.stderr));
  pythonOrt = true;
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

function assertClose(a: ArrayLike<number>, b: ArrayLike<number>, tol: number, msg = "") {
  assertEquals(a.length, b.length, `${msg} length`);
  for (let i = 0; i < a.length; i++) {
    assert(Math.abs(a[i] - b[i]) <= tol, `${msg}[${i}]: ${a[i]} vs ${b[i]} (tolerance ${tol})`);
  }
}

function batchOf(rows: readonly { input_ids: number[]; segment_ids: number[] }[]): BemBatch {
  const L = 512;
  const b: BemBatch = {
    rows: rows.length,
    seqLen: L,
    ids: new Int32Array(rows.length * L),
    segments: new Int32Array(rows.length * L),
    lengths: new Int32Array(rows.length),
  };
  rows.forEach((r, i) => {
    b.ids.set(r.input_ids, i * L);
    b.segments.set(r.segment_ids, i * L);
    b.lengths[i] = r.input_ids.length;
  });
  return b;
}

const withBem = <A, E>(
  opts: Parameters<typeof BemLive>[0],
  f: (bem: Bem["Service"]) => Effect.Effect<A, E>,
): Promise<A> => Effect.runPromise(Effect.provide(Bem.use(f), BemLive(opts)));

interface DevQuestion {
  id: string;
  question: string;
  answers: { text: string }[];
}

/** The first `paragraphs` paragraphs of the bundled dev set, as a SQuAD file. */
async function devSlice(paragraphs: number): Promise<{ json: string; qs: DevQuestion[] }> {
  const dev = JSON.parse(await gunzipText(DEV_GZ));
  const a = dev.data[0];
  const sliced = {
    version: "1.1",
    data: [{ ...a, paragraphs: a.paragraphs.slice(0, paragraphs) }],
  };
  const qs: DevQuestion[] = sliced.data[0].paragraphs.flatMap((p: { qas: DevQuestion[] }) => p.qas);
  return { json: JSON.stringify(sliced), qs };
}

// ---------------------------------------------------------------------------
// tokenizer
// ---------------------------------------------------------------------------

Deno.test("bem tokenizer: ids identical to HF BertTokenizer on every golden entry", async () => {
  const rows = await golden();
  const meta = rows[0];
  assertEquals(meta.k, "meta");
  assertEquals(
    meta.vocab_sha256,
    await sha256(`${ROOT}/data/bert/bert-base-uncased-vocab.txt`),
    "golden made with the bundled vocabulary",
  );
  const tok = defaultBemTokenizer();
  assertEquals(tok.vocabSize, 30522);
  const seen: Record<string, number> = {};
  const bad: string[] = [];
  for (const r of rows) {
    if (r.k === "meta" || r.k === "triple") continue;
    const text = r.k === "cp" ? codePointText(r) : r.t!;
    const key = r.k === "cp" ? `cp-${r.f}` : r.k;
    seen[key] = (seen[key] ?? 0) + 1;
    const ids = tok.ids(text);
    if (ids.length !== r.ids!.length || ids.some((x, i) => x !== r.ids![i])) {
      bad.push(`${key} ${JSON.stringify(text).slice(0, 60)}: ${JSON.stringify(ids).slice(0, 80)}`);
    }
  }
  assertEquals(bad.slice(0, 10), [], `${bad.length} entries differ`);
  // Every dev question, every distinct gold answer, 2,000 sentences, the odd cases, and every
  // code point (1,112,064 of them, in runs of 256) alone and inside a word.
  assertEquals(seen["q"], 10570);
  assertEquals(seen["a"], meta.counts!["a"]);
  assert(seen["a"] > 14000);
  assertEquals(seen["s"], 2000);
  assertEquals(seen["o"], meta.counts!["o"]);
  assert(seen["o"] >= 90);
  assertEquals(seen["cp-iso"], Math.ceil((0x110000 - 0x800) / 256));
  assertEquals(seen["cp-word"], seen["cp-iso"]);
});

Deno.test("bem tokenizer: the fixes around the library, case by case", () => {
  const tok = defaultBemTokenizer();
  assertEquals(tok.tokens("ΟΔΟΣ"), ["ο", "##δ", "##ο", "##σ"]); // transformers 4.x: σ, not ς
  assertEquals(tok.ids("\u{20000}x"), [100, 1060]); // CJK Ext. B gets spaces
  assertEquals(tok.ids("a\u0378b"), [11113]); // unassigned: deleted ("ab")
  assertEquals(tok.ids("a\u{1FAF8}b"), [11113]); // unassigned in Unicode 14.0: deleted
  assertEquals(tok.ids("a[SEP]b [MASK]"), [1037, 102, 1038, 103]);
  assertEquals(tok.ids("[sep]"), [1031, 19802, 1033]);
  assertEquals(tok.ids("Café naïve"), [7668, 15743]);
  assertEquals(tok.ids("a".repeat(101)), [100]);
  assertEquals(tok.ids(""), []);
  assertEquals(tok.ids(" \t\n\u3000"), []);
});

// ---------------------------------------------------------------------------
// inputs: assembly, segments, truncation, padding
// ---------------------------------------------------------------------------

Deno.test("bem inputs: the seed's triple gives exactly HF's ids and segments 0/1/2", async () => {
  const g = (await golden()).find((r) => r.k === "triple")!;
  assertEquals(g.question, SEED.question);
  const x = bemInputs(SEED);
  assertEquals(Array.from(x.inputIds), g.input_ids);
  assertEquals(Array.from(x.segmentIds), g.segment_ids);
  assertEquals(
    Array.from(x.inputIds),
    [101, 17501, 1997, 2422, 102, 2422, 17501, 102, 2339, 2003, 1996, 3712, 2630, 102],
  );
  assertEquals(Array.from(x.segmentIds), [0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2, 2]);
  assertEquals(x.truncated, false);
  const p = padBemInputs(x);
  assertEquals(p.inputIds.length, 512);
  assertEquals(p.segmentIds.length, 512);
  assertEquals(Array.from(p.inputIds.subarray(0, 14)), g.input_ids);
  assert(p.inputIds.subarray(14).every((v) => v === 0));
  assert(p.segmentIds.subarray(14).every((v) => v === 0));
});

Deno.test("bem inputs: truncation cuts the question, then the reference, then the candidate", () => {
  const tok = defaultBemTokenizer();
  // A real >512-token triple: "sky " is one token.
  const long: BemTriple = {
    candidate: "scattering of light",
    reference: "light scattering",
    question: "why is the sky blue " + "sky ".repeat(600),
  };
  const x = bemInputs(long);
  assertEquals(x.truncated, true);
  assertEquals(x.inputIds.length, 512);
  const q = tok.ids(long.question).length;
  assertEquals(q, 605);
  assertEquals(x.cut, { candidate: 0, reference: 0, question: 605 - (512 - 4 - 3 - 2) });
  assertEquals(Array.from(x.inputIds.subarray(0, 13)), [
    101,
    17501,
    1997,
    2422,
    102,
    2422,
    17501,
    102,
    2339,
    2003,
    1996,
    3712,
    2630,
  ]);
  assertEquals(x.inputIds[511], 102);
  assertEquals(x.segmentIds[511], 2);
  assertEquals(x.segmentIds.filter((s) => s === 2).length, 512 - 8);

  const range = (n: number, from: number) => Array.from({ length: n }, (_, i) => from + i);
  // Question gone, reference cut from its end.
  const y = bemAssemble(range(10, 1000), range(600, 2000), range(30, 5000));
  assertEquals(y.cut, { candidate: 0, reference: 600 - 498, question: 30 });
  assertEquals(y.inputIds.length, 512);
  assertEquals(Array.from(y.inputIds.subarray(510, 512)), [102, 102]); // empty question
  assertEquals(y.inputIds[509], 2000 + 497);
  // Candidate alone too long: question and reference gone, candidate cut to 508.
  const z = bemAssemble(range(700, 1000), range(5, 2000), range(5, 5000));
  assertEquals(z.cut, { candidate: 192, reference: 5, question: 5 });
  assertEquals(Array.from(z.inputIds.subarray(507, 512)), [1506, 1507, 102, 102, 102]);
  assertEquals(Array.from(z.segmentIds.subarray(508, 512)), [0, 0, 1, 2]);
  // Exactly 512 is not truncated.
  assertEquals(bemAssemble(range(100, 1), range(100, 1), range(308, 1)).truncated, false);
  assertEquals(bemAssemble(range(100, 1), range(100, 1), range(309, 1)).cut.question, 1);
});

Deno.test("bem: softmax1 and the max over gold answers", () => {
  assertEquals(softmax1(0, 0), 0.5);
  assertEquals(softmax1(-1000, 1000), 1);
  assertEquals(softmax1(1000, -1000), 0);
  assertClose([softmax1(1, 3)], [Math.exp(3) / (Math.exp(1) + Math.exp(3))], 1e-15);
  assertEquals(bemOfQuestion(["a", "b", "c"], [0.2, 0.9, 0.9]), { bem: 0.9, reference: "b" });
  assertEquals(bemOfQuestion([], []), { bem: 0, reference: undefined });
});

// ---------------------------------------------------------------------------
// the model: interface checks and logits against independent references
// ---------------------------------------------------------------------------

Deno.test("bem session: surrogate logits match NumPy and Python onnxruntime within 1e-5", async () => {
  const ref = JSON.parse(await Deno.readTextFile(`${FIX}/bem_surrogate_reference.json`));
  for (const [kind, path] of [["bert", SURROGATE], ["mini", MINI]] as const) {
    const s = await openBemSession(path, { threads: 2 });
    try {
      const v = sessionValueInfo(s);
      const iface = bemInterface(v.inputs, v.outputs);
      assert(typeof iface !== "string", String(iface));
      if (kind === "bert") {
        assertEquals(iface, {
          ids: { name: "input_ids", type: "int64" },
          segments: { name: "segment_ids", type: "int64" },
          output: "output_0",
        });
      } else {
        assertEquals(iface, {
          ids: { name: "input_word_ids", type: "int32" },
          segments: { name: "input_type_ids", type: "int32" },
          mask: { name: "input_mask", type: "int32" },
          output: "logits",
        });
      }
      const ours = await runBemBatch(s, iface, batchOf(ref.inputs));
      // Seed triple first; one row fills all 512 positions.
      assertEquals(ref.inputs[0].input_ids, Array.from(bemInputs(SEED).inputIds));
      assertEquals(ref.inputs.at(-1).input_ids.length, 512);
      assertClose(ours, ref[kind].numpy.flat(), 1e-5, `${kind} vs numpy`);
      if (ref[kind].onnxruntime) {
        assertClose(ours, ref[kind].onnxruntime.flat(), 1e-5, `${kind} vs recorded onnxruntime`);
      }
      const live = await ortLogits(path, ref.inputs);
      if (live) assertClose(ours, live.flat(), 1e-5, `${kind} vs live Python onnxruntime`);
    } finally {
      await s.release();
    }
  }
});

Deno.test("bem session: models that do not fit the recipe are refused with a clear message", () => {
  const out = [{ name: "output_0", type: "float32", shape: ["batch", 2] }];
  const ids = { name: "input_ids", type: "int64", shape: ["b", "s"] };
  const seg = { name: "segment_ids", type: "int64", shape: ["b", "s"] };
  assertMatch(String(bemInterface([{ name: "features", type: "float32" }], out)), /features/);
  assertMatch(String(bemInterface([ids], out)), /lacks a segment-ids input/);
  assertMatch(
    String(bemInterface([{ ...ids, type: "float32" }, seg], out)),
    /input_ids is float32/,
  );
  assertMatch(
    String(bemInterface([ids, seg], [{ name: "o", type: "float32", shape: ["b", 3] }])),
    /do not give two logits/,
  );
  assertMatch(
    String(bemInterface([{ ...ids, shape: ["b", 128] }, seg], out)),
    /128 positions/,
  );
  // tf2onnx-style names with ":0", token_type_ids, and a fixed batch are fine.
  assertEquals(
    bemInterface([
      { name: "input_ids:0", type: "int32", shape: [8, 512] },
      { name: "token_type_ids:0", type: "int32", shape: [8, 512] },
    ], out),
    {
      ids: { name: "input_ids:0", type: "int32" },
      segments: { name: "token_type_ids:0", type: "int32" },
      output: "output_0",
      fixedBatch: 8,
    },
  );
});

// ---------------------------------------------------------------------------
// the service: batching, padding, dedup
// ---------------------------------------------------------------------------

Deno.test("bem service: batch 1, 7 and 64 give the same scores (1e-6)", async () => {
  const { qs } = await devSlice(3);
  const triples: BemTriple[] = qs.slice(0, 70).map((q, i) => ({
    candidate: qs[(i * 7) % qs.length].answers[0].text,
    reference: q.answers[0].text,
    question: q.question,
  }));
  const runs: Record<number, Float64Array> = {};
  for (const batch of [1, 7, 64]) {
    runs[batch] = await withBem({ model: SURROGATE, batch, threads: 2 }, (b) => b.score(triples));
  }
  assertEquals(runs[1].length, 70);
  assertClose(runs[7], runs[1], 1e-6, "batch 7");
  assertClose(runs[64], runs[1], 1e-6, "batch 64");
  // Real values: the same triples one by one through the raw session.
  const s = await openBemSession(SURROGATE, { threads: 2 });
  const v = sessionValueInfo(s);
  const iface = bemInterface(v.inputs, v.outputs);
  assert(typeof iface !== "string");
  const x = bemInputs(triples[5]);
  const l = await runBemBatch(
    s,
    iface,
    batchOf([{
      input_ids: Array.from(x.inputIds),
      segment_ids: Array.from(x.segmentIds),
    }]),
  );
  await s.release();
  assertClose([runs[64][5]], [softmax1(l[0], l[1])], 1e-6, "one by one");
  // Scores spread on both sides of 0.5 (this surrogate is centred so).
  assert(runs[1].some((p) => p > 0.5) && runs[1].some((p) => p < 0.5));
});

Deno.test("bem service: identical inputs run once; fixed-batch models get padded batches", async () => {
  const seen: BemBatch[] = [];
  const fake = makeBem(
    (b) => {
      seen.push(b);
      const out = new Float64Array(b.rows * 2);
      for (let r = 0; r < b.rows; r++) out[2 * r + 1] = b.lengths[r] / 10; // score grows with length
      return Promise.resolve(out);
    },
    { model: "fake", interface: { fixedBatch: 4 } as never, device: "cpu", batch: 64 },
  );
  const t = (candidate: string): BemTriple => ({
    candidate,
    reference: "Denver",
    question: "who?",
  });
  // "Denver Broncos" and "denver broncos" tokenize identically: one input.
  const xs = ["Denver Broncos", "denver broncos", "Broncos", "Denver Broncos", "a b c d e", "x"]
    .map(t);
  const scores = await Effect.runPromise(fake.score(xs));
  assertEquals(fake.stats(), { pairs: 6, uniquePairs: 4, truncated: 0, sessionRuns: 1 });
  assertEquals(seen.length, 1);
  assertEquals(seen[0].rows, 4); // the graph's fixed batch
  assertEquals(scores[0], scores[1]);
  assertEquals(scores[0], scores[3]);
  assertClose([scores[2]], [softmax1(0, 0.8)], 1e-12); // [CLS] broncos [SEP] denver [SEP] who ? [SEP]
  // Again: all cached, no run.
  await Effect.runPromise(fake.score(xs));
  assertEquals(fake.stats(), { pairs: 12, uniquePairs: 4, truncated: 0, sessionRuns: 1 });
  // Padding of the batch: zeros after each row's length.
  const b = seen[0];
  for (let r = 0; r < b.rows; r++) {
    assert(b.ids.subarray(r * 512 + b.lengths[r], (r + 1) * 512).every((v) => v === 0));
    assert(b.segments.subarray(r * 512 + b.lengths[r], (r + 1) * 512).every((v) => v === 0));
  }
  // With the real session: dedup counted in session runs.
  const stats = await withBem(
    { model: SURROGATE, batch: 2, threads: 2 },
    (bem) => Effect.map(bem.score(xs), () => bem.stats()),
  );
  assertEquals(stats, { pairs: 6, uniquePairs: 4, truncated: 0, sessionRuns: 2 });
});

Deno.test("bem service: a missing or unfit model fails with BemError (exit code 2)", async () => {
  for (
    const [model, re] of [
      [`${FIX}/nope.onnx`, /README.md, section "BEM: getting the model"/],
      [`${ROOT}/README.md`, /cannot load the ONNX model/],
      [`${FIX}/bem_bad_names_NOT_BEM.onnx`, /input BEM does not feed \(features\)/],
      [`${FIX}/bem_bad_dtype_NOT_BEM.onnx`, /input_ids is float32/],
      [`${FIX}/bem_bad_output_NOT_BEM.onnx`, /do not give two logits/],
    ] as const
  ) {
    const exit = await Effect.runPromise(Effect.flip(Effect.provide(
      Bem.use((b) => b.score([SEED])),
      BemLive({ model }),
    )));
    assert(exit instanceof BemError, String(exit));
    assertEquals(exit.exitCode, 2);
    assertMatch(exit.message, re);
    assert(!exit.message.includes("\n"));
  }
});

// ---------------------------------------------------------------------------
// the CLIs
// ---------------------------------------------------------------------------

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
    // (Python onnxruntime when installed, else our session) from the dumped inputs.
    const inputs = dump.map((d) => ({
      input_ids: d.input_ids.slice(0, d.length),
      segment_ids: d.segment_ids.slice(0, d.length),
    }));
    let logits = await ortLogits(SURROGATE, inputs);
    if (!logits) {
      const sess = await openBemSession(SURROGATE, { threads: 2 });
      const v = sessionValueInfo(sess);
      const iface = bemInterface(v.inputs, v.outputs);
      assert(typeof iface !== "string");
      const flat = await runBemBatch(sess, iface, batchOf(inputs));
      await sess.release();
      logits = inputs.map((_, i) => [flat[2 * i], flat[2 * i + 1]]);
    }
    const byQ = new Map<string, number[]>();
    dump.forEach((d, i) => {
      const p = softmax1(logits![i][0], logits![i][1]);
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

Deno.test("bem: scoring a list of BemInputs keeps order", async () => {
  const tok = defaultBemTokenizer();
  const xs: BemInputs[] = [SEED, { ...SEED, candidate: "blue" }, SEED].map((t) =>
    bemInputs(t, tok)
  );
  const s = await withBem({ model: SURROGATE }, (b) => b.scoreInputs(xs));
  assertEquals(s[0], s[2]);
  assert(s[0] !== s[1]);
});
