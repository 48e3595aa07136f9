/**
 * Paragraph and question ids of a whole dataset.
 *
 * **Unique ids.** A PI-SQuAD paragraph id is `'%s_%d' % (title, index)`, so
 * two articles with one title (or with titles equal once `/` becomes `_`,
 * the dump file rule of `io/dump/names.ts`) give two paragraphs one dump
 * file, and a merge would score one article with the other's dumps. Every
 * stage that names or reads dumps (split, the encoders, validate, merge,
 * `full`, `run`) reads its dataset with {@linkcode DatasetIds}:
 *
 * - `"distinct"`: such a dataset is refused, naming both articles:
 *   `paragraph id "Super_Bowl_50_0" occurs in article 0 ("Super_Bowl_50")
 *   and article 6 ("Super_Bowl_50"); pass --unique-ids to rename`
 *   (articles are numbered from 0 in file order, as in every message of
 *   the SQuAD reader);
 * - `"unique"` (`--unique-ids`, or `uniqueIds: true` on a run config's
 *   dataset): articles are renamed by this rule, in file order. An article
 *   with at least one paragraph keeps its title when no earlier article
 *   with paragraphs used that title (compared after `/` → `_`); otherwise
 *   its title becomes `<title>#k`, with `k` the smallest integer from 2 up
 *   whose `<title>#k` (after `/` → `_`) no earlier article used, original
 *   or renamed. So the second `Super_Bowl_50` is `Super_Bowl_50#2`, the
 *   third `Super_Bowl_50#3`, and a later article that is itself titled
 *   `Super_Bowl_50#2` becomes `Super_Bowl_50#2#2`. The rule depends only on
 *   the articles before, so every stage reading the same file (or its
 *   split, which `split --unique-ids` writes with the new titles) gets the
 *   same ids, and a dataset without repeated titles is left as it is.
 *   Articles without paragraphs make no ids and take part in neither rule.
 *
 * Question ids cannot be renamed (predictions are keyed by them): a question
 * id that occurs twice, or two that share a dump file name, are refused in
 * both modes. Every id is also checked to name a dump file
 * (`unsafeIdReason` of `io/dump/names.ts`, the length limit included), so
 * an id too long is refused before anything is written. `"as-read"` (the
 * SQuAD reader's default, what `evaluate` uses: the official scripts do not
 * look at titles) checks nothing.
 *
 * {@linkcode squadQuestionParagraphs}: a whole dataset's question →
 * paragraph map in one go: the bytes are decoded and parsed at once and
 * every article checked with the SQuAD reader's own checks (the same rules
 * as `decodeArticle` in `io/squad.ts`). Free of Effect, so merge's workers
 * can read their dataset before the stage has loaded. When something is
 * wrong, it answers `undefined` and the streaming reader
 * (`squadRecordStream`) reads the file again to say what.
 *
 * @module
 */
import * as zlib from "node:zlib";
import { isValidArticle } from "./squad_checks.ts";
import { type IdKind, unsafeIdReason } from "./dump/names.ts";
import type { SquadReadOptions } from "./squad.ts";

/**
 * How a reader checks ids (see the module notes): `"as-read"` (no checks),
 * `"distinct"` (duplicates refused) or `"unique"` (duplicate titles
 * renamed; duplicate question ids refused).
 */
export type IdMode = "as-read" | "distinct" | "unique";

/** Why a dataset's ids are refused: where (may be empty) and what, for an `InputError`. */
export interface IdProblem {
  /** The record: `article 3 ("T") paragraph 0`, or empty when the message names the records. */
  readonly where: string;
  /** What is wrong. */
  readonly message: string;
}

const stemOf = (id: string) => id.replaceAll("/", "_");
const articleName = (index: number, title: string) => `article ${index} (${JSON.stringify(title)})`;
const RENAME_HINT = "pass --unique-ids (in a run config: uniqueIds: true) to rename";

/**
 * The id checks (and the renaming) of one pass over a dataset, article by
 * article in file order (see the module notes).
 *
 * @example
 * ```ts
 * import { DatasetIds } from "./squad_ids.ts";
 * const ids = new DatasetIds("unique");
 * const titles = ["A", "A", "A#2", "B"].map((t, i) => ids.article(i, t, 1));
 * if (titles.join() !== "A,A#2,A#2#2,B") throw new Error(titles.join());
 * const strict = new DatasetIds("distinct");
 * strict.article(0, "A", 1);
 * const p = strict.article(5, "A", 2);
 * if (typeof p === "string" || !p.message.startsWith('paragraph id "A_0" occurs in article 0')) {
 *   throw new Error("a repeated title was accepted");
 * }
 * if (strict.question("q", 0, "A", 0) !== undefined) throw new Error();
 * if (strict.question("q", 1, "B", 0) === undefined) throw new Error("a repeated question id");
 * ```
 */
export class DatasetIds {
  /** Mapped title → the article that holds it. */
  readonly #titles = new Map<string, { index: number; title: string }>();
  /** Question stem → where it was. */
  readonly #questions = new Map<string, { id: string; where: string }>();

  /**
   * A checker of a dataset's ids in mode `mode`.
   *
   * @param mode how ids are checked; `"as-read"` checks nothing.
   */
  constructor(readonly mode: IdMode) {}

  /**
   * The title the paragraph ids of article `index` (with `paragraphs`
   * paragraphs, titled `title` in the file) are made from: `title`, or its
   * new name in `"unique"` mode; or why the article is refused.
   */
  article(index: number, title: string, paragraphs: number): string | IdProblem {
    if (this.mode === "as-read" || paragraphs === 0) return title;
    let name = title;
    const owner = this.#titles.get(stemOf(title));
    if (owner !== undefined) {
      if (this.mode === "distinct") {
        const mine = `${title}_0`, theirs = `${owner.title}_0`;
        return {
          where: "",
          message: mine === theirs
            ? `paragraph id ${JSON.stringify(mine)} occurs in ${
              articleName(owner.index, owner.title)
            } and ${articleName(index, title)}; ${RENAME_HINT}`
            : `paragraph ids ${JSON.stringify(theirs)} of ${
              articleName(owner.index, owner.title)
            } and ${JSON.stringify(mine)} of ${articleName(index, title)} name the same dump file ${
              JSON.stringify(`${stemOf(mine)}.npz`)
            } ('/' becomes '_'); ${RENAME_HINT}`,
        };
      }
      let k = 2;
      while (this.#titles.has(stemOf(`${title}#${k}`))) k++;
      name = `${title}#${k}`;
    }
    const longest = `${name}_${paragraphs - 1}`;
    const why = unsafeIdReason(longest, "paragraph");
    if (why !== undefined) {
      return {
        where: `${articleName(index, title)} paragraph ${paragraphs - 1}`,
        message: `paragraph id ${JSON.stringify(longest)}: ${why}`,
      };
    }
    this.#titles.set(stemOf(name), { index, title: name });
    return name;
  }

  /**
   * Registers question `id` of paragraph `paragraph` of article `index`
   * (titled `title`); returns why it is refused (a repeated id, a dump file
   * name another id has, or an id that cannot name a file), if it is.
   */
  question(id: string, index: number, title: string, paragraph: number): IdProblem | undefined {
    if (this.mode === "as-read") return undefined;
    const here = `${articleName(index, title)} paragraph ${paragraph}`;
    const why = unsafeIdReason(id, "question" satisfies IdKind);
    if (why !== undefined) {
      return { where: `${here} question ${JSON.stringify(id)}`, message: why };
    }
    const stem = stemOf(id);
    const seen = this.#questions.get(stem);
    if (seen === undefined) {
      this.#questions.set(stem, { id, where: here });
      return undefined;
    }
    return {
      where: "",
      message: seen.id === id
        ? `question id ${JSON.stringify(id)} occurs in ${seen.where} and ${here}; ` +
          "question ids must be unique (predictions are keyed by them)"
        : `question ids ${JSON.stringify(seen.id)} of ${seen.where} and ${
          JSON.stringify(id)
        } of ${here} name the same dump file ${
          JSON.stringify(`${stem}.npz`)
        } ('/' becomes '_'); question ids cannot be renamed`,
    };
  }
}

/** Whether `x` is an {@linkcode IdProblem} (not a title). */
export const isIdProblem = (x: string | IdProblem | undefined): x is IdProblem =>
  typeof x === "object";

/** Datasets up to this size (decompressed) are parsed in one go; larger ones are streamed. */
export const WHOLE_DATASET_LIMIT = 256 * 1024 * 1024;

/**
 * The question → paragraph (`title_index`) map of a whole dataset's bytes
 * (`.json`, or gzipped), when the SQuAD reader accepts every article with
 * `opts` (the ids checked, or renamed, by `opts.ids` as in
 * {@linkcode DatasetIds}) and the data is at most
 * {@linkcode WHOLE_DATASET_LIMIT} bytes; `undefined` otherwise. With
 * `ids: "as-read"` (the default) the map has Python dict semantics: a
 * repeated question id keeps its first position and its last paragraph.
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
    const ids = new DatasetIds(opts.ids ?? "as-read");
    const articles = v.data as { title: string; paragraphs: { qas?: { id: string }[] }[] }[];
    for (const [ai, a] of articles.entries()) {
      const title = ids.article(ai, a.title, a.paragraphs.length);
      if (isIdProblem(title)) return undefined;
      for (const [i, p] of a.paragraphs.entries()) {
        const pid = `${title}_${i}`;
        for (const q of p.qas ?? []) {
          if (ids.question(q.id, ai, a.title, i) !== undefined) return undefined;
          q2c.set(q.id, pid);
        }
      }
    }
    return q2c;
  } catch {
    return undefined;
  }
}
