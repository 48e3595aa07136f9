/**
 * One planner per stage of a run (`plan.ts` `planRun` calls them in run
 * order): each turns a (model, dataset) pair, or a dataset, into its
 * tasks: a command line from `runs/sandbox/sandbox.ts` (its grants, the
 * stage script and its arguments), a log, the files that tell it is
 * complete and the tasks it waits for. The arguments of the tasks that are
 * no stage of their own (`prepare`, `eval`, `search-shard`, `search-merge`)
 * are written by their contract's `toArgv` (`task_args.ts`).
 *
 * @module
 */
import { REPO_ROOT } from "../../io/repo.ts";
import { type ResolvedDataset, type ResolvedRunConfig, SQUAD_KINDS } from "../config/config.ts";
import type { RunLayout } from "./layout.ts";
import { partitions } from "./partition.ts";
import type { StageScript } from "./scripts.ts";
import { encoderGrants, type Grants, indexGrants, searchGrants } from "../sandbox/sandbox.ts";
import { INDEX_HEADER } from "../../search/index/format.ts";
import { QUANTIZER_MANIFEST } from "../../search/index/ivfpq/quantizer.ts";
import { QUANTIZER_FOLDER, shardFolderName, shardHitsFile } from "../../search/index/shards.ts";
import type { DatasetScan, Stage, Task } from "./task.ts";
import {
  EVAL_ARGS,
  PREPARE_ARGS,
  SEARCH_MERGE_ARGS,
  SEARCH_SHARD_ARGS,
  type SearchShardArgs,
} from "./task_args.ts";
import type { CorpusEvalOptions, EvalOptions } from "./tasks.ts";

/** What every stage's planner is given. */
export interface PlanContext {
  /** The run's config. */
  readonly config: ResolvedRunConfig;
  /** Where the files go. */
  readonly L: RunLayout;
  /** A task's command line: its grants, the stage script, the script's arguments. */
  readonly denoRun: (grants: Grants, script: StageScript, args: readonly string[]) => string[];
  /** Whether any model of the run encodes (is no predictions model). */
  readonly encoders: boolean;
  /** Items per encode task. */
  readonly size: number;
  /** BEM: the ONNX Runtime addon its process may load. */
  readonly bemFfi?: string;
  /** Encoders: the ONNX Runtime addon every encoder process must be allowed to load. */
  readonly ortFfi?: string;
}

/** A model of the run that encodes. */
type Model = ResolvedRunConfig["models"][number];

/** The folder of file `f`. */
const folderOf = (f: string) => f.slice(0, f.lastIndexOf("/"));

/** Whether `ds` is SQuAD-shaped (v1.1 or v2.0). */
const isSquad = (ds: ResolvedDataset) => SQUAD_KINDS.includes(ds.type);

/** `--unique-ids` when the dataset renames repeated titles. */
const unique = (ds: ResolvedDataset) => ds.uniqueIds ? ["--unique-ids"] : [];

/**
 * How a task is told a question set that is not SQuAD's: its format (when
 * the config names or detected one), its language, and its field map.
 */
const questionSet = (ds: ResolvedDataset) => {
  const other = !isSquad(ds);
  return {
    format: other ? ds.format : undefined,
    lang: other ? ds.lang : undefined,
    fields: ds.fields,
  };
};

/** The fields every task of (`model`, `ds`) shares. */
const taskOf = (stage: Stage, id: string, model: string | null, ds: ResolvedDataset) => ({
  id,
  stage,
  model,
  dataset: ds.abbr,
  part: null,
  range: null,
  gres: null,
});

/**
 * The one file an encoder of `ds` reads (what its prepare task writes):
 * the context encoder the split's context file, or with a corpus the
 * corpus's passages-only file; the question encoder the split's question
 * file, or for a set that is not SQuAD its question-only file.
 *
 * @example
 * ```ts
 * import { runLayout } from "./layout.ts";
 * import { encoderInput } from "./stages.ts";
 * const L = runLayout("/w/r");
 * const nq = { abbr: "nq", type: "open", path: "/d/nq.qa.csv", corpus: "/d/psgs.tsv",
 *   articles: null, metrics: ["em"], bem: null } as const;
 * if (encoderInput(L, nq, "context") !== "/w/r/datasets/nq/passages.jsonl") throw new Error();
 * if (encoderInput(L, nq, "question") !== "/w/r/datasets/nq/question.ndjson") throw new Error();
 * ```
 */
export function encoderInput(
  L: RunLayout,
  ds: ResolvedDataset,
  half: "context" | "question",
): string {
  if (half === "context") {
    return ds.corpus !== undefined ? L.passages(ds.abbr) : L.contextFile(ds.abbr);
  }
  return isSquad(ds) ? L.questionFile(ds.abbr) : L.questionsOnly(ds.abbr);
}

/**
 * Whether `ds` has a `prepare` task: every dataset an encoder reads does
 * (encoders read only what it wrote), and a SQuAD set with an article
 * range that predictions models read.
 */
export const hasPrepare = (ctx: PlanContext, ds: ResolvedDataset): boolean =>
  isSquad(ds) ? ctx.encoders || ds.articles !== null : ctx.encoders;

/** The id of `ds`'s prepare task. */
export const prepareId = (ds: ResolvedDataset): string => `prepare/${ds.abbr}`;

/**
 * `prepare`: take the dataset's articles, then the split (a SQuAD set
 * encoders read), the article subset alone (predictions models only), or a
 * set's question-only file; with a corpus its passages-only file too.
 */
export function planPrepare(ctx: PlanContext, ds: ResolvedDataset, scan: DatasetScan): Task {
  const { L } = ctx;
  const dir = L.datasetDir(ds.abbr);
  const squad = isSquad(ds);
  const corpus = ctx.encoders ? ds.corpus : undefined;
  const outs = squad
    ? ctx.encoders ? [L.contextFile(ds.abbr), L.questionFile(ds.abbr)] : []
    : [L.questionsOnly(ds.abbr)];
  if (squad && ds.articles) outs.unshift(L.data(ds));
  if (corpus !== undefined) outs.push(L.passages(ds.abbr));
  return {
    ...taskOf("prepare", prepareId(ds), null, ds),
    range: ds.articles,
    items: squad ? scan.articles : scan.questionIds.length,
    unit: squad ? "articles" : "questions",
    argv: ctx.denoRun(
      {
        read: [...new Set([ds.path, ...(corpus !== undefined ? [corpus] : []), dir])],
        write: [dir],
      },
      "task",
      PREPARE_ARGS.toArgv({
        data: ds.path,
        out: dir,
        ...(ds.articles ? { articles: ds.articles } : {}),
        uniqueIds: ds.uniqueIds === true,
        subsetOnly: ctx.encoders || !squad ? false : true,
        ...(squad ? {} : { questionsOnly: questionSet(ds) }),
        ...(corpus !== undefined ? { corpus } : {}),
      }),
    ),
    log: L.log("prepare", null, ds.abbr, null),
    watch: [dir],
    check: { kind: "files", files: outs },
    deps: [],
  };
}

/**
 * `encode_context` and `encode_question`: each half's items in partitions
 * of at most `ctx.size`, one task each (`--range A:B`), reading only what
 * the prepare task wrote ({@linkcode encoderInput}).
 */
export function planEncode(
  ctx: PlanContext,
  m: Model,
  ds: ResolvedDataset,
  scan: DatasetScan,
): Task[] {
  const { L } = ctx;
  const gres = m.device === "cuda" ? "gpu:1" : null;
  const common = [
    `--encoder=${m.encoder}`,
    ...(m.model !== null ? [`--model=${m.model}`] : []),
    ...(m.sparse ? ["--sparse"] : []),
    ...(m.dtype !== null ? [`--dtype=${m.dtype}`] : []),
    ...(m.device !== "cpu" ? [`--device=${m.device}`] : []),
    ...(m.threads !== null ? [`--threads=${m.threads}`] : []),
  ];
  const tasks: Task[] = [];
  for (const half of ["context", "question"] as const) {
    const stage: Stage = half === "context" ? "encode_context" : "encode_question";
    const ids = half === "context" ? scan.paragraphIds : scan.questionIds;
    const input = encoderInput(L, ds, half);
    const out = half === "context" ? L.contextEmb(m.abbr, ds.abbr) : L.questionEmb(m.abbr, ds.abbr);
    const files = half === "context" ? m.contextFiles : m.questionFiles;
    const batch = half === "context" ? m.batch.context : m.batch.question;
    const parts = partitions(ids.length, ctx.size);
    for (const [pi, [a, b]] of parts.entries()) {
      tasks.push({
        ...taskOf(stage, `${stage}/${m.abbr}/${ds.abbr}/${pi}`, m.abbr, ds),
        part: { index: pi, count: parts.length },
        range: [a, b],
        items: b - a,
        unit: half === "context" ? "paragraphs" : "questions",
        argv: ctx.denoRun(
          {
            ...encoderGrants({ input, out, files }),
            flags: [
              ...m.permissions,
              ...(ctx.ortFfi && !m.permissions.some((p) => p.startsWith("--allow-ffi"))
                ? [`--allow-ffi=${ctx.ortFfi}`]
                : []),
            ],
          },
          half === "context" ? "embedContext" : "embedQuestion",
          [
            input,
            out,
            ...common,
            ...(batch !== null ? [`--batch=${batch}`] : []),
            `--range=${a}:${b}`,
            ...(half === "context" && ds.corpus !== undefined ? [] : unique(ds)),
          ],
        ),
        log: L.log(stage, m.abbr, ds.abbr, pi),
        watch: [out],
        check: { kind: half, dir: out, ids: ids.slice(a, b) },
        deps: hasPrepare(ctx, ds) ? [prepareId(ds)] : [],
        gres,
      });
    }
  }
  return tasks;
}

/** `merge`: PIQA's merge of the two dumps into the closed predictions. */
export function planMerge(
  ctx: PlanContext,
  m: Model,
  ds: ResolvedDataset,
  scan: DatasetScan,
  encodeIds: readonly string[],
): Task {
  const { L } = ctx;
  const data = L.data(ds);
  const pred = L.prediction(m.abbr, ds.abbr);
  const predDir = folderOf(pred);
  const cEmb = L.contextEmb(m.abbr, ds.abbr);
  const qEmb = L.questionEmb(m.abbr, ds.abbr);
  return {
    ...taskOf("merge", `merge/${m.abbr}/${ds.abbr}`, m.abbr, ds),
    items: scan.questionIds.length,
    unit: "questions",
    argv: ctx.denoRun(
      { read: [data, cEmb, qEmb, predDir], write: [predDir] },
      "merge",
      [data, cEmb, qEmb, pred, ...(m.sparse ? ["--sparse"] : []), ...unique(ds)],
    ),
    log: L.log("merge", m.abbr, ds.abbr, null),
    watch: [predDir],
    check: { kind: "files", files: [pred] },
    deps: [prepareId(ds), ...encodeIds],
  };
}

/** A dataset's open search as the planners of its stages see it. */
export interface OpenPlan {
  /** Ranks kept per question. */
  readonly topK: number;
  /** Shards of the index, if sharded. */
  readonly shards?: number;
  /** An IVF-PQ index's settings (none: exact). */
  readonly ivf?: NonNullable<ResolvedDataset["open"]>["ivf"];
}

/** The ids of the tasks a search waits for. */
interface OpenDeps {
  /** The prepare task, if any. */
  readonly prep: readonly string[];
  /** The context encoder's tasks. */
  readonly contextIds: readonly string[];
  /** The question encoder's tasks. */
  readonly questionIds: readonly string[];
}

/** What the index of (`m`, `ds`) is built from and where its flags come from. */
function indexInputs(ctx: PlanContext, m: Model, ds: ResolvedDataset, open: OpenPlan) {
  const { L } = ctx;
  const ivf = open.ivf;
  return {
    cEmb: L.contextEmb(m.abbr, ds.abbr),
    context: ds.corpus ?? L.contextFile(ds.abbr),
    index: L.index(m.abbr, ds.abbr),
    sparseFlag: m.sparse ? ["--sparse"] : [],
    ivfFlags: ivf === undefined ? [] : [
      `--nlist=${ivf.nlist}`,
      `--bpv=${ivf.bpv}`,
      ...(ivf.trainParagraphs !== undefined ? [`--train-paragraphs=${ivf.trainParagraphs}`] : []),
      ...(ivf.denseDims !== undefined ? [`--dense-dims=${ivf.denseDims}`] : []),
      ...(ivf.pqBits === 4 ? ["--pq-bits=4"] : []),
    ],
  };
}

/**
 * How the search of (`m`, `ds`) probes an IVF-PQ index (`--nprobe`,
 * `--probe-tau`, `--candidates`); `probeTau` only when the config sets it.
 */
const probeOf = (open: OpenPlan) => ({
  nprobe: open.ivf?.nprobe,
  ...(open.ivf?.probeTau !== undefined ? { probeTau: open.ivf.probeTau } : {}),
  candidates: open.ivf?.candidates,
});

/** `index`: an index of the context dump in one folder (exact, or IVF-PQ). */
export function planIndex(
  ctx: PlanContext,
  m: Model,
  ds: ResolvedDataset,
  scan: DatasetScan,
  open: OpenPlan,
  deps: OpenDeps,
): Task {
  const { cEmb, context, index, sparseFlag, ivfFlags } = indexInputs(ctx, m, ds, open);
  return {
    ...taskOf("index", `index/${m.abbr}/${ds.abbr}`, m.abbr, ds),
    items: scan.paragraphIds.length,
    unit: "paragraphs",
    argv: ctx.denoRun(
      indexGrants({ contextEmb: cEmb, context, index }),
      "index",
      [cEmb, index, ...sparseFlag, `--context=${context}`, "--overwrite", ...ivfFlags],
    ),
    log: ctx.L.log("index", m.abbr, ds.abbr, null),
    watch: [folderOf(index)],
    check: { kind: "files", files: [`${index}/${INDEX_HEADER}`] },
    deps: [...deps.prep, ...deps.contextIds],
  };
}

/** `search`: every question against every phrase of the index (one folder). */
export function planSearch(
  ctx: PlanContext,
  m: Model,
  ds: ResolvedDataset,
  scan: DatasetScan,
  open: OpenPlan,
  deps: OpenDeps & { readonly index: string },
): Task {
  const { L } = ctx;
  const data = L.data(ds);
  const index = L.index(m.abbr, ds.abbr);
  const openPred = L.openPrediction(m.abbr, ds.abbr);
  const topk = L.topk(m.abbr, ds.abbr);
  const openDir = folderOf(openPred);
  const probe = probeOf(open);
  const format = questionSet(ds).format;
  return {
    ...taskOf("search", `search/${m.abbr}/${ds.abbr}`, m.abbr, ds),
    items: scan.questionIds.length,
    unit: "questions",
    argv: ctx.denoRun(
      searchGrants({ data, index, questionEmb: L.questionEmb(m.abbr, ds.abbr), outDir: openDir }),
      "search",
      [
        data,
        index,
        L.questionEmb(m.abbr, ds.abbr),
        openPred,
        `--top-k=${open.topK}`,
        `--topk-out=${topk}`,
        ...(probe.nprobe !== undefined ? [`--nprobe=${probe.nprobe}`] : []),
        ...(probe.probeTau !== undefined ? [`--probe-tau=${probe.probeTau}`] : []),
        ...(probe.candidates !== undefined ? [`--candidates=${probe.candidates}`] : []),
        ...(format !== undefined ? [`--format=${format}`] : []),
        ...unique(ds),
      ],
    ),
    log: L.log("search", m.abbr, ds.abbr, null),
    watch: [openDir],
    check: { kind: "files", files: [openPred, topk] },
    deps: [...deps.prep, deps.index, ...deps.questionIds],
  };
}

/** `index_train`: a sharded IVF-PQ index's quantizer, trained once for every shard. */
export function planIndexTrain(
  ctx: PlanContext,
  m: Model,
  ds: ResolvedDataset,
  scan: DatasetScan,
  open: OpenPlan,
  deps: OpenDeps,
): Task {
  const { cEmb, context, index, sparseFlag, ivfFlags } = indexInputs(ctx, m, ds, open);
  const quantizer = `${index}/${QUANTIZER_FOLDER}`;
  return {
    ...taskOf("index_train", `index_train/${m.abbr}/${ds.abbr}`, m.abbr, ds),
    items: scan.paragraphIds.length,
    unit: "paragraphs",
    argv: ctx.denoRun(
      indexGrants({ contextEmb: cEmb, context, index: quantizer }),
      "index",
      [
        cEmb,
        index,
        ...sparseFlag,
        `--context=${context}`,
        "--overwrite",
        "--train-only",
        ...ivfFlags,
      ],
    ),
    log: ctx.L.log("index_train", m.abbr, ds.abbr, null),
    watch: [index],
    check: { kind: "files", files: [`${quantizer}/${QUANTIZER_MANIFEST}`] },
    deps: [...deps.prep, ...deps.contextIds],
  };
}

/** `index` of a sharded index: a task per shard (a Slurm array), each its own folder. */
export function planShardIndexes(
  ctx: PlanContext,
  m: Model,
  ds: ResolvedDataset,
  scan: DatasetScan,
  open: OpenPlan & { readonly shards: number },
  deps: OpenDeps & { readonly trainIds: readonly string[] },
): Task[] {
  const { cEmb, context, index, sparseFlag } = indexInputs(ctx, m, ds, open);
  const n = open.shards;
  const quantizer = `${index}/${QUANTIZER_FOLDER}`;
  return Array.from({ length: n }, (_, i) => {
    const folder = `${index}/${shardFolderName(i, n)}`;
    const g = indexGrants({ contextEmb: cEmb, context, index: folder });
    return {
      ...taskOf("index", `index/${m.abbr}/${ds.abbr}/${i}`, m.abbr, ds),
      part: { index: i, count: n },
      items: scan.paragraphIds.length,
      unit: "paragraphs",
      argv: ctx.denoRun(
        open.ivf !== undefined ? { ...g, read: [...g.read, quantizer] } : g,
        "index",
        [
          cEmb,
          index,
          ...sparseFlag,
          `--context=${context}`,
          "--overwrite",
          `--shards=${n}`,
          `--shard=${i}`,
          ...(open.ivf !== undefined ? [`--quantizer=${quantizer}`] : []),
        ],
      ),
      log: ctx.L.log("index", m.abbr, ds.abbr, i),
      watch: [index],
      check: { kind: "files", files: [`${folder}/${INDEX_HEADER}`] },
      deps: [...deps.prep, ...deps.contextIds, ...deps.trainIds],
    } satisfies Task;
  });
}

/** `search` of a sharded index: a task per shard, each its top k into a hits file. */
export function planShardSearches(
  ctx: PlanContext,
  m: Model,
  ds: ResolvedDataset,
  scan: DatasetScan,
  open: OpenPlan & { readonly shards: number },
  deps: OpenDeps & { readonly indexIds: readonly string[] },
): Task[] {
  const { L } = ctx;
  const n = open.shards;
  const data = L.data(ds);
  const index = L.index(m.abbr, ds.abbr);
  const qEmb = L.questionEmb(m.abbr, ds.abbr);
  const hitsDir = L.shardHits(m.abbr, ds.abbr);
  const set = questionSet(ds);
  return Array.from({ length: n }, (_, i) => {
    const hits = shardHitsFile(hitsDir, i, n);
    const args: SearchShardArgs = {
      data,
      index,
      shard: i,
      questionEmb: qEmb,
      out: hits,
      topK: open.topK,
      ...probeOf(open),
      format: set.format,
      lang: set.lang,
      uniqueIds: ds.uniqueIds === true,
    };
    return {
      ...taskOf("search", `search/${m.abbr}/${ds.abbr}/${i}`, m.abbr, ds),
      part: { index: i, count: n },
      items: scan.questionIds.length,
      unit: "questions",
      argv: ctx.denoRun(
        searchGrants({ data, index, questionEmb: qEmb, outDir: hitsDir }),
        "task",
        SEARCH_SHARD_ARGS.toArgv(args),
      ),
      log: L.log("search", m.abbr, ds.abbr, i),
      watch: [hitsDir],
      check: { kind: "files", files: [hits] },
      deps: [...deps.prep, ...deps.indexIds, ...deps.questionIds],
    } satisfies Task;
  });
}

/** `search_merge`: the shards' hits merged into the search's predictions and top k. */
export function planSearchMerge(
  ctx: PlanContext,
  m: Model,
  ds: ResolvedDataset,
  scan: DatasetScan,
  open: OpenPlan & { readonly shards: number },
  shardSearchIds: readonly string[],
): Task {
  const { L } = ctx;
  const hitsDir = L.shardHits(m.abbr, ds.abbr);
  const openPred = L.openPrediction(m.abbr, ds.abbr);
  const topk = L.topk(m.abbr, ds.abbr);
  const openDir = folderOf(openPred);
  return {
    ...taskOf("search_merge", `search_merge/${m.abbr}/${ds.abbr}`, m.abbr, ds),
    items: scan.questionIds.length,
    unit: "questions",
    argv: ctx.denoRun(
      { read: [hitsDir, openDir], write: [openDir] },
      "task",
      SEARCH_MERGE_ARGS.toArgv({ parts: hitsDir, shards: open.shards, pred: openPred, topk }),
    ),
    log: L.log("search_merge", m.abbr, ds.abbr, null),
    watch: [openDir],
    check: { kind: "files", files: [openPred, topk] },
    deps: [...shardSearchIds],
  };
}

/**
 * `eval` of an encoder model: merge's answers (and the open search's, with
 * the `open` option), BEM in the task's own process; over a corpus the
 * search alone (top-1 EM/F1 over the gold answers and DPR's top-k passage
 * accuracy, passage texts from the index).
 */
export function planEval(
  ctx: PlanContext,
  m: Model,
  ds: ResolvedDataset,
  scan: DatasetScan,
  open: OpenPlan | undefined,
  deps: readonly string[],
): Task {
  const { L } = ctx;
  const data = L.data(ds);
  const pred = L.prediction(m.abbr, ds.abbr);
  const openPred = L.openPrediction(m.abbr, ds.abbr);
  const topk = L.topk(m.abbr, ds.abbr);
  const result = L.result(m.abbr, ds.abbr);
  const resDir = folderOf(result);
  // The per-question rows go next to the predictions (`layout.ts`).
  const rows = L.rows(m.abbr, ds.abbr);
  const rowsDir = folderOf(rows);
  const bem = ds.bem;
  const index = L.index(m.abbr, ds.abbr);
  const overCorpus = ds.corpus !== undefined && open !== undefined;
  const corpusSearch: CorpusEvalOptions | undefined = overCorpus
    ? { data, out: result, rows, pred: openPred, topk, index, ranks: open.topK, ...questionSet(ds) }
    : undefined;
  const predictions: EvalOptions = {
    data,
    pred,
    out: result,
    rows,
    ...(open !== undefined ? { open: { pred: openPred, topk, uniqueIds: ds.uniqueIds } } : {}),
    ...(bem ? { bem: bem.model, bemReport: bem.report } : {}),
  };
  return {
    ...taskOf("eval", `eval/${m.abbr}/${ds.abbr}`, m.abbr, ds),
    items: scan.questionIds.length,
    unit: "questions",
    argv: ctx.denoRun(
      overCorpus
        ? { read: [data, openPred, topk, index, resDir, rowsDir], write: [resDir, rowsDir] }
        : {
          read: [
            data,
            pred,
            resDir,
            rowsDir,
            ...(bem ? [bem.model, `${REPO_ROOT}/data/bert`] : []),
            ...(open !== undefined ? [openPred, topk] : []),
          ],
          write: [resDir, rowsDir],
          ffi: bem ? (ctx.bemFfi ? [ctx.bemFfi] : true) : undefined,
        },
      "task",
      EVAL_ARGS.toArgv(corpusSearch !== undefined ? { corpusSearch } : { predictions }),
    ),
    log: L.log("eval", m.abbr, ds.abbr, null),
    watch: [resDir, rowsDir],
    check: { kind: "files", files: [result, rows] },
    deps: [...deps],
  };
}

/** `eval` of a predictions model on a dataset: copy its answers in, score them. */
export function planPredictionsEval(
  ctx: PlanContext,
  model: string,
  source: string,
  ds: ResolvedDataset,
  scan: DatasetScan,
): Task {
  const { L } = ctx;
  const data = L.data(ds);
  const pred = L.prediction(model, ds.abbr);
  const result = L.result(model, ds.abbr);
  const rows = L.rows(model, ds.abbr);
  const resDir = folderOf(result);
  const predDir = folderOf(pred);
  return {
    ...taskOf("eval", `eval/${model}/${ds.abbr}`, model, ds),
    items: scan.questionIds.length,
    unit: "questions",
    argv: ctx.denoRun(
      { read: [data, source, resDir, predDir], write: [resDir, predDir] },
      "task",
      EVAL_ARGS.toArgv({
        predictions: { data, pred, from: source, out: result, rows, ...questionSet(ds) },
      }),
    ),
    log: L.log("eval", model, ds.abbr, null),
    watch: [resDir, predDir],
    check: { kind: "files", files: [pred, result, rows] },
    deps: hasPrepare(ctx, ds) ? [prepareId(ds)] : [],
  };
}
