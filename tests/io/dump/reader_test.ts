/**
 * Tests of the dump reader (io/dump/reader.ts): dumps written by numpy and
 * scipy, read from folders and from zips (entries at the root or under one
 * top folder); missing files; sparse/dense mismatches; NaN and infinities
 * naming the row; 1×d questions; phrase lists that are not lists of
 * strings; CSC converted to CSR; unsafe ids and archives refused.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals } from "../../_assert.ts";
import { python } from "../../_util.ts";
import { openDump, openDumpSync } from "../../../io/dump/reader.ts";
import type { ContextDump, MissingFile } from "../../../io/dump/reader.ts";
import { FileError, InputError } from "../../../io/errors.ts";
import { encodeZipRaw } from "../../../io/_zip_internal.ts";
import type { Matrix } from "../../../io/matrix.ts";

const PY_DUMPS = `
import sys, os, json, shutil
import numpy as np, scipy.sparse as sp
d = sys.argv[1]
def folder(name):
    os.makedirs(d + "/" + name, exist_ok=True)
    return d + "/" + name + "/"
c = folder("ctx")
np.savez(c + "T_0.npz", np.array([[1.5, 0, -2.25], [0.5, 4, 8]], dtype="f4"))
json.dump(["a", "b \\u00e9"], open(c + "T_0.json", "w"))
np.savez_compressed(c + "T_1.npz", np.array([[0.5, -1, 2]], dtype="f2"))
json.dump(["c"], open(c + "T_1.json", "w"))
np.savez(c + "A_B_0.npz", np.ones((1, 3), dtype="f4"))
json.dump(["slash"], open(c + "A_B_0.json", "w"))
np.savez(c + "T_2.npz", np.ones((1, 3), dtype="f4"))
json.dump(["only json"], open(c + "T_3.json", "w"))
open(c + "T_0.meta.json", "w").write("{}")
b = folder("bad")
nan = np.zeros((3, 4), dtype="f4"); nan[1, 2] = np.nan
np.savez(b + "N_0.npz", nan); json.dump(["x", "y", "z"], open(b + "N_0.json", "w"))
inf = np.zeros((2, 2), dtype="f2"); inf[1, 0] = -np.inf
np.savez(b + "H_0.npz", inf); json.dump(["x", "y"], open(b + "H_0.json", "w"))
np.savez(b + "P_0.npz", np.ones((2, 3), dtype="f4")); json.dump([1, 2], open(b + "P_0.json", "w"))
np.savez(b + "P_1.npz", np.ones((2, 3), dtype="f4")); json.dump({"a": 1}, open(b + "P_1.json", "w"))
np.savez(b + "P_2.npz", np.ones((2, 3), dtype="f4")); open(b + "P_2.json", "w").write('["a", ')
np.savez(b + "P_3.npz", np.ones((2, 3), dtype="f4")); json.dump(["a", None], open(b + "P_3.json", "w"))
np.savez(b + "P_4.npz", np.ones((2, 3), dtype="f4")); json.dump(["just one"], open(b + "P_4.json", "w"))
np.savez(b + "D_0.npz", np.ones((1, 2, 3), dtype="f4")); json.dump(["x"], open(b + "D_0.json", "w"))
np.savez(b + "I_0.npz", np.ones((1, 3), dtype="i4")); json.dump(["x"], open(b + "I_0.json", "w"))
np.savez(b + "K_0.npz", other=np.ones((1, 3), dtype="f4")); json.dump(["x"], open(b + "K_0.json", "w"))
open(b + "Z_0.npz", "w").write("not a zip"); json.dump(["x"], open(b + "Z_0.json", "w"))
q = folder("q")
np.savez(q + "q1.npz", np.array([[1, 2, 3]], dtype="f4"))
np.savez(q + "q2.npz", np.ones((2, 3), dtype="f4"))
qn = np.ones((1, 3), dtype="f4"); qn[0, 1] = np.inf
np.savez(q + "qinf.npz", qn)
sp.save_npz(q + "qs.npz", sp.csr_matrix(np.array([[0, 2, 0]], dtype="f4")))
s = folder("sparse")
dense = np.array([[0, 1.5, 0, 0], [0, 0, 0, 0], [2, 0, 0, -3]], dtype="f4")
sp.save_npz(s + "S_0.npz", sp.csr_matrix(dense)); json.dump(["p", "q", "r"], open(s + "S_0.json", "w"))
sp.save_npz(s + "S_1.npz", sp.csc_matrix(dense), compressed=False); json.dump(["p", "q", "r"], open(s + "S_1.json", "w"))
bad = sp.csr_matrix(dense); bad.data[2] = np.nan
sp.save_npz(s + "S_2.npz", bad); json.dump(["p", "q", "r"], open(s + "S_2.json", "w"))
sp.save_npz(s + "S_3.npz", sp.coo_matrix(dense)); json.dump(["p", "q", "r"], open(s + "S_3.json", "w"))
# Zips of the context folder: under its top folder, and at the root.
shutil.make_archive(d + "/ctx_top", "zip", d, "ctx")
shutil.make_archive(d + "/ctx_root", "zip", d + "/ctx")
`;

let fixture: Promise<string> | undefined;
/** The dumps, written once for this file's tests (a temporary folder removed at exit). */
function dumps(): Promise<string> {
  fixture ??= (async () => {
    const dir = await Deno.makeTempDir({ prefix: "phraseval-dumpr-" });
    globalThis.addEventListener("unload", () => {
      try {
        Deno.removeSync(dir, { recursive: true });
      } catch { /* already gone */ }
    });
    await python(["-c", PY_DUMPS, dir]);
    return dir;
  })();
  return fixture;
}

/** The InputError `f` throws. */
function inputError(f: () => unknown): InputError {
  try {
    f();
  } catch (e) {
    if (e instanceof InputError) return e;
    throw new Error(`expected an InputError, got ${e}`);
  }
  throw new Error("expected an InputError, nothing was thrown");
}

const dense = (m: Matrix) => {
  assert(m.kind === "dense", "dense");
  return [m.rows, m.cols, m.dtype, [...m.data]];
};
const ctx = (c: ContextDump | MissingFile): ContextDump => {
  assert(!("missing" in c), `missing ${"missing" in c ? c.missing : ""}`);
  return c;
};

Deno.test("dump reader: a folder written by numpy (f32, f16 compressed, / in ids, side files)", async () => {
  const dir = await dumps();
  const src = openDumpSync(`${dir}/ctx`);
  assertEquals([src.kind, src.root], ["folder", ""]);
  const t0 = ctx(src.readContext("T_0"));
  assertEquals(dense(t0.matrix), [2, 3, "f32", [1.5, 0, -2.25, 0.5, 4, 8]]);
  assertEquals([t0.phrases.length, t0.phrases.at(0), t0.phrases.at(1)], [2, "a", "b é"]);
  assertEquals(dense(ctx(src.readContext("T_1")).matrix), [1, 3, "f16", [0.5, -1, 2]]);
  assertEquals(ctx(src.readContext("A/B_0")).phrases.at(0), "slash");
  assertEquals(src.list(), [
    "A_B_0.json",
    "A_B_0.npz",
    "T_0.json",
    "T_0.meta.json",
    "T_0.npz",
    "T_1.json",
    "T_1.npz",
    "T_2.npz",
    "T_3.json",
  ]);
  assertEquals(src.label("T_0.npz"), `${dir}/ctx/T_0.npz`);
  src.close();
});

Deno.test("dump reader: missing files say which one (.npz first), for folders and zips", async () => {
  const dir = await dumps();
  const folder = openDumpSync(`${dir}/ctx`);
  assertEquals(folder.readContext("T_2"), { missing: `${dir}/ctx/T_2.json` });
  assertEquals(folder.readContext("T_3"), { missing: `${dir}/ctx/T_3.npz` });
  assertEquals(folder.readContext("nope_0"), { missing: `${dir}/ctx/nope_0.npz` });
  assertEquals(folder.readQuestion("nope"), { missing: `${dir}/ctx/nope.npz` });
  for (const name of ["ctx_top", "ctx_root"]) {
    const z = openDumpSync(`${dir}/${name}.zip`);
    assertEquals(z.readContext("T_2"), { missing: `${dir}/${name}/T_2.json` });
    assertEquals(z.readContext("T_3"), { missing: `${dir}/${name}/T_3.npz` });
    z.close();
  }
});

Deno.test("dump reader: zips with entries under a top folder or at the root read like the folder", async () => {
  const dir = await dumps();
  const folder = openDumpSync(`${dir}/ctx`);
  for (const [name, root] of [["ctx_top", "ctx/"], ["ctx_root", ""]]) {
    const z = openDumpSync(`${dir}/${name}.zip`);
    assertEquals([z.kind, z.root], ["zip", root]);
    assertEquals(z.list(), folder.list());
    for (const id of ["T_0", "T_1", "A/B_0"]) {
      const a = ctx(z.readContext(id)), b = ctx(folder.readContext(id));
      assertEquals(dense(a.matrix), dense(b.matrix), `${name} ${id}`);
      assertEquals(a.phrases.at(0), b.phrases.at(0));
    }
    assertEquals(z.label("T_0.npz"), `${dir}/${name}.zip:${root}T_0.npz`);
    z.close();
  }
  // The Effect API gives the same.
  const z = await Effect.runPromise(openDump(`${dir}/ctx_top.zip`));
  const c = await Effect.runPromise(z.readContext("T_0"));
  assert(!("missing" in c));
  assertEquals(c.matrix.rows, 2);
  await Effect.runPromise(z.close());
});

Deno.test("dump reader: NaN and infinities name the file and the row", async () => {
  const dir = await dumps();
  const b = openDumpSync(`${dir}/bad`);
  const nan = inputError(() => b.readContext("N_0"));
  assertEquals(
    nan.toString(),
    `${dir}/bad/N_0.npz: row 1: NaN at column 2 (vectors must be finite)`,
  );
  const inf = inputError(() => b.readContext("H_0"));
  assertEquals(
    inf.toString(),
    `${dir}/bad/H_0.npz: row 1: -Infinity at column 0 (vectors must be finite)`,
  );
  const q = openDumpSync(`${dir}/q`);
  assertEquals(
    inputError(() => q.readQuestion("qinf")).toString(),
    `${dir}/q/qinf.npz: row 0: Infinity at column 1 (vectors must be finite)`,
  );
  const s = openDumpSync(`${dir}/sparse`, { sparse: true });
  assertEquals(
    inputError(() => s.readContext("S_2")).toString(),
    `${dir}/sparse/S_2.npz: row 2: NaN (vectors must be finite)`,
  );
});

Deno.test("dump reader: 1×d questions; other shapes are refused on the header", async () => {
  const dir = await dumps();
  const q = openDumpSync(`${dir}/q`);
  assertEquals(dense(q.readQuestion("q1") as Matrix), [1, 3, "f32", [1, 2, 3]]);
  assertEquals(
    inputError(() => q.readQuestion("q2")).toString(),
    `${dir}/q/q2.npz: shape (2, 3); a question vector must be 1×d`,
  );
  assertEquals(
    inputError(() => q.readQuestion("qs")).toString(),
    `${dir}/q/qs.npz: is a scipy sparse matrix; run merge with --sparse`,
  );
  const qs = openDumpSync(`${dir}/q`, { sparse: true }).readQuestion("qs") as Matrix;
  assert(qs.kind === "csr");
  assertEquals([qs.rows, qs.cols, [...qs.data], [...qs.indices], [...qs.indptr]], [
    1,
    3,
    [2],
    [1],
    [0, 1],
  ]);
});

Deno.test("dump reader: sparse vs dense mismatches are bad input naming the file", async () => {
  const dir = await dumps();
  assertEquals(
    inputError(() => openDumpSync(`${dir}/sparse`).readContext("S_0")).toString(),
    `${dir}/sparse/S_0.npz: is a scipy sparse matrix; run merge with --sparse`,
  );
  assertEquals(
    inputError(() => openDumpSync(`${dir}/ctx`, { sparse: true }).readContext("T_0")).toString(),
    `${dir}/ctx/T_0.npz: is a dense array; run merge without --sparse`,
  );
  assertEquals(
    inputError(() => openDumpSync(`${dir}/sparse`, { sparse: true }).readContext("S_3")).toString(),
    `${dir}/sparse/S_3.npz: sparse format coo is not supported (save CSR or CSC)`,
  );
});

Deno.test("dump reader: CSR as written, CSC converted to CSR", async () => {
  const dir = await dumps();
  const s = openDumpSync(`${dir}/sparse`, { sparse: true });
  const want = [3, 4, [1.5, 2, -3], [1, 0, 3], [0, 1, 1, 3]];
  for (const id of ["S_0", "S_1"]) {
    const m = ctx(s.readContext(id)).matrix;
    assert(m.kind === "csr", id);
    assertEquals([m.rows, m.cols, [...m.data], [...m.indices], [...m.indptr]], want, id);
  }
});

Deno.test("dump reader: phrase lists that are not lists of strings, odd matrices", async () => {
  const dir = await dumps();
  const b = openDumpSync(`${dir}/bad`);
  const p0 = inputError(() => ctx(b.readContext("P_0")).phrases.at(0));
  assertEquals(
    p0.toString(),
    `${dir}/bad/P_0.json: phrase 0: not a string (the phrase list must hold strings)`,
  );
  assertEquals(
    inputError(() => b.readContext("P_1")).toString(),
    `${dir}/bad/P_1.json: not a JSON list of phrases`,
  );
  const p2 = inputError(() => b.readContext("P_2"));
  assertEquals([p2.file, p2.message.startsWith("invalid phrase list (")], [
    `${dir}/bad/P_2.json`,
    true,
  ]);
  const p3 = inputError(() => b.readContext("P_3"));
  assertEquals(
    p3.toString(),
    `${dir}/bad/P_3.json: phrase 1: not a string (the phrase list must hold strings)`,
  );
  assertEquals(
    inputError(() => b.readContext("D_0")).toString(),
    `${dir}/bad/D_0.npz: arr_0 has shape (1, 2, 3); expected a 2-d matrix`,
  );
  assertEquals(
    inputError(() => b.readContext("I_0")).toString(),
    `${dir}/bad/I_0.npz: arr_0 has dtype i4; phrase and question vectors must be float32 or float16`,
  );
  assertEquals(
    inputError(() => b.readContext("K_0")).toString(),
    `${dir}/bad/K_0.npz: no arr_0 array (dense dumps are written with numpy.savez(path, matrix))`,
  );
  const z = inputError(() => b.readContext("Z_0"));
  assertEquals([z.file, z.message.startsWith("unreadable npz: ")], [`${dir}/bad/Z_0.npz`, true]);
});

Deno.test("dump reader: rows and phrases that differ are refused on the header, before inflating", async () => {
  const dir = await dumps();
  assertEquals(
    inputError(() => openDumpSync(`${dir}/bad`).readContext("P_4")).toString(),
    `${dir}/bad/P_4.json: 1 phrases but ${dir}/bad/P_4.npz has 2 rows`,
  );
});

Deno.test("dump reader: unsafe ids, hostile zips and missing dumps are refused", async () => {
  const dir = await dumps();
  const src = openDumpSync(`${dir}/ctx`);
  assertEquals(
    inputError(() => src.readContext("..")).toString(),
    `${dir}/ctx: id "..": id names the file ".."; it cannot name a dump file`,
  );
  assertEquals(
    inputError(() => src.readQuestion("a\0b")).toString(),
    `${dir}/ctx: id "a\\u0000b": id contains a NUL byte; it cannot name a dump file`,
  );
  // An entry that could escape its folder refuses the whole archive.
  await Deno.writeFile(
    `${dir}/evil.zip`,
    encodeZipRaw([
      { name: "ctx/T_0.json", data: new TextEncoder().encode('["a"]') },
      { name: "ctx/../../evil.npz", data: new Uint8Array(4) },
    ]),
  );
  let refused: unknown;
  try {
    openDumpSync(`${dir}/evil.zip`);
  } catch (e) {
    refused = e;
  }
  assert(refused instanceof InputError, String(refused));
  assertEquals(
    refused.toString(),
    `${dir}/evil.zip: entry "ctx/../../evil.npz": entry name escapes the archive folder (a '..' segment)`,
  );
  // A CRC mismatch inside a zipped dump names the zip and the entry.
  const zip = encodeZipRaw([{ name: "T_0.json", data: new TextEncoder().encode('["a", "b"]') }]);
  zip[32 + "T_0.json".length] ^= 0xff;
  await Deno.writeFile(`${dir}/crc.zip`, zip);
  const crc = inputError(() => openDumpSync(`${dir}/crc.zip`).readFile("T_0.json"));
  assertEquals([crc.file, crc.where], [`${dir}/crc.zip`, 'entry "T_0.json"']);
  assert(crc.message.includes("CRC-32"), crc.message);
  // A missing dump is a FileError.
  let missing: unknown;
  try {
    openDumpSync(`${dir}/none`);
  } catch (e) {
    missing = e;
  }
  assert(missing instanceof FileError, String(missing));
  assertEquals(missing.toString(), `${dir}/none: no such file or folder`);
  const exit = await Effect.runPromiseExit(openDump(`${dir}/none`));
  assert(exit._tag === "Failure");
});
