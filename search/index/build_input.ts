/**
 * What a build reads: its options ({@linkcode BuildIndexOptions}, the
 * IVF-PQ ones checked before anything is read) and the corpus, walked in
 * the index's paragraph order ({@linkcode walkCorpus}; see `build.ts`'s
 * module notes), with its paragraphs' dump files, side files and sha256.
 * Used by the index build (`build.ts`) and the quantizer's training
 * (`train_quantizer.ts`).
 *
 * @module
 */
import { createHash } from "node:crypto";
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { dumpStem, StemRegistry, unsafeIdReason } from "../../io/dump/names.ts";
import type { DumpSourceSync } from "../../io/dump/reader_sync.ts";
import { FileError, InputError, type UsageError } from "../../io/errors.ts";
import { isSquadShaped, openDataset, passagesOfSource } from "../../io/datasets/read.ts";
import { type SquadReadError, squadRecordStream } from "../../io/squad.ts";
import type { IvfBuildOptions } from "./ivfpq/train.ts";
import type { IndexHeader, IndexMetric } from "./format.ts";
import { lift, osMessage } from "./build_folder.ts";

/** Options of {@linkcode buildIndex}. */
export interface BuildIndexOptions {
  /** The context dump: a folder or a `.zip` of one. */
  readonly contextEmb: string;
  /** The index folder to create. */
  readonly out: string;
  /** The dump is scipy sparse (CSR/CSC); otherwise dense. */
  readonly sparse?: boolean;
  /**
   * A context (or full SQuAD) file, or any corpus (`io/datasets/`):
   * paragraph order, ids, titles and texts (for offsets).
   */
  readonly context?: string;
  /** The format of `context`, a `--format` name (default: detected). */
  readonly contextFormat?: string;
  /** Ranking metric (default `ip`). */
  readonly metric?: IndexMetric;
  /** Replace an existing index folder. */
  readonly overwrite?: boolean;
  /** IVF partitions: with `bpv`, an `ivf-pq` index (else `exact`). */
  readonly nlist?: number;
  /** PQ sub-vectors (bytes per vector): with `nlist`, an `ivf-pq` index. */
  readonly bpv?: number;
  /**
   * Bits per PQ code (default 8). 4: `2·bpv` sub-quantizers of 16 centroids,
   * the codes in the blocked layout of the fast scan (`ivfpq/fastscan.ts`),
   * also for a hybrid dump's dense block (`denseDims`) and for shards (a
   * `quantizer` records its bits, and then `pqBits` must not be given).
   */
  readonly pqBits?: 4 | 8;
  /**
   * A sparse dump whose first `denseDims` columns are a dense block (a
   * hybrid dense ⊕ sparse encoder's): with `nlist` and `bpv`, the IVF-PQ is
   * trained and encoded on that block (`ivfpq/hybrid.ts`).
   */
  readonly denseDims?: number;
  /** Paragraphs the IVF-PQ quantizers are trained on (default 100; see `ivfpq/train.ts`). */
  readonly trainParagraphs?: number;
  /**
   * Build shard `index` of `count` (`shards.ts`): only the paragraphs the
   * assignment gives it, each with its place in the corpus; `out` is the
   * shard's folder. An IVF-PQ shard is encoded with the quantizer of the
   * whole corpus (`quantizer`, else trained here on the corpus's sample:
   * the same bytes).
   */
  readonly shard?: { readonly index: number; readonly count: number };
  /**
   * A shard's IVF-PQ: the quantizer folder (`index --train-only`) to encode
   * with; its parameters replace `nlist`, `bpv`, `pqBits`, `trainParagraphs`
   * and `denseDims` (which must then not be given).
   */
  readonly quantizer?: string;
  /** Told the paragraphs and phrases written so far. */
  readonly onProgress?: (paragraphs: number, phrases: number) => void;
  /** Told the rows encoded so far (`ivf-pq`; 0 once the quantizers are trained). */
  readonly onIvfProgress?: (rows: number, total: number) => void;
  /**
   * Internal knobs of the IVF-PQ encoding and writing (`ivfpq/train.ts`:
   * `writeBudget`, `encodeBlock`, `encodeThreads`; `trainWhileWriting`),
   * for tests and benchmarks; the bytes written do not depend on them.
   */
  readonly ivfTuning?: Pick<IvfBuildOptions, "writeBudget" | "encodeBlock" | "encodeThreads"> & {
    /**
     * `false`: the quantizer is trained after the exact files are written,
     * not meanwhile (`train_early.ts`).
     */
    readonly trainWhileWriting?: boolean;
    /**
     * Told, once the exact files are written, whether the quantizer
     * trained meanwhile is the one used (not told when none was trained).
     */
    readonly trainedWhileWriting?: (used: boolean) => void;
  };
}

/** What {@linkcode buildIndex} wrote. */
export interface BuildIndexResult {
  /** The header written. */
  readonly header: IndexHeader;
  /** The index folder. */
  readonly out: string;
}

/** Errors of {@linkcode buildIndex} (a {@linkcode UsageError}: a bad `contextFormat`). */
export type BuildIndexError = InputError | FileError | SquadReadError | UsageError;

/** The checks of the IVF-PQ options made before anything is read: `[file, message]` or `undefined`. */
export function ivfOptionsProblem(
  opts: BuildIndexOptions,
  sparse: boolean,
): [string, string] | undefined {
  const out = opts.out.replace(/\/+$/, "") || "/";
  if ((opts.nlist === undefined) !== (opts.bpv === undefined)) {
    return [out, "IVF-PQ needs both --nlist and --bpv"];
  }
  if (opts.pqBits !== undefined && opts.pqBits !== 8) {
    if (opts.pqBits !== 4) return [out, `--pq-bits must be 4 or 8, got ${opts.pqBits}`];
    if (opts.nlist === undefined) return [out, "--pq-bits 4 needs --nlist and --bpv"];
  }
  const at = (message: string): [string, string] => [opts.contextEmb, message];
  if (opts.denseDims !== undefined) {
    if (!sparse) {
      return at(
        "--dense-dims is for a sparse (CSR) hybrid dump read with --sparse; " +
          "a dense dump's IVF-PQ uses all its d columns (drop --dense-dims)",
      );
    }
    if (opts.nlist === undefined) {
      return at("--dense-dims needs --nlist and --bpv (it shapes an IVF-PQ index)");
    }
    if (!Number.isSafeInteger(opts.denseDims) || opts.denseDims < 1) {
      return at(`--dense-dims must be at least 1, got ${opts.denseDims}`);
    }
  }
  if (opts.nlist !== undefined && sparse && opts.denseDims === undefined) {
    return at(
      "IVF-PQ indexes dense vectors, or the dense block of a hybrid sparse dump " +
        "(--dense-dims D); build an exact index of a plain sparse dump",
    );
  }
  return undefined;
}

/** Offsets from a `<stem>.meta.json` side file, when the dump has one. */
export function metaOf(
  dump: DumpSourceSync,
  stem: string,
): { id?: string; offsets?: [number, number][]; context?: string } | undefined {
  const bytes = dump.readFile(`${stem}.meta.json`);
  if (bytes === undefined) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (e) {
    throw new InputError({
      file: dump.label(`${stem}.meta.json`),
      where: "",
      message: `invalid JSON (${osMessage(e)})`,
    });
  }
  const o = (typeof v === "object" && v !== null ? v : {}) as {
    id?: unknown;
    offsets?: unknown;
    context?: unknown;
  };
  // Another tool's side file may carry no offsets: then there are none.
  const ok = o.offsets === undefined || Array.isArray(o.offsets) &&
      o.offsets.every((p) =>
        Array.isArray(p) && p.length === 2 && p.every((x) => Number.isSafeInteger(x))
      );
  if (!ok) {
    throw new InputError({
      file: dump.label(`${stem}.meta.json`),
      where: "",
      message: "bad offsets (a list of [start, end] code point pairs expected)",
    });
  }
  return {
    id: typeof o.id === "string" ? o.id : undefined,
    offsets: o.offsets as [number, number][] | undefined,
    context: typeof o.context === "string" ? o.context : undefined,
  };
}

/** Reads a paragraph of the dump, a dense dump given for a hybrid one refused in this command's terms. */
export const readerOf = (dump: DumpSourceSync, opts: BuildIndexOptions) => (id: string) => {
  try {
    return dump.readContext(id);
  } catch (e) {
    if (
      opts.denseDims !== undefined && e instanceof InputError &&
      e.message.startsWith("is a dense array")
    ) {
      throw new InputError({
        file: e.file,
        where: "",
        message: "is a dense array: --dense-dims is for a hybrid CSR dump; a dense " +
          "dump's IVF-PQ uses all its d columns (drop --sparse and --dense-dims)",
      });
    }
    throw e;
  }
};

/**
 * Calls `visit` for every paragraph of the corpus, in the index's order
 * (see the module notes): the `--context` file's paragraphs (SQuAD-shaped)
 * or passages (a corpus, their ids checked), else the dump's `.npz` stems
 * sorted by name. `visit` gets the id the dump names the paragraph by, its
 * file stem, and its text and title when the context file has them;
 * `pause`, run after each visit, may let other work in (its effect ends
 * when the walk may go on).
 */
export const walkCorpus = (
  opts: BuildIndexOptions,
  dump: DumpSourceSync,
  visit: (id: string, stem: string, context?: string, title?: string) => void,
  pause?: () => Effect.Effect<void>,
): Effect.Effect<void, BuildIndexError> =>
  Effect.gen(function* () {
    const next = pause ?? (() => Effect.void);
    if (opts.context !== undefined) {
      const ctx = opts.context;
      const [format, src] = yield* openDataset(ctx, opts.contextFormat, true);
      if (isSquadShaped(format)) {
        const articles = Stream.fromReadableStream({
          evaluate: () => squadRecordStream(src, { qas: "optional", ids: "distinct" }),
          onError: (e) =>
            e instanceof InputError || e instanceof FileError ? e : new InputError({
              file: ctx,
              where: "",
              message: e instanceof Error ? e.message : String(e),
            }),
        });
        yield* Stream.runForEach(articles, (r) =>
          r.kind !== "article" ? Effect.void : Effect.forEach(
            r.paragraphs,
            (p) =>
              Effect.andThen(
                lift(() => visit(p.id, dumpStem(p.id), p.context, p.title), opts.contextEmb),
                next,
              ),
            { discard: true },
          ));
      } else {
        // A corpus: its passage ids name the dump files, so they are checked as the
        // SQuAD reader checks paragraph ids (`ids: "distinct"`).
        const stems = new StemRegistry();
        yield* Stream.runForEach(
          yield* passagesOfSource(ctx, format, src),
          (p) =>
            lift(() => {
              const where = `passage ${JSON.stringify(p.id)}`;
              const why = unsafeIdReason(p.id, "paragraph");
              if (why !== undefined) throw new InputError({ file: ctx, where, message: why });
              const owner = stems.claim(p.id);
              if (owner !== undefined) {
                throw new InputError({
                  file: ctx,
                  where,
                  message: `same dump file name as passage ${
                    JSON.stringify(owner)
                  } ('/' becomes '_')`,
                });
              }
              visit(p.id, dumpStem(p.id), p.text, p.title);
            }, opts.contextEmb).pipe(Effect.andThen(next)),
        );
      }
    } else {
      const names = yield* lift(() => dump.list(), opts.contextEmb);
      for (const name of names) {
        if (!name.endsWith(".npz")) continue;
        const stem = name.slice(0, -4);
        yield* lift(() => visit(stem, stem), opts.contextEmb);
        yield* next();
      }
    }
  });

/**
 * The corpus's sha256 (`ShardInfo.corpus_sha256`): of the `--context`
 * file's bytes, or without one, of the dump's sorted `.npz` stems, each
 * followed by a newline.
 */
export const corpusSha256 = (
  opts: BuildIndexOptions,
  dump: DumpSourceSync,
): Effect.Effect<string, FileError | InputError> =>
  lift(() => {
    const h = createHash("sha256");
    if (opts.context === undefined) {
      for (const name of dump.list()) if (name.endsWith(".npz")) h.update(`${name.slice(0, -4)}\n`);
      return h.digest("hex");
    }
    const f = Deno.openSync(opts.context, { read: true });
    try {
      const buf = new Uint8Array(1 << 20);
      for (;;) {
        const n = f.readSync(buf);
        if (n === null) break;
        h.update(buf.subarray(0, n));
      }
    } finally {
      f.close();
    }
    return h.digest("hex");
  }, opts.context ?? opts.contextEmb);
