"""Where an IVF-PQ search's time goes, per question, from a V8 CPU profile
(Deno's --cpu-prof) of bench/ivf_search_speed.ts.

Each sample under scoreIvf is given to the innermost frame of its stack that
names one of the parts below (by function and file), else to "other"; the
part's share of the samples under scoreIvf, and its ms a question (the
samples' time over the questions answered: --questions N, all passes).

    python3 bench/cpuprofile_split.py PROFILE.cpuprofile --questions 10404
"""
import collections
import json
import os
import sys

# (part, function, file): the first part whose frame is innermost wins.
PARTS = [
    ("scan kernel", "scan2Raw", "wasm_fastscan.ts"),
    ("scan kernel", "scanRaw", "wasm_fastscan.ts"),
    ("scan kernel", "scan", "wasm_fastscan.ts"),
    ("scan kernel", "scanLanes", "pq_scan.ts"),
    ("scan kernel", "scanOne", "pq_scan.ts"),
    ("scan kernel", "scan", "pq_scan.ts"),
    ("candidate selection", "offer", "wasm_select.ts"),
    ("candidate selection", "keptByRow", "wasm_select.ts"),
    ("candidate selection", "pairsByRow", "wasm_select.ts"),
    ("candidate selection", "kept", "wasm_select.ts"),
    ("candidate selection", "offerWritten", "fastscan.ts"),
    ("candidate selection", "offerHits", "fastscan.ts"),
    ("candidate selection", "offerRows", "ivfpq.ts"),
    ("candidate selection", "offer", "ivfpq.ts"),
    ("candidate selection", "byRow", "ivfpq.ts"),
    ("exact re-scoring", "finish", "ivf_search.ts"),
    ("exact re-scoring", "finish", "ivfpq.ts"),
    ("exact re-scoring", "scores", "wasm_exact.ts"),
    ("tables", "lut", "wasm_probe.ts"),
    ("tables", "fill", "fastscan.ts"),
    ("tables", "tables", "ivfpq.ts"),
    ("tables", "tables4", "fastscan.ts"),
    ("tables", "quantizeTables", "fastscan.ts"),
    ("tables", "batch", "pq_scan.ts"),
    ("probing", "probeLists4", "fastscan.ts"),
    ("probing", "probeLists", "ivfpq.ts"),
    ("probing", "probe", "wasm_probe.ts"),
]


# The search's entry points (`ivf_search.ts`; `ivfpq.ts` in profiles of code before the split).
ROOTS = {(fn, fl) for fn in ("scoreIvf", "scoreIvfSync") for fl in ("ivf_search.ts", "ivfpq.ts")}


def main():
    path = sys.argv[1]
    nq = int(sys.argv[sys.argv.index("--questions") + 1])
    prof = json.load(open(path))
    nodes = {n["id"]: n for n in prof["nodes"]}
    parent = {}
    for n in prof["nodes"]:
        for c in n.get("children", []):
            parent[c] = n["id"]
    own = collections.Counter()
    for s, t in zip(prof["samples"], prof["timeDeltas"]):
        own[s] += t
    parts = collections.Counter()
    total = 0
    for leaf, t in own.items():
        frames = []
        j = leaf
        while j is not None:
            cf = nodes[j]["callFrame"]
            frames.append((cf["functionName"], os.path.basename(cf["url"])))
            j = parent.get(j)
        if not any(f in ROOTS for f in frames):
            continue
        total += t
        part = "other"
        for f in frames:
            hit = next((p for p, fn, fl in PARTS if (fn, fl) == f), None)
            if hit is not None:
                part = hit
                break
        parts[part] += t
    if total == 0:
        sys.exit(f"{path}: no samples under scoreIvf (not a profile of bench/ivf_search_speed.ts?)")
    print(f"{os.path.basename(path)}: {total / 1e3:.0f} ms under scoreIvf, {nq} questions")
    print("| part | share | ms a question |")
    print("|---|--:|--:|")
    for p in ["scan kernel", "candidate selection", "exact re-scoring", "tables", "probing", "other"]:
        print(f"| {p} | {100 * parts[p] / total:.1f} % | {parts[p] / 1e3 / nq:.4f} |")
    print(f"| all | 100 % | {total / 1e3 / nq:.4f} |")


if __name__ == "__main__":
    main()
