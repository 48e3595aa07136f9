#!/usr/bin/env python3
"""faiss-cpu reference for bench/index_bench.ts: exact and IVF-PQ search.

usage: faiss_ref.py SPEC.json OUT.json

SPEC.json (written by index_bench.ts): vectors (raw little-endian file of the
phraseval index, f32 or f16), dtype, n, d, queries (raw f32, nq x d), nq,
train (raw int64 rows of the training sample), nlist, bpv, nprobes, k,
threads, and optionally refines (candidates re-ranked exactly), flat
(false: skip IndexFlatIP), flat_threads (IndexFlatIP searched once per
thread count), ivf (false: skip the IVF-PQ) and factory (an index built
by faiss.index_factory(d, factory, METRIC_INNER_PRODUCT), e.g.
"IVF100,PQ256x4fsr" or "IVF100,RaBitQfs2": trained on the same rows,
searched and reported as the IVF-PQ is, in place of it). Runs with faiss.omp_set_num_threads(threads) and
reports, as JSON: load time; IndexFlatIP add and search times and its top-k
rows; IndexIVFPQ (IndexFlatIP(d), d, nlist, bpv, 8, METRIC_INNER_PRODUCT)
train/add times, serialized bytes, and per nprobe the search time and top-k
rows and the codes it scanned (indexIVF_stats.ndis); per (nprobe, refine) the same for IndexRefineFlat over it (k_factor =
refine / k: the refine best PQ candidates re-scored with the exact vectors);
the process's peak RSS. With passes (default 1) every IVF search is timed
as the fastest of that many calls of search (the same rows: checked).
"""
import json
import re
import resource
import sys
import time

import faiss
import numpy as np


def main():
    spec = json.load(open(sys.argv[1]))
    faiss.omp_set_num_threads(spec["threads"])
    n, d, k = spec["n"], spec["d"], spec["k"]
    t0 = time.perf_counter()
    raw = np.fromfile(spec["vectors"], dtype=np.float16 if spec["dtype"] == "f16" else np.float32)
    xb = np.ascontiguousarray(raw.reshape(n, d).astype(np.float32))
    del raw
    xq = np.fromfile(spec["queries"], dtype=np.float32).reshape(spec["nq"], d)
    train = np.fromfile(spec["train"], dtype=np.int64) if spec.get("train") else None
    out = {"load_s": time.perf_counter() - t0, "faiss": faiss.__version__}

    if spec.get("flat", True):
        t0 = time.perf_counter()
        flat = faiss.IndexFlatIP(d)
        flat.add(xb)
        out["flat_build_s"] = time.perf_counter() - t0
        out["flat_bytes"] = n * d * 4
        # flat_threads: IndexFlatIP searched once per thread count (default: threads).
        out["flat_runs"] = []
        for th in spec.get("flat_threads", [spec["threads"]]):
            faiss.omp_set_num_threads(th)
            t0 = time.perf_counter()
            _, ix = flat.search(xq, k)
            out["flat_runs"].append({"threads": th, "search_s": time.perf_counter() - t0,
                                     "rows": ix.tolist()})
        faiss.omp_set_num_threads(spec["threads"])
        out["flat_search_s"] = out["flat_runs"][-1]["search_s"]
        out["flat_rows"] = out["flat_runs"][-1]["rows"]
        del flat
    if spec.get("factory"):
        t0 = time.perf_counter()
        ix = faiss.index_factory(d, spec["factory"], faiss.METRIC_INNER_PRODUCT)
        ix.train(xb[train])
        out["ivf_train_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        ix.add(xb)
        out["ivf_add_s"] = time.perf_counter() - t0
        out["factory"] = spec["factory"]
        out["ivf_bytes"] = int(faiss.serialize_index(ix).nbytes)
        ivf_part = faiss.extract_index_ivf(ix)
        out["code_size"] = float(ivf_part.code_size)
        out.update(search_ivf(ix, ivf_part, xb, xq, spec))
        out["peak_rss"] = peak_rss()
        json.dump(out, open(sys.argv[2], "w"))
        return
    if not spec.get("ivf", True):
        out["peak_rss"] = peak_rss()
        json.dump(out, open(sys.argv[2], "w"))
        return

    t0 = time.perf_counter()
    ivf = faiss.IndexIVFPQ(faiss.IndexFlatIP(d), d, spec["nlist"], spec["bpv"], 8,
                           faiss.METRIC_INNER_PRODUCT)
    ivf.train(xb[train])
    out["ivf_train_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    ivf.add(xb)
    out["ivf_add_s"] = time.perf_counter() - t0
    out["ivf_bytes"] = int(faiss.serialize_index(ivf).nbytes)
    out.update(search_ivf(ivf, ivf, xb, xq, spec))
    out["peak_rss"] = peak_rss()
    json.dump(out, open(sys.argv[2], "w"))


def peak_rss():
    """This process's peak RSS in bytes: VmHWM (ru_maxrss can carry the peak of the
    process that started this one, across exec)."""
    try:
        m = re.search(r"VmHWM:\s+(\d+) kB", open("/proc/self/status").read())
        if m:
            return int(m.group(1)) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def passes_of(spec):
    """The passes each IVF search is timed over (spec's passes, default 1)."""
    return max(1, int(spec.get("passes", 1)))


def timed(search, spec):
    """(seconds, rows) of search(): the fastest of spec's passes (default 1); every
    pass must give the same rows."""
    best, rows = float("inf"), None
    for p in range(passes_of(spec)):
        t0 = time.perf_counter()
        ix = search()
        best = min(best, time.perf_counter() - t0)
        if rows is None:
            rows = ix
        elif not np.array_equal(ix, rows):
            raise SystemExit(f"faiss_ref.py: pass {p + 1} gave other rows")
    return best, rows


def search_ivf(index, ivf, xb, xq, spec):
    """Per nprobe: the search time, top-k rows and codes scanned, without and with
    IndexRefineFlat over `index` (k_factor = refine / k); `ivf` is its IVF part. With
    search_threads (e.g. [1, 2]) every search runs once per thread count, each entry
    saying its threads (else once, on threads)."""
    k = spec["k"]
    res = {"ivf": [], "refined": []}
    counts = spec.get("search_threads", [spec["threads"]])
    for th in counts:
        faiss.omp_set_num_threads(th)
        for nprobe in spec["nprobes"]:
            ivf.nprobe = nprobe
            faiss.cvar.indexIVF_stats.reset()
            search_s, ix = timed(lambda: index.search(xq, k)[1], spec)
            ndis = int(faiss.cvar.indexIVF_stats.ndis) // passes_of(spec)
            res["ivf"].append({"nprobe": nprobe, "threads": th, "search_s": search_s,
                               "rows": ix.tolist(), "ndis": ndis})
    if spec.get("refines"):
        rf = faiss.IndexRefineFlat(index, faiss.swig_ptr(xb))
        for th in counts:
            faiss.omp_set_num_threads(th)
            for nprobe in spec["nprobes"]:
                ivf.nprobe = nprobe
                for r in spec["refines"]:
                    rf.k_factor = r / k
                    faiss.cvar.indexIVF_stats.reset()
                    search_s, ix = timed(lambda: rf.search(xq, k)[1], spec)
                    ndis = int(faiss.cvar.indexIVF_stats.ndis) // passes_of(spec)
                    res["refined"].append({"nprobe": nprobe, "refine": r, "threads": th,
                                           "search_s": search_s, "rows": ix.tolist(),
                                           "ndis": ndis})
    faiss.omp_set_num_threads(spec["threads"])
    return res


if __name__ == "__main__":
    main()
