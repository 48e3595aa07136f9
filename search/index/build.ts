/**
 * Building an exact phrase index from a context dump ({@linkcode buildIndex}).
 *
 * The dump (a folder or a `.zip`, dense f16/f32 or scipy CSR/CSC, read
 * through `io/dump`) is copied paragraph by paragraph into the flat files
 * of `format.ts`: memory holds one paragraph at a time, whatever the number
 * of phrases. **Paragraph order**: with `context` (a context or full SQuAD
 * file, or any corpus `readCorpus` reads: DPR's passage TSV, a JSONL corpus,
 * MRQA's contexts; `contextFormat` names its format, else it is detected)
 * the file's paragraph (passage) order and ids, and a paragraph of the
 * file without its dump files is bad input; without it, the dump's
 * `<stem>.npz` files sorted by name (UTF-16 code unit order), the id being
 * the one in `<stem>.meta.json` when the dump has it, else the stem.
 * **Offsets** (code points): from `<stem>.meta.json` (`--metadata` dumps)
 * when present; else, with `context`, each phrase is looked up in its
 * paragraph's text: its first occurrence at or after the previous phrase's
 * start (else from the beginning), and a phrase not in the text is bad input.
 * **Titles and texts**: each paragraph's article title and context go into
 * `paragraphs.ndjson` when known: from `context` (the article's title; a
 * corpus passage's own title, `""` when it has none, and its text), else
 * from `<stem>.meta.json` (its `context`; the title is the id without its
 * trailing `_<n>`).
 *
 * Bad input ({@linkcode InputError}, nothing left behind): a paragraph
 * without phrases, phrases ≠ rows, d or dtype differing between paragraphs,
 * NaN or infinite values (the reader's checks), a sparse row with a
 * repeated column under the `l2` metric, an index path that is a file, an
 * existing folder (unless `overwrite`, and then only an index folder or an
 * empty one is replaced).
 *
 * **IVF-PQ** (`nlist` and `bpv` given; dense dumps, or sparse dumps with
 * `denseDims`: a hybrid index, `ivfpq/hybrid.ts`): the exact files
 * are written as above, then phraseval's deterministic IVF-PQ is trained on
 * the training sample and every row encoded from them into `ivf/`, and the
 * kind is `ivf-pq` (`ivfpq/train.ts`: training sample; `ivfpq/ivfpq.ts`: parameters, layout). Bad input, checked
 * once the exact files are written (before any training): `bpv` that does
 * not divide d (or `denseDims`), `nlist` larger than the training sample's
 * phrases, `denseDims` larger than d. Refused at once: a sparse dump without
 * `denseDims`, `denseDims` without `sparse` (a dense dump needs none),
 * without `nlist`/`bpv`, or below 1. An unsharded dense build whose sample
 * is more than one encode block trains meanwhile (`train_early.ts`): the
 * sample is read first, as a shard's is (below), and trained on the encode
 * workers while the exact files are written; its quantizer is used when
 * the sample taken from the written files is the same paragraphs and rows
 * (the same bytes; else it trains after, as above).
 *
 * **Shards** (`shard`, `shards.ts`): the corpus is walked as above, and
 * only the paragraphs whose id the assignment gives this shard are read and
 * written, each with its place in the corpus (`position`); the header gets
 * the `shard` block (the corpus's sha256: of the `context` file's bytes, or
 * of the sorted dump stems). A shard that gets no paragraph is an empty
 * index of the corpus's d and dtype. An IVF-PQ shard is encoded with the
 * whole corpus's quantizer: the `quantizer` folder's ({@linkcode trainQuantizer}
 * writes one; refused when trained on another corpus, vector kind or d), or
 * trained here on the corpus's sample by a second walk (the same bytes).
 *
 * **Atomic, one at a time, and repeatable.** A build of `INDEX_DIR` works in
 * `INDEX_DIR.<8 hex>.tmp`, under its lock, and renames the complete index
 * into place (`build_folder.ts`); a build that was killed is taken over by
 * the next one, and since nothing in the index depends on time or place, it
 * writes the same bytes. The options and the corpus walk are
 * `build_input.ts`'s, the whole corpus's quantizer `train_quantizer.ts`'s.
 *
 * @module
 */
import { tmpName } from "./temp.ts";
import * as Effect from "effect/Effect";
import { codePointIndex } from "../../io/dump/writer.ts";
import { type ContextDump, type DumpSourceSync, openDumpSync } from "../../io/dump/reader_sync.ts";
import { csrDenseRows } from "./ivfpq/hybrid.ts";
import { FileError, InputError } from "../../io/errors.ts";
import { IVF_FILES } from "./ivfpq/ivfpq.ts";
import {
  buildIvfPq,
  DEFAULT_TRAIN_PARAGRAPHS,
  ENCODE_BLOCK,
  ENCODE_THREADS,
  trainSample,
} from "./ivfpq/train.ts";
import { encodePool, type EncodeWorkers, encodeWorkersAllowed } from "./ivfpq/ivf_encode.ts";
import { type EarlyTraining, startEarlyTraining } from "./train_early.ts";
import type { Matrix } from "../../io/matrix.ts";
import { readQuantizer } from "./ivfpq/quantizer.ts";
import { SHARD_RULE, shardOf } from "./shards.ts";
import {
  headerJson,
  INDEX_FORMAT,
  INDEX_HEADER,
  INDEX_VERSION,
  type IndexFile,
  type IndexHeader,
  type IndexMetric,
  PARAGRAPHS_FILE,
} from "./format.ts";
import { fsyncDir } from "../../io/fs.ts";
import {
  bytesOf,
  closeBuildFolder,
  lift,
  openBuildFolder,
  osMessage,
  OutFile,
  publishBuild,
  Syncs,
} from "./build_folder.ts";
import {
  type BuildIndexError,
  type BuildIndexOptions,
  type BuildIndexResult,
  corpusSha256,
  ivfOptionsProblem,
  metaOf,
  readerOf,
  walkCorpus,
} from "./build_input.ts";
import {
  type GlobalQuantizer,
  ivfParameters,
  pq4SplitProblem,
  quantizerProblem,
  trainGlobal,
} from "./train_quantizer.ts";

export type { BuildIndexError, BuildIndexOptions, BuildIndexResult } from "./build_input.ts";
export { trainQuantizer, type TrainQuantizerOptions } from "./train_quantizer.ts";
/** The temporary folder of a build of the index folder `out` (see `temp.ts`). */
export { indexTempFolder } from "./temp.ts";

/** Writes the files of an exact index, one paragraph at a time. */
class ExactWriter {
  readonly #files: OutFile[] = [];
  readonly #vectors?: OutFile;
  readonly #data?: OutFile;
  readonly #indices?: OutFile;
  readonly #indptr?: OutFile;
  readonly #paragraphs: OutFile;
  readonly #enc = new TextEncoder();
  #d = -1;
  #dtype: "f32" | "f16" | undefined;
  #first = "";
  #stamp?: Int32Array;
  rows = 0;
  nnz = 0;
  paragraphs = 0;
  /** Paragraph ids written, in order. */
  readonly ids: string[] = [];
  /** First row of each paragraph written, and the row count (paragraphs + 1 entries). */
  readonly starts: number[] = [0];
  offsetsFrom: "metadata" | "context" | null = null;

  constructor(
    readonly dir: string,
    readonly sparse: boolean,
    readonly metric: IndexMetric,
  ) {
    const open = (name: string) => {
      const f = new OutFile(`${dir}/${name}`);
      this.#files.push(f);
      return f;
    };
    if (sparse) {
      this.#data = open("data.f32");
      this.#indices = open("indices.i32");
      this.#indptr = open("indptr.i64");
      this.#indptr.write(bytesOf(new BigInt64Array([0n])));
    }
    this.#paragraphs = open(PARAGRAPHS_FILE);
  }

  #checkShape(m: Matrix, label: string): void {
    const dtype = m.kind === "dense" ? m.dtype : "f32";
    if (this.#d < 0) {
      this.#d = m.cols;
      this.#dtype = dtype;
      this.#first = label;
      if (!this.sparse) this.#open(`vectors.${dtype}`);
      return;
    }
    if (m.cols !== this.#d) {
      throw new InputError({
        file: label,
        where: "",
        message: `d = ${m.cols} but ${this.#first} has d = ${this.#d} (one index needs one d)`,
      });
    }
    if (dtype !== this.#dtype) {
      throw new InputError({
        file: label,
        where: "",
        message: `dtype ${dtype} but ${this.#first} is ${this.#dtype} (one index needs one dtype)`,
      });
    }
  }

  #vectorsFile?: OutFile;
  #open(name: string): void {
    const f = new OutFile(`${this.dir}/${name}`);
    this.#files.unshift(f);
    this.#vectorsFile = f;
  }

  /**
   * Takes d and dtype from `m` without adding a paragraph (a shard that
   * gets no paragraph of the corpus: its files are empty, its shape the
   * corpus's).
   */
  shapeFrom(m: Matrix, label: string): void {
    this.#checkShape(m, label);
  }

  /**
   * Adds one paragraph: its matrix, phrases and (optional) offsets; a
   * shard's paragraph also its place in the corpus (`position`).
   */
  add(
    id: string,
    ctx: ContextDump,
    label: string,
    offsets: readonly (readonly [number, number])[] | null,
    text: { title?: string; context?: string } = {},
    position?: number,
  ): void {
    const m = ctx.matrix, n = ctx.phrases.length;
    if (n === 0) {
      throw new InputError({
        file: label,
        where: "",
        message: "the paragraph has no phrases (an index needs at least one per paragraph)",
      });
    }
    this.#checkShape(m, label);
    if (m.kind === "dense") {
      this.#vectorsFile!.write(bytesOf(m.data));
    } else {
      if (this.metric === "l2") this.#noRepeats(m, label);
      const base = this.nnz;
      const used = m.indptr[m.rows] - m.indptr[0];
      const ptr = new BigInt64Array(m.rows);
      for (let i = 0; i < m.rows; i++) ptr[i] = BigInt(base + m.indptr[i + 1] - m.indptr[0]);
      this.#data!.write(bytesOf(m.data.subarray(m.indptr[0], m.indptr[m.rows])));
      this.#indices!.write(bytesOf(m.indices.subarray(m.indptr[0], m.indptr[m.rows])));
      this.#indptr!.write(bytesOf(ptr));
      this.nnz += used;
    }
    const phrases: string[] = [];
    for (let i = 0; i < n; i++) phrases.push(ctx.phrases.at(i));
    const line = JSON.stringify({
      id,
      rows: n,
      phrases,
      offsets,
      ...text,
      ...(position !== undefined ? { position } : {}),
    }) + "\n";
    this.#paragraphs.write(this.#enc.encode(line));
    this.rows += n;
    this.paragraphs++;
    this.ids.push(id);
    this.starts.push(this.rows);
  }

  #noRepeats(m: Matrix & { kind: "csr" }, label: string): void {
    if (this.#stamp === undefined || this.#stamp.length < m.cols) {
      this.#stamp = new Int32Array(m.cols).fill(-1);
    }
    const s = this.#stamp;
    for (let i = 0; i < m.rows; i++) {
      const tag = this.rows + i;
      for (let k = m.indptr[i]; k < m.indptr[i + 1]; k++) {
        if (s[m.indices[k]] === tag) {
          throw new InputError({
            file: label,
            where: `row ${i}`,
            message: `column ${m.indices[k]} is stored twice (the l2 metric needs canonical rows)`,
          });
        }
        s[m.indices[k]] = tag;
      }
    }
  }

  /** Finishes every file (their fsyncs started in `syncs`); the header. */
  finish(order: IndexHeader["order"], syncs: Syncs): IndexHeader {
    const files: Record<string, IndexFile> = {};
    for (const f of this.#files) files[f.path.slice(this.dir.length + 1)] = f.finish(syncs);
    if (this.#d < 0) {
      throw new InputError({ file: this.dir, where: "", message: "no paragraphs to index" });
    }
    return {
      format: INDEX_FORMAT,
      version: INDEX_VERSION,
      kind: "exact",
      metric: this.metric,
      vectors: this.sparse ? "csr" : "dense",
      dtype: this.#dtype ?? "f32",
      d: this.#d,
      phrases: this.rows,
      paragraphs: this.paragraphs,
      nnz: this.sparse ? this.nnz : null,
      order,
      offsets: this.offsetsFrom,
      parameters: {},
      files,
    };
  }

  close(): void {
    for (const f of this.#files) f.close();
  }
}

/** Offsets of `phrases` found in `context` (see the module notes), or a reason. */
function findOffsets(
  context: string,
  phrases: readonly string[],
): [number, number][] | string {
  const cp = codePointIndex(context);
  const out: [number, number][] = [];
  let prev = 0;
  for (let i = 0; i < phrases.length; i++) {
    let at = context.indexOf(phrases[i], prev);
    if (at < 0) at = context.indexOf(phrases[i]);
    if (at < 0) return `phrase ${i} ${JSON.stringify(phrases[i])} is not in the paragraph's text`;
    out.push([cp[at], cp[at + phrases[i].length]]);
    prev = at;
  }
  return out;
}

/**
 * Turns the exact index in `tmp` into an `ivf-pq` one (see the module
 * notes); with `global` (a shard's), its rows are encoded with that
 * quantizer and nothing is trained.
 */
const ivfStage = (
  h: IndexHeader,
  w: ExactWriter,
  tmp: string,
  opts: BuildIndexOptions,
  global: GlobalQuantizer | undefined,
  pool: EncodeWorkers | undefined,
  syncs: Syncs,
): Effect.Effect<IndexHeader, InputError | FileError> =>
  Effect.gen(function* () {
    const nlist = opts.nlist!, bpv = opts.bpv!;
    const refuse = (message: string) =>
      Effect.fail(new InputError({ file: opts.contextEmb, where: "", message }));
    const D = opts.denseDims;
    if (D !== undefined && D > h.d) {
      return yield* refuse(`--dense-dims ${D} is larger than the dump's d = ${h.d}`);
    }
    if (D !== undefined && D % bpv !== 0) {
      return yield* refuse(
        `--bpv ${bpv} does not divide --dense-dims ${D} (PQ splits the dense block into bpv parts)`,
      );
    }
    if (D === undefined && h.d % bpv !== 0) {
      return yield* refuse(`--bpv ${bpv} does not divide d = ${h.d} (PQ splits d into bpv parts)`);
    }
    const bits = opts.pqBits ?? 8;
    const pb = pq4SplitProblem(bits, bpv, h.d, D);
    if (pb !== undefined) return yield* refuse(pb);
    const wanted = opts.trainParagraphs ?? DEFAULT_TRAIN_PARAGRAPHS;
    const train = global !== undefined
      ? []
      : yield* Effect.promise(() => trainSample(w.ids, wanted));
    const trainPhrases = train.reduce((n, p) => n + w.starts[p + 1] - w.starts[p], 0);
    if (global === undefined && nlist > trainPhrases) {
      return yield* refuse(
        `--nlist ${nlist} is larger than the ${trainPhrases} training phrases ` +
          `(${train.length} paragraphs; see --train-paragraphs)`,
      );
    }
    const files: Record<string, IndexFile> = { ...h.files };
    yield* Effect.tryPromise({
      // An interrupted build (SIGINT, a failed run) stops its encoding and its workers.
      try: async (signal) => {
        const block = D === undefined ? undefined : csrDenseRows(tmp, h.phrases, D);
        let built;
        try {
          built = await buildIvfPq({
            vectors: `${tmp}/vectors.${h.dtype}`,
            dtype: h.dtype,
            d: D ?? h.d,
            starts: w.starts,
            train,
            nlist,
            bpv,
            ...(bits === 4 ? { bits } : {}),
            scratch: tmp,
            rowsOf: block?.read,
            onProgress: (rows) => opts.onIvfProgress?.(rows, h.phrases),
            signal,
            writeBudget: opts.ivfTuning?.writeBudget,
            encodeBlock: opts.ivfTuning?.encodeBlock,
            encodeThreads: opts.ivfTuning?.encodeThreads,
            ...(global !== undefined ? { quantizer: global.quantizer } : {}),
            ...(pool !== undefined ? { pool } : {}),
          });
        } finally {
          block?.close();
        }
        try {
          Deno.mkdirSync(`${tmp}/ivf`);
          const write = (name: string, chunks: Iterable<ArrayBufferView>) => {
            const f = new OutFile(`${tmp}/${name}`);
            try {
              for (const c of chunks) f.write(bytesOf(c));
              files[name] = f.finish(syncs);
            } finally {
              f.close();
            }
          };
          write(IVF_FILES.centroids, [built.centroids]);
          write(IVF_FILES.codebooks, [built.codebooks]);
          write(IVF_FILES.offsets, [built.offsets]);
          write(IVF_FILES.rows, built.rows());
          write(IVF_FILES.codes, built.codes());
          fsyncDir(`${tmp}/ivf`);
        } finally {
          // The scratch files are gone before the folder is renamed into place.
          built.close();
        }
      },
      catch: (e) =>
        e instanceof InputError || e instanceof FileError
          ? e
          : new FileError({ file: `${tmp}/ivf`, message: osMessage(e) }),
    });
    return {
      ...h,
      kind: "ivf-pq",
      parameters: global?.parameters ??
        ivfParameters(nlist, bpv, train.length, trainPhrases, D, bits),
      files,
    };
  });

/**
 * Builds an exact index from a context dump (see the module notes).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { writeContextDump } from "../../io/dump/writer.ts";
 * import { buildIndex } from "./build.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.mkdirSync(`${dir}/c`);
 * await Effect.runPromise(writeContextDump(`${dir}/c`, {
 *   id: "T_0",
 *   phrases: [{ text: "Paris", start: 0, end: 5 }],
 *   matrix: { kind: "dense", rows: 1, cols: 4, dtype: "f32", data: new Float32Array([1, 0, 0, 0]) },
 * }, { sparse: false, compressed: false }));
 * const r = await Effect.runPromise(buildIndex({ contextEmb: `${dir}/c`, out: `${dir}/ix` }));
 * if (r.header.phrases !== 1 || r.header.d !== 4) throw new Error(JSON.stringify(r.header));
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export const buildIndex = (
  opts: BuildIndexOptions,
): Effect.Effect<BuildIndexResult, BuildIndexError> =>
  Effect.gen(function* () {
    const out = opts.out.replace(/\/+$/, "") || "/";
    const metric = opts.metric ?? "ip";
    const sparse = opts.sparse === true;
    const shard = opts.shard;
    const refuse = (message: string) =>
      Effect.fail(new InputError({ file: opts.contextEmb, where: "", message }));
    if (opts.quantizer !== undefined) {
      if (shard === undefined) {
        return yield* refuse(
          "--quantizer is for the shards of an index (give --shards and --shard)",
        );
      }
      if (
        opts.nlist !== undefined || opts.bpv !== undefined || opts.denseDims !== undefined ||
        opts.trainParagraphs !== undefined || opts.pqBits !== undefined
      ) {
        return yield* refuse(
          "--quantizer fixes the IVF-PQ parameters: drop --nlist, --bpv, --pq-bits, " +
            "--dense-dims and --train-paragraphs",
        );
      }
    }
    if (
      shard !== undefined &&
      (!Number.isSafeInteger(shard.count) || shard.count < 1 || shard.index < 0 ||
        shard.index >= shard.count || !Number.isSafeInteger(shard.index))
    ) {
      return yield* refuse(`bad shard ${shard.index} of ${shard.count}`);
    }
    // The quantizer is read first: a missing or bad one is refused before any work.
    const q = opts.quantizer === undefined
      ? undefined
      : yield* lift(() => readQuantizer(opts.quantizer!), opts.quantizer);
    if (opts.quantizer === undefined) {
      const why = ivfOptionsProblem(opts, sparse);
      if (why !== undefined) {
        return yield* Effect.fail(new InputError({ file: why[0], where: "", message: why[1] }));
      }
    }
    const tmp = tmpName(out);
    const ivfWanted = q !== undefined || opts.nlist !== undefined || opts.bpv !== undefined;
    const encodeBlock = opts.ivfTuning?.encodeBlock ?? ENCODE_BLOCK;
    const encodeThreads = opts.ivfTuning?.encodeThreads ?? ENCODE_THREADS;
    return yield* Effect.acquireUseRelease(
      lift(() => {
        const f = openBuildFolder(out, tmp, opts.overwrite === true);
        let dump: DumpSourceSync | undefined;
        try {
          dump = openDumpSync(opts.contextEmb, { sparse });
          const w = new ExactWriter(f.build, sparse, metric);
          return {
            ...f,
            dump,
            w,
            done: false,
            pool: undefined as EncodeWorkers | undefined,
            early: undefined as EarlyTraining | undefined,
          };
        } catch (e) {
          dump?.close();
          closeBuildFolder(f, false);
          throw e;
        }
      }, tmp),
      (st) =>
        Effect.gen(function* () {
          const { dump, w, build } = st;
          // The data files' fsyncs, run while the build goes on (the exact files' during the training).
          const syncs = new Syncs();
          const read = readerOf(dump, opts);
          // Every paragraph of the corpus has a place (its position); a shard keeps its own.
          let position = -1;
          let first: { id: string; stem: string } | undefined;
          const add = (id: string, stem: string, context?: string, title?: string) => {
            position++;
            if (shard !== undefined) {
              first ??= { id, stem };
              if (shardOf(metaOf(dump, stem)?.id ?? id, shard.count) !== shard.index) return;
            }
            const c = read(id);
            if ("missing" in c) {
              throw new InputError({
                file: c.missing,
                where: "",
                message: `missing: paragraph ${JSON.stringify(id)} has no dump file`,
              });
            }
            const meta = metaOf(dump, stem);
            let offsets: [number, number][] | null = null;
            if (meta?.offsets !== undefined) {
              if (meta.offsets.length !== c.phrases.length) {
                throw new InputError({
                  file: dump.label(`${stem}.meta.json`),
                  where: "",
                  message: `${meta.offsets.length} offsets but ${c.phrases.length} phrases`,
                });
              }
              offsets = meta.offsets;
              w.offsetsFrom ??= "metadata";
            } else if (context !== undefined) {
              const phrases: string[] = [];
              for (let i = 0; i < c.phrases.length; i++) phrases.push(c.phrases.at(i));
              const found = findOffsets(context, phrases);
              if (typeof found === "string") {
                throw new InputError({
                  file: dump.label(`${stem}.json`),
                  where: "",
                  message: found,
                });
              }
              offsets = found;
              w.offsetsFrom = "context";
            }
            const pid = meta?.id ?? id;
            const text = context ?? meta?.context;
            w.add(
              pid,
              c,
              dump.label(`${stem}.npz`),
              offsets,
              {
                ...(title !== undefined || text !== undefined
                  ? { title: title ?? pid.replace(/_\d+$/, "") }
                  : {}),
                ...(text !== undefined ? { context: text } : {}),
              },
              shard !== undefined ? position : undefined,
            );
            opts.onProgress?.(w.paragraphs, w.rows);
            // An IVF-PQ build large enough for the encode workers starts them now: they load
            // (and compile their kernels) while this thread writes the exact files.
            if (st.pool === undefined && ivfWanted && w.rows > encodeBlock) {
              st.pool = encodePool(encodeThreads);
              st.pool?.warm();
            }
          };
          // An unsharded dense IVF-PQ build trains its quantizer on the encode workers while
          // this thread writes the exact files (train_early.ts; the same bytes).
          if (
            ivfWanted && q === undefined && shard === undefined && !sparse &&
            opts.denseDims === undefined && encodeThreads >= 2 &&
            opts.ivfTuning?.trainWhileWriting !== false && encodeWorkersAllowed()
          ) {
            st.early = yield* startEarlyTraining(opts, dump, () => {
              st.pool ??= encodePool(encodeThreads);
              st.pool?.warm();
              return st.pool;
            }, encodeBlock);
          }
          yield* walkCorpus(opts, dump, add, st.early?.pause);
          if (shard !== undefined && w.paragraphs === 0 && first !== undefined) {
            // A shard the assignment gave nothing: empty files of the corpus's d and dtype.
            const c = read(first.id);
            if (!("missing" in c)) w.shapeFrom(c.matrix, dump.label(`${first.stem}.npz`));
          }
          let header = yield* lift(
            () => w.finish(opts.context !== undefined ? "dataset" : "sorted-names", syncs),
            tmp,
          );
          if (shard !== undefined) {
            header = {
              ...header,
              shard: {
                index: shard.index,
                count: shard.count,
                assign: SHARD_RULE,
                corpus_sha256: yield* corpusSha256(opts, dump),
                corpus_paragraphs: position + 1,
              },
            };
          }
          if (q !== undefined) {
            const why = quantizerProblem(q.manifest, header, sparse);
            if (why !== undefined) {
              return yield* Effect.fail(
                new InputError({ file: opts.quantizer!, where: "", message: why }),
              );
            }
            header = yield* ivfStage(
              header,
              w,
              build,
              {
                ...opts,
                nlist: q.manifest.parameters.nlist as number,
                bpv: q.manifest.parameters.bpv as number,
                ...(q.manifest.dense_dims !== undefined
                  ? { denseDims: q.manifest.dense_dims }
                  : {}),
                // The quantizer's bits (4: its codebooks are 2·bpv × 16 entries).
                ...(q.manifest.parameters.bits === 4 ? { pqBits: 4 as const } : {}),
              },
              { quantizer: q.quantizer, parameters: q.manifest.parameters },
              st.pool,
              syncs,
            );
          } else if (opts.nlist !== undefined || opts.bpv !== undefined) {
            // A shard trains on the whole corpus's sample (the unsharded index's quantizer); an
            // unsharded build takes what it trained meanwhile, if it is its own sample's.
            const early = st.early, d = header.d;
            const global = shard !== undefined
              ? yield* trainGlobal(opts, dump, header.d, header.vectors)
              : early !== undefined
              ? yield* Effect.promise(() => early.take(w.ids, w.starts, d))
              : undefined;
            if (early !== undefined) opts.ivfTuning?.trainedWhileWriting?.(global !== undefined);
            header = yield* ivfStage(header, w, build, opts, global, st.pool, syncs);
          }
          // Every data file on disk before the folder is renamed into place.
          yield* Effect.tryPromise({
            try: () => syncs.done(),
            catch: (e) =>
              e instanceof FileError ? e : new FileError({ file: build, message: osMessage(e) }),
          });
          yield* lift(() => {
            const f = new OutFile(`${build}/${INDEX_HEADER}`);
            f.write(new TextEncoder().encode(headerJson(header)));
            f.finish();
            publishBuild(st, out);
            st.done = true;
          }, out);
          return { header, out };
        }),
      (st) =>
        Effect.sync(() => {
          st.early?.close();
          st.pool?.close();
          st.w.close();
          st.dump.close();
          closeBuildFolder(st, st.done);
        }),
    );
  });
