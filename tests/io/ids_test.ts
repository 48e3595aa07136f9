/**
 * Dataset ids (`io/squad_ids.ts`): the rule that renames repeated titles,
 * the refusals of repeated paragraph and question ids in the SQuAD reader
 * and in merge's one-go reader, and a run config's `uniqueIds`.
 */
import * as Effect from "effect/Effect";
import * as Schema from "effect/Schema";
import * as Stream from "effect/Stream";
import { assertEquals } from "../_assert.ts";
import { InputError } from "../../io/errors.ts";
import { type SquadReadOptions, squadRecords } from "../../io/squad.ts";
import { DatasetIds, isIdProblem, squadQuestionParagraphs } from "../../io/squad_ids.ts";
import { split } from "../../io/squad_split.ts";
import type { ResolvedRunConfig } from "../../runs/config/config.ts";
import { planRun, scanDataset } from "../../runs/plan/plan.ts";
import { RunConfigSchema } from "../../runs/config/schema.ts";

const para = (...qids: string[]) => ({
  context: "Paris is big.",
  qas: qids.map((id) => ({ id, question: "?", answers: [{ text: "Paris", answer_start: 0 }] })),
});

const dataset = (articles: [string, ReturnType<typeof para>[]][]) =>
  JSON.stringify({
    version: "1.1",
    data: articles.map(([title, paragraphs]) => ({ title, paragraphs })),
  });

async function withFile<A>(text: string, f: (path: string) => Promise<A>): Promise<A> {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-ids-" });
  try {
    await Deno.writeTextFile(`${dir}/d.json`, text);
    return await f(`${dir}/d.json`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** `title:paragraph ids` of every article, or the error line. */
const read = (path: string, opts: SquadReadOptions) =>
  Effect.runPromise(
    Stream.runCollect(squadRecords(path, opts)).pipe(
      Effect.map((rs) =>
        rs.flatMap((r) =>
          r.kind === "article" ? [`${r.title}:${r.paragraphs.map((p) => p.id).join(",")}`] : []
        )
      ),
      Effect.catch((e) => Effect.succeed([String(e)])),
    ),
  );

Deno.test("ids: the renaming rule (in file order, unique against every title before)", () => {
  const ids = new DatasetIds("unique");
  const got = [
    ["A", 2],
    ["A", 1],
    ["A#2", 1], // an original title that an earlier article was renamed to
    ["A", 0], // no paragraphs: no ids, no renaming, nothing reserved
    ["A", 1],
    ["B/C", 1],
    ["B_C", 1], // the same dump files as B/C
    ["A#3", 1],
  ].map(([t, n], i) => ids.article(i, t as string, n as number));
  assertEquals(got, ["A", "A#2", "A#2#2", "A", "A#3", "B/C", "B_C#2", "A#3#2"]);
  // A dataset without repeated titles is left as it is.
  const plain = new DatasetIds("unique");
  assertEquals(["x", "y", "x#2"].map((t, i) => plain.article(i, t, 1)), ["x", "y", "x#2"]);
  // As read: nothing is checked.
  const asRead = new DatasetIds("as-read");
  assertEquals([asRead.article(0, "A", 1), asRead.article(1, "A", 1)], ["A", "A"]);
  assertEquals(asRead.question("q", 0, "A", 0), asRead.question("q", 1, "A", 0));
});

Deno.test("ids: question ids are never renamed; a repeat or a shared file name is refused", () => {
  for (const mode of ["distinct", "unique"] as const) {
    const ids = new DatasetIds(mode);
    assertEquals(ids.question("a/b", 0, "T", 0), undefined);
    assertEquals(ids.question("a_b", 2, "U", 1), {
      where: "",
      message: 'question ids "a/b" of article 0 ("T") paragraph 0 and "a_b" of article 2 ("U") ' +
        `paragraph 1 name the same dump file "a_b.npz" ('/' becomes '_'); question ids cannot be renamed`,
    });
    assertEquals(
      ids.question("a/b", 3, "V", 0)?.message.startsWith('question id "a/b" occurs'),
      true,
    );
    assertEquals(ids.question("..", 3, "V", 0), {
      where: 'article 3 ("V") paragraph 0 question ".."',
      message: 'id names the file ".."',
    });
  }
});

Deno.test("ids: the SQuAD reader refuses, renames or keeps repeated titles by its ids option", async () => {
  const text = dataset([["T", [para("q1"), para("q2")]], ["U", [para("q3")]], ["T", [para("q4")]]]);
  await withFile(text, async (path) => {
    assertEquals(await read(path, {}), ["T:T_0,T_1", "U:U_0", "T:T_0"]);
    assertEquals(await read(path, { ids: "distinct" }), [
      `${path}: paragraph id "T_0" occurs in article 0 ("T") and article 2 ("T"); ` +
      "pass --unique-ids (in a run config: uniqueIds: true) to rename",
    ]);
    assertEquals(await read(path, { ids: "unique" }), ["T:T_0,T_1", "U:U_0", "T#2:T#2_0"]);
    // Merge's one-go reader: the same ids, or undefined (the streaming reader says why).
    const bytes = new TextEncoder().encode(text);
    assertEquals(squadQuestionParagraphs(bytes, { ids: "distinct" }), undefined);
    assertEquals(
      [...squadQuestionParagraphs(bytes, { ids: "unique" })!],
      [["q1", "T_0"], ["q2", "T_1"], ["q3", "U_0"], ["q4", "T#2_0"]],
    );
  });
  // A repeated question id: refused in both modes, by both readers.
  const dupQ = dataset([["T", [para("q1")]], ["U", [para("q2", "q1")]]]);
  await withFile(dupQ, async (path) => {
    for (const ids of ["distinct", "unique"] as const) {
      assertEquals(await read(path, { ids }), [
        `${path}: question id "q1" occurs in article 0 ("T") paragraph 0 and article 1 ("U") ` +
        "paragraph 0; question ids must be unique (predictions are keyed by them)",
      ]);
      assertEquals(squadQuestionParagraphs(new TextEncoder().encode(dupQ), { ids }), undefined);
    }
  });
});

Deno.test("ids: split --unique-ids writes the new titles; reading its output again changes nothing", async () => {
  const text = dataset([["T", [para("q1")]], ["T", [para("q2")]]]);
  await withFile(text, async (path) => {
    const dir = path.slice(0, path.lastIndexOf("/"));
    await Effect.runPromise(
      split({ data: path, context: `${dir}/c.json`, question: `${dir}/q.json`, uniqueIds: true }),
    );
    const c = await Deno.readTextFile(`${dir}/c.json`);
    assertEquals(
      c,
      '{"version": "1.1", "data": [{"title": "T", "paragraphs": [{"context": "Paris is big."}]}, ' +
        '{"title": "T#2", "paragraphs": [{"context": "Paris is big."}]}]}',
    );
    for (const f of ["c.json", "q.json"]) {
      assertEquals(
        await read(`${dir}/${f}`, { ids: "distinct", qas: "optional", context: "optional" }),
        [
          "T:T_0",
          "T#2:T#2_0",
        ],
      );
    }
  });
});

Deno.test("ids: a run config's uniqueIds renames in the plan and passes --unique-ids to every task", async () => {
  const text = dataset([["X", [para("q0")]], ["T", [para("q1")]], ["U", [para("q2")]], ["T", [
    para("q3"),
  ]]]);
  await withFile(text, async (path) => {
    const ds = {
      abbr: "d",
      type: "squad" as const,
      path,
      articles: [1, 4] as const,
      metrics: ["em" as const],
      bem: null,
    };
    const refused = await Effect.runPromise(Effect.flip(scanDataset(ds)));
    assertEquals(refused instanceof InputError, true);
    assertEquals(
      String(refused),
      `${path}: paragraph id "T_0" occurs in article 1 ("T") and article 3 ("T"); ` +
        "pass --unique-ids (in a run config: uniqueIds: true) to rename",
    );
    const scan = await Effect.runPromise(scanDataset({ ...ds, uniqueIds: true }));
    assertEquals(scan.paragraphIds, ["T_0", "U_0", "T#2_0"]);
    assertEquals(scan.questionIds, ["q1", "q2", "q3"]);
    const config: ResolvedRunConfig = {
      file: "/c.ts",
      name: "c",
      datasets: [{ ...ds, uniqueIds: true }],
      models: [{
        abbr: "m",
        encoder: "sparse-pi",
        model: null,
        device: "cpu",
        threads: null,
        batch: { context: null, question: null },
        dtype: null,
        sparse: true,
        contextFiles: [],
        questionFiles: [],
        permissions: [],
      }],
      workDir: null,
      maxPartitionSize: null,
      maxWorkers: null,
      taskTimeout: null,
      retries: null,
    };
    const plan = await Effect.runPromise(planRun(config, { runDir: "/r", maxPartitionSize: 2 }));
    const flagged = plan.tasks.filter((t) => t.argv.includes("--unique-ids")).map((t) => t.id);
    assertEquals(flagged, [
      "prepare/d",
      "encode_context/m/d/0",
      "encode_context/m/d/1",
      "encode_question/m/d/0",
      "encode_question/m/d/1",
      "merge/m/d",
    ]);
    const ctx = plan.tasks.filter((t) => t.check.kind === "context").flatMap((t) =>
      t.check.kind === "context" ? t.check.ids : []
    );
    assertEquals(ctx, ["T_0", "U_0", "T#2_0"]);
  });
  const is = Schema.is(RunConfigSchema);
  const cfg = (uniqueIds: unknown) => ({
    datasets: [{ abbr: "d", path: "/d.json", uniqueIds }],
    models: [{ abbr: "m", encoder: "sparse-pi" }],
  });
  assertEquals([is(cfg(true)), is(cfg(false)), is(cfg("yes"))], [true, true, false]);
});

Deno.test("ids: an id is checked to name a dump file when the dataset is read", () => {
  const ids = new DatasetIds("distinct");
  const t231 = "é".repeat(100) + "x".repeat(29); // + "_0": 231 bytes
  assertEquals(ids.article(0, t231, 1), t231);
  const over = ids.article(1, t231 + "y", 1);
  assertEquals(
    isIdProblem(over)
      ? over.message.endsWith(
        "id is 232 bytes; a paragraph id may have at most 231 (255 less the temporary name of <id>.meta.json)",
      )
      : over,
    true,
  );
  // Ten paragraphs: the longest id is the one checked.
  const ten = ids.article(2, "é".repeat(100) + "z".repeat(29), 11);
  assertEquals(
    isIdProblem(ten) ? ten.where : ten,
    `article 2 (${JSON.stringify("é".repeat(100) + "z".repeat(29))}) paragraph 10`,
  );
  assertEquals(ids.article(3, "../escape", 1), "../escape");
});
