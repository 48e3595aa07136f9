/**
 * Tests of the dump writer (io/dump/writer.ts, io/dump/names.ts): file
 * names (`/` → `_`, unsafe ids refused, two ids sharing a name refused),
 * atomic writes (no temporary file left, no half-written file), and what
 * numpy and scipy read back from every format (savez / savez_compressed,
 * float32 / float16, sparse CSR), cross-checked with python3.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import { assert, assertEquals } from "../../_assert.ts";
import { listDir, python } from "../../_util.ts";
import {
  contextDumpComplete,
  encodeMatrix,
  metadataJson,
  phrasesJson,
  questionDumpComplete,
  writeContextDump,
  writeQuestionDump,
} from "../../../io/dump/writer.ts";
import { dumpStem, MAX_STEM_BYTES, StemRegistry, unsafeIdReason } from "../../../io/dump/names.ts";
import { FileError, type InputError } from "../../../io/errors.ts";
import { readZipDirectory } from "../../../io/zip.ts";
import type { EncodedContext, Matrix } from "../../../encoders/types.ts";

const dense = (rows: number, cols: number, values: number[]): Matrix => ({
  kind: "dense",
  rows,
  cols,
  dtype: "f32",
  data: new Float32Array(values),
});

const CONTEXT: EncodedContext = {
  id: "AC/DC_3",
  phrases: [
    { text: "Back in Black", start: 0, end: 13 },
    { text: "naïve “quote” 😀", start: 14, end: 30 },
  ],
  matrix: dense(2, 3, [1.5, 0, -2.25, 0, 0, 3.0517578125e-5]),
};

async function withDir(f: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-dumpw-" });
  try {
    await f(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("dump names: / becomes _, unsafe ids are refused, not renamed", () => {
  assertEquals(dumpStem("AC/DC_3"), "AC_DC_3");
  assertEquals(dumpStem("a/b/c_0"), "a_b_c_0");
  assertEquals(dumpStem("..x_0"), "..x_0");
  // Safe once '/' is '_': '..' is refused only as a whole stem.
  assertEquals(dumpStem("../etc_0"), ".._etc_0");
  assertEquals(dumpStem("a/../b_0"), "a_.._b_0");
  assertEquals(unsafeIdReason(".."), 'id names the file ".."');
  assertEquals(unsafeIdReason("."), 'id names the file "."');
  assertEquals(unsafeIdReason("a\0b_0"), "id contains a NUL byte");
  // A lone surrogate has no UTF-8 form (its file would be named with U+FFFD, not the id).
  assertEquals(
    unsafeIdReason("\ud800x"),
    "id is not valid Unicode (it holds a lone surrogate)",
  );
  assertEquals(unsafeIdReason("\ud83d\ude00x"), undefined); // a pair is a character
  // A backslash is a character of a file name here, not a separator.
  assertEquals(dumpStem("c\\d"), "c\\d");
  assertEquals(unsafeIdReason(""), "empty id");
  assertEquals(MAX_STEM_BYTES, 231);
  const long = "é".repeat(115) + "x"; // 231 bytes: allowed for a paragraph
  assertEquals(unsafeIdReason(long, "paragraph"), undefined);
  assertEquals(
    unsafeIdReason(long + "x", "paragraph"),
    "id is 232 bytes; a paragraph id may have at most 231 (255 less the temporary name of <id>.meta.json)",
  );
  assertEquals(unsafeIdReason(long + "x".repeat(6), "question"), undefined); // 237
  assertEquals(
    unsafeIdReason(long + "x".repeat(7), "question"),
    "id is 238 bytes; a question id may have at most 237 (255 less the temporary name of <id>.npz)",
  );
  let threw = "";
  try {
    dumpStem("..");
  } catch (e) {
    threw = (e as Error).message;
  }
  assertEquals(threw, `"..": id names the file ".."`);
});

Deno.test("dump names: two ids sharing a file name are caught by StemRegistry", () => {
  const reg = new StemRegistry();
  assertEquals(reg.claim("A/B_0"), undefined);
  assertEquals(reg.claim("A/B_0"), undefined); // the same id again is fine
  assertEquals(reg.claim("A_B_0"), "A/B_0");
  assertEquals(reg.claim("C_0"), undefined);
});

Deno.test("dump writer: a paragraph's files, names and phrase list bytes", async () => {
  await withDir(async (dir) => {
    assertEquals(await Effect.runPromise(contextDumpComplete(dir, CONTEXT.id)), false);
    await Effect.runPromise(
      writeContextDump(
        dir,
        CONTEXT,
        { sparse: false, compressed: false },
        "Back in Black naïve “quote” 😀",
      ),
    );
    assertEquals(await listDir(dir), ["AC_DC_3.json", "AC_DC_3.meta.json", "AC_DC_3.npz"]);
    assertEquals(await Effect.runPromise(contextDumpComplete(dir, CONTEXT.id)), true);
    // Python json.dump of a list of str (ensure_ascii, ", " separators).
    assertEquals(
      await Deno.readTextFile(`${dir}/AC_DC_3.json`),
      '["Back in Black", "na\\u00efve \\u201cquote\\u201d \\ud83d\\ude00"]',
    );
    assertEquals(phrasesJson([]), "[]");
    // Metadata offsets are code points (the emoji is one).
    const meta = JSON.parse(await Deno.readTextFile(`${dir}/AC_DC_3.meta.json`));
    assertEquals(meta.offsets, [[0, 13], [14, 29]]);
    assertEquals(
      JSON.parse(metadataJson("x", "😀ab", {
        id: "x",
        phrases: [{ text: "ab", start: 2, end: 4 }],
        matrix: dense(1, 1, [1]),
      })).offsets,
      [[1, 3]],
    );
    // Questions: one file.
    await Effect.runPromise(
      writeQuestionDump(dir, { id: "q/1", vector: dense(1, 3, [1, 2, 3]) }, {
        sparse: false,
        compressed: true,
      }),
    );
    assertEquals(await Effect.runPromise(questionDumpComplete(dir, "q/1")), true);
    assert((await listDir(dir)).includes("q_1.npz"));
  });
});

/** Runs a write, returning how it was refused (or "ok"). */
async function attempt(
  build: () => Effect.Effect<void, FileError | InputError>,
): Promise<string> {
  let eff: Effect.Effect<void, FileError | InputError>;
  try {
    eff = build();
  } catch (e) {
    return `thrown: ${(e as Error).message}`;
  }
  const exit = await Effect.runPromiseExit(eff);
  if (Exit.isSuccess(exit)) return "ok";
  const r = exit.cause.reasons[0];
  return r._tag === "Fail" ? `failed: ${r.error}` : `defect: ${r._tag === "Die" ? r.defect : r}`;
}

const UNSAFE = ["..", "a\0b_0", "x".repeat(238)];
const FMT = { sparse: false, compressed: false };

Deno.test("dump writer: unsafe ids are refused and write nothing", async () => {
  await withDir(async (dir) => {
    for (const id of UNSAFE) {
      const c = await attempt(() => writeContextDump(dir, { ...CONTEXT, id }, FMT));
      const cWhy = unsafeIdReason(id, "paragraph")!;
      assert(c !== "ok" && c.includes(cWhy), `${JSON.stringify(id)}: ${c}`);
      const q = await attempt(() => writeQuestionDump(dir, { id, vector: dense(1, 1, [1]) }, FMT));
      const qWhy = unsafeIdReason(id, "question")!;
      assert(q !== "ok" && q.includes(qWhy), `${JSON.stringify(id)}: ${q}`);
    }
    // 232 bytes: a question id, not a paragraph id (its <id>.meta.json temporary name is too long).
    const id = "x".repeat(232);
    assert((await attempt(() => writeContextDump(dir, { ...CONTEXT, id }, FMT))) !== "ok");
    assertEquals(await listDir(dir), []);
    const q = await attempt(() => writeQuestionDump(dir, { id, vector: dense(1, 1, [1]) }, FMT));
    assertEquals([q, await listDir(dir)], ["ok", [`${id}.npz`]]);
    // A backslash in an id: its files are written under that name (it was taken for a folder).
    await Deno.remove(`${dir}/${id}.npz`);
    const b = await attempt(() => writeContextDump(dir, { ...CONTEXT, id: "c\\d_0" }, FMT));
    const bq = await attempt(() =>
      writeQuestionDump(dir, { id: "c\\d", vector: dense(1, 1, [1]) }, FMT)
    );
    assertEquals([b, bq], ["ok", "ok"]);
    assertEquals(await listDir(dir), ["c\\d.npz", "c\\d_0.json", "c\\d_0.npz"]);
  });
});

Deno.test({
  name: "dump writer: unsafe ids fail as typed errors (not a throw or a defect)",
  async fn() {
    await withDir(async (dir) => {
      for (const id of UNSAFE) {
        const c = await attempt(() => writeContextDump(dir, { ...CONTEXT, id }, FMT));
        assert(
          c.startsWith(`failed: ${dir}: id ${JSON.stringify(id)}: cannot name a dump file`),
          c,
        );
        const q = await attempt(() =>
          writeQuestionDump(dir, { id, vector: dense(1, 1, [1]) }, FMT)
        );
        assert(
          q.startsWith(`failed: ${dir}: id ${JSON.stringify(id)}: cannot name a dump file`),
          q,
        );
      }
      assertEquals(await listDir(dir), []);
    });
  },
});

Deno.test("dump writer: writes are atomic (no temporary files, a failed write leaves nothing)", async () => {
  await withDir(async (dir) => {
    const fmt = { sparse: false, compressed: false };
    await Effect.runPromise(writeContextDump(dir, CONTEXT, fmt));
    const before = await Deno.readFile(`${dir}/AC_DC_3.npz`);
    // Rewriting gives the same bytes (fixed zip times) and leaves no .tmp behind.
    await Effect.runPromise(writeContextDump(dir, CONTEXT, fmt));
    assertEquals(await Deno.readFile(`${dir}/AC_DC_3.npz`), before);
    assertEquals(await listDir(dir), ["AC_DC_3.json", "AC_DC_3.npz"]);
    // A smaller matrix replaces the file whole.
    await Effect.runPromise(writeContextDump(dir, { ...CONTEXT, matrix: dense(1, 1, [7]) }, fmt));
    assert((await Deno.readFile(`${dir}/AC_DC_3.npz`)).length < before.length);
    // A folder that does not exist: a FileError naming the file, nothing written.
    const exit = await Effect.runPromiseExit(writeContextDump(`${dir}/nope`, CONTEXT, fmt));
    assert(Exit.isFailure(exit));
    const reason = exit.cause.reasons[0];
    assert(reason._tag === "Fail" && reason.error instanceof FileError, String(exit));
    assertEquals(reason.error.file, `${dir}/nope/AC_DC_3.json`);
    assert(reason.error.message.startsWith("cannot write file: "), reason.error.message);
    // A read-only folder: the old files stay as they were, no temporary file.
    if (Deno.build.os !== "windows" && Deno.uid() !== 0) {
      await Deno.chmod(dir, 0o555);
      try {
        const ro = await Effect.runPromiseExit(writeContextDump(dir, CONTEXT, fmt));
        assert(Exit.isFailure(ro));
      } finally {
        await Deno.chmod(dir, 0o755);
      }
      assertEquals(await listDir(dir), ["AC_DC_3.json", "AC_DC_3.npz"]);
    }
  });
});

Deno.test("dump writer: a CSR matrix cannot be written dense", () => {
  const csr: Matrix = {
    kind: "csr",
    rows: 1,
    cols: 4,
    data: new Float32Array([1]),
    indices: new Int32Array([2]),
    indptr: new Int32Array([0, 1]),
  };
  let msg = "";
  try {
    encodeMatrix(csr, { sparse: false, compressed: false });
  } catch (e) {
    msg = (e as Error).message;
  }
  assertEquals(msg, "a sparse matrix cannot be written dense");
});

const PY_READ = `
import sys, json, zipfile
import numpy as np, scipy.sparse as sp
out = {}
d = sys.argv[1]
for name in sorted(__import__("os").listdir(d)):
    p = d + "/" + name
    with zipfile.ZipFile(p) as z:
        methods = sorted({i.compress_type for i in z.infolist()})
        keys = sorted(z.namelist())
    if "indptr.npy" in keys:
        m = sp.load_npz(p)
        out[name] = {"format": m.format, "shape": list(m.shape), "dtype": str(m.dtype),
                     "dense": m.toarray().tolist(), "methods": methods, "keys": keys,
                     "indices": str(m.indices.dtype)}
    else:
        a = np.load(p)["arr_0"]
        out[name] = {"shape": list(a.shape), "dtype": str(a.dtype), "dense": a.astype("f8").tolist(),
                     "methods": methods, "keys": keys}
print(json.dumps(out))
`;

Deno.test("dump writer: numpy and scipy read back every format exactly", async () => {
  await withDir(async (dir) => {
    const m = dense(2, 3, [1.5, 0, -2.25, 0, 0, 3.0517578125e-5]);
    const formats = {
      "savez.npz": { sparse: false, compressed: false },
      "savez_compressed.npz": { sparse: false, compressed: true },
      "f16.npz": { sparse: false, compressed: false, dtype: "f16" as const },
      "f16_compressed.npz": { sparse: false, compressed: true, dtype: "f16" as const },
      "csr.npz": { sparse: true, compressed: false },
      "csr_compressed.npz": { sparse: true, compressed: true },
    };
    for (const [name, fmt] of Object.entries(formats)) {
      await Deno.writeFile(`${dir}/${name}`, encodeMatrix(m, fmt));
      // Our own zip reader agrees on the entry methods.
      const entries = readZipDirectory(await Deno.readFile(`${dir}/${name}`), name);
      assert(entries.every((e) => e.method === (fmt.compressed ? 8 : 0)), name);
    }
    // A float16 matrix written as f32 is widened.
    await Deno.writeFile(
      `${dir}/f16_as_f32.npz`,
      encodeMatrix({
        kind: "dense",
        rows: 2,
        cols: 3,
        dtype: "f16",
        data: new Float16Array(m.data as Float32Array),
      }, {
        sparse: false,
        compressed: false,
        dtype: "f32",
      }),
    );
    const r = JSON.parse((await python(["-c", PY_READ, dir])).stdout);
    const values = [[1.5, 0, -2.25], [0, 0, 3.0517578125e-5]];
    const denseWant = (dtype: string, methods: number[]) => ({
      shape: [2, 3],
      dtype,
      dense: values,
      methods,
      keys: ["arr_0.npy"],
    });
    const csrWant = (methods: number[]) => ({
      format: "csr",
      shape: [2, 3],
      dtype: "float32",
      dense: values,
      methods,
      keys: ["data.npy", "format.npy", "indices.npy", "indptr.npy", "shape.npy"],
      indices: "int32",
    });
    assertEquals(r, {
      "csr.npz": csrWant([0]),
      "csr_compressed.npz": csrWant([8]),
      "f16.npz": denseWant("float16", [0]),
      "f16_as_f32.npz": denseWant("float32", [0]),
      "f16_compressed.npz": denseWant("float16", [8]),
      "savez.npz": denseWant("float32", [0]),
      "savez_compressed.npz": denseWant("float32", [8]),
    });
  });
});
