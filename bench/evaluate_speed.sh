#!/usr/bin/env bash
# Whole-process time and peak RSS (/usr/bin/time) of `evaluate` on SQuAD v1.1 dev against the
# Python reference implementation of the official rules (bench/reference/evaluate_v1.py), and of
# `evaluate --help` (start-up alone) against `deno eval 1`; each pair run alternately on the same
# input, RUNS times; prints the medians, the ratios and evaluate's static module count.
# usage: bash bench/evaluate_speed.sh        (RUNS=9 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
DENO=${DENO:-$(npx -y deno@2.9.6 eval 'console.log(Deno.execPath())')}
OUT=bench/out
mkdir -p "$OUT"
[ -f "$OUT/dev.json" ] || gunzip -c data/dev-v1.1.json.gz > "$OUT/dev.json"
[ -d "$OUT/perturb" ] || "$DENO" run -A bench/perturb.ts "$OUT/dev.json" "$OUT/perturb" >/dev/null
PRED="$OUT/perturb/$(ls "$OUT/perturb" | sed -n 2p)"
RUNS=${RUNS:-9}
EVAL=("$DENO" run --allow-read pipeline/evaluate.ts)
# Same scores from both, and a warm cache.
a=$("${EVAL[@]}" "$OUT/dev.json" "$PRED" 2>/dev/null)
b=$(python3 bench/reference/evaluate_v1.py "$OUT/dev.json" "$PRED" 2>/dev/null)
[ "$a" = "$b" ] || { echo "scores differ: $a vs $b" >&2; exit 1; }
declare -A T M
run() { # label command...: one run, its seconds and peak RSS (KiB) appended
  local label=$1
  shift
  /usr/bin/time -o "$OUT/t" -f "%e %M" "$@" >/dev/null 2>&1
  read -r s k <"$OUT/t"
  T[$label]+="$s "
  M[$label]+="$k "
}
for _ in $(seq "$RUNS"); do
  run ours "${EVAL[@]}" "$OUT/dev.json" "$PRED"
  run ref python3 bench/reference/evaluate_v1.py "$OUT/dev.json" "$PRED"
  run help "${EVAL[@]}" --help
  run eval1 "$DENO" eval 1
done
med() { printf '%s\n' $1 | sort -n | sed -n "$(((RUNS + 1) / 2))p"; }
row() { printf '  %-34s %6s s %6s MB\n' "$1" "$(med "${T[$2]}")" "$(($(med "${M[$2]}") / 1024))"; }
modules=$("$DENO" info --json pipeline/evaluate.ts | python3 -c '
import json, sys
d = json.load(sys.stdin)
mods = {m["specifier"]: m for m in d["modules"]}
seen, todo = set(), list(d["roots"])
while todo:
    s = d.get("redirects", {}).get(todo[-1], todo[-1]); todo.pop()
    if s in seen: continue
    seen.add(s)
    for dep in mods.get(s, {}).get("dependencies", []):
        if "code" in dep and not dep.get("isDynamic"): todo.append(dep["code"]["specifier"])
print(len(seen), "static,", len(d["modules"]), "with import()")')
echo "evaluate on dev ($PRED), medians of $RUNS whole-process runs, run alternately:"
row "phraseval evaluate" ours
row "python reference (evaluate_v1.py)" ref
printf '  speed-up                           %.2fx\n' "$(echo "$(med "${T[ref]}") / $(med "${T[ours]}")" | bc -l)"
echo "start-up:"
row "phraseval evaluate --help" help
row "deno eval 1" eval1
printf '  --help over deno eval 1            %.0f ms\n' "$(echo "($(med "${T[help]}") - $(med "${T[eval1]}")) * 1000" | bc -l)"
echo "  modules of pipeline/evaluate.ts    $modules"
