/**
 * A seedable pseudo-random generator that gives the same numbers on every
 * machine: **xoshiro128\*\*** (Blackman and Vigna, 2018; the reference C code
 * `xoshiro128starstar.c`, 32-bit output, period 2¹²⁸ − 1), seeded by
 * **SplitMix64** (the reference `splitmix64.c`, the seeding the xoshiro
 * authors recommend). Only 32-bit integer arithmetic (`Math.imul`, shifts),
 * so no floating point enters a draw.
 *
 * Seeding, exactly: a seed `s` (an integer in [0, 2⁶⁴)) is the SplitMix64
 * state; its first two outputs `o₁`, `o₂` (64-bit) give the xoshiro state
 * `[low32(o₁), high32(o₁), low32(o₂), high32(o₂)]`. Seed 0 gives the state
 * `[0x7b1dcdaf, 0xe220a839, 0xa1b965f4, 0x6e789e6a]` and the outputs
 * 3737715805, 2584255861, 2876756834, 3286328325, … (checked against the
 * reference C code).
 *
 * Derived draws, also exact: {@linkcode Xoshiro128StarStar.below} maps a
 * 32-bit output `x` to `x mod n`, rejecting `x < 2³² mod n` (unbiased; the
 * rule of OpenBSD's `arc4random_uniform`); {@linkcode Xoshiro128StarStar.bits}
 * hands out an output's 32 bits from the most significant down.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Xoshiro128StarStar } from "./prng.ts";
 * const g = new Xoshiro128StarStar(0);
 * assert.deepEqual([g.nextUint32(), g.nextUint32(), g.nextUint32()], [3737715805, 2584255861, 2876756834]);
 * ```
 *
 * @module
 */

const MASK64 = (1n << 64n) - 1n;

/** One SplitMix64 step on a 64-bit state: the new state and the output. */
function splitMix64(state: bigint): { state: bigint; out: bigint } {
  const next = (state + 0x9e3779b97f4a7c15n) & MASK64;
  let z = next;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
  return { state: next, out: z ^ (z >> 31n) };
}

/**
 * The xoshiro128\*\* state (four 32-bit words) for a seed: the low and high
 * halves of the first two SplitMix64 outputs from the seed. Throws a
 * `RangeError` unless the seed is an integer in [0, 2⁶⁴) (a `number` must be
 * a safe integer).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { seedState } from "./prng.ts";
 * assert.deepEqual([...seedState(0)], [0x7b1dcdaf, 0xe220a839, 0xa1b965f4, 0x6e789e6a]);
 * ```
 */
export function seedState(seed: number | bigint): Uint32Array {
  let s: bigint;
  if (typeof seed === "bigint") s = seed;
  else if (Number.isSafeInteger(seed)) s = BigInt(seed);
  else throw new RangeError(`seed must be a safe integer or a bigint, got ${seed}`);
  if (s < 0n || s > MASK64) throw new RangeError(`seed must lie in [0, 2^64), got ${s}`);
  const a = splitMix64(s);
  const b = splitMix64(a.state);
  return new Uint32Array([
    Number(a.out & 0xffffffffn),
    Number(a.out >> 32n),
    Number(b.out & 0xffffffffn),
    Number(b.out >> 32n),
  ]);
}

/**
 * xoshiro128\*\* (see the module notes for the seeding and the derived draws).
 * Not for cryptography.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Xoshiro128StarStar } from "./prng.ts";
 * const a = new Xoshiro128StarStar(42);
 * const b = new Xoshiro128StarStar(42n);
 * assert.equal(a.nextUint32(), 1776835114);
 * assert.equal(b.nextUint32(), 1776835114);
 * assert.ok(a.below(10) < 10);
 * ```
 */
export class Xoshiro128StarStar {
  #s0: number;
  #s1: number;
  #s2: number;
  #s3: number;

  /** A generator seeded as the module notes say (default seed 0). */
  constructor(seed: number | bigint = 0) {
    const s = seedState(seed);
    this.#s0 = s[0] | 0;
    this.#s1 = s[1] | 0;
    this.#s2 = s[2] | 0;
    this.#s3 = s[3] | 0;
  }

  /**
   * The next 32-bit output, as an integer in [0, 2³²).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Xoshiro128StarStar } from "./prng.ts";
   * assert.equal(new Xoshiro128StarStar(1).nextUint32(), 1695105466);
   * ```
   */
  nextUint32(): number {
    const s1 = this.#s1;
    const x = Math.imul(s1, 5);
    const result = Math.imul((x << 7) | (x >>> 25), 9) >>> 0;
    const t = s1 << 9;
    this.#s2 ^= this.#s0;
    this.#s3 ^= s1;
    this.#s1 = s1 ^ this.#s2;
    this.#s0 ^= this.#s3;
    this.#s2 ^= t;
    this.#s3 = (this.#s3 << 11) | (this.#s3 >>> 21);
    return result;
  }

  /**
   * A uniform integer in [0, n) for an integer 1 ≤ n ≤ 2³²: outputs
   * `x < 2³² mod n` are rejected, then `x mod n` is returned.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Xoshiro128StarStar } from "./prng.ts";
   * const g = new Xoshiro128StarStar(0);
   * // 2³² mod 10 = 6, and 3737715805 ≥ 6: the first draw is 3737715805 mod 10.
   * assert.equal(g.below(10), 5);
   * ```
   */
  below(n: number): number {
    if (!Number.isInteger(n) || n < 1 || n > 4294967296) {
      throw new RangeError(`below(n) needs an integer 1 <= n <= 2^32, got ${n}`);
    }
    const reject = 4294967296 % n;
    for (;;) {
      const x = this.nextUint32();
      // x mod n exactly: x / n is off by less than 1/n, so its floor is right
      if (x >= reject) return x - Math.floor(x / n) * n;
    }
  }

  /**
   * Fills `out` with 0/1 coin flips: each 32-bit output gives 32 flips, its
   * most significant bit first; a call always starts a fresh output (so
   * `bits(out)` for `out.length = m` uses ⌈m/32⌉ outputs).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Xoshiro128StarStar } from "./prng.ts";
   * const flips = new Uint8Array(4);
   * new Xoshiro128StarStar(0).bits(flips);
   * // 3737715805 = 0b1101_1110_1100_…
   * assert.deepEqual([...flips], [1, 1, 0, 1]);
   * ```
   */
  bits(out: Uint8Array): Uint8Array {
    let w = 0;
    for (let i = 0; i < out.length; i++) {
      const k = i & 31;
      if (k === 0) w = this.nextUint32();
      out[i] = (w >>> (31 - k)) & 1;
    }
    return out;
  }
}
