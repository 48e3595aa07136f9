#!/usr/bin/env bash
# Get BEM as ONNX in one command (needs internet and Python 3.9-3.11):
#
#   bash tools/bem/convert.sh [OUT]        # OUT defaults to bem.onnx
#
# Makes a virtual environment with pinned versions (TensorFlow 2.15 and
# tf2onnx 1.16.1, which supports TF up to 2.15; transformers 4.x for the
# recipe's slow BertTokenizer), downloads the TF-Hub BEM SavedModel, converts
# it (tools/bem/convert.py: checks the seed example through TF and ONNX
# Runtime before writing OUT), then compares TF and ONNX Runtime on 100 dev
# pairs and phraseval's own bem stage on the same pairs
# (tools/bem/check_onnx.py). Exits non-zero at the first failed check.
#
# Environment: BEM_VENV (default: ${XDG_CACHE_HOME:-~/.cache}/phraseval/bem-venv),
# PYTHON (default: python3), TF_PACKAGE (default: tensorflow-cpu==2.15.1; on macOS
# use tensorflow==2.15.1), SAVEDMODEL (an already downloaded SavedModel folder),
# DENO (default: "npx -y deno@2.9.6"; set NO_PHRASEVAL=1 to skip that check).
set -euo pipefail
cd "$(dirname "$0")/../.."

OUT="${1:-bem.onnx}"
PYTHON="${PYTHON:-python3}"
VENV="${BEM_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/phraseval/bem-venv}"

"$PYTHON" - <<'EOF' || { echo "convert.sh: TensorFlow 2.15 needs Python 3.9-3.11 (set PYTHON=...)" >&2; exit 2; }
import sys
sys.exit(0 if (3, 9) <= sys.version_info[:2] <= (3, 11) else 1)
EOF

if [ ! -x "$VENV/bin/python" ]; then
  echo "convert.sh: creating $VENV" >&2
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet \
  "${TF_PACKAGE:-tensorflow-cpu==2.15.1}" "tensorflow-hub==0.16.1" "kagglehub>=0.2" \
  "tf2onnx==1.16.1" "onnx==1.16.2" "onnxruntime==1.19.2" \
  "protobuf==3.20.3" "numpy==1.26.4" "transformers==4.44.2"

ARGS=()
if [ -n "${SAVEDMODEL:-}" ]; then ARGS+=(--savedmodel "$SAVEDMODEL"); fi
"$VENV/bin/python" tools/bem/convert.py --out "$OUT" ${ARGS[@]+"${ARGS[@]}"}

CHECK=(--onnx "$OUT" --deno "${DENO:-npx -y deno@2.9.6}")
if [ -n "${NO_PHRASEVAL:-}" ]; then CHECK+=(--no-phraseval); fi
"$VENV/bin/python" tools/bem/check_onnx.py "${CHECK[@]}" ${ARGS[@]+"${ARGS[@]}"}
echo "convert.sh: $OUT is ready: npx -y deno@2.9.6 task bem data.json pred.json --model $OUT" >&2
