/**
 * Resumes that cannot reuse stale dumps (issue 11, item 9): `full` and the
 * embedding stages write a manifest of what their folder was made from and
 * refuse (exit 2, one line) a rerun into a folder made from another
 * dataset, input or encoder, unless `--overwrite`; a folder where a dump
 * file belongs is not a complete dump.
 */
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { devJson, listDir, ROOT, runStage } from "../_util.ts";
import { DUMP_MANIFEST, RUN_MANIFEST, TOOL_VERSION } from "../../io/manifest.ts";

const DEV = await devJson();

/** Article 0 of dev, its first 3 paragraphs, with `edit` applied. */
async function dataset(path: string, edit?: (ps: { context: string }[]) => void) {
  const dev = JSON.parse(await Deno.readTextFile(DEV));
  const a = dev.data[0];
  a.paragraphs = a.paragraphs.slice(0, 3);
  edit?.(a.paragraphs);
  await Deno.writeTextFile(path, JSON.stringify({ data: [a], version: "1.1" }));
}

/** The edit: paragraph 1's context becomes a text whose answers are elsewhere. */
const editOne = (ps: { context: string }[]) => {
  ps[1].context = "Nothing here. " + ps[1].context.split("").reverse().join("");
};

const questionLine = (id: string, question: string) =>
  JSON.stringify({ kind: "question", id, question }) + "\n";

Deno.test("full into an old --out of another dataset: exit 2 and one line; --overwrite equals a fresh run", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const data = `${dir}/data.json`;
    await dataset(data);
    const first = await runStage("pipeline/full.ts", ["--data", data, "--out", `${dir}/out`]);
    assertEquals(first.code, 0, first.stderr);
    const oldPred = await Deno.readTextFile(`${dir}/out/pred.json`);
    // The same file name, one context edited.
    await dataset(data, editOne);
    const stale = await runStage("pipeline/full.ts", ["--data", data, "--out", `${dir}/out`]);
    assertEquals(stale.code, 2, stale.stderr);
    assertEquals(stale.stderr.trimEnd().split("\n").length, 1, stale.stderr);
    assertMatch(
      stale.stderr,
      /^full: .*\/out: was made from another dataset or encoder \(data_sha256 was [0-9a-f]{12}…, now [0-9a-f]{12}…\): pass --overwrite to start afresh\n$/,
    );
    assertEquals(stale.stdout, "");
    assertEquals(
      await Deno.readTextFile(`${dir}/out/pred.json`),
      oldPred,
      "refusal changed pred.json",
    );
    const again = await runStage("pipeline/full.ts", [
      "--data",
      data,
      "--out",
      `${dir}/out`,
      "--overwrite",
    ]);
    assertEquals(again.code, 0, again.stderr);
    assertMatch(again.stdout, /embed_context .* 3 paragraphs written, 0 already complete/);
    const fresh = await runStage("pipeline/full.ts", ["--data", data, "--out", `${dir}/fresh`]);
    assertEquals(fresh.code, 0, fresh.stderr);
    const pred = await Deno.readTextFile(`${dir}/out/pred.json`);
    assertEquals(pred, await Deno.readTextFile(`${dir}/fresh/pred.json`));
    assert(pred !== oldPred, "the edit did not change any prediction");
    // The same job again resumes: nothing to encode.
    const resumed = await runStage("pipeline/full.ts", ["--data", data, "--out", `${dir}/out`]);
    assertEquals(resumed.code, 0, resumed.stderr);
    assertMatch(resumed.stdout, /embed_context .* 0 paragraphs written, 3 already complete/);
    assertEquals(await Deno.readTextFile(`${dir}/out/pred.json`), pred);
    assert((await listDir(`${dir}/out`)).includes(RUN_MANIFEST));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("full into a folder with an earlier run but no manifest: exit 2 unless --overwrite", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const data = `${dir}/data.json`;
    await dataset(data);
    await Deno.mkdir(`${dir}/out/dumps/question_emb`, { recursive: true });
    await Deno.writeTextFile(`${dir}/out/pred.json`, "{}");
    await Deno.writeTextFile(`${dir}/out/notes.txt`, "mine");
    const r = await runStage("pipeline/full.ts", ["--data", data, "--out", `${dir}/out`]);
    assertEquals(r.code, 2, r.stderr);
    assertMatch(
      r.stderr,
      /^full: .*\/out: holds an earlier run \(dumps, pred\.json\) without \.phraseval-run\.json: pass --overwrite to start afresh\n$/,
    );
    const o = await runStage("pipeline/full.ts", [
      "--data",
      data,
      "--out",
      `${dir}/out`,
      "--overwrite",
    ]);
    assertEquals(o.code, 0, o.stderr);
    // What full does not own is left alone.
    assertEquals(await Deno.readTextFile(`${dir}/out/notes.txt`), "mine");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("embed_question: a folder named <qid>.npz is not a complete dump (exit 2, named)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/q.ndjson`, questionLine("q1", "Where is Paris?"));
    await Deno.mkdir(`${dir}/emb/q1.npz`, { recursive: true });
    const r = await runStage("pipeline/embed_question.ts", [
      `${dir}/q.ndjson`,
      `${dir}/emb`,
      "--sparse",
    ]);
    assertEquals(r.code, 2, r.stderr);
    assertMatch(
      r.stderr,
      /^embed_question: .*\/emb\/q1\.npz: a folder(; an encoder's output folder may hold only the plain files an encoder writes| where only dump files belong \(not counted as a complete dump\))\n$/,
    );
    assertEquals(await listDir(`${dir}/emb`), ["q1.npz"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("embed_context: a folder named <pid>.json is not a complete dump (exit 2, named)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/c.ndjson`,
      JSON.stringify({ kind: "paragraph", id: "T_0", context: "Paris is in France." }) + "\n",
    );
    const ok = await runStage("pipeline/embed_context.ts", [
      `${dir}/c.ndjson`,
      `${dir}/emb`,
      "--sparse",
    ]);
    assertEquals(ok.code, 0, ok.stderr);
    await Deno.remove(`${dir}/emb/T_0.json`);
    await Deno.mkdir(`${dir}/emb/T_0.json`);
    const r = await runStage("pipeline/embed_context.ts", [
      `${dir}/c.ndjson`,
      `${dir}/emb`,
      "--sparse",
    ]);
    assertEquals(r.code, 2, r.stderr);
    assertMatch(
      r.stderr,
      /^embed_context: .*\/emb\/T_0\.json: a folder(;| where only dump files belong)/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("embed stages: a folder made from another input, encoder format or stdin is refused unless --overwrite", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const a = `${dir}/a.ndjson`, b = `${dir}/b.ndjson`, emb = `${dir}/emb`;
    await Deno.writeTextFile(a, questionLine("q1", "Where is Paris?"));
    await Deno.writeTextFile(b, questionLine("q1", "Who wrote Hamlet?"));
    const run = (input: string, ...flags: string[]) =>
      runStage("pipeline/embed_question.ts", [input, emb, "--sparse", ...flags], {
        stdin: input === "-" ? Deno.readFileSync(b) : undefined,
      });
    const first = await run(a);
    assertEquals(first.code, 0, first.stderr);
    assertEquals(await listDir(emb), [DUMP_MANIFEST, "q1.npz"]);
    const m = JSON.parse(await Deno.readTextFile(`${emb}/${DUMP_MANIFEST}`));
    assertEquals([m.half, m.encoder, m.tool, m.sparse], [
      "question",
      "sparse-pi",
      TOOL_VERSION,
      true,
    ]);
    const before = await Deno.readFile(`${emb}/q1.npz`);
    // The same input resumes.
    const same = await run(a);
    assertEquals(same.code, 0, same.stderr);
    assertMatch(same.stderr, /0 questions written, 1 already complete/);
    // Another input (same id): refused, nothing rewritten.
    const other = await run(b);
    assertEquals(other.code, 2, other.stderr);
    assertMatch(
      other.stderr,
      /^embed_question: .*\/emb: was made from another input, encoder or format \(input_sha256 was [0-9a-f]{12}…, now [0-9a-f]{12}…\): pass --overwrite to start afresh\n$/,
    );
    assertEquals(await Deno.readFile(`${emb}/q1.npz`), before);
    // Another format: refused.
    const compressed = await run(a, "--compressed");
    assertEquals(compressed.code, 2, compressed.stderr);
    assertMatch(compressed.stderr, /compressed was false, now true/);
    // Stdin cannot be checked against the folder.
    const piped = await run("-");
    assertEquals(piped.code, 2, piped.stderr);
    assertMatch(
      piped.stderr,
      /the input is stdin, which cannot be checked against it: pass --overwrite/,
    );
    // --overwrite starts afresh: the file is the new question's.
    const o = await run(b, "--overwrite");
    assertEquals(o.code, 0, o.stderr);
    const fresh = await runStage("pipeline/embed_question.ts", [b, `${dir}/fresh`, "--sparse"]);
    assertEquals(fresh.code, 0, fresh.stderr);
    assertEquals(await Deno.readFile(`${emb}/q1.npz`), await Deno.readFile(`${dir}/fresh/q1.npz`));
    assertEquals(
      await Deno.readTextFile(`${emb}/${DUMP_MANIFEST}`),
      await Deno.readTextFile(`${dir}/fresh/${DUMP_MANIFEST}`),
    );
    // A folder with dump files and no manifest: refused.
    await Deno.remove(`${emb}/${DUMP_MANIFEST}`);
    const bare = await run(b);
    assertEquals(bare.code, 2, bare.stderr);
    assertMatch(bare.stderr, /holds 1 files \(e\.g\. q1\.npz\) but no \.phraseval-dump\.json/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the manifests' tool version is deno.json's version", async () => {
  const cfg = JSON.parse(await Deno.readTextFile(`${ROOT}/deno.json`));
  assertEquals(TOOL_VERSION, cfg.version);
});
