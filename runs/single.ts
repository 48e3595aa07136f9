/**
 * A run of one model on one dataset, in one folder, without partitions:
 * what `full` is. The layout is flat (`<out>/context.json`,
 * `<out>/question.json`, `<out>/dumps/{context,question}_emb`,
 * `<out>/pred.json`, its per-question rows `<out>/rows.ndjson`,
 * `<out>/result.json`, `<out>/logs/`); the tasks are the
 * run's own (the same sandboxed command lines), run by the local runner
 * stage group by stage group, so a caller can do its own work between
 * groups (`full` validates the dumps before it merges).
 *
 * @module
 */
import { Effect } from "effect";
import type { EncoderSpec } from "../encoders/registry.ts";
import { InputError } from "../io/errors.ts";
import { pyFloatRepr } from "../io/pyjson.ts";
import type { ResolvedRunConfig } from "./config.ts";
import { RunError } from "./errors.ts";
import { executePlan } from "./execute.ts";
import { runFolders, type RunLayout } from "./layout.ts";
import { LocalRunner } from "./local.ts";
import { logTail } from "./logs.ts";
import { planRun } from "./plan.ts";
import { newStatus, type TaskStatus } from "./status.ts";
import type { Plan, Stage } from "./task.ts";

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
    contextEmb: () => `${out}/dumps/context_emb`,
    questionEmb: () => `${out}/dumps/question_emb`,
    prediction: () => `${out}/pred.json`,
    result: () => `${out}/result.json`,
    rows: () => `${out}/rows.ndjson`,
    log: (stage) => `${out}/logs/${stage}.log`,
  };
}

/**
 * The resolved config of one encoder (with its bundled model, on the CPU)
 * on one SQuAD file (all articles, EM and F1).
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
      dtype: null,
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
 * (`io/squad_ids.ts`) instead of refusing them.
 */
export const planSingleRun = (
  data: string,
  spec: EncoderSpec,
  out: string,
  uniqueIds = false,
): Effect.Effect<Plan, InputError> =>
  Effect.gen(function* () {
    const layout = singleRunLayout(out);
    const plan = yield* planRun(singleRunConfig(data, spec, `${out}/full.ts`, uniqueIds), {
      runDir: out,
      maxPartitionSize: Infinity,
      layout,
    });
    yield* Effect.try({
      try: () => {
        for (const d of [out, ...runFolders(plan, layout)]) Deno.mkdirSync(d, { recursive: true });
      },
      catch: (e) => new InputError({ file: out, where: "", message: String(e) }),
    });
    return plan;
  });

/** The name of each run stage in a single run's report (`full`'s stage names). */
export const SINGLE_STAGE_NAMES: Readonly<Record<Stage, string>> = {
  prepare: "split",
  encode_context: "embed_context",
  encode_question: "embed_question",
  merge: "merge",
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
    const m = /(\d+) paragraphs, (\d+) questions/.exec(last);
    return m ? `${m[1]} paragraphs, ${m[2]} questions` : last;
  }
  if (t.stage === "merge") {
    const pred = t.check.kind === "files" ? read(t.check.files[0]) : null;
    return `${pred ? Object.keys(pred).length : 0} questions answered`;
  }
  if (t.stage === "eval") {
    const r = t.check.kind === "files" ? read(t.check.files[0]) : null;
    return r ? `{"exact_match": ${pyFloatRepr(r.exact_match)}, "f1": ${pyFloatRepr(r.f1)}}` : last;
  }
  return last.replace(/^embed_(context|question): /, "");
}

/**
 * Runs the tasks of `stages` with the local runner (both encoders side by
 * side, no retries); `onDone` hears of each task as it finishes. Fails with
 * {@linkcode RunError} naming the first task that did not finish, with the
 * last lines of its log.
 */
export const runStages = (
  plan: Plan,
  stages: readonly Stage[],
  onDone: (st: TaskStatus) => void,
  timeoutS = 1800,
): Effect.Effect<readonly TaskStatus[], RunError> =>
  Effect.gen(function* () {
    const statuses = plan.tasks.filter((t) => stages.includes(t.stage)).map(newStatus);
    const r = yield* executePlan(plan.tasks, statuses, new LocalRunner(), {
      maxWorkers: 2,
      timeoutS,
      retries: 0,
      notify: (st, ev) => {
        if (ev === "done") onDone(st);
      },
    }, { skipComplete: false });
    const bad = r.statuses.find((s) => s.state !== "done" && s.state !== "skipped");
    if (bad !== undefined) {
      const tail = logTail(bad.task.log, 3).join(" | ");
      return yield* Effect.fail(
        new RunError(`${bad.task.stage} failed (${bad.error ?? bad.state}): ${tail}`),
      );
    }
    return r.statuses;
  });
