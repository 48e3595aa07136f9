/**
 * Tests of io/pyliteral.ts and io/datasets/csv.ts against Python
 * itself: DPR reads its files with `csv.reader(f, delimiter="\t")` and
 * `eval` of the answers column, so on tricky inputs (quotes, escapes,
 * prefixes, quoted fields over several lines) our parsers must give what
 * Python gives, and refuse what Python refuses or what is no list of
 * strings.
 *
 * @module
 */
import { assert, assertEquals } from "../../_assert.ts";
import { python } from "../../_util.ts";
import { CsvRowParser } from "../../../io/datasets/csv.ts";
import { parsePyStringList, PyLiteralError } from "../../../io/pyliteral.ts";

const LISTS = [
  `['a', "b"]`,
  `["Don't", 'say "hi"']`,
  String.raw`['a\'b', "c\"d"]`,
  String.raw`['\n\t\\', '\a\b\f\v\r']`,
  String.raw`['\x41\u00e9\U0001F600', "\u4e1c\u4eac"]`,
  String.raw`['\101\0\7', '\1234']`,
  String.raw`['\s+\d', '100\\s*(degrees)?', '\/', '\8']`,
  String.raw`[r'\d+\'', R"x\y", u'é', U"ü"]`,
  `['a' "b" 'c', 'd']`,
  `['a',]`,
  `[]`,
  `[ 'a' ,\t'b' ]`,
  `['Zürich', '東京', '😀']`,
];

const NOT_LISTS = [
  `['a', 1]`,
  `Paris`,
  `['a'`,
  `['a' 'b`,
  `[b'x']`,
  `['a'] x`,
  `[['a']]`,
  `('a',)`,
  `[None]`,
  `'a'`,
  `['a' 'b' + 'c']`,
];

const SCRIPT = `
import ast, json, sys
out = []
for text in json.load(sys.stdin):
    try:
        v = ast.literal_eval(text)
        ok = isinstance(v, list) and all(isinstance(x, str) for x in v)
        out.append(v if ok else None)
    except Exception:
        out.append(None)
print(json.dumps(out))
`;

Deno.test("pyliteral: lists of strings parse as Python parses them; anything else is refused", async () => {
  const r = await python(["-c", SCRIPT], JSON.stringify([...LISTS, ...NOT_LISTS]));
  const want = JSON.parse(r.stdout) as (string[] | null)[];
  LISTS.forEach((text, i) => {
    assert(want[i] !== null, `Python refused ${text}`);
    assertEquals(parsePyStringList(text), want[i], text);
  });
  NOT_LISTS.forEach((text, i) => {
    assertEquals(want[LISTS.length + i], null, `Python accepted ${text}`);
    let refused = false;
    try {
      parsePyStringList(text);
    } catch (e) {
      refused = e instanceof PyLiteralError;
    }
    assert(refused, `not refused: ${text}`);
  });
});

const CSV_SCRIPT = `
import csv, io, json, sys
rows = csv.reader(io.StringIO(sys.stdin.read()), delimiter="\\t")
print(json.dumps([r for r in rows if r]))
`;

const CSV_TEXT = [
  'plain\t["a"]',
  '"quoted ""inner"" text"\tx',
  'a"b\t"c"',
  '"closed"then more\tx',
  "\t\t",
  "",
  'tail\t"over',
  'two lines"\tlast',
  "trailing\t",
  "  spaced  \t  x  ",
].join("\n") + "\n";

Deno.test("csv: records as Python's csv.reader gives them (tab), blank lines passed over", async () => {
  const r = await python(
    ["-c", CSV_SCRIPT],
    CSV_TEXT,
  );
  const want = JSON.parse(r.stdout) as string[][];
  const p = new CsvRowParser("t.tsv", "\t", 1 << 20);
  const got: string[][] = [];
  CSV_TEXT.split("\n").slice(0, -1).forEach((text, i) => {
    const row = p.push({ line: i + 1, offset: 0, bytes: text.length, text });
    if (row !== undefined) got.push([...row.fields]);
  });
  p.end();
  assertEquals(got, want);
});
