"""Reference values for tests/metrics/cluster_stats_test.ts (metrics/stats/
clusters.ts, ranks.ts, multiple.ts, power.ts).

Reads one JSON job on stdin and writes one JSON answer on stdout; every part
is optional:

  bootstrap      [{systems, clusters, resamples, seed, percentiles, pairs}, ...]
                 -> NumPy paired cluster bootstrap (its own generator,
                    numpy.random.default_rng(seed).integers(0, C) for C clusters per
                    resample, vectorized), as counts of each cluster: system s's
                    replicate mean is counts @ cluster_sums_s / counts @ cluster_sizes.
                    Per system and per pair [a, b] (mean_a - mean_b): the percentiles
                    (numpy.percentile, linear) and the replicates' standard deviation.
                    An independent check of the TypeScript, not a copy of it.
  randomization  [{a, b, clusters, shuffles, seed}, ...]
                 -> NumPy clustered approximate randomization: each shuffle draws
                    one sign per cluster, T* = signs @ D (D the per-cluster sums of
                    a - b); p = (count(|T*| >= |T|) + 1) / (R + 1), ties judged with the
                    slack n * 2**-52 * sum |d_i| as in the TypeScript
  ranks          {systems, clusters, resamples, seed, percentiles}
                 -> ranks of the NumPy cluster bootstrap's replicate means
                    (scipy.stats.rankdata(-means, method="min")): per system the
                    share ranked first and the percentile ranks (numpy.percentile,
                    method "lower" for the low end, "higher" for the high end)
  replicate      {systems, clusters, resamples, seed, percentiles, a, b, shuffles, rseed}
                 -> the same procedures with the same generator as metrics/stats
                    (xoshiro128** seeded by SplitMix64, pure Python; clusters numbered
                    by first appearance): cluster bootstrap percentiles, the
                    clustered randomization count, and the rank intervals, which
                    the TypeScript must equal to rounding
  holm           [[p, ...], ...] -> Holm's step-down adjusted p-values, closed form:
                    sorted ascending, min(1, cummax((m - j) * p_(j))), j = 0..m-1
  bh             [[p, ...], ...] -> scipy.stats.false_discovery_control(p, method="bh")
  mde            [[n, sd, alpha, power], ...]
                 -> (norm.isf(alpha / 2) + norm.ppf(power)) * sd / sqrt(n)
  mde_scores     [{a, b, alpha, power}, ...]
                 -> d = a - b; mean, numpy.std(d) (ddof 0), the MDE from it, and for
                    0/1 scores the discordance rate and the MDE from
                    sd = sqrt(p_disc - mean**2)

Needs numpy and scipy only.
"""
import json
import os
import sys

# one BLAS thread: the products here are small, and the test machines are shared
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from scipy.stats import false_discovery_control, norm, rankdata  # noqa: E402

M32 = 0xFFFFFFFF
M64 = 0xFFFFFFFFFFFFFFFF


class Xoshiro128StarStar:
    """xoshiro128** (reference C code), state from two SplitMix64 outputs."""

    def __init__(self, seed):
        x = seed & M64
        outs = []
        for _ in range(2):
            x = (x + 0x9E3779B97F4A7C15) & M64
            z = x
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
            outs.append(z ^ (z >> 31))
        self.s = [outs[0] & M32, outs[0] >> 32, outs[1] & M32, outs[1] >> 32]

    def next(self):
        s = self.s
        x = (s[1] * 5) & M32
        result = ((((x << 7) | (x >> 25)) & M32) * 9) & M32
        t = (s[1] << 9) & M32
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = ((s[3] << 11) | (s[3] >> 21)) & M32
        return result

    def below(self, n):
        reject = (1 << 32) % n
        while True:
            x = self.next()
            if x >= reject:
                return x % n

    def bits(self, m):
        out = []
        w = 0
        for i in range(m):
            k = i & 31
            if k == 0:
                w = self.next()
            out.append((w >> (31 - k)) & 1)
        return out


def cluster_codes(ids):
    """Cluster numbers by first appearance (as metrics/stats/clusters.ts numbers them)."""
    seen = {}
    codes = []
    for c in ids:
        key = (type(c).__name__, c)
        if key not in seen:
            seen[key] = len(seen)
        codes.append(seen[key])
    return np.asarray(codes, dtype=np.int64), len(seen)


def numpy_cluster_reps(systems, clusters, big_b, seed):
    """Replicate means (k, B) of the cluster bootstrap, from how often each cluster is drawn."""
    x = np.asarray(systems, dtype=np.float64)  # (k, n)
    codes, big_c = cluster_codes(clusters)
    sums = np.stack([np.bincount(codes, weights=row, minlength=big_c) for row in x])  # (k, C)
    sizes = np.bincount(codes, minlength=big_c).astype(np.float64)  # (C,)
    rng = np.random.default_rng(seed)
    reps = np.empty((x.shape[0], big_b))
    chunk = max(1, 4_000_000 // big_c)
    for start in range(0, big_b, chunk):
        m = min(chunk, big_b - start)
        drawn = rng.integers(0, big_c, size=(m, big_c))  # C cluster indices per resample
        flat = (drawn + np.arange(m)[:, None] * big_c).ravel()
        counts = np.bincount(flat, minlength=m * big_c).reshape(m, big_c).astype(np.float64)
        reps[:, start:start + m] = (counts @ sums.T).T / (counts @ sizes)
    return reps


def numpy_bootstrap(job):
    reps = numpy_cluster_reps(job["systems"], job["clusters"], job["resamples"], job["seed"])
    pct = job["percentiles"]

    def summary(values):
        lo, hi = np.percentile(values, pct)
        return {"low": float(lo), "high": float(hi), "sd": float(values.std(ddof=1))}

    return {
        "systems": [summary(r) for r in reps],
        "pairs": [summary(reps[a] - reps[b]) for a, b in job["pairs"]],
    }


def numpy_randomization(job):
    a = np.asarray(job["a"], dtype=np.float64)
    b = np.asarray(job["b"], dtype=np.float64)
    d = a - b
    n = d.size
    codes, _ = cluster_codes(job["clusters"])
    big_d = np.bincount(codes, weights=d)
    t0 = d.sum()
    bound = abs(t0) - n * 2.0**-52 * np.abs(d).sum()
    rng = np.random.default_rng(job["seed"])
    big_r = job["shuffles"]
    count = 0
    chunk = max(1, 4_000_000 // big_d.size)
    for start in range(0, big_r, chunk):
        m = min(chunk, big_r - start)
        signs = 2.0 * rng.integers(0, 2, size=(m, big_d.size), dtype=np.int8) - 1.0
        count += int((np.abs(signs @ big_d) >= bound).sum())
    return {"count": count, "p": (count + 1) / (big_r + 1)}


def rank_summary(reps, pct):
    """Per system: share ranked first, the low/high percentile ranks."""
    ranks = rankdata(-reps, method="min", axis=0)  # (k, B), 1 = best
    out = []
    for r in ranks:
        out.append({
            "first": float(np.mean(r == 1)),
            "low": float(np.percentile(r, pct[0], method="lower")),
            "high": float(np.percentile(r, pct[1], method="higher")),
        })
    return out


def numpy_ranks(job):
    reps = numpy_cluster_reps(job["systems"], job["clusters"], job["resamples"], job["seed"])
    return rank_summary(reps, job["percentiles"])


def replicate(job):
    systems = [np.asarray(s, dtype=np.float64) for s in job["systems"]]
    k = len(systems)
    codes, big_c = cluster_codes(job["clusters"])
    sums = []
    for s in systems:
        acc = [0.0] * big_c
        for i, c in enumerate(codes):
            acc[c] += float(s[i])
        sums.append(acc)
    sizes = np.bincount(codes, minlength=big_c)
    big_b = job["resamples"]
    g = Xoshiro128StarStar(job["seed"])
    reps = np.empty((k, big_b))
    for r in range(big_b):
        drawn = [g.below(big_c) for _ in range(big_c)]
        m = int(sum(int(sizes[c]) for c in drawn))
        for s in range(k):
            t = 0.0
            for c in drawn:
                t += sums[s][c]
            reps[s, r] = t / m
    pct = job["percentiles"]
    out = {"systems": [], "pairs": []}
    for s in range(k):
        lo, hi = np.percentile(reps[s], pct)
        out["systems"].append([float(lo), float(hi)])
    for a in range(k):
        for b in range(a + 1, k):
            lo, hi = np.percentile(reps[a] - reps[b], pct)
            out["pairs"].append([float(lo), float(hi)])
    out["ranks"] = rank_summary(reps, pct)
    # clustered randomization, same generator and bit order
    d = [float(x) - float(y) for x, y in zip(job["a"], job["b"])]
    t0 = 0.0
    total = 0.0
    for v in d:
        t0 += v
        total += abs(v)
    big_d = [0.0] * big_c
    for i, c in enumerate(codes):
        big_d[c] += d[i]
    bound = abs(t0) - len(d) * 2.0**-52 * total
    g = Xoshiro128StarStar(job["rseed"])
    count = 0
    for _ in range(job["shuffles"]):
        t = 0.0
        for v, f in zip(big_d, g.bits(big_c)):
            t += -v if f else v
        if abs(t) >= bound:
            count += 1
    out["randomization"] = {"count": count, "p": (count + 1) / (job["shuffles"] + 1)}
    return out


def holm(ps):
    p = np.asarray(ps, dtype=np.float64)
    m = p.size
    order = np.argsort(p, kind="stable")
    adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adj
    return [float(v) for v in out]


def mde(n, sd, alpha, power):
    return float((norm.isf(alpha / 2) + norm.ppf(power)) * sd / np.sqrt(n))


def mde_scores(job):
    a = np.asarray(job["a"], dtype=np.float64)
    b = np.asarray(job["b"], dtype=np.float64)
    d = a - b
    n = d.size
    delta = float(d.mean())
    sd = float(d.std())
    out = {"mean": delta, "sd": sd, "mde": mde(n, sd, job["alpha"], job["power"])}
    if np.all((a == 0) | (a == 1)) and np.all((b == 0) | (b == 1)):
        rate = float(np.mean(d != 0))
        out["rate"] = rate
        out["mde_disc"] = mde(n, np.sqrt(rate - delta**2), job["alpha"], job["power"])
    return out


def main():
    job = json.load(sys.stdin)
    out = {}
    if "bootstrap" in job:
        out["bootstrap"] = [numpy_bootstrap(j) for j in job["bootstrap"]]
    if "randomization" in job:
        out["randomization"] = [numpy_randomization(j) for j in job["randomization"]]
    if "ranks" in job:
        out["ranks"] = numpy_ranks(job["ranks"])
    if "replicate" in job:
        out["replicate"] = replicate(job["replicate"])
    if "holm" in job:
        out["holm"] = [holm(ps) for ps in job["holm"]]
    if "bh" in job:
        out["bh"] = [
            [float(v) for v in false_discovery_control(np.asarray(ps, dtype=np.float64), method="bh")]
            for ps in job["bh"]
        ]
    if "mde" in job:
        out["mde"] = [mde(*row) for row in job["mde"]]
    if "mde_scores" in job:
        out["mde_scores"] = [mde_scores(j) for j in job["mde_scores"]]
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
