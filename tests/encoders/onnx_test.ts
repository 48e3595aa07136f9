/**
 * The ONNX encoder plumbing, proved on the tiny fixtures of
 * `tests/fixtures/make_tiny_onnx.py` (known weights in `weights.json`):
 * phrase formation, padding, batching (batch 1 = batch N), f16 storage,
 * direct phrase models, the WordPiece path, manifest errors (exact
 * messages), and the CUDA check on this machine.
 */
import * as Effect from "effect/Effect";
import {
  cudaProviderProblem,
  elfNeeded,
  encodeContexts,
  encodeQuestions,
  loadOnnxContext,
  loadOnnxQuestion,
  type OnnxContextModel,
  onnxFiles,
  onnxPermissions,
  ortBindingPath,
  ortBinDir,
  planRuns,
} from "../../encoders/onnx/encoder.ts";
import { casingClass, splitUnits } from "../../encoders/onnx/tokenizer.ts";
import type { DenseMatrix, EncodedContext, EncodedQuestion } from "../../encoders/types.ts";
import { assert, assertEquals } from "../_assert.ts";
import { listDir, python, ROOT, runStage } from "../_util.ts";

const DIR = `${ROOT}/tests/fixtures/onnx_tiny`;
const W = JSON.parse(Deno.readTextFileSync(`${DIR}/weights.json`)) as Record<string, number[][]>;
const VOCAB = Deno.readTextFileSync(`${DIR}/vocab.txt`).trim().split("\n");
const idOf = (u: string) => Math.max(VOCAB.indexOf(u.toLowerCase()), 0) || 1;

const run = <A, E>(e: Effect.Effect<A, E>) => Effect.runPromise(e);
const ctxModel = (m = "manifest.json", o = {}) =>
  run(loadOnnxContext(`${DIR}/${m}`, { threads: 1, ...o }));
const qModel = (m = "manifest.json", o = {}) =>
  run(loadOnnxQuestion(`${DIR}/${m}`, { threads: 1, ...o }));

const close = (a: ArrayLike<number>, b: ArrayLike<number>, tol: number, what: string) => {
  assertEquals(a.length, b.length, `${what}: length`);
  for (let k = 0; k < a.length; k++) {
    assert(Math.abs(a[k] - b[k]) <= tol, `${what}[${k}]: ${a[k]} vs ${b[k]}`);
  }
};

/** Expected phrase rows of the tiny spans model, computed from the weights in plain TS. */
function expectedSpans(text: string, spans: [number, number][]): number[] {
  const u = splitUnits(text).texts;
  const ids = u.map(idOf);
  const mean = [0, 1, 2].map((c) => ids.reduce((s, id) => s + W.ES[id][c], 0) / ids.length);
  const rows: number[] = [];
  for (const [i, j] of spans) {
    for (let c = 0; c < 3; c++) rows.push(W.ES[ids[i]][c] + W.CS[casingClass(u[i])][c] + mean[c]);
    for (let c = 0; c < 2; c++) rows.push(2 * W.EE[ids[j]][c]);
  }
  return rows;
}

const TEXTS = [
  "Paris is the capital of France.",
  "Where? A big city",
  "The capital of France is a big city in France, Paris.",
  "Paris",
  "",
];

Deno.test("units and casing follow the training tokenizer's rules", () => {
  assertEquals(splitUnits("U.S. $5.2m café 😀 x").texts, [
    "U",
    ".",
    "S",
    ".",
    "$",
    "5",
    ".",
    "2m",
    "café",
    "😀",
    "x",
  ]);
  const u = splitUnits("a 😀b");
  assertEquals([...u.start, ...u.end], [0, 2, 4, 1, 4, 5]); // UTF-16 offsets
  assertEquals(["USA", "U", "Paris", "iPhone", "1990s", "the", ".", "ÉCOLE"].map(casingClass), [
    3,
    2,
    2,
    1,
    4,
    1,
    5,
    3,
  ]);
});

Deno.test("spans model: phrases are exact substrings, rows are [start_i ; end_j]", async () => {
  const m = await ctxModel();
  const [c] = await encodeContexts(m, [{ id: "p", context: TEXTS[0] }]);
  // units: Paris is the capital of France . ; maxTokens 3, no boundary on the/a or punctuation
  const want: [number, number, string][] = [
    [0, 0, "Paris"],
    [0, 1, "Paris is"],
    [1, 1, "is"],
    [1, 3, "is the capital"],
    [3, 3, "capital"],
    [3, 4, "capital of"],
    [3, 5, "capital of France"],
    [4, 4, "of"],
    [4, 5, "of France"],
    [5, 5, "France"],
  ];
  assertEquals(c.phrases.map((p) => p.text), want.map((w) => w[2]));
  for (const p of c.phrases) assertEquals(TEXTS[0].slice(p.start, p.end), p.text);
  const mat = c.matrix as DenseMatrix;
  assertEquals([mat.rows, mat.cols, mat.dtype], [10, 5, "f32"]);
  close(mat.data, expectedSpans(TEXTS[0], want.map(([i, j]) => [i, j])), 1e-6, "rows");
});

Deno.test("padding and batching: batch N equals batch 1, results in input order", async () => {
  const m = await ctxModel();
  const items = TEXTS.map((context, k) => ({ id: `p${k}`, context }));
  const one: EncodedContext[] = [];
  for (const it of items) one.push(...await encodeContexts(m, [it]));
  const all = await encodeContexts(m, items);
  // Force several runs of at most 2 items (sorted by length, then put back in order).
  const small: OnnxContextModel = { ...m, maxBatch: 2, maxPositions: 24 };
  const runs = await encodeContexts(small, items);
  for (const got of [all, runs]) {
    assertEquals(got.map((c) => c.id), items.map((i) => i.id));
    got.forEach((c, k) => {
      assertEquals(c.phrases, one[k].phrases);
      assertEquals([...(c.matrix as DenseMatrix).data], [...(one[k].matrix as DenseMatrix).data]);
    });
  }
  assertEquals(all[4].matrix.rows, 0); // empty context: no phrases
});

Deno.test("planRuns sorts by length and respects both limits", () => {
  assertEquals(planRuns([3, 10, 4, 9], 2, 100), [[1, 3], [2, 0]]);
  assertEquals(planRuns([5, 5, 5, 5, 5], 10, 12), [[0, 1], [2, 3], [4]]);
  assertEquals(planRuns([50, 1], 8, 10), [[0], [1]]);
});

Deno.test("question model: mean of EQ over the real tokens, lengths-masked", async () => {
  const q = await qModel();
  const qs = ["Where is Paris?", "What city", "big", ""].map((question, k) => ({
    id: `q${k}`,
    question,
  }));
  const out = await encodeQuestions(q, qs);
  const single: EncodedQuestion[] = [];
  for (const x of qs) single.push(...await encodeQuestions(q, [x]));
  qs.forEach((x, k) => {
    const ids = splitUnits(x.question).texts.map(idOf);
    const want = [0, 1, 2, 3, 4].map((c) =>
      ids.length ? ids.reduce((s, id) => s + W.EQ[id][c], 0) / ids.length : 0
    );
    const v = out[k].vector as DenseMatrix;
    assertEquals([v.rows, v.cols], [1, 5]);
    close(v.data, want, 1e-6, x.question);
    assertEquals([...v.data], [...(single[k].vector as DenseMatrix).data]);
  });
});

Deno.test("f16 storage: the f32 values rounded to f16", async () => {
  const m32 = await ctxModel();
  const m16 = await ctxModel("manifest.json", { store: "f16" });
  const [a] = await encodeContexts(m32, [{ id: "p", context: TEXTS[2] }]);
  const [b] = await encodeContexts(m16, [{ id: "p", context: TEXTS[2] }]);
  const mb = b.matrix as DenseMatrix;
  assertEquals(mb.dtype, "f16");
  assert(mb.data instanceof Float16Array);
  assertEquals([...mb.data], [...Float16Array.from((a.matrix as DenseMatrix).data)]);
});

Deno.test("direct model (f16 output): fed the spans, rows [ED[s] ; ED[e] ; e - s]", async () => {
  const m = await ctxModel("manifest_direct.json");
  const texts = [TEXTS[1], TEXTS[0]];
  const out = await encodeContexts(m, texts.map((context, k) => ({ id: `d${k}`, context })));
  texts.forEach((text, k) => {
    const u = splitUnits(text).texts;
    const ids = u.map(idOf);
    const want: number[] = [];
    const phrases: string[] = [];
    for (let i = 0; i < u.length; i++) {
      for (let j = i; j < Math.min(u.length, i + 2); j++) {
        want.push(...W.ED[ids[i]], ...W.ED[ids[j]], j - i);
        phrases.push(text.slice(splitUnits(text).start[i], splitUnits(text).end[j]));
      }
    }
    const mat = out[k].matrix as DenseMatrix;
    assertEquals(out[k].phrases.map((p) => p.text), phrases);
    assertEquals(mat.dtype, "f16");
    assertEquals([...mat.data], [...Float16Array.from(want)]);
  });
});

Deno.test("WordPiece path: pieces via @huggingface/tokenizers, phrases on units", async () => {
  const m = await ctxModel("manifest_wordpiece.json");
  const t = m.tokenizer.tokenize("Unaffable runs, Paris");
  // [CLS] un ##aff ##able runs , paris [SEP]
  assertEquals(t.ids, [2, 4, 5, 6, 7, 16, 8, 3]);
  assertEquals([...t.first], [1, 4, 5, 6]);
  assertEquals([...t.last], [3, 4, 5, 6]);
  const [c] = await encodeContexts(m, [{ id: "w", context: "Unaffable runs, Paris" }]);
  assertEquals(c.phrases.map((p) => p.text), ["Unaffable", "Unaffable runs", "runs", "Paris"]);
  const row = (s: number, e: number) => [...W.WS[s].map((v) => v + 1), ...W.WE[e]];
  close(
    (c.matrix as DenseMatrix).data,
    [...row(4, 6), ...row(4, 7), ...row(7, 7), ...row(8, 8)],
    1e-6,
    "wp",
  );
  // maxTokens 8: whole units only (france = fr ##ance does not fit), [SEP] kept
  const long = m.tokenizer.tokenize("paris is the capital of france paris");
  assertEquals(long.ids, [2, 8, 9, 10, 11, 12, 3]);
  assertEquals([...long.first], [1, 2, 3, 4, 5, -1, -1]);
});

async function withManifest(
  // deno-lint-ignore no-explicit-any
  edit: (m: Record<string, any>) => void,
  copyModels = true,
): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "onnx_manifest_" });
  const m = JSON.parse(await Deno.readTextFile(`${DIR}/manifest.json`));
  if (copyModels) {
    for (const f of ["context.onnx", "question.onnx", "vocab.txt"]) {
      await Deno.copyFile(`${DIR}/${f}`, `${dir}/${f}`);
    }
  }
  edit(m);
  await Deno.writeTextFile(`${dir}/manifest.json`, JSON.stringify(m));
  return dir;
}

/** The error of loading one half from a `withManifest` folder, which is then removed. */
async function loadError(dir: string, half: "context" | "question" = "context"): Promise<string> {
  try {
    const eff = half === "context"
      ? Effect.asVoid(loadOnnxContext(`${dir}/manifest.json`))
      : Effect.asVoid(loadOnnxQuestion(`${dir}/manifest.json`));
    const r = await Effect.runPromise(Effect.flip(eff));
    assertEquals((r as unknown as { exitCode: number }).exitCode, 2);
    return r.message;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("manifest errors: exact messages", async () => {
  let dir = await withManifest(() => {}, false);
  assertEquals(
    await loadError(dir),
    `manifest ${dir}/manifest.json: context.model: file not found: ${dir}/context.onnx`,
  );
  dir = await withManifest((m) => (m.context.inputs[0].name = "input_idz"));
  assertEquals(
    await loadError(dir),
    `manifest ${dir}/manifest.json: context.inputs[0].name: "input_idz" is not an input of ` +
      `context.onnx (its inputs: input_ids, casing, mask)`,
  );
  dir = await withManifest((m) => (m.question.inputs[1].dtype = "int64"));
  assertEquals(
    await loadError(dir, "question"),
    `manifest ${dir}/manifest.json: question.inputs[1].dtype: int64 in the manifest, int32 in ` +
      `question.onnx (input "lengths")`,
  );
  dir = await withManifest((m) => (m.context.outputs.end.dtype = "float16"));
  assertEquals(
    await loadError(dir),
    `manifest ${dir}/manifest.json: context.outputs.end.dtype: float16 in the manifest, float32 in ` +
      `context.onnx (output "end")`,
  );
  dir = await withManifest((m) => (m.store = "f8"));
  assertEquals(
    await loadError(dir),
    `manifest ${dir}/manifest.json: store: expected "f32" | "f16"`,
  );
  dir = await withManifest((m) => delete m.context.outputs.end);
  assertEquals(
    await loadError(dir),
    `manifest ${dir}/manifest.json: context.outputs.end: missing key (phrases.kind "spans")`,
  );
  dir = await withManifest((m) => (m.dim = 6));
  assertEquals(
    await loadError(dir),
    `manifest ${dir}/manifest.json: dim: 6 in the manifest, 5 from the outputs of context.onnx`,
  );
  dir = await withManifest((m) => (m.context.inputs = m.context.inputs.slice(0, 2)));
  assertEquals(
    await loadError(dir),
    `manifest ${dir}/manifest.json: context.inputs: context.onnx has an input "mask" the ` +
      `manifest does not feed`,
  );
});

Deno.test("files and permissions of each half", () => {
  assertEquals(onnxFiles(`${DIR}/manifest.json`, "question"), [
    `${DIR}/manifest.json`,
    `${DIR}/question.onnx`,
    `${DIR}/vocab.txt`,
  ]);
  assertEquals(onnxPermissions("cpu"), { ffi: [ortBindingPath()], read: [] });
  assertEquals(onnxPermissions("cuda"), { ffi: "all", read: [ortBinDir()] });
});

Deno.test("an encoder process runs with only its files and --allow-ffi=<addon>", async () => {
  const out = await Deno.makeTempDir({ prefix: "onnx_perm_" });
  try {
    const input = `${out}/q.ndjson`;
    await Deno.writeTextFile(input, `{"kind":"question","id":"q1","question":"Where is Paris?"}\n`);
    const files = onnxFiles(`${DIR}/manifest.json`, "question");
    const r = await runStage("pipeline/embed_question.ts", [
      input,
      `${out}/emb`,
      "--encoder=piqa-lstm",
      `--model=${DIR}/manifest.json`,
      "--threads=1",
    ], {
      permissions: [
        "--no-prompt",
        `--allow-read=${[input, ...files, `${out}/emb`].join(",")}`,
        `--allow-write=${out}/emb`,
        `--allow-ffi=${ortBindingPath()}`,
      ],
    });
    assertEquals(r.code, 0, r.stderr);
    assert((await Deno.stat(`${out}/emb/q1.npz`)).size > 0);
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});

const CUDA_MISSING = `libonnxruntime_providers_shared.so not found in ${ortBinDir()} ` +
  `(onnxruntime-node's CUDA provider is not installed; see encoders/ONNX.md, "CUDA")`;

Deno.test("CUDA check: names the missing library on this machine", async () => {
  assertEquals(await cudaProviderProblem(), CUDA_MISSING);
  // A stand-in provider that links to the CUDA 13 libraries: the first missing one is named.
  const fake = `${DIR}/fake_cuda`;
  assertEquals(await elfNeeded(`${fake}/libonnxruntime_providers_cuda.so`), [
    "libcublasLt.so.13",
    "libcublas.so.13",
    "libcurand.so.10",
    "libcudart.so.13",
    "libcuda.so.1",
    "libc.so.6",
  ]);
  let present = true;
  try {
    Deno.dlopen("libcublasLt.so.13", {}).close();
  } catch {
    present = false;
  }
  if (!present) {
    assertEquals(
      await cudaProviderProblem(fake),
      "libcublasLt.so.13 not found, needed by libonnxruntime_providers_cuda.so (searched " +
        "LD_LIBRARY_PATH, ldconfig's cache and the system folders; install cuBLAS 13)",
    );
  }
});

Deno.test("--device cuda exits 2 with that line; --device auto falls back to cpu", async () => {
  const out = await Deno.makeTempDir({ prefix: "onnx_cuda_" });
  try {
    const input = `${out}/q.ndjson`;
    await Deno.writeTextFile(input, `{"kind":"question","id":"q1","question":"Where is Paris?"}\n`);
    const args = [input, `${out}/emb`, "--encoder=piqa-lstm", `--model=${DIR}/manifest.json`];
    const cuda = await runStage("pipeline/embed_question.ts", [...args, "--device=cuda"]);
    assertEquals(cuda.code, 2);
    assertEquals(cuda.stderr.trim(), `embed_question: --device cuda: ${CUDA_MISSING}`);
    assert(!(await Deno.stat(`${out}/emb/q1.npz`).then(() => true, () => false)));
    const auto = await runStage("pipeline/embed_question.ts", [...args, "--device=auto"]);
    assertEquals(auto.code, 0, auto.stderr);
    assertEquals(
      auto.stderr.trim().split("\n")[0],
      `tiny-spans: --device auto: CUDA unavailable (${CUDA_MISSING}); using cpu`,
    );
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});

Deno.test("fixtures: make_tiny_onnx.py writes the committed onnx_tiny models, weights and manifests", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "phraseval-onnx-tiny-" });
  try {
    await python(["tests/fixtures/make_tiny_onnx.py", tmp]);
    const written = await listDir(tmp);
    const committed = (await listDir(DIR)).filter((n) => n !== "fake_cuda");
    assertEquals(written, committed);
    const models = written.filter((n) => n.endsWith(".onnx"));
    assertEquals(models, ["context.onnx", "direct.onnx", "question.onnx", "wp_context.onnx"]);
    // The models: the same graphs and opsets (tests/py/onnx_same.py), whatever onnx release wrote them.
    const same = await python(["tests/py/onnx_same.py", tmp, DIR, ...models]);
    assertEquals(same.stdout, "same\n");
    for (const n of written.filter((n) => !n.endsWith(".onnx"))) {
      const [ours, theirs] = [
        Deno.readTextFileSync(`${tmp}/${n}`),
        Deno.readTextFileSync(`${DIR}/${n}`),
      ];
      // JSON files are compared as values: the committed ones are formatted by `deno fmt`.
      if (n.endsWith(".json")) assertEquals(JSON.parse(ours), JSON.parse(theirs), n);
      else assertEquals(ours, theirs, n);
    }
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
