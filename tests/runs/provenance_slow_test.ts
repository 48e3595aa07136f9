/**
 * Provenance blocks written by whole runs (slow: each runs the encoders):
 * `full` on three paragraphs of dev writes `provenance.json` with every
 * field, each sha256 equal to coreutils' `sha256sum` on the same file (a
 * dump folder's: `sha256sum` over its files in name order, piped into
 * `sha256sum`), the commit equal to `git rev-parse HEAD`; a second run that
 * differs by `--dtype` gives `report --diff` exactly the keys that follow
 * from it; `--dtype` with a sparse encoder is refused (one line, exit 2,
 * nothing written); `run` writes one entry per model × dataset.
 */
import { assert, assertEquals, assertMatch, assertStringIncludes } from "../_assert.ts";
import { devJson, folderSum, ROOT, runArgv, runStage, sha256sum } from "../_util.ts";

const TMP = await Deno.makeTempDir({ prefix: "pv-prov-slow-" });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(TMP, { recursive: true });
  } catch { /* gone */ }
});
const FULL_PERMS = ["--allow-read", "--allow-write", "--allow-run"];
const REPORT_PERMS = ["--allow-read", "--allow-write", "--allow-env"];

const DATA = `${TMP}/three.json`;
{
  const dev = JSON.parse(await Deno.readTextFile(await devJson()));
  const art = dev.data[0];
  await Deno.writeTextFile(
    DATA,
    JSON.stringify({
      version: "1.1",
      data: [{ ...art, paragraphs: art.paragraphs.slice(0, 3) }],
    }),
  );
}

const readJson = (p: string) => JSON.parse(Deno.readTextFileSync(p));

async function full(out: string, extra: string[]) {
  const r = await runStage(
    "pipeline/full.ts",
    ["--data", DATA, "--encoder", "piqa-lstm", "--out", out, ...extra],
    { permissions: FULL_PERMS },
  );
  assertEquals(r.code, 0, r.stderr);
}

Deno.test("full writes provenance.json: every field, sha256 = sha256sum; a --dtype twin's diff names exactly what it changes", async () => {
  const a = `${TMP}/a`, b = `${TMP}/b`;
  await full(a, ["--dtype", "f16"]);
  await full(b, ["--dtype", "f32"]);
  const p = readJson(`${a}/provenance.json`);
  assertEquals(Object.keys(p), [
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
  assertEquals([p.format, p.command], ["phraseval-provenance/1", "full"]);
  assertEquals(p.flags, {
    data: DATA,
    encoder: "piqa-lstm",
    dtype: "f16",
    out: a,
    "no-keep-dumps": false,
    overwrite: false,
    "unique-ids": false,
    open: false,
  });
  assertEquals(p.tool.version, readJson(`${ROOT}/deno.json`).version);
  const git = await runArgv(["git", "-C", ROOT, "rev-parse", "HEAD"]).catch(() => null);
  if (git?.code === 0) assertEquals(p.tool.commit, git.stdout.trim());
  assertMatch(p.normalizer, /^squad-normalize_answer\//);
  assertEquals(Object.keys(p.machine), ["os", "arch", "cpus", "deno", "v8", "typescript"]);
  assertEquals(p.seeds, {});
  assertEquals([p.config.models[0].encoder, p.config.models[0].dtype], ["piqa-lstm", "f16"]);
  assertEquals(p.systems.length, 1);
  const s = p.systems[0];
  assertEquals([s.model, s.dataset, s.encoder.name, s.encoder.dtype], [
    "piqa-lstm",
    "data",
    "piqa-lstm",
    "f16",
  ]);
  assertEquals(s.data, {
    path: DATA,
    sha256: await sha256sum(DATA),
    bytes: Deno.statSync(DATA).size,
  });
  const model = `${ROOT}/data/models/piqa-lstm`;
  assertEquals(s.encoder.files, {
    context: {
      "manifest.json": await sha256sum(`${model}/manifest.json`),
      "context.onnx": await sha256sum(`${model}/context.onnx`),
      "vocab.txt": await sha256sum(`${model}/vocab.txt`),
    },
    question: {
      "manifest.json": await sha256sum(`${model}/manifest.json`),
      "question.onnx": await sha256sum(`${model}/question.onnx`),
      "vocab.txt": await sha256sum(`${model}/vocab.txt`),
    },
  });
  for (const half of ["context", "question"] as const) {
    const d = `${a}/dumps/${half}_emb`;
    const names = [...Deno.readDirSync(d)].filter((e) => !e.name.startsWith("."));
    assertEquals(s.dumps[half], {
      path: `dumps/${half}_emb`,
      sha256: await folderSum(d),
      files: names.length,
      bytes: names.reduce((n, e) => n + Deno.statSync(`${d}/${e.name}`).size, 0),
    });
  }
  for (const [key, file] of [["predictions", "pred.json"], ["rows", "rows.ndjson"]]) {
    assertEquals(s[key], {
      path: file,
      sha256: await sha256sum(`${a}/${file}`),
      bytes: Deno.statSync(`${a}/${file}`).size,
    });
  }
  // report --diff: the dtype, and what it changes in the dumps; nothing else.
  const out = `${TMP}/diff`;
  const r = await runStage("pipeline/report.ts", ["--diff", a, b, "--out", out], {
    permissions: REPORT_PERMS,
  });
  assertEquals(r.code, 0, r.stderr);
  const d = readJson(`${out}/report.json`);
  assertEquals(d.provenance_diff.changed.map((c: { key: string }) => c.key), [
    "flags.dtype",
    "config.models[0].dtype",
  ]);
  const pair = d.pairs[0];
  const keys = pair.provenance.changed.map((c: { key: string }) => c.key);
  for (
    const k of [
      "system.encoder.dtype",
      "system.dumps.context.sha256",
      "system.dumps.context.bytes",
      "system.dumps.question.sha256",
      "system.dumps.question.bytes",
    ]
  ) assert(keys.includes(k), `${k} in ${keys}`);
  // Only the dumps and what they answered may differ besides the dtype.
  for (const k of keys) {
    assertMatch(k, /^system\.(encoder\.dtype|dumps\.|predictions\.|rows\.)/);
  }
  const q = readJson(`${a}/result.json`).total;
  assertEquals(pair.questions, q);
  assertStringIncludes(r.stdout, `piqa-lstm on three (${q} questions)`);
});

Deno.test("full --dtype with a sparse encoder: one line, exit 2, nothing written", async () => {
  const out = `${TMP}/sparse`;
  const r = await runStage("pipeline/full.ts", ["--data", DATA, "--dtype", "f16", "--out", out], {
    permissions: FULL_PERMS,
  });
  assertEquals(r.code, 2, r.stderr);
  assertEquals(
    r.stderr,
    "full: --dtype sets the dense dumps' element type; sparse-pi writes sparse ones\n",
  );
  let there = true;
  try {
    Deno.lstatSync(out);
  } catch {
    there = false;
  }
  assert(!there, "nothing written");
});

Deno.test("run writes provenance.json: one entry per model × dataset, the config after inheritance, its seed", async () => {
  const cfg = `${TMP}/two.ts`;
  await Deno.writeTextFile(`${TMP}/m1.json`, '{"56be4db0acb8001400a502ec": "Denver Broncos"}');
  await Deno.writeTextFile(`${TMP}/m2.json`, '{"56be4db0acb8001400a502ec": "Carolina"}');
  await Deno.writeTextFile(
    cfg,
    `export const config = {
  datasets: [{ abbr: "three", type: "squad", path: "${DATA}" }],
  models: [
    { abbr: "m1", type: "predictions", predictions: "${TMP}/m1.json" },
    { abbr: "m2", type: "predictions", predictions: "${TMP}/m2.json" },
  ],
};
`,
  );
  const r = await runStage("pipeline/run.ts", [cfg, "--work-dir", `${TMP}/work`], {
    permissions: ["--allow-read", "--allow-write", "--allow-run", "--allow-ffi"],
  });
  assertEquals(r.code, 0, r.stderr);
  const [run] = [...Deno.readDirSync(`${TMP}/work`)].map((e) => `${TMP}/work/${e.name}`);
  const p = readJson(`${run}/provenance.json`);
  assertEquals([p.command, p.seeds], ["run", { summary_bootstrap: 0 }]);
  assertEquals(p.flags["work-dir"], `${TMP}/work`);
  const { run: settings, ...config } = readJson(`${run}/configs/two.json`);
  assertEquals(p.config, { ...config, run: settings });
  assertEquals(
    p.systems.map((s: { model: string; dataset: string }) => `${s.model}/${s.dataset}`),
    ["m1/three", "m2/three"],
  );
  for (const s of p.systems) {
    assertEquals([s.encoder, s.dumps], [null, null]);
    const pred = `${run}/predictions/${s.model}/three.json`;
    assertEquals(s.predictions, {
      path: `predictions/${s.model}/three.json`,
      sha256: await sha256sum(pred),
      bytes: Deno.statSync(pred).size,
    });
    assertEquals(s.data.sha256, await sha256sum(DATA));
  }
});
