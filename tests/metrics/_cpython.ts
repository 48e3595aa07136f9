/**
 * Which CPython the parity tests of the MRQA, MLQA, DPR and `re` metrics
 * compare with. The metrics follow CPython 3.11's Unicode 14.0 data and `re`
 * case tables (`metrics/_py311_unicode.ts`); another CPython (3.12 has
 * Unicode 15.0) classifies some code points differently, so a comparison
 * with it would test the installed Python, not the metrics. Those tests are
 * ignored then, with one line saying why.
 *
 * @module
 */
import { PY_UNICODE_VERSION, PY_VERSION } from "../../metrics/_py311_unicode.ts";
import { runArgvSync } from "../_util.ts";

const minor = (v: string) => v.split(".").slice(0, 2).join(".");

function installed(): { version: string; unicode: string } {
  try {
    // Synchronous: run once at module load.
    const out = runArgvSync([
      "python3",
      "-c",
      "import sys, unicodedata; print(sys.version.split()[0], unicodedata.unidata_version)",
    ]);
    const [version = "", unicode = ""] = out.stdout.trim().split(" ");
    return { version, unicode };
  } catch {
    return { version: "", unicode: "" };
  }
}

/** The installed `python3`'s version and Unicode data version (empty when it cannot run). */
export const CPYTHON: { readonly version: string; readonly unicode: string } = installed();

/** Whether the installed CPython is the one the metrics' tables were generated from (minor version and Unicode data). */
export const SAME_CPYTHON: boolean = CPYTHON.unicode === PY_UNICODE_VERSION &&
  minor(CPYTHON.version) === minor(PY_VERSION);

if (!SAME_CPYTHON) {
  console.warn(
    `metrics parity: python3 is ${CPYTHON.version || "missing"} (Unicode ${
      CPYTHON.unicode || "?"
    }), the metrics follow CPython ${minor(PY_VERSION)} (Unicode ${PY_UNICODE_VERSION}): ` +
      `the MRQA/MLQA/DPR/re parity tests are ignored`,
  );
}
