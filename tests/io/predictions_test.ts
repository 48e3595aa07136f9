/**
 * `readPredictions` reads a small file whole with the native `JSON.parse`
 * and everything else with the streaming decoder: both give the map Python's
 * `json.load` gives (ids in file order, a repeated id in its first place
 * with its last value), and the file's problems are named the same way.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { assertEquals } from "../_assert.ts";
import { readPredictions } from "../../io/predictions.ts";

async function read(text: string | Uint8Array): Promise<[string, string][] | string> {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-pred-" });
  try {
    const path = `${dir}/pred.json`;
    if (typeof text === "string") await Deno.writeTextFile(path, text);
    else await Deno.writeFile(path, text);
    const r = await Effect.runPromise(Effect.result(readPredictions(path)));
    if (r._tag === "Failure") return String(r.failure).replace(`${dir}/`, "");
    return [...r.success];
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("predictions: ids in file order, array-index ids and repeated ids included", async () => {
  assertEquals(await read('{"b": "1", "10": "2", "2": "3", "a": "4"}'), [
    ["b", "1"],
    ["10", "2"],
    ["2", "3"],
    ["a", "4"],
  ]);
  assertEquals(await read('{"q1": "x", "q2": "y", "q1": "z"}'), [["q1", "z"], ["q2", "y"]]);
  assertEquals(await read('{"__proto__": "p", "q\\u00e9": "\\u00e9t\\u00e9"}'), [
    ["__proto__", "p"],
    ["qé", "été"],
  ]);
});

Deno.test("predictions: what the fast path does not take is named by the streaming decoder", async () => {
  assertEquals(
    await read('{"q1": "x", "q2": 5}'),
    'pred.json: question "q2": prediction is number, not a string',
  );
  assertEquals(await read('{"q1": "x",}'), "pred.json: byte 11: " + (await badTail()));
  assertEquals(await read('["x"]'), "pred.json: not a JSON object of question id → answer string");
  const bad = new Uint8Array([...new TextEncoder().encode('{"q1": "'), 0xff, 0x22, 0x7d]);
  const msg = await read(bad);
  assertEquals(typeof msg, "string");
  assertEquals((msg as string).startsWith("pred.json: byte 8"), true, msg as string);
});

/** The streaming decoder's message for a `}` where a key must be. */
async function badTail(): Promise<string> {
  const { JsonEventDecoder } = await import("../../io/json_events.ts");
  try {
    const d = new JsonEventDecoder("\0", { repeatedKeys: true });
    d.push(new TextEncoder().encode('{"q1": "x",}'));
    d.end();
  } catch (e) {
    return (e as Error).message;
  }
  return "";
}
