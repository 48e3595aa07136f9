/**
 * The work of `serve` (`pipeline/serve.ts`, which loads this module only
 * to run: `--help` and bad usage need none of it): the checks of the
 * arguments and the index, building it from a dump (`serve/launch.ts`),
 * and the server child; over a folder of shards, one server child per
 * shard (kept running by `serve/supervise.ts`) and a front child that
 * merges their answers (`pipeline/_serve_front.ts`).
 *
 * @module
 */
import { CHILD_ENV } from "../io/process.ts";
import * as Effect from "effect/Effect";
import { FileError, InputError } from "../io/errors.ts";
import { REPO_ROOT } from "../io/repo.ts";
import { encoderSpec } from "../encoders/registry.ts";
import { readIndexHeader } from "../search/index/read.ts";
import { isShardSet, openShardSet, type ShardSet } from "../search/index/shards.ts";
import { denoRunArgv, grantedFileProblem } from "../runs/sandbox/sandbox.ts";
import { ensureIndex, frontGrants, isIndexFolder, serveGrants } from "../serve/launch.ts";
import { type ServerProcess, ShardSupervisor, spawnServer } from "../serve/supervise.ts";
import { STATIC_DIR } from "../serve/server.ts";
import { defaultMaxConnections } from "../serve/http.ts";
import { type MainContext, UsageError } from "./_cli.ts";
import type { ParsedArgs } from "./_args.ts";
import { indexFlagsProblem } from "./_index_flags.ts";
import type { SERVE_SPEC } from "./serve.ts";
import { parseMemoryBudget } from "../search/index/budget.ts";

/** A free TCP port on `host` (bound, read, released). */
function freePort(host: string): number {
  const l = Deno.listen({ hostname: host, port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** `serve`'s program: the checks, the index, then the server child until it exits. */
export const serveCommand = (a: ParsedArgs<typeof SERVE_SPEC>, ctx: MainContext) =>
  Effect.gen(function* () {
    const f = a.flags;
    const input = a.positional["index_dir"].replace(/\/+$/, "") || "/";
    const usage = (m: string) => Effect.fail(new UsageError(m));
    if (f["top-k"] < 1 || f["top-k"] > 100) return yield* usage("--top-k must be 1..100");
    if (f.port < 0 || f.port > 65535) return yield* usage(`bad --port ${f.port}`);
    if (f.queue < 1) return yield* usage("--queue must be at least 1");
    const problem = indexFlagsProblem(f);
    if (problem !== undefined) return yield* usage(problem);
    const candidates = f.candidates ?? f.refine;
    if (!(f["body-timeout"] > 0)) return yield* usage("--body-timeout must be positive");
    const budget = f["memory-budget"] === undefined
      ? undefined
      : parseMemoryBudget(f["memory-budget"]);
    if (typeof budget === "string") return yield* usage(`--memory-budget: ${budget}`);
    const spec = yield* encoderSpec(f.encoder, f.model);
    const st = yield* Effect.try({
      try: () => Deno.statSync(input),
      catch: (e) => new FileError({ file: input, message: (e as Error).message }),
    });
    const buildFlags = f.nlist !== undefined || f.bpv !== undefined || f["exact-index"] ||
      f.context !== undefined || f["index-dir"] !== undefined;
    let index = input;
    let shardSet: ShardSet | undefined;
    if (st.isDirectory && isShardSet(input)) {
      if (buildFlags) {
        return yield* usage(
          `${input} is a folder of shards: --nlist, --bpv, --exact-index, --context and ` +
            "--index-dir apply to a context dump",
        );
      }
      // Every shard present and of one index, or one line (search/index/shards.ts).
      shardSet = yield* Effect.try({
        try: () => openShardSet(input, readIndexHeader),
        catch: (e) => e as InputError,
      });
      if (shardSet.phrases === 0) {
        return yield* Effect.fail(
          new InputError({ file: input, where: "", message: "the shards hold no phrases" }),
        );
      }
    } else if (st.isDirectory && isIndexFolder(input)) {
      if (buildFlags) {
        return yield* usage(
          `${input} is an index: --nlist, --bpv, --exact-index, --context and --index-dir ` +
            "apply to a context dump",
        );
      }
    } else if (st.isDirectory || /\.zip$/i.test(input)) {
      if ((f.nlist === undefined) !== (f.bpv === undefined)) {
        return yield* usage("an IVF-PQ index needs both --nlist and --bpv");
      }
      if (f["exact-index"] && f.nlist !== undefined) {
        return yield* usage("--exact-index cannot go with --nlist and --bpv");
      }
      const r = yield* ensureIndex({
        dump: input,
        indexDir: f["index-dir"],
        sparse: spec.sparse,
        context: f.context,
        nlist: f.nlist,
        bpv: f.bpv,
        onStatus: (line) => console.error(`serve: ${line}`),
      });
      index = r.dir;
    } else {
      return yield* Effect.fail(
        new InputError({
          file: input,
          where: "",
          message: "is neither an index folder nor a context dump (a folder or a .zip)",
        }),
      );
    }
    const header = shardSet !== undefined ? shardSet.shards[0].header : yield* Effect.try({
      try: () => readIndexHeader(index),
      catch: (e) => e as InputError,
    });
    if (
      header.kind !== "ivf-pq" && (f.nprobe !== undefined || candidates !== undefined || f.exact)
    ) {
      return yield* Effect.fail(
        new InputError({
          file: index,
          where: "",
          message:
            `is an ${header.kind} index: --nprobe, --candidates and --exact apply to ivf-pq only`,
        }),
      );
    }
    const nlist = header.parameters.nlist as number | undefined;
    if (nlist !== undefined && f.nprobe !== undefined && f.nprobe > nlist) {
      return yield* Effect.fail(
        new InputError({
          file: index,
          where: "",
          message: `--nprobe ${f.nprobe} is larger than the index's nlist ${nlist}`,
        }),
      );
    }
    if ((header.vectors === "csr") !== spec.sparse) {
      return yield* Effect.fail(
        new InputError({
          file: index,
          where: "",
          message: `has ${header.vectors} vectors but the encoder ${spec.name} writes ` +
            `${spec.sparse ? "csr" : "dense"} ones (serve the index with the encoder of its dump)`,
        }),
      );
    }
    // The server child reads its model files by name: each must be what
    // it says (no hard link to another file, no link or device in a folder).
    for (const file of spec.questionFiles) {
      const why = grantedFileProblem(file, []);
      if (why !== undefined) {
        return yield* Effect.fail(
          new InputError({
            file: "",
            where: "--model",
            message: `${why}; the server may not be granted it`,
          }),
        );
      }
    }
    const port = f.port === 0 ? freePort(f.host) : f.port;
    const childArgs = (index: string, host: string, port: number) => [
      index,
      `--encoder=${f.encoder}`,
      ...(f.model !== undefined ? [`--model=${f.model}`] : []),
      `--host=${host}`,
      `--port=${port}`,
      `--top-k=${f["top-k"]}`,
      ...(f.nprobe !== undefined ? [`--nprobe=${f.nprobe}`] : []),
      ...(candidates !== undefined ? [`--refine=${candidates}`] : []),
      ...(f.exact ? ["--exact"] : []),
      ...(budget !== undefined ? [`--memory-budget=${budget}`] : []),
      `--queue=${f.queue}`,
      `--static=${STATIC_DIR}`,
      `--body-timeout=${f["body-timeout"]}`,
      // The child inherits this process's descriptor limit but may not read it.
      `--max-connections=${defaultMaxConnections()}`,
      "--watch-stdin",
    ];
    const childArgv = (index: string, host: string, port: number, extra: string[] = []) =>
      Effect.try({
        try: () =>
          denoRunArgv(
            `${REPO_ROOT}/pipeline/_serve_child.ts`,
            [...childArgs(index, host, port), ...extra],
            serveGrants({
              index,
              modelFiles: spec.questionFiles,
              staticDir: STATIC_DIR,
              host,
              port,
              encoderFlags: spec.permissions,
            }),
            { quiet: true },
          ),
        catch: (e) => e as InputError,
      });
    if (shardSet !== undefined) {
      const set = shardSet;
      // One server child per shard (an empty shard has none), each on a loopback port.
      const shardPorts = set.shards.map((e) =>
        e.header.phrases === 0 ? null : freePort("127.0.0.1")
      );
      const shardArgvs: (string[] | null)[] = [];
      for (const [i, e] of set.shards.entries()) {
        const p = shardPorts[i];
        shardArgvs.push(
          p === null ? null : yield* childArgv(e.dir, "127.0.0.1", p, ["--shard-hits"]),
        );
      }
      const nlist = header.parameters.nlist as number | undefined;
      const info = {
        kind: header.kind,
        metric: header.metric,
        phrases: set.phrases,
        paragraphs: set.paragraphs,
        d: header.d,
        encoder: f.encoder,
        ...(nlist !== undefined ? { nlist } : {}),
      };
      const frontArgv = yield* Effect.try({
        try: () =>
          denoRunArgv(
            `${REPO_ROOT}/pipeline/_serve_front.ts`,
            [
              `--host=${f.host}`,
              `--port=${port}`,
              `--top-k=${f["top-k"]}`,
              `--queue=${f.queue}`,
              `--static=${STATIC_DIR}`,
              `--body-timeout=${f["body-timeout"]}`,
              `--max-connections=${defaultMaxConnections()}`,
              `--shard-ports=${shardPorts.map((p) => p ?? "-").join(",")}`,
              `--info=${JSON.stringify(info)}`,
            ],
            frontGrants({
              staticDir: STATIC_DIR,
              host: f.host,
              port,
              shardPorts: shardPorts.filter((p): p is number => p !== null),
            }),
            { quiet: true },
          ),
        catch: (e) => e as InputError,
      });
      console.error(`serve: starting ${set.count} shard servers (${set.dir})`);
      const code = yield* Effect.promise(() =>
        runSharded(shardArgvs, frontArgv, ctx.signal, (url) =>
          console.error(
            `serving ${url} (index ${index}: ${header.kind}, ${set.phrases} phrases in ` +
              `${set.count} shards, encoder ${f.encoder})`,
          ))
      );
      if (code !== 0) Deno.exit(code);
      return;
    }
    const argv = yield* childArgv(index, f.host, port);
    const code = yield* Effect.promise(() =>
      runChild(argv, ctx.signal, (url) =>
        console.error(
          `serving ${url} (index ${index}: ${header.kind}, ${header.phrases} phrases, ` +
            `encoder ${f.encoder})`,
        ))
    );
    if (code !== 0) Deno.exit(code);
  });

/**
 * Runs a server over shards until its front exits: the shards' children
 * first (all ready, else the first failure's exit code), then the front,
 * which is told every change of the shards' states on its stdin. The
 * launcher's SIGINT/SIGTERM (`signal`) go to the front, which answers what
 * is in flight and exits; then the shards' children are stopped with the
 * same signal. No child outlives it. The front's exit code, as a shell
 * reports it (128 + n when it was stopped while starting).
 */
async function runSharded(
  shardArgvs: readonly (readonly string[] | null)[],
  frontArgv: readonly string[],
  signal: AbortSignal,
  onReady: (url: string) => void,
): Promise<number> {
  let front: ServerProcess | undefined;
  let stopSig: "SIGINT" | "SIGTERM" | undefined;
  const sup = new ShardSupervisor({
    shards: shardArgvs.map((argv) => ({ argv })),
    env: { ...CHILD_ENV },
    onChange: (states) => front?.send(JSON.stringify(states)),
    log: (line) => console.error(`serve: ${line}`),
  });
  const onAbort = () => {
    stopSig = signal.reason === "SIGTERM" ? "SIGTERM" : "SIGINT";
    if (front === undefined) sup.stop(stopSig);
    else {
      try {
        front.child.kill(stopSig);
      } catch { /* gone */ }
    }
  };
  if (signal.aborted) onAbort();
  signal.addEventListener("abort", onAbort);
  try {
    try {
      await sup.start();
    } catch (e) {
      console.error(`serve: ${(e as Error).message}`);
      await sup.stop("SIGTERM");
      return (e as { exitCode?: number }).exitCode ?? 1;
    }
    if (stopSig !== undefined) {
      await sup.stop(stopSig);
      return stopSig === "SIGTERM" ? 143 : 130;
    }
    const fp = front = spawnServer(frontArgv, { ...CHILD_ENV });
    fp.send(JSON.stringify(sup.states));
    fp.ready.then((url) => url !== undefined && onReady(url));
    const code = await fp.exit;
    await sup.stop(stopSig ?? "SIGTERM");
    return code;
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}

/**
 * Runs the server child until it exits ({@linkcode spawnServer}: its stdout
 * read for the `ready` line, its stderr passed through, its stdin held open,
 * so that its end tells the child the launcher is gone), passing on the
 * launcher's SIGINT/SIGTERM (`signal`). The child's exit code, as a shell
 * reports it.
 */
async function runChild(
  argv: string[],
  signal: AbortSignal,
  onReady: (url: string) => void,
): Promise<number> {
  const p = spawnServer(argv, { ...CHILD_ENV });
  const forward = () => {
    try {
      p.child.kill(signal.reason === "SIGTERM" ? "SIGTERM" : "SIGINT");
    } catch { /* gone */ }
  };
  if (signal.aborted) forward();
  signal.addEventListener("abort", forward);
  p.ready.then((url) => url !== undefined && onReady(url));
  const code = await p.exit;
  signal.removeEventListener("abort", forward);
  return code;
}
