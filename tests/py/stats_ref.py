"""Reference values for tests/metrics/stats_test.ts (metrics/stats/).

Reads one JSON job on stdin and writes one JSON answer on stdout; every
part is optional:

  ndtri          [p, ...]                      -> scipy.special.ndtri(p)
  wilson         [[count, nobs, alpha], ...]   -> scipy.stats.binomtest(count, nobs).proportion_ci(
                                                  1 - alpha, method="wilson") for a whole count; the
                                                  same score interval in closed form (Wilson 1927)
                                                  for a fractional one, which binomtest refuses
  mcnemar        [[b, c], ...]                 -> scipy.stats.binomtest(b, b + c, 0.5).pvalue (1 if b + c = 0)
  bootstrap      {systems, resamples, seed, percentiles, pairs}
                 -> NumPy paired bootstrap (its own generator, numpy.random.default_rng(seed),
                    drawn as multinomial counts of the distinct score rows):
                    per system and per pair [a, b] (mean_a - mean_b) the percentiles
                    (numpy.percentile, default linear method) and the replicates' standard deviation
  randomization  [{a, b, shuffles, seed}, ...]
                 -> NumPy paired approximate randomization (drawn as binomial sign counts
                    per distinct difference): p = (count(|T*| >= |T|) + 1) / (R + 1)
  replicate      {systems, resamples, seed, a, b, shuffles}
                 -> the same procedures with the same generator as metrics/stats
                    (xoshiro128** seeded by SplitMix64, pure Python), so the TypeScript
                    results must agree to rounding
  xoshiro        [{seed, count}, ...]           -> the first outputs of that generator

Needs numpy and scipy only.
"""
import json
import sys

import numpy as np
from scipy.special import ndtri
from scipy.stats import binomtest, norm

M32 = 0xFFFFFFFF
M64 = 0xFFFFFFFFFFFFFFFF


def wilson(count, nobs, alpha):
    """Wilson's score interval: SciPy's for a whole count, the closed form otherwise."""
    if float(count).is_integer():
        ci = binomtest(int(count), int(nobs)).proportion_ci(1 - alpha, method="wilson")
        return [float(ci.low), float(ci.high)]
    p = count / nobs
    z = norm.isf(alpha / 2)
    denom = 1 + z * z / nobs
    center = (p + z * z / (2 * nobs)) / denom
    half = z * np.sqrt(p * (1 - p) / nobs + z * z / (4 * nobs * nobs)) / denom
    return [float(max(0.0, center - half)), float(min(1.0, center + half))]


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


def numpy_bootstrap(job):
    """Paired bootstrap by multinomial counts.

    Resampling n question indices with replacement and summing each system's
    scores at them is the same, in distribution, as drawing how often each
    distinct row of scores (one score per system) is drawn:
    Multinomial(n, row frequencies). That is what is drawn here (cheap: a
    few hundred distinct rows on dev), with NumPy's own generator, so this is
    an independent check of metrics/stats/bootstrap.ts, not a copy of it.
    """
    x = np.asarray(job["systems"], dtype=np.float64)  # (k, n)
    k, n = x.shape
    rows, freq = np.unique(x.T, axis=0, return_counts=True)  # (K, k), (K,)
    big_b = job["resamples"]
    rng = np.random.default_rng(job["seed"])
    counts = rng.multinomial(n, freq / n, size=big_b).astype(np.float64)  # (B, K)
    reps = (counts @ rows).T / n  # (k, B)
    pct = job["percentiles"]

    def summary(values):
        lo, hi = np.percentile(values, pct)
        return {"low": float(lo), "high": float(hi), "sd": float(values.std(ddof=1))}

    return {
        "systems": [summary(reps[s]) for s in range(k)],
        "pairs": [summary(reps[a] - reps[b]) for a, b in job["pairs"]],
    }


def numpy_randomization(job):
    """Paired approximate randomization by binomial sign counts.

    With d_i = a_i - b_i, a shuffle flips the sign of each d_i with
    probability 1/2, so T* = sum_i s_i d_i. Questions with the same d_i = v
    (m_v of them) contribute v * (2 Binomial(m_v, 1/2) - m_v), which is what
    is drawn here (NumPy's generator). p = (count(|T*| >= |T|) + 1) / (R + 1),
    ties judged with the slack n * 2**-52 * sum |d_i| as in the TypeScript.
    """
    d = np.asarray(job["a"], dtype=np.float64) - np.asarray(job["b"], dtype=np.float64)
    n = d.size
    t0 = d.sum()
    bound = abs(t0) - n * 2.0**-52 * np.abs(d).sum()
    values, mult = np.unique(d[d != 0], return_counts=True)
    rng = np.random.default_rng(job["seed"])
    big_r = job["shuffles"]
    count = 0
    chunk = 20000
    for start in range(0, big_r, chunk):
        m = min(chunk, big_r - start)
        heads = rng.binomial(mult, 0.5, size=(m, values.size))
        t = (2.0 * heads - mult) @ values
        count += int((np.abs(t) >= bound).sum())
    return {"count": count, "p": (count + 1) / (big_r + 1)}


def replicate(job):
    systems = job["systems"]
    k = len(systems)
    n = len(systems[0])
    big_b = job["resamples"]
    g = Xoshiro128StarStar(job["seed"])
    reps = [[0.0] * big_b for _ in range(k)]
    for r in range(big_b):
        sums = [0.0] * k
        for _ in range(n):
            j = g.below(n)
            for s in range(k):
                sums[s] += systems[s][j]
        for s in range(k):
            reps[s][r] = sums[s] / n
    reps = [np.asarray(v) for v in reps]
    pct = job["percentiles"]
    out = {"systems": [], "pairs": []}
    for s in range(k):
        lo, hi = np.percentile(reps[s], pct)
        out["systems"].append([float(lo), float(hi)])
    for a in range(k):
        for b in range(a + 1, k):
            lo, hi = np.percentile(reps[a] - reps[b], pct)
            out["pairs"].append([float(lo), float(hi)])
    # approximate randomization, same generator and bit order
    d = [x - y for x, y in zip(job["a"], job["b"])]
    t0 = 0.0
    total = 0.0
    for v in d:
        t0 += v
        total += abs(v)
    bound = abs(t0) - len(d) * 2.0**-52 * total
    g = Xoshiro128StarStar(job["rseed"])
    count = 0
    for _ in range(job["shuffles"]):
        t = 0.0
        for v, f in zip(d, g.bits(len(d))):
            t += -v if f else v
        if abs(t) >= bound:
            count += 1
    out["randomization"] = {"count": count, "p": (count + 1) / (job["shuffles"] + 1)}
    return out


def main():
    job = json.load(sys.stdin)
    out = {}
    if "ndtri" in job:
        out["ndtri"] = [float(v) for v in ndtri(np.asarray(job["ndtri"], dtype=np.float64))]
    if "wilson" in job:
        out["wilson"] = [
            wilson(c, n, a) for c, n, a in job["wilson"]
        ]
    if "mcnemar" in job:
        # scipy refuses n = 0; with no discordant pair the test's p is 1
        out["mcnemar"] = [
            float(binomtest(b, b + c, 0.5).pvalue) if b + c > 0 else 1.0 for b, c in job["mcnemar"]
        ]
    if "bootstrap" in job:
        out["bootstrap"] = numpy_bootstrap(job["bootstrap"])
    if "randomization" in job:
        out["randomization"] = [numpy_randomization(r) for r in job["randomization"]]
    if "replicate" in job:
        out["replicate"] = replicate(job["replicate"])
    if "xoshiro" in job:
        res = []
        for r in job["xoshiro"]:
            g = Xoshiro128StarStar(int(r["seed"]))
            res.append([g.next() for _ in range(r["count"])])
        out["xoshiro"] = res
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
