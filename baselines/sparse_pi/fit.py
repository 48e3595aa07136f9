"""Fits the sparse-pi encoder's parameters on the exported training problem.

Reads the folder written by `baselines/sparse_pi/export_features.ts` and
fits a log-linear (softmax) model over the candidate spans of each
question's paragraph:

    score(q, r) = sum_g idf-overlap_g(q, r) * A_q[g]
                + sum_g count-overlap_g(q, r) * B_q[g]
                + sum_g head-overlap_g(q, r) * H_q[g]
                + sum_{s in shape(r)} U_q[s]

where the overlaps are sums over the question's content stems t of
idf(t), 1, and idf(t)*[t is the head word] for the span keys (g, t), and
(A_q | B_q | H_q) = sum_{c in classes(q)} V[c] (V: classes x 3G) and
U_q = sum_{c in classes(q)} W[c] (W: classes x shapeDim). Every term is a
product of a question-only quantity and a span-only quantity, so the score
is the inner product of a question vector and a phrase vector. The loss is
-log(sum of the probabilities of the gold spans) summed over questions, plus
(lam / 2) * sum_i p_i theta_i^2 with p_i = 1 for W and for the row of the
always-on class "*" of V, and p_i = V_RATIO for the other rows of V; it is
minimised from zero with L-BFGS-B and an analytic gradient.

lam is chosen on held-out articles of the training subset (20 % of the
articles, drawn with a fixed seed), by top-1 span accuracy (ties: lower
held-out loss); then the model is refitted on all of it. Nothing here reads
the dev set.

Usage: python3 baselines/sparse_pi/fit.py EXPORT_DIR OUT_DIR
Writes OUT_DIR/params.f32 (V then W, row-major, float32 little endian; the
columns of a V row are channel-major: idf, count, head, each over the groups)
and OUT_DIR/fit.json (grid results, chosen lambda, shapes, timings).
"""

import json
import os
import sys
import time

import numpy as np
import scipy.optimize as opt
import scipy.sparse as sp

SEED = 20240601
HELDOUT_FRACTION = 0.2
# L2 strength of the shape weights W (the grid); the group-weight rows V of
# the question classes get V_RATIO times as much, except the row of the
# always-on class "*" (the base group weights), which gets the plain lambda.
LAMBDAS = [3.0, 10.0, 30.0]
V_RATIO = 100.0
# Every fit starts from zero and runs this many L-BFGS-B iterations at most.
MAXITER = 150


def load(export_dir):
    with open(os.path.join(export_dir, "meta.json"), encoding="utf-8") as f:
        meta = json.load(f)
    arrays = {}
    for name, info in meta["arrays"].items():
        dtype = "<i4" if info["dtype"] == "i32" else "<f4"
        arrays[name] = np.fromfile(os.path.join(export_dir, info["file"]), dtype=dtype)
        assert arrays[name].shape[0] == info["length"], name
    return meta, arrays


class Problem:
    """The design of a set of questions: one row per (question, span)."""

    def __init__(self, meta, a, questions):
        G = meta["nGroups"]
        T = meta["summary"]["terms"]
        S = meta["summary"]["shapeDim"]
        C = len(meta["classes"])
        self.G, self.S, self.C = G, S, C
        para_spans = a["para_spans"].astype(np.int64)
        para_off = np.concatenate([[0], np.cumsum(para_spans)])
        key_ptr, keys = a["span_key_ptr"], a["span_keys"]
        shp_ptr, shapes = a["span_shape_ptr"], a["span_shapes"]
        nq = len(questions)
        self.nq = nq
        # Question-class indicator matrix.
        cp, cl = a["q_class_ptr"], a["q_class"]
        rows, cols = [], []
        for i, q in enumerate(questions):
            c = cl[cp[q]:cp[q + 1]]
            rows.append(np.full(len(c), i))
            cols.append(c)
        self.Qc = sp.csr_matrix(
            (np.ones(sum(len(c) for c in cols)), (np.concatenate(rows), np.concatenate(cols))),
            shape=(nq, C),
        )
        self.QcT = self.Qc.T.tocsr()
        # Rows, gold, and the sparse design matrix X: columns
        # [q * 3G + channel * G + g] for overlaps, then [nq * 3G + q * S + s] for shapes.
        Z = 3 * G
        seg_len = np.empty(nq, dtype=np.int64)
        x_rows, x_cols, x_vals = [], [], []
        gold_rows, gold_q = [], []
        row0 = 0
        by_para = {}
        for i, q in enumerate(questions):
            by_para.setdefault(int(a["q_para"][q]), []).append((i, q))
        tp, tt, ti, th = a["q_term_ptr"], a["q_term"], a["q_term_idf"], a["q_head"]
        gp, gl = a["q_gold_ptr"], a["q_gold"]
        self.seg_start = np.empty(nq, dtype=np.int64)
        order = []
        for p in sorted(by_para):
            qs = by_para[p]
            s0, s1 = para_off[p], para_off[p + 1]
            n = s1 - s0
            # Span keys of this paragraph as a (n * G) x T binary matrix.
            k0, k1 = key_ptr[s0], key_ptr[s1]
            kk = keys[k0:k1].astype(np.int64)
            span_of = np.repeat(np.arange(n), np.diff(key_ptr[s0:s1 + 1]))
            g = kk % G
            t = kk // G
            K = sp.csr_matrix((np.ones(len(kk)), (span_of * G + g, t)), shape=(n * G, T))
            # Question term matrix: T x (3 m) (idf, count, head idf).
            m = len(qs)
            qr, qcol, qv = [], [], []
            for j, (_, q) in enumerate(qs):
                terms = tt[tp[q]:tp[q + 1]]
                idfs = ti[tp[q]:tp[q + 1]].astype(np.float64)
                ok = terms >= 0
                terms, idfs = terms[ok], idfs[ok]
                qr += [terms, terms]
                qcol += [np.full(len(terms), 3 * j), np.full(len(terms), 3 * j + 1)]
                qv += [idfs, np.ones(len(terms))]
                if th[q] >= 0:
                    hv = idfs[terms == th[q]]
                    if len(hv):
                        qr.append(np.array([th[q]]))
                        qcol.append(np.array([3 * j + 2]))
                        qv.append(hv[:1])
            Qm = sp.csr_matrix(
                (np.concatenate(qv), (np.concatenate(qr), np.concatenate(qcol))), shape=(T, 3 * m)
            )
            O = (K @ Qm).toarray().reshape(n, G, m, 3)  # span, g, question, channel
            sh0, sh1 = shp_ptr[s0], shp_ptr[s1]
            shp = shapes[sh0:sh1].astype(np.int64)
            shp_span = np.repeat(np.arange(n), np.diff(shp_ptr[s0:s1 + 1]))
            for j, (i, q) in enumerate(qs):
                order.append(i)
                self.seg_start[i] = row0
                seg_len[i] = n
                o = O[:, :, j, :].transpose(0, 2, 1).reshape(n, Z)  # channel-major per span
                nz_r, nz_c = np.nonzero(o)
                x_rows.append(row0 + nz_r)
                x_cols.append(i * Z + nz_c)
                x_vals.append(o[nz_r, nz_c])
                x_rows.append(row0 + shp_span)
                x_cols.append(nq * Z + i * S + shp)
                x_vals.append(np.ones(len(shp)))
                gold = gl[gp[q]:gp[q + 1]].astype(np.int64)
                gold_rows.append(row0 + gold)
                gold_q.append(np.full(len(gold), i))
                row0 += n
        self.R = row0
        self.order = np.array(order)
        self.seg_len = seg_len
        self.X = sp.csr_matrix(
            (np.concatenate(x_vals), (np.concatenate(x_rows), np.concatenate(x_cols))),
            shape=(row0, nq * (Z + S)),
        )
        self.XT = self.X.T.tocsr()
        self.gold_rows = np.concatenate(gold_rows)
        self.gold_q = np.concatenate(gold_q)
        # Segment starts in row order (questions sorted by their first row).
        self.seg_order = np.argsort(self.seg_start)
        self.starts_sorted = self.seg_start[self.seg_order]
        self.q_of_row = np.repeat(self.seg_order, seg_len[self.seg_order])
        self.n_params = C * (Z + S)
        self.penalty = np.ones(self.n_params)
        self.penalty[Z: C * Z] = V_RATIO  # row 0 is the always-on class "*"

    def split(self, theta):
        C, Z = self.C, 3 * self.G
        V = theta[: C * Z].reshape(C, Z)
        W = theta[C * Z:].reshape(C, self.S)
        return V, W

    def scores(self, theta):
        V, W = self.split(theta)
        Zq = self.Qc @ V  # nq x 3G
        U = self.Qc @ W  # nq x S
        v = np.concatenate([Zq.ravel(), U.ravel()])
        return self.X @ v

    def loss_grad(self, theta, lam):
        s = self.scores(theta)
        st = self.starts_sorted
        mx = np.maximum.reduceat(s, st)  # per question in sorted order
        mx_row = np.repeat(mx, self.seg_len[self.seg_order])
        e = np.exp(s - mx_row)
        tot = np.add.reduceat(e, st)
        # Gold mass per question (indexed by question id).
        gsum = np.bincount(self.gold_q, weights=e[self.gold_rows], minlength=self.nq)
        tot_q = np.empty(self.nq)
        tot_q[self.seg_order] = tot
        mx_q = np.empty(self.nq)
        mx_q[self.seg_order] = mx
        loss = float(np.sum(np.log(tot_q) - np.log(gsum)))
        delta = e / np.repeat(tot, self.seg_len[self.seg_order])
        delta[self.gold_rows] -= e[self.gold_rows] / gsum[self.gold_q]
        dv = self.XT @ delta
        Z = 3 * self.G
        dZ = dv[: self.nq * Z].reshape(self.nq, Z)
        dU = dv[self.nq * Z:].reshape(self.nq, self.S)
        dV = self.QcT @ dZ
        dW = self.QcT @ dU
        grad = np.concatenate([dV.ravel(), dW.ravel()])
        pen = self.penalty * lam
        loss += 0.5 * float(theta @ (pen * theta))
        grad += pen * theta
        return loss, grad

    def evaluate(self, theta):
        """Mean loss (no penalty) and top-1 span accuracy (first maximum)."""
        s = self.scores(theta)
        gold = set(zip(self.gold_q.tolist(), self.gold_rows.tolist()))
        correct = 0
        nll = 0.0
        for i in range(self.nq):
            a, n = self.seg_start[i], self.seg_len[i]
            seg = s[a:a + n]
            r = int(np.argmax(seg))
            correct += (i, a + r) in gold
            mx = seg.max()
            lse = mx + np.log(np.exp(seg - mx).sum())
            g = self.gold_rows[self.gold_q == i]
            lg = mx + np.log(np.exp(s[g] - mx).sum())
            nll += lse - lg
        return nll / self.nq, correct / self.nq


def fit(problem, lam, theta0, log):
    t0 = time.time()
    it = [0]

    def cb(_):
        it[0] += 1

    res = opt.minimize(
        problem.loss_grad,
        theta0,
        args=(lam,),
        jac=True,
        method="L-BFGS-B",
        callback=cb,
        options={"maxiter": MAXITER, "maxcor": 20},
    )
    log(f"  lam={lam}: loss={res.fun:.2f} iters={it[0]} {time.time() - t0:.0f}s ({res.message})")
    return res.x


def main():
    export_dir, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    t_start = time.time()

    def log(msg):
        print(msg, flush=True)

    meta, a = load(export_dir)
    nq = len(a["q_para"])
    n_articles = len(meta["articleTitles"])
    rng = np.random.default_rng(SEED)
    perm = rng.permutation(n_articles)
    n_held = max(1, round(HELDOUT_FRACTION * n_articles))
    held_articles = np.sort(perm[:n_held])
    is_held = np.isin(a["q_article"], held_articles)
    train_q = np.nonzero(~is_held)[0]
    held_q = np.nonzero(is_held)[0]
    log(f"questions {nq}: train {len(train_q)}, held-out {len(held_q)} ({n_held} articles)")
    t0 = time.time()
    tr = Problem(meta, a, train_q)
    ho = Problem(meta, a, held_q)
    log(f"design built in {time.time() - t0:.0f}s: rows {tr.R + ho.R}, nnz {tr.X.nnz + ho.X.nnz}")
    grid = []
    for lam in LAMBDAS:
        theta = fit(tr, lam, np.zeros(tr.n_params), log)
        nll, acc = ho.evaluate(theta)
        tr_nll, tr_acc = tr.evaluate(theta)
        log(f"  held-out: nll={nll:.4f} top1={acc:.4f} (train top1={tr_acc:.4f})")
        grid.append({"lambda": lam, "heldout_nll": nll, "heldout_top1": acc, "train_top1": tr_acc})
    best = max(grid, key=lambda g: (round(g["heldout_top1"], 6), -g["heldout_nll"]))
    lam = best["lambda"]
    log(f"chosen lambda {lam}; refit on all {nq} questions")
    del tr, ho
    full = Problem(meta, a, np.arange(nq))
    theta = fit(full, lam, np.zeros(full.n_params), log)
    nll, acc = full.evaluate(theta)
    theta.astype("<f4").tofile(os.path.join(out_dir, "params.f32"))
    out = {
        "seed": SEED,
        "heldout_articles": [meta["articleTitles"][i] for i in held_articles],
        "heldout_questions": int(len(held_q)),
        "train_questions": int(len(train_q)),
        "grid": grid,
        "lambda": lam,
        "v_ratio": V_RATIO,
        "maxiter": MAXITER,
        "full_train_nll": nll,
        "full_train_top1": acc,
        "shapes": {"classes": full.C, "groups": full.G, "shapeDim": full.S},
        "seconds": round(time.time() - t_start, 1),
    }
    with open(os.path.join(out_dir, "fit.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)
    log(json.dumps({k: out[k] for k in ("lambda", "grid", "seconds")}))


if __name__ == "__main__":
    main()
