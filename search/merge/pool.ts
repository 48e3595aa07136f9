/**
 * The one pool of merge workers ({@linkcode workerPool}) and the in-thread
 * runner it falls back on ({@linkcode inThread}): batches of paragraphs go to
 * the least busy worker that is ready, until one is, to this thread. The
 * threads are `search/workers.ts`'s {@linkcode WorkerThreads}; `merge`
 * holds the pool in a scope that ends them (`search/scoped_workers.ts`).
 *
 * @module
 */
import type { DumpSourceSync } from "../../io/dump/reader_sync.ts";
import type { ScoringOptions } from "./best_rows.ts";
import { WORKER_NAME } from "./plan.ts";
import {
  fromReply,
  MergeWorkerError,
  type Reply,
  type UnitRunner,
  type WorkerBatch,
  type WorkerInit,
  type WorkerReply,
} from "./protocol.ts";
import { mergeBatch } from "./unit.ts";
import { WorkerThreads } from "../workers.ts";

/**
 * Runs batches in this thread, on the dumps `c` and `q`.
 *
 * @example
 * ```ts
 * import { openDumpSync } from "../../io/dump/reader_sync.ts";
 * import { inThread } from "./pool.ts";
 * const dir = Deno.makeTempDirSync();
 * const runner = inThread(openDumpSync(dir), openDumpSync(dir), {});
 * const r = await runner.run([{ cid: "T_0", qids: ["q1"], slots: [0] }]);
 * if (r.ok[0][0].missing === undefined) throw new Error("the question has no file");
 * Deno.removeSync(dir);
 * ```
 */
export function inThread(
  c: DumpSourceSync,
  q: DumpSourceSync,
  options: ScoringOptions,
): UnitRunner {
  return { run: (units) => Promise.resolve(mergeBatch(c, q, units, options)), close() {} };
}

/**
 * `n` workers opened on the dumps of `init`: batches of paragraphs go to the
 * least busy worker that is ready; until one is (they take a moment to
 * load), to `local` in this thread.
 */
export function workerPool(n: number, init: WorkerInit, local: UnitRunner): UnitRunner {
  const waiting = new Map<number, (r: Reply) => void>();
  const load = new Array<number>(n).fill(0);
  const ready = new Array<boolean>(n).fill(false);
  // After a paragraph done here, let the event loop run (a worker may have said it
  // is ready): a message through a channel is a task without setTimeout's delay.
  const channel = new MessageChannel();
  const ticks: (() => void)[] = [];
  channel.port1.onmessage = () => ticks.shift()?.();
  const tick = () =>
    new Promise<void>((resolve) => {
      ticks.push(resolve);
      channel.port2.postMessage(null);
    });
  const owner = new Map<number, number>();
  let seq = 0;
  const workers = new WorkerThreads(new URL("./worker.ts", import.meta.url), n, {
    name: WORKER_NAME,
    first: () => ({ message: { init } }),
    onMessage(i, data) {
      const r = data as WorkerReply;
      if ("ready" in r) {
        ready[i] = true;
        return;
      }
      if (!("ok" in r)) return;
      const resolve = waiting.get(r.seq);
      waiting.delete(r.seq);
      owner.delete(r.seq);
      load[i]--;
      resolve?.(fromReply(r));
    },
    onError(i, message) {
      const err = new MergeWorkerError(`merge worker failed: ${message}`);
      for (const [s, resolve] of waiting) {
        if (owner.get(s) === i) {
          waiting.delete(s);
          resolve({ ok: [], err });
        }
      }
    },
  });
  return {
    run(units) {
      let best = -1;
      for (let i = 0; i < n; i++) if (ready[i] && (best < 0 || load[i] < load[best])) best = i;
      if (best < 0) return local.run(units).then(async (r) => (await tick(), r));
      const s = seq++;
      load[best]++;
      owner.set(s, best);
      return new Promise<Reply>((resolve) => {
        waiting.set(s, resolve);
        const msg: WorkerBatch = {
          seq: s,
          units: units.map((u) => ({ cid: u.cid, qids: u.qids })),
        };
        workers.post(best, msg);
      });
    },
    close() {
      channel.port1.close();
      channel.port2.close();
      workers.close();
    },
  };
}
