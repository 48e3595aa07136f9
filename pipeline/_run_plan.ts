/**
 * The planner of `pipeline/run.ts`: turns a validated run config into the
 * tasks of a run folder. For each dataset one `prepare` task (take the
 * configured articles, then the PI-SQuAD split); for each (model, dataset)
 * pair the encoding split into `encode_context` / `encode_question` tasks of
 * at most N paragraphs / questions each (`--range A:B`), then one `merge`
 * and one `eval` task. Every task is a Deno command line with permissions
 * narrowed to its inputs and its output folder, writes atomically and
 * skips complete files, so running it twice is safe. A task is complete
 * when its output files are (checked by {@linkcode taskComplete}).
 *
 * @module
 */
import { Effect, Stream } from "effect";
import { dumpStem } from "../io/dump/names.ts";
import { InputError } from "../io/errors.ts";
import { squadArticles } from "../io/squad.ts";
import { encoderPermissions } from "./full.ts";
import {
  ORT_ADDON,
  REPO_ROOT,
  type ResolvedDataset,
  type ResolvedRunConfig,
} from "./_run_config.ts";

/**
 * Whether an encoder process loads ONNX Runtime's native addon just by
 * importing the encoder registry (then every encoder process, ONNX or not,
 * needs `--allow-ffi=<that addon>`): a probe that runs `embed_context
 * --help` with no permission at all. Returns the addon path to allow, or
 * `undefined` when the probe needs nothing.
 *
 * @example
 * ```ts
 * import { probeOrtOnImport } from "./_run_plan.ts";
 * await probeOrtOnImport(); // undefined, or ".../onnxruntime_binding.node"
 * ```
 */
export async function probeOrtOnImport(
  deno: string = Deno.execPath(),
): Promise<string | undefined> {
  if (ORT_ADDON === null) return undefined;
  const out = await new Deno.Command(deno, {
    args: [
      "run",
      "--no-prompt",
      `--config=${REPO_ROOT}/deno.json`,
      `${REPO_ROOT}/pipeline/embed_context.ts`,
      "--help",
    ],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  return out.code !== 0 && /Requires ffi access/.test(new TextDecoder().decode(out.stderr))
    ? ORT_ADDON
    : undefined;
}

/** The stages, in run order. */
export type Stage = "prepare" | "encode_context" | "encode_question" | "merge" | "eval";

/** Stage groups run one after the other; the stages of a group run side by side. */
export const STAGE_GROUPS: readonly (readonly Stage[])[] = [
  ["prepare"],
  ["encode_context", "encode_question"],
  ["merge"],
  ["eval"],
];

/** What `--mode` runs. */
export type Mode = "all" | "encode" | "merge" | "eval";

/** The stages of each `--mode`. */
export const MODE_STAGES: Readonly<Record<Mode, readonly Stage[]>> = {
  all: ["prepare", "encode_context", "encode_question", "merge", "eval"],
  encode: ["prepare", "encode_context", "encode_question"],
  merge: ["merge"],
  eval: ["eval"],
};

/** How a task's completeness is checked from files. */
export type OutputCheck =
  | { readonly kind: "files"; readonly files: readonly string[] }
  | { readonly kind: "context"; readonly dir: string; readonly ids: readonly string[] }
  | { readonly kind: "question"; readonly dir: string; readonly ids: readonly string[] };

/** One unit of work: a command line, its log and how to tell it is done. */
export interface Task {
  /** Unique id: `stage/model/dataset[/part]` (`prepare/dataset`). */
  readonly id: string;
  /** Its stage. */
  readonly stage: Stage;
  /** Model abbr (`null` for `prepare`). */
  readonly model: string | null;
  /** Dataset abbr. */
  readonly dataset: string;
  /** Partition number and count (encode tasks), else `null`. */
  readonly part: { readonly index: number; readonly count: number } | null;
  /** Item range `[start, end)` in input order (encode tasks), else `null`. */
  readonly range: readonly [number, number] | null;
  /** Items it handles (paragraphs, questions, or questions scored). */
  readonly items: number;
  /** What an item is. */
  readonly unit: "articles" | "paragraphs" | "questions";
  /** The command: `argv[0]` is the Deno binary. */
  readonly argv: readonly string[];
  /** Its log file (appended to, one header line per attempt). */
  readonly log: string;
  /** Paths whose modification means progress (log, output folder). */
  readonly watch: readonly string[];
  /** Completeness check. */
  readonly check: OutputCheck;
  /** Ids of the tasks whose outputs it reads. */
  readonly deps: readonly string[];
  /** Slurm `--gres` for the task, or `null`. */
  readonly gres: string | null;
}

/** The paragraphs and questions of a dataset (after the article range). */
export interface DatasetScan {
  /** Dataset abbr. */
  readonly abbr: string;
  /** Articles taken. */
  readonly articles: number;
  /** Paragraph ids in input order. */
  readonly paragraphIds: readonly string[];
  /** Question ids in input order. */
  readonly questionIds: readonly string[];
}

/** A run's plan. */
export interface Plan {
  /** The run folder. */
  readonly runDir: string;
  /** The config. */
  readonly config: ResolvedRunConfig;
  /** The datasets as scanned. */
  readonly scans: readonly DatasetScan[];
  /** All tasks, in stage order. */
  readonly tasks: readonly Task[];
  /** Partition size used. */
  readonly maxPartitionSize: number;
}

/** The folders and files of a run folder. */
export function runLayout(runDir: string): {
  datasetDir(d: string): string;
  data(ds: ResolvedDataset): string;
  contextFile(d: string): string;
  questionFile(d: string): string;
  contextEmb(m: string, d: string): string;
  questionEmb(m: string, d: string): string;
  prediction(m: string, d: string): string;
  result(m: string, d: string): string;
  log(stage: Stage, m: string | null, d: string, part: number | null): string;
} {
  return {
    datasetDir: (d) => `${runDir}/datasets/${d}`,
    data: (ds) => ds.articles ? `${runDir}/datasets/${ds.abbr}/data.json` : ds.path,
    contextFile: (d) => `${runDir}/datasets/${d}/context.json`,
    questionFile: (d) => `${runDir}/datasets/${d}/question.json`,
    contextEmb: (m, d) => `${runDir}/dumps/${m}/${d}/context_emb`,
    questionEmb: (m, d) => `${runDir}/dumps/${m}/${d}/question_emb`,
    prediction: (m, d) => `${runDir}/predictions/${m}/${d}.json`,
    result: (m, d) => `${runDir}/results/${m}/${d}.json`,
    log: (stage, m, d, part) =>
      `${runDir}/logs/${stage}/${m === null ? "" : `${m}/`}${d}${
        part === null ? "" : `.${part}`
      }.log`,
  };
}

/**
 * Reads the paragraph and question ids of a dataset (its article range
 * only), streaming.
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { scanDataset } from "./_run_plan.ts";
 * const s = await Effect.runPromise(scanDataset({
 *   abbr: "d", type: "squad", path: "data/dev-v1.1.json.gz", articles: [8, 10],
 *   metrics: ["em", "f1"], bem: null,
 * }));
 * s.paragraphIds.length; // 47
 * ```
 */
export const scanDataset = (ds: ResolvedDataset): Effect.Effect<DatasetScan, InputError> =>
  Effect.gen(function* () {
    const [start, end] = ds.articles ?? [0, Infinity];
    const paragraphIds: string[] = [];
    const questionIds: string[] = [];
    let articles = 0;
    yield* squadArticles(ds.path, { context: "optional", qas: "optional" }).pipe(
      Stream.takeWhile((a) => a.index < end),
      Stream.runForEach((a) =>
        Effect.sync(() => {
          if (a.index < start) return;
          articles++;
          for (const p of a.paragraphs) {
            paragraphIds.push(p.id);
            for (const q of p.questions) questionIds.push(q.id);
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

/** `[start, end)` partitions of `n` items, each at most `size`. */
export function partitions(n: number, size: number): [number, number][] {
  const out: [number, number][] = [];
  for (let a = 0; a < n; a += size) out.push([a, Math.min(n, a + size)]);
  return out.length ? out : [[0, 0]];
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
  /** Encoders: the ONNX Runtime addon every encoder process must be allowed to load (see {@linkcode probeOrtOnImport}). */
  readonly ortFfi?: string;
}

/**
 * Plans every task of a run (all stages; `--mode` chooses which run).
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { loadRunConfig } from "./_run_config.ts";
 * import { planRun } from "./_run_plan.ts";
 * const cfg = await Effect.runPromise(loadRunConfig("configs/eval_two_models_mini.ts"));
 * const plan = await Effect.runPromise(planRun(cfg, { runDir: "/tmp/r", maxPartitionSize: 32 }));
 * plan.tasks.length;
 * ```
 */
export const planRun = (
  config: ResolvedRunConfig,
  opts: PlanOptions,
): Effect.Effect<Plan, InputError> =>
  Effect.gen(function* () {
    const L = runLayout(opts.runDir);
    const deno = opts.deno ?? Deno.execPath();
    const denoRun = (perms: readonly string[], script: string, args: readonly string[]) => [
      deno,
      "run",
      "--no-prompt",
      `--config=${REPO_ROOT}/deno.json`,
      ...perms,
      `${REPO_ROOT}/pipeline/${script}`,
      ...args,
    ];
    const scans: DatasetScan[] = [];
    for (const ds of config.datasets) scans.push(yield* scanDataset(ds));
    const tasks: Task[] = [];
    const size = opts.maxPartitionSize;
    for (const [di, ds] of config.datasets.entries()) {
      const scan = scans[di];
      const dir = L.datasetDir(ds.abbr);
      const prepareId = `prepare/${ds.abbr}`;
      const outs = [L.contextFile(ds.abbr), L.questionFile(ds.abbr)];
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
          [`--allow-read=${ds.path},${dir}`, `--allow-write=${dir}`],
          "_run_task.ts",
          [
            "prepare",
            `--data=${ds.path}`,
            `--out=${dir}`,
            ...(ds.articles ? [`--articles=${ds.articles[0]}:${ds.articles[1]}`] : []),
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
        const encodeIds: string[] = [];
        for (const half of ["context", "question"] as const) {
          const stage: Stage = half === "context" ? "encode_context" : "encode_question";
          const ids = half === "context" ? scan.paragraphIds : scan.questionIds;
          const input = half === "context" ? L.contextFile(ds.abbr) : L.questionFile(ds.abbr);
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
                [
                  ...encoderPermissions({ input, out, files }),
                  ...m.permissions,
                  ...(opts.ortFfi && !m.permissions.some((p) => p.startsWith("--allow-ffi"))
                    ? [`--allow-ffi=${opts.ortFfi}`]
                    : []),
                ],
                `embed_${half}.ts`,
                [
                  input,
                  out,
                  ...common,
                  ...(batch !== null ? [`--batch=${batch}`] : []),
                  `--range=${a}:${b}`,
                ],
              ),
              log: L.log(stage, m.abbr, ds.abbr, pi),
              watch: [out],
              check: { kind: half, dir: out, ids: ids.slice(a, b) },
              deps: [prepareId],
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
            [`--allow-read=${data},${cEmb},${qEmb},${predDir}`, `--allow-write=${predDir}`],
            "merge.ts",
            [data, cEmb, qEmb, pred, ...(m.sparse ? ["--sparse"] : [])],
          ),
          log: L.log("merge", m.abbr, ds.abbr, null),
          watch: [predDir],
          check: { kind: "files", files: [pred] },
          deps: [prepareId, ...encodeIds],
          gres: null,
        });
        const result = L.result(m.abbr, ds.abbr);
        const resDir = result.slice(0, result.lastIndexOf("/"));
        const bem = ds.bem;
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
            [
              `--allow-read=${data},${pred},${resDir}${bem ? `,${deno}` : ""}`,
              `--allow-write=${resDir}`,
              ...(bem ? [`--allow-run=${deno}`] : []),
            ],
            "_run_task.ts",
            [
              "eval",
              `--data=${data}`,
              `--pred=${pred}`,
              `--out=${result}`,
              ...(bem
                ? [
                  `--bem=${bem.model}`,
                  `--bem-report=${bem.report}`,
                  ...(opts.bemFfi ? [`--bem-ffi=${opts.bemFfi}`] : []),
                ]
                : []),
            ],
          ),
          log: L.log("eval", m.abbr, ds.abbr, null),
          watch: [resDir],
          check: { kind: "files", files: [result] },
          deps: [mergeId],
          gres: null,
        });
      }
    }
    const order = (s: Stage) => STAGE_GROUPS.findIndex((g) => g.includes(s));
    tasks.sort((x, y) => order(x.stage) - order(y.stage));
    return { runDir: opts.runDir, config, scans, tasks, maxPartitionSize: size };
  });

const isFile = (p: string) => {
  try {
    return Deno.statSync(p).isFile;
  } catch {
    return false;
  }
};

/**
 * The first missing output of `task`, or `undefined` when its outputs are
 * complete (then the task is skipped, not rerun).
 *
 * @example
 * ```ts
 * import { firstMissing } from "./_run_plan.ts";
 * firstMissing({ check: { kind: "files", files: ["/nonexistent"] } }); // "/nonexistent"
 * ```
 */
export function firstMissing(task: Pick<Task, "check">): string | undefined {
  const c = task.check;
  if (c.kind === "files") return c.files.find((f) => !isFile(f));
  for (const id of c.ids) {
    const stem = `${c.dir}/${dumpStem(id)}`;
    if (!isFile(`${stem}.npz`)) return `${stem}.npz`;
    if (c.kind === "context" && !isFile(`${stem}.json`)) return `${stem}.json`;
  }
  return undefined;
}

/** Whether the outputs of `task` are complete. */
export function taskComplete(task: Pick<Task, "check">): boolean {
  return firstMissing(task) === undefined;
}

/** The folders a run creates before its tasks start (outputs of every task). */
export function runFolders(plan: Plan): string[] {
  const L = runLayout(plan.runDir);
  const dirs = new Set<string>([
    `${plan.runDir}/configs`,
    `${plan.runDir}/summary`,
  ]);
  for (const t of plan.tasks) {
    dirs.add(t.log.slice(0, t.log.lastIndexOf("/")));
    if (t.stage === "prepare") dirs.add(L.datasetDir(t.dataset));
    if (t.check.kind !== "files") dirs.add(t.check.dir);
    else for (const f of t.check.files) dirs.add(f.slice(0, f.lastIndexOf("/")));
  }
  return [...dirs].filter((d) => d.startsWith(plan.runDir + "/"));
}
