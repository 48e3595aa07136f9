/**
 * The BEM service (`metrics/bem/service.ts`): batching, padding, dedup,
 * errors, order.
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals, assertMatch } from "../../_assert.ts";
import { ROOT } from "../../_util.ts";
import {
  Bem,
  type BemBatch,
  BemError,
  type BemInputs,
  bemInputs,
  bemInterface,
  BemLive,
  type BemTriple,
  defaultBemTokenizer,
  makeBem,
  openBemSession,
  runBemBatch,
  sessionValueInfo,
  softmax1,
} from "../../../metrics/bem/mod.ts";
import { assertClose, batchOf, devSlice, FIX, SEED, SURROGATE, withBem } from "./_helpers.ts";

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

Deno.test("bem: scoring a list of BemInputs keeps order", async () => {
  const tok = defaultBemTokenizer();
  const xs: BemInputs[] = [SEED, { ...SEED, candidate: "blue" }, SEED].map((t) =>
    bemInputs(t, tok)
  );
  const s = await withBem({ model: SURROGATE }, (b) => b.scoreInputs(xs));
  assertEquals(s[0], s[2]);
  assert(s[0] !== s[1]);
});
