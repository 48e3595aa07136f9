/**
 * Open-domain metrics over top-k search results ({@linkcode openMetrics}):
 * what `evaluate DATA PRED.json --top-k topk.ndjson` adds beside the
 * official top-1 EM/F1.
 *
 * The top-k file is NDJSON as `search --topk-out` writes it: one record per
 * question and rank, `{"id", "rank", "paragraph", "phrase", ...}`. Over
 * every question of the dataset (a question without records counts 0):
 *
 * - `top_k_exact_match`, `top_k_f1`: the best EM (F1) over the question's k
 *   phrases, each the official v1.1 score against the gold answers, ×100;
 * - `paragraph_recall`: the share (×100) of questions whose own paragraph
 *   (`title_index`, as the dump ids) is the paragraph of one of its k phrases;
 * - `mrr`: mean reciprocal rank at k, `1/rank` of the first phrase (lowest
 *   rank) whose text EM-matches a gold answer, 0 when none does (a value in
 *   [0, 1]);
 * - `k`: the largest rank in the file; `questions`: the dataset's questions;
 *   `with_results`: those with at least one record.
 *
 * The top-k file is read whole (its records, grouped by question id).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { FileError, InputError } from "../io/errors.ts";
import { squadParagraphs, type SquadReadError } from "../io/squad.ts";
import { exactMatchScore, f1Score, metricMaxOverGroundTruths } from "./squad_scores.ts";

/** The open metrics (see the module notes). */
export interface OpenMetrics {
  /** The largest rank in the top-k file. */
  readonly k: number;
  /** Best-of-k EM, ×100. */
  readonly top_k_exact_match: number;
  /** Best-of-k F1, ×100. */
  readonly top_k_f1: number;
  /** Questions whose gold paragraph is among the top k, ×100. */
  readonly paragraph_recall: number;
  /** Mean reciprocal rank of the first EM-matching phrase, in [0, 1]. */
  readonly mrr: number;
  /** Questions in the dataset. */
  readonly questions: number;
  /** Questions with at least one record. */
  readonly with_results: number;
}

interface Candidate {
  readonly rank: number;
  readonly paragraph: string;
  readonly phrase: string;
}

/** Parses a top-k NDJSON text into records by question id, ranks ascending. */
export function parseTopk(text: string, file: string): Map<string, Candidate[]> {
  const out = new Map<string, Candidate[]>();
  const lines = text.split("\n");
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n];
    if (line.trim() === "") continue;
    const bad = (message: string) => new InputError({ file, where: `line ${n + 1}`, message });
    let r: Record<string, unknown>;
    try {
      r = JSON.parse(line);
    } catch (e) {
      throw bad(`invalid JSON (${e instanceof Error ? e.message : String(e)})`);
    }
    if (
      typeof r !== "object" || r === null || typeof r.id !== "string" ||
      !Number.isSafeInteger(r.rank) || (r.rank as number) < 1 ||
      typeof r.paragraph !== "string" || typeof r.phrase !== "string"
    ) throw bad('not a top-k record {"id", "rank" (1, 2, ...), "paragraph", "phrase"}');
    const list = out.get(r.id) ?? [];
    if (list.some((c) => c.rank === r.rank)) {
      throw bad(`question ${JSON.stringify(r.id)} has rank ${r.rank} twice`);
    }
    list.push({ rank: r.rank as number, paragraph: r.paragraph, phrase: r.phrase });
    out.set(r.id, list);
  }
  for (const list of out.values()) list.sort((a, b) => a.rank - b.rank);
  return out;
}

/**
 * Scores a top-k file against a dataset (see the module notes).
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { openMetrics } from "./open.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.writeTextFileSync(`${dir}/d.json`, JSON.stringify({ version: "1.1", data: [{ title: "T",
 *   paragraphs: [{ context: "Paris is big.", qas: [{ id: "q1", question: "Where?",
 *   answers: [{ text: "Paris", answer_start: 0 }] }] }] }] }));
 * Deno.writeTextFileSync(`${dir}/t.ndjson`,
 *   '{"id":"q1","rank":1,"paragraph":"U_0","phrase":"big"}\n' +
 *   '{"id":"q1","rank":2,"paragraph":"T_0","phrase":"Paris"}\n');
 * const m = await Effect.runPromise(openMetrics({ data: `${dir}/d.json`, topk: `${dir}/t.ndjson` }));
 * if (m.top_k_exact_match !== 100 || m.mrr !== 0.5 || m.paragraph_recall !== 100) {
 *   throw new Error(JSON.stringify(m));
 * }
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export const openMetrics = (
  opts: { readonly data: string; readonly topk: string },
): Effect.Effect<OpenMetrics, SquadReadError | InputError | FileError> =>
  Effect.gen(function* () {
    const text = yield* Effect.tryPromise({
      try: () => Deno.readTextFile(opts.topk),
      catch: (e) =>
        new FileError({ file: opts.topk, message: e instanceof Error ? e.message : String(e) }),
    });
    const recs = yield* Effect.try({
      try: () => parseTopk(text, opts.topk),
      catch: (e) =>
        e instanceof InputError
          ? e
          : new InputError({ file: opts.topk, where: "", message: String(e) }),
    });
    let k = 0;
    for (const list of recs.values()) k = Math.max(k, list[list.length - 1].rank);
    let questions = 0, withResults = 0, em = 0, f1 = 0, hit = 0, mrr = 0;
    yield* Stream.runForEach(
      squadParagraphs(opts.data, { context: "optional" }),
      (p) =>
        Effect.sync(() => {
          for (const q of p.questions) {
            questions++;
            const cands = recs.get(q.id);
            if (cands === undefined || cands.length === 0) continue;
            withResults++;
            const golds = (q.answers ?? []).map((a) => a.text);
            let bestEm = false, bestF1 = 0, first = 0;
            for (const c of cands) {
              const e = metricMaxOverGroundTruths(exactMatchScore, c.phrase, golds) ?? false;
              const f = metricMaxOverGroundTruths(f1Score, c.phrase, golds) ?? 0;
              if (e && first === 0) first = c.rank;
              bestEm ||= e;
              if (f > bestF1) bestF1 = f;
            }
            if (bestEm) em++;
            f1 += bestF1;
            if (cands.some((c) => c.paragraph === p.id)) hit++;
            if (first > 0) mrr += 1 / first;
          }
        }),
    );
    const share = (x: number) => questions === 0 ? 0 : (100 * x) / questions;
    return {
      k,
      top_k_exact_match: share(em),
      top_k_f1: share(f1),
      paragraph_recall: share(hit),
      mrr: questions === 0 ? 0 : mrr / questions,
      questions,
      with_results: withResults,
    };
  });
