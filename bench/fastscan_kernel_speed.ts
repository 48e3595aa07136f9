/**
 * The 4-bit fast-scan kernel alone (`search/kernels/wasm_fastscan.ts`):
 * `--blocks` blocks of 32 rows (default 1,063: the 34,000 rows a question
 * of all of dev scans at nlist 1000, nprobe 32) of `--m` sub-quantizers
 * (default 128: `--bpv 64`), random codes and tables (entries at most `FS_QMAX`),
 * a threshold no row reaches (so nothing leaves the kernel), scanned one
 * question a pass (`scan`) and two (`scan2`). Prints the fastest of
 * `--reps` timings of 20 scans each, µs a question and ns a look-up. Checks
 * first that both give the TypeScript reference's sums bit for bit.
 *
 * ```sh
 * deno run bench/fastscan_kernel_speed.ts [--blocks 1063] [--m 128] [--reps 40]
 * ```
 *
 * @module
 */
import { FastScanner, fastScanReference, FS_QMAX } from "../search/kernels/wasm_fastscan.ts";
import { codesMemory } from "../search/index/ivfpq/pq_scan.ts";
import { splitmix32 } from "../search/index/ivfpq/kmeans.ts";

const arg = (name: string, dflt: number): number => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Number(Deno.args[i + 1]) : dflt;
};
const nb = arg("blocks", 1063), M = arg("m", 128), reps = arg("reps", 40);
const bytes = nb * 16 * M;
const mem = codesMemory(bytes);
if (mem === undefined) throw new Error("no scan kernel on this runtime");
const codes = new Uint8Array(mem.buffer, 0, bytes);
const u = splitmix32(11);
for (let i = 0; i < bytes; i++) codes[i] = u() & 255;
const k = FastScanner.create(mem);
if (k === undefined) throw new Error("no fast-scan kernel on this runtime");
const tables = k.tables(M, 2);
for (let i = 0; i < tables.length; i++) tables[i] = u() % (FS_QMAX + 1);
const luts = [tables.slice(0, 16 * M), tables.slice(16 * M)];

// Bit for bit first, with a threshold some blocks reach.
const thr = Math.round(((FS_QMAX + 1) / 2) * M);
const one = k.scan(0, nb, M, 0, thr);
const want = fastScanReference(codes, 0, nb, M, luts[0], 0, thr);
if (one.count !== want.count || one.sums.join() !== want.sums.join()) {
  throw new Error("scan differs from the reference");
}
const two = k.scan2(0, nb, M, 0, 16 * M, thr, thr);
const all = luts.map((lut) => fastScanReference(codes, 0, nb, M, lut, 0, 0));
if (two.count < want.count) throw new Error("scan2 lost blocks");
for (let h = 0; h < two.count; h++) {
  const b = two.blocks[h];
  for (let g = 0; g < 2; g++) {
    const got = two.sums[g].subarray(32 * h, 32 * h + 32).join();
    if (got !== all[g].sums.subarray(32 * b, 32 * b + 32).join()) {
      throw new Error(`scan2 differs from the reference: block ${b}, question ${g}`);
    }
  }
}

const time = (f: () => void): number => {
  const t: number[] = [];
  for (let r = 0; r < reps; r++) {
    const t0 = performance.now();
    for (let i = 0; i < 20; i++) f();
    t.push(((performance.now() - t0) / 20) * 1000);
  }
  return Math.min(...t);
};
const lookups = nb * 32 * M;
const s1 = time(() => k.scanRaw(0, nb, M, 0, 65535));
const s2 = time(() => k.scan2Raw(0, nb, M, 0, 16 * M, 65535, 65535)) / 2;
for (
  const [what, us] of [["scan (one question a pass)", s1], ["scan2 (two a pass)", s2]] as const
) {
  console.log(
    `${what}: ${us.toFixed(1)} µs a question, ${(us * 1000 / lookups).toFixed(4)} ns a look-up ` +
      `(${nb} blocks, M ${M}, relaxed ${k.relaxed})`,
  );
}
