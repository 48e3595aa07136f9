"""Exports the trained piqa-lstm pair as two ONNX graphs built by hand (so the
bidirectional LSTMs take `sequence_lens` and padding never leaks into a
sequence), f16 initializers cast to f32 at load, plus vocab.txt and the
manifest read by `encoders/onnx/encoder.ts`. Checks ONNX Runtime against PyTorch.
"""
import json
import os

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

from model import BOUND, HIDDEN
from phrases import MAX_TOKENS, NO_BOUNDARY

OPSET = 17
IR_VERSION = 8  # what opset 17 needs; readable by older ONNX Runtime builds
GATES = [0, 3, 1, 2]  # torch (i, f, g, o) -> ONNX (i, o, f, c)


def _f16_const(name, arr, inits, nodes):
    """Initializer `name_f16` (f16) and a Cast node producing `name` (f32)."""
    inits.append(numpy_helper.from_array(np.asarray(arr, dtype=np.float16), name + "_f16"))
    nodes.append(helper.make_node("Cast", [name + "_f16"], [name], to=TensorProto.FLOAT))


def _lstm_weights(lstm, prefix, inits, nodes):
    hs = lstm.hidden_size
    ws, rs, bs = [], [], []
    for suffix in ["", "_reverse"]:
        w = getattr(lstm, "weight_ih_l0" + suffix).detach().numpy()
        r = getattr(lstm, "weight_hh_l0" + suffix).detach().numpy()
        bi = getattr(lstm, "bias_ih_l0" + suffix).detach().numpy()
        bh = getattr(lstm, "bias_hh_l0" + suffix).detach().numpy()
        re = lambda m: np.concatenate([m[g * hs:(g + 1) * hs] for g in GATES], 0)  # noqa: E731
        ws.append(re(w))
        rs.append(re(r))
        bs.append(np.concatenate([re(bi), re(bh)], 0))
    _f16_const(prefix + "_W", np.stack(ws), inits, nodes)
    _f16_const(prefix + "_R", np.stack(rs), inits, nodes)
    _f16_const(prefix + "_B", np.stack(bs), inits, nodes)


def _lstm(lstm, prefix, x, lengths, inits, nodes):
    """x [T,B,in] -> [T,B,2h] (directions concatenated)."""
    _lstm_weights(lstm, prefix, inits, nodes)
    nodes.append(helper.make_node(
        "LSTM", [x, prefix + "_W", prefix + "_R", prefix + "_B", lengths], [prefix + "_Y"],
        hidden_size=lstm.hidden_size, direction="bidirectional"))
    nodes.append(helper.make_node("Transpose", [prefix + "_Y"], [prefix + "_Yt"], perm=[0, 2, 1, 3]))
    nodes.append(helper.make_node("Reshape", [prefix + "_Yt", "shape_00m1"], [prefix + "_out"]))
    return prefix + "_out"


def _embed(model, inits, nodes):
    table = model.embed.full_table().detach().numpy()
    inits.append(numpy_helper.from_array(table.astype(np.float16), "emb_f16"))
    nodes.append(helper.make_node("Gather", ["emb_f16", "input_ids"], ["wemb16"]))
    nodes.append(helper.make_node("Cast", ["wemb16"], ["wemb"], to=TensorProto.FLOAT))
    _f16_const("case_emb", model.embed.case.weight.detach().numpy(), inits, nodes)
    nodes.append(helper.make_node("Gather", ["case_emb", "casing"], ["cemb"]))
    nodes.append(helper.make_node("Concat", ["wemb", "cemb"], ["x"], axis=2))
    nodes.append(helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]))
    inits.append(numpy_helper.from_array(np.array([0, 0, -1], dtype=np.int64), "shape_00m1"))


def _inputs(extra=()):
    return [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
        helper.make_tensor_value_info("casing", TensorProto.INT64, ["batch", "tokens"]),
        helper.make_tensor_value_info("lengths", TensorProto.INT32, ["batch"]),
        *extra,
    ]


def _self_att(att, name, y_tbd, y_btd, mask_neg_b1t, out, inits, nodes):
    """out [B,T,2D] = [y ; softmax(K K^T + mask) y], K = BiLSTM(y) (model.SelfAtt)."""
    k = _lstm(att.key_lstm, name + "_k", y_tbd, "lengths", inits, nodes)  # T,B,2a
    nodes.append(helper.make_node("Transpose", [k], [name + "_kb"], perm=[1, 0, 2]))  # B,T,2a
    nodes.append(helper.make_node("Transpose", [k], [name + "_kt"], perm=[1, 2, 0]))  # B,2a,T
    nodes.append(helper.make_node("MatMul", [name + "_kb", name + "_kt"], [name + "_a0"]))
    nodes.append(helper.make_node("Add", [name + "_a0", mask_neg_b1t], [name + "_a1"]))
    nodes.append(helper.make_node("Softmax", [name + "_a1"], [name + "_w"], axis=2))
    nodes.append(helper.make_node("MatMul", [name + "_w", y_btd], [name + "_v"]))
    nodes.append(helper.make_node("Concat", [y_btd, name + "_v"], [out], axis=2))


def _mask_from_lengths(inits, nodes):
    """mask_neg_b1t [B,1,T]: 0 on tokens, -1e4 on padding, from `lengths` and the ids' shape."""
    inits.append(numpy_helper.from_array(np.array(0, dtype=np.int64), "i64_0"))
    inits.append(numpy_helper.from_array(np.array(1, dtype=np.int64), "i64_1"))
    inits.append(numpy_helper.from_array(np.array([0], dtype=np.int64), "axis0"))
    inits.append(numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"))
    inits.append(numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one"))
    inits.append(numpy_helper.from_array(np.array(1e4, dtype=np.float32), "big"))
    nodes.append(helper.make_node("Shape", ["input_ids"], ["ids_shape"]))
    nodes.append(helper.make_node("Gather", ["ids_shape", "i64_1"], ["T"], axis=0))
    nodes.append(helper.make_node("Range", ["i64_0", "T", "i64_1"], ["pos"]))
    nodes.append(helper.make_node("Unsqueeze", ["pos", "axis0"], ["pos_1t"]))
    nodes.append(helper.make_node("Cast", ["lengths"], ["len64"], to=TensorProto.INT64))
    nodes.append(helper.make_node("Unsqueeze", ["len64", "axis1"], ["len_b1"]))
    nodes.append(helper.make_node("Less", ["pos_1t", "len_b1"], ["valid"]))
    nodes.append(helper.make_node("Cast", ["valid"], ["mask_c"], to=TensorProto.FLOAT))
    nodes.append(helper.make_node("Sub", ["mask_c", "one"], ["mask_c_m1"]))
    nodes.append(helper.make_node("Mul", ["mask_c_m1", "big"], ["mask_c_neg"]))
    nodes.append(helper.make_node("Unsqueeze", ["mask_c_neg", "axis1"], ["mask_neg_b1t"]))


def context_graph(cm, model_name="piqa-lstm"):
    inits, nodes = [], []
    _embed(cm, inits, nodes)
    heads = getattr(cm, "heads", 1)
    if heads == 2:
        _mask_from_lengths(inits, nodes)
    h = _lstm(cm.lstm, "l0", "xt", "lengths", inits, nodes)
    for out, lstm, att in [("start", cm.lstm_s, cm.sa_s if heads == 2 else None),
                           ("end", cm.lstm_e, cm.sa_e if heads == 2 else None)]:
        y = _lstm(lstm, "l_" + out, h, "lengths", inits, nodes)
        if att is None:
            nodes.append(helper.make_node("Transpose", [y], [out], perm=[1, 0, 2]))
        else:
            nodes.append(helper.make_node("Transpose", [y], [out + "_y"], perm=[1, 0, 2]))
            _self_att(att, "sa_" + out, y, out + "_y", "mask_neg_b1t", out, inits, nodes)
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT,
                                             ["batch", "tokens", 2 * BOUND * heads])
               for n in ("start", "end")]
    g = helper.make_graph(nodes, model_name.replace("-", "_") + "_context", _inputs(), outputs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                             producer_name="phraseval/baselines/piqa_lstm", ir_version=IR_VERSION)


def question_graph(qm, model_name="piqa-lstm"):
    inits, nodes = [], []
    _embed(qm, inits, nodes)
    heads = getattr(qm, "heads", 1)
    h = _lstm(qm.lstm, "l0", "xt", "lengths", inits, nodes)
    inits.append(numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"))
    inits.append(numpy_helper.from_array(np.array([2], dtype=np.int64), "axis2"))
    inits.append(numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one"))
    inits.append(numpy_helper.from_array(np.array(1e4, dtype=np.float32), "big"))
    nodes.append(helper.make_node("Sub", ["mask", "one"], ["mask_m1"]))
    nodes.append(helper.make_node("Mul", ["mask_m1", "big"], ["mask_neg"]))
    if heads == 2:
        nodes.append(helper.make_node("Unsqueeze", ["mask_neg", "axis1"], ["mask_neg_b1t"]))
    pooled = []
    for name, lstm, att, sa in [("qs", qm.lstm_s, qm.att_s, qm.sa_s if heads == 2 else None),
                                ("qe", qm.lstm_e, qm.att_e, qm.sa_e if heads == 2 else None)]:
        y = _lstm(lstm, "l_" + name, h, "lengths", inits, nodes)
        if sa is None:
            nodes.append(helper.make_node("Transpose", [y], [name + "_y"], perm=[1, 0, 2]))  # B,T,D
        else:
            nodes.append(helper.make_node("Transpose", [y], [name + "_y0"], perm=[1, 0, 2]))
            _self_att(sa, "sa_" + name, y, name + "_y0", "mask_neg_b1t", name + "_y", inits,
                      nodes)
        _f16_const(name + "_aw", att.weight.detach().numpy().T, inits, nodes)  # D,1
        _f16_const(name + "_ab", att.bias.detach().numpy(), inits, nodes)  # 1
        nodes.append(helper.make_node("MatMul", [name + "_y", name + "_aw"], [name + "_a0"]))
        nodes.append(helper.make_node("Add", [name + "_a0", name + "_ab"], [name + "_a1"]))
        nodes.append(helper.make_node("Squeeze", [name + "_a1", "axis2"], [name + "_a2"]))
        nodes.append(helper.make_node("Add", [name + "_a2", "mask_neg"], [name + "_a3"]))
        nodes.append(helper.make_node("Softmax", [name + "_a3"], [name + "_w"], axis=1))
        nodes.append(helper.make_node("Unsqueeze", [name + "_w", "axis2"], [name + "_w3"]))
        nodes.append(helper.make_node("Mul", [name + "_y", name + "_w3"], [name + "_wy"]))
        nodes.append(helper.make_node("ReduceSum", [name + "_wy", "axis1"], [name + "_p"],
                                      keepdims=0))
        pooled.append(name + "_p")
    nodes.append(helper.make_node("Concat", pooled, ["question"], axis=1))
    mask = helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "tokens"])
    outputs = [helper.make_tensor_value_info("question", TensorProto.FLOAT,
                                             ["batch", 4 * BOUND * heads])]
    g = helper.make_graph(nodes, model_name.replace("-", "_") + "_question", _inputs([mask]), outputs,
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                             producer_name="phraseval/baselines/piqa_lstm", ir_version=IR_VERSION)


def manifest(vocab_size, name="piqa-lstm", heads=1, max_tokens=MAX_TOKENS):
    ids = [
        {"name": "input_ids", "role": "ids", "dtype": "int64"},
        {"name": "casing", "role": "casing", "dtype": "int64"},
        {"name": "lengths", "role": "lengths", "dtype": "int32"},
    ]
    return {
        "format": "phraseval/onnx-encoder",
        "version": 1,
        "name": name,
        "description": ("PIQA LSTM baseline (BiLSTM over GloVe 100d + casing; start/end vectors "
                        "per token, self-attentive question pooling), trained on the SQuAD train "
                        "subset") if heads == 1 else (
                        "PIQA LSTM+SA baseline (BiLSTM over GloVe 100d + casing; start/end vectors "
                        "per token, each with one self-attention head beside it; self-attentive "
                        "question pooling), trained on the SQuAD train subset"),
        "dim": 4 * BOUND * heads,
        "store": "f16",
        "tokenizer": {"kind": "word", "vocab": "vocab.txt", "lowercase": True, "pad": 0, "unk": 1,
                      "size": vocab_size},
        "phrases": {"kind": "spans", "maxTokens": max_tokens, "wordBoundary": True,
                    "noBoundary": NO_BOUNDARY},
        "context": {
            "model": "context.onnx",
            "inputs": ids,
            "outputs": {"start": {"name": "start", "dtype": "float32"},
                        "end": {"name": "end", "dtype": "float32"}},
        },
        "question": {
            "model": "question.onnx",
            "inputs": ids + [{"name": "mask", "role": "mask", "dtype": "float32"}],
            "outputs": {"vector": {"name": "question", "dtype": "float32"}},
        },
    }


def _round_f16_(module):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(p.half().float())
        module.embed.table.copy_(module.embed.table.half().float())


def export_all(cm, qm, vocab_words, out, sample_paras, log=print, name="piqa-lstm",
               max_tokens=MAX_TOKENS):
    """Writes the files; rounds cm/qm weights to f16 in place (what the ONNX files hold).
    `max_tokens`: the manifest's longest phrase (the span length the model was scored with)."""
    import onnxruntime as ort
    from train import batch_tensors, question_tensors

    cm.eval()
    qm.eval()
    _round_f16_(cm)
    _round_f16_(qm)
    onnx.save(context_graph(cm, name), f"{out}/context.onnx")
    onnx.save(question_graph(qm, name), f"{out}/question.onnx")
    for f in ("context.onnx", "question.onnx"):
        onnx.checker.check_model(f"{out}/{f}")
    with open(f"{out}/vocab.txt", "w", encoding="utf-8") as fh:
        fh.write("\n".join(vocab_words) + "\n")
    with open(f"{out}/manifest.json", "w") as fh:
        json.dump(manifest(len(vocab_words), name, getattr(cm, "heads", 1), max_tokens), fh,
                  indent=2)
        fh.write("\n")
    # ONNX Runtime vs PyTorch on padded batches.
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    cs = ort.InferenceSession(f"{out}/context.onnx", so, providers=["CPUExecutionProvider"])
    qs = ort.InferenceSession(f"{out}/question.onnx", so, providers=["CPUExecutionProvider"])
    ids, cas, lens = batch_tensors(sample_paras)
    with torch.no_grad():
        S, E = cm(ids, cas, lens)
    rs, re_ = cs.run(None, {"input_ids": ids.numpy(), "casing": cas.numpy(),
                            "lengths": lens.numpy().astype(np.int32)})
    mask = (torch.arange(S.shape[1])[None, :] < lens[:, None]).numpy()
    dc = max(np.abs((rs - S.numpy()))[mask].max(), np.abs((re_ - E.numpy()))[mask].max())
    qlist = [q for p in sample_paras for q in p["questions"]]
    qi, qc, ql, qmask = question_tensors(qlist)
    with torch.no_grad():
        Q = qm(qi, qc, ql, qmask)
    (rq,) = qs.run(None, {"input_ids": qi.numpy(), "casing": qc.numpy(),
                          "lengths": ql.numpy().astype(np.int32), "mask": qmask.numpy()})
    dq = np.abs(rq - Q.numpy()).max()
    log(f"exported: ONNX Runtime vs PyTorch max |diff| context {dc:.2e}, question {dq:.2e}")
    sizes = {f: os.path.getsize(f"{out}/{f}") for f in
             ("context.onnx", "question.onnx", "vocab.txt", "manifest.json")}
    log(f"sizes: {sizes} (total {sum(sizes.values()) / 1e6:.1f} MB)")
    return {"onnx_vs_torch_max_diff": {"context": float(dc), "question": float(dq)},
            "sizes": sizes}
