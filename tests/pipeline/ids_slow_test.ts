/**
 * Ids through the stages (issue 11, items 8 and 11): repeated paragraph ids
 * (two articles with one title) and repeated question ids are refused with
 * one line and exit 2 by every stage that names or reads dumps;
 * `--unique-ids` renames repeated titles so such a dataset is scored as if
 * its titles were distinct; a title `../escape` is a plain file name; an id
 * at the length limit goes through the writers, one byte more is refused
 * before anything is written.
 */
import { assert, assertEquals } from "../_assert.ts";
import { DEV_GZ, listDir, runStage } from "../_util.ts";

type Json = Record<string, unknown>;
type Article = { title: string; paragraphs: Json[] };

/** The first `n` paragraphs of dev articles 0 (`Super_Bowl_50`) and 1 (`Warsaw`). */
async function devArticles(n = 3): Promise<Article[]> {
  const text = await new Response(
    (await Deno.open(DEV_GZ)).readable.pipeThrough(new DecompressionStream("gzip")),
  ).text();
  const d = JSON.parse(text) as { data: Article[] };
  return d.data.slice(0, 2).map((a) => ({ title: a.title, paragraphs: a.paragraphs.slice(0, n) }));
}

async function withDir(f: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-ids-" });
  try {
    await f(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const write = (path: string, data: Article[]) =>
  Deno.writeTextFile(path, JSON.stringify({ data, version: "1.1" }));

/** Dev articles 0 and 1, the second retitled `Super_Bowl_50`. */
async function duplicated(dir: string): Promise<string> {
  const [a, b] = await devArticles();
  await write(`${dir}/dup.json`, [a, { ...b, title: a.title }]);
  return `${dir}/dup.json`;
}

const DUP_LINE = (stage: string, file: string) =>
  `${stage}: ${file}: paragraph id "Super_Bowl_50_0" occurs in article 0 ("Super_Bowl_50") and ` +
  `article 1 ("Super_Bowl_50"); pass --unique-ids (in a run config: uniqueIds: true) to rename\n`;

function oneLine(r: { code: number; stderr: string }, line: string) {
  assertEquals(r.code, 2, r.stderr);
  assertEquals(r.stderr, line);
}

Deno.test("ids: split refuses two articles with one title, naming both; no output", async () => {
  await withDir(async (dir) => {
    const data = await duplicated(dir);
    const r = await runStage("pipeline/split.ts", [data, `${dir}/c.json`, `${dir}/q.json`]);
    oneLine(r, DUP_LINE("split", data));
    assertEquals(await listDir(dir), ["dup.json"]);
  });
});

Deno.test("ids: embed_context, embed_question, validate and merge refuse repeated titles", async () => {
  await withDir(async (dir) => {
    const data = await duplicated(dir);
    await Deno.mkdir(`${dir}/c`);
    await Deno.mkdir(`${dir}/q`);
    for (
      const [stage, args] of [
        ["embed_context", [data, `${dir}/c`, "--sparse"]],
        ["embed_question", [data, `${dir}/q`, "--sparse"]],
        ["validate", [data, `${dir}/c`, `${dir}/q`, "--sparse"]],
        ["merge", [data, `${dir}/c`, `${dir}/q`, `${dir}/pred.json`, "--sparse"]],
      ] as const
    ) {
      const r = await runStage(`pipeline/${stage}.ts`, args);
      oneLine(r, DUP_LINE(stage, data));
      assertEquals(await listDir(dir), ["c", "dup.json", "q"], stage);
      assertEquals([...await listDir(`${dir}/c`), ...await listDir(`${dir}/q`)], [], stage);
    }
  });
});

Deno.test("ids: titles equal once '/' becomes '_' are refused too", async () => {
  await withDir(async (dir) => {
    const [a, b] = await devArticles(1);
    await write(`${dir}/d.json`, [{ ...a, title: "A/B" }, { ...b, title: "A_B" }]);
    const r = await runStage("pipeline/embed_context.ts", [
      `${dir}/d.json`,
      `${dir}/c`,
      "--sparse",
    ]);
    oneLine(
      r,
      `embed_context: ${dir}/d.json: paragraph ids "A/B_0" of article 0 ("A/B") and "A_B_0" of ` +
        `article 1 ("A_B") name the same dump file "A_B_0.npz" ('/' becomes '_'); ` +
        "pass --unique-ids (in a run config: uniqueIds: true) to rename\n",
    );
  });
});

Deno.test("ids: full refuses repeated titles before it runs anything", async () => {
  await withDir(async (dir) => {
    const data = await duplicated(dir);
    const r = await runStage("pipeline/full.ts", ["--data", data, "--out", `${dir}/run`]);
    oneLine(r, DUP_LINE("full", data));
    assertEquals(await listDir(dir), ["dup.json"]);
  });
});

Deno.test("ids: full --unique-ids scores both articles as under distinct titles", async () => {
  await withDir(async (dir) => {
    const [a, b] = await devArticles();
    await write(`${dir}/distinct.json`, [a, b]);
    const data = await duplicated(dir);
    const ref = await runStage("pipeline/full.ts", [
      "--data",
      `${dir}/distinct.json`,
      "--out",
      `${dir}/ref`,
    ]);
    assertEquals(ref.code, 0, ref.stderr);
    const got = await runStage("pipeline/full.ts", [
      "--data",
      data,
      "--out",
      `${dir}/run`,
      "--unique-ids",
    ]);
    assertEquals(got.code, 0, got.stderr);
    const pred = await Deno.readTextFile(`${dir}/run/pred.json`);
    assertEquals(pred, await Deno.readTextFile(`${dir}/ref/pred.json`));
    assertEquals(Object.keys(JSON.parse(pred)).length, 95);
    const result = await Deno.readTextFile(`${dir}/run/result.json`);
    assertEquals(result, await Deno.readTextFile(`${dir}/ref/result.json`));
    // The second article's dumps are its own, under its new title.
    const files = await listDir(`${dir}/run/dumps/context_emb`);
    assertEquals(files.filter((f) => f.endsWith(".npz")).sort(), [
      "Super_Bowl_50#2_0.npz",
      "Super_Bowl_50#2_1.npz",
      "Super_Bowl_50#2_2.npz",
      "Super_Bowl_50_0.npz",
      "Super_Bowl_50_1.npz",
      "Super_Bowl_50_2.npz",
    ]);
    // The split carries the new title, so any tool reading it makes the same ids.
    const split = JSON.parse(await Deno.readTextFile(`${dir}/run/context.json`));
    assertEquals(split.data.map((x: Article) => x.title), ["Super_Bowl_50", "Super_Bowl_50#2"]);
  });
});

Deno.test("ids: a repeated question id is refused by every stage, even with --unique-ids", async () => {
  await withDir(async (dir) => {
    const [a, b] = await devArticles(1);
    const qa = (a.paragraphs[0].qas as Json[])[0];
    const b2 = {
      ...b,
      paragraphs: [{ ...b.paragraphs[0], qas: [...(b.paragraphs[0].qas as Json[]), qa] }],
    };
    await write(`${dir}/d.json`, [a, b2]);
    const data = `${dir}/d.json`;
    const line = (stage: string) =>
      `${stage}: ${data}: question id "${qa.id}" occurs in article 0 ("Super_Bowl_50") ` +
      `paragraph 0 and article 1 ("Warsaw") paragraph 0; question ids must be unique ` +
      "(predictions are keyed by them)\n";
    await Deno.mkdir(`${dir}/e`);
    for (
      const [stage, args] of [
        ["split", [data, `${dir}/c.json`, `${dir}/q.json`]],
        ["embed_question", [data, `${dir}/e`, "--sparse"]],
        ["merge", [data, `${dir}/e`, `${dir}/e`, `${dir}/pred.json`, "--sparse"]],
        ["full", ["--data", data, "--out", `${dir}/run`]],
      ] as const
    ) {
      for (const flags of [[], ["--unique-ids"]]) {
        const r = await runStage(`pipeline/${stage}.ts`, [...args, ...flags]);
        oneLine(r, line(stage));
        assertEquals(await listDir(dir), ["d.json", "e"], stage);
        assertEquals(await listDir(`${dir}/e`), [], stage);
      }
    }
  });
});

Deno.test("ids: a title ../escape works end to end, its dumps inside the folder", async () => {
  await withDir(async (dir) => {
    const [a] = await devArticles(2);
    await write(`${dir}/d.json`, [{ ...a, title: "../escape" }]);
    const r = await runStage("pipeline/full.ts", [
      "--data",
      `${dir}/d.json`,
      "--out",
      `${dir}/run`,
    ]);
    assertEquals(r.code, 0, r.stderr);
    assertEquals(await listDir(`${dir}/run/dumps/context_emb`), [
      ".._escape_0.json",
      ".._escape_0.npz",
      ".._escape_1.json",
      ".._escape_1.npz",
      ".phraseval-dump.json",
    ]);
    assertEquals(await listDir(dir), ["d.json", "run"]);
    const pred = JSON.parse(await Deno.readTextFile(`${dir}/run/pred.json`));
    assertEquals(Object.keys(pred).length, 55);
  });
});

// ---------------------------------------------------------------------------
// Item 11: the id length limit is the real one.

/** One article whose paragraph id has `pBytes` bytes, with one question of id `qBytes` bytes. */
async function longIds(dir: string, pBytes: number, qBytes: number): Promise<string> {
  const [a] = await devArticles(1);
  const p = a.paragraphs[0];
  const q = { ...(p.qas as Json[])[0], id: "q".repeat(qBytes) };
  const data = `${dir}/long-${pBytes}-${qBytes}.json`;
  // 100 two-byte characters, then ASCII up to the length, then "_0".
  const title = "é".repeat(100) + "x".repeat(pBytes - 202);
  await write(data, [{ title, paragraphs: [{ ...p, qas: [q] }] }]);
  return data;
}

Deno.test("ids: a paragraph id of 231 bytes is written with and without --metadata; 232 is refused", async () => {
  await withDir(async (dir) => {
    const data = await longIds(dir, 231, 8);
    for (const meta of [[], ["--metadata"]]) {
      const out = `${dir}/c${meta.length}`;
      const r = await runStage("pipeline/embed_context.ts", [data, out, "--sparse", ...meta]);
      assertEquals(r.code, 0, r.stderr);
      const files = (await listDir(out)).filter((f) => f !== ".phraseval-dump.json");
      assertEquals(files.length, 2 + meta.length, files.join());
      assert(files.every((f) => new TextEncoder().encode(f).length <= 255 - 14));
    }
    const over = await longIds(dir, 232, 8);
    for (const meta of [[], ["--metadata"]]) {
      const r = await runStage("pipeline/embed_context.ts", [
        over,
        `${dir}/o`,
        "--sparse",
        ...meta,
      ]);
      assertEquals(r.code, 2, r.stderr);
      const lines = r.stderr.trimEnd().split("\n");
      assertEquals(lines.length, 1, r.stderr);
      assertEquals(
        lines[0].replace(/"[^"]{100,}"/g, "ID"),
        `embed_context: ${over}: article 0 (ID) paragraph 0: paragraph id ID: id is 232 bytes; ` +
          "a paragraph id may have at most 231 (255 less the temporary name of <id>.meta.json)",
      );
      // Refused before anything was written: no output folder is left.
      assertEquals([...Deno.readDirSync(dir)].some((e) => e.name === "o"), false);
    }
  });
});

Deno.test("ids: a question id of 237 bytes goes through full; 238 is refused up front", async () => {
  await withDir(async (dir) => {
    const data = await longIds(dir, 231, 237);
    const r = await runStage("pipeline/full.ts", ["--data", data, "--out", `${dir}/run`]);
    assertEquals(r.code, 0, r.stderr);
    assertEquals(Object.keys(JSON.parse(await Deno.readTextFile(`${dir}/run/pred.json`))), [
      "q".repeat(237),
    ]);
    const over = await longIds(dir, 231, 238);
    for (const stage of ["embed_question", "full"]) {
      const args = stage === "full"
        ? ["--data", over, "--out", `${dir}/run2`]
        : [over, `${dir}/q`, "--sparse"];
      const r2 = await runStage(`pipeline/${stage}.ts`, args);
      assertEquals(r2.code, 2, r2.stderr);
      const lines = r2.stderr.trimEnd().split("\n");
      assertEquals(lines.length, 1, r2.stderr);
      assertEquals(
        lines[0].replace(/"[^"]{100,}"/g, "ID"),
        `${stage}: ${over}: article 0 (ID) paragraph 0 question ID: id is 238 bytes; ` +
          "a question id may have at most 237 (255 less the temporary name of <id>.npz)",
      );
    }
    assert(!(await listDir(dir)).includes("run2"));
    assertEquals(await listDir(`${dir}/q`).catch(() => []), []);
  });
});
