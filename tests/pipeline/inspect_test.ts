/**
 * Tests of pipeline/inspect.ts: the library's `inspectFile` (`io/inspect.ts`) and the
 * script's command-line conventions (help, exit codes, one error line).
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals, assertStringIncludes } from "../_assert.ts";
import { python, runStage } from "../_util.ts";
import { bytesArray, encodeNpy, ndarray } from "../../io/npy.ts";
import { encodeNpz, encodeSparseNpz } from "../../io/npz.ts";
import { inspectFile } from "../../io/inspect.ts";

const tempDirs: string[] = [];
globalThis.addEventListener("unload", () => {
  for (const d of tempDirs) {
    try {
      Deno.removeSync(d, { recursive: true });
    } catch { /* already gone */ }
  }
});

let fixtures: Promise<string> | undefined;
/** A folder of small files: TS-written npy/npz, a scipy-written CSR, broken ones. */
function files(): Promise<string> {
  fixtures ??= (async () => {
    const dir = await Deno.makeTempDir({ prefix: "inspect_test_" });
    tempDirs.push(dir);
    await Deno.writeFile(
      `${dir}/m.npy`,
      encodeNpy(
        ndarray(new Int16Array([1, -2, 3, -4, 5, -6]), [2, 3], {
          byteOrder: ">",
          fortranOrder: true,
        }),
      ),
    );
    await Deno.writeFile(
      `${dir}/dense.npz`,
      encodeNpz({
        emb: ndarray(new Float32Array([0.5, NaN, Infinity, -Infinity]), [2, 2]),
        half: ndarray(new Float16Array([1.5, -0.25])),
        big: ndarray(new BigUint64Array([2n ** 64n - 1n, 3n])),
        flag: ndarray(new Uint8Array([1]), [], { dtype: "b1" }),
        name: bytesArray(["abc"], []),
      }, { compressed: true }),
    );
    await Deno.writeFile(
      `${dir}/csc.npz`,
      encodeSparseNpz({
        format: "csc",
        shape: [3, 2],
        data: ndarray(new Float64Array([1, 2, 3])),
        indices: ndarray(new Int32Array([0, 2, 1])),
        indptr: ndarray(new Int32Array([0, 2, 3])),
        isArray: true,
      }),
    );
    await python([
      "-c",
      "import sys, numpy as np, scipy.sparse as sp; " +
      "sp.save_npz(sys.argv[1], sp.csr_matrix(np.array([[0, 1.5, 0], [2.5, 0, 0]], dtype=np.float32)))",
      `${dir}/scipy_csr.npz`,
    ]);
    const good = encodeNpz({ a: ndarray(new Float64Array(16).fill(2)) });
    good[30 + "a.npy".length + 128 + 1] ^= 0xff; // stored data byte → CRC mismatch
    await Deno.writeFile(`${dir}/crc.npz`, good);
    await Deno.writeTextFile(`${dir}/text.npz`, "definitely not a zip\n");
    await Deno.writeFile(
      `${dir}/trunc.npy`,
      encodeNpy(ndarray(new Float32Array(8))).subarray(0, 140),
    );
    return dir;
  })();
  return fixtures;
}

const run = (path: string, values = false) => Effect.runPromise(inspectFile(path, { values }));

Deno.test("inspectFile: .npy gives dtype, shape and file order; values in row-major order", async () => {
  const dir = await files();
  assertEquals(await run(`${dir}/m.npy`), { dtype: ">i2", shape: [2, 3], fortran_order: true });
  assertEquals(await run(`${dir}/m.npy`, true), {
    dtype: ">i2",
    shape: [2, 3],
    fortran_order: true,
    values: [[1, -2, 3], [-4, 5, -6]],
  });
});

Deno.test("inspectFile: dense .npz keyed by array name, with JSON-safe values", async () => {
  const dir = await files();
  assertEquals(await run(`${dir}/dense.npz`), {
    emb: { dtype: "<f4", shape: [2, 2], fortran_order: false },
    half: { dtype: "<f2", shape: [2], fortran_order: false },
    big: { dtype: "<u8", shape: [2], fortran_order: false },
    flag: { dtype: "|b1", shape: [], fortran_order: false },
    name: { dtype: "|S3", shape: [], fortran_order: false },
  });
  const v = await run(`${dir}/dense.npz`, true) as Record<string, { values: unknown }>;
  assertEquals(v.emb.values, [[0.5, "NaN"], ["Infinity", "-Infinity"]]);
  assertEquals(v.half.values, [1.5, -0.25]);
  assertEquals(v.big.values, ["18446744073709551615", 3]);
  assertEquals(v.flag.values, true);
  assertEquals(v.name.values, "abc");
});

Deno.test("inspectFile: scipy sparse files get a 'sparse' summary", async () => {
  const dir = await files();
  const csr = await run(`${dir}/scipy_csr.npz`, true) as Record<string, unknown>;
  assertEquals(csr.sparse, {
    format: "csr",
    shape: [2, 3],
    nnz: 2,
    dtype: "<f4",
    index_dtype: "<i4",
    is_array: false,
  });
  assertEquals(Object.keys(csr), ["indices", "indptr", "format", "shape", "data", "sparse"]);
  assertEquals((csr.data as { values: unknown }).values, [1.5, 2.5]);
  assertEquals((csr.format as { values: unknown }).values, "csr");
  const csc = await run(`${dir}/csc.npz`) as Record<string, unknown>;
  assertEquals(csc.sparse, {
    format: "csc",
    shape: [3, 2],
    nnz: 3,
    dtype: "<f8",
    index_dtype: "<i4",
    is_array: true,
  });
  assertEquals(csc._is_array, { dtype: "|b1", shape: [], fortran_order: false });
});

Deno.test("inspectFile: broken files fail with typed errors naming the file and entry", async () => {
  const dir = await files();
  const crc = await Effect.runPromise(Effect.flip(inspectFile(`${dir}/crc.npz`)));
  assertEquals([crc._tag, crc.file, crc.entry], ["NpzError", `${dir}/crc.npz`, "a.npy"]);
  assertStringIncludes(crc.message, "CRC-32 mismatch");
  const t = await Effect.runPromise(Effect.flip(inspectFile(`${dir}/trunc.npy`)));
  assertEquals([t._tag, t.file], ["NpyError", `${dir}/trunc.npy`]);
  assertStringIncludes(t.message, "data is truncated");
});

// ---------------------------------------------------------------------------
// The script

Deno.test("inspect CLI: --help prints usage on stdout and exits 0", async () => {
  const r = await runStage("pipeline/inspect.ts", ["--help"], { permissions: ["--allow-read"] });
  assertEquals(r.code, 0);
  assertStringIncludes(r.stdout, "Usage: ./phraseval inspect file");
  assertStringIncludes(r.stdout, "--values");
  assertEquals(r.stderr, "");
});

Deno.test("inspect CLI: prints one line of JSON and exits 0 (read permission only)", async () => {
  const dir = await files();
  const r = await runStage("pipeline/inspect.ts", [`${dir}/m.npy`, "--values"], {
    permissions: [`--allow-read=${dir}`],
  });
  assertEquals([r.code, r.stderr], [0, ""]);
  assertEquals(r.stdout.trimEnd().split("\n").length, 1);
  assertEquals(JSON.parse(r.stdout), await run(`${dir}/m.npy`, true));
  const s = await runStage("pipeline/inspect.ts", [`${dir}/scipy_csr.npz`], {
    permissions: ["--allow-read"],
  });
  assertEquals(s.code, 0);
  assertEquals(JSON.parse(s.stdout).sparse.format, "csr");
});

Deno.test("inspect CLI: a corrupt or unreadable file exits 2 with exactly one stderr line", async () => {
  const dir = await files();
  const cases: [string, string][] = [
    [`${dir}/crc.npz`, `inspect: ${dir}/crc.npz: a.npy: CRC-32 mismatch`],
    [
      `${dir}/text.npz`,
      `inspect: ${dir}/text.npz: not a ZIP archive (no end-of-central-directory record)`,
    ],
    [`${dir}/trunc.npy`, `inspect: ${dir}/trunc.npy: data is truncated`],
    [`${dir}/none.npz`, `inspect: ${dir}/none.npz: cannot read file: no such file`],
  ];
  for (const [path, line] of cases) {
    const r = await runStage("pipeline/inspect.ts", [path], { permissions: ["--allow-read"] });
    assertEquals(r.code, 2, path);
    assertEquals(r.stdout, "");
    const lines = r.stderr.trimEnd().split("\n");
    assertEquals(lines.length, 1, r.stderr);
    assert(lines[0].startsWith(line), `${lines[0]} should start with ${line}`);
    assert(!r.stderr.includes("    at "), "no stack trace");
  }
});

Deno.test("inspect CLI: --debug adds the full cause", async () => {
  const dir = await files();
  const r = await runStage("pipeline/inspect.ts", [`${dir}/crc.npz`, "--debug"], {
    permissions: ["--allow-read"],
  });
  assertEquals(r.code, 2);
  assert(r.stderr.trimEnd().split("\n").length > 1, r.stderr);
  assertStringIncludes(r.stderr, `inspect: ${dir}/crc.npz: a.npy: CRC-32 mismatch`);
});

Deno.test("inspect CLI: bad usage exits 2 with one line", async () => {
  for (const args of [[], ["--nope", "x.npy"], ["a.npy", "b.npy"]]) {
    const r = await runStage("pipeline/inspect.ts", args, { permissions: ["--allow-read"] });
    assertEquals(r.code, 2, args.join(" "));
    assertEquals(r.stdout, "");
    assertEquals(r.stderr.trimEnd().split("\n").length, 1, r.stderr);
    assert(r.stderr.startsWith("inspect: "), r.stderr);
  }
});

Deno.test("inspect CLI: --max-bytes bounds what an .npz may need; past it, one line, exit 2", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/a.npz`;
    await Deno.writeFile(
      path,
      encodeNpz({ a: ndarray(new Float32Array(8), [2, 4]), b: ndarray(new Float32Array(8), [8]) }),
    );
    // Each entry: a 128-byte header and 32 bytes of data.
    const ok = await runStage("pipeline/inspect.ts", [path, "--max-bytes", "320"]);
    assertEquals(ok.code, 0, ok.stderr);
    const r = await runStage("pipeline/inspect.ts", [path, "--max-bytes", "319"]);
    assertEquals([r.code, r.stdout, r.stderr], [
      2,
      "",
      `inspect: ${path}: b.npy: the arrays need 320 bytes so far, more than the 319 inspect ` +
      "inflates (refused before inflating; --max-bytes)\n",
    ]);
    const bad = await runStage("pipeline/inspect.ts", [path, "--max-bytes", "0"]);
    assertEquals(bad.code, 2, bad.stderr);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("inspect CLI: an .npy is described from its header alone; its values, and an .npz, only up to --max-bytes", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // A 5 GB array (a sparse file: no disk is used): more than one buffer can hold, so reading
    // the file whole, as inspect did, could not describe it.
    const big = `${dir}/big.npy`;
    await Deno.writeFile(
      big,
      npyPreambleOf("{'descr': '<f4', 'fortran_order': False, 'shape': (1250000, 1024), }", 128),
    );
    await Deno.truncate(big, 128 + 1250000 * 1024 * 4);
    const ok = await runStage("pipeline/inspect.ts", [big], { permissions: ["--allow-read"] });
    assertEquals([ok.code, ok.stderr], [0, ""]);
    assertEquals(JSON.parse(ok.stdout), {
      dtype: "<f4",
      shape: [1250000, 1024],
      fortran_order: false,
    });
    const values = await runStage("pipeline/inspect.ts", [big, "--values"]);
    assertEquals([values.code, values.stdout, values.stderr], [
      2,
      "",
      `inspect: ${big}: the array needs 5120000128 bytes, more than the 268435456 inspect reads ` +
      "for its values (refused before reading; --max-bytes)\n",
    ]);
    // The file's size is checked against the header, as when the data was read.
    await Deno.truncate(big, 128 + 1250000 * 1024 * 4 - 1);
    const cut = await runStage("pipeline/inspect.ts", [big]);
    assertEquals([cut.code, cut.stderr], [
      2,
      `inspect: ${big}: data is truncated: shape (1250000, 1024) of <f4 needs 5120000000 bytes, ` +
      "found 5119999999\n",
    ]);
    // A header longer than the first 4 KiB read.
    const long = `${dir}/long.npy`;
    const bytes = new Uint8Array(10_000 + 6);
    bytes.set(npyPreambleOf("{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }", 10_000));
    bytes.set(new Uint8Array(new Int16Array([1, -2, 3]).buffer), 10_000);
    await Deno.writeFile(long, bytes);
    const l = await runStage("pipeline/inspect.ts", [long, "--values"]);
    assertEquals([l.code, l.stderr], [0, ""]);
    assertEquals(JSON.parse(l.stdout), {
      dtype: "<i2",
      shape: [3],
      fortran_order: false,
      values: [1, -2, 3],
    });
    // An .npz file larger than --max-bytes (and 1 MiB for the zip's records): refused unread.
    const npz = `${dir}/big.npz`;
    await Deno.writeTextFile(npz, "PK");
    await Deno.truncate(npz, (1 << 20) + 1001);
    const z = await runStage("pipeline/inspect.ts", [npz, "--max-bytes", "1000"]);
    assertEquals([z.code, z.stderr], [
      2,
      `inspect: ${npz}: the file is 1049577 bytes, more than inspect reads of an .npz ` +
      "(--max-bytes 1000, and 1048576 for the zip's own records)\n",
    ]);
    // Neither an .npy nor an .npz, by content or by name.
    const other = `${dir}/split.parquet`;
    await Deno.writeTextFile(other, "PAR1....PAR1");
    const o = await runStage("pipeline/inspect.ts", [other]);
    assertEquals([o.code, o.stderr], [
      2,
      `inspect: ${other}: not an .npy or .npz file (no NPY magic, no ZIP signature at its start)\n`,
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** An NPY 1.0 preamble of `total` bytes: magic, version, length, the header padded with spaces. */
function npyPreambleOf(header: string, total: number): Uint8Array {
  const text = header + " ".repeat(total - 10 - header.length - 1) + "\n";
  const out = new Uint8Array(total);
  out.set([0x93, ...new TextEncoder().encode("NUMPY"), 1, 0, text.length & 0xff, text.length >> 8]);
  out.set(new TextEncoder().encode(text), 10);
  return out;
}
