/**
 * Tests of io/datasets/ on bad input: every case is one error line naming
 * the file, the line (or the SQuAD record path), the record id when known
 * and what is wrong, asserted exactly, and exit code 2 (`exitCodeOf` of
 * pipeline/_cli.ts). Also: a line over the bound fails as soon as the bound
 * is passed (an endless line is refused after reading about the bound), and
 * bad options are usage errors.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import * as Stream from "effect/Stream";
import { assert, assertEquals } from "../../_assert.ts";
import { exitCodeOf } from "../../../pipeline/_cli.ts";
import { InputError, UsageError } from "../../../io/errors.ts";
import { detectFormat, parseFormatName } from "../../../io/datasets/detect.ts";
import { openQuestions } from "../../../io/datasets/open.ts";
import { type DatasetOptions, readCorpus, readQuestions } from "../../../io/datasets/read.ts";
import { MAX_LINE_BYTES } from "../../../io/datasets/types.ts";

const DIR = await Deno.makeTempDir({ prefix: "datasets_errors_" });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(DIR, { recursive: true });
  } catch { /* already gone */ }
});

/** Writes `content` to a new file called `name` in a fresh folder; returns its path. */
async function file(name: string, content: string | Uint8Array): Promise<string> {
  const dir = await Deno.makeTempDir({ dir: DIR });
  const path = `${dir}/${name}`;
  if (typeof content === "string") await Deno.writeTextFile(path, content);
  else await Deno.writeFile(path, content);
  return path;
}

/** The error a stream fails with (a typed failure, not a defect). */
async function failure<A, E>(s: Stream.Stream<A, E>): Promise<E> {
  const exit = await Effect.runPromiseExit(Stream.runCollect(s));
  if (Exit.isSuccess(exit)) {
    throw new Error(`expected a failure, got ${JSON.stringify([...exit.value])}`);
  }
  const err = exit.cause.reasons.find((r) => r._tag === "Fail");
  if (err === undefined || err._tag !== "Fail") throw new Error(`not a typed failure: ${exit}`);
  return err.error as E;
}

/** Reads `name` holding `content` as questions and checks the one error line (after `path: `). */
async function questionsFail(
  name: string,
  content: string | Uint8Array,
  expected: string,
  opts: DatasetOptions = {},
): Promise<void> {
  const path = await file(name, content);
  const e = await failure(readQuestions(path, opts));
  assert(e instanceof InputError, `not an InputError: ${e}`);
  assertEquals(String(e), `${path}: ${expected}`);
  assert(!String(e).includes("\n"), "more than one line");
  assertEquals(exitCodeOf(e), 2);
}

async function corpusFail(name: string, content: string, expected: string): Promise<void> {
  const path = await file(name, content);
  const e = await failure(readCorpus(path));
  assert(e instanceof InputError, `not an InputError: ${e}`);
  assertEquals(String(e), `${path}: ${expected}`);
  assertEquals(exitCodeOf(e), 2);
}

Deno.test("datasets errors: a malformed JSONL line names its line", async () => {
  await questionsFail(
    "nq-open.jsonl",
    '{"question": "a?", "answer": ["x"]}\n{"question": "b?", "answer": [\n',
    `line 2: invalid JSON (Unexpected end of JSON input)`,
  );
  await questionsFail(
    "m.jsonl",
    '{"header": {}}\n["not", "an", "object"]\n',
    "line 2: not a JSON object",
  );
  await questionsFail(
    "nq-open.jsonl",
    new Uint8Array([
      ...new TextEncoder().encode('{"question": "a?", "answer": ["x"]}\n{"question": "'),
      0xff,
      0x22,
      0x7d,
    ]),
    "line 2: invalid UTF-8 at byte 50",
  );
});

Deno.test("datasets errors: a DPR row with the wrong column count, answers that are not a list", async () => {
  const ok = "who wrote hamlet\t['Shakespeare']\n";
  await questionsFail(
    "nq-test.qa.csv",
    ok + "where is rome\t['Italy']\textra\n",
    `line 2 question "1": expected 2 tab-separated columns (question, answers), found 3`,
  );
  await questionsFail(
    "nq-test.qa.csv",
    ok + "where is rome\n",
    `line 2 question "1": expected 2 tab-separated columns (question, answers), found 1`,
    { format: "dpr" },
  );
  await questionsFail(
    "nq-test.qa.csv",
    ok + "where is rome\tItaly\n",
    `line 2 question "1": answers are not a Python list of strings: expected '[' (column 1)`,
  );
  await questionsFail(
    "nq-test.qa.csv",
    ok + "\n\nwhen\t['1969', None]\n",
    `line 4 question "1": answers are not a Python list of strings: item 2 is not a string (column 10)`,
  );
  await questionsFail(
    "nq-test.qa.csv",
    ok + "when\t['1969\n",
    `line 2 question "1": answers are not a Python list of strings: unterminated string (column 2)`,
  );
  await questionsFail(
    "nq-test.qa.csv",
    ok + '"when did it\tstart\n',
    "line 2: quoted field not closed before the end of the file",
  );
  // JSONL answers that are not a list of strings.
  await questionsFail(
    "nq-open.jsonl",
    '{"question": "a?", "answer": [1, 2]}\n',
    `line 1 question "0": "answer" is not a list of strings`,
  );
  await questionsFail(
    "g.jsonl",
    '{"q": "a?", "gold": {"x": 1}}\n',
    `line 1 question "0": "gold" is not a string or a list of strings`,
    { format: "jsonl", fields: { question: "q", answers: "gold" } },
  );
  await questionsFail(
    "g.csv",
    "q,gold\nwho?,\"['a',\"\n",
    `line 2 question "0": "gold" is not a list of strings: expected ']' (column 6)`,
    { fields: { question: "q", answers: "gold" } },
  );
  await questionsFail(
    "g.csv",
    "q,gold\nwho?,a,b\n",
    `line 2 question "0": expected 2 columns as the header, found 3`,
    { fields: { question: "q", answers: "gold" } },
  );
  await questionsFail(
    "g.csv",
    "q,answer\nwho?,a\n",
    `line 1: no column "gold" in the header (q, answer)`,
    { fields: { question: "q", answers: "gold" } },
  );
});

Deno.test("datasets errors: a repeated id names both places", async () => {
  await questionsFail(
    "triviaqa-open.jsonl",
    '{"question_id": "tq1", "question": "a?", "answer": ["x"]}\n\n' +
      '{"question_id": "tq2", "question": "b?", "answer": ["y"]}\n' +
      '{"question_id": "tq1", "question": "c?", "answer": ["z"]}\n',
    `line 4 question "tq1": duplicate id (first at line 1)`,
  );
  // A file's own id may clash with a position number: still one id space.
  await questionsFail(
    "nq-open.jsonl",
    '{"question": "a?", "answer": ["x"]}\n{"id": 0, "question": "b?", "answer": ["y"]}\n',
    `line 2 question "0": duplicate id (first at line 1)`,
  );
  const mrqa = (qid: string, question: string) =>
    JSON.stringify({ context: "Paris.", qas: [{ qid, question, answers: ["Paris"] }] });
  await questionsFail(
    "m.jsonl",
    ['{"header": {"dataset": "x"}}', mrqa("a", "Where?"), mrqa("b", "What?"), mrqa("a", "Who?")]
      .join("\n"),
    `line 4 question "a": duplicate id (first at line 2)`,
  );
  await questionsFail(
    "squad.json",
    JSON.stringify({
      version: "1.1",
      data: [
        {
          title: "A",
          paragraphs: [{ context: "x", qas: [{ id: "q1", question: "a?", answers: [] }] }],
        },
        {
          title: "B",
          paragraphs: [{ context: "y", qas: [{ id: "q1", question: "b?", answers: [] }] }],
        },
      ],
    }),
    `article "B" paragraph 0 question "q1": duplicate id (first at article "A" paragraph 0)`,
  );
  await questionsFail(
    "g.jsonl",
    '{"k": 7, "q": "a?"}\n{"k": "7", "q": "b?"}\n',
    `line 2 question "7": duplicate id (first at line 1)`,
    { format: "jsonl", fields: { id: "k", question: "q" } },
  );
  await corpusFail(
    "psgs_w100.tsv",
    "id\ttext\ttitle\n1\tA.\tT\n2\tB.\tT\n1\tC.\tT\n",
    `line 4 passage "1": duplicate id (first at line 2)`,
  );
  // 50,000 passages with DPR's dense decimal ids, then one repeated.
  let tsv = "id\ttext\ttitle\n";
  for (let i = 1; i <= 50000; i++) tsv += `${i}\tPassage ${i}.\tT\n`;
  await corpusFail(
    "psgs_w100.tsv",
    tsv + "25000\tAgain.\tT\n",
    `line 50002 passage "25000": duplicate id (first at line 25001)`,
  );
  await corpusFail(
    "corpus.jsonl",
    '{"id": "p", "text": "A."}\n{"id": "p", "text": "B."}\n',
    `line 2 passage "p": duplicate id (first at line 1)`,
  );
  await corpusFail(
    "squad.json",
    JSON.stringify({
      data: [
        { title: "A", paragraphs: [{ context: "x", qas: [] }] },
        { title: "A", paragraphs: [{ context: "y", qas: [] }] },
      ],
    }),
    `article "A" paragraph 0: duplicate paragraph id "A_0" (first at article "A" paragraph 0)`,
  );
});

Deno.test("datasets errors: a corpus passage without an id, or with the wrong column count", async () => {
  await corpusFail(
    "psgs_w100.tsv",
    "id\ttext\ttitle\n1\tA.\tT\n\tB.\tT\n",
    "line 3: passage without id",
  );
  await corpusFail(
    "psgs_w100.tsv",
    "id\ttext\ttitle\n1\tA.\tT\n2\tB.\n",
    `line 3 passage "2": expected 3 tab-separated columns (id, text, title), found 2`,
  );
  await corpusFail(
    "corpus.jsonl",
    '{"id": "p1", "title": "T", "text": "A."}\n{"title": "T", "text": "B."}\n',
    "line 2: passage without id",
  );
  await corpusFail(
    "corpus.jsonl",
    '{"id": "p1", "title": "T", "text": "A."}\n{"id": "p2", "title": "T"}\n',
    `line 2 passage "p2": missing "text"`,
  );
});

Deno.test("datasets errors: a corpus passage with an empty text", async () => {
  await corpusFail(
    "psgs_w100.tsv",
    'id\ttext\ttitle\n1\tA.\tT\n2\t""\tT\n',
    `line 3 passage "2": empty text`,
  );
  await corpusFail(
    "psgs_w100.tsv",
    "id\ttext\ttitle\nwiki:7\t  \tT\n",
    `line 2 passage "wiki:7": empty text`,
  );
  await corpusFail(
    "corpus.jsonl",
    '{"id": "p1", "text": "A."}\n{"id": 2, "title": "T", "text": "  "}\n',
    `line 2 passage "2": empty text`,
  );
});

Deno.test("datasets errors: a SQuAD paragraph without a context is no corpus passage", async () => {
  await corpusFail(
    "squad.json",
    JSON.stringify({ data: [{ title: "T", paragraphs: [{ context: "c" }, { qas: [] }] }] }),
    `article "T" paragraph 1: missing "context"`,
  );
});

Deno.test("datasets errors: an empty question, in every format", async () => {
  await questionsFail(
    "nq-test.qa.csv",
    "who?\t['a']\n \t['b']\n",
    `line 2 question "1": empty question`,
  );
  await questionsFail(
    "nq-open.jsonl",
    '{"question": "a?", "answer": ["x"]}\n{"question": "", "answer": ["y"]}\n',
    `line 2 question "1": empty question`,
  );
  await questionsFail(
    "nq-open.jsonl",
    '{"question": "a?", "answer": ["x"]}\n{"answer": ["y"]}\n',
    `line 2 question "1": missing "question"`,
    { format: "open" },
  );
  await questionsFail(
    "m.jsonl",
    '{"header": {}}\n' +
      JSON.stringify({ context: "P.", qas: [{ qid: "m1", question: "\t", answers: [] }] }) + "\n",
    `line 2 question "m1": empty question`,
  );
  await questionsFail(
    "squad.json",
    JSON.stringify({
      data: [{
        title: "T",
        paragraphs: [{ context: "c", qas: [{ id: "s1", question: "", answers: [] }] }],
      }],
    }),
    `article "T" paragraph 0 question "s1": empty question`,
  );
  await questionsFail(
    "g.csv",
    "id,q\na,who?\nb,\n",
    `line 3 question "b": empty question`,
    { fields: { id: "id", question: "q" } },
  );
});

Deno.test("datasets errors: a line over the bound is one error, read no further than the bound", async () => {
  assertEquals(MAX_LINE_BYTES, 16 * 1024 * 1024);
  await questionsFail(
    "nq-open.jsonl",
    '{"question": "a?", "answer": ["x"]}\n{"question": "' + "é".repeat(40) + '"}\n',
    "line 2: line longer than 64 bytes",
    { maxLineBytes: 64 },
  );
  await questionsFail(
    "nq-test.qa.csv",
    "a?\t['x']\n" + "b".repeat(65) + "\t['y']\n",
    "line 2: line longer than 64 bytes",
    { maxLineBytes: 64 },
  );
  // A quoted CSV field running over many lines is bounded as one record.
  await questionsFail(
    "nq-test.qa.csv",
    "a?\t['x']\n\"" + "bbbbbbbbbb\n".repeat(10) + "\"\t['y']\n",
    "line 2: record longer than 64 bytes (a quoted field open since line 2)",
    { maxLineBytes: 64 },
  );
  // An endless line (no newline ever): refused after about the bound, not read forever.
  let pulled = 0;
  const chunk = new Uint8Array(64 * 1024).fill(0x61);
  const endless = new ReadableStream<Uint8Array>({
    pull(c) {
      if (pulled > 64 * 1024 * 1024) return c.error(new Error("read past the bound"));
      pulled += chunk.byteLength;
      c.enqueue(chunk);
    },
  });
  const e = await failure(
    openQuestions({ name: "endless.jsonl", stream: endless }, { maxLineBytes: 1 << 20 }),
  );
  assertEquals(String(e), "endless.jsonl: line 1: line longer than 1048576 bytes");
  assert(pulled <= (1 << 20) + 2 * chunk.byteLength, `read ${pulled} bytes`);
});

Deno.test("datasets errors: MRQA without its header, spans outside the context (code points)", async () => {
  await questionsFail(
    "m.jsonl",
    JSON.stringify({ context: "P.", qas: [] }) + "\n",
    `line 1: not the MRQA header line ({"header": ...})`,
    { format: "mrqa" },
  );
  await questionsFail("m.jsonl", "", `empty file: no MRQA header line ({"header": ...})`, {
    format: "mrqa",
  });
  // "😀 Zürich" is 8 code points (Python's len) but 9 UTF-16 units: [2, 8] is outside.
  const line = (spans: number[][]) =>
    JSON.stringify({
      id: "c",
      context: "😀 Zürich",
      qas: [{
        qid: "z",
        question: "Which?",
        answers: ["Zürich"],
        detected_answers: [{ text: "Zürich", char_spans: spans }],
      }],
    });
  const ok = await file("m.jsonl", '{"header": {}}\n' + line([[2, 7]]) + "\n");
  assertEquals((await Effect.runPromise(Stream.runCollect(readQuestions(ok)))).length, 1);
  await questionsFail(
    "m.jsonl",
    '{"header": {}}\n' + line([[2, 8]]) + "\n",
    `line 2 question "z": detected answer 0: "char_spans" span 0 [2, 8] is outside the context (8 characters)`,
  );
  await questionsFail(
    "m.jsonl",
    '{"header": {}}\n' + JSON.stringify({ context: "P.", qas: [{ question: "Q?", answers: [] }] }) +
      "\n",
    `line 2: question 0 of the context: missing "qid"`,
  );
  await questionsFail(
    "m.jsonl",
    '{"header": {}}\n' +
      JSON.stringify({ context: "P.", qas: [{ qid: "q", question: "Q?", answers: "P" }] }) +
      "\n",
    `line 2 question "q": "answers" is not a list of strings`,
  );
});

Deno.test("datasets errors: a format that cannot be told, an empty file, bad options", async () => {
  for (
    const [content, expected] of [
      [
        "just one word\n",
        "line 1: cannot tell the dataset format from the start of the file; name it (--format)",
      ],
      ["", "empty file"],
      ["\n  \n", "empty file"],
    ]
  ) {
    const path = await file("x.txt", content);
    const e = await Effect.runPromise(Effect.flip(detectFormat(path)));
    assertEquals(String(e), `${path}: ${expected}`);
    assertEquals(exitCodeOf(e), 2);
    const r = await failure(readQuestions(path));
    assertEquals(String(r), `${path}: ${expected}`);
  }
  const missing = `${DIR}/no-such.jsonl`;
  const m = await failure(readQuestions(missing));
  assertEquals(String(m), `${missing}: no such file`);
  assertEquals(exitCodeOf(m), 2);

  const usage = async (path: string, opts: DatasetOptions, expected: string, corpus = false) => {
    const e = corpus
      ? await failure(readCorpus(path, opts))
      : await failure(readQuestions(path, opts));
    assert(e instanceof UsageError, `not a UsageError: ${e}`);
    assertEquals(e.message, expected);
    assertEquals(exitCodeOf(e), 2);
  };
  const g = await file("g.jsonl", '{"q": "a?"}\n');
  await usage(g, {}, `${g}: a generic jsonl file needs a field map ({question, answers, id, ...})`);
  const x = await file("xquad.json", '{"data": []}');
  await usage(x, { format: "xquad" }, `${x}: a xquad file needs a language code (--lang)`);
  const p = await file("psgs.tsv", "id\ttext\ttitle\n");
  await usage(p, {}, `${p}: dpr-passages is a corpus, not a question set`);
  const n = await file("nq.jsonl", '{"question": "a?", "answer": []}\n');
  await usage(
    n,
    {},
    `${n}: a open file has no paragraphs to search; corpora: dpr-passages, passages, squad, squad2, xquad, mlqa, mrqa`,
    true,
  );
  const u = await failure(readQuestions(n, { format: "hotpotqa" }));
  assert(u instanceof UsageError);
  assertEquals(
    u.message,
    (() => {
      try {
        parseFormatName("hotpotqa");
      } catch (e) {
        return (e as Error).message;
      }
    })(),
  );
  assert(
    u.message.startsWith(`unknown dataset format "hotpotqa"; the formats: squad, squad2, xquad,`),
  );
});
