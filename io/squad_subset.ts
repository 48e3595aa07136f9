/**
 * A SQuAD file of some of another's articles: articles `[start, end)` in
 * order, every other field (`version`, ...) kept, written as Python's
 * `json.dump` writes it (`io/squad_writer.ts`), atomically. The dataset is
 * streamed article by article, never held whole.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { FileError, InputError, UsageError } from "./errors.ts";
import { openAtomicWriter } from "./fs.ts";
import { squadRecords } from "./squad.ts";
import { SquadJsonWriter } from "./squad_writer.ts";

/** Options of {@linkcode writeArticleSubset}. */
export interface SubsetOptions {
  /** The SQuAD file (`.json`, `.json.gz` or `-`). */
  readonly data: string;
  /** Where the subset goes. */
  readonly out: string;
  /** Article range `[start, end)`, 0-based. */
  readonly articles: readonly [number, number];
}

/**
 * Parses an article range `A:B` (articles A..B-1; `A:` to the end is not
 * accepted: give the number).
 *
 * @example
 * ```ts
 * import { parseArticleRange } from "./squad_subset.ts";
 * const r = parseArticleRange("0:3");
 * if (r[0] !== 0 || r[1] !== 3) throw new Error();
 * ```
 */
export function parseArticleRange(v: string): [number, number] {
  const m = /^(\d+):(\d+)$/.exec(v);
  if (m === null || Number(m[1]) >= Number(m[2])) {
    throw new UsageError(`--articles must be A:B with A < B (articles A..B-1), got "${v}"`);
  }
  return [Number(m[1]), Number(m[2])];
}

const fsDo = <A>(file: string, f: () => Promise<A>) =>
  Effect.tryPromise({
    try: f,
    catch: (e) => new FileError({ file, message: e instanceof Error ? e.message : String(e) }),
  });

/**
 * Writes articles `[start, end)` of `data` to `out`; the count of articles
 * written. A range past the file's end is bad input (nothing is written).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { REPO_ROOT } from "./repo.ts";
 * import { writeArticleSubset } from "./squad_subset.ts";
 * const dir = await Deno.makeTempDir();
 * const out = `${dir}/mini.json`;
 * const n = await Effect.runPromise(writeArticleSubset({
 *   data: `${REPO_ROOT}/data/dev-v1.1.json.gz`, out, articles: [0, 2],
 * }));
 * const d = JSON.parse(await Deno.readTextFile(out));
 * if (n !== 2 || d.data[0].title !== "Super_Bowl_50" || d.version !== "1.1") throw new Error();
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export const writeArticleSubset = (
  opts: SubsetOptions,
): Effect.Effect<number, FileError | InputError> =>
  Effect.gen(function* () {
    const [start, end] = opts.articles;
    const target = opts.out;
    const w = yield* fsDo(target, () => openAtomicWriter(target));
    const out = new SquadJsonWriter(w);
    const written = yield* squadRecords(opts.data).pipe(
      Stream.filter((r) => r.kind !== "article" || (r.index >= start && r.index < end)),
      Stream.runFoldEffect(
        () => 0,
        (n, r) =>
          fsDo(target, () => out.write(r)).pipe(Effect.as(r.kind === "article" ? n + 1 : n)),
      ),
      Effect.onError(() => Effect.promise(() => w.abort())),
    );
    if (written < end - start) {
      yield* Effect.promise(() => w.abort());
      return yield* Effect.fail(
        new InputError({
          file: opts.data,
          where: "",
          message: `articles [${start}, ${end}) asked, the file has ${start + written}`,
        }),
      );
    }
    yield* fsDo(target, () => out.end().then(() => w.commit()));
    return written;
  });
