/**
 * Tests of io/zip.ts: archives written by Python's zipfile (stored,
 * deflated, ZIP64, names under a top folder) read back exactly, ours read by
 * zipfile, and every refusal the module promises, each one line naming the
 * archive and the entry.
 *
 * @module
 */
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { python } from "../_util.ts";
import {
  checkEntryName,
  encodeZip,
  extractZipEntry,
  isZip,
  readZipDirectory,
  unzip,
  ZipError,
  type ZipLimits,
} from "../../io/zip.ts";
import { encodeZipRaw, type RawZipInput } from "../../io/_zip_internal.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

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

/** Offset of the `k`-th central directory record (signature PK\1\2). */
function cdRecord(zip: Uint8Array, k: number): number {
  let seen = 0;
  for (let i = 0; i + 4 <= zip.length; i++) {
    if (zip[i] === 0x50 && zip[i + 1] === 0x4b && zip[i + 2] === 1 && zip[i + 3] === 2) {
      if (seen++ === k) return i;
    }
  }
  throw new Error(`no central directory record ${k}`);
}

const put16 = (b: Uint8Array, o: number, v: number) => {
  b[o] = v & 0xff;
  b[o + 1] = (v >>> 8) & 0xff;
};
const put32 = (b: Uint8Array, o: number, v: number) => {
  put16(b, o, v & 0xffff);
  put16(b, o + 2, (v >>> 16) & 0xffff);
};

const raw = (entries: RawZipInput[]) => encodeZipRaw(entries);
const refusal = (bytes: Uint8Array, limits?: ZipLimits) =>
  zipError(() => unzip(bytes, "x.zip", limits));

const PY_ARCHIVES = `
import sys, zipfile
d = sys.argv[1]
text = ("phrase index " * 400).encode()
with zipfile.ZipFile(d + "/stored.zip", "w", zipfile.ZIP_STORED) as z:
    z.writestr("a.txt", b"hello")
    z.writestr("empty.bin", b"")
    z.writestr("caf\\u00e9.txt", "\\u00e9t\\u00e9".encode())
with zipfile.ZipFile(d + "/deflated.zip", "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("big.txt", text)
    z.writestr("small.txt", b"x")
with zipfile.ZipFile(d + "/top.zip", "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("context_emb/", b"")
    z.writestr("context_emb/T_0.json", b'["a"]')
    z.writestr("context_emb/T_1.json", b'["b", "c"]')
with zipfile.ZipFile(d + "/zip64.zip", "w", zipfile.ZIP_DEFLATED) as z:
    with z.open("forced.txt", "w", force_zip64=True) as f:
        f.write(text)
    z.writestr("plain.txt", b"plain")
`;

Deno.test("zip: archives written by Python's zipfile read back exactly", async () => {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-zip-" });
  try {
    await python(["-c", PY_ARCHIVES, dir]);
    const text = enc.encode("phrase index ".repeat(400));
    const stored = await Deno.readFile(`${dir}/stored.zip`);
    assert(isZip(stored));
    const s = readZipDirectory(stored, "stored.zip");
    assertEquals(s.map((e) => [e.name, e.method, e.uncompressedSize]), [
      ["a.txt", 0, 5],
      ["empty.bin", 0, 0],
      ["café.txt", 0, 5],
    ]);
    const sf = unzip(stored, "stored.zip");
    assertEquals(dec.decode(sf.get("a.txt")), "hello");
    assertEquals(sf.get("empty.bin")!.length, 0);
    assertEquals(dec.decode(sf.get("café.txt")), "été");

    const deflated = await Deno.readFile(`${dir}/deflated.zip`);
    const d = readZipDirectory(deflated, "deflated.zip");
    assertEquals(d.map((e) => [e.name, e.method]), [["big.txt", 8], ["small.txt", 8]]);
    assert(d[0].compressedSize < d[0].uncompressedSize / 10, "big.txt is really deflated");
    assertEquals(extractZipEntry(deflated, d[0], "deflated.zip"), text);
    assertEquals(dec.decode(extractZipEntry(deflated, d[1], "deflated.zip")), "x");

    const top = unzip(await Deno.readFile(`${dir}/top.zip`), "top.zip");
    assertEquals([...top.keys()], ["context_emb/T_0.json", "context_emb/T_1.json"]);
    assertEquals(dec.decode(top.get("context_emb/T_1.json")), '["b", "c"]');
    const topDir = readZipDirectory(await Deno.readFile(`${dir}/top.zip`), "top.zip");
    assertEquals(topDir.map((e) => e.isDirectory), [true, false, false]);

    const z64 = await Deno.readFile(`${dir}/zip64.zip`);
    const z = unzip(z64, "zip64.zip");
    assertEquals(z.get("forced.txt"), text);
    assertEquals(dec.decode(z.get("plain.txt")), "plain");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("zip: our archives (stored, deflated, forced ZIP64) are read by Python's zipfile", async () => {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-zip-" });
  try {
    const entries = [
      { name: "a.txt", data: enc.encode("hello") },
      { name: "dir/é.bin", data: new Uint8Array(3000).map((_, i) => i % 7) },
      { name: "s.txt", data: enc.encode("stored"), compress: false },
    ];
    const variants = {
      stored: encodeZip(entries),
      deflated: encodeZip(entries, { compressed: true, level: 9 }),
      zip64: encodeZip(entries, { compressed: true, forceZip64: true }),
    };
    for (const [name, bytes] of Object.entries(variants)) {
      await Deno.writeFile(`${dir}/${name}.zip`, bytes);
      const back = unzip(bytes, `${name}.zip`);
      assertEquals([...back.keys()], ["a.txt", "dir/é.bin", "s.txt"]);
      assertEquals(back.get("dir/é.bin"), entries[1].data);
    }
    const r = await python([
      "-c",
      `import sys, zipfile, json
out = {}
for n in ("stored", "deflated", "zip64"):
    with zipfile.ZipFile(sys.argv[1] + "/" + n + ".zip") as z:
        assert z.testzip() is None
        out[n] = [[i.filename, i.compress_type, i.file_size, sum(z.read(i))] for i in z.infolist()]
print(json.dumps(out))`,
      dir,
    ]);
    const sum = entries[1].data.reduce((a, b) => a + b, 0);
    const want = (m: number) => [["a.txt", m, 5, 532], ["dir/é.bin", m, 3000, sum], [
      "s.txt",
      0,
      6,
      657,
    ]];
    assertEquals(JSON.parse(r.stdout), { stored: want(0), deflated: want(8), zip64: want(8) });
    // Fixed timestamps: the same input gives the same bytes.
    assertEquals(
      encodeZip(entries, { compressed: true }),
      encodeZip(entries, { compressed: true }),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("zip: unsafe entry names are refused, naming the archive and the entry", () => {
  const cases: [string, string][] = [
    ["../x.npy", "entry name escapes the archive folder (a '..' segment)"],
    ["a/../../x.npy", "entry name escapes the archive folder (a '..' segment)"],
    ["/etc/passwd", "entry name is an absolute path"],
    ["C:x.npy", "entry name starts with a drive letter"],
    ["a\\b.npy", "entry name contains a backslash"],
    ["a\0b.npy", "entry name contains a NUL byte"],
  ];
  for (const [name, reason] of cases) {
    assertEquals(checkEntryName(name), reason, name);
    const e = refusal(raw([{ name: "ok.npy", data: new Uint8Array(1) }, {
      name,
      data: new Uint8Array(1),
    }]));
    const shown = name.replace("\0", "\\x00");
    assertEquals(e.message, `x.zip: ${shown}: ${reason}`);
    assertEquals([e.file, e.entry, e.reason], ["x.zip", shown, reason]);
    // The writer refuses them too.
    const w = zipError(() => encodeZip([{ name, data: new Uint8Array(1) }], { file: "w.zip" }));
    assertEquals(w.message, `w.zip: ${shown}: ${reason}`);
  }
  assertEquals(checkEntryName("a/..b/c..d"), undefined);
  assertEquals(checkEntryName(""), "empty entry name");
});

Deno.test("zip: duplicate names are refused (reader and writer)", () => {
  const e = refusal(
    raw([{ name: "a", data: enc.encode("1") }, { name: "a", data: enc.encode("2") }]),
  );
  assertEquals(e.message, "x.zip: a: duplicate entry name");
  const w = zipError(() =>
    encodeZip([{ name: "a", data: new Uint8Array() }, { name: "a", data: new Uint8Array() }])
  );
  assertEquals(w.message, "<memory>: a: duplicate entry name");
});

Deno.test("zip: encrypted entries and unknown methods are refused", () => {
  const zip = raw([{ name: "a.npy", data: enc.encode("secret") }]);
  const enc1 = zip.slice();
  put16(enc1, cdRecord(enc1, 0) + 8, 0x1); // general-purpose flag bit 0: encrypted
  assertEquals(refusal(enc1).message, "x.zip: a.npy: encrypted entries are not supported");
  const strong = zip.slice();
  put16(strong, cdRecord(strong, 0) + 8, 0x40); // strong encryption
  assertEquals(refusal(strong).message, "x.zip: a.npy: encrypted entries are not supported");
  const bzip2 = zip.slice();
  put16(bzip2, cdRecord(bzip2, 0) + 10, 12);
  assertEquals(
    refusal(bzip2).message,
    "x.zip: a.npy: unsupported compression method 12 (only stored and deflate)",
  );
});

Deno.test("zip: size, total and ratio limits refuse zip bombs before inflating", () => {
  const zeros = new Uint8Array(1 << 20);
  const bomb = raw([{ name: "z.bin", data: zeros, compress: true }]);
  // Honest 1 MiB of zeros deflates about 1000:1, inside DEFLATE's maximum.
  assertEquals(unzip(bomb, "x.zip").get("z.bin")!.length, 1 << 20);
  assertMatch(
    refusal(bomb, { maxRatio: 10 }).message,
    /^x\.zip: z\.bin: declares 1048576 bytes uncompressed from \d+ compressed, more than 10x \(a zip bomb\?\)$/,
  );
  assertEquals(
    refusal(bomb, { maxEntrySize: 1000 }).message,
    "x.zip: z.bin: declares 1048576 bytes uncompressed, above the limit of 1000",
  );
  const two = raw([{ name: "a", data: new Uint8Array(600) }, {
    name: "b",
    data: new Uint8Array(600),
  }]);
  assertEquals(
    refusal(two, { maxTotalSize: 1000 }).message,
    "x.zip: entries declare 1200 bytes uncompressed in all, above the limit of 1000",
  );
  // A directory that lies about the size: more than 1032x its compressed bytes.
  const liar = bomb.slice();
  const cd = cdRecord(liar, 0);
  const csize = liar[cd + 20] | (liar[cd + 21] << 8) | (liar[cd + 22] << 16);
  put32(liar, cd + 24, csize * 1032 + 1025);
  assertEquals(
    refusal(liar).message,
    `x.zip: z.bin: declares ${
      csize * 1032 + 1025
    } bytes uncompressed from ${csize} compressed, more than 1032x (a zip bomb?)`,
  );
  // Stored entries must declare equal sizes.
  const stored = raw([{ name: "s", data: new Uint8Array(10) }]);
  put32(stored, cdRecord(stored, 0) + 24, 11);
  assertEquals(
    refusal(stored).message,
    "x.zip: s: stored entry declares 10 bytes stored but 11 bytes uncompressed",
  );
});

Deno.test("zip: entries overlapping or outside the archive are refused", () => {
  const two = raw([
    { name: "a", data: enc.encode("aaaaaaaaaa") },
    { name: "b", data: enc.encode("bbbbbbbbbb") },
  ]);
  // Entry a claims 10 more bytes: its data now runs into b's local header.
  const overlap = two.slice();
  const cdA = cdRecord(overlap, 0);
  put32(overlap, cdA + 20, 20);
  put32(overlap, cdA + 24, 20);
  assertEquals(refusal(overlap).message, "x.zip: b: overlaps entry 'a'");
  // Entry b claims more data than lies before the central directory.
  const past = two.slice();
  const cdB = cdRecord(past, 1);
  put32(past, cdB + 20, 1000);
  put32(past, cdB + 24, 1000);
  assertMatch(
    refusal(past).message,
    /^x\.zip: b: data \(1000 bytes at offset \d+\) runs past the start of the central directory \(truncated archive\?\)$/,
  );
  // Entry b's local header offset points past the archive.
  const away = two.slice();
  put32(away, cdRecord(away, 1) + 42, 100000);
  assertEquals(refusal(away).message, "x.zip: b: no local header at offset 100000");
  // Two central records pointing at one local header (names differ).
  const same = two.slice();
  put32(same, cdRecord(same, 1) + 42, 0);
  assertEquals(
    refusal(same).message,
    "x.zip: b: local header name differs from the central directory",
  );
});

Deno.test("zip: a bad CRC-32 is refused on extraction (stored and deflated)", () => {
  for (const compress of [false, true]) {
    const zip = raw([{
      name: "a.npy",
      data: enc.encode("some data to check ".repeat(4)),
      compress,
    }]);
    const crcAt = cdRecord(zip, 0) + 16;
    zip[crcAt] ^= 0xff;
    // The directory is fine; the data does not match its CRC.
    const [entry] = readZipDirectory(zip, "x.zip");
    const e = zipError(() => extractZipEntry(zip, entry, "x.zip"));
    assertMatch(
      e.message,
      /^x\.zip: a\.npy: CRC-32 mismatch \(directory says [0-9a-f]{8}, data has [0-9a-f]{8}\)$/,
    );
    assertMatch(refusal(zip).message, /CRC-32 mismatch/);
  }
  // Corrupt deflate data.
  const zip = raw([{ name: "d", data: new Uint8Array(5000).fill(3), compress: true }]);
  const [entry] = readZipDirectory(zip, "x.zip");
  for (let i = 0; i < entry.compressedSize; i++) zip[entry.dataOffset + i] = 0xff;
  assertMatch(refusal(zip).message, /^x\.zip: d: (corrupt deflate data|inflated to|CRC-32)/);
});

Deno.test("zip: truncated or non-ZIP bytes are refused with one line", () => {
  const zip = encodeZip([{ name: "a", data: enc.encode("hello") }, {
    name: "b",
    data: enc.encode("world"),
  }]);
  assertEquals(
    refusal(zip.subarray(0, zip.length - 5)).message,
    "x.zip: not a ZIP archive (no end-of-central-directory record)",
  );
  assertEquals(
    refusal(new Uint8Array(10)).message,
    "x.zip: not a ZIP archive (no end-of-central-directory record)",
  );
  assertEquals(
    refusal(enc.encode("definitely not a zip\n")).message,
    "x.zip: not a ZIP archive (no end-of-central-directory record)",
  );
  // Cut in the middle of the data: the end record survives but the
  // central directory no longer lies where it says.
  const cut = new Uint8Array([...zip.subarray(0, 20), ...zip.subarray(40)]);
  const e = refusal(cut);
  assert(e.message.startsWith("x.zip: "), e.message);
  assert(!e.message.includes("\n"), "one line");
  // An empty archive is fine.
  assertEquals(unzip(encodeZip([]), "x.zip").size, 0);
  assert(isZip(encodeZip([])));
  assert(!isZip(enc.encode("PK")));
});

Deno.test("zip: control characters in names are escaped in errors", () => {
  const e = refusal(raw([{ name: "a\x1b[31m", data: new Uint8Array(1) }, {
    name: "a\x1b[31m",
    data: new Uint8Array(1),
  }]));
  assertEquals(e.message, "x.zip: a\\x1b[31m: duplicate entry name");
});
