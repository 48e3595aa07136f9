/**
 * BEM's inputs (`metrics/bem/inputs.ts`): assembly, segments, truncation,
 * padding, the score from two logits, and the max over gold answers.
 */
import { assert, assertEquals } from "../../_assert.ts";
import {
  bemAssemble,
  bemInputs,
  bemOfQuestion,
  type BemTriple,
  defaultBemTokenizer,
  padBemInputs,
  softmax1,
} from "../../../metrics/bem/mod.ts";
import { assertClose, golden, SEED } from "./_helpers.ts";

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
