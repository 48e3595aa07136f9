/**
 * Bounded lines of a byte stream, the base of every line-based dataset
 * reader (JSONL, CSV/TSV): lines are cut at `\n` (a `\r` before it is
 * dropped, and a UTF-8 byte-order mark before the first line), decoded as
 * strict UTF-8, and numbered from 1. A line longer than the bound fails as
 * soon as the bound is passed, naming its number, so one huge line costs no
 * more memory than the bound.
 *
 * @module
 */
import * as Stream from "effect/Stream";
import { InputError } from "../errors.ts";
import { firstInvalidUtf8 } from "../json_events.ts";
import type { ByteSource } from "../source.ts";
import { MAX_LINE_BYTES } from "./types.ts";

/** One line of text. */
export interface TextLine {
  /** Line number, from 1. */
  readonly line: number;
  /** Byte offset of the line's first byte in the (decompressed) input. */
  readonly offset: number;
  /** Length of the line in bytes, without its line end. */
  readonly bytes: number;
  /** The text, without its line end. */
  readonly text: string;
}

/**
 * A transform from bytes to {@linkcode TextLine}s, in batches (the lines
 * completed by each chunk of input; lines inside one chunk are decoded in
 * one call); errors are {@linkcode InputError}s naming `file` and the line.
 * The last line needs no `\n`.
 *
 * @example
 * ```ts
 * import { lineSplitter } from "./lines.ts";
 * const batches = await Array.fromAsync(
 *   new Blob(["\uFEFFa\r\nbé\n\nc"]).stream().pipeThrough(lineSplitter("f.txt", 16)),
 * );
 * const got = batches.flat().map((l) => `${l.line}@${l.offset}+${l.bytes}:${l.text}`).join("|");
 * if (got !== "1@3+1:a|2@6+3:bé|3@10+0:|4@11+1:c") throw new Error(got);
 * ```
 */
export function lineSplitter(
  file: string,
  maxLineBytes: number = MAX_LINE_BYTES,
): TransformStream<Uint8Array, TextLine[]> {
  const dec = new TextDecoder("utf-8", { fatal: true });
  let pending: Uint8Array[] = [];
  let pendingLen = 0;
  let lineNo = 0; // lines emitted so far
  let offset = 0; // byte offset of the next line's first byte
  const tooLong = (line: number) =>
    new InputError({
      file,
      where: `line ${line}`,
      message: `line longer than ${maxLineBytes} bytes`,
    });
  const badUtf8 = (line: number, at: number) =>
    new InputError({ file, where: `line ${line}`, message: `invalid UTF-8 at byte ${at}` });
  // Bytes a line may hold beyond the bound before its end is seen: a `\r` that ends it
  // (and the first line's byte-order mark) do not count.
  const slack = () => lineNo === 0 ? 4 : 1;
  /** One line from its bytes (without the `\n`), decoded alone. */
  const single = (bytes: Uint8Array, out: TextLine[]) => {
    const total = bytes.byteLength;
    const line = lineNo + 1;
    let start = 0;
    if (line === 1 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) start = 3;
    let end = total;
    if (end > start && bytes[end - 1] === 0x0d) end--;
    if (end - start > maxLineBytes) throw tooLong(line);
    const body = bytes.subarray(start, end);
    let text: string;
    try {
      text = dec.decode(body);
    } catch {
      throw badUtf8(line, offset + start + firstInvalidUtf8(body));
    }
    out.push({ line, offset: offset + start, bytes: end - start, text });
    lineNo = line;
    offset += total + 1;
  };
  /** The lines of `chunk[from, to)`, each ended by a `\n` at its end, decoded in one call. */
  const run = (chunk: Uint8Array, from: number, to: number, out: TextLine[]) => {
    let text: string;
    try {
      text = dec.decode(chunk.subarray(from, to));
    } catch {
      // Name the bad line: decode them one by one.
      let at = from;
      while (at < to) {
        const nl = chunk.indexOf(0x0a, at);
        single(chunk.subarray(at, nl), out);
        at = nl + 1;
      }
      return;
    }
    const parts = text.split("\n");
    parts.pop(); // after the last `\n`
    let at = from;
    for (let t of parts) {
      const nl = chunk.indexOf(0x0a, at);
      let bytes = nl - at;
      if (t.endsWith("\r")) {
        t = t.slice(0, -1);
        bytes--;
      }
      const line = lineNo + 1;
      if (bytes > maxLineBytes) throw tooLong(line);
      out.push({ line, offset, bytes, text: t });
      lineNo = line;
      offset += nl - at + 1;
      at = nl + 1;
    }
  };
  return new TransformStream<Uint8Array, TextLine[]>({
    transform(chunk, controller) {
      const out: TextLine[] = [];
      let at = 0;
      const nl = chunk.indexOf(0x0a);
      if (nl < 0) {
        if (pendingLen + chunk.byteLength > maxLineBytes + slack()) throw tooLong(lineNo + 1);
        pending.push(chunk.slice());
        pendingLen += chunk.byteLength;
        return;
      }
      // The line in progress ends in this chunk.
      if (pendingLen + nl > maxLineBytes + slack()) throw tooLong(lineNo + 1);
      if (pending.length === 0 && lineNo > 0) {
        at = 0; // no carried bytes: the run below takes it
      } else {
        const bytes = new Uint8Array(pendingLen + nl);
        let o = 0;
        for (const p of pending) {
          bytes.set(p, o);
          o += p.byteLength;
        }
        bytes.set(chunk.subarray(0, nl), o);
        pending = [];
        pendingLen = 0;
        single(bytes, out);
        at = nl + 1;
      }
      const last = chunk.lastIndexOf(0x0a);
      if (last >= at) run(chunk, at, last + 1, out);
      const rest = chunk.subarray(last + 1);
      if (rest.byteLength > maxLineBytes + slack()) throw tooLong(lineNo + 1);
      if (rest.byteLength > 0) {
        pending.push(rest.slice());
        pendingLen = rest.byteLength;
      }
      if (out.length > 0) controller.enqueue(out);
    },
    flush(controller) {
      if (pendingLen === 0) return;
      const bytes = new Uint8Array(pendingLen);
      let o = 0;
      for (const p of pending) {
        bytes.set(p, o);
        o += p.byteLength;
      }
      const out: TextLine[] = [];
      single(bytes, out);
      controller.enqueue(out);
    },
  });
}

/**
 * Streams the records `parse` makes of the lines of `src`: `parse` pushes
 * any number of records for a line and throws {@linkcode InputError} for a
 * bad one; `end` (optional) may push more records or throw at the end of
 * the input. Other errors become an {@linkcode InputError} naming the file.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Stream from "effect/Stream";
 * import { lineRecords } from "./lines.ts";
 * const src = { name: "n.txt", stream: new Blob(["1\n2\n\n3\n"]).stream() };
 * const nums = await Effect.runPromise(Stream.runCollect(
 *   lineRecords<number>(src, 100, (l, out) => {
 *     if (l.text !== "") out.push(Number(l.text));
 *   }),
 * ));
 * if (nums.join() !== "1,2,3") throw new Error(nums.join());
 * ```
 */
/**
 * A record's error of line `n` of `src`'s text, named where the line was
 * read from when the source says (`ByteSource.lineAt`: a Parquet row): its
 * file and `line n` become the shard and `row R`, and a first place
 * `(first at line M)` in its message the same way. Anything else as it is.
 *
 * @example
 * ```ts
 * import { placed } from "./lines.ts";
 * import { InputError } from "../errors.ts";
 * const src = {
 *   name: "split",
 *   stream: new Blob([]).stream(),
 *   lineAt: (n: number) => ({ file: "split/b.parquet", where: `row ${n - 3}` }),
 * };
 * const e = placed(
 *   new InputError({ file: "split", where: 'line 5 question "q"', message: "duplicate id (first at line 4)" }),
 *   src,
 *   5,
 * );
 * if (String(e) !== 'split/b.parquet: row 2 question "q": duplicate id (first at split/b.parquet row 1)') {
 *   throw new Error(String(e));
 * }
 * ```
 */
export function placed(e: unknown, src: ByteSource, n: number): unknown {
  const here = src.lineAt?.(n);
  if (!(e instanceof InputError) || e.file !== src.name || here === undefined) return e;
  const prefix = `line ${n}`;
  if (e.where !== prefix && !e.where.startsWith(`${prefix} `)) return e;
  const message = e.message.replace(/\(first at line (\d+)\)/, (all, m: string) => {
    const first = src.lineAt!(Number(m));
    return first === undefined ? all : `(first at ${first.file} ${first.where})`;
  });
  return new InputError({
    file: here.file,
    where: here.where + e.where.slice(prefix.length),
    message,
  });
}

export function lineRecords<T>(
  src: ByteSource,
  maxLineBytes: number,
  parse: (line: TextLine, out: T[]) => void,
  end?: (out: T[]) => void,
): Stream.Stream<T, InputError> {
  const batches = Stream.fromReadableStream({
    evaluate: () =>
      src.stream.pipeThrough(lineSplitter(src.name, maxLineBytes)).pipeThrough(
        new TransformStream<TextLine[], T[]>({
          transform(lines, controller) {
            const out: T[] = [];
            for (const line of lines) {
              if (src.lineAt === undefined) parse(line, out);
              else {
                try {
                  parse(line, out);
                } catch (e) {
                  throw placed(e, src, line.line);
                }
              }
            }
            if (out.length > 0) controller.enqueue(out);
          },
          flush(controller) {
            const out: T[] = [];
            end?.(out);
            if (out.length > 0) controller.enqueue(out);
          },
        }),
      ),
    onError: (e) =>
      e instanceof InputError ? e : new InputError({
        file: src.name,
        where: "",
        message: e instanceof Error ? e.message : String(e),
      }),
  });
  return Stream.flattenIterable(batches);
}
