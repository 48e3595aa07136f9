/**
 * `merge`'s command line, and its workers started first thing when
 * `pipeline/merge.ts` runs as a command. That module imports this one
 * before anything else: while the main thread goes on loading the stage
 * (Effect, the CLI, ~70 ms), the workers load theirs (no Effect); the first
 * reads the dataset and makes the plan, which it sends to the others and to
 * the main thread; all cut it into the same batches and start answering,
 * each taking the next batch from a counter they share. `merge` adopts them
 * only when its options are those read here, and takes their plan instead
 * of reading the dataset again; otherwise (or when the first worker could
 * not make a plan: a dataset the main thread must read itself to say what
 * is wrong with it) it stops them and works as usual.
 *
 * Without Effect, like the worker module.
 *
 * @module
 */
import { type CommandSpec, parseArgs } from "./_args.ts";
import { batchSize, type MergePlan, WORKER_NAME } from "./_merge_plan.ts";
import type { WorkerInit, WorkerReply } from "./_merge_core.ts";

/** `merge`'s command line. */
export const MERGE_SPEC = {
  name: "merge",
  summary:
    "Answers each question with the phrase of its paragraph whose vector has the largest inner " +
    "product with the question vector (the first on a tie), as PIQA's merge.py, and writes the " +
    "predictions (Python json.dump format). Missing dump files print 'Missing <path>' on stderr " +
    "and leave the question unanswered. Scores are exact inner products (a fast pass, then the " +
    "rows near the best re-scored with a correctly rounded sum), so ties and near-ties are " +
    "decided the same way everywhere.",
  args: [
    { name: "data.json", description: "SQuAD dataset (.json, .json.gz, or - for stdin)" },
    { name: "context_emb", description: "context dump: a folder or a .zip of one" },
    { name: "question_emb", description: "question dump: a folder or a .zip of one" },
    { name: "pred.json", description: "predictions to write (- for stdout)" },
  ],
  flags: [
    {
      name: "sparse",
      type: "boolean",
      description: "the dumps are scipy sparse matrices (CSR or CSC)",
    },
    { name: "progress", type: "boolean", description: "show progress on stderr (on a terminal)" },
    {
      name: "concurrency",
      type: "int",
      metavar: "N",
      description: "paragraphs in flight (default: 64 per worker)",
    },
    {
      name: "no-simd",
      type: "boolean",
      description: "score in plain float64 loops instead of WebAssembly SIMD (same results)",
    },
    {
      name: "workers",
      type: "int",
      metavar: "N",
      description: "threads reading and scoring paragraphs (default: CPUs, at most 4; 0: none)",
    },
  ],
  epilog:
    "Example:\n  merge data/dev-v1.1.json.gz out/context_emb out/question_emb.zip out/pred.json",
} as const satisfies CommandSpec;

/** Worker threads when none are asked for: one per CPU, at most 4. */
export function defaultWorkers(): number {
  const n = typeof navigator !== "undefined" ? navigator.hardwareConcurrency ?? 1 : 1;
  return Math.max(1, Math.min(4, n));
}

/** Paragraphs in flight when `concurrency` is not given. */
export function defaultConcurrency(workers: number): number {
  return Math.max(2, 64 * workers);
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

const keyText = (k: EarlyKey): string =>
  JSON.stringify([k.data, k.contextEmb, k.questionEmb, k.sparse, k.simd, k.workers, k.batch]);

/** A reply that stands for a worker that failed. */
function failure(seq: number, message: string): WorkerReply {
  return { seq, ok: [], err: { tag: "Error", file: "", where: "", message } };
}

/**
 * Workers that plan by themselves and answer every batch (see the module
 * notes): the replies are kept until asked for, by batch number.
 */
export class EarlyPool {
  readonly #key: string;
  readonly #workers: Worker[];
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
    this.#workers = Array.from({ length: key.workers }, (_, i) => {
      const ports = i === 0 ? channels.map((c) => c.port1) : [channels[i - 1].port2];
      const init: WorkerInit = {
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
      const w = new Worker(new URL("./_merge_core.ts", import.meta.url), {
        type: "module",
        name: WORKER_NAME,
      });
      w.onmessage = (ev: MessageEvent<WorkerReply>) => this.#take(i, ev.data);
      w.onerror = (ev: ErrorEvent) => {
        ev.preventDefault();
        this.#fail(`merge worker failed: ${ev.message}`);
      };
      w.postMessage({ init }, ports);
      return w;
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
    for (const w of this.#workers) w.terminate();
    this.#fail("merge workers stopped");
  }
}

/** The key of a command line, or `undefined` when no early start fits it. */
function keyOf(argv: readonly string[]): EarlyKey | undefined {
  let a;
  try {
    a = parseArgs(MERGE_SPEC, argv);
  } catch {
    return undefined;
  }
  if (a === "help") return undefined;
  const data = a.positional["data.json"];
  const workers = (a.flags.workers as number | undefined) ?? defaultWorkers();
  const concurrency = (a.flags.concurrency as number | undefined) ??
    defaultConcurrency(workers);
  if (data === "-" || workers < 1 || concurrency < 1) return undefined;
  return {
    data,
    contextEmb: a.positional["context_emb"],
    questionEmb: a.positional["question_emb"],
    sparse: a.flags.sparse === true,
    simd: a.flags["no-simd"] !== true,
    workers,
    batch: batchSize(concurrency, workers),
  };
}

function startedAsCommand(): boolean {
  try {
    return Deno.mainModule === new URL("./merge.ts", import.meta.url).href;
  } catch {
    return false;
  }
}

let early: EarlyPool | undefined;
if (startedAsCommand()) {
  const key = keyOf(Deno.args);
  if (key !== undefined) early = new EarlyPool(key);
}

/**
 * The workers started early, if they were started for `key` (once; others
 * are stopped).
 */
export function takeEarlyPool(key: EarlyKey): EarlyPool | undefined {
  const e = early;
  early = undefined;
  if (e === undefined || e.matches(key)) return e;
  e.close();
  return undefined;
}
