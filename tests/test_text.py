from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgviz.text import (
    count_tokens,
    normalize_text,
    sentence_spans,
    split_sentences,
    token_spans,
    tokenize,
)

FAST = settings(max_examples=150, deadline=None)
texts = st.lists(
    st.sampled_from(list("ab AZ.!?\"'()\n\t3,é中。-_") + ["Dr.", "e.g.", " J. ", "\n\n", "1. "]),
    max_size=60,
).map("".join)


# --- tokenizer -----------------------------------------------------------------------------------
def test_tokenize_words_and_punctuation() -> None:
    assert tokenize("Alice's cat, Bob!") == ["Alice", "'", "s", "cat", ",", "Bob", "!"]


def test_long_words_count_as_pieces() -> None:
    assert tokenize("internationalization") == ["intern", "ationa", "lizati", "on"]
    assert count_tokens("abcdefgh") == 1  # 8 characters: still one token
    assert count_tokens("abcdefghi") == 2
    assert count_tokens("snake_case_identifier_name") == 5  # underscores do not dodge the split


def _reference_tokens(text: str) -> list[str]:
    out: list[str] = []
    for m in re.finditer(r"(\w+)|[^\w\s]", text):
        tok = m.group()
        if m.group(1) and len(tok) > 8:
            out.extend(tok[i : i + 6] for i in range(0, len(tok), 6))
        else:
            out.append(tok)
    return out


@FAST
@given(st.text(alphabet=st.sampled_from(list("abcdefghij_1é中 .,\n-'")), max_size=80))
def test_tokenize_matches_the_piece_rule(text: str) -> None:
    assert tokenize(text) == _reference_tokens(text)


def test_empty_text_has_no_tokens() -> None:
    assert tokenize("") == [] and count_tokens(" \n\t ") == 0


@FAST
@given(st.text(max_size=200))
def test_count_matches_tokenize_and_spans_cover_all_non_space(text: str) -> None:
    spans = token_spans(text)
    assert count_tokens(text) == len(tokenize(text)) == len(spans)
    assert all(a < b for a, b in spans)
    assert all(spans[i][1] <= spans[i + 1][0] for i in range(len(spans) - 1))
    assert "".join(text[a:b] for a, b in spans) == "".join(text.split())


# --- sentence splitter ---------------------------------------------------------------------------
# Each case is the expected sentences; the input is them joined by a single space.
SENTENCE_CASES = [
    ["One.", "Two!", "Three?", "Four"],
    ["Dr. Smith met Mrs. Jones.", "They talked."],
    ["Use tools, e.g. Hammers.", "Or not."],
    ["J. R. R. Tolkien wrote it.", "He was British."],
    ["The U.S. Army won.", "Then peace."],
    ["Pi is 3.14 and e is 2.71.", "Both are irrational."],
    ["It costs $3.5 million.", "That is a lot."],
    ['He said "Stop."', "Then he left."],
    ["Done.", '"Next," she said.'],
    ["He yelled \u201cRun!\u201d", "\u201cWhy?\u201d she asked."],
    ["(See the appendix.)", "Next point."],
    ["It ended in 1990.", "2001 was next."],
    ["lower case. after a period stays"],
    ["Wait...", "Then it rang."],
    ["Room No. 5 is free.", "He said no.", "Then left."],
    ["Apples, pears, etc.", "Then lunch."],
    ["Alfonso (c. 1358 \u2013 1422) ruled.", "He died."],
    ["Music by Kalipada Sen.", "The film was remade."],
    ["Émile wrote.", "Łukasz read."],
]


@pytest.mark.parametrize("expected", SENTENCE_CASES, ids=lambda e: e[0][:20])
def test_split_sentences(expected: list[str]) -> None:
    assert split_sentences(" ".join(expected)) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Steps:\n1. Open it.\n2. Close it.", ["Steps:\n1. Open it.", "2. Close it."]),
        ("Heading\n\nbody without end\n \nnext para", ["Heading", "body without end", "next para"]),
        ("我喜欢猫。你呢？好", ["我喜欢猫。", "你呢？", "好"]),
        ("  \n ", []),
    ],
)
def test_split_sentences_lines_paragraphs_cjk(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_sentence_spans_point_into_the_original_text() -> None:
    text = "  First one.\n\n  Second one here.  "
    spans = sentence_spans(text)
    assert [text[a:b] for a, b in spans] == ["First one.", "Second one here."]


@FAST
@given(texts)
def test_sentences_partition_the_text(text: str) -> None:
    spans = sentence_spans(text)
    assert all(a < b for a, b in spans)
    assert all(spans[i][1] <= spans[i + 1][0] for i in range(len(spans) - 1))
    assert all(not text[a].isspace() and not text[b - 1].isspace() for a, b in spans)
    # Only whitespace lies between sentences: nothing is lost or duplicated.
    assert "".join("".join(text[a:b].split()) for a, b in spans) == "".join(text.split())


# --- normalisation -------------------------------------------------------------------------------
def test_normalize_text() -> None:
    raw = "\ufeffCafe\u0301 \r\nline two\t \r\rpara\x07\f\n\n\n\nend  "
    assert normalize_text(raw) == "Caf\u00e9\nline two\n\npara\n\nend"


@FAST
@given(st.text(max_size=200))
def test_normalize_is_idempotent(text: str) -> None:
    once = normalize_text(text)
    assert normalize_text(once) == once
