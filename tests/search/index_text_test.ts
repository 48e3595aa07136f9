/**
 * The paragraph table's titles and texts: from `--context` (the article
 * title and the paragraph), from a `--metadata` dump's `.meta.json` (its
 * context; the title is the id without `_<n>`), none without either, and an
 * index written before these fields existed reads as `null`.
 */
import * as Effect from "effect/Effect";
import { assertEquals } from "../_assert.ts";
import { writeContextDump } from "../../io/dump/writer.ts";
import { buildIndex } from "../../search/index/build.ts";
import { openIndexSync } from "../../search/index/read.ts";
import { headerJson, type IndexHeader } from "../../search/index/format.ts";

const CONTEXT = "Paris is the capital of France.";
const dense = (rows: number) => ({
  kind: "dense" as const,
  rows,
  cols: 2,
  dtype: "f32" as const,
  data: new Float32Array(2 * rows).fill(1),
});

async function dump(dir: string, metadata: boolean): Promise<void> {
  Deno.mkdirSync(dir);
  await Effect.runPromise(writeContextDump(
    dir,
    {
      id: "Capital_Cities_0",
      phrases: [{ text: "Paris", start: 0, end: 5 }, { text: "France", start: 24, end: 30 }],
      matrix: dense(2),
    },
    { sparse: false, compressed: false },
    metadata ? CONTEXT : undefined,
  ));
}

Deno.test("index: paragraphs.ndjson keeps titles and texts (--context, --metadata); old indexes read as null", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "pv-ixtext-" });
  try {
    await dump(`${dir}/meta`, true);
    await dump(`${dir}/plain`, false);
    Deno.writeTextFileSync(
      `${dir}/context.json`,
      JSON.stringify({
        version: "1.1",
        data: [{ title: "Capital_Cities", paragraphs: [{ context: CONTEXT }] }],
      }),
    );
    // --metadata dump: the context from .meta.json, the title from the id.
    await Effect.runPromise(buildIndex({ contextEmb: `${dir}/meta`, out: `${dir}/a` }));
    let ix = openIndexSync(`${dir}/a`);
    assertEquals(ix.titles, ["Capital_Cities"]);
    assertEquals(ix.contexts, [CONTEXT]);
    // --context: the article title of the dataset.
    await Effect.runPromise(
      buildIndex({ contextEmb: `${dir}/plain`, out: `${dir}/b`, context: `${dir}/context.json` }),
    );
    ix = openIndexSync(`${dir}/b`);
    assertEquals(ix.titles, ["Capital_Cities"]);
    assertEquals(ix.contexts, [CONTEXT]);
    assertEquals([...ix.offsets!], [0, 5, 24, 30]);
    // Neither: no titles, no texts.
    await Effect.runPromise(buildIndex({ contextEmb: `${dir}/plain`, out: `${dir}/c` }));
    ix = openIndexSync(`${dir}/c`);
    assertEquals([ix.titles, ix.contexts], [null, null]);
    // An index written before the fields existed (no title/context keys).
    const line = JSON.stringify({
      id: "X_0",
      rows: 2,
      phrases: ["Paris", "France"],
      offsets: null,
    });
    const old = `${dir}/old`;
    Deno.mkdirSync(old);
    Deno.copyFileSync(`${dir}/c/vectors.f32`, `${old}/vectors.f32`);
    Deno.writeTextFileSync(`${old}/paragraphs.ndjson`, line + "\n");
    const h = JSON.parse(Deno.readTextFileSync(`${dir}/c/index.json`)) as IndexHeader;
    const bytes = new TextEncoder().encode(line + "\n");
    const sha = [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))]
      .map((b) => b.toString(16).padStart(2, "0")).join("");
    Deno.writeTextFileSync(
      `${old}/index.json`,
      headerJson({
        ...h,
        files: { ...h.files, "paragraphs.ndjson": { bytes: bytes.length, sha256: sha } },
      }),
    );
    ix = openIndexSync(`${old}`);
    assertEquals([ix.ids, ix.titles, ix.contexts], [["X_0"], null, null]);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
