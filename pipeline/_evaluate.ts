/**
 * The work of `evaluate` (`pipeline/evaluate.ts`, which loads this module
 * only to score: `--help` needs none of it): the format of the data, the
 * SQuAD scores (`metrics/evaluate.ts`), the other question sets
 * (`metrics/qa_eval.ts`), BEM (`metrics/bem/`) and the open metrics
 * (`metrics/open.ts`), each loaded only when its flags ask for it.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { FileError, InputError } from "../io/errors.ts";
import { statRegularFile } from "../io/regular.ts";
import { isParquetFolder } from "../io/datasets/parquet_path.ts";
import { type DatasetFormat, detectFormat, parseFormatName } from "../io/datasets/detect.ts";
import { formatSpec, hasSquadRules } from "../io/datasets/formats.ts";
import { parseFieldsFlag } from "../io/datasets/fields.ts";
import { writeTextFileAtomic } from "../io/fs.ts";
import { refuseAliases } from "../io/paths.ts";
import { resolvePredictions } from "../io/predictions_match.ts";
import { scoreDataset } from "../metrics/evaluate.ts";
import { UsageError } from "./_cli.ts";
import type { ParsedArgs } from "./_args.ts";
import type { EVALUATE_SPEC } from "./evaluate.ts";

const writeJsonAtomic = (path: string, value: unknown) =>
  writeTextFileAtomic(
    path,
    JSON.stringify(value) + "\n",
    (message) => new InputError({ file: path, where: "", message }),
  );

/**
 * The format `evaluate` scores `data` as: the one named by `--format`, else
 * the detected one; stdin, and a file whose format cannot be told, are read
 * as SQuAD (whose reader then names what is wrong with it).
 */
const datasetFormat = (
  data: string,
  named: string | undefined,
): Effect.Effect<DatasetFormat, UsageError | InputError | FileError> =>
  Effect.gen(function* () {
    if (named !== undefined) {
      const f = yield* Effect.try({
        try: () => parseFormatName(named),
        catch: (e) => e instanceof UsageError ? e : new UsageError(String(e)),
      });
      if (formatSpec(f)?.role !== "corpus") return f;
      return yield* Effect.fail(new UsageError(`--format ${named}: a corpus, not a question set`));
    }
    if (data === "-") return "squad";
    return yield* detectFormat(data).pipe(
      Effect.catchTag("InputError", (e) =>
        // Only a start that tells no format (or no start) is left to the SQuAD reader to name;
        // a file found broken while its start is read (a first line over the bound, corrupt
        // gzip, a bad Parquet row) fails as it is, whenever the break is met.
        e.message.startsWith("cannot tell the dataset format") || e.message === "empty file"
          ? Effect.succeed<DatasetFormat>("squad")
          : Effect.fail(e)),
    );
  });

/**
 * Lines for stderr, written 64 KiB at a time (`flush` writes the rest;
 * `drop` forgets the lines not written yet).
 */
function stderrLines(): { line(text: string): void; flush(): void; drop(): void } {
  const enc = new TextEncoder();
  let pending: string[] = [];
  let size = 0;
  const flush = () => {
    if (pending.length === 0) return;
    const bytes = enc.encode(pending.join("\n") + "\n");
    pending = [];
    size = 0;
    let off = 0;
    while (off < bytes.length) off += Deno.stderr.writeSync(bytes.subarray(off));
  };
  return {
    line(text) {
      pending.push(text);
      size += text.length + 1;
      if (size >= 1 << 16) flush();
    },
    flush,
    drop() {
      pending = [];
      size = 0;
    },
  };
}

/**
 * The scoring effect with its stderr notes (the official scripts' lines on
 * unanswered questions) written when it ends, except on bad input: that is
 * one line, so the notes not yet written are dropped.
 */
const keepNotesUnlessBad =
  (messages: ReturnType<typeof stderrLines>) =>
  <A, E, R>(score: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    score.pipe(
      Effect.tapError((e) => Effect.sync(() => e instanceof InputError && messages.drop())),
      Effect.ensuring(Effect.sync(messages.flush)),
    );

/** What `evaluate` does with its parsed command line (`runMain`'s program). */
export const evaluateCommand = (
  a: ParsedArgs<typeof EVALUATE_SPEC>,
): Effect.Effect<void, unknown> =>
  Effect.gen(function* () {
    const data = a.positional["data.json"], predictions = a.positional["pred.json"];
    if (data === "-" && predictions === "-") {
      return yield* new InputError({
        file: "-",
        where: "",
        message: "data.json and pred.json cannot both be stdin",
      });
    }
    const model = a.flags.bem;
    if (a.flags.disagreements !== undefined && model === undefined) {
      return yield* Effect.fail(new UsageError("--disagreements needs --bem"));
    }
    const topk = a.flags["topk-file"], openOut = a.flags["open-out"];
    const index = a.flags.index;
    if (openOut !== undefined && topk === undefined) {
      return yield* Effect.fail(new UsageError("--open-out needs --topk-file"));
    }
    if (index !== undefined && topk === undefined) {
      return yield* Effect.fail(new UsageError("--index needs --topk-file"));
    }
    if (topk !== undefined && data === "-") {
      return yield* Effect.fail(new UsageError("--topk-file needs data.json as a file"));
    }
    yield* refuseAliases(
      [
        { name: "data.json", path: data },
        { name: "pred.json", path: predictions },
        { name: "--topk-file", path: topk },
        { name: "--index", path: index, folder: true },
        { name: "--na-prob-file", path: a.flags["na-prob-file"] },
        { name: "--bem", path: model },
      ],
      [
        { name: "--per-question", path: a.flags["per-question"] },
        { name: "--disagreements", path: a.flags.disagreements },
        { name: "--open-out", path: openOut },
      ],
      "the scores",
    );
    // Every input file is a regular file, checked before anything is scored or printed (the data
    // may also be a folder of Parquet shards, read as one split).
    for (const f of [data, predictions, topk, a.flags["na-prob-file"]]) {
      if (f === undefined || f === "-" || (f === data && isParquetFolder(f))) continue;
      yield* Effect.try({
        try: () => void statRegularFile(f),
        catch: (e) =>
          e instanceof InputError || e instanceof FileError
            ? e
            : new FileError({ file: f, message: String(e) }),
      });
    }
    // Messages stream to stderr as they come (none is kept), 64 KiB at a time.
    const messages = stderrLines();
    const fields = a.flags.fields === undefined ? undefined : yield* Effect.try({
      try: () => parseFieldsFlag(a.flags.fields!),
      catch: (e) => e instanceof UsageError ? e : new UsageError(String(e)),
    });
    // Top-1 and top-k numbers of a search over a corpus, with DPR's top-k
    // passage accuracy over the passage texts the index holds.
    const corpusOpen = (topk: string, index: string, format: string) =>
      Effect.gen(function* () {
        const [{ corpusSummary }, { corpusSearchScores }] = yield* Effect.promise(() =>
          Promise.all([import("../metrics/open_corpus.ts"), import("../runs/plan/tasks.ts")])
        );
        const s = yield* corpusSearchScores({
          data,
          format,
          ...(a.flags.lang !== undefined ? { lang: a.flags.lang } : {}),
          ...(fields !== undefined ? { fields } : {}),
          pred: predictions,
          topk,
          index,
        });
        if (openOut === undefined) console.error(`open: ${corpusSummary(s)}`);
        else yield* writeJsonAtomic(openOut, JSON.parse(corpusSummary(s)));
      });
    const format = yield* datasetFormat(data, a.flags.format);
    // A harness's log (lm-eval samples, OpenCompass predictions) is matched to the set's questions.
    const resolved = yield* resolvePredictions({
      data,
      predictions,
      ...(a.flags["pred-format"] !== undefined ? { predFormat: a.flags["pred-format"] } : {}),
      format,
      ...(a.flags.lang !== undefined ? { lang: a.flags.lang } : {}),
      ...(fields !== undefined ? { fields } : {}),
    });
    if (resolved.format !== "ids" && (data === "-" || topk !== undefined)) {
      return yield* Effect.fail(
        new UsageError(
          `${predictions} is ${resolved.format}'s log: it needs data.json as a file, and no --topk-file`,
        ),
      );
    }
    const preds = resolved.predictions;
    if (!hasSquadRules(format)) {
      const squadOnly = [
        ["v2", a.flags.v2 ? true : undefined],
        ["na-prob-file", a.flags["na-prob-file"]],
        ["per-question", a.flags["per-question"]],
        ["bem", model],
      ].filter(([, v]) => v !== undefined).map(([n]) => `--${n}`);
      if (squadOnly.length > 0) {
        return yield* Effect.fail(
          new UsageError(`${squadOnly.join(", ")}: for SQuAD files; ${data} is ${format}`),
        );
      }
      if (topk !== undefined && index === undefined) {
        return yield* Effect.fail(
          new UsageError(
            `--topk-file on a ${format} set needs --index INDEX_DIR (the passage texts of ` +
              "DPR's top-k passage accuracy)",
          ),
        );
      }
      const { scoreQuestionSet } = yield* Effect.promise(() => import("../metrics/qa_eval.ts"));
      const q = yield* scoreQuestionSet({
        data,
        predictions: preds,
        format,
        lang: a.flags.lang,
        ...(fields !== undefined ? { fields } : {}),
        onMessage: messages.line,
      }).pipe(keepNotesUnlessBad(messages));
      console.log(q.stdout);
      if (topk !== undefined && index !== undefined) yield* corpusOpen(topk, index, format);
      return;
    }
    if (a.flags.lang !== undefined) {
      return yield* Effect.fail(
        new UsageError(`--lang: for xquad/mlqa files (--format xquad); ${data} is ${format}`),
      );
    }
    const r = yield* scoreDataset({
      data,
      predictions: preds,
      v2: a.flags.v2 || a.flags.format !== undefined && formatSpec(format)?.rules === "v2.0",
      naProbFile: a.flags["na-prob-file"],
      naProbThreshold: a.flags["na-prob-thresh"],
      perQuestion: a.flags["per-question"],
      bem: model === undefined ? undefined : { model, disagreements: a.flags.disagreements },
      onMessage: messages.line,
    }).pipe(keepNotesUnlessBad(messages));
    console.log(r.stdout);
    if (r.bem !== undefined) {
      // BEM's modules (ONNX Runtime) load only with --bem.
      const { formatBemSummary } = yield* Effect.promise(() => import("../metrics/bem/fold.ts"));
      console.log(formatBemSummary(r.bem));
    }
    if (topk !== undefined && index !== undefined) {
      // A search over a corpus: the question's own paragraph is not what was searched.
      yield* corpusOpen(topk, index, format);
    } else if (topk !== undefined) {
      const { openMetrics } = yield* Effect.promise(() => import("../metrics/open.ts"));
      const m = yield* openMetrics({ data, topk });
      if (openOut === undefined) console.error(`open: ${JSON.stringify(m)}`);
      else yield* writeJsonAtomic(openOut, m);
    }
  });
