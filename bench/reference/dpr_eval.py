"""Reference for the open-domain answer metrics, written to behave like DPR's
retriever validation and DrQA/DensePhrases' answer EM/F1.

Written from:
  * facebookresearch/DPR, ``dpr/data/qa_validation.py`` (``has_answer``,
    ``regex_match``, ``_normalize``, the ``top_k_hits`` fold of
    ``calculate_matches``) and ``dpr/utils/tokenizers.py`` (``SimpleTokenizer``),
    both at commit 10ca7200a2549dbf4e9542aa61a6f541e535499f; licence: the
    repository's LICENSE file, as their headers say;
  * princeton-nlp/DensePhrases, ``densephrases/utils/eval_utils.py`` at commit
    2492500d795f9ddd128eb303778c7e1fbdf279db (``drqa_exact_match_score``,
    ``drqa_regex_match_score``, ``drqa_metric_max_over_ground_truths``) and the
    top-1/top-k loop of its ``evaluate_results``; DrQA's
    ``scripts/pipeline/eval.py`` for the NFD normalisation of predictions and
    answers.
Not a copy: the rules are re-implemented here with the standard library only.

Pieces re-implemented because their imports are not available:
  * ``SimpleTokenizer`` compiles ``([\\p{L}\\p{N}\\p{M}]+)|([^\\p{Z}\\p{C}])`` with
    the third-party ``regex`` module; here the same scan is written over
    ``unicodedata.category`` (a maximal run of L/N/M code points is a token;
    else one code point that is not Z/C is a token; else skipped). The
    IGNORECASE flag of that pattern changes nothing for these categories.
  * ``qa_validation.py`` (and DrQA) import ``regex`` as ``re``; this reference
    uses the standard ``re`` (as DensePhrases does). The two differ for ``\\w``
    and ``\\b`` (``regex`` also counts marks as word characters) and ``\\s``.

Rules:
  * ``has_answer(answers, text, 'string')``: text and each answer NFD
    normalised and tokenized, tokens lower-cased (``str.lower``); true when an
    answer's token list occurs contiguously in the text's (an answer with no
    token matches any text);
  * ``has_answer(answers, text, 'regex')``: text and each pattern NFD
    normalised; ``re.compile(pattern, re.IGNORECASE + re.UNICODE +
    re.MULTILINE).search(text)``; a pattern that does not compile is no match;
  * top-k: the first passage (0-based) that has an answer; ``hits[i]`` counts
    the questions whose first hit is at or before ``i``; accuracy ``hits / n``;
  * passage accuracy of a phrase search (``passage_accuracy``): a question's
    passages are the distinct paragraphs of its ranked phrases, in rank order;
    then the top-k fold above, ``100.0 * hits / n``;
  * open EM/F1 (DensePhrases): the candidates (an empty list is ``['']``),
    NFD normalised like the answers; top-1 EM = the best over the answers of
    SQuAD EM (or regex ``match``), top-k = the best over the first k
    candidates; F1 likewise with SQuAD F1 (not in regex mode); sums over the
    questions, then ``100.0 * sum / total``.

Usage: python3 dpr_eval.py --batch < cases.json   (the tests' interface: see batch())
"""

import collections
import json
import re
import string
import sys
import unicodedata

_FLAGS = re.IGNORECASE + re.UNICODE + re.MULTILINE


def nfd(text):
    return unicodedata.normalize('NFD', text)


def tokenize(text):
    """SimpleTokenizer's tokens (their text, not lower-cased)."""
    tokens = []
    i, n = 0, len(text)
    while i < n:
        major = unicodedata.category(text[i])[0]
        if major in 'LNM':
            j = i + 1
            while j < n and unicodedata.category(text[j])[0] in 'LNM':
                j += 1
            tokens.append(text[i:j])
            i = j
        elif major in 'ZC':
            i += 1
        else:
            tokens.append(text[i])
            i += 1
    return tokens


def words(text):
    return [t.lower() for t in tokenize(text)]


def regex_compiles(pattern):
    try:
        re.compile(pattern, flags=_FLAGS)
        return True
    except BaseException:
        return False


def regex_search(text, pattern):
    try:
        compiled = re.compile(pattern, flags=_FLAGS)
    except BaseException:
        return False
    return compiled.search(text) is not None


def regex_match(text, pattern):
    try:
        compiled = re.compile(pattern, flags=_FLAGS)
    except BaseException:
        return False
    return compiled.match(text) is not None


def has_answer(answers, text, mode):
    text = nfd(text)
    if mode == 'string':
        doc = words(text)
        for answer in answers:
            ans = words(nfd(answer))
            for i in range(0, len(doc) - len(ans) + 1):
                if doc[i:i + len(ans)] == ans:
                    return True
    elif mode == 'regex':
        for answer in answers:
            if regex_search(text, nfd(answer)):
                return True
    return False


def top_k_hits(per_question):
    n_docs = max((len(h) for h in per_question), default=0)
    hits = [0] * n_docs
    for question_hits in per_question:
        first = next((i for i, x in enumerate(question_hits) if x), None)
        if first is not None:
            hits[first:] = [v + 1 for v in hits[first:]]
    return hits


_PUNCT = frozenset(string.punctuation)
_ARTICLES = re.compile(r'\b(a|an|the)\b')


def squad_normalize(s):
    s = ''.join(c for c in s.lower() if c not in _PUNCT)
    return ' '.join(_ARTICLES.sub(' ', s).split())


def squad_f1(prediction, answer):
    p = squad_normalize(prediction).split()
    g = squad_normalize(answer).split()
    same = sum((collections.Counter(p) & collections.Counter(g)).values())
    if same == 0:
        return 0
    precision = 1.0 * same / len(p)
    recall = 1.0 * same / len(g)
    return (2 * precision * recall) / (precision + recall)


def squad_em(prediction, answer):
    return squad_normalize(prediction) == squad_normalize(answer)


def regex_em(prediction, pattern):
    return regex_match(prediction, pattern)


def best(metric, prediction, answers):
    return max([metric(prediction, a) for a in answers])


def open_scores(candidates, answers, regex, k):
    preds = [nfd(c) for c in candidates[:k]] if candidates else ['']
    golds = [nfd(a) for a in answers]
    em_fn = regex_em if regex else squad_em
    out = {'em_top1': int(best(em_fn, preds[0], golds)),
           'em_topk': int(max([best(em_fn, p, golds) for p in preds]))}
    if regex:
        out['f1_top1'] = out['f1_topk'] = None
    else:
        out['f1_top1'] = best(squad_f1, preds[0], golds)
        out['f1_topk'] = max([best(squad_f1, p, golds) for p in preds])
    return out


def open_fold(rows, regex, k):
    em1 = emk = f11 = f1k = 0
    for candidates, answers in rows:
        s = open_scores(candidates, answers, regex, k)
        em1 += s['em_top1']
        emk += s['em_topk']
        if not regex:
            f11 += s['f1_top1']
            f1k += s['f1_topk']
    total = len(rows)
    return {
        'exact_match_top1': 100.0 * em1 / total,
        'f1_score_top1': None if regex else 100.0 * f11 / total,
        'exact_match_topk': 100.0 * emk / total,
        'f1_score_topk': None if regex else 100.0 * f1k / total,
    }


def passage_accuracy(case):
    """DPR top-k passage accuracy of an open phrase search: each question's
    passages are the distinct paragraphs of its ranked phrases, in rank
    order; has_answer over each passage's text (regex mode for regex
    answers); accuracy@k = 100 * (questions whose first passage with an
    answer is among the first k) / questions, a question with fewer than k
    passages counting with those it has."""
    texts = case['passages']
    per_question = []
    for answers, regex, ranked in case['questions']:
        seen, passages = set(), []
        for pid in ranked:
            if pid not in seen:
                seen.add(pid)
                passages.append(pid)
        mode = 'regex' if regex else 'string'
        per_question.append([has_answer(answers, texts[pid], mode) for pid in passages])
    hits = top_k_hits(per_question)
    n = len(per_question)
    out = {}
    for k in case['ks']:
        found = hits[min(k, len(hits)) - 1] if hits else 0
        out[str(k)] = 100.0 * found / n
    return out


def batch():
    """stdin: {"tokens": [text...], "has": [[answers, text, mode]...],
    "compiles": [pattern...], "search": [[pattern, text]...], "match":
    [[pattern, text]...], "topk": [[[bool...]...], ...], "open": [[candidates,
    answers, regex, k]...], "open_folds": [[rows, regex, k]...]};
    stdout: the same keys with the results."""
    job = json.load(sys.stdin)
    out = {
        'tokens': [tokenize(t) for t in job.get('tokens', [])],
        'words': [words(nfd(t)) for t in job.get('tokens', [])],
        'nfd': [nfd(t) for t in job.get('tokens', [])],
        'has': [has_answer(a, t, m) for a, t, m in job.get('has', [])],
        'compiles': [regex_compiles(p) for p in job.get('compiles', [])],
        'search': [regex_search(t, p) for p, t in job.get('search', [])],
        'match': [regex_match(t, p) for p, t in job.get('match', [])],
        'topk': [top_k_hits(h) for h in job.get('topk', [])],
        'open': [open_scores(c, a, r, k) for c, a, r, k in job.get('open', [])],
        'open_folds': [open_fold(rows, r, k) for rows, r, k in job.get('open_folds', [])],
        'passage_accuracy': [passage_accuracy(c) for c in job.get('passage_accuracy', [])],
    }
    json.dump(out, sys.stdout)


if __name__ == '__main__':
    if sys.argv[1:] != ['--batch']:
        sys.exit('usage: dpr_eval.py --batch < cases.json')
    batch()
