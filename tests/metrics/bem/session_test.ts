/**
 * BEM's ONNX session side (`metrics/bem/session.ts`): the surrogate's logits
 * against NumPy and Python onnxruntime, and the interface checks.
 */
import { assert, assertEquals, assertMatch } from "../../_assert.ts";
import {
  bemInputs,
  bemInterface,
  openBemSession,
  runBemBatch,
  sessionValueInfo,
} from "../../../metrics/bem/mod.ts";
import { assertClose, batchOf, FIX, MINI, ortLogits, SEED, SURROGATE } from "./_helpers.ts";

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
      assertClose(ours, live.flat(), 1e-5, `${kind} vs live Python onnxruntime`);
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
