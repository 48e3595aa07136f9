/**
 * Writing PI-SQuAD dumps: `<stem>.npz` (the matrix, `numpy.savez` /
 * `savez_compressed` key `arr_0`, or scipy `save_npz` CSR) and, for
 * paragraphs, `<stem>.json` (the phrase list, Python `json.dump` format).
 * Every file is written atomically (temporary file + rename), so a killed
 * run never leaves a partial file, and a paragraph counts as complete when
 * both of its files exist. Outputs are deterministic (fixed zip times), so
 * a resumed run produces the same bytes as an uninterrupted one. An id
 * whose files (with their temporary names) would not fit the file system's
 * 255-byte names is refused before anything is written (the limits are in
 * `names.ts`: 231 bytes for a paragraph id, 237 for a question id).
 * {@linkcode dumpFileNames} names an item's files, for a runner that takes
 * back what a failed run wrote (`encoders/embed.ts`).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import type { Matrix } from "../matrix.ts";
import { dumpStem, type IdKind } from "./names.ts";
import { FileError, InputError, writeFailure } from "../errors.ts";
import { ndarray } from "../npy_format.ts";
import { encodeNpz, encodeSparseNpz } from "../npz_format.ts";
import { pyStringLiteral } from "../pyjson.ts";
import { writeFileAtomic } from "../fs.ts";

/** A phrase of a paragraph: `context.slice(start, end) === text` (UTF-16 offsets). */
export interface DumpPhrase {
  /** The phrase text. */
  readonly text: string;
  /** Start offset in the context, in UTF-16 code units. */
  readonly start: number;
  /** End offset (exclusive), in UTF-16 code units. */
  readonly end: number;
}

/** A paragraph's dump: its phrases and their N×d matrix (an encoder's `EncodedContext` fits). */
export interface DumpContext {
  /** Paragraph id (`title_index`). */
  readonly id: string;
  /** The N phrases. */
  readonly phrases: readonly DumpPhrase[];
  /** N×d phrase matrix, row i for phrase i. */
  readonly matrix: Matrix;
}

/** A question's dump: its 1×d vector (an encoder's `EncodedQuestion` fits). */
export interface DumpQuestion {
  /** Question id. */
  readonly id: string;
  /** 1×d question vector. */
  readonly vector: Matrix;
}

/** How matrices are stored. */
export interface DumpFormat {
  /** scipy sparse CSR (`save_npz`) instead of a dense `arr_0`. */
  readonly sparse: boolean;
  /** Deflate the archive entries (`savez_compressed` / `save_npz(compressed=True)`). */
  readonly compressed: boolean;
  /** Dense element type (default: the encoder's). */
  readonly dtype?: "f32" | "f16";
}

/**
 * The `.npz` bytes of a matrix in the given format. A dense matrix asked
 * for sparse is converted to CSR (zeros dropped); a CSR matrix asked for
 * dense is refused by the caller (d may be millions).
 */
export function encodeMatrix(m: Matrix, format: DumpFormat): Uint8Array {
  const opts = { compressed: format.compressed };
  if (format.sparse) {
    const csr = m.kind === "csr" ? m : denseToCsr(m);
    return encodeSparseNpz({
      format: "csr",
      shape: [csr.rows, csr.cols],
      data: ndarray(csr.data),
      indices: ndarray(csr.indices),
      indptr: ndarray(csr.indptr),
    }, opts);
  }
  if (m.kind !== "dense") throw new Error("a sparse matrix cannot be written dense");
  let data: Float32Array | Float16Array = m.data;
  if (format.dtype === "f16" && data instanceof Float32Array) data = new Float16Array(data);
  if (format.dtype === "f32" && data instanceof Float16Array) data = new Float32Array(data);
  return encodeNpz({ arr_0: ndarray(data, [m.rows, m.cols]) }, opts);
}

function denseToCsr(m: Matrix & { kind: "dense" }) {
  const indptr = new Int32Array(m.rows + 1);
  let nnz = 0;
  for (let i = 0; i < m.data.length; i++) if (m.data[i] !== 0) nnz++;
  const data = new Float32Array(nnz);
  const indices = new Int32Array(nnz);
  let k = 0;
  for (let r = 0; r < m.rows; r++) {
    const base = r * m.cols;
    for (let c = 0; c < m.cols; c++) {
      const v = m.data[base + c];
      if (v !== 0) {
        data[k] = v;
        indices[k++] = c;
      }
    }
    indptr[r + 1] = k;
  }
  return { kind: "csr" as const, rows: m.rows, cols: m.cols, data, indices, indptr };
}

/** The phrase list as Python's `json.dump(list_of_str)` writes it. */
export function phrasesJson(phrases: readonly { text: string }[]): string {
  let s = "[";
  for (let i = 0; i < phrases.length; i++) {
    if (i > 0) s += ", ";
    s += pyStringLiteral(phrases[i].text);
  }
  return s + "]";
}

/**
 * Code point offset of every UTF-16 index up to `s.length` (a surrogate
 * pair's second half maps to its pair's offset), for Python-style offsets.
 *
 * @example
 * ```ts
 * import { codePointIndex } from "./writer.ts";
 * if (codePointIndex("a😀b").join() !== "0,1,1,2,3") throw new Error();
 * ```
 */
export function codePointIndex(s: string): Int32Array {
  const out = new Int32Array(s.length + 1);
  let cp = 0;
  for (let i = 0; i < s.length; i++) {
    out[i] = cp;
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) out[++i] = cp;
    }
    cp++;
  }
  out[s.length] = cp;
  return out;
}

/**
 * The `--metadata` side file of a paragraph: what a search demo needs to
 * show a phrase in its context. Offsets are in Unicode code points (Python
 * string indices, like SQuAD's `answer_start`): `context[start:end]` in
 * Python is the phrase.
 */
export function metadataJson(id: string, context: string, enc: DumpContext): string {
  const cpi = codePointIndex(context);
  const offsets = enc.phrases.map((p) => [cpi[p.start], cpi[p.end]]);
  return JSON.stringify({ id, context, offsets });
}

const exists = async (path: string) => {
  try {
    await Deno.lstat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
};

/** Whether the paragraph `id` already has both of its files in `dir`. */
export const contextDumpComplete = (dir: string, id: string): Effect.Effect<boolean, FileError> =>
  Effect.tryPromise({
    try: async () => {
      const stem = `${dir}/${dumpStem(id, "paragraph")}`;
      return (await exists(`${stem}.npz`)) && (await exists(`${stem}.json`));
    },
    catch: (e) => new FileError({ file: dir, message: e instanceof Error ? e.message : String(e) }),
  });

/** Whether the question `id` already has its file in `dir`. */
export const questionDumpComplete = (dir: string, id: string): Effect.Effect<boolean, FileError> =>
  Effect.tryPromise({
    try: () => exists(`${dir}/${dumpStem(id, "question")}.npz`),
    catch: (e) => new FileError({ file: dir, message: e instanceof Error ? e.message : String(e) }),
  });

const atomic = (path: string, bytes: Uint8Array) =>
  writeFileAtomic(path, bytes, (_, e) => writeFailure(path, e, "cannot write file: "));

/**
 * Writes one paragraph's dump: `<stem>.json` first, then `<stem>.npz` (and
 * `<stem>.meta.json` when `context` is given for metadata).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { writeContextDump } from "./writer.ts";
 * const enc = {
 *   id: "T_0",
 *   phrases: [{ text: "Paris", start: 0, end: 5 }],
 *   matrix: { kind: "dense", rows: 1, cols: 2, dtype: "f32", data: new Float32Array([1, 0]) },
 * } as const;
 * const dir = Deno.makeTempDirSync();
 * await Effect.runPromise(writeContextDump(dir, enc, { sparse: false, compressed: false }));
 * if (Deno.readTextFileSync(`${dir}/T_0.json`) !== '["Paris"]') throw new Error("phrases");
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export const writeContextDump = (
  dir: string,
  enc: DumpContext,
  format: DumpFormat,
  metadataContext?: string,
): Effect.Effect<void, FileError | InputError> =>
  Effect.gen(function* () {
    const stem = yield* stemPath(dir, enc.id, "paragraph");
    const te = new TextEncoder();
    if (metadataContext !== undefined) {
      yield* atomic(`${stem}.meta.json`, te.encode(metadataJson(enc.id, metadataContext, enc)));
    }
    yield* atomic(`${stem}.json`, te.encode(phrasesJson(enc.phrases)));
    yield* atomic(`${stem}.npz`, encodeMatrix(enc.matrix, format));
  });

/** Writes one question's dump, `<stem>.npz` (a 1×d matrix). */
export const writeQuestionDump = (
  dir: string,
  enc: DumpQuestion,
  format: DumpFormat,
): Effect.Effect<void, FileError | InputError> =>
  Effect.flatMap(
    stemPath(dir, enc.id, "question"),
    (stem) => atomic(`${stem}.npz`, encodeMatrix(enc.vector, format)),
  );

/**
 * The names of the files {@linkcode writeContextDump} (`paragraph`: `<stem>.json`,
 * `<stem>.npz`, with `metadata` also `<stem>.meta.json`) or {@linkcode writeQuestionDump}
 * (`question`: `<stem>.npz`) writes for `id`, in its dump folder; throws for an id that
 * cannot name a file (`names.ts`).
 *
 * @example
 * ```ts
 * import { dumpFileNames } from "./writer.ts";
 * const p = dumpFileNames("AC/DC_0", "paragraph", true);
 * if (p.join() !== "AC_DC_0.meta.json,AC_DC_0.json,AC_DC_0.npz") throw new Error(p.join());
 * if (dumpFileNames("q1", "question").join() !== "q1.npz") throw new Error();
 * ```
 */
export function dumpFileNames(id: string, kind: IdKind, metadata = false): string[] {
  const stem = dumpStem(id, kind);
  if (kind === "question") return [`${stem}.npz`];
  return [...(metadata ? [`${stem}.meta.json`] : []), `${stem}.json`, `${stem}.npz`];
}

/** `dir/<stem>` of an id, or an {@linkcode InputError} (bad input: exit 2) for an unsafe id. */
const stemPath = (dir: string, id: string, kind: IdKind): Effect.Effect<string, InputError> =>
  Effect.try({
    try: () => `${dir}/${dumpStem(id, kind)}`,
    catch: (e) =>
      new InputError({
        file: dir,
        where: `id ${JSON.stringify(id)}`,
        message: `cannot name a dump file: ${e instanceof Error ? e.message : e}`,
      }),
  });
