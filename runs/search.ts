/**
 * `search`'s work as one Effect, {@linkcode scoredSearch}: the search stage
 * of `search/open/stage.ts`, then its scores with `metrics/` (which
 * `search/` may not import), then the search's record. A SQuAD-shaped set
 * (SQuAD, XQuAD, MLQA) gets per-question rows with the official v1.1 EM/F1
 * (and the top-k fields with top-k records: `metrics/open.ts`); any other
 * set the open metrics over the corpus ({@linkcode corpusSearchScores}, as
 * the `eval` task of a corpus run and `evaluate --topk-file --index`).
 * `pipeline/_search.ts` checks the flags and runs it.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Option from "effect/Option";
import * as Stream from "effect/Stream";
import type { DatasetFormat } from "../io/datasets/detect.ts";
import { isSquadShaped, readQuestions } from "../io/datasets/read.ts";
import { InputError, type UsageError } from "../io/errors.ts";
import { squadQuestions } from "../io/squad.ts";
import { type EvaluateError, scoreDataset } from "../metrics/evaluate.ts";
import type { BemEvaluateError } from "../metrics/bem/fold.ts";
import { openScores } from "../metrics/open.ts";
import { corpusSummary } from "../metrics/open_corpus.ts";
import {
  searchStage,
  type SearchStageOptions,
  type SearchStageResult,
  writeSearchRecord,
} from "../search/open/stage.ts";
import { corpusSearchScores, writeAtomic } from "./plan/tasks.ts";

/** A progress display of the search (`pipeline/_cli.ts` `progress`). */
export interface SearchProgress {
  /** Questions answered so far. */
  update(answered: number): void;
  /** The search is over. */
  done(): void;
}

/** Options of {@linkcode scoredSearch}. */
export interface ScoredSearchOptions {
  /** The stage's options; their `format` is ignored (see `format` and `namedFormat`). */
  readonly stage: SearchStageOptions;
  /** The format `stage.data` is read as (`searchFormat` of `search/open/stage.ts`). */
  readonly format: DatasetFormat;
  /** The format the user named (`--format`), passed to a SQuAD-shaped set's search as given. */
  readonly namedFormat?: string;
  /** The per-question rows to write, if any (the default path or `--rows`). */
  readonly rows?: string;
  /** Whether the user asked for the rows (`--rows`): a set without gold answers is then refused. */
  readonly rowsAsked: boolean;
  /** The language of an XQuAD/MLQA set. */
  readonly lang?: string;
  /** Paragraph ids with repeated titles renamed, as the encoders' `--unique-ids`. */
  readonly uniqueIds: boolean;
  /** When the command's work began (`performance.now()`), for the record's total seconds. */
  readonly started: number;
  /** A progress display of the search. */
  readonly progress?: SearchProgress;
  /** Where the lines for the user go (default: stderr). */
  readonly log?: (line: string) => void;
}

/** The stage with its progress, then its `search: N of M questions answered ...` line. */
const searched = (opts: SearchStageOptions, o: ScoredSearchOptions) =>
  Effect.gen(function* () {
    const bar = o.progress;
    const t = yield* searchStage(
      bar === undefined ? opts : { ...opts, onProgress: (n) => bar.update(n) },
    );
    bar?.done();
    say(o)(`search: ${t.answered} of ${t.questions} questions answered over ${t.phrases} phrases`);
    return t;
  });

const say = (o: ScoredSearchOptions) => o.log ?? ((line: string) => console.error(line));

/**
 * A question set that is not SQuAD-shaped: the search, then the open
 * metrics over the corpus printed as one `search: open: {...}` line and,
 * unless the predictions go to stdout, the per-question rows. A set without
 * gold answers is searched and not scored (a note says so; asked-for rows
 * are refused first).
 */
const corpusSearch = (o: ScoredSearchOptions) =>
  Effect.gen(function* () {
    const { rows, stage: { data, predictions: pred, topkOut, topK } } = o;
    const unanswered = yield* Stream.runHead(
      Stream.filter(
        readQuestions(data, { format: o.format, lang: o.lang, answers: "optional" }),
        (q) => q.answers.length === 0,
      ),
    );
    const noGolds = Option.isSome(unanswered)
      ? `question ${JSON.stringify(unanswered.value.id)} has no gold answers`
      : undefined;
    if (noGolds !== undefined && o.rowsAsked) {
      return yield* Effect.fail(
        new InputError({ file: data, where: "", message: `${noGolds}: --rows needs them` }),
      );
    }
    const opts = { ...o.stage, format: o.format };
    const t = yield* searched(opts, o);
    if (noGolds !== undefined) {
      say(o)(`search: no scores: ${data}: ${noGolds}`);
      return yield* writeSearchRecord({ ...opts, started: o.started }, t);
    }
    if (pred === "-") return;
    const s = yield* corpusSearchScores({
      data,
      format: o.format,
      ...(o.lang !== undefined ? { lang: o.lang } : {}),
      pred,
      ...(topkOut !== undefined ? { topk: topkOut, ranks: topK } : {}),
      index: o.stage.indexDir,
    });
    say(o)(`search: open: ${corpusSummary(s)}`);
    if (rows !== undefined) {
      yield* writeAtomic(rows, s.rows.map((row) => JSON.stringify(row) + "\n").join(""));
    }
    yield* writeSearchRecord({ ...opts, rows, started: o.started }, t);
  });

/**
 * A SQuAD-shaped set (SQuAD, XQuAD, MLQA): the search, then the
 * per-question rows with the official v1.1 EM/F1 and, with top-k records,
 * the top-k fields (`metrics/open.ts`). Rows need gold answers: without
 * them (a split's question.json) default rows are left out with a note,
 * asked-for ones are refused before any output.
 */
const squadSearch = (o: ScoredSearchOptions) =>
  Effect.gen(function* () {
    const { rows, stage: { data, predictions: pred, topkOut } } = o;
    const firstWithout = rows === undefined ? undefined : yield* Stream.runHead(
      Stream.filter(
        squadQuestions(data, { context: "optional" }),
        (q) => q.answers === undefined || q.answers.length === 0,
      ),
    );
    let rowsOut = rows;
    if (firstWithout !== undefined && Option.isSome(firstWithout)) {
      const why = `question "${firstWithout.value.id}" has no gold answers`;
      if (o.rowsAsked) {
        const message = `${why}: --rows needs them (SQuAD v1.1 scoring)`;
        return yield* Effect.fail(new InputError({ file: data, where: "", message }));
      }
      say(o)(`search: no per-question rows: ${data}: ${why}`);
      rowsOut = undefined;
    }
    const { format: _, ...stage } = o.stage;
    const opts: SearchStageOptions = {
      ...stage,
      uniqueIds: o.uniqueIds,
      ...(o.namedFormat !== undefined ? { format: o.namedFormat } : {}),
    };
    const t: SearchStageResult = yield* searched(opts, o);
    const how = { ...opts, started: o.started };
    if (rowsOut === undefined) return yield* writeSearchRecord(how, t);
    // The rows come from the one fold of metrics/ (as the eval task's).
    const open = topkOut === undefined ? undefined : yield* openScores({
      data,
      predictions: pred,
      topk: topkOut,
      uniqueIds: o.uniqueIds,
    });
    yield* scoreDataset({
      data,
      predictions: pred,
      perQuestion: rowsOut,
      ...(open !== undefined ? { rowExtra: (id: string) => open.rows.get(id) } : {}),
    });
    yield* writeSearchRecord({ ...how, rows: rowsOut }, t);
  });

/**
 * `search`'s work after its flags are checked: the search of `opts.stage`,
 * its scores as the set's format asks (rows of a SQuAD-shaped set, the open
 * metrics of a corpus search), and the search's record beside the
 * predictions. Each file is written atomically; the lines for the user go
 * to `opts.log`.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { scoredSearch } from "./search.ts";
 * const dir = Deno.makeTempDirSync();
 * const exit = await Effect.runPromiseExit(scoredSearch({
 *   stage: { indexDir: dir, data: `${dir}/d.json`, questionEmb: dir, predictions: "-", topK: 1 },
 *   format: "squad", rowsAsked: false, uniqueIds: false, started: performance.now(),
 * }));
 * Deno.removeSync(dir, { recursive: true });
 * if (exit._tag !== "Failure") throw new Error("a missing dataset is refused");
 * ```
 */
export const scoredSearch = (
  opts: ScoredSearchOptions,
): Effect.Effect<void, EvaluateError | BemEvaluateError | UsageError> =>
  isSquadShaped(opts.format) ? squadSearch(opts) : corpusSearch(opts);
