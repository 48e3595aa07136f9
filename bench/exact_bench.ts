/**
 * Exact dense open search against faiss-cpu `IndexFlatIP`
 * (bench/faiss_ref.py), whole process, the same float32 questions:
 * phraseval's exact index answered in process with the 8-bit screening
 * (`search/kernels/i8_scan.ts`, with its head stage) on 1 and 2 threads,
 * the screening in one stage (no head: the path before the head stage), and
 * with the float32 kernels alone (`screen: false`, the path before the
 * screening), questions in blocks of `--block` (default 256, the blocks
 * of the `search` stage), then faiss with
 * 1 and 2 OpenMP threads (a process each). "prep s" is the one-time quantization of the
 * index (on first use, in `search`/`serve` as here). Agreement: share of
 * questions whose top-10 rows are phraseval's (faiss scores in float32:
 * a near tie may order differently).
 *
 * ```sh
 * pip install faiss-cpu
 * deno run -A bench/exact_bench.ts --dump R/dumps/context_emb --context R/context.json \
 *   --questions R/dumps/question_emb --data R/question.json [--every 10] \
 *   [--threads 1,2] [--out bench/out/exact_bench] [--reuse] [--no-float] [--no-one-stage] \
 *   [--block 256]
 * ```
 *
 * @module
 */
import { openDumpSync } from "../io/dump/reader_sync.ts";
import type { Matrix } from "../io/matrix.ts";
import { asFloat32 } from "../search/dense_f64.ts";
import { closeI8Workers, i8RowsOf, scoreI8Threads } from "../search/kernels/i8_pool.ts";
import { TopK } from "../search/index/exact/score.ts";
import { openIndexSync } from "../search/index/read.ts";
import { scoreQuestionsAsync } from "../search/open/open.ts";
import { closeSearchWorkers } from "../search/open/phrase_index.ts";

const arg = (name: string, dflt: string): string => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] : dflt;
};
const flag = (name: string) => Deno.args.includes(`--${name}`);
const root = new URL("..", import.meta.url).pathname;
const out = arg("out", `${root}bench/out/exact_bench`);
const every = Number(arg("every", "10"));
const threadsList = arg("threads", "1,2").split(",").map(Number);
const K = 10;
Deno.mkdirSync(out, { recursive: true });

const exists = (p: string) => {
  try {
    Deno.statSync(p);
    return true;
  } catch {
    return false;
  }
};
const ix = `${out}/exact`;
let t0 = performance.now();
if (!(flag("reuse") && exists(ix))) {
  const r = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      `${root}pipeline/index.ts`,
      arg("dump", ""),
      ix,
      "--context",
      arg("context", ""),
      "--overwrite",
    ],
  }).outputSync();
  if (r.code !== 0) throw new Error(new TextDecoder().decode(r.stderr));
}
const build = (performance.now() - t0) / 1000;

const ds = JSON.parse(Deno.readTextFileSync(arg("data", ""))) as {
  data: { paragraphs: { qas: { id: string }[] }[] }[];
};
const qids = ds.data.flatMap((a) => a.paragraphs.flatMap((p) => p.qas.map((q) => q.id)))
  .filter((_, i) => i % every === 0);
const qd = openDumpSync(arg("questions", ""), { sparse: false });
const qs = qids.map((id) => {
  const m = qd.readQuestion(id);
  if ("missing" in m) throw new Error(`no vector for ${id}`);
  return asFloat32(m as Matrix & { kind: "dense" });
});
qd.close();
const d = qs[0].length, nq = qs.length;
const qbuf = new Float32Array(nq * d);
qs.forEach((q, j) => qbuf.set(q, j * d));
Deno.writeFileSync(`${out}/queries.f32`, new Uint8Array(qbuf.buffer));
const asMatrix = (q: Float32Array): Matrix => ({
  kind: "dense",
  rows: 1,
  cols: d,
  dtype: "f32",
  data: q,
});

t0 = performance.now();
const index = openIndexSync(ix, { verify: false });
const load = (performance.now() - t0) / 1000;
const h = index.header;
t0 = performance.now();
i8RowsOf(index, { dense: index.dense!, phrases: h.phrases, d: h.d, metric: h.metric });
const prep = (performance.now() - t0) / 1000;

const block = Number(arg("block", "256"));
async function answer(threads: number, screen: boolean): Promise<[number, number[][]]> {
  const rows: number[][] = [];
  const t = performance.now();
  for (let b = 0; b < nq; b += block) {
    const tops = await scoreQuestionsAsync(index, qs.slice(b, b + block).map(asMatrix), {
      topK: K,
      threads,
      screen,
    });
    for (const top of tops) rows.push(top.rows);
  }
  return [(performance.now() - t) / 1000, rows];
}

// The screening in one stage (no head), its rows made once (timed as prep1), then the same
// questions through scoreI8Threads: the path of `search` before the head stage.
const oneStage = { dense: index.dense!, phrases: h.phrases, d: h.d, metric: h.metric, head: 0 };
const oneKey = {};
let prep1 = NaN;
async function answerOneStage(threads: number): Promise<[number, number[][]]> {
  if (Number.isNaN(prep1)) {
    const t1 = performance.now();
    i8RowsOf(oneKey, oneStage);
    prep1 = (performance.now() - t1) / 1000;
  }
  const rows: number[][] = [];
  const t = performance.now();
  for (let b = 0; b < nq; b += block) {
    const part = qs.slice(b, b + block);
    const tops = part.map(() => new TopK(K));
    const left = await scoreI8Threads(oneKey, oneStage, part, tops, threads);
    if (left === undefined || left.length > 0) throw new Error("a question left to the float path");
    for (const top of tops) rows.push(top.rows);
  }
  return [(performance.now() - t) / 1000, rows];
}

const runs: { what: string; s: number; rows: number[][] }[] = [];
const th_ = (th: number) => `${th} thread${th > 1 ? "s" : ""}`;
for (const th of threadsList) {
  const [s, rows] = await answer(th, true);
  runs.push({ what: `phraseval exact, 8-bit screening with head, ${th_(th)}`, s, rows });
  console.error(`${runs.at(-1)!.what}: ${s.toFixed(2)} s`);
}
closeSearchWorkers(index);
if (!flag("no-one-stage")) {
  for (const th of threadsList) {
    const [s, rows] = await answerOneStage(th);
    runs.push({ what: `phraseval exact, 8-bit screening in one stage, ${th_(th)}`, s, rows });
    console.error(`${runs.at(-1)!.what}: ${s.toFixed(2)} s`);
  }
  closeI8Workers(oneKey);
}
if (!flag("no-float")) {
  const [s, rows] = await answer(1, false);
  runs.push({ what: "phraseval exact, float32 kernels only, 1 thread", s, rows });
  console.error(`${runs.at(-1)!.what}: ${s.toFixed(2)} s`);
}
const truth = runs[0].rows;
for (const r of runs) {
  if (JSON.stringify(r.rows) !== JSON.stringify(truth)) throw new Error(`${r.what}: other rows`);
}

// faiss: one process per thread count (a process that changes its OpenMP thread count between
// searches ran its 2-thread search several times slower here).
type FlatRun = { threads: number; search_s: number; rows: number[][] };
const flatRuns: FlatRun[] = [];
let f: { faiss: string; load_s: number; flat_build_s: number; flat_bytes: number } | undefined;
let faissWall = 0;
for (const th of threadsList) {
  const spec = {
    vectors: `${ix}/vectors.${h.dtype}`,
    dtype: h.dtype,
    n: h.phrases,
    d,
    queries: `${out}/queries.f32`,
    nq,
    train: "",
    nlist: 1,
    bpv: 1,
    nprobes: [],
    k: K,
    threads: th,
    flat_threads: [th],
    ivf: false,
  };
  Deno.writeTextFileSync(`${out}/faiss_spec.json`, JSON.stringify(spec));
  t0 = performance.now();
  const r = new Deno.Command("python3", {
    args: [`${root}bench/faiss_ref.py`, `${out}/faiss_spec.json`, `${out}/faiss.json`],
    stdout: "inherit",
    stderr: "inherit",
  }).outputSync();
  if (r.code !== 0) throw new Error("faiss_ref.py failed");
  faissWall += (performance.now() - t0) / 1000;
  const got = JSON.parse(Deno.readTextFileSync(`${out}/faiss.json`));
  flatRuns.push(...got.flat_runs);
  f ??= got;
}

const agree = (rows: number[][]) =>
  rows.filter((got, j) => got.join() === truth[j].join()).length / nq;
const du = (p: string): number =>
  [...Deno.readDirSync(p)].reduce((n, e) => n + Deno.statSync(`${p}/${e.name}`).size, 0);
const mb = (b: number) => (b / 1e6).toFixed(1);
const lines = [
  `${nq} questions (every ${every}th), ${h.phrases} phrases, d=${d} ${h.dtype}, top ${K}; ` +
  `phraseval build ${build.toFixed(1)} s, load ${load.toFixed(1)} s, ` +
  `8-bit prep ${prep.toFixed(1)} s (one stage ${prep1.toFixed(1)} s); faiss ${
    f!.faiss
  }, processes ${faissWall.toFixed(1)} s ` +
  `(load ${f!.load_s.toFixed(1)} s, add ${f!.flat_build_s.toFixed(1)} s)`,
  "",
  "| search | s | queries/s | index bytes (MB) | top-10 = phraseval's |",
  "| --- | --: | --: | --: | --: |",
  ...runs.map((x) =>
    `| ${x.what} | ${x.s.toFixed(2)} | ${(nq / x.s).toFixed(1)} | ${mb(du(ix))} | 1 |`
  ),
  ...flatRuns.map((x) =>
    `| faiss IndexFlatIP, ${x.threads} thread${x.threads > 1 ? "s" : ""} | ${
      x.search_s.toFixed(2)
    } | ${(nq / x.search_s).toFixed(1)} | ${mb(f!.flat_bytes)} | ${agree(x.rows).toFixed(4)} |`
  ),
];
const text = lines.join("\n");
console.log(text);
Deno.writeTextFileSync(`${out}/report.md`, text + "\n");
