"""Dumps the training tokenizer's output for a SQuAD file, one JSON line per text:
{"kind": "question"|"context", "id", "units": [[text, start, end], ...], "casing": [...], "ids": [...]}
Offsets are UTF-16 code units (as in TypeScript); ids are vocabulary ids (unknown -> 1).

    python3 baselines/piqa_lstm/dump_tokens.py DATA(.json|.json.gz) VOCAB > tokens.ndjson

tests/encoders/piqa_lstm_test.ts compares this with encoders/onnx/tokenizer.ts on every dev text.
"""
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tokenizer import casing, norm, tokenize  # noqa: E402


def utf16_offsets(text):
    """Code-point index -> UTF-16 index (len(text) + 1 entries)."""
    out = [0] * (len(text) + 1)
    for i, c in enumerate(text):
        out[i + 1] = out[i] + (2 if ord(c) > 0xFFFF else 1)
    return out


def record(kind, id_, text, vocab):
    toks = tokenize(text)
    u16 = utf16_offsets(text)
    return {
        "kind": kind,
        "id": id_,
        "units": [[t, u16[s], u16[e]] for t, s, e in toks],
        "casing": [casing(t) for t, _, _ in toks],
        "ids": [vocab.get(norm(t), 1) for t, _, _ in toks],
    }


def main():
    path, vocab_path = sys.argv[1], sys.argv[2]
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        data = json.load(f)["data"]
    vocab = {}
    with open(vocab_path, encoding="utf-8") as f:
        for i, w in enumerate(f.read().split("\n")):
            if w and w not in vocab:
                vocab[w] = i
    out = sys.stdout
    for a in data:
        for k, p in enumerate(a["paragraphs"]):
            pid = "%s_%d" % (a["title"], k)
            out.write(json.dumps(record("context", pid, p["context"], vocab), ensure_ascii=False) + "\n")
            for qa in p["qas"]:
                out.write(json.dumps(record("question", qa["id"], qa["question"], vocab),
                                     ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
