"""SQuAD normalisation: the punctuation pass drops exactly string.punctuation (ASCII), character by
character as the SQuAD script does; non-ASCII punctuation and every letter stay."""
from __future__ import annotations

import random
import re
import string

from kgviz.answer_norm import contains, normalize_answer


def by_character(text: str) -> str:
    """The SQuAD script's definition, punctuation dropped one character at a time."""
    no_punct = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", no_punct).split())


def test_normalisation_equals_the_character_by_character_definition() -> None:
    rng = random.Random(28)
    alphabet = string.ascii_letters + string.digits + string.punctuation + " \t\n" + "éß—–“”‘’…·\u00a0\u2028ΣİK"
    texts = ["The Eiffel Tower, (Paris)!", "an A-team's 'the' end.", "U.S.A. — the 1990s", "   ", ""]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(2000)]
    texts += [" ".join(rng.choice(["a", "an", "the", "The", "A.", "x", "an-x", "the'"]) for _ in range(6))
              for _ in range(300)]
    for text in texts:
        assert normalize_answer(text) == by_character(text), repr(text)


def test_containment_is_on_whole_tokens() -> None:
    assert contains("Founded in 1898, Paris.", "1898")
    assert not contains("In 18980 it rained", "1898")
    assert contains("the Tidewell Line—founded", "line—founded")  # the dash is not ASCII punctuation
    assert not contains("anything", "")
