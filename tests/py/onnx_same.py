#!/usr/bin/env python3
"""Whether ONNX files hold the same model: graph and opset imports equal.

usage: onnx_same.py DIR_A DIR_B NAME...

For each NAME, loads DIR_A/NAME and DIR_B/NAME with `onnx` and compares their
graphs (nodes, initializers, inputs, outputs) and opset imports as protobuf
messages. The header fields an `onnx` release writes by itself (ir_version,
producer) are not compared, so a fixture written by another release of `onnx`
still counts as the same model. Prints "same" and exits 0, or names the first
file that differs and exits 1.
"""

import os
import sys

import onnx


def main():
    a, b, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    for name in names:
        ma = onnx.load(os.path.join(a, name))
        mb = onnx.load(os.path.join(b, name))
        if ma.graph != mb.graph:
            print(f"{name}: the graphs differ")
            sys.exit(1)
        if list(ma.opset_import) != list(mb.opset_import):
            print(f"{name}: the opset imports differ")
            sys.exit(1)
    print("same")


main()
