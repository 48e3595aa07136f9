/**
 * The work of `serve` ({@linkcode serveStage}; `pipeline/_serve.ts` checks
 * the flags and runs it): the checks of the index against the flags,
 * building it from a context dump (`launch.ts` `ensureIndex`), and the
 * server child ({@linkcode runServerChild}); over a folder of shards, one
 * server child per shard, kept running by `supervise.ts`, and a front child
 * that merges their answers (`pipeline/_serve_front.ts`;
 * {@linkcode runShardedServers}). Every child starts through
 * `io/process.ts`'s `spawnScoped` (`supervise.ts` `spawnServer`): its stdin
 * is a pipe from this process, whose end stops it, so no child outlives
 * its parent.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { FileError, InputError, UsageError } from "../io/errors.ts";
import { CHILD_ENV } from "../io/process.ts";
import { type EncoderSpec, encoderSpec } from "../encoders/registry.ts";
import type { BuildIndexError } from "../search/index/build.ts";
import type { IndexHeader } from "../search/index/format.ts";
import { checkIndexFileSizes, readIndexHeader } from "../search/index/read.ts";
import { defaultNprobe } from "../search/index/defaults.ts";
import { isShardSet, openShardSet, type ShardSet } from "../search/index/shards.ts";
import { stageScriptPath } from "../runs/plan/scripts.ts";
import { denoRunArgv, grantedFileProblem } from "../runs/sandbox/sandbox.ts";
import { defaultMaxConnections } from "./http.ts";
import { ensureIndex, frontGrants, isIndexFolder, serveGrants } from "./launch.ts";
import { STATIC_DIR } from "./server.ts";
import { type ServerProcess, ShardSupervisor, spawnServer } from "./supervise.ts";

/** Options of {@linkcode serveStage}: `serve`'s flags, checked on their own. */
export interface ServeStageOptions {
  /** An index folder, a folder of its shards, or a context dump (a folder or a `.zip`). */
  readonly input: string;
  /** The question encoder's name. */
  readonly encoder: string;
  /** Its model (default the bundled one). */
  readonly model?: string;
  /** Address to bind. */
  readonly host: string;
  /** Port (0: a free one, chosen here). */
  readonly port: number;
  /** Ranks when a request gives no `k`. */
  readonly topK: number;
  /** An `ivf-pq` index: partitions probed. */
  readonly nprobe?: number;
  /** An `ivf-pq` index: adaptive probing's tau (`--probe-tau`), the requests' default. */
  readonly probeTau?: number;
  /** An `ivf-pq` index: candidates re-scored exactly. */
  readonly candidates?: number;
  /** An `ivf-pq` index: answer exactly unless a request says `exact=0`. */
  readonly exact: boolean;
  /** Each server process's memory budget, bytes. */
  readonly memoryBudget?: number;
  /** Search requests waiting or running at most. */
  readonly queue: number;
  /** Seconds a request head or body may take. */
  readonly bodyTimeout: number;
  /** A dump: IVF-PQ partitions (with `bpv`). */
  readonly nlist?: number;
  /** A dump: IVF-PQ bytes per vector (with `nlist`). */
  readonly bpv?: number;
  /** A dump: IVF-PQ code bits, 8 or 4 (`index --pq-bits`; with `nlist` and `bpv`). */
  readonly pqBits?: number;
  /** A dump: build an exact index. */
  readonly exactIndex: boolean;
  /** A dump: its context file. */
  readonly context?: string;
  /** A dump: where its index goes. */
  readonly indexDir?: string;
  /** Aborted on SIGINT or SIGTERM (its `reason` is the signal's name): passed on to the children. */
  readonly signal: AbortSignal;
}

/** What {@linkcode serveStage} can fail with (all exit 2, one line). */
export type ServeStageError = UsageError | InputError | FileError | BuildIndexError;

/** What is served: one index folder (built from a dump when given one), or a folder of shards. */
interface Target {
  readonly index: string;
  readonly header: IndexHeader;
  readonly shardSet?: ShardSet;
}

/**
 * The ports {@linkcode freePort} picks from: below the ranges from which
 * Linux (32768–60999 by default), macOS and Windows (49152–65535) take the
 * local ports of outgoing connections and of listeners on port 0.
 */
export const PICKED_PORTS: readonly [number, number] = [20000, 32767];

/**
 * A free TCP port on `host` for a child server (its grant names the port,
 * so the port is chosen here, before the child starts): a random port of
 * {@linkcode PICKED_PORTS}, bound and released; one found taken, or in
 * `avoid` (the ports picked for the launch's other children), is passed
 * over (after 64 passed over, the system's choice). The child binds it about a
 * second later, once Deno has started. A port of the system's ephemeral
 * range, as port 0 gives, could meanwhile become the local port of any
 * outgoing connection on the machine: a shard server of a test once failed
 * with "Address already in use" while load tests ran beside it.
 *
 * @example
 * ```ts
 * import { freePort, PICKED_PORTS } from "./stage.ts";
 * const p = freePort("127.0.0.1");
 * if (p < PICKED_PORTS[0] || p > PICKED_PORTS[1]) throw new Error(String(p));
 * Deno.listen({ hostname: "127.0.0.1", port: p }).close(); // free
 * ```
 */
export function freePort(
  host: string,
  avoid: ReadonlySet<number> = new Set(),
  random: () => number = Math.random,
): number {
  const [low, high] = PICKED_PORTS;
  for (let i = 0; i < 64; i++) {
    const port = low + Math.floor(random() * (high - low + 1));
    if (avoid.has(port)) continue;
    try {
      Deno.listen({ hostname: host, port }).close();
      return port;
    } catch (e) {
      if (!(e instanceof Deno.errors.AddrInUse)) throw e;
    }
  }
  for (;;) {
    const l = Deno.listen({ hostname: host, port: 0 });
    const port = (l.addr as Deno.NetAddr).port;
    l.close();
    if (!avoid.has(port)) return port;
  }
}

const inputError = (file: string, message: string, where = "") =>
  Effect.fail(new InputError({ file, where, message }));

/** The index to serve, checked against the flags (built from a dump first when given one). */
const serveTarget = (
  o: ServeStageOptions,
  spec: EncoderSpec,
): Effect.Effect<Target, ServeStageError> =>
  Effect.gen(function* () {
    const { input } = o;
    const usage = (m: string) => Effect.fail(new UsageError(m));
    const st = yield* Effect.try({
      try: () => Deno.statSync(input),
      catch: (e) => new FileError({ file: input, message: (e as Error).message }),
    });
    const buildFlags = o.nlist !== undefined || o.bpv !== undefined || o.exactIndex ||
      o.context !== undefined || o.indexDir !== undefined || o.pqBits !== undefined;
    let index = input;
    let shardSet: ShardSet | undefined;
    if (st.isDirectory && isShardSet(input)) {
      if (buildFlags) {
        return yield* usage(
          `${input} is a folder of shards: --nlist, --bpv, --pq-bits, --exact-index, --context ` +
            "and --index-dir apply to a context dump",
        );
      }
      // Every shard present and of one index, or one line (search/index/shards.ts).
      shardSet = yield* Effect.try({
        try: () => openShardSet(input, readIndexHeader),
        catch: (e) => e as InputError,
      });
      if (shardSet.phrases === 0) return yield* inputError(input, "the shards hold no phrases");
      // Each shard's files of the sizes its header says, before any shard server starts.
      for (const e of shardSet.shards) {
        yield* Effect.try({
          try: () => checkIndexFileSizes(e.dir, e.header),
          catch: (err) => err as InputError,
        });
      }
    } else if (st.isDirectory && isIndexFolder(input)) {
      if (buildFlags) {
        return yield* usage(
          `${input} is an index: --nlist, --bpv, --pq-bits, --exact-index, --context and ` +
            "--index-dir apply to a context dump",
        );
      }
    } else if (st.isDirectory || /\.zip$/i.test(input)) {
      if ((o.nlist === undefined) !== (o.bpv === undefined)) {
        return yield* usage("an IVF-PQ index needs both --nlist and --bpv");
      }
      if (o.exactIndex && o.nlist !== undefined) {
        return yield* usage("--exact-index cannot go with --nlist and --bpv");
      }
      if (o.pqBits !== undefined && o.pqBits !== 4 && o.pqBits !== 8) {
        return yield* usage(`--pq-bits must be 4 or 8, got ${o.pqBits}`);
      }
      if (o.pqBits !== undefined && o.nlist === undefined) {
        return yield* usage("--pq-bits shapes an IVF-PQ index: give --nlist and --bpv");
      }
      const r = yield* ensureIndex({
        dump: input,
        indexDir: o.indexDir,
        sparse: spec.sparse,
        context: o.context,
        nlist: o.nlist,
        bpv: o.bpv,
        ...(o.pqBits === 4 ? { pqBits: 4 as const } : {}),
        onStatus: (line) => console.error(`serve: ${line}`),
      });
      index = r.dir;
    } else {
      return yield* inputError(
        input,
        "is neither an index folder nor a context dump (a folder or a .zip)",
      );
    }
    const header = shardSet !== undefined ? shardSet.shards[0].header : yield* Effect.try({
      try: () => {
        const h = readIndexHeader(index);
        checkIndexFileSizes(index, h); // before the server child starts
        return h;
      },
      catch: (e) => e as InputError,
    });
    if (
      header.kind !== "ivf-pq" && (o.nprobe !== undefined || o.candidates !== undefined || o.exact)
    ) {
      return yield* inputError(
        index,
        `is an ${header.kind} index: --nprobe, --candidates and --exact apply to ivf-pq only`,
      );
    }
    if (header.kind !== "ivf-pq" && o.probeTau !== undefined) {
      return yield* inputError(
        index,
        `is an ${header.kind} index: --probe-tau applies to ivf-pq only`,
      );
    }
    const nlist = header.parameters.nlist as number | undefined;
    if (nlist !== undefined && o.nprobe !== undefined && o.nprobe > nlist) {
      return yield* inputError(
        index,
        `--nprobe ${o.nprobe} is larger than the index's nlist ${nlist}`,
      );
    }
    if ((header.vectors === "csr") !== spec.sparse) {
      return yield* inputError(
        index,
        `has ${header.vectors} vectors but the encoder ${spec.name} writes ` +
          `${spec.sparse ? "csr" : "dense"} ones (serve the index with the encoder of its dump)`,
      );
    }
    // The server child reads its model files by name: each must be what
    // it says (no hard link to another file, no link or device in a folder).
    for (const file of spec.questionFiles) {
      const why = grantedFileProblem(file, []);
      if (why !== undefined) {
        return yield* inputError("", `${why}; the server may not be granted it`, "--model");
      }
    }
    return { index, header, ...(shardSet !== undefined ? { shardSet } : {}) };
  });

/**
 * `serve`'s work once its flags are checked: the encoder and the index
 * checked (an index folder, a folder of shards, or a dump whose index is
 * built or reused first), then the server in a permission-narrowed child
 * `deno run` ({@linkcode runServerChild}), or over shards a child per shard
 * and a front child ({@linkcode runShardedServers}), until it exits. It
 * prints `serving URL (...)` on stderr once the server is ready. Succeeds
 * with the child's exit code, as a shell reports it (0 after a graceful
 * stop on SIGINT/SIGTERM, which `o.signal` passes on).
 *
 * @example
 * ```ts ignore
 * import * as Effect from "effect/Effect";
 * import { serveStage } from "./stage.ts";
 * const code = await Effect.runPromise(serveStage({
 *   input: "out/index", encoder: "sparse-pi", host: "127.0.0.1", port: 8080, topK: 5,
 *   exact: false, queue: 32, bodyTimeout: 10, exactIndex: false,
 *   signal: new AbortController().signal,
 * }));
 * ```
 */
export const serveStage = (o: ServeStageOptions): Effect.Effect<number, ServeStageError> =>
  Effect.gen(function* () {
    const spec = yield* encoderSpec(o.encoder, o.model);
    const { index, header, shardSet } = yield* serveTarget(o, spec);
    // (Every child's port distinct: one picked is not picked again for another.)
    const picked = new Set<number>();
    const pick = (host: string) => {
      const p = freePort(host, picked);
      picked.add(p);
      return p;
    };
    const port = o.port === 0 ? pick(o.host) : o.port;
    picked.add(port);
    const childArgs = (index: string, host: string, port: number) => [
      index,
      `--encoder=${o.encoder}`,
      ...(o.model !== undefined ? [`--model=${o.model}`] : []),
      `--host=${host}`,
      `--port=${port}`,
      `--top-k=${o.topK}`,
      ...(o.nprobe !== undefined ? [`--nprobe=${o.nprobe}`] : []),
      ...(o.probeTau !== undefined ? [`--probe-tau=${o.probeTau}`] : []),
      ...(o.candidates !== undefined ? [`--refine=${o.candidates}`] : []),
      ...(o.exact ? ["--exact"] : []),
      ...(o.memoryBudget !== undefined ? [`--memory-budget=${o.memoryBudget}`] : []),
      `--queue=${o.queue}`,
      `--static=${STATIC_DIR}`,
      `--body-timeout=${o.bodyTimeout}`,
      // The child inherits this process's descriptor limit but may not read it.
      `--max-connections=${defaultMaxConnections()}`,
      "--watch-stdin",
    ];
    const childArgv = (index: string, host: string, port: number, extra: string[] = []) =>
      Effect.try({
        try: () =>
          denoRunArgv(
            stageScriptPath("serveChild"),
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
    if (shardSet === undefined) {
      const argv = yield* childArgv(index, o.host, port);
      return yield* runServerChild(argv, o.signal, (url) =>
        console.error(
          `serving ${url} (index ${index}: ${header.kind}, ${header.phrases} phrases, ` +
            `encoder ${o.encoder})`,
        ));
    }
    const set = shardSet;
    // One server child per shard (an empty shard has none), each on a loopback port.
    const shardPorts = set.shards.map((e) => e.header.phrases === 0 ? null : pick("127.0.0.1"));
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
      encoder: o.encoder,
      // (Each shard's server has the same defaults: the shards share the quantizer's nlist.)
      ...(nlist !== undefined ? { nlist, nprobe: o.nprobe ?? defaultNprobe(nlist) } : {}),
      ...(o.probeTau !== undefined ? { probe_tau: o.probeTau } : {}),
    };
    const frontArgv = yield* Effect.try({
      try: () =>
        denoRunArgv(
          stageScriptPath("serveFront"),
          [
            `--host=${o.host}`,
            `--port=${port}`,
            `--top-k=${o.topK}`,
            `--queue=${o.queue}`,
            `--static=${STATIC_DIR}`,
            `--body-timeout=${o.bodyTimeout}`,
            `--max-connections=${defaultMaxConnections()}`,
            `--shard-ports=${shardPorts.map((p) => p ?? "-").join(",")}`,
            `--info=${JSON.stringify(info)}`,
          ],
          frontGrants({
            staticDir: STATIC_DIR,
            host: o.host,
            port,
            shardPorts: shardPorts.filter((p): p is number => p !== null),
          }),
          { quiet: true },
        ),
      catch: (e) => e as InputError,
    });
    console.error(`serve: starting ${set.count} shard servers (${set.dir})`);
    return yield* runShardedServers(shardArgvs, frontArgv, o.signal, (url) =>
      console.error(
        `serving ${url} (index ${index}: ${header.kind}, ${set.phrases} phrases in ` +
          `${set.count} shards, encoder ${o.encoder})`,
      ));
  });

/**
 * `run(signal)` as an Effect whose interruption stops its children: the
 * signal `run` is given is `signal`, or an abort with the reason
 * `"SIGTERM"` when the Effect is interrupted, which waits until `run` has
 * stopped its children and ended.
 */
const untilInterrupted = (
  signal: AbortSignal,
  run: (signal: AbortSignal) => Promise<number>,
): Effect.Effect<number> =>
  Effect.suspend(() => {
    const interrupted = new AbortController();
    const running = run(AbortSignal.any([signal, interrupted.signal]));
    return Effect.promise(() => running).pipe(
      Effect.onInterrupt(() =>
        Effect.promise(() => {
          interrupted.abort("SIGTERM");
          return running.catch(() => 0);
        })
      ),
    );
  });

/**
 * Runs a server over shards until its front exits: the shards' children
 * first (all ready, else the first failure's exit code), then the front,
 * which is told every change of the shards' states on its stdin. SIGINT or
 * SIGTERM (`signal`, its `reason` the signal's name) goes to the front,
 * which answers what is in flight and exits; then the shards' children are
 * stopped with the same signal ({@linkcode ShardSupervisor.stop}); an
 * interruption stops them all as SIGTERM does, and waits for them. No child
 * outlives it. Succeeds with the front's exit code, as a shell reports it
 * (128 + n when it was stopped while the shards started); `onReady` gets
 * the front's URL once it is ready.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { runShardedServers } from "./stage.ts";
 * // A "shard" and a "front" that say they are ready; the front then exits 3.
 * const ready = (code: number) => ["sh", "-c", `echo ready http://127.0.0.1:1/; exit ${code}`];
 * const never = new AbortController().signal;
 * const code = await Effect.runPromise(
 *   runShardedServers([["sh", "-c", "echo ready x; exec sleep 30"], null], ready(3), never, () => {}),
 * );
 * if (code !== 3) throw new Error(String(code));
 * ```
 */
export const runShardedServers = (
  shardArgvs: readonly (readonly string[] | null)[],
  frontArgv: readonly string[],
  signal: AbortSignal,
  onReady: (url: string) => void,
): Effect.Effect<number> =>
  untilInterrupted(signal, async (signal) => {
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
  });

/**
 * Runs the server child until it exits ({@linkcode spawnServer}: its stdout
 * read for the `ready` line, its stderr passed through, its stdin held
 * open, so that its end tells the child the launcher is gone), passing on
 * SIGINT/SIGTERM (`signal`, its `reason` the signal's name; an
 * interruption sends SIGTERM and waits for the child to end); `onReady`
 * gets its URL once it is ready. Succeeds with the child's exit code, as a
 * shell reports it.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { runServerChild } from "./stage.ts";
 * const argv = ["sh", "-c", "echo ready http://127.0.0.1:1/; exit 3"];
 * const never = new AbortController().signal;
 * const code = await Effect.runPromise(runServerChild(argv, never, () => {}));
 * if (code !== 3) throw new Error(String(code));
 * ```
 */
export const runServerChild = (
  argv: readonly string[],
  signal: AbortSignal,
  onReady: (url: string) => void,
): Effect.Effect<number> =>
  untilInterrupted(signal, async (signal) => {
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
  });
