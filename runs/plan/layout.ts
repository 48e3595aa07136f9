/**
 * Where a run keeps its files: the layout of a run folder (datasets, dumps,
 * predictions, results, logs) and the folders it creates before its tasks
 * start.
 *
 * Per-question rows (one rule, for `run`, `full` and `report`): the `eval`
 * task writes them next to the prediction file it scores, in the same
 * scoring pass that makes the result file, one NDJSON line per question
 * (`id`, `prediction`, `reference`, `golds`, `em`, `f1`, and `bem` with
 * `bem_reference` when BEM is scored; `metrics/evaluate.ts`
 * `--per-question` rows). The file is the prediction file's name with
 * `.json` replaced by `.rows.ndjson` (`predictions/<model>/<dataset>.json`
 * → `predictions/<model>/<dataset>.rows.ndjson`), except in `full`'s flat
 * layout, where `pred.json`'s rows are `rows.ndjson` (`runs/single.ts`). When
 * the dataset has the `open` option, each row also carries the open
 * search's fields (`open_prediction`, `open_paragraph`, `open_em`,
 * `open_f1`, `topk_em`, `topk_f1`, `gold_paragraph_rank`, `answer_rank`;
 * `OpenRow` in `metrics/open.ts`), from the same pass.
 *
 * Open search (a dataset's `open` option): the `index` task writes the
 * phrase index `indexes/<model>/<dataset>/` (`index/` in `full`), the
 * `search` task `open/<model>/<dataset>.json` and
 * `open/<model>/<dataset>.topk.ndjson` (`open/pred.json` and
 * `open/topk.ndjson` in `full`). A sharded index (`open.shards` N):
 * `indexes/<model>/<dataset>/shard-i-of-N/` (and `quantizer/` for IVF-PQ),
 * each shard's hits `hits/<model>/<dataset>/shard-i-of-N.hits.ndjson`,
 * merged into the same `open/` files.
 *
 * @module
 */
import type { ResolvedDataset } from "../config/config.ts";
import type { Plan, Stage } from "./task.ts";

/**
 * The question-only file a `prepare` task writes for a question set that is
 * not SQuAD's (`io/datasets/split.ts` `writeQuestionsOnly`: NDJSON question
 * records, ids and texts, no answer), in the dataset's folder.
 */
export const QUESTIONS_ONLY_FILE = "question.ndjson";

/**
 * The passages-only file a `prepare` task writes for a dataset's corpus
 * (`io/datasets/split.ts` `writePassagesOnly`: a JSONL corpus,
 * ids, titles and texts, no question, no answer), in the dataset's folder.
 */
export const PASSAGES_FILE = "passages.jsonl";

/** The folders and files of a run folder. */
export interface RunLayout {
  /** The run folder. */
  readonly runDir: string;
  /** A dataset's folder (what its `prepare` task writes). */
  datasetDir(d: string): string;
  /** The SQuAD file a dataset's later tasks read. */
  data(ds: ResolvedDataset): string;
  /** The context file of the split. */
  contextFile(d: string): string;
  /** The question file of the split. */
  questionFile(d: string): string;
  /**
   * The question-only file of a set that is not SQuAD's ({@linkcode QUESTIONS_ONLY_FILE}:
   * ids and question texts, what its question encoder reads).
   */
  questionsOnly(d: string): string;
  /**
   * The passages-only file of a dataset's corpus ({@linkcode PASSAGES_FILE}: ids, titles,
   * texts, what its context encoder reads).
   */
  passages(d: string): string;
  /** A model's context dump folder for a dataset. */
  contextEmb(m: string, d: string): string;
  /** A model's question dump folder for a dataset. */
  questionEmb(m: string, d: string): string;
  /** A model's prediction file for a dataset. */
  prediction(m: string, d: string): string;
  /** A model's result file for a dataset. */
  result(m: string, d: string): string;
  /** A model's per-question rows for a dataset, next to its prediction file (see the module notes). */
  rows(m: string, d: string): string;
  /** A task's log file. */
  log(stage: Stage, m: string | null, d: string, part: number | null): string;
  /** A model's phrase index of a dataset (`index` task; the dataset's `open` option). */
  index(m: string, d: string): string;
  /** A model's open-search top-1 predictions for a dataset (`search` task). */
  openPrediction(m: string, d: string): string;
  /** A model's open-search top-k records for a dataset, next to its open predictions. */
  topk(m: string, d: string): string;
  /** A sharded open search's per-shard hits files (`search` tasks; `search_merge` reads them). */
  shardHits(m: string, d: string): string;
}

/**
 * The layout of the run folder `runDir`.
 *
 * @example
 * ```ts
 * import { runLayout } from "./layout.ts";
 * const L = runLayout("/w/r");
 * if (L.prediction("m", "d") !== "/w/r/predictions/m/d.json") throw new Error();
 * if (L.rows("m", "d") !== "/w/r/predictions/m/d.rows.ndjson") throw new Error();
 * if (L.log("encode_context", "m", "d", 2) !== "/w/r/logs/encode_context/m/d.2.log") throw new Error();
 * if (L.index("m", "d") !== "/w/r/indexes/m/d" || L.topk("m", "d") !== "/w/r/open/m/d.topk.ndjson") {
 *   throw new Error();
 * }
 * ```
 */
export function runLayout(runDir: string): RunLayout {
  return {
    runDir,
    datasetDir: (d) => `${runDir}/datasets/${d}`,
    data: (ds) => ds.articles ? `${runDir}/datasets/${ds.abbr}/data.json` : ds.path,
    contextFile: (d) => `${runDir}/datasets/${d}/context.json`,
    questionFile: (d) => `${runDir}/datasets/${d}/question.json`,
    questionsOnly: (d) => `${runDir}/datasets/${d}/${QUESTIONS_ONLY_FILE}`,
    passages: (d) => `${runDir}/datasets/${d}/${PASSAGES_FILE}`,
    contextEmb: (m, d) => `${runDir}/dumps/${m}/${d}/context_emb`,
    questionEmb: (m, d) => `${runDir}/dumps/${m}/${d}/question_emb`,
    prediction: (m, d) => `${runDir}/predictions/${m}/${d}.json`,
    result: (m, d) => `${runDir}/results/${m}/${d}.json`,
    rows: (m, d) => `${runDir}/predictions/${m}/${d}.rows.ndjson`,
    index: (m, d) => `${runDir}/indexes/${m}/${d}`,
    openPrediction: (m, d) => `${runDir}/open/${m}/${d}.json`,
    topk: (m, d) => `${runDir}/open/${m}/${d}.topk.ndjson`,
    shardHits: (m, d) => `${runDir}/hits/${m}/${d}`,
    log: (stage, m, d, part) =>
      `${runDir}/logs/${stage}/${m === null ? "" : `${m}/`}${d}${
        part === null ? "" : `.${part}`
      }.log`,
  };
}

/** The folders of a run's tasks, created before they start (logs and outputs of every task, inside the run folder). */
export function runFolders(plan: Plan, layout: RunLayout = runLayout(plan.runDir)): string[] {
  const L = layout;
  const dirs = new Set<string>();
  for (const t of plan.tasks) {
    dirs.add(t.log.slice(0, t.log.lastIndexOf("/")));
    if (t.stage === "prepare") dirs.add(L.datasetDir(t.dataset));
    if (t.check.kind !== "files") dirs.add(t.check.dir);
    else for (const f of t.check.files) dirs.add(f.slice(0, f.lastIndexOf("/")));
  }
  return [...dirs].filter((d) => d.startsWith(plan.runDir + "/"));
}
