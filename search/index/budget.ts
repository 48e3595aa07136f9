/**
 * A memory budget for search (`search --memory-budget`): its parser
 * ({@linkcode parseMemoryBudget}) and the cache it bounds
 * ({@linkcode ByteLru}, least recently used first out, by bytes). What the
 * budget covers is told in `disk.ts`.
 *
 * @module
 */

const UNITS: Readonly<Record<string, number>> = {
  "": 1,
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  k: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gib: 1024 ** 3,
  t: 1024 ** 4,
  tib: 1024 ** 4,
};

/**
 * The bytes of a budget written as plain bytes (`268435456`) or with a
 * unit: `kB`, `MB`, `GB`, `TB` (powers of 1000), `KiB`, `MiB`, `GiB`, `TiB`
 * or `K`, `M`, `G`, `T` (powers of 1024), any case, a decimal number
 * before it (`1.5GiB`); or what is wrong with it. A budget is at least 1
 * byte and a safe integer.
 *
 * @example
 * ```ts
 * import { parseMemoryBudget } from "./budget.ts";
 * if (parseMemoryBudget("256MB") !== 256e6) throw new Error();
 * if (parseMemoryBudget("1GiB") !== 2 ** 30) throw new Error();
 * if (parseMemoryBudget("4096") !== 4096) throw new Error();
 * if (typeof parseMemoryBudget("lots") !== "string") throw new Error();
 * ```
 */
export function parseMemoryBudget(text: string): number | string {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(text);
  const unit = m === null ? undefined : UNITS[m[2].toLowerCase()];
  const why = `bad memory budget ${JSON.stringify(text)}: bytes, or a number with ` +
    "kB/MB/GB/TB or KiB/MiB/GiB/TiB (e.g. 256MB, 1GiB)";
  if (m === null || unit === undefined) return why;
  const bytes = Math.floor(Number(m[1]) * unit);
  if (!Number.isSafeInteger(bytes) || bytes < 1) return why;
  return bytes;
}

/**
 * A cache of values by key holding at most `capacity` bytes (each value's
 * size given when it is put): the least recently used values leave first;
 * a value larger than the capacity is not kept.
 *
 * @example
 * ```ts
 * import { ByteLru } from "./budget.ts";
 * const c = new ByteLru<number, string>(10);
 * c.put(1, "a", 6);
 * c.put(2, "b", 4);
 * c.get(1);
 * c.put(3, "c", 4); // 2 leaves: 1 was used since
 * if (c.get(2) !== undefined || c.get(1) !== "a" || c.bytes !== 10) throw new Error();
 * ```
 */
export class ByteLru<K, V> {
  readonly #map = new Map<K, { value: V; bytes: number }>();
  #bytes = 0;
  /** Values put and not kept or evicted since (for tests and benchmarks). */
  evictions = 0;

  /**
   * A cache of at most `capacity` bytes (0: keeps nothing); `onEvict` is
   * told each value evicted (to reuse its memory).
   */
  constructor(readonly capacity: number, readonly onEvict?: (value: V) => void) {}

  /** The bytes held. */
  get bytes(): number {
    return this.#bytes;
  }

  /** The value of `key` (now the most recently used), or `undefined`. */
  get(key: K): V | undefined {
    const e = this.#map.get(key);
    if (e === undefined) return undefined;
    this.#map.delete(key);
    this.#map.set(key, e);
    return e.value;
  }

  /** Keeps `value` under `key`, counted as `bytes`, evicting the least recently used. */
  put(key: K, value: V, bytes: number): void {
    const old = this.#map.get(key);
    if (old !== undefined) {
      this.#map.delete(key);
      this.#bytes -= old.bytes;
    }
    if (bytes > this.capacity) {
      this.evictions++;
      return;
    }
    this.makeRoom(bytes);
    this.#map.set(key, { value, bytes });
    this.#bytes += bytes;
  }

  /** Evicts the least recently used values until `bytes` more fit. */
  makeRoom(bytes: number): void {
    for (const [k, e] of this.#map) {
      if (this.#bytes + bytes <= this.capacity) break;
      this.#map.delete(k);
      this.#bytes -= e.bytes;
      this.evictions++;
      this.onEvict?.(e.value);
    }
  }

  /** Drops every value. */
  clear(): void {
    this.#map.clear();
    this.#bytes = 0;
  }
}
