/**
 * Worker threads held by a scope ({@linkcode acquireWorkers}): started when
 * acquired, ended by the scope's finalizer when it closes, whether the work
 * succeeded, failed or was interrupted. Kept apart from `workers.ts`, which
 * must load without Effect (the merge command starts its workers first).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import type * as Scope from "effect/Scope";

/** Anything that holds worker threads and ends them with `close`. */
export interface ClosesWorkers {
  /** Ends the workers. */
  close(): void;
}

/**
 * Starts workers with `start` in the current scope: the scope's finalizer
 * calls their `close`.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { acquireWorkers } from "./scoped_workers.ts";
 * import { RequestWorkers } from "./workers.ts";
 * const src = "self.onmessage = (e) => self.postMessage({ id: e.data.id, n: e.data.n + 1 });";
 * const url = new URL(URL.createObjectURL(new Blob([src], { type: "text/javascript" })));
 * const n = await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
 *   const ws = yield* acquireWorkers(() => new RequestWorkers<{ id: number; n: number }>(url, 1));
 *   return (yield* Effect.promise(() => ws.ask(0, { n: 41 }))).n;
 * })));
 * URL.revokeObjectURL(url.href);
 * if (n !== 42) throw new Error(String(n));
 * ```
 */
export const acquireWorkers = <W extends ClosesWorkers>(
  start: () => W,
): Effect.Effect<W, never, Scope.Scope> =>
  Effect.acquireRelease(Effect.sync(start), (w) => Effect.sync(() => w.close()));
