/**
 * Tests of `search/open/phrase_index.ts`: the {@linkcode PhraseIndex} Layer opens
 * an index, the searches run inside it start their worker threads (IVF-PQ
 * list scans on 2 threads), and closing the Layer's scope ends every one of
 * them (counted by a `Worker` that records its own termination) and the
 * answers are those of the index searched without the Layer; a folder that
 * is not an index fails the Layer with the reader's one line.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import { scoreIvf } from "../../../search/index/ivfpq/ivf_search.ts";
import { splitmix32 } from "../../../search/index/ivfpq/kmeans.ts";
import { openIndexSync } from "../../../search/index/read.ts";
import { PhraseIndex, PhraseIndexLive, releaseIndex } from "../../../search/open/phrase_index.ts";
import { assert, assertEquals } from "../../_assert.ts";
import { countingWorkers, numpyDumps, smallIvfIndex } from "../_stages.ts";

Deno.test("PhraseIndex: the Layer's close ends the workers its searches started, same answers", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-phrase-index-" });
  try {
    await numpyDumps(tmp, 12);
    const ix = `${tmp}/ivf`;
    await smallIvfIndex(tmp, ix);
    const u = splitmix32(3);
    const qs = Array.from(
      { length: 7 },
      () => Float32Array.from({ length: 32 }, () => u() / 2 ** 32 - 0.5),
    );
    const opts = { topK: 5, nprobe: 3, threads: 2 };
    // The answers without the Layer (released by hand).
    const bare = openIndexSync(ix);
    const want = (await scoreIvf(bare, qs, opts)).map((t) => [t.rows, t.scores]);
    releaseIndex(bare);
    assert(want.every((w) => (w[0] as number[]).length === 5));

    const { got, during, after } = await countingWorkers(async (live) => {
      let during = { started: 0, ended: 0 };
      const search = Effect.gen(function* () {
        const { dir, index } = yield* PhraseIndex;
        assertEquals(dir, ix);
        const tops = yield* Effect.promise(() => scoreIvf(index, qs, opts));
        during = live();
        return tops.map((t) => [t.rows, t.scores]);
      });
      const got = await Effect.runPromise(Effect.provide(search, PhraseIndexLive(ix)));
      return { got, during, after: live() };
    });
    assertEquals(got, want);
    // On 2 threads two list-scan workers answer the pieces (this thread hands them out): they
    // ran inside the Layer, did not end before it closed, and ended after.
    assertEquals(during, { started: 2, ended: 0 });
    assertEquals(after, { started: 2, ended: 2 });

    // A failure inside the Layer ends them all the same.
    const failed = await countingWorkers(async (live) => {
      const search = Effect.gen(function* () {
        const { index } = yield* PhraseIndex;
        yield* Effect.promise(() => scoreIvf(index, qs, opts));
        return yield* Effect.fail("stopped");
      });
      const exit = await Effect.runPromiseExit(Effect.provide(search, PhraseIndexLive(ix)));
      return { exit, counts: live() };
    });
    assert(Exit.isFailure(failed.exit), "the failure is the program's");
    assertEquals(failed.counts, { started: 2, ended: 2 });

    // Not an index: the Layer fails with the reader's line, and opens nothing.
    const exit = await Effect.runPromiseExit(
      Effect.provide(Effect.void, PhraseIndexLive(`${tmp}/context_emb`)),
    );
    assert(Exit.isFailure(exit));
    assert(String(exit.cause).includes("context_emb"), String(exit.cause));
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});
