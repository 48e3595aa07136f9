#!/usr/bin/env python3
"""Deterministic synthetic PI-SQuAD dumps, written with numpy / scipy.

usage: make_dumps.py data.json OUTDIR [options]

For each paragraph of a SQuAD file (``.json`` or ``.json.gz``) writes
``OUTDIR/context_emb/<pid>.npz`` + ``<pid>.json`` and, for each of its
questions, ``OUTDIR/question_emb/<qid>.npz``, exactly as a PI-SQuAD encoder
would (``numpy.savez`` / ``numpy.savez_compressed`` for dense matrices,
``scipy.sparse.save_npz`` for sparse ones). Also writes ``OUTDIR/data.json``:
the (possibly truncated, ``--articles``) dataset the dumps belong to.

Phrases are real substrings of the context: every span of 1..``--max-len``
whitespace-separated words (about 7 phrases per word). Vectors come from a
seeded RNG (one generator per paragraph, so any subset is reproducible). A
question vector is its gold answer's phrase vector plus noise when the answer
is one of the phrases (so predictions score above zero), else noise. Every
paragraph also gets exact duplicate rows (some of them copies of a gold row
at an earlier index, which the first-maximum rule must pick) and rows one ulp
away from a gold row (near-ties only the exact re-scoring can order).

Options:
  --articles N       only the first N articles (default: all)
  --paragraphs N     only the first N paragraphs of each article (default: all)
  --dim D            dense dimension (default 256)
  --dtype f32|f16    dense element type (default f32)
  --compressed       numpy.savez_compressed instead of numpy.savez
  --sparse           scipy CSR matrices, d = --sparse-dim, ~--nnz values a row
  --sparse-dim D     sparse dimension (default 2**20)
  --nnz K            values per sparse row (default 30)
  --csc              sparse: save the context matrices as CSC
  --seed S           RNG seed (default 0)
  --max-len L        longest phrase in words (default 7)
  --drop K           remove K question .npz, K context .npz and K context .json
                     files (chosen by the seed) to exercise "Missing" lines
  --meta             also write <pid>.meta.json side files (readers ignore them)
  --zip              also write OUTDIR/context_emb.zip (deflated, entries under
                     context_emb/) and OUTDIR/question_emb.zip (stored, entries
                     at the root)
"""
import argparse
import gzip
import json
import os
import re
import shutil
import sys
import zipfile
import zlib

import numpy as np
import scipy.sparse as sp

WORD = re.compile(r"\S+")


def stem(i):
    return i.replace("/", "_")


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw.decode("utf-8"))


def phrases_of(context, max_len):
    spans = [(m.start(), m.end()) for m in WORD.finditer(context)]
    out = []
    for i in range(len(spans)):
        for length in range(1, max_len + 1):
            if i + length > len(spans):
                break
            out.append(context[spans[i][0]:spans[i + length - 1][1]])
    return out


def feature_cols(text, rng, nnz, dim):
    """Hashed word features of a phrase plus random ones, sorted and unique."""
    cols = {zlib.crc32(w.lower().encode("utf-8")) % dim for w in text.split()}
    while len(cols) < nnz:
        cols.add(int(rng.integers(0, dim)))
    return np.array(sorted(cols), dtype=np.int32)


def dense_dumps(phrases, golds, rng, args):
    n, d = len(phrases), args.dim
    c = rng.standard_normal((n, d), dtype=np.float32)
    # Exact duplicate rows.
    for _ in range(min(3, n // 2)):
        src, dst = rng.integers(0, n, size=2)
        c[dst] = c[src]
    qs = []
    for g in golds:
        if g is not None and n > 0:
            q = c[g] + rng.standard_normal(d, dtype=np.float32) * np.float32(0.8)
            r = rng.random()
            if r < 0.3 and g > 0:
                c[int(rng.integers(0, g))] = c[g]  # a tie the first index must win
            elif r < 0.5:
                k = int(rng.integers(0, n))
                if k != g:
                    c[k] = c[g]
                    j = int(rng.integers(0, d))
                    c[k, j] = np.nextafter(c[k, j], np.float32(np.inf), dtype=np.float32)
        else:
            q = rng.standard_normal(d, dtype=np.float32)
        qs.append(q.reshape(1, d))
    if args.dtype == "f16":
        c = c.astype(np.float16)
        qs = [q.astype(np.float16) for q in qs]
    return c, qs


def sparse_dumps(phrases, golds, rng, args):
    dim, k = args.sparse_dim, args.nnz
    n = len(phrases)
    rows = [feature_cols(p, rng, k, dim) for p in phrases]
    vals = [rng.standard_normal(len(r), dtype=np.float32) for r in rows]
    for _ in range(min(3, n // 2)):
        src, dst = (int(x) for x in rng.integers(0, n, size=2))
        rows[dst], vals[dst] = rows[src].copy(), vals[src].copy()
    qs = []
    for g in golds:
        if g is not None and n > 0:
            keep = rng.random(len(rows[g])) < 0.7
            qc = set(rows[g][keep].tolist())
            while len(qc) < k:
                qc.add(int(rng.integers(0, dim)))
            qcols = np.array(sorted(qc), dtype=np.int32)
            qv = rng.standard_normal(len(qcols), dtype=np.float32)
            pos = np.searchsorted(qcols, rows[g][keep])
            qv[pos] += vals[g][keep] * np.float32(2)
            if rng.random() < 0.3 and g > 0:
                t = int(rng.integers(0, g))
                rows[t], vals[t] = rows[g].copy(), vals[g].copy()
        else:
            qcols = np.array(sorted({int(x) for x in rng.integers(0, dim, size=k)}), np.int32)
            qv = rng.standard_normal(len(qcols), dtype=np.float32)
        qs.append(sp.csr_matrix((qv, qcols, np.array([0, len(qcols)], np.int32)), shape=(1, dim)))
    indptr = np.zeros(n + 1, dtype=np.int32)
    indptr[1:] = np.cumsum([len(r) for r in rows])
    indices = np.concatenate(rows) if n else np.zeros(0, np.int32)
    data = np.concatenate(vals) if n else np.zeros(0, np.float32)
    c = sp.csr_matrix((data, indices, indptr), shape=(n, dim))
    if args.csc:
        c = c.tocsc()
    return c, qs


def save_dense(path, m, compressed):
    (np.savez_compressed if compressed else np.savez)(path, m)


def zip_folder(folder, zpath, top, compression):
    names = sorted(os.listdir(folder))
    with zipfile.ZipFile(zpath, "w", compression=compression) as z:
        if top:
            z.write(folder, top + "/")
        for name in names:
            z.write(os.path.join(folder, name), (top + "/" if top else "") + name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data")
    ap.add_argument("out")
    ap.add_argument("--articles", type=int)
    ap.add_argument("--paragraphs", type=int)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--dtype", choices=["f32", "f16"], default="f32")
    ap.add_argument("--compressed", action="store_true")
    ap.add_argument("--sparse", action="store_true")
    ap.add_argument("--sparse-dim", type=int, default=2**20)
    ap.add_argument("--nnz", type=int, default=30)
    ap.add_argument("--csc", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-len", type=int, default=7)
    ap.add_argument("--drop", type=int, default=0)
    ap.add_argument("--meta", action="store_true")
    ap.add_argument("--zip", action="store_true")
    args = ap.parse_args()

    dataset = load(args.data)
    if args.articles is not None:
        dataset["data"] = dataset["data"][:args.articles]
    if args.paragraphs is not None:
        for article in dataset["data"]:
            article["paragraphs"] = article["paragraphs"][:args.paragraphs]
    cdir = os.path.join(args.out, "context_emb")
    qdir = os.path.join(args.out, "question_emb")
    for d in (cdir, qdir):
        if os.path.isdir(d):
            shutil.rmtree(d)
        os.makedirs(d)
    with open(os.path.join(args.out, "data.json"), "w") as f:
        json.dump(dataset, f)

    counter = 0
    for article in dataset["data"]:
        for pi, para in enumerate(article["paragraphs"]):
            pid = "%s_%d" % (article["title"], pi)
            rng = np.random.default_rng([args.seed, counter])
            counter += 1
            phrases = phrases_of(para["context"], args.max_len)
            index = {}
            for i, p in enumerate(phrases):
                index.setdefault(p, i)
            golds = []
            for qa in para["qas"]:
                ans = qa.get("answers") or []
                golds.append(index.get(ans[0]["text"]) if ans else None)
            if args.sparse:
                c, qs = sparse_dumps(phrases, golds, rng, args)
                sp.save_npz(os.path.join(cdir, stem(pid) + ".npz"), c)
                for qa, q in zip(para["qas"], qs):
                    sp.save_npz(os.path.join(qdir, stem(qa["id"]) + ".npz"), q)
            else:
                c, qs = dense_dumps(phrases, golds, rng, args)
                save_dense(os.path.join(cdir, stem(pid) + ".npz"), c, args.compressed)
                for qa, q in zip(para["qas"], qs):
                    save_dense(os.path.join(qdir, stem(qa["id"]) + ".npz"), q, args.compressed)
            with open(os.path.join(cdir, stem(pid) + ".json"), "w") as f:
                json.dump(phrases, f)
            if args.meta:
                with open(os.path.join(cdir, stem(pid) + ".meta.json"), "w") as f:
                    json.dump({"id": pid, "phrases": len(phrases)}, f)

    if args.drop:
        rng = np.random.default_rng([args.seed, 1 << 30])
        for folder, suffix in ((qdir, ".npz"), (cdir, ".npz"), (cdir, ".json")):
            names = sorted(n for n in os.listdir(folder)
                           if n.endswith(suffix) and not n.endswith(".meta.json"))
            for i in rng.choice(len(names), size=min(args.drop, len(names)), replace=False):
                os.remove(os.path.join(folder, names[int(i)]))

    if args.zip:
        zip_folder(cdir, os.path.join(args.out, "context_emb.zip"), "context_emb",
                   zipfile.ZIP_DEFLATED)
        zip_folder(qdir, os.path.join(args.out, "question_emb.zip"), "", zipfile.ZIP_STORED)
    print("wrote %d paragraphs to %s" % (counter, args.out), file=sys.stderr)


if __name__ == "__main__":
    main()
