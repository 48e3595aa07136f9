/**
 * `evaluate data.json pred.json`: the official SQuAD scores, streaming over
 * the dataset. SQuAD v1.1 rules by default (stdout is exactly the official
 * script's `{"exact_match": ..., "f1": ...}`); SQuAD v2.0 rules with `--v2`
 * or when the file's `version` says v2 (stdout as the official v2.0 script,
 * `json.dumps(..., indent=2)`). Messages the official scripts print
 * (`Unanswered question ...`, the version warning) go to stderr in the same
 * order, as they come (none is kept: `onMessage` of `evaluate`). With
 * `--bem FILE`, a second line: the BEM summary. The scoring is
 * `metrics/evaluate.ts`.
 *
 * Other question sets are detected from the file (or named with
 * `--format`) and scored with their official metric by
 * `metrics/qa_eval.ts`, loaded only then: MRQA (`mrqa_official_eval.py`),
 * XQuAD/MLQA (`mlqa_evaluation_v1.py`, `--lang`), and open-domain sets (DPR
 * CSV/TSV, CuratedTREC's regular expressions, NQ-open/TriviaQA JSONL: top-1
 * EM/F1, max over the answers). The first stdout line is always one JSON
 * object with `exact_match` and `f1`.
 *
 * @module
 */
import { Effect } from "effect";
import { FileError, InputError } from "../io/errors.ts";
import { type DatasetFormat, detectFormat, parseFormatName } from "../io/datasets/detect.ts";
import { refuseAliases } from "../io/paths.ts";
import { formatBemSummary } from "../metrics/bem/fold.ts";
import { scoreDataset } from "../metrics/evaluate.ts";
import { openMetrics } from "../metrics/open.ts";
import { runMain, UsageError } from "./_cli.ts";

const writeJsonAtomic = (path: string, value: unknown) =>
  Effect.tryPromise({
    try: () =>
      Deno.writeTextFile(`${path}.tmp`, JSON.stringify(value) + "\n").then(() =>
        Deno.rename(`${path}.tmp`, path)
      ),
    catch: (e) => new InputError({ file: path, where: "", message: String(e) }),
  });

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
      if (f !== "dpr-passages" && f !== "passages") return f;
      return yield* Effect.fail(new UsageError(`--format ${named}: a corpus, not a question set`));
    }
    if (data === "-") return "squad";
    return yield* detectFormat(data).pipe(
      Effect.catchTag("InputError", () => Effect.succeed<DatasetFormat>("squad")),
    );
  });

export { evaluate } from "../metrics/evaluate.ts";
export type {
  EvaluateError,
  EvaluateOptions,
  EvaluateResult,
  QuestionRow,
} from "../metrics/evaluate.ts";

/** Lines for stderr, written 64 KiB at a time (`flush` writes the rest). */
function stderrLines(): { line(text: string): void; flush(): void } {
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
  };
}

if (import.meta.main) {
  await runMain(
    {
      name: "evaluate",
      summary:
        "Score predictions with the official SQuAD rules: v1.1 (default; output identical to evaluate-v1.1.py) or v2.0 (--v2, or when the dataset's version is v2.x).",
      renamed: { "top-k": "topk-file" },
      examples: [
        "data/dev-v1.1.json.gz pred.json",
        "data/dev-v1.1.json.gz out/open/pred.json --topk-file out/open/topk.ndjson",
      ],
      args: [
        { name: "data.json", description: "SQuAD dataset (.json, .json.gz, or - for stdin)" },
        { name: "pred.json", description: "predictions: {question id: answer} (- for stdin)" },
      ],
      flags: [
        {
          name: "format",
          type: "string",
          metavar: "NAME",
          description:
            "the dataset's format (default: detected): squad, squad2, mrqa (mrqa_official_eval.py), xquad or mlqa (mlqa_evaluation_v1.py), dpr, trec, open (open-domain top-1 EM/F1; trec: regex answers)",
        },
        {
          name: "lang",
          type: "string",
          metavar: "CODE",
          description: "xquad/mlqa: the language (default: from the file name, e.g. xquad.de.json)",
        },
        { name: "v2", type: "boolean", description: "score with the SQuAD v2.0 rules" },
        {
          name: "na-prob-file",
          type: "string",
          metavar: "FILE",
          description: "v2.0: no-answer probabilities {question id: p}",
        },
        {
          name: "na-prob-thresh",
          type: "number",
          metavar: "P",
          default: 1.0,
          description: "v2.0: predict no-answer when p > P",
        },
        {
          name: "per-question",
          type: "string",
          metavar: "FILE",
          description: "write one NDJSON row per question (id, prediction, reference, em, f1)",
        },
        {
          name: "bem",
          type: "string",
          metavar: "FILE",
          description:
            "also score with BEM (ONNX model; v1.1 rules): prints a second JSON line, adds bem to --per-question rows",
        },
        {
          name: "topk-file",
          type: "string",
          metavar: "FILE",
          description:
            "also score search's top-k NDJSON: top-k EM/F1, gold-paragraph recall, MRR@k (metrics/open.ts), on stderr",
        },
        {
          name: "open-out",
          type: "string",
          metavar: "FILE",
          description: "with --topk-file: write the open metrics as JSON to FILE instead of stderr",
        },
        {
          name: "disagreements",
          type: "string",
          metavar: "FILE",
          description:
            "with --bem: write the questions with EM 0 and BEM > 0.5, or EM 1 and BEM <= 0.5",
        },
      ],
    },
    Deno.args,
    (a) =>
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
        if (openOut !== undefined && topk === undefined) {
          return yield* Effect.fail(new UsageError("--open-out needs --topk-file"));
        }
        if (topk !== undefined && data === "-") {
          return yield* Effect.fail(new UsageError("--topk-file needs data.json as a file"));
        }
        yield* refuseAliases(
          [
            { name: "data.json", path: data },
            { name: "pred.json", path: predictions },
            { name: "--topk-file", path: topk },
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
        // Messages stream to stderr as they come (none is kept), 64 KiB at a time.
        const messages = stderrLines();
        const format = yield* datasetFormat(data, a.flags.format);
        if (format !== "squad" && format !== "squad2") {
          const squadOnly = [
            ["v2", a.flags.v2 ? true : undefined],
            ["na-prob-file", a.flags["na-prob-file"]],
            ["per-question", a.flags["per-question"]],
            ["bem", model],
            ["topk-file", topk],
          ].filter(([, v]) => v !== undefined).map(([n]) => `--${n}`);
          if (squadOnly.length > 0) {
            return yield* Effect.fail(
              new UsageError(`${squadOnly.join(", ")}: for SQuAD files; ${data} is ${format}`),
            );
          }
          const { scoreQuestionSet } = yield* Effect.promise(() => import("../metrics/qa_eval.ts"));
          const q = yield* scoreQuestionSet({
            data,
            predictions,
            format,
            lang: a.flags.lang,
            onMessage: (l) => console.error(l),
          });
          console.log(q.stdout);
          return;
        }
        if (a.flags.lang !== undefined) {
          return yield* Effect.fail(
            new UsageError(`--lang: for xquad/mlqa files (--format xquad); ${data} is ${format}`),
          );
        }
        const r = yield* scoreDataset({
          data,
          predictions,
          v2: a.flags.v2 || a.flags.format !== undefined && format === "squad2",
          naProbFile: a.flags["na-prob-file"],
          naProbThreshold: a.flags["na-prob-thresh"],
          perQuestion: a.flags["per-question"],
          bem: model === undefined ? undefined : { model, disagreements: a.flags.disagreements },
          onMessage: messages.line,
        }).pipe(Effect.ensuring(Effect.sync(messages.flush)));
        console.log(r.stdout);
        if (r.bem !== undefined) console.log(formatBemSummary(r.bem));
        if (topk !== undefined) {
          const m = yield* openMetrics({ data, topk });
          if (openOut === undefined) console.error(`open: ${JSON.stringify(m)}`);
          else yield* writeJsonAtomic(openOut, m);
        }
      }),
  );
}
