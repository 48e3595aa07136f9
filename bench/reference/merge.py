#!/usr/bin/env python3
"""Reference PI-SQuAD merge, the way PIQA's merge.py does it, with exact scores.

usage: python3 bench/reference/merge.py data.json context_emb question_emb pred.json [--sparse]

Like PIQA's merge.py: builds the question -> paragraph map of the dataset (a
dict: a repeated question id keeps its first position and its last
paragraph), then for EACH question loads its paragraph's ``.npz`` and ``.json``
and its question ``.npz`` (one load per question), scores every phrase by the
inner product with the question vector, answers with the phrase at the first
maximum, and ``json.dump``s the predictions. A missing file prints
``Missing <path>`` (on stderr) and leaves the question unanswered; so does a
paragraph with no phrases. Dumps may be folders or ``.zip`` files of them
(entries at the root or under one top folder). File names are the ids with
``/`` replaced by ``_``.

Exact, reproducible scores: every score is computed in float64 (float32 and
float16 values and their products are exact in float64); the rows whose fast
score is within a safe error bound of the maximum are re-scored with
``math.fsum`` (correctly rounded) and the first row with the largest exact
score wins. phraseval's ``merge`` applies the same rule, so both agree to the
last digit, ties included.

Bad input (exit 2, one line on stderr naming the file): a sparse file without
--sparse or a dense one with it, an unreadable .npz, a dense .npz without
arr_0, a matrix that is not 2-d or not float16/float32, a question that is
not 1 x d, d differing between question and context, NaN/Inf values, a
phrase list that is not a list of strings or whose length differs from the
number of rows, an unsafe id.
"""
import argparse
import gzip
import io
import json
import math
import os
import sys
import zipfile

import numpy as np
import scipy.sparse as sp

EPS = 2.0 ** -52


class BadInput(Exception):
    pass


def stem(id_):
    if id_ == "" or "\0" in id_ or ".." in id_.split("/"):
        raise BadInput("unsafe id %r" % id_)
    return id_.replace("/", "_")


class Dump:
    """A dump folder, or a .zip of one (PIQA extracts it next to the zip)."""

    def __init__(self, path):
        self.path = path
        self.zip = None
        if path.endswith(".zip") and os.path.isfile(path):
            self.display = path[:-4]
            self.zip = zipfile.ZipFile(path)
            names = [n for n in self.zip.namelist() if not n.endswith("/")]
            for n in self.zip.namelist():
                if n.startswith("/") or ".." in n.split("/") or "\\" in n or "\0" in n:
                    raise BadInput("%s: entry %r escapes the archive folder" % (path, n))
            tops = {n.split("/", 1)[0] for n in names}
            self.root = ""
            if names and all("/" in n for n in names) and len(tops) == 1:
                self.root = tops.pop() + "/"
            self.members = set(names)
        else:
            self.display = path

    def shown(self, name):
        return os.path.join(self.display, name)

    def exists(self, name):
        if self.zip is not None:
            return self.root + name in self.members
        return os.path.exists(os.path.join(self.path, name))

    def read(self, name):
        if self.zip is not None:
            return self.zip.read(self.root + name)
        with open(os.path.join(self.path, name), "rb") as f:
            return f.read()

    def label(self, name):
        if self.zip is not None:
            return "%s:%s" % (self.path, self.root + name)
        return os.path.join(self.path, name)


def load_matrix(dump, name, sparse):
    """Loads an N x d matrix: dense float64 array, or CSR with float64 data."""
    label = dump.label(name)
    try:
        z = np.load(io.BytesIO(dump.read(name)), allow_pickle=False)
        keys = set(z.files)
    except Exception as e:
        raise BadInput("%s: unreadable npz (%s)" % (label, e))
    is_sparse = "format" in keys and "shape" in keys and "data" in keys
    if is_sparse and not sparse:
        raise BadInput("%s: is a scipy sparse matrix; run merge with --sparse" % label)
    if not is_sparse and sparse:
        raise BadInput("%s: is a dense array; run merge without --sparse" % label)
    if sparse:
        try:
            m = sp.load_npz(io.BytesIO(dump.read(name)))
        except Exception as e:
            raise BadInput("%s: unreadable sparse npz (%s)" % (label, e))
        if m.format not in ("csr", "csc"):
            raise BadInput("%s: sparse format %s (expected csr or csc)" % (label, m.format))
        m = m.tocsr() if m.format == "csc" else m
        dtype = m.data.dtype
    else:
        if "arr_0" not in keys:
            raise BadInput("%s: no arr_0 array" % label)
        m = z["arr_0"]
        dtype = m.dtype
    if dtype not in (np.float16, np.float32):
        raise BadInput("%s: dtype %s (expected float16 or float32)" % (label, dtype))
    if len(m.shape) != 2:
        raise BadInput("%s: %d-d array (expected a 2-d matrix)" % (label, len(m.shape)))
    data = m.data if sparse else m
    bad = ~np.isfinite(data)
    if bad.any():
        k = int(np.argmax(bad.ravel()))
        row = int(np.searchsorted(m.indptr, k, side="right") - 1) if sparse else k // m.shape[1]
        raise BadInput("%s: row %d: NaN or infinite value" % (label, row))
    if sparse:
        m = sp.csr_matrix((m.data.astype(np.float64), m.indices, m.indptr), shape=m.shape)
    else:
        m = m.astype(np.float64)
    return m


def best_dense(c, q):
    """Index of the first row of c with the largest exact inner product with q."""
    n, d = c.shape
    fast = c @ q
    bound = 2.0 * d * EPS * (np.abs(c) @ np.abs(q))
    m = int(np.argmax(fast))
    cand = np.nonzero(fast + bound >= fast[m] - bound[m])[0]
    best, best_v = -1, None
    for i in cand.tolist():
        v = math.fsum((c[i] * q).tolist())
        if best_v is None or v > best_v:
            best, best_v = i, v
    return best


def best_sparse(c, q):
    """Same for CSR c (float64 data) and a 1 x d CSR q (float64 data)."""
    by_col = {}
    for col, v in zip(q.indices.tolist(), q.data.tolist()):
        by_col.setdefault(col, []).append(v)
    cols = np.array(sorted(by_col), dtype=np.int64)
    vals = np.array([math.fsum(by_col[k]) for k in cols.tolist()])
    avals = np.array([math.fsum(abs(v) for v in by_col[k]) for k in cols.tolist()])
    if len(cols):
        pos = np.minimum(np.searchsorted(cols, c.indices), len(cols) - 1)
        hit = cols[pos] == c.indices
    else:
        pos = np.zeros(len(c.indices), dtype=np.int64)
        hit = np.zeros(len(c.indices), dtype=bool)
    qv = np.where(hit, vals[pos] if len(cols) else 0.0, 0.0)
    qa = np.where(hit, avals[pos] if len(cols) else 0.0, 0.0)
    n = c.shape[0]
    nnz = np.diff(c.indptr)
    rows = np.repeat(np.arange(n), nnz)
    fast = np.bincount(rows, weights=c.data * qv, minlength=n)
    bound = 2.0 * (nnz + 2) * EPS * np.bincount(rows, weights=np.abs(c.data) * qa, minlength=n)
    m = int(np.argmax(fast))
    cand = np.nonzero(fast + bound >= fast[m] - bound[m])[0]
    best, best_v = -1, None
    for i in cand.tolist():
        lo, hi = c.indptr[i], c.indptr[i + 1]
        prods = []
        for col, a in zip(c.indices[lo:hi].tolist(), c.data[lo:hi].tolist()):
            for v in by_col.get(col, ()):
                prods.append(a * v)
        v = math.fsum(prods)
        if best_v is None or v > best_v:
            best, best_v = i, v
    return best


def answer(cdump, qdump, cid, qid, sparse):
    qname = stem(qid) + ".npz"
    cname = stem(cid) + ".npz"
    jname = stem(cid) + ".json"
    for dump, name in ((qdump, qname), (cdump, cname), (cdump, jname)):
        if not dump.exists(name):
            print("Missing %s" % dump.shown(name), file=sys.stderr)
            return None
    q = load_matrix(qdump, qname, sparse)
    c = load_matrix(cdump, cname, sparse)
    try:
        phrases = json.loads(cdump.read(jname).decode("utf-8"))
    except Exception as e:
        raise BadInput("%s: invalid phrase list (%s)" % (cdump.label(jname), e))
    if not isinstance(phrases, list) or not all(isinstance(p, str) for p in phrases):
        raise BadInput("%s: not a JSON list of strings" % cdump.label(jname))
    if q.shape[0] != 1:
        raise BadInput("%s: shape (%d, %d), expected a 1 x d question vector"
                       % (qdump.label(qname), q.shape[0], q.shape[1]))
    if q.shape[1] != c.shape[1]:
        raise BadInput("%s: d = %d but the context %s has d = %d"
                       % (qdump.label(qname), q.shape[1], cdump.label(cname), c.shape[1]))
    if len(phrases) != c.shape[0]:
        raise BadInput("%s: %d phrases but %s has %d rows"
                       % (cdump.label(jname), len(phrases), cdump.label(cname), c.shape[0]))
    if c.shape[0] == 0:
        return None
    i = best_sparse(c, q) if sparse else best_dense(c, q.reshape(-1))
    return phrases[i]


def main():
    ap = argparse.ArgumentParser(description="PI-SQuAD merge (reference)")
    ap.add_argument("data")
    ap.add_argument("context_emb")
    ap.add_argument("question_emb")
    ap.add_argument("pred")
    ap.add_argument("--sparse", action="store_true")
    args = ap.parse_args()
    try:
        if args.data == "-":
            raw = sys.stdin.buffer.read()
        else:
            with open(args.data, "rb") as f:
                raw = f.read()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        dataset = json.loads(raw.decode("utf-8"))["data"]
        q2c = {}
        for article in dataset:
            for para_idx, paragraph in enumerate(article["paragraphs"]):
                cid = "%s_%d" % (article["title"], para_idx)
                for qa in paragraph["qas"]:
                    q2c[qa["id"]] = cid
        cdump = Dump(args.context_emb)
        qdump = Dump(args.question_emb)
        predictions = {}
        for qid, cid in q2c.items():
            a = answer(cdump, qdump, cid, qid, args.sparse)
            if a is not None:
                predictions[qid] = a
    except BadInput as e:
        print("merge.py: %s" % e, file=sys.stderr)
        sys.exit(2)
    if args.pred == "-":
        json.dump(predictions, sys.stdout)
        sys.stdout.flush()
    else:
        tmp = args.pred + ".tmp"
        with open(tmp, "w") as fp:
            json.dump(predictions, fp)
        os.replace(tmp, args.pred)


if __name__ == "__main__":
    main()
