/**
 * Streaming SQuAD writer and the PI-SQuAD split. A SQuAD file is written
 * record by record (top-level fields, then the `data` list one article at a
 * time) in exactly the bytes Python's `json.dump` would write for the same
 * data, so the split is a drop-in replacement for the official tool.
 *
 * @module
 */
import {
  objectKeys,
  type PyJson,
  type PyObject,
  pyStringLiteral,
  setKey,
  writeValue,
} from "./pyjson.ts";
import type { SquadArticle, SquadRecord } from "./squad.ts";
import type { AtomicWriter } from "./fs.ts";

/**
 * A copy of `obj` without `keys`, key order kept; `map` may replace values.
 *
 * @example
 * ```ts
 * import { omitKeys } from "./squad_writer.ts";
 * import { pyDumps } from "./pyjson.ts";
 * const out = omitKeys({ context: "c", qas: [], title: "T" }, ["qas"]);
 * if (pyDumps(out) !== '{"context": "c", "title": "T"}') throw new Error(pyDumps(out));
 * ```
 */
export function omitKeys(
  obj: PyObject,
  keys: readonly string[],
  map?: (key: string, value: PyJson) => PyJson,
): PyObject {
  const out: PyObject = {};
  for (const k of objectKeys(obj)) {
    if (keys.includes(k)) continue;
    setKey(out, k, map ? map(k, obj[k]) : obj[k]);
  }
  return out;
}

/**
 * The context half of an article for PI-SQuAD: every paragraph without
 * `qas`, everything else kept in order.
 */
export function contextArticle(article: SquadArticle): PyObject {
  return omitKeys(
    article.raw,
    [],
    (k, v) => k === "paragraphs" ? (v as PyObject[]).map((p) => omitKeys(p, ["qas"])) : v,
  );
}

/**
 * The question half of an article for PI-SQuAD: every paragraph without
 * `context`, every question without `answers`, everything else kept.
 */
export function questionArticle(article: SquadArticle): PyObject {
  return omitKeys(
    article.raw,
    [],
    (k, v) =>
      k === "paragraphs"
        ? (v as PyObject[]).map((p) =>
          omitKeys(
            p,
            ["context"],
            (pk, pv) => pk === "qas" ? (pv as PyObject[]).map((q) => omitKeys(q, ["answers"])) : pv,
          )
        )
        : v,
  );
}

/**
 * Writes a SQuAD file record by record in `json.dump` format. Feed it the
 * records of {@linkcode squadRecords} (possibly transformed) in order.
 */
export class SquadJsonWriter {
  #topCount = 0;
  #items = 0;
  #open = false;

  /**
   * A writer of SQuAD JSON to `out`, one article at a time.
   *
   * @param out where the text goes
   * @param article how an article becomes the object to write
   */
  constructor(
    readonly out: AtomicWriter,
    readonly article: (a: SquadArticle) => PyObject = (a) => a.raw,
  ) {}

  /** Writes one record. */
  async write(r: SquadRecord): Promise<void> {
    const parts: string[] = [];
    if (!this.#open) {
      parts.push("{");
      this.#open = true;
    }
    switch (r.kind) {
      case "field":
        if (this.#topCount++ > 0) parts.push(", ");
        parts.push(pyStringLiteral(r.key), ": ");
        writeValue(r.value, parts);
        break;
      case "data-start":
        if (this.#topCount++ > 0) parts.push(", ");
        parts.push('"data": [');
        break;
      case "article":
        if (this.#items++ > 0) parts.push(", ");
        writeValue(this.article(r), parts);
        break;
      case "data-end":
        parts.push("]");
        break;
    }
    await this.out.write(parts.join(""));
  }

  /** Closes the top-level object. */
  async end(): Promise<void> {
    await this.out.write(this.#open ? "}" : "{}");
  }
}
