/**
 * Tests of io/npy.ts, cross-checked both ways against numpy
 * (tests/py/npz_crosscheck.py): numpy writes every dtype × byte order ×
 * layout × rank and we compare every value; we write the same arrays and
 * numpy loads them, compares every value and checks the bytes against
 * numpy.save.
 */
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import { assert, assertEquals, assertStringIncludes } from "../_assert.ts";
import { python, ROOT } from "../_util.ts";
import { arrayFromSpec, assertMatchesSpec, type Spec, tempDir } from "./_numpy_spec.ts";
import {
  asFloat64,
  bytesArray,
  type Dtype,
  encodeNpy,
  ndarray,
  NpyError,
  npyPreamble,
  parseNpy,
  parseNpyHeader,
  readNpy,
  stringsOf,
  toJsonValues,
  writeNpy,
} from "../../io/npy.ts";

const SCRIPT = `${ROOT}/tests/py/npz_crosscheck.py`;

interface Expected {
  npy: Record<string, Spec>;
  versions: Record<string, Spec>;
  preambles: Record<string, string>;
}

// numpy-written fixtures, generated once for this file into a temp dir.
let fixtures: Promise<{ dir: string; expected: Expected }> | undefined;
function numpyFixtures(): Promise<{ dir: string; expected: Expected }> {
  fixtures ??= (async () => {
    const dir = await tempDir("npy_test_");
    await python([SCRIPT, "gen", dir]);
    const expected = JSON.parse(await Deno.readTextFile(`${dir}/expected.json`)) as Expected;
    return { dir, expected };
  })();
  return fixtures;
}

/** One element in the cross-check encoding (see npz_crosscheck.py). */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** Builds .npy bytes by hand from a header text (for parser variants and bad input). */
function rawNpy(
  header: string,
  data: Uint8Array,
  opts: { align?: number; version?: number } = {},
): Uint8Array {
  const align = opts.align ?? 64;
  const version = opts.version ?? 1;
  const prefix = version === 1 ? 10 : 12;
  let h = header;
  while ((prefix + h.length + 1) % align !== 0) h += " ";
  h += "\n";
  const out = new Uint8Array(prefix + h.length + data.length);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, version, 0]);
  new DataView(out.buffer).setUint16(8, h.length, true);
  if (version !== 1) new DataView(out.buffer).setUint32(8, h.length, true);
  for (let i = 0; i < h.length; i++) out[prefix + i] = h.charCodeAt(i);
  out.set(data, prefix + h.length);
  return out;
}

const f32 = (xs: number[]) => new Uint8Array(new Float32Array(xs).buffer);

/** Runs `f`, expecting an NpyError; returns it. */
function expectNpyError(f: () => unknown, file: string, part: string): NpyError {
  try {
    f();
  } catch (e) {
    assert(e instanceof NpyError, `expected NpyError, got ${e}`);
    assertEquals(e._tag, "NpyError");
    assertEquals(e.file, file);
    assert(e.message.startsWith(`${file}: `), `message names the file: ${e.message}`);
    assertStringIncludes(e.message, part);
    assert(!e.message.includes("\n"), "one line");
    return e;
  }
  throw new Error(`expected an NpyError containing "${part}"`);
}

// ---------------------------------------------------------------------------
// numpy → TypeScript

Deno.test("npy: reads every numpy dtype × byte order × layout × rank with exact values", async () => {
  const { dir, expected } = await numpyFixtures();
  const names = Object.keys(expected.npy);
  // 9 multi-byte dtypes × 2 orders + 3 single-byte, × (6 C shapes + 3 F) + 4 string cases.
  assertEquals(names.length, 21 * 9 + 4);
  for (const name of names) {
    const arr = parseNpy(await Deno.readFile(`${dir}/${name}.npy`), `${name}.npy`);
    assertMatchesSpec(arr, expected.npy[name], name);
  }
  // Spot checks written out, independent of the encoding helper.
  const f = parseNpy(await Deno.readFile(`${dir}/f4_be_3x4_F.npy`), "f");
  assert(f.data instanceof Float32Array);
  assertEquals([...f.data.slice(0, 4)].map(String), ["1.5", "-2.25", "NaN", "Infinity"]);
  assert(Object.is(f.data[5], -0));
  assertEquals(f.data[11], -7);
  const h = parseNpy(await Deno.readFile(`${dir}/f2_le_5_C.npy`), "h");
  assert(h.data instanceof Float16Array);
  assertEquals([...h.data].map(String), ["1.5", "-2.25", "NaN", "Infinity", "-Infinity"]);
  const i8 = parseNpy(await Deno.readFile(`${dir}/i8_be_5_C.npy`), "i");
  assert(i8.data instanceof BigInt64Array);
  assertEquals([...i8.data], [-9223372036854775808n, 9223372036854775807n, 0n, 1n, -1n]);
  const u8 = parseNpy(await Deno.readFile(`${dir}/u8_le_5_C.npy`), "u");
  assertEquals([...u8.data as BigUint64Array], [0n, 18446744073709551615n, 0n, 1n, 2n]);
  const b = parseNpy(await Deno.readFile(`${dir}/b1_na_3x4_F.npy`), "b");
  assertEquals(b.fortranOrder, true);
  assertEquals(toJsonValues(b), [[true, false, true, true], [false, true, true, false], [
    true,
    true,
    false,
    true,
  ]]);
  const s = parseNpy(await Deno.readFile(`${dir}/S3_na_scalar_C.npy`), "s");
  assertEquals([s.dtype, s.shape.length, stringsOf(s)], ["S3", 0, ["csr"]]);
  const u = parseNpy(await Deno.readFile(`${dir}/U4_be_2x2_F.npy`), "u");
  assertEquals(toJsonValues(u), [["a", "bc"], ["def", "ghij"]]);
  const scalar = parseNpy(await Deno.readFile(`${dir}/u2_be_scalar_C.npy`), "x");
  assertEquals([scalar.shape, toJsonValues(scalar)], [[], 0]);
});

Deno.test("npy: re-encoding numpy's files gives numpy's exact bytes (header and data)", async () => {
  const { dir, expected } = await numpyFixtures();
  for (const name of Object.keys(expected.npy)) {
    const bytes = await Deno.readFile(`${dir}/${name}.npy`);
    const again = encodeNpy(parseNpy(bytes, name));
    assert(sameBytes(again, bytes), `${name}: bytes differ`);
  }
  // And from scratch, without the reader: header text and padding exactly as numpy.
  const a = encodeNpy(ndarray(new Float32Array(12), [3, 4]));
  const header = new TextDecoder().decode(a.subarray(10, 128));
  assertEquals(a.length, 128 + 48);
  assertEquals(
    header,
    "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }" + " ".repeat(20 + 38) + "\n",
  );
  assertEquals([...a.subarray(0, 10)], [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, 118, 0]);
  const numpyBytes = await Deno.readFile(`${dir}/f4_le_3x4_C.npy`);
  assert(sameBytes(encodeNpy(arrayFromSpec(expected.npy.f4_le_3x4_C)), numpyBytes));
});

Deno.test("npy: reads format versions 2.0 and 3.0, and writes them byte-identically when asked", async () => {
  const { dir, expected } = await numpyFixtures();
  const names = Object.keys(expected.versions);
  assertEquals(names.length, 9);
  for (const name of names) {
    const spec = expected.versions[name];
    const bytes = await Deno.readFile(`${dir}/${name}.npy`);
    assertEquals(bytes[6], spec.version);
    const arr = parseNpy(bytes, name);
    assertMatchesSpec(arr, spec, name);
    const again = encodeNpy(arr, { version: spec.version as 1 | 2 | 3 });
    assert(sameBytes(again, bytes), `${name}: bytes differ`);
  }
});

Deno.test("npy: picks format 2.0 / 3.0 exactly like numpy when the header needs it", async () => {
  const { dir, expected } = await numpyFixtures();
  for (const [file, header] of Object.entries(expected.preambles)) {
    const numpy = await Deno.readFile(`${dir}/${file}`);
    const mine = npyPreamble(header);
    assert(sameBytes(mine, numpy), `${file}: preamble differs`);
    assertEquals(mine.length % 64, 0);
  }
  assertEquals(npyPreamble(expected.preambles["preamble_v2.bin"])[6], 2);
  assertEquals(npyPreamble(expected.preambles["preamble_v3.bin"])[6], 3);
  // The 2.0 reader path on a header longer than 65535 bytes.
  const bytes = new Uint8Array([
    ...npyPreamble(expected.preambles["preamble_v2.bin"]),
    ...f32([1, 2, 3]),
  ]);
  const arr = parseNpy(bytes, "long.npy");
  assertEquals([arr.dtype, [...arr.shape], [...arr.data]], ["f4", [3], [1, 2, 3]]);
});

// ---------------------------------------------------------------------------
// TypeScript → numpy

Deno.test("npy: every dtype/order/layout/rank written here loads in numpy with exact values and numpy.save's bytes", async () => {
  const { expected } = await numpyFixtures();
  const out = await tempDir("npy_test_");
  const manifest: unknown[] = [];
  for (const [name, spec] of Object.entries(expected.npy)) {
    const file = `ts_${name}.npy`;
    await Effect.runPromise(writeNpy(`${out}/${file}`, arrayFromSpec(spec)));
    manifest.push({ file, kind: "npy", ...spec });
  }
  await Deno.writeTextFile(`${out}/manifest.json`, JSON.stringify(manifest));
  const r = await python([SCRIPT, "verify", out]);
  const verdict = JSON.parse(r.stdout) as { checked: number; failures: string[] };
  assertEquals(verdict.failures, []);
  assertEquals(verdict.checked, Object.keys(expected.npy).length);
});

// ---------------------------------------------------------------------------
// Header parsing variants

Deno.test("npy: header parser tolerates the variants numpy and Python 2 produced", () => {
  const data = f32([1, 2]);
  const variants = [
    `{"descr": "<f4", "shape": (2,), "fortran_order": False}`,
    `{'shape': (2,), 'fortran_order': False, 'descr': '<f4'}`,
    `{'descr': '<f4', 'fortran_order': False, 'shape': (2L,), }`,
    `{'descr': u'<f4', 'fortran_order': False, 'shape': ( 2 , ) , }`,
    `{\t'descr':'<f4','fortran_order':False,'shape':(2,)}`,
    `{'descr': 'f4', 'fortran_order': False, 'shape': (2,), }`,
    `{'descr': '=f4', 'fortran_order': False, 'shape': (2,), }`,
  ];
  for (const h of variants) {
    const arr = parseNpy(rawNpy(h, data), "v.npy");
    assertEquals([arr.dtype, [...arr.shape], [...arr.data]], ["f4", [2], [1, 2]], h);
  }
  // Old numpy aligned the data to 16 bytes only: unaligned copies work too.
  const old = rawNpy(
    `{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }`,
    new Uint8Array(new Float64Array([3, 4]).buffer),
    {
      align: 16,
    },
  );
  assert(old.length % 64 !== 0);
  for (const copy of [true, false]) {
    assertEquals([...parseNpy(old.slice(0), "old.npy", { copy }).data], [3, 4]);
    const shifted = new Uint8Array(old.length + 3).subarray(3);
    shifted.set(old);
    assertEquals([...parseNpy(shifted, "old.npy", { copy }).data], [3, 4]);
  }
  const boolQ = parseNpy(
    rawNpy(`{'descr': '?', 'fortran_order': False, 'shape': (2,), }`, new Uint8Array([1, 0])),
    "q",
  );
  assertEquals([boolQ.dtype, toJsonValues(boolQ)], ["b1", [true, false]]);
  const scalar = parseNpy(
    rawNpy(`{'descr': '<i4', 'fortran_order': True, 'shape': (), }`, new Uint8Array([7, 0, 0, 0])),
    "s",
  );
  assertEquals([scalar.shape, toJsonValues(scalar)], [[], 7]);
  // A 3-d Fortran array comes back in C order.
  const f3 = parseNpy(
    rawNpy(
      `{'descr': '<i4', 'fortran_order': True, 'shape': (2, 2, 2), }`,
      new Uint8Array(new Int32Array([0, 4, 2, 6, 1, 5, 3, 7]).buffer),
    ),
    "f3",
  );
  assertEquals([...f3.data], [0, 1, 2, 3, 4, 5, 6, 7]);
});

// ---------------------------------------------------------------------------
// Bad input: each refused with an NpyError naming the file.

Deno.test("npy bad input: corrupt header text", () => {
  expectNpyError(
    () =>
      parseNpy(
        rawNpy(`{'descr': '<f4', 'fortran_order': Fals, 'shape': (2,)}`, f32([1, 2])),
        "bad.npy",
      ),
    "bad.npy",
    "corrupt header",
  );
  expectNpyError(
    () => parseNpy(rawNpy(`{'descr': '<f4', 'shape': (2,)`, f32([1, 2])), "bad.npy"),
    "bad.npy",
    "corrupt header",
  );
  expectNpyError(
    () => parseNpy(rawNpy(`__import__('os').system('true')`, f32([1, 2])), "evil.npy"),
    "evil.npy",
    "corrupt header",
  );
  expectNpyError(
    () => parseNpy(rawNpy(`[1, 2]`, f32([1, 2])), "list.npy"),
    "list.npy",
    "not a dictionary",
  );
});

Deno.test("npy bad input: header with missing or extra keys", () => {
  expectNpyError(
    () => parseNpy(rawNpy(`{'descr': '<f4', 'shape': (2,), }`, f32([1, 2])), "k.npy"),
    "k.npy",
    "keys are [descr, shape]",
  );
  expectNpyError(
    () =>
      parseNpy(
        rawNpy(`{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}`, f32([1, 2])),
        "k.npy",
      ),
    "k.npy",
    "keys are",
  );
});

Deno.test("npy bad input: invalid shape or fortran_order values", () => {
  expectNpyError(
    () =>
      parseNpy(
        rawNpy(`{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }`, f32([1, 2])),
        "s.npy",
      ),
    "s.npy",
    "negative dimension",
  );
  expectNpyError(
    () =>
      parseNpy(
        rawNpy(`{'descr': '<f4', 'fortran_order': False, 'shape': [2], }`, f32([1, 2])),
        "s.npy",
      ),
    "s.npy",
    "shape is not a tuple",
  );
  expectNpyError(
    () =>
      parseNpy(
        rawNpy(`{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }`, f32([1, 2])),
        "s.npy",
      ),
    "s.npy",
    "fortran_order",
  );
  expectNpyError(
    () =>
      parseNpy(
        rawNpy(
          `{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999), }`,
          f32([1, 2]),
        ),
        "s.npy",
      ),
    "s.npy",
    "too large",
  );
});

Deno.test("npy bad input: not an NPY file (bad magic, too short, unknown version)", () => {
  expectNpyError(
    () => parseNpy(new TextEncoder().encode("PK\x03\x04 not npy at all"), "z.npy"),
    "z.npy",
    "bad magic",
  );
  expectNpyError(
    () => parseNpy(new Uint8Array([0x93, 0x4e]), "short.npy"),
    "short.npy",
    "too short",
  );
  const v4 = rawNpy(`{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }`, f32([1, 2]));
  v4[6] = 4;
  expectNpyError(() => parseNpy(v4, "v4.npy"), "v4.npy", "unsupported NPY format version 4.0");
});

Deno.test("npy bad input: header length beyond the end of the file", () => {
  const b = rawNpy(`{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }`, new Uint8Array(0));
  expectNpyError(
    () => parseNpy(b.subarray(0, 40), "cut.npy"),
    "cut.npy",
    "corrupt header: declares 118 bytes but only 30 follow",
  );
  const v2 = rawNpy(
    `{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }`,
    new Uint8Array(0),
    { version: 2 },
  );
  new DataView(v2.buffer).setUint32(8, 0xfffffff0, true);
  expectNpyError(
    () => parseNpy(v2, "huge.npy"),
    "huge.npy",
    "corrupt header: declares 4294967280 bytes",
  );
});

Deno.test("npy bad input: truncated data", () => {
  const b = encodeNpy(ndarray(new Float64Array([1, 2, 3, 4]), [2, 2]));
  expectNpyError(
    () => parseNpy(b.subarray(0, b.length - 5), "t.npy"),
    "t.npy",
    "data is truncated: shape (2, 2) of <f8 needs 32 bytes, found 27",
  );
});

Deno.test("npy bad input: unsupported dtypes (<c16, object, structured, f16)", () => {
  const mk = (descr: string) =>
    rawNpy(`{'descr': ${descr}, 'fortran_order': False, 'shape': (1,), }`, new Uint8Array(16));
  expectNpyError(() => parseNpy(mk("'<c16'"), "c.npy"), "c.npy", "unsupported dtype '<c16'");
  expectNpyError(() => parseNpy(mk("'|O'"), "o.npy"), "o.npy", "unsupported dtype '|O'");
  expectNpyError(() => parseNpy(mk("'<f16'"), "ld.npy"), "ld.npy", "unsupported dtype '<f16'");
  expectNpyError(() => parseNpy(mk("'<M8[ns]'"), "m.npy"), "m.npy", "unsupported dtype '<M8[ns]'");
  expectNpyError(
    () => parseNpy(mk("[('a', '<i4'), ('b', '<f4')]"), "rec.npy"),
    "rec.npy",
    "structured",
  );
});

Deno.test("npy bad input: element count does not match the data size", () => {
  // Header says 2 elements, data holds 3.
  const b = rawNpy(`{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }`, f32([1, 2, 3]));
  expectNpyError(
    () => parseNpy(b, "m.npy"),
    "m.npy",
    "data size does not match the shape: shape (2,) of <f4 needs 8 bytes, found 12",
  );
  // Header says 3×4, data holds 2.
  const c = rawNpy(`{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`, f32([1, 2]));
  expectNpyError(() => parseNpy(c, "m2.npy"), "m2.npy", "needs 48 bytes, found 8");
});

Deno.test("npy: inconsistent arrays are refused when writing", () => {
  expectNpyError(
    () => encodeNpy({ dtype: "f4", shape: [3], data: new Float32Array(2) }),
    "<memory>",
    "has 3 elements",
  );
  expectNpyError(
    () => encodeNpy({ dtype: "f4", shape: [2], data: new Float64Array(2) }),
    "<memory>",
    "needs a Float32Array",
  );
  expectNpyError(
    () => encodeNpy({ dtype: "c8" as Dtype, shape: [1], data: new Float32Array(2) }),
    "<memory>",
    "unsupported dtype",
  );
  expectNpyError(() => ndarray(new Int32Array(5), [2, 2]), "<memory>", "has 4 elements");
});

// ---------------------------------------------------------------------------
// Effect file API

Deno.test("npy files: write atomically, read back; failures leave nothing behind", async () => {
  const dir = await tempDir("npy_test_");
  const arr = ndarray(new Int16Array([1, -2, 3, -4, 5, -6]), [2, 3], {
    byteOrder: ">",
    fortranOrder: true,
  });
  await Effect.runPromise(writeNpy(`${dir}/a.npy`, arr));
  const back = await Effect.runPromise(readNpy(`${dir}/a.npy`));
  assertEquals([back.dtype, back.byteOrder, back.fortranOrder, [...back.shape], [...back.data]], [
    "i2",
    ">",
    true,
    [2, 3],
    [1, -2, 3, -4, 5, -6],
  ]);
  // Same permissions as any new file (not a temp file's 0600).
  await Deno.writeFile(`${dir}/plain.bin`, new Uint8Array(1));
  const mode = (f: string) => Deno.statSync(`${dir}/${f}`).mode! & 0o777;
  assertEquals(mode("a.npy"), mode("plain.bin"));
  Deno.removeSync(`${dir}/plain.bin`);
  // Overwrite in place: still one file, no temp files.
  await Effect.runPromise(writeNpy(`${dir}/a.npy`, ndarray(new Uint8Array([9]))));
  assertEquals([...(await Effect.runPromise(readNpy(`${dir}/a.npy`))).data], [9]);
  // An invalid array: fails, the old file is untouched, no temp file.
  const bad = await Effect.runPromiseExit(
    writeNpy(`${dir}/a.npy`, { dtype: "f4", shape: [9], data: new Float32Array(1) }),
  );
  assert(Exit.isFailure(bad));
  assertEquals([...(await Effect.runPromise(readNpy(`${dir}/a.npy`))).data], [9]);
  // A folder that does not exist.
  const missing = await Effect.runPromise(Effect.flip(writeNpy(`${dir}/nope/b.npy`, arr)));
  assertEquals([missing._tag, missing.file], ["NpyError", `${dir}/nope/b.npy`]);
  assertStringIncludes(missing.message, "cannot write file");
  const names = [...Deno.readDirSync(dir)].map((e) => e.name);
  assertEquals(names, ["a.npy"]);
  // Reading a missing file.
  const e = await Effect.runPromise(Effect.flip(readNpy(`${dir}/none.npy`)));
  assertEquals(e.message, `${dir}/none.npy: cannot read file: no such file or folder`);
  // A corrupt file.
  await Deno.writeFile(`${dir}/c.npy`, new Uint8Array([1, 2, 3]));
  const c = await Effect.runPromise(Effect.flip(readNpy(`${dir}/c.npy`)));
  assertStringIncludes(c.message, `${dir}/c.npy: file is too short`);
});

Deno.test("npy helpers: bytesArray, stringsOf, asFloat64, toJsonValues", () => {
  const s = bytesArray(["csr", "", "ab"]);
  assertEquals([s.dtype, [...s.shape], stringsOf(s)], ["S3", [3], ["csr", "", "ab"]]);
  assertEquals(bytesArray([""], []).dtype, "S1");
  assertEquals([...asFloat64(ndarray(new BigInt64Array([5n, -2n])))], [5, -2]);
  assertEquals([...asFloat64(ndarray(new Float16Array([0.5, 1.5])))], [0.5, 1.5]);
  assertEquals(toJsonValues(ndarray(new BigUint64Array([2n ** 63n, 7n]))), [
    "9223372036854775808",
    7,
  ]);
  assertEquals(
    toJsonValues(ndarray(new Float32Array([1, NaN, Infinity, -Infinity, 0, 2]), [2, 1, 3])),
    [[[1, "NaN", "Infinity"]], [["-Infinity", 0, 2]]],
  );
  assertEquals(toJsonValues(ndarray(new Float64Array(0), [2, 0])), [[], []]);
});

Deno.test("npy: a header seen before is read the same (recent headers are remembered, not shared)", () => {
  const a = encodeNpy(ndarray(new Float32Array(6), [2, 3]));
  const b = encodeNpy(ndarray(new Float32Array(6), [3, 2])); // a header of the same length
  assertEquals(a.length, b.length);
  for (let round = 0; round < 3; round++) {
    const x = parseNpy(a, "a.npy");
    assertEquals([x.shape, x.dtype], [[2, 3], "f4"]);
    // A caller that changes the shape it got changes nothing for the next read.
    (x.shape as number[])[0] = 99;
    const y = parseNpy(b, "b.npy");
    assertEquals([y.shape, y.dtype], [[3, 2], "f4"]);
    assertEquals(parseNpyHeader(a, "a.npy").shape, [2, 3]);
  }
  // The data size is checked every time, remembered header or not.
  const short = a.slice(0, a.length - 4);
  let message = "";
  try {
    parseNpy(short, "short.npy");
  } catch (e) {
    message = e instanceof NpyError ? e.message : String(e);
  }
  assertEquals(
    message,
    "short.npy: data is truncated: shape (2, 3) of <f4 needs 24 bytes, found 20",
  );
  // One byte of the header changed: parsed afresh (here, refused).
  const bad = a.slice();
  bad[a.indexOf(0x3c /* < */)] = 0x3f; // '<f4' becomes '?f4'
  let refused = "";
  try {
    parseNpy(bad, "bad.npy");
  } catch (e) {
    refused = e instanceof NpyError ? e.message : String(e);
  }
  assertStringIncludes(refused, "bad.npy: ");
  assertStringIncludes(refused, "?f4");
});
