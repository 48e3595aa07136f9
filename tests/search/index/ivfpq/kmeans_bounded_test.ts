/**
 * Elkan's bounded k-means (`kmeans.ts` `boundedAssign`, on long rows and
 * many centroids): the same centroids as Lloyd's k-means with every
 * distance taken (`kmeansWith` given `nearestAll`'s assignments), bit for
 * bit, in this thread and on 2 and 3 workers (the update's sums then a
 * share of the columns each, or, when they are exact in any order, kept up
 * from the rows that moved); on rows with exact ties (small integers,
 * repeated rows: the lower centroid must win), empty clusters, clustered
 * rows (many skipped distances), and rows too large for float32 products
 * (nearest's float64 distances then). Its distance kernels: `run` is
 * `nearest`'s float64 number, bit for bit; `dots` is within the exact
 * search's float32 error bound.
 */
import {
  below32,
  boundedApplies,
  boundedAssign,
  boundedRows,
  centroidMoves,
  centroidShifts,
  exactSums,
  halfDistances,
  kmeans,
  kmeansWith,
  nearestAll,
  rowNorms,
  screenBlocks,
  splitmix32,
  sumRows,
} from "../../../../search/index/ivfpq/kmeans.ts";
import { kmeansOnWorkers } from "../../../../search/index/ivfpq/ivf_encode.ts";
import { PairDistances } from "../../../../search/kernels/nearest.ts";
import { TINY, U32 } from "../../../../search/index/exact/score.ts";
import { assert, assertEquals } from "../../../_assert.ts";

const u = splitmix32(77);
const unit = () => u() / 2 ** 32 - 0.5;

/** Rows of the given kind (see the module notes). */
function rows(kind: string, n: number, d: number): Float32Array {
  const x = new Float32Array(n * d);
  if (kind === "ints") {
    for (let i = 0; i < x.length; i++) x[i] = (u() % 5) - 2;
    for (let i = 0; i + 7 < n; i += 7) x.copyWithin((i + 3) * d, i * d, i * d + d);
  } else if (kind === "few") {
    // Five distinct rows for more centroids than that: empty clusters every iteration.
    const base = Float32Array.from({ length: 5 * d }, unit);
    for (let i = 0; i < n; i++) x.set(base.subarray((i % 5) * d, (i % 5 + 1) * d), i * d);
  } else {
    const centers = Float32Array.from({ length: 12 * d }, () => 4 * unit());
    for (let i = 0; i < n; i++) {
      const c = u() % 12;
      for (let t = 0; t < d; t++) x[i * d + t] = centers[c * d + t] + unit();
    }
    if (kind === "huge") { for (let i = 0; i < n; i += 3) x[i * d] = 2 ** 60 * (1 + unit()); }
    // Float16-like values (11 significant bits): exact sums in any order.
    if (kind === "halves") {
      for (let i = 0; i < x.length; i++) x[i] = Math.round(x[i] * 1024) / 1024;
    }
    // A value that is not a number: no bounds (nearestAll's answers still).
    if (kind === "nan") x[5 * d + 3] = NaN;
    // Values of many scales, one far finer than the rest: sums that depend on their order.
    if (kind === "fine") {
      for (let i = 0; i < x.length; i++) x[i] *= 2 ** -(u() % 24);
      x[1] = 1e-30;
    }
  }
  return x;
}

/** Lloyd's k-means: every assignment by nearestAll, every update's sums in row order. */
const lloyd = (
  x: Float32Array,
  n: number,
  d: number,
  k: number,
  o: { iterations: number; seed: number },
) =>
  kmeansWith(x, n, d, k, { ...o, rowOrderSums: true }, (c, cn, kk, out) => {
    nearestAll(x, n, d, c, cn, kk, out);
    return Promise.resolve();
  });

/** Bit for bit: each value the same float32 (or float64) number. */
function same(got: ArrayLike<number>, want: ArrayLike<number>, what: string): void {
  assertEquals(got.length, want.length, `${what}: length`);
  for (let i = 0; i < got.length; i++) {
    if (!Object.is(got[i], want[i])) {
      throw new Error(`${what}: value ${i} is ${got[i]}, want ${want[i]}`);
    }
  }
}

const cases = [
  { kind: "fine", n: 1500, d: 32, k: 20 },
  { kind: "clusters", n: 1500, d: 32, k: 20 },
  { kind: "ints", n: 700, d: 36, k: 13 },
  { kind: "few", n: 300, d: 32, k: 8 },
  { kind: "huge", n: 600, d: 40, k: 9 },
  { kind: "halves", n: 1200, d: 32, k: 16 },
  // Enough centroids for the int16 products: the first bounds taken from them.
  { kind: "clusters", n: 1500, d: 32, k: 72 },
  { kind: "halves", n: 900, d: 36, k: 64 },
];

Deno.test("bounded k-means: Elkan's bounds give Lloyd's centroids bit for bit (ties, empty clusters, clusters, float32-unsafe rows)", async () => {
  for (const { kind, n, d, k } of cases) {
    assert(boundedApplies(n, d, k), `${kind}: the bounded path runs`);
    const x = rows(kind, n, d), o = { iterations: 12, seed: 5 };
    same(kmeans(x, n, d, k, o), await lloyd(x, n, d, k, o), `${kind} n ${n} d ${d} k ${k}`);
  }
});

Deno.test("bounded k-means: a centroid moved to the same distance as the row's own wins when its number is lower (nearest's tie rule)", () => {
  const d = 32, k = 8, n = 3;
  // Row 0 at the origin, rows 1 and 2 beside centroid 5; the others far away.
  const x = new Float32Array(n * d);
  x[d] = x[2 * d] = 1;
  const c = new Float32Array(k * d);
  for (let j = 0; j < k; j++) c[j * d + 1 + j] = 10;
  c.fill(0, 5 * d, 6 * d);
  c[5 * d] = 1;
  const rows = boundedRows(n, k), pairs = PairDistances.create(x, n, d, k)!;
  boundedAssign(x, n, d, c, rowNorms(c, k, d), k, rows, undefined, pairs);
  assertEquals([...rows.assign], [5, 5, 5]);
  // Centroid 2 moves to (−1, 0, …): the origin is as far from it as from centroid 5.
  const moved = c.slice();
  moved.fill(0, 2 * d, 3 * d);
  moved[2 * d] = -1;
  const cn = rowNorms(moved, k, d), want = new Uint32Array(n);
  nearestAll(x, n, d, moved, cn, k, want);
  assertEquals([...want], [2, 5, 5]);
  boundedAssign(x, n, d, moved, cn, k, rows, centroidMoves(c, moved, k, d), pairs);
  assertEquals([...rows.assign], [...want]);
});

Deno.test("bounded k-means: after each of several updates every kept bound, lower − total, is at most the real distance, and the bounds still skip most centroids (first bounds from float32 and from int16 products)", () => {
  for (const k of [24, 72]) boundsHold(400, 32, k);
});

/** The bounds of `n` clustered rows and `k` centroids, checked against every real distance. */
function boundsHold(n: number, d: number, k: number): void {
  const x = rows("clusters", n, d);
  let c = x.slice(0, k * d);
  const rowsB = boundedRows(n, k), pairs = PairDistances.create(x, n, d, k)!;
  const int16 = screenBlocks.int16;
  boundedAssign(x, n, d, c, rowNorms(c, k, d), k, rowsB, undefined, pairs);
  assertEquals(screenBlocks.int16 > int16, k >= 64, `k ${k}: the first bounds' products in int16`);
  const real = (i: number, j: number) => {
    let s = 0;
    for (let t = 0; t < d; t++) s += (x[i * d + t] - c[j * d + t]) ** 2;
    return Math.sqrt(s);
  };
  // The first bounds: each lower one at most the real distance, the upper one at least it.
  for (let i = 0; i < n; i++) {
    assert(rowsB.upper[i] >= real(i, rowsB.assign[i]), `k ${k} row ${i}: upper bound`);
    for (let j = 0; j < k; j++) {
      assert(rowsB.lower[i * k + j] <= real(i, j), `k ${k} row ${i} centroid ${j}: first bound`);
    }
  }
  let moves: ReturnType<typeof centroidMoves> | undefined;
  let checked = 0, skipped = 0;
  for (let step = 1; step <= 6; step++) {
    // Every centroid moved by a small step (some not at all), as an update moves them.
    const next = c.slice();
    for (let j = 0; j < k; j++) {
      if (j % 5 === 0) continue;
      for (let t = 0; t < d; t++) next[j * d + t] += 0.05 * unit() / step;
    }
    const prevTotal = moves?.total.slice() ?? new Float64Array(k);
    moves = centroidMoves(c, next, k, d, moves);
    for (let j = 0; j < k; j++) {
      assert(moves.total[j] >= prevTotal[j] + moves.shift[j], `total ${j}: the sum of shifts`);
    }
    c = next;
    const cn = rowNorms(c, k, d), want = new Uint32Array(n);
    boundedAssign(x, n, d, c, cn, k, rowsB, moves, pairs);
    nearestAll(x, n, d, c, cn, k, want);
    assertEquals([...rowsB.assign], [...want], `step ${step}: the answers`);
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < k; j++) {
        let s = 0;
        for (let t = 0; t < d; t++) s += (x[i * d + t] - c[j * d + t]) ** 2;
        const real = Math.sqrt(s), bound = rowsB.lower[i * k + j] - moves.total[j];
        assert(bound <= real, `step ${step} row ${i} centroid ${j}: bound ${bound} above ${real}`);
        if (bound > 0 && j !== want[i]) skipped++;
        checked++;
      }
    }
  }
  assertEquals(checked, 6 * n * k);
  assert(skipped > checked / 2, `k ${k}: ${skipped} of ${checked} bounds above 0`);
}

Deno.test("bounded k-means on 2 and 3 workers (the update's columns shared among them): this thread's centroids and lists", async () => {
  for (const { kind, n, d, k } of [...cases.slice(0, 3), { kind: "nan", n: 900, d: 32, k: 10 }]) {
    const x = rows(kind, n, d), o = { iterations: 8, seed: 9 };
    const want = await lloyd(x, n, d, k, o), lists = new Uint32Array(n);
    nearestAll(x, n, d, want, rowNorms(want, k, d), k, lists);
    for (const threads of [2, 3]) {
      const got = new Uint32Array(n);
      const c = await kmeansOnWorkers(x, n, d, k, { ...o, threads }, got);
      same(c, want, `${kind}, ${threads} workers: centroids`);
      same(got, lists, `${kind}, ${threads} workers: lists`);
    }
  }
});

Deno.test("bounded k-means kernels: run is nearest's float64 distance bit for bit, dots within the float32 bound", () => {
  const n = 40, d = 44, k = 11;
  const x = rows("clusters", n, d), c = rows("clusters", k, d), cn = rowNorms(c, k, d);
  const pairs = PairDistances.create(x, n, d, k);
  assert(pairs !== undefined, "the kernel runs here");
  pairs.centroids(c, cn);
  const out = new Float64Array(k + 4);
  for (let i = 0; i < n; i++) {
    // Every centroid, then an odd count (the list padded), in a scrambled order.
    for (const m of [k, 5, 1]) {
      for (let r = 0; r < m; r++) pairs.list[r] = (r * 7 + i) % k;
      const js = Array.from(pairs.list.subarray(0, m));
      pairs.run(i, m, out);
      for (let r = 0; r < m; r++) {
        const j = js[r];
        let s0 = 0, s1 = 0;
        for (let t = 0; t < d; t += 2) {
          s0 += x[i * d + t] * c[j * d + t];
          s1 += x[i * d + t + 1] * c[j * d + t + 1];
        }
        assertEquals(out[r], cn[j] - 2 * (s0 + s1), `row ${i} centroid ${j}: distance`);
      }
      for (let r = 0; r < m; r++) pairs.list[r] = js[r];
      pairs.dots(i, m, out);
      for (let r = 0; r < m; r++) {
        const j = js[r];
        let exact = 0, xx = 0, cc = 0;
        for (let t = 0; t < d; t++) {
          exact += x[i * d + t] * c[j * d + t];
          xx += x[i * d + t] ** 2;
          cc += c[j * d + t] ** 2;
        }
        const bound = 4 * (d + 4) * U32 * Math.sqrt(xx * cc) + (d + 8) * TINY;
        assert(Math.abs(out[r] - exact) <= bound, `row ${i} centroid ${j}: ${out[r]} vs ${exact}`);
        assert(out[r] !== exact || d < 8, "a float32 sum, not the float64 one");
      }
    }
  }
});

Deno.test("exactSums: float16-like rows qualify (the sums then follow the moved rows), finer or larger ones do not", () => {
  const n = 500, d = 8;
  assert(exactSums(rows("halves", n, d), n, d), "multiples of 2⁻¹⁰");
  assert(exactSums(rows("ints", n, d), n, d), "small integers");
  assert(exactSums(rows("clusters", n, d), n, d), "float32 values of one scale");
  assert(!exactSums(rows("fine", n, d), n, d), "a value 2⁻⁹⁹ beside values near 1");
  const big = rows("halves", n, d);
  big[3] = 2 ** 44;
  assert(!exactSums(big, n, d), "a column summing past 2^53 of its finest unit");
  big[3] = Infinity;
  assert(!exactSums(big, n, d), "not finite");
  assert(exactSums(new Float32Array(n * d), n, d), "all zeros");
  // What it promises: the column sums in row order and backwards are the same numbers for
  // rows that qualify, and not for those that do not.
  const sums = (x: Float32Array, back: boolean) => {
    const s = new Float64Array(d);
    for (let r = 0; r < n; r++) {
      const i = back ? n - 1 - r : r;
      for (let t = 0; t < d; t++) s[t] += x[i * d + t];
    }
    return s;
  };
  const halves = rows("halves", n, d), fine = rows("fine", n, d);
  same(sums(halves, true), sums(halves, false), "halves");
  assert(sums(fine, true).some((v, t) => v !== sums(fine, false)[t]), "fine: order matters");
});

Deno.test("sumRows: shares of the columns give the whole update's sums", () => {
  const n = 90, d = 10, k = 4;
  const x = rows("clusters", n, d), assign = Uint32Array.from({ length: n }, () => u() % k);
  const whole = new Float64Array(k * d), parts = new Float64Array(k * d).fill(7);
  sumRows(x, n, d, assign, whole, k);
  for (const [t0, t1] of [[0, 4], [4, 6], [6, 10]]) sumRows(x, n, d, assign, parts, k, t0, t1);
  same(parts, whole, "sums");
  let want = 0;
  for (let i = 0; i < n; i++) if (assign[i] === 2) want += x[i * d + 3];
  assertEquals(whole[2 * d + 3], want);
});

Deno.test("centroidMoves: every half distance is at most half the real distance and, screened in float32, within 10⁻⁴ of it; squares beyond float32 are taken in float64", () => {
  const k = 37, d = 64;
  const c = Float32Array.from({ length: k * d }, () => 3 * unit());
  // A centroid a float32 step from another, one equal to another, one whose squared gaps
  // overflow float32 (2⁷⁰ values: the screen's sums are infinite).
  for (let t = 0; t < d; t++) c[4 * d + t] = c[3 * d + t] * (1 + 2 ** -23);
  c.copyWithin(9 * d, 8 * d, 9 * d);
  for (let t = 0; t < d; t++) c[20 * d + t] = 2 ** 70 * (1 + unit());
  const prev = c.map((v, i) => v + (i % 3) * 2 ** -10);
  const m = centroidMoves(prev, c, k, d);
  let screened = 0;
  for (let a = 0; a < k; a++) {
    let near = Infinity;
    for (let j = 0; j < k; j++) {
      if (j === a) continue;
      // The real squared distance, its float64 sum within 2⁻⁴⁶ of it (differences and squares
      // exact here but for the 2⁷⁰ row, whose gaps lose nothing that matters at 2⁻⁴⁴).
      let s = 0;
      for (let t = 0; t < d; t++) s += (c[a * d + t] - c[j * d + t]) ** 2;
      const real = 0.5 * Math.sqrt(s), h = m.half[a * k + j];
      assert(h <= real * (1 - 2 ** -44), `half ${a}, ${j}: ${h} above ${real}`);
      assertEquals(h, m.half[j * k + a], `half ${a}, ${j} symmetric`);
      if (a === 20 || j === 20) {
        // Not finite in float32: the float64 loop's number itself.
        const lo = Math.min(a, j), hi = Math.max(a, j);
        let f = 0;
        for (let t = 0; t < d; t++) {
          const e = c[lo * d + t] - c[hi * d + t];
          f += e * e;
        }
        assertEquals(h, 0.5 * Math.sqrt(f) * (1 - 2 ** -40), `half ${a}, ${j} in float64`);
      } else {
        assert(h >= real * (1 - 1e-4), `half ${a}, ${j}: ${h} far below ${real}`);
        screened++;
      }
      near = Math.min(near, h);
    }
    assertEquals(m.near[a], near, `near ${a}`);
  }
  assertEquals(m.half[8 * k + 9], 0, "equal centroids");
  assert(m.half[3 * k + 4] > 0 && screened === 35 * 36, `${screened} screened pairs`);
  for (let j = 0; j < k; j++) {
    let s = 0;
    for (let t = 0; t < d; t++) s += (c[j * d + t] - prev[j * d + t]) ** 2;
    assert(m.shift[j] >= Math.sqrt(s), `shift ${j}`);
  }
  // As the build's workers take them: centroidShifts, then halfDistances a share of rows each.
  const w = centroidShifts(prev, c, k, d);
  same(w.shift, m.shift, "shift");
  same(w.total, m.total, "total");
  for (const [a0, a1] of [[0, 19], [19, 37]]) halfDistances(c, k, d, w.half, w.near, a0, a1);
  same(w.half, m.half, "half in two shares");
  same(w.near, m.near, "near in two shares");
});

Deno.test("below32: a bound float32 holds at or below the number (0 below its normal numbers, 2¹²⁷ above its range)", () => {
  const f32 = new Float32Array(1);
  let checked = 0;
  for (let e = -130; e <= 130; e++) {
    for (let r = 0; r < 40; r++) {
      const v = 2 ** e * (1 + u() / 2 ** 32);
      f32[0] = below32(v);
      assert(f32[0] <= v, `${v} stored as ${f32[0]}`);
      if (e >= -119 && e <= 126) assert(f32[0] >= v * (1 - 2 ** -21), `${v}: ${f32[0]} too low`);
      checked++;
    }
  }
  assertEquals([below32(0), below32(2 ** -121), below32(Infinity)], [0, 0, 2 ** 127]);
  f32[0] = below32(3.4e38);
  assertEquals(f32[0], 2 ** 127, "beyond 2¹²⁷");
  assert(Number.isNaN(below32(NaN)) && checked === 261 * 40);
});
