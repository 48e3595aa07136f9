/**
 * The 4-bit fast-scan kernel (`search/kernels/wasm_fastscan.ts`): every
 * lane of its 16-bit sums and the blocks it keeps equal the TypeScript
 * reference bit for bit (any number of sub-quantizers up to 257, an odd
 * number too, tables of random, largest (`FS_QMAX` = 63, or ⌊65535 / M⌋) and zero entries, block counts, offsets, thresholds),
 * with the relaxed-SIMD swizzle and with the plain one.
 */
import {
  fastScanModuleBytes,
  FastScanner,
  fastScanReference,
  FS_QMAX,
  fsQmax,
} from "../../../search/kernels/wasm_fastscan.ts";
import { codesMemory } from "../../../search/index/ivfpq/pq_scan.ts";
import { splitmix32 } from "../../../search/index/ivfpq/kmeans.ts";
import { assert, assertEquals } from "../../_assert.ts";

Deno.test("fast-scan kernel: every lane's 16-bit sum and the blocks kept equal the TypeScript reference, bit for bit", () => {
  for (const relaxed of [true, false]) {
    const bytes = fastScanModuleBytes(relaxed);
    if (!WebAssembly.validate(bytes)) {
      assert(relaxed, "the plain-swizzle module does not validate");
      continue;
    }
  }
  const u = splitmix32(9);
  const size = 1 << 20;
  const mem = codesMemory(size);
  assert(mem !== undefined, "no shared codes memory on this runtime");
  const codes = new Uint8Array(mem.buffer, 0, size);
  for (let i = 0; i < size; i++) codes[i] = u() & 255;
  const k = FastScanner.create(mem);
  assert(k !== undefined, "no fast-scan kernel on this runtime");
  let cases = 0, kept = 0, dropped = 0;
  for (const M of [1, 2, 3, 16, 33, 64, 128, 256, 257]) {
    const qmax = fsQmax(M);
    for (const lutKind of ["random", "max", "zero"]) {
      const ref = new Uint8Array(16 * M);
      for (let i = 0; i < ref.length; i++) {
        ref[i] = lutKind === "max" ? qmax : lutKind === "zero" ? 0 : u() % (qmax + 1);
      }
      for (const nb of [0, 1, 2, 7, 40]) {
        for (const co of [0, 16, 4096]) {
          if (co + nb * 16 * M > size) continue;
          const top = M * qmax;
          for (const thr of [0, 1, Math.floor(top / 2), Math.floor(top * 0.55), top, 65535]) {
            k.tables(M).set(ref);
            const got = k.scan(co, nb, M, 0, thr);
            const want = fastScanReference(codes, co, nb, M, ref, 0, thr);
            assertEquals(got.count, want.count, `M ${M} nb ${nb} co ${co} thr ${thr}`);
            assertEquals([...got.blocks], [...want.blocks]);
            for (let i = 0; i < want.sums.length; i++) {
              if (got.sums[i] !== want.sums[i]) {
                throw new Error(
                  `M ${M} nb ${nb} co ${co} thr ${thr} block ${want.blocks[i >> 5]} row ` +
                    `${i & 31}: ${got.sums[i]} ≠ ${want.sums[i]}`,
                );
              }
            }
            kept += want.count;
            dropped += nb - want.count;
            cases++;
          }
        }
      }
    }
  }
  assert(cases > 1000 && kept > 100 && dropped > 100, `${cases} ${kept} ${dropped}`);
  // The reference's sums themselves, on one hand-made block: row r has code r mod 16 in
  // every sub-quantizer, the table m's entry c is m + c.
  const M = 4, block = new Uint8Array(16 * M);
  for (let m = 0; m < M; m++) for (let j = 0; j < 16; j++) block[16 * m + j] = j | (15 - j) << 4;
  const lut = Uint8Array.from({ length: 16 * M }, (_, i) => (i >> 4) + (i & 15));
  const s = fastScanReference(block, 0, 1, M, lut, 0, 0).sums;
  for (let r = 0; r < 32; r++) {
    const c = r < 16 ? r : 15 - (r - 16);
    assertEquals(s[r], 6 + 4 * c, `row ${r}`);
  }
});

Deno.test("fsQmax: four entries add within a byte, and M entries within 16 bits", () => {
  assertEquals(FS_QMAX, 63);
  assert(4 * FS_QMAX <= 255);
  for (const M of [1, 2, 16, 128, 256, 1024, 1040, 2048, 4096]) {
    const q = fsQmax(M);
    assertEquals(q, Math.min(63, Math.floor(65535 / M)), `M ${M}`);
    assert(M * q <= 65535, `M ${M}`);
  }
});

Deno.test("fast-scan kernel: the relaxed-swizzle and plain-swizzle modules give the reference's sums", () => {
  const u = splitmix32(3);
  const mem = codesMemory(1 << 16)!;
  const codes = new Uint8Array(mem.buffer, 0, 1 << 16);
  for (let i = 0; i < codes.length; i++) codes[i] = u() & 255;
  const M = 64, nb = 30;
  const lut = Uint8Array.from({ length: 16 * M }, () => u() % (FS_QMAX + 1));
  const want = fastScanReference(codes, 0, nb, M, lut, 0, 0);
  let ran = 0;
  for (const relaxed of [true, false]) {
    const bytes = fastScanModuleBytes(relaxed);
    if (!WebAssembly.validate(bytes)) {
      assert(relaxed, "the plain-swizzle module does not validate");
      continue;
    }
    const inst = new WebAssembly.Instance(new WebAssembly.Module(bytes), { env: { codes: mem } });
    const e = inst.exports as { scratch: WebAssembly.Memory; scan: (...a: number[]) => number };
    e.scratch.grow(1);
    new Uint8Array(e.scratch.buffer).set(lut);
    assertEquals(e.scan(0, nb, M, 0, 0, 16 * M), nb);
    const v = new Uint16Array(e.scratch.buffer, 16 * M, nb * 40);
    for (let b = 0; b < nb; b++) {
      for (let i = 0; i < 8; i++) {
        const o = 40 * b, s = 32 * b;
        assertEquals(
          [v[o + i], v[o + 8 + i], v[o + 16 + i], v[o + 24 + i]],
          [
            want.sums[s + 2 * i],
            want.sums[s + 2 * i + 1],
            want.sums[s + 16 + 2 * i],
            want.sums[s + 17 + 2 * i],
          ],
        );
      }
    }
    ran++;
  }
  assert(ran >= 1);
});

Deno.test("fast-scan kernel: scan2 gives each of its two questions the sums of scan, bit for bit, and keeps the blocks either keeps", () => {
  const u = splitmix32(21);
  const size = 1 << 19;
  const mem = codesMemory(size)!;
  const codes = new Uint8Array(mem.buffer, 0, size);
  for (let i = 0; i < size; i++) codes[i] = u() & 255;
  const k = FastScanner.create(mem)!;
  let cases = 0, kept = 0;
  for (const M of [1, 2, 3, 6, 16, 33, 256]) {
    const qmax = fsQmax(M);
    const luts = [0, 1].map(() => Uint8Array.from({ length: 16 * M }, () => u() % (qmax + 1)));
    for (const nb of [0, 1, 5, 31]) {
      for (const co of [0, 16 * 7]) {
        if (co + nb * 16 * M > size) continue;
        const top = M * qmax;
        for (
          const [t0, t1] of [[0, 0], [65535, 0], [Math.floor(top * 0.55), 65535], [
            Math.floor(top * 0.52),
            Math.floor(top * 0.54),
          ]]
        ) {
          const tab = k.tables(M, 2);
          tab.set(luts[0]);
          tab.set(luts[1], 16 * M);
          const got = k.scan2(co, nb, M, 0, 16 * M, t0, t1);
          // Each question's sums over every block (threshold 0), and the blocks either keeps.
          const all = luts.map((l) => fastScanReference(codes, co, nb, M, l, 0, 0));
          const keep = luts.map((l, g) => fastScanReference(codes, co, nb, M, l, 0, [t0, t1][g]));
          const want = [...new Set([...keep[0].blocks, ...keep[1].blocks])].sort((a, b) => a - b);
          assertEquals([...got.blocks], want, `M ${M} nb ${nb} thr ${t0} ${t1}`);
          got.blocks.forEach((b, h) => {
            for (let g = 0; g < 2; g++) {
              const w = all[g].sums.subarray(32 * b, 32 * b + 32);
              const s = got.sums[g].subarray(32 * h, 32 * h + 32);
              assertEquals([...s], [...w], `M ${M} block ${b} question ${g}`);
            }
          });
          kept += got.count;
          cases++;
        }
      }
    }
  }
  assert(cases > 100 && kept > 50, `${cases} ${kept}`);
});
