/**
 * `deno run -A bench/make_concat.ts data.json N out.json`: writes a SQuAD
 * file whose `data` is the input's articles repeated N times (question ids
 * repeat too), streaming, in Python `json.dump` format. Used to check that
 * memory does not grow with the file (10× dev ≈ 48 MB).
 *
 * @module
 */
import { Effect, Stream } from "effect";
import { openAtomicWriter } from "../io/source.ts";
import { squadRecords } from "../io/squad.ts";
import { SquadJsonWriter } from "../io/squad_writer.ts";

/** Writes `times` copies of the articles of `input` into `output`. */
export async function makeConcat(input: string, times: number, output: string): Promise<void> {
  const out = await openAtomicWriter(output);
  const w = new SquadJsonWriter(out);
  await w.write({ kind: "data-start" });
  for (let i = 0; i < times; i++) {
    await Effect.runPromise(
      Stream.runForEach(
        Stream.filter(squadRecords(input), (r) => r.kind === "article"),
        (r) => Effect.promise(() => w.write(r)),
      ),
    );
  }
  await w.write({ kind: "data-end" });
  await w.write({ kind: "field", key: "version", value: "1.1" });
  await w.end();
  await out.commit();
}

if (import.meta.main) {
  const [input, n, output] = Deno.args;
  if (!input || !n || !output) {
    console.error("usage: make_concat.ts data.json N out.json");
    Deno.exit(2);
  }
  await makeConcat(input, Number(n), output);
}
