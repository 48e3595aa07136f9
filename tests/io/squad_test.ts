import { assert, assertEquals } from "../_assert.ts";
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import * as Schema from "effect/Schema";
import {
  countSquad,
  decodeArticle,
  squadParagraphs,
  squadQuestions,
  type SquadReadOptions,
  squadRecordStream,
} from "../../io/squad.ts";
import { InputError } from "../../io/errors.ts";
import * as schemas from "../../io/_squad_schema.ts";
import {
  articleIssue,
  isArticle,
  isObject,
  isParagraph,
  isQuestion,
  isValidArticle,
  paragraphIssue,
  questionIssue,
} from "../../io/squad_checks.ts";
import { type PyJson, type PyObject, RawNumber } from "../../io/pyjson.ts";
import { split } from "../../io/squad_split.ts";
import { DEV_GZ, listDir, python, ROOT, runStage, sha256File, trainJson } from "../_util.ts";

const OFFICIAL_CONTEXT_SHA = "6b16725c1d0b4be78594941e9a2dae494cadbe97a34307e5dd52220f157e1c8c";
const OFFICIAL_QUESTION_SHA = "a236497f5a93db50f3825aa9f5c17155eba8db55bd7fd70f270c7765464115c4";
const ODD = `${ROOT}/tests/fixtures/odd_squad.json`;

Deno.test("countSquad: bundled dev has the official counts", async () => {
  const c = await Effect.runPromise(countSquad(DEV_GZ));
  assertEquals(c, {
    articles: 48,
    paragraphs: 2067,
    questions: 10570,
    answers: 34726,
    version: "1.1",
  });
});

Deno.test("squadParagraphs: PI-SQuAD ids, also when the title comes after the paragraphs", async () => {
  const dev = await Effect.runPromise(Stream.runCollect(squadParagraphs(DEV_GZ)));
  assertEquals(dev.length, 2067);
  assertEquals(dev[0].id, "Super_Bowl_50_0");
  assertEquals(dev[54].id, "Warsaw_0");
  const odd = await Effect.runPromise(Stream.runCollect(squadParagraphs(ODD)));
  assertEquals(odd.map((p) => p.id), ['A/B "t"_0', 'A/B "t"_1', "Second_0"]);
  // Key-sorted train subset: "paragraphs" precedes "title" in every article.
  const train = await trainJson();
  const first = await Effect.runPromise(Stream.runHead(squadParagraphs(train)));
  assert(first._tag === "Some");
  assertEquals(first.value.id, "University_of_Notre_Dame_0");
});

Deno.test("squad reader: a UTF-8 byte-order mark is read as white space, byte offsets still the file's", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const text = await Deno.readTextFile(ODD);
    const want = await Effect.runPromise(Stream.runCollect(squadQuestions(ODD)));
    const bom = `${dir}/bom.json`;
    await Deno.writeFile(
      bom,
      new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode(text)]),
    );
    assertEquals([...await Effect.runPromise(Stream.runCollect(squadQuestions(bom)))], [...want]);
    // One byte at a time: the mark split over three chunks.
    const records = async (bytes: Uint8Array) => {
      const oneByOne = new ReadableStream<Uint8Array>({
        start(c) {
          for (const b of bytes) c.enqueue(new Uint8Array([b]));
          c.close();
        },
      });
      const out: string[] = [];
      for await (const r of squadRecordStream({ name: bom, stream: oneByOne })) {
        out.push(JSON.stringify(r));
      }
      return out;
    };
    const plain = await records(await Deno.readFile(ODD));
    assertEquals(plain.length, 7);
    assertEquals(await records(await Deno.readFile(bom)), plain);
    // An error's byte offset counts the mark: "}" is byte 13 of the file (10 without it).
    await Deno.writeFile(
      `${dir}/bad.json`,
      new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode('{"data": [}')]),
    );
    const e = await Effect.runPromise(
      Effect.flip(Stream.runCollect(squadQuestions(`${dir}/bad.json`))),
    );
    assertEquals(String(e), `${dir}/bad.json: byte 13: invalid JSON: unexpected "}"`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("squadQuestions: SQuAD v2.0 and unknown fields are kept", async () => {
  const qs = await Effect.runPromise(Stream.runCollect(squadQuestions(ODD)));
  assertEquals(qs.map((q) => q.id), ["q1", "q2", "q3"]);
  assertEquals(qs[0].question, "Whére?");
  assertEquals(qs[0].paragraphId, 'A/B "t"_0');
  assertEquals(qs[1].is_impossible, true);
  assertEquals(qs[1].plausible_answers?.[0].text, "y");
  assertEquals(Object.keys(qs[0].raw), ["answers", "id", "question", "extra"]);
});

Deno.test("split: dev outputs are byte-identical to the official PI-SQuAD split", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const r = await Effect.runPromise(
      split({ data: DEV_GZ, context: `${dir}/c.json`, question: `${dir}/q.json` }),
    );
    assertEquals(r, { articles: 48, paragraphs: 2067, questions: 10570 });
    assertEquals(await sha256File(`${dir}/c.json`), OFFICIAL_CONTEXT_SHA);
    assertEquals(await sha256File(`${dir}/q.json`), OFFICIAL_QUESTION_SHA);
    assertEquals(await listDir(dir), ["c.json", "q.json"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("split: the script reads stdin and matches Python json.dump on odd input", async () => {
  const dir = await Deno.makeTempDir();
  try {
    for (const input of [ODD, await trainJson()]) {
      await python(["tests/py/split_ref.py", input, `${dir}/pc.json`, `${dir}/pq.json`]);
      const r = await runStage("pipeline/split.ts", ["-", `${dir}/c.json`, `${dir}/q.json`], {
        stdin: await Deno.readFile(input),
      });
      assertEquals(r.code, 0, r.stderr);
      assertEquals(r.stderr, "");
      assertEquals(
        await Deno.readTextFile(`${dir}/c.json`),
        await Deno.readTextFile(`${dir}/pc.json`),
      );
      assertEquals(
        await Deno.readTextFile(`${dir}/q.json`),
        await Deno.readTextFile(`${dir}/pq.json`),
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("squad record checks: the written-out checks and their wording agree with the schemas", () => {
  const { ArticleSchema, ObjectSchema, ParagraphSchema, QuestionSchema } = schemas;
  const objectIs = Schema.is(ObjectSchema);
  const pairs: [string, (v: unknown) => boolean, (v: PyObject) => boolean][] = [
    ["article", Schema.is(ArticleSchema), isArticle],
    ["paragraph", Schema.is(ParagraphSchema), isParagraph],
    ["question", Schema.is(QuestionSchema), isQuestion],
  ];
  const odd: unknown[] = [
    null,
    1,
    "s",
    true,
    false,
    [],
    ["x"],
    {},
    { text: "a" },
    { text: 1 },
    [{ text: "a" }],
    [{ text: "a" }, { text: null }],
    [{ text: "a" }, []],
    [{}],
    new RawNumber("1.0"),
    [new RawNumber("1")],
    undefined,
  ];
  // Every field of each record kind, replaced by each odd value, removed, or kept.
  const base = {
    article: { title: "T", paragraphs: [{}] },
    paragraph: { context: "c", qas: [] },
    question: {
      id: "q",
      question: "w?",
      answers: [{ text: "a", answer_start: 0 }],
      is_impossible: false,
      plausible_answers: [{ text: "p" }],
    },
  } as Record<string, PyObject>;
  const schemaOf: Record<string, Schema.Top> = {
    article: ArticleSchema,
    paragraph: ParagraphSchema,
    question: QuestionSchema,
  };
  const issueOf: Record<string, (v: PyObject) => string> = {
    article: articleIssue,
    paragraph: paragraphIssue,
    question: questionIssue,
  };
  let cases = 0, worded = 0;
  for (const [kind, schemaIs, check] of pairs) {
    const b = base[kind];
    const variants: unknown[] = [b, { ...b, extra: 1 }, ...odd];
    for (const key of Object.keys(b)) {
      const { [key]: _, ...without } = b;
      variants.push(without);
      for (const v of odd) variants.push({ ...b, [key]: v });
    }
    for (const v of variants) {
      if (Array.isArray(v)) continue; // callers only check values that are not lists
      assertEquals(isObject(v), objectIs(v), `object ${String(v)}`);
      if (!isObject(v)) continue;
      assertEquals(check(v as PyObject), schemaIs(v), `${kind} ${JSON.stringify(v)}`);
      // A failing record is worded as the schema's decoder words it.
      if (!check(v as PyObject)) {
        assertEquals(
          issueOf[kind](v as PyObject),
          schemaWording(schemaOf[kind], v),
          `${kind} ${JSON.stringify(v)}`,
        );
        worded++;
      }
      cases++;
    }
  }
  assertEquals(cases, 180); // every variant that is an object, all three kinds
  assertEquals(worded, 138); // the variants that fail, each worded as the schema words it
});

/** The first problem of `value` as Schema's decoder words it, in `decodeArticle`'s form. */
function schemaWording(schema: Schema.Top, value: unknown): string {
  const r = Schema.decodeUnknownResult(schema as Schema.Codec<unknown>)(value);
  if (r._tag === "Success") return "invalid record";
  const msg = r.failure.message;
  // "Missing key\n  at ["context"]" -> 'missing "context"'
  const m = /^(.*)\n\s*at (.*)$/s.exec(msg);
  if (!m) return msg.replace(/\s+/g, " ");
  const path = m[2].replace(/\["([^"]*)"\]/g, ".$1").replace(/^\./, "");
  if (m[1] === "Missing key") return `missing "${path}"`;
  return `"${path}": ${m[1].toLowerCase().replace(/\s+/g, " ")}`;
}

Deno.test("squad record checks: isValidArticle says exactly when decodeArticle throws", () => {
  const odd: unknown[] = [null, 1, "s", true, [], {}, [{}], [{ text: 1 }], new RawNumber("2")];
  const question = { id: "q", question: "w?", answers: [{ text: "a" }], is_impossible: false };
  const paragraph = { context: "c", qas: [question] };
  const article = { title: "T", paragraphs: [paragraph] };
  const variants: unknown[] = [article, ...odd];
  const mutate = (o: PyObject, wrap: (x: PyObject) => unknown) => {
    for (const key of Object.keys(o)) {
      const { [key]: _, ...without } = o;
      variants.push(wrap(without));
      for (const v of odd) variants.push(wrap({ ...o, [key]: v } as PyObject));
    }
    for (const v of odd) variants.push(wrap(v as PyObject));
  };
  mutate(article, (a) => a);
  mutate(paragraph, (p) => ({ ...article, paragraphs: [paragraph, p] }));
  mutate(question, (q) => ({ ...article, paragraphs: [{ ...paragraph, qas: [question, q] }] }));
  const options: SquadReadOptions[] = [
    {},
    { context: "optional" },
    { qas: "optional" },
    { answers: "required" },
    { context: "optional", qas: "optional", answers: "required" },
  ];
  let accepted = 0, refused = 0;
  for (const opts of options) {
    for (const v of variants) {
      let decodes = true;
      try {
        decodeArticle("f.json", 0, v as PyJson, opts);
      } catch (e) {
        assert(e instanceof InputError, String(e));
        decodes = false;
      }
      assertEquals(
        isValidArticle(v, opts),
        decodes,
        `${JSON.stringify(opts)} ${JSON.stringify(v)}`,
      );
      if (decodes) accepted++;
      else refused++;
    }
  }
  assertEquals([accepted, refused], [66, 519]); // both kinds well represented
});
