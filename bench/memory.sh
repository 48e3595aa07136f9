#!/usr/bin/env bash
# Peak RSS of `split` and `evaluate` on SQuAD v1.1 dev and on a 10x concatenation of dev
# (~48 MB). Streaming means the 10x figures stay within 1.5x of the 1x figures.
# usage: bash bench/memory.sh            (needs GNU time at /usr/bin/time)
set -euo pipefail
cd "$(dirname "$0")/.."
DENO=${DENO:-$(npx -y deno@2.9.6 eval 'console.log(Deno.execPath())')}
OUT=bench/out
mkdir -p "$OUT"
[ -f "$OUT/dev.json" ] || gunzip -c data/dev-v1.1.json.gz > "$OUT/dev.json"
[ -f "$OUT/dev-x10.json" ] || "$DENO" run -A bench/make_concat.ts data/dev-v1.1.json.gz 10 "$OUT/dev-x10.json"
# Predictions: every question's first gold answer (of the 10x file: its ids include dev's).
[ -f "$OUT/gold_pred.json" ] || python3 - "$OUT/dev-x10.json" "$OUT/gold_pred.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
json.dump({q["id"]: q["answers"][0]["text"] for a in d["data"] for p in a["paragraphs"] for q in p["qas"]}, open(sys.argv[2], "w"))
PY
RUNS=${RUNS:-3}
peak() { # median of RUNS peak-RSS readings (KiB) of a command
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -f "%M" "$@" 2>&1 >/dev/null | tail -n 1
  done | sort -n | sed -n "$(((RUNS + 1) / 2))p"
}
printf '%-10s %-14s %14s\n' stage input "peak RSS MiB"
for input in dev.json dev-x10.json; do
  kb=$(peak "$DENO" run --allow-read --allow-write --v8-flags=--optimize-for-size pipeline/split.ts \
    "$OUT/$input" "$OUT/c.json" "$OUT/q.json")
  printf '%-10s %-14s %14.1f\n' split "$input" "$(echo "$kb / 1024" | bc -l)"
done
for input in dev.json dev-x10.json; do
  kb=$(peak "$DENO" run --allow-read pipeline/evaluate.ts "$OUT/$input" "$OUT/gold_pred.json")
  printf '%-10s %-14s %14.1f\n' evaluate "$input" "$(echo "$kb / 1024" | bc -l)"
done
