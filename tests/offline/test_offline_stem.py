"""The one stemmer of the offline toolkit (kgviz.offline.stem)."""
from __future__ import annotations

import pytest

from kgviz.offline.stem import stem


@pytest.mark.parametrize("a,b", [
    ("designed", "design"), ("designer", "designs"),  # Snowball
    ("director", "directed"), ("founder", "founded"),  # agent-noun rule (ours)
    ("built", "build"), ("born", "births"), ("became", "becomes"),  # irregular forms first
    ("carried", "carry"), ("lies", "lie"), ("released", "release"),
    ("Curie's", "curie"), ("\u2018Tarrow\u2019", "tarrow"),  # case, possessive, quotes
])
def test_forms_of_one_word_meet(a: str, b: str) -> None:
    assert stem(a) == stem(b)


@pytest.mark.parametrize("a,b", [
    ("river", "rive"), ("tower", "tow"), ("order", "ord"),  # short roots keep "-er"
    ("design", "desire"), ("found", "fund"), ("birth", "berth"),
])
def test_different_words_stay_apart(a: str, b: str) -> None:
    assert stem(a) != stem(b)


def test_the_five_letter_cut_is_gone() -> None:
    # the old kg-infused stemmer cut every word to five letters, so these met
    assert stem("countess") != stem("country") and stem("published") != stem("publican")
