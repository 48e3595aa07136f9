/**
 * `deno run -A bench/memory_budget.ts INDEX DATA QUESTION_EMB WORK [--copies 1,4,16]
 * [--budget 256MB] [--questions N] [--nprobe P] [--exact-copies 1] [--memory-copies 1,4]`:
 * peak RSS and questions per second of `search --memory-budget` against
 * the in-memory search, on k copies of one index.
 *
 * The k-copy corpus is made at the file level, cheaply and exactly: from
 * an `ivf-pq` index of dense vectors (`INDEX`, e.g. all of dev), a folder
 * `WORK/x<k>` holding its vectors k times over, its paragraph table k times
 * with the ids of copy c ≥ 2 suffixed `#c` (new paragraph ids, so a search
 * sees k × the paragraphs), the same centroids and codebooks, and each
 * IVF-PQ list holding its rows of every copy (copy c's rows are the
 * original's + c × phrases, its codes the original's: what encoding the k
 * copies with the same quantizer gives). The header is written last with
 * every file's size and sha256, so the search checks it as any index. (Ties
 * across copies go to the first copy: the answers' texts are those of 1×.)
 *
 * Then, for each k: `search --memory-budget B` (IVF-PQ at nprobe P, and
 * `--exact` for k in `--exact-copies`), and the in-memory search for k in
 * `--memory-copies` (16 × dev in memory does not fit a 23 GB machine), each
 * on the first N questions of `DATA` (a SQuAD file; written to
 * `WORK/questions.json`), one process at a time; peak RSS and q/s are read
 * from each search's record (`<stem>.search.json`: `peak_rss_bytes`,
 * `questions_per_second`, the search alone without the index's opening,
 * and `seconds.load`). Prints a markdown table, and checks that each budgeted
 * search wrote the in-memory search's `pred.json` and top-k bytes where both ran.
 *
 * @module
 */
import { createHash } from "node:crypto";

const HERE = new URL("..", import.meta.url).pathname;

/** Streams `src` into `out` `k` times; returns its sha256. */
function writeRepeated(src: string, out: string, k: number): string {
  const hash = createHash("sha256");
  const w = Deno.openSync(out, { write: true, create: true, truncate: true });
  const r = Deno.openSync(src, { read: true });
  const buf = new Uint8Array(8 << 20);
  try {
    for (let c = 0; c < k; c++) {
      r.seekSync(0, Deno.SeekMode.Start);
      for (;;) {
        const n = r.readSync(buf);
        if (n === null) break;
        const b = buf.subarray(0, n);
        hash.update(b);
        for (let o = 0; o < n;) o += w.writeSync(b.subarray(o));
      }
    }
  } finally {
    r.close();
    w.close();
  }
  return hash.digest("hex");
}

/** Writes `bytes` into `out`; returns its sha256. */
function writeBytes(out: string, bytes: Uint8Array): string {
  Deno.writeFileSync(out, bytes);
  return createHash("sha256").update(bytes).digest("hex");
}

/** The k-copy index of `src` in `out` (see the module notes). */
function makeCopies(src: string, k: number, out: string): void {
  try {
    if (Deno.statSync(`${out}/index.json`).isFile) return; // made before
  } catch { /* to make */ }
  const h = JSON.parse(Deno.readTextFileSync(`${src}/index.json`));
  if (h.kind !== "ivf-pq" || h.vectors !== "dense") throw new Error("an ivf-pq dense index");
  const tmp = `${out}.tmp`;
  Deno.mkdirSync(`${tmp}/ivf`, { recursive: true });
  const files: Record<string, { bytes: number; sha256: string }> = {};
  const put = (name: string, sha256: string) => {
    files[name] = { bytes: Deno.statSync(`${tmp}/${name}`).size, sha256 };
  };
  const vec = `vectors.${h.dtype}`;
  put(vec, writeRepeated(`${src}/${vec}`, `${tmp}/${vec}`, k));
  // The paragraph table, copy c ≥ 2's ids suffixed #c.
  const lines = Deno.readTextFileSync(`${src}/paragraphs.ndjson`).split("\n").slice(0, -1);
  const ph = createHash("sha256");
  const pw = Deno.openSync(`${tmp}/paragraphs.ndjson`, { write: true, create: true });
  for (let c = 1; c <= k; c++) {
    let text = "";
    for (const line of lines) {
      const o = JSON.parse(line);
      if (c > 1) o.id = `${o.id}#${c}`;
      text += JSON.stringify(o) + "\n";
    }
    const b = new TextEncoder().encode(text);
    ph.update(b);
    for (let x = 0; x < b.length;) x += pw.writeSync(b.subarray(x));
  }
  pw.close();
  put("paragraphs.ndjson", ph.digest("hex"));
  for (const name of ["ivf/centroids.f32", "ivf/codebooks.f32"]) {
    put(name, writeBytes(`${tmp}/${name}`, Deno.readFileSync(`${src}/${name}`)));
  }
  const nlist = h.parameters.nlist as number, bpv = h.parameters.bpv as number;
  const ob = Deno.readFileSync(`${src}/ivf/list_offsets.i64`);
  const off = Array.from(new BigInt64Array(ob.buffer, 0, nlist + 1), Number);
  const rb = Deno.readFileSync(`${src}/ivf/list_rows.u32`);
  const rows = new Uint32Array(rb.buffer, 0, h.phrases);
  const codes = Deno.readFileSync(`${src}/ivf/codes.u8`);
  const newOff = new BigInt64Array(nlist + 1);
  for (let l = 0; l <= nlist; l++) newOff[l] = BigInt(off[l] * k);
  put(
    "ivf/list_offsets.i64",
    writeBytes(`${tmp}/ivf/list_offsets.i64`, new Uint8Array(newOff.buffer)),
  );
  // List rows and codes, list by list: copy 0's rows, then copy 1's, ...; codes are
  // sub-quantizer-major within a list (`ivfpq.ts`), so each sub-quantizer's run repeats k times.
  const rh = createHash("sha256"), ch = createHash("sha256");
  const rw = Deno.openSync(`${tmp}/ivf/list_rows.u32`, { write: true, create: true });
  const cw = Deno.openSync(`${tmp}/ivf/codes.u8`, { write: true, create: true });
  const write = (f: Deno.FsFile, hash: ReturnType<typeof createHash>, b: Uint8Array) => {
    hash.update(b);
    for (let x = 0; x < b.length;) x += f.writeSync(b.subarray(x));
  };
  for (let l = 0; l < nlist; l++) {
    const s = off[l], n = off[l + 1] - s;
    const lr = new Uint32Array(n * k);
    for (let c = 0; c < k; c++) {
      for (let i = 0; i < n; i++) lr[c * n + i] = rows[s + i] + c * h.phrases;
    }
    write(rw, rh, new Uint8Array(lr.buffer));
    const lc = new Uint8Array(n * k * bpv);
    for (let m = 0; m < bpv; m++) {
      const run = codes.subarray(s * bpv + m * n, s * bpv + (m + 1) * n);
      for (let c = 0; c < k; c++) lc.set(run, m * n * k + c * n);
    }
    write(cw, ch, lc);
  }
  rw.close();
  cw.close();
  put("ivf/list_rows.u32", rh.digest("hex"));
  put("ivf/codes.u8", ch.digest("hex"));
  const header = {
    ...h,
    phrases: h.phrases * k,
    paragraphs: h.paragraphs * k,
    files: Object.fromEntries(Object.keys(files).sort().map((n) => [n, files[n]])),
  };
  Deno.writeTextFileSync(`${tmp}/index.json`, JSON.stringify(header, null, 2) + "\n");
  Deno.renameSync(tmp, out);
}

/** The first `n` questions of the SQuAD file `data` (articles and paragraphs kept as needed). */
async function firstQuestions(data: string, n: number, out: string): Promise<void> {
  let text: string;
  if (data.endsWith(".gz")) {
    const s = Deno.openSync(data).readable.pipeThrough(new DecompressionStream("gzip"));
    text = await new Response(s).text();
  } else text = Deno.readTextFileSync(data);
  const d = JSON.parse(text);
  let left = n;
  const articles = [];
  for (const a of d.data) {
    if (left <= 0) break;
    const paragraphs = [];
    for (const p of a.paragraphs) {
      if (left <= 0) break;
      const qas = p.qas.slice(0, left);
      left -= qas.length;
      paragraphs.push({ ...p, qas });
    }
    articles.push({ ...a, paragraphs });
  }
  Deno.writeTextFileSync(out, JSON.stringify({ ...d, data: articles }));
}

interface Row {
  k: number;
  phrases: number;
  mode: string;
  budget: string;
  load: number;
  qps: number;
  rss: number;
  same: string;
}

/** Runs `search` in its own process; its record. */
async function search(args: string[], pred: string): Promise<Record<string, unknown>> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${HERE}pipeline/search.ts`, ...args],
    stdout: "null",
    stderr: "piped",
  }).output();
  if (out.code !== 0) throw new Error(new TextDecoder().decode(out.stderr));
  return JSON.parse(Deno.readTextFileSync(pred.replace(/\.json$/, ".search.json")));
}

if (import.meta.main) {
  const a: Record<string, string> = {
    copies: "1,4,16",
    budget: "256MB",
    questions: "2000",
    nprobe: "16",
    "exact-copies": "1",
    "memory-copies": "1,4",
  };
  const positional: string[] = [];
  for (let i = 0; i < Deno.args.length; i++) {
    const x = Deno.args[i];
    if (x.startsWith("--") && x.slice(2) in a) a[x.slice(2)] = Deno.args[++i];
    else positional.push(x);
  }
  const [index, data, qemb, work] = positional;
  if (work === undefined) {
    console.error("usage: memory_budget.ts INDEX DATA QUESTION_EMB WORK [options]");
    Deno.exit(2);
  }
  Deno.mkdirSync(work, { recursive: true });
  const list = (s: string) => s.split(",").filter((x) => x !== "").map(Number);
  const questions = `${work}/questions.json`;
  await firstQuestions(data, Number(a.questions), questions);
  const rows: Row[] = [];
  for (const k of list(a.copies)) {
    const ix = k === 1 ? index : `${work}/x${k}`;
    if (k > 1) {
      const t0 = performance.now();
      makeCopies(index, k, ix);
      console.error(`x${k}: made in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }
    const h = JSON.parse(Deno.readTextFileSync(`${ix}/index.json`));
    const modes = [["ivf-pq", ["--nprobe", a.nprobe]]] as [string, string[]][];
    if (list(a["exact-copies"]).includes(k)) modes.push(["exact", ["--exact"]]);
    for (const [mode, flags] of modes) {
      const runs: [string, string[]][] = [["budget", ["--memory-budget", a.budget]]];
      if (list(a["memory-copies"]).includes(k)) runs.push(["memory", []]);
      const outs: Record<string, string> = {};
      for (const [what, extra] of runs) {
        const pred = `${work}/x${k}.${mode}.${what}.json`;
        const topk = `${work}/x${k}.${mode}.${what}.topk.ndjson`;
        const r = await search(
          [questions, ix, qemb, pred, "--topk-out", topk, ...flags, ...extra],
          pred,
        );
        outs[what] = Deno.readTextFileSync(pred) + Deno.readTextFileSync(topk);
        const seconds = r.seconds as { load: number };
        rows.push({
          k,
          phrases: h.phrases,
          mode,
          budget: what === "budget" ? a.budget : "none",
          load: seconds.load,
          qps: r.questions_per_second as number,
          rss: r.peak_rss_bytes as number,
          same: "",
        });
        console.error(JSON.stringify(rows[rows.length - 1]));
      }
      if (outs.memory !== undefined) {
        rows[rows.length - 2].same = outs.memory === outs.budget ? "same bytes" : "DIFFERENT";
      }
    }
  }
  console.log(
    "| copies |     phrases | search  | budget | open s |   q/s | peak RSS | outputs    |",
  );
  console.log(
    "| -----: | ----------: | ------- | ------ | -----: | ----: | -------: | ---------- |",
  );
  for (const r of rows) {
    console.log(
      `| ${String(r.k).padStart(6)} | ${r.phrases.toLocaleString("en").padStart(11)} | ${
        r.mode.padEnd(7)
      } | ${r.budget.padEnd(6)} | ${r.load.toFixed(1).padStart(6)} | ${
        r.qps.toFixed(0).padStart(5)
      } | ${(r.rss / 1e6).toFixed(0).padStart(5)} MB | ${r.same.padEnd(10)} |`,
    );
  }
}
