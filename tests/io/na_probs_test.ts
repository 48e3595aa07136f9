/**
 * `readNaProbs` (`io/predictions.ts`, `evaluate --na-prob-file`): numbers
 * are read as before, whole or streamed (a value's first byte many chunks
 * after its `:`); a value that is not a number is refused naming its
 * question, and a string, object or list at its first byte, unread: a
 * wrong file (a SQuAD dataset, its `"data"` first) is refused without its
 * value being parsed, even when what follows would be an error, or more
 * than fits in memory.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { assertEquals } from "../_assert.ts";
import { readNaProbs } from "../../io/predictions.ts";
import { testTempDir } from "../_util.ts";

const TMP = testTempDir("phraseval-na-probs-");

let files = 0;

/** The map `readNaProbs` reads from a file of `text` (grown to `size` bytes of zeros), or its error. */
async function read(text: string, size?: number): Promise<[string, number][] | string> {
  const path = `${TMP}/na${files++}.json`;
  await Deno.writeTextFile(path, text);
  if (size !== undefined) await Deno.truncate(path, size);
  const r = await Effect.runPromise(Effect.result(readNaProbs(path)));
  if (r._tag === "Failure") return String(r.failure).replace(`${path}: `, "");
  return [...r.success];
}

Deno.test("na probs: numbers, repeated ids, spaces, whole and streamed, as before", async () => {
  assertEquals(await read('{"q1": 0.25, "q2" :\n 1e-3, "q3": -0, "q1": 1}'), [
    ["q1", 1],
    ["q2", 0.001],
    ["q3", -0],
  ]);
  // Past the whole-file fast path (64 MiB): a value whose first byte is 65 MiB after its `:`.
  assertEquals(await read(`{"a": 0.5, "b":${" ".repeat(65 << 20)}0.75}`), [["a", 0.5], [
    "b",
    0.75,
  ]]);
});

Deno.test("na probs: a value that is not a number names its question", async () => {
  for (const v of ['"0.5"', "true", "false", "null", '{"p": 0.5}', "[0.5]"]) {
    assertEquals(await read(`{"q1": 0.5, "q2": ${v}}`), 'question "q2": not a number', v);
  }
  // The first in the file is the one named.
  assertEquals(await read('{"a": "x", "data": [1, 2]}'), 'question "a": not a number');
  // Not JSON before any value: the decoder's own words, as before.
  assertEquals(
    await read('{"q1": 0.5 "q2": 1}'),
    'byte 11: invalid JSON: expected "," or "}", found string',
  );
  assertEquals(await read('{"q1": NaN}'), 'byte 7: invalid JSON: unexpected "N"');
});

Deno.test("na probs: a SQuAD dataset given by mistake is refused at the first byte of its data, unparsed", async () => {
  // What follows the `[` is no JSON: it would be named, were the value read.
  assertEquals(
    await read('{"data": [{"title": "T", "paragraphs": []}, \x00\x00 not JSON'),
    'question "data": not a number',
  );
  assertEquals(await read('{"data": "\x00 a string never closed'), 'question "data": not a number');
  // 2 GiB (a sparse file: no disk), more than a JavaScript string holds: refused unread.
  assertEquals(
    await read('{"data": [{"title": "T", "paragraphs": [', 2 ** 31),
    'question "data": not a number',
  );
  // Over the fast path's 64 MiB, streamed: the same.
  assertEquals(
    await read(
      `{"data": [${'{"title": "T", "paragraphs": []}, '.repeat(3 << 20)}{}], "version": "v2.0"}`,
    ),
    'question "data": not a number',
  );
});
