/**
 * A whole SQuAD dataset's question → paragraph map in one go
 * ({@linkcode squadQuestionParagraphs}): the bytes are decoded and parsed
 * at once and every article checked with the SQuAD reader's own checks (the
 * same rules as `decodeArticle` in `io/squad.ts`). Free of Effect, so
 * merge's workers can read their dataset before the stage has loaded. When
 * something is wrong, it answers `undefined` and the streaming reader
 * (`squadRecordStream`) reads the file again to say what.
 *
 * @module
 */
import * as zlib from "node:zlib";
import { isValidArticle } from "./_squad_checks.ts";
import type { SquadReadOptions } from "./squad.ts";

/** Datasets up to this size (decompressed) are parsed in one go; larger ones are streamed. */
export const WHOLE_DATASET_LIMIT = 256 * 1024 * 1024;

/**
 * The question → paragraph (`title_index`) map of a whole dataset's bytes
 * (`.json`, or gzipped), with Python dict semantics (a repeated question id
 * keeps its first position and its last paragraph), when the SQuAD reader
 * accepts every article with `opts` and the data is at most
 * {@linkcode WHOLE_DATASET_LIMIT} bytes; `undefined` otherwise.
 *
 * @example
 * ```ts
 * import { squadQuestionParagraphs } from "./squad_ids.ts";
 * const bytes = new TextEncoder().encode('{"data": [{"title": "T", "paragraphs": [{"qas": [{"id": "q"}]}]}]}');
 * const q2c = squadQuestionParagraphs(bytes, { context: "optional" });
 * if (q2c?.get("q") !== "T_0") throw new Error("wrong paragraph");
 * if (squadQuestionParagraphs(new TextEncoder().encode("[]"), {}) !== undefined) throw new Error();
 * ```
 */
export function squadQuestionParagraphs(
  bytes: Uint8Array,
  opts: SquadReadOptions,
): Map<string, string> | undefined {
  if (bytes.length > WHOLE_DATASET_LIMIT) return undefined;
  try {
    if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
      const r = zlib.gunzipSync(bytes, { maxOutputLength: WHOLE_DATASET_LIMIT + 1 });
      if (r.byteLength > WHOLE_DATASET_LIMIT) return undefined;
      bytes = new Uint8Array(r.buffer, r.byteOffset, r.byteLength);
    }
    const v = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    if (typeof v !== "object" || v === null || !Array.isArray(v.data)) return undefined;
    if (!v.data.every((a: unknown) => isValidArticle(a, opts))) return undefined;
    const q2c = new Map<string, string>();
    for (const a of v.data as { title: string; paragraphs: { qas?: { id: string }[] }[] }[]) {
      a.paragraphs.forEach((p, i) => {
        const pid = `${a.title}_${i}`;
        for (const q of p.qas ?? []) q2c.set(q.id, pid);
      });
    }
    return q2c;
  } catch {
    return undefined;
  }
}
