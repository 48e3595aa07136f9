"""Reference values for tests/metrics/pyregex_test.ts (metrics/pyregex.ts).

Reads one JSON job on stdin, writes one JSON answer on stdout; every pattern
is compiled with re.IGNORECASE + re.UNICODE + re.MULTILINE, as DPR and DrQA
compile CuratedTREC's answer patterns:

  all       [pattern, ...]             -> per pattern the code points c (all 1,114,112) with
                                          fullmatch(chr(c)), as inclusive ranges [lo, hi, ...]
  among     {"patterns": [...], "candidates": [cp, ...]}
                                       -> per pattern the candidates c with fullmatch(chr(c))
  compiles  [pattern, ...]             -> whether re.compile succeeds
  search    [[pattern, [text, ...]]]   -> per pattern, per text: search(text) is not None
  match     [[pattern, [text, ...]]]   -> per pattern, per text: match(text) is not None
"""
import json
import re
import sys

FLAGS = re.IGNORECASE + re.UNICODE + re.MULTILINE


def ranges(pattern):
    fm = re.compile(pattern, FLAGS).fullmatch
    out = []
    for cp in range(0x110000):
        if fm(chr(cp)) is not None:
            if out and out[-1] == cp - 1:
                out[-1] = cp
            else:
                out += [cp, cp]
    return out


def compiled(pattern):
    try:
        return re.compile(pattern, FLAGS)
    except re.error:
        return None


def main():
    job = json.load(sys.stdin)
    out = {'all': [ranges(p) for p in job.get('all', [])]}
    among = job.get('among')
    if among:
        chars = [chr(c) for c in among['candidates']]
        out['among'] = []
        for p in among['patterns']:
            fm = re.compile(p, FLAGS).fullmatch
            out['among'].append([ord(c) for c in chars if fm(c) is not None])
    out['compiles'] = [compiled(p) is not None for p in job.get('compiles', [])]
    out['search'] = [[compiled(p).search(t) is not None for t in ts] for p, ts in job.get('search', [])]
    out['match'] = [[compiled(p).match(t) is not None for t in ts] for p, ts in job.get('match', [])]
    json.dump(out, sys.stdout)


if __name__ == '__main__':
    main()
