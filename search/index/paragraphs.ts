/**
 * One line of an index's paragraph table (`paragraphs.ndjson`, see
 * `format.ts`), parsed and checked: what the reader that loads the table
 * whole (`read.ts`) and the one that reads it on demand (`disk.ts`) share,
 * so both refuse the same lines with the same messages.
 *
 * @module
 */
import { InputError } from "../../io/errors.ts";
import { INDEX_HEADER, type IndexHeader } from "./format.ts";

/** One paragraph of the table, checked. */
export interface ParagraphLine {
  /** Paragraph id. */
  readonly id: string;
  /** Its phrase count (at least 1). */
  readonly rows: number;
  /** Its phrases. */
  readonly phrases: readonly string[];
  /** Code point offsets of its phrases, or `null` where the line has none. */
  readonly offsets: readonly (readonly [number, number])[] | null;
  /** The article title, or `null`. */
  readonly title: string | null;
  /** The paragraph's text, or `null`. */
  readonly context: string | null;
  /** A shard's paragraph: its place in the corpus; `undefined` in an unsharded index. */
  readonly position: number | undefined;
}

const bad = (file: string, message: string) => new InputError({ file, where: "", message });

/**
 * Parses and checks line `p` (0-based) of the paragraph table `path`, whose
 * first row is `row`; `before` is the previous line's `position` (a shard's
 * positions increase; -1 for the first line). Throws
 * {@linkcode InputError} naming the line.
 *
 * @example
 * ```ts
 * import { parseParagraphLine } from "./paragraphs.ts";
 * import type { IndexHeader } from "./format.ts";
 * const h = { phrases: 2, offsets: null } as unknown as IndexHeader;
 * const line = '{"id": "T_0", "rows": 2, "phrases": ["a", "b"], "offsets": null}';
 * const o = parseParagraphLine(line, 0, 0, h, "p.ndjson", -1);
 * if (o.phrases.join() !== "a,b" || o.title !== null) throw new Error();
 * ```
 */
export function parseParagraphLine(
  line: string,
  p: number,
  row: number,
  h: IndexHeader,
  path: string,
  before: number,
): ParagraphLine {
  let o: {
    id?: unknown;
    rows?: unknown;
    phrases?: unknown;
    offsets?: unknown;
    title?: unknown;
    context?: unknown;
    position?: unknown;
  };
  try {
    o = JSON.parse(line);
  } catch (e) {
    throw bad(path, `line ${p + 1}: invalid JSON (${e instanceof Error ? e.message : e})`);
  }
  const n = o?.rows;
  if (
    typeof o !== "object" || o === null || typeof o.id !== "string" ||
    !Number.isSafeInteger(n) || (n as number) < 1 || !Array.isArray(o.phrases) ||
    o.phrases.length !== n || !o.phrases.every((s) => typeof s === "string")
  ) throw bad(path, `line ${p + 1}: not a paragraph record`);
  if (row + (n as number) > h.phrases) {
    throw bad(path, `more rows than the ${h.phrases} phrases ${INDEX_HEADER} says`);
  }
  for (const key of ["title", "context"] as const) {
    if (o[key] !== undefined && o[key] !== null && typeof o[key] !== "string") {
      throw bad(path, `line ${p + 1}: bad ${key} (a string expected)`);
    }
  }
  let position: number | undefined;
  if (h.shard !== undefined) {
    const at = o.position as number;
    if (
      !Number.isSafeInteger(at) || at < 0 || at >= h.shard.corpus_paragraphs ||
      (p > 0 && at <= before)
    ) {
      throw bad(
        path,
        `line ${p + 1}: bad position ${JSON.stringify(o.position)} (a shard's paragraphs ` +
          `have increasing places in the corpus, below ${h.shard.corpus_paragraphs})`,
      );
    }
    position = at;
  }
  let offsets: [number, number][] | null = null;
  if (o.offsets !== null && o.offsets !== undefined) {
    const ok = Array.isArray(o.offsets) && o.offsets.length === n &&
      o.offsets.every((x) => Array.isArray(x) && x.length === 2 && x.every(Number.isSafeInteger));
    if (!ok || h.offsets === null) throw bad(path, `line ${p + 1}: bad offsets`);
    offsets = o.offsets as [number, number][];
  }
  return {
    id: o.id,
    rows: n as number,
    phrases: o.phrases as string[],
    offsets,
    title: typeof o.title === "string" ? o.title : null,
    context: typeof o.context === "string" ? o.context : null,
    position,
  };
}
