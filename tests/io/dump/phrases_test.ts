/**
 * `indexPhrases` (`io/dump/phrases.ts`) against `parsePhrases`: the same
 * phrases on the real `merge` dumps (when present), on hand-made and random
 * lists, at every alignment of the bytes; the identical error on every kind
 * of bad list; and a seeded fuzz of byte mutations where both must agree.
 */
import { mulberry32 as prng } from "../../../bench/perturb.ts";
import { assert, assertEquals } from "../../_assert.ts";
import { DEV_GZ } from "../../_util.ts";
import { gunzipSync } from "node:zlib";
import { indexPhrases, type PhraseList } from "../../../io/dump/phrases.ts";
import { parsePhrases } from "../../../io/dump/reader.ts";
import { InputError } from "../../../io/errors.ts";

const enc = new TextEncoder();
const LABEL = "T_0.json";

/** `bytes` copied to offset `shift` of a larger buffer full of garbage (`"`, `\`, 0xff). */
function shifted(bytes: Uint8Array, shift: number): Uint8Array {
  const buf = new Uint8Array(bytes.length + shift + 9);
  for (let i = 0; i < buf.length; i++) buf[i] = [0x22, 0x5c, 0xff][i % 3];
  buf.set(bytes, shift);
  return buf.subarray(shift, shift + bytes.length);
}

function describeError(e: unknown): Record<string, unknown> {
  if (!(e instanceof Error)) return { value: String(e) };
  return {
    class: e.constructor.name,
    isInputError: e instanceof InputError,
    text: String(e),
    message: e.message,
    file: (e as Partial<InputError>).file,
    where: (e as Partial<InputError>).where,
  };
}

type Outcome = { ok: string[] } | { error: Record<string, unknown> };

function outcome(f: () => string[]): Outcome {
  try {
    return { ok: f() };
  } catch (e) {
    return { error: describeError(e) };
  }
}

/** Every phrase of `list`, in ascending, descending and scattered order (all must agree). */
function phrasesOf(list: PhraseList, random: () => number): string[] {
  const n = list.length;
  const down: string[] = [];
  for (let i = n - 1; i >= 0; i--) down.push(list.at(i));
  down.reverse();
  for (let t = 0; t < Math.min(n, 20); t++) {
    const i = Math.floor(random() * n);
    assertEquals(list.at(i), down[i], `scattered at(${i})`);
  }
  const up: string[] = [];
  for (let i = 0; i < n; i++) up.push(list.at(i));
  assertEquals(up, down, "ascending and descending at() differ");
  return up;
}

/** indexPhrases and parsePhrases agree on `bytes` (at byte offset `shift`): same phrases or error. */
function agree(bytes: Uint8Array, msg: string, shift = 0, seed = 1): Outcome {
  const b = shift === 0 ? bytes : shifted(bytes, shift);
  const expected = outcome(() => parsePhrases(b, LABEL));
  const random = prng(seed);
  const actual = outcome(() => phrasesOf(indexPhrases(b, LABEL), random));
  if ("ok" in expected && "ok" in actual) {
    // Every valid list takes the fast path (the slow one would agree trivially).
    assertEquals(indexPhrases(b, LABEL).constructor.name, "ScannedPhrases", `${msg}: fast path`);
    // Compare with lengths first: a difference in one long phrase is easier to read.
    assertEquals(actual.ok.length, expected.ok.length, `${msg}: length`);
    for (let i = 0; i < expected.ok.length; i++) {
      assert(actual.ok[i] === expected.ok[i], `${msg}: phrase ${i} differs`);
    }
  } else {
    assertEquals(actual, expected, msg);
  }
  return expected;
}

/** `agree` at byte offsets 0 to 7 (every alignment of the word-at-a-time scan). */
function agreeAligned(bytes: Uint8Array, msg: string): Outcome {
  const first = agree(bytes, msg);
  for (let shift = 1; shift < 8; shift++) agree(bytes, `${msg} (at offset ${shift})`, shift);
  return first;
}

function listBytes(phrases: string[], sep = ", "): Uint8Array {
  return enc.encode(`[${phrases.map((p) => JSON.stringify(p)).join(sep)}]`);
}

function assertValid(bytes: Uint8Array, msg: string): void {
  const out = agreeAligned(bytes, msg);
  assert("ok" in out, `${msg}: expected a valid list, parsePhrases said ${JSON.stringify(out)}`);
}

function assertInvalid(bytes: Uint8Array, msg: string): void {
  const out = agreeAligned(bytes, msg);
  assert("error" in out, `${msg}: expected parsePhrases to reject it`);
}

/** `s` as a JSON string with every non-ASCII character escaped (Python's `ensure_ascii`). */
function asciiJson(s: string): string {
  return JSON.stringify(s).replace(
    /[\u0080-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** Bytes from a mix of strings (encoded as UTF-8) and byte arrays. */
function bytesOf(...parts: Array<string | number[] | Uint8Array>): Uint8Array {
  const chunks = parts.map((p) => typeof p === "string" ? enc.encode(p) : new Uint8Array(p));
  const out = new Uint8Array(chunks.reduce((s, c) => s + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** A list long enough for the 32-byte main loop, with `middle` spliced in the middle. */
function longWith(middle: string | number[]): Uint8Array {
  const filler = Array.from({ length: 20 }, (_, i) => `phrase number ${i}, with a comma`);
  const text = JSON.stringify(filler);
  const cut = text.indexOf(`"phrase number 10`);
  return bytesOf(text.slice(0, cut), middle, text.slice(cut));
}

// ---------------------------------------------------------------------------
// Real phrase lists: every span of 1 to 7 words of the first dev paragraphs,
// written as Python's json.dump writes them (ASCII, \u escapes) and as UTF-8.

/** What Python's json.dumps (ensure_ascii) writes for a list of strings. */
function pythonJson(list: string[]): string {
  const ascii = (x: string) =>
    JSON.stringify(x).replace(
      /[\u007f-\uffff]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
    );
  return `[${list.map(ascii).join(", ")}]`;
}

Deno.test("phrase index: real phrase lists of dev paragraphs equal JSON.parse element by element", () => {
  const dev = JSON.parse(new TextDecoder().decode(gunzipSync(Deno.readFileSync(DEV_GZ)))) as {
    data: { paragraphs: { context: string }[] }[];
  };
  let lists = 0, nonAscii = 0;
  for (const article of dev.data.slice(0, 3)) {
    for (const { context } of article.paragraphs) {
      const words = [...context.matchAll(/\S+/g)].map((m) => [m.index, m.index + m[0].length]);
      const phrases: string[] = [];
      for (let i = 0; i < words.length; i++) {
        for (let n = 1; n <= 7 && i + n <= words.length; n++) {
          phrases.push(context.slice(words[i][0], words[i + n - 1][1]));
        }
      }
      if ([...context].some((ch) => ch.charCodeAt(0) > 0x7f)) nonAscii++;
      for (const text of [pythonJson(phrases), JSON.stringify(phrases)]) {
        const bytes = new TextEncoder().encode(text);
        const list = indexPhrases(bytes, "p.json");
        assertEquals(list.length, phrases.length);
        for (let i = 0; i < phrases.length; i++) {
          assert(list.at(i) === phrases[i], `phrase ${i} differs`);
        }
        agree(bytes, "p.json", 3);
        lists++;
      }
    }
  }
  assert(lists > 200 && nonAscii > 10, `${lists} lists, ${nonAscii} with non-ASCII text`);
});

// ---------------------------------------------------------------------------
// Valid lists.

Deno.test("phrase index: hand-made lists equal JSON.parse", () => {
  const lists: string[][] = [
    [],
    [""],
    ["a"],
    ["a", "b c", "The 1973 oil crisis", ""],
    ["[", "]", ",", " , ", '"', "\\", "/", "'", "\u007f", "a,b", "[1, 2]"],
    Array.from({ length: 300 }, (_, i) => `phrase ${i}`),
    Array.from({ length: 50 }, (_, i) => "x".repeat(i)),
    ["caf\u00e9", "\u20ac 5", "na\u00efve", "\u65e5\u672c\u8a9e", "\u{1f600} grin", "\u{10ffff}"],
    ["tab\there", "line\nbreak", "cr\r", "\b\f", "nul\u0000", "\u001f", 'quote "x" \\ y'],
  ];
  for (const [i, list] of lists.entries()) {
    assertValid(listBytes(list), `list ${i}`);
    assertValid(listBytes(list, ","), `list ${i}, no spaces`);
    assertValid(listBytes(list, " ,\n\t"), `list ${i}, odd spacing`);
    assertValid(enc.encode(JSON.stringify(list, null, 2)), `list ${i}, indented`);
    const list2 = indexPhrases(listBytes(list), LABEL);
    assertEquals(list2.length, list.length);
    for (let j = 0; j < list.length; j++) assertEquals(list2.at(j), list[j]);
  }
});

Deno.test("phrase index: empty lists, whitespace everywhere, BOM", () => {
  for (const text of ["[]", "[ ]", " \t\n\r[ \t\n\r] \t\n\r", "[\n]\n"]) {
    assertValid(enc.encode(text), JSON.stringify(text));
    assertEquals(indexPhrases(enc.encode(text), LABEL).length, 0);
  }
  const spaced = ' \t\n\r[ \t\n\r"a" \t\n\r, \t\n\r"b"\t\n\r,"c"\r\n] \t\n\r';
  assertValid(enc.encode(spaced), "whitespace everywhere");
  assertEquals(phrasesOf(indexPhrases(enc.encode(spaced), LABEL), prng(2)), ["a", "b", "c"]);
  const bom = [0xef, 0xbb, 0xbf];
  assertValid(bytesOf(bom, '["a", "b"]'), "BOM");
  assertValid(bytesOf(bom, "[]"), "BOM, empty list");
  assertValid(bytesOf(bom, " \n[ ] "), "BOM, then whitespace");
  assertValid(bytesOf(bom, longWith('"x", ')), "BOM, long list");
  assertEquals(indexPhrases(bytesOf(bom, '["a"]'), LABEL).at(0), "a");
  assertInvalid(bytesOf(bom, bom, "[]"), "two BOMs");
  assertInvalid(bytesOf(" ", bom, "[]"), "BOM after a space");
  assertInvalid(bytesOf('["a"', bom, "]"), "BOM between tokens");
});

Deno.test("phrase index: escapes of every kind", () => {
  const escapes = [
    '\\"',
    "\\\\",
    "\\/",
    "\\b",
    "\\f",
    "\\n",
    "\\r",
    "\\t",
    "\\u0041",
    "\\u00e9",
    "\\u00E9",
    "\\uABCD",
    "\\uabcd",
    "\\uAbCd",
    "\\u0000",
    "\\u001f",
    "\\u0022",
    "\\u005c",
    "\\u2013",
    "\\ud800", // lone high surrogate
    "\\udfff", // lone low surrogate
    "\\udc00\\ud800", // reversed pair
    "\\ud83d\\ude00", // a pair: U+1F600
    "\\uD83D\\uDE00",
  ];
  for (const e of escapes) {
    for (const text of [`["${e}"]`, `["a${e}b", "${e}${e}"]`]) {
      assertValid(enc.encode(text), text);
      assertEquals(indexPhrases(enc.encode(text), LABEL).at(0), JSON.parse(text)[0]);
    }
    assertValid(longWith(`"x${e}y", "${e}", `), `long list with ${e}`);
  }
  const lone = indexPhrases(enc.encode('["\\ud800", "a\\udfffb"]'), LABEL);
  assertEquals(lone.at(0), "\ud800");
  assertEquals(lone.at(1), "a\udfffb");
  assertEquals(lone.at(0).length, 1);
  // Escapes at every position across the 32-byte units.
  for (let pad = 0; pad < 40; pad++) {
    const text = `["${"p".repeat(pad)}\\u00e9\\"q", "${"r".repeat(pad)}\\\\", "\\n"]`;
    assertValid(enc.encode(text), `padded ${pad}`);
  }
});

Deno.test("phrase index: UTF-8 of 2, 3 and 4 bytes, raw and mixed with escapes", () => {
  const samples = [
    "\u00e9",
    "\u07ff",
    "\u0800",
    "\u20ac",
    "\uffff",
    "\ue000",
    "\u{10000}",
    "\u{1f600}",
    "\u{10ffff}",
  ];
  for (const s of samples) {
    assertValid(listBytes([s, `a${s}b`, `${s}\\"${s}`]), `raw ${JSON.stringify(s)}`);
    for (let pad = 0; pad < 34; pad++) {
      assertValid(
        listBytes(["x".repeat(pad) + s, s + "y".repeat(pad)]),
        `${JSON.stringify(s)} at ${pad}`,
      );
    }
  }
  const list = indexPhrases(listBytes(samples), LABEL);
  for (let i = 0; i < samples.length; i++) assertEquals(list.at(i), samples[i]);
});

Deno.test("phrase index: very long strings and lists", () => {
  const long = [
    "a".repeat(100_000),
    "b c ".repeat(30_000),
    "\u00e9".repeat(50_000),
    "\u{1f600}".repeat(10_000) + "end",
    'q"'.repeat(20_000),
  ];
  assertValid(listBytes(long), "long strings");
  const list = indexPhrases(listBytes(long), LABEL);
  for (let i = 0; i < long.length; i++) assertEquals(list.at(i), long[i]);
  const many = Array.from({ length: 20_000 }, (_, i) => (i % 7 === 0 ? `\u00e9${i}` : `p${i}`));
  assertValid(listBytes(many), "20,000 phrases");
  const big = indexPhrases(listBytes(many), LABEL);
  assertEquals(big.length, many.length);
  for (const i of [0, 1, 7, 9_999, 10_000, 19_998, 19_999, 5, 3]) assertEquals(big.at(i), many[i]);
});

Deno.test("phrase index: random valid lists", () => {
  const random = prng(7);
  const alphabet = [
    "a",
    "b",
    " ",
    ",",
    "[",
    "]",
    '"',
    "\\",
    "/",
    "\n",
    "\t",
    "\u0001",
    "\u007f",
    "\u00e9",
    "\u20ac",
    "\u{1f600}",
    "\ud800",
  ];
  for (let t = 0; t < 300; t++) {
    const phrases: string[] = [];
    const n = Math.floor(random() * 40);
    for (let i = 0; i < n; i++) {
      let s = "";
      const len = Math.floor(random() * (random() < 0.1 ? 80 : 12));
      for (let j = 0; j < len; j++) s += alphabet[Math.floor(random() * alphabet.length)];
      phrases.push(s);
    }
    // JSON.stringify escapes a lone surrogate (\ud800) and control characters.
    const seps = [", ", ",", " , ", ",\n  "];
    const bytes = listBytes(phrases, seps[t % seps.length]);
    const out = agree(bytes, `random list ${t}`, t % 8, t);
    assert("ok" in out, `random list ${t} should be valid`);
    // The same phrases written as Python's json.dumps writes them (\uXXXX for non-ASCII).
    const ascii = enc.encode(`[${phrases.map(asciiJson).join(", ")}]`);
    assertEquals(phrasesOf(indexPhrases(ascii, LABEL), random), phrases);
    agree(ascii, `random list ${t}, ASCII only`, (t + 3) % 8, t);
  }
});

Deno.test("phrase index: at() outside the list is a RangeError", () => {
  const inputs = [
    enc.encode('["a", "b"]'),
    enc.encode("[]"),
    listBytes(Array.from({ length: 40 }, (_, i) => `p${i}`)),
  ];
  for (const bytes of inputs) {
    const list = indexPhrases(bytes, LABEL);
    for (const i of [-1, list.length, list.length + 1, 0.5, NaN, Infinity, -Infinity]) {
      let thrown: unknown;
      try {
        list.at(i);
      } catch (e) {
        thrown = e;
      }
      assert(thrown instanceof RangeError, `length ${list.length}: at(${i}) should throw`);
    }
  }
});

// ---------------------------------------------------------------------------
// Bad lists: the identical error.

Deno.test("phrase index: invalid UTF-8 is rejected exactly as parsePhrases does", () => {
  const bad: Array<[string, number[]]> = [
    ["lone continuation byte", [0x80]],
    ["continuation byte 0xbf", [0xbf]],
    ["overlong C0", [0xc0, 0x80]],
    ["overlong C1", [0xc1, 0xbf]],
    ["overlong E0 80", [0xe0, 0x80, 0x80]],
    ["overlong E0 9F", [0xe0, 0x9f, 0xbf]],
    ["overlong F0 80", [0xf0, 0x80, 0x80, 0x80]],
    ["overlong F0 8F", [0xf0, 0x8f, 0xbf, 0xbf]],
    ["surrogate ED A0", [0xed, 0xa0, 0x80]],
    ["surrogate ED BF", [0xed, 0xbf, 0xbf]],
    ["above U+10FFFF, F4 90", [0xf4, 0x90, 0x80, 0x80]],
    ["F5", [0xf5, 0x80, 0x80, 0x80]],
    ["F8", [0xf8, 0x80, 0x80, 0x80, 0x80]],
    ["FE", [0xfe]],
    ["FF", [0xff]],
    ["truncated 2-byte", [0xc3]],
    ["truncated 3-byte", [0xe2, 0x82]],
    ["truncated 4-byte", [0xf0, 0x9f, 0x98]],
    ["2-byte lead then ASCII", [0xc3, 0x41]],
    ["3-byte lead, bad second", [0xe2, 0x41, 0x82]],
    ["3-byte lead, bad third", [0xe2, 0x82, 0x41]],
    ["4-byte lead, bad fourth", [0xf0, 0x9f, 0x98, 0x41]],
    ["lead then quote", [0xc3, 0x22]],
  ];
  for (const [what, seq] of bad) {
    assertInvalid(bytesOf('["a', seq, 'b"]'), `${what} in a string`);
    assertInvalid(bytesOf('["a', seq), `${what} at the end`);
    assertInvalid(longWith([...bytesOf('"x', seq, 'y", ')]), `${what}, long list`);
    assertInvalid(bytesOf('["a"', seq, "]"), `${what} between tokens`);
    assertInvalid(bytesOf('["a"]', seq), `${what} after the list`);
    assertInvalid(bytesOf(seq, '["a"]'), `${what} before the list`);
  }
  // The valid sequences at the edges of those ranges.
  const edges = [
    [0xc2, 0x80],
    [0xdf, 0xbf],
    [0xe0, 0xa0, 0x80],
    [0xed, 0x9f, 0xbf],
    [0xee, 0x80, 0x80],
    [0xf0, 0x90, 0x80, 0x80],
    [0xf4, 0x8f, 0xbf, 0xbf],
  ];
  for (const seq of edges) {
    assertValid(bytesOf('["a', seq, 'b"]'), `valid ${seq.map((b) => b.toString(16))}`);
    assertValid(longWith([...bytesOf('"x', seq, 'y", ')]), `valid ${seq}, long list`);
  }
});

Deno.test("phrase index: syntax errors are rejected exactly as parsePhrases does", () => {
  const cases: Array<[string, string | Uint8Array]> = [
    ["empty input", ""],
    ["whitespace only", " \n"],
    ["raw control character", '["a\u0001b"]'],
    ["raw newline in a string", '["a\nb"]'],
    ["raw tab in a string", '["a\tb"]'],
    ["raw NUL", '["a\u0000"]'],
    ["bad escape \\x", '["a\\xb"]'],
    ["bad escape \\U", '["\\U0041"]'],
    ["bad escape \\a", '["\\a"]'],
    ["backslash at the end", '["a\\'],
    ["short \\u12", '["\\u12"]'],
    ["short \\u12 then quote", '["\\u12", "b"]'],
    ["\\u with a non-hex digit", '["\\u00g0"]'],
    ["escaped quote ends nothing", '["a\\"]'],
    ["trailing comma", '["a", "b",]'],
    ["trailing comma, spaced", '["a" , ]'],
    ["leading comma", '[, "a"]'],
    ["double comma", '["a",, "b"]'],
    ["missing comma", '["a" "b"]'],
    ["missing comma, no space", '["a""b"]'],
    ["unterminated string", '["a", "b'],
    ["unterminated list", '["a", "b"'],
    ["unterminated list after comma", '["a",'],
    ["only an opening bracket", "["],
    ["trailing garbage", '["a"] x'],
    ["trailing second list", '["a"]["b"]'],
    ["trailing comma after the list", '["a"],'],
    ["closing bracket first", "]"],
    ["object at top level", '{"a": "b"}'],
    ["number at top level", "42"],
    ["string at top level", '"a"'],
    ["null at top level", "null"],
    ["true at top level", "true"],
    ["number element", '["a", 1]'],
    ["null element", '["a", "b", null]'],
    ["nested list element", '["a", ["b"]]'],
    ["object element", '[{"a": 1}]'],
    ["bool element first", "[true]"],
    ["single quotes", "['a']"],
    ["unquoted word", "[a]"],
    ["non-JSON whitespace (vertical tab)", '[\u000b"a"]'],
    ["non-JSON whitespace (NBSP)", '[\u00a0"a"]'],
    ["non-JSON whitespace (form feed)", '["a"\f]'],
    ["a BOM inside", '[\ufeff"a"]'],
    ["DEL outside a string", '["a"\u007f]'],
    ["backslash outside a string", '["a"\\]'],
    ["bracket inside, unterminated", '["a]'],
  ];
  for (const [what, input] of cases) {
    const bytes = typeof input === "string" ? enc.encode(input) : input;
    assertInvalid(bytes, what);
  }
  const phraseErr = outcome(
    () => [...phrasesOf(indexPhrases(enc.encode('["a", 1]'), LABEL), prng(1))],
  );
  assertEquals(phraseErr, {
    error: {
      class: "InputError",
      isInputError: true,
      text: "T_0.json: phrase 1: not a string (the phrase list must hold strings)",
      message: "not a string (the phrase list must hold strings)",
      file: "T_0.json",
      where: "phrase 1",
    },
  });
});

Deno.test("phrase index: syntax errors in the middle of long lists", () => {
  const middles = [
    '"a" "b", ', // missing comma
    '"a",, ', // double comma
    '"a", ], [', // a list ends, another starts
    '"a" ]', // closes early; the rest is garbage
    '"a\u0001", ', // control character
    '"a\\x", ', // bad escape
    '"a\\u12", ', // short \u
    "1, ", // number
    "null, ",
    '["a"], ', // nested list
    '"a" , , ',
    '"a"\u000b, ', // vertical tab
    ", ",
  ];
  for (const m of middles) assertInvalid(longWith(m), `long list with ${JSON.stringify(m)}`);
  for (const m of ['"a" , ', '"a",\n', '"a"\t,\r', '"[\\"]", ', '"]", ']) {
    assertValid(longWith(m), `long list with ${JSON.stringify(m)}`);
  }
});

// ---------------------------------------------------------------------------
// Fuzz: random byte mutations of valid lists.

Deno.test("phrase index: 2,000 seeded mutations agree with parsePhrases", () => {
  const random = prng(20240611);
  const bases = [
    listBytes(["a", "b c", "caf\u00e9", 'say "hi"', "back\\slash", "\u{1f600}", "", "x,y", "[z]"]),
    enc.encode(
      '["The", "The 1973", "The 1973 oil", "oil crisis began", "\\u2013 in October", "\\"shock.\\"", "end"]',
    ),
    listBytes(Array.from({ length: 12 }, (_, i) => `phrase ${i} \u20ac\\`), ","),
  ];
  // Bytes that matter to the grammar or to UTF-8, and a few plain ones.
  // deno-fmt-ignore
  const interesting = [
    0x22, 0x5c, 0x2c, 0x5d, 0x5b, 0x20, 0x0a, 0x80, 0xbf, 0xc3, 0xe2, 0xed, 0xef, 0xf0, 0xf4, 0xff,
    0x00, 0x75, 0x61, 0x30,
  ];
  let valid = 0, invalid = 0;
  for (let t = 0; t < 2000; t++) {
    let bytes = Array.from(bases[t % bases.length]);
    const edits = 1 + Math.floor(random() * (random() < 0.8 ? 1 : 4));
    for (let e = 0; e < edits; e++) {
      const pos = Math.floor(random() * (bytes.length + 1));
      const byte = random() < 0.7
        ? interesting[Math.floor(random() * interesting.length)]
        : Math.floor(random() * 256);
      const op = random();
      if (op < 0.34) bytes = [...bytes.slice(0, pos), byte, ...bytes.slice(pos)];
      else if (op < 0.67) bytes = [...bytes.slice(0, pos), ...bytes.slice(pos + 1)];
      else if (pos < bytes.length) bytes[pos] = byte;
    }
    const out = agree(
      new Uint8Array(bytes),
      `mutation ${t}: ${JSON.stringify(String.fromCharCode(...bytes))}`,
      t % 8,
      t,
    );
    if ("ok" in out) valid++;
    else invalid++;
  }
  // Both kinds of outcome must be well represented for the fuzz to mean something.
  assert(valid > 200 && invalid > 200, `valid ${valid}, invalid ${invalid}`);
});
