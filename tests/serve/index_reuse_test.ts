/**
 * `serve`'s index of a context dump ({@linkcode ensureIndex}) is reused only
 * while the dump's content is the same: a byte changed with the file's size
 * and modification time put back is seen (the fingerprint hashes content),
 * and a named pipe in the dump is refused by name, not read.
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals } from "../_assert.ts";
import { writeContextDump } from "../../io/dump/writer.ts";
import { ensureIndex } from "../../serve/launch.ts";
import { runArgv } from "../_util.ts";

Deno.test("serve: a dump byte changed with its mtime put back is not reused: the index is rebuilt", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "pv-serve-reuse-" });
  try {
    const dump = `${dir}/c`;
    Deno.mkdirSync(dump);
    const phrases = [{ text: "Paris", start: 0, end: 5 }, { text: "Lyon", start: 6, end: 10 }];
    const matrix = {
      kind: "dense",
      rows: 2,
      cols: 4,
      dtype: "f32",
      data: new Float32Array([1, 0, 0, 0, 0, 1, 0, 0]),
    } as const;
    await Effect.runPromise(
      writeContextDump(dump, { id: "T_0", phrases, matrix }, { sparse: false, compressed: false }),
    );
    const lines: string[] = [];
    const ensure = () =>
      Effect.runPromise(
        ensureIndex({ dump, sparse: false, onStatus: (l) => lines.push(l.split(":")[0]) }),
      );
    assertEquals((await ensure()).built, true);
    assertEquals((await ensure()).built, false);
    const json = `${dump}/T_0.json`;
    const text = Deno.readTextFileSync(json);
    const st = Deno.statSync(json);
    assert(text.includes("Lyon"), text);
    Deno.writeTextFileSync(json, text.replace("Lyon", "Nice"));
    Deno.utimeSync(json, st.atime!, st.mtime!);
    assertEquals(Deno.statSync(json).mtime, st.mtime);
    assertEquals(Deno.statSync(json).size, st.size);
    assertEquals((await ensure()).built, true);
    const table = Deno.readTextFileSync(`${dump}.index/paragraphs.ndjson`);
    assert(table.includes('"Nice"') && !table.includes('"Lyon"'), table);
    assertEquals(lines, [
      `building the index ${dump}.index from ${dump}`,
      `reusing the index ${dump}.index (built from this dump with these parameters)`,
      `rebuilding the index ${dump}.index`,
    ]);
    // A named pipe in the dump: refused by name (the fingerprint never opens it).
    await runArgv(["mkfifo", `${dump}/x.npz`]);
    const why = await Effect.runPromise(Effect.flip(ensureIndex({ dump, sparse: false })));
    assertEquals(String(why), `${dump}/x.npz: is a named pipe, not a regular file`);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
