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
 * object with `exact_match` and `f1`. On those, `--topk-file topk.ndjson
 * --index INDEX_DIR` adds the open metrics of an open search over a corpus
 * (`metrics/open_corpus.ts`: top-k EM/F1, MRR and DPR's top-k passage
 * accuracy over the index's passage texts) on stderr, or as JSON with
 * `--open-out`.
 *
 * @module
 */
import { type CommandSpec, exitOnHelpOrUsageError } from "./_args.ts";

export type {
  EvaluateError,
  EvaluateOptions,
  EvaluateResult,
  QuestionRow,
} from "../metrics/evaluate.ts";

/** The command line of `evaluate` (its flags, and `--help`'s text). */
export const EVALUATE_SPEC = {
  name: "evaluate",
  summary:
    "Score predictions with the official SQuAD rules: v1.1 (default; output identical to evaluate-v1.1.py) or v2.0 (--v2, or when the dataset's version is v2.x).",
  renamed: { "top-k": "topk-file" },
  examples: [
    "data/dev-v1.1.json.gz pred.json",
    "data/dev-v1.1.json.gz out/open/pred.json --topk-file out/open/topk.ndjson",
    "nq-test.qa.csv pred.json --topk-file topk.ndjson --index out/index --open-out open.json",
  ],
  args: [
    { name: "data.json", description: "SQuAD dataset (.json, .json.gz, or - for stdin)" },
    {
      name: "pred.json",
      description:
        "predictions: {question id: answer} (- for stdin), an lm-evaluation-harness samples_<task>_<date>.jsonl, or an OpenCompass predictions/<model>/<dataset>.json",
    },
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
    {
      name: "fields",
      type: "string",
      metavar: "MAP",
      description:
        "a generic jsonl/csv/tsv set's field map: key=field pairs (question=q,answers=gold,id=qid) or a JSON object; keys id, question, answers, context, paragraphId, title, lang, noAnswer",
    },
    {
      name: "pred-format",
      type: "string",
      metavar: "NAME",
      description:
        "pred.json's format (default: told from its content): ids ({id: answer}), lm-eval (the answer is filtered_resps[0], matched by the doc's id, else doc_id), opencompass (matched by position); every match is checked",
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
      name: "index",
      type: "string",
      metavar: "DIR",
      description:
        "with --topk-file: the index of a search over a corpus (any question set, SQuAD too), whose passage texts give DPR's top-k passage accuracy (metrics/open_corpus.ts)",
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
} as const satisfies CommandSpec;

if (import.meta.main) {
  // `--help` and bad usage load nothing else; the scoring's modules load only to score
  // (pipeline/_evaluate.ts).
  exitOnHelpOrUsageError(EVALUATE_SPEC, Deno.args);
  // Two files and no option: the plain v1.1 case needs no Effect runtime
  // (pipeline/_evaluate_whole.ts); it declines anything else.
  if (Deno.args.length === 2 && !Deno.args.some((a) => a.startsWith("-"))) {
    const { evaluateWhole } = await import("./_evaluate_whole.ts");
    if (evaluateWhole(Deno.args[0], Deno.args[1])) Deno.exit(0);
  }
  const [{ runMain }, { evaluateCommand }] = await Promise.all([
    import("./_cli.ts"),
    import("./_evaluate.ts"),
  ]);
  await runMain(EVALUATE_SPEC, Deno.args, evaluateCommand);
}
