/**
 * The shard processes of a server over a folder of shards: the launcher
 * (`stage.ts` `runShardedServers`) starts one server process per shard
 * ({@linkcode spawnServer}: its stdout read for its `ready` line, its stdin
 * held open so that its end tells the process the launcher is gone) and a
 * {@linkcode ShardSupervisor} keeps them running:
 *
 * - **Start.** Every shard's process is started; {@linkcode ShardSupervisor.start}
 *   resolves once all are ready, and fails (with the process's exit code)
 *   if one exits before it is ready: a shard that cannot start at all (a
 *   bad index) stops the server before it takes a request.
 * - **Restart.** A process that exits after it was ready (killed, crashed)
 *   is `down`: it is started again after a backoff of `firstMs`, doubled
 *   for each start in a row that did not get ready, at most `maxMs`; while
 *   it loads it is `restarting`, then `up` again. Every change goes to
 *   `onChange` (the front, which answers 503 for a shard that is not up).
 * - **Stop.** {@linkcode ShardSupervisor.stop} ends the restarts, sends
 *   the signal to every process, waits for them (SIGKILL after `killAfterMs`)
 *   and resolves when none is left.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import * as Scope from "effect/Scope";
import { exitCode, spawnScoped } from "../io/process.ts";
import type { ShardHealth } from "./search.ts";

/** The exit code of a process's status, as a shell reports it (128 + n for a signal). */
export const shellCode: (status: Deno.CommandStatus) => number = exitCode;

/** A server process started by {@linkcode spawnServer}. */
export interface ServerProcess {
  /** The process. */
  readonly child: Deno.ChildProcess;
  /** Its `ready <url>` line's URL, or `undefined` when its stdout ended first. */
  readonly ready: Promise<string | undefined>;
  /** Its exit code (see {@linkcode shellCode}). */
  readonly exit: Promise<number>;
  /** Writes a line to its stdin (dropped once it is gone). */
  send(line: string): void;
}

/**
 * Starts a server process from its full command line through
 * `io/process.ts`'s `spawnScoped`: stdin piped and held open, stdout read
 * for `ready <url>`, stderr passed through, `env` added to the environment
 * (on top of `CHILD_ENV`). Throws what Deno throws when it cannot start.
 *
 * Its scope closes once it has exited, so the release (stop, then await)
 * only awaits it: stopping it is its owner's, which passes on the signal it
 * was sent ({@linkcode ShardSupervisor.stop}, `stage.ts`), where
 * the release would send SIGTERM and turn a SIGINT's 130 into 143.
 */
export function spawnServer(argv: readonly string[], env: Record<string, string>): ServerProcess {
  const scope = Scope.makeUnsafe();
  const started = Effect.runSync(Effect.result(
    spawnScoped(argv, { stdin: "piped", stdout: "piped", stderr: "inherit", env })
      .pipe(Scope.provide(scope)),
  ));
  if (started._tag === "Failure") throw started.failure.cause;
  const c = started.success;
  const child = c.process;
  let settle!: (url: string | undefined) => void;
  const ready = new Promise<string | undefined>((r) => settle = r);
  (async () => {
    let buf = "";
    let found = false;
    try {
      for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
        // Read to the end, so that the child never blocks on a full pipe after its line.
        if (found) continue;
        buf += chunk;
        const m = /^ready (\S+)$/m.exec(buf);
        if (m !== null) {
          found = true;
          buf = "";
          settle(m[1]);
        }
      }
    } catch { /* gone */ }
    settle(undefined); // no-op once the line was seen
  })();
  const writer = child.stdin.getWriter();
  const enc = new TextEncoder();
  const exit = c.status.then(shellCode);
  let closed = false;
  exit.then(() => {
    closed = true;
    writer.close().catch(() => {});
    Effect.runFork(Scope.close(scope, Exit.void));
  });
  return {
    child,
    ready,
    exit,
    send: (line) => {
      if (!closed) writer.write(enc.encode(line + "\n")).catch(() => {});
    },
  };
}

/** One shard's process: its full command line, or `null` for an empty shard (no process). */
export interface ShardCommand {
  /** The `deno run ...` command line of its server process. */
  readonly argv: readonly string[] | null;
}

/** Options of {@linkcode ShardSupervisor}. */
export interface ShardSupervisorOptions {
  /** The shards, by index. */
  readonly shards: readonly ShardCommand[];
  /** The processes' environment. */
  readonly env: Record<string, string>;
  /** The first backoff before a restart, ms (default 250). */
  readonly firstMs?: number;
  /** The longest backoff, ms (default 8 000). */
  readonly maxMs?: number;
  /** How long a stopped process may take before SIGKILL, ms (default 20 000). */
  readonly killAfterMs?: number;
  /** Told every change of the shards' states. */
  readonly onChange?: (states: readonly ShardHealth[]) => void;
  /** Told what happens (`shard 1 of 4 exited (137); restarting in 250 ms`). */
  readonly log?: (line: string) => void;
  /** How a process is started (default {@linkcode spawnServer}). */
  readonly spawn?: (argv: readonly string[], env: Record<string, string>) => ServerProcess;
}

/** A shard process's start failed before it was ever ready. */
export class ShardStartError extends Error {
  /**
   * The error, with the process's exit code.
   *
   * @param message what failed, on one line
   * @param exitCode the process's exit code
   */
  constructor(message: string, readonly exitCode: number) {
    super(message);
  }
}

/** Keeps one server process per shard running (see the module notes). */
export class ShardSupervisor {
  readonly #o: ShardSupervisorOptions;
  readonly #states: ShardHealth[];
  readonly #procs: (ServerProcess | undefined)[];
  readonly #loops: Promise<void>[] = [];
  #stopping = false;
  #wake: (() => void)[] = [];

  /** A supervisor of `opts.shards` (nothing runs before {@linkcode start}). */
  constructor(opts: ShardSupervisorOptions) {
    this.#o = opts;
    const count = opts.shards.length;
    this.#states = opts.shards.map((sh, index) => ({
      index,
      count,
      state: sh.argv === null ? "up" : "restarting",
      restarts: 0,
    }));
    this.#procs = opts.shards.map(() => undefined);
  }

  /** The shards' states now. */
  get states(): readonly ShardHealth[] {
    return this.#states.map((s) => ({ ...s }));
  }

  /** The running processes' ids, by shard (`undefined`: none now). */
  get pids(): readonly (number | undefined)[] {
    return this.#procs.map((p) => p?.child.pid);
  }

  /** Starts every shard's process; resolves when all are ready (see the module notes). */
  start(): Promise<void> {
    const firsts = this.#o.shards.map((sh, s) =>
      sh.argv === null ? Promise.resolve() : new Promise<void>((resolve, reject) => {
        this.#loops.push(this.#run(s, sh.argv!, resolve, reject));
      })
    );
    return Promise.all(firsts).then(() => {});
  }

  #set(s: number, state: ShardHealth["state"], restarted = false): void {
    const old = this.#states[s];
    this.#states[s] = {
      ...old,
      state,
      restarts: old.restarts + (restarted ? 1 : 0),
    };
    this.#o.onChange?.(this.states);
  }

  async #run(
    s: number,
    argv: readonly string[],
    started: () => void,
    failed: (e: Error) => void,
  ): Promise<void> {
    const count = this.#o.shards.length;
    const log = this.#o.log ?? (() => {});
    const spawn = this.#o.spawn ?? spawnServer;
    let everReady = false, failures = 0;
    while (!this.#stopping) {
      const p = spawn(argv, this.#o.env);
      this.#procs[s] = p;
      const ok = await Promise.race([p.ready, p.exit.then(() => undefined)]);
      if (ok !== undefined && !this.#stopping) {
        everReady = true;
        failures = 0;
        this.#set(s, "up");
        started();
      } else if (ok === undefined) failures++;
      const code = await p.exit;
      this.#procs[s] = undefined;
      if (this.#stopping) break;
      if (!everReady) {
        failed(
          new ShardStartError(`shard ${s} of ${count} exited (${code}) before it was ready`, code),
        );
        return;
      }
      const wait = Math.min(this.#o.maxMs ?? 8000, (this.#o.firstMs ?? 250) * 2 ** failures);
      log(`shard ${s} of ${count} exited (${code}); restarting in ${wait} ms`);
      this.#set(s, "down");
      await new Promise<void>((r) => {
        const t = setTimeout(done, wait);
        function done() {
          clearTimeout(t);
          r();
        }
        this.#wake.push(done);
      });
      if (this.#stopping) break;
      this.#set(s, "restarting", true);
    }
    started();
  }

  /** Ends the restarts, sends `signal` to every process and waits until none is left. */
  async stop(signal: "SIGINT" | "SIGTERM" = "SIGTERM"): Promise<void> {
    this.#stopping = true;
    for (const w of this.#wake.splice(0)) w();
    const live = this.#procs.filter((p): p is ServerProcess => p !== undefined);
    for (const p of live) {
      try {
        p.child.kill(signal);
      } catch { /* gone */ }
    }
    const timer = setTimeout(() => {
      for (const p of live) {
        try {
          p.child.kill("SIGKILL");
        } catch { /* gone */ }
      }
    }, this.#o.killAfterMs ?? 20_000);
    try {
      await Promise.all(live.map((p) => p.exit));
      await Promise.all(this.#loops);
    } finally {
      clearTimeout(timer);
    }
  }
}
