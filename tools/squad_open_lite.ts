/**
 * SQuAD-open-lite, built from the bundled files: every paragraph of SQuAD
 * v1.1 dev (`data/dev-v1.1.json.gz`, 2,067) and of the train subset
 * (`data/train-subset-v1.1.json.gz`) as one JSONL corpus, `{"id", "title",
 * "text"}` a line, ids as every stage names paragraphs (`<title>_<index>`).
 * The dev questions searched against it (`full --open --corpus`) are an
 * open-domain benchmark in miniature: the right paragraph is one of about
 * 4,500, not the question's own.
 *
 * ```sh
 * ./phraseval squad-open-lite                      # writes outputs/squad-open-lite.jsonl (--out FILE)
 * ./phraseval full --open --top-k 100 --corpus outputs/squad-open-lite.jsonl
 * ```
 *
 * Nothing is downloaded; the same bundled files give the same bytes. Two
 * paragraphs with one id (an article title in both files) are refused.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { readCorpus } from "../io/datasets/read.ts";
import { InputError } from "../io/errors.ts";
import { REPO_ROOT } from "../io/repo.ts";
import { openAtomicWriter } from "../io/fs.ts";

/** The bundled files whose paragraphs make SQuAD-open-lite, in corpus order. */
export const SQUAD_OPEN_LITE_SOURCES: readonly string[] = [
  `${REPO_ROOT}/data/dev-v1.1.json.gz`,
  `${REPO_ROOT}/data/train-subset-v1.1.json.gz`,
];

/**
 * Writes the corpus of the paragraphs of `sources` (SQuAD files) to `out`
 * as JSONL (atomically); returns the number of passages per source.
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { writeSquadCorpus } from "./squad_open_lite.ts";
 * const dir = await Deno.makeTempDir();
 * const squad = (title: string) => JSON.stringify({ version: "1.1", data: [{ title,
 *   paragraphs: [{ context: `${title} is a city.`, qas: [] }] }] });
 * await Deno.writeTextFile(`${dir}/a.json`, squad("Paris"));
 * await Deno.writeTextFile(`${dir}/b.json`, squad("Rome"));
 * const n = await Effect.runPromise(
 *   writeSquadCorpus([`${dir}/a.json`, `${dir}/b.json`], `${dir}/c.jsonl`),
 * );
 * const lines = (await Deno.readTextFile(`${dir}/c.jsonl`)).trimEnd().split("\n");
 * await Deno.remove(dir, { recursive: true });
 * if (n.join() !== "1,1" || JSON.parse(lines[1]).id !== "Rome_0") throw new Error(lines.join());
 * ```
 */
export const writeSquadCorpus = (sources: readonly string[], out: string) =>
  Effect.acquireUseRelease(
    Effect.tryPromise({
      try: () => openAtomicWriter(out),
      catch: (e) => new InputError({ file: out, where: "", message: String(e) }),
    }),
    (w) =>
      Effect.gen(function* () {
        const seen = new Map<string, string>();
        const counts: number[] = [];
        for (const src of sources) {
          let n = 0;
          const lines: string[] = [];
          yield* Stream.runForEach(readCorpus(src, { format: "squad" }), (p) =>
            Effect.gen(function* () {
              const first = seen.get(p.id);
              if (first !== undefined) {
                return yield* Effect.fail(
                  new InputError({
                    file: src,
                    where: `paragraph ${p.id}`,
                    message: `the id is also a paragraph of ${first}`,
                  }),
                );
              }
              seen.set(p.id, src);
              lines.push(JSON.stringify({ id: p.id, title: p.title, text: p.text }));
              n++;
              if (lines.length >= 512) {
                const chunk = lines.splice(0).join("\n") + "\n";
                yield* Effect.promise(() =>
                  w.write(chunk)
                );
              }
            }));
          if (lines.length > 0) {
            const chunk = lines.join("\n") + "\n";
            yield* Effect.promise(() => w.write(chunk));
          }
          counts.push(n);
        }
        yield* Effect.promise(() => w.commit());
        return counts;
      }),
    (w, exit) => exit._tag === "Failure" ? Effect.promise(() => w.abort()) : Effect.void,
  );

if (import.meta.main) {
  const { runMain } = await import("../pipeline/_cli.ts");
  await runMain(
    {
      name: "squad-open-lite",
      summary: "Write SQuAD-open-lite's corpus: every paragraph of the bundled dev set and train " +
        "subset as JSONL {id, title, text}.",
      args: [],
      flags: [
        {
          name: "out",
          type: "string",
          metavar: "FILE",
          default: "outputs/squad-open-lite.jsonl",
          description: "the corpus to write",
        },
      ],
      examples: ["", "--out /tmp/lite.jsonl"],
    },
    Deno.args,
    (a) =>
      Effect.gen(function* () {
        const out = a.flags.out;
        const dir = out.includes("/") ? out.slice(0, out.lastIndexOf("/")) : ".";
        yield* Effect.tryPromise({
          try: () => Deno.mkdir(dir || "/", { recursive: true }),
          catch: (e) => new InputError({ file: dir, where: "", message: String(e) }),
        });
        const counts = yield* writeSquadCorpus(SQUAD_OPEN_LITE_SOURCES, out);
        console.log(
          `${out}: ${counts[0] + counts[1]} passages (dev ${counts[0]}, train subset ${counts[1]})`,
        );
      }),
  );
}
