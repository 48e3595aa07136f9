/**
 * DPR's retriever validation (`facebookresearch/DPR`,
 * `dpr/data/qa_validation.py`): whether a passage has an answer
 * ({@linkcode dprHasAnswer}, string or regex mode) and top-k accuracy
 * ({@linkcode topKAccuracy}, the `top_k_hits` of `calculate_matches`, as in
 * DPR's tables at k = 1, 5, 20, 100). `bench/reference/dpr_eval.py` is the
 * Python reference the tests compare with.
 *
 * - String mode: the passage and every answer are NFD-normalised
 *   (`unicodedata.normalize("NFD")`, CPython 3.11) and tokenized by DPR's
 *   `SimpleTokenizer` ({@linkcode dprTokenize}), tokens lower-cased
 *   (`str.lower()`); an answer is found when its tokens occur contiguously in
 *   the passage's (an answer without tokens is found in any passage, as in
 *   DPR).
 * - Regex mode: the passage and every pattern NFD-normalised, the pattern
 *   compiled as Python's `re` with IGNORECASE, UNICODE and MULTILINE and
 *   searched ({@linkcode compilePyRegex}); a pattern that cannot be run
 *   exactly is refused ({@linkcode PyRegexError}) where DPR would count a
 *   pattern Python rejects as no match. DPR imports the third-party `regex`
 *   module as `re`; `./pyregex.ts` says where the two differ.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { dprHasAnswer, topKAccuracy } from "./dpr.ts";
 * assert.deepEqual(dprHasAnswer(["Denver Broncos"], "The denver broncos won.", "string"), true);
 * assert.deepEqual(dprHasAnswer(["19[0-9]{2}"], "In 1984, ...", "regex"), true);
 * assert.deepEqual(topKAccuracy([[false, true], [false, false]], [1, 2]), [
 *   { k: 1, hits: 0, accuracy: 0 },
 *   { k: 2, hits: 1, accuracy: 0.5 },
 * ]);
 * ```
 *
 * @module
 */
import { pythonLower } from "./squad_text.ts";
import { pyCategoryClass, pyNfd } from "./_py311_unicode.ts";
import { compilePyRegex } from "./pyregex.ts";
import { PyRegexBudgetError } from "./pyregex_match.ts";
import { NothingScoredError } from "./qa_errors.ts";

let tokenRe: RegExp | undefined;

/**
 * The tokens of DPR's `SimpleTokenizer` (`([\p{L}\p{N}\p{M}]+)|([^\p{Z}\p{C}])`
 * over CPython 3.11's categories): each maximal run of letters, numbers and
 * marks, and each other code point that is neither a separator nor a control,
 * format, private-use, surrogate or unassigned one. Not lower-cased.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { dprTokenize } from "./dpr.ts";
 * assert.deepEqual(dprTokenize("U.S.A.\u00a0won 3–1!"), ["U", ".", "S", ".", "A", ".", "won", "3", "–", "1", "!"]);
 * assert.deepEqual(dprTokenize("cafe\u0301 北京"), ["cafe\u0301", "北京"]);
 * ```
 */
export function dprTokenize(text: string): string[] {
  if (tokenRe === undefined) {
    const alnum = pyCategoryClass((c) => "LNM".includes(c[0]));
    const ws = pyCategoryClass((c) => "ZC".includes(c[0]));
    tokenRe = new RegExp(`${alnum}+|[^${ws}]`, "gv");
  }
  return text.match(tokenRe) ?? [];
}

/** DPR's `words(uncased=True)` of a text after `_normalize` (NFD). */
function words(text: string): string[] {
  return dprTokenize(pyNfd(text)).map(pythonLower);
}

/** How {@linkcode dprHasAnswer} matches: DPR's `match_type`. */
export type MatchType = "string" | "regex";

/**
 * DPR's `has_answer(answers, text, tokenizer, match_type)` (see the module
 * notes).
 *
 * @throws {PyRegexError} in regex mode, for a pattern refused.
 * @throws {PyRegexBudgetError} in regex mode, for a search cut off (more
 *   than its step budget) when `onCutOff` is not given; with it, the search
 *   is told there and counts as not finding that answer.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { dprHasAnswer } from "./dpr.ts";
 * assert.deepEqual(dprHasAnswer(["Cafe\u0301"], "the café opened", "string"), true);
 * assert.deepEqual(dprHasAnswer(["broncos"], "broncosx", "string"), false);
 * assert.deepEqual(dprHasAnswer(["\\bstra(ss|ß)e\\b"], "STRASSE 5", "regex"), true);
 * ```
 */
export function dprHasAnswer(
  answers: readonly string[],
  text: string,
  mode: MatchType,
  onCutOff?: (e: PyRegexBudgetError) => void,
): boolean {
  if (mode === "regex") {
    const t = pyNfd(text);
    return answers.some((a) => {
      try {
        return compilePyRegex(pyNfd(a)).search(t);
      } catch (e) {
        if (!(e instanceof PyRegexBudgetError) || onCutOff === undefined) throw e;
        onCutOff(e);
        return false;
      }
    });
  }
  const doc = words(text);
  for (const a of answers) {
    const ans = words(a);
    for (let i = 0; i + ans.length <= doc.length; i++) {
      let j = 0;
      while (j < ans.length && doc[i + j] === ans[j]) j++;
      if (j === ans.length) return true;
    }
  }
  return false;
}

/** Top-k accuracy at one k. */
export interface TopKAccuracy {
  /** The k. */
  readonly k: number;
  /** Questions with an answer in one of their first k passages (DPR's `top_k_hits[k-1]`). */
  readonly hits: number;
  /** `hits / questions`, as DPR computes it (its tables print it ×100). */
  readonly accuracy: number;
}

/** The k of DPR's tables. */
export const DPR_KS: readonly number[] = [1, 5, 20, 100];

/**
 * Top-k retrieval accuracy from per-question, per-rank answer hits (ranks in
 * order, as `has_answer` of each retrieved passage): DPR's `top_k_hits`, the
 * number of questions whose first passage with an answer is among the first
 * k, divided by the number of questions. A question with fewer than k
 * passages counts with those it has.
 *
 * @throws {NothingScoredError} when there is no question.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { topKAccuracy } from "./dpr.ts";
 * const hits = [[true], [false, false, true], [false]];
 * assert.deepEqual(topKAccuracy(hits, [1, 5]).map((r) => r.hits), [1, 2]);
 * ```
 */
export function topKAccuracy(
  hits: readonly (readonly boolean[])[],
  ks: readonly number[] = DPR_KS,
): TopKAccuracy[] {
  if (hits.length === 0) throw new NothingScoredError({ rules: "open-domain" });
  const first = hits.map((h) => h.indexOf(true));
  return ks.map((k) => {
    let n = 0;
    for (const f of first) if (f >= 0 && f < k) n++;
    return { k, hits: n, accuracy: n / hits.length };
  });
}
