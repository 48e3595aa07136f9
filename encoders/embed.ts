/**
 * The embedding runners behind `embed_context` and `embed_question`: stream
 * paragraphs (or questions) from a SQuAD file or NDJSON records, encode them
 * in batches with the {@linkcode ContextEncoder} / {@linkcode QuestionEncoder}
 * service, and write each dump file atomically as soon as it is encoded.
 * A rerun skips complete files (unless `overwrite`), so a killed run resumes
 * where it stopped and ends with the same bytes as an uninterrupted one.
 * {@linkcode embedContext} and {@linkcode embedQuestion} pick the encoder by
 * its registered name (what the two stages run).
 *
 * @module
 */
import { Effect, Stream } from "effect";
import { type IdKind, StemRegistry, unsafeIdReason } from "../io/dump/names.ts";
import {
  contextDumpComplete,
  type DumpFormat,
  questionDumpComplete,
  writeContextDump,
  writeQuestionDump,
} from "../io/dump/writer.ts";
import { FileError, InputError, type UsageError } from "../io/errors.ts";
import {
  ndjsonRecords,
  type ParagraphRecord,
  type QuestionRecord,
  sniffNdjson,
} from "../io/ndjson.ts";
import { openSource } from "../io/source.ts";
import { type SquadArticle, type SquadReadOptions, squadRecordStream } from "../io/squad.ts";
import {
  ContextEncoder,
  type ContextInput,
  type EncoderError,
  QuestionEncoder,
  type QuestionInput,
} from "./types.ts";
import { contextEncoderLayer, type EncoderOptions, questionEncoderLayer } from "./registry.ts";

/** Options shared by both runners. */
export interface EmbedOptions {
  /** Input: a SQuAD file (`.json`, `.json.gz`), or NDJSON records; `-` is stdin. */
  readonly input: string;
  /** Output folder (created if needed). */
  readonly out: string;
  /** Write scipy sparse CSR files (required for a sparse encoder). */
  readonly sparse?: boolean;
  /** Deflate the `.npz` entries. */
  readonly compressed?: boolean;
  /** Dense element type to store (default: the encoder's). */
  readonly dtype?: "f32" | "f16";
  /** Rewrite files that already exist. */
  readonly overwrite?: boolean;
  /** Paragraphs only: also write `<stem>.meta.json` (context, phrase offsets). */
  readonly metadata?: boolean;
  /** Items per encoder call (default 32). */
  readonly batchSize?: number;
  /**
   * Only the items with index in `[start, end)` (0-based, in input order),
   * so a run can be split into partitions.
   */
  readonly range?: readonly [number, number];
  /**
   * SQuAD input: rename repeated article titles (`io/squad_ids.ts`) instead
   * of refusing them. NDJSON records carry their ids: those are used as
   * they are, and a repeated one is refused.
   */
  readonly uniqueIds?: boolean;
  /** Called after each batch with the running counts (progress bars). */
  readonly onProgress?: (done: number) => void;
}

/** What a runner did. */
export interface EmbedResult {
  /** Items encoded and written. */
  readonly written: number;
  /** Items skipped because their files were complete. */
  readonly skipped: number;
  /** Encoder name. */
  readonly encoder: string;
  /** Vector dimension. */
  readonly dim: number;
}

/** Errors of the runners. */
export type EmbedError = InputError | FileError | EncoderError;

const mkdir = (dir: string) =>
  Effect.tryPromise({
    try: () => Deno.mkdir(dir, { recursive: true }),
    catch: (e) => new FileError({ file: dir, message: e instanceof Error ? e.message : String(e) }),
  });

/**
 * Removes temporary files left in `dir` by a killed run (older than
 * `before`); files of a run still writing are younger and are kept.
 */
const removeStaleTemps = (dir: string, before: number) =>
  Effect.promise(async () => {
    for await (const e of Deno.readDir(dir)) {
      if (!e.isFile || !/^\..+\.[0-9a-f]{8}\.tmp$/.test(e.name)) continue;
      try {
        const st = await Deno.lstat(`${dir}/${e.name}`);
        if ((st.mtime?.getTime() ?? 0) < before) await Deno.remove(`${dir}/${e.name}`);
      } catch { /* gone already */ }
    }
  });

function formatFor(
  opts: EmbedOptions,
  info: { name: string; sparse: boolean },
): Effect.Effect<DumpFormat, InputError> {
  if (info.sparse && !opts.sparse) {
    return Effect.fail(
      new InputError({
        file: opts.out,
        where: "",
        message: `encoder ${info.name} writes sparse vectors: pass --sparse`,
      }),
    );
  }
  return Effect.succeed({
    sparse: opts.sparse ?? false,
    compressed: opts.compressed ?? false,
    dtype: opts.dtype,
  });
}

function checkId(file: string, kind: IdKind, id: string, reg: StemRegistry): void {
  const why = unsafeIdReason(id, kind);
  if (why !== undefined) {
    throw new InputError({ file, where: `${kind} ${JSON.stringify(id)}`, message: why });
  }
  const owner = reg.claimOnce(id);
  if (owner !== undefined) {
    throw new InputError({
      file,
      where: `${kind} ${JSON.stringify(id)}`,
      message: owner === id
        ? `occurs twice in the input (${kind} ids must be unique)`
        : `same dump file name as ${kind} ${JSON.stringify(owner)} ('/' becomes '_')`,
    });
  }
}

const guard = <A>(f: () => A): Effect.Effect<A, InputError> =>
  Effect.try({
    try: f,
    catch: (e) =>
      e instanceof InputError ? e : new InputError({ file: "", where: "", message: String(e) }),
  });

/** The items of `s` whose index is in `[start, end)`; all of them without a range. */
export function inRange<A, E>(
  s: Stream.Stream<A, E>,
  range: readonly [number, number] | undefined,
): Stream.Stream<A, E> {
  if (range === undefined) return s;
  const [start, end] = range;
  return s.pipe(Stream.drop(start), Stream.take(Math.max(0, end - start)));
}

/**
 * Items of a SQuAD file, or of NDJSON records of `kind` when the input
 * starts with `{"kind": ...}` (see `io/ndjson.ts`).
 */
const squadOrRecords = <K extends "paragraph" | "question", A>(
  path: string,
  kind: K,
  read: SquadReadOptions,
  fromRecord: (r: K extends "paragraph" ? ParagraphRecord : QuestionRecord) => A,
  fromArticle: (a: SquadArticle) => A[],
): Stream.Stream<A, InputError | FileError> =>
  Stream.unwrap(
    Effect.flatMap(openSource(path), (src) =>
      Effect.map(
        Effect.promise(() => sniffNdjson(src)),
        ([isNd, s]) =>
          isNd
            ? Stream.map(
              ndjsonRecords(s, kind) as Stream.Stream<
                K extends "paragraph" ? ParagraphRecord : QuestionRecord,
                InputError
              >,
              fromRecord,
            )
            : Stream.flattenIterable(
              Stream.map(
                Stream.fromReadableStream({
                  evaluate: () => squadRecordStream(s, read),
                  onError: (e) =>
                    e instanceof InputError
                      ? e
                      : new InputError({ file: path, where: "", message: String(e) }),
                }),
                (r) => r.kind === "article" ? fromArticle(r) : [],
              ),
            ),
      )),
  );

/** How the runners read ids from a SQuAD file (see `io/squad_ids.ts`). */
const idMode = (uniqueIds: boolean | undefined) =>
  uniqueIds ? "unique" as const : "distinct" as const;

/**
 * Paragraphs of a SQuAD file (ids checked, or repeated titles renamed with
 * `uniqueIds`: `io/squad_ids.ts`) or of NDJSON paragraph records.
 */
export const contextInputs = (
  path: string,
  uniqueIds?: boolean,
): Stream.Stream<ContextInput, InputError | FileError> =>
  squadOrRecords(
    path,
    "paragraph",
    { context: "required", qas: "optional", ids: idMode(uniqueIds) },
    (r) => ({ id: r.id, context: r.context }),
    (a) => a.paragraphs.map((p) => ({ id: p.id, context: p.context! })),
  );

/**
 * Questions (id and text only) of a SQuAD file (ids checked as for
 * {@linkcode contextInputs}) or of NDJSON question records.
 */
export const questionInputs = (
  path: string,
  uniqueIds?: boolean,
): Stream.Stream<QuestionInput, InputError | FileError> =>
  squadOrRecords(
    path,
    "question",
    { context: "optional", qas: "required", ids: idMode(uniqueIds) },
    (r) => ({ id: r.id, question: r.question }),
    (a) =>
      a.paragraphs.flatMap((p) => p.questions.map((q) => ({ id: q.id, question: q.question }))),
  );

/**
 * Encodes every paragraph of `opts.input` into `opts.out/<stem>.npz` +
 * `<stem>.json` with the {@linkcode ContextEncoder} in context.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Effect } from "effect";
 * import { embedContexts } from "./embed.ts";
 * import { SPARSE_PI_MODEL, sparsePiLayers } from "./sparse_pi/encoder.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(
 *   `${dir}/context.ndjson`,
 *   JSON.stringify({ kind: "paragraph", id: "T_0", context: "Paris is in France." }) + "\n",
 * );
 * const r = await Effect.runPromise(
 *   embedContexts({ input: `${dir}/context.ndjson`, out: `${dir}/context_emb`, sparse: true })
 *     .pipe(Effect.provide(sparsePiLayers(SPARSE_PI_MODEL))),
 * );
 * const files = [...Deno.readDirSync(`${dir}/context_emb`)].map((e) => e.name).sort();
 * await Deno.remove(dir, { recursive: true });
 * assert.deepEqual([r.written, r.skipped, r.encoder], [1, 0, "sparse-pi"]);
 * assert.deepEqual(files, ["T_0.json", "T_0.npz"]);
 * ```
 */
export const embedContexts = (
  opts: EmbedOptions,
): Effect.Effect<EmbedResult, EmbedError, ContextEncoder> =>
  Effect.gen(function* () {
    const enc = yield* ContextEncoder;
    const format = yield* formatFor(opts, enc.info);
    const started = Date.now();
    yield* mkdir(opts.out);
    const reg = new StemRegistry();
    let written = 0, skipped = 0;
    const contexts = new Map<string, string>();
    yield* inRange(contextInputs(opts.input, opts.uniqueIds), opts.range).pipe(
      Stream.mapEffect((p) =>
        Effect.flatMap(guard(() => checkId(opts.input, "paragraph", p.id, reg)), () =>
          opts.overwrite
            ? Effect.succeed({ p, done: false })
            : Effect.map(contextDumpComplete(opts.out, p.id), (done) => ({ p, done })))
      ),
      Stream.grouped(opts.batchSize ?? 32),
      Stream.runForEach((group) =>
        Effect.gen(function* () {
          const todo = group.filter((g) =>
            !g.done
          ).map((g) => g.p);
          skipped += group.length - todo.length;
          if (todo.length === 0) return;
          const encoded = yield* enc.encode(todo);
          if (opts.metadata) { for (const p of todo) contexts.set(p.id, p.context); }
          for (const e of encoded) {
            yield* writeContextDump(opts.out, e, format, contexts.get(e.id));
            contexts.delete(e.id);
          }
          written += todo.length;
          opts.onProgress?.(written + skipped);
        })
      ),
    );
    yield* removeStaleTemps(opts.out, started);
    return { written, skipped, encoder: enc.info.name, dim: enc.info.dim };
  });

/**
 * Encodes every question of `opts.input` into `opts.out/<stem>.npz` with
 * the {@linkcode QuestionEncoder} in context. The encoder sees ids and
 * question texts only.
 */
export const embedQuestions = (
  opts: EmbedOptions,
): Effect.Effect<EmbedResult, EmbedError, QuestionEncoder> =>
  Effect.gen(function* () {
    const enc = yield* QuestionEncoder;
    const format = yield* formatFor(opts, enc.info);
    const started = Date.now();
    yield* mkdir(opts.out);
    const reg = new StemRegistry();
    let written = 0, skipped = 0;
    yield* inRange(questionInputs(opts.input, opts.uniqueIds), opts.range).pipe(
      Stream.mapEffect((q) =>
        Effect.flatMap(guard(() => checkId(opts.input, "question", q.id, reg)), () =>
          opts.overwrite
            ? Effect.succeed({ q, done: false })
            : Effect.map(questionDumpComplete(opts.out, q.id), (done) => ({ q, done })))
      ),
      Stream.grouped(opts.batchSize ?? 256),
      Stream.runForEach((group) =>
        Effect.gen(function* () {
          const todo = group.filter((g) =>
            !g.done
          ).map((g) => g.q);
          skipped += group.length - todo.length;
          if (todo.length === 0) return;
          const encoded = yield* enc.encode(todo);
          for (const e of encoded) yield* writeQuestionDump(opts.out, e, format);
          written += todo.length;
          opts.onProgress?.(written + skipped);
        })
      ),
    );
    yield* removeStaleTemps(opts.out, started);
    return { written, skipped, encoder: enc.info.name, dim: enc.info.dim };
  });

/** Options of {@linkcode embedContext}: the runner's, plus the encoder and its options. */
export interface EmbedContextOptions extends EmbedOptions, EncoderOptions {
  /** Encoder name (see `ENCODER_NAMES` in `./registry.ts`; default `sparse-pi`). */
  readonly encoder?: string;
}

/** Options of {@linkcode embedQuestion}: the runner's, plus the encoder and its options. */
export interface EmbedQuestionOptions extends EmbedOptions, EncoderOptions {
  /** Encoder name (see `ENCODER_NAMES` in `./registry.ts`; default `sparse-pi`). */
  readonly encoder?: string;
}

/**
 * Encodes the paragraphs of a file with a registered encoder (what
 * `embed_context` runs): {@linkcode embedContexts} with that encoder's layer.
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { embedContext } from "./embed.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(
 *   `${dir}/context.ndjson`,
 *   JSON.stringify({ kind: "paragraph", id: "T_0", context: "Paris is in France." }) + "\n",
 * );
 * const r = await Effect.runPromise(
 *   embedContext({ input: `${dir}/context.ndjson`, out: `${dir}/emb`, sparse: true }),
 * );
 * await Deno.remove(dir, { recursive: true });
 * if (r.written !== 1 || r.encoder !== "sparse-pi") throw new Error(JSON.stringify(r));
 * ```
 */
export const embedContext = (
  opts: EmbedContextOptions,
): Effect.Effect<EmbedResult, EmbedError | UsageError> =>
  Effect.gen(function* () {
    const layer = yield* contextEncoderLayer(opts.encoder ?? "sparse-pi", {
      model: opts.model,
      device: opts.device,
      threads: opts.threads,
    });
    return yield* embedContexts(opts).pipe(Effect.provide(layer));
  });

/**
 * Encodes the questions of a file with a registered encoder (what
 * `embed_question` runs): {@linkcode embedQuestions} with that encoder's
 * layer.
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { embedQuestion } from "./embed.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(
 *   `${dir}/question.ndjson`,
 *   JSON.stringify({ kind: "question", id: "q1", question: "Where is Paris?" }) + "\n",
 * );
 * const r = await Effect.runPromise(
 *   embedQuestion({ input: `${dir}/question.ndjson`, out: `${dir}/emb`, sparse: true }),
 * );
 * await Deno.remove(dir, { recursive: true });
 * if (r.written !== 1 || r.encoder !== "sparse-pi") throw new Error(JSON.stringify(r));
 * ```
 */
export const embedQuestion = (
  opts: EmbedQuestionOptions,
): Effect.Effect<EmbedResult, EmbedError | UsageError> =>
  Effect.gen(function* () {
    const layer = yield* questionEncoderLayer(opts.encoder ?? "sparse-pi", {
      model: opts.model,
      device: opts.device,
      threads: opts.threads,
    });
    return yield* embedQuestions(opts).pipe(Effect.provide(layer));
  });
