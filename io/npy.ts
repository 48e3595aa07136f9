/**
 * The NumPy `.npy` format: reader and writer.
 *
 * - Reads format versions 1.0, 2.0 and 3.0 (3.0: UTF-8 header); writes 1.0,
 *   or 2.0 / 3.0 only when the header needs it (exactly as `numpy.save`).
 * - Dtypes `f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1`, byte strings `S<n>` and
 *   unicode strings `U<n>`, little- or big-endian (`<`, `>`, `=`, `|`).
 *   Complex, object, structured and datetime dtypes are refused.
 * - Any number of dimensions (0-d scalars included, at most 64 as NumPy).
 *
 * **Layout.** {@linkcode NdArray.data} is always in C (row-major) order and in
 * the host's byte order, whatever the file used. `fortranOrder` and
 * `byteOrder` record the file's layout; the writer honours them, so
 * `encodeNpy(parseNpy(bytes))` gives back `bytes` for any file NumPy writes.
 *
 * **Data types.** `f2` → `Float16Array`, `f4` → `Float32Array`, `f8` →
 * `Float64Array`, `i1/i2/i4` → `Int8Array/Int16Array/Int32Array`, `i8` →
 * `BigInt64Array`, `u1/u2/u4` → `Uint8Array/Uint16Array/Uint32Array`, `u8` →
 * `BigUint64Array`, `b1` → `Uint8Array` of 0/1, `S<n>` → `Uint8Array` of
 * n bytes per element (NUL padded), `U<n>` → `Uint32Array` of n code points
 * per element (NUL padded).
 *
 * @example
 * ```ts
 * import { encodeNpy, ndarray, parseNpy } from "./npy.ts";
 * const a = ndarray(new Float32Array([1, 2, 3, 4, 5, 6]), [2, 3]);
 * const bytes = encodeNpy(a); // what numpy.save writes for the same array
 * const b = parseNpy(bytes, "a.npy");
 * if (b.dtype !== "f4" || b.shape.join() !== "2,3") throw new Error("round trip");
 * ```
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { encodeNpy, type NdArray, NpyError, parseNpy } from "./npy_format.ts";
import { osMessage } from "./_zip_internal.ts";
import { writeFileAtomic } from "./fs.ts";
import { InputError } from "./errors.ts";
import { statRegularFile } from "./regular.ts";

export * from "./npy_format.ts";

// ---------------------------------------------------------------------------
// Files.

/** Runs a sync parser/encoder: its `NpyError` fails the effect, anything else is a defect. */
const syncNpy = <A>(f: () => A): Effect.Effect<A, NpyError> =>
  Effect.suspend(() => {
    try {
      return Effect.succeed(f());
    } catch (e) {
      return e instanceof NpyError ? Effect.fail(e) : Effect.die(e);
    }
  });

/**
 * Reads an `.npy` file.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { ndarray, readNpy, writeNpy } from "./npy.ts";
 * const path = Deno.makeTempFileSync({ suffix: ".npy" });
 * await Effect.runPromise(writeNpy(path, ndarray(new Float32Array(6), [2, 3])));
 * const arr = await Effect.runPromise(readNpy(path));
 * if (arr.shape.join() !== "2,3") throw new Error("wrong shape");
 * Deno.removeSync(path);
 * ```
 */
export const readNpy = (path: string): Effect.Effect<NdArray, NpyError> =>
  Effect.tryPromise({
    try: () => {
      statRegularFile(path);
      return Deno.readFile(path);
    },
    catch: (e) =>
      NpyError.of(
        path,
        undefined,
        e instanceof InputError
          ? e.message.replace(`${path}: `, "")
          : `cannot read file: ${osMessage(e)}`,
      ),
  }).pipe(
    Effect.flatMap((bytes) => syncNpy(() => parseNpy(bytes, path))),
  );

/**
 * Writes an `.npy` file atomically (temporary file in the same folder, then
 * rename): a failure never leaves a partial file at `path`.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { ndarray, writeNpy } from "./npy.ts";
 * const path = Deno.makeTempFileSync({ suffix: ".npy" });
 * await Effect.runPromise(writeNpy(path, ndarray(new Float64Array([1, 1]))));
 * if (Deno.statSync(path).size !== 128 + 16) throw new Error("not written");
 * Deno.removeSync(path);
 * ```
 */
export const writeNpy = (
  path: string,
  arr: NdArray,
  options: { readonly version?: 1 | 2 | 3; readonly sync?: boolean } = {},
): Effect.Effect<void, NpyError> =>
  syncNpy(() => encodeNpy(arr, { version: options.version, file: path })).pipe(
    Effect.flatMap((bytes) =>
      writeFileAtomic(path, bytes, (reason) => NpyError.of(path, undefined, reason), {
        sync: options.sync,
      })
    ),
  );
