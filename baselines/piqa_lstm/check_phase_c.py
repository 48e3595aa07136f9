"""Checks train_open.py's phase C (hard negatives mined from the index) on a tiny input:
two steps from the same seed give the same losses, to the last bit, with 1 thread; the
mined negatives come from other paragraphs and are no answer; the context encoder moves.

    python3 baselines/piqa_lstm/check_phase_c.py [--init data/models/piqa-lstm-open]

Uses the first 2 articles of the train subset that are not held out (the first 6 paragraphs
of each), nothing else; about 10 s on one core. Exits 1 on a failed check.
"""
import argparse
import gzip
import json
import os
import random
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train import DEFAULT_TRAIN, em_score, prepare  # noqa: E402
from train_open import Corpus, load_init, mine_hard, random_batches, step_c  # noqa: E402


def run(init, arts, seed, steps=2, n_neg=3, max_paras=4):
    """(losses, negatives, max |change| of the context encoder's weights) of `steps` phase-C
    steps from `init` over the paragraphs of `arts`."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    vocab_words, cm, qm = load_init(init, 0.2)
    vocab = {w: i for i, w in enumerate(vocab_words)}
    paras = []
    for a in arts:
        ps = prepare([a], vocab)[:6]
        for p in ps:
            p["article"] = a["title"]
        paras += ps
    corpus = Corpus(paras)
    items = [(k, q) for k, p in enumerate(paras) for q in p["questions"]]
    items_of = [[] for _ in paras]
    for it, (k, _) in enumerate(items):
        items_of[k].append(it)
    before = {k: v.clone() for k, v in cm.state_dict().items()}
    negs, S, E = mine_hard(cm, qm, corpus, items, n_neg)
    opt = torch.optim.Adam(list(cm.parameters()) + list(qm.parameters()), lr=2e-4)
    cm.train()
    qm.train()
    rng = random.Random(seed)
    losses = []
    order = random_batches(paras, rng)[0]  # the 12 paragraphs, shuffled
    for s in range(steps):
        group = order[4 * s: 4 * s + 4]  # 4 paragraphs a step; their negatives' come on top
        losses.append(step_c(cm, qm, opt, group, corpus, items, items_of, negs, S, E, n_neg,
                             max_paras, 1.0))
    moved = max(float((cm.state_dict()[k] - v).abs().max()) for k, v in before.items())
    return losses, negs, items, corpus, moved


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--init", default="data/models/piqa-lstm-open")
    ap.add_argument("--train", default=DEFAULT_TRAIN)
    args = ap.parse_args()
    with open(f"{args.init}/training.json") as f:
        held = set(json.load(f)["heldout_articles"])
    with gzip.open(args.train, "rt", encoding="utf-8") as f:
        arts = [a for a in json.load(f)["data"] if a["title"] not in held][:2]
    a = run(args.init, arts, 20240917)
    b = run(args.init, arts, 20240917)
    fails = []
    if a[0] != b[0]:
        fails.append(f"losses differ between two runs: {a[0]} vs {b[0]}")
    if len(a[0]) != 2 or not all(np.isfinite(x) and x > 0 for x in a[0]):
        fails.append(f"losses not 2 finite positive values: {a[0]}")
    if a[1] != b[1]:
        fails.append("mined negatives differ between two runs")
    negs, items, corpus = a[1], a[2], a[3]
    if sum(len(n) for n in negs) != 3 * len(items):
        fails.append(f"{sum(len(n) for n in negs)} negatives for {len(items)} questions, not 3 each")
    for (k, q), ns in zip(items, negs):
        for i, j in ns:
            if int(corpus.para_of[i]) == k or int(corpus.para_of[j]) != int(corpus.para_of[i]):
                fails.append(f"negative ({i}, {j}) of a question of paragraph {k}: own paragraph "
                             "or across paragraphs")
            if any(em_score(corpus.text(i, j), g) for g in q["answers"]):
                fails.append(f"negative {corpus.text(i, j)!r} is an answer")
    if not a[4] > 0:
        fails.append("the context encoder did not move")
    print(f"phase C check: losses {a[0]} (twice the same: {a[0] == b[0]}), "
          f"{len(items)} questions, {sum(len(n) for n in negs)} negatives, "
          f"context weights moved by up to {a[4]:.2e}")
    for f in fails:
        print("FAIL:", f)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
