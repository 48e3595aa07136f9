/**
 * A generic question set's field map given on a command line
 * ({@linkcode parseFieldsFlag}, `--fields`): `key=field` pairs separated by
 * commas (`question=q,answers=gold,id=qid`) or a JSON object
 * (`{"question": "q", "answers": "gold"}`), the keys those of
 * {@linkcode FieldMap}.
 *
 * @module
 */
import { UsageError } from "../errors.ts";
import type { FieldMap } from "./types.ts";

/** The keys a field map may have. */
export const FIELD_MAP_KEYS: readonly (keyof FieldMap)[] = [
  "id",
  "question",
  "answers",
  "context",
  "paragraphId",
  "title",
  "lang",
  "noAnswer",
];

/**
 * Parses a `--fields` value into a {@linkcode FieldMap}; an unknown key, a
 * repeated key, an empty field name or no `question` is a
 * {@linkcode UsageError} naming it.
 *
 * @example
 * ```ts
 * import { parseFieldsFlag } from "./fields.ts";
 * const a = parseFieldsFlag("question=q,answers=gold,id=qid");
 * const b = parseFieldsFlag('{"question": "q", "answers": "gold", "id": "qid"}');
 * if (a.question !== "q" || a.id !== "qid" || JSON.stringify(a) !== JSON.stringify(b)) {
 *   throw new Error(JSON.stringify([a, b]));
 * }
 * ```
 */
export function parseFieldsFlag(text: string): FieldMap {
  const bad = (m: string) => new UsageError(`--fields: ${m}`);
  let pairs: [string, unknown][];
  if (text.trimStart().startsWith("{")) {
    let o: unknown;
    try {
      o = JSON.parse(text);
    } catch (e) {
      throw bad(`not a JSON object (${e instanceof Error ? e.message : String(e)})`);
    }
    if (o === null || typeof o !== "object" || Array.isArray(o)) throw bad("not a JSON object");
    pairs = Object.entries(o);
  } else {
    pairs = text.split(",").map((p) => {
      const i = p.indexOf("=");
      if (i < 0) throw bad(`"${p}" is not key=field (e.g. question=q,answers=gold)`);
      return [p.slice(0, i).trim(), p.slice(i + 1).trim()];
    });
  }
  const out: Record<string, string> = {};
  for (const [k, v] of pairs) {
    if (!(FIELD_MAP_KEYS as readonly string[]).includes(k)) {
      throw bad(`unknown key "${k}" (keys: ${FIELD_MAP_KEYS.join(", ")})`);
    }
    if (k in out) throw bad(`"${k}" given twice`);
    if (typeof v !== "string" || v === "") throw bad(`"${k}" needs a field name`);
    out[k] = v;
  }
  if (out.question === undefined) throw bad('no "question" field (e.g. question=q)');
  return out as unknown as FieldMap;
}
