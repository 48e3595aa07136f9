/**
 * Opening inputs as byte streams: a path to a plain file, a `.gz` file
 * (decompressed on the fly), or `-` for standard input. Output files are
 * written atomically through `fs.ts` (`openAtomicWriter`, `writeFileAtomic`).
 *
 * @module
 */
import * as zlib from "node:zlib";
import * as Effect from "effect/Effect";
import { FileError, InputError } from "./errors.ts";
import { statRegularFile } from "./regular.ts";

/** Bytes of an input file, with the name to use in error messages. */
export interface ByteSource {
  /** Display name: the path, or `-` for stdin. */
  readonly name: string;
  /** The (decompressed) bytes. */
  readonly stream: ReadableStream<Uint8Array>;
  /**
   * Where line `n` (from 1) of the text was read from, when that is not
   * line `n` of the file `name`: a Parquet split read as JSON lines names
   * the shard and its row (`{file, where: "row 7"}`). `undefined` for a
   * line it cannot place.
   */
  readonly lineAt?: (n: number) => { readonly file: string; readonly where: string } | undefined;
}

function osMessage(e: unknown): string {
  if (e instanceof Deno.errors.NotFound) return "no such file";
  if (e instanceof Deno.errors.PermissionDenied) return "permission denied";
  if (e instanceof Deno.errors.NotCapable) return "permission denied (not granted to this process)";
  if (e instanceof Deno.errors.IsADirectory) return "is a directory";
  return e instanceof Error ? e.message : String(e);
}

/** Whether `path` is a folder (false when it cannot be read). */
const isFolder = (path: string): Promise<boolean> =>
  Deno.stat(path).then((i) => i.isDirectory, () => false);

/**
 * Opens `path` for streaming: `-` is stdin; a name ending in `.gz` (or a
 * file starting with the gzip magic bytes) is gunzipped as it is read. A
 * path that is not a regular file (a named pipe, `/dev/zero`, a socket, a
 * folder) is refused by name before it is opened ({@linkcode InputError}).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { openSource } from "./source.ts";
 * const path = await Deno.makeTempFile({ suffix: ".json.gz" });
 * const gz = new Blob(["{}"]).stream().pipeThrough(new CompressionStream("gzip"));
 * await Deno.writeFile(path, gz);
 * const src = await Effect.runPromise(openSource(path));
 * const text = await new Response(src.stream).text();
 * if (src.name !== path || text !== "{}") throw new Error(text);
 * await Deno.remove(path);
 * ```
 */
export const openSource = (
  path: string,
): Effect.Effect<ByteSource, FileError | InputError> =>
  Effect.tryPromise({
    try: async () => {
      if (path === "-") return { name: "-", stream: gunzipIfNeeded(Deno.stdin.readable, "-") };
      // A .parquet file or a folder of shards; its reader loads only for such a path.
      if (/\.parquet$/i.test(path) || await isFolder(path)) {
        const { parquetInput } = await import("./datasets/parquet_path.ts");
        const parquet = await parquetInput(path);
        if (parquet !== undefined) return parquet;
      }
      statRegularFile(path);
      const file = await Deno.open(path, { read: true });
      const info = await file.stat();
      if (info.isDirectory) {
        file.close();
        throw new Deno.errors.IsADirectory(path);
      }
      return { name: path, stream: gunzipIfNeeded(file.readable, path) };
    },
    catch: (e) =>
      e instanceof InputError || e instanceof FileError
        ? e
        : new FileError({ file: path, message: osMessage(e) }),
  });

/**
 * Reads at least `n` bytes (fewer at the end of the stream) from `reader`
 * and returns them with a stream of all the bytes, those first ones
 * included, so a caller can look at the start of an input and still read
 * it whole.
 */
export function peekBytes(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  n: number,
): Promise<[Uint8Array, ReadableStream<Uint8Array>]> {
  return peekUntil(reader, (have) => have >= n);
}

/**
 * {@linkcode peekBytes} that reads chunks until `enough(have, chunk)` (the
 * bytes read so far, the last chunk) says so or the stream ends.
 *
 * @example
 * ```ts
 * import { peekUntil } from "./source.ts";
 * const s = new Blob(["ab", "c\nd", "ef"]).stream();
 * const [head, all] = await peekUntil(s.getReader(), (_, c) => c.includes(10));
 * if (new TextDecoder().decode(head) !== "abc\nd") throw new Error();
 * if (await new Response(all).text() !== "abc\ndef") throw new Error();
 * ```
 */
export async function peekUntil(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  enough: (have: number, chunk: Uint8Array) => boolean,
): Promise<[Uint8Array, ReadableStream<Uint8Array>]> {
  const head: Uint8Array[] = [];
  let have = 0;
  let done = false;
  for (let last: Uint8Array = new Uint8Array(0); !enough(have, last);) {
    const r = await reader.read();
    if (r.done) {
      done = true;
      break;
    }
    head.push(r.value);
    have += r.value.byteLength;
    last = r.value;
  }
  const first = concat(head);
  const all = new ReadableStream<Uint8Array>({
    start(c) {
      if (first.byteLength > 0) c.enqueue(first);
      if (done) c.close();
    },
    async pull(c) {
      const r = await reader.read();
      if (r.done) c.close();
      else c.enqueue(r.value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  return [first, all];
}

/**
 * Passes bytes through, gunzipping them when they start with the gzip magic
 * number (so `.json.gz` works whatever it is called, and stdin may be gzip).
 */
export function gunzipIfNeeded(
  input: ReadableStream<Uint8Array>,
  name: string,
): ReadableStream<Uint8Array> {
  const reader = input.getReader();
  let decided: ReadableStreamDefaultReader<Uint8Array> | undefined;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        if (decided === undefined) {
          const [first, rest] = await peekBytes(reader, 2);
          const gz = first.byteLength >= 2 && first[0] === 0x1f &&
            first[1] === 0x8b;
          decided = (gz ? rest.pipeThrough(pieces(GZIP_IN_BYTES)).pipeThrough(gunzipAll()) : rest)
            .getReader();
        }
        const r = await decided.read();
        if (r.done) controller.close();
        else controller.enqueue(r.value);
      } catch (e) {
        controller.error(
          new InputError({
            file: name,
            where: "",
            message: `corrupt gzip data (${e instanceof Error ? e.message : e})`,
          }),
        );
      }
    },
    cancel(reason) {
      return (decided ?? reader).cancel(reason);
    },
  });
}

/**
 * The compressed bytes handed to the decompressor at a time: gzip inflates
 * at most about 1032:1, so no decompressed chunk passes 17 MB, whatever the
 * file (a file read hands 64 KiB or more at a time, 66 MB once inflated).
 */
const GZIP_IN_BYTES = 16 * 1024;

/**
 * Gunzips every member of the input, as `gzip -d` does (a file of several
 * members: `cat a.gz b.gz`, bgzip's blocks), with the native zlib of
 * `node:zlib` (the web `DecompressionStream` reads one member only).
 */
function gunzipAll(): TransformStream<Uint8Array, Uint8Array> {
  const z = zlib.createGunzip();
  let failed: Error | undefined;
  z.on("error", (e: Error) => failed ??= e);
  const wait = (act: (done: (e?: Error | null) => void) => void) =>
    new Promise<void>((resolve, reject) =>
      act((e) => (e ?? failed) ? reject(e ?? failed) : resolve())
    );
  return new TransformStream<Uint8Array, Uint8Array>({
    start(c) {
      z.on(
        "data",
        (d: Uint8Array) => c.enqueue(new Uint8Array(d.buffer, d.byteOffset, d.byteLength)),
      );
    },
    transform(chunk) {
      return wait((done) => z.write(chunk, done));
    },
    cancel() {
      z.destroy(); // the reader stopped early (a format told from the first bytes)
    },
    flush() {
      return wait((done) => {
        if (failed) return done(failed);
        z.once("end", () => done());
        z.once("error", (e: Error) => done(e));
        z.end();
      });
    },
  });
}

/** Cuts chunks into pieces of at most `n` bytes. */
function pieces(n: number): TransformStream<Uint8Array, Uint8Array> {
  return new TransformStream({
    transform(chunk, c) {
      for (let o = 0; o < chunk.byteLength; o += n) c.enqueue(chunk.subarray(o, o + n));
    },
  });
}

function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0];
  const n = parts.reduce((s, p) => s + p.byteLength, 0);
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.byteLength;
  }
  return out;
}

/**
 * Reads a whole text file (UTF-8), gunzipping it when it starts with the
 * gzip magic number; for small inputs such as a training subset read by a
 * fitting script. Streams ({@linkcode openSource}) are for everything else.
 *
 * @example
 * ```ts
 * import { readTextMaybeGzip } from "./source.ts";
 * const path = await Deno.makeTempFile(); // no .gz suffix: the magic bytes decide
 * const gz = new Blob(["caf\u00e9"]).stream().pipeThrough(new CompressionStream("gzip"));
 * await Deno.writeFile(path, gz);
 * if (await readTextMaybeGzip(path) !== "caf\u00e9") throw new Error();
 * await Deno.remove(path);
 * ```
 */
export async function readTextMaybeGzip(path: string): Promise<string> {
  statRegularFile(path);
  const file = await Deno.open(path);
  return await new Response(gunzipIfNeeded(file.readable, path)).text();
}
