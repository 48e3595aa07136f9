/**
 * `merge` against the numpy/scipy reference (`bench/reference/merge.py`):
 * byte-identical predictions and identical `Missing` lines on synthetic dumps
 * of a few dev articles (dense f32 stored and compressed, f16, sparse CSR and
 * CSC, zips); the exact-score rules (first maximum, near ties); piping into
 * `evaluate`; and every bad input (exit 2, one line naming the file, no
 * pred.json left behind).
 */
import { mulberry32 as rng } from "../../../bench/perturb.ts";
import { assert, assertEquals, assertMatch, assertStringIncludes } from "../../_assert.ts";
import {
  childResult,
  DEV_GZ,
  listDir,
  python,
  ROOT,
  runArgv,
  runStage,
  spawnChild,
} from "../../_util.ts";
import { ndarray, parseNpy } from "../../../io/npy.ts";
import { extractZipEntry, readZipDirectory } from "../../../io/zip.ts";
import { encodeNpz, encodeSparseNpz } from "../../../io/npz.ts";
import { encodeZipRaw } from "../../../io/_zip_internal.ts";
import { decodeDumpMatrix, openDumpSync } from "../../../io/dump/reader.ts";
import type { CsrMatrix, DenseMatrix, Matrix } from "../../../io/matrix.ts";
import {
  bestDenseRows,
  bestSparseRows,
  fsum,
  merge,
  mergeBatch,
  planMerge,
  simdAvailable,
} from "../../../search/mod.ts";
import { batchesOf, SQUAD_OPTS } from "../../../search/merge/plan.ts";
import { EarlyPool } from "../../../search/merge/early.ts";
import { squadQuestionParagraphs } from "../../../io/squad_ids.ts";
import * as Effect from "effect/Effect";

const MERGE = "pipeline/merge.ts";
const REF = "bench/reference/merge.py";
const enc = new TextEncoder();
const datasetQ2c = (bytes: Uint8Array) => squadQuestionParagraphs(bytes, SQUAD_OPTS);

// ---------------------------------------------------------------------------
// Exact summation.

/** Adversarial sums: wide exponents, cancellation, half-way cases, f32 products. */
function fsumCases(): number[][] {
  const r = rng(7);
  const cases: number[][] = [
    [],
    [0],
    [-0],
    [1e16, 1, 1e-16],
    [1, 1e100, 1, -1e100],
    [0.1, 0.2, 0.3],
    [1, 2 ** -53],
    [1, 2 ** -53, 2 ** -106],
    [1, -(2 ** -53), -(2 ** -106)],
    [2 ** 53, 1, 2 ** -30],
    [2 ** 53, -1, -(2 ** -30)],
    [1.7976931348623157e308, -1.7976931348623157e308, 1],
    [5e-324, 5e-324, -5e-324],
    [1e308, 1e292, -1e308],
    [3, -(2 ** -60), 2 ** -120],
    Array.from({ length: 1000 }, (_, i) => (i % 2 ? 1 : -1) * (1 + 2 ** -52 * i)),
  ];
  for (let c = 0; c < 300; c++) {
    const n = 1 + Math.floor(r() * 60);
    const xs: number[] = [];
    for (let i = 0; i < n; i++) {
      const kind = r();
      if (kind < 0.3) {
        // products of float32 values, as merge sums them
        const a = Math.fround((r() - 0.5) * 2 ** Math.floor(r() * 80 - 40));
        const b = Math.fround((r() - 0.5) * 2 ** Math.floor(r() * 80 - 40));
        xs.push(a * b);
      } else if (kind < 0.6) {
        xs.push((r() - 0.5) * 2 ** Math.floor(r() * 200 - 100));
      } else if (kind < 0.8 && xs.length > 0) {
        xs.push(-xs[Math.floor(r() * xs.length)] * (1 + (r() < 0.5 ? 2 ** -52 : 0)));
      } else {
        xs.push(2 ** Math.floor(r() * 120 - 60) * (r() < 0.5 ? 1 : -1));
      }
    }
    cases.push(xs);
  }
  return cases;
}

const hex = (x: number) => {
  const b = new DataView(new ArrayBuffer(8));
  b.setFloat64(0, x);
  return b.getBigUint64(0).toString(16).padStart(16, "0");
};

Deno.test("fsum: bit for bit Python's math.fsum on adversarial inputs", async () => {
  const cases = fsumCases();
  const script = `
import json, math, struct, sys
def f(h): return struct.unpack('>d', bytes.fromhex(h))[0]
out = []
for xs in json.load(sys.stdin):
    out.append(struct.pack('>d', math.fsum(f(h) for h in xs)).hex())
print(json.dumps(out))`;
  const r = await python(["-c", script], JSON.stringify(cases.map((xs) => xs.map(hex))));
  const expected = JSON.parse(r.stdout) as string[];
  assertEquals(expected.length, cases.length);
  let plainDiffers = 0;
  for (let i = 0; i < cases.length; i++) {
    const got = hex(fsum(cases[i]));
    assertEquals(got, expected[i], `case ${i}: ${JSON.stringify(cases[i].slice(0, 8))}`);
    if (hex(cases[i].reduce((a, b) => a + b, 0)) !== got) plainDiffers++;
  }
  assert(plainDiffers > 50, `only ${plainDiffers} cases where plain summation differs`);
  // A length below the array's, as merge passes its scratch buffer.
  assertEquals(fsum(new Float64Array([1, 2, 1e300]), 2), 3);
});

Deno.test("fsum: infinities and NaN as math.fsum", () => {
  assertEquals(fsum([Infinity, 1, 2]), Infinity);
  assertEquals(fsum([-Infinity, 1e308]), -Infinity);
  assert(Number.isNaN(fsum([NaN, 1])));
  let threw = "";
  try {
    fsum([Infinity, -Infinity]);
  } catch (e) {
    threw = (e as Error).message;
  }
  assertEquals(threw, "-inf + inf in fsum");
  try {
    fsum([1e308, 1e308]);
  } catch (e) {
    threw = (e as Error).message;
  }
  assertEquals(threw, "intermediate overflow in fsum");
});

// ---------------------------------------------------------------------------
// Scoring rules.

const dense = (rows: number[][], dtype: "f32" | "f16" = "f32"): DenseMatrix => {
  const cols = rows[0]?.length ?? 0;
  const flat = rows.flat();
  return {
    kind: "dense",
    rows: rows.length,
    cols,
    dtype,
    data: dtype === "f32" ? new Float32Array(flat) : new Float16Array(flat),
  };
};

Deno.test("bestDenseRows: the first of equal rows wins; exact sums decide near ties", () => {
  const c = dense([[0, 1, 0], [1, 2, 3], [0, 0, 1], [1, 2, 3], [3, 2, 1]]);
  assertEquals([...bestDenseRows(c, [dense([[1, 1, 1]]), dense([[0, 0, 1]])])], [1, 1]);
  // Row 0's exact score is 1 (a left-to-right float64 sum gives 0); row 1's is 0.5.
  const big = Math.fround(1e16);
  const tricky = dense([[big, 1, -big, 0], [0.5, 0, 0, 0], [0, 0, 0, 0.25]]);
  const q = dense([[1, 1, 1, 1]]);
  assertEquals([...bestDenseRows(tricky, [q, q, dense([[0, 0, 0, 1]])])], [0, 0, 2]);
  // Scores that differ below float64 resolution of their terms: exact decides.
  const near = dense([[big, 1, -big], [big, 2, -big], [big, 2, -big]]);
  assertEquals([...bestDenseRows(near, [dense([[1, 1, 1]])])], [1]);
  // f16 matrices, many questions (blocks of 3, 2, 1), odd row counts.
  const r = rng(3);
  const rows = Array.from({ length: 37 }, () => Array.from({ length: 9 }, () => r() - 0.5));
  rows[4] = rows[4].map((x) => 8 * x + Math.sign(x));
  rows[30] = rows[4];
  const qs = Array.from({ length: 7 }, () => dense([rows[4].map((x) => x * 2)], "f16"));
  const got = [...bestDenseRows(dense(rows, "f16"), qs)];
  assertEquals(got, [4, 4, 4, 4, 4, 4, 4]);
  assertEquals([...bestDenseRows(dense([]), [q])], [-1]);
});

Deno.test("bestDenseRows: the SIMD float32 pass and the float64 pass pick the same rows", () => {
  assert(simdAvailable(), "WebAssembly SIMD kernels did not load");
  const r = rng(11);
  for (let trial = 0; trial < 60; trial++) {
    const n = 1 + Math.floor(r() * 70), d = 4 * (1 + Math.floor(r() * 24));
    const scale = 2 ** Math.floor(r() * 40 - 20);
    const rows = Array.from(
      { length: n },
      () => Array.from({ length: d }, () => (r() - 0.5) * scale),
    );
    // duplicates, one-ulp neighbours and rows that cancel exactly
    for (let t = 0; t < n / 4; t++) {
      const i = Math.floor(r() * n), j = Math.floor(r() * n);
      rows[j] = [...rows[i]];
      if (r() < 0.5) {
        const k = Math.floor(r() * d);
        rows[j][k] = Math.fround(rows[j][k]) * (1 + 2 ** -23);
      }
    }
    const nq = 1 + Math.floor(r() * 7);
    const qs = Array.from({ length: nq }, () => {
      const base = rows[Math.floor(r() * n)];
      return dense([base.map((x) => (r() < 0.2 ? x * 0.5 : x))]);
    });
    const c = dense(rows);
    const simd = [...bestDenseRows(c, qs)];
    const plain = [...bestDenseRows(c, qs, undefined, { simd: false })];
    assertEquals(simd, plain, `trial ${trial}`);
  }
  // Out of float32's safe range (products overflow): SIMD falls back, same answer.
  const huge = dense([[1e30, 0, 0, 0], [0, 2e30, 0, 0], [3e30, -3e30, 0, 1e30]]);
  const hq = dense([[1e30, 1e30, 1e30, 1e30]]);
  assertEquals([...bestDenseRows(huge, [hq])], [1]);
  assertEquals([...bestDenseRows(huge, [hq], undefined, { simd: false })], [1]);
  // Products that underflow in float32: exact re-scoring still orders them.
  const tiny = dense([[1e-30, 0, 0, 0], [2e-30, 0, 0, 0], [1e-30, 1e-30, 0, 0]]);
  const tq = dense([[1e-30, 1e-30, 0, 0]]);
  assertEquals([...bestDenseRows(tiny, [tq])], [1]);
  assertEquals([...bestDenseRows(tiny, [tq], undefined, { simd: false })], [1]);
});

Deno.test("bestSparseRows: stored order, duplicate columns and ties", () => {
  const csr = (rows: [number, number][][], cols: number): CsrMatrix => {
    const indptr = new Int32Array(rows.length + 1);
    const data: number[] = [], indices: number[] = [];
    rows.forEach((r, i) => {
      for (const [c, v] of r) {
        indices.push(c);
        data.push(v);
      }
      indptr[i + 1] = data.length;
    });
    return {
      kind: "csr",
      rows: rows.length,
      cols,
      data: new Float32Array(data),
      indices: new Int32Array(indices),
      indptr,
    };
  };
  const big = Math.fround(1e16);
  const c = csr([
    [[5, 0.5]],
    [[9, big], [3, 1], [9, -big]], // duplicate column 9: exact 1
    [[3, 1]],
    [],
  ], 1 << 20);
  assertEquals([...bestSparseRows(c, [csr([[[3, 1], [9, 1], [5, 1]]], 1 << 20)])], [1]);
  // Rows 1 and 2 tie exactly at 1 for this question: the first wins.
  assertEquals([...bestSparseRows(c, [csr([[[3, 1]]], 1 << 20)])], [1]);
  // A question with a duplicate column: both products count.
  assertEquals([...bestSparseRows(c, [csr([[[5, 1], [5, 2], [3, 1]]], 1 << 20)])], [0]);
  // No overlap at all: every score is 0, the first row wins.
  assertEquals([...bestSparseRows(c, [csr([[[100, 1]]], 1 << 20)])], [0]);
});

Deno.test("planMerge: dict semantics (first position, last paragraph)", () => {
  const plan = planMerge(new Map([["a", "P_0"], ["b", "P_1"], ["c", "P_0"]]));
  assertEquals(plan.questions, 3);
  assertEquals(plan.units.map((u) => [u.cid, [...u.slots], [...u.qids]]), [
    ["P_0", [0, 2], ["a", "c"]],
    ["P_1", [1], ["b"]],
  ]);
});

// ---------------------------------------------------------------------------
// Against the reference, on synthetic dumps of dev articles.

const TMP = await Deno.makeTempDir({ prefix: "merge_test_" });
// Removed when the test process ends, whichever tests ran (a --filter run too).
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(TMP, { recursive: true });
  } catch { /* already gone */ }
});

/** Dumps made by bench/make_dumps.py (cached per name within this run). */
const made = new Map<string, Promise<string>>();
function dumps(name: string, args: string[]): Promise<string> {
  let p = made.get(name);
  if (p === undefined) {
    const dir = `${TMP}/${name}`;
    p = python(["bench/make_dumps.py", DEV_GZ, dir, ...args]).then(() => dir);
    made.set(name, p);
  }
  return p;
}

interface Side {
  readonly code: number;
  readonly pred: string;
  readonly stderr: string;
}

async function reference(dir: string, flags: string[], c = "context_emb", q = "question_emb") {
  const argv = ["python3", `${ROOT}/${REF}`, "data.json", c, q, "ref.json", ...flags];
  const out = await runArgv(argv, { cwd: dir });
  const stderr = out.stderr;
  assertEquals(out.code, 0, stderr);
  return { code: out.code, pred: await Deno.readTextFile(`${dir}/ref.json`), stderr };
}

async function ours(dir: string, args: string[]): Promise<Side> {
  const out = await runArgv([Deno.execPath(), "run", "-A", `${ROOT}/${MERGE}`, ...args], {
    cwd: dir,
    env: { NO_COLOR: "1" },
  });
  const stderr = out.stderr;
  let pred = "";
  try {
    pred = await Deno.readTextFile(`${dir}/ours.json`);
    await Deno.remove(`${dir}/ours.json`);
  } catch {
    // none written
  }
  return { code: out.code, pred, stderr };
}

async function sameAsReference(
  name: string,
  make: string[],
  flags: string[],
  inputs: [string, string] = ["context_emb", "question_emb"],
  workers: string[][] = [[], ["--workers", "0"]],
) {
  const dir = await dumps(name, make);
  const ref = await reference(dir, flags);
  const answered = Object.keys(JSON.parse(ref.pred)).length;
  assert(answered > 10, `only ${answered} answers`);
  for (const w of workers) {
    const got = await ours(dir, ["data.json", ...inputs, "ours.json", ...flags, ...w]);
    assertEquals(got.code, 0, got.stderr);
    assert(got.pred === ref.pred, `${name} ${w.join(" ")}: pred.json differs from the reference`);
    assertEquals(got.stderr, ref.stderr, `${name}: stderr differs`);
  }
  return { dir, ref };
}

Deno.test("merge: dense f32 (numpy.savez) is byte-identical to the reference", async () => {
  await sameAsReference("f32", ["--articles", "2", "--paragraphs", "20"], [], undefined, [
    [],
    ["--workers", "0"],
    ["--no-simd"],
  ]);
});

Deno.test("merge: dense f32 compressed (savez_compressed) is byte-identical", async () => {
  await sameAsReference("f32c", ["--articles", "2", "--paragraphs", "12", "--compressed"], []);
});

Deno.test("merge: compressed and stored dumps of the same matrices give byte-identical pred.json", async () => {
  const args = ["--articles", "2", "--paragraphs", "12"];
  const [stored, compressed] = await Promise.all([
    dumps("f32s", args),
    dumps("f32c", [...args, "--compressed"]),
  ]);
  // The same paragraph is deflated in one dump and stored in the other.
  const name = (await listDir(`${compressed}/context_emb`)).find((n) => n.endsWith(".npz"))!;
  const method = async (dir: string) => {
    const bytes = await Deno.readFile(`${dir}/context_emb/${name}`);
    return readZipDirectory(bytes, name).find((e) => e.name === "arr_0.npy")!.method;
  };
  assertEquals([await method(stored), await method(compressed)], [0, 8]);
  for (const w of [[], ["--workers", "0"]]) {
    const a = await ours(stored, ["data.json", "context_emb", "question_emb", "ours.json", ...w]);
    const b = await ours(compressed, [
      "data.json",
      "context_emb",
      "question_emb",
      "ours.json",
      ...w,
    ]);
    assertEquals([a.code, b.code], [0, 0], a.stderr + b.stderr);
    assert(Object.keys(JSON.parse(a.pred)).length > 10, "too few answers");
    assert(a.pred === b.pred, `${w.join(" ")}: pred.json differs between stored and compressed`);
    assertEquals(b.stderr, a.stderr);
  }
});

Deno.test("merge: dense f16 is byte-identical", async () => {
  await sameAsReference("f16", ["--articles", "2", "--paragraphs", "12", "--dtype", "f16"], []);
});

Deno.test("merge: sparse CSR (scipy save_npz) is byte-identical", async () => {
  await sameAsReference("csr", ["--articles", "2", "--paragraphs", "10", "--sparse"], [
    "--sparse",
  ]);
});

Deno.test("merge: sparse CSC is converted and byte-identical", async () => {
  await sameAsReference(
    "csc",
    ["--articles", "1", "--paragraphs", "8", "--sparse", "--csc"],
    ["--sparse"],
    undefined,
    [[]],
  );
});

Deno.test("merge: zipped dumps and Missing lines match the reference on folders", async () => {
  const make = ["--articles", "2", "--paragraphs", "12", "--drop", "4", "--meta", "--zip"];
  const { dir, ref } = await sameAsReference("zip", make, []);
  const missing = ref.stderr.trim().split("\n");
  assert(missing.length >= 8 && missing.every((l) => l.startsWith("Missing ")), ref.stderr);
  assert(missing.some((l) => l.includes("question_emb/")), "a question file is missing");
  assert(missing.some((l) => /context_emb\/.*\.json$/.test(l)), "a phrase file is missing");
  // context_emb.zip has its entries under context_emb/, question_emb.zip at its root.
  for (const w of [[], ["--workers", "0"]]) {
    const got = await ours(dir, [
      "data.json",
      "context_emb.zip",
      "question_emb.zip",
      "ours.json",
      ...w,
    ]);
    assertEquals(got.code, 0, got.stderr);
    assert(got.pred === ref.pred, "pred.json from the zips differs");
    assertEquals(got.stderr, ref.stderr);
  }
  const c = openDumpSync(`${dir}/context_emb.zip`);
  assertEquals(c.root, "context_emb/");
  assert(c.list().some((n) => n.endsWith(".meta.json")));
  c.close();
  assertEquals(openDumpSync(`${dir}/question_emb.zip`).root, "");
});

Deno.test("merge: gzipped data and stdout output", async () => {
  const dir = await dumps("f32", ["--articles", "2", "--paragraphs", "20"]);
  const ref = await reference(dir, []);
  const gz = await python([
    "-c",
    `import gzip,shutil,sys; shutil.copyfileobj(open('${dir}/data.json','rb'), gzip.open('${dir}/data.json.gz','wb'))`,
  ]);
  assertEquals(gz.code, 0);
  const r = await runStage(MERGE, [
    `${dir}/data.json.gz`,
    `${dir}/context_emb`,
    `${dir}/question_emb`,
    "-",
  ]);
  assertEquals(r.code, 0, r.stderr);
  assert(r.stdout === ref.pred, "stdout differs from the reference pred.json");
});

Deno.test("merge: `merge ... -` piped into `evaluate data.json -` scores as the file", async () => {
  const dir = await dumps("f32", ["--articles", "2", "--paragraphs", "20"]);
  const data = `${dir}/data.json`;
  const spawn = (args: string[], stdin: "piped" | "null") =>
    spawnChild([Deno.execPath(), "run", "-A", ...args], { cwd: ROOT, stdin });
  const m = spawn([MERGE, data, `${dir}/context_emb`, `${dir}/question_emb`, "-"], "null");
  const e = spawn(["pipeline/evaluate.ts", data, "-"], "piped");
  await m.stdout.pipeTo(e.stdin);
  const [mo, eo] = await Promise.all([childResult(m), childResult(e)]);
  assertEquals(mo.code, 0, mo.stderr);
  assertEquals(eo.code, 0, eo.stderr);
  await reference(dir, []);
  const file = await runStage("pipeline/evaluate.ts", [data, `${dir}/ref.json`]);
  const piped = eo.stdout;
  assertEquals(piped, file.stdout);
  assertMatch(piped, /^\{"exact_match": [0-9.]+, "f1": [0-9.]+\}\n$/);
  assert(!piped.startsWith('{"exact_match": 0.0'), "synthetic answers should score above 0");
});

// ---------------------------------------------------------------------------
// Small hand-made dumps.

interface Fixture {
  readonly contexts?: Record<string, { npz: Uint8Array; phrases?: unknown }>;
  readonly questions?: Record<string, Uint8Array>;
  /** Paragraphs: [title, [[question ids of paragraph 0], ...]]. */
  readonly data: [string, string[][]][];
}

const npzDense = (rows: number[][], dtype: "f32" | "f16" = "f32") =>
  encodeNpz([
    ndarray(
      dtype === "f32" ? new Float32Array(rows.flat()) : new Float16Array(rows.flat()),
      [rows.length, rows[0]?.length ?? 4],
    ),
  ]);

const npzCsr = (rows: number[][]) => {
  const data: number[] = [], indices: number[] = [], indptr = [0];
  for (const r of rows) {
    r.forEach((v, i) => {
      if (v !== 0) {
        data.push(v);
        indices.push(i);
      }
    });
    indptr.push(data.length);
  }
  return encodeSparseNpz({
    format: "csr",
    shape: [rows.length, rows[0].length],
    data: ndarray(new Float32Array(data)),
    indices: ndarray(new Int32Array(indices)),
    indptr: ndarray(new Int32Array(indptr)),
  });
};

async function fixture(f: Fixture): Promise<string> {
  const dir = await Deno.makeTempDir({ dir: TMP, prefix: "fx_" });
  await Deno.mkdir(`${dir}/context_emb`);
  await Deno.mkdir(`${dir}/question_emb`);
  const data = {
    version: "1.1",
    data: f.data.map(([title, paras]) => ({
      title,
      paragraphs: paras.map((qids) => ({
        context: "one two three four",
        qas: qids.map((id) => ({
          id,
          question: "?",
          answers: [{ text: "two", answer_start: 4 }],
        })),
      })),
    })),
  };
  await Deno.writeTextFile(`${dir}/data.json`, JSON.stringify(data));
  for (const [id, c] of Object.entries(f.contexts ?? {})) {
    await Deno.writeFile(`${dir}/context_emb/${id}.npz`, c.npz);
    if (c.phrases !== undefined) {
      await Deno.writeTextFile(`${dir}/context_emb/${id}.json`, JSON.stringify(c.phrases));
    }
  }
  for (const [id, q] of Object.entries(f.questions ?? {})) {
    await Deno.writeFile(`${dir}/question_emb/${id}.npz`, q);
  }
  return dir;
}

const PHRASES = ["one", "two", "three", "four"];
const C4 = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]];

Deno.test("merge: duplicate rows, empty paragraphs (as the reference); a repeated question id is refused", async () => {
  const dir = await fixture({
    data: [["T", [["q1", "q2"], ["q3"]]], ["E", [["q4"]]]],
    contexts: {
      T_0: { npz: npzDense(C4), phrases: PHRASES },
      T_1: { npz: npzDense([[0, 0, 0, 1], [0, 0, 0, 1]]), phrases: ["x", "y"] },
      E_0: { npz: npzDense([[0, 0, 0, 0]].slice(0, 0)), phrases: [] },
    },
    questions: {
      q1: npzDense([[0, 3, 0, 0]]), // rows 1 and 2 tie: the first ("two") wins
      q2: npzDense([[0, 0, 1, 0]]), // row 3
      q3: npzDense([[0, 0, 0, 1]]), // x and y tie: "x"
      q4: npzDense([[1, 1, 1, 1]]), // no phrases: unanswered, no Missing line
    },
  });
  const ref = await reference(dir, []);
  for (const w of [[], ["--workers", "0"]]) {
    const got = await ours(dir, ["data.json", "context_emb", "question_emb", "ours.json", ...w]);
    assertEquals(got.code, 0, got.stderr);
    assertEquals(got.pred, ref.pred);
    assertEquals(got.stderr, "");
  }
  assertEquals(ref.pred, '{"q1": "two", "q2": "four", "q3": "x"}');
  // merge.py keeps a repeated id's first position and last paragraph; merge refuses it.
  const data = JSON.parse(await Deno.readTextFile(`${dir}/data.json`));
  data.data[0].paragraphs[1].qas.push({ ...data.data[0].paragraphs[0].qas[0] });
  await Deno.writeTextFile(`${dir}/data.json`, JSON.stringify(data));
  await badInput(
    dir,
    [],
    /^merge: data\.json: question id "q1" occurs in article 0 \("T"\) paragraph 0 and article 0 \("T"\) paragraph 1; question ids must be unique \(predictions are keyed by them\)$/,
  );
});

// ---------------------------------------------------------------------------
// Bad input: exit 2, exactly one stderr line naming the file, no pred.json.

async function badInput(dir: string, args: string[], expected: RegExp) {
  const before = await listDir(dir);
  const r = await ours(dir, ["data.json", "context_emb", "question_emb", "ours.json", ...args]);
  assertEquals(r.code, 2, r.stderr);
  const lines = r.stderr.trimEnd().split("\n");
  assertEquals(lines.length, 1, r.stderr);
  assertMatch(lines[0], expected);
  assertEquals(r.pred, "", "pred.json was left behind");
  assertEquals(await listDir(dir), before, "stray files were left behind");
}

const ONE = { data: [["T", [["q1"]]]] as [string, string[][]][] };

Deno.test("merge bad input: a sparse dump without --sparse", async () => {
  const dir = await fixture({
    ...ONE,
    contexts: { T_0: { npz: npzCsr(C4), phrases: PHRASES } },
    questions: { q1: npzCsr([[0, 1, 0, 0]]) },
  });
  await badInput(
    dir,
    [],
    /^merge: question_emb\/q1\.npz: is a scipy sparse matrix; run merge with --sparse$/,
  );
});

Deno.test("merge bad input: a dense dump with --sparse", async () => {
  const dir = await fixture({
    ...ONE,
    contexts: { T_0: { npz: npzDense(C4), phrases: PHRASES } },
    questions: { q1: npzDense([[0, 1, 0, 0]]) },
  });
  await badInput(
    dir,
    ["--sparse"],
    /^merge: question_emb\/q1\.npz: is a dense array; run merge without --sparse$/,
  );
});

Deno.test("merge bad input: an .npz with no arrays says so, with --sparse and without", async () => {
  // numpy.savez(path) with no arrays writes a zip with no entries, as encodeNpz({}) does.
  const dir = await fixture({
    ...ONE,
    contexts: { T_0: { npz: npzCsr(C4), phrases: PHRASES } },
    questions: { q1: encodeNpz({}) },
  });
  await badInput(
    dir,
    ["--sparse"],
    /^merge: question_emb\/q1\.npz: holds no arrays; a sparse dump holds format, shape, data, indices, indptr \(written with scipy\.sparse\.save_npz\(path, matrix\)\)$/,
  );
  const dense = await fixture({
    ...ONE,
    contexts: { T_0: { npz: encodeNpz({}), phrases: PHRASES } },
    questions: { q1: npzDense([[0, 1, 0, 0]]) },
  });
  await badInput(
    dense,
    [],
    /^merge: context_emb\/T_0\.npz: holds no arrays; a dense dump holds arr_0 \(written with numpy\.savez\(path, matrix\)\)$/,
  );
});

Deno.test("merge bad input: phrase count differs from the matrix rows", async () => {
  const dir = await fixture({
    ...ONE,
    contexts: { T_0: { npz: npzDense(C4), phrases: PHRASES.slice(0, 3) } },
    questions: { q1: npzDense([[0, 1, 0, 0]]) },
  });
  await badInput(
    dir,
    [],
    /^merge: context_emb\/T_0\.json: 3 phrases but context_emb\/T_0\.npz has 4 rows$/,
  );
});

Deno.test("merge bad input: question d differs from the context d", async () => {
  const dir = await fixture({
    ...ONE,
    contexts: { T_0: { npz: npzDense(C4), phrases: PHRASES } },
    questions: { q1: npzDense([[0, 1, 0]]) },
  });
  await badInput(
    dir,
    [],
    /^merge: question_emb\/q1\.npz: d = 3 but context_emb\/T_0\.npz has d = 4$/,
  );
});

Deno.test("merge bad input: a question that is not 1×d", async () => {
  const dir = await fixture({
    ...ONE,
    contexts: { T_0: { npz: npzDense(C4), phrases: PHRASES } },
    questions: { q1: npzDense([[0, 1, 0, 0], [1, 0, 0, 0]]) },
  });
  await badInput(
    dir,
    [],
    /^merge: question_emb\/q1\.npz: shape \(2, 4\); a question vector must be 1×d$/,
  );
});

Deno.test("merge bad input: NaN in a phrase vector names the file and row", async () => {
  const rows = C4.map((r) => [...r]);
  rows[2][3] = NaN;
  const dir = await fixture({
    ...ONE,
    contexts: { T_0: { npz: npzDense(rows), phrases: PHRASES } },
    questions: { q1: npzDense([[0, 1, 0, 0]]) },
  });
  await badInput(dir, [], /^merge: context_emb\/T_0\.npz: row 2: NaN at column 3 .*finite/);
});

Deno.test("merge bad input: Inf in an f16 question vector", async () => {
  const dir = await fixture({
    ...ONE,
    contexts: { T_0: { npz: npzDense(C4, "f16"), phrases: PHRASES } },
    questions: { q1: npzDense([[0, Infinity, 0, 0]], "f16") },
  });
  await badInput(dir, [], /^merge: question_emb\/q1\.npz: row 0: Infinity at column 1 /);
});

Deno.test("merge bad input: NaN in a sparse phrase vector", async () => {
  const rows = C4.map((r) => [...r]);
  rows[3][0] = NaN;
  const dir = await fixture({
    ...ONE,
    contexts: { T_0: { npz: npzCsr(rows), phrases: PHRASES } },
    questions: { q1: npzCsr([[0, 1, 0, 0]]) },
  });
  await badInput(dir, ["--sparse"], /^merge: context_emb\/T_0\.npz: row 3: NaN /);
});

Deno.test("merge bad input: an unreadable npz", async () => {
  const dir = await fixture({
    ...ONE,
    contexts: { T_0: { npz: enc.encode("not a zip at all, sorry"), phrases: PHRASES } },
    questions: { q1: npzDense([[0, 1, 0, 0]]) },
  });
  await badInput(dir, [], /^merge: context_emb\/T_0\.npz: unreadable npz: not a ZIP archive/);
});

Deno.test("merge bad input: a phrase file that is not a list of strings", async () => {
  const dir = await fixture({
    ...ONE,
    contexts: { T_0: { npz: npzDense(C4), phrases: ["a", 2, "c", "d"] } },
    questions: { q1: npzDense([[0, 1, 0, 0]]) },
  });
  await badInput(dir, [], /^merge: context_emb\/T_0\.json: phrase 1: not a string/);
});

Deno.test("merge bad input: a zip entry escaping its folder refuses the archive", async () => {
  const dir = await fixture({ ...ONE, questions: { q1: npzDense([[0, 1, 0, 0]]) } });
  await Deno.writeFile(
    `${dir}/ctx.zip`,
    encodeZipRaw([
      { name: "context_emb/T_0.npz", data: npzDense(C4) },
      { name: "context_emb/T_0.json", data: enc.encode(JSON.stringify(PHRASES)) },
      { name: "context_emb/../../evil.npz", data: npzDense(C4) },
    ]),
  );
  const before = await listDir(dir);
  const r = await ours(dir, ["data.json", "ctx.zip", "question_emb", "ours.json"]);
  assertEquals(r.code, 2, r.stderr);
  assertEquals(r.stderr.trimEnd().split("\n").length, 1, r.stderr);
  assertMatch(
    r.stderr,
    /^merge: ctx\.zip: entry "context_emb\/\.\.\/\.\.\/evil\.npz": entry name escapes the archive folder/,
  );
  assertEquals(await listDir(dir), before);
});

Deno.test("merge: a CRC mismatch inside a zipped dump is bad input", async () => {
  const dir = await fixture({ ...ONE, questions: { q1: npzDense([[0, 1, 0, 0]]) } });
  const zip = encodeZipRaw([
    { name: "T_0.npz", data: npzDense(C4) },
    { name: "T_0.json", data: enc.encode(JSON.stringify(PHRASES)) },
  ]);
  zip[60] ^= 0xff; // inside the first entry's data
  await Deno.writeFile(`${dir}/ctx.zip`, zip);
  const r = await ours(dir, ["data.json", "ctx.zip", "question_emb", "ours.json"]);
  assertEquals(r.code, 2, r.stderr);
  assertMatch(r.stderr, /^merge: ctx\.zip: entry "T_0\.npz": CRC-32 mismatch/);
});

Deno.test("merge bad input: a corrupt stored matrix in a folder (CRC-32)", async () => {
  // The second paragraph's file has the first one's header (the cached path).
  const bad = npzDense(C4);
  const good = npzDense(C4);
  const cd = bad.length - 22 - 46 - "arr_0.npy".length; // the central directory
  bad[cd - 5] ^= 0x40; // the last float of the matrix
  for (const workers of [[], ["--workers", "0"], ["--workers", "1"], ["--no-simd"]]) {
    const dir = await fixture({
      data: [["T", [["q1"], ["q2"]]]],
      contexts: {
        T_0: { npz: good, phrases: PHRASES },
        T_1: { npz: bad, phrases: PHRASES },
      },
      questions: { q1: npzDense([[0, 1, 0, 0]]), q2: npzDense([[0, 1, 0, 0]]) },
    });
    await badInput(
      dir,
      workers,
      /^merge: context_emb\/T_1\.npz: arr_0\.npy: unreadable npz: CRC-32 mismatch \(directory says [0-9a-f]{8}, data has [0-9a-f]{8}\)$/,
    );
  }
});

Deno.test("dump reader: numpy's own headers read fast, as the full parser reads them", () => {
  // Shapes and layouts: the fast header path takes 2-d C-order little-endian float32/16,
  // the full parser everything else; both must give the same matrix or the same error.
  const cases: [string, number[], "f4" | "f2", ">" | "<", boolean][] = [
    ["f4 rows", [7, 8], "f4", "<", false],
    ["f4 one row", [1, 256], "f4", "<", false],
    ["f4 no rows", [0, 4], "f4", "<", false],
    ["f2", [5, 4], "f2", "<", false],
    ["f4 big-endian", [3, 4], "f4", ">", false],
    ["f4 Fortran order", [3, 4], "f4", "<", true],
    ["f4 3-d", [2, 2, 2], "f4", "<", false],
  ];
  for (const [name, shape, dtype, order, fortran] of cases) {
    const n = shape.reduce((a, b) => a * b, 1);
    const values = Array.from({ length: n }, (_, i) => (i % 7) - 3 + i / 8);
    const data = dtype === "f4" ? new Float32Array(values) : new Float16Array(values);
    const arr = { ...ndarray(data, shape), byteOrder: order, fortranOrder: fortran };
    const npz = encodeNpz({ arr_0: arr });
    for (const movable of [false, true]) {
      let got: string, want: string;
      try {
        const m = decodeDumpMatrix(npz.slice(), `${name}.npz`, {}, movable).matrix;
        got = JSON.stringify([m.rows, m.cols, [...(m as DenseMatrix).data]]);
      } catch (e) {
        got = String(e);
      }
      try {
        const a = parseNpy(extractZipEntry(npz, readZipDirectory(npz, "x")[0], "x"), "x");
        if (a.shape.length !== 2) throw new Error(`shape ${a.shape}`);
        want = JSON.stringify([a.shape[0], a.shape[1], [...(a.data as Float32Array)]]);
      } catch {
        want = "";
      }
      if (want === "") assertMatch(got, /expected a 2-d matrix/, name);
      else assertEquals(got, want, `${name} (movable: ${movable})`);
    }
  }
});

Deno.test("dump reader: a float16 NaN or infinity is found wherever it is", () => {
  // 3 rows of 5: odd and even positions, first and last (the check reads two at a time).
  const cases: [number, number, string][] = [
    [0, Infinity, "row 0: Infinity at column 0"],
    [1, -Infinity, "row 0: -Infinity at column 1"],
    [7, NaN, "row 1: NaN at column 2"],
    [14, NaN, "row 2: NaN at column 4"],
  ];
  for (const [at, v, where] of cases) {
    const values = new Float16Array(15).fill(0.5);
    values[at] = v;
    const npz = encodeNpz({ arr_0: ndarray(values, [3, 5]) });
    for (const movable of [false, true]) {
      let msg = "";
      try {
        decodeDumpMatrix(npz.slice(), "h.npz", {}, movable);
      } catch (e) {
        msg = String(e);
      }
      assertEquals(msg, `h.npz: ${where} (vectors must be finite)`);
    }
  }
});

Deno.test("dump reader: matrices are the encoders' Matrix type, f16 kept as Float16Array", () => {
  const { matrix } = decodeDumpMatrix(npzDense([[1, 2], [3, 4]], "f16"), "x.npz");
  const m: Matrix = matrix;
  assertEquals(m.kind === "dense" && m.dtype, "f16");
  assert(m.kind === "dense" && m.data instanceof Float16Array);
  const s = decodeDumpMatrix(npzCsr([[0, 1.5], [2, 0]]), "s.npz", { sparse: true }).matrix;
  assert(s.kind === "csr" && s.indices instanceof Int32Array && s.data instanceof Float32Array);
  assertStringIncludes(JSON.stringify([...(s as CsrMatrix).indptr]), "[0,1,2]");
});

Deno.test("merge: the library's worker pool, and the CLI with other batch sizes", async () => {
  const dir = await dumps("f32", ["--articles", "2", "--paragraphs", "20"]);
  const ref = await reference(dir, []);
  // In this process merge starts its own workers (the command line starts them early).
  for (const workers of [1, 2]) {
    const lines: string[] = [];
    const r = await Effect.runPromise(merge({
      data: `${dir}/data.json`,
      contextEmb: `${dir}/context_emb`,
      questionEmb: `${dir}/question_emb`,
      predictions: `${dir}/lib.json`,
      workers,
      onMissing: (l) => lines.push(l),
    }));
    assertEquals(r.workers, workers);
    assertEquals(await Deno.readTextFile(`${dir}/lib.json`), ref.pred);
  }
  for (const flags of [["--concurrency", "1"], ["--concurrency", "5", "--workers", "3"]]) {
    const got = await ours(dir, [
      "data.json",
      "context_emb",
      "question_emb",
      "ours.json",
      ...flags,
    ]);
    assertEquals(got.code, 0, got.stderr);
    assert(got.pred === ref.pred, `${flags.join(" ")}: pred.json differs from the reference`);
  }
});

Deno.test("merge: workers started early make merge's plan and answer every batch", async () => {
  const dir = await dumps("f32", ["--articles", "2", "--paragraphs", "20"]);
  const key = {
    data: `${dir}/data.json`,
    contextEmb: `${dir}/context_emb`,
    questionEmb: `${dir}/question_emb`,
    sparse: false,
    simd: true,
    workers: 3,
    batch: 3,
  };
  const q2c = datasetQ2c(await Deno.readFile(key.data));
  assert(q2c !== undefined);
  const plan = planMerge(q2c);
  const batches = batchesOf(plan, 3, 3);
  const pool = new EarlyPool(key);
  try {
    assert(pool.matches(key) && !pool.matches({ ...key, batch: 4 }));
    assertEquals(await pool.plan(), plan);
    const c = openDumpSync(key.contextEmb), q = openDumpSync(key.questionEmb);
    // Every batch, whichever worker took it, is what this thread answers.
    for (let b = batches.length - 1; b >= 0; b--) {
      const r = await pool.result(b);
      assertEquals("ok" in r && r.ok, mergeBatch(c, q, batches[b]).ok);
    }
  } finally {
    pool.close();
  }
  const r = await pool.result(batches.length + 5);
  assert("err" in r && r.err?.message === "merge workers stopped");
  // A dataset the workers cannot plan from: no plan, and the stage reads it itself.
  await Deno.writeTextFile(`${dir}/bad.json`, '{"data": [{"title": 1}]}');
  const bad = new EarlyPool({ ...key, data: `${dir}/bad.json` });
  try {
    assertEquals(await bad.plan(), null);
  } finally {
    bad.close();
  }
});
