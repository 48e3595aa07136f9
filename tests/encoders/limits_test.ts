/**
 * The per-paragraph limit of the encoders: a paragraph over the character
 * limit is refused before it is encoded, one over the phrase limit before
 * its files are written; exit 2, one line naming the file, the paragraph,
 * its size and the limit.
 */
import { assertEquals } from "../_assert.ts";
import { listDir, runStage } from "../_util.ts";

async function dataset(dir: string, context: string): Promise<string> {
  const data = {
    version: "1.1",
    data: [{
      title: "T",
      paragraphs: [
        { context: "Paris is the capital of France.", qas: [] },
        { context, qas: [] },
      ],
    }],
  };
  const path = `${dir}/context.json`;
  await Deno.writeTextFile(path, JSON.stringify(data));
  return path;
}

Deno.test("limits: a 1 MB paragraph is refused under a lowered character limit, naming it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-limits-" });
  try {
    const input = await dataset(dir, "word ".repeat(210_000)); // 1,050,000 characters
    const r = await runStage("pipeline/embed_context.ts", [
      input,
      `${dir}/emb`,
      "--sparse",
      "--max-paragraph-chars",
      "1000",
    ]);
    assertEquals([r.code, r.stderr], [
      2,
      `embed_context: ${input}: paragraph "T_1": context of 1050000 characters is longer than the limit of 1000 (--max-paragraph-chars)\n`,
    ]);
    // Bad input: nothing is left of the run, not even the dump folder it made.
    assertEquals(await listDir(dir), ["context.json"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("limits: the default character limit (100,000) refuses a paragraph one character above it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-limits-" });
  try {
    const input = await dataset(dir, "x".repeat(100_001));
    const r = await runStage("pipeline/embed_context.ts", [input, `${dir}/emb`, "--sparse"]);
    assertEquals([r.code, r.stderr], [
      2,
      `embed_context: ${input}: paragraph "T_1": context of 100001 characters is longer than the limit of 100000 (--max-paragraph-chars)\n`,
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("limits: a paragraph over the phrase limit is refused before its files are written", async () => {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-limits-" });
  try {
    const input = await dataset(
      dir,
      "Paris is the capital of France and the seat of its government.",
    );
    const r = await runStage("pipeline/embed_context.ts", [
      input,
      `${dir}/emb`,
      "--sparse",
      "--max-paragraph-phrases",
      "5",
    ]);
    assertEquals(r.code, 2, r.stderr);
    const m =
      /^embed_context: (.*): paragraph "T_0": (\d+) phrases, more than the limit of 5 \(--max-paragraph-phrases\)\n$/
        .exec(r.stderr);
    assertEquals(m?.[1], input, r.stderr);
    assertEquals(Number(m?.[2]) > 5, true, r.stderr);
    // Nothing was written, so the output folder the stage made is gone again.
    assertEquals([...Deno.readDirSync(dir)].some((e) => e.name === "emb"), false);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
