/**
 * Input checks shared by the resampling tests of this folder.
 *
 * @module
 */

/**
 * Checks that every system scores the same number (≥ 1) of questions with
 * finite scores, and returns copies as `Float64Array`s; throws a
 * `RangeError` naming the system and index otherwise.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { scoresOf } from "./_scores.ts";
 * assert.deepEqual(scoresOf([[1, 0], [0.5, 1]]).map((x) => [...x]), [[1, 0], [0.5, 1]]);
 * assert.throws(() => scoresOf([[1, 0], [1]]), RangeError);
 * ```
 */
export function scoresOf(systems: readonly ArrayLike<number>[]): Float64Array[] {
  if (systems.length === 0) throw new RangeError("no systems given");
  const n = systems[0].length;
  if (n === 0) throw new RangeError("no questions given");
  return systems.map((xs, s) => {
    if (xs.length !== n) {
      throw new RangeError(`system ${s} scores ${xs.length} questions, system 0 scores ${n}`);
    }
    const out = Float64Array.from(xs);
    for (let i = 0; i < n; i++) {
      if (!Number.isFinite(out[i])) {
        throw new RangeError(`system ${s}'s score at index ${i} is ${xs[i]}, not a finite number`);
      }
    }
    return out;
  });
}

/**
 * Checks `resamples` and `percentiles` as `pairedBootstrap` (`bootstrap.ts`) does
 * (a `RangeError` otherwise) and returns them, with the seed, defaults
 * filled in (B = 1000, seed 0, percentiles [2.5, 97.5]).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bootstrapSettings } from "./_scores.ts";
 * assert.deepEqual(bootstrapSettings({}), { B: 1000, seed: 0, pct: [2.5, 97.5] });
 * assert.throws(() => bootstrapSettings({ resamples: 0 }), RangeError);
 * ```
 */
export function bootstrapSettings(
  opts: {
    readonly resamples?: number;
    readonly seed?: number | bigint;
    readonly percentiles?: readonly [number, number];
  },
): { B: number; seed: number | bigint; pct: readonly [number, number] } {
  const B = opts.resamples ?? 1000;
  const seed = opts.seed ?? 0;
  const pct = opts.percentiles ?? [2.5, 97.5];
  if (!Number.isSafeInteger(B) || B < 1) {
    throw new RangeError(`resamples must be a positive integer, got ${B}`);
  }
  for (const p of pct) {
    if (!(p >= 0 && p <= 100)) throw new RangeError(`percentiles must lie in [0, 100], got ${p}`);
  }
  return { B, seed, pct: [pct[0], pct[1]] };
}
