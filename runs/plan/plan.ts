/**
 * The planner of a run: turns a validated run config into the tasks of a
 * run folder. For each dataset one `prepare` task (take the configured
 * articles, then the PI-SQuAD split); for each (model, dataset) pair the
 * encoding split into `encode_context` / `encode_question` tasks of at most
 * N paragraphs / questions each (`--range A:B`), then one `merge` and one
 * `eval` task; a dataset with the `open` option adds, per model, an `index`
 * task (an exact phrase index of the context dump) and a `search` task
 * (every question against every phrase), whose outputs the `eval` task
 * scores beside the closed predictions. A `predictions` model (existing
 * answers, `runs/config/config.ts`) has one `eval` task per dataset and nothing else:
 * it copies the answers into the run folder and scores them with the
 * dataset kind's metric; a SQuAD set then gets a `prepare` task only for
 * its article range (no split, when no encoder model is in the run), and
 * a set of another kind none (its questions are read here, so a bad record
 * is refused before anything runs).
 * Every task is a Deno command line from `runs/sandbox/sandbox.ts` with
 * permissions narrowed to its inputs and its output folder, writes
 * atomically and skips complete files, so running it twice is safe. A task
 * is complete when its output files are (see `complete.ts`).
 *
 * Before any task exists the planner checks what each encoder process would
 * be granted (the rules in `runs/sandbox/sandbox.ts`): every model file, after
 * `realpath`, against every dataset, the run and work folders and the other
 * half's files; the files an ONNX manifest names against the manifest's own
 * folder; and each output folder for anything an encoder did not write. A
 * path no permission flag can express is refused too. Each refusal is one
 * {@linkcode InputError} line (exit 2), before anything runs.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { InputError } from "../../io/errors.ts";
import { REPO_ROOT } from "../../io/repo.ts";
import { squadArticles } from "../../io/squad.ts";
import { manifestFiles } from "../../encoders/onnx/manifest.ts";
import { dirOf, displayPath, isFile, normalize } from "../../io/fs.ts";
import { DatasetIds, isIdProblem } from "../../io/squad_ids.ts";
import {
  OPEN_TOP_K,
  type ResolvedDataset,
  type ResolvedRunConfig,
  SQUAD_KINDS,
} from "../config/config.ts";
import { readCorpus, readQuestions } from "../../io/datasets/read.ts";
import { type RunLayout, runLayout } from "./layout.ts";
import { partitions } from "./partition.ts";
import { type StageScript, stageScriptPath } from "./scripts.ts";
import {
  denoRunArgv,
  encoderGrants,
  grantedFileProblem,
  type Grants,
  type Guarded,
  indexGrants,
  outputFolderProblem,
  searchGrants,
} from "../sandbox/sandbox.ts";
import { INDEX_HEADER } from "../../search/index/format.ts";
import { QUANTIZER_MANIFEST } from "../../search/index/ivfpq/quantizer.ts";
import { QUANTIZER_FOLDER, shardFolderName, shardHitsFile } from "../../search/index/shards.ts";
import { type DatasetScan, type Plan, type Stage, STAGE_GROUPS, type Task } from "./task.ts";

/**
 * Reads the paragraph and question ids of a dataset (its article range
 * only), streaming. The ids are checked over the range as every stage
 * checks them (`io/squad_ids.ts`): repeated ones are bad input, or, with
 * `uniqueIds`, repeated titles are renamed, as the tasks will rename them
 * in the range's own file.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { REPO_ROOT } from "../../io/repo.ts";
 * import { scanDataset } from "./plan.ts";
 * const s = await Effect.runPromise(scanDataset({
 *   abbr: "d", type: "squad", path: `${REPO_ROOT}/data/dev-v1.1.json.gz`, articles: [8, 10],
 *   metrics: ["em", "f1"], bem: null,
 * }));
 * if (s.paragraphIds.length !== 47 || s.questionIds.length !== 232) throw new Error();
 * ```
 */
export const scanDataset = (ds: ResolvedDataset): Effect.Effect<DatasetScan, InputError> =>
  Effect.gen(function* () {
    const [start, end] = ds.articles ?? [0, Infinity];
    const paragraphIds: string[] = [];
    const questionIds: string[] = [];
    let articles = 0;
    const ids = new DatasetIds(ds.uniqueIds ? "unique" : "distinct");
    const refuse = (where: string, message: string) =>
      Effect.fail(new InputError({ file: ds.path, where, message }));
    yield* squadArticles(ds.path, { context: "optional", qas: "optional" }).pipe(
      Stream.takeWhile((a) => a.index < end),
      Stream.runForEach((a) =>
        Effect.gen(function* () {
          if (a.index < start) return;
          articles++;
          const title = ids.article(a.index, a.title, a.paragraphs.length);
          if (isIdProblem(title)) return yield* refuse(title.where, title.message);
          for (const [i, p] of a.paragraphs.entries()) {
            paragraphIds.push(`${title}_${i}`);
            for (const q of p.questions) {
              const clash = ids.question(q.id, a.index, a.title, i);
              if (clash !== undefined) return yield* refuse(clash.where, clash.message);
              questionIds.push(q.id);
            }
          }
        })
      ),
      Effect.mapError((e) =>
        e instanceof InputError
          ? e
          : new InputError({ file: ds.path, where: "", message: e.message })
      ),
    );
    if (ds.articles && articles < end - start) {
      return yield* Effect.fail(
        new InputError({
          file: ds.path,
          where: `dataset ${ds.abbr}`,
          message: `articles [${start}, ${end}) asked, the file has ${start + articles}`,
        }),
      );
    }
    return { abbr: ds.abbr, articles, paragraphIds, questionIds };
  });

/**
 * Checks what the encoder processes of `config` would be granted (see the
 * module notes): fails with one {@linkcode InputError} line naming the
 * model, the half, the file's role and the path.
 */
/** The real path of `p` (its normalized form when it cannot be resolved). */
function realOf(p: string): string {
  try {
    return Deno.realPathSync(p);
  } catch {
    return normalize(p);
  }
}

/** Whether `p` is `dir` or lies below it. */
function inside(p: string, dir: string): boolean {
  return p === dir || p.startsWith(dir === "/" ? "/" : `${dir}/`);
}

function checkEncoderGrants(
  config: ResolvedRunConfig,
  L: RunLayout,
  runDir: string,
  workDir: string | null,
): InputError | undefined {
  const shown = isFile(config.file) ? displayPath(config.file) : "";
  const realRepo = realOf(REPO_ROOT);
  const repoInWork = workDir !== null && inside(realRepo, realOf(workDir));
  const folders: Guarded[] = [
    { path: runDir, what: "the run folder" },
    ...(workDir !== null ? [{ path: workDir, what: "the work folder" }] : []),
  ];
  for (const [mi, m] of config.models.entries()) {
    if (m.predictions !== undefined) continue;
    for (const ds of config.datasets) {
      for (const half of ["context", "question"] as const) {
        const other = half === "context" ? "question" : "context";
        const guarded: Guarded[] = [
          ...config.datasets.map((d) => ({ path: d.path, what: `the dataset "${d.abbr}"` })),
          {
            path: other === "context" ? L.contextFile(ds.abbr) : L.questionFile(ds.abbr),
            what: `the ${other} file`,
          },
          {
            path: other === "context"
              ? L.contextEmb(m.abbr, ds.abbr)
              : L.questionEmb(m.abbr, ds.abbr),
            what: `the ${other} encoder's output folder`,
          },
          ...folders,
        ];
        const where = `models[${mi}] "${m.abbr}", ${half} encoder`;
        const fail = (label: string, message: string) =>
          new InputError({ file: shown, where: `${where}, ${label}`, message });
        // (Only a regular file is read as a manifest: a named pipe would block.)
        const named = m.model !== null && isFile(m.model) ? manifestFiles(m.model, half) ?? [] : [];
        const manifestDir = m.model !== null ? dirOf(m.model) : "/";
        for (const f of named) {
          if (!normalize(f.path).startsWith(`${manifestDir}/`)) {
            return fail(
              `manifest ${f.field}`,
              `"${f.file}" lies outside the manifest's folder ${manifestDir}; a manifest may only name files beside or below it`,
            );
          }
        }
        for (const file of half === "context" ? m.contextFiles : m.questionFiles) {
          // The repository's own files (built-in models) are not run outputs:
          // a work folder that holds the repository does not guard them.
          const g = repoInWork && inside(realOf(file), realRepo)
            ? guarded.filter((x) => x.what !== "the work folder")
            : guarded;
          const why = grantedFileProblem(file, g);
          if (why === undefined) continue;
          const entry = named.find((f) => normalize(f.path) === normalize(file));
          const label = entry !== undefined
            ? `manifest ${entry.field}`
            : file === m.model
            ? "model"
            : "encoder file";
          return fail(label, `${why}; an encoder may not be granted it`);
        }
        const out = half === "context"
          ? L.contextEmb(m.abbr, ds.abbr)
          : L.questionEmb(m.abbr, ds.abbr);
        const why = outputFolderProblem(out, guarded.filter((g) => !folders.includes(g)));
        if (why !== undefined) return new InputError({ file: "", where: "", message: why });
      }
    }
  }
  return undefined;
}

/**
 * Reads the questions of a set that is not SQuAD-shaped (its kind's
 * reader, `io/datasets/`): their ids, in file order; a bad record is one
 * {@linkcode InputError} here, before anything runs.
 */
export const scanQuestionSet = (ds: ResolvedDataset): Effect.Effect<DatasetScan, InputError> =>
  Effect.gen(function* () {
    const questionIds: string[] = [];
    yield* Stream.runForEach(
      readQuestions(ds.path, { format: ds.format, lang: ds.lang, fields: ds.fields }),
      (r) => Effect.sync(() => void questionIds.push(r.id)),
    ).pipe(
      Effect.mapError((e) =>
        e instanceof InputError
          ? e
          : new InputError({ file: ds.path, where: `dataset ${ds.abbr}`, message: e.message })
      ),
    );
    return { abbr: ds.abbr, articles: 0, paragraphIds: [], questionIds };
  });

/**
 * The passage ids of a dataset's corpus (its `corpus`), in file order: the
 * paragraphs its context encoder reads and the index holds; a bad passage
 * is one {@linkcode InputError} here, before anything runs.
 */
export const scanCorpus = (ds: ResolvedDataset & { readonly corpus: string }) =>
  Effect.gen(function* () {
    const ids: string[] = [];
    yield* Stream.runForEach(
      readCorpus(ds.corpus),
      (p) => Effect.sync(() => void ids.push(p.id)),
    ).pipe(
      Effect.mapError((e) =>
        e instanceof InputError
          ? e
          : new InputError({ file: ds.corpus, where: `dataset ${ds.abbr}`, message: e.message })
      ),
    );
    return ids;
  });

/**
 * How a task is told a question set that is not SQuAD's: `--format` (when
 * the config names or detected one), `--lang` and `--fields`.
 */
function questionSetFlags(ds: ResolvedDataset): string[] {
  const other = !SQUAD_KINDS.includes(ds.type);
  return [
    ...(other && ds.format !== undefined ? [`--format=${ds.format}`] : []),
    ...(other && ds.lang !== undefined ? [`--lang=${ds.lang}`] : []),
    ...(ds.fields !== undefined ? [`--fields=${JSON.stringify(ds.fields)}`] : []),
  ];
}

/** The `eval` task of a predictions model on a dataset: copy its answers in, score them. */
function predictionsEval(
  L: RunLayout,
  denoRun: (grants: Grants, script: StageScript, args: readonly string[]) => string[],
  model: string,
  source: string,
  ds: ResolvedDataset,
  scan: DatasetScan,
  o: { readonly deps: readonly string[] },
): Task {
  const data = L.data(ds);
  const pred = L.prediction(model, ds.abbr);
  const result = L.result(model, ds.abbr);
  const rows = L.rows(model, ds.abbr);
  const resDir = result.slice(0, result.lastIndexOf("/"));
  const predDir = pred.slice(0, pred.lastIndexOf("/"));
  return {
    id: `eval/${model}/${ds.abbr}`,
    stage: "eval",
    model,
    dataset: ds.abbr,
    part: null,
    range: null,
    items: scan.questionIds.length,
    unit: "questions",
    argv: denoRun(
      { read: [data, source, resDir, predDir], write: [resDir, predDir] },
      "task",
      [
        "eval",
        `--data=${data}`,
        `--pred=${pred}`,
        `--from=${source}`,
        `--out=${result}`,
        `--rows=${rows}`,
        ...questionSetFlags(ds),
      ],
    ),
    log: L.log("eval", model, ds.abbr, null),
    watch: [resDir, predDir],
    check: { kind: "files", files: [pred, result, rows] },
    deps: [...o.deps],
    gres: null,
  };
}

/** Options of {@linkcode planRun}. */
export interface PlanOptions {
  /** The run folder (absolute). */
  readonly runDir: string;
  /** Items per encode task. */
  readonly maxPartitionSize: number;
  /** The Deno binary tasks run with (default: this one). */
  readonly deno?: string;
  /** BEM: the ONNX Runtime addon its process may load (`--allow-ffi=`). */
  readonly bemFfi?: string;
  /** Encoders: the ONNX Runtime addon every encoder process must be allowed to load (see `probeOrtOnImport` in `runs/sandbox/ort.ts`). */
  readonly ortFfi?: string;
  /** Where the files go (default: {@linkcode runLayout} of `runDir`). */
  readonly layout?: RunLayout;
}

/**
 * Plans every task of a run (all stages; `--mode` chooses which run).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { REPO_ROOT } from "../../io/repo.ts";
 * import { loadRunConfig } from "../config/load.ts";
 * import { planRun } from "./plan.ts";
 * const cfg = await Effect.runPromise(loadRunConfig(`${REPO_ROOT}/configs/eval_two_models_mini.ts`));
 * const plan = await Effect.runPromise(planRun(cfg, { runDir: "/tmp/r", maxPartitionSize: 32 }));
 * // 1 prepare + 2 models × (3 context + 15 question partitions + merge + eval)
 * if (plan.tasks.length !== 41 || plan.tasks[0].id !== "prepare/squad-dev-mini") {
 *   throw new Error(`${plan.tasks.length} tasks`);
 * }
 * ```
 */
export const planRun = (
  config: ResolvedRunConfig,
  opts: PlanOptions,
): Effect.Effect<Plan, InputError> =>
  Effect.gen(function* () {
    const L = opts.layout ?? runLayout(opts.runDir);
    // The work folder (the parent of run folders) only for the run layout:
    // a single run's folder is its own.
    const bad = checkEncoderGrants(
      config,
      L,
      opts.runDir,
      opts.layout === undefined ? dirOf(opts.runDir) : null,
    );
    if (bad !== undefined) return yield* Effect.fail(bad);
    const deno = opts.deno ?? Deno.execPath();
    const denoRun = (grants: Grants, script: StageScript, args: readonly string[]) =>
      denoRunArgv(stageScriptPath(script), args, grants, { deno });
    const scans: DatasetScan[] = [];
    for (const ds of config.datasets) {
      const scan = yield* (SQUAD_KINDS.includes(ds.type) ? scanDataset(ds) : scanQuestionSet(ds));
      // With a corpus, the context encoder reads the corpus's passages.
      const corpus = ds.corpus;
      scans.push(
        corpus === undefined
          ? scan
          : { ...scan, paragraphIds: yield* scanCorpus({ ...ds, corpus }) },
      );
    }
    const tasks: Task[] = [];
    const size = opts.maxPartitionSize;
    const unique = (ds: ResolvedDataset) => ds.uniqueIds ? ["--unique-ids"] : [];
    // Encoders read the split; predictions models only the article subset, if any.
    const encoders = config.models.some((m) => m.predictions === undefined);
    const hasPrepare = (ds: ResolvedDataset) =>
      SQUAD_KINDS.includes(ds.type) && (encoders || ds.articles !== null);
    for (const [di, ds] of config.datasets.entries()) {
      if (!hasPrepare(ds)) continue;
      const scan = scans[di];
      const dir = L.datasetDir(ds.abbr);
      const prepareId = `prepare/${ds.abbr}`;
      const outs = encoders ? [L.contextFile(ds.abbr), L.questionFile(ds.abbr)] : [];
      if (ds.articles) outs.unshift(L.data(ds));
      tasks.push({
        id: prepareId,
        stage: "prepare",
        model: null,
        dataset: ds.abbr,
        part: null,
        range: ds.articles,
        items: scan.articles,
        unit: "articles",
        argv: denoRun(
          { read: [ds.path, dir], write: [dir] },
          "task",
          [
            "prepare",
            `--data=${ds.path}`,
            `--out=${dir}`,
            ...(ds.articles ? [`--articles=${ds.articles[0]}:${ds.articles[1]}`] : []),
            ...unique(ds),
            ...(encoders ? [] : ["--subset-only"]),
          ],
        ),
        log: L.log("prepare", null, ds.abbr, null),
        watch: [dir],
        check: { kind: "files", files: outs },
        deps: [],
        gres: null,
      });
    }
    for (const m of config.models) {
      const gres = m.device === "cuda" ? "gpu:1" : null;
      const common = [
        `--encoder=${m.encoder}`,
        ...(m.model !== null ? [`--model=${m.model}`] : []),
        ...(m.sparse ? ["--sparse"] : []),
        ...(m.dtype !== null ? [`--dtype=${m.dtype}`] : []),
        ...(m.device !== "cpu" ? [`--device=${m.device}`] : []),
        ...(m.threads !== null ? [`--threads=${m.threads}`] : []),
      ];
      for (const [di, ds] of config.datasets.entries()) {
        const scan = scans[di];
        const prepareId = `prepare/${ds.abbr}`;
        if (m.predictions !== undefined) {
          tasks.push(predictionsEval(L, denoRun, m.abbr, m.predictions[ds.abbr], ds, scan, {
            deps: hasPrepare(ds) ? [prepareId] : [],
          }));
          continue;
        }
        const encodeIds: string[] = [];
        // With a corpus: the context encoder reads it, and a question set
        // that is not SQuAD (no split) is read by the question encoder as it is.
        const corpus = ds.corpus;
        const split = hasPrepare(ds);
        const formatFlag = !SQUAD_KINDS.includes(ds.type) && ds.format !== undefined
          ? [`--format=${ds.format}`]
          : [];
        for (const half of ["context", "question"] as const) {
          const stage: Stage = half === "context" ? "encode_context" : "encode_question";
          const ids = half === "context" ? scan.paragraphIds : scan.questionIds;
          const input = half === "context"
            ? corpus ?? L.contextFile(ds.abbr)
            : split
            ? L.questionFile(ds.abbr)
            : L.data(ds);
          const out = half === "context"
            ? L.contextEmb(m.abbr, ds.abbr)
            : L.questionEmb(m.abbr, ds.abbr);
          const files = half === "context" ? m.contextFiles : m.questionFiles;
          const batch = half === "context" ? m.batch.context : m.batch.question;
          const parts = partitions(ids.length, size);
          for (const [pi, [a, b]] of parts.entries()) {
            const id = `${stage}/${m.abbr}/${ds.abbr}/${pi}`;
            encodeIds.push(id);
            tasks.push({
              id,
              stage,
              model: m.abbr,
              dataset: ds.abbr,
              part: { index: pi, count: parts.length },
              range: [a, b],
              items: b - a,
              unit: half === "context" ? "paragraphs" : "questions",
              argv: denoRun(
                {
                  ...encoderGrants({ input, out, files }),
                  flags: [
                    ...m.permissions,
                    ...(opts.ortFfi && !m.permissions.some((p) => p.startsWith("--allow-ffi"))
                      ? [`--allow-ffi=${opts.ortFfi}`]
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
                  ...(half === "question" && !split ? formatFlag : []),
                  ...(half === "context" && corpus !== undefined ? [] : unique(ds)),
                ],
              ),
              log: L.log(stage, m.abbr, ds.abbr, pi),
              watch: [out],
              check: { kind: half, dir: out, ids: ids.slice(a, b) },
              deps: split ? [prepareId] : [],
              gres,
            });
          }
        }
        const data = L.data(ds);
        const pred = L.prediction(m.abbr, ds.abbr);
        const predDir = pred.slice(0, pred.lastIndexOf("/"));
        const cEmb = L.contextEmb(m.abbr, ds.abbr);
        const qEmb = L.questionEmb(m.abbr, ds.abbr);
        const mergeId = `merge/${m.abbr}/${ds.abbr}`;
        // No closed answers over a corpus: a question's own paragraph is not what is searched.
        if (corpus === undefined) {
          tasks.push({
            id: mergeId,
            stage: "merge",
            model: m.abbr,
            dataset: ds.abbr,
            part: null,
            range: null,
            items: scan.questionIds.length,
            unit: "questions",
            argv: denoRun(
              { read: [data, cEmb, qEmb, predDir], write: [predDir] },
              "merge",
              [data, cEmb, qEmb, pred, ...(m.sparse ? ["--sparse"] : []), ...unique(ds)],
            ),
            log: L.log("merge", m.abbr, ds.abbr, null),
            watch: [predDir],
            check: { kind: "files", files: [pred] },
            deps: [prepareId, ...encodeIds],
            gres: null,
          });
        }
        const prep = split ? [prepareId] : [];
        // Open search (the dataset's `open` option): index the context dump,
        // search it with every question; the eval task scores both.
        // An open set with a corpus is searched even without the option.
        const open = ds.open ?? (corpus !== undefined ? { topK: OPEN_TOP_K } : undefined);
        const openPred = L.openPrediction(m.abbr, ds.abbr);
        const topk = L.topk(m.abbr, ds.abbr);
        const searchId = `search/${m.abbr}/${ds.abbr}`;
        let searchDone = searchId;
        if (open !== undefined) {
          const index = L.index(m.abbr, ds.abbr);
          const contextIds = encodeIds.filter((id) => id.startsWith("encode_context/"));
          const questionIds = encodeIds.filter((id) => !contextIds.includes(id));
          const context = corpus ?? L.contextFile(ds.abbr);
          const ivf = open.ivf;
          if (ivf !== undefined && m.sparse && ivf.denseDims === undefined) {
            return yield* Effect.fail(
              new InputError({
                file: isFile(config.file) ? displayPath(config.file) : "",
                where: `datasets[${di}] "${ds.abbr}".open.ivf`,
                message: `model "${m.abbr}" writes sparse vectors: an IVF-PQ index needs a ` +
                  `dense model, or denseDims for a hybrid one`,
              }),
            );
          }
          const ivfFlags = ivf === undefined ? [] : [
            `--nlist=${ivf.nlist}`,
            `--bpv=${ivf.bpv}`,
            ...(ivf.trainParagraphs !== undefined
              ? [`--train-paragraphs=${ivf.trainParagraphs}`]
              : []),
            ...(ivf.denseDims !== undefined ? [`--dense-dims=${ivf.denseDims}`] : []),
            ...(ivf.pqBits === 4 ? ["--pq-bits=4"] : []),
          ];
          const probeFlags = ivf === undefined ? [] : [
            ...(ivf.nprobe !== undefined ? [`--nprobe=${ivf.nprobe}`] : []),
            ...(ivf.candidates !== undefined ? [`--candidates=${ivf.candidates}`] : []),
          ];
          const sparseFlag = m.sparse ? ["--sparse"] : [];
          const openDir = openPred.slice(0, openPred.lastIndexOf("/"));
          const base = (stage: Stage, id: string, part: Task["part"]) => ({
            id,
            stage,
            model: m.abbr,
            dataset: ds.abbr,
            part,
            range: null,
            gres: null,
          });
          if (open.shards === undefined) {
            const indexId = `index/${m.abbr}/${ds.abbr}`;
            tasks.push({
              ...base("index", indexId, null),
              items: scan.paragraphIds.length,
              unit: "paragraphs",
              argv: denoRun(
                indexGrants({ contextEmb: cEmb, context, index }),
                "index",
                [cEmb, index, ...sparseFlag, `--context=${context}`, "--overwrite", ...ivfFlags],
              ),
              log: L.log("index", m.abbr, ds.abbr, null),
              watch: [index.slice(0, index.lastIndexOf("/"))],
              check: { kind: "files", files: [`${index}/${INDEX_HEADER}`] },
              deps: [...prep, ...contextIds],
            });
            tasks.push({
              ...base("search", searchId, null),
              items: scan.questionIds.length,
              unit: "questions",
              argv: denoRun(
                searchGrants({ data, index, questionEmb: qEmb, outDir: openDir }),
                "search",
                [
                  data,
                  index,
                  qEmb,
                  openPred,
                  `--top-k=${open.topK}`,
                  `--topk-out=${topk}`,
                  ...probeFlags,
                  ...formatFlag,
                  ...unique(ds),
                ],
              ),
              log: L.log("search", m.abbr, ds.abbr, null),
              watch: [openDir],
              check: { kind: "files", files: [openPred, topk] },
              deps: [...prep, indexId, ...questionIds],
            });
          } else {
            // A sharded index: the quantizer once (IVF-PQ), then a task per shard to
            // build it and one to search it (a Slurm array each), then the merge.
            const n = open.shards;
            const quantizer = `${index}/${QUANTIZER_FOLDER}`;
            const trainIds: string[] = [];
            if (ivf !== undefined) {
              const trainId = `index_train/${m.abbr}/${ds.abbr}`;
              trainIds.push(trainId);
              tasks.push({
                ...base("index_train", trainId, null),
                items: scan.paragraphIds.length,
                unit: "paragraphs",
                argv: denoRun(
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
                log: L.log("index_train", m.abbr, ds.abbr, null),
                watch: [index],
                check: { kind: "files", files: [`${quantizer}/${QUANTIZER_MANIFEST}`] },
                deps: [...prep, ...contextIds],
              });
            }
            const hitsDir = L.shardHits(m.abbr, ds.abbr);
            const indexIds: string[] = [], shardSearchIds: string[] = [];
            for (let i = 0; i < n; i++) {
              const folder = `${index}/${shardFolderName(i, n)}`;
              const id = `index/${m.abbr}/${ds.abbr}/${i}`;
              indexIds.push(id);
              const g = indexGrants({ contextEmb: cEmb, context, index: folder });
              tasks.push({
                ...base("index", id, { index: i, count: n }),
                items: scan.paragraphIds.length,
                unit: "paragraphs",
                argv: denoRun(
                  ivf !== undefined ? { ...g, read: [...g.read, quantizer] } : g,
                  "index",
                  [
                    cEmb,
                    index,
                    ...sparseFlag,
                    `--context=${context}`,
                    "--overwrite",
                    `--shards=${n}`,
                    `--shard=${i}`,
                    ...(ivf !== undefined ? [`--quantizer=${quantizer}`] : []),
                  ],
                ),
                log: L.log("index", m.abbr, ds.abbr, i),
                watch: [index],
                check: { kind: "files", files: [`${folder}/${INDEX_HEADER}`] },
                deps: [...prep, ...contextIds, ...trainIds],
              });
            }
            for (let i = 0; i < n; i++) {
              const id = `search/${m.abbr}/${ds.abbr}/${i}`;
              shardSearchIds.push(id);
              const hits = shardHitsFile(hitsDir, i, n);
              tasks.push({
                ...base("search", id, { index: i, count: n }),
                items: scan.questionIds.length,
                unit: "questions",
                argv: denoRun(
                  searchGrants({ data, index, questionEmb: qEmb, outDir: hitsDir }),
                  "task",
                  [
                    "search-shard",
                    `--data=${data}`,
                    `--index=${index}`,
                    `--shard=${i}`,
                    `--question-emb=${qEmb}`,
                    `--out=${hits}`,
                    `--top-k=${open.topK}`,
                    ...probeFlags,
                    ...formatFlag,
                    ...(ds.lang !== undefined && !split ? [`--lang=${ds.lang}`] : []),
                    ...unique(ds),
                  ],
                ),
                log: L.log("search", m.abbr, ds.abbr, i),
                watch: [hitsDir],
                check: { kind: "files", files: [hits] },
                deps: [...prep, ...indexIds, ...questionIds],
              });
            }
            searchDone = `search_merge/${m.abbr}/${ds.abbr}`;
            tasks.push({
              ...base("search_merge", searchDone, null),
              items: scan.questionIds.length,
              unit: "questions",
              argv: denoRun(
                { read: [hitsDir, openDir], write: [openDir] },
                "task",
                [
                  "search-merge",
                  `--parts=${hitsDir}`,
                  `--shards=${n}`,
                  `--pred=${openPred}`,
                  `--topk=${topk}`,
                ],
              ),
              log: L.log("search_merge", m.abbr, ds.abbr, null),
              watch: [openDir],
              check: { kind: "files", files: [openPred, topk] },
              deps: shardSearchIds,
            });
          }
        }
        const result = L.result(m.abbr, ds.abbr);
        const resDir = result.slice(0, result.lastIndexOf("/"));
        // The per-question rows go next to the predictions (`layout.ts`).
        const rows = L.rows(m.abbr, ds.abbr);
        const rowsDir = rows.slice(0, rows.lastIndexOf("/"));
        const bem = ds.bem;
        // Over a corpus the eval task scores the search alone: top-1 EM/F1 over
        // the gold answers and DPR's top-k passage accuracy (passage texts from
        // the index). Otherwise it scores merge's answers, and the search's too
        // with the open option; BEM is scored in the task's own process (it reads
        // the model and the BERT vocabulary and loads ONNX Runtime's addon).
        const overCorpus = corpus !== undefined && open !== undefined;
        const index = L.index(m.abbr, ds.abbr);
        tasks.push({
          id: `eval/${m.abbr}/${ds.abbr}`,
          stage: "eval",
          model: m.abbr,
          dataset: ds.abbr,
          part: null,
          range: null,
          items: scan.questionIds.length,
          unit: "questions",
          argv: denoRun(
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
                ffi: bem ? (opts.bemFfi ? [opts.bemFfi] : true) : undefined,
              },
            "task",
            [
              "eval",
              `--data=${data}`,
              ...(overCorpus ? [] : [`--pred=${pred}`]),
              `--out=${result}`,
              `--rows=${rows}`,
              ...(overCorpus
                ? [
                  `--open-pred=${openPred}`,
                  `--topk=${topk}`,
                  `--corpus-index=${index}`,
                  `--top-k=${open.topK}`,
                  ...questionSetFlags(ds),
                ]
                : open !== undefined
                ? [`--open-pred=${openPred}`, `--topk=${topk}`, ...unique(ds)]
                : []),
              ...(bem && !overCorpus ? [`--bem=${bem.model}`, `--bem-report=${bem.report}`] : []),
            ],
          ),
          log: L.log("eval", m.abbr, ds.abbr, null),
          watch: [resDir, rowsDir],
          check: { kind: "files", files: [result, rows] },
          deps: overCorpus ? [searchDone] : open !== undefined ? [mergeId, searchDone] : [mergeId],
          gres: null,
        });
      }
    }
    const order = (s: Stage) => STAGE_GROUPS.findIndex((g) => g.includes(s));
    tasks.sort((x, y) => order(x.stage) - order(y.stage));
    return { runDir: opts.runDir, config, scans, tasks, maxPartitionSize: size };
  }).pipe(
    // `denoRunArgv` throws an InputError for a path no permission flag can express.
    Effect.catchDefect((d) => d instanceof InputError ? Effect.fail(d) : Effect.die(d)),
  );
