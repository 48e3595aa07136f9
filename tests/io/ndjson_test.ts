/**
 * Tests of io/ndjson.ts: record streams with a `kind` field, other kinds
 * passing through, blank lines, CRLF line ends, a bad line named by its
 * number, the sniffing of `{"kind": ...` input, and the plain record decoder
 * against the record schemas.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import * as Schema from "effect/Schema";
import * as Stream from "effect/Stream";
import { assert, assertEquals } from "../_assert.ts";
import { FileError, InputError } from "../../io/errors.ts";
import { decodeRecord, ndjsonRecords, readNdjson, sniffNdjson } from "../../io/ndjson.ts";
import { RecordSchemas } from "../../io/ndjson_schema.ts";
import type { ByteSource } from "../../io/source.ts";

const enc = new TextEncoder();

/** A byte source giving `text` in chunks of `size` bytes. */
function source(text: string | Uint8Array, size = 1 << 16, name = "in.ndjson"): ByteSource {
  const bytes = typeof text === "string" ? enc.encode(text) : text;
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

const collect = <A, E>(s: Stream.Stream<A, E>) =>
  Effect.runPromise(Effect.map(Stream.runCollect(s), (c) => [...c]));

/** The error a stream fails with. */
async function failure<A, E>(s: Stream.Stream<A, E>): Promise<E> {
  const exit = await Effect.runPromiseExit(Stream.runCollect(s));
  if (Exit.isSuccess(exit)) throw new Error("expected a failure");
  const err = exit.cause.reasons.find((r) => r._tag === "Fail");
  if (err === undefined || err._tag !== "Fail") throw new Error(`not a typed failure: ${exit}`);
  return err.error as E;
}

const LINES = [
  '{"kind": "question", "id": "q1", "question": "Who?", "paragraphId": "T_0"}',
  '{"kind": "paragraph", "id": "T_0", "context": "Paris is ...", "title": "T", "index": 0}',
  "",
  '{"kind": "question", "id": "q2", "question": "Où ? «é» 😀"}',
  '{"kind": "prediction", "id": "q1", "text": "x"}',
];

Deno.test("ndjson: records of one kind, others passed over, blank lines skipped", async () => {
  const text = LINES.join("\n") + "\n";
  const qs = await collect(ndjsonRecords(source(text), "question"));
  assertEquals(qs, [
    { kind: "question", id: "q1", question: "Who?", paragraphId: "T_0" },
    { kind: "question", id: "q2", question: "Où ? «é» 😀" },
  ]);
  const ps = await collect(ndjsonRecords(source(text), "paragraph"));
  assertEquals(ps, [
    { kind: "paragraph", id: "T_0", context: "Paris is ...", title: "T", index: 0 },
  ]);
  // The same records whatever the chunk size (lines and characters cut).
  for (const size of [1, 3, 17]) {
    assertEquals(await collect(ndjsonRecords(source(text, size), "question")), qs, `size ${size}`);
  }
  // No final newline; whitespace-only lines.
  const noEol = await collect(
    ndjsonRecords(source(LINES[0] + "\n   \n\t\n" + LINES[3]), "question"),
  );
  assertEquals(noEol.map((q) => q.id), ["q1", "q2"]);
  assertEquals(await collect(ndjsonRecords(source(""), "question")), []);
});

Deno.test("ndjson: CRLF line ends read as LF", async () => {
  const text = LINES.join("\r\n") + "\r\n";
  const qs = await collect(ndjsonRecords(source(text, 5), "question"));
  assertEquals(qs.map((q) => [q.id, q.question]), [["q1", "Who?"], ["q2", "Où ? «é» 😀"]]);
  // A bad line after CRLF lines still gets its number.
  const bad = await failure(ndjsonRecords(source("\r\n" + LINES[0] + "\r\n{oops\r\n"), "question"));
  assert(bad instanceof InputError);
  assertEquals([bad.file, bad.where], ["in.ndjson", "line 3"]);
});

Deno.test("ndjson: a bad line fails with one InputError naming the file and the line", async () => {
  const invalid = await failure(
    ndjsonRecords(source([LINES[0], "", '{"kind": "question", "id": '].join("\n")), "question"),
  );
  assert(invalid instanceof InputError);
  assertEquals([invalid.file, invalid.where], ["in.ndjson", "line 3"]);
  assert(invalid.message.startsWith("invalid JSON ("), invalid.message);
  assert(!invalid.toString().includes("\n"), "one line");

  const missing = await failure(
    ndjsonRecords(source([LINES[0], '{"kind": "question", "id": "q9"}'].join("\n")), "question"),
  );
  assert(missing instanceof InputError);
  assertEquals(missing.where, "line 2");
  assert(missing.message.startsWith("not a question record: "), missing.message);
  assert(!missing.message.includes("\n"), "one line");

  const wrongType = await failure(
    ndjsonRecords(source('{"kind": "paragraph", "id": "T_0", "context": 5}\n'), "paragraph"),
  );
  assert(wrongType instanceof InputError);
  assertEquals(wrongType.where, "line 1");
  assert(wrongType.message.startsWith("not a paragraph record: "), wrongType.message);
});

const BAD_UTF8 = new Uint8Array([
  ...enc.encode(LINES[0] + "\n" + '{"kind": "question", "id": "'),
  0xff,
  ...enc.encode('"}\n'),
]);

Deno.test("ndjson: invalid UTF-8 names the line it is on (read in small chunks)", async () => {
  const e = await failure(ndjsonRecords(source(BAD_UTF8, 1, "x.ndjson"), "question"));
  assert(e instanceof InputError);
  assertEquals(e.toString(), "x.ndjson: line 2: invalid UTF-8");
});

Deno.test("ndjson: invalid UTF-8 names the line it is on (one chunk holding several lines)", async () => {
  const e = await failure(ndjsonRecords(source(BAD_UTF8, 1 << 16, "x.ndjson"), "question"));
  assert(e instanceof InputError);
  assertEquals(e.toString(), "x.ndjson: line 2: invalid UTF-8");
});

Deno.test("ndjson: sniffing tells records from a SQuAD document and keeps every byte", async () => {
  const text = LINES.join("\n");
  const [isNd, src] = await sniffNdjson(source(text, 4));
  assert(isNd);
  assertEquals((await collect(ndjsonRecords(src, "question"))).length, 2);
  const [isNd2, src2] = await sniffNdjson(source('  {\n "kind" : "paragraph"}', 1));
  assert(isNd2);
  assertEquals(await new Response(src2.stream).text(), '  {\n "kind" : "paragraph"}');
  const squad = '{"version": "1.1", "data": []}';
  const [isNd3, src3] = await sniffNdjson(source(squad, 2));
  assert(!isNd3);
  assertEquals(await new Response(src3.stream).text(), squad);
  const [isNd4] = await sniffNdjson(source(""));
  assert(!isNd4);
});

Deno.test("ndjson: readNdjson reads a file; a missing file is a FileError", async () => {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-ndjson-" });
  try {
    await Deno.writeTextFile(`${dir}/q.ndjson`, LINES.join("\n"));
    const qs = await collect(readNdjson(`${dir}/q.ndjson`, "question"));
    assertEquals(qs.map((q) => q.id), ["q1", "q2"]);
    const e = await failure(readNdjson(`${dir}/none.ndjson`, "question"));
    assert(e instanceof FileError);
    assertEquals(e.toString(), `${dir}/none.ndjson: no such file`);
    const ps = await collect(readNdjson(`${dir}/q.ndjson`, "paragraph"));
    assertEquals(ps.map((p) => p.id), ["T_0"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ndjson: the plain record decoder agrees with RecordSchemas: records, key order, wording", () => {
  const odd: unknown[] = [null, 1, "s", true, [], ["x"], {}, { a: 1 }, 1.5, JSON.parse("1e400")];
  const base = {
    paragraph: { kind: "paragraph", id: "T_0", context: "c", title: "T", index: 0 },
    question: { kind: "question", id: "q", question: "w?", paragraphId: "T_0" },
  } as const;
  let cases = 0, bad = 0;
  for (const kind of ["paragraph", "question"] as const) {
    const b: Record<string, unknown> = base[kind];
    // Whole values, the record with an extra field or its fields in another order, and each
    // field (but kind) removed or replaced by each odd value.
    const variants: unknown[] = [
      ...odd.filter((v) => !Array.isArray(v)),
      b,
      { extra: 1, ...b },
      Object.fromEntries(Object.entries(b).reverse()),
    ];
    for (const key of Object.keys(b).filter((k) => k !== "kind")) {
      const { [key]: _, ...without } = b;
      variants.push(without);
      for (const v of odd) variants.push({ ...b, [key]: v });
    }
    const decode = Schema.decodeUnknownResult(
      RecordSchemas[kind] as unknown as Schema.Codec<unknown>,
    );
    // What reaches the decoder: a value that is not an object, or an object of this kind
    // (objects of another kind, lists among them, pass through untouched).
    const reaches = (v: unknown) =>
      typeof v !== "object" || v === null ||
      (!Array.isArray(v) && (v as { kind?: unknown }).kind === kind);
    for (const v of variants.filter(reaches)) {
      const ours = decodeRecord(kind, v);
      const theirs = decode(v);
      if (theirs._tag === "Success") {
        assert("record" in ours, `${kind} ${JSON.stringify(v)}: ${JSON.stringify(ours)}`);
        // The same fields in the same order (what a stage writes back out).
        assertEquals(JSON.stringify(ours.record), JSON.stringify(theirs.success));
        assertEquals(Object.keys(ours.record), Object.keys(theirs.success as object));
      } else {
        assert("issue" in ours, `${kind} ${JSON.stringify(v)}`);
        assertEquals(ours.issue, theirs.failure.message.replace(/\s+/g, " "), JSON.stringify(v));
        bad++;
      }
      cases++;
    }
  }
  assertEquals([cases, bad], [95, 77]);
});
