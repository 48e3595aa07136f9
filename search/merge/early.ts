/**
 * Merge workers started before the stage has loaded ({@linkcode EarlyPool}):
 * `pipeline/merge.ts` starts them first thing when it runs as a command.
 * While the main thread goes on loading the stage (Effect, the CLI, ~70 ms),
 * the workers load theirs (no Effect); the first reads the dataset and makes
 * the plan, which it sends to the others and to the main thread; all cut it
 * into the same batches and start answering, each taking the next batch from
 * a counter they share. `merge` adopts them only when its options are those
 * they were started for, and takes their plan instead of reading the dataset
 * again; otherwise (or when the first worker could not make a plan: a
 * dataset the main thread must read itself to say what is wrong with it) it
 * stops them and works as usual.
 *
 * Without Effect, like the worker module.
 *
 * @module
 */
import { type MergePlan, WORKER_NAME } from "./plan.ts";
import type { WorkerInit, WorkerReply } from "./protocol.ts";
import { WorkerThreads } from "../workers.ts";

/** A reply that stands for a worker that failed. */
function failure(seq: number, message: string): WorkerReply {
  return { seq, ok: [], err: { tag: "Error", file: "", where: "", message } };
}

/** What must agree for `merge` to adopt workers started early. */
export interface EarlyKey {
  /** The dataset path. */
  readonly data: string;
  /** The context dump. */
  readonly contextEmb: string;
  /** The question dump. */
  readonly questionEmb: string;
  /** Sparse dumps. */
  readonly sparse: boolean;
  /** SIMD scoring. */
  readonly simd: boolean;
  /** Worker threads. */
  readonly workers: number;
  /** The most paragraphs per batch. */
  readonly batch: number;
}

/** The key as text (what {@linkcode EarlyPool.matches} compares). */
const keyText = (k: EarlyKey): string =>
  JSON.stringify([k.data, k.contextEmb, k.questionEmb, k.sparse, k.simd, k.workers, k.batch]);

/**
 * Workers that plan by themselves and answer every batch (see the module
 * notes): the replies are kept until asked for, by batch number.
 */
export class EarlyPool {
  readonly #key: string;
  readonly #workers: WorkerThreads;
  readonly #replies = new Map<number, WorkerReply>();
  readonly #waiting = new Map<number, (r: WorkerReply) => void>();
  readonly #plan: Promise<MergePlan | null>;
  #gotPlan: (p: MergePlan | null) => void = () => {};
  #failed: string | undefined;

  /** Starts `workers` workers on the dumps and the dataset of `key`. */
  constructor(key: EarlyKey) {
    this.#key = keyText(key);
    const counter = new SharedArrayBuffer(4);
    this.#plan = new Promise((resolve) => (this.#gotPlan = resolve));
    // The first worker sends the plan to each other worker through a channel.
    const channels = Array.from({ length: key.workers - 1 }, () => new MessageChannel());
    const inits = Array.from({ length: key.workers }, (_, i): WorkerInit => {
      const ports = i === 0 ? channels.map((c) => c.port1) : [channels[i - 1].port2];
      return {
        contextEmb: key.contextEmb,
        questionEmb: key.questionEmb,
        sparse: key.sparse,
        simd: key.simd,
        plan: {
          dataset: key.data,
          batch: key.batch,
          workers: key.workers,
          counter,
          planner: i === 0,
          ports,
        },
      };
    });
    this.#workers = new WorkerThreads(new URL("./worker.ts", import.meta.url), key.workers, {
      name: WORKER_NAME,
      first: (i) => ({ message: { init: inits[i] }, transfer: [...inits[i].plan!.ports] }),
      onMessage: (i, data) => this.#take(i, data as WorkerReply),
      onError: (_, message) => this.#fail(`merge worker failed: ${message}`),
    });
  }

  #take(i: number, r: WorkerReply): void {
    if (r.seq === -1) return;
    if ("plan" in r) {
      if (i === 0) this.#gotPlan(r.plan);
      return;
    }
    const resolve = this.#waiting.get(r.seq);
    if (resolve === undefined) this.#replies.set(r.seq, r);
    else {
      this.#waiting.delete(r.seq);
      resolve(r);
    }
  }

  #fail(message: string): void {
    this.#failed ??= message;
    this.#gotPlan(null);
    for (const [seq, resolve] of this.#waiting) resolve(failure(seq, message));
    this.#waiting.clear();
  }

  /** Whether these workers were started for `key`. */
  matches(key: EarlyKey): boolean {
    return this.#key === keyText(key);
  }

  /**
   * The plan the first worker made (when it says), or `null` when it could
   * not make one or a worker failed.
   */
  async plan(): Promise<MergePlan | null> {
    const p = await this.#plan;
    return this.#failed === undefined ? p : null;
  }

  /** The reply for batch `b`, when it comes. */
  result(b: number): Promise<WorkerReply> {
    const r = this.#replies.get(b);
    if (r !== undefined) {
      this.#replies.delete(b);
      return Promise.resolve(r);
    }
    if (this.#failed !== undefined) return Promise.resolve(failure(b, this.#failed));
    return new Promise((resolve) => this.#waiting.set(b, resolve));
  }

  /** Stops the workers. */
  close(): void {
    this.#workers.close();
    this.#fail("merge workers stopped");
  }
}
