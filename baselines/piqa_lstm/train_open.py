"""Trains piqa-lstm-open: piqa-lstm fine-tuned for open-domain phrase search
(scores that compare across paragraphs), the way DensePhrases (Lee et al.
2021) trains, and exports it.

Usage (from the repository root; `deno task train-piqa-lstm-open` runs the
bundled model's command):

    python3 baselines/piqa_lstm/train_open.py [--init data/models/piqa-lstm]
        [--out data/models/piqa-lstm-open] [--epochs-a 4] [--epochs-b 4]
        [--minutes-a 40] [--minutes-b 20] [--lr-a 2e-4] [--lr-b 5e-4]
        [--prebatch 4] [--para-weight 1.0] [--batches random|article] [--no-mask-same]
        [--epochs-c 0] [--minutes-c 120] [--lr-c 2e-4] [--hard-negatives 4]
        [--hard-paras 16] [--steps-c 0]
        [--seed 20240917] [--threads 1] [--no-export]

The bundled model is phase B alone (`--epochs-a 0 --epochs-b 5 --minutes-b 22 --lr-b 1e-3`):
phase A lowered every held-out figure in the tries (README.md, "Open search").

Start: the bundled piqa-lstm, read back from its ONNX files (`--init`): the
f16 initializers are the whole model (vocabulary, GloVe rows, casing
embedding, LSTMs, pooling), so GloVe itself is not needed here.

Phase A (both encoders): each question's softmax over start (and end) tokens
covers its own paragraph, the other 15 paragraphs of its batch (in-batch
negatives; a batch holds paragraphs of one or two articles, so most of them
are hard, same-topic negatives) and the tokens of the `--prebatch` previous
batches, kept detached (pre-batch negatives), plus piqa-lstm's in-paragraph
loss times `--para-weight` (the closed task).

Phase B (question encoder only): the context encoder of the best phase-A
epoch is frozen and encodes every token of the training paragraphs once (the
fixed index); each question's softmax covers all of them (query-side
fine-tuning, exact rather than over retrieved top-k).

Phase C (both encoders, hard negatives from the index; off unless `--epochs-c`):
at the start of each epoch the current model encodes every training paragraph
and every training question, and each question gets the `--hard-negatives`
highest-scoring phrases of OTHER training paragraphs whose text is no answer
(DensePhrases' hard negatives). A step takes 16 random training paragraphs and
their questions; the paragraphs of the negatives are re-encoded with gradients
in the same step, up to `--hard-paras` of them (each question's best negative
first), the others keep the vectors of the epoch's index. Each question's start
softmax covers its own paragraph's tokens plus its negatives' start tokens (the
end softmax likewise), plus the in-paragraph loss times `--para-weight` (the
closed task). `check_phase_c.py` checks it on a tiny input.

Data: data/train-subset-v1.1.json.gz only. The held-out articles are
piqa-lstm's five (from its training.json), so the starting model never saw
them; held-out questions are searched against the corpus of all 2,430
subset paragraphs (open EM/F1 of the top phrase, top-k accuracy: a top-k
phrase's paragraph holds a normalised answer), and each question against its
own paragraph (closed EM/F1). The checkpoint with the best held-out open EM
(then top-20) is exported, the starting model included. Dev is never read.
"""
import argparse
import json
import os
import random
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export import GATES  # noqa: E402
from model import ContextModel, QuestionModel  # noqa: E402
from phrases import MAX_TOKENS  # noqa: E402
from train import (  # noqa: E402
    DEFAULT_TRAIN, PARAS_PER_BATCH, ROOT, batch_tensors, em_score, evaluate, f1_score, log,
    normalize_answer, prepare, question_tensors,
)

TOPK = [1, 5, 20, 100]
NAME = "piqa-lstm-open"


# ---- the starting model, read back from piqa-lstm's ONNX files ----
def _inits(path):
    import onnx
    from onnx import numpy_helper
    m = onnx.load(path)
    return {i.name: numpy_helper.to_array(i).astype(np.float32) for i in m.graph.initializer}


def _set_lstm(lstm, prefix, ini):
    hs = lstm.hidden_size
    W, R, B = ini[prefix + "_W_f16"], ini[prefix + "_R_f16"], ini[prefix + "_B_f16"]

    def back(m):  # ONNX gate blocks (i, o, f, c) -> torch (i, f, g, o)
        out = np.empty_like(m)
        for k, g in enumerate(GATES):
            out[g * hs:(g + 1) * hs] = m[k * hs:(k + 1) * hs]
        return out
    with torch.no_grad():
        for d, suffix in enumerate(["", "_reverse"]):
            getattr(lstm, "weight_ih_l0" + suffix).copy_(torch.from_numpy(back(W[d])))
            getattr(lstm, "weight_hh_l0" + suffix).copy_(torch.from_numpy(back(R[d])))
            getattr(lstm, "bias_ih_l0" + suffix).copy_(torch.from_numpy(back(B[d][: 4 * hs])))
            getattr(lstm, "bias_hh_l0" + suffix).copy_(torch.from_numpy(back(B[d][4 * hs:])))


def load_init(init_dir, dropout):
    """(vocab words, ContextModel, QuestionModel) of the piqa-lstm ONNX pair in `init_dir`."""
    with open(f"{init_dir}/vocab.txt", encoding="utf-8") as f:
        vocab_words = f.read().split("\n")[:-1]
    ci, qi = _inits(f"{init_dir}/context.onnx"), _inits(f"{init_dir}/question.onnx")
    full = ci["emb_f16"]
    table = full.copy()
    table[1] = 0.0
    tt = torch.tensor(table)
    cm, qm = ContextModel(tt, dropout=dropout), QuestionModel(tt, dropout=dropout)
    with torch.no_grad():
        for m, ini in ((cm, ci), (qm, qi)):
            m.embed.unk.copy_(torch.from_numpy(ini["emb_f16"][1]))
            m.embed.case.weight.copy_(torch.from_numpy(ini["case_emb_f16"]))
            _set_lstm(m.lstm, "l0", ini)
        _set_lstm(cm.lstm_s, "l_start", ci)
        _set_lstm(cm.lstm_e, "l_end", ci)
        _set_lstm(qm.lstm_s, "l_qs", qi)
        _set_lstm(qm.lstm_e, "l_qe", qi)
        for att, n in ((qm.att_s, "qs"), (qm.att_e, "qe")):
            att.weight.copy_(torch.from_numpy(qi[n + "_aw_f16"].T))
            att.bias.copy_(torch.from_numpy(qi[n + "_ab_f16"]))
    return vocab_words, cm, qm


# ---- the corpus: every token of a list of paragraphs, and every phrase ----
class Corpus:
    """Global token arrays of `paras` and their phrases (i, j): j - i < MAX_TOKENS, in
    one paragraph, i may start and j may end a phrase (phrases.py)."""

    def __init__(self, paras):
        self.paras = paras
        self.start = np.cumsum([0] + [len(p["ids"]) for p in paras])
        n = int(self.start[-1])
        para_of = np.repeat(np.arange(len(paras)), [len(p["ids"]) for p in paras])
        ok_s = np.concatenate([np.array(p["ok_s"], dtype=bool) for p in paras])
        ok_e = np.concatenate([np.array(p["ok_e"], dtype=bool) for p in paras])
        i = np.repeat(np.arange(n), MAX_TOKENS)
        j = i + np.tile(np.arange(MAX_TOKENS), n)
        keep = j < n
        i, j = i[keep], j[keep]
        keep = ok_s[i] & ok_e[j] & (para_of[i] == para_of[j])
        self.ci, self.cj = torch.from_numpy(i[keep]), torch.from_numpy(j[keep])
        self.para_of = para_of
        self.n = n
        self.norm_ctx = [" " + normalize_answer(p["context"]) + " " for p in paras]

    def gold(self, k, q):
        """Global (start, end) token of question q of paragraph k."""
        return int(self.start[k]) + q["s"], int(self.start[k]) + q["e"]

    def text(self, i, j):
        k = self.para_of[i]
        p, o = self.paras[k], int(self.start[k])
        return p["context"][p["offsets"][i - o][0]: p["offsets"][j - o][1]]


def encode_corpus(cm, paras, bs=32):
    """(S, E): start and end vectors of every token of `paras`, in order."""
    cm.eval()
    Ss, Es = [], []
    with torch.no_grad():
        for b in range(0, len(paras), bs):
            g = paras[b: b + bs]
            S, E = cm(*batch_tensors(g))
            for k, p in enumerate(g):
                Ss.append(S[k, : len(p["ids"])])
                Es.append(E[k, : len(p["ids"])])
    return torch.cat(Ss), torch.cat(Es)


def evaluate_open(cm, qm, corpus, questions, S=None, E=None):
    """Held-out open search over `corpus`: `questions` is a list of question records;
    returns EM, F1 of the top phrase and top-k accuracy (%)."""
    if S is None:
        S, E = encode_corpus(cm, corpus.paras)
    qm.eval()
    w = S.shape[1]
    em = f1 = 0.0
    hits = {k: 0 for k in TOPK}
    with torch.no_grad():
        for b in range(0, len(questions), 8):
            qs = questions[b: b + 8]
            Q = qm(*question_tensors(qs))
            ss, ee = Q[:, :w] @ S.T, Q[:, w:] @ E.T
            sc = ss[:, corpus.ci] + ee[:, corpus.cj]
            top = torch.topk(sc, max(TOPK), dim=1).indices
            for r, q in enumerate(qs):
                idx = top[r].tolist()
                i0, j0 = int(corpus.ci[idx[0]]), int(corpus.cj[idx[0]])
                pred = corpus.text(i0, j0)
                em += max(em_score(pred, g) for g in q["answers"])
                f1 += max(f1_score(pred, g) for g in q["answers"])
                golds = [" " + normalize_answer(g) + " " for g in q["answers"]]
                first = None
                for rank, c in enumerate(idx):
                    ctx = corpus.norm_ctx[corpus.para_of[int(corpus.ci[c])]]
                    if any(g.strip() and g in ctx for g in golds):
                        first = rank
                        break
                for k in TOPK:
                    hits[k] += first is not None and first < k
    n = max(len(questions), 1)
    return {"open_em": 100 * em / n, "open_f1": 100 * f1 / n,
            **{f"top{k}": 100 * hits[k] / n for k in TOPK}}


def scores(cm, qm, corpus, held_p, held_q, probe_q=(), S=None, E=None):
    """Held-out open and closed figures; with `probe_q` (training questions) also their open
    figures against the same corpus (`train_*`: how well the training questions themselves
    are fitted, against the held-out figures)."""
    if S is None:
        S, E = encode_corpus(cm, corpus.paras)
    out = evaluate_open(cm, qm, corpus, held_q, S, E)
    em, f1, _ = evaluate(cm, qm, held_p)
    out.update({"closed_em": em, "closed_f1": f1})
    if probe_q:
        out.update({"train_" + k: v for k, v in
                    evaluate_open(cm, qm, corpus, probe_q, S, E).items()})
    return {k: round(v, 3) for k, v in out.items()}


def fmt(r):
    return (f"open EM {r['open_em']:.2f} F1 {r['open_f1']:.2f}, top-1/5/20/100 {r['top1']:.2f}/"
            f"{r['top5']:.2f}/{r['top20']:.2f}/{r['top100']:.2f}; closed EM {r['closed_em']:.2f} "
            f"F1 {r['closed_f1']:.2f}" + (
                f"; training probe: open EM {r['train_open_em']:.2f}, top-1/5/20/100 "
                f"{r['train_top1']:.2f}/{r['train_top5']:.2f}/{r['train_top20']:.2f}/"
                f"{r['train_top100']:.2f}" if "train_top1" in r else ""))


def random_batches(train_p, rng):
    """Batches of PARAS_PER_BATCH paragraphs drawn at random (as DensePhrases' in-batch
    negatives: mostly other articles)."""
    idx = list(range(len(train_p)))
    rng.shuffle(idx)
    return [idx[b: b + PARAS_PER_BATCH] for b in range(0, len(idx), PARAS_PER_BATCH)]


def article_batches(train_p, rng):
    """Batches of PARAS_PER_BATCH paragraphs: articles in a random order, each article's
    paragraphs shuffled and laid end to end, cut into batches, the batches shuffled."""
    by_art = {}
    for k, p in enumerate(train_p):
        by_art.setdefault(p["article"], []).append(k)
    arts = sorted(by_art)
    rng.shuffle(arts)
    seq = []
    for a in arts:
        ks = by_art[a][:]
        rng.shuffle(ks)
        seq += ks
    batches = [seq[b: b + PARAS_PER_BATCH] for b in range(0, len(seq), PARAS_PER_BATCH)]
    rng.shuffle(batches)
    return batches


def step_a(cm, qm, opt, group, bank, n_bank, para_weight, mask_same=True):
    """Phase A step: softmax over the batch's tokens and the bank's (pre-batch), plus the
    in-paragraph loss. `mask_same`: tokens of the gold token's vocabulary id other than the
    gold one are left out of the softmax (the answer's word elsewhere is no negative).
    Returns the loss and what the bank keeps of this batch (vectors, ids)."""
    S, E = cm(*batch_tensors(group))
    qs, pidx, a_s, a_e = [], [], [], []
    for k, p in enumerate(group):
        for q in p["questions"]:
            qs.append(q)
            pidx.append(k)
            a_s.append(q["s"])
            a_e.append(q["e"])
    lens = torch.tensor([len(p["ids"]) for p in group])
    tok_ok = torch.arange(S.shape[1])[None, :] < lens[:, None]
    Sf, Ef = S[tok_ok], E[tok_ok]
    ids_f = torch.cat([torch.tensor(p["ids"]) for p in group])
    if not qs:
        return 0.0, (Sf.detach(), Ef.detach(), ids_f)
    Q = qm(*question_tensors(qs))
    w = S.shape[-1]
    pidx = torch.tensor(pidx)
    off = torch.cumsum(torch.cat([torch.zeros(1, dtype=torch.long), lens[:-1]]), 0)
    gs, ge = off[pidx] + torch.tensor(a_s), off[pidx] + torch.tensor(a_e)
    Sa = torch.cat([Sf] + [b[0] for b in bank])
    Ea = torch.cat([Ef] + [b[1] for b in bank])
    ids_a = torch.cat([ids_f] + [b[2] for b in bank])
    ce = torch.nn.functional.cross_entropy
    ls, le = Q[:, :w] @ Sa.T, Q[:, w:] @ Ea.T
    if mask_same:
        pos = torch.arange(len(ids_a))[None, :]
        ls = ls.masked_fill((ids_a[None, :] == ids_f[gs][:, None]) & (pos != gs[:, None]), -1e4)
        le = le.masked_fill((ids_a[None, :] == ids_f[ge][:, None]) & (pos != ge[:, None]), -1e4)
    loss = ce(ls, gs) + ce(le, ge)
    if para_weight > 0:
        valid = torch.arange(S.shape[1])[None, :] < lens[pidx][:, None]
        sl = torch.einsum("qtd,qd->qt", S[pidx], Q[:, :w]).masked_fill(~valid, -1e4)
        el = torch.einsum("qtd,qd->qt", E[pidx], Q[:, w:]).masked_fill(~valid, -1e4)
        loss = loss + para_weight * (ce(sl, torch.tensor(a_s)) + ce(el, torch.tensor(a_e)))
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(list(cm.parameters()) + list(qm.parameters()), 5.0)
    opt.step()
    return loss.item(), (Sf.detach(), Ef.detach(), ids_f)


def mine_hard(cm, qm, corpus, items, n_neg, chunk=64):
    """Hard negatives from the index (DensePhrases): `corpus` is the training paragraphs,
    `items` the (paragraph k, question) pairs. Encodes every token of the corpus with the
    current context encoder and every question with the current question encoder (eval mode,
    no gradient), scores every phrase of the corpus (s_i . q_s + e_j . q_e) and keeps, per
    question, the `n_neg` highest-scoring phrases of OTHER paragraphs whose text is no answer
    of the question (SQuAD-normalised: a phrase that is an answer is no negative). Returns
    (negatives: a list of [(i, j) global token positions] per item, S, E: the index)."""
    S, E = encode_corpus(cm, corpus.paras)
    qm.eval()
    w = S.shape[1]
    para_of_phrase = torch.from_numpy(corpus.para_of)[corpus.ci]
    out = []
    with torch.no_grad():
        for b in range(0, len(items), chunk):
            sel = items[b: b + chunk]
            Q = qm(*question_tensors([q for _, q in sel]))
            sc = (Q[:, :w] @ S.T)[:, corpus.ci] + (Q[:, w:] @ E.T)[:, corpus.cj]
            own = torch.tensor([k for k, _ in sel])
            sc.masked_fill_(para_of_phrase[None, :] == own[:, None], -float("inf"))
            top = torch.topk(sc, min(4 * n_neg + 8, sc.shape[1]), dim=1).indices
            for r, (_, q) in enumerate(sel):
                negs = []
                for c in top[r].tolist():
                    i, j = int(corpus.ci[c]), int(corpus.cj[c])
                    if any(em_score(corpus.text(i, j), g) for g in q["answers"]):
                        continue
                    negs.append((i, j))
                    if len(negs) == n_neg:
                        break
                out.append(negs)
    return out, S, E


def step_c(cm, qm, opt, group, corpus, items, items_of, negs, S_fix, E_fix, n_neg, max_paras,
           para_weight):
    """Phase C step over the training paragraphs `group` (indices into corpus.paras) and all
    their questions (`items[it]` = (paragraph, question); `items_of[k]`: the item numbers of
    paragraph k; `negs[it]`: its mined negatives). The paragraphs of the negatives are re-encoded with gradients in this step, as
    many as `max_paras` (each question's best negative first, then its second, ...); the
    negatives of paragraphs beyond that keep their vectors of the epoch's index (`S_fix`,
    `E_fix`, no gradient). Each question's start softmax covers its own paragraph's tokens
    and its negatives' start tokens (the end softmax likewise), plus piqa-lstm's
    in-paragraph loss times `para_weight` (the closed task). Returns the loss."""
    its = [it for k in group for it in items_of[k]]
    if not its:
        return 0.0
    in_group = set(group)
    extra = []
    for rank in range(n_neg):
        for it in its:
            if rank < len(negs[it]) and len(extra) < max_paras:
                p = int(corpus.para_of[negs[it][rank][0]])
                if p not in in_group and p not in extra:
                    extra.append(p)
    enc = list(group) + extra
    slot = {p: n for n, p in enumerate(enc)}
    S, E = cm(*batch_tensors([corpus.paras[p] for p in enc]))
    T, w = S.shape[1], S.shape[2]
    qs = [items[it][1] for it in its]
    own = torch.tensor([slot[items[it][0]] for it in its])
    a_s, a_e = [q["s"] for q in qs], [q["e"] for q in qs]
    Q = qm(*question_tensors(qs))
    lens = torch.tensor([len(corpus.paras[p]["ids"]) for p in enc])
    valid = torch.arange(T)[None, :] < lens[own][:, None]
    sl = torch.einsum("qtd,qd->qt", S[own], Q[:, :w]).masked_fill(~valid, -1e4)
    el = torch.einsum("qtd,qd->qt", E[own], Q[:, w:]).masked_fill(~valid, -1e4)
    # negatives: (question, rank) -> a row of this step's encoding (is_enc) or of the index
    nq = len(its)
    rows = torch.zeros(4, nq, n_neg, dtype=torch.long)  # enc start, enc end, fix start, fix end
    is_enc = torch.zeros(nq, n_neg, dtype=torch.bool)
    present = torch.zeros(nq, n_neg, dtype=torch.bool)
    for r, it in enumerate(its):
        for n, (i, j) in enumerate(negs[it]):
            p = int(corpus.para_of[i])
            present[r, n] = True
            if p in slot:
                is_enc[r, n] = True
                o = int(corpus.start[p])
                rows[0, r, n], rows[1, r, n] = slot[p] * T + i - o, slot[p] * T + j - o
            else:
                rows[2, r, n], rows[3, r, n] = i, j
    m = is_enc[..., None]
    Sn = torch.where(m, S.reshape(-1, w)[rows[0]], S_fix[rows[2]])
    En = torch.where(m, E.reshape(-1, w)[rows[1]], E_fix[rows[3]])
    sn = torch.einsum("qnd,qd->qn", Sn, Q[:, :w]).masked_fill(~present, -1e4)
    en = torch.einsum("qnd,qd->qn", En, Q[:, w:]).masked_fill(~present, -1e4)
    ce = torch.nn.functional.cross_entropy
    ts, te = torch.tensor(a_s), torch.tensor(a_e)
    loss = ce(torch.cat([sl, sn], 1), ts) + ce(torch.cat([el, en], 1), te)
    if para_weight > 0:
        loss = loss + para_weight * (ce(sl, ts) + ce(el, te))
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(list(cm.parameters()) + list(qm.parameters()), 5.0)
    opt.step()
    return loss.item()


def phase_b(args, fh, cm, qm, corpus, train_p, held_p, held_q, rng, history, best, best_state,
            best_at):
    """Phase B (query-side fine-tuning against the fixed index of the training paragraphs).
    Returns (best, best_state, best_at) over the checkpoints so far."""
    S_idx, E_idx = encode_corpus(cm, train_p)
    idx_corpus = Corpus(train_p)
    items = [(k, q) for k, p in enumerate(train_p) for q in p["questions"]]
    golds = torch.tensor([idx_corpus.gold(k, q) for k, q in items])
    for p in cm.parameters():
        p.requires_grad_(False)
    opt = torch.optim.Adam([p for p in qm.parameters() if p.requires_grad], lr=args.lr_b)
    w = S_idx.shape[1]
    S_all, E_all = encode_corpus(cm, corpus.paras)  # held-out search corpus, fixed now
    tb = time.time()
    deadline = tb + args.minutes_b * 60
    for epoch in range(1, args.epochs_b + 1):
        te = time.time()
        qm.train()
        order = list(range(len(items)))
        rng.shuffle(order)
        total, steps = 0.0, 0
        for b in range(0, len(order), args.qbatch):
            sel = order[b: b + args.qbatch]
            Q = qm(*question_tensors([items[i][1] for i in sel]))
            g = golds[sel]
            ce = torch.nn.functional.cross_entropy
            loss = ce(Q[:, :w] @ S_idx.T, g[:, 0]) + ce(Q[:, w:] @ E_idx.T, g[:, 1])
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(list(qm.parameters()), 5.0)
            opt.step()
            total += loss.item()
            steps += 1
        r = scores(cm, qm, corpus, held_p, held_q, args.probe_q, S_all, E_all)
        sec = round(time.time() - te, 1)
        log(fh, f"B epoch {epoch}: loss {total / steps:.3f}, {fmt(r)}, {sec:.0f} s")
        history.append({"phase": "B", "technique": "query-side fine-tuning against the index of "
                        f"the {len(train_p)} training paragraphs ({idx_corpus.n} tokens), context "
                        f"encoder frozen, lr {args.lr_b}", "epoch": epoch, "loss": round(total / steps, 4),
                        "seconds": sec, **r})
        if better(r, best):
            best, best_state, best_at = r, snapshot(cm, qm), f"B{epoch}"
        if time.time() + (time.time() - te) > deadline:
            log(fh, "phase B time budget reached: stop")
            break
    return best, best_state, best_at


def phase_c(args, fh, cm, qm, corpus, train_p, held_p, held_q, rng, history, best, best_state,
            best_at):
    """Phase C (both encoders): at the start of each epoch the current model encodes the
    training paragraphs (the index) and mines each training question's hard negatives
    (`mine_hard`); the epoch then runs `step_c` over random batches of 16 training paragraphs.
    Each epoch is scored on the held-out slice as phases A and B are. Returns (best,
    best_state, best_at)."""
    idx_corpus = Corpus(train_p)
    items = [(k, q) for k, p in enumerate(train_p) for q in p["questions"]]
    items_of = [[] for _ in train_p]
    for it, (k, _) in enumerate(items):
        items_of[k].append(it)
    for p in list(cm.parameters()) + list(qm.parameters()):
        p.requires_grad_(True)  # the GloVe table is a buffer: it stays frozen
    opt = torch.optim.Adam([p for p in list(cm.parameters()) + list(qm.parameters())
                            if p.requires_grad], lr=args.lr_c)
    tc = time.time()
    deadline = tc + args.minutes_c * 60
    for epoch in range(1, args.epochs_c + 1):
        te = time.time()
        negs, S_fix, E_fix = mine_hard(cm, qm, idx_corpus, items, args.hard_negatives)
        tm = time.time() - te
        same = sum(1 for (k, _), ns in zip(items, negs) for (i, _) in ns
                   if train_p[int(idx_corpus.para_of[i])]["article"] == train_p[k]["article"])
        n_negs = sum(len(ns) for ns in negs)
        log(fh, f"C epoch {epoch}: mined {n_negs} negatives for {len(items)} questions in "
                f"{tm:.0f} s ({100 * same / max(n_negs, 1):.1f} % from the question's own article)")
        cm.train()
        qm.train()
        total, steps = 0.0, 0
        for bi in random_batches(train_p, rng):
            if args.steps_c and steps >= args.steps_c:
                break
            loss = step_c(cm, qm, opt, bi, idx_corpus, items, items_of, negs, S_fix, E_fix,
                          args.hard_negatives, args.hard_paras, args.para_weight)
            total += loss
            steps += 1
        r = scores(cm, qm, corpus, held_p, held_q, args.probe_q)
        sec = round(time.time() - te, 1)
        log(fh, f"C epoch {epoch}: loss {total / steps:.4f}, {fmt(r)}, {sec:.0f} s "
                f"(mining {tm:.0f} s)")
        history.append({"phase": "C", "technique": f"both encoders, {args.hard_negatives} hard "
                        "negatives per question mined from the index of the training paragraphs "
                        f"at the start of the epoch, up to {args.hard_paras} of their paragraphs "
                        "re-encoded with gradients per step (the rest fixed for the epoch), "
                        f"in-paragraph loss x {args.para_weight}, lr {args.lr_c}",
                        "epoch": epoch, "loss": round(total / steps, 4), "steps": steps,
                        "seconds": sec, "mining_seconds": round(tm, 1), **r})
        if better(r, best):
            best, best_state, best_at = r, snapshot(cm, qm), f"C{epoch}"
        if time.time() + (time.time() - te) > deadline:
            log(fh, "phase C time budget reached: stop")
            break
    return best, best_state, best_at


def snapshot(cm, qm):
    return ({k: v.clone() for k, v in cm.state_dict().items()},
            {k: v.clone() for k, v in qm.state_dict().items()})


def better(r, best):
    return best is None or (r["open_em"], r["top20"]) > (best["open_em"], best["top20"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--init", default="data/models/piqa-lstm")
    ap.add_argument("--train", default=DEFAULT_TRAIN)
    ap.add_argument("--out", default=f"data/models/{NAME}")
    ap.add_argument("--epochs-a", type=int, default=4)
    ap.add_argument("--epochs-b", type=int, default=4)
    ap.add_argument("--minutes-a", type=float, default=40.0)
    ap.add_argument("--minutes-b", type=float, default=20.0)
    ap.add_argument("--lr-a", type=float, default=2e-4)
    ap.add_argument("--lr-b", type=float, default=5e-4)
    ap.add_argument("--prebatch", type=int, default=4,
                    help="pre-batch negatives: the tokens of this many previous batches")
    ap.add_argument("--para-weight", type=float, default=1.0,
                    help="weight of piqa-lstm's in-paragraph loss in phases A and C")
    ap.add_argument("--batches", default="random", choices=["random", "article"],
                    help="phase A batches: random paragraphs, or cut from one or two articles "
                         "(same-topic negatives)")
    ap.add_argument("--no-mask-same", action="store_true",
                    help="keep the gold token's word elsewhere among the negatives")
    ap.add_argument("--epochs-c", type=int, default=0,
                    help="phase C: both encoders against hard negatives mined from the index")
    ap.add_argument("--minutes-c", type=float, default=120.0)
    ap.add_argument("--lr-c", type=float, default=2e-4)
    ap.add_argument("--hard-negatives", type=int, default=4,
                    help="phase C: mined negatives per question (the best-scoring wrong phrases "
                         "of other training paragraphs)")
    ap.add_argument("--hard-paras", type=int, default=16,
                    help="phase C: paragraphs of negatives re-encoded with gradients per step "
                         "(the rest keep the epoch's index vectors; 0: all fixed)")
    ap.add_argument("--steps-c", type=int, default=0,
                    help="phase C: stop each epoch after this many steps (0: all; for checks)")
    ap.add_argument("--train-probe", type=int, default=0,
                    help="also score this many training questions (drawn with the seed) in open "
                         "search at each checkpoint: the fit on the training side")
    ap.add_argument("--qbatch", type=int, default=64, help="questions per phase-B step")
    ap.add_argument("--dropout", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=20240917)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-export", action="store_true")
    args = ap.parse_args()
    if "dev-v1.1" in os.path.basename(args.train):
        sys.exit("refusing to train on dev")
    t0 = time.time()
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    fh = open(f"{args.out}/train.log", "w")
    knobs = {k: v for k, v in vars(args).items() if k not in ("out", "train", "no_export")}
    log(fh, f"{NAME} training: {knobs}")

    vocab_words, cm, qm = load_init(args.init, args.dropout)
    vocab = {w: i for i, w in enumerate(vocab_words)}
    with open(f"{args.init}/training.json") as f:
        held_titles = json.load(f)["heldout_articles"]
    import gzip
    opener = gzip.open if args.train.endswith(".gz") else open
    with opener(args.train, "rt", encoding="utf-8") as f:
        data = json.load(f)["data"]
    held_arts = [a for a in data if a["title"] in held_titles]
    train_arts = [a for a in data if a["title"] not in held_titles]
    if len(held_arts) != len(held_titles):
        sys.exit(f"held-out articles {held_titles} not all in {args.train}")
    train_p, held_p = [], []
    for arts, out in ((train_arts, train_p), (held_arts, held_p)):
        for a in arts:
            ps = prepare([a], vocab)
            for p in ps:
                p["article"] = a["title"]
            out += ps
    corpus = Corpus(train_p + held_p)
    held_q = [q for p in held_p for q in p["questions"]]
    log(fh, f"held-out articles {held_titles}: {len(held_p)} paragraphs, {len(held_q)} questions;"
            f" train {len(train_p)} paragraphs, {sum(len(p['questions']) for p in train_p)} "
            f"questions; open corpus {len(corpus.paras)} paragraphs, {corpus.n} tokens, "
            f"{len(corpus.ci)} phrases")

    all_q = [q for p in train_p for q in p["questions"]]
    args.probe_q = random.Random(args.seed + 1).sample(all_q, min(args.train_probe, len(all_q)))
    history = []
    r = scores(cm, qm, corpus, held_p, held_q, args.probe_q)
    start_name = os.path.basename(os.path.normpath(args.init))
    log(fh, f"start ({start_name}): {fmt(r)}")
    history.append({"phase": "start", "technique": f"{start_name} as bundled", "epoch": 0, **r})

    # ---- phase A: in-batch + pre-batch negatives, both encoders ----
    params = [p for p in list(cm.parameters()) + list(qm.parameters()) if p.requires_grad]
    opt = torch.optim.Adam(params, lr=args.lr_a)
    rng = random.Random(args.seed)
    ta = time.time()
    deadline = ta + args.minutes_a * 60
    # The starting model competes too: phase B starts from the best of it and phase A's epochs.
    best_a, best_a_state, best_a_epoch = dict(r), snapshot(cm, qm), 0
    for epoch in range(1, args.epochs_a + 1):
        te = time.time()
        cm.train()
        qm.train()
        bank, total, steps = [], 0.0, 0
        make = random_batches if args.batches == "random" else article_batches
        for bi in make(train_p, rng):
            loss, kept = step_a(cm, qm, opt, [train_p[i] for i in bi], bank, args.prebatch,
                                args.para_weight, not args.no_mask_same)
            bank = ([kept] + bank)[: args.prebatch]
            total += loss
            steps += 1
        r = scores(cm, qm, corpus, held_p, held_q, args.probe_q)
        sec = round(time.time() - te, 1)
        log(fh, f"A epoch {epoch}: loss {total / steps:.3f}, {fmt(r)}, {sec:.0f} s")
        history.append({"phase": "A", "technique": f"in-batch (15 {args.batches} paragraphs) + "
                        f"pre-batch ({args.prebatch} batches) negatives"
                        f"{'' if args.no_mask_same else ' (the gold word elsewhere masked)'}, "
                        f"in-paragraph loss x {args.para_weight}, lr {args.lr_a}", "epoch": epoch, "loss": round(total / steps, 4),
                        "seconds": sec, **r})
        if better(r, best_a):
            best_a, best_a_state = r, snapshot(cm, qm)
            best_a_epoch = epoch
        if time.time() + (time.time() - te) > deadline:
            log(fh, "phase A time budget reached: stop")
            break
    cm.load_state_dict(best_a_state[0])
    qm.load_state_dict(best_a_state[1])
    best, best_state = best_a, best_a_state
    best_at = f"A{best_a_epoch}" if best_a_epoch else "start"
    log(fh, f"phase A best: {best_at}")

    # ---- phase B: query-side fine-tuning against the fixed index of the train paragraphs ----
    best_at = phase_b(args, fh, cm, qm, corpus, train_p, held_p, held_q, rng, history, best,
                      best_state, best_at) if args.epochs_b > 0 else (best, best_state, best_at)
    best, best_state, best_at = best_at

    # ---- phase C: both encoders against hard negatives mined from the index ----
    if args.epochs_c > 0:
        cm.load_state_dict(best_state[0])  # phase C starts from the best checkpoint so far
        qm.load_state_dict(best_state[1])
        best, best_state, best_at = phase_c(args, fh, cm, qm, corpus, train_p, held_p, held_q,
                                            rng, history, best, best_state, best_at)
    cm.load_state_dict(best_state[0])
    qm.load_state_dict(best_state[1])
    cm.eval()
    qm.eval()
    log(fh, f"best: {best_at}: {fmt(best)}")

    info, f16 = {}, None
    if not args.no_export:
        from export import export_all  # noqa: E402
        info = export_all(cm, qm, vocab_words, args.out, held_p[:20], log=lambda m: log(fh, m),
                          name=NAME)
        with open(f"{args.out}/manifest.json") as f:
            man = json.load(f)
        man["description"] = (
            "piqa-lstm fine-tuned for open-domain phrase search (DensePhrases-style: in-batch and "
            "pre-batch negatives, then query-side fine-tuning against the train-subset phrase "
            "index); BiLSTM over GloVe 100d + casing, start/end vectors per token")
        with open(f"{args.out}/manifest.json", "w") as f:
            json.dump(man, f, indent=2)
            f.write("\n")
        info["sizes"]["manifest.json"] = os.path.getsize(f"{args.out}/manifest.json")
        f16 = scores(cm, qm, corpus, held_p, held_q)
        log(fh, f"with the exported f16 weights: {fmt(f16)}")
    wall = time.time() - t0
    meta = {
        "seed": args.seed,
        "train": os.path.basename(args.train),
        "init": os.path.relpath(os.path.abspath(args.init), ROOT),
        "vocab": len(vocab_words),
        "heldout_articles": held_titles,
        "heldout_questions": len(held_q),
        "heldout_corpus": {"paragraphs": len(corpus.paras), "tokens": corpus.n,
                           "phrases": len(corpus.ci),
                           "what": "every paragraph of the train subset (held-out and training)"},
        "best": best_at,
        "heldout": best,
        **({} if f16 is None else {"heldout_f16": f16}),
        "history": history,
        "wall_seconds": round(wall, 1),
        "torch": torch.__version__,
        "threads": args.threads,
        "knobs": knobs,
        "command": " ".join(["python3 baselines/piqa_lstm/train_open.py", *[
            f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()
            if k not in ("out", "train", "no_export", "probe_q") and v != ap.get_default(k)]]),
        **info,
    }
    with open(f"{args.out}/training.json.tmp", "w") as f:
        json.dump(meta, f, indent=2)
    os.replace(f"{args.out}/training.json.tmp", f"{args.out}/training.json")
    log(fh, f"done in {wall:.0f} s")


if __name__ == "__main__":
    main()
