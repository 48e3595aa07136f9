/**
 * A run of one model on one dataset, in one folder, without partitions:
 * what `full` is. The layout is flat (`<out>/context.json`,
 * `<out>/question.json`, `<out>/dumps/{context,question}_emb`,
 * `<out>/pred.json`, its per-question rows `<out>/rows.ndjson`,
 * `<out>/result.json`, `<out>/logs/`, and with the open search
 * `<out>/index/` and `<out>/open/{pred.json,topk.ndjson}`); the tasks are the
 * run's own (the same sandboxed command lines), run by the local runner
 * stage group by stage group, so a caller can do its own work between
 * groups (`full` validates the dumps before it merges).
 *
 * @module
 */
import * as Cause from "effect/Cause";
import * as Deferred from "effect/Deferred";
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import type { EncoderSpec } from "../encoders/registry.ts";
import { type FileError, InputError, WriteError, writeFailure } from "../io/errors.ts";
import { pyFloatRepr } from "../io/pyjson.ts";
import type { ResolvedRunConfig } from "./config/config.ts";
import { RunError } from "./errors.ts";
import { executeUntil } from "./runners/execute.ts";
import { PASSAGES_FILE, QUESTIONS_ONLY_FILE, runFolders, type RunLayout } from "./plan/layout.ts";
import { LocalRunnerLive } from "./runners/local.ts";
import { lastExitStatus, logTail } from "./runners/logs.ts";
import { planRun } from "./plan/plan.ts";
import { newStatus, type TaskStatus } from "./runners/status.ts";
import type { Plan, Stage } from "./plan/task.ts";

/**
 * The flat layout of a single run in `out`.
 *
 * @example
 * ```ts
 * import { singleRunLayout } from "./single.ts";
 * const L = singleRunLayout("/o");
 * if (L.contextEmb("m", "d") !== "/o/dumps/context_emb" || L.rows("m", "d") !== "/o/rows.ndjson") {
 *   throw new Error();
 * }
 * ```
 */
export function singleRunLayout(out: string): RunLayout {
  return {
    runDir: out,
    datasetDir: () => out,
    data: (ds) => ds.path,
    contextFile: () => `${out}/context.json`,
    questionFile: () => `${out}/question.json`,
    questionsOnly: () => `${out}/${QUESTIONS_ONLY_FILE}`,
    passages: () => `${out}/${PASSAGES_FILE}`,
    contextEmb: () => `${out}/dumps/context_emb`,
    questionEmb: () => `${out}/dumps/question_emb`,
    prediction: () => `${out}/pred.json`,
    result: () => `${out}/result.json`,
    rows: () => `${out}/rows.ndjson`,
    log: (stage) => `${out}/logs/${stage}.log`,
    index: () => `${out}/index`,
    openPrediction: () => `${out}/open/pred.json`,
    topk: () => `${out}/open/topk.ndjson`,
    shardHits: () => `${out}/hits`,
  };
}

/**
 * The resolved config of one encoder (with its bundled model, on the CPU)
 * on one SQuAD file (all articles, EM and F1); `dtype` is the dense
 * element type its dumps store (`null`: the encoder's own).
 *
 * @example
 * ```ts
 * import { singleRunConfig } from "./single.ts";
 * const spec = { name: "e", sparse: true, contextFiles: ["/c"], questionFiles: ["/q"] };
 * const cfg = singleRunConfig("/d.json", spec as never, "/o/full.ts");
 * if (cfg.models[0].encoder !== "e" || cfg.datasets[0].articles !== null) throw new Error();
 * ```
 */
export function singleRunConfig(
  data: string,
  spec: EncoderSpec,
  file: string,
  uniqueIds = false,
  open?: { readonly topK: number; readonly corpus?: string },
  dtype: "f32" | "f16" | null = null,
): ResolvedRunConfig {
  return {
    file,
    name: "full",
    datasets: [{
      abbr: "data",
      type: "squad",
      path: data,
      articles: null,
      ...(uniqueIds ? { uniqueIds: true } : {}),
      ...(open !== undefined ? { open: { topK: open.topK } } : {}),
      ...(open?.corpus !== undefined ? { corpus: open.corpus } : {}),
      metrics: ["em", "f1"],
      bem: null,
    }],
    models: [{
      abbr: spec.name,
      encoder: spec.name,
      model: null,
      device: "cpu",
      threads: null,
      batch: { context: null, question: null },
      dtype,
      sparse: spec.sparse,
      contextFiles: [...spec.contextFiles],
      questionFiles: [...spec.questionFiles],
      permissions: [...(spec.permissions ?? [])],
    }],
    workDir: null,
    maxPartitionSize: null,
    maxWorkers: null,
    taskTimeout: null,
    retries: null,
  };
}

/**
 * Plans the single run of `spec` on `data` in `out` (one partition per
 * half) and creates its folders; `uniqueIds` renames repeated titles
 * (`io/squad_ids.ts`) instead of refusing them; `open` adds the open
 * search (`index` and `search` tasks, `topK` ranks), over `corpus` when
 * given (then no merge: the eval task scores the search); `dtype` is the
 * dense element type the dumps store (`null`: the encoder's own).
 */
export const planSingleRun = (
  data: string,
  spec: EncoderSpec,
  out: string,
  uniqueIds = false,
  open?: { readonly topK: number; readonly corpus?: string },
  dtype: "f32" | "f16" | null = null,
): Effect.Effect<Plan, InputError | FileError> =>
  Effect.gen(function* () {
    const layout = singleRunLayout(out);
    const config = singleRunConfig(data, spec, `${out}/full.ts`, uniqueIds, open, dtype);
    const plan = yield* planRun(config, {
      runDir: out,
      maxPartitionSize: Infinity,
      layout,
    });
    yield* Effect.try({
      try: () => {
        for (const d of [out, ...runFolders(plan, layout)]) Deno.mkdirSync(d, { recursive: true });
      },
      // The system refusing the folder (read-only, permission, disk full) fails the
      // work (exit 1); anything else (a file in the way) is bad usage.
      catch: (e) => {
        const w = writeFailure(out, e);
        return w instanceof WriteError
          ? new WriteError({ file: out, message: String(e) })
          : new InputError({ file: out, where: "", message: String(e) });
      },
    });
    return plan;
  });

/**
 * Removes the folders of `plan` (and their parents inside the run folder)
 * that are still empty, and the run folder itself when `runDir` is true
 * and it is empty: what a run that failed early leaves otherwise. Never
 * removes a file or a folder that holds one.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { removeEmptyRunFolders } from "./single.ts";
 * const out = Deno.makeTempDirSync();
 * Deno.mkdirSync(`${out}/dumps/context_emb`, { recursive: true });
 * Deno.mkdirSync(`${out}/logs`);
 * Deno.writeTextFileSync(`${out}/logs/prepare.log`, "== exit 2\n");
 * const log = `${out}/logs/prepare.log`;
 * const plan = { runDir: out, tasks: [{ log, stage: "encode_context", check: { kind: "context", dir: `${out}/dumps/context_emb`, ids: [] } }] };
 * await Effect.runPromise(removeEmptyRunFolders(plan as never, true));
 * if ([...Deno.readDirSync(out)].map((e) => e.name).join() !== "logs") throw new Error();
 * Deno.removeSync(out, { recursive: true });
 * ```
 */
export const removeEmptyRunFolders = (plan: Plan, runDir: boolean): Effect.Effect<void> =>
  Effect.sync(() => {
    const root = plan.runDir;
    const dirs = new Set<string>();
    for (let d of runFolders(plan, singleRunLayout(root))) {
      while (d.startsWith(root + "/")) {
        dirs.add(d);
        d = d.slice(0, d.lastIndexOf("/"));
      }
    }
    const order = [...dirs].sort((a, b) => b.split("/").length - a.split("/").length);
    for (const d of runDir ? [...order, root] : order) {
      try {
        Deno.removeSync(d); // not recursive: fails on a folder that is not empty
      } catch { /* not empty, or gone */ }
    }
  });

/** The name of each run stage in a single run's report (`full`'s stage names). */
export const SINGLE_STAGE_NAMES: Readonly<Record<Stage, string>> = {
  prepare: "split",
  encode_context: "embed_context",
  encode_question: "embed_question",
  index_train: "index_train",
  merge: "merge",
  index: "index",
  search: "search",
  search_merge: "search_merge",
  eval: "evaluate",
};

/** The seconds a finished task ran. */
export const taskSeconds = (st: TaskStatus): number =>
  st.started !== null && st.ended !== null ? (st.ended - st.started) / 1000 : 0;

/**
 * One line on what a finished task did, from its log and outputs:
 * `2067 paragraphs, 10570 questions` (prepare), the encoder's own summary
 * line, `10570 questions answered` (merge), the official EM/F1 (eval).
 */
export function taskDetail(st: TaskStatus): string {
  const t = st.task;
  const last = logTail(t.log, 1)[0] ?? "";
  const read = (f: string) => {
    try {
      return JSON.parse(Deno.readTextFileSync(f));
    } catch {
      return null;
    }
  };
  if (t.stage === "prepare") {
    const m = /(\d+) paragraphs, (\d+) questions(, \d+ passages)?/.exec(last);
    return m ? `${m[1]} paragraphs, ${m[2]} questions${m[3] ?? ""}` : last;
  }
  if (t.stage === "merge") {
    const pred = t.check.kind === "files" ? read(t.check.files[0]) : null;
    return `${pred ? Object.keys(pred).length : 0} questions answered`;
  }
  if (t.stage === "eval") {
    const r = t.check.kind === "files" ? read(t.check.files[0]) : null;
    return r ? `{"exact_match": ${pyFloatRepr(r.exact_match)}, "f1": ${pyFloatRepr(r.f1)}}` : last;
  }
  return last.replace(/^(embed_context|embed_question|index|search): /, "");
}

/**
 * Runs the tasks of `stages` with the local runner (both encoders side by
 * side, no retries); `onDone` hears of each task as it finishes. The first
 * task that fails stops the others at once (their processes are stopped
 * and awaited before this fails). Fails with {@linkcode RunError} naming
 * that task, with the last lines of its log; its exit code is 2 when the
 * task exited 2 (bad input), else 1. Interrupted, it stops and awaits
 * every running task.
 */
export const runStages = (
  plan: Plan,
  stages: readonly Stage[],
  onDone: (st: TaskStatus) => void,
  timeoutS = 1800,
): Effect.Effect<readonly TaskStatus[], RunError> =>
  Effect.gen(function* () {
    const statuses = plan.tasks.filter((t) => stages.includes(t.stage)).map(newStatus);
    const failed = Deferred.makeUnsafe<void>();
    // The local runner, from the runner service (its Layer: `LocalRunnerLive`).
    // Whichever comes first: every task ended, or one failed (the rest are
    // then interrupted: stopped and awaited).
    const exit = yield* executeUntil(
      plan.tasks,
      statuses,
      {
        maxWorkers: 2,
        timeoutS,
        retries: 0,
        notify: (st, ev) => {
          if (ev === "done") onDone(st);
          if (ev === "failed") Deferred.doneUnsafe(failed, Effect.void);
        },
      },
      Deferred.await(failed),
      { skipComplete: false },
    );
    if (Exit.isFailure(exit) && !Cause.hasInterruptsOnly(exit.cause)) {
      return yield* Effect.failCause(exit.cause); // a defect: as before, not a task's failure
    }
    const bad = statuses.find((s) => s.state === "failed") ??
      statuses.find((s) => s.state !== "done" && s.state !== "skipped");
    if (bad !== undefined) {
      const tail = logTail(bad.task.log, 3).join(" | ");
      return yield* Effect.fail(
        new RunError(
          `${bad.task.stage} failed (${bad.error ?? bad.state}): ${tail}`,
          bad.state === "failed" && lastExitStatus(bad.task.log) === 2 ? 2 : 1,
        ),
      );
    }
    return statuses;
  }).pipe(Effect.provide(LocalRunnerLive()));
