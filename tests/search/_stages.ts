/**
 * Helpers shared by the index and search tests: run a stage and expect
 * success, or exit 2 with one matching line; read NDJSON records; write a
 * small dev subset, NumPy-written dumps of it, and a small IVF-PQ index of them.
 *
 * @module
 */
import { assertEquals, assertMatch } from "../_assert.ts";
import { devJson, python, runStage } from "../_util.ts";

/** Runs `script` with `args` and asserts exit 0; returns the result. */
export async function ok(script: string, args: string[]): ReturnType<typeof runStage> {
  const r = await runStage(script, args);
  assertEquals(r.code, 0, `${script} ${args.join(" ")}: ${r.stderr}`);
  return r;
}

/** Runs `script` with `args` and asserts exit 2 with one stderr line matching `re`. */
export async function refused(script: string, args: string[], re: RegExp): Promise<void> {
  const r = await runStage(script, args);
  assertEquals(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
  const lines = r.stderr.trimEnd().split("\n");
  assertEquals(lines.length, 1, r.stderr);
  assertMatch(lines[0], re);
}

/** One NDJSON record. */
export type Rec = Record<string, unknown>;

/** The records of an NDJSON file (blank lines skipped). */
export const records = (path: string): Rec[] =>
  Deno.readTextFileSync(path).split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));

/** A small dev subset (first article, `paragraphs` paragraphs) as a SQuAD file. */
export async function subset(path: string, paragraphs: number): Promise<void> {
  const dev = JSON.parse(Deno.readTextFileSync(await devJson()));
  const a = dev.data[0];
  Deno.writeTextFileSync(
    path,
    JSON.stringify({
      version: dev.version,
      data: [{ ...a, paragraphs: a.paragraphs.slice(0, paragraphs) }],
    }),
  );
}

/**
 * NumPy-written dumps (`bench/make_dumps.py`, d = 32, phrases of up to 4
 * words, and `extra` options) of the first `paragraphs` dev paragraphs, in
 * `dir` (`context_emb/`, `question_emb/`, `data.json`; the subset as `in.json`).
 */
export async function numpyDumps(
  dir: string,
  paragraphs: number,
  extra: readonly string[] = [],
): Promise<void> {
  Deno.mkdirSync(dir, { recursive: true });
  await subset(`${dir}/in.json`, paragraphs);
  await python([
    "bench/make_dumps.py",
    `${dir}/in.json`,
    dir,
    "--dim",
    "32",
    "--max-len",
    "4",
    ...extra,
  ]);
}

/**
 * Builds a small IVF-PQ index `ix` of the dumps {@linkcode numpyDumps} wrote
 * in `dir` (5 lists, 8 bytes a vector, trained on 6 paragraphs; `extra`
 * options added) with the `index` stage, asserting exit 0.
 */
export async function smallIvfIndex(
  dir: string,
  ix: string,
  extra: readonly string[] = [],
): ReturnType<typeof runStage> {
  return await ok("pipeline/index.ts", [
    `${dir}/context_emb`,
    ix,
    "--context",
    `${dir}/data.json`,
    "--nlist",
    "5",
    "--bpv",
    "8",
    "--train-paragraphs",
    "6",
    ...extra,
  ]);
}

/**
 * Runs `f` with `globalThis.Worker` counting the workers started and
 * terminated (`live()` tells the counts so far).
 */
export async function countingWorkers<A>(
  f: (live: () => { started: number; ended: number }) => Promise<A>,
): Promise<A> {
  const Original = globalThis.Worker;
  let started = 0, ended = 0;
  class Counted extends Original {
    #ended = false;
    constructor(url: string | URL, options?: WorkerOptions) {
      super(url, options);
      started++;
    }
    override terminate(): void {
      if (!this.#ended) ended++;
      this.#ended = true;
      super.terminate();
    }
  }
  globalThis.Worker = Counted;
  try {
    return await f(() => ({ started, ended }));
  } finally {
    globalThis.Worker = Original;
  }
}
