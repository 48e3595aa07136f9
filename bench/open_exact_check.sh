#!/usr/bin/env bash
# Exact open search against a NumPy/SciPy brute force over every phrase
# (bench/open_bruteforce.py: float64 scores, first maximum, and the exact
# fsum re-check of near ties), on NumPy-written dense dumps (f32 and f16,
# --metric ip and l2) and, with run folders of `deno task full`, on that
# run's sparse-pi dumps and a piqa-lstm run's dense dumps of all of dev.
#
# usage: bash bench/open_exact_check.sh OUT [ARTICLES] [SPARSE_RUN] [DENSE_RUN]
#   OUT         a scratch folder (created; its dumps, indexes and answers stay there)
#   ARTICLES    dev articles of the NumPy-written dumps (default 6)
#   SPARSE_RUN  the --out folder of `deno task full` (sparse-pi): its
#               dumps/context_emb, dumps/question_emb and question.json
#   DENSE_RUN   the --out folder of `deno task full --encoder piqa-lstm`: the
#               same on its dense f16 dumps, --metric ip and l2 (real phrase
#               vectors, where the exact search's head stage skips most of the
#               full 8-bit pass)
#
# Each check prints the brute force's JSON line; "identical": true is the
# pass. Exit 1 at the first check that is not identical.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: bash bench/open_exact_check.sh OUT [ARTICLES] [SPARSE_RUN]}
ARTICLES=${2:-6}
SPARSE_RUN=${3:-}
DENSE_RUN=${4:-}
deno=(npx -y deno@2.9.6)
mkdir -p "$OUT"

check() { # label, then the brute force's arguments
  local label=$1
  shift
  local line
  line=$(python3 bench/open_bruteforce.py "$@")
  echo "$label: $line"
  grep -q '"identical": true' <<<"$line" || { echo "$label: NOT identical" >&2; exit 1; }
}

for dtype in f32 f16; do
  d=$OUT/$dtype
  python3 bench/make_dumps.py data/dev-v1.1.json.gz "$d" --articles "$ARTICLES" --dtype "$dtype"
  for metric in ip l2; do
    "${deno[@]}" task index "$d/context_emb" "$d/index_$metric" --context "$d/data.json" \
      --metric "$metric" --overwrite
    "${deno[@]}" task search "$d/data.json" "$d/index_$metric" "$d/question_emb" \
      "$d/pred_$metric.json" --top-k 1 --topk-out "$d/topk_$metric.ndjson"
    check "$dtype $metric" "$d/data.json" "$d/context_emb" "$d/question_emb" \
      "$d/pred_$metric.json" --topk "$d/topk_$metric.ndjson" --context "$d/data.json" \
      --metric "$metric"
  done
done

if [ -n "$SPARSE_RUN" ]; then
  s=$OUT/sparse
  mkdir -p "$s"
  /usr/bin/time -f "index: %e s wall, %U s user, peak %M KB" "${deno[@]}" task index \
    "$SPARSE_RUN/dumps/context_emb" "$s/index" --sparse --context "$SPARSE_RUN/context.json" \
    --overwrite
  /usr/bin/time -f "search: %e s wall, %U s user, peak %M KB" "${deno[@]}" task search \
    "$SPARSE_RUN/question.json" "$s/index" "$SPARSE_RUN/dumps/question_emb" "$s/pred.json" \
    --top-k 1 --topk-out "$s/topk.ndjson"
  check "sparse-pi dev ip" "$SPARSE_RUN/question.json" "$SPARSE_RUN/dumps/context_emb" \
    "$SPARSE_RUN/dumps/question_emb" "$s/pred.json" --topk "$s/topk.ndjson" --sparse \
    --context "$SPARSE_RUN/context.json"
fi
if [ -n "$DENSE_RUN" ]; then
  r=$OUT/dense_run
  mkdir -p "$r"
  for metric in ip l2; do
    "${deno[@]}" task index "$DENSE_RUN/dumps/context_emb" "$r/index_$metric" \
      --context "$DENSE_RUN/context.json" --metric "$metric" --overwrite
    /usr/bin/time -f "search $metric: %e s wall, %U s user, peak %M KB" "${deno[@]}" task search \
      "$DENSE_RUN/question.json" "$r/index_$metric" "$DENSE_RUN/dumps/question_emb" \
      "$r/pred_$metric.json" --top-k 1 --topk-out "$r/topk_$metric.ndjson"
    check "piqa-lstm dev $metric" "$DENSE_RUN/question.json" "$DENSE_RUN/dumps/context_emb" \
      "$DENSE_RUN/dumps/question_emb" "$r/pred_$metric.json" --topk "$r/topk_$metric.ndjson" \
      --context "$DENSE_RUN/context.json" --metric "$metric"
  done
fi
echo "all identical"
