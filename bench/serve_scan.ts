/**
 * Exact dense scan per question, as the demo server runs it: the first
 * `--questions N` dev questions (dataset order) of a question dump scored
 * against every phrase of an index with `searchVectors` (`search/open/open.ts`),
 * `--batch B` questions per call, for each B given (default 1, 4, 16).
 * Prints ms per question (wall, and this process's CPU time per question)
 * and a digest of the top-k rows and scores per batch size (equal digests:
 * equal results). The first call (what the scorer keeps per index, e.g. the
 * row norms) is timed apart.
 *
 * ```sh
 * deno run --allow-read bench/serve_scan.ts DATA INDEX_DIR QUESTION_EMB \
 *   [--questions 32] [--batch 1,4,16] [--top-k 5] [--no-verify]
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
import { searchVectors } from "../search/open/open.ts";

const valued = ["--questions", "--top-k", "--batch"];
const pos = Deno.args.filter((a, i) => !a.startsWith("--") && !valued.includes(Deno.args[i - 1]));
const arg = (name: string, dflt: string): string => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] : dflt;
};
const [data, dir, qemb] = pos;
if (qemb === undefined) {
  console.error(
    "usage: deno run --allow-read bench/serve_scan.ts DATA INDEX_DIR QUESTION_EMB [...]",
  );
  Deno.exit(2);
}
const n = Number(arg("questions", "32"));
const k = Number(arg("top-k", "5"));
const batches = arg("batch", "1,4,16").split(",").map(Number);

let t0 = performance.now();
const index = openIndexSync(dir, { verify: !Deno.args.includes("--no-verify") });
console.log(`open: ${((performance.now() - t0) / 1000).toFixed(2)} s`);
const q2c = await Effect.runPromise(readQ2c(data, false));
const qd = openDumpSync(qemb, { sparse: index.header.vectors === "csr" });
const vectors: Matrix[] = [];
for (const qid of [...q2c.keys()]) {
  if (vectors.length === n) break;
  const v = qd.readQuestion(qid);
  if (!("missing" in v)) vectors.push(v);
}
qd.close();
t0 = performance.now();
await searchVectors(index, vectors.slice(0, 1), { topK: k });
console.log(`first call: ${(performance.now() - t0).toFixed(0)} ms`);
console.log("| batch | questions | ms/question (wall) | ms/question (CPU) | digest |");
console.log("| ----: | --------: | -----------------: | ----------------: | ------ |");
for (const b of batches) {
  const h = createHash("sha256");
  t0 = performance.now();
  const c0 = cpuUsage();
  for (let i = 0; i < vectors.length; i += b) {
    const hits = await searchVectors(index, vectors.slice(i, i + b), { topK: k });
    for (const hs of hits) h.update(JSON.stringify(hs.map((x) => [x.row, x.score])));
  }
  const wall = performance.now() - t0;
  const c1 = cpuUsage(c0);
  const cpu = (c1.user + c1.system) / 1e3;
  console.log(
    `| ${b} | ${vectors.length} | ${(wall / vectors.length).toFixed(1)} | ${
      (cpu / vectors.length).toFixed(1)
    } | ${h.digest("hex").slice(0, 16)} |`,
  );
}
