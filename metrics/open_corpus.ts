/**
 * The scores of an open search over a corpus ({@linkcode corpusOpenScores}):
 * `search` on a question set that is not SQuAD-shaped (DPR's CSV/TSV,
 * CuratedTREC, NQ-open, MRQA, ...), and `evaluate --topk-file --index` on
 * one. Nothing here is a second scorer: answers are scored by
 * `open_answers.ts`, passages by DPR's `has_answer` (`dpr.ts`).
 *
 * - **Top-1 EM/F1** of the predictions: the best over the gold answers
 *   (`openAnswerEvaluate` with k = 1: DrQA/DensePhrases, equal to what
 *   `evaluate DATA PRED` prints for an open-domain set); CuratedTREC's
 *   answers are Python regular expressions matched as DPR's regex mode (EM
 *   only: F1 `null`).
 * - With the top-k records (`search --topk-out`): **top-k EM/F1** (the best
 *   over the question's ranked phrases), **MRR** (1 / the first rank whose
 *   phrase EM-matches, 0 when none does) and DPR-style **top-k passage
 *   accuracy**: a question's passages are the distinct paragraphs of its
 *   ranked phrases, in rank order; accuracy@k (k in {@linkcode DPR_KS} up to
 *   the number of ranks asked) is the share ×100 of questions for which one
 *   of the first k passages has an answer (`dprHasAnswer` over the passage
 *   text, string mode, or regex mode for regex answers).
 *
 * **Fewer than k passages.** The search ranks phrases, not passages: the K
 * best phrases of a question may come from fewer than K (even one) distinct
 * passages, so a question may have fewer than k passages at accuracy@k. The
 * passages it lacks count as misses (DPR's fold with the passages it has);
 * `short` says, per k, how many questions had fewer than k.
 *
 * A question without gold answers, a pattern the regex engine cannot run as
 * Python does, plain answers mixed with regex ones, and a ranked paragraph
 * whose text the index does not hold are bad input (one line naming the
 * file and the question or paragraph).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { type FileError, InputError, type UsageError } from "../io/errors.ts";
import { readPredictions } from "../io/predictions.ts";
import { readQuestions } from "../io/datasets/read.ts";
import type { DatasetFormat } from "../io/datasets/detect.ts";
import type { FieldMap, QaRecord } from "../io/datasets/types.ts";
import { DPR_KS, dprHasAnswer, topKAccuracy } from "./dpr.ts";
import { openAnswerEvaluate, openAnswerScores } from "./open_answers.ts";
import { type Candidate, readTopk } from "./open.ts";
import { compilePyRegex } from "./pyregex.ts";
import { cutOffTeller } from "./qa_errors.ts";
import { NoAnswersError } from "./qa_errors.ts";

/** Options of {@linkcode corpusOpenScores}. */
export interface CorpusOpenOptions {
  /** The question set (any `io/datasets/` question format; `.gz` too). */
  readonly data: string;
  /** Its format, a `--format` name (default: detected). */
  readonly format?: string;
  /** The language of an XQuAD/MLQA set. */
  readonly lang?: string;
  /** The field map of a generic `jsonl`/`csv`/`tsv` set. */
  readonly fields?: FieldMap;
  /** The top-1 predictions, `{id: answer}` (`search`'s `pred.json`). */
  readonly predictions: string;
  /** The top-k records (`search --topk-out`), for the top-k numbers. */
  readonly topk?: string;
  /**
   * The text of each paragraph (passage) id, as the index holds it
   * (`paragraphs.ndjson`; `search/index/read.ts` `readIndexPassages`):
   * needed with `topk`. `where` names it in errors.
   */
  readonly passages?: { readonly text: ReadonlyMap<string, string>; readonly where: string };
  /**
   * Ranks asked per question (`search --top-k`): accuracy@k is reported for
   * the k of {@linkcode DPR_KS} up to it (default: the largest rank in the
   * top-k file).
   */
  readonly ranks?: number;
  /**
   * Told, once per question, a regex match cut off (more than its step
   * budget; counted as not matched): one line naming the file, the question
   * and the pattern. Default: written to stderr.
   */
  readonly onMessage?: (line: string) => void;
}

/** One question's fields in the per-question rows. */
export interface CorpusOpenRow {
  /** The question id. */
  readonly id: string;
  /** The top-1 prediction (`null`: none). */
  readonly prediction: string | null;
  /** The gold answers (patterns in regex mode). */
  readonly golds: readonly string[];
  /** Top-1 EM (0/1). */
  readonly em: number;
  /** Top-1 F1 (0..1), `null` in regex mode. */
  readonly f1: number | null;
  /** Best-of-k EM (0/1), with top-k records. */
  readonly topk_em?: number;
  /** Best-of-k F1 (0..1), with top-k records (`null` in regex mode). */
  readonly topk_f1?: number | null;
  /** Lowest rank whose phrase EM-matches, or `null`. */
  readonly answer_rank?: number | null;
  /** 1-based position, among the question's distinct passages, of the first with an answer. */
  readonly passage_rank?: number | null;
  /** How many distinct passages the question's ranked phrases came from. */
  readonly passages?: number;
}

/** The top-k numbers of {@linkcode CorpusOpenScores}. */
export interface CorpusTopK {
  /** The largest rank in the top-k file. */
  readonly k: number;
  /** Best-of-k EM, ×100. */
  readonly top_k_exact_match: number;
  /** Best-of-k F1, ×100 (`null` in regex mode). */
  readonly top_k_f1: number | null;
  /** Mean reciprocal rank of the first EM-matching phrase, in [0, 1]. */
  readonly mrr: number;
  /** Questions with at least one record. */
  readonly with_results: number;
  /** DPR top-k passage accuracy ×100, by k (`"1"`, `"5"`, `"20"`, `"100"`, up to the ranks). */
  readonly top_k_accuracy: Readonly<Record<string, number>>;
  /** Per k: questions whose ranked phrases came from fewer than k distinct passages. */
  readonly short: Readonly<Record<string, number>>;
}

/** What {@linkcode corpusOpenScores} found. */
export interface CorpusOpenScores {
  /** The rules. */
  readonly rules: "open-domain";
  /** The format the question set was read as. */
  readonly format: DatasetFormat;
  /** Top-1 EM ×100. */
  readonly exact_match: number;
  /** Top-1 F1 ×100 (`null` for regex answers). */
  readonly f1: number | null;
  /** Questions scored. */
  readonly questions: number;
  /** Questions with a prediction. */
  readonly answered: number;
  /** The top-k numbers, with top-k records. */
  readonly topk?: CorpusTopK;
  /** Each question's row, in file order. */
  readonly rows: readonly CorpusOpenRow[];
}

/** Errors of {@linkcode corpusOpenScores}. */
export type CorpusOpenError = InputError | FileError | UsageError;

/**
 * The k of DPR's tables that are at most `ranks`.
 *
 * @example
 * ```ts
 * import { accuracyKs } from "./open_corpus.ts";
 * if (accuracyKs(10).join() !== "1,5" || accuracyKs(100).join() !== "1,5,20,100") throw new Error();
 * ```
 */
export function accuracyKs(ranks: number): number[] {
  return DPR_KS.filter((k) => k <= ranks);
}

/**
 * The distinct paragraphs of ranked candidates, in rank order.
 *
 * @example
 * ```ts
 * import { distinctPassages } from "./open_corpus.ts";
 * const c = (rank: number, paragraph: string) => ({ rank, paragraph, phrase: "x" });
 * const got = distinctPassages([c(1, "b"), c(2, "a"), c(3, "b"), c(4, "c")]);
 * if (got.join() !== "b,a,c") throw new Error(got.join());
 * ```
 */
export function distinctPassages(cands: readonly Candidate[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const c of cands) {
    if (!seen.has(c.paragraph)) {
      seen.add(c.paragraph);
      out.push(c.paragraph);
    }
  }
  return out;
}

/**
 * Scores an open search over a corpus (see the module notes).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { corpusOpenScores } from "./open_corpus.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.writeTextFileSync(`${dir}/nq.qa.csv`,
 *   "who built the bridge\t['Ada']\nwhere is zürich\t['Switzerland']\n");
 * Deno.writeTextFileSync(`${dir}/pred.json`, '{"0": "Ada", "1": "Lake"}');
 * Deno.writeTextFileSync(`${dir}/topk.ndjson`,
 *   '{"id":"0","rank":1,"paragraph":"p1","phrase":"Ada"}\n' +
 *   '{"id":"1","rank":1,"paragraph":"p1","phrase":"Lake"}\n' +
 *   '{"id":"1","rank":2,"paragraph":"p2","phrase":"Switzerland"}\n');
 * const text = new Map([["p1", "Ada built the bridge."], ["p2", "Zürich is in Switzerland."]]);
 * const s = await Effect.runPromise(corpusOpenScores({
 *   data: `${dir}/nq.qa.csv`, predictions: `${dir}/pred.json`, topk: `${dir}/topk.ndjson`,
 *   passages: { text, where: "index" }, ranks: 5,
 * }));
 * Deno.removeSync(dir, { recursive: true });
 * if (s.exact_match !== 50 || s.topk?.top_k_accuracy["1"] !== 50) throw new Error(JSON.stringify(s));
 * if (s.topk.top_k_accuracy["5"] !== 100 || s.topk.short["5"] !== 2) throw new Error();
 * ```
 */
export const corpusOpenScores = (
  opts: CorpusOpenOptions,
): Effect.Effect<CorpusOpenScores, CorpusOpenError> =>
  Effect.gen(function* () {
    let format: DatasetFormat | undefined;
    const qs: QaRecord[] = [];
    yield* Stream.runForEach(
      readQuestions(opts.data, {
        format: opts.format,
        lang: opts.lang,
        fields: opts.fields,
        answers: "optional",
        onFormat: (f: DatasetFormat) => format = f,
      }),
      (q) => Effect.sync(() => void qs.push(q)),
    );
    const bad = (where: string, message: string) =>
      new InputError({ file: opts.data, where, message });
    if (qs.length === 0) return yield* Effect.fail(bad("", "no questions"));
    const regex = qs.some((q) => q.regex === true);
    if (regex && qs.some((q) => q.regex !== true)) {
      return yield* Effect.fail(
        bad("", "mixes regular-expression answers with plain ones; score them apart"),
      );
    }
    for (const q of qs) {
      const where = `question ${JSON.stringify(q.id)}`;
      if (q.answers.length === 0) {
        return yield* Effect.fail(bad(where, "has no gold answers (the open metrics need one)"));
      }
      if (!regex) continue;
      for (const p of q.answers) {
        yield* Effect.try({
          try: () => compilePyRegex(p),
          catch: (e) => bad(where, e instanceof Error ? e.message : String(e)),
        });
      }
    }
    const preds = yield* readPredictions(opts.predictions);
    const cutOff = cutOffTeller(opts.data, opts.onMessage ?? ((l) => console.error(l)));
    const recs = opts.topk === undefined ? undefined : yield* readTopk(opts.topk);
    const scored = yield* Effect.try({
      try: () =>
        openAnswerEvaluate(
          qs.map((q) => {
            const p = preds.get(q.id);
            return { id: q.id, candidates: p === undefined ? [] : [p], answers: q.answers };
          }),
          { regex, k: 1, onCutOff: cutOff },
        ),
      catch: (e) =>
        e instanceof NoAnswersError
          ? bad(`question ${JSON.stringify(e.id)}`, e.message)
          : bad("", e instanceof Error ? e.message : String(e)),
    });
    const rows: CorpusOpenRow[] = [];
    let answered = 0;
    const top1 = (q: QaRecord, p: string | undefined) => {
      const s = openAnswerScores(p === undefined ? [] : [p], q.answers, {
        regex,
        k: 1,
        onCutOff: (e) => cutOff(e, q.id),
      })!;
      return { em: s.emTop1, f1: s.f1Top1 ?? null };
    };
    if (recs === undefined) {
      for (const q of qs) {
        const p = preds.get(q.id);
        if (p !== undefined) answered++;
        rows.push({ id: q.id, prediction: p ?? null, golds: q.answers, ...top1(q, p) });
      }
      return {
        rules: "open-domain" as const,
        format: format ?? (opts.format as DatasetFormat),
        exact_match: scored.exact_match_top1,
        f1: scored.f1_score_top1,
        questions: scored.total,
        answered,
        rows,
      };
    }
    const texts = opts.passages;
    if (texts === undefined) {
      return yield* Effect.fail(
        new InputError({
          file: opts.topk!,
          where: "",
          message: "top-k passage accuracy needs the passages' texts (the index)",
        }),
      );
    }
    let k = 0;
    for (const list of recs.values()) k = Math.max(k, list[list.length - 1].rank);
    const ks = accuracyKs(opts.ranks ?? k);
    const hits: boolean[][] = [];
    const short = ks.map(() => 0);
    let withResults = 0, mrr = 0;
    const topkRows: { id: string; candidates: string[]; answers: readonly string[] }[] = [];
    let last = performance.now();
    for (const q of qs) {
      if (performance.now() - last >= 20) {
        yield* Effect.sleep(0); // a turn of the event loop: signals are heard while a long set is scored
        last = performance.now();
      }
      const cands = recs.get(q.id) ?? [];
      if (cands.length > 0) withResults++;
      const mode = regex ? "regex" : "string";
      const passages = distinctPassages(cands);
      const h = yield* Effect.try({
        try: () =>
          passages.map((pid) => {
            const text = texts.text.get(pid);
            if (text === undefined) {
              throw new InputError({
                file: texts.where,
                where: `paragraph ${JSON.stringify(pid)}`,
                message: `has no text, and top-k passage accuracy needs it (ranked for question ${
                  JSON.stringify(q.id)
                })`,
              });
            }
            return dprHasAnswer(q.answers, text, mode, (e) => cutOff(e, q.id));
          }),
        catch: (e) =>
          e instanceof InputError
            ? e
            : bad(`question ${JSON.stringify(q.id)}`, e instanceof Error ? e.message : String(e)),
      });
      hits.push(h);
      ks.forEach((kk, i) => {
        if (passages.length < kk) short[i]++;
      });
      let answerRank: number | null = null;
      for (const c of cands) {
        const one = openAnswerScores([c.phrase], q.answers, {
          regex,
          k: 1,
          onCutOff: (e) => cutOff(e, q.id),
        });
        if (one!.emTop1 === 1) {
          answerRank = c.rank;
          break;
        }
      }
      if (answerRank !== null) mrr += 1 / answerRank;
      const phrases = cands.map((c) => c.phrase);
      topkRows.push({ id: q.id, candidates: phrases, answers: q.answers });
      const s = openAnswerScores(phrases, q.answers, {
        regex,
        onCutOff: (e) => cutOff(e, q.id),
      })!;
      const p = preds.get(q.id);
      if (p !== undefined) answered++;
      const first = h.indexOf(true);
      rows.push({
        id: q.id,
        prediction: p ?? null,
        golds: q.answers,
        ...top1(q, p),
        topk_em: s.emTopK,
        topk_f1: s.f1TopK ?? null,
        answer_rank: answerRank,
        passage_rank: first < 0 ? null : first + 1,
        passages: passages.length,
      });
    }
    const topk = openAnswerEvaluate(topkRows, { regex, onCutOff: cutOff });
    const acc = ks.length === 0 ? [] : topKAccuracy(hits, ks);
    return {
      rules: "open-domain" as const,
      format: format ?? (opts.format as DatasetFormat),
      exact_match: scored.exact_match_top1,
      f1: scored.f1_score_top1,
      questions: scored.total,
      answered,
      topk: {
        k,
        top_k_exact_match: topk.exact_match_topk,
        top_k_f1: topk.f1_score_topk,
        mrr: mrr / qs.length,
        with_results: withResults,
        top_k_accuracy: Object.fromEntries(
          acc.map((a) => [String(a.k), (100 * a.hits) / qs.length]),
        ),
        short: Object.fromEntries(ks.map((kk, i) => [String(kk), short[i]])),
      },
      rows,
    };
  });

/**
 * The summary of {@linkcode CorpusOpenScores} as JSON (what `search`
 * prints after `open: ` and `evaluate --open-out` writes): every number,
 * without the rows.
 *
 * @example
 * ```ts
 * import { corpusSummary } from "./open_corpus.ts";
 * const s = corpusSummary({
 *   rules: "open-domain", format: "dpr", exact_match: 50, f1: 60, questions: 2, answered: 2,
 *   rows: [],
 * });
 * if (s !== '{"rules":"open-domain","format":"dpr","exact_match":50,"f1":60,"questions":2,"answered":2}') {
 *   throw new Error(s);
 * }
 * ```
 */
export function corpusSummary(s: CorpusOpenScores): string {
  const { rows: _rows, topk, ...top1 } = s;
  return JSON.stringify({ ...top1, ...(topk !== undefined ? topk : {}) });
}
