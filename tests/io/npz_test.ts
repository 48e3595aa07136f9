/**
 * Tests of io/zip.ts and io/npz.ts, cross-checked both ways against numpy
 * and scipy (tests/py/npz_crosscheck.py), plus every refusal the readers
 * must make on hostile or broken archives.
 */
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import { assert, assertEquals, assertStringIncludes } from "../_assert.ts";
import { python, ROOT } from "../_util.ts";
import {
  arrayFromSpec,
  assertMatchesSpec,
  assertValues,
  type Spec,
  tempDir,
  type Val,
} from "./_numpy_spec.ts";
import { bytesArray, encodeNpy, type NdArray, ndarray } from "../../io/npy.ts";
import {
  type CompressedSparseMatrix,
  encodeNpz,
  encodeSparseNpz,
  NpzError,
  parseNpz,
  parseNpzContent,
  parseSparseNpz,
  readNpz,
  readNpzContent,
  readSparseNpz,
  type SparseMatrix,
  sparseToDense,
  writeNpz,
  writeSparseNpz,
} from "../../io/npz.ts";
import {
  checkEntryName,
  encodeZip,
  isZip,
  readZipDirectory,
  unzip,
  ZipError,
} from "../../io/zip.ts";
import { crc32, encodeZipRaw } from "../../io/_zip_internal.ts";

const SCRIPT = `${ROOT}/tests/py/npz_crosscheck.py`;

interface SparseSpec {
  format: "csr" | "csc" | "coo";
  shape: [number, number];
  is_array: boolean;
  dtype: string;
  nnz: number;
  dense: Val[];
  data: Val[];
  indices?: Val[];
  indptr?: Val[];
  row?: Val[];
  col?: Val[];
  index_dtype: string;
}
interface Expected {
  npz: Record<string, { compressed: boolean; arrays: Record<string, Spec> }>;
  sparse: Record<string, SparseSpec>;
  zip64: Record<string, { count: number; values: Val[] }>;
}

let fixtures: Promise<{ dir: string; expected: Expected }> | undefined;
function numpyFixtures(): Promise<{ dir: string; expected: Expected }> {
  fixtures ??= (async () => {
    const dir = await tempDir("npz_test_");
    await python([SCRIPT, "gen", dir]);
    return {
      dir,
      expected: JSON.parse(await Deno.readTextFile(`${dir}/expected.json`)) as Expected,
    };
  })();
  return fixtures;
}

// --- the cross-check value encoding (see npz_crosscheck.py) -----------------

const vec = (descr: string, values: Val[]): NdArray =>
  arrayFromSpec({ descr, shape: [values.length], fortran_order: false, values });

function sparseFromSpec(s: SparseSpec): SparseMatrix {
  const data = vec(s.dtype, s.data);
  if (s.format === "coo") {
    return {
      format: "coo",
      shape: s.shape,
      data,
      row: vec(s.index_dtype, s.row!),
      col: vec(s.index_dtype, s.col!),
      isArray: s.is_array,
    };
  }
  return {
    format: s.format,
    shape: s.shape,
    data,
    indices: vec(s.index_dtype, s.indices!),
    indptr: vec(s.index_dtype, s.indptr!),
    isArray: s.is_array,
  };
}

/** Runs `f`, expecting an NpzError naming `file`; returns it. */
function expectNpzError(f: () => unknown, file: string, part: string, entry?: string): NpzError {
  try {
    f();
  } catch (e) {
    assert(e instanceof NpzError, `expected NpzError, got ${e}`);
    assertEquals(e._tag, "NpzError");
    assertEquals(e.file, file);
    assert(e.message.startsWith(`${file}: `), `message names the file: ${e.message}`);
    if (entry !== undefined) {
      assertEquals(e.entry, entry);
      assert(e.message.startsWith(`${file}: ${entry}: `), `message names the entry: ${e.message}`);
    }
    assertStringIncludes(e.message, part);
    assert(!e.message.includes("\n"), "one line");
    return e;
  }
  throw new Error(`expected an NpzError containing "${part}"`);
}

const le32 = (b: Uint8Array, o: number) => new DataView(b.buffer, b.byteOffset).getUint32(o, true);
const setLe32 = (b: Uint8Array, o: number, v: number) =>
  new DataView(b.buffer, b.byteOffset).setUint32(o, v, true);
/** Offset of the central directory of an archive without a comment or ZIP64 end record. */
const cdOffset = (b: Uint8Array) => le32(b, b.length - 22 + 16);

function sampleNpz(compressed: boolean): Uint8Array {
  return encodeNpz({
    a: ndarray(new Float64Array(64).fill(1.5), [8, 8]),
    b: ndarray(new Int32Array([1, 2, 3])),
  }, {
    compressed,
  });
}

// ---------------------------------------------------------------------------
// numpy / scipy → TypeScript

Deno.test("npz: reads savez and savez_compressed files (positional and named keys) with exact values", async () => {
  const { dir, expected } = await numpyFixtures();
  const files = Object.keys(expected.npz);
  assertEquals(files.length, 7);
  for (const file of files) {
    const bytes = await Deno.readFile(`${dir}/${file}`);
    const spec = expected.npz[file];
    // numpy forces ZIP64 in the local headers: their 32-bit sizes are 0xFFFFFFFF.
    assertEquals(le32(bytes, 18), 0xffffffff, `${file}: local header uses ZIP64 placeholders`);
    const entries = readZipDirectory(bytes, file);
    assert(
      entries.every((e) => e.method === (spec.compressed ? 8 : 0)),
      `${file}: compression method`,
    );
    const arrays = parseNpz(bytes, file);
    assertEquals([...arrays.keys()], Object.keys(spec.arrays), `${file}: keys in archive order`);
    for (const [key, s] of Object.entries(spec.arrays)) {
      assertMatchesSpec(arrays.get(key)!, s, `${file}:${key}`);
    }
    const content = parseNpzContent(bytes, file);
    assertEquals(content.kind, "dense");
  }
  // Streamed archive: data descriptors (flag bit 3), no CRC in the local headers.
  const stream = await Deno.readFile(`${dir}/savez_stream.npz`);
  assert(readZipDirectory(stream, "s").every((e) => (e.flags & 8) === 8));
  assertEquals(le32(stream, 14), 0);
  const pos = parseNpz(await Deno.readFile(`${dir}/savez_compressed_pos.npz`), "p");
  assertEquals([...pos.keys()], ["arr_0", "arr_1", "arr_2", "arr_3"]);
  assertEquals([...pos.get("arr_1")!.data], [
    -9223372036854775808n,
    9223372036854775807n,
    0n,
    1n,
    -1n,
  ]);
});

Deno.test("npz: reads scipy save_npz csr / csc / coo, matrix and array, stored and compressed", async () => {
  const { dir, expected } = await numpyFixtures();
  const files = Object.keys(expected.sparse);
  assertEquals(files.length, 18);
  const formats = new Set<string>();
  for (const file of files) {
    const s = expected.sparse[file];
    const bytes = await Deno.readFile(`${dir}/${file}`);
    const content = parseNpzContent(bytes, file);
    assert(content.kind === "sparse", `${file}: detected as sparse`);
    const m = content.matrix;
    formats.add(`${m.format}/${m.isArray}/${file.endsWith("_z.npz")}`);
    assertEquals([m.format, [...m.shape], m.isArray, (m.data.byteOrder ?? "") + m.data.dtype], [
      s.format,
      s.shape,
      s.is_array,
      s.dtype,
    ], file);
    assertValues(m.data, s.data, `${file}: data`);
    if (m.format === "coo") {
      assertValues(m.row, s.row!, `${file}: row`);
      assertValues(m.col, s.col!, `${file}: col`);
    } else {
      assertValues(m.indices, s.indices!, `${file}: indices`);
      assertValues(m.indptr, s.indptr!, `${file}: indptr`);
      assertEquals((m.indices.byteOrder ?? "") + m.indices.dtype, s.index_dtype);
    }
    assertEquals(m.data.shape[0], s.nnz);
    assertValues(sparseToDense(m), s.dense, `${file}: dense`);
    assertEquals(parseSparseNpz(bytes, file).format, s.format);
  }
  for (const f of ["csr", "csc", "coo"]) {
    for (const a of [true, false]) {
      for (const z of [true, false]) assert(formats.has(`${f}/${a}/${z}`), `${f}/${a}/${z}`);
    }
  }
});

Deno.test("npz: reads an archive with 65537 entries (ZIP64 end-of-central-directory record)", async () => {
  const { dir, expected } = await numpyFixtures();
  const bytes = await Deno.readFile(`${dir}/zip64_many.npz`);
  // The classic end record is saturated; the ZIP64 locator sits before it.
  assertEquals(le32(bytes, bytes.length - 22 - 20), 0x07064b50);
  const arrays = parseNpz(bytes, "zip64_many.npz");
  const spec = expected.zip64["zip64_many.npz"];
  assertEquals(arrays.size, spec.count);
  assertValues(arrays.get("a0")!, spec.values, "a0");
  assertValues(arrays.get(`a${spec.count - 1}`)!, spec.values, "last");
});

// ---------------------------------------------------------------------------
// TypeScript → numpy / scipy

Deno.test("npz: archives written here (stored/compressed, named/positional, forced ZIP64) load in numpy with exact values", async () => {
  const { expected } = await numpyFixtures();
  const out = await tempDir("npz_test_");
  const manifest: unknown[] = [];
  const all = expected.npz["savez_all.npz"].arrays;
  assert(Object.keys(all).length >= 190);
  for (const compressed of [false, true]) {
    const named = Object.fromEntries(Object.entries(all).map(([k, s]) => [k, arrayFromSpec(s)]));
    const file = `ts_named_${compressed ? "z" : "s"}.npz`;
    await Effect.runPromise(writeNpz(`${out}/${file}`, named, { compressed }));
    manifest.push({ file, kind: "npz", compressed, arrays: all });
    const specs = Object.values(expected.npz["savez_pos.npz"].arrays);
    const pfile = `ts_pos_${compressed ? "z" : "s"}.npz`;
    await Deno.writeFile(`${out}/${pfile}`, encodeNpz(specs.map(arrayFromSpec), { compressed }));
    manifest.push({
      file: pfile,
      kind: "npz",
      compressed,
      arrays: expected.npz["savez_pos.npz"].arrays,
    });
  }
  // ZIP64 fields everywhere (local, central, end records): zipfile and numpy must cope.
  const specs = expected.npz["savez_named.npz"].arrays;
  const z64 = encodeZip(
    Object.entries(specs).map(([k, s]) => ({
      name: `${k}.npy`,
      data: encodeNpy(arrayFromSpec(s)),
    })),
    { compressed: true, forceZip64: true },
  );
  await Deno.writeFile(`${out}/ts_zip64.npz`, z64);
  manifest.push({ file: "ts_zip64.npz", kind: "npz", compressed: true, arrays: specs });
  // ...and our own reader too.
  const back = parseNpz(z64, "ts_zip64.npz");
  for (const [k, s] of Object.entries(specs)) assertMatchesSpec(back.get(k)!, s, `zip64:${k}`);
  await Deno.writeTextFile(`${out}/manifest.json`, JSON.stringify(manifest));
  const verdict = JSON.parse((await python([SCRIPT, "verify", out])).stdout) as {
    checked: number;
    failures: string[];
  };
  assertEquals(verdict.failures, []);
  assertEquals(verdict.checked, 5);
});

Deno.test("npz: sparse matrices written here (csr/csc/coo, matrix/array, stored/compressed) load in scipy", async () => {
  const { expected } = await numpyFixtures();
  const out = await tempDir("npz_test_");
  const manifest: unknown[] = [];
  for (const [name, s] of Object.entries(expected.sparse)) {
    const m = sparseFromSpec(s);
    for (const compressed of [false, true]) {
      const file = `ts_${compressed ? "z" : "s"}_${name}`;
      await Effect.runPromise(writeSparseNpz(`${out}/${file}`, m, { compressed }));
      const keys = s.format === "coo" ? ["row", "col"] : ["indices", "indptr"];
      keys.push("format", "shape", "data");
      if (s.is_array) keys.push("_is_array");
      manifest.push({ file, kind: "sparse", ...s, entries: keys.map((k) => `${k}.npy`) });
      // Round trip through our reader as well.
      const back = await Effect.runPromise(readSparseNpz(`${out}/${file}`));
      assertValues(sparseToDense(back), s.dense, `${file}: dense`);
      assertEquals(back.isArray, s.is_array);
    }
  }
  await Deno.writeTextFile(`${out}/manifest.json`, JSON.stringify(manifest));
  const verdict = JSON.parse((await python([SCRIPT, "verify", out])).stdout) as {
    checked: number;
    failures: string[];
  };
  assertEquals(verdict.failures, []);
  assertEquals(verdict.checked, 36);
});

Deno.test("npz: the python verifier really fails on wrong values (guards the cross-check)", async () => {
  const out = await tempDir("npz_test_");
  await Deno.writeFile(`${out}/x.npy`, encodeNpy(ndarray(new Float32Array([1, 2]))));
  await Deno.writeTextFile(
    `${out}/manifest.json`,
    JSON.stringify([{
      file: "x.npy",
      kind: "npy",
      descr: "<f4",
      shape: [2],
      fortran_order: false,
      values: [1, 3],
    }]),
  );
  const verdict = JSON.parse((await python([SCRIPT, "verify", out])).stdout) as {
    checked: number;
    failures: string[];
  };
  assertEquals(verdict.failures, ["x.npy: value 1: got 2.0, expected 3.0"]);
});

// ---------------------------------------------------------------------------
// Bad input: every refusal is an NpzError naming the file (and entry).

Deno.test("npz bad input: a file that is not a ZIP archive", () => {
  const npy = encodeNpy(ndarray(new Float32Array([1])));
  expectNpzError(
    () => parseNpz(npy, "x.npz"),
    "x.npz",
    "not a ZIP archive (no end-of-central-directory record)",
  );
  expectNpzError(
    () => parseNpz(new TextEncoder().encode("hello"), "t.npz"),
    "t.npz",
    "not a ZIP archive",
  );
  expectNpzError(() => parseNpz(new Uint8Array(0), "empty.npz"), "empty.npz", "not a ZIP archive");
  expectNpzError(
    () => parseNpzContent(new Uint8Array(100), "zeros.npz"),
    "zeros.npz",
    "not a ZIP archive",
  );
  assert(!isZip(npy));
  assert(isZip(sampleNpz(false)));
});

Deno.test("npz bad input: truncated archive", () => {
  const b = sampleNpz(true);
  expectNpzError(
    () => parseNpz(b.subarray(0, b.length - 30), "cut.npz"),
    "cut.npz",
    "not a ZIP archive",
  );
  // Cut in the middle of the data, end record kept: offsets point past the data.
  const cut = new Uint8Array([...b.subarray(0, 40), ...b.subarray(cdOffset(b))]);
  expectNpzError(() => parseNpz(cut, "mid.npz"), "mid.npz", "central directory");
});

Deno.test("npz bad input: absurd uncompressed size is refused before allocating", () => {
  // Deflated entry claiming ~4 GiB from a few hundred bytes: the ratio check.
  const z = sampleNpz(true);
  const cd = cdOffset(z);
  setLe32(z, cd + 24, 0xfffffff0);
  const t0 = performance.now();
  expectNpzError(
    () => parseNpz(z, "bomb.npz"),
    "bomb.npz",
    "more than 1032x (a zip bomb?)",
    "a.npy",
  );
  assert(performance.now() - t0 < 200, "refused at once, nothing inflated");
  // Within the ratio but above a configured limit.
  expectNpzError(
    () => parseNpz(sampleNpz(true), "lim.npz", { maxEntrySize: 100 }),
    "lim.npz",
    "above the limit of 100",
    "a.npy",
  );
  // Stored entry whose sizes disagree.
  const s = sampleNpz(false);
  setLe32(s, cdOffset(s) + 24, 0x7fffffff);
  expectNpzError(() => parseNpz(s, "st.npz"), "st.npz", "stored entry declares", "a.npy");
  // ZIP64 extra field declaring 2^40 bytes: above the default 4 GiB limit.
  const z64 = encodeZip([{ name: "a.npy", data: encodeNpy(ndarray(new Float32Array(4))) }], {
    forceZip64: true,
  });
  const cd64 = le32(z64, z64.length - 22 - 20 - 56 + 48);
  new DataView(z64.buffer).setBigUint64(cd64 + 46 + 5 + 4, 2n ** 40n, true);
  expectNpzError(
    () => parseNpz(z64, "z64.npz"),
    "z64.npz",
    "declares 1099511627776 bytes uncompressed, above the limit of 4294967296",
    "a.npy",
  );
  // The total over all entries is bounded too.
  expectNpzError(
    () => parseNpz(sampleNpz(false), "tot.npz", { maxTotalSize: 200 }),
    "tot.npz",
    "above the limit of 200",
  );
});

Deno.test("npz bad input: entry names that escape the folder", () => {
  const data = encodeNpy(ndarray(new Float32Array([1])));
  const cases: [string, string][] = [
    ["../x.npy", "escapes the archive folder"],
    ["a/../../x.npy", "escapes the archive folder"],
    ["/x.npy", "absolute path"],
    ["a\\b.npy", "backslash"],
    ["x\0.npy", "NUL byte"],
    ["C:x.npy", "drive letter"],
  ];
  for (const [name, why] of cases) {
    const zip = encodeZipRaw([{ name, data }]);
    const e = expectNpzError(() => parseNpz(zip, "evil.npz"), "evil.npz", why);
    assert(
      e.entry !== undefined && !e.entry.includes("\0"),
      "entry shown with control characters escaped",
    );
    assertEquals(checkEntryName(name) !== undefined, true);
    // The writer refuses them as well.
    try {
      encodeZip([{ name, data }]);
      throw new Error("encodeZip accepted " + JSON.stringify(name));
    } catch (err) {
      assert(err instanceof ZipError, String(err));
    }
  }
  expectNpzError(
    () => encodeNpz({ "../up": ndarray(new Int8Array(1)) }, { file: "w.npz" }),
    "w.npz",
    "escapes",
    "../up.npy",
  );
  assertEquals(checkEntryName("sub/dir/a..b.npy"), undefined);
});

Deno.test("npz bad input: CRC mismatch", () => {
  const s = sampleNpz(false);
  // Flip one data byte of the first (stored) entry, after its .npy header.
  s[30 + "a.npy".length + 128 + 3] ^= 0xff;
  expectNpzError(() => parseNpz(s, "crc.npz"), "crc.npz", "CRC-32 mismatch", "a.npy");
  const z = sampleNpz(false);
  setLe32(z, cdOffset(z) + 16, le32(z, cdOffset(z) + 16) ^ 1);
  expectNpzError(() => parseNpz(z, "crc2.npz"), "crc2.npz", "CRC-32 mismatch", "a.npy");
});

Deno.test("npz bad input: corrupt deflate stream", () => {
  const z = sampleNpz(true);
  for (let i = 0; i < 8; i++) z[30 + 5 + i] ^= 0x5a;
  const e = expectNpzError(() => parseNpz(z, "def.npz"), "def.npz", "", "a.npy");
  assert(/corrupt deflate data|CRC-32 mismatch|inflated to/.test(e.reason), e.reason);
});

Deno.test("npz bad input: a broken .npy inside the archive names the entry", () => {
  const badNpy = encodeNpy(ndarray(new Float32Array([1, 2, 3])));
  const zip = encodeZip([{ name: "arr_0.npy", data: badNpy.subarray(0, badNpy.length - 2) }]);
  expectNpzError(() => parseNpz(zip, "in.npz"), "in.npz", "data is truncated", "arr_0.npy");
  const c16 = new TextEncoder().encode("\x93NUMPY\x01\x00");
  expectNpzError(
    () => parseNpz(encodeZip([{ name: "arr_0.npy", data: c16 }]), "short.npz"),
    "short.npz",
    "too short",
    "arr_0.npy",
  );
  expectNpzError(
    () => parseNpz(encodeZip([{ name: "notes.txt", data: new Uint8Array(3) }]), "txt.npz"),
    "txt.npz",
    "entry is not a .npy array",
    "notes.txt",
  );
});

Deno.test("npz bad input: unsupported method, encryption, duplicate names", () => {
  const base = () => sampleNpz(false);
  const m = base();
  m[cdOffset(m) + 10] = 12; // bzip2
  expectNpzError(() => parseNpz(m, "m.npz"), "m.npz", "unsupported compression method 12", "a.npy");
  const enc = base();
  enc[cdOffset(enc) + 8] |= 1;
  expectNpzError(() => parseNpz(enc, "e.npz"), "e.npz", "encrypted", "a.npy");
  const data = encodeNpy(ndarray(new Int8Array(1)));
  const dup = encodeZipRaw([{ name: "a.npy", data }, { name: "a.npy", data }]);
  expectNpzError(() => parseNpz(dup, "d.npz"), "d.npz", "duplicate entry name", "a.npy");
});

Deno.test("npz bad input: invalid sparse structure (read and write)", () => {
  const good: CompressedSparseMatrix = {
    format: "csr",
    shape: [2, 3],
    data: ndarray(new Float32Array([1, 2])),
    indices: ndarray(new Int32Array([0, 2])),
    indptr: ndarray(new Int32Array([0, 1, 2])),
  };
  const raw = (m: CompressedSparseMatrix) =>
    encodeNpz({
      indices: m.indices,
      indptr: m.indptr,
      format: bytesArray([m.format], []),
      shape: ndarray(new BigInt64Array([BigInt(m.shape[0]), BigInt(m.shape[1])])),
      data: m.data,
    });
  assertEquals(parseSparseNpz(raw(good), "ok.npz").format, "csr");
  const outOfRange = { ...good, indices: ndarray(new Int32Array([0, 3])) };
  expectNpzError(
    () => parseNpzContent(raw(outOfRange), "r.npz"),
    "r.npz",
    "indices[1] = 3 is outside 0..2",
    "indices.npy",
  );
  expectNpzError(
    () => encodeSparseNpz(outOfRange, { file: "w.npz" }),
    "w.npz",
    "indices[1] = 3 is outside",
  );
  const badPtr = { ...good, indptr: ndarray(new Int32Array([0, 2, 1])) };
  expectNpzError(
    () => parseSparseNpz(raw(badPtr), "p.npz"),
    "p.npz",
    "indptr decreases at 2",
    "indptr.npy",
  );
  const shortPtr = { ...good, indptr: ndarray(new Int32Array([0, 2])) };
  expectNpzError(
    () => parseSparseNpz(raw(shortPtr), "p2.npz"),
    "p2.npz",
    "indptr has 2 entries, expected 3",
  );
  const bsr = encodeNpz({
    format: bytesArray(["bsr"], []),
    shape: ndarray(new BigInt64Array([1n, 1n])),
    data: good.data,
  });
  expectNpzError(() => parseNpzContent(bsr, "b.npz"), "b.npz", "unsupported sparse format 'bsr'");
  expectNpzError(
    () => parseSparseNpz(sampleNpz(false), "dense.npz"),
    "dense.npz",
    "not a scipy sparse archive",
  );
});

// ---------------------------------------------------------------------------
// Files, ZIP layer, speed

Deno.test("npz files: atomic writes, reads, and no leftovers on failure", async () => {
  const dir = await tempDir("npz_test_");
  const q = ndarray(new Float32Array([0.5, -1, 2, 4]), [1, 4]);
  await Effect.runPromise(writeNpz(`${dir}/q.npz`, [q], { compressed: true }));
  const arrays = await Effect.runPromise(readNpz(`${dir}/q.npz`));
  assertEquals([[...arrays.keys()], [...arrays.get("arr_0")!.data]], [["arr_0"], [0.5, -1, 2, 4]]);
  const c = await Effect.runPromise(readNpzContent(`${dir}/q.npz`));
  assertEquals(c.kind, "dense");
  // A failing write (invalid array) leaves the old file alone and no temp file.
  const exit = await Effect.runPromiseExit(
    writeNpz(`${dir}/q.npz`, [{ dtype: "f4", shape: [5], data: new Float32Array(1) }]),
  );
  assert(Exit.isFailure(exit));
  assertEquals([...(await Effect.runPromise(readNpz(`${dir}/q.npz`))).get("arr_0")!.data], [
    0.5,
    -1,
    2,
    4,
  ]);
  const noDir = await Effect.runPromise(Effect.flip(writeNpz(`${dir}/missing/q.npz`, [q])));
  assertEquals([noDir._tag, noDir.file], ["NpzError", `${dir}/missing/q.npz`]);
  assertEquals([...Deno.readDirSync(dir)].map((e) => e.name), ["q.npz"]);
  const missing = await Effect.runPromise(Effect.flip(readNpz(`${dir}/none.npz`)));
  assertEquals(missing.message, `${dir}/none.npz: cannot read file: no such file or folder`);
  await Deno.writeTextFile(`${dir}/bad.npz`, "not a zip");
  const bad = await Effect.runPromise(Effect.flip(readNpzContent(`${dir}/bad.npz`)));
  assertEquals(
    bad.message,
    `${dir}/bad.npz: not a ZIP archive (no end-of-central-directory record)`,
  );
});

Deno.test("zip: round trip with folders and UTF-8 names; CRC-32 check value", () => {
  assertEquals(crc32(new TextEncoder().encode("123456789")), 0xcbf43926);
  const files = [
    { name: "dir/", data: new Uint8Array(0) },
    { name: "dir/Café_0.npz", data: new TextEncoder().encode("x".repeat(5000)), compress: true },
    { name: "plain.bin", data: new Uint8Array([1, 2, 3]) },
  ];
  const zip = encodeZip(files);
  const dirEntries = readZipDirectory(zip, "z.zip");
  assertEquals(dirEntries.map((e) => [e.name, e.method, e.isDirectory, e.uncompressedSize]), [
    ["dir/", 0, true, 0],
    ["dir/Café_0.npz", 8, false, 5000],
    ["plain.bin", 0, false, 3],
  ]);
  const out = unzip(zip, "z.zip");
  assertEquals([...out.keys()], ["dir/Café_0.npz", "plain.bin"]);
  assertEquals(new TextDecoder().decode(out.get("dir/Café_0.npz")), "x".repeat(5000));
  // Prepended bytes (a self-extractor stub) shift every offset: still readable.
  const shifted = new Uint8Array([...new Uint8Array(17), ...zip]);
  assertEquals([...unzip(shifted, "s.zip").get("plain.bin")!], [1, 2, 3]);
});

Deno.test("npz: many small files stay fast (10k-file runs)", () => {
  const q = ndarray(Float32Array.from({ length: 768 }, (_, i) => Math.sin(i)), [1, 768]);
  const t0 = performance.now();
  let sum = 0;
  for (let i = 0; i < 1000; i++) {
    const bytes = encodeNpz([q], { compressed: i % 2 === 0 });
    sum += (parseNpz(bytes, "q.npz").get("arr_0")!.data as Float32Array)[767];
  }
  const ms = performance.now() - t0;
  assertEquals(sum, 1000 * Math.fround(Math.sin(767)));
  // ~0.3 ms per write+read here; the bound only catches pathological regressions.
  assert(ms < 10_000, `1000 npz round trips took ${ms.toFixed(0)} ms`);
});
