#!/usr/bin/env python3
"""Golden token ids for the BEM tokenizer, from Hugging Face `transformers`.

BEM's recipe tokenizes with `BertTokenizer.from_pretrained('bert-base-uncased')`
(transformers 4.x: the pure-Python "slow" tokenizer, `do_lower_case=True`) and
`tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text))`. This script runs
exactly that over

  * every question of SQuAD v1.1 dev,
  * every distinct gold answer text of dev,
  * 2,000 context sentences of dev (a seeded sample, reproducible),
  * hand-picked odd cases (accents, CJK, emoji, control and zero-width
    characters, words over 100 characters, empty and blank strings, combining
    marks, special tokens written in the text, ...),
  * every Unicode code point, alone between spaces and inside a word
    (`x<c>y`), in runs of 256 code points,
  * the seed's BEM triple, assembled as the seed's `bertify_example` does,

and writes `tests/fixtures/bem_tokenizer_golden.ndjson.gz`: one JSON object a
line (gzip with no name or time stamp, so reruns are byte-identical):

  {"k": "meta", ...}                            versions, vocabulary digest
  {"k": "q"|"a"|"s"|"o", "t": text, "ids": [...]}
  {"k": "cp", "f": "iso"|"word", "lo": n, "hi": n, "ids": [...]}
                                                code points lo..hi (inclusive,
                                                surrogates skipped): text is
                                                " ".join(chr(c)) for "iso",
                                                " ".join("x" + chr(c) + "y")
                                                for "word"
  {"k": "triple", "question", "reference", "candidate", "input_ids",
   "segment_ids"}                               unpadded, as bertify_example

`tests/metrics/bem/tokenizer_test.ts` compares every entry with `metrics/bem/tokenizer.ts`.

The slow tokenizer is `BertTokenizer` in transformers 4.x and
`BertTokenizerLegacy` in 5.x (where `BertTokenizer` became the Rust-backed
fast one); the script takes whichever is there and refuses a fast one. The
two differ in one step: 4.x's `PreTrainedTokenizer.tokenize` first lower-cases
the text one character at a time (`re.sub(r"(<special tokens>)|(.+?)", ...)`),
so a final capital sigma becomes `σ`, while 5.x lower-cases whole words (`ς`).
BEM's recipe is 4.x (the seed's example, 2023), so under 5.x the script applies
that 4.x step itself, copied from transformers 4.57.6 (`four_x_lowercase`); the
golden is then identical under both (checked with 4.57.6 and 5.18.0).
Python's `unicodedata` version matters for code points assigned after it
(the golden records it; Python 3.11 has Unicode 14.0.0).

Usage (from the repository root; needs `pip install transformers`):

  python3 tools/bem/make_tokenizer_golden.py \
      [--data data/dev-v1.1.json.gz] [--vocab data/bert/bert-base-uncased-vocab.txt] \
      [--out tests/fixtures/bem_tokenizer_golden.ndjson.gz]
"""

import argparse
import gzip
import hashlib
import io
import json
import random
import re
import sys
import unicodedata

import transformers

SENTENCES = 2000
SEED = 20220518  # any fixed number; the sample only has to be reproducible
RUN = 256

ODD_CASES = [
    # empty, blank, whitespace of every kind
    "",
    " ",
    "   ",
    "\t\n\r ",
    "\u3000",
    "\u00a0",
    "a\u2028b\u2029c",
    "a\u1680b\u2000c\u200ad\u202fe\u205ff",
    # accents, case, composed and decomposed forms
    "Café",
    "Cafe\u0301",
    "naïve résumé",
    "ÅNGSTRÖM",
    "Zoë's",
    "Ǆemal ǅ ǆ",
    "İstanbul",
    "ΟΔΟΣ Σ σς",
    "Straße ẞ",
    "ﬁne ligature ﬀ",
    "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３",
    "ＭＡＳＫ",
    "a\u0300\u0301\u0302b",
    "\u0301",
    "\u0301\u0302 \u0303",
    "e\u0301\u0327",
    "Ω \u2126 K \u212a Å \u212b",
    "Ⅻ ⅻ ① ㎞",
    "Việt Nam",
    "Dvořák Łódź Ærø Øresund Þór",
    "Ελληνικά Русский язык Հայերեն",
    "עברית العربية فارسی",
    "हिन्दी தமிழ் ไทย",
    "한국어 조선말",
    # CJK and friends
    "北京大学",
    "東京 日本語のテキスト",
    "中文English混合123",
    "\U00020000\U00020001 \U0002a6d6",
    "\U0002b740\U0002b81d \U0002ceb0",
    "\uf900\ufa0d",
    "\u3400\u4dbf",
    "ｶﾀｶﾅ カタカナ ひらがな",
    # emoji
    "😀",
    "👍🏽 👨\u200d👩\u200d👧 🇺🇸 ❤️ #️⃣",
    "I ❤ NY",
    # control characters, replacement, zero-width, format characters
    "\x00abc",
    "a\x00b",
    "a\x07b\x1fc\x7fd",
    "a\x85b",
    "a\x0bb\x0cc",
    "\x1c\x1d\x1e\x1f",
    "\ufffd",
    "a\ufffdb",
    "zero\u200bwidth",
    "\u200b",
    "a\u200cb\u200dc",
    "\ufeffBOM",
    "soft\u00adhyphen",
    "\u202eevil\u202c",
    "a\ue000b",
    "tag\U000e0001\U000e0041",
    "unassigned\u0378x",
    "a\U0010fffdb",
    "\u180e",
    "\u2060word\u2061",
    # very long words
    "a" * 100,
    "a" * 101,
    "supercalifragilisticexpialidocious" * 3,
    "x" * 500,
    "é" * 100,
    "é" * 101,
    "e\u0301" * 60,
    "我" * 150,
    "pneumonoultramicroscopicsilicovolcanoconiosis",
    # punctuation
    "Hello, world! (test) [brackets] {braces} <angle>",
    "don't can't won't it's",
    "U.S.A. e.g. i.e. 3.14 1,000,000",
    "$100 €50 ¥30 £20 ¢ ₹",
    "«quotes» „German“ “curly” ‘single’ — – …",
    "@user #hashtag http://example.com/path?q=1&r=2",
    "a/b\\c|d~e^f`g",
    "¿Qué? ¡Sí!",
    "§ ¶ † ‡ • ° ± × ÷",
    "‐‑‒–—―",
    # special tokens written in the text
    "[CLS] [SEP] [PAD] [UNK] [MASK]",
    "[cls] [sep] [mask]",
    "a[SEP]b",
    "[SEP][SEP]",
    " [MASK] ",
    "[Mask]",
    "##ing ##s",
    "[MAS\u212a]",
    "x [MAS\u212a] y",
    "a[SE\x00P]b",
    "a [SE\x00P] b",
    "[SE\u200bP]",
    "[S\u0301EP]",
    "[sep\u0000]",
    "[SEP\ufffd]x",
    # numbers, mixed
    "1999 2000s 1990's",
    "H2O CO₂ x² ½",
    "the the the",
    "Super Bowl 50",
    "multiple   spaces\tand\ttabs\nnew\nlines",
]


def slow_tokenizer(vocab):
    cls = getattr(transformers, "BertTokenizerLegacy", None)
    name = "BertTokenizerLegacy"
    if cls is None:
        cls, name = transformers.BertTokenizer, "BertTokenizer"
    tok = cls(vocab, do_lower_case=True)
    if getattr(tok, "is_fast", False):
        sys.exit("make_tokenizer_golden: need the slow (pure-Python) BertTokenizer")
    return tok, name


def four_x_lowercase(tok, text):
    """transformers 4.x `PreTrainedTokenizer.tokenize`'s lower-casing step, verbatim."""
    escaped_special_toks = [re.escape(s_tok) for s_tok in (tok.all_special_tokens)]
    escaped_special_toks += [
        re.escape(s_tok.content)
        for s_tok in (tok._added_tokens_decoder.values())
        if not s_tok.special and s_tok.normalized
    ]
    pattern = r"(" + r"|".join(escaped_special_toks) + r")|" + r"(.+?)"
    return re.sub(pattern, lambda m: m.groups()[0] or m.groups()[1].lower(), text)


def load_squad(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def dev_texts(data):
    questions, answers, contexts = [], [], []
    seen = set()
    for article in data["data"]:
        for p in article["paragraphs"]:
            contexts.append(p["context"])
            for qa in p["qas"]:
                questions.append(qa["question"])
                for a in qa["answers"]:
                    if a["text"] not in seen:
                        seen.add(a["text"])
                        answers.append(a["text"])
    sentences, seen_s = [], set()
    for c in contexts:
        for s in re.split(r"(?<=[.!?])\s+", c):
            if s and s not in seen_s:
                seen_s.add(s)
                sentences.append(s)
    sample = random.Random(SEED).sample(range(len(sentences)), SENTENCES)
    return questions, answers, [sentences[i] for i in sorted(sample)]


def code_point_runs():
    cps = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    for i in range(0, len(cps), RUN):
        yield cps[i : i + RUN]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="data/dev-v1.1.json.gz")
    ap.add_argument("--vocab", default="data/bert/bert-base-uncased-vocab.txt")
    ap.add_argument("--out", default="tests/fixtures/bem_tokenizer_golden.ndjson.gz")
    args = ap.parse_args()

    tok, impl = slow_tokenizer(args.vocab)
    major = int(transformers.__version__.split(".")[0])

    def tokenize(text):
        if major >= 5:
            text = four_x_lowercase(tok, text)
        return tok.tokenize(text)

    def ids(text):
        return tok.convert_tokens_to_ids(tokenize(text))

    with open(args.vocab, "rb") as f:
        vocab_sha = hashlib.sha256(f.read()).hexdigest()
    questions, answers, sentences = dev_texts(load_squad(args.data))

    buf = io.StringIO()

    def emit(obj):
        buf.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")

    emit(
        {
            "k": "meta",
            "transformers": transformers.__version__,
            "tokenizer": f"{impl}(do_lower_case=True)"
            + (" + the 4.x per-character lower-casing step" if major >= 5 else ""),
            "python": sys.version.split()[0],
            "unicode": unicodedata.unidata_version,
            "vocab_sha256": vocab_sha,
            "counts": {
                "q": len(questions),
                "a": len(answers),
                "s": len(sentences),
                "o": len(ODD_CASES),
            },
        }
    )
    for kind, texts in (("q", questions), ("a", answers), ("s", sentences), ("o", ODD_CASES)):
        for t in texts:
            emit({"k": kind, "t": t, "ids": ids(t)})
    n_runs = 0
    for run in code_point_runs():
        for form, fmt in (("iso", "{}"), ("word", "x{}y")):
            text = " ".join(fmt.format(chr(c)) for c in run)
            emit({"k": "cp", "f": form, "lo": run[0], "hi": run[-1], "ids": ids(text)})
        n_runs += 1

    # The seed's triple, assembled exactly as its bertify_example does.
    seed = {"question": "why is the sky blue", "reference": "light scattering",
            "candidate": "scattering of light"}
    q, r, c = (tokenize(seed[k]) for k in ("question", "reference", "candidate"))
    tokens = ["[CLS]"] + c + ["[SEP]"] + r + ["[SEP]"] + q + ["[SEP]"]
    emit(
        {
            "k": "triple",
            **seed,
            "input_ids": tok.convert_tokens_to_ids(tokens),
            "segment_ids": [0] * (len(c) + 2) + [1] * (len(r) + 1) + [2] * (len(q) + 1),
        }
    )

    raw = buf.getvalue().encode("utf-8")
    with open(args.out, "wb") as f:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, compresslevel=9, mtime=0) as gz:
            gz.write(raw)
    print(
        f"{args.out}: {len(questions)} questions, {len(answers)} answers, "
        f"{len(sentences)} sentences, {len(ODD_CASES)} odd cases, {n_runs} code point runs x2; "
        f"{impl} (transformers {transformers.__version__}, Python {sys.version.split()[0]}, "
        f"Unicode {unicodedata.unidata_version})",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
