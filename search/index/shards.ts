/**
 * Sharded indexes: which shard a paragraph belongs to, how the folders of a
 * sharded index are named, the `shard` block of a shard's `index.json`, and
 * opening the set of shards of one index with every refusal a search needs
 * ({@linkcode openShardSet}).
 *
 * **Assignment.** Paragraph `id` (the id the index records) goes to shard
 * `u64be(sha256(utf8(id))[0..8]) mod count` ({@linkcode shardOf}): balanced
 * for any ids, and a paragraph's shard depends only on its id and the
 * count, so a corpus that grows keeps every old paragraph where it was.
 *
 * **Folders.** `index DUMP OUT --shards N --shard i` writes `OUT/shard-i-of-N/`
 * ({@linkcode shardFolderName}), a complete index folder (`format.ts`) of
 * the paragraphs of shard `i`, in the corpus's order. Its header has a
 * `shard` block ({@linkcode ShardInfo}: `index`, `count`, the assignment
 * rule, the corpus's sha256 and paragraph count), and each line of its
 * `paragraphs.ndjson` a `position`: the paragraph's place in the whole
 * corpus (0-based), which orders phrases across shards as the unsharded
 * index orders its rows. An IVF-PQ shard holds the coarse quantizer and
 * codebooks every shard of the index shares; `index DUMP OUT --train-only`
 * trains them once into `OUT/quantizer/` ({@linkcode QUANTIZER_FOLDER},
 * `ivfpq/quantizer.ts`) and each shard build given `--quantizer OUT/quantizer`
 * copies them, so their sha256 in every shard's file list are the same.
 *
 * **A set of shards** is a folder without `index.json` whose sub-folders are
 * `shard-0-of-N` … `shard-(N-1)-of-N`, and perhaps `quantizer/`. It is
 * refused, with one line naming the folder, when a shard is missing, when
 * two counts are mixed, when a shard's build was interrupted or is running
 * (its `shard-i-of-N.<hex>.tmp` folder is there), when a shard's header is
 * not that shard's (no `shard` block, or another index or count), when a
 * shard is foreign (another corpus sha256, kind, metric, vector type, d,
 * paragraph order or IVF-PQ parameters, or other coarse centroids or
 * codebooks than shard 0's or the quantizer's), or when the shards'
 * paragraphs do not add up to the corpus's.
 *
 * @module
 */
import { InputError } from "../../io/errors.ts";
import type { IndexHeader } from "./format.ts";

/** The header's file name (`format.ts`'s `INDEX_HEADER`; this module imports no values from it). */
const INDEX_HEADER = "index.json";

/** The assignment rule, in words, as the `shard` block records it. */
export const SHARD_RULE = "first 8 bytes of sha256(utf-8 paragraph id), big-endian, mod count";

/** The most shards an index may have. */
export const MAX_SHARDS = 65536;

/** The folder of the quantizer the IVF-PQ shards of an index share (`index --train-only`). */
export const QUANTIZER_FOLDER = "quantizer";

/** The `shard` block of a shard's header. */
export interface ShardInfo {
  /** This shard, 0-based. */
  readonly index: number;
  /** Shards of the index. */
  readonly count: number;
  /** The assignment rule ({@linkcode SHARD_RULE}). */
  readonly assign: string;
  /**
   * sha256 (hex) of the corpus: the `--context` file's bytes, or, without
   * one, of the dump's sorted paragraph file stems, each followed by `\n`.
   */
  readonly corpus_sha256: string;
  /** Paragraphs of the whole corpus (all shards). */
  readonly corpus_paragraphs: number;
}

/**
 * The shard of paragraph `id` among `count` (see the module notes).
 *
 * @example
 * ```ts
 * import { shardOf } from "./shards.ts";
 * // Python: int.from_bytes(hashlib.sha256(b"Super_Bowl_50_0").digest()[:8], "big") % 8 == 7
 * if (shardOf("Super_Bowl_50_0", 8) !== 7 || shardOf("Super_Bowl_50_0", 1) !== 0) throw new Error();
 * ```
 */
export function shardOf(id: string, count: number): number {
  if (count === 1) return 0;
  const [hi, lo] = sha256Head(id);
  // (hi·2³² + lo) mod count, exact in doubles for count ≤ 2¹⁶ (each product below 2³²).
  return ((hi % count) * (4294967296 % count) + lo) % count;
}

const K = new Uint32Array([
  0x428a2f98,
  0x71374491,
  0xb5c0fbcf,
  0xe9b5dba5,
  0x3956c25b,
  0x59f111f1,
  0x923f82a4,
  0xab1c5ed5,
  0xd807aa98,
  0x12835b01,
  0x243185be,
  0x550c7dc3,
  0x72be5d74,
  0x80deb1fe,
  0x9bdc06a7,
  0xc19bf174,
  0xe49b69c1,
  0xefbe4786,
  0x0fc19dc6,
  0x240ca1cc,
  0x2de92c6f,
  0x4a7484aa,
  0x5cb0a9dc,
  0x76f988da,
  0x983e5152,
  0xa831c66d,
  0xb00327c8,
  0xbf597fc7,
  0xc6e00bf3,
  0xd5a79147,
  0x06ca6351,
  0x14292967,
  0x27b70a85,
  0x2e1b2138,
  0x4d2c6dfc,
  0x53380d13,
  0x650a7354,
  0x766a0abb,
  0x81c2c92e,
  0x92722c85,
  0xa2bfe8a1,
  0xa81a664b,
  0xc24b8b70,
  0xc76c51a3,
  0xd192e819,
  0xd6990624,
  0xf40e3585,
  0x106aa070,
  0x19a4c116,
  0x1e376c08,
  0x2748774c,
  0x34b0bcb5,
  0x391c0cb3,
  0x4ed8aa4a,
  0x5b9cca4f,
  0x682e6ff3,
  0x748f82ee,
  0x78a5636f,
  0x84c87814,
  0x8cc70208,
  0x90befffa,
  0xa4506ceb,
  0xbef9a3f7,
  0xc67178f2,
]);
const W = new Uint32Array(64);
const H = new Uint32Array(8);
const ENC = new TextEncoder();
let msg = new Uint8Array(256);

/**
 * The first 8 bytes of sha256(utf-8 of `s`) as two big-endian 32-bit
 * words: FIPS 180-4 SHA-256 in plain TypeScript (about 1.4 µs for a short
 * id here, five times `node:crypto`'s `createHash` per call, which every
 * shard build pays for every paragraph id of the corpus).
 *
 * @example
 * ```ts
 * import { sha256Head } from "./shards.ts";
 * // sha256("abc") = ba7816bf 8f01cfea ...
 * const [hi, lo] = sha256Head("abc");
 * if (hi !== 0xba7816bf || lo !== 0x8f01cfea) throw new Error();
 * ```
 */
export function sha256Head(s: string): [number, number] {
  if (msg.length < s.length * 3 + 72) msg = new Uint8Array(s.length * 6 + 72);
  const len = ENC.encodeInto(s, msg).written;
  const total = (((len + 8) >>> 6) + 1) << 6;
  msg.fill(0, len, total);
  msg[len] = 0x80;
  const hiBits = Math.floor(len / 0x20000000), loBits = (len * 8) >>> 0;
  msg[total - 8] = hiBits >>> 24;
  msg[total - 7] = hiBits >>> 16;
  msg[total - 6] = hiBits >>> 8;
  msg[total - 5] = hiBits;
  msg[total - 4] = loBits >>> 24;
  msg[total - 3] = loBits >>> 16;
  msg[total - 2] = loBits >>> 8;
  msg[total - 1] = loBits;
  H.set([
    0x6a09e667,
    0xbb67ae85,
    0x3c6ef372,
    0xa54ff53a,
    0x510e527f,
    0x9b05688c,
    0x1f83d9ab,
    0x5be0cd19,
  ]);
  for (let o = 0; o < total; o += 64) {
    for (let t = 0; t < 16; t++) {
      const i = o + 4 * t;
      W[t] = (msg[i] << 24 | msg[i + 1] << 16 | msg[i + 2] << 8 | msg[i + 3]) >>> 0;
    }
    for (let t = 16; t < 64; t++) {
      const a = W[t - 15], b = W[t - 2];
      const s0 = (a >>> 7 | a << 25) ^ (a >>> 18 | a << 14) ^ (a >>> 3);
      const s1 = (b >>> 17 | b << 15) ^ (b >>> 19 | b << 13) ^ (b >>> 10);
      W[t] = (W[t - 16] + s0 + W[t - 7] + s1) >>> 0;
    }
    let a = H[0], b = H[1], c = H[2], d = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
    for (let t = 0; t < 64; t++) {
      const S1 = (e >>> 6 | e << 26) ^ (e >>> 11 | e << 21) ^ (e >>> 25 | e << 7);
      const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[t] + W[t]) | 0;
      const S0 = (a >>> 2 | a << 30) ^ (a >>> 13 | a << 19) ^ (a >>> 22 | a << 10);
      const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    H[0] += a;
    H[1] += b;
    H[2] += c;
    H[3] += d;
    H[4] += e;
    H[5] += f;
    H[6] += g;
    H[7] += h;
  }
  return [H[0], H[1]];
}

/**
 * The folder name of shard `index` of `count`.
 *
 * @example
 * ```ts
 * import { shardFolderName } from "./shards.ts";
 * if (shardFolderName(3, 8) !== "shard-3-of-8") throw new Error();
 * ```
 */
export const shardFolderName = (index: number, count: number): string =>
  `shard-${index}-of-${count}`;

/**
 * The hits file of shard `index` of `count` (`<dir>/shard-i-of-N.hits.ndjson`).
 *
 * @example
 * ```ts
 * import { shardHitsFile } from "./shards.ts";
 * if (shardHitsFile("/r/open/m/d.shards", 2, 8) !== "/r/open/m/d.shards/shard-2-of-8.hits.ndjson") {
 *   throw new Error();
 * }
 * ```
 */
export const shardHitsFile = (dir: string, index: number, count: number): string =>
  `${dir}/${shardFolderName(index, count)}.hits.ndjson`;

const SHARD_NAME = /^shard-(0|[1-9][0-9]*)-of-([1-9][0-9]*)$/;
const SHARD_TMP = /^(shard-(?:0|[1-9][0-9]*)-of-[1-9][0-9]*|quantizer)\.[0-9a-f]{8}\.tmp$/;

/**
 * The shard a folder name names (`shard-i-of-N`, no leading zeros), or `undefined`.
 *
 * @example
 * ```ts
 * import { parseShardFolderName } from "./shards.ts";
 * if (parseShardFolderName("shard-2-of-8")?.index !== 2) throw new Error();
 * if (parseShardFolderName("shard-02-of-8") !== undefined) throw new Error();
 * ```
 */
export function parseShardFolderName(name: string): { index: number; count: number } | undefined {
  const m = SHARD_NAME.exec(name);
  if (m === null) return undefined;
  const index = Number(m[1]), count = Number(m[2]);
  return index < count && count <= MAX_SHARDS ? { index, count } : undefined;
}

/** What is wrong with a header's `shard` block, or `undefined` (`format.ts` calls it). */
export function shardProblem(s: unknown): string | undefined {
  if (typeof s !== "object" || s === null || Array.isArray(s)) return "bad shard block";
  const o = s as Record<string, unknown>;
  const count = o.count, index = o.index;
  if (!Number.isSafeInteger(count) || (count as number) < 1 || (count as number) > MAX_SHARDS) {
    return `bad shard count ${JSON.stringify(count)}`;
  }
  if (
    !Number.isSafeInteger(index) || (index as number) < 0 || (index as number) >= (count as number)
  ) {
    return `bad shard index ${JSON.stringify(index)}`;
  }
  if (o.assign !== SHARD_RULE) return `unknown shard assignment ${JSON.stringify(o.assign)}`;
  if (typeof o.corpus_sha256 !== "string" || !/^[0-9a-f]{64}$/.test(o.corpus_sha256)) {
    return "bad shard corpus_sha256";
  }
  if (!Number.isSafeInteger(o.corpus_paragraphs) || (o.corpus_paragraphs as number) < 0) {
    return "bad shard corpus_paragraphs";
  }
  return undefined;
}

/** One shard of a set: its folder and checked header. */
export interface ShardEntry {
  /** The shard's folder. */
  readonly dir: string;
  /** Its header (with its `shard` block). */
  readonly header: IndexHeader & { readonly shard: ShardInfo };
}

/** The shards of one index, checked against each other ({@linkcode openShardSet}). */
export interface ShardSet {
  /** The folder holding the shards. */
  readonly dir: string;
  /** Shards of the index. */
  readonly count: number;
  /** The shards, by index. */
  readonly shards: readonly ShardEntry[];
  /** The corpus's sha256 (every shard's). */
  readonly corpusSha256: string;
  /** Phrases of all shards. */
  readonly phrases: number;
  /** Paragraphs of all shards (= the corpus's). */
  readonly paragraphs: number;
}

const bad = (file: string, message: string) => new InputError({ file, where: "", message });

/** The names in `dir`, or `undefined` when it cannot be listed (not a folder, missing). */
function namesOf(dir: string): { name: string; isDirectory: boolean }[] | undefined {
  try {
    return [...Deno.readDirSync(dir)].map((e) => ({ name: e.name, isDirectory: e.isDirectory }));
  } catch {
    return undefined;
  }
}

/**
 * Whether `dir` is to be read as a set of shards: a folder without
 * `index.json` holding a `shard-i-of-N` folder (or the temporary folder of
 * one's build). Anything else is read as one index folder, whose reader
 * names what is wrong with it.
 *
 * @example
 * ```ts
 * import { isShardSet } from "./shards.ts";
 * const dir = Deno.makeTempDirSync();
 * if (isShardSet(dir)) throw new Error();
 * Deno.mkdirSync(`${dir}/shard-0-of-2`);
 * if (!isShardSet(dir)) throw new Error();
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export function isShardSet(dir: string): boolean {
  const names = namesOf(dir);
  if (names === undefined || names.some((e) => e.name === INDEX_HEADER)) return false;
  return names.some((e) =>
    (e.isDirectory && parseShardFolderName(e.name) !== undefined) ||
    (SHARD_TMP.test(e.name) && !e.name.startsWith(QUANTIZER_FOLDER))
  );
}

/** The header fields every shard of one index must share (besides the `shard` block). */
function sharedShape(h: IndexHeader): string {
  const p = { ...h.parameters } as Record<string, unknown>;
  return JSON.stringify({
    kind: h.kind,
    metric: h.metric,
    vectors: h.vectors,
    dtype: h.dtype,
    d: h.d,
    order: h.order,
    parameters: Object.fromEntries(Object.keys(p).sort().map((k) => [k, p[k]])),
  });
}

/** What a shard's header says that differs from shard 0's, in words. */
function shapeDifference(a: IndexHeader, b: IndexHeader): string {
  for (const key of ["kind", "metric", "vectors", "dtype", "d", "order"] as const) {
    if (a[key] !== b[key]) return `${key} ${JSON.stringify(b[key])}, not ${JSON.stringify(a[key])}`;
  }
  const bits = (h: IndexHeader) => h.parameters.bits ?? 8;
  if (a.kind === "ivf-pq" && bits(a) !== bits(b)) {
    return `${bits(b)}-bit PQ codes, not ${bits(a)}-bit`;
  }
  return "other index parameters";
}

/**
 * Opens the set of shards in `dir`: lists them, reads and checks each
 * header, and checks them against each other (every refusal of the module
 * notes is an {@linkcode InputError}, one line). The shards' data files are
 * not read here: each is checked when it is opened (`read.ts`).
 *
 * `readHeader` reads one folder's checked header (`read.ts`'s
 * `readIndexHeader`; passed in so that this module loads no reader).
 */
export function openShardSet(dir: string, readHeader: (dir: string) => IndexHeader): ShardSet {
  const root = dir.replace(/\/+$/, "") || "/";
  const names = namesOf(root);
  if (names === undefined) throw bad(root, "cannot be listed as a folder of shards");
  const tmp = names.find((e) => SHARD_TMP.test(e.name));
  if (tmp !== undefined) {
    const what = tmp.name.slice(0, tmp.name.indexOf("."));
    throw bad(
      `${root}/${tmp.name}`,
      `the build of ${what} was interrupted or is running (a half-written shard): ` +
        `let it finish, or rerun it, before searching`,
    );
  }
  const found = names.filter((e) => e.isDirectory).map((e) => ({
    name: e.name,
    s: parseShardFolderName(e.name),
  })).filter((e) => e.s !== undefined) as { name: string; s: { index: number; count: number } }[];
  if (found.length === 0) throw bad(root, `no shard-i-of-N folders (and no ${INDEX_HEADER})`);
  found.sort((a, b) => a.s.count - b.s.count || a.s.index - b.s.index);
  const counts = [...new Set(found.map((e) => e.s.count))];
  if (counts.length > 1) {
    const a = found.find((e) => e.s.count === counts[0])!;
    const b = found.find((e) => e.s.count === counts[1])!;
    throw bad(
      root,
      `holds shards of ${counts.length} different counts (${a.name}, ${b.name}): ` +
        `one index has one shard count`,
    );
  }
  const count = counts[0];
  const have = new Set(found.map((e) => e.s.index));
  const absent: number[] = [];
  for (let i = 0; i < count; i++) if (!have.has(i)) absent.push(i);
  if (absent.length > 0) {
    throw bad(
      `${root}/${shardFolderName(absent[0], count)}`,
      `missing: ${count - absent.length} of the ${count} shards are present` +
        (absent.length > 1 ? ` (${absent.length} missing)` : ""),
    );
  }
  const shards: ShardEntry[] = [];
  for (let i = 0; i < count; i++) {
    const sdir = `${root}/${shardFolderName(i, count)}`;
    const h = readHeader(sdir);
    const s = h.shard;
    if (s === undefined) {
      throw bad(`${sdir}/${INDEX_HEADER}`, "is not a shard's header (no shard block)");
    }
    if (s.index !== i || s.count !== count) {
      throw bad(
        `${sdir}/${INDEX_HEADER}`,
        `says shard ${s.index} of ${s.count}; the folder is shard ${i} of ${count}`,
      );
    }
    shards.push({ dir: sdir, header: h as ShardEntry["header"] });
  }
  const first = shards[0].header;
  const ivfSha = (h: IndexHeader) =>
    h.kind === "ivf-pq"
      ? `${h.files["ivf/centroids.f32"]?.sha256}/${h.files["ivf/codebooks.f32"]?.sha256}`
      : "";
  for (const e of shards.slice(1)) {
    const h = e.header;
    const file = `${e.dir}/${INDEX_HEADER}`;
    if (h.shard.corpus_sha256 !== first.shard.corpus_sha256) {
      throw bad(
        file,
        `foreign shard: corpus sha256 ${h.shard.corpus_sha256.slice(0, 12)}… differs from ` +
          `shard 0's ${first.shard.corpus_sha256.slice(0, 12)}… (built from another corpus)`,
      );
    }
    if (h.shard.corpus_paragraphs !== first.shard.corpus_paragraphs) {
      throw bad(file, "foreign shard: another corpus paragraph count than shard 0's");
    }
    if (sharedShape(h) !== sharedShape(first)) {
      throw bad(file, `foreign shard: ${shapeDifference(first, h)} (shard 0's differ)`);
    }
    if (ivfSha(h) !== ivfSha(first)) {
      throw bad(
        file,
        "foreign shard: its IVF-PQ centroids or codebooks differ from shard 0's " +
          "(every shard must be built with the same --quantizer)",
      );
    }
  }
  const qdir = `${root}/${QUANTIZER_FOLDER}`;
  const q = quantizerSha(qdir);
  if (q !== undefined && first.kind === "ivf-pq" && q.bits !== (first.parameters.bits ?? 8)) {
    throw bad(
      `${shards[0].dir}/${INDEX_HEADER}`,
      `foreign shard: ${first.parameters.bits ?? 8}-bit PQ codes, but ${qdir} is ` +
        `${q.bits}-bit (every shard is encoded with the index's quantizer)`,
    );
  }
  if (q !== undefined && first.kind === "ivf-pq" && q.sha !== ivfSha(first)) {
    throw bad(
      `${shards[0].dir}/${INDEX_HEADER}`,
      `foreign shard: its IVF-PQ centroids or codebooks are not those of ${qdir}`,
    );
  }
  const paragraphs = shards.reduce((n, e) => n + e.header.paragraphs, 0);
  if (paragraphs !== first.shard.corpus_paragraphs) {
    throw bad(
      root,
      `the shards hold ${paragraphs} paragraphs but the corpus has ` +
        `${first.shard.corpus_paragraphs} (shards of different builds)`,
    );
  }
  return {
    dir: root,
    count,
    shards,
    corpusSha256: first.shard.corpus_sha256,
    phrases: shards.reduce((n, e) => n + e.header.phrases, 0),
    paragraphs,
  };
}

/**
 * `centroids/codebooks` sha256 of a quantizer folder's manifest and its
 * code bits, or `undefined` without one.
 */
function quantizerSha(qdir: string): { sha: string; bits: unknown } | undefined {
  let text: string;
  try {
    text = Deno.readTextFileSync(`${qdir}/quantizer.json`);
  } catch {
    return undefined;
  }
  try {
    const o = JSON.parse(text) as {
      files?: Record<string, { sha256?: string }>;
      parameters?: { bits?: unknown };
    };
    return {
      sha: `${o.files?.["centroids.f32"]?.sha256}/${o.files?.["codebooks.f32"]?.sha256}`,
      bits: o.parameters?.bits ?? 8,
    };
  } catch {
    throw bad(`${qdir}/quantizer.json`, "invalid JSON");
  }
}
