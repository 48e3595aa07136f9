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
 * An `.npz` whose arrays need more than `--max-bytes` (default 256 MiB) in
 * all is refused from their headers, before they are inflated (a zip bomb
 * costs no more than its headers), and an `.npz` file larger than that
 * (plus 1 MiB for the zip's own records) before it is read, exit 2; raise
 * the bound for a larger archive. An `.npy` is described from its header
 * alone, whatever its size (its size checked against the header); with
 * `--values`, one larger than `--max-bytes` is refused before its data is
 * read. A file that is neither by its first bytes nor by its name is
 * refused as such.
 *
 * The file type is recognised by its first bytes (NPY magic or ZIP
 * signature), then by its extension. Exit status: 0 success, 1 failure of the
 * work, 2 bad usage or an unreadable / corrupt file; a failure prints one line
 * `inspect: <file>: <entry>: <what is wrong>` on stderr (the full cause too
 * with `--debug`).
 *
 * The work is `inspectFile` in `io/inspect.ts`. A folder is read as a phrase
 * index (`search/index/`): one line `{"kind", "version", "phrases",
 * "paragraphs", "d", "metric", "vectors", "dtype", "nnz", "parameters"}`,
 * after checking that every file its `index.json` lists is there at the
 * size it says (a folder cut short exits 2; the files' contents are checked
 * where `search` and `serve` open them).
 *
 * This file is the command line (`--help` loads nothing else); the work,
 * `pipeline/_inspect.ts`, loads with `import()` only to run.
 *
 * @module
 */
import { type CommandSpec, exitOnHelpOrUsageError } from "./_args.ts";

export type { ArrayInfo, InspectOptions, InspectResult, SparseInfo } from "../io/inspect.ts";

/** The command line of `inspect`. */
export const INSPECT_SPEC = {
  name: "inspect",
  summary: "Print the dtype, shape and order of every array in an .npy or .npz file " +
    "(and a summary of scipy sparse matrices) as one line of JSON on stdout.",
  args: [{
    name: "file",
    description: "an .npy or .npz file (dense or scipy.sparse.save_npz), or an index folder",
  }],
  flags: [{
    name: "values",
    type: "boolean",
    description: "include the values (nested lists, row-major)",
  }, {
    name: "max-bytes",
    type: "int",
    metavar: "N",
    min: 1,
    description: "refuse an .npz whose arrays need more than N bytes in all, before " +
      "inflating them, and an .npy larger than N with --values (default 268435456: 256 MiB)",
  }],
  examples: ["out/dumps/context_emb/Super_Bowl_50_0.npz --values"],
} as const satisfies CommandSpec;

if (import.meta.main) {
  // `--help` and bad usage load nothing else; the readers load only to run.
  exitOnHelpOrUsageError(INSPECT_SPEC, Deno.args);
  const [{ runMain }, { inspectCommand }] = await Promise.all([
    import("./_cli.ts"),
    import("./_inspect.ts"),
  ]);
  await runMain(INSPECT_SPEC, Deno.args, inspectCommand);
}
