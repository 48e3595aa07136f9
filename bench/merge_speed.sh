#!/usr/bin/env bash
# Whole-process time of `merge` against the numpy/scipy reference (bench/reference/merge.py, one
# load per question as PIQA's merge.py) on the same synthetic dumps of SQuAD v1.1 dev (dense f32,
# d = 256, ~7 phrases per word, numpy.savez), run alternately RUNS times each; prints the medians,
# the ratio and the peak memory, and checks that both pred.json files are byte-identical. On a
# shared machine, other jobs slow both sides: the fastest runs are printed too.
# usage: bash bench/merge_speed.sh
#   RUNS=5           runs of each
#   ARTICLES=N       only the first N dev articles (default: all 48, 2,067 paragraphs, 10,570 questions)
#   MAKE_ARGS=...    other bench/make_dumps.py options (e.g. "--dtype f16", "--compressed")
#   MERGE_ARGS=...   other merge options (e.g. "--workers 0")
set -euo pipefail
cd "$(dirname "$0")/.."
DENO=${DENO:-$(npx -y deno@2.9.6 eval 'console.log(Deno.execPath())')}
OUT=bench/out
RUNS=${RUNS:-5}
ARTICLES=${ARTICLES:-}
MAKE_ARGS=${MAKE_ARGS:-}
MERGE_ARGS=${MERGE_ARGS:-}
tag=$(echo "dense${ARTICLES:+_a$ARTICLES}_${MAKE_ARGS}" | tr -c 'A-Za-z0-9_\n' '_')
DIR="$OUT/merge_speed/$tag"
mkdir -p "$OUT/merge_speed"
[ -f "$OUT/dev.json" ] || gunzip -c data/dev-v1.1.json.gz > "$OUT/dev.json"
if [ ! -f "$DIR/data.json" ]; then
  # shellcheck disable=SC2086
  python3 bench/make_dumps.py "$OUT/dev.json" "$DIR" ${ARTICLES:+--articles "$ARTICLES"} $MAKE_ARGS
fi
SPARSE=()
case "$MAKE_ARGS" in *--sparse*) SPARSE=(--sparse) ;; esac
# shellcheck disable=SC2206
OURS=("$DENO" run --allow-read --allow-write pipeline/merge.ts "$DIR/data.json" "$DIR/context_emb"
  "$DIR/question_emb" "$DIR/pred_ours.json" "${SPARSE[@]}" $MERGE_ARGS)
REF=(python3 bench/reference/merge.py "$DIR/data.json" "$DIR/context_emb" "$DIR/question_emb"
  "$DIR/pred_ref.json" "${SPARSE[@]}")
"${OURS[@]}" 2>/dev/null # warm the page cache and Deno's code cache
ours=(); ref=(); ours_mem=(); ref_mem=()
for _ in $(seq "$RUNS"); do
  /usr/bin/time -o "$OUT/t" -f "%e %M" "${OURS[@]}" 2>/dev/null
  read -r s m < <(tail -n 1 "$OUT/t"); ours+=("$s"); ours_mem+=("$m")
  /usr/bin/time -o "$OUT/t" -f "%e %M" "${REF[@]}" 2>/dev/null
  read -r s m < <(tail -n 1 "$OUT/t"); ref+=("$s"); ref_mem+=("$m")
done
med() { printf '%s\n' "$@" | sort -n | sed -n "$((($# + 1) / 2))p"; }
least() { printf '%s\n' "$@" | sort -n | head -n 1; }
o=$(med "${ours[@]}"); r=$(med "${ref[@]}")
ob=$(least "${ours[@]}"); rb=$(least "${ref[@]}")
q=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sum(len(p['qas']) for a in d['data'] for p in a['paragraphs']), sum(len(a['paragraphs']) for a in d['data']))" "$DIR/data.json")
echo "merge on $DIR (questions, paragraphs: $q), median of $RUNS whole-process runs:"
echo "  phraseval merge ${MERGE_ARGS:-(default workers)}   ${o} s   (runs: ${ours[*]}; peak RSS $(med "${ours_mem[@]}") KB)"
echo "  python reference                ${r} s   (runs: ${ref[*]}; peak RSS $(med "${ref_mem[@]}") KB)"
echo "  speed-up                        $(echo "$r / $o" | bc -l | cut -c1-5)x (medians)," \
  "$(echo "$rb / $ob" | bc -l | cut -c1-5)x (fastest runs: $ob s vs $rb s)"
echo "  load average now: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
if cmp -s "$DIR/pred_ours.json" "$DIR/pred_ref.json"; then
  echo "  pred.json: byte-identical ($(wc -c < "$DIR/pred_ref.json") bytes)"
else
  echo "  pred.json: DIFFERENT"; exit 1
fi
