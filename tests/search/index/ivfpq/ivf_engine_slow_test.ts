/**
 * phraseval's own IVF-PQ engine (`search/index/ivfpq/ivfpq.ts`, `kmeans.ts`) on a
 * synthetic clustered dump: two builds give identical bytes, a build killed
 * (SIGKILL) in the IVF stage and rerun gives them too, and so do builds
 * writing in tiny windows (lists split across them) and encoding on worker
 * threads, none leaving a scratch file, and a sandboxed build (no worker
 * threads); the approximate
 * scores equal an independent NumPy ADC over the stored files; PQ quality
 * (recall@10 at nprobe = nlist) above a bound and near faiss's IndexIVFPQ
 * with the same nlist/bpv/training rows (faiss-cpu: tools/test_setup.sh).
 */
import * as Effect from "effect/Effect";
import { writeContextDump } from "../../../../io/dump/writer.ts";
import { buildIndex, indexTempFolder } from "../../../../search/index/build.ts";
import {
  closeIvfWorkers,
  scoreIvf,
  scoreIvfSync,
} from "../../../../search/index/ivfpq/ivf_search.ts";
import { trainSample } from "../../../../search/index/ivfpq/train.ts";
import { splitmix32 } from "../../../../search/index/ivfpq/kmeans.ts";
import { openIndexSync } from "../../../../search/index/read.ts";
import { scoreQuestions } from "../../../../search/open/open.ts";
import { indexGrants, permissionFlags } from "../../../../runs/sandbox/sandbox.ts";
import { assert, assertEquals } from "../../../_assert.ts";
import { python, ROOT, runStage, sha256File, spawnChild } from "../../../_util.ts";

/** A standard normal generator on splitmix32 (Box–Muller). */
function gauss(seed: number): () => number {
  const u = splitmix32(seed);
  return () => {
    const a = (u() + 1) / 4294967297, b = u() / 4294967296;
    return Math.sqrt(-2 * Math.log(a)) * Math.cos(2 * Math.PI * b);
  };
}

/**
 * A clustered dump: `paragraphs` × `per` rows of d dims, each a random one
 * of `clusters` centres plus noise; and `nq` questions drawn the same way.
 */
async function clusteredDump(
  dir: string,
  o: { paragraphs: number; per: number; d: number; clusters: number; nq: number },
): Promise<{ vectors: Float32Array; queries: Float32Array[] }> {
  Deno.mkdirSync(dir, { recursive: true });
  const g = gauss(7), pick = splitmix32(11);
  const centres = Float32Array.from({ length: o.clusters * o.d }, () => g());
  const draw = () => {
    const c = pick() % o.clusters, v = new Float32Array(o.d);
    for (let t = 0; t < o.d; t++) v[t] = centres[c * o.d + t] + 0.5 * g();
    return v;
  };
  const vectors = new Float32Array(o.paragraphs * o.per * o.d);
  for (let p = 0; p < o.paragraphs; p++) {
    const data = new Float32Array(o.per * o.d);
    for (let i = 0; i < o.per; i++) data.set(draw(), i * o.d);
    vectors.set(data, p * o.per * o.d);
    await Effect.runPromise(writeContextDump(dir, {
      id: `P_${String(p).padStart(4, "0")}`,
      phrases: Array.from({ length: o.per }, (_, i) => ({ text: `w${i}`, start: 0, end: 2 })),
      matrix: { kind: "dense", rows: o.per, cols: o.d, dtype: "f32", data },
    }, { sparse: false, compressed: false }));
  }
  return { vectors, queries: Array.from({ length: o.nq }, draw) };
}

async function hashes(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (rel: string) => {
    for (const e of Deno.readDirSync(`${dir}/${rel}`)) {
      const name = rel === "" ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory) await walk(name);
      else out[name] = await sha256File(`${dir}/${name}`);
    }
  };
  await walk("");
  return Object.fromEntries(Object.keys(out).sort().map((k) => [k, out[k]]));
}

const SHAPE = { paragraphs: 200, per: 20, d: 32, clusters: 24, nq: 40 };
const IVF = ["--nlist", "16", "--bpv", "8"];

async function build(dump: string, out: string, extra: string[] = IVF): Promise<void> {
  const r = await runStage("pipeline/index.ts", [dump, out, ...extra]);
  assertEquals(r.code, 0, r.stderr);
}

Deno.test("ivf-pq engine: two builds and a killed build, rerun, give identical bytes and answers (1 or 2 threads)", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-ivfdet-" });
  try {
    const big = { paragraphs: 400, per: 20, d: 64, clusters: 24, nq: 5 };
    const { queries } = await clusteredDump(`${tmp}/c`, big);
    const args = ["--nlist", "32", "--bpv", "16"];
    await build(`${tmp}/c`, `${tmp}/a`, args);
    await build(`${tmp}/c`, `${tmp}/b`, args);
    const a = await hashes(`${tmp}/a`);
    assertEquals(Object.keys(a), [
      "index.json",
      "ivf/centroids.f32",
      "ivf/codebooks.f32",
      "ivf/codes.u8",
      "ivf/list_offsets.i64",
      "ivf/list_rows.u32",
      "paragraphs.ndjson",
      "vectors.f32",
    ]);
    assertEquals(await hashes(`${tmp}/b`), a);

    // Killed while in the IVF stage: the exact vectors are complete, no index.json yet (the
    // build writes in `<tmp>/build/` under its lock).
    const out = `${tmp}/k`, work = indexTempFolder(out);
    const full = big.paragraphs * big.per * big.d * 4;
    const child = spawnChild(
      [Deno.execPath(), "run", "-A", `${ROOT}/pipeline/index.ts`, `${tmp}/c`, out, ...args],
      { stdout: "null", stderr: "null" },
    );
    const size = (p: string) => {
      try {
        return Deno.statSync(p).size;
      } catch {
        return -1;
      }
    };
    let exited = false;
    child.status.then(() => exited = true);
    for (let i = 0; i < 100000 && !exited && size(`${work}/build/vectors.f32`) < full; i++) {
      await new Promise((r) => setTimeout(r, 5));
    }
    assertEquals(size(`${work}/build/index.json`), -1, "the build finished before it was killed");
    assert(!exited, "the build ended before it was killed");
    child.kill("SIGKILL");
    const st = await child.status;
    assertEquals(st.signal, "SIGKILL");
    assertEquals(size(out), -1);
    assert(size(`${work}/build/vectors.f32`) === full, "the killed build left its folder");
    await build(`${tmp}/c`, out, args);
    assertEquals(await hashes(out), a);
    assertEquals(size(work), -1);

    // Identical answers.
    const ia = openIndexSync(`${tmp}/a`), ik = openIndexSync(out);
    for (const opts of [{ nprobe: 4 }, { nprobe: 8, refine: 50 }]) {
      const ta = scoreIvfSync(ia, queries, { topK: 10, ...opts });
      const tk = scoreIvfSync(ik, queries, { topK: 10, ...opts });
      assertEquals(tk.map((t) => [t.rows, t.scores]), ta.map((t) => [t.rows, t.scores]));
      // Two search workers: the same answers.
      const tw = await scoreIvf(ik, queries, { topK: 10, threads: 2, ...opts });
      assertEquals(tw.map((t) => [t.rows, t.scores]), ta.map((t) => [t.rows, t.scores]));
    }
    closeIvfWorkers(ik);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("ivf-pq engine: tiny write windows, small blocks and encode workers give the same bytes, no scratch left", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-ivfwin-" });
  try {
    await clusteredDump(`${tmp}/c`, { ...SHAPE, paragraphs: 150 });
    const files = [
      "index.json",
      "ivf/centroids.f32",
      "ivf/codebooks.f32",
      "ivf/codes.u8",
      "ivf/list_offsets.i64",
      "ivf/list_rows.u32",
      "paragraphs.ndjson",
      "vectors.f32",
    ];
    let want: Record<string, string> | undefined;
    // 3,000 rows in 16 lists (~190 rows, ~1,500 code bytes each): budgets below one list's
    // codes, below one sub-quantizer's, one byte; blocks that cut paragraphs and lists.
    const tunings = [
      {},
      { writeBudget: 1 << 30, encodeThreads: 0 },
      { writeBudget: 1000, encodeBlock: 777, encodeThreads: 2 },
      { writeBudget: 77, encodeBlock: 500, encodeThreads: 1 },
      { writeBudget: 1, encodeBlock: 3000, encodeThreads: 0 },
    ];
    for (const [i, ivfTuning] of tunings.entries()) {
      const out = `${tmp}/ix${i}`;
      await Effect.runPromise(
        buildIndex({ contextEmb: `${tmp}/c`, out, nlist: 16, bpv: 8, ivfTuning }),
      );
      const got = await hashes(out);
      assertEquals(Object.keys(got), files, JSON.stringify(ivfTuning));
      if (want === undefined) want = got;
      else assertEquals(got, want, JSON.stringify(ivfTuning));
    }
    assertEquals([...Deno.readDirSync(tmp)].map((e) => e.name).sort(), [
      "c",
      ...tunings.map((_, i) => `ix${i}`),
    ]);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("ivf-pq engine: a sandboxed build (no read of the repository) encodes in its own thread, same bytes", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-ivfsandbox-" });
  try {
    // More rows than one encode block: the encoding would go to worker threads.
    await clusteredDump(`${tmp}/c`, { paragraphs: 20, per: 1000, d: 8, clusters: 10, nq: 1 });
    const args = ["--nlist", "8", "--bpv", "4"];
    await build(`${tmp}/c`, `${tmp}/all`, args);
    const out = `${tmp}/boxed`;
    const grants = indexGrants({ contextEmb: `${tmp}/c`, context: `${tmp}/none.json`, index: out });
    const r = await runStage("pipeline/index.ts", [`${tmp}/c`, out, ...args], {
      permissions: permissionFlags(grants),
    });
    assertEquals(r.code, 0, r.stderr);
    assertEquals(await hashes(out), await hashes(`${tmp}/all`));
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("ivf-pq engine: approximate scores equal an independent NumPy ADC (ip and l2)", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-ivfadc-" });
  try {
    const { queries } = await clusteredDump(`${tmp}/c`, { ...SHAPE, nq: 12 });
    for (const metric of ["ip", "l2"]) {
      await build(`${tmp}/c`, `${tmp}/${metric}`, [...IVF, "--metric", metric]);
      const ix = openIndexSync(`${tmp}/${metric}`);
      const tops = scoreIvfSync(ix, queries, { topK: 10, nprobe: 16 });
      assert(tops.every((t) => t.rows.length === 10));
      const spec = `${tmp}/${metric}.json`;
      Deno.writeTextFileSync(
        spec,
        JSON.stringify({
          index: `${tmp}/${metric}`,
          k: 10,
          queries: queries.map((q) => [...q]),
          got: tops.map((t) => ({ rows: t.rows, scores: t.scores })),
        }),
      );
      const r = await python(["tests/py/ivf_ref.py", "adc", spec]);
      assertEquals(r.stdout.trim(), "ok", metric);
    }
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("ivf-pq engine: recall@10 at nprobe = nlist above 0.6 and near faiss IndexIVFPQ", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-ivfq-" });
  try {
    const { vectors, queries } = await clusteredDump(`${tmp}/c`, SHAPE);
    await build(`${tmp}/c`, `${tmp}/exact`, []);
    await build(`${tmp}/c`, `${tmp}/ivf`);
    const exact = openIndexSync(`${tmp}/exact`), ivf = openIndexSync(`${tmp}/ivf`);
    const truth = scoreQuestions(
      exact,
      queries.map((q) => ({ kind: "dense", rows: 1, cols: SHAPE.d, dtype: "f32", data: q })),
      { topK: 10 },
    ).map((t) => t.rows);
    const recall = (rows: number[][]) =>
      rows.reduce((s, got, j) => s + got.filter((r) => truth[j].includes(r)).length / 10, 0) /
      rows.length;
    const ours = recall(scoreIvfSync(ivf, queries, { topK: 10, nprobe: 16 }).map((t) => t.rows));
    const refined = recall(
      scoreIvfSync(ivf, queries, { topK: 10, nprobe: 16, refine: 100 }).map((t) => t.rows),
    );
    Deno.writeFileSync(`${tmp}/x.f32`, new Uint8Array(vectors.buffer));
    const p = ivf.header.parameters as Record<string, number>;
    const train: number[] = [];
    for (const t of await trainSample(ivf.ids, p.train_paragraphs)) {
      for (let r = ivf.starts[t]; r < ivf.starts[t + 1]; r++) train.push(r);
    }
    assertEquals(train.length, p.train_phrases);
    Deno.writeTextFileSync(
      `${tmp}/faiss.json`,
      JSON.stringify({
        vectors: `${tmp}/x.f32`,
        n: SHAPE.paragraphs * SHAPE.per,
        d: SHAPE.d,
        train,
        queries: queries.map((q) => [...q]),
        k: 10,
        nlist: 16,
        bpv: 8,
      }),
    );
    const f = (await python(["tests/py/ivf_ref.py", "faiss", `${tmp}/faiss.json`])).stdout;
    const faiss = recall(JSON.parse(f));
    console.log(`recall@10 phraseval ${ours}, refined ${refined}, faiss ${faiss}`);
    assert(ours >= 0.6, `recall@10 ${ours}`);
    assert(refined >= 0.95, `refined recall@10 ${refined}`);
    assert(ours >= faiss - 0.05, `phraseval ${ours}, faiss ${faiss}`);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});
