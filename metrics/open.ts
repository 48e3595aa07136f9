/**
 * Open-domain metrics over top-k search results ({@linkcode openMetrics}):
 * what `evaluate DATA PRED.json --topk-file topk.ndjson` adds beside the
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
import { statRegularFile } from "../io/regular.ts";
import { readLinesStrict } from "../io/text.ts";
import { squadParagraphs, type SquadReadError } from "../io/squad.ts";
import { readPredictions } from "../io/predictions.ts";
import { NoGoldAnswersError, SquadV1Accumulator } from "./squad.ts";
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

/** One ranked phrase of a top-k file (what the open metrics read). */
export interface Candidate {
  /** 1-based rank. */
  readonly rank: number;
  /** Its paragraph id. */
  readonly paragraph: string;
  /** The phrase. */
  readonly phrase: string;
}

/** One question's top-k scores (see the module notes). */
export interface CandidateScores {
  /** Whether one of the k phrases EM-matches a gold answer. */
  readonly topkEm: boolean;
  /** The best F1 (0..1) of the k phrases. */
  readonly topkF1: number;
  /** The lowest rank whose paragraph is the question's own, or `null`. */
  readonly goldParagraphRank: number | null;
  /** The lowest rank whose phrase EM-matches a gold answer (MRR: its inverse), or `null`. */
  readonly answerRank: number | null;
}

/**
 * The top-k scores of one question: its candidates (ranks ascending), its
 * gold answers, its own paragraph id. The one per-question rule of both
 * {@linkcode openMetrics} and {@linkcode openScores}.
 *
 * @example
 * ```ts
 * import { scoreCandidates } from "./open.ts";
 * const s = scoreCandidates([
 *   { rank: 1, paragraph: "U_0", phrase: "big" },
 *   { rank: 2, paragraph: "T_0", phrase: "Paris" },
 * ], ["Paris"], "T_0");
 * if (!s.topkEm || s.topkF1 !== 1 || s.goldParagraphRank !== 2 || s.answerRank !== 2) {
 *   throw new Error(JSON.stringify(s));
 * }
 * ```
 */
export function scoreCandidates(
  cands: readonly Candidate[],
  golds: readonly string[],
  paragraph: string,
): CandidateScores {
  let topkEm = false, topkF1 = 0, answerRank: number | null = null;
  let goldParagraphRank: number | null = null;
  for (const c of cands) {
    const e = metricMaxOverGroundTruths(exactMatchScore, c.phrase, golds) ?? false;
    const f = metricMaxOverGroundTruths(f1Score, c.phrase, golds) ?? 0;
    if (e && answerRank === null) answerRank = c.rank;
    if (goldParagraphRank === null && c.paragraph === paragraph) goldParagraphRank = c.rank;
    topkEm ||= e;
    if (f > topkF1) topkF1 = f;
  }
  return { topkEm, topkF1, goldParagraphRank, answerRank };
}

/**
 * Top-k records taken a line at a time, by question id: each line checked
 * (a record `{"id", "rank", "paragraph", "phrase"}`, no rank twice for a
 * question), paragraph ids held once each; `done` sorts each question's
 * ranks ascending.
 */
class TopkCollector {
  readonly #out = new Map<string, Candidate[]>();
  readonly #paragraphs = new Map<string, string>();
  /** Each question's highest rank so far. */
  readonly #most = new Map<string, number>();

  /** @param file the file the lines are from, as errors name it */
  constructor(readonly file: string) {}

  /** Takes line `n` (from 1), its text without the newline. */
  line(n: number, line: string): void {
    if (line.trim() === "") return;
    const bad = (message: string) =>
      new InputError({ file: this.file, where: `line ${n}`, message });
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
    const rank = r.rank as number;
    const list = this.#out.get(r.id) ?? [];
    // A rank above every one before it (ranks in order, as search writes them) cannot repeat
    // one: only a rank at or below that is looked for among them.
    const most = this.#most.get(r.id) ?? 0;
    if (rank > most) this.#most.set(r.id, rank);
    else if (list.some((c) => c.rank === rank)) {
      throw bad(`question ${JSON.stringify(r.id)} has rank ${rank} twice`);
    }
    let paragraph = this.#paragraphs.get(r.paragraph);
    if (paragraph === undefined) this.#paragraphs.set(r.paragraph, paragraph = r.paragraph);
    list.push({ rank, paragraph, phrase: r.phrase });
    if (list.length === 1) this.#out.set(r.id, list);
  }

  /** The records by question id, each question's ranks ascending. */
  done(): Map<string, Candidate[]> {
    for (const list of this.#out.values()) list.sort((a, b) => a.rank - b.rank);
    return this.#out;
  }
}

/** Parses a top-k NDJSON text into records by question id, ranks ascending. */
export function parseTopk(text: string, file: string): Map<string, Candidate[]> {
  const c = new TopkCollector(file);
  const lines = text.split("\n");
  for (let n = 0; n < lines.length; n++) c.line(n + 1, lines[n]);
  return c.done();
}

/**
 * Reads and parses a top-k file (see {@linkcode parseTopk}) a chunk at a
 * time, as strict UTF-8 (`io/text.ts` `readLinesStrict`): a file of any size
 * (`search --top-k 1000` over all of dev writes over a gigabyte, more than
 * one JavaScript string holds) is read; a line longer than 16 MiB or a byte
 * that is not UTF-8 is bad input, naming its line.
 */
export const readTopk = (
  file: string,
): Effect.Effect<Map<string, Candidate[]>, InputError | FileError> =>
  Effect.try({
    try: () => {
      statRegularFile(file);
      const c = new TopkCollector(file);
      let n = 0;
      for (const line of readLinesStrict(file)) c.line(++n, line);
      return c.done();
    },
    catch: (e) =>
      e instanceof InputError || e instanceof FileError
        ? e
        : new FileError({ file, message: e instanceof Error ? e.message : String(e) }),
  });

/**
 * Scores a top-k file against a dataset (see the module notes).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
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
    const recs = yield* readTopk(opts.topk);
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
            const s = scoreCandidates(cands, (q.answers ?? []).map((a) => a.text), p.id);
            if (s.topkEm) em++;
            f1 += s.topkF1;
            if (s.goldParagraphRank !== null) hit++;
            if (s.answerRank !== null) mrr += 1 / s.answerRank;
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

/**
 * One question's open fields in the per-question rows (`runs/plan/layout.ts`):
 * the open (search) prediction with its official EM/F1, and the top-k
 * scores of {@linkcode scoreCandidates}.
 */
export interface OpenRow {
  /** The top-1 phrase of the open search (`null`: none). */
  readonly open_prediction: string | null;
  /** The paragraph of the top-1 phrase (`null`: none). */
  readonly open_paragraph: string | null;
  /** Official v1.1 exact match (0/1) of the open prediction. */
  readonly open_em: number;
  /** Official v1.1 F1 (0..1) of the open prediction. */
  readonly open_f1: number;
  /** Best-of-k exact match (0/1). */
  readonly topk_em: number;
  /** Best-of-k F1 (0..1). */
  readonly topk_f1: number;
  /** Lowest rank in the question's own paragraph, `null` when none of the k is. */
  readonly gold_paragraph_rank: number | null;
  /** Lowest rank whose phrase EM-matches a gold answer (MRR: `1/answer_rank`), or `null`. */
  readonly answer_rank: number | null;
}

/** What {@linkcode openScores} found: the open numbers and each question's {@linkcode OpenRow}. */
export interface OpenScores {
  /** Official v1.1 EM of the open predictions, ×100 (as `evaluate` prints it). */
  readonly exact_match: number;
  /** Official v1.1 F1 of the open predictions, ×100. */
  readonly f1: number;
  /** Questions with an open prediction. */
  readonly answered: number;
  /** The top-k metrics (as {@linkcode openMetrics} gives them). */
  readonly metrics: OpenMetrics;
  /** Each question's open fields, by question id. */
  readonly rows: ReadonlyMap<string, OpenRow>;
}

/**
 * The one fold over the dataset for an open search's outputs: the official
 * v1.1 EM/F1 of its top-1 predictions (equal to `evaluate DATA PRED`'s), the
 * top-k metrics (equal to {@linkcode openMetrics}'), and each question's
 * {@linkcode OpenRow}, from one pass (nothing is scored twice).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { openScores } from "./open.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.writeTextFileSync(`${dir}/d.json`, JSON.stringify({ version: "1.1", data: [{ title: "T",
 *   paragraphs: [{ context: "Paris is big.", qas: [{ id: "q1", question: "Where?",
 *   answers: [{ text: "Paris", answer_start: 0 }] }] }] }] }));
 * Deno.writeTextFileSync(`${dir}/p.json`, JSON.stringify({ q1: "big" }));
 * Deno.writeTextFileSync(`${dir}/t.ndjson`,
 *   '{"id":"q1","rank":1,"paragraph":"U_0","phrase":"big"}\n' +
 *   '{"id":"q1","rank":2,"paragraph":"T_0","phrase":"Paris"}\n');
 * const s = await Effect.runPromise(openScores({
 *   data: `${dir}/d.json`, predictions: `${dir}/p.json`, topk: `${dir}/t.ndjson`,
 * }));
 * const row = s.rows.get("q1")!;
 * if (s.exact_match !== 0 || s.metrics.mrr !== 0.5 || row.answer_rank !== 2 || row.open_paragraph !== "U_0") {
 *   throw new Error(JSON.stringify(s));
 * }
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export const openScores = (opts: {
  /** The SQuAD dataset (a file). */
  readonly data: string;
  /** The open search's top-1 predictions (`search`'s `pred.json`). */
  readonly predictions: string;
  /** Its top-k records (`search --topk-out`). */
  readonly topk: string;
  /** Paragraph ids with repeated titles renamed (`io/squad_ids.ts`), as the search ran. */
  readonly uniqueIds?: boolean;
}): Effect.Effect<OpenScores, SquadReadError | InputError | FileError> =>
  Effect.gen(function* () {
    const preds = yield* readPredictions(opts.predictions);
    const recs = yield* readTopk(opts.topk);
    let k = 0;
    for (const list of recs.values()) k = Math.max(k, list[list.length - 1].rank);
    const acc = new SquadV1Accumulator();
    const rows = new Map<string, OpenRow>();
    let withResults = 0, em = 0, f1 = 0, hit = 0, mrr = 0;
    yield* Stream.runForEach(
      squadParagraphs(opts.data, {
        context: "optional",
        ...(opts.uniqueIds ? { ids: "unique" as const } : {}),
      }),
      (p) =>
        Effect.try({
          try: () => {
            for (const q of p.questions) {
              const golds = (q.answers ?? []).map((a) => a.text);
              const pred = preds.get(q.id);
              const top1 = acc.add({ id: q.id, answers: golds }, pred);
              const cands = recs.get(q.id) ?? [];
              const s = scoreCandidates(cands, golds, p.id);
              if (cands.length > 0) withResults++;
              if (s.topkEm) em++;
              f1 += s.topkF1;
              if (s.goldParagraphRank !== null) hit++;
              if (s.answerRank !== null) mrr += 1 / s.answerRank;
              rows.set(q.id, {
                open_prediction: pred ?? null,
                open_paragraph: cands[0]?.rank === 1 ? cands[0].paragraph : null,
                open_em: top1.exactMatch ? 1 : 0,
                open_f1: top1.f1,
                topk_em: s.topkEm ? 1 : 0,
                topk_f1: s.topkF1,
                gold_paragraph_rank: s.goldParagraphRank,
                answer_rank: s.answerRank,
              });
            }
          },
          catch: (e) =>
            e instanceof NoGoldAnswersError
              ? new InputError({
                file: opts.data,
                where: `question "${e.id}"`,
                message: "has no gold answers, and SQuAD v1.1 scoring needs at least one",
              })
              : new InputError({ file: opts.data, where: "", message: String(e) }),
        }),
    );
    const questions = acc.total;
    if (questions === 0) {
      return yield* new InputError({ file: opts.data, where: "", message: "no questions" });
    }
    const share = (x: number) => (100 * x) / questions;
    const r = acc.result();
    return {
      exact_match: r.exact_match,
      f1: r.f1,
      answered: r.answered,
      metrics: {
        k,
        top_k_exact_match: share(em),
        top_k_f1: share(f1),
        paragraph_recall: share(hit),
        mrr: mrr / questions,
        questions,
        with_results: withResults,
      },
      rows,
    };
  });
