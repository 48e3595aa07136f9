/**
 * Blocks of work started ahead and used in order: {@linkcode inOrder}
 * keeps blocks started while an earlier one's result is used, as the
 * `search` stage answers blocks of questions on search workers (the next
 * blocks' questions wait in the workers' queue while this thread writes a
 * block's lines, so no worker waits for it).
 *
 * @module
 */

/**
 * Calls `start(0)`, `start(1)`, …, `start(count − 1)` and hands each
 * block's result to `use`, in order, one at a time. With `ahead` = 0 one
 * block at a time: block `i + 1` is started once block `i` has been used.
 * With `ahead` > 0, blocks `0 … ahead` are started at once, and as soon as
 * block `i` is done block `i + ahead + 1` is started, then block `i` used:
 * `ahead + 1` blocks under way (started, not yet done) while one is used,
 * never more. Once anything has failed (`start`, a block, even one not
 * yet reached, or `use`) no block is started; every block already started
 * is waited for (no rejection left unheard), and the first failure in
 * block order is thrown.
 *
 * @example
 * ```ts
 * import { inOrder } from "./in_order.ts";
 * const log: string[] = [];
 * const run = (ahead: number) =>
 *   inOrder(3, ahead, (i) => {
 *     log.push(`start ${i}`);
 *     return new Promise<number>((r) => setTimeout(() => r(i * i), 3 - i));
 *   }, (i, x) => {
 *     log.push(`use ${i}=${x}`);
 *   });
 * await run(0);
 * if (log.join() !== "start 0,use 0=0,start 1,use 1=1,start 2,use 2=4") throw new Error(log.join());
 * log.length = 0;
 * await run(1);
 * if (log.join() !== "start 0,start 1,start 2,use 0=0,use 1=1,use 2=4") throw new Error(log.join());
 * ```
 */
export async function inOrder<T>(
  count: number,
  ahead: number,
  start: (i: number) => Promise<T>,
  use: (i: number, result: T) => void | Promise<void>,
): Promise<void> {
  const started: Promise<T>[] = [];
  // Set once any block has failed (seen in order or not): no more are started.
  let failed = false;
  const begin = (i: number): void => {
    if (failed) return;
    let p: Promise<T>;
    try {
      p = start(i);
    } catch (e) {
      p = Promise.reject(e);
    }
    // (Awaited below, in order; a rejection is not an unhandled one meanwhile.)
    p.catch(() => failed = true);
    started.push(p);
  };
  const a = Math.max(0, Math.floor(ahead));
  let next = 0;
  try {
    for (; next < Math.min(count, a + 1); next++) begin(next);
    for (let i = 0; i < count; i++) {
      const result = await started[i];
      if (a > 0 && next < count) begin(next++);
      await use(i, result);
      if (a === 0 && next < count) begin(next++);
    }
  } catch (e) {
    failed = true;
    await Promise.allSettled(started);
    throw e;
  }
}

/**
 * Whether block `i` of `count`, started with {@linkcode inOrder} and
 * `ahead`, is one of the last `ahead` blocks: once they are started no
 * other block will follow, so their work is the workers' last, worth
 * cutting finer (`ivf_search.ts` `TAIL_PIECE`) so that the workers run out
 * of it together. Never with `ahead` 0 (one block at a time).
 *
 * @example
 * ```ts
 * import { inTail } from "./in_order.ts";
 * const tail = [0, 1, 2, 3, 4].filter((i) => inTail(i, 5, 2));
 * if (tail.join() !== "3,4" || inTail(4, 5, 0)) throw new Error(tail.join());
 * ```
 */
export function inTail(i: number, count: number, ahead: number): boolean {
  const a = Math.max(0, Math.floor(ahead));
  return a > 0 && i + a >= count;
}
