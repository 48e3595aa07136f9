/**
 * The probing module of the 4-bit search (`search/kernels/wasm_probe.ts`):
 * its probing scores, float tables and quantized tables (scale, bias and
 * every byte) equal the TypeScript references bit for bit (`Object.is` on
 * every double), for ip and l2, any dimension, sub-quantizer count and
 * list count (a multiple of its four-list pass and not), with values of
 * every magnitude, ties, equal tables (range 0) and entries that round from
 * exactly one half; and `bestLists` keeps the lists the full sort keeps.
 */
import {
  probeModuleBytes,
  probeScores,
  QuestionKernel,
} from "../../../search/kernels/wasm_probe.ts";
import { bestLists, quantizeTables, tables4 } from "../../../search/index/ivfpq/fastscan.ts";
import { splitmix32 } from "../../../search/index/ivfpq/kmeans.ts";
import { FS_QMAX } from "../../../search/kernels/wasm_fastscan.ts";
import { assert, assertEquals } from "../../_assert.ts";

const same = (a: ArrayLike<number>, b: ArrayLike<number>, what: string) => {
  assertEquals(a.length, b.length, what);
  for (let i = 0; i < a.length; i++) {
    if (!Object.is(a[i], b[i])) throw new Error(`${what}: [${i}] ${a[i]} ≠ ${b[i]}`);
  }
};

Deno.test("probing module: probing scores, float tables and quantized tables equal the TypeScript references, bit for bit", () => {
  assert(WebAssembly.validate(probeModuleBytes()), "the probing module does not validate");
  const u = splitmix32(5);
  const r = () => u() / 2 ** 32;
  let cases = 0, halves = 0;
  for (
    const [nlist, d, M] of [[1, 4, 4], [3, 6, 2], [7, 12, 6], [8, 16, 16], [100, 256, 256], [
      13,
      64,
      8,
    ]]
  ) {
    for (const kind of ["random", "scaled", "ties", "flat"]) {
      // Values of every magnitude ("scaled"), repeated values ("ties": sums and tables tie), or
      // codebooks whose 16 entries are equal ("flat": every table's range 0, scale 1).
      const val = () =>
        kind === "scaled"
          ? (r() - 0.5) * 2 ** Math.floor(r() * 40 - 20)
          : kind === "ties"
          ? Math.floor(r() * 4) / 4
          : r() * 2 - 1;
      const c = new Float32Array(nlist * d).map(val);
      const cb = new Float32Array(16 * d).map(val);
      if (kind === "flat") {
        for (let m = 0; m < M; m++) {
          const dsub = d / M;
          for (let e = 1; e < 16; e++) {
            for (let t = 0; t < dsub; t++) cb[(m * 16 + e) * dsub + t] = cb[m * 16 * dsub + t];
          }
        }
      }
      const q = new Float32Array(d).map(val);
      const k = QuestionKernel.create(c, cb, nlist, d, M);
      assert(k !== undefined, "no probing module on this runtime");
      k.question(q);
      for (const l2 of [false, true]) {
        const ref = new Float64Array(nlist);
        probeScores(q, c, nlist, d, l2, ref);
        same(k.probe(l2), ref, `probe ${nlist}×${d} ${kind} l2 ${l2}`);
        for (const list of new Set([0, nlist >> 1, nlist - 1])) {
          const v = new Float64Array(d);
          for (let x = 0; x < d; x++) v[x] = l2 ? q[x] - c[list * d + x] : q[x];
          const t = new Float64Array(16 * M);
          tables4(v, cb, M, d / M, l2, t);
          same(k.floatTables(l2, list), t, `tables M ${M} ${kind} l2 ${l2} list ${list}`);
          const want = new Uint8Array(16 * M + 5), got = new Uint8Array(16 * M + 5);
          const a = quantizeTables(t, M, want, 5), b = k.lut(l2, list, got, 5);
          same(got, want, `lut M ${M} ${kind} l2 ${l2}`);
          same([b.scale, b.bias], [a.scale, a.bias], `scale, bias M ${M} ${kind}`);
          if (kind === "flat") assertEquals(a.scale, 1);
          cases++;
        }
      }
    }
  }
  // Entries that round at exactly one half: table 0 spans 0 … 2·FS_QMAX (with q = 1: scale
  // FS_QMAX / (2·FS_QMAX) = 0.5), table 1 holds 0 … 15, so its odd entries quantize from k + 0.5.
  for (const l2 of [false]) {
    const M = 2, d = 2, c = new Float32Array(2);
    const cb = new Float32Array(32);
    for (let e = 0; e < 16; e++) {
      cb[e] = e === 1 ? 2 * FS_QMAX : e;
      cb[16 + e] = e;
    }
    const k = QuestionKernel.create(c, cb, 1, d, M)!;
    for (const qv of [1, 0.5, 3, 1 / 3, 2 ** -30]) {
      const q = new Float32Array([qv, qv]);
      k.question(q);
      const t = new Float64Array(32);
      tables4(new Float64Array([q[0], q[1]]), cb, M, 1, l2, t);
      const want = new Uint8Array(32), got = new Uint8Array(32);
      const a = quantizeTables(t, M, want, 0), b = k.lut(l2, 0, got, 0);
      same(got, want, `half-way lut q ${qv}`);
      same([b.scale, b.bias], [a.scale, a.bias], `half-way scale q ${qv}`);
      for (let i = 0; i < 32; i++) {
        const y = (t[i] - (i < 16 ? t[0] : t[16])) * a.scale;
        if (y - Math.floor(y) === 0.5) halves++;
      }
    }
  }
  assert(cases >= 100, `${cases} cases`);
  assert(halves > 0, "no entry rounded at exactly one half");
});

Deno.test("bestLists: the first nprobe lists of the full sort (larger score first, ties to the lower list)", () => {
  const u = splitmix32(11);
  for (let trial = 0; trial < 300; trial++) {
    const nlist = 1 + (u() % 40), nprobe = 1 + (u() % (nlist + 2));
    const qc = new Float64Array(nlist).map(() =>
      (u() % 7) - 3 + (trial % 3 === 0 ? u() / 2 ** 32 : 0)
    );
    if (trial % 50 === 7) qc[u() % nlist] = NaN;
    if (trial % 50 === 8) qc[u() % nlist] = -Infinity;
    const order = Array.from({ length: nlist }, (_, i) => i);
    order.sort((a, b) => qc[b] - qc[a] || a - b);
    assertEquals(bestLists(qc, nprobe), order.slice(0, nprobe), `${qc.join()} nprobe ${nprobe}`);
  }
});
