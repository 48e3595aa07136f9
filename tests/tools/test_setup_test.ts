/**
 * `tools/test_setup.sh`, the first step of the README's test command: its
 * Python packages (`PY_PACKAGES`) are exactly what the tests' Python files
 * import beyond the standard library, numpy and scipy (read with `ast` by
 * `tests/py/imports.py`); and, with a stand-in `python3` on `PATH`, a package
 * pip cannot install stops it with one line and exit 1, while a
 * system-managed Python (PEP 668) gets the package in the user's
 * site-packages; every Python it starts has onnxruntime's telemetry off.
 *
 * @module
 */
import { assert, assertEquals } from "../_assert.ts";
import { python, ROOT, runArgv } from "../_util.ts";

const SETUP = `${ROOT}/tools/test_setup.sh`;

/** `PY_PACKAGES` of `tools/test_setup.sh`: module name → pip package. */
function setupPackages(): Map<string, string> {
  const m = /^PY_PACKAGES="([^"]*)"$/m.exec(Deno.readTextFileSync(SETUP));
  if (m === null) throw new Error("tools/test_setup.sh has no PY_PACKAGES line");
  return new Map(m[1].split(/\s+/).map((p) => p.split(":") as [string, string]));
}

/** Every `.py` file below `dir` (repository-relative), `bench/out` left out. */
function pyFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(`${ROOT}/${dir}`)) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory && rel !== "bench/out" && !e.name.startsWith(".")) out.push(...pyFiles(rel));
    else if (e.isFile && e.name.endsWith(".py")) out.push(rel);
  }
  return out;
}

/** The Python files the tests name by a path from the repository's root (`baselines/...py`). */
function namedByTests(dir = "tests"): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(`${ROOT}/${dir}`)) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory && e.name !== "_doc_examples") out.push(...namedByTests(rel));
    else if (e.isFile && e.name.endsWith(".ts")) {
      for (const m of Deno.readTextFileSync(`${ROOT}/${rel}`).matchAll(/[\w./-]+\.py\b/g)) {
        const p = m[0].replace(/^\.?\//, "");
        try {
          if (Deno.statSync(`${ROOT}/${p}`).isFile) out.push(p);
        } catch { /* a name in prose, or a path under a variable: not a file from the root */ }
      }
    }
  }
  return out;
}

Deno.test("test setup: PY_PACKAGES is what the tests' Python files import, beyond numpy and scipy", async () => {
  const files = [...new Set([...pyFiles("tests"), ...pyFiles("bench"), ...namedByTests()])].sort();
  assert(files.includes("tests/py/ivf_ref.py") && files.includes("bench/reference/merge.py"));
  assert(files.includes("baselines/piqa_lstm/dump_tokens.py"));
  const out = await python(["tests/py/imports.py", ...files]);
  const imported = new Map(
    out.stdout.trim().split("\n").map((l) => l.split("\t") as [string, string]),
  );
  const setup = setupPackages();
  const needed = [...imported.keys()].filter((m) => m !== "numpy" && m !== "scipy").sort();
  assertEquals(
    needed,
    [...setup.keys()].sort(),
    `imported: ${[...imported].map(([m, f]) => `${m} (${f})`).join("; ")}`,
  );
  // The five of this writing, and where they are imported.
  assertEquals(needed, ["faiss", "matplotlib", "onnx", "onnxruntime", "pyarrow"]);
  assertEquals(imported.get("pyarrow"), "tests/fixtures/make_parquet.py");
  assertEquals(
    imported.get("faiss"),
    "bench/faiss_ref.py bench/faiss_width.py tests/py/ivf_ref.py",
  );
  assertEquals(setup.get("faiss"), "faiss-cpu");
});

/**
 * A stand-in `python3`: numpy and scipy import; another module imports once
 * its package is in `$FAKE/installed`; `-m pip install` records its
 * arguments and installs, unless `$FAKE/refuse` (every install fails) or
 * `$FAKE/managed` (a plain install fails as PEP 668 says, one with
 * `--user --break-system-packages` works).
 */
const FAKE_PYTHON = `#!/usr/bin/env bash
F=$(dirname "$0")
echo "$*" >> "$F/calls"
echo "\${ORT_DISABLE_TELEMETRY:-unset}" >> "$F/telemetry"
mod_of() { case $1 in faiss-cpu) echo faiss ;; *) echo "$1" ;; esac; }
if [ "$1" = -c ]; then
  m=\${2#import }
  [ "$m" = "numpy, scipy" ] && exit 0
  grep -qx "$m" "$F/installed" 2>/dev/null && exit 0
  exit 1
fi
if [ "$1 $2 $3" = "-m pip install" ]; then
  pkg=\${!#}
  [ -f "$F/refuse" ] && { echo "ERROR: No matching distribution found for $pkg" >&2; exit 1; }
  if [ -f "$F/managed" ] && [[ "$*" != *--break-system-packages* ]]; then
    echo "error: externally-managed-environment" >&2; exit 1
  fi
  mod_of "$pkg" >> "$F/installed"; exit 0
fi
exit 1
`;

async function withFakePython(
  mode: "refuse" | "managed" | "plain",
): Promise<
  { code: number; stderr: string; calls: string[]; installed: string[]; telemetry: string[] }
> {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-setup-" });
  try {
    await Deno.writeTextFile(`${dir}/python3`, FAKE_PYTHON, { mode: 0o755 });
    if (mode !== "plain") await Deno.writeTextFile(`${dir}/${mode}`, "");
    // Only PATH: not even CHILD_ENV's ORT_DISABLE_TELEMETRY, which the script must set itself.
    const r = await runArgv(["bash", SETUP], {
      clearEnv: true,
      env: { PATH: `${dir}:${Deno.env.get("PATH") ?? "/usr/bin:/bin"}` },
    });
    const read = (n: string) =>
      Deno.readTextFile(`${dir}/${n}`).then((t) => t.trim().split("\n"), () => []);
    return {
      code: r.code,
      stderr: r.stderr,
      calls: await read("calls"),
      installed: await read("installed"),
      telemetry: await read("telemetry"),
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("test setup: a package pip cannot install stops it with one line and exit 1", async () => {
  const r = await withFakePython("refuse");
  assertEquals(r.code, 1);
  const last = r.stderr.trim().split("\n").at(-1);
  assertEquals(
    last,
    "test setup: could not pip install onnxruntime faiss-cpu onnx matplotlib pyarrow " +
      "(python3 -m pip install onnxruntime faiss-cpu onnx matplotlib pyarrow): the tests need them",
  );
  assertEquals(r.installed, []);
});

Deno.test("test setup: each missing package is installed with pip, and exit 0", async () => {
  const r = await withFakePython("plain");
  assertEquals(r.code, 0, r.stderr);
  assertEquals(r.installed, ["onnxruntime", "faiss", "onnx", "matplotlib", "pyarrow"]);
  const pip = r.calls.filter((c) => c.startsWith("-m pip"));
  assertEquals(pip.length, 5);
  assert(pip.every((c) => !c.includes("--user")), pip.join("\n"));
  // onnxruntime's telemetry off for every Python it starts (else an import of it leaves
  // /tmp/mat-debug-<pid>.log behind).
  assertEquals(r.telemetry.length, r.calls.length);
  assertEquals([...new Set(r.telemetry)], ["1"]);
});

Deno.test("test setup: a system-managed Python (PEP 668) gets them in the user's site-packages", async () => {
  const r = await withFakePython("managed");
  assertEquals(r.code, 0, r.stderr);
  assertEquals(r.installed, ["onnxruntime", "faiss", "onnx", "matplotlib", "pyarrow"]);
  const user = r.calls.filter((c) => c.includes("--user --break-system-packages"));
  assertEquals(user.length, 5);
});
