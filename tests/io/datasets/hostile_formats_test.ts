/**
 * Format detection and the readers on input a hostile probe found mishandled:
 * a DPR question file with a bad row (read as DPR, the bad line named),
 * `--format open` on DPR's layout, a file that is not SQuAD JSON given to the
 * SQuAD reader (what it reads as is said), a gzip file of several members
 * (read whole, as `gzip -d` does), an MRQA file holding only its header, and
 * a CSV header that repeats a column.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import * as Stream from "effect/Stream";
import { assert, assertEquals } from "../../_assert.ts";
import { InputError } from "../../../io/errors.ts";
import { type DatasetOptions, readQuestions } from "../../../io/datasets/read.ts";
import { openSource } from "../../../io/source.ts";
import { squadRecords } from "../../../io/squad.ts";

const DIR = Deno.makeTempDirSync({ prefix: "datasets_hostile_" });
globalThis.addEventListener("unload", () => Deno.removeSync(DIR, { recursive: true }));

function file(name: string, content: string | Uint8Array): string {
  const path = `${DIR}/${name}`;
  if (typeof content === "string") Deno.writeTextFileSync(path, content);
  else Deno.writeFileSync(path, content);
  return path;
}

async function failure<A, E>(s: Stream.Stream<A, E>): Promise<E> {
  const exit = await Effect.runPromiseExit(Stream.runCollect(s));
  if (Exit.isSuccess(exit)) throw new Error(`not refused: ${JSON.stringify([...exit.value])}`);
  const err = exit.cause.reasons.find((r) => r._tag === "Fail");
  if (err === undefined || err._tag !== "Fail") throw new Error(`not a typed failure: ${exit}`);
  return err.error as E;
}

async function questionsError(path: string, opts: DatasetOptions = {}): Promise<string> {
  const e = await failure(readQuestions(path, opts));
  assert(e instanceof InputError, `not an InputError: ${e}`);
  return String(e);
}

const ids = async (path: string, opts: DatasetOptions = {}) =>
  [...await Effect.runPromise(Stream.runCollect(readQuestions(path, opts)))].map((q) =>
    `${q.id}:${q.question}:${q.answers.join("/")}`
  );

Deno.test("detection: a DPR question file whose first row is bad is read as DPR, the bad line named", async () => {
  const p = file("nq-test.qa.csv", "who wrote hamlet\t['Shakespeare'\nwhere is rome\t['Italy']\n");
  assertEquals(
    await questionsError(p),
    `${p}: line 1 question "0": answers are not a Python list of strings: ` +
      "expected ',' or ']' (column 15)",
  );
  const q = file("nq-dev.qa.csv", "who wrote hamlet\t['Shakespeare']\nwhere is rome\t['Italy'\n");
  assertEquals(
    await questionsError(q),
    `${q}: line 2 question "1": answers are not a Python list of strings: ` +
      "expected ',' or ']' (column 9)",
  );
});

Deno.test("detection: DPR's first row with its question empty or the wrong columns; a JSON array", async () => {
  // A tab that begins the first line is a column, not white space to skip.
  const empty = file("empty-q.qa.csv", "\t['Leonardo']\nwho wrote hamlet\t['Shakespeare']\n");
  assertEquals(await questionsError(empty), `${empty}: line 1 question "0": empty question`);
  // Named as DPR's, the first line three columns: its reader names the line.
  const three = file("three.qa.csv", "capital of japan\t['Tokyo']\textra\n");
  assertEquals(
    await questionsError(three),
    `${three}: line 1 question "0": expected 2 tab-separated columns (question, answers), found 3`,
  );
  // WebQuestions' own JSON array is no format read here (it was told as CSV by its commas).
  const arr = file(
    "webquestions.examples.test.json",
    '[{"url": "u", "targetValue": "(list (description Rome))", "utterance": "where is rome?"}]\n',
  );
  assertEquals(
    await questionsError(arr),
    `${arr}: line 1: cannot tell the dataset format from the start of the file; name it (--format)`,
  );
});

Deno.test("JSON lines as Python's json.dumps writes them: NaN and Infinity read (as null)", async () => {
  // NQ-open, NaN on line 1: the format is still told from it.
  const nq = file(
    "nq-nan.jsonl",
    '{"question": "who wrote hamlet", "answer": ["Shakespeare"], "score": NaN}\n' +
      '{"question": "where is rome", "answer": ["Italy"], "score": -Infinity}\n',
  );
  assertEquals(await ids(nq), ["0:who wrote hamlet:Shakespeare", "1:where is rome:Italy"]);
  const mrqa = file(
    "mrqa-nan.jsonl",
    '{"header": {"dataset": "X", "split": "dev"}}\n' +
      '{"context": "Paris is big.", "qas": [{"qid": "a1", "question": "Where?", ' +
      '"answers": ["Paris"]}], "score": Infinity}\n',
  );
  assertEquals(await ids(mrqa), ["a1:Where?:Paris"]);
  // Where a string is needed, the null it reads as is refused as null is.
  const bad = file("nq-nan-answer.jsonl", '{"question": "q", "answer": [NaN]}\n');
  assert((await questionsError(bad)).startsWith(`${bad}: line 1`));
});

Deno.test("--format open reads DPR's question CSV/TSV as well as NQ-open JSONL", async () => {
  const text = "who wrote hamlet\t['Shakespeare']\nwhere is rome\t['Italy', 'Lazio']\n";
  const want = ["0:who wrote hamlet:Shakespeare", "1:where is rome:Italy/Lazio"];
  assertEquals(await ids(file("nq.qa.csv", text), { format: "open" }), want);
  assertEquals(await ids(file("nq.tsv", text), { format: "open" }), want);
  const jsonl = file("nq.jsonl", '{"question": "who wrote hamlet", "answer": ["Shakespeare"]}\n');
  assertEquals(await ids(jsonl, { format: "open" }), ["0:who wrote hamlet:Shakespeare"]);
});

Deno.test("the SQuAD reader says what a file that is not SQuAD JSON reads as", async () => {
  const p = file("data.qa.csv", "who wrote hamlet\t['Shakespeare']\n");
  const e = await failure(squadRecords(p));
  assertEquals(
    String(e),
    `${p}: byte 0: invalid JSON: unexpected "w" (its start reads as a dpr file, not SQuAD JSON)`,
  );
  const t = file("notes.txt", "hello there\n");
  assertEquals(
    String(await failure(squadRecords(t))),
    `${t}: byte 0: invalid JSON: unexpected "h" (not SQuAD JSON, and its start tells no other format)`,
  );
});

/** `text` gzipped, as one member. */
async function gz(text: string): Promise<Uint8Array> {
  const s = new Blob([text]).stream().pipeThrough(
    new CompressionStream("gzip") as unknown as TransformStream<Uint8Array, Uint8Array>,
  );
  return new Uint8Array(await new Response(s).arrayBuffer());
}

Deno.test("a gzip file of several members is read whole, as gzip -d reads it", async () => {
  const a = await gz("who wrote hamlet\t['Shakespeare']\n");
  const b = await gz("where is rome\t['Italy']\n");
  const empty = await gz(""); // bgzip ends with an empty member
  const all = new Uint8Array([...a, ...b, ...empty]);
  const p = file("multi.qa.csv.gz", all);
  const src = await Effect.runPromise(openSource(p));
  assertEquals(
    await new Response(src.stream).text(),
    "who wrote hamlet\t['Shakespeare']\nwhere is rome\t['Italy']\n",
  );
  assertEquals(await ids(p), ["0:who wrote hamlet:Shakespeare", "1:where is rome:Italy"]);
  // A member cut short is still corrupt.
  const cut = file("cut.qa.csv.gz", all.subarray(0, a.byteLength + 12));
  assertEquals(
    await questionsError(cut),
    `${cut}: corrupt gzip data (unexpected end of file)`,
  );
});

Deno.test("an MRQA file holding only its header is refused, as an empty file is", async () => {
  const p = file("mrqa-header.jsonl", '{"header": {"dataset": "SQuAD", "split": "dev"}}\n');
  assertEquals(
    await questionsError(p),
    `${p}: holds only its MRQA header line: no context, no question`,
  );
});

Deno.test("a CSV header that repeats a column is refused, naming the column", async () => {
  const p = file("set.csv", "q,q,gold\nwho,who,x\n");
  assertEquals(
    await questionsError(p, { format: "csv", fields: { question: "q", answers: "gold" } }),
    `${p}: line 1: the header repeats column "q" (columns 1 and 2)`,
  );
  const t = file("set.tsv", "id\tq\tgold\tid\n1\twho\tx\t2\n");
  assertEquals(
    await questionsError(t, { format: "tsv", fields: { question: "q", answers: "gold" } }),
    `${t}: line 1: the header repeats column "id" (columns 1 and 4)`,
  );
});
