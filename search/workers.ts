/**
 * Worker threads, started and ended in one place: {@linkcode WorkerThreads}
 * (`n` threads of one module, each message told with the worker's number,
 * each failure caught and told, all ended by `close`), and on it
 * {@linkcode RequestWorkers} (each request sent with a fresh id and answered
 * by a promise), as the search's 8-bit screening (`kernels/i8_pool.ts`),
 * IVF-PQ searches (`index/ivfpq/ivf_search.ts`) and IVF-PQ encoding
 * (`index/ivfpq/ivf_encode.ts`) use them; the merge's pools
 * (`merge/pool.ts`, `merge/early.ts`) share their batches out their own way
 * on {@linkcode WorkerThreads}. Whether this process may start a worker at
 * all: {@linkcode modulesReadable}. A scope that ends its workers when it
 * closes: `scoped_workers.ts`.
 *
 * Without Effect: the merge command starts its workers before Effect has
 * loaded.
 *
 * A {@linkcode RequestWorkers} module answers each `{ id, ... }` it is sent
 * with `{ id, ...answer }` or `{ id, error }`.
 *
 * @module
 */

/** Options of {@linkcode WorkerThreads}. */
export interface WorkerThreadsOptions {
  /** The worker's `name` (shown in profiles and errors). */
  readonly name?: string;
  /**
   * The message worker `i` is sent first, posted as soon as it is started
   * (and the objects it moves), if any.
   */
  readonly first?: (i: number) => { message: unknown; transfer?: Transferable[] };
  /** What worker `i` says (any message it posts). */
  readonly onMessage: (i: number, data: unknown) => void;
  /** Worker `i` failed (its `ErrorEvent`'s message; the event is handled here). */
  readonly onError: (i: number, message: string) => void;
}

/**
 * `n` worker threads of the module `url`: what each says goes to
 * `options.onMessage` with its number, its failure to `options.onError`
 * (the error event handled, so it does not end the process), and `close`
 * ends them all.
 *
 * @example
 * ```ts
 * import { WorkerThreads } from "./workers.ts";
 * const src = "self.onmessage = (e) => self.postMessage(e.data * 2);";
 * const url = URL.createObjectURL(new Blob([src], { type: "text/javascript" }));
 * const got: string[] = [];
 * let told = () => {};
 * const both = new Promise<void>((r) => told = r);
 * const ws = new WorkerThreads(new URL(url), 2, {
 *   onMessage: (i, d) => got.push(`${i}:${d}`) === 2 && told(),
 *   onError: () => {},
 * });
 * ws.post(0, 1);
 * ws.post(1, 21);
 * await both;
 * ws.close();
 * URL.revokeObjectURL(url);
 * if (got.sort().join() !== "0:2,1:42" || ws.size !== 2) throw new Error(got.join());
 * ```
 */
export class WorkerThreads {
  readonly #workers: Worker[];

  /** Starts `n` workers of `url`. */
  constructor(url: URL, n: number, options: WorkerThreadsOptions) {
    this.#workers = Array.from({ length: n }, (_, i) => {
      const w = new Worker(url, {
        type: "module",
        ...(options.name !== undefined ? { name: options.name } : {}),
      });
      w.onmessage = (ev: MessageEvent) => options.onMessage(i, ev.data);
      w.onerror = (ev: ErrorEvent) => {
        ev.preventDefault();
        options.onError(i, ev.message);
      };
      const first = options.first?.(i);
      if (first !== undefined) w.postMessage(first.message, first.transfer ?? []);
      return w;
    });
  }

  /** The number of workers. */
  get size(): number {
    return this.#workers.length;
  }

  /** Posts `message` to worker `i` (modulo the count), its `transfer` list moved. */
  post(i: number, message: unknown, transfer: Transferable[] = []): void {
    this.#workers[i % this.#workers.length].postMessage(message, transfer);
  }

  /** Ends every worker. */
  close(): void {
    for (const w of this.#workers) w.terminate();
  }
}

/** What a request's promise waits on. */
interface Waiting<R> {
  readonly resolve: (r: R) => void;
  readonly reject: (e: Error) => void;
}

/** Options of {@linkcode RequestWorkers}. */
export interface RequestWorkersOptions {
  /** The message each worker is sent first (`i`: the worker's number), if any. */
  readonly init?: (i: number) => unknown;
  /** The worker's `name` (shown in profiles and errors). */
  readonly name?: string;
  /**
   * How an error is told: an `{ id, error }` answer, or the worker's own
   * failure (`ErrorEvent`'s message). Default: the text as it is (and
   * `"search worker failed"` for an answer without text).
   */
  readonly describe?: (text: string, answer: boolean) => string;
  /**
   * Whether one failure fails every request after it (what an encoder
   * wants: its blocks are one job). Otherwise an error answer fails its
   * own request, and a worker's failure the requests then waiting.
   */
  readonly sticky?: boolean;
}

/**
 * `n` worker threads of the module `url`, each request sent with a fresh id
 * to the worker the caller names and answered by a promise.
 *
 * @example
 * ```ts
 * import { RequestWorkers } from "./workers.ts";
 * const src = "self.onmessage = (e) => self.postMessage({ id: e.data.id, twice: 2 * e.data.x });";
 * const url = URL.createObjectURL(new Blob([src], { type: "text/javascript" }));
 * const ws = new RequestWorkers<{ id: number; twice: number }>(new URL(url), 2);
 * const [a, b] = await Promise.all([ws.ask(0, { x: 1 }), ws.ask(1, { x: 21 })]);
 * ws.close();
 * URL.revokeObjectURL(url);
 * if (a.twice !== 2 || b.twice !== 42 || ws.size !== 2) throw new Error();
 * ```
 */
export class RequestWorkers<R extends { readonly id: number }> {
  readonly #threads: WorkerThreads;
  readonly #waiting = new Map<number, Waiting<R>>();
  readonly #options: RequestWorkersOptions;
  #next = 0;
  #failed?: Error;

  /** Starts `n` workers of `url` (each sent `options.init(i)` first, when given). */
  constructor(url: URL, n: number, options: RequestWorkersOptions = {}) {
    this.#options = options;
    this.#threads = new WorkerThreads(url, n, {
      ...(options.name !== undefined ? { name: options.name } : {}),
      onMessage: (_, data) => {
        const r = data as R | { id: number; error?: string }, p = this.#waiting.get(r.id);
        if (!("error" in r) || r.error === undefined) {
          this.#waiting.delete(r.id);
          p?.resolve(r as R);
          return;
        }
        const e = this.#error(r.error, true);
        if (options.sticky) return this.#failAll(e);
        this.#waiting.delete(r.id);
        p?.reject(e);
      },
      onError: (_, message) => this.#failAll(this.#error(message, false)),
      ...(options.init !== undefined ? { first: (i) => ({ message: options.init!(i) }) } : {}),
    });
  }

  #error(text: string, answer: boolean): Error {
    return new Error(
      this.#options.describe?.(text, answer) ?? (text === "" ? "search worker failed" : text),
    );
  }

  #failAll(e: Error): void {
    if (this.#options.sticky) this.#failed ??= e;
    for (const p of this.#waiting.values()) p.reject(e);
    this.#waiting.clear();
  }

  /** The number of workers. */
  get size(): number {
    return this.#threads.size;
  }

  /**
   * Sends `message` with a fresh `id` to worker `i` (modulo the count), its
   * `transfer` list moved; the answer. A rejection not yet awaited is not an
   * unhandled one (callers may await their answers later, in order).
   */
  ask(i: number, message: Record<string, unknown>, transfer: Transferable[] = []): Promise<R> {
    if (this.#failed !== undefined) return Promise.reject(this.#failed);
    const id = this.#next++;
    const p = new Promise<R>((resolve, reject) => this.#waiting.set(id, { resolve, reject }));
    p.catch(() => {});
    this.#threads.post(i, { id, ...message }, transfer);
    return p;
  }

  /** Ends every worker (requests still waiting are never answered). */
  close(): void {
    this.#threads.close();
    this.#waiting.clear();
  }
}

/**
 * Whether this process may read the module files `modules` (relative to
 * `base`, a module's `import.meta.url`): a worker loads its modules from
 * disk, which a permission-narrowed task may not read; its work then runs
 * in the calling thread, with the same results.
 *
 * @example
 * ```ts
 * import { modulesReadable } from "./workers.ts";
 * // Modules that are not files (served, or in a bundle) need no read permission.
 * if (!modulesReadable("https://example.com/search/x.ts", ["./y.ts"])) throw new Error();
 * ```
 */
export function modulesReadable(base: string, modules: readonly string[]): boolean {
  return modules.every((m) => {
    const url = new URL(m, base);
    return url.protocol !== "file:" ||
      Deno.permissions.querySync({ name: "read", path: url }).state === "granted";
  });
}
