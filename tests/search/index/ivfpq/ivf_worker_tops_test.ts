/**
 * The 4-bit IVF-PQ search on worker threads that re-score in the workers
 * (`search/index/ivfpq/ivfpq.ts`: an IVF-PQ index's vectors are read into shared
 * memory, the workers take candidates and exact re-scoring, `ivfTopsPacked` /
 * `unpackTops`): 1, 2 and 3 threads give the same rows and the same score bytes
 * as this thread, and as the path where the workers return candidates only (the
 * vectors not shared) and as the vectors in a plain `SharedArrayBuffer` (rows
 * copied, where the index's own lie in a `WebAssembly.Memory` and are read in
 * place); the packed answers give back the same `TopK`s.
 */
import type { IvfIndexView } from "../../../../search/index/ivfpq/ivfpq.ts";
import {
  closeIvfWorkers,
  ivfTopsPacked,
  scoreIvf,
  scoreIvfSync,
  unpackTops,
} from "../../../../search/index/ivfpq/ivf_search.ts";
import { rowsMemoryOf } from "../../../../search/kernels/wasm_gather.ts";
import { openIndexSync } from "../../../../search/index/read.ts";
import { NonFiniteError } from "../../../../search/index/exact/score.ts";
import { assert, assertEquals, assertRejectsWith } from "../../../_assert.ts";
import { runStage } from "../../../_util.ts";
import { bytes, clusteredDump } from "./_clustered.ts";

Deno.test("4-bit ivf-pq: re-scoring in the workers (shared vectors) gives 1 thread's rows and score bytes on 2 and 3 threads, as the candidates-only path does (ip, l2)", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-pq4w-" });
  try {
    const queries = await clusteredDump(`${tmp}/c`, 110, 70);
    for (const metric of ["ip", "l2"]) {
      const r = await runStage("pipeline/index.ts", [
        `${tmp}/c`,
        `${tmp}/${metric}`,
        ...["--nlist", "10", "--bpv", "8", "--pq-bits", "4", "--metric", metric],
      ]);
      assertEquals(r.code, 0, r.stderr);
      const ix = openIndexSync(`${tmp}/${metric}`);
      // The vectors of an IVF-PQ index lie in shared memory: the workers re-score.
      assert(ix.dense !== undefined && ix.dense.buffer instanceof SharedArrayBuffer);
      assert(ix.dense instanceof Uint16Array);
      // … in a WebAssembly.Memory, sent to the workers: the rows re-scored where they lie.
      assert(rowsMemoryOf(ix.dense.buffer) !== undefined, "the vectors in a WebAssembly.Memory");
      // The same vectors in a plain SharedArrayBuffer: re-scored in the workers from copies.
      const sab = new Uint16Array(new SharedArrayBuffer(ix.dense.byteLength));
      sab.set(ix.dense);
      const plain: IvfIndexView = { dir: ix.dir, header: ix.header, dense: sab };
      assertEquals(rowsMemoryOf(sab.buffer), undefined);
      // The same index with its vectors in this thread's memory only: candidates-only workers.
      const own: IvfIndexView = { dir: ix.dir, header: ix.header, dense: ix.dense.slice() };
      assert(!(own.dense!.buffer instanceof SharedArrayBuffer));
      for (
        const opts of [
          { nprobe: 2, refine: 30 },
          { nprobe: 5, refine: 100 },
          { nprobe: 10, refine: 5 },
          { nprobe: 3 },
        ]
      ) {
        const one = scoreIvfSync(ix, queries, { topK: 10, ...opts });
        assert(one.every((t) => t.rows.length === 10));
        for (const threads of [2, 3]) {
          const w = await scoreIvf(ix, queries, { topK: 10, threads, ...opts });
          assertEquals(
            bytes(w),
            bytes(one),
            `${metric} ${threads} threads ${JSON.stringify(opts)}`,
          );
          const c = await scoreIvf(own, queries, { topK: 10, threads, ...opts });
          assertEquals(bytes(c), bytes(one), `${metric} candidates-only ${threads} threads`);
          const p = await scoreIvf(plain, queries, { topK: 10, threads, ...opts });
          assertEquals(bytes(p), bytes(one), `${metric} plain shared buffer ${threads} threads`);
          assertEquals(bytes(scoreIvfSync(plain, queries, { topK: 10, ...opts })), bytes(one));
          closeIvfWorkers(ix);
          closeIvfWorkers(own);
          closeIvfWorkers(plain);
        }
        // Fewer questions than threads, and one question.
        const few = await scoreIvf(ix, queries.slice(0, 2), { topK: 10, threads: 3, ...opts });
        assertEquals(bytes(few), bytes(one.slice(0, 2)));
        closeIvfWorkers(ix);
      }
      // A piece that fails in a worker (a NaN in the vectors, put there after the index was
      // checked) fails the search with the scorer's own error (NonFiniteError), every time.
      const nan = new Uint16Array(new SharedArrayBuffer(ix.dense.byteLength)).fill(0x7e00);
      const bad: IvfIndexView = { dir: ix.dir, header: ix.header, dense: nan };
      let caught: unknown;
      await scoreIvf(bad, queries, { topK: 10, nprobe: 3, refine: 20, threads: 2 }).catch((e) =>
        caught = e
      );
      assert(caught instanceof NonFiniteError, String(caught));
      await assertRejectsWith(
        scoreIvf(bad, queries, { topK: 10, nprobe: 3, refine: 20, threads: 2 }),
        "row",
      );
      // Three calls at once (more pieces than workers, some waiting in the queue): each fails
      // with the scorer's error, none hangs; the next call fails the same way.
      const three = await Promise.allSettled(
        [0, 1, 2].map((c) =>
          scoreIvf(bad, queries.slice(20 * c, 20 * c + 30), {
            topK: 10,
            nprobe: 3,
            refine: 20,
            threads: 2,
          })
        ),
      );
      for (const r of three) {
        assert(r.status === "rejected" && r.reason instanceof NonFiniteError, String(r));
      }
      await assertRejectsWith(
        scoreIvf(bad, queries, { topK: 10, nprobe: 3, refine: 20, threads: 2 }),
        "row",
      );
      closeIvfWorkers(bad);
      // An error in a worker (a candidate heap too large to allocate) fails the pool: the pieces
      // still waiting fail with that same error, unsent (so none waits on a worker that may be
      // gone), and the next call starts new workers: 1 thread's answers. (Four calls in one
      // turn: the first two go one to a worker whole, the last two wait.)
      const huge = await Promise.allSettled(
        [0, 1, 2, 3].map(() =>
          scoreIvf(ix, queries, { topK: 10, nprobe: 3, refine: 2 ** 31, threads: 2 })
        ),
      );
      assert(huge.every((r) => r.status === "rejected"), JSON.stringify(huge.map((r) => r.status)));
      const [, , r2, r3] = huge as PromiseRejectedResult[];
      assert(r2.reason instanceof Error && r2.reason === r3.reason, String(r3.reason));
      // The good index's pool, used again after those failures: 1 thread's answers.
      const again = await scoreIvf(ix, queries, { topK: 10, nprobe: 3, refine: 20, threads: 2 });
      assertEquals(
        bytes(again),
        bytes(scoreIvfSync(ix, queries, { topK: 10, nprobe: 3, refine: 20 })),
      );
      closeIvfWorkers(ix);
      // The packed answers give back TopKs with the same kept pairs, order and threshold.
      const p = ivfTopsPacked(ix, queries, 4, 40, true, 10, 40);
      const back = unpackTops(p, 10),
        want = scoreIvfSync(ix, queries, {
          topK: 10,
          nprobe: 4,
          refine: 40,
        });
      assertEquals(bytes(back), bytes(want));
      assertEquals(back.map((t) => t.threshold), want.map((t) => t.threshold));
      // Packed best first: each question's pairs as its TopK gives them.
      for (let j = 0; j < queries.length; j++) {
        assertEquals([...p.rows.subarray(p.at[j], p.at[j + 1])], want[j].rows);
        assertEquals([...p.scores.subarray(p.at[j], p.at[j + 1])], want[j].scores);
      }
    }
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});
