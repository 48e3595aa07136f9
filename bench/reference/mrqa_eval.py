"""Reference scorer for the MRQA 2019 shared task, written to behave like the
official ``mrqa_official_eval.py``.

Written from: mrqa/MRQA-Shared-Task-2019, ``mrqa_official_eval.py`` at commit
59ed9b1af4e8bd230c55f987568d6b4b9163764f (MIT licence). Not a copy: the rules
below are re-implemented; the official script also imports
``allennlp.common.file_utils.cached_path`` only to open its two arguments,
which this reference opens directly.

Rules:
  * an answer is normalised as in SQuAD v1.1: ``str.lower``, every character
    of ``string.punctuation`` deleted, the whole words ``a``, ``an``, ``the``
    (Unicode ``\\b``) replaced by a space, whitespace collapsed;
  * EM: normalised strings equal; F1: token F1 over the multiset of shared
    tokens (0 when none); per question the best over its answers (``max``,
    which raises on an empty list);
  * questions are keyed by ``qid`` (a repeated qid keeps its first place and
    its last answers); a question without prediction counts 0 and a line
    ``Unanswered question QID will receive score 0.`` is printed on stdout,
    unless ``--skip-no-answer``, which leaves it out of the total;
  * result ``100.0 * sum / total`` for EM and F1, printed with ``json.dumps``.

Usage:
  python3 mrqa_eval.py DATASET.jsonl[.gz] PREDICTIONS.json [--skip-no-answer]
  python3 mrqa_eval.py --batch < cases.json   (the tests' interface: see batch())
"""

import argparse
import collections
import gzip
import io
import json
import re
import string
import sys

_PUNCT = frozenset(string.punctuation)
_ARTICLES = re.compile(r'\b(a|an|the)\b')


def normalize(text):
    text = ''.join(c for c in text.lower() if c not in _PUNCT)
    return ' '.join(_ARTICLES.sub(' ', text).split())


def exact(prediction, answer):
    return normalize(prediction) == normalize(answer)


def f1(prediction, answer):
    p = normalize(prediction).split()
    g = normalize(answer).split()
    same = sum((collections.Counter(p) & collections.Counter(g)).values())
    if same == 0:
        return 0
    precision = 1.0 * same / len(p)
    recall = 1.0 * same / len(g)
    return (2 * precision * recall) / (precision + recall)


def best(metric, prediction, answers):
    return max([metric(prediction, a) for a in answers])


def evaluate(answers, predictions, skip_no_answer=False, out=sys.stdout):
    em_sum = f1_sum = total = 0
    for qid, golds in answers.items():
        if qid not in predictions:
            if not skip_no_answer:
                print('Unanswered question %s will receive score 0.' % qid, file=out)
                total += 1
            continue
        total += 1
        em_sum += best(exact, predictions[qid], golds)
        f1_sum += best(f1, predictions[qid], golds)
    return {'exact_match': 100.0 * em_sum / total, 'f1': 100.0 * f1_sum / total}


def read_answers(path):
    opener = gzip.open if path.endswith('.gz') else open
    answers = {}
    with opener(path, 'rb') as f:
        for i, line in enumerate(f):
            record = json.loads(line)
            if i == 0 and 'header' in record:
                continue
            for qa in record['qas']:
                answers[qa['qid']] = qa['answers']
    return answers


def batch():
    """stdin: {"pairs": [[prediction, [answers...]], ...],
    "folds": [{"questions": [[qid, [answers...]], ...], "predictions": {...},
    "skip": bool}, ...]}; stdout: {"pairs": [[em, f1], ...], "folds": [result
    or the exception's class name, ...]}."""
    job = json.load(sys.stdin)
    pairs = []
    for prediction, answers in job['pairs']:
        if not answers:
            pairs.append(None)
            continue
        pairs.append([int(best(exact, prediction, answers)), best(f1, prediction, answers)])
    folds = []
    sink = io.StringIO()
    for fold in job['folds']:
        answers = {}
        for qid, golds in fold['questions']:
            answers[qid] = golds
        try:
            folds.append(evaluate(answers, fold['predictions'], fold['skip'], sink))
        except Exception as e:  # the script's crash, by class
            folds.append(type(e).__name__)
    json.dump({'pairs': pairs, 'folds': folds}, sys.stdout)


def main():
    if sys.argv[1:] == ['--batch']:
        batch()
        return
    parser = argparse.ArgumentParser(description='Evaluation for MRQA Workshop Shared Task')
    parser.add_argument('dataset_file')
    parser.add_argument('prediction_file')
    parser.add_argument('--skip-no-answer', action='store_true')
    args = parser.parse_args()
    with open(args.prediction_file) as f:
        predictions = json.load(f)
    print(json.dumps(evaluate(read_answers(args.dataset_file), predictions, args.skip_no_answer)))


if __name__ == '__main__':
    main()
