"""Reference scorer for SQuAD v2.0, written to behave like the official
``evaluate-v2.0.py`` (same options, same JSON output, same numbers).

Usage: python3 evaluate_v2.py data.json pred.json [--na-prob-file na.json]
       [--na-prob-thresh 1.0] [--out-file eval.json] [--out-image-dir dir]

Rules:
  * normalisation as in v1.1 (lower, drop ASCII punctuation, blank out the
    words a/an/the, squeeze whitespace);
  * gold answers of a question: its answer texts that do not normalise to
    the empty string, or [''] when there is none;
  * exact: int(normalised gold == normalised prediction); F1: when either
    side has no token, 1 if both have none else 0, otherwise token F1;
  * scores are kept in dicts keyed by question id (a repeated id overwrites
    its value and keeps its first position); a question without prediction
    is skipped;
  * no-answer probabilities default to 0.0; a prediction whose probability
    exceeds the threshold (default 1.0) scores float(not has_answer);
  * output: exact, f1, total over scored ids, then HasAns_* and NoAns_*
    subsets, then best_* thresholds when a na-prob file is given.

Deviations from the official script, each needed so that it does not crash
or so that stdout stays one JSON document (marked DEVIATION below):
  1. 'Missing prediction for <qid>' goes to stderr instead of stdout.
  2. The HasAns/NoAns subsets only contain ids that were scored (the
     official script raises KeyError when one of them has no prediction);
     a subset block is printed only when it is not empty.
  3. numpy is imported only when histograms are drawn (--out-image-dir);
     the official script imports it unconditionally.
"""

import argparse
import collections
import json
import os
import re
import string
import sys

OPTS = None
_PUNCTUATION = frozenset(string.punctuation)
_ARTICLE = re.compile(r'\b(a|an|the)\b', re.UNICODE)


def parse_args():
    parser = argparse.ArgumentParser(
        'Official evaluation script for SQuAD version 2.0.')
    parser.add_argument('data_file', metavar='data.json',
                        help='Input data JSON file.')
    parser.add_argument('pred_file', metavar='pred.json',
                        help='Model predictions.')
    parser.add_argument('--out-file', '-o', metavar='eval.json',
                        help='Write accuracy metrics to file '
                             '(default is stdout).')
    parser.add_argument('--na-prob-file', '-n', metavar='na_prob.json',
                        help='Model estimates of probability of no answer.')
    parser.add_argument('--na-prob-thresh', '-t', type=float, default=1.0,
                        help='Predict "" if no-answer probability exceeds '
                             'this (default = 1.0).')
    parser.add_argument('--out-image-dir', '-p', metavar='out_images',
                        default=None,
                        help='Save precision-recall curves to directory.')
    parser.add_argument('--verbose', '-v', action='store_true')
    if len(sys.argv) == 1:
        parser.print_help()
        sys.exit(1)
    return parser.parse_args()


def make_qid_to_has_ans(dataset):
    has_ans = {}
    for article in dataset:
        for paragraph in article['paragraphs']:
            for qa in paragraph['qas']:
                has_ans[qa['id']] = bool(qa['answers'])
    return has_ans


def normalize_answer(text):
    lowered = text.lower()
    no_punct = ''.join(ch for ch in lowered if ch not in _PUNCTUATION)
    return ' '.join(_ARTICLE.sub(' ', no_punct).split())


def get_tokens(text):
    if not text:
        return []
    return normalize_answer(text).split()


def compute_exact(a_gold, a_pred):
    return int(normalize_answer(a_gold) == normalize_answer(a_pred))


def compute_f1(a_gold, a_pred):
    gold_toks = get_tokens(a_gold)
    pred_toks = get_tokens(a_pred)
    shared = collections.Counter(gold_toks) & collections.Counter(pred_toks)
    num_same = sum(shared.values())
    if not gold_toks or not pred_toks:
        # No-answer on either side: 1 when both are no-answer, else 0.
        return int(gold_toks == pred_toks)
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_toks)
    recall = 1.0 * num_same / len(gold_toks)
    return (2 * precision * recall) / (precision + recall)


def get_raw_scores(dataset, preds):
    exact_scores = {}
    f1_scores = {}
    for article in dataset:
        for paragraph in article['paragraphs']:
            for qa in paragraph['qas']:
                qid = qa['id']
                golds = [a['text'] for a in qa['answers']
                         if normalize_answer(a['text'])]
                if not golds:
                    golds = ['']  # unanswerable: only '' is right
                if qid not in preds:
                    # DEVIATION 1: stderr, so that stdout stays JSON.
                    print('Missing prediction for %s' % qid, file=sys.stderr)
                    continue
                a_pred = preds[qid]
                exact_scores[qid] = max(compute_exact(a, a_pred)
                                        for a in golds)
                f1_scores[qid] = max(compute_f1(a, a_pred) for a in golds)
    return exact_scores, f1_scores


def apply_no_ans_threshold(scores, na_probs, qid_to_has_ans, na_prob_thresh):
    thresholded = {}
    for qid, score in scores.items():
        if na_probs[qid] > na_prob_thresh:
            thresholded[qid] = float(not qid_to_has_ans[qid])
        else:
            thresholded[qid] = score
    return thresholded


def make_eval_dict(exact_scores, f1_scores, qid_list=None):
    if not qid_list:
        total = len(exact_scores)
        return collections.OrderedDict([
            ('exact', 100.0 * sum(exact_scores.values()) / total),
            ('f1', 100.0 * sum(f1_scores.values()) / total),
            ('total', total),
        ])
    total = len(qid_list)
    return collections.OrderedDict([
        ('exact', 100.0 * sum(exact_scores[k] for k in qid_list) / total),
        ('f1', 100.0 * sum(f1_scores[k] for k in qid_list) / total),
        ('total', total),
    ])


def merge_eval(main_eval, new_eval, prefix):
    for key in new_eval:
        main_eval['%s_%s' % (prefix, key)] = new_eval[key]


def plot_pr_curve(precisions, recalls, out_image, title):
    plt.step(recalls, precisions, color='b', alpha=0.2, where='post')
    plt.fill_between(recalls, precisions, step='post', alpha=0.2, color='b')
    plt.xlabel('Recall')
    plt.ylabel('Precision')
    plt.xlim([0.0, 1.05])
    plt.ylim([0.0, 1.05])
    plt.title(title)
    plt.savefig(out_image)
    plt.clf()


def make_precision_recall_eval(scores, na_probs, num_true_pos, qid_to_has_ans,
                               out_image=None, title=None):
    qid_list = sorted(na_probs, key=lambda k: na_probs[k])
    true_pos = 0.0
    precisions = [1.0]
    recalls = [0.0]
    avg_prec = 0.0
    for i, qid in enumerate(qid_list):
        if qid_to_has_ans[qid]:
            true_pos += scores[qid]
        cur_p = true_pos / float(i + 1)
        cur_r = true_pos / float(num_true_pos)
        if i == len(qid_list) - 1 or na_probs[qid] != na_probs[qid_list[i + 1]]:
            # a threshold can be placed after this point
            avg_prec += cur_p * (cur_r - recalls[-1])
            precisions.append(cur_p)
            recalls.append(cur_r)
    if out_image:
        plot_pr_curve(precisions, recalls, out_image, title)
    return {'ap': 100.0 * avg_prec}


def run_precision_recall_analysis(main_eval, exact_raw, f1_raw, na_probs,
                                  qid_to_has_ans, out_image_dir):
    if out_image_dir and not os.path.exists(out_image_dir):
        os.makedirs(out_image_dir)
    num_true_pos = sum(1 for v in qid_to_has_ans.values() if v)
    if num_true_pos == 0:
        return
    pr_exact = make_precision_recall_eval(
        exact_raw, na_probs, num_true_pos, qid_to_has_ans,
        out_image=os.path.join(out_image_dir, 'pr_exact.png'),
        title='Precision-Recall curve for Exact Match score')
    pr_f1 = make_precision_recall_eval(
        f1_raw, na_probs, num_true_pos, qid_to_has_ans,
        out_image=os.path.join(out_image_dir, 'pr_f1.png'),
        title='Precision-Recall curve for F1 score')
    oracle_scores = {k: float(v) for k, v in qid_to_has_ans.items()}
    pr_oracle = make_precision_recall_eval(
        oracle_scores, na_probs, num_true_pos, qid_to_has_ans,
        out_image=os.path.join(out_image_dir, 'pr_oracle.png'),
        title='Oracle Precision-Recall curve (binary task of HasAns vs. NoAns)')
    merge_eval(main_eval, pr_exact, 'pr_exact')
    merge_eval(main_eval, pr_f1, 'pr_f1')
    merge_eval(main_eval, pr_oracle, 'pr_oracle')


def histogram_na_prob(na_probs, qid_list, image_dir, name):
    if not qid_list:
        return
    import numpy as np  # DEVIATION 3: imported only where it is used.
    values = [na_probs[k] for k in qid_list]
    weights = np.ones_like(values) / float(len(values))
    plt.hist(values, weights=weights, bins=20, range=(0.0, 1.0))
    plt.xlabel('Model probability of no-answer')
    plt.ylabel('Proportion of dataset')
    plt.title('Histogram of no-answer probability: %s' % name)
    plt.savefig(os.path.join(image_dir, 'na_prob_hist_%s.png' % name))
    plt.clf()


def find_best_thresh(preds, scores, na_probs, qid_to_has_ans):
    num_no_ans = sum(1 for k in qid_to_has_ans if not qid_to_has_ans[k])
    cur_score = num_no_ans
    best_score = cur_score
    best_thresh = 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if qid not in scores:
            continue
        if qid_to_has_ans[qid]:
            diff = scores[qid]
        elif preds[qid]:
            diff = -1
        else:
            diff = 0
        cur_score += diff
        if cur_score > best_score:
            best_score = cur_score
            best_thresh = na_probs[qid]
    return 100.0 * best_score / len(scores), best_thresh


def find_all_best_thresh(main_eval, preds, exact_raw, f1_raw, na_probs,
                         qid_to_has_ans):
    best_exact, exact_thresh = find_best_thresh(preds, exact_raw, na_probs,
                                                qid_to_has_ans)
    best_f1, f1_thresh = find_best_thresh(preds, f1_raw, na_probs,
                                          qid_to_has_ans)
    main_eval['best_exact'] = best_exact
    main_eval['best_exact_thresh'] = exact_thresh
    main_eval['best_f1'] = best_f1
    main_eval['best_f1_thresh'] = f1_thresh


def main():
    with open(OPTS.data_file) as handle:
        dataset_json = json.load(handle)
        dataset = dataset_json['data']
    with open(OPTS.pred_file) as handle:
        preds = json.load(handle)
    if OPTS.na_prob_file:
        with open(OPTS.na_prob_file) as handle:
            na_probs = json.load(handle)
    else:
        na_probs = {k: 0.0 for k in preds}
    qid_to_has_ans = make_qid_to_has_ans(dataset)
    exact_raw, f1_raw = get_raw_scores(dataset, preds)
    # DEVIATION 2: only ids that were scored (the official lists every id and
    # raises KeyError below when one of them has no prediction).
    has_ans_qids = [k for k, v in qid_to_has_ans.items()
                    if v and k in exact_raw]
    no_ans_qids = [k for k, v in qid_to_has_ans.items()
                   if not v and k in exact_raw]
    exact_thresh = apply_no_ans_threshold(exact_raw, na_probs, qid_to_has_ans,
                                          OPTS.na_prob_thresh)
    f1_thresh = apply_no_ans_threshold(f1_raw, na_probs, qid_to_has_ans,
                                       OPTS.na_prob_thresh)
    out_eval = make_eval_dict(exact_thresh, f1_thresh)
    if has_ans_qids:
        merge_eval(out_eval, make_eval_dict(exact_thresh, f1_thresh,
                                            qid_list=has_ans_qids), 'HasAns')
    if no_ans_qids:
        merge_eval(out_eval, make_eval_dict(exact_thresh, f1_thresh,
                                            qid_list=no_ans_qids), 'NoAns')
    if OPTS.na_prob_file:
        find_all_best_thresh(out_eval, preds, exact_raw, f1_raw, na_probs,
                             qid_to_has_ans)
    if OPTS.na_prob_file and OPTS.out_image_dir:
        run_precision_recall_analysis(out_eval, exact_raw, f1_raw, na_probs,
                                      qid_to_has_ans, OPTS.out_image_dir)
        histogram_na_prob(na_probs, has_ans_qids, OPTS.out_image_dir,
                          'hasAns')
        histogram_na_prob(na_probs, no_ans_qids, OPTS.out_image_dir, 'noAns')
    if OPTS.out_file:
        with open(OPTS.out_file, 'w') as handle:
            json.dump(out_eval, handle)
    else:
        print(json.dumps(out_eval, indent=2))
    return out_eval


if __name__ == '__main__':
    OPTS = parse_args()
    if OPTS.out_image_dir:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    main()
