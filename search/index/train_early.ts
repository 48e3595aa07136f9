/**
 * An IVF-PQ build's quantizer trained while its exact files are written
 * (`build.ts`): before the walk over the corpus, its training sample is
 * taken as an unsharded build takes it (`train_quantizer.ts`
 * `globalSample`: one pass over the ids, then the sample's rows read from
 * the dump) and trained on the build's encode workers, while this thread
 * walks the corpus and writes the exact files, letting the workers'
 * answers in between two paragraphs ({@linkcode EarlyTraining.pause}).
 * After the walk, the quantizer is used only if the sample the build
 * takes from what it wrote (`ivfpq/train.ts` `trainSample`) is the same
 * paragraphs with the same rows; otherwise (or if the early training
 * failed) the build trains after the walk as it did before. Either way
 * the centroids and codebooks are the same bytes: the same rows, the same
 * arithmetic (`tests/search/index/ivfpq/train_early_test.ts`).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Result from "effect/Result";
import type { DumpSourceSync } from "../../io/dump/reader_sync.ts";
import type { BuildIndexOptions } from "./build_input.ts";
import type { EncodeWorkers } from "./ivfpq/ivf_encode.ts";
import { DEFAULT_TRAIN_PARAGRAPHS, type IvfQuantizer, trainSample } from "./ivfpq/train.ts";
import {
  type GlobalQuantizer,
  type GlobalSample,
  globalSample,
  trainOnSample,
} from "./train_quantizer.ts";

/** The longest the walk goes on (ms) without letting the training's workers' answers in. */
export const PAUSE_MS = 1;

/** A quantizer in training while the build walks the corpus (see the module notes). */
export interface EarlyTraining {
  /** The sample trained on. */
  readonly sample: GlobalSample;
  /**
   * Run between two paragraphs of the walk: once {@linkcode PAUSE_MS} have
   * passed since the last, lets what is waiting in the event loop (the
   * workers' answers) run first.
   */
  pause(): Effect.Effect<void>;
  /**
   * Once the training has ended: the quantizer and its header parameters,
   * if the build's own sample of paragraph `ids` (rows `starts[p]` to
   * `starts[p+1]`, dimension `d`) is the one trained on (the same places,
   * ids and rows) and the training did not fail; else `undefined` (the
   * training stopped first).
   */
  take(
    ids: readonly string[],
    starts: readonly number[],
    d: number,
  ): Promise<GlobalQuantizer | undefined>;
  /** Ends what the pauses use (the training itself ends with its workers). */
  close(): void;
}

/**
 * Starts the early training of an unsharded, dense IVF-PQ build on
 * `pool`'s workers (at least two), or gives `undefined` (the build then
 * trains after the walk): when its sample cannot be taken (the walk will
 * meet and report the same problem) or has at most `minRows` rows.
 */
export const startEarlyTraining = (
  opts: BuildIndexOptions,
  dump: DumpSourceSync,
  pool: () => EncodeWorkers | undefined,
  minRows: number,
): Effect.Effect<EarlyTraining | undefined> =>
  Effect.gen(function* () {
    const got = yield* Effect.result(globalSample(opts, dump));
    if (Result.isFailure(got) || got.success.nt <= minRows) return undefined;
    const sample = got.success;
    const workers = pool();
    if (workers === undefined || workers.size < 2) return undefined;
    const stop = new AbortController();
    let ended = false;
    const quantizer: Promise<IvfQuantizer | undefined> = trainOnSample(
      sample,
      opts,
      stop.signal,
      workers,
    ).then((q) => q, () => undefined).finally(() => ended = true);
    // One channel for every pause: a message to itself comes back after what is waiting.
    const channel = new MessageChannel();
    let wake: (() => void) | undefined;
    channel.port1.onmessage = () => {
      const w = wake;
      wake = undefined;
      w?.();
    };
    const turn = () =>
      new Promise<void>((resolve) => {
        wake = resolve;
        channel.port2.postMessage(null);
      });
    let last = performance.now();
    return {
      sample,
      pause: () =>
        Effect.suspend(() => {
          if (ended || performance.now() - last < PAUSE_MS) return Effect.void;
          return Effect.promise(async () => {
            await turn();
            last = performance.now();
          });
        }),
      async take(ids, starts, d) {
        const train = await trainSample(ids, opts.trainParagraphs ?? DEFAULT_TRAIN_PARAGRAPHS);
        const at = sample.positions, named = sample.ids;
        let rows = 0;
        for (const p of train) rows += starts[p + 1] - starts[p];
        const same = d === sample.d && rows === sample.nt && train.length === at.length &&
          train.every((p, i) => p === at[i] && ids[p] === named[i]);
        if (!same) stop.abort();
        const q = await quantizer;
        return same && q !== undefined
          ? { quantizer: q, parameters: sample.parameters }
          : undefined;
      },
      close: () => {
        channel.port1.close();
        channel.port2.close();
      },
    };
  });
