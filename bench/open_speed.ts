/**
 * Exact open-search speed: opens an index (timed), then scores the first
 * `--questions N` questions of a dataset (dataset order) against every phrase
 * (`scoreQuestions` of `search/open/open.ts`, the `search` stage's scoring),
 * in blocks of `--block` (as the `search` stage reads them), timed separately, and prints queries/s (wall, and per second of this
 * process's CPU time, steadier on a shared machine) and a digest of the top-k rows and
 * scores (equal digests: equal results).
 *
 * ```sh
 * deno run --allow-read bench/open_speed.ts DATA INDEX_DIR QUESTION_EMB [--questions 500] [--top-k 10] [--block 256] [--no-verify]
 * ```
 *
 * @module
 */
import { createHash } from "node:crypto";
import { cpuUsage } from "node:process";
import * as Effect from "effect/Effect";
import { openDumpSync } from "../io/dump/reader_sync.ts";
import type { Matrix } from "../io/matrix.ts";
import { readQ2c } from "../search/merge/merge.ts";
import { openIndexSync } from "../search/index/read.ts";
import { scoreQuestions } from "../search/open/open.ts";

const valued = ["--questions", "--top-k", "--block"];
const pos = Deno.args.filter((a, i) => !a.startsWith("--") && !valued.includes(Deno.args[i - 1]));
const arg = (name: string, dflt: string): string => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] : dflt;
};
const [data, dir, qemb] = pos;
const n = Number(arg("questions", "500"));
const k = Number(arg("top-k", "10"));
const block = Number(arg("block", "256"));

let t0 = performance.now();
const index = openIndexSync(dir, { verify: !Deno.args.includes("--no-verify") });
const tOpen = (performance.now() - t0) / 1000;
const q2c = await Effect.runPromise(readQ2c(data, false));
const qd = openDumpSync(qemb, { sparse: index.header.vectors === "csr" });
const vectors: Matrix[] = [];
for (const qid of [...q2c.keys()].slice(0, n)) {
  const v = qd.readQuestion(qid);
  if (!("missing" in v)) vectors.push(v);
}
qd.close();
// The first call builds what the scorer keeps per index (posting lists): timed apart.
t0 = performance.now();
scoreQuestions(index, vectors.slice(0, 1), { topK: k });
const tFirst = (performance.now() - t0) / 1000;
t0 = performance.now();
const c0 = cpuUsage();
const tops = [];
for (let b = 0; b < vectors.length; b += block) {
  tops.push(...scoreQuestions(index, vectors.slice(b, b + block), { topK: k }));
}
const tScore = (performance.now() - t0) / 1000;
const c1 = cpuUsage(c0);
const cpu = (c1.user + c1.system) / 1e6;
const h = createHash("sha256");
for (const t of tops) h.update(JSON.stringify([t.rows, t.scores]));
console.log(JSON.stringify({
  index: dir,
  phrases: index.header.phrases,
  questions: vectors.length,
  open_s: +tOpen.toFixed(2),
  first_query_s: +tFirst.toFixed(2),
  score_s: +tScore.toFixed(2),
  queries_per_s: +(vectors.length / tScore).toFixed(1),
  cpu_s: +cpu.toFixed(2),
  queries_per_cpu_s: +(vectors.length / cpu).toFixed(1),
  digest: h.digest("hex").slice(0, 16),
}));
