/**
 * `report` reads a run's rows and a search's top-k records a chunk at a time
 * (`io/text.ts`, `readLinesStrict`): the same lines as the whole text split
 * at `\n` (across the 1 MiB chunks: a character cut by a chunk, a byte-order
 * mark, a bad byte's line and offset), and a file over JavaScript's string
 * limit is no longer read whole. Before, an 876 MB top-k file of valid records
 * was refused after 4 s and 2.7 GB as `line 8000001: invalid UTF-8 at byte
 * 876533392` (the decoder's string-length failure taken for a bad byte); now
 * it is read (1.1 GB). A sparse file of 1 GiB (no disk) stands in for it here:
 * one line of NUL bytes, refused at 16 MiB as a line too long, naming it.
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals } from "../_assert.ts";
import { listDir, runStage } from "../_util.ts";
import { decodeUtf8Strict, MAX_LINE_BYTES, readLinesStrict } from "../../io/text.ts";
import { evaluate } from "../../metrics/evaluate.ts";
import { dataJson, fixture, GOLDS, IDS } from "./_searches.ts";

const TMP = await Deno.makeTempDir({ prefix: "phraseval-report-large-" });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(TMP, { recursive: true });
  } catch { /* gone */ }
});

const enc = new TextEncoder();

/** Writes `bytes` to a fresh file of TMP, its path. */
function file(bytes: Uint8Array): string {
  const f = Deno.makeTempFileSync({ dir: TMP, suffix: ".ndjson" });
  Deno.writeFileSync(f, bytes);
  return f;
}

/** The error message of `f()`, or "" when it does not throw. */
function messageOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    return String(e);
  }
  return "";
}

/** Lines of 1 to 4 byte characters, about 2.6 MB: characters fall across the 1 MiB chunks. */
function manyLines(): string {
  const out: string[] = [];
  for (let i = 0, n = 0; n < 1_300_000; i++) {
    const line = `{"id": "q${i}", "phrase": "${"aé€😀".repeat(i % 7)}\uFEFF${i}"}`;
    out.push(line);
    n += line.length + 1;
  }
  return out.join("\n");
}

Deno.test("readLinesStrict: the lines of the whole text split at \\n, across chunks", () => {
  const text = manyLines();
  for (
    const t of [text, text + "\n", "\uFEFF" + text, "\n\n" + text + "\n\n", "", "\n", "x"]
  ) {
    const f = file(enc.encode(t));
    assertEquals([...readLinesStrict(f)], decodeUtf8Strict(enc.encode(t), f).split("\n"));
  }
});

Deno.test("readLinesStrict: a bad byte past the first chunk, or a character cut by the end, named as decodeUtf8Strict names it", () => {
  const t = enc.encode(manyLines() + "\n");
  for (const at of [0, 17, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, t.length - 2]) {
    const bytes = t.slice();
    bytes[at] = 0xff;
    const f = file(bytes);
    const want = messageOf(() => decodeUtf8Strict(bytes, f));
    assert(want.includes("invalid UTF-8 at byte"), want);
    assertEquals(messageOf(() => [...readLinesStrict(f)]), want);
  }
  const cut = new Uint8Array([...t, 0xe2, 0x82]);
  const f = file(cut);
  assertEquals(
    messageOf(() => [...readLinesStrict(f)]),
    messageOf(() => decodeUtf8Strict(cut, f)),
  );
});

Deno.test("readLinesStrict: a line over 16 MiB is refused by its line, read no further", () => {
  const f = file(enc.encode("a\nb\n"));
  Deno.truncateSync(f, 1 << 30);
  assertEquals(
    messageOf(() => [...readLinesStrict(f)]),
    `${f}: line 3: line longer than ${MAX_LINE_BYTES} bytes`,
  );
});

Deno.test("report --search-error: a top-k file over JavaScript's string limit is read a chunk at a time", async () => {
  const dir = fixture();
  try {
    Deno.truncateSync(`${dir}/np1.topk.ndjson`, 1 << 30);
    const parent = await Deno.makeTempDir({ dir: TMP, prefix: "out-" });
    const r = await runStage("pipeline/report.ts", [
      "--search-error",
      `${dir}/exact.json`,
      `${dir}/np1.json`,
      "--out",
      `${parent}/report`,
    ]);
    assertEquals(r.code, 2, r.stderr);
    assert(
      /^report: .*np1\.topk\.ndjson: line \d+: line longer than 16777216 bytes\n$/.test(r.stderr),
      r.stderr,
    );
    assertEquals(await listDir(parent), [], "nothing left behind");
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("report: a run's rows file over JavaScript's string limit is read a chunk at a time", async () => {
  const dir = `${TMP}/full`;
  await Deno.mkdir(dir);
  await Deno.writeTextFile(`${dir}/data.json`, dataJson());
  await Deno.writeTextFile(
    `${dir}/summary.json`,
    JSON.stringify({ data: `${dir}/data.json`, encoder: { name: "enc" } }),
  );
  await Deno.writeTextFile(
    `${dir}/pred.json`,
    JSON.stringify(Object.fromEntries(IDS.map((id, i) => [id, GOLDS[i]]))),
  );
  await Effect.runPromise(evaluate({
    data: `${dir}/data.json`,
    predictions: `${dir}/pred.json`,
    perQuestion: `${dir}/rows.ndjson`,
  }));
  Deno.truncateSync(`${dir}/rows.ndjson`, 1 << 30);
  const parent = await Deno.makeTempDir({ dir: TMP, prefix: "out-" });
  const r = await runStage("pipeline/report.ts", [dir, "--out", `${parent}/report`]);
  assertEquals(r.code, 2, r.stderr);
  assertEquals(
    r.stderr,
    `report: ${dir}/rows.ndjson: line ${IDS.length + 1}: line longer than 16777216 bytes\n`,
  );
  assertEquals(await listDir(parent), [], "nothing left behind");
});
