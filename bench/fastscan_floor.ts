/**
 * How near the 4-bit fast-scan kernel (`search/kernels/wasm_fastscan.ts`)
 * runs to what 128-bit WebAssembly allows on this machine, for one
 * question's scan of `--blocks` blocks of 32 rows and `--M` sub-quantizers
 * (defaults: the quarter of dev at nprobe 10, 841 blocks, and bpv 128,
 * M = 256):
 *
 * - **swizzle peak**: a loop of nothing but independent look-ups
 *   (`i8x16.relaxed_swizzle`, or `i8x16.swizzle` where relaxed SIMD is
 *   missing, as the kernel picks), no memory: the most 16-byte look-ups a
 *   nanosecond this thread can do. A question needs `blocks · 32 · M`
 *   look-ups, so at that rate its scan takes at least `floor` ms, whatever
 *   else the kernel does.
 * - **kernel, codes in L1**: the kernel (`scan2`, two questions a pass,
 *   as the batch search runs it; and `scan`, one) over 4 blocks scanned
 *   again and again (16 KiB of codes at M = 256): its arithmetic alone.
 * - **kernel, a question's codes**: over `--blocks` distinct blocks (the
 *   codes of a question's probed lists, from L2/L3), with a threshold no
 *   row reaches (nothing written): the scan as the search runs it, without
 *   candidate selection.
 *
 * Random codes and tables (entries below 128); the sums do not change the
 * time. Prints one line each, per question.
 *
 * ```sh
 * npx -y deno@2.9.6 run -A bench/fastscan_floor.ts [--blocks 841] [--M 256] [--reps 200]
 * ```
 *
 * @module
 */
import { codesMemory } from "../search/index/ivfpq/pq_scan.ts";
import { FastScanner } from "../search/kernels/wasm_fastscan.ts";
import {
  brIf,
  get,
  i32,
  loop,
  name,
  section,
  set,
  simd,
  uleb,
  vec,
} from "../search/kernels/wasm_encode.ts";

/** Look-ups a pass of the swizzle loop does (independent chains: enough to fill the shuffle ports). */
const CHAINS = 8;

/**
 * A module exporting `peak(n)`: `n` passes of {@linkcode CHAINS}
 * independent 16-byte look-ups (`relaxed`: `i8x16.relaxed_swizzle`),
 * returning a byte of the result (so that nothing is left out).
 */
export function swizzleLoopBytes(relaxed: boolean): Uint8Array<ArrayBuffer> {
  const I32 = 0x7f, V128 = 0x7b;
  const swizzle = relaxed ? simd(0x100) : simd(0x0e);
  const xor = simd(0x51);
  // locals: n 0 (param), table 1, chains 2 … 2 + CHAINS − 1
  const t = 1, c = (i: number) => 2 + i;
  const init = [
    ...simd(0x0c, ...Array.from({ length: 16 }, (_, i) => (i * 7 + 3) & 15)),
    ...set(t),
    ...Array.from({ length: CHAINS }, (_, i) => [
      ...simd(0x0c, ...Array.from({ length: 16 }, (_, j) => (i + j) & 15)),
      ...set(c(i)),
    ]).flat(),
  ];
  const pass = Array.from({ length: CHAINS }, (_, i) => [
    ...get(t),
    ...get(c(i)),
    ...swizzle,
    ...set(c(i)),
  ]).flat();
  const body = [
    ...vec([[1 + CHAINS, V128]]),
    ...init,
    ...loop([
      ...pass,
      ...get(0),
      ...i32(1),
      0x6b, // i32.sub
      0x22,
      0, // local.tee 0
      ...brIf(0),
    ]),
    ...get(c(0)),
    ...Array.from({ length: CHAINS - 1 }, (_, i) => [...get(c(i + 1)), ...xor]).flat(),
    ...simd(0x16, 0), // i8x16.extract_lane_u 0
    0x0b,
  ];
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
    ...section(1, vec([[0x60, ...vec([[I32]]), ...vec([[I32]])]])),
    ...section(3, vec([[0]])),
    ...section(7, vec([[...name("peak"), 0x00, 0]])),
    ...section(10, vec([[...uleb(body.length), ...body]])),
  ]);
}

function flag(name: string, fallback: number): number {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Number(Deno.args[i + 1]) : fallback;
}

/** Best of `reps` timings of `f`, in ms, after a warm-up. */
function best(reps: number, f: () => void): number {
  for (let i = 0; i < Math.max(3, reps / 10); i++) f();
  let min = Infinity;
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    f();
    min = Math.min(min, performance.now() - t0);
  }
  return min;
}

if (import.meta.main) {
  const blocks = flag("blocks", 841), M = flag("M", 256), reps = flag("reps", 200);
  const lookups = blocks * 32 * M;
  const bb = 16 * M;
  const mem = codesMemory(blocks * bb)!;
  const codes = new Uint8Array(mem.buffer, 0, blocks * bb);
  let seed = 12345;
  const rand = () => (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24;
  for (let i = 0; i < codes.length; i++) codes[i] = rand();
  const k = FastScanner.create(mem);
  if (k === undefined) throw new Error("no WebAssembly SIMD here");
  const lut = k.tables(M, 2);
  for (let i = 0; i < lut.length; i++) lut[i] = rand() & 127;
  const relaxed = k.relaxed;

  // The swizzle peak: ns per look-up of 16 bytes.
  const peak = (new WebAssembly.Instance(new WebAssembly.Module(swizzleLoopBytes(relaxed)), {})
    .exports.peak) as (n: number) => number;
  const passes = 1 << 20;
  const peakMs = best(Math.max(5, reps / 20), () => peak(passes));
  const perSwizzle = (peakMs * 1e6) / (passes * CHAINS);
  const floorMs = (lookups / 16) * perSwizzle / 1e6;
  console.log(
    `swizzle peak (${relaxed ? "i8x16.relaxed_swizzle" : "i8x16.swizzle"}, ${CHAINS} chains): ` +
      `${(1 / perSwizzle).toFixed(2)} a ns (${(16 / perSwizzle).toFixed(1)} look-ups a ns); ` +
      `a question's ${
        lookups.toLocaleString("en-US")
      } look-ups (${blocks} blocks × 32 rows × M ${M}) ` +
      `take at least ${floorMs.toFixed(3)} ms at that rate`,
  );

  // The kernel over 4 blocks again and again (codes in L1), then over all the blocks.
  const l1 = Math.min(4, blocks), loops = Math.ceil(blocks / l1);
  const scan2L1 = best(reps, () => {
    for (let i = 0; i < loops; i++) k.scan2Raw(0, l1, M, 0, 16 * M, 65535, 65535);
  }) / 2;
  const scanL1 = best(reps, () => {
    for (let i = 0; i < loops; i++) k.scanRaw(0, l1, M, 0, 65535);
  });
  const scan2 = best(reps, () => k.scan2Raw(0, blocks, M, 0, 16 * M, 65535, 65535)) / 2;
  const scan1 = best(reps, () => k.scanRaw(0, blocks, M, 0, 65535));
  const line = (what: string, ms: number) =>
    console.log(
      `${what}: ${ms.toFixed(3)} ms a question (${
        (lookups / ms / 1e6).toFixed(1)
      } look-ups a ns, ` +
        `${(floorMs / ms * 100).toFixed(0)} % of the swizzle peak)`,
    );
  line(`kernel scan2 (2 questions a pass), codes in L1 (${l1} blocks × ${loops})`, scan2L1);
  line(`kernel scan (1 question a pass), codes in L1`, scanL1);
  line(
    `kernel scan2, a question's ${blocks} blocks (${(blocks * bb / 2 ** 20).toFixed(1)} MiB)`,
    scan2,
  );
  line(`kernel scan, a question's ${blocks} blocks`, scan1);
}
