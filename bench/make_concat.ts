/**
 * `deno run -A bench/make_concat.ts data.json N out.json`: writes a SQuAD
 * file whose `data` is the input's articles repeated N times, streaming, in
 * Python `json.dump` format. Copy k ≥ 2 has its titles and question ids
 * suffixed with `#k`, so ids stay unique (the stages refuse repeated ones).
 * Used to check that memory does not grow with the file (10× dev ≈ 48 MB).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { openAtomicWriter } from "../io/fs.ts";
import { squadRecords } from "../io/squad.ts";
import { omitKeys, SquadJsonWriter } from "../io/squad_writer.ts";
import type { PyObject } from "../io/pyjson.ts";
import type { SquadArticle } from "../io/squad.ts";

/** The article with `#k` after its title and every question id (copy k ≥ 2). */
const copy = (a: SquadArticle, k: number): SquadArticle =>
  k === 1 ? a : {
    ...a,
    raw: omitKeys(a.raw, [], (key, v) =>
      key === "title"
        ? `${v}#${k}`
        : key === "paragraphs"
        ? (v as PyObject[]).map((p) =>
          omitKeys(p, [], (pk, pv) =>
            pk === "qas"
              ? (pv as PyObject[]).map((q) =>
                omitKeys(q, [], (qk, qv) =>
                  qk === "id" ? `${qv}#${k}` : qv)
              )
              : pv)
        )
        : v),
  };

/** Writes `times` copies of the articles of `input` into `output`. */
export async function makeConcat(input: string, times: number, output: string): Promise<void> {
  const out = await openAtomicWriter(output);
  const w = new SquadJsonWriter(out);
  await w.write({ kind: "data-start" });
  for (let i = 0; i < times; i++) {
    await Effect.runPromise(
      Stream.runForEach(
        Stream.filter(squadRecords(input), (r) => r.kind === "article"),
        (r) => Effect.promise(() => w.write(r.kind === "article" ? copy(r, i + 1) : r)),
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
