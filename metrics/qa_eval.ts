/**
 * `evaluate DATA PRED` for the question sets that are not SQuAD-shaped
 * (SQuAD v1.1/v2.0 keep `metrics/evaluate.ts`): each scored with the metric
 * its community reports, identical to that metric's official script.
 *
 * | format | rules | stdout line |
 * | --- | --- | --- |
 * | `mrqa` | `mrqa_official_eval.py` | `{"exact_match": ..., "f1": ...}` |
 * | `xquad`, `mlqa` | `mlqa_evaluation_v1.py` for the language | same |
 * | `dpr`, `trec`, `open`, `jsonl`, `csv`, `tsv` | open-domain top-1 | same |
 *
 * Open-domain sets are scored as DrQA and DensePhrases score a reader's
 * top-1 answer: the best EM/F1 over the gold answers (`open_answers.ts`);
 * CuratedTREC's answers are Python regular expressions, matched as DPR's
 * regex mode (EM only: `"f1"` is `null`). A prediction is
 * `{id: answer}` for every format; a question set without ids is numbered
 * from 0 in file order (`io/datasets/`). Questions without a prediction
 * score 0 and are named on stderr as the scripts name them (`Unanswered
 * question <id> will receive score 0.`). A pattern the regex engine cannot
 * run as Python does, a question without answers and an unknown MLQA
 * language are bad input naming the file and the question. A pattern whose
 * match is cut off (more than its step budget: catastrophic backtracking,
 * such as `(a+)+$` against forty `a`s and a `!`, on which Python's `re`
 * runs for ages) counts as not matched, and its question is named on
 * stderr, once.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { scoreQuestionSet } from "./qa_eval.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/nq.jsonl`,
 *   '{"question": "who wrote hamlet", "answer": ["Shakespeare", "William Shakespeare"]}\n' +
 *   '{"question": "capital of italy", "answer": ["Rome"]}\n');
 * await Deno.writeTextFile(`${dir}/pred.json`, '{"0": "William Shakespeare", "1": "Milan"}');
 * const r = await Effect.runPromise(
 *   scoreQuestionSet({ data: `${dir}/nq.jsonl`, predictions: `${dir}/pred.json` }),
 * );
 * if (r.stdout !== '{"exact_match": 50.0, "f1": 50.0}' || r.format !== "open") throw new Error(r.stdout);
 * await Deno.remove(dir, { recursive: true });
 * ```
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { type FileError, InputError, UsageError } from "../io/errors.ts";
import { pyFloatRepr } from "../io/pyjson.ts";
import { readPredictions } from "../io/predictions.ts";
import { readQuestions } from "../io/datasets/read.ts";
import { type DatasetFormat, formatSpec, hasSquadRules } from "../io/datasets/formats.ts";
import type { FieldMap, QaRecord } from "../io/datasets/types.ts";
import { mrqaEvaluate, mrqaScores, mrqaUnansweredMessage } from "./mrqa.ts";
import { mlqaEvaluate, mlqaScores } from "./mlqa.ts";
import { type OpenAnswerResult, openAnswerScores, openAnswerSteps } from "./open_answers.ts";
import { compilePyRegex, PyRegexError } from "./pyregex.ts";
import {
  cutOffTeller,
  NoAnswersError,
  NothingScoredError,
  UnknownLanguageError,
} from "./qa_errors.ts";

/** Options of {@linkcode scoreQuestionSet}. */
export interface QaEvalOptions {
  /** The question set (any `io/datasets/` question format; `.gz` too; `-` for stdin). */
  readonly data: string;
  /** `{id: answer}` JSON (`-` for stdin), or the answers read already. */
  readonly predictions: string | ReadonlyMap<string, string>;
  /** The format (a `--format` name); default: detected from the file. */
  readonly format?: string;
  /** The language of an XQuAD/MLQA file (default: from its name). */
  readonly lang?: string;
  /** The field map of a generic `jsonl`/`csv`/`tsv` file. */
  readonly fields?: FieldMap;
  /** Receives each stderr message as it is known (default: collected in `messages`). */
  readonly onMessage?: (line: string) => void;
}

/** What {@linkcode scoreQuestionSet} found. */
export interface QaEvalResult {
  /** The format the file was read as. */
  readonly format: DatasetFormat;
  /** The rules applied. */
  readonly rules: "MRQA" | "MLQA" | "open-domain";
  /** The line the official script prints (`{"exact_match": ..., "f1": ...}`). */
  readonly stdout: string;
  /** EM ×100. */
  readonly exact_match: number;
  /** F1 ×100 (`null` for regex answers, which have no F1). */
  readonly f1: number | null;
  /** Questions scored. */
  readonly questions: number;
  /** Questions without a prediction. */
  readonly unanswered: number;
  /** The stderr lines (empty when `onMessage` took them). */
  readonly messages: readonly string[];
}

/** How {@linkcode questionScore} scores a question: the rules and what they need. */
export interface QuestionScoreRules {
  /** The rules (`QaEvalResult.rules`). */
  readonly rules: QaEvalResult["rules"];
  /** Open-domain: the answers are Python regular expressions (EM only, no F1). */
  readonly regex?: boolean;
  /** MLQA: the language whose normalization applies. */
  readonly lang?: string;
}

/**
 * One question's EM (0 or 1) and F1 (0..1; `null` for regex answers) under
 * the rules of {@linkcode scoreQuestionSet}: the per-question scores its
 * totals sum (`mrqaScores`, `mlqaScores`, `openAnswerScores` top-1). A
 * question without a prediction scores 0; a question without answers
 * scores 0 too (the totals refuse it).
 *
 * @example
 * ```ts
 * import { questionScore } from "./qa_eval.ts";
 * const s = questionScore({ rules: "MRQA" }, ["Denver Broncos"], "Denver");
 * if (s.em !== 0 || Math.abs((s.f1 ?? 0) - 2 / 3) > 1e-15) throw new Error();
 * if (questionScore({ rules: "open-domain", regex: true }, ["19[0-9]{2}"], "1984").f1 !== null) {
 *   throw new Error();
 * }
 * ```
 */
export function questionScore(
  how: QuestionScoreRules,
  answers: readonly string[],
  prediction: string | undefined,
): { readonly em: number; readonly f1: number | null } {
  if (how.rules === "open-domain") {
    const regex = how.regex === true;
    const sc = openAnswerScores(prediction === undefined ? [] : [prediction], answers, {
      regex,
      k: 1,
    });
    return { em: sc?.emTop1 ?? 0, f1: regex ? null : sc?.f1Top1 ?? 0 };
  }
  if (prediction === undefined) return { em: 0, f1: 0 };
  const sc = how.rules === "MRQA"
    ? mrqaScores(prediction, answers)
    : mlqaScores(prediction, answers, how.lang ?? "");
  return { em: sc?.em ?? 0, f1: sc?.f1 ?? 0 };
}

/** Errors of {@linkcode scoreQuestionSet}: bad input (exit 2), files (exit 1), usage (exit 2). */
export type QaEvalError = InputError | FileError | UsageError;

const line = (em: number, f1: number | null): string =>
  `{"exact_match": ${pyFloatRepr(em)}, "f1": ${f1 === null ? "null" : pyFloatRepr(f1)}}`;

/**
 * Scores `predictions` on a question set with its format's official rules
 * (see the module notes). SQuAD files are refused here with a usage error
 * (`metrics/evaluate.ts` scores them).
 */
export const scoreQuestionSet = (
  opts: QaEvalOptions,
): Effect.Effect<QaEvalResult, QaEvalError> =>
  Effect.gen(function* () {
    let format: DatasetFormat | undefined;
    const records: QaRecord[] = [];
    yield* Stream.runForEach(
      readQuestions(opts.data, {
        format: opts.format,
        lang: opts.lang,
        fields: opts.fields,
        onFormat: (f: DatasetFormat) => format = f,
      }),
      (r) => Effect.sync(() => void records.push(r)),
    );
    // The reader settles the format before its first record; an empty file settles it too.
    const fmt = format ?? (opts.format as DatasetFormat | undefined);
    const spec = fmt === undefined ? undefined : formatSpec(fmt);
    if (fmt === undefined || hasSquadRules(fmt)) {
      return yield* Effect.fail(
        new UsageError(`${opts.data}: a SQuAD file is scored by the SQuAD rules, not these`),
      );
    }
    const preds = typeof opts.predictions === "string"
      ? yield* readPredictions(opts.predictions)
      : opts.predictions;
    const messages: string[] = [];
    const say = opts.onMessage ?? ((l: string) => void messages.push(l));
    const bad = (where: string, message: string) =>
      new InputError({ file: opts.data, where, message });
    const fail = (e: unknown): InputError => {
      if (e instanceof NoAnswersError) return bad(`question "${e.id}"`, e.message);
      if (e instanceof NothingScoredError) return bad("", e.message);
      if (e instanceof UnknownLanguageError) {
        return bad("", `${e.message}; score it with --format squad for SQuAD v1.1 rules`);
      }
      if (e instanceof PyRegexError) return bad("", e.message);
      return bad("", e instanceof Error ? e.message : String(e));
    };
    let unanswered = 0;
    if (spec?.rules === "MRQA") {
      const r = yield* Effect.try({
        try: () => mrqaEvaluate(records.map((q) => ({ qid: q.id, answers: q.answers })), preds),
        catch: fail,
      });
      for (const id of r.unanswered) say(mrqaUnansweredMessage(id));
      return {
        format: fmt,
        rules: "MRQA",
        stdout: line(r.exact_match, r.f1),
        exact_match: r.exact_match,
        f1: r.f1,
        questions: r.total,
        unanswered: r.unanswered.length,
        messages,
      };
    }
    if (spec?.rules === "MLQA") {
      const langs = new Set(records.map((q) => opts.lang ?? q.lang));
      if (langs.has(undefined) || langs.size > 1) {
        return yield* Effect.fail(
          new UsageError(
            `${opts.data}: give the language of this ${fmt} file with --lang ` +
              `(${langs.size > 1 ? "its questions name several" : "its name does not say it"})`,
          ),
        );
      }
      const lang = [...langs][0] ?? "";
      const r = yield* Effect.try({
        try: () =>
          mlqaEvaluate(records.map((q) => ({ id: q.id, answers: q.answers })), preds, lang),
        catch: fail,
      });
      for (const id of r.unanswered) say(`Unanswered question ${id} will receive score 0.`);
      return {
        format: fmt,
        rules: "MLQA",
        stdout: line(r.exact_match, r.f1),
        exact_match: r.exact_match,
        f1: r.f1,
        questions: r.total,
        unanswered: r.unanswered.length,
        messages,
      };
    }
    if (spec?.rules !== "open-domain") {
      return yield* Effect.fail(new UsageError(`${opts.data}: ${fmt} is not a question set`));
    }
    const regex = spec.regex === true || records.some((q) => q.regex === true);
    if (regex && records.some((q) => q.regex !== true)) {
      return yield* Effect.fail(
        bad("", "mixes regular-expression answers with plain ones; score them apart"),
      );
    }
    if (regex) {
      // Every pattern compiles before anything is scored: a refusal names its question.
      for (const q of records) {
        for (const p of q.answers) {
          yield* Effect.try({
            try: () => compilePyRegex(p),
            catch: (e) => bad(`question "${q.id}"`, e instanceof Error ? e.message : String(e)),
          });
        }
      }
    }
    const rows = records.map((q) => {
      const p = preds.get(q.id);
      if (p === undefined) {
        unanswered++;
        say(`Unanswered question ${q.id} will receive score 0.`);
      }
      return { id: q.id, candidates: p === undefined ? [] : [p], answers: q.answers };
    });
    const onCutOff = cutOffTeller(opts.data, say);
    // In steps: a regex set whose patterns are cut off takes a while, and signals are heard.
    const steps = openAnswerSteps(rows, { regex, k: 1, onCutOff });
    let last = performance.now();
    let r: OpenAnswerResult | undefined;
    while (r === undefined) {
      const step = yield* Effect.try({ try: () => steps.next(), catch: fail });
      if (step.done) r = step.value;
      else if (performance.now() - last >= 20) {
        yield* Effect.sleep(0);
        last = performance.now();
      }
    }
    return {
      format: fmt,
      rules: "open-domain",
      stdout: line(r.exact_match_top1, r.f1_score_top1),
      exact_match: r.exact_match_top1,
      f1: r.f1_score_top1,
      questions: r.total,
      unanswered,
      messages,
    };
  });
