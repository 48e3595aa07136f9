"""The word tokenizer shared by training (this file) and phraseval's TypeScript
encoder (`encoders/onnx/tokenizer.ts`, kind "word"). Both must give the same
tokens; `tests/encoders/piqa_lstm_test.ts` checks it on every dev question and context.

A token is a maximal run of word characters (Unicode general category L*, M*
or N*) or a single other character that is not white space (JavaScript `\\s`).
Offsets are Python code-point offsets here (UTF-16 code units in TypeScript).
Vocabulary lookup: the token lower-cased (`str.lower` / `toLowerCase`).
"""
import unicodedata

# JavaScript's \s: WhiteSpace + LineTerminator code points (ECMAScript).
JS_SPACE = set(
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def char_class(c: str) -> int:
    """0 space, 1 word character, 2 other (a token by itself)."""
    if c in JS_SPACE:
        return 0
    if unicodedata.category(c)[0] in "LMN":
        return 1
    return 2


def tokenize(text: str):
    """List of (token, start, end) with code-point offsets."""
    out = []
    i, n = 0, len(text)
    while i < n:
        k = char_class(text[i])
        if k == 0:
            i += 1
        elif k == 2:
            out.append((text[i], i, i + 1))
            i += 1
        else:
            j = i + 1
            while j < n and char_class(text[j]) == 1:
                j += 1
            out.append((text[i:j], i, j))
            i = j
    return out


def is_word(token: str) -> bool:
    """Whether a token is a word (starts with a word character)."""
    return char_class(token[0]) == 1


def norm(token: str) -> str:
    """The vocabulary key of a token."""
    return token.lower()


def casing(token: str) -> int:
    """Casing class of a token (0 is padding): 5 not a word; 4 a word with a
    decimal digit (category Nd); 3 ALLCAPS (two or more characters, each one
    changed by lower()); 2 Capitalized (its first character changed by
    lower()); 1 any other word."""
    if not is_word(token):
        return 5
    if any(unicodedata.category(c) == "Nd" for c in token):
        return 4
    upper = [c.lower() != c for c in token]
    if len(token) >= 2 and all(upper):
        return 3
    if upper[0]:
        return 2
    return 1
