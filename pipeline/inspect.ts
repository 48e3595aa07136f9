/**
 * `inspect`: describe an `.npy` or `.npz` file as JSON.
 *
 * ```sh
 * deno run --allow-read pipeline/inspect.ts <file.npy|file.npz> [--values] [--debug] [--help]
 * ```
 *
 * Output (one line of JSON on stdout):
 *
 * - `.npy`: `{"dtype": "<f4", "shape": [2, 3], "fortran_order": false}`.
 * - `.npz`: an object keyed by array name (the entry without `.npy`), each
 *   value as for an `.npy`. For a `scipy.sparse.save_npz` file one more key,
 *   `"sparse"`, summarises the matrix:
 *   `{"format": "csr", "shape": [rows, cols], "nnz": N, "dtype": "<f4",
 *   "index_dtype": "<i4", "is_array": false}` (`is_array`: saved from a scipy
 *   `sparray`). scipy never names an array `sparse`; for a dense archive that
 *   happens to have an array called `sparse`, that key is the array (no
 *   `format`/`nnz` fields) — check for `format` to tell them apart.
 * - `--values` adds `"values"` to every array: nested lists in row-major (C)
 *   order whatever the file's layout, a bare scalar for 0-d arrays. Floats
 *   (f2 included) are JSON numbers, non-finite ones the strings `"NaN"`,
 *   `"Infinity"`, `"-Infinity"`; 64-bit integers are numbers when exactly
 *   representable, else decimal strings; booleans are `true`/`false`; `S`/`U`
 *   strings are strings (see `stringsOf` in `io/npy.ts`).
 *
 * The file type is recognised by its first bytes (NPY magic or ZIP
 * signature), then by its extension. Exit status: 0 success, 1 failure of the
 * work, 2 bad usage or an unreadable / corrupt file; a failure prints one line
 * `inspect: <file>: <entry>: <what is wrong>` on stderr (the full cause too
 * with `--debug`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { inspectFile } from "./inspect.ts";
 * const info = await Effect.runPromise(inspectFile("context_emb/Title_0.npz", { values: false }));
 * console.log(JSON.stringify(info));
 * ```
 *
 * @module
 */
import { Effect } from "effect";
import {
  descrOf,
  type JsonValue,
  type NdArray,
  NpyError,
  parseNpy,
  toJsonValues,
} from "../io/npy.ts";
import { type NpzContent, NpzError, parseNpzContent } from "../io/npz.ts";
import { InputError } from "../io/errors.ts";
import { type CommandSpec, runMain, WorkError } from "./_cli.ts";

/** What `inspect` reports for one array. */
export interface ArrayInfo {
  /** NumPy descr, e.g. `<f4`, `|b1`, `>i8`, `|S3`. */
  readonly dtype: string;
  /** Dimensions (`[]` for a scalar). */
  readonly shape: readonly number[];
  /** Whether the file stored the data in Fortran (column-major) order. */
  readonly fortran_order: boolean;
  /** With `values`: the elements as nested lists in row-major order. */
  readonly values?: JsonValue;
}

/** What `inspect` reports for a scipy sparse archive (the `sparse` key). */
export interface SparseInfo {
  /** `csr`, `csc` or `coo`. */
  readonly format: string;
  /** `[rows, cols]`. */
  readonly shape: readonly number[];
  /** Number of stored values. */
  readonly nnz: number;
  /** Descr of the stored values. */
  readonly dtype: string;
  /** Descr of the index arrays (`indices`/`indptr`, or `row`/`col`). */
  readonly index_dtype: string;
  /** Saved from a scipy `sparray` rather than an `spmatrix`. */
  readonly is_array: boolean;
}

/**
 * The result of {@linkcode inspectFile}: one {@linkcode ArrayInfo} for an
 * `.npy`; for an `.npz`, a record of them by array name, plus `sparse` for
 * a scipy sparse archive.
 */
export type InspectResult =
  | ArrayInfo
  | { readonly [name: string]: ArrayInfo | SparseInfo };

/** Options of {@linkcode inspectFile}. */
export interface InspectOptions {
  /** Include the values of every array. */
  readonly values?: boolean;
}

/**
 * Describes one array (see {@linkcode ArrayInfo}).
 *
 * @example
 * ```ts
 * import { ndarray } from "../io/npy.ts";
 * import { describeArray } from "./inspect.ts";
 * describeArray(ndarray(new Float32Array(6), [2, 3]), { values: false });
 * // { dtype: "<f4", shape: [2, 3], fortran_order: false }
 * ```
 */
export function describeArray(arr: NdArray, options: InspectOptions = {}): ArrayInfo {
  const info: ArrayInfo = {
    dtype: descrOf(arr),
    shape: [...arr.shape],
    fortran_order: arr.fortranOrder === true,
  };
  return options.values ? { ...info, values: toJsonValues(arr) } : info;
}

/**
 * Describes the content of an `.npz` (see {@linkcode InspectResult}).
 *
 * @example
 * ```ts
 * import { encodeNpz, parseNpzContent } from "../io/npz.ts";
 * import { ndarray } from "../io/npy.ts";
 * import { describeNpz } from "./inspect.ts";
 * const c = parseNpzContent(encodeNpz([ndarray(new Int32Array(2))]), "x.npz");
 * describeNpz(c); // { arr_0: { dtype: "<i4", shape: [2], fortran_order: false } }
 * ```
 */
export function describeNpz(content: NpzContent, options: InspectOptions = {}): InspectResult {
  const out: Record<string, ArrayInfo | SparseInfo> = {};
  for (const [name, arr] of content.arrays) out[name] = describeArray(arr, options);
  if (content.kind === "sparse") {
    const m = content.matrix;
    out.sparse = {
      format: m.format,
      shape: [...m.shape],
      nnz: m.data.shape[0],
      dtype: descrOf(m.data),
      index_dtype: descrOf(m.format === "coo" ? m.row : m.indices),
      is_array: m.isArray === true,
    };
  }
  return out;
}

function looksLikeNpy(bytes: Uint8Array, path: string): boolean {
  if (
    bytes.length >= 6 && bytes[0] === 0x93 &&
    String.fromCharCode(...bytes.subarray(1, 6)) === "NUMPY"
  ) {
    return true;
  }
  if (bytes.length >= 2 && bytes[0] === 0x50 && bytes[1] === 0x4b) return false;
  return path.toLowerCase().endsWith(".npy");
}

/**
 * Reads `path` (an `.npy` or `.npz`, told apart by content) and describes it
 * as a JSON-able value (see the module documentation for its shape).
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { inspectFile } from "./inspect.ts";
 * const r = await Effect.runPromise(inspectFile("q.npz", { values: true }));
 * ```
 */
export const inspectFile = (
  path: string,
  options: InspectOptions = {},
): Effect.Effect<InspectResult, NpyError | NpzError> =>
  Effect.tryPromise({
    try: () => Deno.readFile(path),
    catch: (e) => {
      const reason = `cannot read file: ${
        e instanceof Deno.errors.NotFound
          ? "no such file"
          : e instanceof Error
          ? e.message
          : String(e)
      }`;
      return path.toLowerCase().endsWith(".npz")
        ? NpzError.of(path, undefined, reason)
        : NpyError.of(path, undefined, reason);
    },
  }).pipe(
    Effect.flatMap((bytes) =>
      Effect.suspend((): Effect.Effect<InspectResult, NpyError | NpzError> => {
        try {
          return Effect.succeed(
            looksLikeNpy(bytes, path)
              ? describeArray(parseNpy(bytes, path), options)
              : describeNpz(parseNpzContent(bytes, path), options),
          );
        } catch (e) {
          return e instanceof NpyError || e instanceof NpzError ? Effect.fail(e) : Effect.die(e);
        }
      })
    ),
  );

/** The command line of `inspect`. */
const INSPECT_SPEC = {
  name: "inspect",
  summary: "Print the dtype, shape and order of every array in an .npy or .npz file " +
    "(and a summary of scipy sparse matrices) as one line of JSON on stdout.",
  args: [{ name: "file", description: "an .npy or .npz file (dense or scipy.sparse.save_npz)" }],
  flags: [{
    name: "values",
    type: "boolean",
    description: "include the values (nested lists, row-major)",
  }],
  epilog: "Example: deno run --allow-read pipeline/inspect.ts context_emb/Title_0.npz --values",
} as const satisfies CommandSpec;

if (import.meta.main) {
  await runMain(
    INSPECT_SPEC,
    Deno.args,
    (args) =>
      inspectFile(args.positional.file, { values: args.flags.values === true }).pipe(
        Effect.mapError((e) =>
          new InputError({ file: e.file, where: e.entry ?? "", message: e.reason })
        ),
        Effect.flatMap((result) =>
          Effect.tryPromise({
            try: async () => {
              const bytes = new TextEncoder().encode(JSON.stringify(result) + "\n");
              let off = 0;
              while (off < bytes.length) off += await Deno.stdout.write(bytes.subarray(off));
            },
            catch: (e) =>
              new WorkError(`cannot write output: ${e instanceof Error ? e.message : String(e)}`),
          })
        ),
      ),
  );
}
