/**
 * Partitioning: the item ranges of the encode tasks.
 *
 * @module
 */

/**
 * `[start, end)` partitions of `n` items, each at most `size` (one empty
 * partition when there is nothing; `Infinity`: one partition).
 *
 * @example
 * ```ts
 * import { partitions } from "./partition.ts";
 * if (JSON.stringify(partitions(47, 20)) !== "[[0,20],[20,40],[40,47]]") throw new Error();
 * if (JSON.stringify(partitions(47, Infinity)) !== "[[0,47]]") throw new Error();
 * ```
 */
export function partitions(n: number, size: number): [number, number][] {
  const out: [number, number][] = [];
  for (let a = 0; a < n; a += size) out.push([a, Math.min(n, a + size)]);
  return out.length ? out : [[0, 0]];
}
