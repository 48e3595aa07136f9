/**
 * An open phrase index as a service: {@linkcode PhraseIndex}, whose Layer
 * ({@linkcode PhraseIndexLive}) opens an index folder (`search/index/read.ts`)
 * and owns what its searches start. Searching an index starts worker threads
 * on first use (the 8-bit screening of exact search, `search/kernels/i8_pool.ts`; the
 * IVF-PQ searches, `search/index/ivfpq/ivf_search.ts`), kept with the index; when the
 * Layer's scope closes, its finalizer ends them and closes the index's files
 * (under a memory budget), so no caller ends them by hand.
 * {@linkcode acquireIndex} is the same ownership as a scoped Effect, and
 * {@linkcode releaseIndex} the finalizer itself, for the code that holds an
 * index without Effect (a shard searched in a loop, the demo server's
 * searcher).
 *
 * @module
 */
import * as Context from "effect/Context";
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import type * as Scope from "effect/Scope";
import type { FileError, InputError } from "../../io/errors.ts";
import { closeI8Workers } from "../kernels/i8_pool.ts";
import { closeIvfWorkers } from "../index/ivfpq/ivf_search.ts";
import { closeIndex, type ExactIndex, openIndex, type OpenIndexOptions } from "../index/read.ts";

/** Ends the search workers of `index` (IVF-PQ scans, exact screening), if any. */
export function closeSearchWorkers(index: ExactIndex): void {
  closeIvfWorkers(index);
  closeI8Workers(index);
}

/**
 * Ends the search workers of `index` and closes its files: what the owner of
 * an open index does when it is done with it (the finalizer of
 * {@linkcode acquireIndex} and {@linkcode PhraseIndexLive}).
 */
export function releaseIndex(index: ExactIndex): void {
  closeSearchWorkers(index);
  closeIndex(index);
}

/**
 * Opens the index folder `dir` in the current scope: the scope's close ends
 * its search workers and closes it ({@linkcode releaseIndex}). A bad or
 * incomplete folder is an {@linkcode InputError}, an unreadable one a
 * {@linkcode FileError}.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { acquireIndex } from "./phrase_index.ts";
 * const dir = Deno.makeTempDirSync();
 * const why = await Effect.runPromise(Effect.flip(Effect.scoped(acquireIndex(dir))));
 * if (!String(why).includes("not an index folder")) throw new Error(String(why));
 * Deno.removeSync(dir);
 * ```
 */
export const acquireIndex = (
  dir: string,
  options: OpenIndexOptions = {},
): Effect.Effect<ExactIndex, InputError | FileError, Scope.Scope> =>
  Effect.acquireRelease(openIndex(dir, options), (index) => Effect.sync(() => releaseIndex(index)));

/**
 * An open phrase index: the folder it was opened from and the index. Its
 * search workers start on first use and end with the Layer that provides it.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Layer from "effect/Layer";
 * import { PhraseIndex } from "./phrase_index.ts";
 * const phrases = Effect.gen(function* () {
 *   const p = yield* PhraseIndex;
 *   return p.index.header.phrases;
 * });
 * const fake = { dir: "x", index: { header: { phrases: 3 } } } as never;
 * if (await Effect.runPromise(Effect.provide(phrases, Layer.succeed(PhraseIndex, fake))) !== 3) {
 *   throw new Error("not provided");
 * }
 * ```
 */
export class PhraseIndex extends Context.Service<PhraseIndex, {
  /** The index folder. */
  readonly dir: string;
  /** The open index. */
  readonly index: ExactIndex;
}>()("phraseval/search/PhraseIndex") {}

/**
 * The {@linkcode PhraseIndex} of the folder `dir` ({@linkcode acquireIndex}):
 * opened when the Layer is built; its search workers ended and its files
 * closed when the Layer's scope closes.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Exit from "effect/Exit";
 * import { PhraseIndex, PhraseIndexLive } from "./phrase_index.ts";
 * const dir = Deno.makeTempDirSync();
 * const opened = Effect.gen(function* () {
 *   return (yield* PhraseIndex).index;
 * });
 * const exit = await Effect.runPromiseExit(Effect.provide(opened, PhraseIndexLive(dir)));
 * if (!Exit.isFailure(exit)) throw new Error("an empty folder is not an index");
 * Deno.removeSync(dir);
 * ```
 */
export const PhraseIndexLive = (
  dir: string,
  options: OpenIndexOptions = {},
): Layer.Layer<PhraseIndex, InputError | FileError> =>
  Layer.effect(
    PhraseIndex,
    Effect.map(acquireIndex(dir, options), (index) => ({ dir, index })),
  );
