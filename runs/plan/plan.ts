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
 * An encoder reads only what a `prepare` task wrote ({@linkcode encoderInput}):
 * a SQuAD set's split, an open set's question-only file, a corpus's
 * passages-only file (`io/datasets/split.ts`), never a dataset or a corpus
 * as given, which may hold the other half's text under any name (a corpus
 * that is the dataset, a copy or a link of it). So every dataset an encoder
 * model runs on has a `prepare` task.
 * Each stage's tasks come from its own planner (`stages.ts`), which
 * {@linkcode planRun} calls in run order; the tasks that are no stage of
 * their own get their arguments from their contract (`task_args.ts`).
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
import { stageScriptPath } from "./scripts.ts";
import {
  denoRunArgv,
  grantedFileProblem,
  type Guarded,
  outputFolderProblem,
} from "../sandbox/sandbox.ts";
import { type DatasetScan, type Plan, type Stage, STAGE_GROUPS, type Task } from "./task.ts";
import {
  encoderInput,
  hasPrepare,
  type PlanContext,
  planEncode,
  planEval,
  planIndex,
  planIndexTrain,
  planMerge,
  planPredictionsEval,
  planPrepare,
  planSearch,
  planSearchMerge,
  planShardIndexes,
  planShardSearches,
  prepareId,
} from "./stages.ts";

export { encoderInput };

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
          ...config.datasets.flatMap((d) =>
            d.corpus !== undefined ? [{ path: d.corpus, what: `the corpus of "${d.abbr}"` }] : []
          ),
          { path: encoderInput(L, ds, other), what: `the ${other} file` },
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
    const scans: DatasetScan[] = [];
    for (const ds of config.datasets) {
      const scan = yield* (SQUAD_KINDS.includes(ds.type) ? scanDataset(ds) : scanQuestionSet(ds));
      // With a corpus, the context encoder reads the corpus's passages (their passages-only file).
      const corpus = ds.corpus;
      scans.push(
        corpus === undefined
          ? scan
          : { ...scan, paragraphIds: yield* scanCorpus({ ...ds, corpus }) },
      );
    }
    const ctx: PlanContext = {
      config,
      L,
      denoRun: (grants, script, args) =>
        denoRunArgv(stageScriptPath(script), args, grants, { deno }),
      // Encoders read only what a prepare task wrote (by content, never a file
      // as given): a SQuAD set's split, another set's question-only file, a
      // corpus's passages-only file. Predictions models read the article
      // subset, if any.
      encoders: config.models.some((m) => m.predictions === undefined),
      size: opts.maxPartitionSize,
      bemFfi: opts.bemFfi,
      ortFfi: opts.ortFfi,
    };
    const tasks: Task[] = [];
    for (const [di, ds] of config.datasets.entries()) {
      if (hasPrepare(ctx, ds)) tasks.push(planPrepare(ctx, ds, scans[di]));
    }
    for (const m of config.models) {
      for (const [di, ds] of config.datasets.entries()) {
        const scan = scans[di];
        if (m.predictions !== undefined) {
          tasks.push(planPredictionsEval(ctx, m.abbr, m.predictions[ds.abbr], ds, scan));
          continue;
        }
        const encode = planEncode(ctx, m, ds, scan);
        tasks.push(...encode);
        const contextIds = encode.filter((t) => t.stage === "encode_context").map((t) => t.id);
        const questionIds = encode.filter((t) => t.stage === "encode_question").map((t) => t.id);
        // No closed answers over a corpus: a question's own paragraph is not what is searched.
        const merge = ds.corpus === undefined
          ? planMerge(ctx, m, ds, scan, encode.map((t) => t.id))
          : undefined;
        if (merge !== undefined) tasks.push(merge);
        // Open search (the dataset's `open` option): index the context dump,
        // search it with every question; the eval task scores both.
        // An open set with a corpus is searched even without the option.
        const open = ds.open ?? (ds.corpus !== undefined ? { topK: OPEN_TOP_K } : undefined);
        let searched: string | undefined;
        if (open !== undefined) {
          if (open.ivf !== undefined && m.sparse && open.ivf.denseDims === undefined) {
            return yield* Effect.fail(
              new InputError({
                file: isFile(config.file) ? displayPath(config.file) : "",
                where: `datasets[${di}] "${ds.abbr}".open.ivf`,
                message: `model "${m.abbr}" writes sparse vectors: an IVF-PQ index needs a ` +
                  `dense model, or denseDims for a hybrid one`,
              }),
            );
          }
          const deps = {
            prep: hasPrepare(ctx, ds) ? [prepareId(ds)] : [],
            contextIds,
            questionIds,
          };
          const shards = open.shards;
          if (shards === undefined) {
            const index = planIndex(ctx, m, ds, scan, open, deps);
            const search = planSearch(ctx, m, ds, scan, open, { ...deps, index: index.id });
            tasks.push(index, search);
            searched = search.id;
          } else {
            // A sharded index: the quantizer once (IVF-PQ), then a task per shard to
            // build it and one to search it (a Slurm array each), then the merge.
            const sharded = { ...open, shards };
            const train = open.ivf !== undefined
              ? [planIndexTrain(ctx, m, ds, scan, open, deps)]
              : [];
            const indexes = planShardIndexes(ctx, m, ds, scan, sharded, {
              ...deps,
              trainIds: train.map((t) => t.id),
            });
            const searches = planShardSearches(ctx, m, ds, scan, sharded, {
              ...deps,
              indexIds: indexes.map((t) => t.id),
            });
            const merged = planSearchMerge(
              ctx,
              m,
              ds,
              scan,
              sharded,
              searches.map((t) => t.id),
            );
            tasks.push(...train, ...indexes, ...searches, merged);
            searched = merged.id;
          }
        }
        tasks.push(
          planEval(
            ctx,
            m,
            ds,
            scan,
            open,
            [
              ...(merge !== undefined ? [merge.id] : []),
              ...(searched !== undefined ? [searched] : []),
            ],
          ),
        );
      }
    }
    const order = (s: Stage) => STAGE_GROUPS.findIndex((g) => g.includes(s));
    tasks.sort((x, y) => order(x.stage) - order(y.stage));
    return { runDir: opts.runDir, config, scans, tasks, maxPartitionSize: opts.maxPartitionSize };
  }).pipe(
    // `denoRunArgv` throws an InputError for a path no permission flag can express.
    Effect.catchDefect((d) => d instanceof InputError ? Effect.fail(d) : Effect.die(d)),
  );
