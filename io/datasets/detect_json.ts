/**
 * The JSON half of format detection (`./detect.ts`): what a file whose
 * first bytes open a JSON object is (SQuAD v1.1 or v2.0, XQuAD, MLQA, MRQA,
 * an open-domain or passage JSONL, a generic JSONL), from those bytes and
 * its name. No import but the bounds (and the formats' type): `evaluate`'s whole-file path (`metrics/evaluate_whole.ts`)
 * asks it without loading the readers.
 *
 * @module
 */
import { HEAD_BYTES, isJsonObject, MAX_ARTICLE_BYTES, MAX_LINE_BYTES } from "./bounds.ts";
import type { DatasetFormat } from "./formats.ts";
import { parsePythonJson } from "../pyjson.ts";

export { HEAD_BYTES, isJsonObject, MAX_ARTICLE_BYTES, MAX_LINE_BYTES };

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
    obj = parsePythonJson(first);
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
