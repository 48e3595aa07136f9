/**
 * Tests of the merge's worker threads (`search/merge/pool.ts`,
 * `search/merge/early.ts`, on `search/workers.ts`'s `WorkerThreads`, held by
 * `search/scoped_workers.ts`): `merge` holds its workers in a scope, so that
 * every worker it started (counted by a `Worker` that records its own
 * termination) has ended when it returns, when a worker's batch fails, and
 * when workers started early are not the ones it needs; the predictions are
 * the in-thread run's, byte for byte.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import { EarlyPool } from "../../../search/merge/early.ts";
import { merge } from "../../../search/merge/merge.ts";
import { assert, assertEquals } from "../../_assert.ts";
import { countingWorkers, numpyDumps } from "../_stages.ts";

/** Runs `f` counting the workers started and ended ({@linkcode countingWorkers}). */
const counted = <A>(f: () => Promise<A>) =>
  countingWorkers(async (live) => ({ value: await f(), ...live() }));

Deno.test("merge workers: the scope ends every worker, on success, failure and unused early ones", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-merge-workers-" });
  try {
    // 20 paragraphs: enough for merge to use its workers (16 or more).
    await numpyDumps(tmp, 20);
    const base = {
      data: `${tmp}/data.json`,
      contextEmb: `${tmp}/context_emb`,
      questionEmb: `${tmp}/question_emb`,
      onMissing: () => {},
    };
    const inThread = await Effect.runPromise(
      merge({ ...base, predictions: `${tmp}/one.json`, workers: 0 }),
    );
    assertEquals(inThread.workers, 0);
    assertEquals(inThread.paragraphs, 20);

    const two = await counted(() =>
      Effect.runPromise(merge({ ...base, predictions: `${tmp}/two.json`, workers: 2 }))
    );
    assertEquals(two.value.workers, 2);
    assertEquals([two.started, two.ended], [2, 2]);
    assertEquals(
      Deno.readTextFileSync(`${tmp}/two.json`),
      Deno.readTextFileSync(`${tmp}/one.json`),
    );
    assertEquals(two.value.answered, inThread.answered);

    // Workers started early for other options: merge stops them and starts its own.
    const early = await counted(() =>
      Effect.runPromise(
        merge({
          ...base,
          predictions: `${tmp}/early.json`,
          workers: 2,
          early: new EarlyPool({
            data: base.data,
            contextEmb: base.contextEmb,
            questionEmb: base.questionEmb,
            sparse: false,
            simd: true,
            workers: 3,
            batch: 1,
          }),
        }),
      )
    );
    assertEquals([early.started, early.ended], [5, 5]);
    assertEquals(
      Deno.readTextFileSync(`${tmp}/early.json`),
      Deno.readTextFileSync(`${tmp}/one.json`),
    );

    // A paragraph's dump that is not an archive: a worker's batch fails, merge fails
    // with the file's name, and every worker has ended; no prediction file is left.
    const last = [...Deno.readDirSync(`${tmp}/context_emb`)]
      .map((e) => e.name).filter((n) => n.endsWith(".npz")).sort().at(-1)!;
    Deno.writeFileSync(`${tmp}/context_emb/${last}`, new TextEncoder().encode("not a zip"));
    const failed = await counted(() =>
      Effect.runPromiseExit(merge({ ...base, predictions: `${tmp}/bad.json`, workers: 2 }))
    );
    assert(Exit.isFailure(failed.value));
    assert(String(failed.value.cause).includes(last), String(failed.value.cause));
    assertEquals([failed.started, failed.ended], [2, 2]);
    assertEquals([...Deno.readDirSync(tmp)].some((e) => e.name === "bad.json"), false);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});
