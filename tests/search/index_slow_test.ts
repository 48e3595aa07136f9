/**
 * The `index` and `search` stages as commands: exact open search equals a
 * NumPy/SciPy brute force (tests/py/open_ref.py) on NumPy-written dense f32
 * and f16 dumps and on scipy CSR dumps, for both metrics; a SIGKILLed build,
 * rerun, gives the same bytes; bad input exits 2 with one line and leaves
 * nothing behind; `inspect INDEX_DIR`.
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { DEV_GZ, listDir, python, ROOT, runStage, sha256File, spawnChild } from "../_util.ts";
import { writeContextDump, writeQuestionDump } from "../../io/dump/writer.ts";
import type { Matrix } from "../../io/matrix.ts";
import { ok, type Rec, records, refused } from "./_stages.ts";

const dumpsCache = new Map<string, Promise<string>>();

/** Dumps made by bench/make_dumps.py (cached per options within this run). */
function dumps(args: string[]): Promise<string> {
  const key = args.join(" ");
  let p = dumpsCache.get(key);
  if (p === undefined) {
    const dir = Deno.makeTempDirSync({ prefix: "phraseval-ix-" });
    p = python(["bench/make_dumps.py", DEV_GZ, dir, ...args]).then(() => dir);
    dumpsCache.set(key, p);
  }
  return p;
}

globalThis.addEventListener("unload", () => {
  for (const p of dumpsCache.values()) {
    p.then((d) => Deno.removeSync(d, { recursive: true })).catch(() => {});
  }
});

const core = (r: Rec) => ({
  id: r.id,
  rank: r.rank,
  paragraph: r.paragraph,
  phrase_index: r.phrase_index,
  phrase: r.phrase,
  score: r.score,
});

/** index + search against the reference on the dumps in `dir`; returns the tmp folder. */
async function compareWithReference(
  dir: string,
  opts: {
    sparse?: boolean;
    metric?: "ip" | "l2";
    context?: boolean;
    k?: number;
    threads?: number;
  },
): Promise<void> {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-ixcmp-" });
  try {
    const k = String(opts.k ?? 5);
    const common = [
      ...(opts.sparse ? ["--sparse"] : []),
      ...(opts.context ? ["--context", `${dir}/data.json`] : []),
    ];
    await ok("pipeline/index.ts", [
      `${dir}/context_emb`,
      `${tmp}/ix`,
      ...common,
      "--metric",
      opts.metric ?? "ip",
    ]);
    await ok("pipeline/search.ts", [
      `${dir}/data.json`,
      `${tmp}/ix`,
      `${dir}/question_emb`,
      `${tmp}/pred.json`,
      "--top-k",
      k,
      "--topk-out",
      `${tmp}/topk.ndjson`,
    ]);
    await python([
      "tests/py/open_ref.py",
      "search",
      `${dir}/data.json`,
      `${dir}/context_emb`,
      `${dir}/question_emb`,
      `${tmp}/ref.json`,
      ...common,
      "--metric",
      opts.metric ?? "ip",
      "--top-k",
      k,
      "--topk-out",
      `${tmp}/ref.ndjson`,
    ]);
    assertEquals(
      Deno.readTextFileSync(`${tmp}/pred.json`),
      Deno.readTextFileSync(`${tmp}/ref.json`),
      "pred.json differs from the brute force",
    );
    const got = records(`${tmp}/topk.ndjson`), want = records(`${tmp}/ref.ndjson`);
    assert(got.length > 0);
    assertEquals(got.map(core), want.map(core));
    if (opts.threads !== undefined) {
      // The exact screening on worker threads: the same files.
      await ok("pipeline/search.ts", [
        `${dir}/data.json`,
        `${tmp}/ix`,
        `${dir}/question_emb`,
        `${tmp}/pred2.json`,
        "--top-k",
        k,
        "--topk-out",
        `${tmp}/topk2.ndjson`,
        "--threads",
        String(opts.threads),
      ]);
      for (const [a, b] of [["pred.json", "pred2.json"], ["topk.ndjson", "topk2.ndjson"]]) {
        assertEquals(Deno.readTextFileSync(`${tmp}/${b}`), Deno.readTextFileSync(`${tmp}/${a}`), b);
      }
    }
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
}

Deno.test("search: exact open search = NumPy brute force on numpy.savez f32 dumps (ip, l2, dataset order)", async () => {
  const dir = await dumps(["--articles", "2", "--paragraphs", "6", "--dim", "64", "--meta"]);
  await compareWithReference(dir, { metric: "ip" });
  await compareWithReference(dir, { metric: "l2", context: true });
});

Deno.test("search: exact open search = NumPy brute force on f16 dumps (ip, l2; --threads 2 the same)", async () => {
  const dir = await dumps([
    "--articles",
    "2",
    "--paragraphs",
    "6",
    "--dim",
    "64",
    "--dtype",
    "f16",
  ]);
  await compareWithReference(dir, { metric: "ip", context: true, threads: 2 });
  await compareWithReference(dir, { metric: "l2", threads: 2 });
});

Deno.test("search: exact open search = SciPy brute force on save_npz CSR dumps (ip, l2)", async () => {
  const dir = await dumps(["--articles", "2", "--paragraphs", "5", "--sparse", "--nnz", "12"]);
  await compareWithReference(dir, { sparse: true, metric: "ip", k: 3 });
  await compareWithReference(dir, { sparse: true, metric: "l2", context: true, k: 3 });
});

async function treeSums(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const n of await listDir(dir)) out[n] = await sha256File(`${dir}/${n}`);
  return out;
}

Deno.test("index: a build SIGKILLed mid-way, rerun, gives the same bytes and the same answers", async () => {
  const dir = await dumps(["--articles", "4", "--dim", "256"]);
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-ixkill-" });
  try {
    await ok("pipeline/index.ts", [`${dir}/context_emb`, `${tmp}/clean`]);
    const target = `${tmp}/killed`;
    const child = spawnChild(
      [Deno.execPath(), "run", "-A", `${ROOT}/pipeline/index.ts`, `${dir}/context_emb`, target],
      { stdout: "null", stderr: "null" },
    );
    // Kill once the temporary folder holds part of the vectors.
    let partial = "";
    for (let t = 0; t < 3000 && partial === ""; t++) {
      for (const e of Deno.readDirSync(tmp)) {
        if (!e.name.startsWith("killed.") || !e.name.endsWith(".tmp")) continue;
        try {
          if (Deno.statSync(`${tmp}/${e.name}/build/vectors.f32`).size > 4 << 20) partial = e.name;
        } catch { /* not yet */ }
      }
      if (partial === "") await new Promise((r) => setTimeout(r, 5));
    }
    child.kill("SIGKILL");
    const st = await child.status;
    assert(partial !== "", "the build finished before it could be killed");
    assertEquals(st.signal, "SIGKILL");
    assert(!(await listDir(tmp)).includes("killed"), "a killed build left the index in place");
    await ok("pipeline/index.ts", [`${dir}/context_emb`, target]);
    assertEquals(await listDir(tmp), ["clean", "killed"], "the killed build's folder is left");
    assertEquals(await treeSums(target), await treeSums(`${tmp}/clean`));
    for (const ix of ["clean", "killed"]) {
      await ok("pipeline/search.ts", [
        `${dir}/data.json`,
        `${tmp}/${ix}`,
        `${dir}/question_emb`,
        `${tmp}/${ix}.json`,
        "--topk-out",
        `${tmp}/${ix}.ndjson`,
      ]);
    }
    assertEquals(await sha256File(`${tmp}/killed.json`), await sha256File(`${tmp}/clean.json`));
    assertEquals(
      await sha256File(`${tmp}/killed.ndjson`),
      await sha256File(`${tmp}/clean.ndjson`),
    );
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("index: two builds into one folder at once: one writes it, the other exits 2 with one line; search accepts the folder, its bytes a single build's", async () => {
  const dir = await dumps(["--articles", "4", "--dim", "256"]);
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-ixrace-" });
  try {
    await ok("pipeline/index.ts", [`${dir}/context_emb`, `${tmp}/single`]);
    const want = await treeSums(`${tmp}/single`);
    const build = (target: string, extra: string[]) =>
      runStage("pipeline/index.ts", [`${dir}/context_emb`, target, ...extra]);
    // A fresh folder, then --overwrite of the existing one: both ways the builds overlap.
    for (const [trial, extra] of [[1, []], [2, ["--overwrite"]]] as const) {
      const target = `${tmp}/race`;
      const rs = await Promise.all([build(target, [...extra]), build(target, [...extra])]);
      const codes = rs.map((r) => r.code).sort();
      assert(codes[0] === 0, `trial ${trial}: no build succeeded: ${rs.map((r) => r.stderr)}`);
      for (const r of rs) {
        if (r.code === 0) continue;
        assertEquals(r.code, 2, `trial ${trial}: ${r.stderr}`);
        const lines = r.stderr.trimEnd().split("\n");
        assertEquals(lines.length, 1, r.stderr);
        assertMatch(
          lines[0],
          /^index: .*race: (another index build into this folder is running \(it holds .*race\.[0-9a-f]{8}\.tmp\/lock\); wait for it to end|exists; pass --overwrite to replace it)$/,
        );
      }
      assertEquals(await listDir(tmp), ["race", "single"], `trial ${trial}: left behind`);
      assertEquals(
        await treeSums(target),
        want,
        `trial ${trial}: the folder is not a single build's`,
      );
      await ok("pipeline/search.ts", [
        `${dir}/data.json`,
        target,
        `${dir}/question_emb`,
        `${tmp}/pred.json`,
      ]);
      for (const n of ["pred.json", "pred.rows.ndjson", "pred.search.json"]) {
        Deno.removeSync(`${tmp}/${n}`);
      }
    }
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

const dense = (rows: number, cols: number, v: number[]): Matrix => ({
  kind: "dense",
  rows,
  cols,
  dtype: "f32",
  data: new Float32Array(v),
});
const fmt = { sparse: false, compressed: false };
const phrases = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ text: `p${i}`, start: 0, end: 0 }));

async function contextDump(dir: string, paras: [string, Matrix][]) {
  Deno.mkdirSync(dir, { recursive: true });
  for (const [id, m] of paras) {
    await Effect.runPromise(
      writeContextDump(dir, { id, phrases: phrases(m.rows), matrix: m }, fmt),
    );
  }
}

Deno.test("index: bad dumps exit 2 with one line and leave nothing behind", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-ixbad-" });
  try {
    const cases: [string, [string, Matrix][], RegExp][] = [
      [
        "mixed",
        [["A_0", dense(1, 4, [1, 0, 0, 0])], ["B_0", dense(1, 8, [1, 0, 0, 0, 0, 0, 0, 0])]],
        /^index: .*mixed\/B_0\.npz: d = 8 but .*mixed\/A_0\.npz has d = 4/,
      ],
      [
        "nan",
        [["A_0", dense(2, 4, [1, 0, 0, 0, 0, NaN, 0, 0])]],
        /^index: .*nan\/A_0\.npz: row 1: NaN at column 1/,
      ],
      [
        "inf",
        [["A_0", dense(1, 4, [1, Infinity, 0, 0])]],
        /^index: .*inf\/A_0\.npz: row 0: Infinity at column 1/,
      ],
      [
        "empty",
        [["A_0", dense(1, 4, [1, 0, 0, 0])], ["B_0", dense(0, 4, [])]],
        /^index: .*empty\/B_0\.npz: the paragraph has no phrases/,
      ],
    ];
    for (const [name, paras, re] of cases) {
      await contextDump(`${tmp}/${name}`, paras);
      await refused("pipeline/index.ts", [`${tmp}/${name}`, `${tmp}/${name}.ix`], re);
    }
    // The index path is a file; an existing folder is not replaced without --overwrite.
    Deno.writeTextFileSync(`${tmp}/file`, "x");
    await refused(
      "pipeline/index.ts",
      [`${tmp}/mixed`, `${tmp}/file`],
      /^index: .*\/file: is a file, not a folder/,
    );
    Deno.mkdirSync(`${tmp}/old`);
    await contextDump(`${tmp}/good`, [["A_0", dense(1, 4, [1, 0, 0, 0])]]);
    await refused(
      "pipeline/index.ts",
      [`${tmp}/good`, `${tmp}/old`],
      /^index: .*\/old: exists; pass --overwrite/,
    );
    assertEquals(await listDir(tmp), [
      "empty",
      "file",
      "good",
      "inf",
      "mixed",
      "nan",
      "old",
    ]);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("search: a bad index or question exits 2 with one line and writes nothing", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-srbad-" });
  try {
    await contextDump(`${tmp}/c`, [["T_0", dense(2, 4, [1, 0, 0, 0, 0, 1, 0, 0])]]);
    await ok("pipeline/index.ts", [`${tmp}/c`, `${tmp}/ix`]);
    Deno.writeTextFileSync(
      `${tmp}/data.json`,
      JSON.stringify({
        version: "1.1",
        data: [{
          title: "T",
          paragraphs: [{
            context: "a b",
            qas: [{ id: "q1", question: "?", answers: [{ text: "a", answer_start: 0 }] }],
          }],
        }],
      }),
    );
    Deno.mkdirSync(`${tmp}/q8`);
    await Effect.runPromise(
      writeQuestionDump(
        `${tmp}/q8`,
        { id: "q1", vector: dense(1, 8, [0, 1, 0, 0, 0, 0, 0, 0]) },
        fmt,
      ),
    );
    Deno.mkdirSync(`${tmp}/q4`);
    await Effect.runPromise(
      writeQuestionDump(`${tmp}/q4`, { id: "q1", vector: dense(1, 4, [0, 1, 0, 0]) }, fmt),
    );
    const search = (ix: string, q: string, re: RegExp) =>
      refused("pipeline/search.ts", [`${tmp}/data.json`, ix, q, `${tmp}/pred.json`], re);
    await search(
      `${tmp}/ix`,
      `${tmp}/q8`,
      /^search: .*q8\/q1\.npz: d = 8 but the index .* has d = 4$/,
    );
    // Another kind, a newer version.
    const header = Deno.readTextFileSync(`${tmp}/ix/index.json`);
    const variant = (name: string, edit: (h: Record<string, unknown>) => void) => {
      Deno.mkdirSync(`${tmp}/${name}`);
      for (const e of Deno.readDirSync(`${tmp}/ix`)) {
        Deno.copyFileSync(`${tmp}/ix/${e.name}`, `${tmp}/${name}/${e.name}`);
      }
      const h = JSON.parse(header);
      edit(h);
      Deno.writeTextFileSync(`${tmp}/${name}/index.json`, JSON.stringify(h));
      return `${tmp}/${name}`;
    };
    await search(
      variant("hnsw", (h) => (h.kind = "hnsw")),
      `${tmp}/q4`,
      /^search: .*hnsw\/index\.json: index kind "hnsw" is not one this phraseval reads \(exact, ivf-pq\)$/,
    );
    await search(
      variant("v2", (h) => (h.version = 2)),
      `${tmp}/q4`,
      /^search: .*v2\/index\.json: format version 2 is newer than this phraseval reads \(1\)$/,
    );
    // Truncated and corrupt data files.
    const trunc = variant("trunc", () => {});
    Deno.truncateSync(`${trunc}/vectors.f32`, 16);
    await search(
      trunc,
      `${tmp}/q4`,
      /^search: .*trunc\/vectors\.f32: 16 bytes but index\.json says 32 \(truncated or corrupt index\)$/,
    );
    const bad = variant("corrupt", () => {});
    const bytes = Deno.readFileSync(`${bad}/vectors.f32`);
    bytes[5] ^= 1;
    Deno.writeFileSync(`${bad}/vectors.f32`, bytes);
    await search(
      bad,
      `${tmp}/q4`,
      /^search: .*corrupt\/vectors\.f32: sha256 differs from index\.json \(corrupt index\)$/,
    );
    const noTable = variant("notable", () => {});
    Deno.removeSync(`${noTable}/paragraphs.ndjson`);
    await search(noTable, `${tmp}/q4`, /^search: .*notable\/paragraphs\.ndjson: missing/);
    // The index path is a file; a folder that is no index.
    await search(
      `${tmp}/data.json`,
      `${tmp}/q4`,
      /^search: .*data\.json: is a file, not an index folder$/,
    );
    await search(
      `${tmp}/q4`,
      `${tmp}/q4`,
      /^search: .*q4: not an index folder \(no index\.json\)$/,
    );
    assert(!(await listDir(tmp)).some((n) => n.includes("pred")), "a prediction file was left");
    // And the good one answers.
    await ok("pipeline/search.ts", [
      `${tmp}/data.json`,
      `${tmp}/ix`,
      `${tmp}/q4`,
      `${tmp}/pred.json`,
    ]);
    assertEquals(Deno.readTextFileSync(`${tmp}/pred.json`), `{"q1": "p1"}`);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("inspect: an index folder prints its kind, phrase count, d, metric and parameters", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-ixinsp-" });
  try {
    await contextDump(`${tmp}/c`, [
      ["A_0", dense(2, 4, [1, 0, 0, 0, 0, 1, 0, 0])],
      ["B_0", dense(1, 4, [0, 0, 1, 0])],
    ]);
    await ok("pipeline/index.ts", [`${tmp}/c`, `${tmp}/ix`, "--metric", "l2"]);
    const r = await ok("pipeline/inspect.ts", [`${tmp}/ix`]);
    assertEquals(JSON.parse(r.stdout), {
      kind: "exact",
      version: 1,
      phrases: 3,
      paragraphs: 2,
      d: 4,
      metric: "l2",
      vectors: "dense",
      dtype: "f32",
      nnz: null,
      parameters: {},
    });
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});
