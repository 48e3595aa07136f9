#!/usr/bin/env python3
"""faiss's fast-scan IVF-PQ at each SIMD width it dispatches to, and where
its search's time goes: how much of faiss's lead over phraseval's 128-bit
WebAssembly scan is the width of its look-ups.

usage: faiss_width.py SPEC.json [--factory IVF1000,PQ128x4fsr] [--nprobe 32]
                      [--k 10] [--refine 30] [--levels NONE,AVX2,AVX512]
                      [--threads 1,2] [--passes 5]

SPEC.json is the spec bench/index_bench.ts writes for faiss
(OUT/faiss_spec.json or OUT/faiss_factory0_spec.json): the vectors (f16 or
f32), the questions (raw f32), the training rows. For each level (faiss-cpu
1.15's FAISS_SIMD_LEVEL: NONE is its portable scalar code, AVX2 256-bit,
AVX512 512-bit look-ups; each level runs in its own process, as faiss reads
the variable once) the index is trained and filled on 1 thread (timed), then
searched on each thread count, each time the fastest of --passes calls:

- whole: IndexRefineFlat over the index, k_factor = refine / k (the search
  index_bench.ts compares with phraseval's);
- scan: the fast-scan index alone, its top `refine` (no re-scoring);
- coarse: the coarse quantizer alone (its top nprobe lists, IndexFlatIP).

Prints one markdown row per level and thread count (ms a question and
questions a second); scan − coarse is the fast scan with its tables and
selection, whole − scan the exact re-scoring.
"""
import argparse
import json
import os
import subprocess
import sys
import time


def measure(args):
    import faiss
    import numpy as np

    spec = json.load(open(args.spec))
    n, d = spec["n"], spec["d"]
    raw = np.fromfile(spec["vectors"], dtype=np.float16 if spec["dtype"] == "f16" else np.float32)
    xb = np.ascontiguousarray(raw.reshape(n, d).astype(np.float32))
    del raw
    xq = np.fromfile(spec["queries"], dtype=np.float32).reshape(spec["nq"], d)
    train = np.fromfile(spec["train"], dtype=np.int64)
    faiss.omp_set_num_threads(1)
    t0 = time.perf_counter()
    index = faiss.index_factory(d, args.factory, faiss.METRIC_INNER_PRODUCT)
    index.train(xb[train])
    t1 = time.perf_counter()
    index.add(xb)
    t2 = time.perf_counter()
    ivf = faiss.extract_index_ivf(index)
    ivf.nprobe = args.nprobe
    refine = faiss.IndexRefineFlat(index, faiss.swig_ptr(xb))
    refine.k_factor = args.refine / args.k
    rows = []
    for threads in [int(t) for t in args.threads.split(",")]:
        faiss.omp_set_num_threads(threads)
        parts = {}
        for part, run in (
            ("whole", lambda: refine.search(xq, args.k)),
            ("scan", lambda: index.search(xq, args.refine)),
            ("coarse", lambda: ivf.quantizer.search(xq, args.nprobe)),
        ):
            best = float("inf")
            for _ in range(args.passes):
                t = time.perf_counter()
                run()
                best = min(best, time.perf_counter() - t)
            parts[part] = best / len(xq)
        rows.append({"threads": threads, **parts})
    return {
        "level": faiss.SIMDConfig.get_level_name(),
        "faiss": faiss.__version__,
        "train_s": t1 - t0,
        "add_s": t2 - t1,
        "rows": rows,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec")
    ap.add_argument("--factory", default="IVF1000,PQ128x4fsr")
    ap.add_argument("--nprobe", type=int, default=32)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--refine", type=int, default=30)
    ap.add_argument("--levels", default="NONE,AVX2,AVX512")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        json.dump(measure(args), sys.stdout)
        return 0
    print(f"{args.factory}, nprobe {args.nprobe}, {args.refine} candidates re-scored, top {args.k}; "
          f"fastest of {args.passes} passes; ms a question")
    print()
    print("| SIMD level | threads | train + add, s | whole | q/s | scan | coarse | scan − coarse | re-scoring |")
    print("| --- | --: | --: | --: | --: | --: | --: | --: | --: |")
    for level in args.levels.split(","):
        env = dict(os.environ, FAISS_SIMD_LEVEL=level)
        out = subprocess.run([sys.executable, __file__, *sys.argv[1:], "--one"], env=env,
                             capture_output=True, text=True, check=True).stdout
        r = json.loads(out)
        for row in r["rows"]:
            ms = {k: v * 1e3 for k, v in row.items() if k != "threads"}
            print(f"| {r['level']} | {row['threads']} | {r['train_s'] + r['add_s']:.1f} | {ms['whole']:.4f} | "
                  f"{1e3 / ms['whole']:,.0f} | {ms['scan']:.4f} | {ms['coarse']:.4f} | "
                  f"{ms['scan'] - ms['coarse']:.4f} | {ms['whole'] - ms['scan']:.4f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
