/**
 * The exact-sums module of the candidates' re-scoring
 * (`search/kernels/wasm_exact.ts`): every lane's running sums (`s`, `e`,
 * `a`) equal the TypeScript reference bit for bit (`Object.is`), for ip
 * and l2, one and two row pairs a pass and a padded odd row, values of
 * every magnitude; `ExactRows.scores` gives `fsum` of the terms for float32
 * and float16 rows, gathered or in place, including sums `fsumQuick`
 * leaves to the exact partials (a half-way total, a zero total); a NaN or
 * infinite value in a row is refused with its row; a question that is not
 * finite is left to the caller.
 */
import {
  exactModuleBytes,
  ExactRows,
  exactSumsReference,
} from "../../../search/kernels/wasm_exact.ts";
import { fsum, fsumQuick } from "../../../search/fsum.ts";
import { widenHalf } from "../../../search/dense_f64.ts";
import { NonFiniteError } from "../../../search/index/exact/score.ts";
import { splitmix32 } from "../../../search/index/ivfpq/kmeans.ts";
import { assert, assertEquals } from "../../_assert.ts";

/** The error `f` throws (failing when it throws none). */
function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (e) {
    return e;
  }
  throw new Error("nothing thrown");
}

const u = splitmix32(11);
const r = () => u() / 2 ** 32;

/** `n` rows of `d` float32 values: plain, of every magnitude, or with repeats. */
function rowsOf(n: number, d: number, kind: string): Float32Array {
  return Float32Array.from({ length: n * d }, () => {
    const x = r() - 0.5;
    if (kind === "scaled") return x * 2 ** Math.floor(r() * 60 - 30);
    if (kind === "ties") return Math.round(x * 4) / 2;
    return x;
  });
}

/** The terms of a row's exact score, in their order. */
function terms(x: ArrayLike<number>, q: ArrayLike<number>, l2: boolean): number[] {
  const p: number[] = [];
  for (let c = 0; c < q.length; c++) {
    if (l2) p.push(2 * x[c] * q[c], -(x[c] * x[c]), -(q[c] * q[c]));
    else p.push(x[c] * q[c]);
  }
  return p;
}

Deno.test("exact-sums module: each lane's s, e and a equal the TypeScript reference, bit for bit (ip, l2; 1-9 rows, read in order and by scattered positions)", () => {
  assert(WebAssembly.validate(exactModuleBytes()), "the module does not validate");
  const inst = new WebAssembly.Instance(new WebAssembly.Module(exactModuleBytes()), {});
  const e = inst.exports as Record<string, unknown>;
  const mem = e.memory as WebAssembly.Memory, sums = e.sums as (...a: number[]) => void;
  mem.grow(8);
  let checked = 0;
  for (const d of [4, 12, 256]) {
    for (const n of [1, 2, 3, 4, 5, 8, 9]) {
      for (const kind of ["plain", "scaled", "ties"]) {
        for (const l2 of [false, true]) {
          const rows = rowsOf(n, d, kind), q = rowsOf(1, d, kind);
          const pairs = (n + 1) >> 1, qAt = 8 * pairs * d, outAt = qAt + 8 * d;
          const idxAt = outAt + 48 * pairs;
          const buf = mem.buffer;
          const m = new Float32Array(buf, 0, 2 * pairs * d);
          m.fill(0);
          m.set(rows);
          new Float64Array(buf, qAt, d).set(q);
          const want = new Float64Array(3 * n);
          exactSumsReference(rows, n, d, q, l2, want);
          // The rows in order (the padding row last), then every third position from the last (or
          // the rows reversed, for n a multiple of 3): each row once, then the first as padding.
          const scattered = n % 3 === 0
            ? [...Array(n).keys()].reverse()
            : Array.from({ length: n }, (_, i) => (((n - 1 - 3 * i) % n) + n) % n);
          assertEquals([...scattered].sort((x, y) => x - y), [...Array(n).keys()]);
          const orders = [[...Array(2 * pairs).keys()], scattered];
          if (orders[1].length % 2 === 1) orders[1].push(orders[1][0]);
          for (const order of orders) {
            new Uint32Array(buf, idxAt, 2 * pairs).set(order);
            sums(0, pairs, d, qAt, l2 ? 1 : 0, outAt, idxAt);
            const got = new Float64Array(buf, outAt, 6 * pairs);
            for (let c = 0; c < n; c++) {
              const at = 6 * (c >> 1) + (c & 1), i = order[c];
              for (const [k, what] of [[0, "s"], [1, "e"], [2, "a"]] as const) {
                const a = got[at + 2 * k], b = want[3 * i + k];
                if (!Object.is(a, b)) {
                  throw new Error(`d ${d} n ${n} ${kind} l2 ${l2} row ${i} ${what}: ${a} ≠ ${b}`);
                }
              }
              checked++;
            }
          }
        }
      }
    }
  }
  assertEquals(checked, 2 * 3 * 32 * 3 * 2);
});

Deno.test("ExactRows.scores: fsum of each row's terms, float32 and float16, in place or gathered, half-way and zero totals included", () => {
  const k = ExactRows.create();
  assert(k !== undefined, "the exact-sums module cannot run here");
  for (const d of [4, 8, 256]) {
    for (const kind of ["plain", "scaled", "ties"]) {
      for (const l2 of [false, true]) {
        const all = 40, a = rowsOf(all, d, kind), q = rowsOf(1, d, kind);
        // Float16 bits of the same shape (finite: exponents 0-30), and their float32 values.
        const h = Uint16Array.from({ length: all * d }, () => {
          const b = Math.floor(r() * 0x10000);
          return (b & 0x7c00) === 0x7c00 ? b & 0x83ff : b;
        });
        const hw = widenHalf(h);
        for (const n of [1, 6, 7, 30]) {
          const rows = Array.from({ length: n }, () => Math.floor(r() * all));
          for (const [src, vals] of [[a, a], [h, hw]] as const) {
            const out = new Float64Array(n);
            assert(k.scores(src, rows, false, n, d, q, l2, out));
            const want = rows.map((x) => fsum(terms(vals.subarray(x * d, (x + 1) * d), q, l2)));
            assertEquals([...out], want, `d ${d} ${kind} l2 ${l2} n ${n}`);
            // The same rows gathered, one after another.
            const g = src instanceof Uint16Array ? new Uint16Array(n * d) : new Float32Array(n * d);
            rows.forEach((x, i) => g.set(src.subarray(x * d, (x + 1) * d), i * d));
            const out2 = new Float64Array(n);
            assert(k.scores(g, rows, true, n, d, q, l2, out2));
            assertEquals([...out2], want);
          }
        }
      }
    }
  }
  // Totals fsumQuick cannot decide: exactly half-way between two doubles (1 + 2^-53 rounds
  // to even, 1; with 2^-80 more it rounds up), and an exact zero.
  const q = new Float32Array([1, 1, 1, 1]);
  const hard = new Float32Array([1, 2 ** -53, 0, 0, 1, 2 ** -53, 2 ** -80, 0, 1, -1, 0.5, -0.5]);
  for (const i of [0, 2]) {
    assert(Number.isNaN(fsumQuick(terms(hard.subarray(4 * i, 4 * i + 4), q, false), 4)), `${i}`);
  }
  const out = new Float64Array(3);
  assert(k.scores(hard, [0, 1, 2], false, 3, 4, q, false, out));
  assertEquals([...out], [1, 1 + 2 ** -52, 0]);
  assertEquals(
    [...out],
    [0, 1, 2].map((i) => fsum(terms(hard.subarray(4 * i, 4 * i + 4), q, false))),
  );
});

Deno.test("ExactRows.scores: a NaN or infinite value is refused with its row; a question that is not finite is left to the caller", () => {
  const k = ExactRows.create()!;
  const d = 4, a = rowsOf(6, d, "plain"), q = rowsOf(1, d, "plain");
  for (const bad of [Infinity, -Infinity, NaN]) {
    const b = a.slice();
    b[3 * d + 2] = bad;
    const e = thrown(() => k.scores(b, [1, 3, 5], false, 3, d, q, false, new Float64Array(3)));
    assert(e instanceof NonFiniteError, String(e));
    assertEquals(e.message, "row 3");
  }
  // Float16 infinity (0x7c00) and NaN (0x7e00), gathered: named by the row given.
  for (const bits of [0x7c00, 0xfc00, 0x7e00]) {
    const h = new Uint16Array(3 * d).fill(0x3c00);
    h[d + 1] = bits;
    const e = thrown(() => k.scores(h, [7, 9, 11], true, 3, d, q, true, new Float64Array(3)));
    assert(e instanceof NonFiniteError, String(e));
    assertEquals(e.message, "row 9");
  }
  const out = new Float64Array(2).fill(-1);
  const nq = new Float32Array([1, NaN, 0, 0]);
  assertEquals(k.scores(a, [0, 1], false, 2, d, nq, false, out), false);
  assertEquals([...out], [-1, -1]);
  // A non-finite value anywhere in a longer question (each of the check's four sums) and
  // infinities of both signs (whose sum would be NaN as well): left to the caller.
  const d12 = 12, a12 = rowsOf(2, d12, "plain");
  for (let t = 0; t < d12; t++) {
    for (const bad of [Infinity, -Infinity, NaN]) {
      const q12 = rowsOf(1, d12, "plain");
      q12[t] = bad;
      assertEquals(k.scores(a12, [0, 1], false, 2, d12, q12, false, out), false, `${t} ${bad}`);
    }
  }
  const both = rowsOf(1, d12, "plain");
  both[1] = Infinity;
  both[6] = -Infinity;
  assertEquals(k.scores(a12, [0, 1], false, 2, d12, both, false, out), false);
  assertEquals(k.scores(a12, [0, 1], false, 2, d12, rowsOf(1, d12, "plain"), false, out), true);
});

Deno.test("ExactRows.scores with k: every row's exact score, or −∞ only for a row whose exact score is below k others' (ip; ties, magnitudes, float16)", () => {
  const k = ExactRows.create()!;
  let dropped = 0, kept = 0;
  for (const d of [4, 12, 256, 1024]) {
    for (const kind of ["plain", "scaled", "ties"]) {
      const all = 40, a = rowsOf(all, d, kind), q = rowsOf(1, d, kind);
      // Two rows the same as others (their scores tie exactly).
      a.copyWithin(5 * d, 2 * d, 3 * d);
      a.copyWithin(9 * d, 2 * d, 3 * d);
      const h = Uint16Array.from({ length: all * d }, () => {
        const b = Math.floor(r() * 0x10000);
        return (b & 0x7c00) === 0x7c00 ? b & 0x83ff : b;
      });
      for (const n of [1, 2, 7, 30, 31]) {
        const rows = Array.from({ length: n }, (_, i) => i % 3 === 0 ? 2 : Math.floor(r() * all));
        for (const src of [a, h]) {
          const full = new Float64Array(n);
          assert(k.scores(src, rows, false, n, d, q, false, full));
          for (const top of [1, 3, 10, n]) {
            const out = new Float64Array(n);
            assert(k.scores(src, rows, false, n, d, q, false, out, top));
            const kth = [...full].sort((x, y) => y - x)[Math.min(top, n) - 1];
            for (let i = 0; i < n; i++) {
              const what = `d ${d} ${kind} n ${n} k ${top} row ${i}`;
              if (out[i] === -Infinity) {
                assert(full[i] < kth, `${what}: dropped at ${full[i]}, k-th ${kth}`);
                dropped++;
              } else {
                assert(Object.is(out[i], full[i]), `${what}: ${out[i]} ≠ ${full[i]}`);
                kept++;
              }
            }
          }
        }
      }
    }
  }
  // Rows a float32 ulp apart in a few values: exact scores closer than float32's rounding of
  // their sums, so only the screen's bound keeps the better one.
  for (let trial = 0; trial < 400; trial++) {
    const d = trial % 2 === 0 ? 256 : 1024, a = rowsOf(3, d, "plain"), q = rowsOf(1, d, "plain");
    const bits = new Int32Array(a.buffer);
    a.copyWithin(d, 0, d);
    a.copyWithin(2 * d, 0, d);
    for (let c = 0; c < 3; c++) {
      bits[d + Math.floor(r() * d)] += r() < 0.5 ? 1 : -1;
      bits[2 * d + Math.floor(r() * d)] += r() < 0.5 ? 1 : -1;
    }
    const full = new Float64Array(3);
    assert(k.scores(a, [0, 1, 2], false, 3, d, q, false, full));
    for (const top of [1, 2]) {
      const out = new Float64Array(3);
      assert(k.scores(a, [0, 1, 2], false, 3, d, q, false, out, top));
      const kth = [...full].sort((x, y) => y - x)[top - 1];
      for (let i = 0; i < 3; i++) {
        if (out[i] === -Infinity) {
          assert(full[i] < kth, `near rows ${trial} k ${top}: dropped ${full[i]}, k-th ${kth}`);
        } else assert(Object.is(out[i], full[i]));
      }
    }
  }
  assert(dropped > 1000 && kept > 1000, `dropped ${dropped}, kept ${kept}`);
  // A row with an infinite value is kept for the exact sums, which refuse it.
  const d = 4, a = rowsOf(8, d, "plain"), q = rowsOf(1, d, "plain");
  a[6 * d + 1] = Infinity;
  const e = thrown(() =>
    k.scores(a, [0, 1, 2, 3, 4, 5, 6, 7], false, 8, d, q, false, new Float64Array(8), 1)
  );
  assert(e instanceof NonFiniteError, String(e));
  assertEquals(e.message, "row 6");
});
