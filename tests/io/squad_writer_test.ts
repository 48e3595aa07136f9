/**
 * Tests of io/squad_writer.ts (and the io/pyjson.ts formatting under it):
 * the bytes written for odd SQuAD input are exactly what Python's
 * `json.dump(json.load(f), out)` writes: ensure_ascii escapes, float repr,
 * key order (integer-like keys, duplicates, a title after its paragraphs),
 * nested unknown fields, and the PI-SQuAD halves against the Python split.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { assertEquals } from "../_assert.ts";
import { python } from "../_util.ts";
import { squadRecords } from "../../io/squad.ts";
import type { AtomicWriter } from "../../io/fs.ts";
import {
  contextArticle,
  omitKeys,
  questionArticle,
  SquadJsonWriter,
} from "../../io/squad_writer.ts";
import { pyDumps, pyFloatRepr, pyStringLiteral } from "../../io/pyjson.ts";
import type { PyObject } from "../../io/pyjson.ts";
import type { SquadArticle } from "../../io/squad.ts";

/** An AtomicWriter that keeps the text in memory. */
function memoryWriter(): AtomicWriter & { text(): string } {
  const parts: string[] = [];
  return {
    write: (t) => Promise.resolve(void parts.push(t)),
    commit: () => Promise.resolve(),
    abort: () => Promise.resolve(),
    text: () => parts.join(""),
  };
}

/** What our writer produces for the SQuAD file at `path`. */
async function rewrite(
  path: string,
  article?: (a: SquadArticle) => PyObject,
): Promise<string> {
  const w = memoryWriter();
  const out = new SquadJsonWriter(w, article);
  await Effect.runPromise(
    Stream.runForEach(
      squadRecords(path, { context: "optional", qas: "optional" }),
      (r) => Effect.promise(() => out.write(r)),
    ),
  );
  await out.end();
  return w.text();
}

const PY_DUMP = "import json, sys\n" +
  "json.dump(json.load(open(sys.argv[1], encoding='utf-8')), sys.stdout)";

const ODD = String.raw`{"version": "odd", "1": "an integer-like top key", "data": [
  {"paragraphs": [
    {"context": "Caf\u00e9 ☕ \ud83d\ude00 \u2028\u2029 \u007f \u0000\u001f tab\t nl\n cr\r \b\f \"q\" \\ \/ ~",
     "qas": [
      {"id": "q1", "question": "Q?",
       "answers": [{"text": "x", "answer_start": 0, "score": 1.0, "big": 12345678901234567890,
                    "neg0": -0, "negf": -0.0, "exp": 1E5, "tiny": 1e-7, "p": 0.30000000000000004,
                    "inf": 1e400, "small": 5e-324, "e16": 1e16, "e15": 123456789012345.6,
                    "frac": 2.50, "neg": -1.5e-5, "int16": 1234567890123456}],
       "extra": {"nested": [true, false, null, {}, [], {"20": 1, "3": 2, "b": 3, "a": {"x": [1, [2, [3]]]}}]},
       "lone": "\ud800x\udc00", "is_impossible": false, "plausible_answers": []}
    ], "20": "key", "3": "another"}
  ], "title": "Title after its paragraphs", "10": "x", "2": "y"},
  {"title": "Dup", "paragraphs": [{"context": "c", "qas": [], "k": 1, "j": 2, "k": 3}], "title2": "\u00e9\u00e9"}
], "zz": [1.5, 2.50, 100.0, -0.0, 1e22, 1e21, 123e-20]}
`;

Deno.test("squad writer: odd input is written byte for byte as Python's json.dump", async () => {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-sqw-" });
  try {
    await Deno.writeTextFile(`${dir}/odd.json`, ODD);
    const want = (await python(["-c", PY_DUMP, `${dir}/odd.json`])).stdout;
    const got = await rewrite(`${dir}/odd.json`);
    assertEquals(got, want);
    // Spot checks, so a failure says what went wrong.
    for (
      const part of [
        '"Caf\\u00e9 \\u2615 \\ud83d\\ude00 \\u2028\\u2029 \\u007f \\u0000\\u001f tab\\t',
        '"big": 12345678901234567890',
        '"neg0": 0, "negf": -0.0, "exp": 100000.0, "tiny": 1e-07',
        '"inf": Infinity, "small": 5e-324, "e16": 1e+16',
        '"20": 1, "3": 2, "b": 3',
        '"k": 3, "j": 2',
        '"title": "Title after its paragraphs", "10": "x", "2": "y"',
      ]
    ) {
      if (!got.includes(part)) throw new Error(`missing ${part}`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("squad writer: the PI-SQuAD halves match the Python split of the same odd file", async () => {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-sqw-" });
  try {
    await Deno.writeTextFile(`${dir}/odd.json`, ODD);
    await python(["tests/py/split_ref.py", `${dir}/odd.json`, `${dir}/c.json`, `${dir}/q.json`]);
    assertEquals(
      await rewrite(`${dir}/odd.json`, contextArticle),
      await Deno.readTextFile(`${dir}/c.json`),
    );
    assertEquals(
      await rewrite(`${dir}/odd.json`, questionArticle),
      await Deno.readTextFile(`${dir}/q.json`),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("squad writer: an empty document and omitKeys keep Python's order", async () => {
  const w = memoryWriter();
  await new SquadJsonWriter(w).end();
  assertEquals(w.text(), "{}");
  const src: PyObject = JSON.parse('{"b": 1, "qas": [], "a": 2}');
  assertEquals(pyDumps(omitKeys(src, ["qas"])), '{"b": 1, "a": 2}');
  assertEquals(
    pyDumps(omitKeys(src, [], (k, v) => k === "a" ? "x" : v)),
    '{"b": 1, "qas": [], "a": "x"}',
  );
});

Deno.test("pyjson: float repr agrees with Python on random doubles", async () => {
  const bits = new BigUint64Array(400);
  crypto.getRandomValues(bits);
  const view = new Float64Array(bits.buffer);
  const values: number[] = [];
  for (const v of view) if (Number.isFinite(v)) values.push(v);
  // Plus the edges of fixed notation and some familiar values.
  values.push(
    1e16,
    9999999999999998,
    1e-4,
    0.0001234,
    9.999e-5,
    0.1,
    1 / 3,
    2 ** 53,
    5e-324,
    1.7976931348623157e308,
  );
  const r = await python(
    [
      "-c",
      "import json, sys\nprint(json.dumps([repr(float(x)) for x in json.loads(sys.stdin.read())]))",
    ],
    JSON.stringify(values.map((v) => v.toString())),
  );
  assertEquals(values.map(pyFloatRepr), JSON.parse(r.stdout));
});

Deno.test("pyjson: string literals agree with Python's json.dumps (control, non-ASCII, lone surrogates)", async () => {
  const strings: string[] = [];
  let all = "";
  for (let c = 0; c < 0x300; c++) all += String.fromCharCode(c);
  strings.push(all, "\ud800", "a\udfffb", "\udbff\udfff", "😀", "\u2028\u2029", "\ufeff", '\\"/');
  const r = await python(
    [
      "-c",
      "import json, sys\nprint(json.dumps([json.dumps(s) for s in json.loads(sys.stdin.read())]))",
    ],
    JSON.stringify(strings),
  );
  assertEquals(strings.map(pyStringLiteral), JSON.parse(r.stdout));
});
