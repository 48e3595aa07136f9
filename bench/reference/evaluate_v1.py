"""Reference scorer for SQuAD v1.1, written to behave exactly like the
official ``evaluate-v1.1.py`` (same arguments, same stdout line, same stderr
messages, same crashes).

Usage: python3 evaluate_v1.py <dataset.json> <predictions.json>

Rules:
  * an answer is normalised by lower-casing (``str.lower``), deleting every
    character of ``string.punctuation``, replacing the whole words ``a``,
    ``an`` and ``the`` by a space (``\\b`` is Unicode-aware in Python), and
    collapsing whitespace (``str.split`` / ``' '.join``);
  * exact match: normalised strings are equal; F1: harmonic mean of token
    precision and recall over the multiset of shared tokens (0 when none);
  * per question: the best score over its gold answers;
  * every question of the dataset counts; one without a prediction scores 0
    and is reported on stderr;
  * result: 100 * sum / number of questions, printed with ``json.dumps``.
"""

import argparse
import collections
import json
import re
import string
import sys

EXPECTED_VERSION = '1.1'
_PUNCTUATION = frozenset(string.punctuation)
_ARTICLE = re.compile(r'\b(a|an|the)\b')


def normalize_answer(text):
    """Lower case, drop punctuation, blank out articles, squeeze spaces."""
    lowered = text.lower()
    no_punct = ''.join(ch for ch in lowered if ch not in _PUNCTUATION)
    no_articles = _ARTICLE.sub(' ', no_punct)
    return ' '.join(no_articles.split())


def exact_match_score(prediction, ground_truth):
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def f1_score(prediction, ground_truth):
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(ground_truth).split()
    shared = collections.Counter(pred_tokens) & collections.Counter(gold_tokens)
    num_same = sum(shared.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_tokens)
    recall = 1.0 * num_same / len(gold_tokens)
    return (2 * precision * recall) / (precision + recall)


def metric_max_over_ground_truths(metric_fn, prediction, ground_truths):
    # max() of an empty list raises ValueError, as in the official script.
    return max([metric_fn(prediction, gold) for gold in ground_truths])


def evaluate(dataset, predictions):
    exact_match = 0
    f1 = 0
    total = 0
    for article in dataset:
        for paragraph in article['paragraphs']:
            for qa in paragraph['qas']:
                total += 1
                qid = qa['id']
                if qid not in predictions:
                    print('Unanswered question ' + qid +
                          ' will receive score 0.', file=sys.stderr)
                    continue
                golds = [answer['text'] for answer in qa['answers']]
                prediction = predictions[qid]
                exact_match += metric_max_over_ground_truths(
                    exact_match_score, prediction, golds)
                f1 += metric_max_over_ground_truths(f1_score, prediction, golds)
    return {
        'exact_match': 100.0 * exact_match / total,
        'f1': 100.0 * f1 / total,
    }


def main():
    parser = argparse.ArgumentParser(
        description='Evaluation for SQuAD ' + EXPECTED_VERSION)
    parser.add_argument('dataset_file', help='Dataset file')
    parser.add_argument('prediction_file', help='Prediction File')
    args = parser.parse_args()
    with open(args.dataset_file) as handle:
        dataset_json = json.load(handle)
        if dataset_json['version'] != EXPECTED_VERSION:
            print('Evaluation expects v-' + EXPECTED_VERSION +
                  ', but got dataset with v-' + dataset_json['version'],
                  file=sys.stderr)
        dataset = dataset_json['data']
    with open(args.prediction_file) as handle:
        predictions = json.load(handle)
    print(json.dumps(evaluate(dataset, predictions)))


if __name__ == '__main__':
    main()
