/**
 * The command line of a run's `prepare` and `eval` tasks
 * (`runs/tasks.ts`); `runs/plan.ts` names this script in its task command
 * lines.
 *
 * @module
 */
import { Effect } from "effect";
import { UsageError } from "../io/errors.ts";
import { evalPredictions, prepareDataset } from "../runs/tasks.ts";
import { runMain } from "./_cli.ts";

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
          { name: "unique-ids", type: "boolean", description: "rename repeated titles" },
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
            uniqueIds: a.flags["unique-ids"] === true,
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
          { name: "rows", type: "string", description: "per-question rows (NDJSON)" },
          { name: "bem", type: "string", description: "BEM ONNX model" },
          {
            name: "bem-report",
            type: "string",
            choices: ["accuracy", "score"],
            description: "BEM number to report",
          },
          { name: "open-pred", type: "string", description: "open search's predictions" },
          { name: "topk", type: "string", description: "open search's top-k records (NDJSON)" },
          { name: "unique-ids", type: "boolean", description: "rename repeated titles" },
        ],
      },
      rest,
      (a) =>
        Effect.gen(function* () {
          if (!a.flags["data"] || !a.flags["pred"] || !a.flags["out"]) {
            return yield* Effect.fail(new UsageError("--data, --pred and --out are required"));
          }
          if ((a.flags["open-pred"] === undefined) !== (a.flags.topk === undefined)) {
            return yield* Effect.fail(new UsageError("--open-pred and --topk go together"));
          }
          const r = yield* evalPredictions({
            data: a.flags.data,
            pred: a.flags.pred,
            out: a.flags.out,
            rows: a.flags.rows,
            bem: a.flags.bem,
            bemReport: a.flags["bem-report"],
            ...(a.flags["open-pred"] !== undefined || a.flags.topk !== undefined
              ? {
                open: {
                  pred: a.flags["open-pred"] ?? "",
                  topk: a.flags.topk ?? "",
                  uniqueIds: a.flags["unique-ids"] === true,
                },
              }
              : {}),
          });
          console.error(`eval: ${JSON.stringify(r)}`);
        }),
    );
  } else {
    console.error("_run_task: expected `prepare` or `eval` (see pipeline/run.ts)");
    Deno.exit(2);
  }
}
