/**
 * The work of `search` (`pipeline/search.ts`, which loads this module only
 * to run: `--help` and bad usage need none of it): the flags' checks, then
 * `scoredSearch` (`runs/search.ts`: the search, its scores, its record).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { refuseAliases } from "../io/paths.ts";
import { scoredSearch } from "../runs/search.ts";
import { parseMemoryBudget } from "../search/index/budget.ts";
import { rowsPath, searchRecordPath } from "../search/open/record.ts";
import { indexPhraseCount, searchFormat, type SearchStageOptions } from "../search/open/stage.ts";
import { DEFAULT_TOP_K, MAX_SEARCH_THREADS } from "../search/index/defaults.ts";
import { progress, UsageError } from "./_cli.ts";
import type { ParsedArgs } from "./_args.ts";
import { indexFlagsProblem } from "./_index_flags.ts";
import type { SEARCH_SPEC } from "./search.ts";

/** `search`'s program: the predictions, top-k records and rows of the search. */
export const searchCommand = (a: ParsedArgs<typeof SEARCH_SPEC>) => {
  const k = a.flags["top-k"];
  if (k < 1) return Effect.fail(new UsageError(`--top-k must be at least 1, got ${k}`));
  const { nprobe, threads } = a.flags;
  if (threads !== undefined && threads < 1) {
    return Effect.fail(new UsageError(`--threads must be at least 1, got ${threads}`));
  }
  if (threads !== undefined && threads > MAX_SEARCH_THREADS) {
    return Effect.fail(
      new UsageError(`--threads must be at most ${MAX_SEARCH_THREADS}, got ${threads}`),
    );
  }
  const problem = indexFlagsProblem(a.flags);
  if (problem !== undefined) return Effect.fail(new UsageError(problem));
  const candidates = a.flags.candidates ?? a.flags.refine;
  const cname = a.flags.refine !== undefined ? "--refine" : "--candidates";
  if (a.flags.exact && (nprobe !== undefined || candidates !== undefined)) {
    return Effect.fail(new UsageError(`--exact cannot go with --nprobe or ${cname}`));
  }
  const probeTau = a.flags["probe-tau"];
  if (a.flags.exact && probeTau !== undefined) {
    return Effect.fail(new UsageError("--exact cannot go with --probe-tau"));
  }
  const budget = a.flags["memory-budget"];
  const memoryBudget = budget === undefined ? undefined : parseMemoryBudget(budget);
  if (typeof memoryBudget === "string") {
    return Effect.fail(new UsageError(`--memory-budget: ${memoryBudget}`));
  }
  const data = a.positional["data.json"];
  const pred = a.positional["pred.json"];
  const topkOut = a.flags["topk-out"];
  const rows = rowsPath(pred, a.flags.rows);
  if (rows !== undefined && (data === "-" || pred === "-")) {
    return Effect.fail(
      new UsageError("per-question rows read the dataset and pred.json again: give files, not -"),
    );
  }
  const record = searchRecordPath(pred);
  return Effect.gen(function* () {
    const started = performance.now();
    yield* refuseAliases(
      [
        { name: "data.json", path: data },
        { name: "index_dir", path: a.positional["index_dir"], folder: true },
        { name: "question_emb", path: a.positional["question_emb"], folder: true },
      ],
      [
        { name: "pred.json", path: pred },
        { name: "--topk-out", path: topkOut },
        { name: "--rows", path: rows },
        { name: "the search record", path: record },
      ],
    );
    const format = yield* searchFormat(data, a.flags.format);
    const f = a.flags;
    // More ranks than the index has phrases keep them all: said once, after the search
    // (a refusal stays one line), when more than the default was asked for.
    const phrases = indexPhraseCount(a.positional["index_dir"]);
    const topK = phrases !== undefined && phrases > 0 && k > phrases ? phrases : k;
    const note = topK < k && k !== DEFAULT_TOP_K
      ? `search: --top-k ${k} is more than the ${phrases} phrases of the index: ` +
        `${topK} ranks kept per question`
      : undefined;
    const stage: SearchStageOptions = {
      indexDir: a.positional["index_dir"],
      data,
      questionEmb: a.positional["question_emb"],
      predictions: pred,
      topkOut,
      topK,
      closed: f.closed,
      exact: f.exact,
      nprobe,
      ...(probeTau !== undefined ? { probeTau } : {}),
      candidates,
      ...(threads !== undefined ? { threads } : {}),
      ...(memoryBudget !== undefined ? { memoryBudget } : {}),
      simd: !f["no-simd"],
      ...(f.lang !== undefined ? { lang: f.lang } : {}),
    };
    const bar = progress("search");
    const done = yield* scoredSearch({
      stage,
      format,
      ...(f.format !== undefined ? { namedFormat: f.format } : {}),
      ...(rows !== undefined ? { rows } : {}),
      rowsAsked: f.rows !== undefined,
      ...(f.lang !== undefined ? { lang: f.lang } : {}),
      uniqueIds: f["unique-ids"],
      started,
      progress: { update: (n) => bar.update(n, "questions"), done: () => bar.done() },
    });
    if (note !== undefined) console.error(note);
    return done;
  });
};
