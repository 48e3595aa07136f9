/**
 * The two task kinds of a run (`runs/plan.ts`) that are not stage scripts of
 * their own:
 *
 * - `prepare --data SRC --out DIR [--articles A:B]`: writes
 *   `DIR/data.json` (articles A..B-1 of SRC, every other field kept; only
 *   with `--articles`), then the PI-SQuAD split `DIR/context.json` and
 *   `DIR/question.json`. Each file appears atomically.
 * - `eval --data D --pred P --out R [--bem MODEL ...]`: the official SQuAD
 *   v1.1 EM/F1 of P (and BEM through `evaluate --bem` when asked), written
 *   to R atomically as `{"exact_match": ..., "f1": ..., "bem": ...}`.
 *
 * @module
 */
import { Effect, Stream } from "effect";
import { FileError, InputError, UsageError } from "../io/errors.ts";
import { openAtomicWriter } from "../io/source.ts";
import { REPO_ROOT } from "../io/repo.ts";
import { squadRecords } from "../io/squad.ts";
import { SquadJsonWriter } from "../io/squad_writer.ts";
import { evaluate } from "./evaluate.ts";
import { split } from "./split.ts";
import { denoRunArgv } from "../runs/sandbox.ts";
import { runMain, WorkError } from "./_cli.ts";

const fsDo = <A>(file: string, f: () => Promise<A>) =>
  Effect.tryPromise({
    try: f,
    catch: (e) => new FileError({ file, message: e instanceof Error ? e.message : String(e) }),
  });

/** Options of {@linkcode prepareDataset}. */
export interface PrepareOptions {
  /** The SQuAD file. */
  readonly data: string;
  /** Output folder. */
  readonly out: string;
  /** Article range `[start, end)`, or all. */
  readonly articles?: readonly [number, number];
}

/**
 * Writes the article subset (when a range is given) and the split of a
 * dataset into `opts.out`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { REPO_ROOT } from "../io/repo.ts";
 * import { prepareDataset } from "./_run_task.ts";
 * const out = await Deno.makeTempDir();
 * const r = await Effect.runPromise(prepareDataset({
 *   data: `${REPO_ROOT}/data/dev-v1.1.json.gz`, out, articles: [8, 10],
 * }));
 * if (r.paragraphs !== 47 || r.questions !== 232) throw new Error(JSON.stringify(r));
 * await Deno.remove(out, { recursive: true });
 * ```
 */
export const prepareDataset = (opts: PrepareOptions) =>
  Effect.gen(function* () {
    yield* fsDo(opts.out, () => Deno.mkdir(opts.out, { recursive: true }));
    let data = opts.data;
    if (opts.articles) {
      const [start, end] = opts.articles;
      data = `${opts.out}/data.json`;
      const target = data;
      const w = yield* fsDo(target, () => openAtomicWriter(target));
      const out = new SquadJsonWriter(w);
      const written = yield* squadRecords(opts.data).pipe(
        Stream.filter((r) => r.kind !== "article" || (r.index >= start && r.index < end)),
        Stream.runFoldEffect(
          () => 0,
          (n, r) =>
            fsDo(target, () => out.write(r)).pipe(Effect.as(r.kind === "article" ? n + 1 : n)),
        ),
        Effect.tap(() => fsDo(target, () => out.end().then(() => w.commit()))),
        Effect.onError(() => Effect.promise(() => w.abort())),
      );
      if (written < end - start) {
        return yield* Effect.fail(
          new InputError({
            file: opts.data,
            where: "",
            message: `articles [${start}, ${end}) asked, the file has ${start + written}`,
          }),
        );
      }
    }
    return yield* split({
      data,
      context: `${opts.out}/context.json`,
      question: `${opts.out}/question.json`,
    });
  });

/** Options of {@linkcode evalPredictions}. */
export interface EvalOptions {
  /** The SQuAD dataset. */
  readonly data: string;
  /** The predictions. */
  readonly pred: string;
  /** The result file to write. */
  readonly out: string;
  /** BEM: the ONNX model (scored by `pipeline/evaluate.ts --bem` in a subprocess). */
  readonly bem?: string;
  /** BEM: which number goes in `bem` (`accuracy`, default, or `score`). */
  readonly bemReport?: "accuracy" | "score";
  /** BEM: the ONNX Runtime addon the subprocess may load (`--allow-ffi=`). */
  readonly bemFfi?: string;
}

/** A result file. */
export interface EvalRecord {
  /** Official SQuAD v1.1 exact match (0..100). */
  readonly exact_match: number;
  /** Official SQuAD v1.1 F1 (0..100). */
  readonly f1: number;
  /** BEM accuracy or score (0..100), when configured. */
  readonly bem?: number;
  /** The whole BEM summary line of `evaluate --bem`, when configured. */
  readonly bem_summary?: Record<string, unknown>;
  /** Questions scored. */
  readonly total: number;
  /** Questions with a prediction. */
  readonly answered: number;
}

/**
 * BEM of the predictions, by running `pipeline/evaluate.ts --bem` as a
 * child process (read-only but for its inputs, the BEM model and the BERT
 * vocabulary; native code only ONNX Runtime's addon when known) and
 * reading the summary line it prints. The one place the `eval` task gets
 * BEM from; it is to become an in-process call of the BEM API.
 */
const bemByEvaluateProcess = (opts: EvalOptions) =>
  Effect.tryPromise({
    try: async () => {
      const [deno, ...args] = denoRunArgv(
        `${REPO_ROOT}/pipeline/evaluate.ts`,
        [opts.data, opts.pred, `--bem=${opts.bem}`],
        {
          read: [opts.data, opts.pred, opts.bem!, `${REPO_ROOT}/data/bert`],
          ffi: opts.bemFfi ? [opts.bemFfi] : true,
        },
      );
      const out = await new Deno.Command(deno, {
        args,
        stdin: "null",
        stdout: "piped",
        stderr: "inherit",
      }).output();
      if (out.code !== 0) throw new WorkError(`evaluate --bem failed (exit ${out.code})`);
      // Two JSON lines: the official EM/F1, then the BEM summary.
      const lines = new TextDecoder().decode(out.stdout).trim().split("\n");
      const summary = JSON.parse(lines[lines.length - 1]) as Record<string, unknown>;
      const key = opts.bemReport === "score" ? "bem_score" : "bem_accuracy";
      const v = summary[key];
      if (typeof v !== "number") throw new WorkError(`evaluate --bem printed no ${key}`);
      return { value: v, summary };
    },
    catch: (e) => e instanceof WorkError ? e : new WorkError(`evaluate --bem: ${e}`),
  });

/**
 * Scores predictions and writes the result file atomically.
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { evalPredictions } from "./_run_task.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/d.json`, JSON.stringify({ version: "1.1", data: [{
 *   title: "T", paragraphs: [{ context: "Paris is in France.", qas: [{ id: "q1",
 *     question: "Where is Paris?", answers: [{ text: "France", answer_start: 12 }] }] }],
 * }] }));
 * await Deno.writeTextFile(`${dir}/p.json`, JSON.stringify({ q1: "in France" }));
 * const r = await Effect.runPromise(evalPredictions({
 *   data: `${dir}/d.json`, pred: `${dir}/p.json`, out: `${dir}/r.json`,
 * }));
 * if (r.exact_match !== 0 || Math.abs(r.f1 - 200 / 3) > 1e-9 || r.answered !== 1) {
 *   throw new Error(JSON.stringify(r));
 * }
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export const evalPredictions = (opts: EvalOptions) =>
  Effect.gen(function* () {
    const ev = yield* evaluate({ data: opts.data, predictions: opts.pred });
    const r = ev.result as { exact_match: number; f1: number; total?: number; answered?: number };
    const bem = opts.bem !== undefined ? yield* bemByEvaluateProcess(opts) : undefined;
    const record: EvalRecord = {
      exact_match: r.exact_match,
      f1: r.f1,
      ...(bem ? { bem: bem.value, bem_summary: bem.summary } : {}),
      total: r.total ?? 0,
      answered: r.answered ?? 0,
    };
    const text = JSON.stringify(record) + "\n";
    yield* fsDo(opts.out, async () => {
      const w = await openAtomicWriter(opts.out);
      await w.write(text);
      await w.commit();
    });
    return record;
  });

const parseArticles = (v: string | undefined): [number, number] | undefined => {
  if (v === undefined) return undefined;
  const m = /^(\d+):(\d+)$/.exec(v);
  if (!m || Number(m[1]) >= Number(m[2])) {
    throw new UsageError(`--articles expects A:B with A < B, got "${v}"`);
  }
  return [Number(m[1]), Number(m[2])];
};

if (import.meta.main) {
  const [kind, ...rest] = Deno.args;
  if (kind === "prepare") {
    await runMain(
      {
        name: "prepare",
        summary: "Take a dataset's articles and write the PI-SQuAD split (a task of run).",
        args: [],
        flags: [
          { name: "data", type: "string", description: "SQuAD file" },
          { name: "out", type: "string", description: "output folder" },
          { name: "articles", type: "string", metavar: "A:B", description: "article range" },
        ],
      },
      rest,
      (a) =>
        Effect.gen(function* () {
          if (!a.flags["data"] || !a.flags["out"]) {
            return yield* Effect.fail(new UsageError("--data and --out are required"));
          }
          const r = yield* prepareDataset({
            data: a.flags.data,
            out: a.flags.out,
            articles: parseArticles(a.flags.articles),
          });
          console.error(
            `prepare: ${r.articles} articles, ${r.paragraphs} paragraphs, ${r.questions} questions`,
          );
        }),
    );
  } else if (kind === "eval") {
    await runMain(
      {
        name: "eval",
        summary: "Score predictions and write the result file (a task of run).",
        args: [],
        flags: [
          { name: "data", type: "string", description: "SQuAD file" },
          { name: "pred", type: "string", description: "predictions" },
          { name: "out", type: "string", description: "result file" },
          { name: "bem", type: "string", description: "BEM ONNX model" },
          {
            name: "bem-report",
            type: "string",
            choices: ["accuracy", "score"],
            description: "BEM number to report",
          },
          { name: "bem-ffi", type: "string", description: "ONNX Runtime addon (--allow-ffi)" },
        ],
      },
      rest,
      (a) =>
        Effect.gen(function* () {
          if (!a.flags["data"] || !a.flags["pred"] || !a.flags["out"]) {
            return yield* Effect.fail(new UsageError("--data, --pred and --out are required"));
          }
          const r = yield* evalPredictions({
            data: a.flags.data,
            pred: a.flags.pred,
            out: a.flags.out,
            bem: a.flags.bem,
            bemReport: a.flags["bem-report"],
            bemFfi: a.flags["bem-ffi"],
          });
          console.error(`eval: ${JSON.stringify(r)}`);
        }),
    );
  } else {
    console.error("_run_task: expected `prepare` or `eval` (see pipeline/run.ts)");
    Deno.exit(2);
  }
}
