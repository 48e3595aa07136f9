/**
 * `runs/summary/provenance.ts` on hand-made run folders (no encoder runs): a
 * system's entry holds every field, and each sha256 equals coreutils'
 * `sha256sum` on the same file (a folder's: `sha256sum` over its files in
 * name order, piped into `sha256sum`); paths inside the run folder are
 * relative; a `predictions` model has no encoder or dumps; the run block
 * holds format, command, flags, tool (= deno.json, git), normalizer,
 * machine, seeds and config.
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals } from "../../_assert.ts";
import { folderSum, ROOT, sha256sum } from "../../_util.ts";
import { NORMALIZER_VERSION } from "../../../metrics/squad_text.ts";
import {
  PROVENANCE_FORMAT,
  runProvenance,
  systemProvenance,
} from "../../../runs/summary/provenance.ts";
import { runLayout } from "../../../runs/plan/layout.ts";
import { singleRunConfig, singleRunLayout } from "../../../runs/single.ts";
import type { EncoderSpec } from "../../../encoders/registry.ts";

const size = (p: string) => Deno.statSync(p).size;

Deno.test("systemProvenance of a full folder: every field, each sha256 = sha256sum's", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-prov-full-" });
  try {
    const out = `${dir}/run`;
    const data = `${dir}/d.json`;
    await Deno.writeTextFile(data, '{"version": "1.1", "data": []}');
    await Deno.mkdir(`${dir}/model`);
    await Deno.writeFile(`${dir}/model/context.onnx`, new Uint8Array([1, 2, 3, 4]));
    await Deno.writeFile(`${dir}/model/question.onnx`, new Uint8Array([5, 6]));
    await Deno.writeTextFile(`${dir}/model/vocab.txt`, "[PAD]\n");
    for (const half of ["context_emb", "question_emb"]) {
      await Deno.mkdir(`${out}/dumps/${half}`, { recursive: true });
      await Deno.writeTextFile(`${out}/dumps/${half}/.phraseval-dump.json`, "{}");
    }
    await Deno.writeFile(`${out}/dumps/context_emb/T_0.npz`, new Uint8Array(5000).fill(7));
    await Deno.writeTextFile(`${out}/dumps/context_emb/T_0.json`, '["a", "b"]');
    await Deno.writeFile(`${out}/dumps/question_emb/q1.npz`, new Uint8Array([9, 9, 9]));
    await Deno.writeTextFile(`${out}/pred.json`, '{"q1": "a"}');
    await Deno.writeTextFile(`${out}/rows.ndjson`, '{"id": "q1"}\n');
    const spec = {
      name: "enc",
      sparse: false,
      contextFiles: [`${dir}/model/context.onnx`, `${dir}/model/vocab.txt`],
      questionFiles: [`${dir}/model/question.onnx`, `${dir}/model/vocab.txt`],
    } as unknown as EncoderSpec;
    const cfg = singleRunConfig(data, spec, `${out}/full.ts`, false, undefined, "f32");
    const s = await Effect.runPromise(
      systemProvenance(singleRunLayout(out), cfg.models[0], cfg.datasets[0]),
    );
    assertEquals(s, {
      model: "enc",
      dataset: "data",
      data: { path: data, sha256: await sha256sum(data), bytes: size(data) },
      encoder: {
        name: "enc",
        model: null,
        dtype: "f32",
        sparse: false,
        device: "cpu",
        files: {
          context: {
            "context.onnx": await sha256sum(`${dir}/model/context.onnx`),
            "vocab.txt": await sha256sum(`${dir}/model/vocab.txt`),
          },
          question: {
            "question.onnx": await sha256sum(`${dir}/model/question.onnx`),
            "vocab.txt": await sha256sum(`${dir}/model/vocab.txt`),
          },
        },
      },
      dumps: {
        context: {
          path: "dumps/context_emb",
          sha256: await folderSum(`${out}/dumps/context_emb`),
          files: 2,
          bytes: 5000 + size(`${out}/dumps/context_emb/T_0.json`),
        },
        question: {
          path: "dumps/question_emb",
          sha256: await folderSum(`${out}/dumps/question_emb`),
          files: 1,
          bytes: 3,
        },
      },
      predictions: {
        path: "pred.json",
        sha256: await sha256sum(`${out}/pred.json`),
        bytes: size(`${out}/pred.json`),
      },
      rows: {
        path: "rows.ndjson",
        sha256: await sha256sum(`${out}/rows.ndjson`),
        bytes: size(`${out}/rows.ndjson`),
      },
    });
    // The block around it.
    const block = runProvenance({
      command: "full",
      flags: { encoder: "enc", dtype: "f32" },
      seeds: {},
      config: cfg,
      systems: [s],
    });
    assertEquals(Object.keys(block), [
      "format",
      "command",
      "flags",
      "tool",
      "normalizer",
      "machine",
      "seeds",
      "config",
      "systems",
    ]);
    assertEquals(block.format, PROVENANCE_FORMAT);
    assertEquals(block.normalizer, NORMALIZER_VERSION);
    assertEquals(
      block.tool.version,
      JSON.parse(Deno.readTextFileSync(`${ROOT}/deno.json`)).version,
    );
    assertEquals(
      [block.machine.os, block.machine.arch, block.machine.deno],
      [Deno.build.os, Deno.build.arch, Deno.version.deno],
    );
    assert(block.machine.cpus >= 1 && !("hostname" in block.machine));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("systemProvenance of a run's predictions model: no encoder, no dumps; an open search's predictions", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-prov-run-" });
  try {
    const run = `${dir}/20260101_000000`;
    const L = runLayout(run);
    await Deno.mkdir(`${run}/predictions/pm`, { recursive: true });
    await Deno.mkdir(`${run}/open/pm`, { recursive: true });
    const data = `${dir}/set.json`;
    await Deno.writeTextFile(data, '{"version": "1.1", "data": []}');
    await Deno.writeTextFile(L.prediction("pm", "ds"), '{"q": "x"}');
    await Deno.writeTextFile(L.openPrediction("pm", "ds"), '{"q": "y"}');
    const model = {
      abbr: "pm",
      predictions: { ds: L.prediction("pm", "ds") },
      encoder: "predictions",
      model: null,
      device: "cpu",
      threads: null,
      batch: { context: null, question: null },
      dtype: null,
      sparse: false,
      contextFiles: [],
      questionFiles: [],
      permissions: [],
    } as const;
    const ds = {
      abbr: "ds",
      type: "squad",
      path: data,
      articles: null,
      open: { topK: 5 },
      metrics: ["em", "f1"],
      bem: null,
    } as const;
    const s = await Effect.runPromise(systemProvenance(L, model, ds));
    assertEquals(s, {
      model: "pm",
      dataset: "ds",
      data: { path: data, sha256: await sha256sum(data), bytes: size(data) },
      encoder: null,
      dumps: null,
      predictions: {
        path: "predictions/pm/ds.json",
        sha256: await sha256sum(L.prediction("pm", "ds")),
        bytes: size(L.prediction("pm", "ds")),
      },
      rows: null,
      open_predictions: {
        path: "open/pm/ds.json",
        sha256: await sha256sum(L.openPrediction("pm", "ds")),
        bytes: size(L.openPrediction("pm", "ds")),
      },
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
