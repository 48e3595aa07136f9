/**
 * Describing an `.npy` or `.npz` file as JSON ({@linkcode inspectFile}), what
 * the `inspect` command prints (see `pipeline/inspect.ts` for the output's
 * shape): dtype, shape and order of every array, a summary of scipy sparse
 * matrices, and with `values` the elements as nested lists. An `.npz` is
 * read within bounds: arrays that need more than `maxBytes` (default
 * 256 MiB) in all are refused from their headers before they are
 * inflated, and an entry never inflates past what it declares
 * (`io/zip.ts`).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { inspectFile } from "./inspect.ts";
 * import { ndarray, writeNpy } from "./npy.ts";
 * const path = Deno.makeTempFileSync({ suffix: ".npy" });
 * await Effect.runPromise(writeNpy(path, ndarray(new Float32Array([1, 2]), [1, 2])));
 * const info = await Effect.runPromise(inspectFile(path, { values: true }));
 * const want = '{"dtype":"<f4","shape":[1,2],"fortran_order":false,"values":[[1,2]]}';
 * if (JSON.stringify(info) !== want) throw new Error(JSON.stringify(info));
 * Deno.removeSync(path);
 * ```
 *
 * @module
 */
import * as Effect from "effect/Effect";
import {
  descrOf,
  type JsonValue,
  MAX_NPY_HEADER,
  type NdArray,
  npyDataSizeProblem,
  NpyError,
  type NpyHeader,
  parseNpy,
  parseNpyHeader,
  toJsonValues,
} from "./npy.ts";
import { type NpzContent, NpzError, parseNpzContent } from "./npz.ts";
import { InputError } from "./errors.ts";
import { statRegularFile } from "./regular.ts";

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
  /**
   * The most bytes the arrays of an `.npz` may need, all together (default
   * {@linkcode INSPECT_MAX_BYTES}): each entry's header is read first (with
   * the checks every reader makes, as `validate` and `merge` do through
   * `checkHeader`), and an entry past the bound is refused before it is
   * inflated; an `.npz` file larger than the bound (and 1 MiB for the zip's
   * own records) is refused before it is read. An `.npy` is described from
   * its header alone; with `values`, one larger than the bound is refused
   * before its data is read.
   */
  readonly maxBytes?: number;
}

/** Default of {@linkcode InspectOptions.maxBytes}: 256 MiB. */
export const INSPECT_MAX_BYTES: number = 256 * 1024 ** 2;

/**
 * Describes one array (see {@linkcode ArrayInfo}).
 *
 * @example
 * ```ts
 * import { ndarray } from "./npy.ts";
 * import { describeArray } from "./inspect.ts";
 * const info = describeArray(ndarray(new Float32Array(6), [2, 3]), { values: false });
 * const want = '{"dtype":"<f4","shape":[2,3],"fortran_order":false}';
 * if (JSON.stringify(info) !== want) throw new Error(JSON.stringify(info));
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
 * import { encodeNpz, parseNpzContent } from "./npz.ts";
 * import { ndarray } from "./npy.ts";
 * import { describeNpz } from "./inspect.ts";
 * const c = parseNpzContent(encodeNpz([ndarray(new Int32Array(2))]), "x.npz");
 * const want = '{"arr_0":{"dtype":"<i4","shape":[2],"fortran_order":false}}';
 * if (JSON.stringify(describeNpz(c)) !== want) throw new Error(JSON.stringify(describeNpz(c)));
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

/**
 * The bound of {@linkcode InspectOptions.maxBytes}, checked on each entry's
 * header (after the checks of every reader: the entry declares no more than
 * its shape needs), before the entry is inflated.
 */
function bound(options: InspectOptions): (entry: string, h: NpyHeader) => string | undefined {
  const max = options.maxBytes ?? INSPECT_MAX_BYTES;
  let total = 0;
  return (_entry, h) => {
    total += h.dataStart + h.dataBytes;
    return total <= max
      ? undefined
      : `the arrays need ${total} bytes so far, more than the ${max} ` +
        `inspect inflates (refused before inflating; --max-bytes)`;
  };
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
 * import * as Effect from "effect/Effect";
 * import { inspectFile } from "./inspect.ts";
 * import { encodeNpz } from "./npz.ts";
 * import { ndarray } from "./npy.ts";
 * const path = Deno.makeTempFileSync({ suffix: ".npz" });
 * Deno.writeFileSync(path, encodeNpz({ arr_0: ndarray(new Float32Array([3]), [1, 1]) }));
 * const r = await Effect.runPromise(inspectFile(path, { values: true }));
 * if (JSON.stringify(r) !== '{"arr_0":{"dtype":"<f4","shape":[1,1],"fortran_order":false,"values":[[3]]}}') {
 *   throw new Error(JSON.stringify(r));
 * }
 * Deno.removeSync(path);
 * ```
 */
export const inspectFile = (
  path: string,
  options: InspectOptions = {},
): Effect.Effect<InspectResult, NpyError | NpzError> =>
  Effect.tryPromise({
    try: () => readInspected(path, options),
    catch: (e) => {
      if (e instanceof NpyError || e instanceof NpzError) return e;
      const reason = e instanceof InputError
        ? e.message.replace(`${path}: `, "")
        : `cannot read file: ${
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
    Effect.flatMap((read) =>
      Effect.suspend((): Effect.Effect<InspectResult, NpyError | NpzError> => {
        if (!(read instanceof Uint8Array)) return Effect.succeed(read);
        try {
          return Effect.succeed(
            looksLikeNpy(read, path) ? describeArray(parseNpy(read, path), options) : describeNpz(
              parseNpzContent(read, path, { checkHeader: bound(options) }),
              options,
            ),
          );
        } catch (e) {
          return e instanceof NpyError || e instanceof NpzError ? Effect.fail(e) : Effect.die(e);
        }
      })
    ),
  );

/** Bytes an `.npz` may hold beyond what its arrays need: the zip's own records. */
const ZIP_SLACK = 1 << 20;

/**
 * What {@linkcode inspectFile} reads of `path`: an `.npy`'s header only (its
 * description, the file's size checked against it) unless `values` asks
 * for the data, which its header bounds as an `.npz`'s are
 * ({@linkcode InspectOptions.maxBytes}); else the file's bytes, an `.npz`
 * no larger than that bound allows (a file of gigabytes was read whole,
 * twice its size in memory, before anything was said of it).
 */
async function readInspected(
  path: string,
  options: InspectOptions,
): Promise<ArrayInfo | Uint8Array> {
  statRegularFile(path);
  const file = await Deno.open(path, { read: true });
  try {
    const size = (await file.stat()).size;
    const head = await readFirst(file, Math.min(size, 4096));
    if (looksLikeNpy(head, path)) {
      let h: NpyHeader;
      try {
        h = parseNpyHeader(head, path);
      } catch (e) {
        // A header longer than the first bytes read: read as much as a header may be.
        if (size <= head.length) throw e;
        await file.seek(0, Deno.SeekMode.Start);
        h = parseNpyHeader(await readFirst(file, Math.min(size, MAX_NPY_HEADER + 12)), path);
      }
      const wrongSize = npyDataSizeProblem(h, size - h.dataStart);
      if (wrongSize !== undefined) throw NpyError.of(path, undefined, wrongSize);
      if (!options.values) {
        return {
          dtype: descrOf({ dtype: h.dtype, byteOrder: h.order }),
          shape: [...h.shape],
          fortran_order: h.fortranOrder,
        };
      }
      const max = options.maxBytes ?? INSPECT_MAX_BYTES;
      if (size > max) {
        throw NpyError.of(
          path,
          undefined,
          `the array needs ${size} bytes, more than the ${max} inspect reads for its values ` +
            "(refused before reading; --max-bytes)",
        );
      }
    } else if (
      !(head[0] === 0x50 && head[1] === 0x4b) && !/\.np[yz]$/i.test(path)
    ) {
      // Neither by content nor by name: not one of the files inspect describes.
      throw NpzError.of(
        path,
        undefined,
        "not an .npy or .npz file (no NPY magic, no ZIP signature at its start)",
      );
    } else {
      const max = options.maxBytes ?? INSPECT_MAX_BYTES;
      if (size > max + ZIP_SLACK) {
        throw NpzError.of(
          path,
          undefined,
          `the file is ${size} bytes, more than inspect reads of an .npz (--max-bytes ${max}, ` +
            `and ${ZIP_SLACK} for the zip's own records)`,
        );
      }
    }
    await file.seek(0, Deno.SeekMode.Start);
    return await readFirst(file, size);
  } finally {
    file.close();
  }
}

/** The first `n` bytes of `file` from where it stands (fewer at its end). */
async function readFirst(file: Deno.FsFile, n: number): Promise<Uint8Array> {
  const out = new Uint8Array(n);
  let off = 0;
  while (off < n) {
    const got = await file.read(out.subarray(off));
    if (got === null || got === 0) break;
    off += got;
  }
  return out.subarray(0, off);
}
