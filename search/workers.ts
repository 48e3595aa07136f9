/**
 * Worker threads that answer requests by id ({@linkcode RequestWorkers}),
 * as the search's 8-bit screening (`kernels/i8_pool.ts`), IVF-PQ list
 * scans (`index/ivfpq/ivfpq.ts`) and IVF-PQ encoding (`index/ivfpq/ivf_encode.ts`) use
 * them, and whether this process may start a worker at all
 * ({@linkcode modulesReadable}). Written once here; each user keeps only its
 * messages and how it shares the work out.
 *
 * A worker's module answers each `{ id, ... }` it is sent with
 * `{ id, ...answer }` or `{ id, error }`.
 *
 * @module
 */

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
  readonly #workers: Worker[];
  readonly #waiting = new Map<number, Waiting<R>>();
  readonly #options: RequestWorkersOptions;
  #next = 0;
  #failed?: Error;

  /** Starts `n` workers of `url` (each sent `options.init(i)` first, when given). */
  constructor(url: URL, n: number, options: RequestWorkersOptions = {}) {
    this.#options = options;
    this.#workers = Array.from({ length: n }, (_, i) => {
      const w = new Worker(url, {
        type: "module",
        ...(options.name !== undefined ? { name: options.name } : {}),
      });
      w.onmessage = (ev: MessageEvent<R | { id: number; error?: string }>) => {
        const r = ev.data, p = this.#waiting.get(r.id);
        if (!("error" in r) || r.error === undefined) {
          this.#waiting.delete(r.id);
          p?.resolve(r as R);
          return;
        }
        const e = this.#error(r.error, true);
        if (options.sticky) return this.#failAll(e);
        this.#waiting.delete(r.id);
        p?.reject(e);
      };
      w.onerror = (ev: ErrorEvent) => {
        ev.preventDefault();
        this.#failAll(this.#error(ev.message, false));
      };
      if (options.init !== undefined) w.postMessage(options.init(i));
      return w;
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
    return this.#workers.length;
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
    this.#workers[i % this.#workers.length].postMessage({ id, ...message }, transfer);
    return p;
  }

  /** Ends every worker (requests still waiting are never answered). */
  close(): void {
    for (const w of this.#workers) w.terminate();
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
