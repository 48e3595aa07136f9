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
 * import * as Effect from "effect/Effect";
 * import { ndarray } from "./npy.ts";
 * import { readNpzContent, writeNpz } from "./npz.ts";
 * const path = Deno.makeTempFileSync({ suffix: ".npz" });
 * await Effect.runPromise(writeNpz(path, { arr_0: ndarray(new Float32Array(4), [1, 4]) }, { compressed: true }));
 * const content = await Effect.runPromise(readNpzContent(path));
 * if (content.kind !== "dense" || content.arrays.get("arr_0")?.shape.join() !== "1,4") {
 *   throw new Error("not read back");
 * }
 * Deno.removeSync(path);
 * ```
 *
 * @module
 */
import * as Effect from "effect/Effect";
import type { NdArray } from "./npy_format.ts";
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
} from "./npz_format.ts";
import { osMessage } from "./_zip_internal.ts";
import { InputError } from "./errors.ts";
import { statRegularFile } from "./regular.ts";
import { writeFileAtomic } from "./fs.ts";

export * from "./npz_format.ts";

// ---------------------------------------------------------------------------
// Files.

const readBytes = (path: string): Effect.Effect<Uint8Array, NpzError> =>
  Effect.tryPromise({
    try: () => {
      statRegularFile(path);
      return Deno.readFile(path);
    },
    catch: (e) =>
      NpzError.of(
        path,
        undefined,
        e instanceof InputError
          ? e.message.replace(`${path}: `, "")
          : `cannot read file: ${osMessage(e)}`,
      ),
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
 * import * as Effect from "effect/Effect";
 * import { ndarray } from "./npy.ts";
 * import { readNpz, writeNpz } from "./npz.ts";
 * const path = Deno.makeTempFileSync({ suffix: ".npz" });
 * await Effect.runPromise(writeNpz(path, [ndarray(new Float32Array(4), [1, 4])]));
 * const arrays = await Effect.runPromise(readNpz(path));
 * if (!arrays.has("arr_0")) throw new Error("no arr_0");
 * Deno.removeSync(path);
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
 * import * as Effect from "effect/Effect";
 * import { ndarray } from "./npy.ts";
 * import { readNpzContent, writeNpz } from "./npz.ts";
 * const path = Deno.makeTempFileSync({ suffix: ".npz" });
 * await Effect.runPromise(writeNpz(path, [ndarray(new Float32Array(4), [2, 2])]));
 * const c = await Effect.runPromise(readNpzContent(path));
 * if (c.kind !== "dense") throw new Error("not dense");
 * Deno.removeSync(path);
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
 * import * as Effect from "effect/Effect";
 * import { ndarray } from "./npy.ts";
 * import { readSparseNpz, writeSparseNpz } from "./npz.ts";
 * const path = Deno.makeTempFileSync({ suffix: ".npz" });
 * await Effect.runPromise(writeSparseNpz(path, {
 *   format: "csr", shape: [1, 3], data: ndarray(new Float32Array([1])),
 *   indices: ndarray(new Int32Array([2])), indptr: ndarray(new Int32Array([0, 1])),
 * }));
 * const m = await Effect.runPromise(readSparseNpz(path));
 * if (m.format !== "csr" || m.shape[1] !== 3) throw new Error("not read back");
 * Deno.removeSync(path);
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
 * import * as Effect from "effect/Effect";
 * import { ndarray } from "./npy.ts";
 * import { writeNpz } from "./npz.ts";
 * const path = Deno.makeTempFileSync({ suffix: ".npz" });
 * await Effect.runPromise(writeNpz(path, [ndarray(new Float32Array(8), [1, 8])], { compressed: true }));
 * Deno.removeSync(path);
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
 * import * as Effect from "effect/Effect";
 * import { ndarray } from "./npy.ts";
 * import { readSparseNpz, writeSparseNpz } from "./npz.ts";
 * const dir = Deno.makeTempDirSync();
 * await Effect.runPromise(writeSparseNpz(`${dir}/a.npz`, {
 *   format: "csr", shape: [1, 3], data: ndarray(new Float32Array([1])),
 *   indices: ndarray(new Int32Array([2])), indptr: ndarray(new Int32Array([0, 1])),
 * }));
 * const m = await Effect.runPromise(readSparseNpz(`${dir}/a.npz`));
 * await Effect.runPromise(writeSparseNpz(`${dir}/b.npz`, m, { compressed: false }));
 * if (Deno.readFileSync(`${dir}/b.npz`).length === 0) throw new Error("empty");
 * Deno.removeSync(dir, { recursive: true });
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
