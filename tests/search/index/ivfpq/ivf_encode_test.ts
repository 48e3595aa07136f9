/**
 * The IVF-PQ encoding's scratch files and windowed writing
 * (`search/index/ivfpq/ivf_encode.ts`): `list_rows.u32` and `codes.u8` read back
 * in windows of any size (one byte, a part of one sub-quantizer of a list,
 * several lists) equal the in-memory layout; the scratch files are deleted;
 * blocks encoded, sub-quantizers trained and the coarse k-means's
 * assignments made on worker threads equal those of this thread (float16
 * rows sent to them as their bits too); an
 * aborted signal stops both.
 */
import {
  encodeBlocks,
  encodeRows,
  halfRows,
  IvfScratch,
  kmeansOnWorkers,
  KSUB,
  prepareModel,
  SCRATCH_FILES,
  trainCodebooks,
} from "../../../../search/index/ivfpq/ivf_encode.ts";
import { kmeans, nearestAll, rowNorms, splitmix32 } from "../../../../search/index/ivfpq/kmeans.ts";
import { halfTable } from "../../../../search/dense_f64.ts";
import { assert, assertEquals } from "../../../_assert.ts";

/** The reference layout, built in memory as the module notes describe it. */
function reference(lists: Uint32Array, codes: Uint8Array, nlist: number, bpv: number) {
  const n = lists.length;
  const off = new Float64Array(nlist + 1);
  for (const l of lists) off[l + 1]++;
  for (let l = 0; l < nlist; l++) off[l + 1] += off[l];
  const fill = off.slice(0, nlist);
  const rows = new Uint32Array(n);
  for (let i = 0; i < n; i++) rows[fill[lists[i]]++] = i;
  const out = new Uint8Array(n * bpv);
  for (let l = 0; l < nlist; l++) {
    const s = off[l], nl = off[l + 1] - s;
    for (let i = 0; i < nl; i++) {
      for (let m = 0; m < bpv; m++) out[s * bpv + m * nl + i] = codes[rows[s + i] * bpv + m];
    }
  }
  return { off, rows, codes: out };
}

const concat = <T extends Uint8Array | Uint32Array>(parts: Iterable<T>, make: (n: number) => T) => {
  const all = [...parts];
  const out = make(all.reduce((s, p) => s + p.length, 0));
  let at = 0;
  for (const p of all) {
    out.set(p as never, at);
    at += p.length;
  }
  return { out, pieces: all.map((p) => p.byteLength) };
};

Deno.test("ivf scratch: windows of any budget give the in-memory layout; files removed", () => {
  const dir = Deno.makeTempDirSync({ prefix: "phraseval-ivfscratch-" });
  try {
    const n = 1000, nlist = 7, bpv = 5, rng = splitmix32(3);
    // One big list (3), one empty list (5), the rest small.
    const lists = Uint32Array.from({ length: n }, () => {
      const r = rng() % 10;
      return r < 5 ? 3 : r === 5 ? 0 : [1, 2, 4, 6][r - 6];
    });
    const codes = Uint8Array.from({ length: n * bpv }, () => rng() & 255);
    const ref = reference(lists, codes, nlist, bpv);
    assertEquals(ref.off[6] - ref.off[5], 0);
    const s = new IvfScratch(dir, nlist, bpv);
    for (let a = 0; a < n; a += 97) {
      const b = Math.min(n, a + 97);
      s.append(lists.slice(a, b), codes.slice(a * bpv, b * bpv));
    }
    assertEquals([...s.done()], [...ref.off]);
    assertEquals(s.total, n);
    const cases = [[1, 4096], [3, 13], [17, 4096], [64, 1], [499, 13], [2500, 1], [1 << 30, 13]];
    for (const [budget, block] of cases) {
      const r = concat(s.rows(budget, block), (k) => new Uint32Array(k));
      assertEquals([...r.out], [...ref.rows], `rows, budget ${budget}, block ${block}`);
      assert(r.pieces.every((b) => b <= Math.max(4, budget)), `rows pieces ${r.pieces}`);
      const c = concat(s.codes(budget, block), (k) => new Uint8Array(k));
      assertEquals([...c.out], [...ref.codes], `codes, budget ${budget}, block ${block}`);
      assert(c.pieces.every((b) => b <= budget), `codes pieces ${c.pieces}`);
    }
    s.remove();
    s.remove();
    assertEquals([...Deno.readDirSync(dir)].map((e) => e.name), []);
    assert(SCRATCH_FILES.length === 2);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

/** A random 8-bit model (d 8, bpv 4, nlist 5) and its value source, in (−1, 1). */
function randomModel(seed: number) {
  const d = 8, bpv = 4, nlist = 5, rng = splitmix32(seed);
  const f = () => (rng() / 4294967296) * 2 - 1;
  const model = {
    d,
    bpv,
    nlist,
    centroids: Float32Array.from({ length: nlist * d }, f),
    codebooks: Float32Array.from({ length: KSUB * d }, f),
  };
  return { d, bpv, model, f, rng };
}

Deno.test("ivf encode: blocks on worker threads equal blocks in this thread, in block order", async () => {
  const n = 2000, { d, bpv, model, f } = randomModel(5);
  const x = Float32Array.from({ length: n * d }, f);
  const lists = new Uint32Array(n), codes = new Uint8Array(n * bpv);
  encodeRows(x, n, prepareModel(model), lists, codes);
  for (const [threads, block] of [[0, 300], [1, 2000], [2, 123], [2, 1]]) {
    const got = { lists: new Uint32Array(n), codes: new Uint8Array(n * bpv) };
    let next = 0;
    await encodeBlocks({
      model,
      total: n,
      block,
      threads,
      // A view into a larger buffer: copied before it is transferred.
      rowsOf: (a, b) => x.slice(0, b * d).subarray(a * d, b * d),
      onBlock: (a, l, c) => {
        assertEquals(a, next);
        got.lists.set(l, a);
        got.codes.set(c, a * bpv);
        next = a + l.length;
      },
    });
    assertEquals(next, n);
    assertEquals([...got.lists], [...lists], `lists, ${threads} threads`);
    assertEquals([...got.codes], [...codes], `codes, ${threads} threads`);
  }
});

Deno.test("ivf encode: float16 rows sent to the workers as their bits give the codes of the rows widened here", async () => {
  const n = 1000, { d, bpv, model, rng } = randomModel(6);
  // Every float16 bit pattern widens to the table's number (subnormals, ±0, ±∞; NaN a NaN).
  const all = Uint16Array.from({ length: 65536 }, (_, i) => i), table = halfTable();
  const wide = halfRows(all), bad: number[] = [];
  for (let i = 0; i < 65536; i++) if (!Object.is(wide[i], table[i])) bad.push(i);
  assertEquals(bad, []);
  // Into a longer buffer (an encode worker's, reused): its first values, the rest untouched.
  const into = new Float32Array(9).fill(7), five = halfRows(all.subarray(0x3c00, 0x3c05), into);
  assertEquals([five.length, five.buffer === into.buffer], [5, true]);
  assertEquals([...into], [...table.subarray(0x3c00, 0x3c05), 7, 7, 7, 7]);
  // Finite float16 values in (−2, 2).
  const bits = Uint16Array.from({ length: n * d }, () => (rng() % 0x4000) | (rng() & 0x8000));
  const x = Float32Array.from(bits, (b) => table[b]);
  const lists = new Uint32Array(n), codes = new Uint8Array(n * bpv);
  encodeRows(x, n, prepareModel(model), lists, codes);
  for (const [threads, block] of [[0, 300], [2, 123], [2, 1000]]) {
    const got = { lists: new Uint32Array(n), codes: new Uint8Array(n * bpv) };
    let halves = 0;
    await encodeBlocks({
      model,
      total: n,
      block,
      threads,
      rowsOf: (a, b) => x.slice(a * d, b * d),
      halfOf: (a, b) => {
        halves++;
        return bits.slice(0, b * d).subarray(a * d, b * d);
      },
      onBlock: (a, l, c) => {
        got.lists.set(l, a);
        got.codes.set(c, a * bpv);
      },
    });
    // The bits are what the workers are sent; this thread encodes the float32 rows.
    assertEquals(halves, threads === 0 ? 0 : Math.ceil(n / block), `${threads} threads`);
    assertEquals([...got.lists], [...lists], `lists, ${threads} threads`);
    assertEquals([...got.codes], [...codes], `codes, ${threads} threads`);
  }
});

Deno.test("ivf encode: sub-quantizers trained on worker threads equal those trained in this thread", async () => {
  const n = 600, d = 12, bpv = 6, rng = splitmix32(9);
  const r = Float32Array.from({ length: n * d }, () => rng() / 4294967296 - 0.5);
  const o = { iterations: 4, seed: 77 };
  const want = await trainCodebooks(r, n, d, bpv, { ...o, threads: 0 });
  assertEquals(want.length, KSUB * d);
  for (const threads of [1, 2, 3]) {
    const got = await trainCodebooks(r, n, d, bpv, { ...o, threads });
    assertEquals([...got], [...want], `${threads} threads`);
  }
});

Deno.test("ivf encode: the coarse k-means on 2 and 3 workers gives this thread's centroids and lists, bit for bit", async () => {
  const d = 12, k = 9, rng = splitmix32(11);
  for (const n of [1001, 6]) {
    // Clusters with ties between rows (repeated rows), so an assignment out of place would show.
    const x = Float32Array.from({ length: n * d }, (_, i) => ((rng() % 7) - 3) * (1 + (i % d)) / 8);
    for (let i = 0; i < n; i += 10) x.copyWithin(((i + 5) % n) * d, i * d, i * d + d);
    const o = { iterations: 6, seed: 4 };
    const want = kmeans(x, n, d, k, o);
    const lists = new Uint32Array(n);
    nearestAll(x, n, d, want, rowNorms(want, k, d), k, lists);
    for (const threads of [0, 2, 3]) {
      const got = new Uint32Array(n);
      const c = await kmeansOnWorkers(x, n, d, k, { ...o, threads }, got);
      assertEquals([...c], [...want], `centroids, n ${n}, threads ${threads}`);
      assertEquals([...got], [...lists], `lists, n ${n}, threads ${threads}`);
    }
  }
});

Deno.test("ivf encode: an aborted signal stops the encoding between blocks (workers ended)", async () => {
  const d = 4, bpv = 2, nlist = 3, n = 5000, rng = splitmix32(6);
  const f = () => rng() / 4294967296 - 0.5;
  const model = {
    d,
    bpv,
    nlist,
    centroids: Float32Array.from({ length: nlist * d }, f),
    codebooks: Float32Array.from({ length: KSUB * d }, f),
  };
  const x = Float32Array.from({ length: n * d }, f);
  for (const threads of [0, 2]) {
    const c = new AbortController();
    let blocks = 0;
    const run = encodeBlocks({
      model,
      total: n,
      block: 100,
      threads,
      rowsOf: (a, b) => x.slice(a * d, b * d),
      onBlock: () => {
        if (++blocks === 2) c.abort(new Error("stop"));
      },
      signal: c.signal,
    });
    const why = await run.then(() => "finished", (e: Error) => e.message);
    assertEquals(why, "stop", `${threads} threads`);
    assert(blocks < n / 100, `${blocks} blocks`);
  }
  const c = new AbortController();
  c.abort(new Error("early"));
  const r = new Float32Array(100 * d);
  for (const threads of [0, 2]) {
    const why = await trainCodebooks(r, 100, d, bpv, {
      iterations: 1,
      seed: 1,
      threads,
      signal: c.signal,
    }).then(() => "finished", (e: Error) => e.message);
    assertEquals(why, "early");
  }
});
