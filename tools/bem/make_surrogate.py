#!/usr/bin/env python3
"""A small BERT-shaped ONNX model with BEM's interface, for tests. NOT BEM.

Random weights (fixed seed), nothing learned: its scores mean nothing and
must never be reported as BEM scores. It exists so that the BEM plumbing
(tokenization, padding, batching, dedup, the fold, the CLI) can be tested
without the real model, which cannot be downloaded here.

Interface, as tf2onnx gives it for the TF-Hub BEM SavedModel
(`google/answer_equivalence/bem/1`, serving signature with `input_ids` and
`segment_ids`):

  inputs   input_ids    int64 [batch, seq]   token ids, 0-padded to 512
           segment_ids  int64 [batch, seq]   0 candidate, 1 reference, 2 question
  output   output_0     float32 [batch, 2]   raw logits; score = softmax[:, 1]

int64 because BEM's published preprocessing (`tensorflow_text.BertTokenizer`
plus `text.combine_segments` and `text.pad_model_inputs`, and the PyTorch
seed's `torch.tensor` of ids) produces int64 tensors, the SavedModel signature
is declared for them, and tf2onnx keeps signature dtypes; `metrics/bem/session.ts`
reads the dtype from the graph and feeds int32 just as well. The segment
(token type) vocabulary has 3 entries, as BEM's.

Inside: BERT's layout, scaled down: word (30,522) + position (512) + segment
(3) embeddings, LayerNorm, 2 transformer layers (hidden 16, 2 heads,
feed-forward 32, erf GELU), attention masked where `input_ids == 0` (the
model has no mask input), a tanh pooler on `[CLS]` and a 2-way classifier.

Also written (all tiny, all NOT BEM):

  bem_surrogate_int32_mask_NOT_BEM.onnx  TF Model Garden names (`input_word_ids`,
        `input_type_ids`, `input_mask`), int32, with a mask input: a masked
        mean of embeddings and a linear layer. Tests dtype and mask handling.
  bem_bad_names_NOT_BEM.onnx     one float input `features`: must be refused
  bem_bad_dtype_NOT_BEM.onnx     `input_ids`/`segment_ids` as float32: refused
  bem_bad_output_NOT_BEM.onnx    right inputs, output [batch, 3]: refused
  bem_surrogate_reference.json   inputs and logits of both good models,
        computed with an independent NumPy forward pass and with Python
        onnxruntime (when installed); `tests/metrics/bem/session_test.ts` compares ours.

Usage (from the repository root; needs numpy and onnx, optionally onnxruntime):

  python3 tools/bem/make_surrogate.py [--out-dir tests/fixtures]
"""

import argparse
import json
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 20220518
VOCAB = 30522
MAX_LEN = 512
TYPES = 3
HIDDEN = 16
HEADS = 2
FFN = 32
LAYERS = 2
OPSET = 17


def weights():
    rng = np.random.default_rng(SEED)

    def n(*shape, std=0.2):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    w = {
        "word": n(VOCAB, HIDDEN, std=1.0),
        "pos": n(MAX_LEN, HIDDEN, std=0.5),
        "type": n(TYPES, HIDDEN, std=1.0),
        "emb_ln_g": (1 + n(HIDDEN, std=0.1)),
        "emb_ln_b": n(HIDDEN, std=0.1),
    }
    for i in range(LAYERS):
        p = f"l{i}_"
        for k in ("q", "k", "v", "o"):
            w[p + k + "_w"] = n(HIDDEN, HIDDEN, std=0.4)
            w[p + k + "_b"] = n(HIDDEN, std=0.1)
        w[p + "ln1_g"] = 1 + n(HIDDEN, std=0.1)
        w[p + "ln1_b"] = n(HIDDEN, std=0.1)
        w[p + "f1_w"] = n(HIDDEN, FFN, std=0.4)
        w[p + "f1_b"] = n(FFN, std=0.1)
        w[p + "f2_w"] = n(FFN, HIDDEN, std=0.4)
        w[p + "f2_b"] = n(HIDDEN, std=0.1)
        w[p + "ln2_g"] = 1 + n(HIDDEN, std=0.1)
        w[p + "ln2_b"] = n(HIDDEN, std=0.1)
    w["pool_w"] = n(HIDDEN, HIDDEN, std=0.5)
    w["pool_b"] = n(HIDDEN, std=0.1)
    w["cls_w"] = n(HIDDEN, 2, std=1.5)
    w["cls_b"] = np.array([0.0, 0.0], dtype=np.float32)
    w = {k: v.astype(np.float32) for k, v in w.items()}
    # Centre the classifier so that scores spread on both sides of 0.5 (on
    # seeded random triples of question-like lengths), which the tests of the
    # fold and of the disagreement list need.
    probe = np.random.default_rng(SEED + 3)
    rows = []
    for _ in range(64):
        c, r, q = (int(probe.integers(1, n)) for n in (6, 6, 16))
        parts = [probe.integers(1000, VOCAB, n).tolist() for n in (c, r, q)]
        rows.append(([101] + parts[0] + [102] + parts[1] + [102] + parts[2] + [102],
                     [0] * (c + 2) + [1] * (r + 1) + [2] * (q + 1)))
    ids, seg = padded(rows)
    logits = numpy_bert(w, ids, seg)
    w["cls_b"] = np.array([0.0, -np.median(logits[:, 1] - logits[:, 0])], dtype=np.float32)
    return w


# --------------------------------------------------------------------------
# The ONNX graph
# --------------------------------------------------------------------------


class Graph:
    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def const(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def op(self, op, inputs, **attrs):
        self.n += 1
        out = f"{op.lower()}_{self.n}"
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out


def bert_graph(w, id_type=TensorProto.INT64):
    g = Graph()
    for k, v in w.items():
        g.const(k, v)
    ids, seg = "input_ids", "segment_ids"
    i64 = lambda name, vals: g.const(name, np.array(vals, dtype=np.int64))  # noqa: E731
    if id_type != TensorProto.INT64:
        ids_l = g.op("Cast", [ids], to=TensorProto.INT64)
        seg_l = g.op("Cast", [seg], to=TensorProto.INT64)
    else:
        ids_l, seg_l = ids, seg
    # positions 0..L-1
    shape = g.op("Shape", [ids_l])
    seq = g.op("Gather", [shape, i64("one", 1)], axis=0)
    pos_ids = g.op("Range", [i64("zero", 0), seq, i64("step", 1)])
    x = g.op("Gather", ["word", ids_l], axis=0)
    x = g.op("Add", [x, g.op("Gather", ["pos", pos_ids], axis=0)])
    x = g.op("Add", [x, g.op("Gather", ["type", seg_l], axis=0)])
    x = g.op("LayerNormalization", [x, "emb_ln_g", "emb_ln_b"], axis=-1, epsilon=1e-12)
    # additive mask [B, 1, 1, L]: 0 on tokens, -10000 on padding (id 0)
    pad = g.op("Equal", [ids_l, i64("pad_id", 0)])
    padf = g.op("Cast", [pad], to=TensorProto.FLOAT)
    add_mask = g.op("Mul", [padf, g.const("neg", np.array(-10000.0, dtype=np.float32))])
    add_mask = g.op("Unsqueeze", [add_mask, i64("axes12", [1, 2])])
    dh = HIDDEN // HEADS
    heads_shape = i64("heads_shape", [0, -1, HEADS, dh])
    merge_shape = i64("merge_shape", [0, -1, HIDDEN])
    scale = g.const("scale", np.array(1.0 / math.sqrt(dh), dtype=np.float32))
    for i in range(LAYERS):
        p = f"l{i}_"

        def dense(t, name):
            return g.op("Add", [g.op("MatMul", [t, p + name + "_w"]), p + name + "_b"])

        def split(t):
            return g.op("Transpose", [g.op("Reshape", [t, heads_shape])], perm=[0, 2, 1, 3])

        q, k, v = (split(dense(x, n)) for n in ("q", "k", "v"))
        att = g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])])
        att = g.op("Add", [g.op("Mul", [att, scale]), add_mask])
        att = g.op("Softmax", [att], axis=-1)
        ctx = g.op("MatMul", [att, v])
        ctx = g.op("Reshape", [g.op("Transpose", [ctx], perm=[0, 2, 1, 3]), merge_shape])
        x = g.op("Add", [x, dense(ctx, "o")])
        x = g.op("LayerNormalization", [x, p + "ln1_g", p + "ln1_b"], axis=-1, epsilon=1e-12)
        h = dense(x, "f1")
        # erf GELU: 0.5 * h * (1 + erf(h / sqrt(2)))
        e = g.op("Erf", [g.op("Div", [h, g.const(p + "sqrt2", np.array(math.sqrt(2), np.float32))])])
        e = g.op("Add", [e, g.const(p + "one_f", np.array(1.0, np.float32))])
        h = g.op("Mul", [g.op("Mul", [h, e]), g.const(p + "half", np.array(0.5, np.float32))])
        x = g.op("Add", [x, dense(h, "f2")])
        x = g.op("LayerNormalization", [x, p + "ln2_g", p + "ln2_b"], axis=-1, epsilon=1e-12)
    cls = g.op("Gather", [x, i64("zero_idx", 0)], axis=1)  # [B, H]
    pooled = g.op("Tanh", [g.op("Add", [g.op("MatMul", [cls, "pool_w"]), "pool_b"])])
    logits = g.op("Add", [g.op("MatMul", [pooled, "cls_w"]), "cls_b"])
    g.nodes.append(helper.make_node("Identity", [logits], ["output_0"]))
    inputs = [
        helper.make_tensor_value_info("input_ids", id_type, ["batch", "seq"]),
        helper.make_tensor_value_info("segment_ids", id_type, ["batch", "seq"]),
    ]
    outputs = [helper.make_tensor_value_info("output_0", TensorProto.FLOAT, ["batch", 2])]
    graph = helper.make_graph(g.nodes, "bem_surrogate_NOT_BEM", inputs, outputs, g.inits)
    return finish(graph, "Random-weight BERT-shaped stand-in with BEM's interface. NOT BEM.")


def finish(graph, doc):
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="phraseval tools/bem/make_surrogate.py",
        doc_string=doc,
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def mini_graph():
    """int32 inputs with TF Model Garden names and a mask input."""
    rng = np.random.default_rng(SEED + 1)
    emb = (rng.standard_normal((VOCAB, 2))).astype(np.float32)
    temb = (rng.standard_normal((TYPES, 2))).astype(np.float32)
    wout = (rng.standard_normal((2, 2)) * 2).astype(np.float32)
    bout = np.array([0.1, -0.1], dtype=np.float32)
    g = Graph()
    for k, v in (("emb", emb), ("temb", temb), ("wout", wout), ("bout", bout)):
        g.const(k, v)
    x = g.op("Add", [g.op("Gather", ["emb", "input_word_ids"], axis=0),
                     g.op("Gather", ["temb", "input_type_ids"], axis=0)])
    m = g.op("Unsqueeze", [g.op("Cast", ["input_mask"], to=TensorProto.FLOAT),
                           g.const("ax2", np.array([2], dtype=np.int64))])
    s = g.op("ReduceSum", [g.op("Mul", [x, m]), g.const("ax1", np.array([1], dtype=np.int64))],
             keepdims=0)
    cnt = g.op("ReduceSum", [m, "ax1"], keepdims=0)
    pooled = g.op("Div", [s, cnt])
    logits = g.op("Add", [g.op("MatMul", [pooled, "wout"]), "bout"])
    g.nodes.append(helper.make_node("Identity", [logits], ["logits"]))
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT32, ["batch", "seq"])
              for n in ("input_word_ids", "input_mask", "input_type_ids")]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 2])]
    graph = helper.make_graph(g.nodes, "bem_surrogate_int32_mask_NOT_BEM", inputs, outputs,
                              g.inits)
    params = {"emb": emb, "temb": temb, "wout": wout, "bout": bout}
    return finish(graph, "Masked mean of embeddings, int32 inputs with a mask. NOT BEM."), params


def bad_graph(kind):
    g = Graph()
    if kind == "names":
        inputs = [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", 8])]
        w = g.const("w", np.ones((8, 2), dtype=np.float32))
        out = g.op("MatMul", ["features", w])
        out_dim = 2
    else:
        t = TensorProto.FLOAT if kind == "dtype" else TensorProto.INT64
        inputs = [helper.make_tensor_value_info(n, t, ["batch", "seq"])
                  for n in ("input_ids", "segment_ids")]
        out_dim = 2 if kind == "dtype" else 3
        a = g.op("Cast", ["input_ids"], to=TensorProto.FLOAT)
        s = g.op("ReduceSum", [a, g.const("ax", np.array([1], dtype=np.int64))], keepdims=1)
        out = g.op("Mul", [s, g.const("w", np.ones((1, out_dim), dtype=np.float32))])
    g.nodes.append(helper.make_node("Identity", [out], ["output_0"]))
    outputs = [helper.make_tensor_value_info("output_0", TensorProto.FLOAT, ["batch", out_dim])]
    graph = helper.make_graph(g.nodes, f"bem_bad_{kind}_NOT_BEM", inputs, outputs, g.inits)
    return finish(graph, f"Deliberately wrong interface ({kind}). NOT BEM.")


# --------------------------------------------------------------------------
# Independent NumPy forward passes
# --------------------------------------------------------------------------


def layer_norm(x, g, b, eps=1e-12):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def erf(x):
    return np.vectorize(math.erf)(x)


def numpy_bert(w, ids, seg):
    ids = ids.astype(np.int64)
    seg = seg.astype(np.int64)
    b, L = ids.shape
    x = w["word"][ids] + w["pos"][np.arange(L)][None] + w["type"][seg]
    x = layer_norm(x.astype(np.float64), w["emb_ln_g"], w["emb_ln_b"])
    mask = np.where(ids == 0, -10000.0, 0.0)[:, None, None, :]
    dh = HIDDEN // HEADS
    for i in range(LAYERS):
        p = f"l{i}_"

        def dense(t, name):
            return t @ w[p + name + "_w"].astype(np.float64) + w[p + name + "_b"]

        def split(t):
            return t.reshape(b, L, HEADS, dh).transpose(0, 2, 1, 3)

        q, k, v = (split(dense(x, n)) for n in ("q", "k", "v"))
        att = q @ k.transpose(0, 1, 3, 2) / math.sqrt(dh) + mask
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        ctx = (att @ v).transpose(0, 2, 1, 3).reshape(b, L, HIDDEN)
        x = layer_norm(x + dense(ctx, "o"), w[p + "ln1_g"], w[p + "ln1_b"])
        h = dense(x, "f1")
        h = 0.5 * h * (1 + erf(h / math.sqrt(2)))
        x = layer_norm(x + dense(h, "f2"), w[p + "ln2_g"], w[p + "ln2_b"])
    pooled = np.tanh(x[:, 0] @ w["pool_w"].astype(np.float64) + w["pool_b"])
    return pooled @ w["cls_w"].astype(np.float64) + w["cls_b"]


def numpy_mini(p, ids, seg, mask):
    x = p["emb"][ids].astype(np.float64) + p["temb"][seg]
    m = mask.astype(np.float64)[:, :, None]
    pooled = (x * m).sum(1) / m.sum(1)
    return pooled @ p["wout"].astype(np.float64) + p["bout"]


def reference_inputs():
    """The seed's triple and seeded random triples (one fills all 512 positions)."""
    rng = np.random.default_rng(SEED + 2)
    # [CLS] scattering of light [SEP] light scattering [SEP] why is the sky blue [SEP]
    seed_ids = [101, 17501, 1997, 2422, 102, 2422, 17501, 102, 2339, 2003, 1996, 3712, 2630, 102]
    seed_seg = [0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2, 2]
    rows = [(seed_ids, seed_seg)]
    for c, r, q in ((1, 1, 1), (3, 2, 9), (20, 5, 30), (2, 40, 12), (150, 200, 158)):
        parts = [rng.integers(1000, VOCAB, n).tolist() for n in (c, r, q)]
        ids = [101] + parts[0] + [102] + parts[1] + [102] + parts[2] + [102]
        seg = [0] * (c + 2) + [1] * (r + 1) + [2] * (q + 1)
        rows.append((ids, seg))
    assert len(rows[-1][0]) == MAX_LEN
    return rows


def padded(rows):
    ids = np.zeros((len(rows), MAX_LEN), dtype=np.int64)
    seg = np.zeros((len(rows), MAX_LEN), dtype=np.int64)
    for i, (a, s) in enumerate(rows):
        ids[i, : len(a)] = a
        seg[i, : len(s)] = s
    return ids, seg


def main():
    ap = argparse.ArgumentParser(description="Write the BEM test surrogate (NOT BEM).")
    ap.add_argument("--out-dir", default="tests/fixtures")
    args = ap.parse_args()
    d = args.out_dir
    w = weights()
    paths = {
        "bert": os.path.join(d, "bem_surrogate_NOT_BEM.onnx"),
        "mini": os.path.join(d, "bem_surrogate_int32_mask_NOT_BEM.onnx"),
    }
    onnx.save(bert_graph(w), paths["bert"])
    mini, mini_params = mini_graph()
    onnx.save(mini, paths["mini"])
    for kind in ("names", "dtype", "output"):
        onnx.save(bad_graph(kind), os.path.join(d, f"bem_bad_{kind}_NOT_BEM.onnx"))

    rows = reference_inputs()
    ids, seg = padded(rows)
    mask = (np.arange(MAX_LEN)[None] < np.array([len(a) for a, _ in rows])[:, None])
    ref = {
        "note": "Logits of the test surrogates (NOT BEM) on these unpadded inputs, 0-padded to "
        "512. numpy: independent forward pass in float64; onnxruntime: Python onnxruntime on "
        "the .onnx file (absent when it was not installed). Written by "
        "tools/bem/make_surrogate.py.",
        "inputs": [{"input_ids": a, "segment_ids": s} for a, s in rows],
        "bert": {"file": os.path.basename(paths["bert"]),
                 "numpy": numpy_bert(w, ids, seg).tolist()},
        "mini": {"file": os.path.basename(paths["mini"]),
                 "numpy": numpy_mini(mini_params, ids, seg, mask).tolist()},
    }
    try:
        import onnxruntime as ort

        s = ort.InferenceSession(paths["bert"], providers=["CPUExecutionProvider"])
        ref["bert"]["onnxruntime"] = s.run(None, {"input_ids": ids, "segment_ids": seg})[0].tolist()
        s = ort.InferenceSession(paths["mini"], providers=["CPUExecutionProvider"])
        ref["mini"]["onnxruntime"] = s.run(None, {
            "input_word_ids": ids.astype(np.int32),
            "input_type_ids": seg.astype(np.int32),
            "input_mask": mask.astype(np.int32),
        })[0].tolist()
        ref["onnxruntime"] = ort.__version__
        for k in ("bert", "mini"):
            diff = np.abs(np.array(ref[k]["numpy"]) - np.array(ref[k]["onnxruntime"])).max()
            if diff > 1e-4:
                sys.exit(f"make_surrogate: numpy and onnxruntime disagree on {k} by {diff}")
    except ImportError:
        print("make_surrogate: onnxruntime not installed; numpy reference only", file=sys.stderr)
    with open(os.path.join(d, "bem_surrogate_reference.json"), "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    for p in sorted(os.listdir(d)):
        if p.startswith("bem_") and p.endswith(".onnx"):
            print(f"{os.path.join(d, p)}: {os.path.getsize(os.path.join(d, p))} bytes",
                  file=sys.stderr)


if __name__ == "__main__":
    main()
