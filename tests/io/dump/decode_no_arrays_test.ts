/**
 * Dump `.npz` files that do not hold the arrays their mode reads
 * (`io/dump/decode.ts`): an archive with no arrays at all (`numpy.savez(path)`
 * with none, a zip with no entries, a zip of a folder only) says so in both
 * modes, never "is a dense array" with `--sparse`; with `--sparse`, an
 * archive of other arrays, or of a sparse matrix without one of its arrays,
 * names what it holds and what is missing, and one whose `format` is not a
 * string says that. The archives are made here, by numpy and by hand.
 *
 * @module
 */
import { assertEquals } from "../../_assert.ts";
import { python, testTempDir } from "../../_util.ts";
import { decodeDumpMatrix, openDumpSync } from "../../../io/dump/reader.ts";
import { encodeZip } from "../../../io/zip.ts";

const TMP = testTempDir("phraseval-decode-no-arrays-");

await python([
  "-c",
  `
import sys, json
import numpy as np
d = sys.argv[1]
np.savez(d + "/empty.npz")
np.savez_compressed(d + "/empty_compressed.npz")
np.savez(d + "/other.npz", x=np.ones((1, 3), dtype="f4"))
np.savez(d + "/no_data.npz", format=np.array("csr"), shape=np.array([1, 3]),
         indices=np.array([0], dtype="i4"), indptr=np.array([0, 1], dtype="i4"))
np.savez(d + "/numeric_format.npz", format=np.array(3), shape=np.array([1, 3]),
         data=np.ones(1, dtype="f4"), indices=np.array([0], dtype="i4"),
         indptr=np.array([0, 1], dtype="i4"))
`,
  TMP,
]);
Deno.writeFileSync(`${TMP}/no_entries.npz`, encodeZip([]));
Deno.writeFileSync(`${TMP}/folder_only.npz`, encodeZip([{ name: "d/", data: new Uint8Array() }]));

/** The one line `decodeDumpMatrix` refuses `name` with, in the mode given. */
function refusal(name: string, sparse: boolean): string {
  try {
    decodeDumpMatrix(Deno.readFileSync(`${TMP}/${name}`), name, { sparse });
    return "accepted";
  } catch (e) {
    return String(e);
  }
}

const NO_ARRAYS_SPARSE =
  "holds no arrays; a sparse dump holds format, shape, data, indices, indptr (written with scipy.sparse.save_npz(path, matrix))";
const NO_ARRAYS_DENSE =
  "holds no arrays; a dense dump holds arr_0 (written with numpy.savez(path, matrix))";
const NO_ARR_0 = "no arr_0 array (dense dumps are written with numpy.savez(path, matrix))";

Deno.test("decode: an archive with no arrays says so, with --sparse and without", () => {
  for (const name of ["empty.npz", "empty_compressed.npz", "no_entries.npz", "folder_only.npz"]) {
    assertEquals(refusal(name, true), `${name}: ${NO_ARRAYS_SPARSE}`);
    assertEquals(refusal(name, false), `${name}: ${NO_ARRAYS_DENSE}`);
  }
});

Deno.test("decode --sparse: other arrays, or a sparse matrix short of one, name what is there and what is missing", () => {
  assertEquals(
    refusal("other.npz", true),
    "other.npz: holds x but no format, shape, data, indices, indptr: not a sparse matrix (sparse dumps are written with scipy.sparse.save_npz(path, matrix))",
  );
  assertEquals(
    refusal("no_data.npz", true),
    "no_data.npz: holds format, shape, indices, indptr but no data: not a sparse matrix (sparse dumps are written with scipy.sparse.save_npz(path, matrix))",
  );
  assertEquals(
    refusal("numeric_format.npz", true),
    "numeric_format.npz: format is not a string array naming the sparse format (csr or csc)",
  );
  // Dense: no arr_0, as before.
  for (const name of ["other.npz", "no_data.npz", "numeric_format.npz"]) {
    assertEquals(refusal(name, false), `${name}: ${NO_ARR_0}`);
  }
});

Deno.test("dump reader --sparse: an empty question and paragraph .npz say they hold no arrays", () => {
  const dir = `${TMP}/dump`;
  Deno.mkdirSync(dir);
  Deno.copyFileSync(`${TMP}/empty.npz`, `${dir}/q1.npz`);
  Deno.copyFileSync(`${TMP}/empty.npz`, `${dir}/T_0.npz`);
  Deno.writeTextFileSync(`${dir}/T_0.json`, '["a"]');
  const src = openDumpSync(dir, { sparse: true });
  const line = (f: () => unknown) => {
    try {
      f();
      return "accepted";
    } catch (e) {
      return String(e);
    }
  };
  assertEquals(line(() => src.readQuestion("q1")), `${dir}/q1.npz: ${NO_ARRAYS_SPARSE}`);
  assertEquals(line(() => src.readContext("T_0")), `${dir}/T_0.npz: ${NO_ARRAYS_SPARSE}`);
  src.close();
});
