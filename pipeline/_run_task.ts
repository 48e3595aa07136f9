/**
 * The command line of a run's `prepare` and `eval` tasks
 * (`runs/plan/tasks.ts`) and of a sharded open search's `search-shard` and
 * `search-merge` tasks (`search/open/sharded.ts`); `runs/plan/plan.ts` names this
 * script in its task command lines. `eval --from F` copies a predictions model's answers to `--pred`
 * first; `--format`/`--lang`/`--fields` score a non-SQuAD set with its own
 * metric; `prepare --subset-only` writes the article subset without the
 * split, `prepare --questions-only` a non-SQuAD set's question-only file
 * (read with `--format`/`--lang`/`--fields`), `prepare --corpus C` the
 * corpus's passages-only file too.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { UsageError } from "../io/errors.ts";
import { evalCorpusSearch, evalPredictions, prepareDataset } from "../runs/plan/tasks.ts";
import { runMain } from "./_cli.ts";
import { CANDIDATES_FLAG, indexFlagsProblem, NPROBE_FLAG } from "./_index_flags.ts";
import type { DatasetFormat } from "../io/datasets/detect.ts";
import type { FieldMap } from "../io/datasets/types.ts";

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
          { name: "subset-only", type: "boolean", description: "the article subset, no split" },
          {
            name: "questions-only",
            type: "boolean",
            description: "a set that is not SQuAD's: its question-only file, no split",
          },
          { name: "format", type: "string", description: "a non-SQuAD set's format" },
          { name: "lang", type: "string", description: "an XQuAD/MLQA set's language" },
          { name: "fields", type: "string", description: "a generic set's field map (JSON)" },
          { name: "corpus", type: "string", description: "the corpus: its passages-only file" },
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
            subsetOnly: a.flags["subset-only"] === true,
            ...(a.flags["questions-only"] === true
              ? {
                questionsOnly: {
                  ...(a.flags.format !== undefined
                    ? { format: a.flags.format as DatasetFormat }
                    : {}),
                  ...(a.flags.lang !== undefined ? { lang: a.flags.lang } : {}),
                  ...(a.flags.fields !== undefined
                    ? { fields: JSON.parse(a.flags.fields) as FieldMap }
                    : {}),
                },
              }
              : {}),
            ...(a.flags.corpus !== undefined ? { corpus: a.flags.corpus } : {}),
          });
          console.error(
            `prepare: ${r.articles} articles, ${r.paragraphs} paragraphs, ${r.questions} questions` +
              (r.passages !== undefined ? `, ${r.passages} passages` : ""),
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
          { name: "from", type: "string", description: "answers to copy to --pred first" },
          { name: "format", type: "string", description: "a non-SQuAD set's format" },
          { name: "lang", type: "string", description: "an XQuAD/MLQA set's language" },
          { name: "fields", type: "string", description: "a generic set's field map (JSON)" },
          {
            name: "corpus-index",
            type: "string",
            description: "the index of a corpus search: score only the search (passage texts)",
          },
          { name: "top-k", type: "int", description: "ranks the search kept per question" },
        ],
      },
      rest,
      (a) =>
        Effect.gen(function* () {
          const corpusIndex = a.flags["corpus-index"];
          if (corpusIndex !== undefined) {
            if (!a.flags.data || !a.flags.out || !a.flags["open-pred"] || !a.flags.topk) {
              return yield* Effect.fail(
                new UsageError("--corpus-index needs --data, --out, --open-pred and --topk"),
              );
            }
            const r = yield* evalCorpusSearch({
              data: a.flags.data,
              out: a.flags.out,
              rows: a.flags.rows,
              pred: a.flags["open-pred"],
              topk: a.flags.topk,
              index: corpusIndex,
              ranks: a.flags["top-k"],
              ...(a.flags.format !== undefined ? { format: a.flags.format } : {}),
              ...(a.flags.lang !== undefined ? { lang: a.flags.lang } : {}),
              ...(a.flags.fields !== undefined
                ? { fields: JSON.parse(a.flags.fields) as FieldMap }
                : {}),
            });
            console.error(`eval: ${JSON.stringify(r)}`);
            return;
          }
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
            ...(a.flags.from !== undefined ? { from: a.flags.from } : {}),
            ...(a.flags.format !== undefined ? { format: a.flags.format as DatasetFormat } : {}),
            ...(a.flags.lang !== undefined ? { lang: a.flags.lang } : {}),
            ...(a.flags.fields !== undefined
              ? { fields: JSON.parse(a.flags.fields) as FieldMap }
              : {}),
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
  } else if (kind === "search-shard") {
    await runMain(
      {
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
          CANDIDATES_FLAG,
          { name: "format", type: "string", description: "a non-SQuAD set's format" },
          { name: "lang", type: "string", description: "an XQuAD/MLQA set's language" },
          { name: "unique-ids", type: "boolean", description: "rename repeated titles" },
        ],
      },
      rest,
      (a) =>
        Effect.gen(function* () {
          const f = a.flags;
          if (
            !f.data || !f.index || f.shard === undefined || !f["question-emb"] || !f.out ||
            f["top-k"] === undefined
          ) {
            return yield* Effect.fail(
              new UsageError(
                "--data, --index, --shard, --question-emb, --out and --top-k are required",
              ),
            );
          }
          const why = indexFlagsProblem({ nprobe: f.nprobe, candidates: f.candidates });
          if (why !== undefined) return yield* Effect.fail(new UsageError(why));
          const { searchShard } = yield* Effect.promise(() => import("../search/open/sharded.ts"));
          const r = yield* searchShard({
            data: f.data,
            index: f.index,
            shard: f.shard,
            questionEmb: f["question-emb"],
            out: f.out,
            topK: f["top-k"],
            nprobe: f.nprobe,
            candidates: f.candidates,
            uniqueIds: f["unique-ids"] === true,
            ...(f.format !== undefined ? { format: f.format } : {}),
            ...(f.lang !== undefined ? { lang: f.lang } : {}),
          });
          console.error(`search-shard: ${JSON.stringify({ shard: f.shard, ...r })}`);
        }),
    );
  } else if (kind === "search-merge") {
    await runMain(
      {
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
      rest,
      (a) =>
        Effect.gen(function* () {
          const f = a.flags;
          if (!f.parts || f.shards === undefined || f.shards < 1 || !f.pred) {
            return yield* Effect.fail(new UsageError("--parts, --shards and --pred are required"));
          }
          const [{ mergeShardHits }, { shardHitsFile }] = yield* Effect.promise(() =>
            Promise.all([import("../search/open/sharded.ts"), import("../search/index/shards.ts")])
          );
          const parts = Array.from({ length: f.shards }, (_, i) =>
            shardHitsFile(f.parts!, i, f.shards!));
          const r = yield* mergeShardHits({
            parts,
            predictions: f.pred,
            ...(f.topk !== undefined ? { topkOut: f.topk } : {}),
          });
          console.error(`search-merge: ${JSON.stringify(r)}`);
        }),
    );
  } else {
    console.error(
      "_run_task: expected `prepare`, `eval`, `search-shard` or `search-merge` (see pipeline/run.ts)",
    );
    Deno.exit(2);
  }
}
