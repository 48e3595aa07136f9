/**
 * Bad input: every case exits 2 with exactly one clear line on stderr that
 * names the file and the record (or byte offset), and leaves no output file.
 */
import { assertEquals, assertMatch } from "../_assert.ts";
import { listDir, runStage } from "../_util.ts";

const enc = new TextEncoder();
const valid = (para: string) =>
  `{"data": [{"title": "T", "paragraphs": [${para}]}], "version": "1.1"}`;

const SQUAD_CASES: Array<[string, Uint8Array, RegExp]> = [
  [
    "truncated JSON",
    enc.encode(valid(`{"context": "c", "qas": []}`).slice(0, 40)),
    /in\.json: byte \d+: truncated JSON/,
  ],
  [
    "invalid JSON",
    enc.encode(`{"data": [{"title": "T", "paragraphs": [}]}`),
    /in\.json: byte 40: invalid JSON: unexpected "}"/,
  ],
  [
    "paragraph without context",
    enc.encode(valid(`{"qas": []}`)),
    /in\.json: article "T" paragraph 0: missing "context"/,
  ],
  [
    "qas not a list",
    enc.encode(valid(`{"context": "c", "qas": {"id": "x"}}`)),
    /in\.json: article "T" paragraph 0: "qas": expected array/,
  ],
  [
    "question id not a string",
    enc.encode(valid(`{"context": "c", "qas": [{"id": 7, "question": "q"}]}`)),
    /in\.json: article "T" paragraph 0 question 0: "id": expected string/,
  ],
  [
    "non-UTF-8 bytes",
    new Uint8Array([
      ...enc.encode(`{"data": [{"title": "T`),
      0xff,
      0xfe,
      ...enc.encode(`", "paragraphs": []}]}`),
    ]),
    /in\.json: byte 22: invalid UTF-8/,
  ],
  ["empty file", new Uint8Array(0), /in\.json: byte 0: empty file/],
  [
    "top level not an object",
    enc.encode(`[1, 2]`),
    /in\.json: byte 0: the top-level value must be an object/,
  ],
  ["no data list", enc.encode(`{"version": "1.1"}`), /in\.json: missing "data"/],
  ["extra data", enc.encode(`{"data": []} {}`), /in\.json: byte 13: invalid JSON: extra data/],
  [
    "control character in a string",
    enc.encode(`{"data": [{"title": "a\u0001"}]}`),
    /in\.json: byte \d+: invalid JSON: unexpected byte 0x01/,
  ],
];

for (const [name, bytes, expected] of SQUAD_CASES) {
  Deno.test(`split rejects ${name}`, async () => {
    const dir = await Deno.makeTempDir();
    try {
      await Deno.writeFile(`${dir}/in.json`, bytes);
      const r = await runStage("pipeline/split.ts", [
        `${dir}/in.json`,
        `${dir}/c.json`,
        `${dir}/q.json`,
      ]);
      assertEquals(r.code, 2, r.stderr);
      const lines = r.stderr.trimEnd().split("\n");
      assertEquals(lines.length, 1, r.stderr);
      assertMatch(lines[0], /^split: /);
      assertMatch(lines[0], expected);
      assertEquals(r.stdout, "");
      assertEquals(await listDir(dir), ["in.json"]);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("split: bad usage and a missing file exit 2 with one line", async () => {
  const r1 = await runStage("pipeline/split.ts", ["only-one.json"]);
  assertEquals(r1.code, 2);
  assertEquals(r1.stderr.trimEnd().split("\n").length, 1);
  assertMatch(r1.stderr, /missing arguments: context\.json question\.json/);
  const r2 = await runStage("pipeline/split.ts", ["/nonexistent/x.json", "/tmp/c", "/tmp/q"]);
  assertEquals(r2.code, 2);
  assertMatch(r2.stderr, /^split: \/nonexistent\/x\.json: no such file\n$/);
  const r3 = await runStage("pipeline/split.ts", ["--help"]);
  assertEquals(r3.code, 0);
  assertMatch(r3.stdout, /^Usage: \.\/phraseval split data\.json context\.json question\.json/);
});
