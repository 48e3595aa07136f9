/**
 * The IVF-PQ quantizer of a whole corpus ({@linkcode trainQuantizer}, `index
 * --train-only`, and a sharded build without `--quantizer`): trained on the
 * corpus's training sample as an unsharded build of it would, so that every
 * shard is encoded with the unsharded index's centroids and codebooks; the
 * header `parameters` of an `ivf-pq` index, and the checks that a quantizer
 * folder (`ivfpq/quantizer.ts`) fits a shard.
 *
 * @module
 */
import { createHash } from "node:crypto";
import * as Effect from "effect/Effect";
import { type DumpSourceSync, openDumpSync } from "../../io/dump/reader_sync.ts";
import { FileError, InputError } from "../../io/errors.ts";
import type { Matrix } from "../../io/matrix.ts";
import { IVF_ENGINE } from "./ivfpq/ivfpq.ts";
import {
  DEFAULT_TRAIN_PARAGRAPHS,
  ENCODE_THREADS,
  IVF_SEED,
  type IvfQuantizer,
  KMEANS_ITERATIONS,
  PQ4_COARSE_ITERATIONS,
  PQ4_ROWS_PER_CENTROID,
  TRAIN_SAMPLE_RULE,
  trainIvfPq,
} from "./ivfpq/train.ts";
import { PQ4_KSUB } from "./ivfpq/fastscan.ts";
import type { EncodeWorkers } from "./ivfpq/ivf_encode.ts";
import { widenHalf } from "../dense_f64.ts";
import {
  QUANTIZER_FILES,
  QUANTIZER_FORMAT,
  QUANTIZER_MANIFEST,
  quantizerJson,
  type QuantizerManifest,
} from "./ivfpq/quantizer.ts";
import type { IndexFile, IndexHeader } from "./format.ts";
import {
  bytesOf,
  closeBuildFolder,
  lift,
  openBuildFolder,
  osMessage,
  OutFile,
  publishBuild,
} from "./build_folder.ts";
import {
  type BuildIndexError,
  type BuildIndexOptions,
  corpusSha256,
  ivfOptionsProblem,
  metaOf,
  readerOf,
  walkCorpus,
} from "./build_input.ts";
import { tmpName } from "./temp.ts";

/** What a quantizer trained on the corpus's sample is, with what the header records of it. */
export interface GlobalQuantizer {
  /** The centroids and codebooks. */
  readonly quantizer: IvfQuantizer;
  /** The IVF-PQ parameters of the header. */
  readonly parameters: Readonly<Record<string, unknown>>;
}

/** The float32 rows of a paragraph's matrix the IVF-PQ trains on: all d, or a hybrid's first `D`. */
function trainRowsOf(m: Matrix, D: number | undefined): Float32Array {
  if (m.kind === "dense") {
    if (m.dtype === "f32") return m.data as Float32Array;
    return widenHalf(new Uint16Array(m.data.buffer, m.data.byteOffset, m.data.length));
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
 * The training sample of a whole corpus ({@linkcode globalSample}): its
 * rows and what the header records of them.
 */
export interface GlobalSample {
  /** The training rows (float32, `nt` × `dq`, in shared memory: the k-means's workers read them there). */
  readonly xt: Float32Array;
  /** Their number. */
  readonly nt: number;
  /** The dimension trained on: `d`, or a hybrid's dense block. */
  readonly dq: number;
  /** The dump's dimension. */
  readonly d: number;
  /** Bits per PQ code. */
  readonly bits: 4 | 8;
  /** The sample's paragraphs: their places in the corpus's order, increasing. */
  readonly positions: readonly number[];
  /** Their ids, as the build records them (a side file's id where there is one). */
  readonly ids: readonly string[];
  /** The IVF-PQ parameters of the header. */
  readonly parameters: Readonly<Record<string, unknown>>;
  /** The corpus's paragraphs. */
  readonly corpusParagraphs: number;
}

/**
 * The corpus's training sample, as an unsharded build of it takes it
 * (`ivfpq/train.ts` trainSample's rule, on the ids the build records: a
 * side file's id where there is one): the corpus walked once for the ids,
 * then the sample's rows read from the dump in corpus order; refused as
 * the build refuses its IVF-PQ options (d, `--bpv`, `--nlist`). `d` and
 * `vectors` are the dump's when known (a shard's), else taken from the
 * sample.
 */
export const globalSample = (
  opts: BuildIndexOptions,
  dump: DumpSourceSync,
  knownD?: number,
  knownVectors?: "dense" | "csr",
): Effect.Effect<GlobalSample, BuildIndexError> =>
  Effect.gen(function* () {
    const nlist = opts.nlist!, bpv = opts.bpv!, D = opts.denseDims;
    const refuse = (message: string) =>
      Effect.fail(new InputError({ file: opts.contextEmb, where: "", message }));
    const wanted = opts.trainParagraphs ?? DEFAULT_TRAIN_PARAGRAPHS;
    // The `wanted` smallest (key, position): the sample rule of `trainSample`.
    let kept: { key: string; at: number; id: string; pid: string; stem: string }[] = [];
    const order = (a: { key: string; at: number }, b: { key: string; at: number }) =>
      a.key < b.key ? -1 : a.key > b.key ? 1 : a.at - b.at;
    let at = -1;
    yield* walkCorpus(opts, dump, (id, stem) => {
      at++;
      const pid = metaOf(dump, stem)?.id ?? id;
      const key = createHash("sha256").update(pid, "utf8").digest("hex");
      kept.push({ key, at, id, pid, stem });
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
    // In shared memory: the coarse k-means's workers read the rows there.
    const xt = new Float32Array(new SharedArrayBuffer(nt * dq * 4));
    let o = 0;
    for (const x of parts) {
      xt.set(x, o);
      o += x.length;
    }
    return {
      xt,
      nt,
      dq,
      d: d!,
      bits,
      positions: sample.map((p) => p.at),
      ids: sample.map((p) => p.pid),
      parameters: ivfParameters(nlist, bpv, sample.length, nt, D, bits),
      corpusParagraphs: at + 1,
    };
  });

/**
 * The quantizer of a {@linkcode GlobalSample}, trained as `buildIvfPq`
 * trains an unsharded build's (4-bit: `2·bpv` sub-quantizers of 16
 * centroids on at most 256·16 residuals), on `pool`'s workers when given
 * (else on `opts.ivfTuning.encodeThreads` of its own); `s.xt` is
 * overwritten.
 */
export function trainOnSample(
  s: GlobalSample,
  opts: BuildIndexOptions,
  signal?: AbortSignal,
  pool?: EncodeWorkers,
): Promise<IvfQuantizer> {
  const bpv = opts.bpv!;
  return trainIvfPq(s.xt, s.nt, s.dq, opts.nlist!, s.bits === 4 ? 2 * bpv : bpv, {
    threads: pool?.size ?? opts.ivfTuning?.encodeThreads ?? ENCODE_THREADS,
    ...(signal !== undefined ? { signal } : {}),
    ...(pool !== undefined ? { pool } : {}),
    ...(s.bits === 4
      ? {
        ksub: PQ4_KSUB,
        pqRows: PQ4_ROWS_PER_CENTROID * PQ4_KSUB,
        coarseIterations: PQ4_COARSE_ITERATIONS,
      }
      : {}),
  });
}

/**
 * The IVF-PQ quantizer of a whole corpus, trained on its
 * {@linkcode globalSample} as an unsharded build of it would train it
 * ({@linkcode trainOnSample}), so that every shard is encoded with the
 * unsharded index's centroids and codebooks.
 */
export const trainGlobal = (
  opts: BuildIndexOptions,
  dump: DumpSourceSync,
  knownD?: number,
  knownVectors?: "dense" | "csr",
): Effect.Effect<GlobalQuantizer & { d: number; corpusParagraphs: number }, BuildIndexError> =>
  Effect.gen(function* () {
    const s = yield* globalSample(opts, dump, knownD, knownVectors);
    const quantizer = yield* Effect.tryPromise({
      try: (signal) => trainOnSample(s, opts, signal),
      catch: (e) =>
        e instanceof InputError || e instanceof FileError
          ? e
          : new FileError({ file: opts.contextEmb, message: osMessage(e) }),
    });
    return {
      quantizer,
      parameters: s.parameters,
      d: s.d,
      corpusParagraphs: s.corpusParagraphs,
    };
  });

/**
 * What is wrong with 4-bit PQ's split of the IVF-PQ's dimension (d, or a
 * hybrid's dense block `D`) into `2·bpv` parts, or `undefined`.
 */
export function pq4SplitProblem(
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
export const ivfParameters = (
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
  ...(bits === 4
    ? {
      coarse_kmeans_iterations: PQ4_COARSE_ITERATIONS,
      pq_rows_per_centroid: PQ4_ROWS_PER_CENTROID,
    }
    : {}),
  seed: IVF_SEED,
  engine: IVF_ENGINE,
  ...(D !== undefined ? { dense_dims: D } : {}),
});

/** What makes quantizer `m` foreign to the shard whose exact header is `h`, or `undefined`. */
export function quantizerProblem(
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
        const f = openBuildFolder(out, tmp, opts.overwrite === true, QUANTIZER_MANIFEST);
        let dump: DumpSourceSync | undefined;
        try {
          dump = openDumpSync(opts.contextEmb, { sparse });
          return { ...f, dump, done: false };
        } catch (e) {
          dump?.close();
          closeBuildFolder(f, false);
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
            publishBuild(st, out);
            st.done = true;
            return m;
          }, out);
          return { manifest, out };
        }),
      (st) =>
        Effect.sync(() => {
          st.dump.close();
          closeBuildFolder(st, st.done);
        }),
    );
  });
