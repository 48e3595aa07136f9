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

/**
 * What is wrong with `--host`, or `undefined`: a name that does not resolve,
 * or an address that is not this machine's, cannot be listened on (bad
 * usage, found before anything starts). Tried by listening on it (any free
 * port) and closing at once, as the server resolves it.
 *
 * @example
 * ```ts
 * import { hostProblem } from "./_serve.ts";
 * if (hostProblem("127.0.0.1") !== undefined) throw new Error("loopback");
 * if (!hostProblem("0.0.0.0.1")?.startsWith("--host 0.0.0.0.1: ")) throw new Error();
 * ```
 */
export function hostProblem(host: string): string | undefined {
  try {
    Deno.listen({ hostname: host, port: 0 }).close();
    return undefined;
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    if (e instanceof Deno.errors.AddrNotAvailable || /lookup address|resolve|invalid/i.test(why)) {
      return `--host ${host}: not an address of this machine to listen on (${why})`;
    }
    return undefined; // anything else (permissions, a port problem): the server says it
  }
}

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
    const host = hostProblem(f.host);
    if (host !== undefined) return yield* usage(host);
    const code = yield* serveStage({
      input: a.positional["index_dir"].replace(/\/+$/, "") || "/",
      encoder: f.encoder,
      model: f.model,
      host: f.host,
      port: f.port,
      topK: f["top-k"],
      nprobe: f.nprobe,
      probeTau: f["probe-tau"],
      candidates: f.candidates ?? f.refine,
      exact: f.exact,
      memoryBudget: budget,
      queue: f.queue,
      bodyTimeout: f["body-timeout"],
      nlist: f.nlist,
      bpv: f.bpv,
      pqBits: f["pq-bits"],
      exactIndex: f["exact-index"],
      context: f.context,
      indexDir: f["index-dir"],
      signal: ctx.signal,
    });
    if (code !== 0) Deno.exit(code);
  });
