/**
 * An index read from disk on demand under a memory budget
 * (`openIndexSync(dir, { memoryBudget })`, `search --memory-budget`): the
 * same checks at open as the in-memory reader (`read.ts`: sizes, sha256
 * with `verify`, the paragraph table line by line, finite vectors, the
 * IVF-PQ contents), made in one streamed pass over each file, then
 * positioned reads while searching:
 *
 * - **Exact search** scans the dense vectors in blocks read from
 *   `vectors.f16`/`.f32`, one block at a time (at most half the budget,
 *   and at most {@linkcode MAX_BLOCK_ROWS} rows), scored by the float
 *   kernels (`scoreDense`; the in-memory search's 8-bit screening rows,
 *   d bytes a phrase, are not made): the same scores, ranks and ties.
 * - **IVF-PQ** reads a probed list's codes and rows when a batch of
 *   questions first needs it, into a cache of half the budget (less the
 *   staging area the scan kernel reads from, an eighth of the budget at
 *   most, and one buffer of its rows): one buffer, allocated once, in which
 *   lists are laid one after another, wrapping round, a list written over
 *   evicting the older ones there (no buffer a list, so no garbage). A list larger than the cache is never held whole: it
 *   is read and scanned a slice of {@linkcode DiskIndex.sliceRows} rows at a
 *   time (the same sums, offered in the same order). A 4-bit index's
 *   (`--pq-bits 4`) lists are padded to blocks of 32 rows: its slices are
 *   whole blocks (at least one, whatever the budget), each scanned by the
 *   fast scan as an index of one list (`ivfpq/fastscan_slices.ts`: the same
 *   candidates as in memory). The re-scored candidates' vectors are read
 *   row by row.
 * - **Phrase texts and offsets** are read a paragraph line at a time from
 *   `paragraphs.ndjson` through a cache of a quarter of the budget, each
 *   paragraph kept compactly (its phrases as one string, counted at 2
 *   bytes a code unit, where they start, its offsets as int32).
 *
 * Not counted in the budget: the runtime and the code; the question
 * vectors of a block and the top-k heaps (and, over shards, the merged
 * top k of every question); the per-paragraph table (ids, first rows, byte
 * offsets of the lines, a shard's positions: some 60 bytes a paragraph);
 * the IVF-PQ centroids, codebooks and list offsets (nlist × d × 4 +
 * 256 × d × 4 + nlist × 8 bytes); one row of a list and one paragraph
 * line beyond their shares (at least one of each is held whatever the
 * budget); the page cache of the operating system. The garbage that
 * re-reading lines makes (evicted entries, parsed lines) is not counted
 * either, but it is bounded: a full collection runs whenever the heap
 * passes a quarter of the budget plus 64 MiB (`HeapCeiling` in
 * `budget.ts`), checked every 1/64 of the budget of lines read. The answers are those of the in-memory index, byte
 * for byte, with any budget (`tests/search/memory_budget_test.ts`).
 *
 * Sparse (CSR) and hybrid indexes are not read this way: a budget on one is
 * refused with an {@linkcode InputError}.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { InputError } from "../../io/errors.ts";
import { statRealFolder, statRegularFile } from "../../io/regular.ts";
import {
  f16Name,
  firstNonFinite,
  firstNonFiniteF16,
  INDEX_FILES_ONLY,
  INDEX_HEADER,
  type IndexHeader,
  PARAGRAPHS_FILE,
} from "./format.ts";
import { IVF_FILES, type IvfData, type IvfOnDisk } from "./ivfpq/ivfpq.ts";
import { ByteLru, type HeapCeiling, heapCeilingFor } from "./budget.ts";
import { type ParagraphLine, parseParagraphLine } from "./paragraphs.ts";
import { codesMemory } from "./ivfpq/pq_scan.ts";
import { blockStarts } from "./ivfpq/fastscan.ts";
import { FS_BLOCK } from "../kernels/wasm_fastscan.ts";

/** Paragraph lines are UTF-8 (checked again at each read, as when the index was opened). */
const UTF8_FATAL = new TextDecoder("utf-8", { fatal: true });

/** The most rows of one streamed block of an exact scan. */
export const MAX_BLOCK_ROWS = 16384;

/** Bytes of one read while a file is checked at open. */
const CHECK_BLOCK = 1 << 20;

const bad = (file: string, message: string) => new InputError({ file, where: "", message });

/** Reads `buf.length` bytes of `f` at `pos`; a short file is an {@linkcode InputError}. */
function readAt(f: Deno.FsFile, pos: number, buf: Uint8Array, path: string): void {
  f.seekSync(pos, Deno.SeekMode.Start);
  for (let o = 0; o < buf.length;) {
    const n = f.readSync(buf.subarray(o));
    if (n === null) throw bad(path, "ended early (truncated or corrupt index)");
    o += n;
  }
}

/** Opens an index file after checking by name that it is a regular file of the listed size. */
function openChecked(dir: string, h: IndexHeader, name: string): Deno.FsFile {
  const path = `${dir}/${name}`;
  const st = statRegularFile(path, { links: "refuse", why: INDEX_FILES_ONLY });
  if (st === undefined) throw bad(path, "missing (the index folder is incomplete)");
  const want = h.files[name].bytes;
  if (st.size !== want) {
    throw bad(
      path,
      `${st.size} bytes but ${INDEX_HEADER} says ${want} (truncated or corrupt index)`,
    );
  }
  return Deno.openSync(path, { read: true });
}

/**
 * Streams file `name` once: `each(block, at)` on every block read (`at`: its
 * byte offset), then its sha256 checked when `verify`. A failure `each`
 * throws waits for the sha256 (a changed file is named as such first).
 */
function streamFile(
  f: Deno.FsFile,
  dir: string,
  h: IndexHeader,
  name: string,
  verify: boolean,
  each: (block: Uint8Array, at: number) => void,
  unit = 1,
): void {
  const path = `${dir}/${name}`;
  const size = h.files[name].bytes;
  const hash = verify ? createHash("sha256") : undefined;
  const step = Math.max(unit, CHECK_BLOCK - (CHECK_BLOCK % unit));
  const buf = new Uint8Array(Math.min(step, Math.max(size, 1)));
  let failed: unknown;
  for (let at = 0; at < size; at += step) {
    const b = buf.subarray(0, Math.min(step, size - at));
    readAt(f, at, b, path);
    hash?.update(b);
    if (failed === undefined) {
      try {
        each(b, at);
      } catch (e) {
        failed = e;
        if (!verify) break;
      }
    }
  }
  if (hash !== undefined && hash.digest("hex") !== h.files[name].sha256) {
    throw bad(path, `sha256 differs from ${INDEX_HEADER} (corrupt index)`);
  }
  if (failed !== undefined) throw failed;
}

/** The IVF-PQ part of an index read on demand: what stays in memory, the files, the list cache. */
interface DiskIvf {
  readonly data: IvfData;
  readonly codes: Deno.FsFile;
  readonly rows: Deno.FsFile;
  readonly cache: ListArena;
  /** Rows of the slice just read when its list is not cached ({@linkcode DiskIvf.sliceRows}). */
  readonly rows1: Uint32Array;
  /** The most rows of one slice of a list (the staging area's size). */
  readonly sliceRows: number;
  /**
   * A 4-bit index's first block of each list (`fastscan.ts` `blockStarts`):
   * its codes are whole blocks of 32 rows; absent for 8 bits.
   */
  readonly blocks?: Float64Array;
}

/** A list kept in the cache: its codes and rows, views of the arena. */
interface CachedList {
  readonly codes: Uint8Array;
  readonly rows: Uint32Array;
}

/**
 * The IVF-PQ list cache: one buffer of `capacity` bytes (allocated once,
 * when the first list is kept) in which lists are laid one after another,
 * wrapping to the start; a list written over a kept one evicts it (first in,
 * first out). No buffer is allocated per list, so evicted lists leave no
 * garbage for the collector: memory stays within the capacity.
 */
class ListArena {
  #buf?: ArrayBuffer;
  #head = 0;
  readonly #kept = new Map<number, { at: number; end: number; list: CachedList }>();
  /** Lists evicted (for tests and benchmarks). */
  evictions = 0;

  constructor(readonly capacity: number) {}

  /** List `l`, or `undefined`. */
  get(l: number): CachedList | undefined {
    return this.#kept.get(l)?.list;
  }

  /**
   * Room for list `l` of `n` rows and `bpv` codes a row (at most the
   * capacity; `codeBytes`: its codes' bytes when not `n · bpv`, a 4-bit
   * list's whole blocks): its rows and codes, to be filled by the caller.
   */
  put(l: number, n: number, bpv: number, codeBytes = n * bpv): CachedList {
    const need = 4 * Math.ceil((n * 4 + codeBytes) / 4);
    this.#buf ??= new ArrayBuffer(this.capacity);
    if (this.#head + need > this.capacity) this.#head = 0;
    const at = this.#head, end = at + need;
    for (const [k, e] of this.#kept) {
      if (e.at < end && at < e.end) {
        this.#kept.delete(k);
        this.evictions++;
      }
    }
    const list = {
      rows: new Uint32Array(this.#buf, at, n),
      codes: new Uint8Array(this.#buf, at + n * 4, codeBytes),
    };
    this.#kept.set(l, { at, end, list });
    this.#head = end;
    return list;
  }

  /** Drops every list and the buffer. */
  clear(): void {
    this.#kept.clear();
    this.#buf = undefined;
    this.#head = 0;
  }
}

/** The paragraph table of an index read on demand: per paragraph, not per phrase. */
export interface DiskTable {
  /** Paragraph ids, in index order. */
  readonly ids: string[];
  /** First row of each paragraph, and the row count at the end. */
  readonly starts: Float64Array;
  /** A shard's paragraphs' places in the corpus, or `null`. */
  readonly positions: Float64Array | null;
}

/**
 * The vectors, IVF-PQ lists and phrase texts of an open index, read from
 * its files on demand under a memory budget (see the module notes).
 * Opened by `openIndexSync` with `memoryBudget`; {@linkcode DiskIndex.close}
 * closes its files.
 */
export class DiskIndex implements IvfOnDisk {
  /** The budget, in bytes. */
  readonly budget: number;
  /** Rows of one streamed block of the exact scan. */
  readonly blockRows: number;
  readonly #dir: string;
  readonly #h: IndexHeader;
  readonly #starts: Float64Array;
  readonly #lines: Float64Array;
  readonly #para: Deno.FsFile;
  readonly #vectors: Deno.FsFile;
  readonly #texts: ByteLru<number, PhraseTexts>;
  readonly #block: Uint8Array;
  #lineBuf = new Uint8Array(1 << 16);
  /** The ceiling on the garbage that re-reading paragraph lines makes (`budget.ts`). */
  readonly heap: HeapCeiling;
  #ivf?: DiskIvf;
  #closed = false;

  /** Paragraph lines read from disk (for tests and benchmarks). */
  textReads = 0;
  /** IVF-PQ lists read from disk (for tests and benchmarks). */
  listReads = 0;
  /** Slices of lists larger than the cache read from disk (for tests and benchmarks). */
  sliceReads = 0;

  private constructor(
    dir: string,
    h: IndexHeader,
    starts: Float64Array,
    lines: Float64Array,
    para: Deno.FsFile,
    vectors: Deno.FsFile,
    budget: number,
  ) {
    this.#dir = dir;
    this.#h = h;
    this.#starts = starts;
    this.#lines = lines;
    this.#para = para;
    this.#vectors = vectors;
    this.budget = budget;
    const rowBytes = h.d * (h.dtype === "f16" ? 2 : 4);
    this.blockRows = Math.max(1, Math.min(MAX_BLOCK_ROWS, Math.floor(budget / 2 / rowBytes)));
    this.#block = new Uint8Array(this.blockRows * rowBytes);
    this.#texts = new ByteLru(Math.floor(budget / 4));
    this.heap = heapCeilingFor(budget);
  }

  /**
   * Opens the index folder `dir` (its checked header `h`) to be read on
   * demand within `budget` bytes, checking its files as the in-memory
   * reader does (sha256 with `verify`). Returns the paragraph table too.
   */
  static open(
    dir: string,
    h: IndexHeader,
    budget: number,
    verify: boolean,
  ): { disk: DiskIndex; table: DiskTable } {
    if (h.vectors !== "dense") {
      throw bad(dir, "a memory budget applies to dense indexes only (this one is csr)");
    }
    const files: Deno.FsFile[] = [];
    const open = (name: string) => {
      const f = openChecked(dir, h, name);
      files.push(f);
      return f;
    };
    try {
      const para = open(PARAGRAPHS_FILE);
      const table = DiskIndex.#readTable(para, dir, h, verify);
      let ivf: DiskIvf | undefined;
      if (h.kind === "ivf-pq") ivf = DiskIndex.#openIvf(dir, h, verify, budget, open);
      const name = `vectors.${h.dtype}`;
      const vectors = open(name);
      DiskIndex.#checkVectors(vectors, dir, h, name, verify);
      const disk = new DiskIndex(dir, h, table.starts, table.lines, para, vectors, budget);
      disk.#ivf = ivf;
      return { disk, table };
    } catch (e) {
      for (const f of files) f.close();
      throw e;
    }
  }

  /** The paragraph table, line by line (the checks of `read.ts`), and each line's byte offset. */
  static #readTable(f: Deno.FsFile, dir: string, h: IndexHeader, verify: boolean) {
    const path = `${dir}/${PARAGRAPHS_FILE}`;
    const ids: string[] = [];
    const starts = new Float64Array(h.paragraphs + 1);
    const lines = new Float64Array(h.paragraphs + 1);
    const positions = h.shard !== undefined ? new Float64Array(h.paragraphs) : null;
    const utf8 = new TextDecoder("utf-8", { fatal: true });
    let carry = new Uint8Array(0), lineAt = 0, p = 0, row = 0, before = -1;
    const line = (bytes: Uint8Array, at: number) => {
      if (p >= h.paragraphs) {
        // Counted as the in-memory reader counts: every line, then compared.
        p++;
        return;
      }
      const o = parseParagraphLine(utf8.decode(bytes), p, row, h, path, before);
      if (positions !== null) positions[p] = before = o.position!;
      ids.push(o.id);
      starts[p] = row;
      lines[p] = at;
      row += o.rows;
      p++;
    };
    streamFile(f, dir, h, PARAGRAPHS_FILE, verify, (b, at) => {
      let from = 0;
      for (let i = b.indexOf(10); i >= 0; i = b.indexOf(10, i + 1)) {
        const part = b.subarray(from, i);
        if (carry.length > 0) {
          const all = new Uint8Array(carry.length + part.length);
          all.set(carry);
          all.set(part, carry.length);
          line(all, lineAt);
          carry = new Uint8Array(0);
        } else line(part, at + from);
        from = i + 1;
        lineAt = at + from;
      }
      if (from < b.length) {
        const rest = b.subarray(from);
        const all = new Uint8Array(carry.length + rest.length);
        all.set(carry);
        all.set(rest, carry.length);
        carry = all;
      }
    });
    if (carry.length > 0 || h.files[PARAGRAPHS_FILE].bytes === 0) {
      throw bad(path, "does not end with a newline (truncated)");
    }
    if (p !== h.paragraphs) {
      throw bad(path, `${p} paragraphs but ${INDEX_HEADER} says ${h.paragraphs}`);
    }
    if (row !== h.phrases) throw bad(path, `${row} rows but ${INDEX_HEADER} says ${h.phrases}`);
    starts[h.paragraphs] = row;
    lines[h.paragraphs] = h.files[PARAGRAPHS_FILE].bytes;
    return { ids, starts, lines, positions };
  }

  /** The dense vectors checked in one pass: sha256 (with `verify`), every value finite. */
  static #checkVectors(
    f: Deno.FsFile,
    dir: string,
    h: IndexHeader,
    name: string,
    verify: boolean,
  ): void {
    const f16 = h.dtype === "f16", size = f16 ? 2 : 4;
    streamFile(f, dir, h, name, verify, (b, at) => {
      const v = f16
        ? new Uint16Array(b.buffer, b.byteOffset, b.length / 2)
        : new Float32Array(b.buffer, b.byteOffset, b.length / 4);
      const i = v instanceof Float32Array ? firstNonFinite(v) : firstNonFiniteF16(v);
      if (i < 0) return;
      const x = at / size + i;
      const s = v instanceof Float32Array ? String(v[i]) : f16Name(v[i]);
      throw bad(
        `${dir}/${name}`,
        `${s} at row ${Math.floor(x / h.d)}, column ${x % h.d} (corrupt index)`,
      );
    }, size);
  }

  /** The IVF-PQ files checked (sizes, sha256, contents as `ivfContentProblem`), lists left on disk. */
  static #openIvf(
    dir: string,
    h: IndexHeader,
    verify: boolean,
    budget: number,
    open: (name: string) => Deno.FsFile,
  ): DiskIvf {
    const four = h.parameters.bits === 4;
    statRealFolder(`${dir}/ivf`, INDEX_FILES_ONLY);
    const nlist = h.parameters.nlist as number, bpv = h.parameters.bpv as number;
    const whole = (name: string) => {
      const f = open(name);
      const b = new Uint8Array(h.files[name].bytes);
      let at = 0;
      streamFile(f, dir, h, name, verify, (x) => {
        b.set(x, at);
        at += x.length;
      });
      return b;
    };
    const files: Record<string, Deno.FsFile> = {};
    const small: Record<string, Uint8Array> = {};
    // In the order of the header's file list, as the in-memory reader checks them.
    for (const name of Object.keys(h.files).filter((k) => k.startsWith("ivf/"))) {
      if (name === IVF_FILES.codes || name === IVF_FILES.rows) {
        const f = open(name);
        if (verify) streamFile(f, dir, h, name, true, () => {});
        files[name] = f;
      } else small[name] = whole(name);
    }
    const f32 = (b: Uint8Array) => new Float32Array(b.buffer, b.byteOffset, b.length / 4);
    const o = small[IVF_FILES.offsets];
    const offsets = Float64Array.from(
      new BigInt64Array(o.buffer, o.byteOffset, nlist + 1),
      (x) => Number(x),
    );
    const centroids = f32(small[IVF_FILES.centroids]);
    const codebooks = f32(small[IVF_FILES.codebooks]);
    const why = ivfStreamProblem(
      h.phrases,
      nlist,
      offsets,
      (from, n) => {
        const b = new Uint8Array(n * 4);
        readAt(files[IVF_FILES.rows], from * 4, b, `${dir}/${IVF_FILES.rows}`);
        return new Uint32Array(b.buffer);
      },
      centroids,
      codebooks,
    );
    if (why !== undefined) throw bad(`${dir}/${why[0]}`, why[1]);
    // A 4-bit index's codes: its lists padded to blocks of 32 rows (as `read.ts` checks).
    const blocks = four ? blockStarts(offsets, nlist) : undefined;
    if (blocks !== undefined) {
      const want = blocks[nlist] * FS_BLOCK * bpv, have = h.files[IVF_FILES.codes].bytes;
      if (have !== want) {
        throw bad(
          `${dir}/${IVF_FILES.codes}`,
          `${have} bytes but the lists' blocks of 32 rows take ${want} (corrupt index)`,
        );
      }
    }
    let maxN = 1;
    for (let l = 0; l < nlist; l++) maxN = Math.max(maxN, offsets[l + 1] - offsets[l]);
    // The staging area (codes and rows of one slice of a list): an eighth of the budget, at
    // most the largest list; a list larger than the cache is scanned a slice at a time (a
    // 4-bit index's: whole blocks of 32 rows).
    const unit = four ? FS_BLOCK : 1;
    const sliceRows = unit * Math.max(
      1,
      Math.floor(
        Math.min(Math.ceil(maxN / unit) * unit, Math.floor(budget / 8 / (bpv + 4))) / unit,
      ),
    );
    const memory = codesMemory(sliceRows * bpv);
    const codes = memory !== undefined
      ? new Uint8Array(memory.buffer, 0, sliceRows * bpv)
      : new Uint8Array(sliceRows * bpv);
    const data: IvfData = {
      nlist,
      bpv,
      centroids,
      codebooks,
      offsets,
      rows: new Uint32Array(0),
      codes,
      ...(memory !== undefined ? { memory } : {}),
      ...(four ? { bits: 4 as const } : {}),
    };
    const staging = memory !== undefined ? memory.buffer.byteLength : codes.length;
    return {
      data,
      codes: files[IVF_FILES.codes],
      rows: files[IVF_FILES.rows],
      cache: new ListArena(Math.max(0, Math.floor(budget / 2) - staging - sliceRows * 4)),
      rows1: new Uint32Array(sliceRows),
      sliceRows,
      ...(blocks !== undefined ? { blocks } : {}),
    };
  }

  /** The IVF-PQ data: centroids, codebooks, offsets; `codes` the staging area of one list. */
  ivfData(): IvfData {
    if (this.#ivf === undefined) throw new Error(`${this.#dir} has no IVF-PQ lists`);
    return this.#ivf.data;
  }

  /** The most rows of one slice of a list ({@linkcode DiskIndex.list}). */
  get sliceRows(): number {
    return this.#ivf?.sliceRows ?? 1;
  }

  /**
   * Puts the codes of rows `from … from + n` of list `l` (n at most
   * {@linkcode DiskIndex.sliceRows}) at the start of the staging area; their
   * global rows (valid until the next call). A list that fits the cache is
   * read whole into it when first asked for; a larger one is read a slice at
   * a time, into the staging area and one buffer of rows.
   */
  list(l: number, from: number, n: number): Uint32Array {
    const ivf = this.#ivf!;
    if (ivf.blocks !== undefined) return this.#list4(ivf, ivf.blocks, l, from, n);
    const { offsets, bpv } = ivf.data;
    const s = offsets[l], all = offsets[l + 1] - s;
    const staged = ivf.data.codes;
    let have = ivf.cache.get(l);
    if (have === undefined && 4 * Math.ceil((all * (bpv + 4)) / 4) <= ivf.cache.capacity) {
      // Kept in the arena, read there whole.
      this.listReads++;
      have = ivf.cache.put(l, all, bpv);
      const rb = new Uint8Array(have.rows.buffer, have.rows.byteOffset, all * 4);
      readAt(ivf.rows, s * 4, rb, `${this.#dir}/${IVF_FILES.rows}`);
      readAt(ivf.codes, s * bpv, have.codes, `${this.#dir}/${IVF_FILES.codes}`);
    }
    // Codes are sub-quantizer-major inside a list (code m of row i at m·all + i): a slice
    // is bpv runs of n bytes, laid out the same way (m·n + i) in the staging area.
    if (have !== undefined) {
      if (n === all) staged.set(have.codes);
      else {
        for (let m = 0; m < bpv; m++) {
          staged.set(have.codes.subarray(m * all + from, m * all + from + n), m * n);
        }
      }
      return have.rows.subarray(from, from + n);
    }
    if (from === 0) this.listReads++;
    this.sliceReads++;
    const path = `${this.#dir}/${IVF_FILES.codes}`;
    if (n === all) readAt(ivf.codes, s * bpv, staged.subarray(0, n * bpv), path);
    else {
      for (let m = 0; m < bpv; m++) {
        readAt(ivf.codes, s * bpv + m * all + from, staged.subarray(m * n, (m + 1) * n), path);
      }
    }
    const rows = ivf.rows1.subarray(0, n);
    readAt(
      ivf.rows,
      (s + from) * 4,
      new Uint8Array(rows.buffer, 0, n * 4),
      `${this.#dir}/${IVF_FILES.rows}`,
    );
    return rows;
  }

  /**
   * {@linkcode DiskIndex.list} for a 4-bit index: `from` a multiple of 32;
   * the codes of the slice's blocks (`⌈n / 32⌉` of them, 32·bpv bytes
   * each) at the start of the staging area.
   */
  #list4(ivf: DiskIvf, blocks: Float64Array, l: number, from: number, n: number): Uint32Array {
    const { offsets, bpv } = ivf.data;
    const s = offsets[l], all = offsets[l + 1] - s, bb = FS_BLOCK * bpv;
    const b0 = from / FS_BLOCK, nb = Math.ceil(n / FS_BLOCK);
    const staged = ivf.data.codes;
    const listBytes = (blocks[l + 1] - blocks[l]) * bb;
    let have = ivf.cache.get(l);
    if (have === undefined && 4 * Math.ceil((all * 4 + listBytes) / 4) <= ivf.cache.capacity) {
      this.listReads++;
      have = ivf.cache.put(l, all, bpv, listBytes);
      const rb = new Uint8Array(have.rows.buffer, have.rows.byteOffset, all * 4);
      readAt(ivf.rows, s * 4, rb, `${this.#dir}/${IVF_FILES.rows}`);
      readAt(ivf.codes, blocks[l] * bb, have.codes, `${this.#dir}/${IVF_FILES.codes}`);
    }
    if (have !== undefined) {
      staged.set(have.codes.subarray(b0 * bb, (b0 + nb) * bb));
      return have.rows.subarray(from, from + n);
    }
    if (from === 0) this.listReads++;
    this.sliceReads++;
    readAt(
      ivf.codes,
      (blocks[l] + b0) * bb,
      staged.subarray(0, nb * bb),
      `${this.#dir}/${IVF_FILES.codes}`,
    );
    const rows = ivf.rows1.subarray(0, n);
    readAt(
      ivf.rows,
      (s + from) * 4,
      new Uint8Array(rows.buffer, 0, n * 4),
      `${this.#dir}/${IVF_FILES.rows}`,
    );
    return rows;
  }

  /** The vectors of `rows` (increasing), one after another: f32 values or f16 bits. */
  gather(rows: readonly number[]): Float32Array | Uint16Array {
    const h = this.#h, f16 = h.dtype === "f16";
    const rowBytes = h.d * (f16 ? 2 : 4);
    const out = new Uint8Array(rows.length * rowBytes);
    for (let i = 0; i < rows.length;) {
      let j = i + 1;
      while (j < rows.length && rows[j] === rows[j - 1] + 1) j++;
      readAt(
        this.#vectors,
        rows[i] * rowBytes,
        out.subarray(i * rowBytes, j * rowBytes),
        `${this.#dir}/vectors.${h.dtype}`,
      );
      i = j;
    }
    return f16 ? new Uint16Array(out.buffer) : new Float32Array(out.buffer);
  }

  /**
   * Rows `from … from + n` (n at most {@linkcode DiskIndex.blockRows}) of
   * the dense vectors, read into the one block buffer (valid until the next
   * call): f32 values or f16 bits.
   */
  readRows(from: number, n: number): Float32Array | Uint16Array {
    const h = this.#h, f16 = h.dtype === "f16";
    const rowBytes = h.d * (f16 ? 2 : 4);
    const b = this.#block.subarray(0, n * rowBytes);
    readAt(this.#vectors, from * rowBytes, b, `${this.#dir}/vectors.${h.dtype}`);
    return f16
      ? new Uint16Array(b.buffer, b.byteOffset, n * h.d)
      : new Float32Array(b.buffer, b.byteOffset, n * h.d);
  }

  /** Paragraph `p`'s phrases, from the cache or read from its line and checked again. */
  #paragraph(p: number): PhraseTexts {
    const have = this.#texts.get(p);
    if (have !== undefined) return have;
    this.textReads++;
    const at = this.#lines[p], end = this.#lines[p + 1] - 1;
    // One buffer for every line read (grown to the longest): a fresh one a read would be
    // memory outside the JavaScript heap, left to the collector to free.
    if (this.#lineBuf.length < end - at) {
      this.#lineBuf = new Uint8Array(Math.max(end - at, 2 * this.#lineBuf.length));
    }
    const b = this.#lineBuf.subarray(0, end - at);
    const path = `${this.#dir}/${PARAGRAPHS_FILE}`;
    readAt(this.#para, at, b, path);
    const text = UTF8_FATAL.decode(b);
    const o = parseParagraphLine(text, p, this.#starts[p], this.#h, path, -1);
    const t = compactTexts(o);
    this.heap.note(b.length);
    // A string counted at 2 bytes a code unit (V8 keeps Latin-1 in 1), the arrays as they are.
    const chars = t.joined.length + (t.title?.length ?? 0) + (t.context?.length ?? 0);
    this.#texts.put(p, t, 2 * chars + t.cuts.byteLength + (t.offsets?.byteLength ?? 0) + 200);
    return t;
  }

  /** Paragraph `p`'s article title and text (`null` where unknown). */
  paragraphText(p: number): { title: string | null; context: string | null } {
    const t = this.#paragraph(p);
    return { title: t.title, context: t.context };
  }

  /** The phrase `i` of paragraph `p`. */
  phrase(p: number, i: number): string {
    const t = this.#paragraph(p);
    return t.joined.slice(t.cuts[i], t.cuts[i + 1]);
  }

  /**
   * The code point offsets of phrase `i` of paragraph `p` as the in-memory
   * table holds them (int32; `[-1, -1]` where its line has none).
   */
  offsets(p: number, i: number): [number, number] {
    const o = this.#paragraph(p).offsets;
    return o === null ? [-1, -1] : [o[2 * i], o[2 * i + 1]];
  }

  /** Closes the files (a later read fails). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#para.close();
    this.#vectors.close();
    this.#ivf?.codes.close();
    this.#ivf?.rows.close();
    this.#texts.clear();
    this.#ivf?.cache.clear();
  }
}

/** A paragraph's phrases held compactly: one string, where each starts, the offsets. */
interface PhraseTexts {
  /** The phrases, one after another. */
  readonly joined: string;
  /** Phrase i is `joined.slice(cuts[i], cuts[i + 1])`. */
  readonly cuts: Uint32Array;
  /** `[start, end]` of each phrase (int32), or `null` where the line has none. */
  readonly offsets: Int32Array | null;
  /** The article title, or `null`. */
  readonly title: string | null;
  /** The paragraph's text, or `null`. */
  readonly context: string | null;
}

/** The compact form of a checked paragraph line. */
function compactTexts(o: ParagraphLine): PhraseTexts {
  const cuts = new Uint32Array(o.rows + 1);
  for (let i = 0; i < o.rows; i++) cuts[i + 1] = cuts[i] + o.phrases[i].length;
  let offsets: Int32Array | null = null;
  if (o.offsets !== null) {
    offsets = new Int32Array(2 * o.rows);
    o.offsets.forEach(([s, e], i) => {
      offsets![2 * i] = s;
      offsets![2 * i + 1] = e;
    });
  }
  return { joined: o.phrases.join(""), cuts, offsets, title: o.title, context: o.context };
}

/**
 * `ivfContentProblem` (`format.ts`) with the list rows read a list at a
 * time (`rowsOf(from, n)`) and a bit a phrase to find a row in two lists:
 * the same checks, in the same order, with the same messages.
 */
function ivfStreamProblem(
  phrases: number,
  nlist: number,
  offsets: Float64Array,
  rowsOf: (from: number, n: number) => Uint32Array,
  centroids: Float32Array,
  codebooks: Float32Array,
): [string, string] | undefined {
  for (let l = 0; l < nlist; l++) {
    if (!(offsets[l + 1] >= offsets[l])) {
      return ["ivf/list_offsets.i64", `offsets decrease at list ${l} (corrupt index)`];
    }
  }
  if (offsets[0] !== 0 || offsets[nlist] !== phrases) {
    return ["ivf/list_offsets.i64", `offsets do not span the ${phrases} phrases (corrupt index)`];
  }
  const seen = new Uint8Array(Math.ceil(phrases / 8));
  for (let l = 0; l < nlist; l++) {
    const s = offsets[l], n = offsets[l + 1] - s;
    const rows = n > 0 ? rowsOf(s, n) : new Uint32Array(0);
    for (let x = 0; x < n; x++) {
      const r = rows[x], i = s + x;
      if (r >= phrases) {
        return ["ivf/list_rows.u32", `row ${r} at ${i} is out of range (corrupt index)`];
      }
      if (x > 0 && r <= rows[x - 1]) {
        return [
          "ivf/list_rows.u32",
          `row ${r} at ${i} is not above the row before it in list ${l} ` +
          `(rows increase within a list; corrupt index)`,
        ];
      }
      if ((seen[r >>> 3] & (1 << (r & 7))) !== 0) {
        return ["ivf/list_rows.u32", `row ${r} at ${i} is in more than one list (corrupt index)`];
      }
      seen[r >>> 3] |= 1 << (r & 7);
    }
  }
  for (const [file, v] of [["ivf/centroids.f32", centroids], ["ivf/codebooks.f32", codebooks]]) {
    const i = firstNonFinite(v as Float32Array);
    if (i >= 0) return [file as string, `value ${i} is ${(v as Float32Array)[i]} (corrupt index)`];
  }
  return undefined;
}
