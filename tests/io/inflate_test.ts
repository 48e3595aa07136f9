/**
 * Tests of the readers' inflater and CRC-32 (`io/_zip_internal.ts`, the
 * runtime's zlib): exact output, an entry that inflates past its declared
 * size refused with one line (by `io/zip.ts` and by the dump readers'
 * `inflateChecked`), a wrong CRC-32 refused, header-only reads that return
 * the prefix of hostile streams (empty blocks, then a bomb), and inflation
 * into a reused buffer that gives the same bytes and errors as without.
 *
 * @module
 */
import * as zlib from "node:zlib";
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { mulberry32 as rng } from "../../bench/perturb.ts";
import { extractZipEntry, readZipDirectory, ZipError } from "../../io/zip.ts";
import { inflateChecked } from "../../io/zip_file.ts";
import {
  crc32,
  encodeZipRaw,
  inflateRawAtMost,
  inflateRawBounded,
  inflateRawPrefix,
} from "../../io/_zip_internal.ts";

const enc = new TextEncoder();

/** CRC-32 bit by bit, from the definition (reflected polynomial 0xedb88320). */
function crcBitwise(data: Uint8Array, seed = 0): number {
  let c = ~seed >>> 0;
  for (const x of data) {
    c ^= x;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
  }
  return ~c >>> 0;
}

function randomBytes(n: number, seed: number): Uint8Array {
  const r = rng(seed);
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(r() * 256);
  return out;
}

/** `data` deflated (raw deflate, zlib), as a plain Uint8Array. */
function deflate(data: Uint8Array, flush?: number): Uint8Array {
  const b = zlib.deflateRawSync(data, flush === undefined ? {} : { finishFlush: flush });
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength).slice();
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** Asserts that `got` is a Uint8Array holding exactly the bytes of `want` (all of them). */
function assertBytes(got: unknown, want: Uint8Array, msg = ""): void {
  assert(got instanceof Uint8Array, `${msg} not bytes: ${typeof got === "string" ? got : got}`);
  assertEquals(got.length, want.length, `${msg} length`);
  for (let i = 0; i < want.length; i++) {
    if (got[i] !== want[i]) throw new Error(`${msg} byte ${i}: ${got[i]}, expected ${want[i]}`);
  }
}

/** Asserts that `f` throws an Error whose message matches `re`. */
function assertThrowsMatch(f: () => unknown, re: RegExp): void {
  let thrown: unknown = undefined;
  try {
    f();
  } catch (e) {
    thrown = e;
  }
  assert(thrown instanceof Error, `expected an Error, got ${thrown}`);
  assertMatch(thrown.message, re);
}

/** The error `f` throws, which must be a ZipError. */
function zipError(f: () => unknown): ZipError {
  try {
    f();
  } catch (e) {
    if (e instanceof ZipError) return e;
    throw new Error(`expected a ZipError, got ${e}`);
  }
  throw new Error("expected a ZipError, nothing was thrown");
}

/** A one-entry zip (deflated) whose directory and local header declare `size` bytes. */
function zipDeclaring(data: Uint8Array, size: number): Uint8Array {
  const zip = encodeZipRaw([{ name: "a.npy", data, compress: true }]);
  const v = new DataView(zip.buffer);
  v.setUint32(22, size, true); // local header: uncompressed size
  for (let i = 0; i + 4 <= zip.length; i++) {
    if (v.getUint32(i, true) === 0x02014b50) v.setUint32(i + 24, size, true);
  }
  return zip;
}

Deno.test("crc32: the zlib CRC-32 is the ZIP CRC-32, continued from a seed", () => {
  assertEquals(crc32(enc.encode("123456789")), 0xcbf43926);
  assertEquals(crc32(new Uint8Array(0)), 0);
  for (const n of [1, 7, 8, 9, 1000, 65537]) {
    const data = randomBytes(n, n);
    const whole = crc32(data);
    assertEquals(whole, crcBitwise(data), `length ${n}`);
    const cut = Math.floor(n / 3);
    assertEquals(crc32(data.subarray(cut), crc32(data.subarray(0, cut))), whole, `seeded, ${n}`);
  }
});

Deno.test("inflateRawBounded: exact output; past the declared size or short of it, one reason", () => {
  const data = concat(randomBytes(5000, 1), new Uint8Array(20000).fill(7));
  const raw = deflate(data);
  const out = inflateRawBounded(raw, data.length);
  assert(out instanceof Uint8Array);
  assertEquals(Object.getPrototypeOf(out), Uint8Array.prototype); // a plain array, not a Buffer
  assertBytes(out, data);
  for (const size of [0, 1, 4999, data.length - 1]) {
    assertEquals(
      inflateRawBounded(raw, size),
      `inflates past the declared ${size} bytes (stopped there)`,
    );
  }
  assertEquals(
    inflateRawBounded(raw, data.length + 1),
    `inflated to ${data.length} bytes but the directory declares ${data.length + 1}`,
  );
  // 64 MiB of zeros declared as 1,000 bytes: refused at the declared size.
  const bomb = deflate(new Uint8Array(1 << 26));
  assertEquals(
    inflateRawBounded(bomb, 1000),
    "inflates past the declared 1000 bytes (stopped there)",
  );
  // Corrupt data and a cut stream are errors (zlib's message).
  assertThrowsMatch(() => inflateRawBounded(new Uint8Array([0xff, 0xff, 0xff]), 10), /invalid/);
  assertThrowsMatch(() => inflateRawBounded(raw.subarray(0, 100), data.length), /end of file/);
});

Deno.test("zip: an entry that inflates past its declared size is refused, one line (zip.ts and the dump readers)", () => {
  const data = enc.encode("phrase vectors ".repeat(200)); // 3,000 bytes
  const zip = zipDeclaring(data, 160);
  const [entry] = readZipDirectory(zip, "x.zip");
  assertEquals(entry.uncompressedSize, 160);
  assertEquals(
    zipError(() => extractZipEntry(zip, entry, "x.zip")).message,
    "x.zip: a.npy: inflates past the declared 160 bytes (stopped there)",
  );
  const raw = zip.subarray(entry.dataOffset, entry.dataOffset + entry.compressedSize);
  assertMatch(
    inflateChecked(raw, 8, 160, entry.crc32) as string,
    /^corrupt deflate data or more than the declared 160 bytes \([^\n]*\)$/,
  );
  // Declared one byte short: refused all the same.
  const short = zipDeclaring(data, data.length - 1);
  const [e2] = readZipDirectory(short, "x.zip");
  assertEquals(
    zipError(() => extractZipEntry(short, e2, "x.zip")).message,
    `x.zip: a.npy: inflates past the declared ${data.length - 1} bytes (stopped there)`,
  );
  // Declared right: read back.
  const ok = zipDeclaring(data, data.length);
  const [e3] = readZipDirectory(ok, "x.zip");
  assertBytes(extractZipEntry(ok, e3, "x.zip"), data);
});

Deno.test("zip: a deflated entry with a wrong CRC-32 is refused, one line (zip.ts and the dump readers)", () => {
  const data = randomBytes(3000, 5);
  const zip = encodeZipRaw([{ name: "a.npy", data, compress: true }]);
  const [good] = readZipDirectory(zip, "x.zip");
  const raw = zip.subarray(good.dataOffset, good.dataOffset + good.compressedSize);
  assertBytes(inflateChecked(raw, 8, data.length, good.crc32), data);
  const bad = (good.crc32 ^ 1) >>> 0;
  const hex = (v: number) => v.toString(16).padStart(8, "0");
  assertEquals(
    zipError(() => extractZipEntry(zip, { ...good, crc32: bad }, "x.zip")).message,
    `x.zip: a.npy: CRC-32 mismatch (directory says ${hex(bad)}, data has ${hex(good.crc32)})`,
  );
  assertEquals(
    inflateChecked(raw, 8, data.length, bad),
    `CRC-32 mismatch (directory says ${hex(bad)}, data has ${hex(good.crc32)})`,
  );
});

Deno.test("inflateRawPrefix: the first bytes of plain and hostile streams", () => {
  const data = concat(randomBytes(3000, 2), new Uint8Array(5000).fill(1));
  const raw = deflate(data);
  assertEquals(inflateRawPrefix(raw, 0).length, 0);
  assertBytes(inflateRawPrefix(raw, 10), data.subarray(0, 10));
  assertBytes(inflateRawPrefix(raw, 128), data.subarray(0, 128));
  assertBytes(inflateRawPrefix(raw, 4000), data.subarray(0, 4000));
  assertBytes(inflateRawPrefix(raw, data.length + 50), data); // shorter: all of it
  // A 100-byte head, 20,000 empty stored blocks (100 KB of input that gives
  // nothing), then 64 MiB of zeros: the first 128 bytes are the head and 28 zeros.
  const head = randomBytes(100, 3);
  const empty = new Uint8Array(5 * 20000);
  for (let i = 0; i < empty.length; i += 5) empty.set([0, 0, 0, 0xff, 0xff], i);
  const hostile = concat(
    deflate(head, zlib.constants.Z_SYNC_FLUSH),
    empty,
    deflate(new Uint8Array(1 << 26)),
  );
  const want = concat(head, new Uint8Array(28));
  assertBytes(inflateRawPrefix(hostile, 128), want);
  assertBytes(inflateRawPrefix(hostile, 100), head);
  // A bomb from the first byte: its first 128 bytes.
  assertBytes(inflateRawPrefix(deflate(new Uint8Array(1 << 26)), 128), new Uint8Array(128));
  // Corrupt data is an error.
  assertThrowsMatch(() => inflateRawPrefix(new Uint8Array([0xff, 0xff, 0xff]), 10), /invalid/);
});

Deno.test("inflateRawAtMost into a reused buffer: the same bytes and the same errors as without", () => {
  const data = concat(randomBytes(3000, 7), new Uint8Array(2000).fill(9));
  const raw = deflate(data);
  // One buffer lent to every call, larger than any asks for; the result views it.
  const lent = new Uint8Array(1 << 20);
  let asked = 0;
  const reuse = (n: number) => {
    asked = n;
    return lent;
  };
  const outcome = (f: () => Uint8Array): string | Uint8Array => {
    try {
      return f().slice();
    } catch (e) {
      const code = (e as { code?: string }).code;
      return `${code ?? ""} ${e instanceof Error ? e.message : String(e)}`;
    }
  };
  // A stream inside a larger buffer (as in an archive): the view's offset is respected.
  const framed = concat(randomBytes(37, 8), raw, randomBytes(11, 9)).subarray(37, 37 + raw.length);
  const bomb = deflate(new Uint8Array(1 << 24));
  const cases: [string, Uint8Array, number][] = [
    ["exact", raw, data.length],
    ["in a larger buffer", framed, data.length],
    ["declared larger", raw, data.length + 100],
    ["declared smaller", raw, data.length - 1],
    ["declared far smaller", raw, 160],
    ["cut short", raw.subarray(0, 100), data.length],
    ["bytes after the stream", concat(raw, new Uint8Array([1, 2, 3])), data.length],
    ["bad block type", new Uint8Array([0x07, 0, 0]), 10],
    ["empty input", new Uint8Array(0), 10],
    ["bomb", bomb, 100],
    ["empty entry", deflate(new Uint8Array(0)), 0],
  ];
  for (const [name, input, size] of cases) {
    const want = outcome(() => inflateRawAtMost(input, size));
    const got = outcome(() => inflateRawAtMost(input, size, reuse));
    if (typeof want === "string") assertEquals(got, want, name);
    else assertBytes(got, want, name);
    assertEquals(asked, Math.max(1, size) + 64, `${name}: room asked for`);
  }
  // The good case views the lent buffer, no copy; and a failure in between leaves no trace.
  const view = inflateRawAtMost(raw, data.length, reuse);
  assert(view.buffer === lent.buffer && view.byteOffset === 0, "not a view of the lent buffer");
  assertBytes(view, data);
  assertEquals(
    outcome(() => inflateRawAtMost(raw, 10, reuse)),
    outcome(() => inflateRawAtMost(raw, 10)),
  );
  assertBytes(inflateRawAtMost(raw, data.length, reuse), data, "after a refusal");
  // inflateChecked lends it through: the same reasons, word for word.
  const crc = crc32(data);
  assertBytes(inflateChecked(raw, 8, data.length, crc, reuse), data);
  for (const size of [160, data.length + 1]) {
    assertEquals(inflateChecked(raw, 8, size, crc, reuse), inflateChecked(raw, 8, size, crc));
  }
  assertEquals(
    inflateChecked(raw, 8, data.length, crc ^ 1, reuse),
    inflateChecked(raw, 8, data.length, crc ^ 1),
  );
});
