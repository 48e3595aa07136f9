/**
 * The nearest-centroid kernel of the IVF-PQ build (`search/kernels/wasm_nearest.ts`, driven
 * by `nearest.ts`):
 * every row's answer equals `kmeans.ts`'s `nearest` (the TypeScript
 * reference, float64 in the same order), bit for bit, for long rows
 * (`rows`: any d, odd too, any k, four centroids a pass and the rest) and
 * for sub-quantizers (`one`, `two`, `four`: d 1, 2, 4, eight rows a pass;
 * `small`: the other d up to 8, two rows a pass; k ≤ 256, row counts not a multiple of the pass, rows read
 * with a stride), on random values, on small integers
 * (many exact ties: the lower centroid wins) and across the chunks the
 * kernel takes rows in; and the encoding of `ivf_encode.ts` gives the same
 * lists and codes with and without it.
 */
import { nearestModuleBytes } from "../../../search/kernels/wasm_nearest.ts";
import { NEAREST_CHUNK, nearestKernel, subScreen } from "../../../search/kernels/nearest.ts";
import { nearest, nearestAll, rowNorms, splitmix32 } from "../../../search/index/ivfpq/kmeans.ts";
import { encodeRows, prepareModel } from "../../../search/index/ivfpq/ivf_encode.ts";
import { assert, assertEquals } from "../../_assert.ts";

const u = splitmix32(40);
/** Random float32 values in (−1.5, 1.5), or small integers −2 … 2 (ties). */
const values = (len: number, ints: boolean) =>
  new Float32Array(len).map(() => ints ? (u() % 5) - 2 : (u() / 2 ** 32 - 0.5) * 3);

/** How many rows have two centroids at the smallest distance (the tie rule decides them). */
function ties(x: Float32Array, n: number, d: number, c: Float32Array, cn: Float64Array, k: number) {
  let t = 0;
  for (let i = 0; i < n; i++) {
    const best = nearest(x, i * d, c, cn, k, d);
    // Another centroid with the same float64 distance: a copy of the best one.
    for (let j = best + 1; j < k; j++) {
      let same = cn[j] === cn[best];
      for (let s = 0; same && s < d; s++) same = c[j * d + s] === c[best * d + s];
      if (same) {
        t++;
        break;
      }
    }
  }
  return t;
}

Deno.test("nearest-centroid kernel: rows' nearest of k centroids equal nearest() bit for bit (any d and k, ties, chunks)", () => {
  assert(WebAssembly.validate(nearestModuleBytes()), "the module does not validate");
  const kernel = nearestKernel();
  assert(kernel !== undefined, "no nearest-centroid kernel on this runtime");
  let cases = 0, rows = 0, tied = 0;
  for (const d of [1, 2, 3, 7, 8, 16, 255, 256]) {
    for (const k of [1, 2, 3, 4, 5, 16, 100, 257]) {
      for (const ints of [false, true]) {
        const n = d * k > 20000 ? 37 : 301;
        const x = values(n * d, ints), c = values(k * d, ints);
        // A copy of centroid 0 further on: its rows tie, the lower one must win.
        if (k > 2) c.copyWithin((k - 1) * d, 0, d);
        const cn = rowNorms(c, k, d);
        const out = new Uint32Array(n);
        kernel.nearestRows(x, n, d, c, cn, k, out);
        for (let i = 0; i < n; i++) {
          assertEquals(out[i], nearest(x, i * d, c, cn, k, d), `d ${d} k ${k} row ${i}`);
        }
        tied += ties(x, n, d, c, cn, k);
        cases++;
        rows += n;
      }
    }
  }
  // Across the kernel's chunks of rows.
  const n = 2 * NEAREST_CHUNK + 3, d = 6, k = 9;
  const x = values(n * d, false), c = values(k * d, false), cn = rowNorms(c, k, d);
  const out = new Uint32Array(n), all = new Uint32Array(n);
  kernel.nearestRows(x, n, d, c, cn, k, out);
  nearestAll(x, n, d, c, cn, k, all);
  for (let i = 0; i < n; i++) {
    const want = nearest(x, i * d, c, cn, k, d);
    assertEquals(out[i], want, `chunked row ${i}`);
    assertEquals(all[i], want, `nearestAll row ${i}`);
  }
  assertEquals(cases, 128);
  assert(rows > 20000 && tied > 100, `${rows} rows, ${tied} decided by the tie rule`);
});

Deno.test("nearest-centroid kernel: sub-quantizers' codes equal nearest() bit for bit (d 1 … 8, k ≤ 256, odd rows, chunks)", () => {
  const kernel = nearestKernel();
  assert(kernel !== undefined, "no nearest-centroid kernel on this runtime");
  let cases = 0, tied = 0;
  for (const dsub of [1, 2, 3, 4, 8]) {
    for (const k of [1, 5, 16, 256]) {
      for (const M of [1, 3, 16]) {
        for (const ints of [false, true]) {
          const n = k === 256 && M === 16 ? 33 : 257, D = M * dsub;
          const x = values(n * D, ints), books = values(M * k * dsub, ints);
          for (let s = 0; s < M && k > 2; s++) {
            books.copyWithin((s * k + k - 1) * dsub, s * k * dsub, s * k * dsub + dsub);
          }
          const norms = new Float64Array(M * k);
          for (let s = 0; s < M; s++) {
            norms.set(rowNorms(books.subarray(s * k * dsub), k, dsub), s * k);
          }
          const codes = new Uint8Array(n * M);
          kernel.nearestSub(x, n, M, dsub, books, norms, k, codes);
          for (let s = 0; s < M; s++) {
            const b = books.subarray(s * k * dsub, (s + 1) * k * dsub);
            const nb = norms.subarray(s * k, (s + 1) * k);
            const col = new Float32Array(n * dsub);
            for (let i = 0; i < n; i++) {
              col.set(x.subarray(i * D + s * dsub, i * D + s * dsub + dsub), i * dsub);
              assertEquals(
                codes[i * M + s],
                nearest(x, i * D + s * dsub, b, nb, k, dsub),
                `dsub ${dsub} k ${k} M ${M} row ${i} sub-quantizer ${s}`,
              );
            }
            tied += ties(col, n, dsub, new Float32Array(b), nb, k);
          }
          cases++;
        }
      }
    }
  }
  // Across chunks, an odd row count (d 1, 2, 4: the eight-rows-a-pass functions; d 3: `small`).
  for (const dsub of [1, 2, 3, 4]) {
    const n = NEAREST_CHUNK + 5, M = 4, k = 16;
    const x = values(n * M * dsub, false), books = values(M * k * dsub, false);
    const norms = new Float64Array(M * k);
    for (let s = 0; s < M; s++) norms.set(rowNorms(books.subarray(s * k * dsub), k, dsub), s * k);
    const codes = new Uint8Array(n * M);
    kernel.nearestSub(x, n, M, dsub, books, norms, k, codes);
    for (let i = 0; i < n; i++) {
      for (let s = 0; s < M; s++) {
        const want = nearest(
          x,
          i * M * dsub + s * dsub,
          books.subarray(s * k * dsub, (s + 1) * k * dsub),
          norms.subarray(s * k, (s + 1) * k),
          k,
          dsub,
        );
        assertEquals(codes[i * M + s], want, `chunked row ${i} sub-quantizer ${s}`);
      }
    }
  }
  assertEquals(cases, 120);
  assert(tied > 100, `${tied} codes decided by the tie rule`);
});

Deno.test("nearest-centroid kernel: encodeRows gives the same lists and codes with and without it (8-bit and 4-bit shapes; the residuals taken in the kernel, across its chunks; sub-vectors wider than SMALL_D gathered)", () => {
  for (
    const [d, bpv, ksub, nlist, n] of [
      [64, 16, 256, 10, 999],
      [64, 64, 16, 7, 999],
      [32, 32, 16, 33, NEAREST_CHUNK + 77],
      [32, 16, 16, 9, NEAREST_CHUNK + 5],
      [6, 3, 16, 5, 999],
      // dsub 16, 32 and 64 (> SMALL_D): fewer than 8 lists, the float64 kernel; 64, the screen.
      [64, 4, 256, 4, 999],
      [128, 4, 16, 3, 999],
      [256, 4, 256, 12, 500],
      [40, 4, 16, 9, 777],
    ]
  ) {
    const x = values(n * d, false), centroids = values(nlist * d, false);
    const codebooks = values(bpv * ksub * (d / bpv), false);
    const m = prepareModel({ d, bpv, nlist, centroids, codebooks, ksub });
    const lists = new Uint32Array(n), codes = new Uint8Array(n * bpv);
    const tl = new Uint32Array(n), tc = new Uint8Array(n * bpv);
    encodeRows(x, n, m, lists, codes);
    encodeRows(x, n, m, tl, tc, false);
    // Every value (assertEquals shows, so compares, only an array's first 50).
    const at = (a: ArrayLike<number>, b: ArrayLike<number>) =>
      Array.from(a).findIndex((v, i) => v !== b[i]);
    assertEquals(at(lists, tl), -1, `d ${d} bpv ${bpv} n ${n}: the first list that differs`);
    assertEquals(at(codes, tc), -1, `d ${d} bpv ${bpv} n ${n}: the first code that differs`);
    assert(
      new Set(lists).size > 1 && new Set(codes).size > 1,
      "the rows spread over lists and codes",
    );
  }
});

Deno.test("nearestAll screened in float32 (d ≥ 32, k ≥ 8): every row's answer is nearest()'s, bit for bit, near ties and odd values included", () => {
  let rows = 0, close = 0;
  for (const [d, k] of [[32, 8], [64, 100], [256, 100], [256, 257], [36, 13]]) {
    for (const kind of ["random", "ints", "near"]) {
      const n = k === 257 ? 1501 : 1500;
      const x = values(n * d, kind === "ints"), c = values(k * d, kind === "ints");
      if (kind === "near") {
        // Centroids a float32 step apart, and rows on top of centroids: distances the float32
        // screen cannot tell apart, which nearest()'s float64 must decide.
        for (let j = 1; j < k; j += 2) {
          for (let t = 0; t < d; t++) {
            const v = c[(j - 1) * d + t];
            c[j * d + t] = t === j % d ? v + Math.abs(v) * 2 ** -23 + 2 ** -30 : v;
          }
        }
        for (let i = 0; i < n; i += 3) x.set(c.subarray((i % k) * d, (i % k + 1) * d), i * d);
      }
      if (k > 2) c.copyWithin((k - 1) * d, 0, d);
      const cn = rowNorms(c, k, d);
      const out = new Uint32Array(n);
      nearestAll(x, n, d, c, cn, k, out);
      for (let i = 0; i < n; i++) {
        const want = nearest(x, i * d, c, cn, k, d);
        assertEquals(out[i], want, `d ${d} k ${k} ${kind} row ${i}`);
        // Rows whose two best distances are within the screen's own error.
        let a = Infinity, b = Infinity;
        for (let j = 0; j < k; j++) {
          let s = 0;
          for (let t = 0; t < d; t++) s += x[i * d + t] * c[j * d + t];
          const dist = cn[j] - 2 * s;
          if (dist < a) [a, b] = [dist, a];
          else if (dist < b) b = dist;
        }
        if (b - a < 1e-4 * (1 + Math.abs(a))) close++;
      }
      rows += n;
    }
  }
  // A non-finite row or centroid: the float64 kernel decides, as nearest() does.
  const d = 32, k = 8, n = 70;
  const x = values(n * d, false), c = values(k * d, false);
  x[5 * d + 3] = NaN;
  x[9 * d] = Infinity;
  const cn = rowNorms(c, k, d), out = new Uint32Array(n);
  nearestAll(x, n, d, c, cn, k, out);
  for (let i = 0; i < n; i++) {
    assertEquals(out[i], nearest(x, i * d, c, cn, k, d), `non-finite ${i}`);
  }
  const c2 = c.slice();
  c2[2 * d + 1] = 3e38;
  const cn2 = rowNorms(c2, k, d), out2 = new Uint32Array(n);
  nearestAll(x, n, d, c2, cn2, k, out2);
  for (let i = 0; i < n; i++) assertEquals(out2[i], nearest(x, i * d, c2, cn2, k, d), `huge ${i}`);
  assert(
    rows === 22503 && close > 1000,
    `${rows} rows, ${close} with their two best within the screen's error`,
  );
});

Deno.test("nearestSub's float32 screen (one32, two32, four32): nearest()'s codes, bit for bit, entries a float32 step apart, rows on them, NaN, huge and tiny rows; undecided calls taken again in float64", () => {
  const kernel = nearestKernel();
  assert(kernel !== undefined, "the kernel runs here");
  const before = { ...subScreen };
  let checked = 0;
  for (const dsub of [1, 2, 4]) {
    for (const k of [16, 256]) {
      const M = 3, n = 301, D = M * dsub;
      const books = values(M * k * dsub, false);
      // In each codebook entry 1 a float32 step from entry 0 (distances float32 cannot tell
      // apart), and the last entry a copy of entry 0.
      for (let s = 0; s < M; s++) {
        const b0 = s * k * dsub;
        for (let t = 0; t < dsub; t++) {
          const v = books[b0 + t];
          books[b0 + dsub + t] = t === 0 ? v + Math.abs(v) * 2 ** -23 + 2 ** -40 : v;
        }
        books.copyWithin(b0 + (k - 1) * dsub, b0, b0 + dsub);
      }
      const norms = new Float64Array(M * k);
      for (let q = 0; q < M * k; q++) {
        for (let t = 0; t < dsub; t++) norms[q] += books[q * dsub + t] * books[q * dsub + t];
      }
      const x = values(n * D, false);
      // In the first 64 rows (the first call of each sub-quantizer; the other calls' rows are
      // random): rows on an entry, half-way between the two of a pair, NaN, huge, tiny, zero.
      for (let i = 0; i < 64; i += 4) {
        for (let s = 0; s < M; s++) {
          const q = s * k + (i % 8 === 0 ? 0 : (i * 7) % k);
          for (let t = 0; t < dsub; t++) x[i * D + s * dsub + t] = books[q * dsub + t];
        }
      }
      for (let i = 2; i < 64; i += 8) {
        for (let s = 0; s < M; s++) {
          const q = s * k + 1;
          for (let t = 0; t < dsub; t++) {
            x[i * D + s * dsub + t] = Math.fround(
              (books[q * dsub + t] + books[(q - 1) * dsub + t]) / 2,
            );
          }
        }
      }
      x[3 * D] = NaN;
      x[5 * D + D - 1] = 1e30;
      for (let t = 0; t < D; t++) x[7 * D + t] *= 1e-35;
      x.fill(0, 9 * D, 10 * D);
      const codes = new Uint8Array(n * M);
      kernel.nearestSub(x, n, M, dsub, books, norms, k, codes);
      for (let i = 0; i < n; i++) {
        for (let s = 0; s < M; s++) {
          const want = nearest(
            x,
            i * D + s * dsub,
            books.subarray(s * k * dsub, (s + 1) * k * dsub),
            norms.subarray(s * k, (s + 1) * k),
            k,
            dsub,
          );
          assertEquals(codes[i * M + s], want, `dsub ${dsub} k ${k} row ${i} sub ${s}`);
          checked++;
        }
      }
    }
  }
  assertEquals(checked, 6 * 301 * 3);
  const calls = subScreen.calls - before.calls, again = subScreen.again - before.again;
  assert(
    calls === 6 * 5 * 3 && again > 0 && again < calls,
    `${again} of ${calls} calls taken again`,
  );
});
