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
 * without `nlist`/`bpv`, or below 1.
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
 * `INDEX_DIR.<8 hex>.tmp` (the hex a hash of the target's absolute path): it
 * first holds an exclusive `flock` on its `lock` file, so that a second
 * build of the same folder started meanwhile stops at once with one line
 * (an {@linkcode InputError}, exit 2) and touches nothing; then, under the
 * lock, it checks the target (so a build that just finished is an index
 * that `--overwrite` must be given to replace), writes the index into
 * `build/` there, every file fsynced, and renames it into place (a replaced
 * index goes to `old/` there for a moment), then removes the lock file and
 * the folder. A build that was killed leaves that folder, and the kernel
 * drops its lock; the next build of the same target takes the lock, removes
 * what the killed one left and starts again, and since nothing in the index
 * depends on time or place, it writes the same bytes.
 *
 * @module
 */
import { indexTempFolder, tmpName } from "./temp.ts";
import { createHash, type Hash } from "node:crypto";
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { dumpStem, StemRegistry, unsafeIdReason } from "../../io/dump/names.ts";
import { codePointIndex } from "../../io/dump/writer.ts";
import { type ContextDump, type DumpSourceSync, openDumpSync } from "../../io/dump/reader_sync.ts";
import { csrDenseRows } from "./ivfpq/hybrid.ts";
import { FileError, InputError, type UsageError } from "../../io/errors.ts";
import { isSquadShaped, openDataset, passagesOfSource } from "../../io/datasets/read.ts";
import type { Matrix } from "../../io/matrix.ts";
import { type SquadReadError, squadRecordStream } from "../../io/squad.ts";
import { IVF_ENGINE, IVF_FILES } from "./ivfpq/ivfpq.ts";
import {
  buildIvfPq,
  DEFAULT_TRAIN_PARAGRAPHS,
  ENCODE_THREADS,
  IVF_SEED,
  type IvfBuildOptions,
  type IvfQuantizer,
  KMEANS_ITERATIONS,
  PQ4_ROWS_PER_CENTROID,
  TRAIN_SAMPLE_RULE,
  trainIvfPq,
  trainSample,
} from "./ivfpq/train.ts";
import { PQ4_KSUB } from "./ivfpq/fastscan.ts";
import { halfTable } from "../dense_f64.ts";
import {
  QUANTIZER_FILES,
  QUANTIZER_FORMAT,
  QUANTIZER_MANIFEST,
  quantizerJson,
  type QuantizerManifest,
  readQuantizer,
} from "./ivfpq/quantizer.ts";
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
  /** Paragraphs the IVF-PQ quantizers are trained on (default 100; see `ivfpq/ivfpq.ts`). */
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
   * Internal knobs of the IVF-PQ encoding and writing (`ivfpq/ivfpq.ts`:
   * `writeBudget`, `encodeBlock`, `encodeThreads`), for tests and
   * benchmarks; the bytes written do not depend on them.
   */
  readonly ivfTuning?: Pick<IvfBuildOptions, "writeBudget" | "encodeBlock" | "encodeThreads">;
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

const osMessage = (e: unknown) => e instanceof Error ? e.message : String(e);

/** A data file written through a buffer, hashed as it goes. */
class OutFile {
  readonly #f: Deno.FsFile;
  readonly #hash: Hash = createHash("sha256");
  readonly #buf = new Uint8Array(1 << 20);
  #fill = 0;
  bytes = 0;

  constructor(readonly path: string) {
    this.#f = Deno.openSync(path, { write: true, createNew: true, mode: 0o666 });
  }

  write(b: Uint8Array): void {
    this.#hash.update(b);
    this.bytes += b.byteLength;
    if (this.#fill + b.byteLength > this.#buf.length) this.#flush();
    if (b.byteLength >= this.#buf.length) this.#writeAll(b);
    else {
      this.#buf.set(b, this.#fill);
      this.#fill += b.byteLength;
    }
  }

  #writeAll(b: Uint8Array): void {
    let o = 0;
    while (o < b.byteLength) o += this.#f.writeSync(b.subarray(o));
  }

  #flush(): void {
    this.#writeAll(this.#buf.subarray(0, this.#fill));
    this.#fill = 0;
  }

  /** Flushes, fsyncs and closes; the file's entry for the header. */
  finish(): IndexFile {
    this.#flush();
    this.#f.syncSync();
    this.#f.close();
    return { bytes: this.bytes, sha256: this.#hash.digest("hex") };
  }

  close(): void {
    try {
      this.#f.close();
    } catch { /* closed */ }
  }
}

const bytesOf = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

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

  /** Finishes every file; the header. */
  finish(order: IndexHeader["order"]): IndexHeader {
    const files: Record<string, IndexFile> = {};
    for (const f of this.#files) files[f.path.slice(this.dir.length + 1)] = f.finish();
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

/** Offsets from a `<stem>.meta.json` side file, when the dump has one. */
function metaOf(
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
  global?: GlobalQuantizer,
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
            ...opts.ivfTuning,
            ...(global !== undefined ? { quantizer: global.quantizer } : {}),
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
              files[name] = f.finish();
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

/** A short hex name for the target's temporary folder (its absolute path hashed). */

function statOrUndefined(path: string): Deno.FileInfo | undefined {
  try {
    return Deno.lstatSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw new FileError({ file: path, message: osMessage(e) });
  }
}

/**
 * `dir` when it does not exist (a build that makes it to hold its target
 * removes it again if it does not finish), else `undefined` (also when it
 * may not be looked at: a sandboxed shard build may not read INDEX_DIR).
 */
function absentFolder(dir: string): string | undefined {
  try {
    Deno.lstatSync(dir);
    return undefined;
  } catch (e) {
    return e instanceof Deno.errors.NotFound ? dir : undefined;
  }
}

/** The lock file in a build's temporary folder (held with `flock`, released by the kernel). */
const LOCK_FILE = "lock";
/** The folder a build writes in its temporary folder, renamed into place when complete. */
const BUILD_FOLDER = "build";
/** Where a replaced index lies for a moment, in the temporary folder. */
const OLD_FOLDER = "old";

/**
 * Takes the build lock of `out`: creates the temporary folder `tmp` if need
 * be and holds an exclusive `flock` on `tmp/lock`. Another build holding it
 * is an {@linkcode InputError} (one line; nothing touched). The kernel
 * releases the lock of a killed build, so its folder is taken over.
 */
function lockBuild(tmp: string, out: string): Deno.FsFile {
  for (let attempt = 0;; attempt++) {
    Deno.mkdirSync(tmp, { recursive: true });
    let f: Deno.FsFile;
    try {
      f = Deno.openSync(`${tmp}/${LOCK_FILE}`, {
        read: true,
        write: true,
        create: true,
        mode: 0o666,
      });
    } catch (e) {
      // The holder before us removed the folder as we came: start again.
      if (e instanceof Deno.errors.NotFound && attempt < 100) continue;
      throw e;
    }
    if (!f.tryLockSync(true)) {
      f.close();
      throw new InputError({
        file: out,
        where: "",
        message: `another index build into this folder is running (it holds ${tmp}/${LOCK_FILE})` +
          "; wait for it to end",
      });
    }
    // Still the file at that name? (The holder before us may have removed it as it ended.)
    const held = f.statSync();
    let now: Deno.FileInfo | undefined;
    try {
      now = Deno.lstatSync(`${tmp}/${LOCK_FILE}`);
    } catch { /* removed */ }
    if (now !== undefined && now.ino === held.ino && now.dev === held.dev) return f;
    f.close();
    if (attempt >= 100) {
      throw new FileError({ file: `${tmp}/${LOCK_FILE}`, message: "cannot take the build lock" });
    }
  }
}

/**
 * Ends a build: removes the lock file and the temporary folder (when
 * empty), then unlocks; `parent`, the folder the build made to hold the
 * target (a shard's `INDEX_DIR`) when it did not finish, is removed too
 * when nothing else is in it.
 */
function unlockBuild(tmp: string, lock: Deno.FsFile, parent?: string): void {
  try {
    Deno.removeSync(`${tmp}/${LOCK_FILE}`);
    // Not recursive: a build that came after the lock file was removed may have made its own.
    Deno.removeSync(tmp);
    if (parent !== undefined) Deno.removeSync(parent);
  } catch { /* gone, or another build's lock file is in it */ }
  lock.close();
}

/** Refuses a target that cannot be (re)placed; whether an old index is to be replaced. */
function checkTarget(out: string, overwrite: boolean, marker = INDEX_HEADER): boolean {
  const st = statOrUndefined(out);
  if (st === undefined) return false;
  if (!st.isDirectory) {
    throw new InputError({
      file: out,
      where: "",
      message: "is a file, not a folder (an index is a folder)",
    });
  }
  if (!overwrite) {
    throw new InputError({
      file: out,
      where: "",
      message: "exists; pass --overwrite to replace it",
    });
  }
  const names = [...Deno.readDirSync(out)].map((e) => e.name);
  if (names.length > 0 && !names.includes(marker)) {
    throw new InputError({
      file: out,
      where: "",
      message: `exists and is not ${
        marker === INDEX_HEADER ? "an index" : "a quantizer"
      } folder; it is not replaced`,
    });
  }
  return true;
}

function fsyncDir(path: string): void {
  try {
    const f = Deno.openSync(path, { read: true });
    try {
      f.syncSync();
    } finally {
      f.close();
    }
  } catch { /* some file systems cannot fsync a folder */ }
}

function parentOf(p: string): string {
  const s = p.replace(/\/+$/, "");
  const i = s.lastIndexOf("/");
  return i < 0 ? "." : i === 0 ? "/" : s.slice(0, i);
}

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
    return yield* Effect.acquireUseRelease(
      lift(() => {
        // A shard's INDEX_DIR made here goes again if the build does not finish.
        const made = absentFolder(parentOf(out));
        // One build of a folder at a time: the loser of a race stops here, touching nothing.
        const lock = lockBuild(tmp, out);
        const build = `${tmp}/${BUILD_FOLDER}`;
        let dump: DumpSourceSync | undefined;
        try {
          // Decided under the lock: a build that just finished has renamed its folder into place.
          const replace = checkTarget(out, opts.overwrite === true);
          // A killed build's files (or an older phraseval's): rewritten from the start.
          for (const e of Deno.readDirSync(tmp)) {
            if (e.name !== LOCK_FILE) Deno.removeSync(`${tmp}/${e.name}`, { recursive: true });
          }
          Deno.mkdirSync(build);
          dump = openDumpSync(opts.contextEmb, { sparse });
          const w = new ExactWriter(build, sparse, metric);
          return { dump, w, lock, build, replace, made, done: false };
        } catch (e) {
          dump?.close();
          try {
            Deno.removeSync(build, { recursive: true });
          } catch { /* not made */ }
          unlockBuild(tmp, lock, made);
          throw e;
        }
      }, tmp),
      (st) =>
        Effect.gen(function* () {
          const { dump, w, build } = st;
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
          };
          yield* walkCorpus(opts, dump, add);
          if (shard !== undefined && w.paragraphs === 0 && first !== undefined) {
            // A shard the assignment gave nothing: empty files of the corpus's d and dtype.
            const c = read(first.id);
            if (!("missing" in c)) w.shapeFrom(c.matrix, dump.label(`${first.stem}.npz`));
          }
          let header = yield* lift(
            () => w.finish(opts.context !== undefined ? "dataset" : "sorted-names"),
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
            header = yield* ivfStage(header, w, build, {
              ...opts,
              nlist: q.manifest.parameters.nlist as number,
              bpv: q.manifest.parameters.bpv as number,
              ...(q.manifest.dense_dims !== undefined ? { denseDims: q.manifest.dense_dims } : {}),
              // The quantizer's bits (4: its codebooks are 2·bpv × 16 entries).
              ...(q.manifest.parameters.bits === 4 ? { pqBits: 4 as const } : {}),
            }, { quantizer: q.quantizer, parameters: q.manifest.parameters });
          } else if (opts.nlist !== undefined || opts.bpv !== undefined) {
            // A shard trains on the whole corpus's sample (the unsharded index's quantizer).
            const global = shard === undefined
              ? undefined
              : yield* trainGlobal(opts, dump, header.d, header.vectors);
            header = yield* ivfStage(header, w, build, opts, global);
          }
          yield* lift(() => {
            const f = new OutFile(`${build}/${INDEX_HEADER}`);
            f.write(new TextEncoder().encode(headerJson(header)));
            f.finish();
            fsyncDir(build);
            if (st.replace) {
              const old = `${tmp}/${OLD_FOLDER}`;
              Deno.renameSync(out, old);
              Deno.renameSync(build, out);
              Deno.removeSync(old, { recursive: true });
            } else Deno.renameSync(build, out);
            fsyncDir(parentOf(out));
            st.done = true;
          }, out);
          return { header, out };
        }),
      (st) =>
        Effect.sync(() => {
          st.w.close();
          st.dump.close();
          if (!st.done) {
            try {
              Deno.removeSync(st.build, { recursive: true });
            } catch { /* already gone */ }
          }
          unlockBuild(tmp, st.lock, st.done ? undefined : st.made);
        }),
    );
  });

/** The checks of the IVF-PQ options made before anything is read: `[file, message]` or `undefined`. */
function ivfOptionsProblem(
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

/** Runs `f`, a failure an {@linkcode InputError} or {@linkcode FileError} (naming `file`). */
const lift = <A>(f: () => A, file: string) =>
  Effect.try({
    try: f,
    catch: (e) =>
      e instanceof InputError || e instanceof FileError
        ? e
        : new FileError({ file, message: osMessage(e) }),
  });

/** Reads a paragraph of the dump, a dense dump given for a hybrid one refused in this command's terms. */
const readerOf = (dump: DumpSourceSync, opts: BuildIndexOptions) => (id: string) => {
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
 * file stem, and its text and title when the context file has them.
 */
const walkCorpus = (
  opts: BuildIndexOptions,
  dump: DumpSourceSync,
  visit: (id: string, stem: string, context?: string, title?: string) => void,
): Effect.Effect<void, BuildIndexError> =>
  Effect.gen(function* () {
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
          lift(() => {
            if (r.kind !== "article") return;
            for (const p of r.paragraphs) visit(p.id, dumpStem(p.id), p.context, p.title);
          }, opts.contextEmb));
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
            }, opts.contextEmb),
        );
      }
    } else {
      const names = yield* lift(() => dump.list(), opts.contextEmb);
      for (const name of names) {
        if (!name.endsWith(".npz")) continue;
        const stem = name.slice(0, -4);
        yield* lift(() => visit(stem, stem), opts.contextEmb);
      }
    }
  });

/**
 * The corpus's sha256 (`ShardInfo.corpus_sha256`): of the `--context`
 * file's bytes, or without one, of the dump's sorted `.npz` stems, each
 * followed by a newline.
 */
const corpusSha256 = (
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

/** What a quantizer trained on the corpus's sample is, with what the header records of it. */
interface GlobalQuantizer {
  /** The centroids and codebooks. */
  readonly quantizer: IvfQuantizer;
  /** The IVF-PQ parameters of the header. */
  readonly parameters: Readonly<Record<string, unknown>>;
}

/** The float32 rows of a paragraph's matrix the IVF-PQ trains on: all d, or a hybrid's first `D`. */
function trainRowsOf(m: Matrix, D: number | undefined): Float32Array {
  if (m.kind === "dense") {
    if (m.dtype === "f32") return m.data as Float32Array;
    const bits = new Uint16Array(m.data.buffer, m.data.byteOffset, m.data.length);
    const t = halfTable(), out = new Float32Array(bits.length);
    for (let i = 0; i < bits.length; i++) out[i] = t[bits[i]];
    return out;
  }
  // The dense block of CSR rows, repeats summed in stored order (`ivfpq/hybrid.ts`'s `csrDenseRows`).
  const out = new Float32Array(m.rows * D!);
  for (let i = 0; i < m.rows; i++) {
    for (let k = m.indptr[i]; k < m.indptr[i + 1]; k++) {
      const c = m.indices[k];
      if (c < D!) out[i * D! + c] += m.data[k];
    }
  }
  return out;
}

/**
 * Trains the IVF-PQ quantizer of the whole corpus: one pass over it (ids
 * only) picks the training sample as `ivfpq/train.ts` does (the
 * `trainParagraphs` paragraphs whose sha256(id) sorts first), then their
 * rows are read from the dump in corpus order and trained on, so the
 * quantizer is the unsharded index's. `d` and `vectors` are the dump's
 * when known (a shard's), else taken from the sample.
 */
const trainGlobal = (
  opts: BuildIndexOptions,
  dump: DumpSourceSync,
  knownD?: number,
  knownVectors?: "dense" | "csr",
): Effect.Effect<GlobalQuantizer & { d: number; corpusParagraphs: number }, BuildIndexError> =>
  Effect.gen(function* () {
    const nlist = opts.nlist!, bpv = opts.bpv!, D = opts.denseDims;
    const refuse = (message: string) =>
      Effect.fail(new InputError({ file: opts.contextEmb, where: "", message }));
    const wanted = opts.trainParagraphs ?? DEFAULT_TRAIN_PARAGRAPHS;
    // The `wanted` smallest (key, position): the sample rule of `trainSample`.
    let kept: { key: string; at: number; id: string; stem: string }[] = [];
    const order = (a: { key: string; at: number }, b: { key: string; at: number }) =>
      a.key < b.key ? -1 : a.key > b.key ? 1 : a.at - b.at;
    let at = -1;
    yield* walkCorpus(opts, dump, (id, stem) => {
      at++;
      const pid = metaOf(dump, stem)?.id ?? id;
      kept.push({ key: createHash("sha256").update(pid, "utf8").digest("hex"), at, id, stem });
      if (kept.length >= 2 * wanted + 4096) kept = kept.sort(order).slice(0, wanted);
    });
    const sample = kept.sort(order).slice(0, wanted).sort((a, b) => a.at - b.at);
    if (sample.length === 0) {
      return yield* Effect.fail(
        new InputError({ file: opts.contextEmb, where: "", message: "no paragraphs to index" }),
      );
    }
    const read = readerOf(dump, opts);
    const parts: Float32Array[] = [];
    let d = knownD, vectors = knownVectors, nt = 0;
    for (const p of sample) {
      const c = yield* lift(() => read(p.id), opts.contextEmb);
      if ("missing" in c) {
        return yield* Effect.fail(
          new InputError({
            file: c.missing,
            where: "",
            message: `missing: paragraph ${JSON.stringify(p.id)} has no dump file`,
          }),
        );
      }
      const m = c.matrix;
      d ??= m.cols;
      vectors ??= m.kind === "dense" ? "dense" : "csr";
      if (m.cols !== d) {
        return yield* Effect.fail(
          new InputError({
            file: dump.label(`${p.stem}.npz`),
            where: "",
            message: `d = ${m.cols} but the index has d = ${d} (one index needs one d)`,
          }),
        );
      }
      parts.push(trainRowsOf(m, D));
      nt += m.rows;
    }
    if (D !== undefined && D > d!) {
      return yield* refuse(`--dense-dims ${D} is larger than the dump's d = ${d}`);
    }
    if (D !== undefined && D % bpv !== 0) {
      return yield* refuse(
        `--bpv ${bpv} does not divide --dense-dims ${D} (PQ splits the dense block into bpv parts)`,
      );
    }
    if (D === undefined && d! % bpv !== 0) {
      return yield* refuse(`--bpv ${bpv} does not divide d = ${d} (PQ splits d into bpv parts)`);
    }
    const bits = opts.pqBits ?? 8;
    const pb = pq4SplitProblem(bits, bpv, d!, D);
    if (pb !== undefined) return yield* refuse(pb);
    if (nlist > nt) {
      return yield* refuse(
        `--nlist ${nlist} is larger than the ${nt} training phrases ` +
          `(${sample.length} paragraphs; see --train-paragraphs)`,
      );
    }
    const dq = D ?? d!;
    const xt = new Float32Array(nt * dq);
    let o = 0;
    for (const x of parts) {
      xt.set(x, o);
      o += x.length;
    }
    const quantizer = yield* Effect.tryPromise({
      try: (signal) =>
        // 4-bit: 2·bpv sub-quantizers of 16 centroids on at most 256·16 residuals (as
        // `buildIvfPq` trains them: the shards then hold the unsharded index's codebooks).
        trainIvfPq(xt, nt, dq, nlist, bits === 4 ? 2 * bpv : bpv, {
          threads: opts.ivfTuning?.encodeThreads ?? ENCODE_THREADS,
          signal,
          ...(bits === 4 ? { ksub: PQ4_KSUB, pqRows: PQ4_ROWS_PER_CENTROID * PQ4_KSUB } : {}),
        }),
      catch: (e) =>
        e instanceof InputError || e instanceof FileError
          ? e
          : new FileError({ file: opts.contextEmb, message: osMessage(e) }),
    });
    return {
      quantizer,
      parameters: ivfParameters(nlist, bpv, sample.length, nt, D, bits),
      d: d!,
      corpusParagraphs: at + 1,
    };
  });

/**
 * What is wrong with 4-bit PQ's split of the IVF-PQ's dimension (d, or a
 * hybrid's dense block `D`) into `2·bpv` parts, or `undefined`.
 */
function pq4SplitProblem(
  bits: number,
  bpv: number,
  d: number,
  D: number | undefined,
): string | undefined {
  const dq = D ?? d;
  if (bits !== 4 || dq % (2 * bpv) === 0) return undefined;
  return D === undefined
    ? `2 × --bpv ${bpv} does not divide d = ${d} (4-bit PQ splits d into 2·bpv parts)`
    : `2 × --bpv ${bpv} does not divide --dense-dims ${D} (4-bit PQ splits the dense block ` +
      `into 2·bpv parts)`;
}

/** The `parameters` of an `ivf-pq` header. */
const ivfParameters = (
  nlist: number,
  bpv: number,
  trainParagraphs: number,
  trainPhrases: number,
  D: number | undefined,
  bits = 8,
): Record<string, unknown> => ({
  nlist,
  bpv,
  bits,
  train_paragraphs: trainParagraphs,
  train_phrases: trainPhrases,
  train_sample: TRAIN_SAMPLE_RULE,
  kmeans_iterations: KMEANS_ITERATIONS,
  ...(bits === 4 ? { pq_rows_per_centroid: PQ4_ROWS_PER_CENTROID } : {}),
  seed: IVF_SEED,
  engine: IVF_ENGINE,
  ...(D !== undefined ? { dense_dims: D } : {}),
});

/** What makes quantizer `m` foreign to the shard whose exact header is `h`, or `undefined`. */
function quantizerProblem(
  m: QuantizerManifest,
  h: IndexHeader,
  sparse: boolean,
): string | undefined {
  if (h.shard !== undefined && m.corpus_sha256 !== h.shard.corpus_sha256) {
    return `foreign quantizer: trained on a corpus of sha256 ${m.corpus_sha256.slice(0, 12)}…, ` +
      `this shard's is ${h.shard.corpus_sha256.slice(0, 12)}… (train it on the same --context)`;
  }
  if ((m.vectors === "csr") !== sparse) {
    return `foreign quantizer: trained on a ${m.vectors} dump, this one is ${
      sparse ? "csr" : "dense"
    }`;
  }
  if (m.d !== h.d) return `foreign quantizer: trained on d = ${m.d}, the dump has d = ${h.d}`;
  return undefined;
}

/** Options of {@linkcode trainQuantizer}: a build's, with `nlist` and `bpv`. */
export type TrainQuantizerOptions =
  & Omit<BuildIndexOptions, "shard" | "quantizer" | "metric" | "onProgress" | "onIvfProgress">
  & { readonly nlist: number; readonly bpv: number };

/**
 * `index --train-only`: trains the IVF-PQ quantizer of the whole corpus
 * (its training sample, as an unsharded build of it would) and writes the
 * quantizer folder `opts.out` (`ivfpq/quantizer.ts`), atomically, as a build
 * writes an index folder (its `<out>.<hex>.tmp`, lock and rename; a
 * rerun gives the same bytes).
 */
export const trainQuantizer = (
  opts: TrainQuantizerOptions,
): Effect.Effect<{ manifest: QuantizerManifest; out: string }, BuildIndexError> =>
  Effect.gen(function* () {
    const out = opts.out.replace(/\/+$/, "") || "/";
    const sparse = opts.sparse === true;
    const why = ivfOptionsProblem(opts, sparse);
    if (why !== undefined) {
      return yield* Effect.fail(new InputError({ file: why[0], where: "", message: why[1] }));
    }
    const tmp = tmpName(out);
    return yield* Effect.acquireUseRelease(
      lift(() => {
        const made = absentFolder(parentOf(out));
        const lock = lockBuild(tmp, out);
        const build = `${tmp}/${BUILD_FOLDER}`;
        let dump: DumpSourceSync | undefined;
        try {
          const replace = checkTarget(out, opts.overwrite === true, QUANTIZER_MANIFEST);
          for (const e of Deno.readDirSync(tmp)) {
            if (e.name !== LOCK_FILE) Deno.removeSync(`${tmp}/${e.name}`, { recursive: true });
          }
          Deno.mkdirSync(build);
          dump = openDumpSync(opts.contextEmb, { sparse });
          return { dump, lock, build, replace, made, done: false };
        } catch (e) {
          dump?.close();
          try {
            Deno.removeSync(build, { recursive: true });
          } catch { /* not made */ }
          unlockBuild(tmp, lock, made);
          throw e;
        }
      }, tmp),
      (st) =>
        Effect.gen(function* () {
          const g = yield* trainGlobal(opts, st.dump);
          const sha = yield* corpusSha256(opts, st.dump);
          const manifest = yield* lift(() => {
            const files: Record<string, IndexFile> = {};
            for (
              const [name, v] of [
                [QUANTIZER_FILES.centroids, g.quantizer.centroids],
                [QUANTIZER_FILES.codebooks, g.quantizer.codebooks],
              ] as const
            ) {
              const f = new OutFile(`${st.build}/${name}`);
              try {
                f.write(bytesOf(v));
                files[name] = f.finish();
              } finally {
                f.close();
              }
            }
            const m: QuantizerManifest = {
              format: QUANTIZER_FORMAT,
              version: 1,
              vectors: sparse ? "csr" : "dense",
              d: g.d,
              ...(opts.denseDims !== undefined ? { dense_dims: opts.denseDims } : {}),
              parameters: g.parameters,
              corpus_sha256: sha,
              corpus_paragraphs: g.corpusParagraphs,
              files,
            };
            const f = new OutFile(`${st.build}/${QUANTIZER_MANIFEST}`);
            f.write(new TextEncoder().encode(quantizerJson(m)));
            f.finish();
            fsyncDir(st.build);
            if (st.replace) {
              const old = `${tmp}/${OLD_FOLDER}`;
              Deno.renameSync(out, old);
              Deno.renameSync(st.build, out);
              Deno.removeSync(old, { recursive: true });
            } else Deno.renameSync(st.build, out);
            fsyncDir(parentOf(out));
            st.done = true;
            return m;
          }, out);
          return { manifest, out };
        }),
      (st) =>
        Effect.sync(() => {
          st.dump.close();
          if (!st.done) {
            try {
              Deno.removeSync(st.build, { recursive: true });
            } catch { /* already gone */ }
          }
          unlockBuild(tmp, st.lock, st.done ? undefined : st.made);
        }),
    );
  });

/** The temporary folder of a build of the index folder `out` (see `temp.ts`). */
export { indexTempFolder };
