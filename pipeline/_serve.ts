/**
 * The work of `serve` (`pipeline/serve.ts`, which loads this module only
 * to run: `--help` and bad usage need none of it): the checks of the
 * flags, then `serve/stage.ts`'s {@linkcode serveStage} (the index checked,
 * or built from a dump; the server child, or over a folder of shards one
 * child per shard and a front child), whose exit code is this process's.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { serveStage } from "../serve/stage.ts";
import { type MainContext, UsageError } from "./_cli.ts";
import type { ParsedArgs } from "./_args.ts";
import { indexFlagsProblem } from "./_index_flags.ts";
import type { SERVE_SPEC } from "./serve.ts";
import { parseMemoryBudget } from "../search/index/budget.ts";

/** `serve`'s program: the checks of the flags, then the stage until the server child exits. */
export const serveCommand = (a: ParsedArgs<typeof SERVE_SPEC>, ctx: MainContext) =>
  Effect.gen(function* () {
    const f = a.flags;
    const usage = (m: string) => Effect.fail(new UsageError(m));
    if (f["top-k"] < 1 || f["top-k"] > 100) return yield* usage("--top-k must be 1..100");
    if (f.port < 0 || f.port > 65535) return yield* usage(`bad --port ${f.port}`);
    if (f.queue < 1) return yield* usage("--queue must be at least 1");
    const problem = indexFlagsProblem(f);
    if (problem !== undefined) return yield* usage(problem);
    if (!(f["body-timeout"] > 0)) return yield* usage("--body-timeout must be positive");
    const budget = f["memory-budget"] === undefined
      ? undefined
      : parseMemoryBudget(f["memory-budget"]);
    if (typeof budget === "string") return yield* usage(`--memory-budget: ${budget}`);
    const code = yield* serveStage({
      input: a.positional["index_dir"].replace(/\/+$/, "") || "/",
      encoder: f.encoder,
      model: f.model,
      host: f.host,
      port: f.port,
      topK: f["top-k"],
      nprobe: f.nprobe,
      candidates: f.candidates ?? f.refine,
      exact: f.exact,
      memoryBudget: budget,
      queue: f.queue,
      bodyTimeout: f["body-timeout"],
      nlist: f.nlist,
      bpv: f.bpv,
      exactIndex: f["exact-index"],
      context: f.context,
      indexDir: f["index-dir"],
      signal: ctx.signal,
    });
    if (code !== 0) Deno.exit(code);
  });
