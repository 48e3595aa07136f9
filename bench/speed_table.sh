#!/usr/bin/env bash
# Issue 24's table in one sitting: merge on compressed dumps (6 articles) against PIQA's merge
# semantics in NumPy, evaluate on dev against the official rules in Python, start-up (--help over
# `deno eval 1`), and a run against `full` on the same 3 articles, each with peak RSS; the
# benches' own outputs in full below the table's lines. Run it on a quiet machine.
# usage: bash bench/speed_table.sh > bench/out/speed_table.txt
set -euo pipefail
cd "$(dirname "$0")/.."
echo "speed table: $(date -u +%FT%TZ), $(git rev-parse --short HEAD 2>/dev/null || echo '?'), load $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
echo "== merge (bench/merge_speed.sh, RUNS=5 ARTICLES=6 MAKE_ARGS=--compressed)"
RUNS=${MERGE_RUNS:-5} ARTICLES=6 MAKE_ARGS="--compressed" bash bench/merge_speed.sh
echo "== evaluate and start-up (bench/evaluate_speed.sh, RUNS=9)"
RUNS=${EVAL_RUNS:-9} bash bench/evaluate_speed.sh
echo "== run against full (bench/run_speed.sh, RUNS=3)"
RUNS=${RUN_RUNS:-3} bash bench/run_speed.sh
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
