/**
 * The 4-bit fast scan (`fastscan.ts`) over lists read a slice at a time:
 * an index read on demand under a memory budget (`search/index/disk.ts`),
 * whose lists come one slice (whole blocks of 32 rows) at a time into a
 * staging area, not as one codes array.
 *
 * Each slice is handed to the unchanged scan functions
 * ({@linkcode ivf4Candidates}, {@linkcode ivf4CandidatesBatch}) as an index of
 * one list: its `n` rows (`offsets` `[0, n]`), the slice's global rows,
 * the staging area's codes (and memory, for the kernel), the list's
 * centroid, and each question's `q · c_l` as that one list's. A row's
 * tables, integer sum and approximate score are the ones the whole index
 * gives it (the tables depend on the question, the codebooks and, for `l2`,
 * the list's centroid only), and the candidates kept are the best `cap`
 * by (score, row) whatever the order rows are offered in (`fastscan.ts`),
 * so the candidates are those of the in-memory search.
 *
 * @module
 */
import {
  type CandidateSink,
  ivf4Candidates,
  ivf4CandidatesBatch,
  type Ivf4Data,
} from "./fastscan.ts";

/** The lists of an index read a slice at a time. */
export interface Ivf4Slices {
  /**
   * The index's data: lists, bytes per vector, centroids, codebooks,
   * offsets; `codes` (and `memory`) the staging area a slice is read into.
   */
  readonly data: Ivf4Data;
  /** The most rows of a slice, a multiple of 32. */
  readonly sliceRows: number;
  /**
   * Reads rows `from … from + n` of list `l` (`from` a multiple of 32):
   * their codes' blocks to the start of the staging area; their global rows.
   */
  list(l: number, from: number, n: number): Uint32Array;
}

/**
 * Offers the approximate candidates of each question `qs[j]` (probing
 * `probes[j].lists`, `probes[j].qc[l]` = `q · c_l`) to `cands[j]`, list by
 * list and slice by slice (see the module notes): the candidates the
 * in-memory scan keeps. `kernel` false: the TypeScript scan (the same sums).
 */
export function ivf4CandidatesSliced(
  s: Ivf4Slices,
  d: number,
  l2: boolean,
  qs: readonly Float32Array[],
  probes: readonly { readonly lists: readonly number[]; readonly qc: Float64Array }[],
  cands: readonly CandidateSink[],
  kernel = true,
): void {
  const data = s.data;
  const byList: number[][] = Array.from({ length: data.nlist }, () => []);
  probes.forEach((p, j) => {
    for (const l of p.lists) byList[l].push(j);
  });
  for (let l = 0; l < data.nlist; l++) {
    const all = data.offsets[l + 1] - data.offsets[l], js = byList[l];
    if (all === 0 || js.length === 0) continue;
    const centroids = data.centroids.subarray(l * d, (l + 1) * d);
    const one = js.map((j) => ({ lists: [0], qc: Float64Array.of(probes[j].qc[l]) }));
    for (let from = 0; from < all; from += s.sliceRows) {
      const n = Math.min(s.sliceRows, all - from);
      const rows = s.list(l, from, n);
      // A new object a slice: the scan caches its block starts per data object.
      const view: Ivf4Data = {
        nlist: 1,
        bpv: data.bpv,
        centroids,
        codebooks: data.codebooks,
        offsets: Float64Array.of(0, n),
        rows,
        codes: data.codes,
        ...(data.memory !== undefined ? { memory: data.memory } : {}),
      };
      const batched = kernel && js.length >= 2 &&
        ivf4CandidatesBatch(view, d, l2, js.map((j) => qs[j]), one, js.map((j) => cands[j]));
      if (!batched) {
        js.forEach((j, i) => ivf4Candidates(view, d, l2, qs[j], [0], one[i].qc, cands[j], kernel));
      }
    }
  }
}
