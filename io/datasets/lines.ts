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
 * A transform from bytes to {@linkcode TextLine}s; errors are
 * {@linkcode InputError}s naming `file` and the line. The last line needs
 * no `\n`.
 *
 * @example
 * ```ts
 * import { lineSplitter } from "./lines.ts";
 * const lines = await Array.fromAsync(
 *   new Blob(["\uFEFFa\r\nbé\n\nc"]).stream().pipeThrough(lineSplitter("f.txt", 16)),
 * );
 * const got = lines.map((l) => `${l.line}@${l.offset}:${l.text}`).join("|");
 * if (got !== "1@3:a|2@6:bé|3@10:|4@11:c") throw new Error(got);
 * ```
 */
export function lineSplitter(
  file: string,
  maxLineBytes: number = MAX_LINE_BYTES,
): TransformStream<Uint8Array, TextLine> {
  const dec = new TextDecoder("utf-8", { fatal: true });
  let pending: Uint8Array[] = [];
  let pendingLen = 0;
  let lineNo = 0;
  let offset = 0; // of the pending line's first byte
  const tooLong = () =>
    new InputError({
      file,
      where: `line ${lineNo + 1}`,
      message: `line longer than ${maxLineBytes} bytes`,
    });
  // Bytes a line may hold beyond the bound before its end is seen: a `\r` that ends it
  // (and the first line's byte-order mark) do not count.
  const slack = () => lineNo === 0 ? 4 : 1;
  const emit = (controller: TransformStreamDefaultController<TextLine>, last: Uint8Array) => {
    let bytes: Uint8Array;
    if (pending.length === 0) bytes = last;
    else {
      bytes = new Uint8Array(pendingLen + last.byteLength);
      let o = 0;
      for (const p of pending) {
        bytes.set(p, o);
        o += p.byteLength;
      }
      bytes.set(last, o);
    }
    const total = bytes.byteLength;
    lineNo++;
    let start = 0;
    if (lineNo === 1 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) start = 3;
    let end = total;
    if (end > start && bytes[end - 1] === 0x0d) end--;
    if (end - start > maxLineBytes) {
      lineNo--;
      throw tooLong();
    }
    let text: string;
    try {
      text = dec.decode(bytes.subarray(start, end));
    } catch {
      throw new InputError({
        file,
        where: `line ${lineNo}`,
        message: `invalid UTF-8 at byte ${
          offset + start + firstInvalidUtf8(bytes.subarray(start, end))
        }`,
      });
    }
    controller.enqueue({ line: lineNo, offset: offset + start, bytes: end - start, text });
    offset += total;
    pending = [];
    pendingLen = 0;
  };
  return new TransformStream<Uint8Array, TextLine>({
    transform(chunk, controller) {
      let at = 0;
      while (at < chunk.byteLength) {
        const nl = chunk.indexOf(0x0a, at);
        if (nl < 0) {
          const rest = chunk.subarray(at);
          if (pendingLen + rest.byteLength > maxLineBytes + slack()) throw tooLong();
          pending.push(rest.slice());
          pendingLen += rest.byteLength;
          return;
        }
        if (pendingLen + (nl - at) > maxLineBytes + slack()) throw tooLong();
        emit(controller, chunk.subarray(at, nl));
        offset += 1; // the `\n`
        at = nl + 1;
      }
    },
    flush(controller) {
      if (pendingLen > 0) emit(controller, new Uint8Array(0));
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
 * import { Effect, Stream } from "effect";
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
export function lineRecords<T>(
  src: ByteSource,
  maxLineBytes: number,
  parse: (line: TextLine, out: T[]) => void,
  end?: (out: T[]) => void,
): Stream.Stream<T, InputError> {
  return Stream.fromReadableStream({
    evaluate: () =>
      src.stream.pipeThrough(lineSplitter(src.name, maxLineBytes)).pipeThrough(
        new TransformStream<TextLine, T>({
          transform(line, controller) {
            const out: T[] = [];
            parse(line, out);
            for (const r of out) controller.enqueue(r);
          },
          flush(controller) {
            const out: T[] = [];
            end?.(out);
            for (const r of out) controller.enqueue(r);
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
}
