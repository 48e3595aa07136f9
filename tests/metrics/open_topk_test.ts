/**
 * Top-k records read as a stream (`metrics/open.ts` `readTopk`): the same
 * records as parsing the whole text, chunk boundaries inside multi-byte
 * characters and lines included; a rank twice for a question refused
 * whether the ranks come in order or not; a byte that is not UTF-8 and a
 * line over 16 MiB named by their line.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals } from "../_assert.ts";
import { parseTopk, readTopk } from "../../metrics/open.ts";

const TMP = await Deno.makeTempDir({ prefix: "open_topk_" });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(TMP, { recursive: true });
  } catch { /* gone */ }
});

const rec = (id: string, rank: number, paragraph: string, phrase: string) =>
  JSON.stringify({ id, rank, paragraph, phrase });
const failure = (file: string) =>
  Effect.runPromise(readTopk(file)).then(() => "no failure", (e) => String(e));

Deno.test("readTopk: a stream of many chunks gives parseTopk's records", async () => {
  // About 2 MB: many reads, with "é", "中" and "😀" across their boundaries.
  const lines: string[] = [];
  for (let q = 0; q < 400; q++) {
    for (let r = 1; r <= 40; r++) {
      lines.push(rec(`q${q}`, r, `T${q % 7}_${r % 3}`, `é中😀 phrase ${q}.${r}`));
    }
  }
  const text = lines.join("\n") + "\n";
  const path = `${TMP}/big.ndjson`;
  await Deno.writeTextFile(path, text);
  const got = await Effect.runPromise(readTopk(path));
  assertEquals(got.size, 400);
  assertEquals(got, parseTopk(text, path));
  assertEquals(got.get("q399")![39], {
    rank: 40,
    paragraph: "T0_1",
    phrase: "é中😀 phrase 399.40",
  });
  // No newline at the end: the last line is read too.
  await Deno.writeTextFile(`${TMP}/nonl.ndjson`, text.trimEnd());
  assertEquals(await Effect.runPromise(readTopk(`${TMP}/nonl.ndjson`)), got);
});

Deno.test("readTopk: a rank twice is refused, in order or not; ranks out of order are sorted", async () => {
  const out = `${TMP}/out.ndjson`;
  await Deno.writeTextFile(
    out,
    [rec("a", 3, "P", "x"), rec("a", 1, "P", "y"), rec("a", 2, "Q", "z")].join("\n") + "\n",
  );
  const ok = await Effect.runPromise(readTopk(out));
  assertEquals(ok.get("a")!.map((c) => c.rank), [1, 2, 3]);
  for (
    const [name, ranks, line] of [
      ["dup-in-order", [1, 2, 2], 3],
      ["dup-out-of-order", [3, 1, 3], 3],
    ] as const
  ) {
    const f = `${TMP}/${name}.ndjson`;
    await Deno.writeTextFile(f, ranks.map((r) => rec("a", r, "P", "x")).join("\n") + "\n");
    assertEquals(await failure(f), `${f}: line ${line}: question "a" has rank ${ranks[2]} twice`);
  }
});

Deno.test("readTopk: a byte that is not UTF-8, or a line over 16 MiB, named by its line", async () => {
  const bad = `${TMP}/bad.ndjson`;
  const enc = new TextEncoder();
  const bytes = new Uint8Array([
    ...enc.encode(rec("a", 1, "P", "x") + "\n"),
    ...enc.encode('{"id": "a", "rank": 2, "paragraph": "P", "phrase": "'),
    0xff,
    ...enc.encode('"}\n'),
  ]);
  await Deno.writeFile(bad, bytes);
  // Worded as every strict line reader words it (`io/text.ts`): the line, and the byte's offset.
  assertEquals(
    await failure(bad),
    `${bad}: line 2: invalid UTF-8 at byte ${bytes.indexOf(0xff)}`,
  );
  const long = `${TMP}/long.ndjson`;
  await Deno.writeTextFile(long, rec("a", 1, "P", "x") + "\n" + "y".repeat(17 * 1024 * 1024));
  const msg = await failure(long);
  assert(msg === `${long}: line 2: line longer than 16777216 bytes`, msg);
});
