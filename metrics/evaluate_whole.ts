/**
 * `evaluate`'s plain case without the Effect runtime: a SQuAD v1.1 file and
 * a prediction file, scored with the official v1.1 rules, read by the same
 * streaming decoder as `./evaluate.ts` (`io/json_events.ts`: memory bounded
 * by the largest article; articles go whole to the native `JSON.parse`) and
 * checked by the same article checks (`io/squad_checks.ts`), folded by the
 * same fold (`./squad_rules.ts`). It loads a dozen small modules where the
 * full path loads Effect's runtime, streams and schemas, which cost more
 * than scoring SQuAD dev.
 *
 * It answers only when the answer is certain to be the full path's: a file
 * the detector calls `squad`, whose `version` is `"1.1"` (or absent), every
 * article valid, every answered question with a gold answer, at least one
 * question, and predictions the native parse takes as they are. Anything
 * else (a gzip file, a v2.0 file, bad JSON, an invalid record, ...) gives
 * `undefined`, and the caller runs the full path, which gives the same
 * scores or names the problem.
 *
 * @module
 */
import {
  formatOfJsonHead,
  HEAD_BYTES,
  headText,
  MAX_ARTICLE_BYTES,
  MAX_LINE_BYTES,
} from "../io/datasets/detect_json.ts";
import { isValidArticle } from "../io/squad_checks.ts";
import { JsonEventDecoder } from "../io/json_events.ts";
import { FAST_PARSE_BYTES, parseWhole } from "../io/predictions_whole.ts";
import type { PyJson } from "../io/pyjson.ts";
import { formatV1, SquadV1Fold, unansweredMessage } from "./squad_rules.ts";

/** What the official v1.1 script prints for a file. */
export interface WholeResult {
  /** Its stdout line (no newline): `{"exact_match": ..., "f1": ...}`. */
  readonly stdout: string;
  /** Its stderr lines, in order (`Unanswered question ... will receive score 0.`). */
  readonly messages: readonly string[];
}

const ARTICLE_PARTS = { context: "optional", qas: "required" } as const;

/**
 * Scores the dataset whose bytes come in `chunks` (named `name`, for the
 * detector's name rules) against the prediction file's bytes `predictions`,
 * or `undefined` when the full path must (see the module doc). The first
 * chunk must hold the file's first {@linkcode HEAD_BYTES} bytes, or all of
 * a smaller file.
 *
 * @example
 * ```ts
 * import { evaluateWholeV1 } from "./evaluate_whole.ts";
 * const enc = new TextEncoder();
 * const data = enc.encode(JSON.stringify({ data: [{ title: "t", paragraphs: [{ context: "c", qas: [
 *   { id: "q1", question: "?", answers: [{ text: "Denver Broncos", answer_start: 0 }] },
 *   { id: "q2", question: "?", answers: [{ text: "x", answer_start: 0 }] },
 * ] }] }], version: "1.1" }));
 * const r = evaluateWholeV1([data], "dev.json", enc.encode('{"q1": "the Denver Broncos"}'));
 * if (r?.stdout !== '{"exact_match": 50.0, "f1": 50.0}') throw new Error(r?.stdout);
 * if (r.messages[0] !== "Unanswered question q2 will receive score 0.") throw new Error();
 * // A v2.0 file is not the plain case.
 * const v2 = enc.encode('{"version": "v2.0", "data": []}');
 * if (evaluateWholeV1([v2], "dev-v2.0.json", enc.encode("{}")) !== undefined) throw new Error();
 * ```
 */
export function evaluateWholeV1(
  chunks: Iterable<Uint8Array>,
  name: string,
  predictions: Uint8Array,
): WholeResult | undefined {
  if (predictions.byteLength > FAST_PARSE_BYTES) return undefined;
  const preds = parseWhole([predictions], predictions.byteLength);
  if (preds === undefined) return undefined;
  const fold = new SquadV1Fold();
  const messages: string[] = [];
  // The readers' string bound: a longer string is the full path's to name.
  const decoder = new JsonEventDecoder("data", {
    maxStringBytes: MAX_LINE_BYTES,
    maxItemBytes: MAX_ARTICLE_BYTES,
  });
  let first = true, sawData = false, version: PyJson | undefined;
  const take = (value: PyJson): boolean => {
    if (!isValidArticle(value, ARTICLE_PARTS)) return false;
    for (const p of (value as { paragraphs: { qas: unknown[] }[] }).paragraphs) {
      for (const q of p.qas as { id: string; answers?: { text: string }[] }[]) {
        const answers = q.answers === undefined ? [] : q.answers.map((a) => a.text);
        const pred = preds.get(q.id);
        if (pred !== undefined && answers.length === 0) return false;
        if (!fold.add({ id: q.id, answers }, pred).answered) {
          messages.push(unansweredMessage(q.id));
        }
      }
    }
    return true;
  };
  try {
    for (const chunk of chunks) {
      if (first) {
        first = false;
        // gzip, or not what the detector calls SQuAD v1.1 (XQuAD, MLQA, v2.0, MRQA, ...).
        if (chunk.byteLength >= 2 && chunk[0] === 0x1f && chunk[1] === 0x8b) return undefined;
        const head = headText(new TextDecoder().decode(chunk.subarray(0, HEAD_BYTES)));
        if (!head.startsWith("{") || formatOfJsonHead(head, name) !== "squad") return undefined;
      }
      for (const e of decoder.push(chunk)) {
        if (e.kind === "array-start") sawData = true;
        else if (e.kind === "field" && e.key === "version") version = e.value;
        else if (e.kind === "item" && !take(e.value)) return undefined;
      }
    }
    if (first) return undefined;
    for (const e of decoder.end()) {
      if (e.kind === "field" && e.key === "version") version = e.value;
      else if (e.kind === "item" && !take(e.value)) return undefined;
    }
  } catch {
    // Bad JSON, bad UTF-8, a repeated key, too deep: the full path names it.
    return undefined;
  }
  if (!sawData || (version !== undefined && version !== "1.1") || fold.total === 0) {
    return undefined;
  }
  return { stdout: formatV1(fold.result()), messages };
}
