/**
 * Tests of io/datasets/: every question-set and corpus format on a small
 * fixture of `tests/testdata/datasets/` (written for these tests), read
 * plain and gzip, with the format detected and named; record counts and the
 * first and last records asserted. The DPR fixtures' expected values are
 * what DPR's own reading gives (`csv.reader(f, delimiter="\t")`, `eval` of
 * the answers, `strip('"')` of a passage text), checked with Python.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { assertEquals } from "../../_assert.ts";
import { DEV_GZ, ROOT, runArgv, TRAIN_GZ } from "../../_util.ts";
import { detectFormat } from "../../../io/datasets/detect.ts";
import { readCorpus, readQuestions } from "../../../io/datasets/read.ts";
import type { DatasetOptions } from "../../../io/datasets/read.ts";
import type { CorpusPassage, QaRecord } from "../../../io/datasets/types.ts";
import { dprPassages, dprQuestions } from "../../../io/datasets/dpr.ts";
import { csvQuestions } from "../../../io/datasets/generic.ts";
import { mrqaQuestions } from "../../../io/datasets/mrqa.ts";
import { openQuestions } from "../../../io/datasets/open.ts";
import { jsonlPassages } from "../../../io/datasets/passages.ts";
import type { ByteSource } from "../../../io/source.ts";

const DATA = `${ROOT}/tests/testdata/datasets`;
const TMP = await Deno.makeTempDir({ prefix: "datasets_readers_" });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(TMP, { recursive: true });
  } catch { /* already gone */ }
});

/** A gzip copy of `path` under the same name plus `.gz`, in a new temporary folder. */
async function gzCopy(path: string): Promise<string> {
  const dir = await Deno.makeTempDir({ dir: TMP });
  const out = `${dir}/${path.slice(path.lastIndexOf("/") + 1)}.gz`;
  const file = await Deno.open(path);
  await Deno.writeFile(out, file.readable.pipeThrough(new CompressionStream("gzip")));
  return out;
}

const collect = <A, E>(s: Stream.Stream<A, E>): Promise<A[]> =>
  Effect.runPromise(Effect.map(Stream.runCollect(s), (c) => [...c]));

/** An object with its keys sorted, so equality does not depend on key order. */
function canon<T extends object>(o: T): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

interface Case<T> {
  readonly file: string;
  readonly detected: string;
  readonly count: number;
  readonly first: T;
  readonly last: T;
  readonly opts?: DatasetOptions;
}

/** Reads `c.file` plain and gzip, detected and named, and checks count, first and last. */
async function checkQuestions(c: Case<QaRecord>): Promise<void> {
  const plain = `${DATA}/${c.file}`;
  for (const path of [plain, await gzCopy(plain)]) {
    assertEquals(await Effect.runPromise(detectFormat(path)), c.detected, path);
    for (const opts of [c.opts ?? {}, { ...c.opts, format: c.detected }]) {
      const qs = await collect(readQuestions(path, opts));
      assertEquals(qs.length, c.count, path);
      assertEquals(canon(qs[0]), canon(c.first), path);
      assertEquals(canon(qs[qs.length - 1]), canon(c.last), path);
    }
  }
}

async function checkCorpus(c: Case<CorpusPassage>): Promise<void> {
  const plain = `${DATA}/${c.file}`;
  for (const path of [plain, await gzCopy(plain)]) {
    assertEquals(await Effect.runPromise(detectFormat(path)), c.detected, path);
    for (const opts of [{}, { format: c.detected }]) {
      const ps = await collect(readCorpus(path, opts));
      assertEquals(ps.length, c.count, path);
      assertEquals(ps[0], c.first, path);
      assertEquals(ps[ps.length - 1], c.last, path);
    }
  }
}

const ZURICH = "Zürich lies on Lake Zürich. Its old town is called Altstadt.";

Deno.test("datasets: SQuAD v1.1 (plain, gzip): 4 questions with paragraph ids, contexts, titles", async () => {
  await checkQuestions({
    file: "squad_v1.json",
    detected: "squad",
    count: 4,
    first: {
      kind: "question",
      id: "z1",
      question: "Which lake is Zürich on?",
      answers: ["Lake Zürich", "Lake Zürich"],
      paragraphId: "Zürich_0",
      context: ZURICH,
      title: "Zürich",
    },
    last: {
      kind: "question",
      id: "t1",
      question: "日本の首都は？",
      answers: ["東京"],
      paragraphId: "東京_0",
      context: "東京は日本の首都です。",
      title: "東京",
    },
  });
});

Deno.test("datasets: SQuAD v2.0: is_impossible as noAnswer, plausible_answers kept", async () => {
  const context = "The café opens at seven and sells crêpes.";
  await checkQuestions({
    file: "squad_v2.json",
    detected: "squad2",
    count: 3,
    first: {
      kind: "question",
      id: "c1",
      question: "When does the café open?",
      answers: ["at seven"],
      paragraphId: "Café_0",
      context,
      title: "Café",
    },
    last: {
      kind: "question",
      id: "c3",
      question: "What does it sell?",
      answers: ["crêpes"],
      paragraphId: "Café_0",
      context,
      title: "Café",
    },
  });
  const qs = await collect(readQuestions(`${DATA}/squad_v2.json`));
  assertEquals(
    canon(qs[1]),
    canon({
      kind: "question",
      id: "c2",
      question: "When does the café close?",
      answers: [],
      noAnswer: true,
      plausibleAnswers: ["seven"],
      paragraphId: "Café_0",
      context,
      title: "Café",
    }),
  );
});

Deno.test("datasets: XQuAD and MLQA: SQuAD files with the language of the file name or --lang", async () => {
  const ctx = "Berlin ist die Hauptstadt Deutschlands. Die Spree fließt durch die Stadt.";
  const base = {
    kind: "question" as const,
    paragraphId: "Berlin_0",
    context: ctx,
    title: "Berlin",
  };
  await checkQuestions({
    file: "xquad.de.json",
    detected: "xquad",
    count: 2,
    first: {
      ...base,
      id: "x1",
      question: "Was ist die Hauptstadt Deutschlands?",
      answers: ["Berlin"],
      lang: "de",
    },
    last: {
      ...base,
      id: "x2",
      question: "Welcher Fluss fließt durch Berlin?",
      answers: ["Die Spree"],
      lang: "de",
    },
  });
  const mlqa: QaRecord = {
    kind: "question",
    id: "m1",
    question: "Where is the Great Wall?",
    answers: ["中国北部"],
    paragraphId: "长城_0",
    context: "长城位于中国北部。",
    title: "长城",
    lang: "zh",
  };
  await checkQuestions({
    file: "dev-context-zh-question-en.json",
    detected: "mlqa",
    count: 1,
    first: mlqa,
    last: mlqa,
  });
  // --lang wins over the file name, and gives any SQuAD file a language.
  const [q] = await collect(readQuestions(`${DATA}/xquad.de.json`, { lang: "de-CH" }));
  assertEquals(q.lang, "de-CH");
  const [v1] = await collect(readQuestions(`${DATA}/squad_v1.json`, { lang: "en" }));
  assertEquals(v1.lang, "en");
});

Deno.test("datasets: MRQA JSONL: header passed over, paragraph id = position unless the context has one", async () => {
  const ctx0 = "Marie Curie won two Nobel prizes. She was born in Warsaw.";
  await checkQuestions({
    file: "mrqa.jsonl",
    detected: "mrqa",
    count: 3,
    first: {
      kind: "question",
      id: "mq1",
      question: "How many Nobel prizes did Curie win?",
      answers: ["two", "2"],
      paragraphId: "0",
      context: ctx0,
    },
    last: {
      kind: "question",
      id: "mq3",
      question: "Which city?",
      answers: ["Zürich"],
      paragraphId: "ctx-zh",
      context: "😀 Zürich",
    },
  });
});

Deno.test("datasets: DPR question CSV: Python's csv and eval, ids numbered from 0", async () => {
  await checkQuestions({
    file: "nq-test.qa.csv",
    detected: "dpr",
    count: 4,
    first: {
      kind: "question",
      id: "0",
      question: "who painted the mona lisa",
      answers: ["Leonardo da Vinci"],
    },
    last: {
      kind: "question",
      id: "3",
      question: "who sang don't stop me now",
      answers: ["Don't Stop Me Now", "Queen", "Freddie's band", "été"],
    },
  });
  // A question that opens with a quote is a quoted CSV field, as DPR's csv.reader reads it.
  const qs = await collect(readQuestions(`${DATA}/nq-test.qa.csv`));
  assertEquals(qs[2].question, "the raven was written by");
  assertEquals(qs[1].answers, ["Tokyo", "東京"]);
});

Deno.test("datasets: CuratedTREC in DPR's layout: answers are regular expressions, flagged", async () => {
  await checkQuestions({
    file: "curatedtrec-test.qa.csv",
    detected: "trec",
    count: 2,
    first: {
      kind: "question",
      id: "0",
      question: "What is the boiling point of water in Celsius?",
      answers: ["100\\s*(degrees|°)?", "100"],
      regex: true,
    },
    last: {
      kind: "question",
      id: "1",
      question: "Who founded the city of Zürich?",
      answers: ["Romans?", "the\\s+Romans"],
      regex: true,
    },
  });
  // Named as a plain DPR file, the answers are plain strings.
  const [q] = await collect(readQuestions(`${DATA}/curatedtrec-test.qa.csv`, { format: "dpr" }));
  assertEquals(q.regex, undefined);
});

Deno.test("datasets: NQ-open JSONL (no ids: numbered from 0) and TriviaQA-open with aliases", async () => {
  await checkQuestions({
    file: "nq-open.jsonl",
    detected: "open",
    count: 3,
    first: {
      kind: "question",
      id: "0",
      question: "who painted the mona lisa",
      answers: ["Leonardo da Vinci"],
    },
    last: {
      kind: "question",
      id: "2",
      question: "when did the berlin wall fall",
      answers: ["9 November 1989", "1989"],
    },
  });
  await checkQuestions({
    file: "triviaqa-open.jsonl",
    detected: "open",
    count: 2,
    first: {
      kind: "question",
      id: "tq_1",
      question: "Which river flows through Vienna?",
      answers: ["Danube", "Donau", "River Danube"],
    },
    last: {
      kind: "question",
      id: "tq_2",
      question: "Who wrote “Faust”?",
      answers: ["Goethe", "Johann Wolfgang von Goethe"],
    },
  });
  // The --format aliases name the same reader.
  for (const format of ["nq-open", "efficientqa", "triviaqa-open"]) {
    const qs = await collect(readQuestions(`${DATA}/nq-open.jsonl`, { format }));
    assertEquals(qs.length, 3);
  }
});

Deno.test("datasets: generic JSONL and CSV through a field map (OpenCompass reader_cfg style)", async () => {
  const fields = { id: "qid", question: "q", answers: "gold", context: "passage" };
  const first: QaRecord = {
    kind: "question",
    id: "g1",
    question: "Who built the bridge?",
    answers: ["Ada", "Ada L."],
    context: "Ada built the bridge in 1850.",
  };
  const last: QaRecord = {
    kind: "question",
    id: "g3",
    question: "Où est la gare ?",
    answers: ["près du pont"],
    context: "La gare est près du pont.",
  };
  await checkQuestions({
    file: "generic.jsonl",
    detected: "jsonl",
    count: 3,
    first,
    last,
    opts: { fields },
  });
  await checkQuestions({
    file: "generic.csv",
    detected: "csv",
    count: 3,
    first,
    last,
    opts: { fields },
  });
  // A single answer (a JSON string, a CSV cell that is no list) is a list of one.
  for (const file of ["generic.jsonl", "generic.csv"]) {
    const qs = await collect(readQuestions(`${DATA}/${file}`, { fields }));
    assertEquals(qs[1].answers, ["1850"]);
  }
  // Without an id field, questions are numbered from 0.
  const qs = await collect(readQuestions(`${DATA}/generic.jsonl`, { fields: { question: "q" } }));
  assertEquals(qs.map((q) => `${q.id}:${q.answers.length}`), ["0:0", "1:0", "2:0"]);
});

Deno.test("datasets: corpora: DPR's passage TSV (header, quoting), JSONL, a dataset's paragraphs", async () => {
  await checkCorpus({
    file: "psgs_w100.tsv",
    detected: "dpr-passages",
    count: 3,
    first: {
      id: "1",
      title: "Ada",
      text: 'Ada built the bridge in 1850. It was called "the long one".',
    },
    last: { id: "3", title: "Zürich", text: "Ein Text über Zürich, mit Komma." },
  });
  await checkCorpus({
    file: "passages.jsonl",
    detected: "passages",
    count: 3,
    first: { id: "p1", title: "Ada", text: "Ada built the bridge in 1850." },
    last: { id: "p3", title: "", text: "A passage without a title." },
  });
  await checkCorpus({
    file: "squad_v1.json",
    detected: "squad",
    count: 3,
    first: { id: "Zürich_0", title: "Zürich", text: ZURICH },
    last: { id: "東京_0", title: "東京", text: "東京は日本の首都です。" },
  });
  await checkCorpus({
    file: "mrqa.jsonl",
    detected: "mrqa",
    count: 2,
    first: {
      id: "0",
      title: "",
      text: "Marie Curie won two Nobel prizes. She was born in Warsaw.",
    },
    last: { id: "ctx-zh", title: "", text: "😀 Zürich" },
  });
});

Deno.test("datasets: stdin (-) is read once, its format told from the bytes put back", async () => {
  const text = await Deno.readTextFile(`${DATA}/nq-open.jsonl`);
  const script = `
    import { Effect, Stream } from "effect";
    import { readQuestions } from "${ROOT}/io/datasets/read.ts";
    const qs = await Effect.runPromise(Stream.runCollect(readQuestions("-")));
    console.log(JSON.stringify([...qs].map((q) => q.id + ":" + q.question)));
  `;
  const out = await runArgv([Deno.execPath(), "eval", "--config", `${ROOT}/deno.json`, script], {
    stdin: text,
  });
  assertEquals(out.stderr, "");
  assertEquals(JSON.parse(out.stdout), [
    "0:who painted the mona lisa",
    "1:what is the capital of japan",
    "2:when did the berlin wall fall",
  ]);
});

/** A byte source giving `bytes` in chunks of `size` bytes. */
function chunked(bytes: Uint8Array, size: number, name: string): ByteSource {
  let at = 0;
  return {
    name,
    stream: new ReadableStream<Uint8Array>({
      pull(c) {
        if (at >= bytes.length) return c.close();
        c.enqueue(bytes.slice(at, at + size));
        at += size;
      },
    }),
  };
}

Deno.test("datasets: any chunking, CRLF line ends and a byte-order mark give the same records", async () => {
  const readers: [string, (src: ByteSource) => Stream.Stream<unknown, unknown>][] = [
    ["nq-test.qa.csv", (src) => dprQuestions(src)],
    ["nq-open.jsonl", (src) => openQuestions(src)],
    ["mrqa.jsonl", (src) => mrqaQuestions(src)],
    ["psgs_w100.tsv", (src) => dprPassages(src)],
    ["passages.jsonl", (src) => jsonlPassages(src)],
    [
      "generic.csv",
      (src) => csvQuestions(src, { fields: { id: "qid", question: "q", answers: "gold" } }),
    ],
  ];
  for (const [name, read] of readers) {
    const bytes = await Deno.readFile(`${DATA}/${name}`);
    const whole = await collect(read(chunked(bytes, 1 << 20, name)));
    const crlf = new TextEncoder().encode(
      "\uFEFF" + new TextDecoder().decode(bytes).replaceAll("\n", "\r\n"),
    );
    for (const size of [1, 2, 3, 7, 64]) {
      assertEquals(await collect(read(chunked(bytes, size, name))), whole, `${name} by ${size}`);
      assertEquals(
        await collect(read(chunked(crlf, size, name))),
        whole,
        `${name} CRLF by ${size}`,
      );
    }
  }
});

Deno.test("datasets: the bundled SQuAD v1.1 sets: the counts of data/README.md", async () => {
  assertEquals(await Effect.runPromise(detectFormat(DEV_GZ)), "squad");
  const qs = await collect(readQuestions(DEV_GZ));
  assertEquals([qs.length, qs.reduce((n, q) => n + q.answers.length, 0)], [10570, 34726]);
  assertEquals(new Set(qs.map((q) => q.paragraphId)).size, 2067);
  assertEquals(await Effect.runPromise(Stream.runCount(readCorpus(DEV_GZ))), 2067);
  // The train subset is key-sorted: "data" before "version".
  assertEquals(await Effect.runPromise(detectFormat(TRAIN_GZ)), "squad");
  assertEquals(await Effect.runPromise(Stream.runCount(readQuestions(TRAIN_GZ))), 11877);
});

Deno.test("datasets: a PI-SQuAD context file (no qas) is a corpus; a question file has no context", async () => {
  const dir = await Deno.makeTempDir({ dir: TMP });
  const ctx = `${dir}/dev-v1.1-context.json`;
  await Deno.writeTextFile(
    ctx,
    JSON.stringify({
      data: [{ title: "Ö", paragraphs: [{ context: "Öl." }, { context: "Eis." }] }],
    }),
  );
  assertEquals(await collect(readCorpus(ctx)), [
    { id: "Ö_0", title: "Ö", text: "Öl." },
    { id: "Ö_1", title: "Ö", text: "Eis." },
  ]);
  const qfile = `${dir}/dev-v1.1-question.json`;
  await Deno.writeTextFile(
    qfile,
    JSON.stringify({
      data: [{ title: "Ö", paragraphs: [{ qas: [{ id: "q", question: "Was?", answers: [] }] }] }],
    }),
  );
  assertEquals(await collect(readQuestions(qfile)), [
    { kind: "question", id: "q", question: "Was?", answers: [], paragraphId: "Ö_0", title: "Ö" },
  ]);
});
