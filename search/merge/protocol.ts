/**
 * What crosses between merge's main thread and its workers: the first
 * message ({@linkcode WorkerInit}), batches, replies, and errors as plain
 * data ({@linkcode WireError}).
 *
 * @module
 */
import * as Data from "effect/Data";
import { type ExitCode, FileError, InputError } from "../../io/errors.ts";
import type { MergePlan, MergeUnit } from "./plan.ts";
import type { MergeOutcome } from "./unit.ts";

/**
 * A merge worker failed (it threw something other than bad input, or
 * stopped); the stage exits 1 with its message.
 *
 * @example
 * ```ts
 * import { MergeWorkerError } from "./protocol.ts";
 * const e = new MergeWorkerError("merge worker failed: out of memory");
 * if (e._tag !== "MergeWorkerError") throw new Error("untagged");
 * if (e.message !== "merge worker failed: out of memory" || e.exitCode !== 1) throw new Error();
 * ```
 */
export class MergeWorkerError extends Data.TaggedError("MergeWorkerError")<{
  /** What failed, on one line. */
  readonly message: string;
}> {
  /**
   * The error, with what failed.
   *
   * @param message what failed, on one line
   */
  constructor(message: string) {
    super({ message });
  }

  /** Exit code of a command that fails with it: 1, the work failed. */
  get exitCode(): ExitCode {
    return 1;
  }
}

/** An error as it crosses from a worker to the main thread (plain data). */
export interface WireError {
  /** Which kind of error it was (`Error`: anything not bad input). */
  readonly tag: "InputError" | "FileError" | "Error";
  /** The file it names. */
  readonly file: string;
  /** Where in the file. */
  readonly where: string;
  /** What is wrong. */
  readonly message: string;
}

/** A thrown value as a {@linkcode WireError}. */
export function toWire(e: unknown): WireError {
  if (e instanceof InputError) {
    return { tag: "InputError", file: e.file, where: e.where, message: e.message };
  }
  if (e instanceof FileError) {
    return { tag: "FileError", file: e.file, where: "", message: e.message };
  }
  return {
    tag: "Error",
    file: "",
    where: "",
    message: e instanceof Error ? (e.stack ?? e.message) : String(e),
  };
}

/** The first message to a worker: which dumps to open, and how. */
export interface WorkerInit {
  /** The context dump. */
  readonly contextEmb: string;
  /** The question dump. */
  readonly questionEmb: string;
  /** Sparse dumps. */
  readonly sparse: boolean;
  /** Score on the SIMD kernels. */
  readonly simd: boolean;
  /**
   * Workers started before the main thread has read the dataset plan by
   * themselves. The first (`ports` set) reads `dataset` (a file), makes the
   * plan and sends it to the main thread (seq -2; `null`: it could not) and
   * through each of `ports` to the others (whose `ports` holds the one port
   * they listen on). Then each cuts the plan into batches as
   * `batchesOf(plan, batch, workers)` and answers batch after batch, each
   * taken from `counter` (an Int32 shared by all: the next batch), the
   * batch's index as seq.
   */
  readonly plan?: {
    readonly dataset: string;
    readonly batch: number;
    readonly workers: number;
    readonly counter: SharedArrayBuffer;
    readonly planner: boolean;
    readonly ports: readonly MessagePort[];
  };
}

/**
 * A worker's reply: a batch's outcomes and its error (seq: the batch's
 * number), "ready" (seq -1), or the plan the first worker made (seq -2;
 * `null`: it could not make one).
 */
export type WorkerReply =
  | { readonly seq: number; readonly ok: MergeOutcome[][]; readonly err?: WireError }
  | { readonly seq: -1; readonly ready: true }
  | { readonly seq: -2; readonly plan: MergePlan | null };

/** A message to a worker after its {@linkcode WorkerInit}: paragraphs to answer. */
export interface WorkerBatch {
  /** Echoed in the reply. */
  readonly seq: number;
  /** The paragraphs and their questions, answered in this order. */
  readonly units: readonly { readonly cid: string; readonly qids: readonly string[] }[];
}

/** A batch's outcomes (one list per paragraph) up to its first failure, and that failure. */
export interface Reply {
  /** Each paragraph's outcomes, in order, up to the one that failed. */
  readonly ok: readonly MergeOutcome[][];
  /** The failure. */
  readonly err?: InputError | FileError | MergeWorkerError;
}

/** Runs batches of paragraphs: in this thread, or in a pool of workers. */
export interface UnitRunner {
  /** The outcomes of `units`, in order. */
  run(units: readonly MergeUnit[]): Promise<Reply>;
  /** Stops the workers, if any. */
  close(): void;
}

/** The error a {@linkcode WireError} stands for. */
export function fromWire(w: WireError): InputError | FileError | MergeWorkerError {
  if (w.tag === "InputError") {
    return new InputError({ file: w.file, where: w.where, message: w.message });
  }
  if (w.tag === "FileError") return new FileError({ file: w.file, message: w.message });
  return new MergeWorkerError(`merge worker failed: ${w.message}`);
}

/** A worker's reply as the stage handles it. */
export function fromReply(r: WorkerReply): Reply {
  if (!("ok" in r)) return { ok: [], err: new MergeWorkerError("merge worker: unexpected reply") };
  return r.err === undefined ? { ok: r.ok } : { ok: r.ok, err: fromWire(r.err) };
}
