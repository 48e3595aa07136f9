/**
 * The BEM scorer as a service: {@linkcode Bem} (a `Context.Service`) scores
 * triples or prepared inputs in batches, each distinct model input once;
 * {@linkcode BemLive} provides it over an ONNX Runtime session on a BEM
 * model (`./session.ts`, on the shared `encoders/onnx/session.ts`), and
 * {@linkcode makeBem} over any batch runner.
 *
 * The model: `metrics/bem/README.md` says how to turn the TF-Hub SavedModel
 * into `bem.onnx`. Tests use `tests/fixtures/bem_surrogate_NOT_BEM.onnx`, a
 * random BERT-shaped stand-in with the same interface whose scores mean
 * nothing.
 *
 * @example
 * ```ts ignore
 * import * as Effect from "effect/Effect";
 * import { Bem, BemLive } from "./service.ts";
 * const program = Effect.gen(function* () {
 *   const bem = yield* Bem;
 *   return yield* bem.score([{
 *     question: "why is the sky blue",
 *     reference: "light scattering",
 *     candidate: "scattering of light",
 *   }]);
 * });
 * const [score] = await Effect.runPromise(
 *   Effect.provide(program, BemLive({ model: "bem.onnx" })),
 * ); // about 0.989 with the real BEM
 * ```
 *
 * @module
 */
import * as Context from "effect/Context";
import * as Data from "effect/Data";
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import { fileKind } from "../../io/regular.ts";
import type { BertTokenizer } from "./tokenizer.ts";
import {
  BEM_MAX_LENGTH,
  bemAssemble,
  bemInputKey,
  type BemInputs,
  type BemTriple,
  defaultBemTokenizer,
  softmax1,
} from "./inputs.ts";
import {
  type BemBatch,
  type BemDevice,
  type BemInterface,
  bemInterface,
  openBemSession,
  runBemBatch,
  sessionValueInfo,
} from "./session.ts";

/** Where the route to `bem.onnx` is documented (printed when no model is given). */
export const BEM_MODEL_HOWTO: string =
  "no BEM model: convert the TF-Hub SavedModel to bem.onnx with one command, see README.md, " +
  'section "BEM: getting the model" (metrics/bem/README.md)';

/**
 * BEM cannot run: no model, a model that does not fit the recipe
 * (`exitCode` 2), or an inference failure (`exitCode` 1).
 */
export class BemError extends Data.TaggedError("BemError")<{
  /** One line. */
  readonly message: string;
  /** 2 for a missing or unfit model (bad input), 1 for a failure of the work. */
  readonly exitCode: 1 | 2;
}> {}

/** Counters of a {@linkcode Bem} service. */
export interface BemStats {
  /** Pairs asked for. */
  readonly pairs: number;
  /** Distinct model inputs scored (each once). */
  readonly uniquePairs: number;
  /** Pairs that were truncated to fit 512 tokens. */
  readonly truncated: number;
  /** `session.run` calls. */
  readonly sessionRuns: number;
}

/** What the model is and how it runs. */
export interface BemInfo {
  /** The `.onnx` file. */
  readonly model: string;
  /** Its interface, read from the graph. */
  readonly interface: BemInterface;
  /** Execution device. */
  readonly device: BemDevice;
  /** Pairs per `session.run`. */
  readonly batch: number;
}

/**
 * The BEM scorer.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Layer from "effect/Layer";
 * import { Bem, makeBem } from "./service.ts";
 * const program = Effect.gen(function* () {
 *   const bem = yield* Bem;
 *   const [s] = yield* bem.score([{ question: "q", reference: "r", candidate: "c" }]);
 *   return { s, stats: bem.stats() };
 * });
 * // A stand-in runner (logits 0, 0); BemLive runs an ONNX model instead.
 * const zeros = makeBem(
 *   (b) => Promise.resolve(new Float64Array(b.rows * 2)),
 *   { model: "zeros", interface: {} as never, device: "cpu", batch: 8 },
 * );
 * const r = await Effect.runPromise(Effect.provide(program, Layer.succeed(Bem, zeros)));
 * if (r.s !== 0.5 || r.stats.sessionRuns !== 1) throw new Error(JSON.stringify(r));
 * ```
 */
export class Bem extends Context.Service<Bem, {
  /** The model and how it runs. */
  readonly info: BemInfo;
  /** The tokenizer it uses. */
  readonly tokenizer: BertTokenizer;
  /** The model inputs of a triple (unpadded). */
  inputs(triple: BemTriple): BemInputs;
  /** Scores prepared inputs, in order; identical inputs run once. */
  scoreInputs(inputs: readonly BemInputs[]): Effect.Effect<Float64Array, BemError>;
  /** Scores triples, in order. */
  score(triples: readonly BemTriple[]): Effect.Effect<Float64Array, BemError>;
  /** Counters so far. */
  stats(): BemStats;
}>()("phraseval/metrics/Bem") {}

/** Options of {@linkcode BemLive}. */
export interface BemOptions {
  /** The ONNX model file. */
  readonly model: string;
  /** Pairs per `session.run` (default 32). */
  readonly batch?: number;
  /** `cpu` (default) or `cuda`. */
  readonly device?: BemDevice;
  /** Intra-op threads (ONNX Runtime's default when absent). */
  readonly threads?: number;
  /** The tokenizer (default: {@linkcode defaultBemTokenizer}). */
  readonly tokenizer?: BertTokenizer;
  /**
   * Scores kept across calls for dedup (default 1,000,000; the oldest go
   * first; 0 keeps none, identical inputs within one call still run once).
   */
  readonly cacheSize?: number;
}

/** Runs a batch; a seam for tests and for other runtimes. */
export type BemRunner = (batch: BemBatch) => Promise<Float64Array>;

/**
 * A {@linkcode Bem} over any batch runner (the ONNX one is
 * {@linkcode BemLive}); dedup, caching, batching and counting live here.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { makeBem } from "./service.ts";
 * const bem = makeBem(
 *   async (b) => new Float64Array(b.rows * 2), // logits (0, 0): score 0.5
 *   { model: "zeros", interface: {} as never, device: "cpu", batch: 8 },
 * );
 * const scores = await Effect.runPromise(
 *   bem.score([{ question: "q", reference: "r", candidate: "c" }]),
 * );
 * if (scores.length !== 1 || scores[0] !== 0.5) throw new Error(String(scores));
 * ```
 */
export function makeBem(
  run: BemRunner,
  info: BemInfo,
  opts: { tokenizer?: BertTokenizer; cacheSize?: number; maxLength?: number } = {},
): Bem["Service"] {
  const tokenizer = opts.tokenizer ?? defaultBemTokenizer();
  const maxLength = opts.maxLength ?? BEM_MAX_LENGTH;
  const cacheSize = opts.cacheSize ?? 1_000_000;
  const fixedBatch = info.interface?.fixedBatch;
  const batchSize = fixedBatch ?? Math.max(1, info.batch);
  const cache = new Map<string, number>();
  const memo = new Map<string, number[]>();
  let pairs = 0, unique = 0, truncated = 0, runs = 0;
  const ids = (text: string): number[] => {
    let v = memo.get(text);
    if (!v) {
      v = tokenizer.ids(text);
      if (memo.size > 10_000) memo.clear();
      memo.set(text, v);
    }
    return v;
  };
  const inputs = (t: BemTriple): BemInputs =>
    bemAssemble(ids(t.candidate), ids(t.reference), ids(t.question), maxLength, {
      cls: tokenizer.clsId,
      sep: tokenizer.sepId,
    });
  const remember = (key: string, score: number) => {
    if (cacheSize <= 0) return;
    if (cache.size >= cacheSize) cache.delete(cache.keys().next().value!);
    cache.set(key, score);
  };
  /** Runs the inputs in batches; returns their scores by key. */
  const runMissing = async (missing: Map<string, BemInputs>): Promise<Map<string, number>> => {
    const scored = new Map<string, number>();
    const entries = [...missing];
    for (let at = 0; at < entries.length; at += batchSize) {
      const chunk = entries.slice(at, at + batchSize);
      const rows = fixedBatch ?? chunk.length;
      const batch: BemBatch = {
        rows,
        seqLen: maxLength,
        ids: new Int32Array(rows * maxLength),
        segments: new Int32Array(rows * maxLength),
        lengths: new Int32Array(rows),
      };
      for (let r = 0; r < rows; r++) {
        const x = chunk[Math.min(r, chunk.length - 1)][1]; // a fixed batch repeats its last row
        batch.ids.set(x.inputIds, r * maxLength);
        batch.segments.set(x.segmentIds, r * maxLength);
        batch.lengths[r] = x.inputIds.length;
      }
      const logits = await run(batch);
      runs++;
      chunk.forEach(([key], r) => {
        const score = softmax1(logits[2 * r], logits[2 * r + 1]);
        scored.set(key, score);
        remember(key, score);
      });
      unique += chunk.length;
    }
    return scored;
  };
  const scoreInputs = (xs: readonly BemInputs[]): Effect.Effect<Float64Array, BemError> =>
    Effect.tryPromise({
      try: async () => {
        const keys = xs.map(bemInputKey);
        const known = new Map<string, number>();
        const missing = new Map<string, BemInputs>();
        xs.forEach((x, i) => {
          pairs++;
          if (x.truncated) truncated++;
          const k = keys[i];
          const c = cache.get(k);
          if (c !== undefined) known.set(k, c);
          else if (!missing.has(k)) missing.set(k, x);
        });
        const scored = await runMissing(missing);
        return Float64Array.from(keys, (k) => known.get(k) ?? scored.get(k)!);
      },
      catch: (e) =>
        e instanceof BemError ? e : new BemError({
          message: `BEM inference failed: ${e instanceof Error ? e.message : String(e)}`,
          exitCode: 1,
        }),
    });
  return {
    info,
    tokenizer,
    inputs,
    scoreInputs,
    score: (triples) => scoreInputs(triples.map(inputs)),
    stats: () => ({ pairs, uniquePairs: unique, truncated, sessionRuns: runs }),
  };
}

/**
 * The {@linkcode Bem} service over an ONNX Runtime session on `opts.model`.
 * Fails with {@linkcode BemError} (exit code 2) when the file is missing, is
 * not a model, or its inputs and outputs do not fit BEM's recipe; the
 * session is released with the layer.
 *
 * @example
 * ```ts ignore
 * import { BemLive } from "./service.ts";
 * const layer = BemLive({ model: "bem.onnx", batch: 64, device: "cpu" });
 * ```
 */
export const BemLive = (opts: BemOptions): Layer.Layer<Bem, BemError> =>
  Layer.effect(
    Bem,
    Effect.gen(function* () {
      const kind = yield* Effect.promise(() =>
        Deno.stat(opts.model).then((s) => s.isFile ? "file" : fileKind(s), () => undefined)
      );
      if (kind === undefined) {
        return yield* new BemError({ message: `${opts.model}: ${BEM_MODEL_HOWTO}`, exitCode: 2 });
      }
      if (kind !== "file") {
        return yield* new BemError({
          message: `${opts.model}: is ${kind}, not a regular file`,
          exitCode: 2,
        });
      }
      const device = opts.device ?? "cpu";
      const session = yield* Effect.acquireRelease(
        Effect.tryPromise({
          try: () => openBemSession(opts.model, { device, threads: opts.threads }),
          catch: (e) =>
            new BemError({
              message: `${opts.model}: ${e instanceof Error ? e.message : String(e)}`,
              exitCode: 2,
            }),
        }),
        (s) => Effect.promise(() => s.release().catch(() => {})),
      );
      const v = sessionValueInfo(session);
      const iface = bemInterface(v.inputs, v.outputs);
      if (typeof iface === "string") {
        return yield* new BemError({ message: `${opts.model}: ${iface}`, exitCode: 2 });
      }
      return makeBem(
        (b) => runBemBatch(session, iface, b),
        { model: opts.model, interface: iface, device, batch: opts.batch ?? 32 },
        { tokenizer: opts.tokenizer, cacheSize: opts.cacheSize },
      );
    }),
  );
