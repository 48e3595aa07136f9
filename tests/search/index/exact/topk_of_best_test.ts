/**
 * `TopK.ofBest` (a search worker's packed answer made back into a `TopK`,
 * `ivf_search.ts` `unpackTops`) gives the list its pairs came from: the
 * same rows, scores, order and threshold, and the same answers to the
 * offers made after, with scores drawn from a few values (many exact ties,
 * broken by the order offered), k from 1 to more than the pairs; a list
 * not best first or longer than k is refused.
 */
import { TopK } from "../../../../search/index/exact/score.ts";
import { splitmix32 } from "../../../../search/index/ivfpq/kmeans.ts";
import { assert, assertEquals } from "../../../_assert.ts";

/** Runs `f`, which must throw a `RangeError` whose message holds `part`. */
function assertRangeError(f: () => unknown, part: string): void {
  try {
    f();
  } catch (e) {
    assert(e instanceof RangeError && e.message.includes(part), String(e));
    return;
  }
  throw new Error(`no RangeError (${part})`);
}

Deno.test("TopK.ofBest: the same kept pairs, order, threshold and later offers as the list offered pair by pair (ties)", () => {
  const u = splitmix32(11);
  let cases = 0, tied = 0;
  for (const k of [1, 2, 3, 10, 25, 100]) {
    for (const n of [0, 1, 2, 5, 10, 30, 200]) {
      for (const values of [3, 1000]) {
        const score = () => (u() % values) / 7 - 20;
        const offered = new TopK(k);
        for (let row = 0; row < n; row++) offered.offer(score(), row);
        const made = TopK.ofBest(k, offered.scores, offered.rows);
        assertEquals(made.rows, offered.rows);
        assertEquals(made.scores, offered.scores);
        assertEquals(made.threshold, offered.threshold);
        const s = offered.scores;
        for (let i = 1; i < s.length; i++) if (s[i] === s[i - 1]) tied++;
        // Offers after: kept and ordered alike (ties go after the pairs already kept).
        for (let row = n; row < n + 40; row++) {
          const x = score();
          offered.offer(x, row);
          made.offer(x, row);
          assertEquals(made.threshold, offered.threshold);
        }
        assertEquals(made.rows, offered.rows);
        assertEquals(made.scores, offered.scores);
        cases++;
      }
    }
  }
  assertEquals(cases, 84);
  // (Ties among the kept pairs are many: the case the heap's offer order decides.)
  assert(tied >= 200, `${tied} ties`); // 243 with this seed
});

Deno.test("TopK.ofBest: a slice of packed pairs; pairs not best first, or more than k, refused", () => {
  const scores = new Float64Array([9, 5, 5, 1, 7, 7, 2]),
    rows = new Float64Array([4, 1, 8, 0, 3, 6, 2]);
  const a = TopK.ofBest(3, scores, rows, 0, 3), b = TopK.ofBest(10, scores, rows, 4, 7);
  assertEquals([a.rows, a.scores, a.threshold], [[4, 1, 8], [9, 5, 5], 5]);
  assertEquals([b.rows, b.scores, b.threshold], [[3, 6, 2], [7, 7, 2], -Infinity]);
  assertEquals(TopK.ofBest(2, scores, rows, 3, 3).rows, []);
  assertRangeError(() => TopK.ofBest(2, scores, rows, 0, 3), "3 pairs for a TopK of 2");
  assertRangeError(() => TopK.ofBest(10, scores, rows, 2, 5), "not best first at 2");
  assertRangeError(() => TopK.ofBest(10, [1, NaN], [0, 1]), "not best first at 1");
});
