/**
 * The fast-scan kernel's output read in place (`search/kernels/wasm_fastscan.ts`
 * `scanRaw`, `scan2Raw`, `written`, `laneRow`), as the 4-bit batch search
 * reads it: the same blocks and the same sums, every lane, as `scan` and
 * `scan2` give them (themselves tested against the TypeScript reference).
 */
import {
  FastScanner,
  FS_BLOCK,
  FS_OUT,
  FS_OUT2,
  fsQmax,
  laneRow,
} from "../../../search/kernels/wasm_fastscan.ts";
import { codesMemory } from "../../../search/index/ivfpq/pq_scan.ts";
import { splitmix32 } from "../../../search/index/ivfpq/kmeans.ts";
import { assert, assertEquals } from "../../_assert.ts";

Deno.test("fast-scan kernel: scanRaw and scan2Raw leave in memory, in laneRow's order, the blocks and sums of scan and scan2", () => {
  const u = splitmix32(33);
  const size = 1 << 18;
  const mem = codesMemory(size)!;
  const codes = new Uint8Array(mem.buffer, 0, size);
  for (let i = 0; i < size; i++) codes[i] = u() & 255;
  const k = FastScanner.create(mem)!;
  // laneRow is a permutation of the block's rows.
  assertEquals([...Array(FS_BLOCK).keys()].map(laneRow).sort((a, b) => a - b), [
    ...Array(FS_BLOCK).keys(),
  ]);
  let cases = 0;
  for (const M of [1, 3, 16, 64]) {
    const qmax = fsQmax(M);
    const luts = [0, 1].map(() => Uint8Array.from({ length: 16 * M }, () => u() % (qmax + 1)));
    for (const nb of [1, 7, 32]) {
      const top = M * qmax;
      for (
        const [t0, t1] of [[0, 0], [Math.floor(top * 0.55), 65535], [
          Math.floor(top * 0.52),
          Math.floor(top * 0.5),
        ]]
      ) {
        const tab = k.tables(M, 2);
        tab.set(luts[0]);
        tab.set(luts[1], 16 * M);
        const one = k.scan(16, nb, M, 0, t0);
        const c1 = k.scanRaw(16, nb, M, 0, t0);
        const w1 = k.written(c1, FS_OUT);
        assertEquals(c1, one.count);
        for (let h = 0; h < c1; h++) {
          assertEquals(w1.index[h * (FS_OUT / 4) + 16], one.blocks[h]);
          for (let p = 0; p < FS_BLOCK; p++) {
            assertEquals(w1.sums[h * (FS_OUT / 2) + p], one.sums[h * FS_BLOCK + laneRow(p)]);
          }
        }
        const two = k.scan2(16, nb, M, 0, 16 * M, t0, t1);
        const c2 = k.scan2Raw(16, nb, M, 0, 16 * M, t0, t1);
        const w2 = k.written(c2, FS_OUT2);
        assertEquals(c2, two.count);
        for (let h = 0; h < c2; h++) {
          assertEquals(w2.index[h * (FS_OUT2 / 4) + 32], two.blocks[h]);
          for (let g = 0; g < 2; g++) {
            for (let p = 0; p < FS_BLOCK; p++) {
              assertEquals(
                w2.sums[h * (FS_OUT2 / 2) + 32 * g + p],
                two.sums[g][h * FS_BLOCK + laneRow(p)],
              );
            }
          }
        }
        cases++;
      }
    }
  }
  assert(cases === 36, `${cases} cases`);
});
