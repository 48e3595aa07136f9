/**
 * A dump file far larger than any paragraph's (`io/dump/reader_sync.ts`):
 * a `.npz` of gigabytes that is no ZIP archive is refused from its last
 * 64 KiB, before it is read whole; one too large for the buffer merge reads
 * paragraphs into is refused by its size. Before, `merge` over a context
 * dump with a 5 GiB paragraph file failed after 10 s and 9.5 GB with
 * `WebAssembly.Memory.grow(): Unable to grow instance memory` (5 GiB of
 * question file: 14 s, 10.5 GB, then `not a ZIP archive`). A phrase list
 * longer than can be read is refused by its size, unread: before, a 3 GiB one
 * took 18 s and 9.5 GB to fail with `invalid phrase list (Cannot allocate
 * String from UTF-16: buffer exceeds maximum length.)`. The files here are
 * sparse (`Deno.truncate`): no disk.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { assertEquals } from "../../_assert.ts";
import { listDir, runStage } from "../../_util.ts";
import { openDumpSync } from "../../../io/dump/reader.ts";
import { writeContextDump, writeQuestionDump } from "../../../io/dump/writer.ts";

const TMP = await Deno.makeTempDir({ prefix: "phraseval-dump-large-" });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(TMP, { recursive: true });
  } catch { /* gone */ }
});

const FORMAT = { sparse: false, compressed: false } as const;
const CONTEXT = "Paris is in France.";

/** A one-paragraph, one-question dataset and its dumps (`ctx`, `q`) under a fresh folder. */
async function dump(): Promise<string> {
  const dir = await Deno.makeTempDir({ dir: TMP });
  await Deno.writeTextFile(
    `${dir}/data.json`,
    JSON.stringify({
      version: "1.1",
      data: [{
        title: "T",
        paragraphs: [{
          context: CONTEXT,
          qas: [{ id: "q1", question: "Where?", answers: [{ text: "France", answer_start: 12 }] }],
        }],
      }],
    }),
  );
  await Deno.mkdir(`${dir}/ctx`);
  await Deno.mkdir(`${dir}/q`);
  await Effect.runPromise(writeContextDump(`${dir}/ctx`, {
    id: "T_0",
    phrases: [{ text: "Paris", start: 0, end: 5 }, { text: "France", start: 12, end: 18 }],
    matrix: { kind: "dense", rows: 2, cols: 2, dtype: "f32", data: new Float32Array([1, 0, 0, 1]) },
  }, FORMAT));
  await Effect.runPromise(writeQuestionDump(`${dir}/q`, {
    id: "q1",
    vector: { kind: "dense", rows: 1, cols: 2, dtype: "f32", data: new Float32Array([0, 1]) },
  }, FORMAT));
  return dir;
}

/** `merge` of the dump in `dir` into `dir/out`. */
const merge = (dir: string, out: string) =>
  runStage("pipeline/merge.ts", [`${dir}/data.json`, `${dir}/ctx`, `${dir}/q`, `${dir}/${out}`]);

for (const which of ["ctx/T_0.npz", "q/q1.npz"]) {
  Deno.test(`merge: a ${which} of 5 GiB that is no archive is refused from its end, not read whole`, async () => {
    const dir = await dump();
    const ok = await merge(dir, "ok.json");
    assertEquals([ok.code, JSON.parse(Deno.readTextFileSync(`${dir}/ok.json`))], [0, {
      q1: "France",
    }], ok.stderr);
    Deno.truncateSync(`${dir}/${which}`, 5 * 2 ** 30);
    const r = await merge(dir, "pred.json");
    assertEquals([r.code, r.stdout], [2, ""], r.stderr);
    assertEquals(
      r.stderr,
      `merge: ${dir}/${which}: unreadable npz: not a ZIP archive (no end-of-central-directory record)\n`,
    );
    assertEquals((await listDir(dir)).filter((f) => f.startsWith("pred")), [], "no pred.json");
  });
}

Deno.test("dump reader: a paragraph file larger than the buffer it is read into can grow is refused by its size", async () => {
  const dir = await dump();
  // A valid archive padded at its front to 2 MiB (bytes before an archive are allowed).
  const npz = Deno.readFileSync(`${dir}/ctx/T_0.npz`);
  const padded = new Uint8Array(2 << 20);
  padded.set(npz, padded.length - npz.length);
  Deno.writeFileSync(`${dir}/ctx/T_0.npz`, padded);
  const src = openDumpSync(`${dir}/ctx`, {
    reuseBuffers: true,
    contextBuffer: () => {
      throw new RangeError("WebAssembly.Memory.grow(): Unable to grow instance memory");
    },
  });
  try {
    src.readContext("T_0");
    throw new Error("not refused");
  } catch (e) {
    assertEquals(
      String(e),
      `${dir}/ctx/T_0.npz: ${2 << 20} bytes, more than the memory it is read into can hold`,
    );
  } finally {
    src.close();
  }
});

Deno.test("merge: a phrase list of 2 GiB, more text than one JavaScript string holds, is refused unread by its size", async () => {
  const dir = await dump();
  Deno.truncateSync(`${dir}/ctx/T_0.json`, 2 ** 31);
  const r = await merge(dir, "pred.json");
  assertEquals([r.code, r.stdout], [2, ""], r.stderr);
  assertEquals(
    r.stderr,
    `merge: ${dir}/ctx/T_0.json: invalid phrase list (${2 ** 31} bytes: more text than one ` +
      "JavaScript string holds, 536870888 characters)\n",
  );
  assertEquals((await listDir(dir)).filter((f) => f.startsWith("pred")), [], "no pred.json");
});
