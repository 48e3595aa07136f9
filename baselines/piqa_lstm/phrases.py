"""Phrase formation of the piqa-lstm encoder (mirrored by the manifest's
`phrases` section and `encoders/onnx/phrases.ts`): spans of at most
MAX_TOKENS tokens (j - i < MAX_TOKENS) that start and end on a word token
whose lower-cased form is not in NO_BOUNDARY. Articles cost nothing (SQuAD
answer normalisation drops them); the function words cost ~0.5 % of dev
answers and halve the dump."""
from tokenizer import is_word, norm

MAX_TOKENS = 10
NO_BOUNDARY = sorted(
    "a an the of and or to in by for with at on from as is was that which who its their his her "
    "be are were".split()
)


def boundary_flags(tokens):
    """(can start, can end) per token."""
    ok = [is_word(t) and norm(t) not in NO_BOUNDARY for t in tokens]
    return ok, ok


def spans(tokens):
    """The (i, j) phrase spans in (i, j) order."""
    ok_s, ok_e = boundary_flags(tokens)
    n = len(tokens)
    out = []
    for i in range(n):
        if not ok_s[i]:
            continue
        for j in range(i, min(n, i + MAX_TOKENS)):
            if ok_e[j]:
                out.append((i, j))
    return out
