/**
 * The IVF-PQ scan kernel alone (`search/index/ivfpq/pq_scan.ts`): one list of
 * `--rows` rows (default 10,681, a list of the piqa-lstm dev index at
 * nlist 100) at `--bpv` (default 128), random codes and tables, scanned
 * one question at a time (`scanOne`) and four at a time (`scanLanes`), for
 * each pass length; ns per code byte per question. Checks first that both
 * give the TypeScript scan's sums bit for bit.
 *
 * ```sh
 * deno run bench/pq_scan_speed.ts [--rows 10681] [--bpv 128] [--reps 40]
 * ```
 *
 * @module
 */
import { codesMemory, PqScanner } from "../search/index/ivfpq/pq_scan.ts";
import { scanLists } from "../search/index/ivfpq/ivfpq.ts";
import { splitmix32 } from "../search/index/ivfpq/kmeans.ts";

const arg = (name: string, dflt: number): number => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Number(Deno.args[i + 1]) : dflt;
};
const n = arg("rows", 10681), bpv = arg("bpv", 128), reps = arg("reps", 40);
const lists = 10, per = bpv * 256;
const mem = codesMemory(n * bpv * lists);
if (mem === undefined) throw new Error("no scan kernel on this runtime");
const codes = new Uint8Array(mem.buffer, 0, n * bpv * lists);
const u = splitmix32(7);
for (let i = 0; i < codes.length; i++) codes[i] = u() & 255;
const k = PqScanner.create(mem)!;
if (!k.lanes) throw new Error("no lane-parallel scan on this runtime (WebAssembly SIMD)");
const tables = k.batch(4, bpv, n);
for (let i = 0; i < tables.length; i++) tables[i] = u() / 2 ** 32 - 0.5;
const copy = tables.slice();

const want = new Float32Array(n);
const lanes = k.scanLanes([0, 1, 2, 3], bpv, n).slice();
for (let j = 0; j < 4; j++) {
  scanLists(codes, bpv, n, bpv, copy.subarray(j * per, (j + 1) * per), want);
  const one = k.scanOne(j, bpv, n);
  for (let i = 0; i < n; i++) {
    if (!Object.is(one[i], want[i]) || !Object.is(lanes[4 * i + j], want[i])) {
      throw new Error(`question ${j} row ${i}: not the TypeScript scan's sum`);
    }
  }
}

console.log(
  `${n} rows, bpv ${bpv}, ${reps} × 4 questions per figure; ns per code byte per question`,
);
console.log("| pass | one at a time | four at a time |\n| --: | --: | --: |");
for (const pass of [4, 8, 16, 32, bpv]) {
  let t0 = performance.now();
  for (let r = 0; r < reps; r++) {
    for (let j = 0; j < 4; j++) k.scanOne(j, (r % lists) * n * bpv, n, pass);
  }
  const one = (performance.now() - t0) * 1e6 / (reps * 4 * n * bpv);
  t0 = performance.now();
  for (let r = 0; r < reps; r++) k.scanLanes([0, 1, 2, 3], (r % lists) * n * bpv, n, pass);
  const four = (performance.now() - t0) * 1e6 / (reps * 4 * n * bpv);
  console.log(`| ${pass} | ${one.toFixed(3)} | ${four.toFixed(3)} |`);
}
