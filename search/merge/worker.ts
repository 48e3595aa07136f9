/**
 * The entry module of a merge worker thread (`new Worker(new URL("./worker.ts",
 * import.meta.url), { type: "module" })`): it serves the messages of the
 * main thread ({@linkcode serveMergeWorker}). Loading it anywhere else would
 * take over that thread's `onmessage`.
 *
 * @module
 */
import { serveMergeWorker } from "./worker_loop.ts";

serveMergeWorker();
