#!/usr/bin/env python3
"""Reference open-domain search and open metrics, brute force with NumPy/SciPy.

usage:
  open_ref.py search data.json context_emb question_emb pred.json [--sparse]
      [--context context.json] [--metric ip|l2] [--top-k K] [--topk-out F]
  open_ref.py metrics data.json topk.ndjson

search: stacks every paragraph's phrase matrix of the dump (paragraph order:
the --context file's paragraphs, else the sorted .npz file names) and scores
every question of data.json against all of them in float64 (inner product,
or -|q-p|^2 with --metric l2). Rows whose fast float64 score lies within a
safe error bound of the k-th best are re-scored exactly (math.fsum of the
float64 products; for l2 the terms 2*q*p, -p*p, -q*q) and ranked by exact
score, then by row: the first maximum wins. Writes pred.json as json.dump
and, with --topk-out, the NDJSON records phraseval's search writes.

metrics: top-k EM/F1 (best over the k phrases), the share of questions whose
gold paragraph is among the top k, and MRR@k (1/rank of the first phrase
that EM-matches a gold answer, 0 if none), with the official v1.1
normalisation; prints one JSON object.
"""
import json
import math
import os
import re
import string
import sys
from collections import Counter

import numpy as np
import scipy.sparse as sp

EPS = 2.0 ** -52


def load_json(path):
    if path.endswith(".gz"):
        import gzip
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def paragraph_ids(data):
    for a in data["data"]:
        for i, _ in enumerate(a["paragraphs"]):
            yield "%s_%d" % (a["title"], i)


def load_matrix(path, sparse):
    if sparse:
        return sp.load_npz(path).tocsr().astype(np.float64)
    return np.load(path)["arr_0"].astype(np.float64)


def search(argv):
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("context_emb")
    ap.add_argument("question_emb")
    ap.add_argument("pred")
    ap.add_argument("--sparse", action="store_true")
    ap.add_argument("--context")
    ap.add_argument("--metric", default="ip")
    ap.add_argument("--top-k", type=int, default=1)
    ap.add_argument("--topk-out")
    a = ap.parse_args(argv)
    if a.context:
        stems = [pid.replace("/", "_") for pid in paragraph_ids(load_json(a.context))]
        ids = list(paragraph_ids(load_json(a.context)))
    else:
        stems = sorted(n[:-4] for n in os.listdir(a.context_emb) if n.endswith(".npz"))
        ids = stems
    mats, phrases, owner = [], [], []
    for p, stem in enumerate(stems):
        m = load_matrix(os.path.join(a.context_emb, stem + ".npz"), a.sparse)
        with open(os.path.join(a.context_emb, stem + ".json"), encoding="utf-8") as f:
            ph = json.load(f)
        mats.append(m)
        for i, t in enumerate(ph):
            phrases.append(t)
            owner.append((p, i))
    C = sp.vstack(mats).tocsr() if a.sparse else np.vstack(mats)
    n = C.shape[0]
    if a.sparse:
        C.sort_indices()
        csq = np.asarray(C.multiply(C).sum(axis=1)).ravel()
        cnnz = np.diff(C.indptr)
        CT = C.T.tocsr()
    else:
        csq = (C * C).sum(axis=1)
        cnnz = np.full(n, C.shape[1])
    cnorm = np.sqrt(csq)
    data = load_json(a.data)
    qids = []
    seen = set()
    for art in data["data"]:
        for para in art["paragraphs"]:
            for qa in para["qas"]:
                if qa["id"] not in seen:
                    seen.add(qa["id"])
                    qids.append(qa["id"])
    k = a.top_k
    preds = {}
    out = open(a.topk_out, "w", encoding="utf-8") if a.topk_out else None
    for qid in qids:
        path = os.path.join(a.question_emb, qid.replace("/", "_") + ".npz")
        if not os.path.exists(path):
            print("Missing " + path, file=sys.stderr)
            continue
        q = load_matrix(path, a.sparse)
        if a.sparse:
            ip = np.asarray((q @ CT).todense()).ravel()
            qsq = float(q.multiply(q).sum())
            qnnz = q.nnz
            qcols = {}
            for c, v in zip(q.indices, q.data):
                qcols.setdefault(int(c), []).append(float(v))
        else:
            qv = q.ravel()
            ip = C @ qv
            qsq = float((qv * qv).sum())
            qnnz = C.shape[1]
        qnorm = math.sqrt(qsq)
        m = cnnz + qnnz + 4
        bip = 4 * m * EPS * cnorm * qnorm
        if a.metric == "l2":
            fast = 2 * ip - csq - qsq
            bound = 2 * bip + 4 * m * EPS * (csq + qsq) + 8 * EPS * (2 * np.abs(ip) + csq + qsq)
        else:
            fast = ip
            bound = bip
        kk = min(k, n)
        top = np.argpartition(-fast, kk - 1)[:kk]
        lower = np.min(fast[top] - bound[top])
        cand = np.nonzero(fast + bound >= lower)[0]

        def exact(i):
            if a.sparse:
                s, e = C.indptr[i], C.indptr[i + 1]
                terms = []
                for c, x in zip(C.indices[s:e], C.data[s:e]):
                    for v in qcols.get(int(c), ()):
                        terms.append(2 * x * v if a.metric == "l2" else x * v)
                    if a.metric == "l2":
                        terms.append(-(x * x))
                if a.metric == "l2":
                    terms.extend(-(v * v) for v in q.data)
                return math.fsum(terms)
            x = C[i]
            if a.metric == "l2":
                return math.fsum(np.concatenate([2 * x * qv, -(x * x), -(qv * qv)]))
            return math.fsum(x * qv)

        ranked = sorted(((-exact(int(i)), int(i)) for i in cand))[:kk]
        preds[qid] = phrases[ranked[0][1]]
        if out:
            for r, (neg, i) in enumerate(ranked):
                p, pi = owner[i]
                out.write(json.dumps({"id": qid, "rank": r + 1, "paragraph": ids[p],
                                      "phrase_index": pi, "phrase": phrases[i],
                                      "score": -neg}) + "\n")
    if out:
        out.close()
    with open(a.pred, "w", encoding="utf-8") as f:
        json.dump(preds, f)


# The official v1.1 normalisation (evaluate-v1.1.py).
def normalize_answer(s):
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def f1_score(prediction, ground_truth):
    p = normalize_answer(prediction).split()
    g = normalize_answer(ground_truth).split()
    common = Counter(p) & Counter(g)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(p)
    recall = 1.0 * num_same / len(g)
    return (2 * precision * recall) / (precision + recall)


def exact_match_score(prediction, ground_truth):
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def metrics(argv):
    data = load_json(argv[0])
    recs = {}
    with open(argv[1], encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            recs.setdefault(r["id"], []).append(r)
    total = em = f1 = hit = mrr = 0.0
    k = 0
    for art in data["data"]:
        for i, para in enumerate(art["paragraphs"]):
            pid = "%s_%d" % (art["title"], i)
            for qa in para["qas"]:
                total += 1
                golds = [x["text"] for x in qa["answers"]]
                cands = sorted(recs.get(qa["id"], []), key=lambda r: r["rank"])
                k = max(k, len(cands))
                if not cands:
                    continue
                em += max(max(exact_match_score(c["phrase"], g) for g in golds) for c in cands)
                f1 += max(max(f1_score(c["phrase"], g) for g in golds) for c in cands)
                hit += any(c["paragraph"] == pid for c in cands)
                for c in cands:
                    if any(exact_match_score(c["phrase"], g) for g in golds):
                        mrr += 1.0 / c["rank"]
                        break
    print(json.dumps({"k": k, "top_k_exact_match": 100.0 * em / total,
                      "top_k_f1": 100.0 * f1 / total,
                      "paragraph_recall": 100.0 * hit / total, "mrr": mrr / total}))


if __name__ == "__main__":
    if sys.argv[1] == "search":
        search(sys.argv[2:])
    elif sys.argv[1] == "metrics":
        metrics(sys.argv[2:])
    else:
        sys.exit(__doc__)
