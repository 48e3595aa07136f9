/**
 * Reading PI-SQuAD dumps: a folder, or a `.zip` of that folder.
 *
 * A context dump holds, per paragraph id, `<stem>.npz` (an N×d matrix) and
 * `<stem>.json` (the list of its N phrases); a question dump holds, per
 * question id, `<stem>.npz` (a 1×d matrix). Stems come from
 * {@linkcode dumpStem} (`/` → `_`). Matrices are dense (`numpy.savez` /
 * `savez_compressed`, key `arr_0`, float32 or float16) or, with
 * `sparse: true`, scipy sparse (`scipy.sparse.save_npz`, CSR; CSC is
 * converted to CSR). Files named `<stem>.meta.json` are side files and are
 * ignored.
 *
 * **Zips.** A zipped dump is never loaded whole: the end record and the
 * central directory are read from the file's tail, then each entry by its
 * offset (local header + data). Entries may sit at the root or under one top
 * folder (`context_emb/x.npz`); this is detected. The checks of `io/zip.ts`
 * apply (unsafe names, duplicates, encryption, methods, size and ratio limits,
 * entries outside the archive or overlapping, CRC-32); an entry whose name
 * could escape its folder refuses the whole archive, naming the zip and the
 * entry.
 *
 * **Validation.** Every matrix is checked before it is returned: a sparse
 * file without `sparse` (or a dense one with it), a dtype other than
 * float16/float32, a matrix that is not 2-d, NaN or infinite values (the
 * error names the row), a phrase list that is not a JSON list of strings.
 * All are {@linkcode InputError}s naming the file (for a zip entry
 * `zip:entry`), and so is a dump file (or the dump path) that is a named
 * pipe, a device or a socket (or a link to one): refused by name, never
 * opened (`io/regular.ts`). Whether the rows equal the phrases is the caller's check
 * (`rowsMatchPhrases` in `checks.ts`): `validate` lists every paragraph
 * where they differ, `merge` stops at the first.
 * (With `deferFiniteCheck`, the NaN/infinity check of dense float32
 * paragraph matrices is the caller's, through `ContextDump.checkFinite`.)
 *
 * CRC-32 and inflate run in the runtime's zlib (`node:zlib`), so reading is
 * bound by the disk, not by JavaScript.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { openDump } from "./reader.ts";
 * const dir = Deno.makeTempDirSync();
 * const program = Effect.gen(function* () {
 *   const ctx = yield* openDump(dir);
 *   const c = yield* ctx.readContext("Super_Bowl_50_0");
 *   yield* ctx.close();
 *   return "missing" in c ? c.missing : "found";
 * });
 * const missing = await Effect.runPromise(program);
 * if (missing !== `${dir}/Super_Bowl_50_0.npz`) throw new Error(missing);
 * Deno.removeSync(dir);
 * ```
 *
 * @module
 */
import * as Effect from "effect/Effect";
import {
  asDumpError,
  type ContextDump,
  type DumpError,
  type DumpOptions,
  type DumpSourceSync,
  type MissingFile,
  openDumpSync,
} from "./reader_sync.ts";
import type { Matrix } from "../matrix.ts";

export { decodeDumpMatrix, nativeCrc32, openDumpSync } from "./reader_sync.ts";
export { indexPhrases, parsePhrases } from "./phrases.ts";
export type { PhraseList } from "./phrases.ts";
export type {
  ContextDump,
  DecodedMatrix,
  DumpError,
  DumpOptions,
  DumpSourceSync,
  MissingFile,
} from "./reader_sync.ts";

/** An open dump (a folder or a zip). Call {@linkcode DumpSource.close} when done. */
export interface DumpSource {
  /** The path given to {@linkcode openDump}. */
  readonly path: string;
  /** Whether it is a folder or a zip. */
  readonly kind: "folder" | "zip";
  /** For a zip: the top folder its entries sit under (`context_emb/`), or `""`. */
  readonly root: string;
  /** Where PIQA's merge.py looks for `name` (used in `Missing` lines). */
  shownPath(name: string): string;
  /** How errors name the file `name` of this dump (`dir/name` or `x.zip:entry`). */
  label(name: string): string;
  /** The bytes of `name`, or `undefined` when the dump has no such file. */
  readFile(name: string): Effect.Effect<Uint8Array | undefined, DumpError>;
  /** A paragraph's matrix and phrases, or which of the two files is missing (`.npz` first). */
  readContext(id: string): Effect.Effect<ContextDump | MissingFile, DumpError>;
  /** A question's matrix (checked as any matrix; 1×d is the caller's check), or missing. */
  readQuestion(id: string): Effect.Effect<Matrix | MissingFile, DumpError>;
  /** The file names of the dump (its top level), sorted, side files included. */
  list(): Effect.Effect<string[], DumpError>;
  /** Releases the zip's file handle (no-op for folders). */
  close(): Effect.Effect<void>;
  /** The synchronous source underneath (for loops that need no Effect per read). */
  readonly sync: DumpSourceSync;
}

/**
 * Opens a dump folder or a zip of one (see {@linkcode openDumpSync}); the
 * returned {@linkcode DumpSource}'s reads are Effects with typed errors.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { openDump } from "./reader.ts";
 * const dir = Deno.makeTempDirSync();
 * const q = await Effect.runPromise(openDump(dir));
 * const v = await Effect.runPromise(q.readQuestion("56be4db0acb8001400a502ec"));
 * await Effect.runPromise(q.close());
 * if (!("missing" in v)) throw new Error("an empty dump has no question");
 * Deno.removeSync(dir);
 * ```
 */
export const openDump = (
  path: string,
  options: DumpOptions = {},
): Effect.Effect<DumpSource, DumpError> =>
  Effect.map(
    Effect.try({ try: () => openDumpSync(path, options), catch: asDumpError(path) }),
    (s): DumpSource => {
      const lift = <A>(f: () => A, file: string) =>
        Effect.try({ try: f, catch: asDumpError(file) });
      return {
        path: s.path,
        kind: s.kind,
        root: s.root,
        sync: s,
        shownPath: s.shownPath,
        label: s.label,
        readFile: (name) => lift(() => s.readFile(name), s.label(name)),
        readContext: (id) => lift(() => s.readContext(id), path),
        readQuestion: (id) => lift(() => s.readQuestion(id), path),
        list: () => lift(() => s.list(), path),
        close: () => Effect.sync(() => s.close()),
      };
    },
  );
