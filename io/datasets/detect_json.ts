/**
 * The JSON half of format detection (`./detect.ts`): what a file whose
 * first bytes open a JSON object is (SQuAD v1.1 or v2.0, XQuAD, MLQA, MRQA,
 * an open-domain or passage JSONL, a generic JSONL), from those bytes and
 * its name. No import: `evaluate`'s whole-file path (`metrics/evaluate_whole.ts`)
 * asks it without loading the readers.
 *
 * @module
 */
import type { DatasetFormat } from "./detect.ts";

/**
 * How many bytes of the (decompressed) input the detector looks at: this
 * many, and on to the end of the first line (at most
 * {@linkcode MAX_LINE_BYTES}) when they do not hold it and do not open a
 * JSON document (SQuAD, MRQA's header), which may be one long line.
 */
export const HEAD_BYTES = 64 * 1024;

/**
 * The bound of one line (or one CSV record, quoted newlines included) of a
 * line-based dataset, and of one string of a SQuAD file, in bytes: 16 MiB,
 * far above any real record (an MRQA context with its tokens is tens of
 * KiB, a DPR passage under 2 KiB, a SQuAD context a few KiB). Format
 * detection reads no further for a first line either. A longer line or
 * string is one bad-input error, read no further, so it never costs more
 * memory than the bound.
 */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

/**
 * The longest article (one element of `data`) read, in bytes: 32 MiB, far
 * above any real one (SQuAD v1.1's whole train set is 30 MiB); a longer one
 * is refused once the input passes the bound, so it is never held whole.
 */
export const MAX_ARTICLE_BYTES = 32 * 1024 * 1024;

/**
 * Whether a head (as {@linkcode headText} gives it) opens a JSON document
 * that may be one long line: a SQuAD file (`data` or `version` first) or
 * MRQA's header.
 *
 * @example
 * ```ts
 * import { opensJsonDocument } from "./detect_json.ts";
 * if (!opensJsonDocument('{"data": [{"title"') || opensJsonDocument('{"question": "')) {
 *   throw new Error();
 * }
 * ```
 */
export function opensJsonDocument(text: string): boolean {
  return /^\{\s*"(data|version|header)"\s*:/.test(text);
}

/** Whether `v` is a JSON object (not an array, not `null`). */
export function isJsonObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The last component of a path. */
export function baseName(name: string): string {
  return name.slice(name.lastIndexOf("/") + 1);
}

function squadKind(head: string, name: string): DatasetFormat {
  const base = baseName(name);
  if (/^xquad\.[^.]+\.json(\.gz)?$/i.test(base)) return "xquad";
  if (/context-[a-z]+-question-[a-z]+\.json(\.gz)?$/i.test(base)) return "mlqa";
  if (/"version"\s*:\s*"v?2/.test(head) || head.includes('"is_impossible"')) return "squad2";
  return "squad";
}

/**
 * The format of a file whose head, BOM and leading white space removed, is
 * `text` and opens a JSON object (`text` starts with `{`), or `undefined`
 * when the head does not tell.
 *
 * @example
 * ```ts
 * import { formatOfJsonHead } from "./detect_json.ts";
 * if (formatOfJsonHead('{"version": "v2.0", "data": [', "dev.json") !== "squad2") throw new Error();
 * if (formatOfJsonHead('{"data": [{"title": "T"', "xquad.de.json") !== "xquad") throw new Error();
 * if (formatOfJsonHead('{"question": "q", "answer": ["a"]}', "nq.jsonl") !== "open") throw new Error();
 * ```
 */
export function formatOfJsonHead(text: string, name: string): DatasetFormat | undefined {
  const nl = text.indexOf("\n");
  const first = (nl < 0 ? text : text.slice(0, nl)).replace(/\r$/, "");
  let obj: unknown;
  try {
    obj = JSON.parse(first);
  } catch {
    obj = undefined;
  }
  if (!isJsonObject(obj)) {
    // A document over several lines, or one line longer than the head: SQuAD opens so.
    if (/^\{\s*"(data|version)"\s*:/.test(text)) return squadKind(text, name);
    if (/^\{\s*"header"\s*:/.test(text)) return "mrqa";
    return undefined;
  }
  const has = (k: string) => Object.hasOwn(obj as object, k);
  if (has("header")) return "mrqa";
  if (has("data") || has("version")) return squadKind(text, name);
  if (has("context") && has("qas")) return "mrqa";
  if (has("question") && !has("context")) return "open";
  if ((has("text") || has("contents")) && !has("question")) return "passages";
  return "jsonl";
}

/** The head text as the detector reads it: BOM and leading white space removed. */
export function headText(head: string): string {
  return head.replace(/^\uFEFF/, "").replace(/^\s+/, "");
}
