/**
 * The command line of a run's `prepare` and `eval` tasks
 * (`runs/plan/tasks.ts`) and of a sharded open search's `search-shard` and
 * `search-merge` tasks (`search/open/sharded.ts`); `runs/plan/stages.ts` names this
 * script in its task command lines. Each kind's arguments are one type of
 * `runs/plan/task_args.ts`, whose `toArgv` the planner writes and whose
 * `fromFlags` reads them back here (a missing or malformed flag is one
 * usage line); this module holds each kind's spec (`--help`) and the work
 * it starts. `eval --from F` copies a predictions model's answers to `--pred`
 * first; `--format`/`--lang`/`--fields` score a non-SQuAD set with its own
 * metric; `prepare --subset-only` writes the article subset without the
 * split, `prepare --questions-only` a non-SQuAD set's question-only file
 * (read with `--format`/`--lang`/`--fields`), `prepare --corpus C` the
 * corpus's passages-only file too.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import type { CommandSpec } from "./_args.ts";
import { evalCorpusSearch, evalPredictions, prepareDataset } from "../runs/plan/tasks.ts";
import { TASK_ARGS, type TaskArgs, type TaskFlags, type TaskKind } from "../runs/plan/task_args.ts";
import { runMain } from "./_cli.ts";
import { CANDIDATES_FLAG, indexFlagsProblem, NPROBE_FLAG, PROBE_TAU_FLAG } from "./_index_flags.ts";
import { exitCodeOf, UsageError } from "../io/errors.ts";

const FORMAT_FLAG = {
  name: "format",
  type: "string",
  description: "a non-SQuAD set's format",
} as const;
const LANG_FLAG = {
  name: "lang",
  type: "string",
  description: "an XQuAD/MLQA set's language",
} as const;
const FIELDS_FLAG = {
  name: "fields",
  type: "string",
  description: "a generic set's field map (JSON)",
} as const;
const UNIQUE_FLAG = {
  name: "unique-ids",
  type: "boolean",
  description: "rename repeated titles",
} as const;

/** Each task kind: its spec (`--help`), and its work on the arguments its contract read. */
interface TaskCommand<A> {
  readonly spec: CommandSpec;
  readonly args: TaskArgs<A>;
  readonly run: (args: A) => Effect.Effect<unknown, unknown>;
}

const command = <A>(c: TaskCommand<A>): TaskCommand<unknown> => c as TaskCommand<unknown>;

/** The task commands, by kind. */
export const TASK_COMMANDS: Readonly<Record<TaskKind, TaskCommand<unknown>>> = {
  prepare: command({
    spec: {
      name: "prepare",
      summary: "Take a dataset's articles and write the PI-SQuAD split (a task of run).",
      args: [],
      flags: [
        { name: "data", type: "string", description: "SQuAD file" },
        { name: "out", type: "string", description: "output folder" },
        { name: "articles", type: "string", metavar: "A:B", description: "article range" },
        UNIQUE_FLAG,
        { name: "subset-only", type: "boolean", description: "the article subset, no split" },
        {
          name: "questions-only",
          type: "boolean",
          description: "a set that is not SQuAD's: its question-only file, no split",
        },
        FORMAT_FLAG,
        LANG_FLAG,
        FIELDS_FLAG,
        { name: "corpus", type: "string", description: "the corpus: its passages-only file" },
      ],
    },
    args: TASK_ARGS.prepare,
    run: (a) =>
      Effect.gen(function* () {
        const r = yield* prepareDataset(a);
        console.error(
          `prepare: ${r.articles} articles, ${r.paragraphs} paragraphs, ${r.questions} questions` +
            (r.passages !== undefined ? `, ${r.passages} passages` : ""),
        );
      }),
  }),
  eval: command({
    spec: {
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
        UNIQUE_FLAG,
        { name: "from", type: "string", description: "answers to copy to --pred first" },
        FORMAT_FLAG,
        LANG_FLAG,
        FIELDS_FLAG,
        {
          name: "corpus-index",
          type: "string",
          description: "the index of a corpus search: score only the search (passage texts)",
        },
        { name: "top-k", type: "int", description: "ranks the search kept per question" },
      ],
    },
    args: TASK_ARGS.eval,
    run: (a) =>
      Effect.gen(function* () {
        const r = "corpusSearch" in a
          ? yield* evalCorpusSearch(a.corpusSearch)
          : yield* evalPredictions(a.predictions);
        console.error(`eval: ${JSON.stringify(r)}`);
      }),
  }),
  "search-shard": command({
    spec: {
      name: "search-shard",
      summary: "Search one shard of a sharded index: its top k of every question, with each " +
        "phrase's corpus position, in a hits file (a task of run).",
      args: [],
      flags: [
        { name: "data", type: "string", description: "the question set" },
        { name: "index", type: "string", description: "the folder of shards" },
        { name: "shard", type: "int", description: "the shard searched" },
        { name: "question-emb", type: "string", description: "the question dump" },
        { name: "out", type: "string", description: "the hits file to write" },
        { name: "top-k", type: "int", description: "ranks kept per question" },
        NPROBE_FLAG,
        PROBE_TAU_FLAG,
        CANDIDATES_FLAG,
        FORMAT_FLAG,
        LANG_FLAG,
        UNIQUE_FLAG,
      ],
    },
    args: TASK_ARGS["search-shard"],
    run: (a) =>
      Effect.gen(function* () {
        const why = indexFlagsProblem({
          nprobe: a.nprobe,
          "probe-tau": a.probeTau,
          candidates: a.candidates,
        });
        if (why !== undefined) return yield* Effect.fail(new UsageError(why));
        const { searchShard } = yield* Effect.promise(() => import("../search/open/sharded.ts"));
        const r = yield* searchShard(a);
        console.error(`search-shard: ${JSON.stringify({ shard: a.shard, ...r })}`);
      }),
  }),
  "search-merge": command({
    spec: {
      name: "search-merge",
      summary: "Merge the hits files of every shard of a sharded search into its predictions " +
        "and top-k records (a task of run).",
      args: [],
      flags: [
        { name: "parts", type: "string", description: "the folder of the shards' hits files" },
        { name: "shards", type: "int", description: "shards of the index" },
        { name: "pred", type: "string", description: "the predictions to write" },
        { name: "topk", type: "string", description: "the top-k records to write" },
      ],
    },
    args: TASK_ARGS["search-merge"],
    run: (a) =>
      Effect.gen(function* () {
        const [{ mergeShardHits }, { shardHitsFile }] = yield* Effect.promise(() =>
          Promise.all([import("../search/open/sharded.ts"), import("../search/index/shards.ts")])
        );
        const parts = Array.from(
          { length: a.shards },
          (_, i) => shardHitsFile(a.parts, i, a.shards),
        );
        const r = yield* mergeShardHits({
          parts,
          predictions: a.pred,
          ...(a.topk !== undefined ? { topkOut: a.topk } : {}),
        });
        console.error(`search-merge: ${JSON.stringify(r)}`);
      }),
  }),
};

if (import.meta.main) {
  const [kind, ...rest] = Deno.args;
  if (!Object.hasOwn(TASK_COMMANDS, kind ?? "")) {
    const e = new UsageError(
      "expected `prepare`, `eval`, `search-shard` or `search-merge` (see pipeline/run.ts)",
    );
    console.error(`_run_task: ${e.message}`);
    Deno.exit(exitCodeOf(e));
  }
  const c = TASK_COMMANDS[kind as TaskKind];
  await runMain(c.spec, rest, (a) =>
    // A missing or malformed flag: the contract's one usage line, before any work.
    Effect.try({ try: () => c.args.fromFlags(a.flags as TaskFlags), catch: (e) => e }).pipe(
      Effect.flatMap(c.run),
    ));
}
