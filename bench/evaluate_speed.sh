#!/usr/bin/env bash
# Whole-process time of `evaluate` on SQuAD v1.1 dev against the Python reference
# implementation of the official rules (bench/reference/evaluate_v1.py), run alternately
# on the same input, RUNS times each; prints the medians and the ratio.
# usage: bash bench/evaluate_speed.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DENO=${DENO:-$(npx -y deno@2.9.6 eval 'console.log(Deno.execPath())')}
OUT=bench/out
mkdir -p "$OUT"
[ -f "$OUT/dev.json" ] || gunzip -c data/dev-v1.1.json.gz > "$OUT/dev.json"
[ -d "$OUT/perturb" ] || "$DENO" run -A bench/perturb.ts "$OUT/dev.json" "$OUT/perturb" >/dev/null
PRED="$OUT/perturb/$(ls "$OUT/perturb" | sed -n 2p)"
RUNS=${RUNS:-9}
ours=() ; ref=()
"$DENO" run --allow-read pipeline/evaluate.ts "$OUT/dev.json" "$PRED" >/dev/null 2>&1 # warm the cache
for _ in $(seq "$RUNS"); do
  /usr/bin/time -o "$OUT/t" -f "%e" "$DENO" run --allow-read pipeline/evaluate.ts "$OUT/dev.json" "$PRED" >/dev/null 2>&1
  ours+=("$(tail -n 1 "$OUT/t")")
  /usr/bin/time -o "$OUT/t" -f "%e" python3 bench/reference/evaluate_v1.py "$OUT/dev.json" "$PRED" >/dev/null 2>&1
  ref+=("$(tail -n 1 "$OUT/t")")
done
med() { printf '%s\n' "$@" | sort -n | sed -n "$((($# + 1) / 2))p"; }
o=$(med "${ours[@]}"); r=$(med "${ref[@]}")
echo "evaluate on dev ($PRED), median of $RUNS whole-process runs:"
echo "  phraseval evaluate     ${o} s"
echo "  python reference       ${r} s"
echo "  speed-up               $(echo "$r / $o" | bc -l | cut -c1-4)x"
