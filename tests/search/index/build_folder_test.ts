/**
 * A build's data files (`search/index/build_folder.ts`): `OutFile.finish`
 * with a `Syncs` gives the entry it gives without one (bytes, sha256) and
 * closes the file, its fsync left to run; `Syncs.done` waits for every
 * fsync started and fails with a `FileError` naming the first file that
 * could not be synced.
 */
import { OutFile, Syncs } from "../../../search/index/build_folder.ts";
import { FileError } from "../../../io/errors.ts";
import { assert, assertEquals } from "../../_assert.ts";

Deno.test("OutFile.finish with Syncs: the same entry as an fsync in place, the file closed and written", async () => {
  const dir = Deno.makeTempDirSync();
  try {
    const bytes = new Uint8Array(3 << 20).map((_, i) => (i * 7919) & 0xff);
    const entries = [];
    const syncs = new Syncs();
    for (const [name, s] of [["a", undefined], ["b", syncs]] as const) {
      const f = new OutFile(`${dir}/${name}`);
      f.write(bytes.subarray(0, 5));
      f.write(bytes.subarray(5));
      entries.push(f.finish(s));
    }
    await syncs.done();
    assertEquals(entries[1], entries[0]);
    assertEquals(entries[0].bytes, bytes.length);
    const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
    assertEquals(
      entries[0].sha256,
      Array.from(hash, (b) => b.toString(16).padStart(2, "0")).join(""),
    );
    assertEquals(Deno.readFileSync(`${dir}/b`), bytes);
    // Closed: the folder can go at once.
    Deno.removeSync(`${dir}/b`);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("Syncs.done: waits for every fsync; the first file that cannot be synced is named in a FileError", async () => {
  const dir = Deno.makeTempDirSync();
  try {
    Deno.writeTextFileSync(`${dir}/kept`, "x");
    const ok = new Syncs();
    ok.start(`${dir}/kept`);
    await ok.done();
    const bad = new Syncs();
    bad.start(`${dir}/kept`);
    bad.start(`${dir}/gone`);
    bad.start(`${dir}/gone-too`);
    let caught: unknown;
    try {
      await bad.done();
    } catch (e) {
      caught = e;
    }
    assert(caught instanceof FileError, `a FileError, not ${caught}`);
    assertEquals(caught.file, `${dir}/gone`);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
