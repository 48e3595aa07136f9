#!/usr/bin/env bash
# A killed IVF-PQ `index` build, rerun, against an uninterrupted build of the
# same dump: every file's sha256, then `search` on both (pred.json and the
# top-k lines compared byte for byte).
#
# usage: bash bench/index_kill_check.sh DUMP CONTEXT DATA QUESTION_EMB OUT [KILL_AFTER_S] [INDEX FLAGS...]
#   DUMP, CONTEXT  the context dump and its context.json
#   DATA           the dataset the questions come from (for search)
#   QUESTION_EMB   the question dump
#   OUT            a scratch folder (created)
#   KILL_AFTER_S   seconds before the SIGKILL (default 25)
#   INDEX FLAGS    default: --nlist 64 --bpv 64
set -euo pipefail
cd "$(dirname "$0")/.."
DUMP=$1 CONTEXT=$2 DATA=$3 QEMB=$4 OUT=$5
AFTER=${6:-25}
shift 6 2>/dev/null || shift $#
FLAGS=("$@")
[ ${#FLAGS[@]} -gt 0 ] || FLAGS=(--nlist 64 --bpv 64)
deno=(npx -y deno@2.9.6)
mkdir -p "$OUT"
rm -rf "$OUT/A" "$OUT/B"

# The build to kill: its own session, SIGKILL to the whole group (deno and its workers).
setsid "${deno[@]}" run --allow-read --allow-write pipeline/index.ts "$DUMP" "$OUT/A" \
  --context "$CONTEXT" "${FLAGS[@]}" >"$OUT/A.log" 2>&1 &
pid=$!
sleep "$AFTER"
if ! kill -0 "$pid" 2>/dev/null; then
  echo "the build ended before the kill: give a smaller KILL_AFTER_S" >&2
  exit 1
fi
kill -KILL -- "-$pid"
wait "$pid" 2>/dev/null || true
echo "killed after ${AFTER}s; left in $OUT: $(cd "$OUT" && ls -A | grep -v -e '^A.log$' | tr '\n' ' ')"
[ -e "$OUT/A" ] && { echo "the killed build left a finished index folder" >&2; exit 1; }

start=$(date +%s)
"${deno[@]}" task index "$DUMP" "$OUT/A" --context "$CONTEXT" "${FLAGS[@]}" 2>&1 | tail -1
echo "rerun: $(($(date +%s) - start)) s"
"${deno[@]}" task index "$DUMP" "$OUT/B" --context "$CONTEXT" "${FLAGS[@]}" 2>&1 | tail -1
echo "left in $OUT: $(cd "$OUT" && ls -A | tr '\n' ' ')"

(cd "$OUT/A" && find . -type f | sort | xargs sha256sum) >"$OUT/A.sha256"
(cd "$OUT/B" && find . -type f | sort | xargs sha256sum) >"$OUT/B.sha256"
echo "files: $(wc -l <"$OUT/A.sha256"); index.json $(grep ' ./index.json$' "$OUT/A.sha256" | cut -c1-16)…"
cmp "$OUT/A.sha256" "$OUT/B.sha256" && echo "all files: the same sha256"

for x in A B; do
  "${deno[@]}" task search "$DATA" "$OUT/$x" "$QEMB" "$OUT/$x.pred.json" --nprobe 8 \
    --candidates 50 --top-k 10 --topk-out "$OUT/$x.topk.ndjson" 2>&1 | tail -1
done
cmp "$OUT/A.pred.json" "$OUT/B.pred.json" && cmp "$OUT/A.topk.ndjson" "$OUT/B.topk.ndjson" &&
  echo "search: pred.json and $(wc -l <"$OUT/A.topk.ndjson") top-k lines identical"
