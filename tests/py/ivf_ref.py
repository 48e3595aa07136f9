#!/usr/bin/env python3
"""Independent checks of phraseval's IVF-PQ (tests/search/index/ivfpq/ivf_engine_slow_test.ts).

usage: ivf_ref.py adc SPEC.json     (prints "ok"; exits 1 with a reason otherwise)
       ivf_ref.py faiss SPEC.json   (prints faiss's top-k rows as JSON)

adc: SPEC has index (an ivf-pq index folder), queries (list of float lists),
k, and got (phraseval's top-k per query at nprobe = nlist, refine 0: rows and
scores). The asymmetric distances are recomputed in float64 from the stored
centroids, codebooks, list offsets, rows and codes alone (ip: q.c + sum_m
q_m . codebook_m[code_m]; l2: -sum_m |(q-c)_m - codebook_m[code_m]|^2), every
row scored, the top k taken (larger score first, ties to the lower row), and
compared: the same scores at each rank (to float32 tolerance), the same rows
wherever a rank's score is not tied (within that tolerance) with another.

faiss: SPEC has vectors (raw f32 file), n, d, train (row list), queries, k,
nlist, bpv: faiss IndexIVFPQ(IndexFlatIP(d), d, nlist, bpv, 8,
METRIC_INNER_PRODUCT) trained on those rows, searched at nprobe = nlist.
"""
import json
import sys

import numpy as np


def adc(spec):
    ix = spec["index"]
    h = json.load(open(f"{ix}/index.json"))
    d, n = h["d"], h["phrases"]
    p = h["parameters"]
    nlist, bpv = p["nlist"], p["bpv"]
    dsub = d // bpv
    cent = np.fromfile(f"{ix}/ivf/centroids.f32", dtype="<f4").reshape(nlist, d).astype(np.float64)
    books = np.fromfile(f"{ix}/ivf/codebooks.f32", dtype="<f4").reshape(bpv, 256, dsub)
    books = books.astype(np.float64)
    offs = np.fromfile(f"{ix}/ivf/list_offsets.i64", dtype="<i8")
    rows = np.fromfile(f"{ix}/ivf/list_rows.u32", dtype="<u4")
    codes = np.fromfile(f"{ix}/ivf/codes.u8", dtype=np.uint8)
    # Per row: its list and its bpv codes, undoing the sub-quantizer-major layout.
    row_list = np.empty(n, dtype=np.int64)
    row_codes = np.empty((n, bpv), dtype=np.int64)
    for lst in range(nlist):
        s, e = int(offs[lst]), int(offs[lst + 1])
        m = e - s
        row_list[rows[s:e]] = lst
        block = codes[s * bpv:e * bpv].reshape(bpv, m)
        row_codes[rows[s:e]] = block.T
    assert sorted(rows.tolist()) == list(range(n)), "rows are not a permutation"
    k = spec["k"]
    tol = 1e-4
    for qi, q in enumerate(spec["queries"]):
        q = np.asarray(q, dtype=np.float32).astype(np.float64)
        if h["metric"] == "ip":
            t = np.einsum("ms,mjs->mj", q.reshape(bpv, dsub), books)
            score = cent[row_list] @ q + t[np.arange(bpv)[None, :], row_codes].sum(axis=1)
        else:
            r = (q[None, :] - cent).reshape(nlist, bpv, 1, dsub)
            t = ((r - books[None]) ** 2).sum(axis=3)  # nlist x bpv x 256
            score = -t[row_list[:, None], np.arange(bpv)[None, :], row_codes].sum(axis=1)
        order = np.lexsort((np.arange(n), -score))[:k]
        got = spec["got"][qi]
        want_s = score[order]
        if len(got["rows"]) != len(order):
            return f"query {qi}: {len(got['rows'])} rows, {len(order)} expected"
        for rank, (r, s) in enumerate(zip(got["rows"], got["scores"])):
            if abs(s - want_s[rank]) > tol * max(1.0, abs(want_s[rank])):
                return f"query {qi} rank {rank}: score {s}, NumPy {want_s[rank]}"
            tied = np.sum(np.abs(score - want_s[rank]) <= tol * max(1.0, abs(want_s[rank])))
            if tied == 1 and r != int(order[rank]):
                return f"query {qi} rank {rank}: row {r}, NumPy {int(order[rank])}"
    return None


def faiss_rows(spec):
    import faiss  # installed by tools/test_setup.sh
    faiss.omp_set_num_threads(1)
    d = spec["d"]
    xb = np.fromfile(spec["vectors"], dtype="<f4").reshape(spec["n"], d)
    xq = np.asarray(spec["queries"], dtype=np.float32)
    ivf = faiss.IndexIVFPQ(faiss.IndexFlatIP(d), d, spec["nlist"], spec["bpv"], 8,
                           faiss.METRIC_INNER_PRODUCT)
    ivf.train(np.ascontiguousarray(xb[np.asarray(spec["train"], dtype=np.int64)]))
    ivf.add(xb)
    ivf.nprobe = spec["nlist"]
    _, ix = ivf.search(xq, spec["k"])
    print(json.dumps(ix.tolist()))


def main():
    spec = json.load(open(sys.argv[2]))
    if sys.argv[1] == "adc":
        why = adc(spec)
        if why is not None:
            print(why, file=sys.stderr)
            sys.exit(1)
        print("ok")
    else:
        faiss_rows(spec)


if __name__ == "__main__":
    main()
