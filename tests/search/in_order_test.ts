/**
 * Blocks started ahead and used in order (`search/in_order.ts`, the `search`
 * stage's blocks on search workers):
 *
 * - each result reaches `use` in block order, whatever order the blocks
 *   finish in, and never more than `ahead + 1` blocks are under way
 *   (`ahead` 0: one at a time, the next started after a use);
 * - a failure (a block's rejection, `start` throwing, `use` throwing)
 *   starts no more blocks, waits for those already started, and throws the
 *   first failure in block order.
 */
import { assertEquals, assertRejectsWith } from "../_assert.ts";
import { inOrder, inTail } from "../../search/in_order.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A run of `count` blocks, block `i` done after `delay(i)` ms (rejected where `fail(i)`). */
async function run(
  count: number,
  ahead: number,
  delay: (i: number) => number,
  fail: (i: number) => boolean = () => false,
  useFails = -1,
) {
  const log: string[] = [], settled: number[] = [];
  // Blocks under way (started, not yet done), and the most at once.
  let open = 0, most = 0;
  const error = await inOrder(count, ahead, async (i) => {
    log.push(`s${i}`);
    most = Math.max(most, ++open);
    await sleep(delay(i));
    open--;
    settled.push(i);
    if (fail(i)) throw new Error(`block ${i}`);
    return 10 * i;
  }, async (i, x) => {
    await sleep(1);
    if (i === useFails) throw new Error(`use ${i}`);
    log.push(`u${i}=${x}`);
  }).then(() => undefined, (e: Error) => e.message);
  return { log, settled, most, error };
}

Deno.test("inOrder: results used in block order whatever order the blocks finish in; at most ahead + 1 under way", async () => {
  // Later blocks finish first.
  const r = await run(6, 2, (i) => 30 - 5 * i);
  assertEquals(
    r.log.filter((x) => x.startsWith("u")),
    [0, 1, 2, 3, 4, 5].map((i) => `u${i}=${10 * i}`),
  );
  assertEquals(r.log.slice(0, 3), ["s0", "s1", "s2"]);
  assertEquals(r.most, 3);
  assertEquals(r.error, undefined);
  // ahead 0: one block at a time, each started after the one before was used.
  const one = await run(4, 0, () => 2);
  assertEquals(one.log, ["s0", "u0=0", "s1", "u1=10", "s2", "u2=20", "s3", "u3=30"]);
  assertEquals(one.most, 1);
  // More ahead than blocks; no blocks at all.
  assertEquals((await run(2, 8, () => 1)).log, ["s0", "s1", "u0=0", "u1=10"]);
  assertEquals((await run(0, 2, () => 1)).log, []);
});

Deno.test("inOrder: a failure starts no more blocks, waits for every block started, and throws the first in block order", async () => {
  // Block 1 fails (quickly, before block 0 is done): block 2, started, is waited for; block 0
  // is still used; 3, 4 and 5 never start.
  const r = await run(6, 2, (i) => (i === 1 ? 1 : 20), (i) => i === 1 || i === 2);
  assertEquals(r.error, "block 1");
  assertEquals(r.log, ["s0", "s1", "s2", "u0=0"]);
  assertEquals(r.settled.sort(), [0, 1, 2]);
  // A later block fails first in time: the earlier one's failure is the one thrown.
  const late = await run(3, 2, (i) => (i === 0 ? 30 : 1), () => true);
  assertEquals(late.error, "block 0");
  assertEquals(late.settled.sort(), [0, 1, 2]);
  // `use` fails: blocks under way are waited for, none more started.
  const used = await run(6, 1, () => 5, () => false, 1);
  assertEquals(used.error, "use 1");
  assertEquals(used.log, ["s0", "s1", "s2", "u0=0", "s3"]);
  assertEquals(used.settled.sort(), [0, 1, 2, 3]);
  // `start` throws (not a rejected promise): the same.
  let begun = 0;
  await assertRejectsWith(
    inOrder(5, 1, (i) => {
      begun++;
      if (i === 2) throw new Error("bad block 2");
      return sleep(2).then(() => i);
    }, () => {}),
    "bad block 2",
  );
  assertEquals(begun, 3);
});

Deno.test("inTail: the last `ahead` blocks of a run (none one block at a time)", () => {
  const tail = (count: number, ahead: number) =>
    Array.from({ length: count }, (_, i) => i).filter((i) => inTail(i, count, ahead));
  assertEquals(tail(5, 2), [3, 4]);
  assertEquals(tail(42, 2), [40, 41]);
  assertEquals(tail(1, 2), [0]);
  assertEquals(tail(3, 4), [0, 1, 2]);
  assertEquals(tail(5, 0), []);
  assertEquals(tail(5, 1.5), [4]);
});
