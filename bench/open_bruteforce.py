#!/usr/bin/env python3
"""Brute-force check of exact open search: every question against ALL phrases.

usage: open_bruteforce.py data.json context_emb question_emb pred.json
           [--topk topk.ndjson] [--sparse] [--context context.json]
           [--metric ip|l2] [--chunk 64]

Stacks every paragraph matrix of the dump (paragraph order: the --context
file's paragraphs, else the sorted .npz names, as `deno task index` does),
scores each question against every row in float64 (NumPy for dense f32/f16,
SciPy for CSR: the rows restricted to the questions' columns, questions in
chunks, P·Qᵀ), and takes the first maximum (np.argmax) of:

- plain: the float64 scores (inner product, or 2·q·p − |p|² − |q|² for l2);
- exact: the rows whose float64 score lies within a safe error bound of the
  maximum re-scored with math.fsum of the float64 products (l2: the terms
  2·q·p, −p², −q²), first maximum of the exact scores: the rule phraseval's
  search states.

Compares both with phraseval's pred.json (the phrase text) and, with --topk,
with its rank-1 rows (paragraph id, phrase index), and prints one JSON
object of counts (and the first few differences).
"""
import argparse
import gzip
import json
import math
import os
import sys
import time

import numpy as np
import scipy.sparse as sp

EPS = 2.0 ** -52


def load_json(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def paragraph_ids(data):
    for a in data["data"]:
        for i, _ in enumerate(a["paragraphs"]):
            yield "%s_%d" % (a["title"], i)


def question_ids(data):
    seen, out = set(), []
    for a in data["data"]:
        for p in a["paragraphs"]:
            for qa in p["qas"]:
                if qa["id"] not in seen:
                    seen.add(qa["id"])
                    out.append(qa["id"])
    return out


def stem(pid):
    return pid.replace("/", "_")


def load_matrix(path, sparse):
    if sparse:
        return sp.load_npz(path).tocsr().astype(np.float64)
    return np.load(path)["arr_0"].astype(np.float64)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data")
    ap.add_argument("context_emb")
    ap.add_argument("question_emb")
    ap.add_argument("pred")
    ap.add_argument("--topk")
    ap.add_argument("--sparse", action="store_true")
    ap.add_argument("--context")
    ap.add_argument("--metric", default="ip", choices=["ip", "l2"])
    ap.add_argument("--chunk", type=int, default=64)
    a = ap.parse_args()
    t0 = time.time()
    if a.context:
        ids = list(paragraph_ids(load_json(a.context)))
    else:
        ids = sorted(n[:-4] for n in os.listdir(a.context_emb) if n.endswith(".npz"))
    mats, phrases, owner = [], [], []
    for p, pid in enumerate(ids):
        s = stem(pid)
        mats.append(load_matrix(os.path.join(a.context_emb, s + ".npz"), a.sparse))
        with open(os.path.join(a.context_emb, s + ".json"), encoding="utf-8") as f:
            ph = json.load(f)
        for i, t in enumerate(ph):
            phrases.append(t)
            owner.append((p, i))
    P = sp.vstack(mats).tocsr() if a.sparse else np.vstack(mats)
    del mats
    n = P.shape[0]
    data = load_json(a.data)
    qids = []
    qmats = []
    for qid in question_ids(data):
        path = os.path.join(a.question_emb, stem(qid) + ".npz")
        if os.path.exists(path):
            qids.append(qid)
            qmats.append(load_matrix(path, a.sparse))
    if a.sparse:
        P.sum_duplicates()
        P.sort_indices()
        psq = np.asarray(P.multiply(P).sum(axis=1)).ravel()
        pnnz = np.diff(P.indptr)
        Q = sp.vstack(qmats).tocsr()
        Q.sum_duplicates()
        cols = np.unique(Q.indices)
        PU = P.tocsc()[:, cols].tocsr()
        QU = sp.csr_matrix((Q.data, np.searchsorted(cols, Q.indices), Q.indptr),
                           shape=(Q.shape[0], len(cols)))
        qsq_all = np.asarray(Q.multiply(Q).sum(axis=1)).ravel()
        qnnz_all = np.diff(Q.indptr)
    else:
        Q = np.vstack([q.reshape(1, -1) for q in qmats])
        psq = (P * P).sum(axis=1)
        pnnz = np.full(n, P.shape[1])
        qsq_all = (Q * Q).sum(axis=1)
        qnnz_all = np.full(Q.shape[0], P.shape[1])
    del qmats
    pnorm = np.sqrt(psq)
    t_load = time.time() - t0

    def exact(row, j):
        if a.sparse:
            qs, qe = Q.indptr[j], Q.indptr[j + 1]
            qcols = dict(zip(Q.indices[qs:qe].tolist(), Q.data[qs:qe].tolist()))
            s, e = P.indptr[row], P.indptr[row + 1]
            terms = []
            for c, x in zip(P.indices[s:e].tolist(), P.data[s:e].tolist()):
                v = qcols.get(c)
                if v is not None:
                    terms.append(2 * x * v if a.metric == "l2" else x * v)
                if a.metric == "l2":
                    terms.append(-(x * x))
            if a.metric == "l2":
                terms.extend(-(v * v) for v in Q.data[qs:qe].tolist())
            return math.fsum(terms)
        x, v = P[row], Q[j]
        if a.metric == "l2":
            return math.fsum(list(2 * x * v) + list(-(x * x)) + list(-(v * v)))
        return math.fsum(list(x * v))

    plain_rows, exact_rows = [], []
    t1 = time.time()
    for b in range(0, len(qids), a.chunk):
        js = range(b, min(b + a.chunk, len(qids)))
        if a.sparse:
            ip = np.asarray(PU @ QU[b:js.stop].T.toarray())
        else:
            ip = P @ Q[b:js.stop].T
        for u, j in enumerate(js):
            col = ip[:, u]
            qsq = float(qsq_all[j])
            if a.metric == "l2":
                fast = 2 * col - psq - qsq
            else:
                fast = col
            best = int(np.argmax(fast))
            plain_rows.append(best)
            # Error bound of each float64 score (as tests/py/open_ref.py).
            m = pnnz + int(qnnz_all[j]) + 4
            bip = 4 * m * EPS * pnorm * math.sqrt(qsq)
            if a.metric == "l2":
                bound = 2 * bip + 4 * m * EPS * (psq + qsq) + \
                    8 * EPS * (2 * np.abs(col) + psq + qsq)
            else:
                bound = bip
            lower = fast[best] - bound[best]
            cand = np.nonzero(fast + bound >= lower)[0]
            if len(cand) == 1:
                exact_rows.append(best)
                continue
            top, top_s = -1, -math.inf
            for r in cand.tolist():
                s = exact(r, j)
                if s > top_s:
                    top, top_s = r, s
            exact_rows.append(top)
    t_score = time.time() - t1

    with open(a.pred, encoding="utf-8") as f:
        pred = json.load(f)
    rank1 = {}
    if a.topk:
        with open(a.topk, encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                if r["rank"] == 1:
                    rank1[r["id"]] = (r["paragraph"], r["phrase_index"])
    out = {
        "rows": n,
        "questions": len(qids),
        "metric": a.metric,
        "load_s": round(t_load, 1),
        "score_s": round(t_score, 1),
        "pred_questions": len(pred),
    }
    for name, rows in (("plain", plain_rows), ("exact", exact_rows)):
        same_text = sum(1 for j, q in enumerate(qids) if pred.get(q) == phrases[rows[j]])
        out[name + "_same_text"] = same_text
        diffs = []
        if a.topk:
            same_row = 0
            for j, q in enumerate(qids):
                p, i = owner[rows[j]]
                if rank1.get(q) == (ids[p], i):
                    same_row += 1
                elif len(diffs) < 3:
                    diffs.append({"id": q, "brute": [ids[p], i], "phraseval": rank1.get(q)})
            out[name + "_same_row"] = same_row
            out[name + "_first_differences"] = diffs
    out["identical"] = out["exact_same_text"] == len(qids) == len(pred) and (
        not a.topk or out["exact_same_row"] == len(qids))
    print(json.dumps(out))
    return 0 if out["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
