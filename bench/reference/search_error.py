#!/usr/bin/env python3
"""Brute-force recount of `report --search-error` (report/search_error.ts).

usage: search_error.py DATA EXACT_PRED EXACT_TOPK [APPROX_PRED APPROX_TOPK]...

DATA is a SQuAD v1.1 file (.json or .json.gz); each search is its prediction
file and its top-k NDJSON file (search --topk-out). EM per question is the
official v1.1 script's (evaluate_v1.py beside this file: normalize_answer,
exact_match_score, metric_max_over_ground_truths), a question without a
prediction counting 0. For each approximate search it writes, as one JSON
object on stdout:

  questions   n, the questions of DATA
  exact_right questions the exact search gets right
  settings    per APPROX, in the order given:
                cells     {right_both, lost, wrong_both, saved}: EM 1/1, 1/0,
                          0/0 and 0/1 of exact/approximate, counted one question
                          at a time
                recall    {k: percent} for k in 1, 5, 10 and the approximate
                          search's deepest rank (those up to it): the share of
                          the questions with an exact rank-1 record whose
                          (paragraph, phrase_index) is among the approximate
                          records of rank <= k

Independent of the TypeScript: its own reading of the files, its own loops.
"""
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from evaluate_v1 import exact_match_score, metric_max_over_ground_truths  # noqa: E402


def load_json(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def questions(data):
    out = []
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                out.append((qa["id"], [a["text"] for a in qa["answers"]]))
    return out


def em_list(qs, pred):
    out = []
    for qid, golds in qs:
        if qid not in pred:
            out.append(0)
        else:
            out.append(1 if metric_max_over_ground_truths(exact_match_score, pred[qid], golds) else 0)
    return out


def ranks(path):
    by_id = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            r = json.loads(line)
            by_id.setdefault(r["id"], []).append((r["rank"], r["paragraph"], r["phrase_index"]))
    for v in by_id.values():
        v.sort()
    return by_id


def main():
    args = sys.argv[1:]
    if len(args) < 5 or len(args) % 2 != 1:
        sys.exit(__doc__)
    qs = questions(load_json(args[0]))
    exact_em = em_list(qs, load_json(args[1]))
    exact_top1 = {qid: (r[0][1], r[0][2]) for qid, r in ranks(args[2]).items() if r[0][0] == 1}
    settings = []
    for i in range(3, len(args), 2):
        em = em_list(qs, load_json(args[i]))
        cells = {"right_both": 0, "lost": 0, "wrong_both": 0, "saved": 0}
        for e, a in zip(exact_em, em):
            if e == 1 and a == 1:
                cells["right_both"] += 1
            elif e == 1 and a == 0:
                cells["lost"] += 1
            elif e == 0 and a == 0:
                cells["wrong_both"] += 1
            else:
                cells["saved"] += 1
        approx = ranks(args[i + 1])
        deepest = max(r[-1][0] for r in approx.values())
        recall = {}
        for k in sorted({1, 5, 10, deepest}):
            if k > deepest:
                continue
            hits = 0
            for qid, top in exact_top1.items():
                if any((p, x) == top for rank, p, x in approx.get(qid, []) if rank <= k):
                    hits += 1
            recall[str(k)] = 100.0 * hits / len(exact_top1)
        settings.append({"cells": cells, "recall": recall})
    json.dump({"questions": len(qs), "exact_right": sum(exact_em), "settings": settings},
              sys.stdout)


if __name__ == "__main__":
    main()
