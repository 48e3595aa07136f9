"""How many rows an IVF search must scan to find each question's exact best
phrase, with phraseval's lists as built and with two ways of probing them
that phraseval does not have (yet): spilled assignment and adaptive nprobe.

An IVF search can only find a phrase in a list it probes, so the share of
questions whose exact top-1 row lies in a probed list ("coarse recall") caps
its recall@1, whatever the codes and the re-scoring do; the rows in the
probed lists are what the scan kernel's time is proportional to. For an
`ivf-pq` index folder (metric ip) and the questions of a raw float32 file
(`queries.f32`, as `bench/index_bench.ts` writes it) this prints, per
setting, the coarse recall and the mean rows and lists a question probes:

- **lists as built**: the `nprobe` lists of largest `q · c`.
- **spilled (SOAR)**: each row also in a second list, the one that minimizes
  `|x - c|^2 + lam * (r^ . (x - c))^2` over the lists but its own (`r^` its
  unit residual in its own list; Sun et al. 2023, "SOAR: improved indexing
  for approximate nearest neighbor search"), so a question finds a row in
  either of its two lists; every list holds its spilled rows too (the rows
  scanned count them).
- **adaptive**: each question probes the lists with
  `q · c >= max q · c - tau * |q| * mean |c|`, at least `--min-probe`, at
  most `--max-probe` (as built, or spilled).

The exact top-1 is taken in float32 (numpy), which may differ from
phraseval's exact search on a near tie. Needs numpy only.

    python3 bench/coarse_recall.py --index OUT/ivf4 --queries OUT/queries.f32 \
      [--nprobes 8,16,24,32,40] [--lams 1] [--taus 0.08,0.1,0.12]
"""
import argparse
import json
import os
import sys
import time

import numpy as np


def load(index, queries):
    with open(os.path.join(index, "index.json")) as f:
        head = json.load(f)
    if head.get("kind") != "ivf-pq" or head.get("metric") != "ip" or head.get("vectors") != "dense":
        sys.exit(f"coarse_recall.py: {index}: needs a dense ivf-pq index with metric ip")
    d, n, nlist = head["d"], head["phrases"], head["parameters"]["nlist"]
    dtype = {"f16": "<f2", "f32": "<f4"}[head["dtype"]]
    x = np.fromfile(os.path.join(index, f"vectors.{head['dtype']}"), dtype=dtype)
    x = x.reshape(n, d).astype(np.float32)
    q = np.fromfile(queries, dtype="<f4")
    if q.size % d:
        sys.exit(f"coarse_recall.py: {queries}: {q.size} floats is not a multiple of d = {d}")
    q = q.reshape(-1, d)
    c = np.fromfile(os.path.join(index, "ivf", "centroids.f32"), dtype="<f4").reshape(nlist, d)
    offs = np.fromfile(os.path.join(index, "ivf", "list_offsets.i64"), dtype="<i8")
    rows = np.fromfile(os.path.join(index, "ivf", "list_rows.u32"), dtype="<u4")
    lists = np.empty(n, dtype=np.int64)
    for j in range(nlist):
        lists[rows[offs[j]:offs[j + 1]]] = j
    return x, q, c, lists


def spill(x, c, lists, lam, chunk=65536):
    """Each row's second list (SOAR's loss, its own list left out)."""
    cn = (c * c).sum(1)
    out = np.empty(len(x), dtype=np.int64)
    for s in range(0, len(x), chunk):
        xs, ls = x[s:s + chunk], lists[s:s + chunk]
        r = xs - c[ls]
        rh = r / np.maximum(np.linalg.norm(r, axis=1, keepdims=True), 1e-30)
        dist = (xs * xs).sum(1, keepdims=True) - 2 * (xs @ c.T) + cn[None, :]
        proj = (rh * xs).sum(1, keepdims=True) - rh @ c.T
        loss = dist + lam * proj * proj
        loss[np.arange(len(xs)), ls] = np.inf
        out[s:s + chunk] = loss.argmin(1)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--nprobes", default="8,16,24,32,40")
    ap.add_argument("--lams", default="1")
    ap.add_argument("--taus", default="0.08,0.1,0.12")
    ap.add_argument("--min-probe", type=int, default=4)
    ap.add_argument("--max-probe", type=int, default=64)
    a = ap.parse_args()
    t0 = time.time()
    x, q, c, lists = load(a.index, a.queries)
    nlist = len(c)
    best = (q @ x.T).argmax(1)
    cs = q @ c.T
    order = np.argsort(-cs, 1, kind="stable")
    pos = np.empty_like(order)
    for i in range(len(q)):
        pos[i, order[i]] = np.arange(nlist)
    thr_unit = np.linalg.norm(q, axis=1) * np.linalg.norm(c, axis=1).mean()
    srt = np.take_along_axis(cs, order, 1)
    print(f"{a.index}: {len(x):,} rows, {nlist} lists, {len(q):,} questions "
          f"(exact top-1 and scores in {time.time() - t0:.1f} s)")
    print(f"| lists | probing | coarse recall | rows a question | lists a question |")
    print(f"| --- | --- | --: | --: | --: |")

    def report(label, probing, rank, sizes, n):
        rec = (rank < n).mean()
        cum = np.cumsum(sizes[order], 1)
        rows = cum[np.arange(len(q)), n - 1].mean()
        print(f"| {label} | {probing} | {rec:.3f} | {rows:,.0f} | {n.mean():.1f} |")

    def settings(label, rank, sizes):
        for p in [int(v) for v in a.nprobes.split(",")]:
            report(label, f"nprobe {p}", rank, sizes, np.full(len(q), p))
        for tau in [float(v) for v in a.taus.split(",")]:
            n = (srt >= (srt[:, :1] - tau * thr_unit[:, None])).sum(1)
            n = np.clip(n, a.min_probe, a.max_probe)
            report(label, f"adaptive, tau {tau}", rank, sizes, n)

    sizes = np.bincount(lists, minlength=nlist).astype(np.float64)
    rank = pos[np.arange(len(q)), lists[best]]
    settings("as built", rank, sizes)
    for lam in [float(v) for v in a.lams.split(",")]:
        second = spill(x, c, lists, lam)
        both = sizes + np.bincount(second, minlength=nlist)
        rank2 = np.minimum(rank, pos[np.arange(len(q)), second[best]])
        settings(f"spilled, lam {lam}", rank2, both)


if __name__ == "__main__":
    main()
