/**
 * Rows read where they lie (`search/kernels/wasm_gather.ts`): the vectors
 * in a shared `WebAssembly.Memory` (`sharedRowsBytes`, `rowsView`), rows
 * gathered into another memory as float32 (float16 widened exactly, float32
 * copied) for `d` = 8k and 8k + 4, at a view's offset, nothing written past
 * them; `ExactRows` re-scoring such rows in place gives the scores of the
 * rows copied, bit for bit; a plain `SharedArrayBuffer` has no gatherer.
 */
import {
  RowGather,
  rowsMemoryOf,
  rowsView,
  sharedRowsBytes,
} from "../../../search/kernels/wasm_gather.ts";
import { ExactRows } from "../../../search/kernels/wasm_exact.ts";
import { splitmix32 } from "../../../search/index/ivfpq/kmeans.ts";
import { halfTable } from "../../../search/dense_f64.ts";
import { assert, assertEquals } from "../../_assert.ts";

Deno.test("gather: float16 rows widened as the table does, float32 rows copied, any d of fours, at the view's offset, nothing past them", () => {
  const u = splitmix32(7), table = halfTable();
  for (const d of [4, 8, 12, 256, 260]) {
    for (const half of [true, false]) {
      const rows = 37, width = half ? 2 : 4, offset = 64;
      const b = sharedRowsBytes(offset + rows * d * width);
      assert(rowsMemoryOf(b.buffer) !== undefined, "a WebAssembly.Memory");
      const a = half
        ? new Uint16Array(b.buffer, offset, rows * d)
        : new Float32Array(b.buffer, offset, rows * d);
      // Every float16 pattern turns up (NaN and infinities included); float32 bits at random.
      if (a instanceof Uint16Array) { for (let i = 0; i < a.length; i++) a[i] = u() & 0xffff; }
      else new Uint32Array(a.buffer, a.byteOffset, a.length).forEach((_, i, x) => x[i] = u());
      const own = new WebAssembly.Memory({ initial: 1 });
      const g = RowGather.create(a, own);
      assert(g !== undefined, "the gatherer runs here");
      const pick = [5, 0, 36, 5, 17];
      const idx = new Uint32Array(own.buffer, 1024, pick.length);
      idx.set(pick);
      const out = new Uint8Array(own.buffer, 4096, 4 * d * pick.length + 64);
      out.fill(0xa5);
      g.gather(a, 1024, pick.length, d, 4096);
      // float16: the table's value (any NaN for a NaN: the table keeps no payload); float32:
      // the same bits.
      const bits = new Uint32Array(own.buffer, 4096, d * pick.length);
      const vals = new Float32Array(own.buffer, 4096, d * pick.length);
      let bad = 0;
      pick.forEach((r, i) => {
        for (let t = 0; t < d; t++) {
          const ok = a instanceof Uint16Array
            ? Object.is(vals[i * d + t], table[a[r * d + t]])
            : bits[i * d + t] === new Uint32Array(a.buffer, a.byteOffset, a.length)[r * d + t];
          if (!ok) bad++;
        }
      });
      assertEquals(bad, 0, `d ${d}, ${half ? "f16" : "f32"}`);
      assertEquals([...out.subarray(4 * d * pick.length)], Array(64).fill(0xa5), "nothing past");
    }
  }
});

Deno.test("gather: ExactRows re-scores rows in a WebAssembly.Memory in place with the scores of the rows copied", () => {
  const u = splitmix32(11), r = () => u() / 2 ** 32 - 0.5;
  const d = 256, rows = 500;
  const b = sharedRowsBytes(rows * d * 2);
  const a = new Uint16Array(b.buffer, 0, rows * d);
  // Finite float16 values (exponent below 31).
  for (let i = 0; i < a.length; i++) a[i] = u() & 0xfbff;
  const plain = new Uint16Array(new SharedArrayBuffer(rows * d * 2));
  plain.set(a);
  assertEquals(rowsMemoryOf(plain.buffer), undefined, "a plain shared buffer: no memory");
  const inPlace = ExactRows.create()!, copied = ExactRows.create()!;
  for (let j = 0; j < 20; j++) {
    const q = Float32Array.from({ length: d }, r);
    const n = 1 + (j * 7) % 50;
    const pick = Float64Array.from({ length: n }, () => u() % rows);
    for (const k of [n, 10]) {
      for (const l2 of k === n ? [false, true] : [false]) {
        const x = new Float64Array(n), y = new Float64Array(n);
        assert(inPlace.scores(a, pick, false, n, d, q, l2, x, k));
        assert(copied.scores(plain, pick, false, n, d, q, l2, y, k));
        assertEquals([...x], [...y], `question ${j}, k ${k}, l2 ${l2}`);
      }
    }
  }
  // A worker's view over the memory it is sent: the same rows, read in place too.
  const view = rowsView(rowsMemoryOf(a.buffer)!, a);
  assert(view.buffer === a.buffer && view.length === a.length);
});
