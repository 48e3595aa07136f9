/**
 * `serve INDEX_DIR --encoder NAME [--model M] [--port 8080] [--host
 * 127.0.0.1] [--top-k 5] [--nprobe N] [--probe-tau T] [--candidates C] [--exact] [--queue N]`: the demo
 * server (`serve/`: a web page and a JSON API over an index).
 *
 * This process is a launcher: it checks the arguments and the index (bad →
 * exit 2, one line), builds the index first when given a context dump
 * (`--nlist --bpv` or `--exact-index`; `serve/launch.ts` `ensureIndex`),
 * then runs the server in a child `deno run` granted read access to the
 * index, the encoder's model and `serve/static` only and network access to
 * its own address (`serve/launch.ts` `serveGrants`, `runs/sandbox/sandbox.ts`).
 * It prints `serving http://HOST:PORT/ (...)` on stderr when the server is
 * ready. The server holds at most a margin below the descriptor limit
 * (`ulimit -n`, read here and passed on) of connections at once; more get
 * 503. SIGINT and SIGTERM reach the child, which finishes the requests
 * already sent; the launcher exits with the child's code (0 after a graceful
 * stop). The child watches its stdin, a pipe from the launcher: when the
 * launcher is gone, even killed outright, the child stops too.
 *
 * **A folder of shards** (`index --shards N`: `shard-i-of-N` folders) is
 * served by one such child per shard, on a loopback port, and a front child
 * (`pipeline/_serve_front.ts`, granted `serve/static` and those ports only)
 * that asks every shard and merges their top k exactly (the unsharded
 * answers). All N shards must be present and of one index (else exit 2,
 * one line: `search/index/shards.ts`). A shard child that dies is started
 * again (`serve/supervise.ts`, bounded backoff); meanwhile requests get 503
 * naming the shard, and `/healthz` reports each shard's state and restarts.
 * SIGINT/SIGTERM stop the front first (it finishes what is in flight), then
 * the shards' children; none outlives the launcher.
 *
 * This file is the command line (`--help` loads nothing else); the work,
 * `pipeline/_serve.ts`, loads with `import()` only to run.
 *
 * @module
 */
import { type CommandSpec, exitOnHelpOrUsageError } from "./_args.ts";
import {
  CANDIDATES_FLAG,
  EXACT_FLAG,
  MEMORY_BUDGET_FLAG,
  NPROBE_FLAG,
  PROBE_TAU_FLAG,
  REFINE_FLAG,
} from "./_index_flags.ts";

/** `serve`'s command line. */
export const SERVE_SPEC = {
  name: "serve",
  summary: "The demo: a web page with real-time phrase search and a JSON API (/api, /v1/search, " +
    "/v1/batch, /healthz) over an index, in a process that may read only the index, the " +
    "encoder's model and serve/static. Given a context dump instead of an index, builds the " +
    "index first (or reuses the one built before from the same dump).",
  args: [
    {
      name: "index_dir",
      description:
        "an index folder (deno task index), a folder of its shards (index --shards N), " +
        "or a context dump folder or .zip",
    },
  ],
  flags: [
    {
      name: "encoder",
      type: "string",
      metavar: "NAME",
      default: "sparse-pi",
      description: "the question encoder (the one the dump was made with)",
    },
    { name: "model", type: "string", metavar: "M", description: "its model (default bundled)" },
    { name: "port", type: "int", default: 8080, description: "port (0: any free port)" },
    { name: "host", type: "string", default: "127.0.0.1", description: "address to bind" },
    {
      name: "top-k",
      type: "int",
      default: 5,
      description: "answers per query when k is not given",
    },
    NPROBE_FLAG,
    PROBE_TAU_FLAG,
    CANDIDATES_FLAG,
    REFINE_FLAG,
    EXACT_FLAG,
    {
      name: "queue",
      type: "int",
      default: 32,
      description: "searches waiting or running at most; more get 503",
    },
    {
      name: "body-timeout",
      type: "number",
      default: 10,
      metavar: "S",
      description: "seconds a request head or body may take (then 408)",
    },
    MEMORY_BUDGET_FLAG,
    {
      name: "nlist",
      type: "int",
      metavar: "N",
      description: "a dump: build an IVF-PQ index with N partitions (with --bpv)",
    },
    {
      name: "bpv",
      type: "int",
      metavar: "B",
      description: "a dump: IVF-PQ bytes per vector (with --nlist)",
    },
    {
      name: "pq-bits",
      type: "int",
      metavar: "BITS",
      description: "a dump: IVF-PQ code bits, 8 (default) or 4 (2B sub-vectors of 16 " +
        "centroids, the 4-bit fast-scan index; with --nlist and --bpv)",
    },
    {
      name: "exact-index",
      type: "boolean",
      description: "a dump: build an exact index (the default without --nlist/--bpv)",
    },
    {
      name: "context",
      type: "string",
      metavar: "FILE",
      description: "a dump: context.json (paragraph order, titles, texts and offsets)",
    },
    {
      name: "index-dir",
      type: "string",
      metavar: "DIR",
      description: "a dump: where its index goes (default <dump>.index beside it)",
    },
  ],
  examples: [
    "out/index --encoder sparse-pi",
    "out/dumps/context_emb --encoder piqa-lstm --nlist 100 --nprobe 10 --bpv 128 " +
    "--context out/context.json",
  ],
} as const satisfies CommandSpec;

if (import.meta.main) {
  // `--help` and bad usage load nothing else; the launcher's modules load only to run.
  exitOnHelpOrUsageError(SERVE_SPEC, Deno.args);
  const [{ runMain }, { serveCommand }] = await Promise.all([
    import("./_cli.ts"),
    import("./_serve.ts"),
  ]);
  await runMain(SERVE_SPEC, Deno.args, serveCommand, { onSignal: "abort" });
}
