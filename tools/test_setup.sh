#!/usr/bin/env bash
# Installs what the test suites need beyond Node.js/npm and Python 3 with numpy and scipy, so that
# the README's test command works on a fresh machine (`deno task test` and `test:slow` run this
# first):
#   - Debian's chromium at /usr/bin/chromium for the browser tests (apt-get, as root);
#   - the Python packages that the tests' own Python files import (PY_PACKAGES below, as
#     module:package): onnxruntime (tests/fixtures/bem_ort_check.py, BEM's logits), faiss-cpu
#     (tests/py/ivf_ref.py, IVF-PQ against faiss), onnx (tests/fixtures/make_tiny_onnx.py, the
#     ONNX fixtures rebuilt and compared; tests/py/onnx_same.py, the bundled graphs compared),
#     matplotlib (bench/reference/evaluate_v2.py, imported
#     for --out-image-dir as by the official script) and pyarrow (tests/fixtures/make_parquet.py,
#     the Parquet fixtures rebuilt and compared). tests/tools/test_setup_test.ts checks that
#     this list is exactly what those files import beyond the standard library, numpy and scipy.
# pip installs into the environment of `python3`; where that Python is managed by the system
# (PEP 668), into the user's site-packages instead (--user --break-system-packages, which leaves
# the system's own packages as they are). A Python package that cannot be installed is named in
# one line and this script exits 1: the tests that need it would otherwise fail later, or check
# nothing. Chromium that cannot be installed is named in one line; only the browser tests fail.
set -u
say() { printf 'test setup: %s\n' "$*" >&2; }
# Importing onnxruntime below would otherwise leave /tmp/mat-debug-<pid>.log (its telemetry).
export ORT_DISABLE_TELEMETRY=1

if ! python3 -c "import numpy, scipy" 2>/dev/null; then
  say "the tests need python3 with numpy and scipy (python3 -m pip install numpy scipy)"
  exit 1
fi

if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Debian's chromium for the browser tests (apt-get install chromium)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
      >/dev/null 2>&1 || say "apt-get could not install chromium: the browser tests will fail"
  else
    say "/usr/bin/chromium is missing (apt-get install chromium, as root): the browser tests will fail"
  fi
fi

PY_PACKAGES="onnxruntime:onnxruntime faiss:faiss-cpu onnx:onnx matplotlib:matplotlib pyarrow:pyarrow"
missing=()
for pair in $PY_PACKAGES; do
  module=${pair%%:*} package=${pair#*:}
  python3 -c "import $module" 2>/dev/null && continue
  say "installing the Python package $package (pip)"
  log=$(python3 -m pip install --quiet --disable-pip-version-check "$package" 2>&1)
  if [ $? -ne 0 ] && [[ $log == *externally-managed-environment* ]]; then
    python3 -m pip install --quiet --disable-pip-version-check --user --break-system-packages \
      "$package" >/dev/null 2>&1
  fi
  python3 -c "import $module" 2>/dev/null || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "could not pip install ${missing[*]} (python3 -m pip install ${missing[*]}): the tests need them"
  exit 1
fi
exit 0
