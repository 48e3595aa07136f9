"""Reference scorer for MLQA (and XQuAD scored with MLQA's script), written
to behave like the official ``mlqa_evaluation_v1.py``.

Written from: facebookresearch/MLQA, ``mlqa_evaluation_v1.py`` at commit
5ef5c731a96acb7008b51aac4acb5fa9dff4f297; licence: the code is under the
repository's LICENSE file (its README says so; the data is CC BY-SA 3.0).
Not a copy: the rules below are re-implemented.

Rules (``normalize(s, lang)``):
  * ``str.lower``;
  * delete every character of PUNCT: the code points below ``sys.maxunicode``
    whose category starts with ``P``, and ``string.punctuation``;
  * articles replaced by a space: en ``\\b(a|an|the)\\b``; es
    ``un|una|unos|unas|el|la|los|las``; de
    ``ein|eine|einen|einem|eines|einer|der|die|das|den|dem|des``; vi
    ``của|là|cái|chiếc|những`` (each as a whole word); ar: the script's pattern
    ``'\\sال^|ال'`` (its first branch cannot match without MULTILINE, so every
    ``ال`` becomes a space); hi, zh: none; any other language raises
    ``Exception('Unknown Language ...')``;
  * tokens: ``str.split()`` for en es hi vi de ar; zh: each character of
    U+4E00..U+9FA5 or PUNCT alone, the runs between split on whitespace;
    tokens that ``strip()`` to nothing are dropped; joined by one space.
EM: normalised strings equal; F1: SQuAD token F1 over ``normalize().split()``;
per question the best over its answers (``max``). Every question counts, a
missing prediction scores 0 (with a line on stderr); ``100.0 * sum / total``.

Usage:
  python3 mlqa_eval.py DATASET.json PREDICTIONS.json LANG
  python3 mlqa_eval.py --batch < cases.json   (the tests' interface: see batch())
"""

import collections
import io
import json
import re
import string
import sys
import unicodedata

PUNCT = frozenset(chr(i) for i in range(sys.maxunicode)
                  if unicodedata.category(chr(i))[0] == 'P') | frozenset(string.punctuation)
_ARTICLES = {
    'en': re.compile(r'\b(a|an|the)\b'),
    'es': re.compile(r'\b(un|una|unos|unas|el|la|los|las)\b'),
    'vi': re.compile('\\b(c\u1ee7a|l\u00e0|c\u00e1i|chi\u1ebfc|nh\u1eefng)\\b'),
    'de': re.compile(r'\b(ein|eine|einen|einem|eines|einer|der|die|das|den|dem|des)\b'),
    'ar': re.compile('\\s\u0627\u0644^|\u0627\u0644'),
}
_SPLIT_LANGS = ('en', 'es', 'hi', 'vi', 'de', 'ar')
_CJK = re.compile('[\u4e00-\u9fa5]')


def _segment_zh(text):
    tokens, run = [], ''
    for ch in text:
        if _CJK.search(ch) or ch in PUNCT:
            if run:
                tokens.extend(run.split())
                run = ''
            tokens.append(ch)
        else:
            run += ch
    if run:
        tokens.extend(run.split())
    return tokens


def normalize(s, lang):
    text = ''.join(c for c in s.lower() if c not in PUNCT)
    if lang in _ARTICLES:
        text = _ARTICLES[lang].sub(' ', text)
    elif lang not in ('hi', 'zh'):
        raise Exception('Unknown Language {}'.format(lang))
    if lang in _SPLIT_LANGS:
        tokens = text.split()
    elif lang == 'zh':
        tokens = _segment_zh(text)
    else:
        raise Exception('Unknown Language {}'.format(lang))
    return ' '.join(t for t in tokens if t.strip() != '')


def exact(prediction, answer, lang):
    return normalize(prediction, lang) == normalize(answer, lang)


def f1(prediction, answer, lang):
    p = normalize(prediction, lang).split()
    g = normalize(answer, lang).split()
    same = sum((collections.Counter(p) & collections.Counter(g)).values())
    if same == 0:
        return 0
    precision = 1.0 * same / len(p)
    recall = 1.0 * same / len(g)
    return (2 * precision * recall) / (precision + recall)


def best(metric, prediction, answers, lang):
    return max([metric(prediction, a, lang) for a in answers])


def evaluate(questions, predictions, lang, err=sys.stderr):
    """questions: [(id, [answer texts]), ...] in dataset order."""
    em_sum = f1_sum = total = 0
    for qid, golds in questions:
        total += 1
        if qid not in predictions:
            print('Unanswered question ' + qid + ' will receive score 0.', file=err)
            continue
        em_sum += best(exact, predictions[qid], golds, lang)
        f1_sum += best(f1, predictions[qid], golds, lang)
    return {'exact_match': 100.0 * em_sum / total, 'f1': 100.0 * f1_sum / total}


def batch():
    """stdin: {"norm": [[text, lang], ...], "pairs": [[prediction, [answers], lang], ...],
    "folds": [{"questions": [[id, [answers]], ...], "predictions": {...}, "lang": str}]};
    stdout: the same keys with normalised texts, [em, f1] pairs and fold
    results (an exception's class name where the script dies, None for a pair
    without answers)."""
    job = json.load(sys.stdin)
    out = {'norm': [], 'pairs': [], 'folds': []}
    for text, lang in job['norm']:
        try:
            out['norm'].append(normalize(text, lang))
        except Exception as e:
            out['norm'].append({'error': type(e).__name__})
    for prediction, answers, lang in job['pairs']:
        if not answers:
            out['pairs'].append(None)
            continue
        try:
            out['pairs'].append([int(best(exact, prediction, answers, lang)),
                                 best(f1, prediction, answers, lang)])
        except Exception as e:
            out['pairs'].append({'error': type(e).__name__})
    sink = io.StringIO()
    for fold in job['folds']:
        try:
            out['folds'].append(evaluate(fold['questions'], fold['predictions'], fold['lang'], sink))
        except Exception as e:
            out['folds'].append({'error': type(e).__name__})
    json.dump(out, sys.stdout)


def main():
    if sys.argv[1:] == ['--batch']:
        batch()
        return
    if len(sys.argv) != 4:
        sys.exit('usage: mlqa_eval.py DATASET.json PREDICTIONS.json LANG')
    with open(sys.argv[1]) as f:
        dataset = json.load(f)
    if str(dataset['version']) != '1.0':
        print('Evaluation expects v-1.0, but got dataset with v-' + dataset['version'],
              file=sys.stderr)
    with open(sys.argv[2]) as f:
        predictions = json.load(f)
    questions = [(qa['id'], [a['text'] for a in qa['answers']])
                 for article in dataset['data'] for p in article['paragraphs'] for qa in p['qas']]
    print(json.dumps(evaluate(questions, predictions, sys.argv[3])))


if __name__ == '__main__':
    main()
