/**
 * A corpus as JSONL, one passage a line: `{"id", "title", "text"}` (the
 * layout of DPR-style and Pyserini-style JSONL corpora; `contents` is read
 * when there is no `text`). `id` is a string or an integer; `title` may be
 * missing (`""`). A line without an id or a text, an empty text (nothing
 * but white space: nothing to encode), or a repeated id (naming the line of
 * the first), is bad input.
 *
 * @module
 */
import type * as Stream from "effect/Stream";
import type { InputError } from "../errors.ts";
import type { ByteSource } from "../source.ts";
import { lineRecords } from "./lines.ts";
import {
  type CorpusPassage,
  IdRegistry,
  idText,
  MAX_LINE_BYTES,
  parseJsonLine,
  recordError,
} from "./types.ts";

/**
 * The passages of a JSONL corpus.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Stream from "effect/Stream";
 * import { jsonlPassages } from "./passages.ts";
 * const text = '{"id": 7, "title": "Zürich", "text": "Zürich is a city."}\n' +
 *   '{"id": "b", "text": "B."}\n';
 * const src = { name: "corpus.jsonl", stream: new Blob([text]).stream() };
 * const ps = await Effect.runPromise(Stream.runCollect(jsonlPassages(src)));
 * if (ps[0].id !== "7" || ps[0].title !== "Zürich" || ps[1].title !== "") throw new Error();
 * ```
 */
export function jsonlPassages(
  src: ByteSource,
  opts: { readonly maxLineBytes?: number } = {},
): Stream.Stream<CorpusPassage, InputError> {
  const ids = new IdRegistry();
  return lineRecords<CorpusPassage>(src, opts.maxLineBytes ?? MAX_LINE_BYTES, (line, out) => {
    if (line.text.trim() === "") return;
    const rec = parseJsonLine(src.name, line.line, line.text);
    const rawId = rec.id === "" ? undefined : rec.id;
    const id = idText(rawId);
    const fail = (message: string): never => {
      throw recordError(src.name, line.line, id, message, "passage");
    };
    if (id === undefined) {
      fail(rawId === undefined ? "passage without id" : '"id" is not a string or an integer');
    }
    const text = rec.text ?? rec.contents;
    if (typeof text !== "string") {
      fail(text === undefined ? 'missing "text"' : '"text" is not a string');
    }
    if ((text as string).trim() === "") fail("empty text");
    const title = rec.title ?? "";
    if (typeof title !== "string") fail('"title" is not a string');
    const seen = ids.add(id as string, line.line);
    if (seen !== undefined) fail(`duplicate id (first at ${seen})`);
    out.push({ id: id as string, title: title as string, text: text as string });
  });
}
