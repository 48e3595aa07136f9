/**
 * The candidates' module of the 4-bit search (`search/kernels/wasm_select.ts`):
 * fed the fast-scan kernel's real output over several runs, each heap
 * keeps exactly the best `cap` (score, lower row) pairs of the rows a
 * TypeScript reference offers (sum ≥ threshold, not padding, score
 * `base + sum / scale`): the same rows, the same scores bit for bit; with
 * many equal scores (a coarse scale), caps 1 to more than the rows, runs
 * of a few blocks and a whole list at once (the first offer's histogram),
 * and its floor the worst kept score (−∞ until full).
 */
import { CandidateHeaps, selectModuleBytes } from "../../../search/kernels/wasm_select.ts";
import {
  FastScanner,
  FS_BLOCK,
  FS_OUT2,
  fsQmax,
  laneRow,
} from "../../../search/kernels/wasm_fastscan.ts";
import { codesMemory } from "../../../search/index/ivfpq/pq_scan.ts";
import { splitmix32 } from "../../../search/index/ivfpq/kmeans.ts";
import { assert, assertEquals } from "../../_assert.ts";

Deno.test("candidate heaps: each keeps the best cap (score, lower row) of the rows the reference offers, bit for bit", () => {
  assert(WebAssembly.validate(selectModuleBytes()), "the selection module does not validate");
  const u = splitmix32(17);
  const size = 1 << 18;
  const mem = codesMemory(size)!;
  const codes = new Uint8Array(mem.buffer, 0, size);
  for (let i = 0; i < size; i++) codes[i] = u() & 255;
  const k = FastScanner.create(mem)!;
  const nrows = 5000;
  // Global rows: a shuffled permutation (ties between scores go to the lower global row).
  const rows = Uint32Array.from({ length: nrows }, (_, i) => i);
  for (let i = nrows - 1; i > 0; i--) {
    const j = u() % (i + 1);
    [rows[i], rows[j]] = [rows[j], rows[i]];
  }
  const heaps = CandidateHeaps.create(k.scratch, rows);
  assert(heaps !== undefined, "no selection module on this runtime");
  let cases = 0, ties = 0;
  for (const M of [2, 16, 64]) {
    const qmax = fsQmax(M);
    for (const cap of [1, 7, 100, 3000]) {
      for (const [coarse, step] of [[false, 3], [true, 3], [false, 10], [true, 10]] as const) {
        const luts = [0, 1].map(() => Uint8Array.from({ length: 16 * M }, () => u() % (qmax + 1)));
        const tab = k.tables(M, 2);
        tab.set(luts[0]);
        tab.set(luts[1], 16 * M);
        heaps.reset(2, cap, M * qmax);
        assertEquals(heaps.floor(0), -Infinity);
        const want: { score: number; row: number }[][] = [[], []];
        const base = [0.25, -3], scale = coarse ? [0.5, 1] : [M * 1.37, M * 0.91];
        // A list of n rows (the last block padded), in runs of blocks, thresholds rising.
        const n = 32 * 9 + 13, nb = Math.ceil(n / FS_BLOCK), r0 = 1 + (u() % (nrows - n - 1));
        for (let b0 = 0; b0 < nb; b0 += step) {
          const run = Math.min(step, nb - b0);
          const thr = [0, 1].map(() => (b0 === 0 ? 0 : u() % Math.floor(M * qmax * 0.6)));
          const count = k.scan2Raw(16 * M * b0, run, M, 0, 16 * M, thr[0], thr[1]);
          const w = k.written(count, FS_OUT2);
          for (let g = 0; g < 2; g++) {
            heaps.offer(
              g,
              k.outAt,
              count,
              FS_OUT2 / 2,
              32 * g,
              32,
              b0,
              n,
              thr[g],
              base[g],
              scale[g],
              r0,
            );
            for (let h = 0; h < count; h++) {
              const first = (b0 + w.index[h * (FS_OUT2 / 4) + 32]) * FS_BLOCK;
              for (let p = 0; p < FS_BLOCK; p++) {
                const s = w.sums[h * (FS_OUT2 / 2) + 32 * g + p], r = laneRow(p);
                if (s < thr[g] || first + r >= n) continue;
                want[g].push({ score: base[g] + s / scale[g], row: rows[r0 + first + r] });
              }
            }
          }
        }
        for (let g = 0; g < 2; g++) {
          const best = want[g].sort((a, b) => b.score - a.score || a.row - b.row).slice(0, cap);
          for (let i = 1; i < best.length; i++) if (best[i].score === best[i - 1].score) ties++;
          const got = heaps.kept(g).sort((a, b) => a.row - b.row);
          const exp = best.slice().sort((a, b) => a.row - b.row);
          assertEquals(
            got.map((x) => x.row),
            exp.map((x) => x.row),
            `M ${M} cap ${cap} coarse ${coarse} step ${step} q ${g}`,
          );
          got.forEach((x, i) => assert(Object.is(x.score, exp[i].score), `score of row ${x.row}`));
          // pairsByRow: the same pairs, by increasing row.
          const byRow = heaps.pairsByRow(g);
          assertEquals(byRow.map((x) => x.row), exp.map((x) => x.row));
          byRow.forEach((x, i) =>
            assert(Object.is(x.score, exp[i].score), `pairsByRow score ${i}`)
          );
          const worst = best.length < cap ? -Infinity : best[best.length - 1].score;
          assertEquals(heaps.floor(g), worst);
          cases++;
        }
      }
    }
  }
  assertEquals(cases, 96);
  assert(ties > 0, "no tie among the kept pairs");
});
