"""Reference values for tests/report/disagree_test.ts (report/labels.ts: the
label-corrected accuracy and its interval).

Reads one JSON job on stdin, {"cases": [case, ...]}, and writes one JSON answer
on stdout, {"cases": [answer, ...]}. A case is what labelCorrection takes:

  strata     [h, ...]          the stratum of each of the N questions
  labels     [[0/1, ...], ...] per stratum, the labels of its labelled questions
  fallback   [v or null, ...]  per stratum, its value when it has no labels
  metrics    [[v_h, ...], ...] per metric, its verdict in each stratum
  resamples  B                 the replicate bootstrap's resamples
  seed       s                 its seed
  numpy_resamples, numpy_seed  NumPy's own bootstrap (optional)

and its answer holds:

  value, se     the estimate pi = sum_h w_h p_h and its closed-form standard
                error, sqrt(sum_h w_h^2 p_h (1 - p_h) / n_h
                            + (1/N) sum_h w_h (p_h - pi)^2)
  boot_sd       the exact standard deviation of the two-phase bootstrap
                (which adds sum_h w_h (1 - w_h) / N * p_h (1 - p_h) / n_h to
                the first sum: the strata counts vary too)
  scores        per metric, sum_h w_h v_h
  replicate     the two-phase bootstrap with the generator and the draws of
                metrics/stats (xoshiro128** seeded by SplitMix64; per replicate
                N question draws g.below(N), then per labelled stratum in order
                n_h draws g.below(n_h) into its labels), pure Python: the 2.5
                and 97.5 percentiles (numpy.percentile, linear) of the
                replicates, their standard deviation (ddof 0), and per metric
                the percentiles of (sum_h c_h v_h) / N - pi*; the TypeScript
                must equal these to rounding
  numpy         the same two phases drawn by NumPy (numpy.random.default_rng:
                multinomial strata counts, binomial label counts), vectorized:
                percentiles and standard deviation, an independent check to
                Monte Carlo error

Needs numpy only.
"""
import json
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

M32 = 0xFFFFFFFF
M64 = 0xFFFFFFFFFFFFFFFF


class Xoshiro128StarStar:
    """xoshiro128** (reference C code), state from two SplitMix64 outputs, with
    below(n) rejecting x < 2**32 mod n (as metrics/stats/prng.ts; the same as
    cluster_stats.py's, kept here so that this file needs numpy only)."""

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


def point(case):
    strata = case["strata"]
    labels = case["labels"]
    fallback = case["fallback"]
    big_h = len(labels)
    big_n = len(strata)
    size = [0.0] * big_h
    for h in strata:
        size[h] += 1.0
    p = [0.0] * big_h
    for h in range(big_h):
        n = len(labels[h])
        if n > 0:
            p[h] = sum(labels[h]) / n
        elif fallback[h] is not None:
            p[h] = float(fallback[h])
    value = 0.0
    for h in range(big_h):
        value += size[h] * p[h]
    value /= big_n
    within = between = extra = 0.0
    for h in range(big_h):
        w = size[h] / big_n
        n = len(labels[h])
        if n > 0:
            within += w * w * p[h] * (1 - p[h]) / n
            extra += w * (1 - w) / big_n * p[h] * (1 - p[h]) / n
        between += w * (p[h] - value) ** 2
    scores = []
    for v in case["metrics"]:
        s = 0.0
        for h in range(big_h):
            s += size[h] * v[h]
        scores.append(s / big_n)
    return {
        "size": size,
        "p": p,
        "value": value,
        "se": (within + between / big_n) ** 0.5,
        "boot_sd": (within + extra + between / big_n) ** 0.5,
        "scores": scores,
    }


def replicate(case, pt):
    strata = case["strata"]
    labels = case["labels"]
    big_h = len(labels)
    big_n = len(strata)
    g = Xoshiro128StarStar(case["seed"])
    reps = []
    bias = [[] for _ in case["metrics"]]
    for _ in range(case["resamples"]):
        c = [0.0] * big_h
        for _ in range(big_n):
            c[strata[g.below(big_n)]] += 1.0
        p_star = [0.0] * big_h
        for h in range(big_h):
            lab = labels[h]
            n = len(lab)
            if n == 0:
                p_star[h] = pt["p"][h]
                continue
            k = 0
            for _ in range(n):
                k += lab[g.below(n)]
            p_star[h] = k / n
        s = 0.0
        for h in range(big_h):
            s += c[h] * p_star[h]
        r = s / big_n
        reps.append(r)
        for m, v in enumerate(case["metrics"]):
            sm = 0.0
            for h in range(big_h):
                sm += c[h] * v[h]
            bias[m].append(sm / big_n - r)
    lo, hi = np.percentile(reps, [2.5, 97.5])
    return {
        "low": float(lo),
        "high": float(hi),
        "sd": float(np.std(reps)),
        "bias": [
            {"low": float(a), "high": float(b)}
            for a, b in (np.percentile(x, [2.5, 97.5]) for x in bias)
        ],
    }


def numpy_bootstrap(case, pt):
    rng = np.random.default_rng(case["numpy_seed"])
    big_b = case["numpy_resamples"]
    big_n = len(case["strata"])
    w = np.asarray(pt["size"]) / big_n
    p = np.asarray(pt["p"])
    n = np.asarray([len(x) for x in case["labels"]])
    counts = rng.multinomial(big_n, w, size=big_b).astype(np.float64)  # (B, H)
    p_star = np.tile(p, (big_b, 1))
    for h in np.nonzero(n > 0)[0]:
        p_star[:, h] = rng.binomial(n[h], p[h], size=big_b) / n[h]
    reps = (counts * p_star).sum(axis=1) / big_n
    lo, hi = np.percentile(reps, [2.5, 97.5])
    out = {"low": float(lo), "high": float(hi), "sd": float(reps.std()), "bias": []}
    for v in case["metrics"]:
        b = counts @ np.asarray(v, dtype=np.float64) / big_n - reps
        a, c = np.percentile(b, [2.5, 97.5])
        out["bias"].append({"low": float(a), "high": float(c)})
    return out


def main():
    job = json.load(sys.stdin)
    answers = []
    for case in job["cases"]:
        pt = point(case)
        a = {k: pt[k] for k in ("value", "se", "boot_sd", "scores")}
        a["replicate"] = replicate(case, pt)
        if "numpy_resamples" in case:
            a["numpy"] = numpy_bootstrap(case, pt)
        answers.append(a)
    json.dump({"cases": answers}, sys.stdout)


if __name__ == "__main__":
    main()
