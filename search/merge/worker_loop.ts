/**
 * A merge worker's work: {@linkcode serveMergeWorker} opens the dumps named
 * by its first message, then answers batches (sent to it, or, for workers
 * that plan by themselves, taken from a shared counter).
 *
 * @module
 */
import { type DumpSourceSync, openDumpSync } from "../../io/dump/reader_sync.ts";
import { squadQuestionParagraphs } from "../../io/squad_ids.ts";
import { batchesOf, type MergePlan, planMerge, SQUAD_OPTS } from "./plan.ts";
import {
  toWire,
  type WireError,
  type WorkerBatch,
  type WorkerInit,
  type WorkerReply,
} from "./protocol.ts";
import { simdDumpOptions } from "../kernels/simd.ts";
import { mergeBatch } from "./unit.ts";

/**
 * A planning worker's part (see {@linkcode WorkerInit.plan}): the first makes
 * the plan and hands it on; each answers batches until none are left.
 */
function answerAll(
  init: NonNullable<WorkerInit["plan"]>,
  dumps: { c: DumpSourceSync; q: DumpSourceSync; simd: boolean } | WireError,
  post: (m: WorkerReply) => void,
): void {
  if (!init.planner) {
    const port = init.ports[0];
    port.onmessage = (ev: MessageEvent<MergePlan | null>) => {
      port.close();
      if (ev.data !== null) answerBatches(init, ev.data, dumps, post);
    };
    return;
  }
  let plan: MergePlan | null = null;
  try {
    const q2c = squadQuestionParagraphs(Deno.readFileSync(init.dataset), SQUAD_OPTS);
    if (q2c !== undefined) plan = planMerge(q2c);
  } catch {
    // the main thread reads the dataset itself, and says what is wrong
  }
  post({ seq: -2, plan });
  for (const port of init.ports) {
    port.postMessage(plan);
    port.close();
  }
  if (plan !== null) answerBatches(init, plan, dumps, post);
}

function answerBatches(
  init: NonNullable<WorkerInit["plan"]>,
  plan: MergePlan,
  dumps: { c: DumpSourceSync; q: DumpSourceSync; simd: boolean } | WireError,
  post: (m: WorkerReply) => void,
): void {
  const batches = batchesOf(plan, init.batch, init.workers);
  const next = new Int32Array(init.counter);
  for (;;) {
    const b = Atomics.add(next, 0, 1);
    if (b >= batches.length) return;
    if ("tag" in dumps) {
      post({ seq: b, ok: [], err: dumps });
      continue;
    }
    try {
      const r = mergeBatch(dumps.c, dumps.q, batches[b], { simd: dumps.simd });
      post(r.err === undefined ? { seq: b, ok: r.ok } : { seq: b, ok: r.ok, err: toWire(r.err) });
    } catch (e) {
      post({ seq: b, ok: [], err: toWire(e) });
    }
  }
}

/**
 * The worker side: opens the dumps, then answers one batch per message (or
 * plans by itself, see {@linkcode WorkerInit.plan}). Call it once, in a
 * worker's entry module (`search/merge/worker.ts`).
 */
export function serveMergeWorker(): void {
  const scope = globalThis as unknown as {
    onmessage: ((ev: MessageEvent) => void) | null;
    postMessage(m: WorkerReply): void;
  };
  let dumps: { c: DumpSourceSync; q: DumpSourceSync; simd: boolean } | WireError | undefined;
  scope.onmessage = (ev) => {
    const msg = ev.data as { init: WorkerInit } | WorkerBatch;
    if ("init" in msg) {
      try {
        const { sparse, simd } = msg.init;
        dumps = {
          c: openDumpSync(msg.init.contextEmb, {
            sparse,
            reuseBuffers: true,
            ...(simd ? simdDumpOptions() : {}),
          }),
          q: openDumpSync(msg.init.questionEmb, { sparse }),
          simd,
        };
      } catch (e) {
        dumps = toWire(e);
      }
      scope.postMessage({ seq: -1, ready: true });
      if (msg.init.plan !== undefined) answerAll(msg.init.plan, dumps, (m) => scope.postMessage(m));
      return;
    }
    if (dumps === undefined || "tag" in dumps) {
      const err = dumps ?? toWire(new Error("not initialised"));
      scope.postMessage({ seq: msg.seq, ok: [], err });
      return;
    }
    try {
      const r = mergeBatch(dumps.c, dumps.q, msg.units, { simd: dumps.simd });
      scope.postMessage(
        r.err === undefined
          ? { seq: msg.seq, ok: r.ok }
          : { seq: msg.seq, ok: r.ok, err: toWire(r.err) },
      );
    } catch (e) {
      scope.postMessage({ seq: msg.seq, ok: [], err: toWire(e) });
    }
  };
}
