#!/usr/bin/env bash
# Stops the cluster .ci/slurm_up.sh started: every daemon BY the pid it
# recorded (slurmd, slurmctld, munged), then removes the state folder.
#
#   .ci/slurm_down.sh DIR          (or with SLURM_CONF=DIR/slurm.conf set)
#   KEEP=1 .ci/slurm_down.sh DIR   keeps the folder (logs) for a post-mortem
set -uo pipefail

dir=${1:-}
if [ -z "$dir" ] && [ -n "${SLURM_CONF:-}" ]; then dir=$(dirname "$SLURM_CONF"); fi
if [ -z "$dir" ] || [ ! -f "$dir/slurm.conf" ]; then
  echo "slurm_down: no cluster folder (give DIR or set SLURM_CONF)" >&2
  exit 2
fi

stop() { # name pidfile
  local pid
  [ -f "$2" ] || return 0
  pid=$(cat "$2" 2>/dev/null || true)
  [ -n "$pid" ] || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
    echo "slurm_down: stopped $1 (pid $pid)" >&2
  fi
}

stop slurmd "$dir/slurmd.run.pid"
stop slurmctld "$dir/slurmctld.run.pid"
stop munged "$dir/munge/munged.pid"
if [ "${KEEP:-0}" != 1 ]; then rm -rf "$dir"; fi
exit 0
