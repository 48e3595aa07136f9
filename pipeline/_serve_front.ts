/**
 * The front process of `deno task serve` over a folder of shards
 * (`pipeline/serve.ts`): the demo's routes and HTTP listener
 * (`serve/server.ts`) over a `ShardedSearcher` (`serve/shards.ts`) that
 * asks each shard's server process, on its loopback port, and merges their
 * answers. It may read the static files only and reach its own address and
 * the shards' ports only. Its stdin carries the shards' states from the
 * launcher, one JSON array a line (`[{index, count, state, restarts}]`);
 * the end of its stdin (the launcher is gone), SIGINT or SIGTERM stop it:
 * it stops taking requests, answers those in flight and exits 0. It writes
 * `ready <url>` on stdout once it listens.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { startServer } from "../serve/server.ts";
import { ShardedSearcher } from "../serve/shards.ts";
import type { SearcherInfo, ShardHealth } from "../serve/search.ts";
import { type CommandSpec, runMain } from "./_cli.ts";

/** The front process's command line (the launcher's, checked already). */
export const SERVE_FRONT_SPEC = {
  name: "serve",
  summary: "The front process of a sharded demo server (started by deno task serve).",
  args: [],
  flags: [
    { name: "host", type: "string", default: "127.0.0.1", description: "address" },
    { name: "port", type: "int", default: 8080, description: "port" },
    { name: "top-k", type: "int", default: 5, description: "default k" },
    { name: "queue", type: "int", default: 32, description: "searches waiting or running" },
    { name: "static", type: "string", metavar: "DIR", description: "static files" },
    { name: "body-timeout", type: "number", default: 10, description: "seconds" },
    {
      name: "max-connections",
      type: "int",
      metavar: "N",
      description: "connections open at once (the launcher's, from its descriptor limit)",
    },
    {
      name: "shard-ports",
      type: "string",
      metavar: "P0,P1,...",
      description: "each shard's loopback port (- for an empty shard)",
    },
    { name: "info", type: "string", metavar: "JSON", description: "what /healthz reports" },
    {
      name: "shard-timeout",
      type: "number",
      default: 30,
      metavar: "S",
      description: "seconds a shard may take to answer (then 503)",
    },
  ],
} as const satisfies CommandSpec;

if (import.meta.main) {
  await runMain(SERVE_FRONT_SPEC, Deno.args, (a, ctx) =>
    Effect.tryPromise({
      try: async () => {
        const f = a.flags;
        const ports = (f["shard-ports"] ?? "").split(",").map((p) => p === "-" ? null : Number(p));
        const searcher = new ShardedSearcher({
          info: JSON.parse(f.info ?? "{}") as SearcherInfo,
          shards: ports.map((port) => ({ port })),
          timeoutMs: f["shard-timeout"] * 1000,
        });
        const server = await startServer({
          searcher,
          host: f.host,
          port: f.port,
          topK: f["top-k"],
          queue: f.queue,
          staticDir: f.static,
          bodyTimeoutMs: f["body-timeout"] * 1000,
          headTimeoutMs: f["body-timeout"] * 1000,
          maxConnections: f["max-connections"],
        });
        const stop = () => server.shutdown();
        if (ctx.signal.aborted) stop();
        ctx.signal.addEventListener("abort", stop);
        // The shards' states, a line each; the end of stdin: the launcher is gone.
        (async () => {
          try {
            let buf = "";
            for await (const chunk of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
              buf += chunk;
              let nl;
              while ((nl = buf.indexOf("\n")) >= 0) {
                const line = buf.slice(0, nl);
                buf = buf.slice(nl + 1);
                try {
                  searcher.setStates(JSON.parse(line) as ShardHealth[]);
                } catch { /* a bad line changes nothing */ }
              }
            }
          } catch { /* closed */ }
          stop();
        })();
        await Deno.stdout.write(new TextEncoder().encode(`ready ${server.url}\n`));
        await server.finished;
      },
      catch: (e) => e,
    }), { onSignal: "abort" });
}
