/**
 * The work of `inspect` (`pipeline/inspect.ts`, which loads this module
 * only to run: `--help` and bad usage need none of it): an `.npy` or `.npz`
 * file (`io/inspect.ts`), or an index folder's header
 * (`search/index/read.ts`; each file it lists must be there at its size),
 * as one line of JSON on stdout.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { InputError } from "../io/errors.ts";
import { inspectFile } from "../io/inspect.ts";
import { checkIndexFileSizes, readIndexHeader } from "../search/index/read.ts";
import { WorkError } from "./_cli.ts";
import type { ParsedArgs } from "./_args.ts";
import type { INSPECT_SPEC } from "./inspect.ts";

/** A folder is read as a phrase index: its kind, counts, d, metric and parameters. */
const inspectPath = (
  path: string,
  values: boolean,
  maxBytes: number | undefined,
): Effect.Effect<unknown, InputError> => {
  let dir = false;
  try {
    dir = Deno.statSync(path).isDirectory;
  } catch { /* inspectFile names the error */ }
  if (!dir) {
    return inspectFile(path, { values, maxBytes }).pipe(
      Effect.mapError((e) =>
        new InputError({
          file: e.file,
          where: e.entry ?? "",
          message: e.reason,
        })
      ),
    );
  }
  return Effect.try({
    try: () => {
      const h = readIndexHeader(path);
      // A folder cut short (a file missing, truncated or grown) is not described as an index.
      checkIndexFileSizes(path, h);
      return {
        kind: h.kind,
        version: h.version,
        phrases: h.phrases,
        paragraphs: h.paragraphs,
        d: h.d,
        metric: h.metric,
        vectors: h.vectors,
        dtype: h.dtype,
        nnz: h.nnz,
        parameters: h.parameters,
      };
    },
    catch: (e) =>
      e instanceof InputError ? e : new InputError({ file: path, where: "", message: String(e) }),
  });
};

/** `inspect`'s program: the description of the file or folder, one JSON line on stdout. */
export const inspectCommand = (args: ParsedArgs<typeof INSPECT_SPEC>) =>
  inspectPath(args.positional.file, args.flags.values === true, args.flags["max-bytes"]).pipe(
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
  );
