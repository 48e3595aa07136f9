#!/usr/bin/env bash
# Start-up of every command: `deno eval 1` (the runtime alone), then each command of deno.json's
# tasks (`pipeline/<cmd>.ts`) with `--help` and with a usage error (an unknown flag, exit 2), each
# the best of RUNS runs (default 5), in milliseconds, with the time over `deno eval 1`. Runs the
# deno binary directly (not through npx, whose own start-up would be most of the time).
# usage: bash bench/startup.sh        (RUNS=5 by default; DENO: the deno binary)
set -euo pipefail
cd "$(dirname "$0")/.."
DENO=${DENO:-$(npx -y deno@2.9.6 eval 'console.log(Deno.execPath())')}
RUNS=${RUNS:-5}
COMMANDS=$(grep -o 'pipeline/[a-z_]*\.ts' deno.json | sed 's|pipeline/||; s|\.ts$||' | sort -u)

# The best of RUNS runs of a command line, in milliseconds (its output and exit status ignored).
best() {
  local best_ns="" t0 t1 ns
  for _ in $(seq "$RUNS"); do
    t0=$(date +%s%N)
    "$@" >/dev/null 2>&1 || true
    t1=$(date +%s%N)
    ns=$((t1 - t0))
    if [ -z "$best_ns" ] || [ "$ns" -lt "$best_ns" ]; then best_ns=$ns; fi
  done
  echo $((best_ns / 1000000))
}

# A warm cache first: every module compiled once.
for c in $COMMANDS; do "$DENO" run -A "pipeline/$c.ts" --help >/dev/null 2>&1 || true; done

base=$(best "$DENO" eval 1)
echo "load: $(uptime | sed 's/.*load average: //')"
printf '%-16s %8s %8s %10s %10s\n' command help_ms usage_ms help_over usage_over
printf '%-16s %8s %8s %10s %10s\n' "deno eval 1" "$base" "" "" ""
for c in $COMMANDS; do
  h=$(best "$DENO" run -A "pipeline/$c.ts" --help)
  u=$(best "$DENO" run -A "pipeline/$c.ts" --no-such-flag)
  printf '%-16s %8s %8s %+10d %+10d\n' "$c" "$h" "$u" "$((h - base))" "$((u - base))"
done
