/**
 * Tests of io/json_events.ts, the streaming JSON decoder: events in source
 * order, the same events whatever the chunk boundaries (inside multi-byte
 * UTF-8 characters and escapes), U+FEFF kept inside strings, numbers that
 * Python would print differently kept as their source text, and errors that
 * name the byte offset.
 *
 * @module
 */
import { assert, assertEquals } from "../_assert.ts";
import {
  firstInvalidUtf8,
  type JsonEvent,
  JsonEventDecoder,
  JsonSyntaxError,
} from "../../io/json_events.ts";
import { pyDumps, RawNumber } from "../../io/pyjson.ts";

const enc = new TextEncoder();

/** All events of `bytes` fed in chunks of `size` bytes (whole when 0). */
function decode(bytes: Uint8Array, size = 0, key = "data"): JsonEvent[] {
  const d = new JsonEventDecoder(key);
  const out: JsonEvent[] = [];
  if (size === 0) out.push(...d.push(bytes));
  else {for (let i = 0; i < bytes.length; i += size) {
      out.push(...d.push(bytes.subarray(i, i + size)));
    }}
  out.push(...d.end());
  return out;
}

/** The JsonSyntaxError `bytes` raise (fed in chunks of `size`). */
function syntaxError(bytes: Uint8Array | string, size = 0): JsonSyntaxError {
  const b = typeof bytes === "string" ? enc.encode(bytes) : bytes;
  try {
    decode(b, size);
  } catch (e) {
    if (e instanceof JsonSyntaxError) return e;
    throw new Error(`expected a JsonSyntaxError, got ${e}`);
  }
  throw new Error("expected a JsonSyntaxError, nothing was thrown");
}

/** Events with values shown as `json.dumps` would print them. */
function shown(events: JsonEvent[]): unknown[] {
  return events.map((e) =>
    e.kind === "item"
      ? [e.kind, e.index, pyDumps(e.value), e.offset]
      : e.kind === "field"
      ? [e.kind, e.key, pyDumps(e.value)]
      : e.kind === "array-start"
      ? [e.kind, e.key]
      : [e.kind]
  );
}

Deno.test("json events: fields, the streamed array and its items in source order, with byte offsets", () => {
  const text = '{"version": "1.1", "data": [{"a": 1}, [2, 3] , "é"], "z": {"k": null}}';
  const events = decode(enc.encode(text));
  assertEquals(shown(events), [
    ["field", "version", '"1.1"'],
    ["array-start", "data"],
    ["item", 0, '{"a": 1}', 28],
    ["item", 1, "[2, 3]", 38],
    ["item", 2, '"\\u00e9"', 47],
    ["array-end"],
    ["field", "z", '{"k": null}'],
  ]);
  // Offsets are bytes, not UTF-16 units: the item after "é" (2 bytes) shifts by one.
  const after = decode(enc.encode('{"data": ["é", 1]}'));
  assertEquals(shown(after).slice(1, 3), [["item", 0, '"\\u00e9"', 10], ["item", 1, "1", 16]]);
  // Only the top-level key named is streamed; a nested "data" is a plain value.
  assertEquals(shown(decode(enc.encode('{"x": {"data": [1]}, "data": []}'))), [
    ["field", "x", '{"data": [1]}'],
    ["array-start", "data"],
    ["array-end"],
  ]);
});

Deno.test("json events: every chunk size gives the same events (multi-byte UTF-8 and escapes cut)", () => {
  const text = '{"t": "caf\\u00e9 \\"q\\" \\\\ \\/ \\n", "data": ["€uro", "😀 \\ud83d\\ude00", ' +
    '{"k\\u00e9y": "日本語"}, -12.5e-3, 12345678901234567890, "\\t\\b\\f\\r"], "n": 1}';
  const bytes = enc.encode(text);
  const whole = shown(decode(bytes));
  for (const size of [1, 2, 3, 5, 7, 13]) {
    assertEquals(shown(decode(bytes, size)), whole, `chunks of ${size}`);
  }
  const items = decode(bytes).filter((e) => e.kind === "item").map((e) =>
    (e as { value: unknown }).value
  );
  assertEquals(items.slice(0, 3), ["€uro", "😀 😀", { "kéy": "日本語" }]);
  const field = decode(bytes, 1)[0] as { value: unknown };
  assertEquals(field.value, 'café "q" \\ / \n');
});

Deno.test("json events: U+FEFF is kept inside strings, wherever the chunks are cut", () => {
  const text = '{"data": ["\u00b0\ufeff", "\ufeffstart", "a\ufeff\ufeffb", "\\ufeff"]}';
  const bytes = enc.encode(text);
  for (const size of [0, 1, 2, 3, 4]) {
    const items = decode(bytes, size).filter((e) => e.kind === "item").map((e) =>
      (e as { value: unknown }).value
    );
    assertEquals(
      items,
      ["\u00b0\ufeff", "\ufeffstart", "a\ufeff\ufeffb", "\ufeff"],
      `size ${size}`,
    );
  }
});

Deno.test("json events: numbers Python would print differently keep their source text", () => {
  const text = '{"data": [0, -7, 123456789012345, 1234567890123456, 9007199254740993, ' +
    "-0, 1.0, 1e5, 2E-7, 0.1, -0.0, 1e400]}";
  const items = decode(enc.encode(text)).filter((e) => e.kind === "item").map((e) =>
    (e as { value: unknown }).value
  );
  // Safe integers of up to 15 digits are plain numbers ...
  assertEquals(items.slice(0, 3), [0, -7, 123456789012345]);
  // ... everything else is a RawNumber holding the exact text.
  const rest = items.slice(3);
  assert(rest.every((v) => v instanceof RawNumber), "RawNumber");
  assertEquals(rest.map((v) => (v as RawNumber).text), [
    "1234567890123456",
    "9007199254740993",
    "-0",
    "1.0",
    "1e5",
    "2E-7",
    "0.1",
    "-0.0",
    "1e400",
  ]);
  // What Python's json.dumps(json.loads(text)) prints for them.
  assertEquals(rest.map((v) => pyDumps(v as RawNumber)), [
    "1234567890123456",
    "9007199254740993",
    "0",
    "1.0",
    "100000.0",
    "2e-07",
    "0.1",
    "-0.0",
    "Infinity",
  ]);
});

Deno.test("json events: syntax errors name the byte offset", () => {
  const cases: [string, number, string][] = [
    ['{"data": [1, 2,]}', 15, 'invalid JSON: unexpected "]"'],
    ['{"data": [1 2]}', 12, 'invalid JSON: expected "," or "]", found number'],
    ['{"a" 1, "data": []}', 5, 'invalid JSON: expected ":", found number'],
    ['{"data": [], "data": []}', 21, 'invalid JSON: duplicate top-level key "data"'],
    ['{"data": 5}', 9, '"data" is not a list'],
    ['[{"data": []}]', 0, 'the top-level value must be an object with a "data" list'],
    ['{"data": []} {}', 13, "invalid JSON: extra data after the top-level value"],
    ['{"data": [tru]}', 13, 'invalid JSON: unexpected "]"'],
  ];
  for (const [text, offset, message] of cases) {
    const e = syntaxError(text);
    assertEquals([e.offset, e.message], [offset, message], text);
    // Byte-at-a-time feeding finds the same offset.
    const e1 = syntaxError(text, 1);
    assertEquals(e1.offset, offset, `${text} (1-byte chunks)`);
  }
});

Deno.test("json events: truncation, empty input and control characters", () => {
  const t = syntaxError('{"data": [1, 2');
  assertEquals([t.offset, t.message.startsWith("truncated JSON")], [14, true]);
  const s = syntaxError('{"data": ["abc');
  assertEquals([s.offset, s.message.startsWith("truncated JSON")], [14, true]);
  const empty = syntaxError("   ");
  assertEquals([empty.offset, empty.message], [0, "empty file: no JSON value"]);
  const ctl = syntaxError('{"data": ["a\x01b"]}');
  assertEquals([ctl.offset, ctl.message], [
    12,
    "invalid JSON: unexpected byte 0x01 (control character)",
  ]);
});

Deno.test("json events: invalid UTF-8 names the offending byte, inside a chunk", () => {
  const head = enc.encode('{"data": ["ab');
  const bad = new Uint8Array([...head, 0xc3, 0x28, ...enc.encode('"]}')]);
  for (const size of [0, 3]) {
    const e = syntaxError(bad, size);
    assertEquals(
      [e.offset, e.message],
      [head.length, "invalid UTF-8 byte sequence"],
      `size ${size}`,
    );
  }
  // A lone continuation byte and an overlong encoding.
  assertEquals(syntaxError(new Uint8Array([...head, 0x80, 0x22, 0x5d, 0x7d])).offset, head.length);
  assertEquals(
    syntaxError(new Uint8Array([...head, 0xc0, 0xaf, 0x22, 0x5d, 0x7d])).offset,
    head.length,
  );
  // A multi-byte character cut at the very end of the input.
  const cut = new Uint8Array([...enc.encode('{"data": ["'), 0xe2, 0x82]);
  const ce = syntaxError(cut);
  assertEquals([ce.offset, ce.message], [cut.length, "invalid UTF-8 byte sequence"]);
  assertEquals(firstInvalidUtf8(new Uint8Array([0x61, 0xe2, 0x82])), 3);
  assertEquals(firstInvalidUtf8(new Uint8Array([0x61, 0xed, 0xa0, 0x80])), 1); // a surrogate
  assertEquals(firstInvalidUtf8(enc.encode("ok é € 😀")), enc.encode("ok é € 😀").length);
});

Deno.test("json events: invalid UTF-8 cut by a chunk boundary names its first byte", () => {
  const head = enc.encode('{"data": ["ab');
  const bad = new Uint8Array([...head, 0xc3, 0x28, ...enc.encode('"]}')]);
  for (const size of [1, 2, 3, 5, 64]) assertEquals(syntaxError(bad, size).offset, head.length);
  // A four-byte character cut twice, its last byte wrong.
  const four = new Uint8Array([...head, 0xf0, 0x9f, 0x98, 0x28, ...enc.encode('"]}')]);
  for (const size of [1, 2, 3, 7]) assertEquals(syntaxError(four, size).offset, head.length);
});

Deno.test("json events: random bytes in a string: rejected exactly when a fatal TextDecoder rejects them, at the first bad byte, whatever the chunk size", () => {
  // A seeded generator, so a failure can be replayed.
  let seed = 12345;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const head = enc.encode('{"data": ["a');
  const pool = [0x41, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc2, 0xc3, 0xdf, 0xe0, 0xe2, 0xed, 0xef];
  pool.push(0xf0, 0xf4, 0xf5, 0xc0, 0xff);
  const fatal = new TextDecoder("utf-8", { fatal: true });
  let rejected = 0;
  for (let trial = 0; trial < 400; trial++) {
    const mid = Array.from({ length: 1 + rand(6) }, () => pool[rand(pool.length)]);
    const bytes = new Uint8Array([...head, ...mid, ...enc.encode('"]}')]);
    let valid = true;
    try {
      fatal.decode(new Uint8Array(mid));
    } catch {
      valid = false;
    }
    const want = valid ? undefined : firstInvalidUtf8(bytes); // the rest is ASCII
    for (const size of [0, 1, 2, 3, 5]) {
      let got: number | undefined;
      try {
        decode(bytes, size);
      } catch (e) {
        if (!(e instanceof JsonSyntaxError)) throw e;
        got = e.message === "invalid UTF-8 byte sequence" ? e.offset : -1;
      }
      assertEquals(got, want, `bytes ${mid.map((b) => b.toString(16))}, chunks of ${size}`);
    }
    if (!valid) rejected++;
  }
  // Both outcomes are exercised.
  assertEquals(rejected > 100 && rejected < 400, true, `${rejected} rejected`);
});

Deno.test("json events: duplicate nested keys keep the first position and the last value (as Python)", () => {
  const events = decode(enc.encode('{"data": [{"b": 1, "a": 2, "b": 3, "10": 4, "2": 5}]}'));
  const item = events.find((e) => e.kind === "item") as { value: unknown };
  assertEquals(pyDumps(item.value as never), '{"b": 3, "a": 2, "10": 4, "2": 5}');
});

/** Events (shown as `json.dumps` prints them), or the error, of `text` in chunks of `size`. */
function outcome(text: string, size: number, fastItems: boolean): unknown {
  const bytes = enc.encode(text);
  const d = new JsonEventDecoder("data", { fastItems, maxStringBytes: 40 });
  const out: JsonEvent[] = [];
  try {
    for (let i = 0; i < bytes.length; i += size) out.push(...d.push(bytes.subarray(i, i + size)));
    out.push(...d.end());
  } catch (e) {
    return e instanceof JsonSyntaxError ? ["error", e.offset, e.message] : ["thrown", String(e)];
  }
  return shown(out);
}

Deno.test("json events: the fast path (JSON.parse of whole elements) gives the tokenizer's events and errors", () => {
  const docs = [
    '{"version": "1.1", "data": [{"a": 1}, {"b": [1, 2, {"c": "x"}]}, 7, "s", [1], {}]}',
    '{"data": [ {"t": "\\u00e9\\ud83d\\ude00\\ud800 \\"q\\" \\\\"} , {"u": "\ufeffé"} ] , "v": 2}',
    '{"data": [{"b": 1, "a": 2, "b": 3, "10": 4, "2": 5}, {"\\u0031": 1}, {"__proto__": {"x": 1}}]}',
    '{"data": [{"n": 1.5, "m": -0, "k": 1e3, "big": 12345678901234567890, "s": -12}]}',
    '{"data": [{"a": true, "b": false, "c": null, "d": [true, null, -1]}]}',
    '{"data": [{"a": 1,}, {"b": 2}]}',
    '{"data": [{"a": 1} {"b": 2}]}',
    '{"data": [{"a": 1},]}',
    '{"data": [{"a": [1}]}',
    '{"data": [{"a": 1}, {"b": "' + "x".repeat(41) + '"}]}',
    '{"data": [{"a": 1}, {"b": ',
    '{"data": [{"a": 1}',
    '{"data": [' + "[".repeat(999) + "]".repeat(999) + "]}",
    '{"data": [{"a": ' + "[".repeat(998) + "]".repeat(998) + "}]}",
    '{"data": [{"a": ' + "[".repeat(997) + "]".repeat(997) + "}]}",
    '{"data": [{"a": 01}]}',
    '{"data": [{"a": "x"}], "data": []}',
    '{"data": [], "x": [{"a": 1}]}',
  ];
  for (const doc of docs) {
    for (const size of [1, 2, 3, 7, 64, 1 << 20]) {
      assertEquals(
        outcome(doc, size, true),
        outcome(doc, size, false),
        `${doc} (chunks of ${size})`,
      );
    }
  }
});

/** All events of `text` fed in chunks of `size` (whole when 0) with `readField`, or its error. */
function decodeReading(
  text: string,
  size: number,
  readField?: (key: string, first: number) => boolean,
): JsonEvent[] | string {
  const bytes = enc.encode(text);
  const d = new JsonEventDecoder("data", readField ? { readField } : {});
  const out: JsonEvent[] = [];
  try {
    const step = size === 0 ? bytes.length || 1 : size;
    for (let i = 0; i < bytes.length; i += step) {
      const ev = d.push(bytes.subarray(i, i + step));
      out.push(...ev);
      if (ev.at(-1)?.kind === "unread") return out;
    }
    out.push(...d.end());
    return out;
  } catch (e) {
    if (e instanceof JsonSyntaxError) return `byte ${e.offset}: ${e.message}`;
    throw e;
  }
}

Deno.test("json events: readField that reads every value changes no event and no error, whatever the chunks", () => {
  const docs = [
    '{"a" : 1, "b":\n\t "x\\"y", "c":  {"d": [1, {"e": null}]}, "data": [{"k": 2}, 3], "f": true}',
    '{"n": -0.5e3, "s": "é😀", "l": [], "o": {}, "z": false}',
    '{"a": }',
    '{"a":   ',
    '{"a": 1, "b": [1, 2',
    '{"a": "abc',
    '{"a": tru}',
    '{"a": NaN}',
  ];
  const seen: [string, number][] = [];
  for (const text of docs) {
    for (const size of [0, 1, 2, 3, 5, 7, 13]) {
      const want = decodeReading(text, size);
      const got = decodeReading(text, size, (k, b) => (seen.push([k, b]), true));
      assertEquals(
        typeof got === "string" ? got : shown(got),
        typeof want === "string" ? want : shown(want),
        `${text} in chunks of ${size}`,
      );
    }
  }
  // Asked once per top-level value, at its first byte (the streamed array included).
  seen.length = 0;
  decodeReading(docs[0], 0, (k, b) => (seen.push([k, b]), true));
  assertEquals(seen.map(([k, b]) => `${k} ${String.fromCharCode(b)}`), [
    "a 1",
    'b "',
    "c {",
    "data [",
    "f t",
  ]);
});

Deno.test("json events: a value readField declines is not read: an unread event ends the events, at its first byte", () => {
  // After the declined value comes what would be an error: it is never read.
  const text = '{"q1": 0.5, "q2" :\n  [1, 2, \x00 oops';
  const noList = (_: string, b: number) => b !== 0x5b;
  for (const size of [0, 1, 2, 3, 5, 7, 13]) {
    const got = decodeReading(text, size, noList);
    assert(typeof got !== "string", `${got} in chunks of ${size}`);
    assertEquals(shown(got.slice(0, 1)), [["field", "q1", "0.5"]], `chunks of ${size}`);
    assertEquals(got.slice(1), [{ kind: "unread", key: "q2", first: 0x5b, offset: 21 }]);
  }
  // Without readField the rest is read, and refused where it goes wrong.
  assertEquals(
    decodeReading(text, 0),
    "byte 28: invalid JSON: unexpected byte 0x00 (control character)",
  );
  // The decoder has stopped: more input, or its end, is a mistake of the caller's.
  const d = new JsonEventDecoder("\0", { readField: noList });
  assertEquals(d.push(enc.encode('{"a": [')).at(-1)?.kind, "unread");
  for (const f of [() => d.push(enc.encode("1]}")), () => d.end()]) {
    let message = "";
    try {
      f();
    } catch (e) {
      message = String(e);
    }
    assertEquals(message, "Error: JsonEventDecoder: input after an unread field");
  }
});
