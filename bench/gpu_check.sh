#!/usr/bin/env bash
# bench/gpu_check.sh [PROVIDER_TGZ] — the piqa-lstm encoders on SQuAD dev with --device cpu and
# --device cuda: both dumps must agree within f16 tolerance and give the same EM/F1; prints
# paragraphs/s and questions/s for both. For a machine with an NVIDIA GPU; downloads nothing.
#
# Beforehand (where the npm registry can be reached; see encoders/ONNX.md, "CUDA"):
#   - Deno's cache holds the project's npm packages (any `deno run` of the project, or
#     `deno cache mod.ts`), with DENO_DIR pointing at it if it is not ~/.cache/deno;
#   - the CUDA provider tarball was fetched with
#     `ONNXRUNTIME_NODE_INSTALL=skip npm pack com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9`
#     and is given as PROVIDER_TGZ (or $ORT_GPU_TGZ; default bench/out/<tarball name>), unless
#     its two .so files are already beside libonnxruntime.so.1;
#   - CUDA 13 runtime, cuBLAS 13, cuRAND 10 and cuDNN 9 (CUDA 13) are installed; their folders
#     are found under /usr/local/cuda*, the system folders, Python's nvidia-* wheels or
#     LD_LIBRARY_PATH.
# Environment: DENO (deno command; default `deno` on PATH, else `npx --offline -y deno@2.9.6`),
# OUT (work folder, default /tmp/gpu_check), THREADS (CPU run, default nproc), DATA (dev set),
# DEVICES (default "cpu cuda"; "cpu" alone dry-runs the script on a machine without a GPU).
# Exit: 0 agree, 1 disagree or a stage failed, 2 the CUDA provider cannot load (the line says which
# library is missing).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
TGZ_NAME=com.github.asus4.onnxruntime.linux-x64-gpu-0.4.9.tgz
TGZ="${1:-${ORT_GPU_TGZ:-$ROOT/bench/out/$TGZ_NAME}}"
OUT="${OUT:-/tmp/gpu_check}"
THREADS="${THREADS:-$(nproc)}"
DATA="${DATA:-$ROOT/data/dev-v1.1.json.gz}"
DEVICES="${DEVICES:-cpu cuda}"
if [[ -n "${DENO:-}" ]]; then :
elif command -v deno >/dev/null; then DENO=deno
else DENO="npx --offline -y deno@2.9.6"; fi
RUN="$DENO run --cached-only --no-prompt"
export NO_COLOR=1

say() { printf '%s\n' "gpu_check: $*" >&2; }
now() { date +%s.%N; }
calc() { awk "BEGIN { print $1 }"; }

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total \
  --format=csv,noheader | sed 's/^/gpu_check: GPU /' >&2 || say "nvidia-smi not found"

if [[ " $DEVICES " == *" cuda "* ]]; then
# 1. onnxruntime-node's native folder, and the provider files in it.
BIN="$($RUN --allow-read encoders/onnx/session.ts)"
say "onnxruntime-node native folder: $BIN"
if [[ ! -f "$BIN/libonnxruntime_providers_cuda.so" || ! -f "$BIN/libonnxruntime_providers_shared.so" ]]; then
  if [[ ! -f "$TGZ" ]]; then
    say "no CUDA provider in $BIN and no tarball at $TGZ (fetch it with npm pack, see the header)"
    exit 2
  fi
  say "extracting the CUDA provider from $TGZ"
  tar -xzf "$TGZ" -C "$BIN" --strip-components=4 \
    package/Plugins/Linux/x64/libonnxruntime_providers_shared.so \
    package/Plugins/Linux/x64/libonnxruntime_providers_cuda.so
fi

# 2. Folders of the CUDA libraries the provider needs, for the dynamic loader.
dirs=()
ldp="${LD_LIBRARY_PATH:-}"
for lib in libcublasLt.so.13 libcublas.so.13 libcurand.so.10 libcudart.so.13 libcudnn.so.9; do
  if ldconfig -p 2>/dev/null | grep -q "$lib"; then continue; fi
  hit="$(find /usr/local/cuda* /usr/lib/x86_64-linux-gnu /usr/local/lib /opt \
    /usr/local/lib/python3*/dist-packages/nvidia /usr/lib/python3*/dist-packages/nvidia \
    "$HOME/.local/lib" ${ldp//:/ } -name "$lib" -print -quit 2>/dev/null || true)"
  [[ -z "$hit" ]] && hit="$(python3 - "$lib" 2>/dev/null <<'EOF' || true
import glob, os, site, sys
for base in site.getsitepackages() + [site.getusersitepackages()]:
    for p in glob.glob(os.path.join(base, "nvidia", "**", sys.argv[1]), recursive=True):
        print(p); raise SystemExit
EOF
)"
  if [[ -n "$hit" ]]; then dirs+=("$(dirname "$hit")"); fi
done
if ((${#dirs[@]})); then
  extra="$(printf '%s\n' "${dirs[@]}" | awk '!s[$0]++' | paste -sd:)"
  export LD_LIBRARY_PATH="$extra${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  say "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
fi
fi

# 3. Split dev, then the two encoders on each device.
rm -rf "$OUT" && mkdir -p "$OUT"
$RUN --allow-read --allow-write pipeline/split.ts "$DATA" "$OUT/context.json" "$OUT/question.json" >&2
PERMS=(--allow-read --allow-write="$OUT" --allow-ffi)
declare -A secs
for dev in $DEVICES; do
  for half in context question; do
    t0="$(now)"
    args=("$OUT/$half.json" "$OUT/$dev/${half}_emb" --encoder=piqa-lstm --device="$dev")
    [[ "$dev" == cpu ]] && args+=(--threads="$THREADS")
    set +e
    $RUN "${PERMS[@]}" "pipeline/embed_$half.ts" "${args[@]}" 2>"$OUT/$dev.$half.err"
    rc=$?
    set -e
    tail -n 2 "$OUT/$dev.$half.err" | sed "s/^/gpu_check: [$dev] /" >&2
    if ((rc != 0)); then say "embed_$half --device $dev failed (exit $rc)"; exit "$rc"; fi
    secs[$dev.$half]="$(calc "$(now) - $t0")"
  done
done

# 4. Agreement (f16 tolerance) and the same answers.
status=0
if [[ " $DEVICES " == *" cpu "* && " $DEVICES " == *" cuda "* ]]; then
  for half in context question; do
    printf 'gpu_check: %s_emb cpu vs cuda: ' "$half" >&2
    $RUN --allow-read bench/compare_dumps.ts "$OUT/cpu/${half}_emb" "$OUT/cuda/${half}_emb" >&2 ||
      status=1
  done
fi
for dev in $DEVICES; do
  $RUN --allow-read --allow-write pipeline/merge.ts "$DATA" "$OUT/$dev/context_emb" \
    "$OUT/$dev/question_emb" "$OUT/$dev/pred.json" >&2
  printf 'gpu_check: [%s] ' "$dev" >&2
  $RUN --allow-read pipeline/evaluate.ts "$DATA" "$OUT/$dev/pred.json" | tee "$OUT/$dev/eval.json" >&2
done
if [[ -f "$OUT/cpu/pred.json" && -f "$OUT/cuda/pred.json" ]]; then
  if cmp -s "$OUT/cpu/pred.json" "$OUT/cuda/pred.json"; then say "predictions identical"
  else say "predictions differ (ties broken differently after f16 rounding?): see $OUT/*/pred.json"; fi
fi

# 5. Speed.
first="${DEVICES%% *}"
P="$(ls "$OUT/$first/context_emb" | grep -c '\.npz$')"
Q="$(ls "$OUT/$first/question_emb" | grep -c '\.npz$')"
for dev in $DEVICES; do
  printf 'gpu_check: %-4s %8.1f paragraphs/s (%s in %.1f s)  %8.1f questions/s (%s in %.1f s)%s\n' \
    "$dev" "$(calc "$P / ${secs[$dev.context]}")" "$P" "${secs[$dev.context]}" \
    "$(calc "$Q / ${secs[$dev.question]}")" "$Q" "${secs[$dev.question]}" \
    "$([[ $dev == cpu ]] && echo ", $THREADS threads" || true)"
done
say "wall times include process start and model load (a few seconds)"
exit "$status"
