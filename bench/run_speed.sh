#!/usr/bin/env bash
# A run against `full` on the same data (issue 24's runs row): for each model, `run` of a config
# with that model alone over SQuAD v1.1 dev articles 8-10 (configs/datasets/squad_dev_mini.ts;
# partitions of PARTITION paragraphs/questions, WORKERS workers) and `full --data` on the same three
# articles, run alternately RUNS times; prints median wall seconds, median CPU seconds (user +
# system of the process and its children) and peak RSS of each, the ratios run/full, and checks
# that both wrote byte-identical predictions. On a shared machine, compare the CPU seconds.
# usage: bash bench/run_speed.sh      (RUNS=3 MODELS="sparse-pi piqa-lstm" PARTITION=32 WORKERS=2)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
MODELS=${MODELS:-"sparse-pi piqa-lstm"}
PARTITION=${PARTITION:-32}
WORKERS=${WORKERS:-2}
OUT=bench/out/run_speed
rm -rf "$OUT"
mkdir -p "$OUT"
./phraseval subset data/dev-v1.1.json.gz "$OUT/mini.json" --articles 8:11 >/dev/null 2>&1
# wall, CPU and peak RSS (of the largest process) of a command line, as "wall cpu rss_kb".
measure() {
  python3 - "$@" <<'PY'
import os, subprocess, sys, time, resource
t0 = time.time()
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
wall = time.time() - t0
if p.returncode != 0:
    sys.exit(f"failed ({p.returncode}): {' '.join(sys.argv[1:])}\n{p.stderr.decode()[-2000:]}")
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{wall:.2f} {r.ru_utime + r.ru_stime:.2f} {r.ru_maxrss}")
PY
}
med() { printf '%s\n' "$@" | sort -n | sed -n "$((($# + 1) / 2))p"; }
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
printf '%-10s %-5s %8s %8s %9s\n' model what wall_s cpu_s rss_mb
for m in $MODELS; do
  abbr=$m
  case "$m" in
    sparse-pi) imp='import { sparsePi as model } from "../../../configs/models/sparse_pi.ts";' ;;
    piqa-lstm) imp='import { piqaLstm as model } from "../../../configs/models/piqa_lstm.ts";' ;;
    piqa-lstm-sa) imp='import { piqaLstmSa as model } from "../../../configs/models/piqa_lstm_sa.ts";' ;;
    *) echo "unknown model $m" >&2; exit 2 ;;
  esac
  cat > "$OUT/$abbr.ts" <<TS
import type { RunConfig } from "../../../configs/types.ts";
import { squadDevMini } from "../../../configs/datasets/squad_dev_mini.ts";
$imp
/** One model over dev articles 8-10. */
export const config: RunConfig = {
  datasets: [squadDevMini],
  models: [model],
  maxPartitionSize: $PARTITION,
  maxWorkers: $WORKERS,
};
TS
  rw=(); rc=(); rm_=(); fw=(); fc=(); fm=()
  for i in $(seq "$RUNS"); do
    read -r w c r < <(measure ./phraseval run "$OUT/$abbr.ts" --work-dir "$OUT/runs-$abbr-$i")
    rw+=("$w"); rc+=("$c"); rm_+=("$r")
    read -r w c r < <(measure ./phraseval full --data "$OUT/mini.json" --encoder "$m" \
      --out "$OUT/full-$abbr-$i")
    fw+=("$w"); fc+=("$c"); fm+=("$r")
  done
  printf '%-10s %-5s %8s %8s %9s\n' "$m" run "$(med "${rw[@]}")" "$(med "${rc[@]}")" \
    "$(($(med "${rm_[@]}") / 1024))"
  printf '%-10s %-5s %8s %8s %9s\n' "$m" full "$(med "${fw[@]}")" "$(med "${fc[@]}")" \
    "$(($(med "${fm[@]}") / 1024))"
  python3 -c "import sys; a=list(map(float,sys.argv[1:5])); print(f'{sys.argv[5]:<10} run/full  wall {a[0]/a[1]:.2f}x  CPU {a[2]/a[3]:.2f}x')" \
    "$(med "${rw[@]}")" "$(med "${fw[@]}")" "$(med "${rc[@]}")" "$(med "${fc[@]}")" "$m"
  run_pred=$(ls "$OUT"/runs-"$abbr"-1/*/predictions/"$abbr"/squad-dev-mini.json)
  if cmp -s "$run_pred" "$OUT/full-$abbr-1/pred.json"; then
    echo "$m         predictions: byte-identical"
  else
    echo "$m         predictions: DIFFERENT"; exit 1
  fi
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
