"""Execute the notebooks headless on the Deno kernel and check them.

usage: python3 notebooks/run.py [notebook.ipynb ...]   (default: every notebook here)

A notebook passes when no cell raised, every cell tagged `expect-output`
produced output, and the last cell printed `NOTEBOOK OK`. The Deno kernel can
report idle before a cell's last output arrives, so a run whose outputs are
incomplete (but error-free) is retried, up to three times.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def check(path):
    nb = json.load(open(path))
    problems = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        outs = cell.get("outputs", [])
        for o in outs:
            if o.get("output_type") == "error":
                return "error", f"cell {i}: {o.get('ename')}: {o.get('evalue')}"
            if o.get("name") == "stderr" and "error" in "".join(o.get("text", [])).lower():
                return "error", f"cell {i}: {''.join(o.get('text', []))[:300]}"
        if "expect-output" in cell.get("metadata", {}).get("tags", []) and not outs:
            problems.append(f"cell {i} has no output")
    last = [c for c in nb["cells"] if c["cell_type"] == "code"][-1]
    text = "".join("".join(o.get("text", [])) for o in last.get("outputs", []))
    if "NOTEBOOK OK" not in text:
        problems.append("last cell did not print NOTEBOOK OK")
    return ("incomplete", "; ".join(problems)) if problems else ("ok", "")


def run(path):
    for attempt in range(1, 4):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.ipynb")
            r = subprocess.run(
                ["jupyter", "nbconvert", "--to", "notebook", "--execute", path,
                 "--output", out, "--ExecutePreprocessor.timeout=600",
                 "--ExecutePreprocessor.kernel_name=deno"],
                capture_output=True, text=True, cwd=os.path.dirname(path))
            if r.returncode != 0:
                tail = "\n".join(r.stderr.strip().splitlines()[-15:])
                print(f"{os.path.basename(path)}: a cell failed\n{tail}", file=sys.stderr)
                return False
            verdict, why = check(out)
        if verdict == "ok":
            print(f"{os.path.basename(path)}: ok (attempt {attempt})")
            return True
        if verdict == "error":
            print(f"{os.path.basename(path)}: {why}", file=sys.stderr)
            return False
        print(f"{os.path.basename(path)}: outputs incomplete ({why}), retrying", file=sys.stderr)
    print(f"{os.path.basename(path)}: outputs still incomplete after 3 runs", file=sys.stderr)
    return False


if __name__ == "__main__":
    paths = sys.argv[1:] or sorted(glob.glob(os.path.join(HERE, "*.ipynb")))
    ok = all([run(os.path.abspath(p)) for p in paths])
    print(f"{len(paths)} notebooks, {'all passed' if ok else 'FAILED'}")
    sys.exit(0 if ok else 1)
