/**
 * The phrase index folder format, version 1 ({@linkcode IndexHeader}).
 *
 * An index folder holds one header, `index.json`, and data files it lists
 * with their sizes and sha256. Every kind shares the header fields
 * (`format`, `version`, `kind`, `metric`, `d`, `phrases`, `paragraphs`,
 * `parameters`, `files`) and the phrase table; the vectors' layout depends
 * on the kind. Version 1 has two kinds: `exact`, and `ivf-pq`, which is an
 * exact index plus phraseval's IVF-PQ (`ivf/centroids.f32`,
 * `ivf/codebooks.f32`, `ivf/list_offsets.i64`, `ivf/list_rows.u32`,
 * `ivf/codes.u8`, each listed in `files`; `parameters`: `nlist`, `bpv`,
 * `bits`, `train_paragraphs`, `train_phrases`, `train_sample`,
 * `kmeans_iterations`, `seed`, `engine`; see `ivfpq/ivfpq.ts`). An `ivf-pq`
 * index has dense vectors, or CSR vectors whose first `dense_dims` columns
 * are a dense block (a hybrid dense ⊕ sparse encoder's, `parameters.dense_dims`
 * set; the IVF-PQ is over that block, its files sized by `dense_dims` instead
 * of d; see `ivfpq/hybrid.ts`). An `ivf-pq` folder built by LanceDB (earlier phraseval,
 * `parameters.library` set) is refused: it is to be rebuilt.
 * A reader refuses a kind it does not know and a version newer than its own.
 *
 * Files of the `exact` kind (all little-endian, row-major):
 *
 * - `vectors.f32` or `vectors.f16` (dense): `phrases × d` values, the dumped
 *   dtype kept.
 * - `data.f32`, `indices.i32`, `indptr.i64` (sparse): one CSR matrix of
 *   `phrases` rows: `nnz` values, their column indices, `phrases + 1` row
 *   pointers (int64).
 * - `paragraphs.ndjson`: one line per paragraph, in index order:
 *   `{"id": ..., "rows": N, "phrases": [...], "offsets": [[start, end], ...] | null,
 *   "title": ..., "context": ...}`;
 *   the rows of a paragraph follow those of the paragraph before it, so
 *   global row = paragraph start + phrase index. Offsets are code points
 *   (Python string indices) into the paragraph's context. `title` (the
 *   article title) and `context` (the paragraph's text) are there when the
 *   build knew them (`--context`, or a `--metadata` dump's `.meta.json`);
 *   an index without them (older builds) reads as `null`. A shard's lines
 *   also hold `"position"`: the paragraph's place in the whole corpus.
 *
 * A shard of a sharded index (`shards.ts`) is an index folder of either kind
 * whose header also has a `shard` block (index, count, assignment rule,
 * corpus sha256 and paragraph count).
 *
 * The header is written last, with the sha256 of every file; a reader
 * checks each file's size (and, when asked, its sha256) before use, so a
 * truncated or corrupt folder is refused. It also records `binding`
 * ({@linkcode indexBinding}): one digest over every file's name, size and
 * sha256, which binds the paragraph table to the vectors (and IVF-PQ files)
 * it was built with: a table whose lines were reordered or replaced and its
 * sha256 in the header recomputed no longer matches it, and the header is
 * refused. A header without `binding` (written before it, or with it
 * deleted) is refused too: rebuild such an index. Nothing in it depends on the time
 * or the place it was built: the same dump gives the same bytes.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { type ShardInfo, shardProblem } from "./shards.ts";

/** The header's file name. */
export const INDEX_HEADER = "index.json";

/** The paragraph table's file name. */
export const PARAGRAPHS_FILE = "paragraphs.ndjson";

/** The `format` tag of a header. */
export const INDEX_FORMAT = "phraseval-index";

/** The newest format version this code reads and the one it writes. */
export const INDEX_VERSION = 1;

/** Index kinds this version reads. */
export const INDEX_KINDS: readonly string[] = ["exact", "ivf-pq"];

/** How phrases are ranked: inner product, or smallest squared L2 distance (score −‖q−p‖²). */
export type IndexMetric = "ip" | "l2";

/** One data file of an index: its size and sha256 (hex). */
export interface IndexFile {
  /** Size in bytes. */
  readonly bytes: number;
  /** sha256 of the content, lowercase hex. */
  readonly sha256: string;
}

/** The header of an index folder (`index.json`). */
export interface IndexHeader {
  /** Always {@linkcode INDEX_FORMAT}. */
  readonly format: string;
  /** Format version ({@linkcode INDEX_VERSION}). */
  readonly version: number;
  /** Index kind (`exact`). */
  readonly kind: string;
  /** Ranking metric. */
  readonly metric: IndexMetric;
  /** `dense` or `csr` vectors. */
  readonly vectors: "dense" | "csr";
  /** Value type on disk (`f32`, `f16`; sparse values are `f32`). */
  readonly dtype: "f32" | "f16";
  /** Vector dimension. */
  readonly d: number;
  /** Number of phrases (rows). */
  readonly phrases: number;
  /** Number of paragraphs. */
  readonly paragraphs: number;
  /** Stored values of a sparse index (`null` for dense). */
  readonly nnz: number | null;
  /** Paragraph order: the dataset's (`--context`) or the sorted dump file names. */
  readonly order: "dataset" | "sorted-names";
  /**
   * Where phrase offsets come from: the dump's `--metadata` files, the first
   * occurrence of each phrase in the `--context` paragraph at or after the
   * previous phrase's start, or none.
   */
  readonly offsets: "metadata" | "context" | null;
  /** Kind-specific parameters (`{}` for `exact`; see `ivfpq/ivfpq.ts` for `ivf-pq`). */
  readonly parameters: Readonly<Record<string, unknown>>;
  /** Data files by name. */
  readonly files: Readonly<Record<string, IndexFile>>;
  /**
   * A shard of a sharded index (`shards.ts`): which shard, of how many, and
   * the corpus it was cut from; absent in an unsharded index.
   */
  readonly shard?: ShardInfo;
  /**
   * {@linkcode indexBinding} of `files` (written by {@linkcode headerJson}; a
   * header without it is refused).
   */
  readonly binding?: string;
}

/**
 * The digest that binds an index's files together: sha256 (hex) of
 * `phraseval-index-binding 1` and one line per file in name order (`name`,
 * bytes, sha256, tab-separated). The paragraph table's lines say which
 * phrases and paragraph the vector rows are; with its sha256 bound to the
 * vectors' and the IVF-PQ files' here, a table changed after the build
 * (lines swapped, another build's table) is refused even where its own
 * sha256 in the header was recomputed.
 *
 * @example
 * ```ts
 * import { indexBinding } from "./format.ts";
 * const f = (sha256: string) => ({ bytes: 4, sha256 });
 * const a = indexBinding({ "paragraphs.ndjson": f("aa"), "vectors.f32": f("bb") });
 * const b = indexBinding({ "paragraphs.ndjson": f("ab"), "vectors.f32": f("bb") });
 * if (a === b || !/^[0-9a-f]{64}$/.test(a)) throw new Error();
 * ```
 */
export function indexBinding(files: Readonly<Record<string, IndexFile>>): string {
  let text = "phraseval-index-binding 1\n";
  for (const name of Object.keys(files).sort()) {
    text += `${name}\t${files[name].bytes}\t${files[name].sha256}\n`;
  }
  return createHash("sha256").update(text).digest("hex");
}

/** The data files an `exact` index of this shape must list. */
export function exactFiles(vectors: "dense" | "csr", dtype: "f32" | "f16"): string[] {
  return vectors === "dense"
    ? [`vectors.${dtype}`, PARAGRAPHS_FILE]
    : ["data.f32", "indices.i32", "indptr.i64", PARAGRAPHS_FILE];
}

/** The size a data file of an `exact` index must have, or `undefined` (the paragraph table). */
export function expectedBytes(h: IndexHeader, name: string): number | undefined {
  switch (name) {
    case "vectors.f32":
      return h.phrases * h.d * 4;
    case "vectors.f16":
      return h.phrases * h.d * 2;
    case "data.f32":
    case "indices.i32":
      return (h.nnz ?? 0) * 4;
    case "indptr.i64":
      return (h.phrases + 1) * 8;
  }
  return undefined;
}

const isCount = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 0;

/**
 * Checks a parsed header; returns what is wrong with it, or `undefined`.
 * An unknown kind or a newer version is named as such.
 *
 * @example
 * ```ts
 * import { headerProblem } from "./format.ts";
 * const why = headerProblem({ format: "phraseval-index", version: 9, kind: "exact" });
 * if (why !== "format version 9 is newer than this phraseval reads (1)") throw new Error(why);
 * ```
 */
export function headerProblem(h: unknown): string | undefined {
  if (typeof h !== "object" || h === null || Array.isArray(h)) return "not a JSON object";
  const o = h as Record<string, unknown>;
  if (o.format !== INDEX_FORMAT) {
    return `not a phraseval index (format ${JSON.stringify(o.format)})`;
  }
  if (!Number.isSafeInteger(o.version) || (o.version as number) < 1) {
    return `bad format version ${JSON.stringify(o.version)}`;
  }
  if ((o.version as number) > INDEX_VERSION) {
    return `format version ${o.version} is newer than this phraseval reads (${INDEX_VERSION})`;
  }
  if (typeof o.kind !== "string" || !INDEX_KINDS.includes(o.kind)) {
    return `index kind ${JSON.stringify(o.kind)} is not one this phraseval reads (${
      INDEX_KINDS.join(", ")
    })`;
  }
  if (o.metric !== "ip" && o.metric !== "l2") return `bad metric ${JSON.stringify(o.metric)}`;
  if (o.vectors !== "dense" && o.vectors !== "csr") {
    return `bad vectors ${JSON.stringify(o.vectors)}`;
  }
  if (o.dtype !== "f32" && o.dtype !== "f16") return `bad dtype ${JSON.stringify(o.dtype)}`;
  if (o.vectors === "csr" && o.dtype !== "f32") return "sparse values must be f32";
  if (!isCount(o.d) || o.d === 0) return `bad d ${JSON.stringify(o.d)}`;
  if (!isCount(o.phrases)) return `bad phrase count ${JSON.stringify(o.phrases)}`;
  if (!isCount(o.paragraphs)) return `bad paragraph count ${JSON.stringify(o.paragraphs)}`;
  if (o.vectors === "csr" ? !isCount(o.nnz) : o.nnz !== null) {
    return `bad nnz ${JSON.stringify(o.nnz)}`;
  }
  if (o.order !== "dataset" && o.order !== "sorted-names") return "bad paragraph order";
  if (o.offsets !== "metadata" && o.offsets !== "context" && o.offsets !== null) {
    return "bad offsets source";
  }
  if (typeof o.parameters !== "object" || o.parameters === null) return "bad parameters";
  if (typeof o.files !== "object" || o.files === null) return "bad file list";
  if (o.shard !== undefined) {
    const why = shardProblem(o.shard);
    if (why !== undefined) return why;
  }
  if (o.kind === "ivf-pq") {
    const why = ivfPqProblem(o);
    if (why !== undefined) return why;
  }
  const files = o.files as Record<string, unknown>;
  for (const name of exactFiles(o.vectors, o.dtype)) {
    const f = files[name] as Record<string, unknown> | undefined;
    if (f === undefined) return `the file list lacks ${name}`;
    if (!isCount(f.bytes) || typeof f.sha256 !== "string" || !/^[0-9a-f]{64}$/.test(f.sha256)) {
      return `bad entry for ${name}`;
    }
    const want = expectedBytes(o as unknown as IndexHeader, name);
    if (want !== undefined && f.bytes !== want) {
      return `${name} is listed with ${f.bytes} bytes; ${want} expected`;
    }
  }
  return bindingProblem(o);
}

/**
 * The IVF-PQ data files and their sizes (`ivfpq/ivfpq.ts` has the layout;
 * a 4-bit index's `codes.u8`, whose size follows from its list sizes, is
 * checked by {@linkcode pq4CodesBytesProblem} here and exactly once its
 * offsets are read).
 */
function ivfSizes(
  d: number,
  phrases: number,
  nlist: number,
  bpv: number,
  bits = 8,
): Record<string, number> {
  return {
    "ivf/centroids.f32": nlist * d * 4,
    "ivf/codebooks.f32": (bits === 4 ? 16 : 256) * d * 4,
    "ivf/list_offsets.i64": (nlist + 1) * 8,
    "ivf/list_rows.u32": phrases * 4,
    "ivf/codes.u8": phrases * bpv,
  };
}

/** What is wrong with an `ivf-pq` header's vectors, parameters and files, or `undefined`. */
function ivfPqProblem(o: Record<string, unknown>): string | undefined {
  const p = o.parameters as Record<string, unknown>;
  if (p.library !== undefined && String(p.library).includes("lancedb")) {
    return "built by LanceDB, no longer supported: rebuild with deno task index";
  }
  if (o.vectors !== "dense" && p.dense_dims === undefined) {
    return "an ivf-pq index of csr vectors needs parameters.dense_dims (a hybrid index)";
  }
  if (o.vectors === "dense" && p.dense_dims !== undefined) {
    return "parameters.dense_dims applies to csr (hybrid) indexes only";
  }
  if (p.engine !== "phraseval") return `unknown ivf-pq engine ${JSON.stringify(p.engine)}`;
  if (p.bits !== 8 && p.bits !== 4) return `bad ivf-pq parameter bits (8 or 4 expected)`;
  for (const key of ["nlist", "bpv", "bits", "train_paragraphs", "train_phrases"]) {
    if (!isCount(p[key]) || p[key] === 0) return `bad ivf-pq parameter ${key}`;
  }
  if (
    p.dense_dims !== undefined &&
    (!isCount(p.dense_dims) || p.dense_dims === 0 || p.dense_dims > (o.d as number))
  ) return `bad ivf-pq parameter dense_dims (1 … d = ${o.d} expected)`;
  // The IVF-PQ's dimension: the dense block of a hybrid index, else d.
  const dq = (p.dense_dims ?? o.d) as number;
  if (p.bits === 4 && dq % (2 * (p.bpv as number)) !== 0) {
    return `2 × bpv ${p.bpv} (4-bit sub-quantizers) does not divide ${
      p.dense_dims === undefined ? "d" : "dense_dims"
    } = ${dq}`;
  }
  if (dq % (p.bpv as number) !== 0) {
    return p.dense_dims === undefined
      ? `bpv ${p.bpv} does not divide d = ${o.d}`
      : `bpv ${p.bpv} does not divide dense_dims = ${dq}`;
  }
  if ((p.nlist as number) > (p.train_phrases as number)) {
    return "nlist exceeds the training phrases";
  }
  const files = o.files as Record<string, Record<string, unknown>>;
  const four = p.bits === 4;
  const sizes = ivfSizes(
    dq,
    o.phrases as number,
    p.nlist as number,
    p.bpv as number,
    p.bits as number,
  );
  for (const [name, want] of Object.entries(sizes)) {
    const f = files[name];
    if (f === undefined) return `the file list lacks ${name}`;
    if (
      typeof f !== "object" || f === null || !isCount(f.bytes) || typeof f.sha256 !== "string" ||
      !/^[0-9a-f]{64}$/.test(f.sha256)
    ) return `bad entry for ${name}`;
    if (four && name === "ivf/codes.u8") {
      const why = pq4CodesBytesProblem(
        f.bytes,
        o.phrases as number,
        p.nlist as number,
        p.bpv as number,
      );
      if (why !== undefined) return why;
      continue;
    }
    if (f.bytes !== want) return `${name} is listed with ${f.bytes} bytes; ${want} expected`;
  }
  return undefined;
}

/** What is wrong with a header's `binding` (see {@linkcode indexBinding}), or `undefined`. */
function bindingProblem(o: Record<string, unknown>): string | undefined {
  if (o.binding === undefined) {
    // A header without it could be any table beside any vectors (or a forger's who deleted it).
    return "no binding of the files (an index built before phraseval recorded one, or a header " +
      "edited by hand): rebuild the index";
  }
  const files = o.files as Record<string, IndexFile>;
  for (const f of Object.values(files)) {
    if (typeof f !== "object" || f === null || !isCount(f.bytes) || typeof f.sha256 !== "string") {
      return "bad file list";
    }
  }
  if (typeof o.binding !== "string" || o.binding !== indexBinding(files)) {
    return "the files' sha256 do not match the binding recorded at the build (a file, such as " +
      "the paragraph table, was changed and its sha256 recomputed): rebuild the index";
  }
  return undefined;
}

/**
 * What is wrong with the listed size of a 4-bit index's `codes.u8`, or
 * `undefined`: its lists padded to blocks of 32 rows of `bpv` bytes, so a
 * multiple of `32·bpv` between `phrases·bpv` and `(phrases + 31·nlist)·bpv`.
 *
 * @example
 * ```ts
 * import { pq4CodesBytesProblem } from "./format.ts";
 * if (pq4CodesBytesProblem(64 * 8, 40, 2, 8) !== undefined) throw new Error();
 * if (pq4CodesBytesProblem(32 * 8, 40, 2, 8) === undefined) throw new Error();
 * ```
 */
export function pq4CodesBytesProblem(
  bytes: number,
  phrases: number,
  nlist: number,
  bpv: number,
): string | undefined {
  if (bytes % (32 * bpv) !== 0 || bytes < phrases * bpv || bytes > (phrases + 31 * nlist) * bpv) {
    return `ivf/codes.u8 is listed with ${bytes} bytes; a multiple of ${32 * bpv} from ` +
      `${phrases * bpv} to ${(phrases + 31 * nlist) * bpv} expected (4-bit codes, lists ` +
      "padded to blocks of 32 rows)";
  }
  return undefined;
}

/** The header as written: keys in a fixed order, two-space indent, a final newline. */
export function headerJson(h: IndexHeader): string {
  const files = Object.fromEntries(Object.keys(h.files).sort().map((k) => [k, h.files[k]]));
  const ordered: IndexHeader = {
    format: h.format,
    version: h.version,
    kind: h.kind,
    metric: h.metric,
    vectors: h.vectors,
    dtype: h.dtype,
    d: h.d,
    phrases: h.phrases,
    paragraphs: h.paragraphs,
    nnz: h.nnz,
    order: h.order,
    offsets: h.offsets,
    parameters: h.parameters,
    files,
    binding: indexBinding(files),
    // Only a shard's header has the block (an unsharded header's bytes are unchanged).
    ...(h.shard !== undefined
      ? {
        shard: {
          index: h.shard.index,
          count: h.shard.count,
          assign: h.shard.assign,
          corpus_sha256: h.shard.corpus_sha256,
          corpus_paragraphs: h.shard.corpus_paragraphs,
        },
      }
      : {}),
  };
  return JSON.stringify(ordered, null, 2) + "\n";
}

/**
 * Appended to the refusal of an index file that is a symbolic link, a named
 * pipe, a device or a socket (`io/regular.ts`): an index folder holds only
 * the regular files its build wrote, so a reader never follows a link out of
 * it nor opens what would block or read without end.
 */
export const INDEX_FILES_ONLY = " (an index folder holds only the regular files its build wrote)";

/**
 * The first position of `v` holding NaN or ±Infinity, or -1.
 *
 * @example
 * ```ts
 * import { firstNonFinite } from "./format.ts";
 * if (firstNonFinite(new Float32Array([1, 2, NaN])) !== 2) throw new Error();
 * if (firstNonFinite(new Float32Array([1, -0, 3e38])) !== -1) throw new Error();
 * ```
 */
export function firstNonFinite(v: Float32Array): number {
  for (let i = 0; i < v.length; i++) {
    const x = v[i];
    if (x - x !== 0) return i;
  }
  return -1;
}

/**
 * The first position of `bits` (IEEE half floats) holding NaN or ±Infinity
 * (all exponent bits set), or -1.
 *
 * @example
 * ```ts
 * import { firstNonFiniteF16 } from "./format.ts";
 * if (firstNonFiniteF16(new Uint16Array([0x3c00, 0x7c00])) !== 1) throw new Error(); // 1, +Inf
 * if (firstNonFiniteF16(new Uint16Array([0x7bff, 0xfbff])) !== -1) throw new Error(); // ±65504
 * ```
 */
export function firstNonFiniteF16(bits: Uint16Array): number {
  for (let i = 0; i < bits.length; i++) if ((bits[i] & 0x7c00) === 0x7c00) return i;
  return -1;
}

/** What an `f16` value with all exponent bits set is: `NaN`, `Infinity` or `-Infinity`. */
export const f16Name = (bits: number): string =>
  (bits & 0x3ff) !== 0 ? "NaN" : bits & 0x8000 ? "-Infinity" : "Infinity";

/** The IVF-PQ arrays of an index as read from its `ivf/` files (`ivfpq/ivfpq.ts` has the layout). */
export interface IvfArrays {
  /** `ivf/centroids.f32`. */
  readonly centroids: Float32Array;
  /** `ivf/codebooks.f32`. */
  readonly codebooks: Float32Array;
  /** `ivf/list_offsets.i64`, as numbers (nlist + 1). */
  readonly offsets: Float64Array;
  /** `ivf/list_rows.u32` (one per phrase). */
  readonly rows: Uint32Array;
}

/**
 * What is wrong with the contents of an index's IVF-PQ files, as
 * `[file, message]`, or `undefined`: list offsets that decrease or do not
 * span the phrases; a list row out of range, not above the row before it
 * in its list, or in two lists (so the rows are each phrase exactly once);
 * a centroid or codebook value that is NaN or infinite. One linear pass;
 * sizes and sha256 are checked before (a forged file whose sha256 in
 * `index.json` was recomputed still fails here).
 *
 * @example
 * ```ts
 * import { ivfContentProblem } from "./format.ts";
 * const ok = {
 *   centroids: new Float32Array(2), codebooks: new Float32Array(4),
 *   offsets: new Float64Array([0, 2, 3]), rows: new Uint32Array([0, 2, 1]),
 * };
 * if (ivfContentProblem(3, 2, ok) !== undefined) throw new Error();
 * const twice = { ...ok, rows: new Uint32Array([0, 1, 1]) };
 * const why = ivfContentProblem(3, 2, twice);
 * if (why?.[1] !== "row 1 at 2 is in more than one list (corrupt index)") throw new Error(why?.[1]);
 * ```
 */
export function ivfContentProblem(
  phrases: number,
  nlist: number,
  a: IvfArrays,
): [string, string] | undefined {
  const { offsets, rows } = a;
  for (let l = 0; l < nlist; l++) {
    if (!(offsets[l + 1] >= offsets[l])) {
      return ["ivf/list_offsets.i64", `offsets decrease at list ${l} (corrupt index)`];
    }
  }
  if (offsets[0] !== 0 || offsets[nlist] !== phrases) {
    return [
      "ivf/list_offsets.i64",
      `offsets do not span the ${phrases} phrases (corrupt index)`,
    ];
  }
  const seen = new Uint8Array(phrases);
  for (let l = 0; l < nlist; l++) {
    for (let i = offsets[l]; i < offsets[l + 1]; i++) {
      const r = rows[i];
      if (r >= phrases) {
        return ["ivf/list_rows.u32", `row ${r} at ${i} is out of range (corrupt index)`];
      }
      if (i > offsets[l] && r <= rows[i - 1]) {
        return [
          "ivf/list_rows.u32",
          `row ${r} at ${i} is not above the row before it in list ${l} ` +
          `(rows increase within a list; corrupt index)`,
        ];
      }
      if (seen[r] !== 0) {
        return ["ivf/list_rows.u32", `row ${r} at ${i} is in more than one list (corrupt index)`];
      }
      seen[r] = 1;
    }
  }
  for (
    const [file, v] of [["ivf/centroids.f32", a.centroids], [
      "ivf/codebooks.f32",
      a.codebooks,
    ]] as const
  ) {
    const i = firstNonFinite(v);
    if (i >= 0) return [file, `value ${i} is ${v[i]} (corrupt index)`];
  }
  return undefined;
}
