/**
 * The quantizer folder of a sharded IVF-PQ index (`index DUMP OUT
 * --train-only` writes `OUT/quantizer/`; `search/index/build.ts`): the coarse centroids
 * and PQ codebooks every shard of the index is encoded with, trained once
 * on the corpus's training sample (`train.ts`: the `train_paragraphs`
 * paragraphs whose sha256(id) sorts first, which do not depend on the
 * shards), so that approximate scores are the same in every shard and the
 * same as in the unsharded index of the corpus.
 *
 * Files: `centroids.f32` (nlist × d, as an index's `ivf/centroids.f32`),
 * `codebooks.f32` (bpv × 256 × d/bpv, as `ivf/codebooks.f32`; a 4-bit
 * quantizer's, `parameters.bits` 4, `index --pq-bits 4`: 2·bpv × 16 × d/(2·bpv)) and the
 * manifest `quantizer.json` ({@linkcode QuantizerManifest}: the IVF-PQ
 * parameters an index header records, the corpus's sha256 and paragraph
 * count, and each file's size and sha256), written last. A shard build
 * given `--quantizer` copies the two files into its `ivf/` (the same bytes,
 * so the same sha256 in its header) and refuses a quantizer of another
 * corpus or shape ({@linkcode readQuantizer} checks the files).
 *
 * @module
 */
import { createHash } from "node:crypto";
import { InputError } from "../../../io/errors.ts";
import { statRegularFile } from "../../../io/regular.ts";
import { firstNonFinite, INDEX_FILES_ONLY, type IndexFile } from "../format.ts";
import type { IvfQuantizer } from "./train.ts";

/** The manifest's file name. */
export const QUANTIZER_MANIFEST = "quantizer.json";

/** The manifest's `format` tag. */
export const QUANTIZER_FORMAT = "phraseval-quantizer";

/** The quantizer's data files. */
export const QUANTIZER_FILES = { centroids: "centroids.f32", codebooks: "codebooks.f32" } as const;

/** `quantizer.json`. */
export interface QuantizerManifest {
  /** {@linkcode QUANTIZER_FORMAT}. */
  readonly format: string;
  /** 1. */
  readonly version: number;
  /** The dump's vectors: `dense`, or `csr` (a hybrid dump, with `dense_dims`). */
  readonly vectors: "dense" | "csr";
  /** The dump's d. */
  readonly d: number;
  /** A hybrid dump's dense block (the IVF-PQ's dimension), else absent. */
  readonly dense_dims?: number;
  /** The IVF-PQ parameters, as an `ivf-pq` header records them (`ivfpq.ts`). */
  readonly parameters: Readonly<Record<string, unknown>>;
  /** sha256 of the corpus (`search/index/shards.ts`, `ShardInfo.corpus_sha256`). */
  readonly corpus_sha256: string;
  /** Paragraphs of the corpus. */
  readonly corpus_paragraphs: number;
  /** The data files. */
  readonly files: Readonly<Record<string, IndexFile>>;
}

/** The manifest as written: keys in a fixed order, two-space indent, a final newline. */
export function quantizerJson(m: QuantizerManifest): string {
  return JSON.stringify(
    {
      format: m.format,
      version: m.version,
      vectors: m.vectors,
      d: m.d,
      ...(m.dense_dims !== undefined ? { dense_dims: m.dense_dims } : {}),
      parameters: m.parameters,
      corpus_sha256: m.corpus_sha256,
      corpus_paragraphs: m.corpus_paragraphs,
      files: Object.fromEntries(Object.keys(m.files).sort().map((k) => [k, m.files[k]])),
    },
    null,
    2,
  ) + "\n";
}

const bad = (file: string, message: string) => new InputError({ file, where: "", message });
const isCount = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) > 0;

/**
 * Reads and checks the quantizer folder `dir`: the manifest's fields, each
 * file's size and sha256, finite values. A missing or bad file is an
 * {@linkcode InputError} naming it.
 */
export function readQuantizer(
  dir: string,
): { manifest: QuantizerManifest; quantizer: IvfQuantizer; dq: number } {
  const mpath = `${dir}/${QUANTIZER_MANIFEST}`;
  let m: QuantizerManifest;
  try {
    if (statRegularFile(mpath, { links: "refuse", why: INDEX_FILES_ONLY }) === undefined) {
      throw new Deno.errors.NotFound(mpath);
    }
    m = JSON.parse(Deno.readTextFileSync(mpath));
  } catch (e) {
    if (e instanceof InputError) throw e;
    if (e instanceof Deno.errors.NotFound) {
      throw bad(dir, `not a quantizer folder (no ${QUANTIZER_MANIFEST}; index --train-only)`);
    }
    throw bad(mpath, `invalid JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  const p = (m?.parameters ?? {}) as Record<string, unknown>;
  if (m?.format !== QUANTIZER_FORMAT || m.version !== 1) {
    throw bad(mpath, `not a phraseval quantizer (format ${JSON.stringify(m?.format)})`);
  }
  if (
    (m.vectors !== "dense" && m.vectors !== "csr") || !isCount(m.d) ||
    (m.vectors === "csr") !== (m.dense_dims !== undefined) ||
    (m.dense_dims !== undefined && (!isCount(m.dense_dims) || m.dense_dims > m.d)) ||
    !isCount(p.nlist) || !isCount(p.bpv) || (p.bits !== 8 && p.bits !== 4) ||
    typeof m.corpus_sha256 !== "string" || !/^[0-9a-f]{64}$/.test(m.corpus_sha256) ||
    !Number.isSafeInteger(m.corpus_paragraphs)
  ) throw bad(mpath, "bad manifest fields");
  const dq = m.dense_dims ?? m.d;
  if (dq % (p.bpv as number) !== 0) throw bad(mpath, `bpv ${p.bpv} does not divide ${dq}`);
  if (p.bits === 4 && dq % (2 * (p.bpv as number)) !== 0) {
    throw bad(mpath, `2 × bpv ${p.bpv} (4-bit sub-quantizers) does not divide ${dq}`);
  }
  const sizes = {
    [QUANTIZER_FILES.centroids]: (p.nlist as number) * dq * 4,
    // 256 entries of each of bpv sub-quantizers, or 16 of each of 2·bpv (4-bit).
    [QUANTIZER_FILES.codebooks]: (p.bits === 4 ? 16 : 256) * dq * 4,
  };
  const arrays: Record<string, Float32Array> = {};
  for (const [name, want] of Object.entries(sizes)) {
    const path = `${dir}/${name}`;
    const f = m.files?.[name];
    if (f === undefined || f.bytes !== want) {
      throw bad(mpath, `the file list lacks ${name} of ${want} bytes`);
    }
    if (statRegularFile(path, { links: "refuse", why: INDEX_FILES_ONLY }) === undefined) {
      throw bad(path, "missing (the quantizer folder is incomplete)");
    }
    const b = Deno.readFileSync(path);
    if (b.byteLength !== want) {
      throw bad(path, `${b.byteLength} bytes but ${QUANTIZER_MANIFEST} says ${want} (truncated)`);
    }
    if (createHash("sha256").update(b).digest("hex") !== f.sha256) {
      throw bad(path, `sha256 differs from ${QUANTIZER_MANIFEST} (corrupt quantizer)`);
    }
    const v = new Float32Array(b.buffer, b.byteOffset, want / 4);
    const at = firstNonFinite(v);
    if (at >= 0) throw bad(path, `value ${at} is ${v[at]} (corrupt quantizer)`);
    arrays[name] = v;
  }
  return {
    manifest: m,
    quantizer: {
      centroids: arrays[QUANTIZER_FILES.centroids],
      codebooks: arrays[QUANTIZER_FILES.codebooks],
    },
    dq,
  };
}
