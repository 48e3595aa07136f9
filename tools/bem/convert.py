#!/usr/bin/env python3
"""Convert the TF-Hub BEM SavedModel to ONNX (`bem.onnx`) for phraseval.

BEM (Bulian et al. 2022) is published as a TensorFlow SavedModel:
TF Hub handle `https://tfhub.dev/google/answer_equivalence/bem/1`, now served
from Kaggle Models (`google/bert/tensorFlow2/answer-equivalence-bem`). This
script

  1. gets the SavedModel (`--savedmodel DIR` if you downloaded it already;
     otherwise tensorflow_hub, then kagglehub),
  2. reads the dtypes and shapes of its `input_ids` / `segment_ids` inputs
     from the model's own function signature,
  3. converts it with tf2onnx (`from_function`, opset 17),
  4. renames the graph's inputs and output to exactly `input_ids`,
     `segment_ids` and `output_0` (what `metrics/bem/session.ts` expects first and
     what the test surrogate uses),
  5. checks the file: onnx.checker, then the seed example through both
     TensorFlow and ONNX Runtime (logits must agree to 1e-3; the score must be
     about 0.989), and writes `bem.onnx` only when all of that holds.

Run `tools/bem/convert.sh` (it makes a virtual environment with pinned
versions and runs this, then `check_onnx.py`), or, in an environment with
tensorflow, tensorflow_hub, tf2onnx, onnx, onnxruntime:

  python3 tools/bem/convert.py --out bem.onnx [--savedmodel DIR]
"""

import argparse
import os
import sys
import tempfile

HANDLE = "https://tfhub.dev/google/answer_equivalence/bem/1"
KAGGLE = "google/bert/tensorFlow2/answer-equivalence-bem"
MAX_LEN = 512
# [CLS] scattering of light [SEP] light scattering [SEP] why is the sky blue [SEP]
# (ids of bert-base-uncased; tests/fixtures/bem_tokenizer_golden.ndjson.gz has them from HF)
SEED_IDS = [101, 17501, 1997, 2422, 102, 2422, 17501, 102, 2339, 2003, 1996, 3712, 2630, 102]
SEED_SEG = [0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2, 2]
SEED_SCORE = 0.98918  # the seed's published figure (0.9891803860664368)


def fail(msg):
    sys.exit(f"convert: {msg}")


def get_savedmodel(path):
    if path:
        if not os.path.isfile(os.path.join(path, "saved_model.pb")):
            fail(f"{path} has no saved_model.pb: not a SavedModel folder")
        return path
    errors = []
    try:
        import tensorflow_hub as hub

        p = hub.resolve(HANDLE)
        if os.path.isfile(os.path.join(p, "saved_model.pb")):
            return p
        errors.append(f"tensorflow_hub gave {p} without saved_model.pb")
    except Exception as e:  # noqa: BLE001 - try the next route
        errors.append(f"tensorflow_hub: {e}")
    try:
        import kagglehub

        p = kagglehub.model_download(KAGGLE)
        for root, _dirs, files in os.walk(p):
            if "saved_model.pb" in files:
                return root
        errors.append(f"kagglehub gave {p} without saved_model.pb")
    except Exception as e:  # noqa: BLE001
        errors.append(f"kagglehub: {e}")
    fail(
        "cannot download BEM (" + "; ".join(errors) + "). Download the SavedModel by hand from "
        "https://www.kaggle.com/models/google/bert/tensorFlow2/answer-equivalence-bem and pass "
        "--savedmodel DIR"
    )


def bem_callable(tf, loaded):
    """The model's call and the TensorSpecs of its two inputs, from the model itself."""
    candidates = []
    if hasattr(loaded, "__call__") and hasattr(loaded.__call__, "concrete_functions"):
        candidates += [("__call__", f) for f in loaded.__call__.concrete_functions]
    for name, f in getattr(loaded, "signatures", {}).items():
        candidates.append((f"signature {name}", f))
    seen = []
    for where, f in candidates:
        args, kwargs = f.structured_input_signature
        spec = None
        if args and isinstance(args[0], dict):
            spec = args[0]
        elif kwargs:
            spec = kwargs
        seen.append(f"{where}: {spec}")
        if not spec or "input_ids" not in spec or "segment_ids" not in spec:
            continue
        ids, seg = spec["input_ids"], spec["segment_ids"]
        if ids.dtype not in (tf.int32, tf.int64) or seg.dtype not in (tf.int32, tf.int64):
            continue
        if where.startswith("signature"):
            def call(d, f=f):
                out = f(**d)
                return out[sorted(out)[0]] if isinstance(out, dict) else out
        else:
            def call(d):
                return loaded(d)
        return call, ids, seg
    fail("no function of the SavedModel takes {input_ids, segment_ids} as integers; found: "
         + " | ".join(seen))


def rename(model, old, new):
    g = model.graph
    for v in list(g.input) + list(g.output):
        if v.name == old:
            v.name = new
    for n in g.node:
        for i, x in enumerate(n.input):
            if x == old:
                n.input[i] = new
        for i, x in enumerate(n.output):
            if x == old:
                n.output[i] = new


def main():
    ap = argparse.ArgumentParser(description="Convert the TF-Hub BEM SavedModel to ONNX.")
    ap.add_argument("--out", default="bem.onnx")
    ap.add_argument("--savedmodel", help="an already downloaded SavedModel folder")
    ap.add_argument("--opset", type=int, default=17)
    args = ap.parse_args()

    import numpy as np
    import onnx
    import onnxruntime as ort
    import tensorflow as tf
    import tf2onnx

    path = get_savedmodel(args.savedmodel)
    print(f"convert: SavedModel {path}", file=sys.stderr)
    loaded = tf.saved_model.load(path)
    call, ids_spec, seg_spec = bem_callable(tf, loaded)
    print(f"convert: inputs input_ids {ids_spec.dtype.name} {ids_spec.shape}, "
          f"segment_ids {seg_spec.dtype.name} {seg_spec.shape}", file=sys.stderr)
    seq = ids_spec.shape[1] if ids_spec.shape.rank == 2 else None
    if seq not in (None, MAX_LEN):
        fail(f"the model takes {seq} positions; BEM's recipe pads to {MAX_LEN}")
    sig = [
        tf.TensorSpec([None, seq], ids_spec.dtype, name="input_ids"),
        tf.TensorSpec([None, seq], seg_spec.dtype, name="segment_ids"),
    ]

    @tf.function(input_signature=sig)
    def bem(input_ids, segment_ids):
        return call({"input_ids": input_ids, "segment_ids": segment_ids})

    # The seed example through TensorFlow first: the reference for the check below.
    ids = np.zeros((1, MAX_LEN), dtype=ids_spec.dtype.as_numpy_dtype)
    seg = np.zeros((1, MAX_LEN), dtype=seg_spec.dtype.as_numpy_dtype)
    ids[0, : len(SEED_IDS)] = SEED_IDS
    seg[0, : len(SEED_SEG)] = SEED_SEG
    tf_logits = np.asarray(bem(tf.constant(ids), tf.constant(seg)), dtype=np.float64)
    if tf_logits.shape != (1, 2):
        fail(f"the model gives logits of shape {tf_logits.shape}, BEM gives [batch, 2]")

    model, _ = tf2onnx.convert.from_function(bem, input_signature=sig, opset=args.opset)
    for v in model.graph.input:
        base = v.name.split(":")[0]
        if base != v.name:
            rename(model, v.name, base)
    if len(model.graph.output) != 1:
        fail(f"the converted model has {len(model.graph.output)} outputs, expected 1")
    rename(model, model.graph.output[0].name, "output_0")
    names = sorted(v.name for v in model.graph.input)
    if names != ["input_ids", "segment_ids"]:
        fail(f"the converted model's inputs are {names}")
    model.doc_string = f"BEM (Bulian et al. 2022) from {HANDLE}, converted by tf2onnx " \
        f"{tf2onnx.__version__} with phraseval tools/bem/convert.py"
    onnx.checker.check_model(model)

    # Write to a temporary file, check it with ONNX Runtime, then rename into place.
    out_dir = os.path.dirname(os.path.abspath(args.out))
    fd, tmp = tempfile.mkstemp(suffix=".onnx.tmp", dir=out_dir)
    os.close(fd)
    try:
        onnx.save(model, tmp)
        s = ort.InferenceSession(tmp, providers=["CPUExecutionProvider"])
        ort_logits = s.run(None, {"input_ids": ids, "segment_ids": seg})[0].astype(np.float64)
        diff = float(np.abs(ort_logits - tf_logits).max())
        score = float(np.exp(ort_logits[0, 1]) / np.exp(ort_logits[0]).sum())
        print(f"convert: seed example: TF logits {tf_logits[0].tolist()}, ONNX "
              f"{ort_logits[0].tolist()} (max diff {diff:.2e}); score {score:.5f} "
              f"(seed: {SEED_SCORE})", file=sys.stderr)
        if diff > 1e-3:
            fail(f"TensorFlow and ONNX Runtime disagree on the seed example by {diff}")
        if abs(score - SEED_SCORE) > 0.005:
            fail(f"the seed example scores {score:.5f}, not about {SEED_SCORE}: not BEM?")
        os.replace(tmp, args.out)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    print(f"convert: wrote {args.out} ({os.path.getsize(args.out)} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
