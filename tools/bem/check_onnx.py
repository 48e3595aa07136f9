#!/usr/bin/env python3
"""Check a converted `bem.onnx` against the TensorFlow SavedModel it came from.

1. 100 (candidate, reference, question) pairs built from SQuAD v1.1 dev (the
   first 100 questions; candidates are the gold answer itself, another gold
   answer, a reworded gold answer, another question's answer, a lower-cased
   gold answer with a full stop), tokenized with Hugging Face's slow
   `BertTokenizer(do_lower_case=True)` exactly as BEM's recipe does, run
   through TensorFlow and through ONNX Runtime: the logits must agree within
   `--tol` (default 1e-3) and every equivalence decision (score > 0.5) must be
   the same.
2. The seed example ("why is the sky blue" / reference "light scattering" /
   candidate "scattering of light") must score about 0.98918 (within 0.005)
   in both.
3. Unless `--no-phraseval`: the same 100 pairs through phraseval's own
   `bem` stage (Deno; its tokenizer, padding and batching): its
   `--dump-inputs` must hold exactly the Hugging Face ids, and its per-question
   scores must equal ONNX Runtime's (1e-5).

Exit 0 when every check passes, 1 otherwise; one line per check on stderr.

  python3 tools/bem/check_onnx.py --onnx bem.onnx [--savedmodel DIR]
      [--data data/dev-v1.1.json.gz] [--pairs 100] [--tol 1e-3]
      [--deno "npx -y deno@2.9.6"] [--no-phraseval]
"""

import argparse
import gzip
import json
import os
import shlex
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from convert import SEED_SCORE, bem_callable, get_savedmodel  # noqa: E402
from make_tokenizer_golden import four_x_lowercase, slow_tokenizer  # noqa: E402
import transformers  # noqa: E402

MAX_LEN = 512
SEED = {"question": "why is the sky blue", "reference": "light scattering",
        "candidate": "scattering of light"}

failures = []


def check(ok, what):
    print(f"check_onnx: {'ok  ' if ok else 'FAIL'} {what}", file=sys.stderr)
    if not ok:
        failures.append(what)


def dev_pairs(path, n):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    qs = [qa for a in data["data"] for p in a["paragraphs"] for qa in p["qas"]][: n + 1]
    pairs = []
    for i, qa in enumerate(qs[:n]):
        golds = [a["text"] for a in qa["answers"]]
        ref = golds[0]
        words = ref.split()
        cand = [
            ref,
            golds[-1],
            " ".join(words[1:]) if len(words) > 1 else f"the {ref}",
            qs[i + 1]["answers"][0]["text"],
            ref.lower() + ".",
        ][i % 5]
        pairs.append({"id": qa["id"], "question": qa["question"], "reference": ref,
                      "candidate": cand})
    return pairs


class Recipe:
    """BEM's inputs, as the seed's bertify_example builds them (plus phraseval's truncation)."""

    def __init__(self, vocab):
        self.tok, _ = slow_tokenizer(vocab)
        self.major = int(transformers.__version__.split(".")[0])

    def tokens(self, text):
        if self.major >= 5:
            text = four_x_lowercase(self.tok, text)
        return self.tok.tokenize(text)

    def inputs(self, p):
        c, r, q = (self.tokens(p[k]) for k in ("candidate", "reference", "question"))
        excess = len(c) + len(r) + len(q) + 4 - MAX_LEN
        for part in (q, r, c):  # question first, then reference, then candidate
            k = max(0, min(excess, len(part)))
            del part[len(part) - k:]
            excess -= k
        toks = ["[CLS]"] + c + ["[SEP]"] + r + ["[SEP]"] + q + ["[SEP]"]
        seg = [0] * (len(c) + 2) + [1] * (len(r) + 1) + [2] * (len(q) + 1)
        return self.tok.convert_tokens_to_ids(toks), seg


def padded(rows, dtype):
    ids = np.zeros((len(rows), MAX_LEN), dtype=dtype)
    seg = np.zeros((len(rows), MAX_LEN), dtype=dtype)
    for i, (a, s) in enumerate(rows):
        ids[i, : len(a)] = a
        seg[i, : len(s)] = s
    return ids, seg


def score(logits):
    logits = np.asarray(logits, dtype=np.float64)
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e[:, 1] / e.sum(axis=1)


def main():
    ap = argparse.ArgumentParser(description="Check bem.onnx against the TF SavedModel.")
    ap.add_argument("--onnx", default="bem.onnx")
    ap.add_argument("--savedmodel")
    ap.add_argument("--data", default=os.path.join(ROOT, "data/dev-v1.1.json.gz"))
    ap.add_argument("--vocab", default=os.path.join(ROOT, "data/bert/bert-base-uncased-vocab.txt"))
    ap.add_argument("--pairs", type=int, default=100)
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--seed-score", type=float, default=SEED_SCORE,
                    help="expected score of the seed example (negative: skip that check)")
    ap.add_argument("--deno", default="npx -y deno@2.9.6")
    ap.add_argument("--no-phraseval", action="store_true")
    args = ap.parse_args()

    import onnxruntime as ort
    import tensorflow as tf

    recipe = Recipe(args.vocab)
    pairs = [dict(SEED, id="seed")] + dev_pairs(args.data, args.pairs)
    rows = [recipe.inputs(p) for p in pairs]

    loaded = tf.saved_model.load(get_savedmodel(args.savedmodel))
    call, ids_spec, seg_spec = bem_callable(tf, loaded)
    tf_logits = []
    for at in range(0, len(rows), 10):
        ids, seg = padded(rows[at: at + 10], ids_spec.dtype.as_numpy_dtype)
        out = call({"input_ids": tf.constant(ids),
                    "segment_ids": tf.constant(seg.astype(seg_spec.dtype.as_numpy_dtype))})
        tf_logits.append(np.asarray(out, dtype=np.float64))
    tf_logits = np.concatenate(tf_logits)

    s = ort.InferenceSession(args.onnx, providers=["CPUExecutionProvider"])
    feeds_meta = {i.name: i.type for i in s.get_inputs()}
    check(sorted(feeds_meta) == ["input_ids", "segment_ids"],
          f"ONNX inputs are input_ids and segment_ids ({feeds_meta})")
    np_type = {"tensor(int64)": np.int64, "tensor(int32)": np.int32}
    ort_logits = []
    for at in range(0, len(rows), 10):
        ids, seg = padded(rows[at: at + 10], np.int64)
        feeds = {"input_ids": ids.astype(np_type.get(feeds_meta.get("input_ids"), np.int64)),
                 "segment_ids": seg.astype(np_type.get(feeds_meta.get("segment_ids"), np.int64))}
        ort_logits.append(s.run(None, feeds)[0].astype(np.float64))
    ort_logits = np.concatenate(ort_logits)

    diff = float(np.abs(tf_logits - ort_logits).max())
    check(diff <= args.tol, f"{len(rows)} pairs: max |logit TF - logit ONNX| = {diff:.2e} "
          f"(tolerance {args.tol})")
    tf_s, ort_s = score(tf_logits), score(ort_logits)
    same = int(((tf_s > 0.5) == (ort_s > 0.5)).sum())
    check(same == len(rows), f"equivalence decisions agree on {same}/{len(rows)} pairs")
    if args.seed_score >= 0:
        for name, v in (("TensorFlow", tf_s[0]), ("ONNX Runtime", ort_s[0])):
            check(abs(v - args.seed_score) <= 0.005,
                  f"seed example scores {v:.5f} with {name} (seed: {args.seed_score})")
    print(f"check_onnx: mean score over the dev pairs {ort_s[1:].mean():.4f}, "
          f"{int((ort_s[1:] > 0.5).sum())}/{len(rows) - 1} judged equivalent", file=sys.stderr)

    if not args.no_phraseval:
        with tempfile.TemporaryDirectory() as d:
            data = {"version": "1.1", "data": [{"title": "check", "paragraphs": [{
                "context": "",
                "qas": [{"id": p["id"], "question": p["question"],
                         "answers": [{"text": p["reference"], "answer_start": 0}]} for p in pairs],
            }]}]}
            with open(os.path.join(d, "d.json"), "w") as f:
                json.dump(data, f)
            with open(os.path.join(d, "p.json"), "w") as f:
                json.dump({p["id"]: p["candidate"] for p in pairs}, f)
            cmd = shlex.split(args.deno) + [
                "run", "-A", os.path.join(ROOT, "pipeline/bem.ts"), os.path.join(d, "d.json"),
                os.path.join(d, "p.json"), "--model", os.path.abspath(args.onnx), "--batch", "16",
                "--rows", os.path.join(d, "rows.ndjson"),
                "--dump-inputs", os.path.join(d, "dump.ndjson"),
            ]
            r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
            check(r.returncode == 0, f"phraseval bem ran ({r.stderr.strip()[-300:]})")
            if r.returncode == 0:
                with open(os.path.join(d, "dump.ndjson")) as f:
                    dump = [json.loads(line) for line in f]
                ok_ids = all(
                    x["input_ids"][: x["length"]] == a and x["segment_ids"][: x["length"]] == sg
                    and x["input_ids"][x["length"]:] == [0] * (MAX_LEN - x["length"])
                    for x, (a, sg) in zip(dump, rows)
                ) and len(dump) == len(rows)
                check(ok_ids, "phraseval's input_ids/segment_ids equal Hugging Face's, padded to 512")
                with open(os.path.join(d, "rows.ndjson")) as f:
                    ours = np.array([json.loads(line)["bem"] for line in f])
                d_ort = float(np.abs(ours - ort_s).max())
                d_tf = float(np.abs(ours - tf_s).max())
                check(d_ort <= 1e-5, f"phraseval's scores vs ONNX Runtime (Python): max diff {d_ort:.2e}")
                check(d_tf <= 1e-3, f"phraseval's scores vs TensorFlow: max diff {d_tf:.2e}")
                print(f"check_onnx: phraseval: {r.stdout.strip()}", file=sys.stderr)

    if failures:
        sys.exit(f"check_onnx: {len(failures)} check(s) failed")
    print("check_onnx: all checks passed", file=sys.stderr)


if __name__ == "__main__":
    main()
