/**
 * A memory budget for search (`search --memory-budget`): its parser
 * ({@linkcode parseMemoryBudget}) and the cache it bounds
 * ({@linkcode ByteLru}, least recently used first out, by bytes), and the
 * ceiling it sets on the JavaScript heap's garbage
 * ({@linkcode HeapCeiling}). What the budget covers is told in `disk.ts`.
 *
 * @module
 */
import v8 from "node:v8";
import vm from "node:vm";

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

/** The runtime's full garbage collection, made callable once (`--expose-gc` set at run time). */
let fullGc: (() => void) | undefined;

function collectGarbage(): void {
  if (fullGc === undefined) {
    // The flag is read when a context is made: a new context's global `gc` is the collector.
    v8.setFlagsFromString("--expose-gc");
    fullGc = vm.runInNewContext("gc") as () => void;
  }
  fullGc();
}

/**
 * A ceiling on the JavaScript heap of a search under a memory budget: the
 * garbage that reading on demand makes (each paragraph line parsed again,
 * its strings and arrays) is collected when the heap's used bytes pass the
 * ceiling, rather than when the runtime's own heuristics choose, which let
 * the heap grow with the corpus (919 MB peak RSS at 16 dev copies under a
 * 256 MB budget, against 448 MB with the heap capped by a V8 flag).
 *
 * The ceiling starts at `base` bytes; after a collection it is at least
 * 1.5 × what is left live, so that a live heap larger than `base` (many
 * questions, a large paragraph table) is not collected over and over.
 * {@linkcode HeapCeiling.note} counts the bytes of garbage-making work and
 * checks the heap every `step` of them, so the check costs nothing per read.
 *
 * @example
 * ```ts
 * import { HeapCeiling } from "./budget.ts";
 * const h = new HeapCeiling(1, 1 << 20); // any garbage is over a 1-byte ceiling
 * let junk: unknown[] | null = Array.from({ length: 1e5 }, (_, i) => ({ i }));
 * junk = null;
 * h.note(2 << 20); // past the step: checks, and collects
 * if (h.collections !== 1 || junk !== null) throw new Error();
 * ```
 */
export class HeapCeiling {
  #ceiling: number;
  #since = 0;
  /** Full collections made (for tests and benchmarks). */
  collections = 0;

  /** A ceiling of `base` bytes of heap, checked every `step` bytes noted. */
  constructor(readonly base: number, readonly step: number) {
    this.#ceiling = base;
  }

  /** The heap's used bytes above which the next check collects. */
  get ceiling(): number {
    return this.#ceiling;
  }

  /** Notes `bytes` of work that makes garbage; every `step` bytes, checks the heap. */
  note(bytes: number): void {
    this.#since += bytes;
    if (this.#since < this.step) return;
    this.#since = 0;
    this.check();
  }

  /** Collects the garbage if the heap's used bytes are above the ceiling. */
  check(): void {
    if (v8.getHeapStatistics().used_heap_size <= this.#ceiling) return;
    collectGarbage();
    this.collections++;
    this.#ceiling = Math.max(this.base, 1.5 * v8.getHeapStatistics().used_heap_size);
  }
}

/**
 * The heap ceiling of a search under `budget` bytes: the paragraph cache's
 * share (a quarter of the budget) and 64 MiB for the rest of the live heap
 * (the paragraph table, the questions, a batch's results, the code),
 * checked every 1/64 of the budget (at least 1 MiB) of paragraph lines read.
 *
 * @example
 * ```ts
 * import { heapCeilingFor } from "./budget.ts";
 * const h = heapCeilingFor(256e6);
 * if (h.base !== 64e6 + 64 * 2 ** 20 || h.step !== 4e6) throw new Error();
 * ```
 */
export function heapCeilingFor(budget: number): HeapCeiling {
  return new HeapCeiling(Math.floor(budget / 4) + 64 * 2 ** 20, Math.max(2 ** 20, budget / 64));
}
