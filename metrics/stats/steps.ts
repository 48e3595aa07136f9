/**
 * Long statistics in steps: each resampling of this folder is also written
 * as a generator ({@linkcode Steps}) that does its work in order and pauses
 * (`yield`) after every {@linkcode STEP_WORK} or so elementary operations
 * (index draws, additions, comparisons). Run to its end at once
 * ({@linkcode runSteps}) it is the plain function; a caller that must stay
 * responsive (a command that has to notice SIGINT while it computes)
 * resumes it from its event loop and may stop resuming at any pause.
 *
 * Pausing changes nothing else: the generator draws the same numbers in the
 * same order and adds them in the same order, so a stepped result equals
 * the plain one to the bit.
 *
 * @example
 * ```ts
 * import { runSteps, type Steps } from "./steps.ts";
 * function* count(n: number): Steps<number> {
 *   let s = 0;
 *   for (let i = 0; i < n; i++) {
 *     s += i;
 *     yield;
 *   }
 *   return s;
 * }
 * if (runSteps(count(4)) !== 6) throw new Error();
 * ```
 *
 * @module
 */

/**
 * A computation in steps: `next()` runs it to its next pause (`done:
 * false`) or to its end (`done: true`, the result in `value`). A failure
 * is thrown from the `next()` that meets it.
 */
export type Steps<T> = Generator<void, T, undefined>;

/**
 * About how many elementary operations a step of this folder's generators
 * does between two pauses (2¹⁸: a millisecond or so).
 */
export const STEP_WORK = 1 << 18;

/**
 * Runs a computation in steps to its end without pausing and returns its
 * result (throws what it throws).
 *
 * @example
 * ```ts
 * import { runSteps } from "./steps.ts";
 * function* two() {
 *   yield;
 *   return 2;
 * }
 * if (runSteps(two()) !== 2) throw new Error();
 * ```
 */
export function runSteps<T>(steps: Steps<T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/**
 * `values` sorted ascending into a new array, in steps: up to
 * 2²⁰ values it is `values.slice().sort()` in one step; past that, runs of
 * 2²⁰ are each sorted so, then merged pairwise (a stable merge that orders
 * as the typed-array sort does, −0 before +0), pausing every
 * {@linkcode STEP_WORK} or so values. Either way the result is what
 * `values.slice().sort()` gives (finite values; NaN is not ordered here).
 *
 * @example
 * ```ts
 * import { runSteps, sortedSteps } from "./steps.ts";
 * const v = Float64Array.from({ length: 3_000_000 }, (_, i) => (i * 7919) % 1_000_003);
 * const a = runSteps(sortedSteps(v));
 * const b = v.slice().sort();
 * if (a.length !== b.length || a.some((x, i) => x !== b[i])) throw new Error();
 * ```
 */
export function* sortedSteps(values: Float64Array): Steps<Float64Array> {
  const m = values.length;
  const RUN = 1 << 20;
  let src = values.slice();
  if (m <= RUN) {
    src.sort();
    return src;
  }
  for (let lo = 0; lo < m; lo += RUN) {
    src.subarray(lo, Math.min(m, lo + RUN)).sort();
    yield;
  }
  let dst = new Float64Array(m);
  for (let width = RUN; width < m; width *= 2) {
    for (let lo = 0; lo < m; lo += 2 * width) {
      const mid = Math.min(m, lo + width);
      const hi = Math.min(m, lo + 2 * width);
      const st = { i: lo, j: mid, k: lo };
      while (st.k < hi) {
        mergeSome(src, dst, st, mid, hi, STEP_WORK);
        yield;
      }
    }
    [src, dst] = [dst, src];
  }
  return src;
}

/** Whether `y` sorts before `x` as a typed-array sort orders them (−0 before +0). */
const before = (y: number, x: number): boolean =>
  y < x || (y === 0 && x === 0 && Object.is(y, -0) && !Object.is(x, -0));

/**
 * Merges at most `limit` values of the sorted runs `src[i..mid)` and
 * `src[j..hi)` into `dst` at `k` (stable: the left run first on ties),
 * advancing `st`.
 */
function mergeSome(
  src: Float64Array,
  dst: Float64Array,
  st: { i: number; j: number; k: number },
  mid: number,
  hi: number,
  limit: number,
): void {
  let { i, j, k } = st;
  const end = Math.min(hi, k + limit);
  while (k < end) {
    if (i < mid && (j >= hi || !before(src[j], src[i]))) dst[k++] = src[i++];
    else dst[k++] = src[j++];
  }
  st.i = i;
  st.j = j;
  st.k = k;
}
