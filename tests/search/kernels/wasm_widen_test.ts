/**
 * `widen(src, n4, dst)` (`search/kernels/wasm_simd.ts` `widenCode`, shared
 * by the scoring, exact-sums and encoding modules) in a module of its own:
 * every float16 bit pattern gives the table's float32 (`dense_f64.ts`
 * `halfTable`), for every count of four values from 0 to 9 (eight a step,
 * then an odd last four), at any start of each, and not a byte is written
 * outside the `4·n4` floats at `dst`.
 */
import { widenCode } from "../../../search/kernels/wasm_simd.ts";
import { name, section, uleb, vec } from "../../../search/kernels/wasm_encode.ts";
import { halfTable } from "../../../search/dense_f64.ts";
import { assertEquals } from "../../_assert.ts";

/** A module of one memory (8 pages) and `widen`, both exported. */
function widenModule(): WebAssembly.Instance {
  const code = widenCode();
  const bytes = new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, vec([[0x60, ...vec([[0x7f], [0x7f], [0x7f]]), 0x00]])),
    ...section(3, vec([[0]])),
    ...section(5, vec([[0x00, 8]])),
    ...section(7, vec([[...name("memory"), 0x02, 0], [...name("widen"), 0x00, 0]])),
    ...section(10, vec([[...uleb(code.length), ...code]])),
  ]);
  return new WebAssembly.Instance(new WebAssembly.Module(bytes), {});
}

Deno.test("widen: every float16 bit pattern as the table's float32, any count of fours, nothing written outside", () => {
  const e = widenModule().exports as {
    memory: WebAssembly.Memory;
    widen: (src: number, n4: number, dst: number) => void;
  };
  const table = halfTable(), buf = e.memory.buffer;
  const u8 = new Uint8Array(buf), bits = new Uint16Array(buf), wide = new Float32Array(buf);
  // Patterns spread over all 65,536, 4·n4 at a time, at three places.
  for (const n4 of [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]) {
    for (const [srcAt, dstAt] of [[0, 4096], [6, 8200], [64, 20000]]) {
      let bad = 0;
      for (let first = 0; first < 65536; first += 4 * Math.max(n4, 1) * 97) {
        u8.fill(0xa5, 0, 32768);
        for (let i = 0; i < 4 * n4; i++) bits[srcAt / 2 + i] = (first + i) & 0xffff;
        e.widen(srcAt, n4, dstAt);
        for (let i = 0; i < 4 * n4; i++) {
          if (!Object.is(wide[dstAt / 4 + i], table[(first + i) & 0xffff])) bad++;
        }
        // Untouched: the bytes around the floats written (the source aside).
        const from = dstAt, to = dstAt + 16 * n4;
        for (let b = 0; b < 32768; b++) {
          if (b >= from && b < to) continue;
          if (b >= srcAt && b < srcAt + 8 * n4) continue;
          if (u8[b] !== 0xa5) bad++;
        }
      }
      assertEquals(bad, 0, `n4 ${n4}, src ${srcAt}, dst ${dstAt}`);
    }
  }
  // Every pattern once, in one call (n4 = 16,384: eight a step only).
  for (let i = 0; i < 65536; i++) bits[i] = i;
  e.widen(0, 16384, 131072);
  let bad = 0;
  for (let i = 0; i < 65536; i++) if (!Object.is(wide[32768 + i], table[i])) bad++;
  assertEquals(bad, 0);
});
