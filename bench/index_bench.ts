/**
 * Dense open-search speed and quality against faiss-cpu (bench/faiss_ref.py):
 * exact search (phraseval exact index vs `IndexFlatIP`) and IVF-PQ
 * (phraseval `ivf-pq` index vs `IndexIVFPQ(IndexFlatIP(d), d, nlist, bpv, 8,
 * METRIC_INNER_PRODUCT)`) with the same nlist, bpv, training rows (the
 * index's sample) and nprobe sweep; with `--refine R` also phraseval's
 * exact re-scoring of the R best PQ candidates against faiss's
 * `IndexRefineFlat` over the IVF-PQ index (k_factor = R / k).
 *
 * Steps: builds both indexes with the `index` stage (timed whole process;
 * `--reuse` keeps them), takes every `--every`-th question of the dataset
 * (their question vectors written once as raw f32 for both sides), then in
 * process: opens each index (timed) and answers the questions in blocks of
 * `--block` (default 256, the blocks the `search` stage answers; timed:
 * queries/s), exact first (the ground truth: merge's exact scores,
 * first row on ties), then IVF-PQ per nprobe without and with `--refine`
 * (phraseval scans on `--ivf-threads` worker threads, default 1: this one; a
 * comma list runs each; `--compare-scan` answers each setting with the
 * TypeScript scan, then the WebAssembly kernel, and `--skip-refine0` leaves
 * out refine 0). Speed per code byte: search time × threads / (code bytes of
 * the probed lists; faiss: distances computed × bpv). faiss runs in its own process with
 * `--threads` OpenMP threads (default 2, the machine's cores). Peak RSS:
 * the `index` process (GNU time, when /usr/bin/time exists), this process
 * (VmHWM: both indexes open) and faiss's process. Recall@1: share of questions whose top-1 row is
 * the exact top-1 row; recall@10: mean share of the exact top-10 rows in
 * the top 10.
 *
 * ```sh
 * pip install faiss-cpu
 * deno run -A bench/index_bench.ts --dump DIR/dumps/context_emb --context DIR/context.json \
 *   --questions DIR/dumps/question_emb --data DIR/question.json [--every 10] \
 *   [--nlist 100] [--bpv 128] [--nprobes 1,4,10,32,100] [--refine 100[,1000]] [--threads 2] \
 *   [--out bench/out/index_bench] [--reuse] [--no-faiss] [--ivf-threads 1[,2]] [--compare-scan]
 *   [--skip-refine0] [--block 256]
 * ```
 *
 * `--reuse` keeps indexes already in `--out` and faiss's results when its
 * spec is unchanged. `--no-faiss` runs phraseval's side alone: its rows
 * (the sweep, then build time, index bytes and peak RSS each) printed and
 * in `OUT/report.md`.
 *
 * `--pq-bits 8,4` also builds and answers with a 4-bit index (`index
 * --pq-bits 4`, `OUT/ivf4`; rows say which). `--faiss-factories
 * 'IVF100,PQ256x4fsr;IVF100,RaBitQfs2'` adds faiss indexes by their
 * factory string (`;` between them: faiss's fast-scan PQ and RaBitQ),
 * each built (trained on the same rows, timed train + add) and searched in
 * its own faiss process (so each row's peak RSS is its own), at every
 * nprobe without and with `IndexRefineFlat` (k_factor = refine / k);
 * `--faiss-factory-threads 1,2` searches each factory once per thread count
 * (default: `--threads`; rows say which).
 *
 * `--probe-taus 0.1,0.13` answers each nprobe also with adaptive probing
 * (`search --probe-tau`, `IvfQueryOptions.probeTau`) at each tau (rows say
 * `nprobe, tau T`; faiss has no such setting, its columns `–` there).
 *
 * `--passes N` (default 1) times every IVF-PQ search setting, on both
 * sides, as the fastest of `N` passes over all the questions, one after
 * another (faiss: `N` calls of `search` on the same index): the first pass
 * of a setting also pays for warming up (JIT compilation, starting the
 * search workers, first touches of the index's pages), so with `N` ≥ 2
 * the rows compare steady speeds. Every pass must give the same rows (the
 * bench stops otherwise); recall is of the first.
 *
 * @module
 */
import { openDumpSync } from "../io/dump/reader_sync.ts";
import type { Matrix } from "../io/matrix.ts";
import { asFloat32 } from "../search/dense_f64.ts";
import { loadIvf } from "../search/index/ivfpq/ivfpq.ts";
import { cutLists } from "../search/index/ivfpq/fastscan.ts";
import { closeIvfWorkers } from "../search/index/ivfpq/ivf_search.ts";
import { scoreInBlocks } from "./ivf_search_speed.ts";
import { trainSample } from "../search/index/ivfpq/train.ts";
import { openIndexSync } from "../search/index/read.ts";
import { scoreQuestions } from "../search/open/open.ts";

const arg = (name: string, dflt: string): string => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] : dflt;
};
const flag = (name: string) => Deno.args.includes(`--${name}`);
function exists(p: string): boolean {
  try {
    Deno.statSync(p);
    return true;
  } catch {
    return false;
  }
}
const root = new URL("..", import.meta.url).pathname;
const out = arg("out", `${root}bench/out/index_bench`);
const dump = arg("dump", "");
const context = arg("context", "");
const questions = arg("questions", "");
const data = arg("data", "");
const every = Number(arg("every", "10"));
const nlist = Number(arg("nlist", "100"));
const bpv = Number(arg("bpv", "128"));
const nprobes = arg("nprobes", "1,4,10,32,100").split(",").map(Number);
// --probe-taus 0.1,0.13: each nprobe also with adaptive probing (`search --probe-tau`) at each tau.
const probeTaus = arg("probe-taus", "").split(",").filter((x) => x !== "").map(Number);
const refines = arg("refine", "100").split(",").map(Number);
const threads = Number(arg("threads", "2"));
const ivfThreadsList = arg("ivf-threads", "1").split(",").map(Number);
// --compare-scan: each setting answered with the TypeScript scan and with the WebAssembly
// kernel, alternating, on every --ivf-threads count (rows say which).
const compareScan = flag("compare-scan");
const refine0 = !flag("skip-refine0");
const K = 10;
const block = Number(arg("block", "256"));
// --passes N: each IVF-PQ setting timed as the fastest of N passes, on both sides.
const passes = Number(arg("passes", "1"));
if (!Number.isInteger(passes) || passes < 1) {
  console.error(
    `index_bench.ts: --passes ${arg("passes", "1")}: a whole number of passes, 1 or more`,
  );
  Deno.exit(2);
}
const pqBitsList = arg("pq-bits", "8").split(",").map(Number);
const factories = arg("faiss-factories", "").split(";").filter((x) => x !== "");
// --faiss-factory-threads 1,2: each factory's searches once per thread count (default: --threads).
const factoryThreads = arg("faiss-factory-threads", "").split(",").filter((x) => x !== "")
  .map(Number);
Deno.mkdirSync(out, { recursive: true });

const peaks: Record<string, number> = {};
function sh(cmd: string, args: string[], peakOf?: string): number {
  const t0 = performance.now();
  const timed = peakOf !== undefined && exists("/usr/bin/time");
  const r = timed
    ? new Deno.Command("/usr/bin/time", {
      args: ["-f", "%M", "-o", `${out}/peak_kb.txt`, cmd, ...args],
      stdout: "inherit",
      stderr: "inherit",
    }).outputSync()
    : new Deno.Command(cmd, { args, stdout: "inherit", stderr: "inherit" }).outputSync();
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(" ")} failed`);
  if (timed) peaks[peakOf] = Number(Deno.readTextFileSync(`${out}/peak_kb.txt`).trim()) * 1024;
  return (performance.now() - t0) / 1000;
}
function du(path: string): number {
  const st = Deno.statSync(path);
  if (!st.isDirectory) return st.size;
  let n = 0;
  for (const e of Deno.readDirSync(path)) n += du(`${path}/${e.name}`);
  return n;
}
const index = (dir: string, extra: string[]) =>
  sh(Deno.execPath(), [
    "run",
    "-A",
    `${root}pipeline/index.ts`,
    dump,
    dir,
    "--context",
    context,
    "--overwrite",
    ...extra,
  ], dir);
const build = (dir: string, extra: string[]) =>
  flag("reuse") && exists(dir) ? NaN : index(dir, extra);

const exactBuild = build(`${out}/exact`, []);
const ivfDirOf = (bits: number) => bits === 8 ? `${out}/ivf` : `${out}/ivf${bits}`;
const ivfBuilds = new Map(
  pqBitsList.map((bits) => [
    bits,
    build(ivfDirOf(bits), [
      "--nlist",
      String(nlist),
      "--bpv",
      String(bpv),
      ...(bits === 8 ? [] : ["--pq-bits", String(bits)]),
    ]),
  ]),
);

// Questions: every `every`-th of the dataset, vectors as float32.
const ds = JSON.parse(Deno.readTextFileSync(data)) as {
  data: { paragraphs: { qas: { id: string }[] }[] }[];
};
const qids = ds.data.flatMap((a) => a.paragraphs.flatMap((p) => p.qas.map((q) => q.id)))
  .filter((_, i) => i % every === 0);
const qd = openDumpSync(questions, { sparse: false });
const qs: Float32Array[] = qids.map((id) => {
  const m = qd.readQuestion(id);
  if ("missing" in m) throw new Error(`no vector for ${id}`);
  return asFloat32(m as Matrix & { kind: "dense" });
});
qd.close();
const d = qs[0].length;
const qbuf = new Float32Array(qs.length * d);
qs.forEach((q, j) => qbuf.set(q, j * d));
Deno.writeFileSync(`${out}/queries.f32`, new Uint8Array(qbuf.buffer));

// Exact, in process.
let t0 = performance.now();
const exact = openIndexSync(`${out}/exact`, { verify: false });
const exactLoad = (performance.now() - t0) / 1000;
const asMatrix = (q: Float32Array): Matrix => ({
  kind: "dense",
  rows: 1,
  cols: d,
  dtype: "f32",
  data: q,
});
t0 = performance.now();
const truth: number[][] = [];
for (let b = 0; b < qs.length; b += block) {
  for (const t of scoreQuestions(exact, qs.slice(b, b + block).map(asMatrix), { topK: K })) {
    truth.push(t.rows);
  }
}
const exactSearch = (performance.now() - t0) / 1000;
console.error(`exact: ${qs.length} questions in ${exactSearch.toFixed(1)} s`);

// Training rows of the IVF index's sample, for faiss.
t0 = performance.now();
const ivf = openIndexSync(ivfDirOf(pqBitsList[0]), { verify: false });
loadIvf(ivf);
const ivfLoad = (performance.now() - t0) / 1000;
const ivfs = new Map(
  pqBitsList.map((bits, i) => {
    if (i === 0) return [bits, ivf];
    const ix = openIndexSync(ivfDirOf(bits), { verify: false });
    loadIvf(ix);
    return [bits, ix];
  }),
);
const p = ivf.header.parameters as Record<string, number>;
const train = await trainSample(ivf.ids, p.train_paragraphs);
const trainRows: bigint[] = [];
for (const t of train) {
  for (let r = ivf.starts[t]; r < ivf.starts[t + 1]; r++) trainRows.push(BigInt(r));
}
Deno.writeFileSync(`${out}/train.i64`, new Uint8Array(new BigInt64Array(trainRows).buffer));

const recall = (rows: number[][]) => {
  let r1 = 0, r10 = 0;
  rows.forEach((got, j) => {
    if (got[0] === truth[j][0]) r1++;
    const want = new Set(truth[j]);
    r10 += got.filter((r) => want.has(r)).length / truth[j].length;
  });
  return { r1: r1 / rows.length, r10: r10 / rows.length };
};

// Code bytes each nprobe scans over all the questions (the probed lists, as ivfpq.ts picks them).
const ivfData = loadIvf(ivf);
function codeBytes(nprobe: number, tau?: number): number {
  const { nlist, centroids: c, offsets } = ivfData;
  const l2 = ivf.header.metric === "l2";
  let total = 0;
  for (const q of qs) {
    const qc = new Float64Array(nlist);
    for (let l = 0; l < nlist; l++) {
      let s = 0;
      for (let t = 0; t < d; t++) s += l2 ? (q[t] - c[l * d + t]) ** 2 : q[t] * c[l * d + t];
      qc[l] = l2 ? -s : s;
    }
    const order = Array.from({ length: nlist }, (_, l) => l).sort((a, b) => qc[b] - qc[a] || a - b);
    const probed = cutLists(ivfData, d, q, order.slice(0, nprobe), qc, { nprobe, tau });
    for (const l of probed) total += offsets[l + 1] - offsets[l];
  }
  return total * ivfData.bpv;
}
/** A setting's probing as its rows show it: nprobe, and the tau of adaptive probing. */
const probeLabel = (o: { nprobe: number; tau?: number }) =>
  o.tau === undefined ? String(o.nprobe) : `${o.nprobe}, tau ${o.tau}`;
const bytesOf = new Map<string, number>();
for (const n of nprobes) {
  for (const tau of [undefined, ...probeTaus]) {
    bytesOf.set(probeLabel({ nprobe: n, tau }), codeBytes(n, tau));
  }
}

const ours: {
  nprobe: number;
  tau?: number;
  refine: number;
  s: number;
  r1: number;
  r10: number;
  threads: number;
  scan: string;
  bits: number;
}[] = [];
for (const [bits, ivf] of ivfs) {
  for (const nprobe of nprobes) {
    for (const tau of [undefined, ...probeTaus]) {
      for (const rf of [...(refine0 ? [0] : []), ...refines]) {
        for (const th of ivfThreadsList) {
          for (const kernel of compareScan ? [false, true] : [true]) {
            let s = Infinity, rows: number[][] = [];
            for (let p = 0; p < passes; p++) {
              t0 = performance.now();
              const got: number[][] = [];
              // As the `search` stage answers them (`ivf_search_speed.ts` `scoreInBlocks`).
              await scoreInBlocks(ivf, qs, block, {
                topK: K,
                nprobe,
                ...(tau !== undefined ? { probeTau: tau } : {}),
                refine: rf,
                threads: th,
                scanKernel: kernel,
              }, (_, tops) => {
                for (const t of tops) got.push(t.rows);
              });
              s = Math.min(s, (performance.now() - t0) / 1000);
              if (p === 0) rows = got;
              else if (JSON.stringify(got) !== JSON.stringify(rows)) {
                throw new Error(
                  `nprobe ${probeLabel({ nprobe, tau })} refine ${rf}: pass ${
                    p + 1
                  } gave other rows`,
                );
              }
            }
            const scan = kernel ? "wasm" : "ts";
            const o = { nprobe, ...(tau !== undefined ? { tau } : {}), refine: rf, s, threads: th };
            ours.push({ ...o, ...recall(rows), scan, bits });
            console.error(
              `ivf ${bits}-bit nprobe ${probeLabel(o)} refine ${rf} threads ${th} scan ${scan}: ${
                s.toFixed(1)
              } s, ${nsPerByte(o)} ns per code byte per thread`,
              recall(rows),
            );
          }
        }
      }
    }
  }
}

for (const ix of ivfs.values()) closeIvfWorkers(ix);

/**
 * phraseval's rows of the table of every system: build (whole `index`
 * process; NaN when `--reuse` kept the index), index MB (the IVF files, and
 * the vectors beside them), peak RSS (build, and this process), each
 * setting's recall and speed.
 */
function ourSystemRows(): string[] {
  const qps = (s: number) => (qs.length / s).toFixed(1), mb = (b: number) => (b / 1e6).toFixed(1);
  return ours.map((o) => {
    const dir = ivfDirOf(o.bits);
    return `| phraseval IVF-PQ ${o.bits}-bit | ${bpv} | ${
      (ivfBuilds.get(o.bits) ?? NaN).toFixed(1)
    } | ${mb(du(`${dir}/ivf`))} (+ vectors ${mb(du(dir) - du(`${dir}/ivf`))}) | ${
      mb(peaks[dir] ?? NaN)
    } build, ${mb(vmHwm())} search | ${probeLabel(o)} | ${o.refine} | ${o.threads} | ${
      o.r1.toFixed(3)
    } | ${o.r10.toFixed(3)} | ${qps(o.s)} |`;
  });
}

if (flag("no-faiss")) {
  // Only phraseval's IVF-PQ rows (e.g. another --refine sweep on reused indexes).
  const t = ours.map((o) =>
    `| ${o.bits} | ${probeLabel(o)} | ${o.refine} | ${o.threads} | ${o.scan} | ${
      o.r1.toFixed(3)
    } | ${o.r10.toFixed(3)} | ${(qs.length / o.s).toFixed(1)} | ${nsPerByte(o)} |`
  );
  const text = [
    `phraseval only (--no-faiss); this process's peak RSS ${(vmHwm() / 1e6).toFixed(0)} MB.`,
    ...(passes > 1 ? [`Each IVF-PQ q/s: the fastest of ${passes} passes.`] : []),
    "",
    "| bits | nprobe | refine | threads | scan | R@1 | R@10 | q/s | ns per code byte per thread |",
    "|---|---|---|---|---|---|---|---|---|",
    ...t,
    "",
    "| system | code bytes/vector | build s | index MB | peak RSS MB | nprobe | refine | threads | R@1 | R@10 | q/s |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
    ...ourSystemRows(),
  ].join("\n");
  console.log(text);
  Deno.writeTextFileSync(`${out}/report.md`, text + "\n");
  Deno.exit(0);
}

// faiss.
const spec = {
  vectors: `${out}/exact/vectors.${exact.header.dtype}`,
  dtype: exact.header.dtype,
  n: exact.header.phrases,
  d,
  queries: `${out}/queries.f32`,
  nq: qs.length,
  train: `${out}/train.i64`,
  nlist,
  bpv,
  nprobes,
  refines,
  k: K,
  threads,
  ...(passes > 1 ? { passes } : {}),
};
// --reuse with a faiss.json of the same spec: faiss is not run again.
const reuseFaiss = flag("reuse") && exists(`${out}/faiss.json`) &&
  exists(`${out}/faiss_spec.json`) &&
  Deno.readTextFileSync(`${out}/faiss_spec.json`) === JSON.stringify(spec);
if (!reuseFaiss) Deno.writeTextFileSync(`${out}/faiss_spec.json`, JSON.stringify(spec));
const faissWall = reuseFaiss ? NaN : sh("python3", [
  `${root}bench/faiss_ref.py`,
  `${out}/faiss_spec.json`,
  `${out}/faiss.json`,
]);
const f = JSON.parse(Deno.readTextFileSync(`${out}/faiss.json`));
// Each factory in its own faiss process (its own peak RSS), reused as faiss.json is.
const fac = factories.map((factory, i) => {
  const fspec = {
    ...spec,
    flat: false,
    ivf: false,
    factory,
    ...(factoryThreads.length > 0 ? { search_threads: factoryThreads } : {}),
  };
  const sp = `${out}/faiss_factory${i}_spec.json`, res = `${out}/faiss_factory${i}.json`;
  const again = !(flag("reuse") && exists(res) && exists(sp) &&
    Deno.readTextFileSync(sp) === JSON.stringify(fspec));
  if (again) {
    Deno.writeTextFileSync(sp, JSON.stringify(fspec));
    sh("python3", [`${root}bench/faiss_ref.py`, sp, res]);
  }
  return JSON.parse(Deno.readTextFileSync(res));
});

const nq = qs.length;
const qps = (s: number) => (nq / s).toFixed(1);
const mb = (b: number) => (b / 1e6).toFixed(1);
const lines: string[] = [];
lines.push(
  `${nq} questions (every ${every}th), ${exact.header.phrases} phrases, d=${d} ${exact.header.dtype}; ` +
    `faiss ${f.faiss}, ${threads} threads; faiss process ${faissWall.toFixed(1)} s (load ${
      f.load_s.toFixed(1)
    } s)`,
  "",
  "| exact | build s | load s | search s | queries/s | bytes (MB) | recall@1 vs phraseval exact |",
  "|---|---|---|---|---|---|---|",
  `| phraseval exact | ${exactBuild.toFixed(1)} | ${exactLoad.toFixed(1)} | ${
    exactSearch.toFixed(1)
  } | ${qps(exactSearch)} | ${mb(du(`${out}/exact`))} | 1 |`,
  `| faiss IndexFlatIP | ${f.flat_build_s.toFixed(1)} | ${f.load_s.toFixed(1)} | ${
    f.flat_search_s.toFixed(1)
  } | ${qps(f.flat_search_s)} | ${mb(f.flat_bytes)} | ${recall(f.flat_rows).r1.toFixed(4)} |`,
  "",
  `IVF-PQ nlist ${nlist}, bpv ${bpv}, trained on ${p.train_phrases} phrases (${p.train_paragraphs} paragraphs). ` +
    `Build: phraseval ${
      (ivfBuilds.get(pqBitsList[0]) ?? NaN).toFixed(1)
    } s whole process (exact files + IVF-PQ, ${pqBitsList[0]}-bit), peak RSS ${
      mb(peaks[ivfDirOf(pqBitsList[0])] ?? NaN)
    } MB; faiss train ${f.ivf_train_s.toFixed(1)} s + add ${
      f.ivf_add_s.toFixed(1)
    } s (faiss process peak RSS ${mb(f.peak_rss)} MB, with IndexFlatIP and the vectors). ` +
    `Bytes: phraseval ivf/ ${mb(du(`${ivfDirOf(pqBitsList[0])}/ivf`))} MB, whole folder ${
      mb(du(ivfDirOf(pqBitsList[0])))
    } MB; faiss index ${mb(f.ivf_bytes)} MB. Load (exact vectors + ivf/): ${
      ivfLoad.toFixed(1)
    } s. This process's peak RSS (both indexes open) ${mb(vmHwm())} MB.`,
  "",
  "| bits | nprobe | refine | threads | scan | phraseval R@1 | R@10 | q/s | ns/B/thread | faiss R@1 | R@10 | q/s (" +
    threads + " threads) | ns/B/thread |",
  "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
);
for (const o of ours) {
  if (o.tau !== undefined) {
    // Adaptive probing: faiss has no such setting.
    lines.push(
      `| ${o.bits} | ${probeLabel(o)} | ${o.refine} | ${o.threads} | ${o.scan} | ${
        o.r1.toFixed(3)
      } | ${o.r10.toFixed(3)} | ${qps(o.s)} | ${nsPerByte(o)} | – | – | – | – |`,
    );
    continue;
  }
  const fr = o.refine === 0
    ? f.ivf.find((x: { nprobe: number }) => x.nprobe === o.nprobe)
    : f.refined.find((x: { nprobe: number; refine: number }) =>
      x.nprobe === o.nprobe && x.refine === o.refine
    );
  const rc = recall(fr.rows);
  // faiss's code bytes: the distances it computed (indexIVF_stats.ndis) × bpv.
  const fns = fr.ndis ? (fr.search_s * 1e9 * threads / (fr.ndis * bpv)).toFixed(2) : "";
  lines.push(
    `| ${o.bits} | ${o.nprobe} | ${o.refine} | ${o.threads} | ${o.scan} | ${o.r1.toFixed(3)} | ${
      o.r10.toFixed(3)
    } | ${qps(o.s)} | ${nsPerByte(o)} | ${rc.r1.toFixed(3)} | ${rc.r10.toFixed(3)} | ${
      qps(fr.search_s)
    } | ${fns} |`,
  );
}
// One table of every system: build (whole process for phraseval; train + add for faiss), index
// bytes, peak RSS, and each setting's recall and speed.
lines.push(
  "",
  `All systems, ${threads} faiss threads (phraseval: the threads column of each row):`,
  ...(passes > 1 ? [`Each IVF-PQ q/s, on both sides: the fastest of ${passes} passes.`] : []),
  "",
  "| system | code bytes/vector | build s | index MB | peak RSS MB | nprobe | refine | threads | R@1 | R@10 | q/s |",
  "|---|---|---|---|---|---|---|---|---|---|---|",
);
lines.push(...ourSystemRows());
for (const x of f.ivf) {
  const rc = recall(x.rows);
  lines.push(
    `| faiss IVF${nlist},PQ${bpv} | ${bpv} | ${(f.ivf_train_s + f.ivf_add_s).toFixed(1)} | ${
      mb(f.ivf_bytes)
    } | ${mb(f.peak_rss)} | ${x.nprobe} | 0 | ${threads} | ${rc.r1.toFixed(3)} | ${
      rc.r10.toFixed(3)
    } | ${qps(x.search_s)} |`,
  );
}
for (const x of f.refined) {
  const rc = recall(x.rows);
  lines.push(
    `| faiss IVF${nlist},PQ${bpv} + IndexRefineFlat | ${bpv} | ${
      (f.ivf_train_s + f.ivf_add_s).toFixed(1)
    } | ${mb(f.ivf_bytes)} | ${mb(f.peak_rss)} | ${x.nprobe} | ${x.refine} | ${threads} | ${
      rc.r1.toFixed(3)
    } | ${rc.r10.toFixed(3)} | ${qps(x.search_s)} |`,
  );
}
for (const g of fac) {
  for (const x of [...g.ivf.map((y: object) => ({ ...y, refine: 0 })), ...g.refined]) {
    const rc = recall(x.rows);
    lines.push(
      `| faiss ${g.factory}${x.refine > 0 ? " + IndexRefineFlat" : ""} | ${g.code_size ?? ""} | ${
        (g.ivf_train_s + g.ivf_add_s).toFixed(1)
      } | ${mb(g.ivf_bytes)} | ${mb(g.peak_rss)} | ${x.nprobe} | ${x.refine} | ${
        x.threads ?? threads
      } | ${rc.r1.toFixed(3)} | ${rc.r10.toFixed(3)} | ${qps(x.search_s)} |`,
    );
  }
}
const text = lines.join("\n");
console.log(text);
Deno.writeTextFileSync(`${out}/report.md`, text + "\n");

/** Our search time per code byte scanned, per thread (ns), as text. */
function nsPerByte(o: { nprobe: number; tau?: number; s: number; threads: number }): string {
  return (o.s * 1e9 * o.threads / bytesOf.get(probeLabel(o))!).toFixed(2);
}

/** This process's peak resident set size in bytes (Linux VmHWM), or NaN. */
function vmHwm(): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(Deno.readTextFileSync("/proc/self/status"));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}
