#!/usr/bin/env bash
# Installs what the test suites need beyond Node.js/npm and Python 3 with numpy and scipy, so that
# the README's test command works on a fresh machine (`deno task test` runs this first):
#   - Debian's chromium at /usr/bin/chromium for the browser tests (apt-get, as root);
#   - the Python packages of the cross-checks and references (onnxruntime, faiss-cpu, onnx,
#     matplotlib for evaluate-v2.0's plots) through pip: without them those cross-checks are
#     skipped with a warning, nothing else is.
# Each missing piece that cannot be installed is named in one line; nothing here fails the run
# except a Python without numpy and scipy.
set -u
say() { printf 'test setup: %s\n' "$*" >&2; }

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

for pair in onnxruntime:onnxruntime faiss:faiss-cpu onnx:onnx matplotlib:matplotlib; do
  module=${pair%%:*} package=${pair#*:}
  python3 -c "import $module" 2>/dev/null && continue
  python3 -m pip install --quiet --disable-pip-version-check "$package" >/dev/null 2>&1 ||
    say "could not pip install $package: its cross-check is skipped"
done
exit 0
