"""Reference PI-SQuAD split in Python: json.load, delete, json.dump (defaults).

usage: split_ref.py data.json context.json question.json
"""
import json
import sys


def main(inp, c_path, q_path):
    with open(inp, encoding="utf-8") as f:
        cdata = json.load(f)
    with open(inp, encoding="utf-8") as f:
        qdata = json.load(f)
    for article in cdata["data"]:
        for para in article["paragraphs"]:
            del para["qas"]
    for article in qdata["data"]:
        for para in article["paragraphs"]:
            del para["context"]
            for qa in para["qas"]:
                qa.pop("answers", None)
    with open(c_path, "w") as f:
        json.dump(cdata, f)
    with open(q_path, "w") as f:
        json.dump(qdata, f)


if __name__ == "__main__":
    main(*sys.argv[1:4])
