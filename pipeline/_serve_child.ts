/**
 * The server process `deno task serve` starts (`pipeline/serve.ts`), with
 * read access to the index, the model and the static files only and
 * network access to its own address only. It opens the index
 * (`PhraseIndexLive`) and, over it, the server (`DemoServerLive`: the
 * encoder and the listener), listens, writes `ready <url>` on stdout, and serves until
 * SIGINT, SIGTERM or the end of its stdin (the launcher is gone): then it
 * stops taking requests, answers those in flight and exits 0. It may not
 * read `/proc/self/limits`: the launcher, which shares its descriptor
 * limit, gives the connection cap (`--max-connections`). Over a folder of
 * shards the launcher starts one per shard, on a loopback port, with
 * `--shard-hits` (its hits carry what the front merges by).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import { PhraseIndexLive } from "../search/open/phrase_index.ts";
import { DemoServer, DemoServerLive } from "../serve/server.ts";
import { type CommandSpec, runMain } from "./_cli.ts";

/** The server process's command line (the launcher's, checked already). */
export const SERVE_CHILD_SPEC = {
  name: "serve",
  summary: "The demo server process (started by deno task serve).",
  args: [{ name: "index_dir", description: "the index folder" }],
  flags: [
    { name: "encoder", type: "string", metavar: "NAME", description: "question encoder" },
    { name: "model", type: "string", metavar: "M", description: "its model" },
    { name: "host", type: "string", default: "127.0.0.1", description: "address" },
    { name: "port", type: "int", default: 8080, description: "port" },
    { name: "top-k", type: "int", default: 5, description: "default k" },
    { name: "nprobe", type: "int", metavar: "N", description: "ivf-pq partitions probed" },
    {
      name: "probe-tau",
      type: "number",
      metavar: "T",
      description: "ivf-pq adaptive probing (the launcher's --probe-tau, checked)",
    },
    {
      name: "refine",
      type: "int",
      metavar: "R",
      description: "ivf-pq candidates re-scored exactly",
    },
    { name: "exact", type: "boolean", description: "ivf-pq: exact unless exact=0" },
    { name: "queue", type: "int", default: 32, description: "searches waiting or running" },
    { name: "static", type: "string", metavar: "DIR", description: "static files" },
    { name: "body-timeout", type: "number", default: 10, description: "seconds" },
    {
      name: "max-connections",
      type: "int",
      metavar: "N",
      description: "connections open at once (the launcher's, from its descriptor limit)",
    },
    { name: "watch-stdin", type: "boolean", description: "stop at the end of stdin" },
    {
      name: "memory-budget",
      type: "int",
      metavar: "BYTES",
      description: "read a dense index from disk on demand within BYTES (the launcher's, parsed)",
    },
    {
      name: "shard-hits",
      type: "boolean",
      description: "a shard's index: hits carry position and phrase_index (for the front)",
    },
  ],
} as const satisfies CommandSpec;

if (import.meta.main) {
  await runMain(SERVE_CHILD_SPEC, Deno.args, (a, ctx) => {
    const f = a.flags;
    // The index's Layer owns it (its search workers, its files); the server's Layer,
    // over it, shuts down first when the program ends.
    const index = PhraseIndexLive(
      a.positional["index_dir"],
      f["memory-budget"] !== undefined ? { memoryBudget: f["memory-budget"] } : {},
    );
    const server = DemoServerLive({
      encoder: f.encoder ?? "sparse-pi",
      model: f.model,
      host: f.host,
      port: f.port,
      topK: f["top-k"],
      nprobe: f.nprobe,
      probeTau: f["probe-tau"],
      refine: f.refine,
      exact: f.exact,
      shardHits: f["shard-hits"],
      queue: f.queue,
      staticDir: f.static,
      bodyTimeoutMs: f["body-timeout"] * 1000,
      headTimeoutMs: f["body-timeout"] * 1000,
      maxConnections: f["max-connections"],
    });
    const serve = Effect.gen(function* () {
      const s = yield* DemoServer;
      yield* Effect.tryPromise({
        try: async () => {
          const stop = () => s.shutdown();
          if (ctx.signal.aborted) stop();
          ctx.signal.addEventListener("abort", stop);
          // The end of stdin: the launcher is gone (even SIGKILLed); stop too.
          if (f["watch-stdin"]) {
            (async () => {
              try {
                for await (const _ of Deno.stdin.readable) { /* nothing is sent */ }
              } catch { /* closed */ }
              stop();
            })();
          }
          await Deno.stdout.write(new TextEncoder().encode(`ready ${s.url}\n`));
          await s.finished;
        },
        catch: (e) => e,
      });
    });
    return Effect.provide(serve, Layer.provide(server, index));
  }, { onSignal: "abort" });
}
