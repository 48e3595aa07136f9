/**
 * NumPy `.npz` archives, dense and scipy-sparse.
 *
 * - Dense: a ZIP of `<name>.npy` entries, as written by `numpy.savez`
 *   (stored) and `numpy.savez_compressed` (deflated). Positional arrays are
 *   named `arr_0`, `arr_1`, ...
 * - Sparse: what `scipy.sparse.save_npz` writes: `format` (a 0-d `|S3` such as
 *   `b'csr'`), `shape`, `data`, and `indices` + `indptr` (CSR/CSC) or `row` +
 *   `col` (COO); `_is_array` marks a `sparray` (`csr_array`) rather than a
 *   `spmatrix`. CSR, CSC and COO are read; CSR and CSC (and COO) are written in
 *   scipy's key order so `scipy.sparse.load_npz` accepts them.
 *
 * Every read goes through the checks of `io/zip.ts` and `io/npy.ts`; all
 * failures are {@linkcode NpzError}s naming the file and the entry.
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { ndarray } from "./npy.ts";
 * import { readNpzContent, writeNpz } from "./npz.ts";
 * await Effect.runPromise(writeNpz("q.npz", { arr_0: ndarray(new Float32Array(4), [1, 4]) }, { compressed: true }));
 * const content = await Effect.runPromise(readNpzContent("q.npz"));
 * if (content.kind === "dense") console.log(content.arrays.get("arr_0")?.shape); // [1, 4]
 * ```
 *
 * @module
 */
import * as Effect from "effect/Effect";
import type { NdArray } from "./_npy_core.ts";
import {
  encodeNpz,
  encodeSparseNpz,
  type NpzContent,
  type NpzEntries,
  NpzError,
  type NpzReadOptions,
  type NpzWriteOptions,
  parseNpz,
  parseNpzContent,
  parseSparseNpz,
  type SparseMatrix,
} from "./_npz_core.ts";
import { osMessage } from "./_zip_internal.ts";
import { writeFileAtomic } from "./_write_atomic.ts";

export * from "./_npz_core.ts";

// ---------------------------------------------------------------------------
// Files.

const readBytes = (path: string): Effect.Effect<Uint8Array, NpzError> =>
  Effect.tryPromise({
    try: () => Deno.readFile(path),
    catch: (e) => NpzError.of(path, undefined, `cannot read file: ${osMessage(e)}`),
  });

/** Runs a sync parser/encoder: its `NpzError` fails the effect, anything else is a defect. */
const parseWith = <A>(f: () => A): Effect.Effect<A, NpzError> =>
  Effect.suspend(() => {
    try {
      return Effect.succeed(f());
    } catch (e) {
      return e instanceof NpzError ? Effect.fail(e) : Effect.die(e);
    }
  });

/**
 * Reads a dense `.npz` file (see {@linkcode parseNpz}).
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { readNpz } from "./npz.ts";
 * const arrays = await Effect.runPromise(readNpz("question_emb/q1.npz"));
 * ```
 */
export const readNpz = (
  path: string,
  options: NpzReadOptions = {},
): Effect.Effect<Map<string, NdArray>, NpzError> =>
  Effect.flatMap(readBytes(path), (bytes) => parseWith(() => parseNpz(bytes, path, options)));

/**
 * Reads any `.npz` file, telling dense from scipy sparse (see {@linkcode parseNpzContent}).
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { readNpzContent } from "./npz.ts";
 * const c = await Effect.runPromise(readNpzContent("context_emb/Title_0.npz"));
 * ```
 */
export const readNpzContent = (
  path: string,
  options: NpzReadOptions = {},
): Effect.Effect<NpzContent, NpzError> =>
  Effect.flatMap(
    readBytes(path),
    (bytes) => parseWith(() => parseNpzContent(bytes, path, options)),
  );

/**
 * Reads a `scipy.sparse.save_npz` file (see {@linkcode parseSparseNpz}).
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { readSparseNpz } from "./npz.ts";
 * const m = await Effect.runPromise(readSparseNpz("ctx.npz"));
 * ```
 */
export const readSparseNpz = (
  path: string,
  options: NpzReadOptions = {},
): Effect.Effect<SparseMatrix, NpzError> =>
  Effect.flatMap(readBytes(path), (bytes) => parseWith(() => parseSparseNpz(bytes, path, options)));

/** Options of the `.npz` file writers. */
export interface NpzFileWriteOptions extends Omit<NpzWriteOptions, "file"> {
  /** `fsync` the data before the rename (default false). */
  readonly sync?: boolean;
}

/**
 * Writes a dense `.npz` file atomically (temporary file in the same folder,
 * then rename; nothing is left behind on failure).
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { ndarray } from "./npy.ts";
 * import { writeNpz } from "./npz.ts";
 * await Effect.runPromise(writeNpz("q.npz", [ndarray(new Float32Array(8), [1, 8])], { compressed: true }));
 * ```
 */
export const writeNpz = (
  path: string,
  entries: NpzEntries,
  options: NpzFileWriteOptions = {},
): Effect.Effect<void, NpzError> =>
  Effect.flatMap(
    parseWith(() => encodeNpz(entries, { ...options, file: path })),
    (bytes) =>
      writeFileAtomic(path, bytes, (r) => NpzError.of(path, undefined, r), { sync: options.sync }),
  );

/**
 * Writes a sparse matrix as a `scipy.sparse.save_npz` file atomically
 * (compressed unless `compressed: false`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { readSparseNpz, writeSparseNpz } from "./npz.ts";
 * const m = await Effect.runPromise(readSparseNpz("a.npz"));
 * await Effect.runPromise(writeSparseNpz("b.npz", m, { compressed: false }));
 * ```
 */
export const writeSparseNpz = (
  path: string,
  matrix: SparseMatrix,
  options: NpzFileWriteOptions = {},
): Effect.Effect<void, NpzError> =>
  Effect.flatMap(
    parseWith(() => encodeSparseNpz(matrix, { ...options, file: path })),
    (bytes) =>
      writeFileAtomic(path, bytes, (r) => NpzError.of(path, undefined, r), { sync: options.sync }),
  );
