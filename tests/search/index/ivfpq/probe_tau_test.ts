/**
 * Adaptive probing (`IvfQueryOptions.probeTau`, `fastscan.ts` `cutLists`):
 * of a question's `nprobe` best lists, the ones whose probing score is within
 * `tau · ‖q‖ · mean‖c‖` of the best one's. The rule against a reference
 * written from its definition; and on 4-bit and 8-bit indexes (ip, l2) a
 * question's answers with `probeTau` are the answers of `nprobe` = the count
 * of lists the reference keeps for it (the lists are a prefix of the best
 * lists), the same on 1, 2 threads, screened or not, in the TypeScript scan.
 */
import {
  bestLists,
  cutLists,
  meanNorm,
  screenedLists,
  tauSlack,
} from "../../../../search/index/ivfpq/fastscan.ts";
import { probeScores } from "../../../../search/kernels/wasm_probe.ts";
import { loadIvf } from "../../../../search/index/ivfpq/ivfpq.ts";
import {
  closeIvfWorkers,
  scoreIvf,
  scoreIvfSync,
} from "../../../../search/index/ivfpq/ivf_search.ts";
import { splitmix32 } from "../../../../search/index/ivfpq/kmeans.ts";
import { openIndexSync } from "../../../../search/index/read.ts";
import { InputError } from "../../../../io/errors.ts";
import { assert, assertEquals } from "../../../_assert.ts";
import { runStage } from "../../../_util.ts";
import { bytes, clusteredDump } from "./_clustered.ts";

const gauss = (u: () => number) => () => {
  const a = (u() + 1) / 4294967297, b = u() / 4294967296;
  return Math.sqrt(-2 * Math.log(a)) * Math.cos(2 * Math.PI * b);
};

/** The kept lists by the definition: all lists sorted, the first `nprobe`, those within the floor. */
function reference(
  qc: Float64Array,
  q: Float32Array,
  c: Float32Array,
  d: number,
  nprobe: number,
  tau: number,
): number[] {
  const nlist = qc.length;
  const order = Array.from({ length: nlist }, (_, i) => i)
    .sort((a, b) => qc[b] - qc[a] || a - b).slice(0, nprobe);
  let norms = 0;
  for (let l = 0; l < nlist; l++) {
    let t = 0;
    for (let i = 0; i < d; i++) t += c[l * d + i] * c[l * d + i];
    norms += Math.sqrt(t);
  }
  let qq = 0;
  for (let i = 0; i < d; i++) qq += q[i] * q[i];
  const floor = qc[order[0]] - tau * Math.sqrt(qq) * (norms / nlist);
  const kept = [order[0]];
  for (let i = 1; i < order.length && qc[order[i]] >= floor; i++) kept.push(order[i]);
  return kept;
}

Deno.test("cutLists: the best list and the following ones within tau · ‖q‖ · mean‖c‖ of it, as the rule's definition keeps them (ties, one list, every list)", () => {
  const u = splitmix32(17), g = gauss(u);
  for (let trial = 0; trial < 300; trial++) {
    const d = 1 + (trial % 7), nlist = 1 + (trial % 23);
    const c = Float32Array.from({ length: nlist * d }, g);
    const q = Float32Array.from({ length: d }, g);
    // Coarse scores: ties decided by the lower list.
    const qc = Float64Array.from({ length: nlist }, () => Math.round(4 * g()) / 4);
    const data = { centroids: c, nlist };
    const nprobe = 1 + (trial % nlist);
    for (const tau of [1e-12, 0.05, 0.3, 1, 1e12]) {
      const got = cutLists(data, d, q, bestLists(qc, nprobe), qc, { nprobe, tau });
      assertEquals(got, reference(qc, q, c, d, nprobe, tau), `trial ${trial} tau ${tau}`);
    }
    // A plain count, or no tau: the best lists as they are.
    const best = bestLists(qc, nprobe);
    assertEquals(cutLists(data, d, q, best, qc, nprobe), best);
    assertEquals(cutLists(data, d, q, best, qc, { nprobe }), best);
  }
  // The mean length: √(1) and √(0.36 + 0.64) and √4, over 3.
  const m = meanNorm({ centroids: new Float32Array([1, 0, 0.6, 0.8, 0, 2]), nlist: 3 }, 2);
  assertEquals(m, (1 + Math.sqrt(Math.fround(0.6) ** 2 + Math.fround(0.8) ** 2) + 2) / 3);
});

Deno.test("probeTau: each question's answers are those of nprobe = the lists the rule keeps for it, on 4-bit and 8-bit indexes (ip, l2), on 1 and 2 threads, screened or not; a bad tau is refused", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-tau-" });
  try {
    const queries = await clusteredDump(`${tmp}/c`, 120, 40);
    const d = 32, nlist = 64, nprobe = 8;
    for (
      const [name, flags] of [
        ["ip4", ["--pq-bits", "4", "--bpv", "8"]],
        ["l24", ["--pq-bits", "4", "--bpv", "8", "--metric", "l2"]],
        ["ip8", ["--bpv", "8"]],
      ] as const
    ) {
      const r = await runStage("pipeline/index.ts", [
        `${tmp}/c`,
        `${tmp}/${name}`,
        ...["--nlist", String(nlist), ...flags],
      ]);
      assertEquals(r.code, 0, r.stderr);
      const ix = openIndexSync(`${tmp}/${name}`);
      const data = loadIvf(ix), l2 = ix.header.metric === "l2";
      const counts = new Set<number>();
      for (const tau of [0.05, 0.15, 0.4]) {
        const opts = { topK: 10, nprobe, probeTau: tau, refine: 20 };
        const got = scoreIvfSync(ix, queries, opts);
        for (let j = 0; j < queries.length; j++) {
          const q = queries[j], qc = new Float64Array(nlist);
          for (let l = 0; l < nlist; l++) {
            let s = 0;
            for (let t = 0; t < d; t++) {
              const x = data.centroids[l * d + t];
              s += l2 ? -((q[t] - x) * (q[t] - x)) : q[t] * x;
            }
            qc[l] = s;
          }
          const kept = reference(qc, q, data.centroids, d, nprobe, tau).length;
          counts.add(kept);
          const want = scoreIvfSync(ix, [q], { topK: 10, nprobe: kept, refine: 20 });
          assertEquals(bytes([got[j]]), bytes(want), `${name} tau ${tau} question ${j}`);
        }
        // Not screened (the TypeScript scan), and on 2 threads: the same answers.
        assertEquals(bytes(scoreIvfSync(ix, queries, { ...opts, simd: false })), bytes(got));
        assertEquals(bytes(await scoreIvf(ix, queries, { ...opts, threads: 2 })), bytes(got));
        closeIvfWorkers(ix);
      }
      // The taus cut the lists to several different counts, not all nprobe nor all one.
      assert(counts.size >= 3 && [...counts].some((n) => n > 1 && n < nprobe), [...counts].join());
      for (const bad of [0, -0.1, NaN, Infinity]) {
        let caught: unknown;
        try {
          scoreIvfSync(ix, queries, { nprobe, probeTau: bad });
        } catch (e) {
          caught = e;
        }
        assert(
          caught instanceof InputError &&
            /--probe-tau must be a number above 0/.test(caught.message),
        );
      }
    }
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("probeTau in the list screen: the lists sure to be cut are neither kept nor scored, and the lists kept and their scores are the float64 probe's (ip, l2, ties, near lists)", () => {
  const u = splitmix32(29), g = gauss(u);
  let scored = 0, scoredAll = 0, trials = 0;
  for (let trial = 0; trial < 120; trial++) {
    const d = 8 * (2 + (trial % 5)), nlist = 64 + 37 * (trial % 6), l2 = trial % 3 === 2;
    // Clustered centroids (near lists), a few of them copies of another (ties).
    const centers = Array.from({ length: 6 }, () => Float32Array.from({ length: d }, g));
    const c = new Float32Array(nlist * d);
    for (let l = 0; l < nlist; l++) {
      const from = l % 9 === 8 ? l - 3 : -1, k = centers[l % 6];
      for (let t = 0; t < d; t++) {
        c[l * d + t] = from >= 0 ? c[from * d + t] : k[t] + 0.3 * g();
      }
    }
    const data = { centroids: c, nlist };
    const q = Float32Array.from({ length: d }, (_, t) => centers[trial % 6][t] + 0.5 * g());
    const qc = new Float64Array(nlist);
    probeScores(q, c, nlist, d, l2, qc);
    const nprobe = 2 + (trial % 7);
    for (const tau of [1e-9, 0.02, 0.1, 0.4, 5]) {
      const p = { nprobe, tau };
      const want = cutLists(data, d, q, bestLists(qc, nprobe), qc, p);
      const all = screenedLists(data, d, l2, q, nprobe);
      const got = screenedLists(
        data,
        d,
        l2,
        q,
        nprobe,
        undefined,
        undefined,
        tauSlack(data, d, q, tau),
      );
      if (all === undefined || got === undefined) continue; // (the screen stepped aside)
      trials++;
      const kept = cutLists(data, d, q, got.lists, got.qc, p);
      assertEquals(kept, want, `trial ${trial} tau ${tau}`);
      for (const l of kept) assertEquals(got.qc[l], qc[l]);
      const n = (x: Float64Array) => x.filter((v) => v === v).length;
      assert(n(got.qc) <= n(all.qc) && n(got.qc) >= kept.length);
      scored += n(got.qc);
      scoredAll += n(all.qc);
    }
  }
  // The screen ran, and the slack spared float64 scores.
  assert(trials > 300, String(trials));
  assert(scored < 0.8 * scoredAll, `${scored} of ${scoredAll}`);
});
